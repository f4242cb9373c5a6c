//! Dynamic client registration, `POST /client-registration/v0.14/register` (spec 2.1, 4.1).
//! Behaves as WSO2's DCR v0.14: 200, idempotent per owner and client name.

use axum::Json;
use serde::{Deserialize, Serialize};

use super::queries::{self as clients, OAuthClient};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, post};
use crate::state::AppState;
use crate::users::BasicUser;

pub fn router() -> Routes {
    Routes::new().route("/client-registration/v0.14/register", post(register))
}

/// WSO2's `RegistrationProfile`, including the OIDC fields it accepts and ignores.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "WSO2's profile: some members are read and ignored"
)]
struct RegistrationProfile {
    callback_url: Option<String>,
    client_name: Option<String>,
    owner: Option<String>,
    grant_type: Option<String>,
    saas_app: Option<bool>,
    token_scope: Option<String>,
    token_type: Option<String>,
    application_type: Option<String>,
    redirect_uris: Option<Vec<String>>,
    logo_uri: Option<String>,
    subject_type: Option<String>,
    sector_identifier_uri: Option<String>,
    token_endpoint_auth_method: Option<String>,
    jwks_uri: Option<String>,
    user_info_encrypted_response_alg: Option<String>,
    user_info_encrypted_response_enc: Option<String>,
    contacts: Option<Vec<String>>,
    request_uris: Option<Vec<String>>,
    audience: Option<String>,
    recepient_validation_u_r_l: Option<String>,
    assertion_consumer_u_r_l: Option<String>,
}

/// WSO2's `OAuthApplicationInfo`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct OAuthApplicationInfo {
    client_id: String,
    client_name: String,
    #[serde(rename = "callBackURL")]
    call_back_url: String,
    /// None for a public client (RFC 7591 §3.2.1: it has no secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    is_saas_application: bool,
    app_owner: Option<String>,
    json_string: String,
    json_app_attribute: String,
    token_type: Option<String>,
}

/// Registers an OAuth client for the calling user (HTTP Basic), as WSO2's DCR v0.14 does.
#[utoipa::path(
    post,
    path = "/client-registration/v0.14/register",
    tag = "Client registration",
    request_body = RegistrationProfile,
    responses((status = 200, description = "The client, the same again for the same owner and client name", body = OAuthApplicationInfo)),
    security(("basic" = []))
)]
async fn register(
    state: axum::extract::State<AppState>,
    BasicUser(user): BasicUser,
    JsonBody(profile): JsonBody<RegistrationProfile>,
) -> Result<Json<OAuthApplicationInfo>> {
    let client_name = required(profile.client_name.as_deref(), "clientName")?;
    let owner = profile.owner.clone().unwrap_or_default();
    if owner != user.username {
        return Err(Error::Invalid(format!(
            "Logged in user '{}' and application owner '{owner}' should be same.",
            user.username
        )));
    }
    if user.roles.is_empty() {
        return Err(Error::Forbidden(
            "You do not have enough privileges to create an OAuth app".into(),
        ));
    }
    let full_name = format!("{}_{client_name}", registration_prefix(&owner));
    if let Some(existing) =
        clients::find_registered(&state.db, &state.data_keys, &owner, &full_name).await?
    {
        return Ok(Json(info(existing, None, profile.token_type)));
    }
    let callback_url = profile.callback_url.clone().unwrap_or_default();
    let redirect_uris = redirect_uris(&callback_url, profile.redirect_uris.as_deref())?;
    let public = is_public(profile.token_endpoint_auth_method.as_deref())?;
    let mut grants = grant_types(
        profile.grant_type.as_deref(),
        &callback_url,
        !redirect_uris.is_empty(),
    );
    if public {
        grants = public_grants(&grants)?;
    }
    let client = OAuthClient {
        client_id: clients::new_client_id(),
        client_secret: clients::new_client_secret(),
        client_name: full_name.clone(),
        owner: owner.clone(),
        grant_types: grants,
        callback_url,
        public_client: i64::from(public),
        redirect_uris: redirect_uris.join(" "),
        saas_app: i64::from(profile.saas_app.unwrap_or(false)),
        application_id: None,
        key_type: None,
        validity_secs: None,
        scopes: String::new(),
        allow_domains: String::new(),
    };
    match clients::insert(&state.db, &state.data_keys, &client)
        .await
        .on_duplicate(String::new)
    {
        Ok(()) => Ok(Json(info(client, Some(owner), profile.token_type))),
        // Registered concurrently by the same owner: answer with that client, as a repeat would.
        Err(Error::AlreadyExists(_)) => {
            let existing =
                clients::find_registered(&state.db, &state.data_keys, &owner, &full_name)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("registered client vanished"))?;
            Ok(Json(info(existing, None, profile.token_type)))
        }
        Err(err) => Err(err),
    }
}

fn required<'a>(value: Option<&'a str>, property: &str) -> Result<&'a str> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(Error::InvalidFields(vec![(
            property.to_string(),
            "may not be null".into(),
        )])),
    }
}

/// `<owner without tenant, '@' as -AT->`, WSO2's prefix of registered client names.
fn registration_prefix(owner: &str) -> String {
    let local = owner
        .rsplit_once('@')
        .map(|(local, _)| local)
        .unwrap_or(owner);
    local.replace('@', "-AT-").replace('/', "_")
}

