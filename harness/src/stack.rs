//! A whole platform for a test or a benchmark: control plane, edge gateway, backend.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{Backend, Client, ControlPlane, EchoBackend, PUBLISHER, STORE, ServerProcess};

/// Every management scope the flows need.
pub const ALL_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe";

/// A control plane pushing to one edge gateway, a backend, and an administrator token.
pub struct Stack {
    /// The control plane's data directory.
    pub data_dir: std::path::PathBuf,
    /// The control plane (taken when a test stops it).
    pub control_plane: Option<ControlPlane>,
    /// The edge gateway it pushes to.
    pub gateway: ServerProcess,
    /// The backend APIs point at.
    pub backend: EchoBackend,
    /// Client of the management listener.
    pub mgmt: Client,
    /// Client of the gateway.
    pub gw: Client,
    /// An administrator's token with every management scope.
    pub admin: String,
}

/// Component variables, edge-gateway's settings and the control plane's.
type Settings<'a> = (
    &'a [&'a str],
    &'a [(&'static str, String)],
    &'a [(&'static str, String)],
);

impl Stack {
    /// Starts backend, control plane and gateway (with component `vars`), and logs in.
    pub async fn start(vars: &[&str]) -> Self {
        Self::start_with(vars, &[]).await
    }

    /// The same, with more of edge-gateway's settings (`APIM_*`).
    pub async fn start_with(vars: &[&str], settings: &[(&'static str, String)]) -> Self {
        Self::start_configured(vars, settings, &[]).await
    }

    /// The same, with more of the control plane's settings too.
    pub async fn start_configured(
        vars: &[&str],
        settings: &[(&'static str, String)],
        control_plane_settings: &[(&'static str, String)],
    ) -> Self {
        Self::start_on(
            &Backend::Sqlite,
            crate::temp_dir(),
            vars,
            settings,
            control_plane_settings,
        )
        .await
    }

    /// The same, on `database` with the control plane's data in `data_dir`.
    pub async fn start_on(
        database: &Backend,
        data_dir: std::path::PathBuf,
        vars: &[&str],
        settings: &[(&'static str, String)],
        control_plane_settings: &[(&'static str, String)],
    ) -> Self {
        let settings = (vars, settings, control_plane_settings);
        Self::start_deployed(database, data_dir, settings, Duration::ZERO).await
    }

    /// As an operator deploys: the control plane first (pushing to a gateway that is not
    /// up yet), the gateway `after` that.
    pub async fn start_late(after: Duration) -> Self {
        let settings = (&[][..], &[][..], &[][..]);
        Self::start_deployed(&Backend::Sqlite, crate::temp_dir(), settings, after).await
    }

    async fn start_deployed(
        database: &Backend,
        data_dir: std::path::PathBuf,
        (vars, settings, control_plane_settings): Settings<'_>,
        gateway_after: Duration,
    ) -> Self {
        crate::gateway_component();
        let backend = EchoBackend::start().await;
        let gateway_addr = format!("127.0.0.1:{}", crate::free_port());
        let mut control_plane_env = vec![("APIM_GATEWAYS", format!("http://{gateway_addr}"))];
        control_plane_env.extend(control_plane_settings.iter().cloned());
        let control_plane =
            crate::start_control_plane(database, &data_dir, &control_plane_env).await;
        tokio::time::sleep(gateway_after).await;
        let gateway = crate::start_edge_gateway_with(
            &control_plane,
            &data_dir,
            &gateway_addr,
            vars,
            settings,
        )
        .await;
        let mgmt = Client::new(&control_plane.url);
        let gw = Client::new(&gateway.url);
        // Spec §5 steps 1 and 2, the token coming from {gateway_url}/token.
        let client = mgmt
            .register("admin", crate::ADMIN_PASSWORD, "gateway_e2e")
            .await
            .expect(200);
        let admin = gw
            .token_at(
                "/token",
                &client.str("clientId"),
                &client.str("clientSecret"),
                &[
                    ("grant_type", "password"),
                    ("username", "admin"),
                    ("password", crate::ADMIN_PASSWORD),
                    ("scope", ALL_SCOPES),
                ],
            )
            .await
            .expect(200)
            .str("access_token");
        Stack {
            data_dir,
            control_plane: Some(control_plane),
            gateway,
            backend,
            mgmt,
            gw,
            admin,
        }
    }

    /// Creates an API of the spec's shape pointing at the backend (with `changes`), and
    /// applies `actions` to its lifecycle.
    pub async fn api(&self, name: &str, changes: Value, actions: &[&str]) -> String {
        let mut record = api_record(name, &format!("{}/", self.backend.url));
        for (key, value) in changes.as_object().unwrap() {
            record[key] = value.clone();
        }
        let id = self
            .mgmt
            .post_json(&format!("{PUBLISHER}/apis"), &self.admin, &record)
            .await
            .expect(201)
            .str("id");
        for action in actions {
            self.lifecycle(&id, action).await;
        }
        id
    }

    /// Applies a lifecycle action.
    pub async fn lifecycle(&self, id: &str, action: &str) {
        let path = format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={id}&action={}",
            action.replace(' ', "+")
        );
        self.mgmt.post_empty(&path, &self.admin).await.expect(200);
    }

    /// An application of `tier`, subscribed to `apis`, with PRODUCTION keys; returns
    /// (application id, consumer key, consumer secret, subscription ids).
    pub async fn application(
        &self,
        name: &str,
        tier: &str,
        apis: &[&str],
    ) -> (String, String, String, Vec<String>) {
        subscribed_application(&self.mgmt, &self.admin, name, tier, apis).await
    }

    /// Spec §5 step 3: a token for the consumer key, from {gateway_url}/token.
    pub async fn app_token(&self, key: &str, secret: &str, extra: &[(&str, &str)]) -> String {
        let mut form = vec![
            ("grant_type", "password"),
            ("username", "admin"),
            ("password", crate::ADMIN_PASSWORD),
            ("scope", "default"),
        ];
        form.extend(extra.iter().copied());
        self.gw
            .token_at("/token", key, secret, &form)
            .await
            .expect(200)
            .str("access_token")
    }
}

/// An application of `tier` created by `admin` (a token), subscribed to `apis`, with
/// PRODUCTION keys; returns (application id, consumer key, consumer secret, subscription
/// ids).
pub async fn subscribed_application(
    mgmt: &Client,
    admin: &str,
    name: &str,
    tier: &str,
    apis: &[&str],
) -> (String, String, String, Vec<String>) {
    let app = mgmt
        .post_json(
            &format!("{STORE}/applications"),
            admin,
            &json!({"name": name, "throttlingTier": tier}),
        )
        .await
        .expect(201)
        .str("applicationId");
    let mut subscriptions = Vec::new();
    for api in apis {
        let body = json!({"tier": "Unlimited", "apiIdentifier": api, "applicationId": app});
        subscriptions.push(
            mgmt.post_json(&format!("{STORE}/subscriptions"), admin, &body)
                .await
                .expect(201)
                .str("subscriptionId"),
        );
    }
    let keys = mgmt
        .post_json(
            &format!("{STORE}/applications/generate-keys?applicationId={app}"),
            admin,
            &json!({"validityTime": "3600", "keyType": "PRODUCTION", "accessAllowDomains": ["ALL"], "scopes": ["default"]}),
        )
        .await
        .expect(200);
    (
        app,
        keys.str("consumerKey"),
        keys.str("consumerSecret"),
        subscriptions,
    )
}

/// The API record of spec 2.3 named `name` (context `/<name in lower case>`), with
/// `endpoint` as its production and sandbox endpoint.
pub fn api_record(name: &str, endpoint: &str) -> Value {
    let mut record = crate::spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    record["endpointConfig"] = json!(
        json!({
            "production_endpoints": {"url": endpoint, "config": null},
            "sandbox_endpoints": {"url": endpoint, "config": null},
            "endpoint_type": "http"
        })
        .to_string()
    );
    record
}
