//! Editing an API in the console (`/publisher/apis/{apiId}/edit`): its description,
//! visibility, tiers, endpoints (one, load-balanced or failover, with a timeout), the
//! browser origins that may call it and its response caching. The form changes those
//! fields of the API as the publisher API answers it and sends it back whole
//! (`PUT /apis/{apiId}`), as WSO2's own clients do; the publisher API decides.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{PUBLISHER_CONSOLE, chrome, signed_in, to_sign_in};
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin::Session;
use crate::web::visit::{Peer, call, encoded, not_found, peer_of, posted};
use crate::web::{Page, field, redirect, with_cookie};

/// The endpoint types the form offers: WSO2's name, and what the page calls it.
const ENDPOINT_TYPES: [(&str, &str); 3] = [
    ("http", "One endpoint"),
    ("load_balance", "Load-balanced (round robin)"),
    ("failover", "Failover (the first, then the others in order)"),
];
/// The visibilities the form offers.
const VISIBILITIES: [&str; 3] = ["PUBLIC", "PRIVATE", "RESTRICTED"];

pub fn router() -> Routes {
    Routes::new().route("/publisher/apis/{api_id}/edit", get(edit_page).post(save))
}

/// What the form holds.
#[derive(Default)]
struct EditForm {
    description: String,
    visibility: String,
    visible_roles: String,
    tiers: Vec<String>,
    endpoint_type: String,
    production: String,
    sandbox: String,
    timeout_ms: String,
    cors_origins: String,
    caching: bool,
    cache_seconds: String,
}

#[derive(Template)]
#[template(path = "publisher/edit.html")]
struct EditPage {
    title: String,
    chrome: Chrome,
    api_id: String,
    error: Option<String>,
    form: EditForm,
    tiers: Vec<(String, bool)>,
    endpoint_types: &'static [(&'static str, &'static str)],
    visibilities: &'static [&'static str],
}

/// `GET /publisher/apis/{apiId}/edit`: the form, filled from the API.
#[utoipa::path(
    get,
    operation_id = "console_edit_edit_page",
    path = "/publisher/apis/{api_id}/edit",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The form that edits the API", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No API the user may edit has this id", content_type = "text/html", body = String),
    )
)]
async fn edit_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
) -> Response {
    let here = edit_path(&api_id);
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
    let peer = peer_of(peer);
    let Some(api) = the_api(&state, &session, peer, &api_id).await else {
        return not_found("There is no API with this id that you may edit.");
    };
    let form = form_of(&api);
    render(
        &state,
        &headers,
        &session,
        peer,
        (&api_id, &api),
        form,
        None,
    )
    .await
}

/// `POST /publisher/apis/{apiId}/edit`: the API changed as the form says, then its page;
/// the form again, saying why, when refused.
#[utoipa::path(
    post,
    operation_id = "console_edit_save",
    path = "/publisher/apis/{api_id}/edit",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, description, visibility, visible_roles, tiers (repeated), endpoint_type, production and sandbox (one URL a line), timeout_ms, cors_origins, caching, cache_seconds"),
    responses(
        (status = 303, description = "Saved (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "Refused, by the form or the publisher API: the form again, saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
        (status = 404, description = "No API the user may edit has this id", content_type = "text/html", body = String),
    )
)]
async fn save(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let here = edit_path(&api_id);
    let (session, pairs) = match posted(&state, &PUBLISHER_CONSOLE, &headers, &body, &here) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let session = Some(session);
    let peer = peer_of(peer);
    let Some(mut api) = the_api(&state, &session, peer, &api_id).await else {
        return not_found("There is no API with this id that you may edit.");
    };
    let text = |name: &str| field(&pairs, name).unwrap_or_default().trim().to_string();
    let form = EditForm {
        description: text("description"),
        visibility: text("visibility"),
        visible_roles: text("visible_roles"),
        tiers: pairs
            .iter()
            .filter(|(name, _)| name == "tiers")
            .map(|(_, tier)| tier.clone())
            .collect(),
        endpoint_type: text("endpoint_type"),
        production: text("production"),
        sandbox: text("sandbox"),
        timeout_ms: text("timeout_ms"),
        cors_origins: text("cors_origins"),
        caching: field(&pairs, "caching") == Some("on"),
        cache_seconds: text("cache_seconds"),
    };
    if let Err(why) = apply(&form, &mut api) {
        let error = Some(why);
        return render(
            &state,
            &headers,
            &session,
            peer,
            (&api_id, &api),
            form,
            error,
        )
        .await;
    }
    let target = format!("{PUBLISHER}/apis/{}", encoded(&api_id));
    let answer = call(
        &state,
        &session,
        peer,
        Call::new(Method::PUT, target).json(&api),
    )
    .await;
    if answer.status.is_success() {
        let page = format!("/publisher/apis/{}?done=saved", encoded(&api_id));
        return redirect(StatusCode::SEE_OTHER, &page);
    }
    let error = Some(answer.error_message());
    render(
        &state,
        &headers,
        &session,
        peer,
        (&api_id, &api),
        form,
        error,
    )
    .await
}

