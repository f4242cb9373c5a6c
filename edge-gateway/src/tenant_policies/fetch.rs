//! A policy's bytes, fetched from the control plane by digest behind the gateway secret,
//! and trusted only once they hash to that digest, have the size the manifest says and
//! are a policy of the world (`apim-policy-world`).

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::backend_tls::ControlPlaneConnector;

/// Longest a fetch may take.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a policy's bytes are not had.
#[derive(Debug)]
pub enum Fetched {
    /// They are not a policy of the world: they never will be.
    NotAPolicy(String),
    /// They could not be fetched, or are not what the manifest names.
    Failed(String),
}

/// Where policies come from.
pub struct Source {
    /// The control plane's base URL, without a trailing `/`.
    control_plane: String,
    /// `Bearer <gateway_secret>`.
    authorization: HeaderValue,
    client: Client<ControlPlaneConnector, Empty<Bytes>>,
}

impl Source {
    /// The control plane at `control_plane`, proven to by `authorization`.
    pub fn new(
        control_plane: String,
        authorization: HeaderValue,
        connector: ControlPlaneConnector,
    ) -> Self {
        Self {
            control_plane,
            authorization,
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// The bytes of the policy `digest`, checked.
    pub async fn fetch(&self, digest: &str, size: u64) -> Result<Vec<u8>, Fetched> {
        let bytes = self
            .fetch_bytes(digest, size)
            .await
            .map_err(|err| Fetched::Failed(format!("{err:#}")))?;
        apim_policy_world::check(&bytes).map_err(|why| Fetched::NotAPolicy(why.to_string()))?;
        Ok(bytes)
    }

    /// The bytes of the policy `digest`, as the manifest names them.
    async fn fetch_bytes(&self, digest: &str, size: u64) -> anyhow::Result<Vec<u8>> {
        if !apim_policy_world::is_digest(digest) {
            bail!("not a policy's digest");
        }
        let expected = usize::try_from(size).unwrap_or(usize::MAX);
        if expected > apim_policy_world::MAX_POLICY_BYTES {
            bail!("the manifest names a policy of {size} bytes, past the bound");
        }
        let uri: Uri = apim_http::joined([
            self.control_plane.as_str(),
            apim_manifest::paths::CONTROL_PLANE_POLICIES,
            digest,
        ])
        .parse()
        .context("the control plane's URL")?;
        let request = Request::get(uri)
            .header(http::header::AUTHORIZATION, self.authorization.clone())
            .body(Empty::new())?;
        let fetched = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let body = Limited::new(response.into_body(), expected.saturating_add(1))
                .collect()
                .await
                .map_err(|err| anyhow::anyhow!("reading the policy: {err}"))?
                .to_bytes();
            anyhow::Ok((status, body))
        };
        let (status, body) = tokio::time::timeout(FETCH_TIMEOUT, fetched)
            .await
            .context("the control plane did not answer in time")??;
        if !status.is_success() {
            bail!("the control plane answered {status}");
        }
        if body.len() != expected {
            bail!("{} bytes where the manifest says {size}", body.len());
        }
        if apim_policy_world::digest(&body) != digest {
            bail!("the bytes do not hash to the digest");
        }
        Ok(body.to_vec())
    }
}
