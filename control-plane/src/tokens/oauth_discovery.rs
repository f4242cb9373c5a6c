//! What the authorization server publishes of itself: RFC 8414 metadata and OpenID
//! Connect Discovery, naming only what is implemented. Served at the root and, for an
//! issuer with a path, where RFC 8414 §3 puts it (`/.well-known/…/<path>`).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::Error;
use crate::http::routes::{Routes, get};
use crate::http::urls;
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization_server),
        )
        .route(
            "/.well-known/openid-configuration",
            get(openid_configuration),
        )
        .route(
            "/.well-known/oauth-authorization-server/{*issuer_path}",
            get(authorization_server_under),
        )
        .route(
            "/.well-known/openid-configuration/{*issuer_path}",
            get(openid_configuration_under),
        )
}

/// Where the endpoints are: the issuer, less the token endpoint's path that the default
/// issuer had before (so an issuer configured that way still names the right endpoints).
pub fn base_url(issuer: &str) -> &str {
    issuer
        .strip_suffix("/oauth2/token")
        .unwrap_or(issuer)
        .trim_end_matches('/')
}

/// The metadata (RFC 8414 §2 with OpenID Connect Discovery §3's members).
fn metadata(state: &AppState) -> Value {
    let base = base_url(&state.issuer);
    let endpoint = |path: &str| format!("{base}{path}");
    let mut scopes = vec!["openid".to_string(), "profile".into(), "default".into()];
    scopes.extend(state.scopes.all());
    json!({
        "issuer": state.issuer,
        "authorization_endpoint": endpoint("/oauth2/authorize"),
        "token_endpoint": endpoint("/oauth2/token"),
        "jwks_uri": endpoint("/oauth2/jwks"),
        "userinfo_endpoint": endpoint("/oauth2/userinfo"),
        "revocation_endpoint": endpoint("/oauth2/revoke"),
        "end_session_endpoint": endpoint("/oauth2/logout"),
        "scopes_supported": scopes,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "password", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "code_challenge_methods_supported": ["S256"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["iss", "sub", "aud", "azp", "exp", "iat", "auth_time", "nonce", "at_hash", "preferred_username"],
        "prompt_values_supported": ["none", "login", "consent"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    })
}

fn answer(state: &AppState) -> Response {
    let mut response = Json(metadata(state)).into_response();
    response.headers_mut().insert(
        axum::http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        axum::http::HeaderValue::from_static("*"),
    );
    response
}

/// RFC 8414 authorization server metadata.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    tag = "OAuth 2.0",
    responses((status = 200, description = "Authorization server metadata (RFC 8414)", body = serde_json::Value))
)]
async fn authorization_server(State(state): State<AppState>) -> Response {
    answer(&state)
}

/// OpenID Connect Discovery.
#[utoipa::path(
    get,
    path = "/.well-known/openid-configuration",
    tag = "OAuth 2.0",
    responses((status = 200, description = "OpenID Provider metadata (OpenID Connect Discovery 1.0)", body = serde_json::Value))
)]
async fn openid_configuration(State(state): State<AppState>) -> Response {
    answer(&state)
}

/// RFC 8414 §3's place for an issuer with a path.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server/{issuer_path}",
    tag = "OAuth 2.0",
    params(("issuer_path" = String, Path, description = "The issuer's path")),
    responses((status = 200, description = "Authorization server metadata (RFC 8414 §3)", body = serde_json::Value))
)]
async fn authorization_server_under(
    State(state): State<AppState>,
    Path(issuer_path): Path<String>,
) -> Result<Response, Error> {
    under(&state, &issuer_path)
}

/// The same, where some clients look for OpenID Connect's.
#[utoipa::path(
    get,
    path = "/.well-known/openid-configuration/{issuer_path}",
    tag = "OAuth 2.0",
    params(("issuer_path" = String, Path, description = "The issuer's path")),
    responses((status = 200, description = "OpenID Provider metadata, for an issuer with a path", body = serde_json::Value))
)]
async fn openid_configuration_under(
    State(state): State<AppState>,
    Path(issuer_path): Path<String>,
) -> Result<Response, Error> {
    under(&state, &issuer_path)
}

fn under(state: &AppState, issuer_path: &str) -> Result<Response, Error> {
    let wanted = format!("/{}", issuer_path.trim_end_matches('/'));
    if urls::issuer_path(&state.issuer) == wanted {
        Ok(answer(state))
    } else {
        Err(Error::NotFoundWhy(format!("No issuer at {wanted}")))
    }
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    authorization_server,
    openid_configuration,
    authorization_server_under,
    openid_configuration_under
))]
pub struct Api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_hang_off_the_issuer_without_the_old_token_path() {
        assert_eq!(base_url("http://cp:9763"), "http://cp:9763");
        assert_eq!(base_url("http://cp:9763/"), "http://cp:9763");
        assert_eq!(base_url("http://cp:9763/oauth2/token"), "http://cp:9763");
        assert_eq!(
            base_url("https://idp.example/apim"),
            "https://idp.example/apim"
        );
    }
}
