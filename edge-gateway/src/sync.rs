//! Periodic `POST /_apim/sync` into the component.
//!
//! The component uses it to pull the current route manifest from the control
//! plane. The first request is sent right away, then one every interval; the
//! answer only matters for debug logs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use crate::gateway::Gateway;

/// Starts the ticker; abort the returned task to stop it.
pub fn spawn(gateway: Arc<Gateway>, local: SocketAddr, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let status = gateway.sync(local).await;
            tracing::debug!(%status, "sync request answered");
        }
    })
}
