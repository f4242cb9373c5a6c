//! An API's resources in the console (`/publisher/apis/{apiId}/resources`): each
//! operation's auth type, throttling tier and scope, and the scopes the API declares, as
//! its Swagger definition holds them (`x-auth-type`, `x-throttling-tier`, `x-scope`,
//! `x-wso2-security.apim.x-wso2-scopes`, as WSO2 2.6 writes them). The form changes those
//! in the definition the publisher API answers and sends it back
//! (`PUT /apis/{apiId}/swagger`), which validates it as for a script.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{PUBLISHER_CONSOLE, chrome, signed_in, to_sign_in};
use crate::apis::{AUTH_TYPES, METHODS};
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, get};
use crate::scopes::ApiScope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin::Session;
use crate::web::visit::{Peer, call, encoded, not_found, peer_of, posted};
use crate::web::{Page, field, redirect, with_cookie};

pub fn router() -> Routes {
    Routes::new().route(
        "/publisher/apis/{api_id}/resources",
        get(resources_page).post(save),
    )
}

/// One operation as the pages show it.
pub(super) struct Operation {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) auth_type: String,
    pub(super) tier: String,
    /// The scope a token needs for it; empty for none.
    pub(super) scope: String,
}

#[derive(Template)]
#[template(path = "publisher/resources.html")]
struct ResourcesPage {
    title: &'static str,
    chrome: Chrome,
    api_id: String,
    error: Option<String>,
    operations: Vec<Operation>,
    auth_types: &'static [&'static str],
    tiers: Vec<String>,
    scopes: Vec<ApiScope>,
}

/// `GET /publisher/apis/{apiId}/resources`: each operation's auth type and tier.
#[utoipa::path(
    get,
    operation_id = "console_resources_resources_page",
    path = "/publisher/apis/{api_id}/resources",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The form of the API's resources", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No API the user may see has this id", content_type = "text/html", body = String),
    )
)]
async fn resources_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
) -> Response {
    let here = resources_path(&api_id);
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
    let peer = peer_of(peer);
    let Some(definition) = definition_of(&state, &session, peer, &api_id).await else {
        return not_found("There is no API with this id that you may see.");
    };
    render(&state, &headers, &session, peer, &api_id, &definition, None).await
}

/// `POST /publisher/apis/{apiId}/resources`: the scopes the form removes
/// (`remove-scope`) and adds (`scope-key`, `scope-name`, `scope-roles`), then each
/// operation's auth type, tier and scope as it says (`auth-<n>`, `tier-<n>`,
/// `scope-<n>`, in the definition's order).
#[utoipa::path(
    post,
    operation_id = "console_resources_save",
    path = "/publisher/apis/{api_id}/resources",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token; remove-scope (repeated), scope-key, scope-name, scope-roles; auth-<n>, tier-<n> and scope-<n> for each operation"),
    responses(
        (status = 303, description = "Saved (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: the form again, saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
        (status = 404, description = "No API the user may see has this id", content_type = "text/html", body = String),
    )
)]
async fn save(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let here = resources_path(&api_id);
    let (session, pairs) = match posted(&state, &PUBLISHER_CONSOLE, &headers, &body, &here) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let session = Some(session);
    let peer = peer_of(peer);
    let Some(mut definition) = definition_of(&state, &session, peer, &api_id).await else {
        return not_found("There is no API with this id that you may see.");
    };
    let error = match apply_form(&mut definition, &pairs) {
        Ok(()) => {
            let target = format!("{PUBLISHER}/apis/{}/swagger", encoded(&api_id));
            let request = Call::new(Method::PUT, target).json(&definition);
            let answer = call(&state, &session, peer, request).await;
            if answer.status.is_success() {
                let page = format!("/publisher/apis/{}?done=saved", encoded(&api_id));
                return redirect(StatusCode::SEE_OTHER, &page);
            }
            answer.error_message()
        }
        Err(why) => why,
    };
    render(
        &state,
        &headers,
        &session,
        peer,
        &api_id,
        &definition,
        Some(error),
    )
    .await
}

