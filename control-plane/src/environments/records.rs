//! WSO2's `Environment`: a named set of gateways and the URLs consumers call them at.

use serde::Serialize;

use crate::config::Config;
use crate::fleet::GatewayRecord;

/// The environment every gateway serves unless told otherwise (WSO2's default name).
pub const DEFAULT_ENVIRONMENT: &str = "Production and Sandbox";

/// Where no gateway URL is configured: edge-gateway's default listener.
const FALLBACK_GATEWAY_URL: &str = "http://127.0.0.1:8280";

/// The base URLs consumers call the gateways at, by scheme (`EnvironmentEndpoints`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Endpoints {
    /// `http://host:port`, if the gateways listen in clear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// `https://host:port`, if they listen with TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https: Option<String>,
}

impl Endpoints {
    /// The base URL for a scheme (`http` or `https`), if there is one.
    pub fn of(&self, scheme: &str) -> Option<&str> {
        match scheme {
            "http" => self.http.as_deref(),
            "https" => self.https.as_deref(),
            _ => None,
        }
    }
}

/// The gateways' public URLs: APIM_GATEWAY_URLS, else the first gateway manifests are
/// pushed to, else edge-gateway's default listener. Trailing slashes are dropped.
pub fn endpoints(config: &Config) -> Endpoints {
    let configured: Vec<&str> = if config.gateway_urls.is_empty() {
        config.gateways.iter().take(1).map(String::as_str).collect()
    } else {
        config.gateway_urls.iter().map(String::as_str).collect()
    };
    let first = |scheme: &str| {
        configured
            .iter()
            .find(|url| url.starts_with(&format!("{scheme}://")))
            .map(|url| url.trim_end_matches('/').to_string())
    };
    match (first("http"), first("https")) {
        (None, None) => Endpoints {
            http: Some(FALLBACK_GATEWAY_URL.to_string()),
            https: None,
        },
        (http, https) => Endpoints { http, https },
    }
}

/// The gateways' public base URLs as [`endpoints`] finds them, plain HTTP first: what
/// gateways take as the origins of tokens' audiences (RFC 8707).
pub fn gateway_urls(config: &Config) -> Vec<String> {
    let Endpoints { http, https } = endpoints(config);
    http.into_iter().chain(https).collect()
}

/// WSO2's `Environment`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    server_url: String,
    show_in_api_console: bool,
    endpoints: Endpoints,
}

impl Environment {
    /// The environment's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The environments known: WSO2's default one, then every other environment a gateway
/// checked in with, by name; all reached at the configured gateway URLs.
pub fn known(config: &Config, fleet: &[GatewayRecord]) -> Vec<Environment> {
    let endpoints = endpoints(config);
    let server_url = endpoints
        .https
        .clone()
        .or_else(|| endpoints.http.clone())
        .unwrap_or_default();
    let mut names = vec![DEFAULT_ENVIRONMENT.to_string()];
    for gateway in fleet {
        let name = gateway.environment.trim();
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
        .into_iter()
        .map(|name| Environment {
            name,
            kind: "hybrid",
            server_url: server_url.clone(),
            show_in_api_console: true,
            endpoints: endpoints.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn config(args: &[&str]) -> Config {
        let mut all = vec!["control-plane"];
        all.extend(args);
        Config::parse_from(all)
    }

    #[test]
    fn gateway_urls_come_from_configuration_then_pushes_then_the_default() {
        let both = config(&[
            "--gateway-urls",
            "https://gw.example:8243/,http://gw.example:8280",
        ]);
        assert_eq!(
            endpoints(&both),
            Endpoints {
                http: Some("http://gw.example:8280".into()),
                https: Some("https://gw.example:8243".into()),
            }
        );
        let pushed = config(&["--gateways", "http://10.0.0.5:8280,http://10.0.0.6:8280"]);
        assert_eq!(
            endpoints(&pushed).http.as_deref(),
            Some("http://10.0.0.5:8280")
        );
        assert_eq!(
            endpoints(&config(&[])).http.as_deref(),
            Some(FALLBACK_GATEWAY_URL)
        );
        assert_eq!(
            gateway_urls(&both),
            ["http://gw.example:8280", "https://gw.example:8243"]
        );
        assert_eq!(gateway_urls(&config(&[])), [FALLBACK_GATEWAY_URL]);
    }

    #[test]
    fn environments_are_the_default_and_those_gateways_name() {
        let gateway = |environment: &str| GatewayRecord {
            id: "g".into(),
            environment: environment.into(),
            version: 0,
            last_seen: 0,
        };
        let fleet = [gateway(""), gateway("Edge EU"), gateway("Edge EU")];
        let names: Vec<String> = known(&config(&[]), &fleet)
            .iter()
            .map(|e| e.name().to_string())
            .collect();
        assert_eq!(names, [DEFAULT_ENVIRONMENT, "Edge EU"]);
    }
}
