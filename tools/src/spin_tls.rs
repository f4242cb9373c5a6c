//! Spin's outbound TLS from the control plane's endpoint certificates. On Spin the gateway
//! component cannot choose what an outbound call trusts; Spin's runtime configuration does,
//! per host (`[[client_tls]]` with `component_ids`, `hosts` and `ca_roots_file`). This
//! writes that configuration, and a PEM file of each endpoint's certificates, from the
//! certificates the publisher's REST API lists (`/certificates`, read with an
//! administrator's token of each tenant), trusted as edge-gateway trusts them: for their
//! endpoint's host and port only, beside the usual roots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use apim_manifest::bounds::MAX_CERTIFICATES_PER_ENDPOINT;
use apim_manifest::trust::endpoint_of;
use serde_json::Value;

/// The publisher's certificates resource.
const CERTIFICATES: &str = "/api/am/publisher/v0.14/certificates";
/// Certificates asked for per page.
const PAGE: usize = 100;
/// The runtime configuration's file name.
pub const RUNTIME_CONFIG: &str = "runtime-config.toml";
/// The folder of the PEM files, beside it.
pub const CA_DIR: &str = "client-tls";

/// One endpoint certificate as the publisher serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// Its alias.
    pub alias: String,
    /// The endpoint URL it is bound to.
    pub endpoint: String,
    /// The certificate, PEM.
    pub pem: String,
}

/// The files to write: the runtime configuration and each endpoint's PEM file, by path
/// relative to the output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTls {
    /// `runtime-config.toml`'s text.
    pub runtime_config: String,
    /// `client-tls/<host>_<port>.pem` and its certificates.
    pub ca_files: BTreeMap<String, String>,
}

/// Every certificate of the tenant whose administrator `token` is, read from the control
/// plane at `management_url`.
pub async fn fetch(
    http: &reqwest::Client,
    management_url: &str,
    token: &str,
) -> anyhow::Result<Vec<Certificate>> {
    let base = format!("{}{CERTIFICATES}", management_url.trim_end_matches('/'));
    let mut certificates = Vec::new();
    loop {
        let url = format!("{base}?limit={PAGE}&offset={}", certificates.len());
        let page = get(http, &url, token).await?.json::<Value>().await?;
        let listed = page["certificates"].as_array().cloned().unwrap_or_default();
        for listed in &listed {
            let alias = text(listed, "alias")?;
            let endpoint = text(listed, "endpoint")?;
            let content = format!("{base}/{alias}/content");
            let pem = get(http, &content, token).await?.text().await?;
            certificates.push(Certificate {
                alias,
                endpoint,
                pem,
            });
        }
        let total = page["pagination"]["total"].as_u64().unwrap_or(0) as usize;
        if listed.is_empty() || certificates.len() >= total {
            return Ok(certificates);
        }
    }
}

/// A GET with the token; an error for anything but 200.
async fn get(http: &reqwest::Client, url: &str, token: &str) -> anyhow::Result<reqwest::Response> {
    let response = http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    anyhow::ensure!(
        response.status() == reqwest::StatusCode::OK,
        "GET {url} answered {}",
        response.status()
    );
    Ok(response)
}

fn text(value: &Value, member: &str) -> anyhow::Result<String> {
    value[member]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("a listed certificate has no {member}"))
}

/// The `[[client_tls]]` sections for `component` (Spin's component id, `gateway` in our
/// `spin.toml`): one per endpoint host and port, trusting its certificates beside Spin's
/// roots. Within the manifest's bounds, as edge-gateway takes them: past
/// [`MAX_CERTIFICATES_PER_ENDPOINT`] an endpoint's certificates are left out, in the order
/// listed.
pub fn client_tls(certificates: &[Certificate], component: &str) -> ClientTls {
    let mut endpoints: BTreeMap<(String, u16), Vec<&str>> = BTreeMap::new();
    for certificate in certificates {
        if let Some(endpoint) = endpoint_of(&certificate.endpoint) {
            let pems = endpoints.entry(endpoint).or_default();
            if pems.len() < MAX_CERTIFICATES_PER_ENDPOINT {
                pems.push(&certificate.pem);
            }
        }
    }
    let mut runtime_config = String::from(
        "# Written by `tools --bin spin-client-tls` from the control plane's endpoint\n\
         # certificates: each endpoint's are trusted for its host and port only.\n",
    );
    let mut ca_files = BTreeMap::new();
    for ((host, port), pems) in endpoints {
        let file = format!("{CA_DIR}/{}_{port}.pem", host.replace(':', "_"));
        let authority = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        // Spin keys hosts by authority: the default port both with and without it.
        let mut hosts = vec![format!("{authority}:{port}")];
        if port == 443 {
            hosts.push(authority);
        }
        runtime_config.push_str(&format!(
            "\n[[client_tls]]\ncomponent_ids = [{}]\nhosts = [{}]\nca_use_webpki_roots = true\nca_roots_file = {}\n",
            toml_string(component),
            hosts.iter().map(|h| toml_string(h)).collect::<Vec<_>>().join(", "),
            toml_string(&file),
        ));
        let mut bundle = String::new();
        for pem in pems {
            bundle.push_str(pem.trim_end());
            bundle.push('\n');
        }
        ca_files.insert(file, bundle);
    }
    ClientTls {
        runtime_config,
        ca_files,
    }
}

/// A TOML basic string: JSON's escapes are TOML's.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// Writes `client_tls` into `dir` (its PEM folder replaced whole, so that an endpoint
/// whose certificates are gone loses its file); the runtime configuration's path.
pub fn write(dir: &Path, client_tls: &ClientTls) -> anyhow::Result<PathBuf> {
    let ca_dir = dir.join(CA_DIR);
    if ca_dir.exists() {
        std::fs::remove_dir_all(&ca_dir)
            .with_context(|| format!("cannot clear {}", ca_dir.display()))?;
    }
    std::fs::create_dir_all(&ca_dir)
        .with_context(|| format!("cannot create {}", ca_dir.display()))?;
    for (file, pems) in &client_tls.ca_files {
        let path = dir.join(file);
        std::fs::write(&path, pems).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let path = dir.join(RUNTIME_CONFIG);
    std::fs::write(&path, &client_tls.runtime_config)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(alias: &str, endpoint: &str) -> Certificate {
        Certificate {
            alias: alias.into(),
            endpoint: endpoint.into(),
            pem: format!("-----BEGIN CERTIFICATE-----\n{alias}\n-----END CERTIFICATE-----\n"),
        }
    }

    #[test]
    fn one_section_per_host_and_port() {
        let written = client_tls(
            &[
                certificate("a", "https://b.example/api"),
                certificate("b", "https://B.example:443/other"),
                certificate("c", "https://[::1]:9443/"),
                certificate("d", "not a url"),
            ],
            "gateway",
        );
        assert_eq!(written.ca_files.len(), 2);
        let bundle = &written.ca_files["client-tls/b.example_443.pem"];
        assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(written.ca_files.contains_key("client-tls/__1_9443.pem"));
        let config = &written.runtime_config;
        assert!(
            config.contains(r#"hosts = ["b.example:443", "b.example"]"#),
            "{config}"
        );
        assert!(config.contains(r#"hosts = ["[::1]:9443"]"#), "{config}");
        assert_eq!(config.matches(r#"component_ids = ["gateway"]"#).count(), 2);
    }
}