/// The form's changes applied to `definition`: scopes removed and added, then each
/// operation's auth type, tier and scope; why not, when an operation names a scope the
/// API does not declare or a new scope's key is taken.
fn apply_form(definition: &mut Value, pairs: &[(String, String)]) -> Result<(), String> {
    let removed: Vec<&str> = pairs
        .iter()
        .filter(|(name, _)| name == "remove-scope")
        .map(|(_, key)| key.as_str())
        .collect();
    let text = |name: &str| field(pairs, name).unwrap_or_default().trim();
    let key_of = |scope: &Value| scope["key"].as_str().unwrap_or_default().trim().to_string();
    // The declarations as written (their descriptions and roles kept), less those removed.
    let mut declared: Vec<Value> = definition["x-wso2-security"]["apim"]["x-wso2-scopes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    declared.retain(|scope| !removed.contains(&key_of(scope).as_str()));
    let new_key = text("scope-key");
    if !new_key.is_empty() {
        if declared.iter().any(|scope| key_of(scope) == new_key) {
            return Err(format!("The API declares the scope '{new_key}' already."));
        }
        let name = Some(text("scope-name"))
            .filter(|name| !name.is_empty())
            .unwrap_or(new_key);
        declared.push(
            json!({"key": new_key, "name": name, "roles": text("scope-roles"), "description": ""}),
        );
    }
    let keys: Vec<String> = declared.iter().map(key_of).collect();
    if !declared.is_empty() || !removed.is_empty() {
        set_declared_scopes(definition, declared);
    }
    for (n, operation) in operations_mut(definition).into_iter().enumerate() {
        if let Some(auth) = field(pairs, &format!("auth-{n}")) {
            operation["x-auth-type"] = Value::from(auth);
        }
        if let Some(tier) = field(pairs, &format!("tier-{n}")) {
            operation["x-throttling-tier"] = Value::from(tier);
        }
        let Some(scope) = field(pairs, &format!("scope-{n}")).map(str::trim) else {
            continue;
        };
        let Some(operation) = operation.as_object_mut() else {
            continue;
        };
        if scope.is_empty() {
            operation.remove("x-scope");
        } else if keys.iter().any(|key| key == scope) {
            operation.insert("x-scope".into(), Value::from(scope));
        } else {
            return Err(format!(
                "The API does not declare the scope '{scope}'; add it first."
            ));
        }
    }
    Ok(())
}

/// The scopes `definition` declares (as WSO2 writes them) made `scopes`.
fn set_declared_scopes(definition: &mut Value, scopes: Vec<Value>) {
    let mut place = definition;
    for member in ["x-wso2-security", "apim"] {
        if !place[member].is_object() {
            place[member] = json!({});
        }
        place = &mut place[member];
    }
    place["x-wso2-scopes"] = Value::Array(scopes);
}

/// The API's definition as the publisher API answers it to the user.
async fn definition_of(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
) -> Option<Value> {
    let target = format!("{PUBLISHER}/apis/{}/swagger", encoded(api_id));
    call(state, session, peer, Call::get(target))
        .await
        .json::<Value>()
}

/// The operations of `definition`, in its order.
fn operations_mut(definition: &mut Value) -> Vec<&mut Value> {
    let Some(paths) = definition["paths"].as_object_mut() else {
        return Vec::new();
    };
    paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| {
            item.iter_mut()
                .filter(|(method, _)| METHODS.contains(&method.as_str()))
                .map(|(_, operation)| operation)
        })
        .collect()
}

/// The operations of `definition` as the pages show them, in its order.
pub(super) fn operations(definition: &Value) -> Vec<Operation> {
    let mut list = Vec::new();
    for (path, item) in definition["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let text =
                |name: &str, default: &str| operation[name].as_str().unwrap_or(default).to_string();
            list.push(Operation {
                method: method.to_uppercase(),
                path: path.clone(),
                auth_type: text("x-auth-type", "Application & Application User"),
                tier: text("x-throttling-tier", "Unlimited"),
                scope: text("x-scope", ""),
            });
        }
    }
    list
}

/// The form's page (400 when it says `error`).
async fn render(
    state: &AppState,
    headers: &HeaderMap,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
    definition: &Value,
    error: Option<String>,
) -> Response {
    let target = format!("{PUBLISHER}/tiers/resource?limit=100");
    let tiers = call(state, session, peer, Call::get(target))
        .await
        .names_in_list()
        .unwrap_or_else(|| vec!["Unlimited".to_string()]);
    let (chrome, cookie) = chrome(state, headers, session, &resources_path(api_id));
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = ResourcesPage {
        title: "Resources",
        chrome,
        api_id: api_id.to_string(),
        error,
        operations: operations(definition),
        auth_types: AUTH_TYPES,
        tiers,
        scopes: crate::scopes::declared_in(definition),
    };
    with_cookie(Page::render(status, &page).into_response(), cookie)
}

/// The resources form's address of the API `api_id`.
fn resources_path(api_id: &str) -> String {
    format!("/publisher/apis/{}/resources", encoded(api_id))
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(resources_page, save))]
pub struct Api;
