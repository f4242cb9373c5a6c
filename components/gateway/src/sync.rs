//! Receiving pushed manifests and pulling the current one from the control plane.

use apim_manifest::paths;
use serde_json::json;

use crate::host::{Headers, Host, Outbound, Request, Response, split_url};
use crate::state;

/// Settings the gateway reads from its host.
pub mod settings {
    /// Base URL of the control plane (token service, manifest pulls).
    pub const CONTROL_PLANE_URL: &str = "control_plane_url";
    /// The control plane's manifest public key (base64url Ed25519).
    pub const MANIFEST_PUBLIC_KEY: &str = "manifest_public_key";
    /// Bearer secret for pulling manifests.
    pub const GATEWAY_SECRET: &str = "gateway_secret";
    /// Timeout of backend and control-plane requests, milliseconds.
    pub const BACKEND_TIMEOUT_MS: &str = "backend_timeout_ms";
    /// The gateway environment this gateway is (e.g. `Production and Sandbox`); only APIs
    /// deployed to it are routed. Unset: every API.
    pub const GATEWAY_ENVIRONMENT: &str = "gateway_environment";
}

/// Default timeout of outbound requests.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The outbound timeout in effect.
pub fn timeout_ms(host: &dyn Host) -> u64 {
    host.setting(settings::BACKEND_TIMEOUT_MS)
        .and_then(|v| v.trim().parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(DEFAULT_TIMEOUT_MS)
}

/// `POST /_apim/manifest`: applies a signed manifest if it is newer; answers with the
/// version now served (200 when applied, 409 when it was not newer, 400 when invalid).
pub fn receive_push(host: &dyn Host, request: &Request) -> Response {
    let Some(public_key) = host.setting(settings::MANIFEST_PUBLIC_KEY) else {
        return Response::json(
            503,
            &json!({"error": "manifest_public_key is not configured"}),
        );
    };
    let jws = String::from_utf8_lossy(&request.body);
    let manifest = match state::verify(&jws, &public_key) {
        Ok(manifest) => manifest,
        Err(err) => return Response::json(400, &json!({"error": err})),
    };
    match state::store_if_newer(host, &jws, &manifest) {
        Ok((served, true)) => Response::json(200, &json!({"version": served})),
        Ok((served, false)) => Response::json(
            409,
            &json!({"version": served, "error": "not newer than the manifest served"}),
        ),
        Err(err) => Response::json(
            503,
            &json!({"error": format!("could not store the manifest: {err}")}),
        ),
    }
}

/// `POST /_apim/sync`: pulls the current manifest now.
pub fn sync_now(host: &dyn Host) -> Response {
    match pull(host) {
        Ok(version) => Response::json(200, &json!({"version": version})),
        Err(err) => Response::json(502, &json!({"error": err})),
    }
}

/// Pulls the control plane's current manifest and stores it if newer; the version served.
pub fn pull(host: &dyn Host) -> Result<u64, String> {
    let public_key = host
        .setting(settings::MANIFEST_PUBLIC_KEY)
        .ok_or("manifest_public_key is not configured")?;
    let secret = host.setting(settings::GATEWAY_SECRET).unwrap_or_default();
    let request = to_control_plane(
        host,
        "GET",
        paths::CONTROL_PLANE_MANIFEST,
        vec![(
            "authorization".into(),
            format!("Bearer {secret}").into_bytes(),
        )],
        vec![],
    )?;
    let response = host
        .send(request)
        .map_err(|e| format!("control plane unreachable: {e:?}"))?;
    if response.status != 200 {
        return Err(format!("control plane answered {}", response.status));
    }
    let jws = String::from_utf8_lossy(&response.body);
    let manifest = state::verify(&jws, &public_key)?;
    state::store_if_newer(host, &jws, &manifest).map(|(served, _)| served)
}

/// A request to the control plane at `path_with_query` (below `control_plane_url`), with
/// the configured timeout.
pub fn to_control_plane(
    host: &dyn Host,
    method: &str,
    path_with_query: &str,
    headers: Headers,
    body: Vec<u8>,
) -> Result<Outbound, String> {
    let url = host
        .setting(settings::CONTROL_PLANE_URL)
        .ok_or("control_plane_url is not configured")?;
    let (scheme, authority, base) =
        split_url(&url).ok_or("control_plane_url is not an http(s) URL")?;
    Ok(Outbound {
        method: method.to_string(),
        scheme: scheme.to_string(),
        authority: authority.to_string(),
        path_with_query: format!("{}{path_with_query}", base.trim_end_matches('/')),
        headers,
        body,
        timeout_ms: timeout_ms(host),
    })
}
