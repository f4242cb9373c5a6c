//! Fetching a document from a URL someone gave us (a client's metadata document, an
//! API's definition), as a server must: under the gateways' egress policy, the name
//! resolved once and every address checked, the connection pinned to those addresses,
//! no redirect followed, within a time and a size.

use std::net::SocketAddr;
use std::time::Duration;

use apim_http::egress::EgressPolicy;

/// Where the control plane may fetch from, read once at start and shared: the gateways'
/// egress policy, and the roots trusted beside the Mozilla ones.
#[derive(Default)]
pub struct Outbound {
    pub egress: EgressPolicy,
    pub roots: Vec<reqwest::Certificate>,
}

/// What a fetch got: the answer's headers and its body.
pub struct Fetched {
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

/// How a fetch goes.
pub struct Fetch<'a> {
    pub outbound: &'a Outbound,
    /// The `Accept` header sent.
    pub accept: &'a str,
    pub max_bytes: usize,
    pub timeout: Duration,
}

impl Fetch<'_> {
    /// The body of `url`'s 200 answer, or why not (in words, for a page or a log).
    pub async fn get(&self, url: &str) -> Result<Fetched, String> {
        let (host, port) =
            apim_http::egress::host_and_port(url).ok_or_else(|| format!("{url} names no host"))?;
        self.outbound
            .egress
            .check_url(url)
            .map_err(|d| d.to_string())?;
        let addresses = self.checked_addresses(&host, port).await?;
        let mut builder = reqwest::Client::builder()
            .timeout(self.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .resolve_to_addrs(&host, &addresses);
        for root in &self.outbound.roots {
            builder = builder.add_root_certificate(root.clone());
        }
        let http = builder.build().map_err(|e| e.to_string())?;
        let mut response = http
            .get(url)
            .header(reqwest::header::ACCEPT, self.accept)
            .send()
            .await
            .map_err(|e| format!("{url} could not be fetched: {e}"))?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(format!("{url} answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            body.extend_from_slice(&chunk);
            if body.len() > self.max_bytes {
                return Err(format!("{url} is larger than {} bytes", self.max_bytes));
            }
        }
        Ok(Fetched {
            headers: response.headers().clone(),
            body,
        })
    }

    /// The addresses `host` resolves to, each allowed by the egress policy.
    async fn checked_addresses(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("{host} does not resolve: {e}"))?
            .collect();
        if resolved.is_empty() {
            return Err(format!("{host} does not resolve"));
        }
        for address in &resolved {
            self.outbound
                .egress
                .check_address(host, address.ip(), port)
                .map_err(|d| d.to_string())?;
        }
        Ok(resolved)
    }
}