/// The API as the publisher API answers it to the user, when it does.
async fn the_api(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
) -> Option<Value> {
    let target = format!("{PUBLISHER}/apis/{}", encoded(api_id));
    call(state, session, peer, Call::get(target))
        .await
        .json::<Value>()
}

/// The form filled from `api`.
fn form_of(api: &Value) -> EditForm {
    let text = |name: &str| api[name].as_str().unwrap_or_default().to_string();
    let endpoints: Value = api["endpointConfig"]
        .as_str()
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or_default();
    let endpoint_type = endpoints["endpoint_type"]
        .as_str()
        .unwrap_or("http")
        .to_string();
    let lines = |environment: &str| {
        let mut urls = urls_of(&endpoints[format!("{environment}_endpoints")]);
        urls.extend(urls_of(&endpoints[format!("{environment}_failovers")]));
        urls.join("\n")
    };
    // WSO2 writes it as a string; a number reads the same.
    let timeout_ms = match &first_endpoint(&endpoints)["config"]["actionDuration"] {
        Value::String(ms) => ms.clone(),
        Value::Number(ms) => ms.to_string(),
        _ => String::new(),
    };
    let cors = &api["corsConfiguration"];
    let cors_origins = if cors["corsConfigurationEnabled"].as_bool() == Some(true) {
        strings(&cors["accessControlAllowOrigins"]).join(", ")
    } else {
        String::new()
    };
    EditForm {
        description: text("description"),
        visibility: api["visibility"].as_str().unwrap_or("PUBLIC").to_string(),
        visible_roles: strings(&api["visibleRoles"]).join(", "),
        tiers: strings(&api["tiers"]),
        endpoint_type,
        production: lines("production"),
        sandbox: lines("sandbox"),
        timeout_ms,
        cors_origins,
        caching: api["responseCaching"].as_str() == Some("Enabled"),
        cache_seconds: api["cacheTimeout"]
            .as_i64()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// The first production endpoint of an endpoint configuration.
fn first_endpoint(endpoints: &Value) -> &Value {
    let production = &endpoints["production_endpoints"];
    if production.is_array() {
        &production[0]
    } else {
        production
    }
}

/// The URLs of an endpoint, or of a list of them.
fn urls_of(endpoints: &Value) -> Vec<String> {
    match endpoints {
        Value::Array(list) => list.iter().flat_map(urls_of).collect(),
        Value::Object(endpoint) => endpoint
            .get("url")
            .and_then(Value::as_str)
            .map(|url| vec![url.to_string()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The strings of a JSON list.
fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Changes `api` as `form` says; why not, when the form does not read.
fn apply(form: &EditForm, api: &mut Value) -> Result<(), String> {
    api["description"] = json!(form.description);
    if !VISIBILITIES.contains(&form.visibility.as_str()) {
        return Err("Choose a visibility.".into());
    }
    api["visibility"] = json!(form.visibility);
    api["visibleRoles"] = json!(comma_list(&form.visible_roles));
    api["tiers"] = json!(form.tiers);
    api["endpointConfig"] = json!(endpoint_config(form)?.to_string());
    let origins = comma_list(&form.cors_origins);
    api["corsConfiguration"] = if origins.is_empty() {
        json!({"corsConfigurationEnabled": false, "accessControlAllowOrigins": [],
               "accessControlAllowCredentials": false, "accessControlAllowHeaders": [],
               "accessControlAllowMethods": []})
    } else {
        json!({"corsConfigurationEnabled": true, "accessControlAllowOrigins": origins,
               "accessControlAllowCredentials": false,
               "accessControlAllowHeaders": ["authorization", "content-type", "accept"],
               "accessControlAllowMethods": ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"]})
    };
    api["responseCaching"] = json!(if form.caching { "Enabled" } else { "Disabled" });
    if !form.cache_seconds.is_empty() {
        let seconds: i64 = form
            .cache_seconds
            .parse()
            .map_err(|_| "The cache timeout must be a number of seconds.".to_string())?;
        api["cacheTimeout"] = json!(seconds);
    }
    Ok(())
}

/// WSO2's `endpointConfig` for the form's endpoints.
fn endpoint_config(form: &EditForm) -> Result<Value, String> {
    let kind = ENDPOINT_TYPES
        .iter()
        .map(|(kind, _)| *kind)
        .find(|kind| *kind == form.endpoint_type)
        .ok_or("Choose an endpoint type.")?;
    let config = if form.timeout_ms.is_empty() {
        Value::Null
    } else {
        let ms: u64 = form
            .timeout_ms
            .parse()
            .map_err(|_| "The timeout must be a number of milliseconds.".to_string())?;
        json!({"actionDuration": ms.to_string(), "actionSelect": "fault"})
    };
    let production = lines(&form.production);
    if production.is_empty() {
        return Err("Give at least one production endpoint.".into());
    }
    let sandbox = match lines(&form.sandbox) {
        urls if urls.is_empty() => production.clone(),
        urls => urls,
    };
    if kind == "http" && (production.len() > 1 || sandbox.len() > 1) {
        return Err(
            "One endpoint takes one URL; choose load-balanced or failover for more.".into(),
        );
    }
    let endpoint = |url: &String| json!({"url": url, "config": config});
    let mut endpoints = json!({"endpoint_type": kind});
    for (environment, urls) in [("production", &production), ("sandbox", &sandbox)] {
        match kind {
            "load_balance" => {
                let list: Vec<Value> = urls.iter().map(endpoint).collect();
                endpoints[format!("{environment}_endpoints")] = json!(list);
            }
            "failover" => {
                endpoints[format!("{environment}_endpoints")] = endpoint(&urls[0]);
                let rest: Vec<Value> = urls[1..].iter().map(endpoint).collect();
                endpoints[format!("{environment}_failovers")] = json!(rest);
            }
            _ => endpoints[format!("{environment}_endpoints")] = endpoint(&urls[0]),
        }
    }
    Ok(endpoints)
}

/// The non-empty lines of `text`, trimmed.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The non-empty items of a comma-separated list, trimmed.
fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

/// The form's page (400 when it says `error`).
async fn render(
    state: &AppState,
    headers: &HeaderMap,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    (api_id, api): (&str, &Value),
    form: EditForm,
    error: Option<String>,
) -> Response {
    let tiers = super::create::subscription_tiers(state, session, peer)
        .await
        .into_iter()
        .map(|tier| {
            let chosen = form.tiers.contains(&tier);
            (tier, chosen)
        })
        .collect();
    let here = edit_path(api_id);
    let (chrome, cookie) = chrome(state, headers, session, &here);
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let name = api["name"].as_str().unwrap_or_default();
    let version = api["version"].as_str().unwrap_or_default();
    let page = EditPage {
        title: format!("Edit {name} {version}"),
        chrome,
        api_id: api_id.to_string(),
        error,
        form,
        tiers,
        endpoint_types: &ENDPOINT_TYPES,
        visibilities: &VISIBILITIES,
    };
    with_cookie(Page::render(status, &page).into_response(), cookie)
}

/// The edit form's address of the API `api_id`.
fn edit_path(api_id: &str) -> String {
    format!("/publisher/apis/{}/edit", encoded(api_id))
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(edit_page, save))]
pub struct Api;

#[cfg(test)]
mod tests {
    use super::*;

    fn form(kind: &str, production: &str) -> EditForm {
        EditForm {
            endpoint_type: kind.into(),
            production: production.into(),
            timeout_ms: "2000".into(),
            ..EditForm::default()
        }
    }

    #[test]
    fn endpoints_are_written_as_wso2_reads_them() {
        let one = endpoint_config(&form("http", "http://a/")).unwrap();
        assert_eq!(one["production_endpoints"]["url"], "http://a/");
        assert_eq!(one["sandbox_endpoints"]["url"], "http://a/");
        assert_eq!(
            one["production_endpoints"]["config"]["actionDuration"],
            "2000"
        );
        let balanced = endpoint_config(&form("load_balance", "http://a/\n http://b/ \n")).unwrap();
        assert_eq!(balanced["production_endpoints"][1]["url"], "http://b/");
        let failover =
            endpoint_config(&form("failover", "http://a/\nhttp://b/\nhttp://c/")).unwrap();
        assert_eq!(failover["production_endpoints"]["url"], "http://a/");
        assert_eq!(failover["production_failovers"][1]["url"], "http://c/");
        // And read back into the form the same.
        let api = json!({"endpointConfig": failover.to_string()});
        assert_eq!(form_of(&api).production, "http://a/\nhttp://b/\nhttp://c/");
        assert_eq!(form_of(&api).timeout_ms, "2000");
    }

    #[test]
    fn a_form_that_does_not_read_is_refused() {
        assert!(endpoint_config(&form("http", "http://a/\nhttp://b/")).is_err());
        assert!(endpoint_config(&form("http", "")).is_err());
        assert!(endpoint_config(&form("round_robin", "http://a/")).is_err());
        let mut slow = form("http", "http://a/");
        slow.timeout_ms = "soon".into();
        assert!(endpoint_config(&slow).is_err());
    }
}