/// The requested grants; the redirect-based ones need a callback URL or redirect URIs.
fn grant_types(requested: Option<&str>, callback_url: &str, redirect_uris: bool) -> String {
    let redirects = redirect_uris || !callback_url.trim().is_empty();
    requested
        .unwrap_or_default()
        .split_whitespace()
        .filter(|g| redirects || !matches!(*g, "authorization_code" | "implicit"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `token_endpoint_auth_method` asks for a public client (`none`); the methods a
/// confidential client may name are those the token endpoint takes.
fn is_public(method: Option<&str>) -> Result<bool> {
    match method {
        None | Some("client_secret_basic" | "client_secret_post") => Ok(false),
        Some("none") => Ok(true),
        Some(other) => Err(Error::Invalid(format!(
            "token_endpoint_auth_method '{other}' is not supported: use none, \
             client_secret_basic or client_secret_post"
        ))),
    }
}

/// A public client's grants: the authorization code flow and its refreshes only, since
/// it could keep no secret for the others.
fn public_grants(requested: &str) -> Result<String> {
    let grants: Vec<&str> = requested.split_whitespace().collect();
    if !grants.contains(&"authorization_code")
        || grants
            .iter()
            .any(|g| !matches!(*g, "authorization_code" | "refresh_token"))
    {
        return Err(Error::Invalid(
            "A public client (token_endpoint_auth_method none) may only use the \
             authorization_code grant (and refresh_token), with a redirect URI"
                .into(),
        ));
    }
    Ok(grants.join(" "))
}

/// The redirect URIs registered beside the callback URL (which WSO2's clients fill with
/// what they like, `www.google.lk` in its samples, and is kept as given): each an absolute
/// URI without a fragment (RFC 6749 §3.1.2), compared exactly when an authorization names
/// one.
fn redirect_uris(callback_url: &str, listed: Option<&[String]>) -> Result<Vec<String>> {
    let mut uris: Vec<String> = Vec::new();
    for uri in listed.unwrap_or_default() {
        let uri = uri.trim();
        if !crate::http::urls::is_redirect_uri(uri) {
            return Err(Error::Invalid(format!(
                "'{uri}' is not a redirect URI: an absolute URI without a fragment or spaces"
            )));
        }
        if uri != callback_url.trim() && !uris.iter().any(|u| u == uri) {
            uris.push(uri.to_string());
        }
    }
    Ok(uris)
}

fn info(
    client: OAuthClient,
    app_owner: Option<String>,
    token_type: Option<String>,
) -> OAuthApplicationInfo {
    // A new client reports all its parameters; a repeated registration only its grants.
    let json_string = if app_owner.is_some() {
        serde_json::json!({
            "grant_types": client.grant_types,
            "client_name": client.client_name,
            "redirect_uris": client.callback_url,
        })
    } else {
        serde_json::json!({"grant_types": client.grant_types})
    };
    let public = client.is_public();
    OAuthApplicationInfo {
        client_id: client.client_id,
        client_name: client.client_name,
        call_back_url: client.callback_url,
        client_secret: (!public).then_some(client.client_secret),
        is_saas_application: client.saas_app != 0,
        app_owner,
        json_string: json_string.to_string(),
        json_app_attribute: "{}".into(),
        token_type,
    }
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(register))]
pub struct Api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_grants_follow_wso2() {
        assert_eq!(registration_prefix("admin"), "admin");
        assert_eq!(registration_prefix("alice@acme.com"), "alice");
        assert_eq!(
            grant_types(Some("password refresh_token implicit"), "", false),
            "password refresh_token"
        );
        assert_eq!(
            grant_types(Some("authorization_code"), "http://cb", false),
            "authorization_code"
        );
        assert_eq!(
            grant_types(Some("authorization_code"), "", true),
            "authorization_code"
        );
    }

    #[test]
    fn public_clients_take_the_authorization_code_flow_only() {
        assert!(!is_public(None).unwrap() && !is_public(Some("client_secret_post")).unwrap());
        assert!(is_public(Some("none")).unwrap());
        assert!(is_public(Some("private_key_jwt")).is_err());
        assert_eq!(
            public_grants("authorization_code refresh_token").unwrap(),
            "authorization_code refresh_token"
        );
        assert!(public_grants("authorization_code password").is_err());
        assert!(public_grants("client_credentials").is_err());
        assert!(public_grants("").is_err());
    }

    #[test]
    fn redirect_uris_are_absolute_without_fragments() {
        let listed = vec![
            "http://127.0.0.1:7/cb".to_string(),
            "https://app/cb".to_string(),
        ];
        assert_eq!(
            redirect_uris("https://app/cb", Some(&listed)).unwrap(),
            vec!["http://127.0.0.1:7/cb"]
        );
        assert!(redirect_uris("www.google.lk", None).unwrap().is_empty());
        for bad in [
            "/relative",
            "https://app/cb#frag",
            "https://app/c b",
            "javascript:alert(1)",
        ] {
            assert!(
                redirect_uris("", Some(&[bad.to_string()])).is_err(),
                "{bad}"
            );
        }
    }
}
