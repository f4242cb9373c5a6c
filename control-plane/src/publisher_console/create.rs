//! Creating an API in the console: from a Swagger 2.0 file or URL (its title, version and
//! base path fill what the form leaves blank) or from scratch, with its endpoint and
//! tiers; the form becomes one `POST /apis` of the publisher API, which decides it. A
//! definition's URL is fetched as a client's metadata document is: under the gateways'
//! egress policy, pinned to the addresses checked, without redirects, within a time and
//! the same size as a file.

use std::net::SocketAddr;

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{chrome, may, signed_in, to_sign_in};
use crate::http::PUBLISHER;
use crate::http::egress_fetch::{Fetch, Outbound};
use crate::http::routes::{Routes, get};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin::Session;
use crate::web::uploads;
use crate::web::visit::{FORM_EXPIRED, Peer, call, encoded, peer_of, unless_from_this_site};
use crate::web::{MessagePage, Page, redirect, with_cookie};

/// The largest definition file the form takes (the publisher API's body limit decides
/// the rest).
const MAX_DEFINITION_BYTES: usize = 4 << 20;
/// Longest a definition's fetch may take.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Definitions fetched at once; more are refused rather than queued.
static FETCHES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

pub fn router() -> Routes {
    Routes::new().route("/publisher/apis/new", get(new_api).post(create_api))
}

#[derive(Template)]
#[template(path = "publisher/new.html")]
struct NewApiPage {
    title: &'static str,
    chrome: Chrome,
    error: Option<String>,
    form: ApiForm,
    /// The subscription tiers to offer, each with whether it is chosen.
    tiers: Vec<(String, bool)>,
}

/// What the form holds, kept when it is refused.
#[derive(Default)]
struct ApiForm {
    name: String,
    version: String,
    context: String,
    endpoint: String,
    /// Origins whose pages may call the API (CORS), comma-separated; `*` for any.
    cors_origins: String,
    tiers: Vec<String>,
    /// Where to fetch the definition from, when no file is given.
    definition_url: String,
    definition: Option<Vec<u8>>,
}

/// `GET /publisher/apis/new`: the form that creates an API.
#[utoipa::path(
    get,
    operation_id = "console_create_new_api",
    path = "/publisher/apis/new",
    tag = "Pages",
    responses(
        (status = 200, description = "The form that creates an API", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 403, description = "The user may not create APIs", content_type = "text/html", body = String),
    )
)]
async fn new_api(State(state): State<AppState>, headers: HeaderMap, peer: Peer) -> Response {
    let here = "/publisher/apis/new";
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(here);
    };
    let session = Some(session);
    if !may(&state, &session, Scope::ApiCreate) {
        return may_not_create();
    }
    let form = ApiForm {
        tiers: vec!["Unlimited".to_string()],
        ..ApiForm::default()
    };
    form_page(&state, &headers, &session, peer_of(peer), form, None).await
}

/// `POST /publisher/apis/new`: the API created from the form (multipart: the definition
/// file with the fields), then its page; the form again, saying why, when refused.
#[utoipa::path(
    post,
    operation_id = "console_create_create_api",
    path = "/publisher/apis/new",
    tag = "Pages",
    request_body(content = String, content_type = "multipart/form-data", description = "csrf_token, name, version, context, endpoint, cors_origins, tiers (repeated), definition (a Swagger 2.0 JSON file) or definition_url (where to fetch one)"),
    responses(
        (status = 303, description = "Created: to the API's page"),
        (status = 400, description = "Refused, by the form or the publisher API: the form again, saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong, or the user may not create APIs", content_type = "text/html", body = String),
    )
)]
async fn create_api(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    request: Request,
) -> Response {
    let peer = peer_of(peer);
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in("/publisher/apis/new");
    };
    let session = Some(session);
    let posted = match uploads::read(&state, request, "definition", MAX_DEFINITION_BYTES).await {
        Ok(posted) => posted,
        Err(why) => return refused_upload(&why),
    };
    if let Some(refused) = unless_from_this_site(&state, &headers, &posted.fields, FORM_EXPIRED) {
        return refused;
    }
    let mut form = ApiForm::of(posted);
    if !may(&state, &session, Scope::ApiCreate) {
        return may_not_create();
    }
    if form.definition.is_none() && !form.definition_url.is_empty() {
        match fetch_definition(&state, &form.definition_url).await {
            Ok(bytes) => form.definition = Some(bytes),
            Err(why) => {
                let why = format!("The definition could not be fetched: {why}");
                return form_page(&state, &headers, &session, peer, form, Some(why)).await;
            }
        }
    }
    let record = match record_of(&form) {
        Ok(record) => record,
        Err(why) => return form_page(&state, &headers, &session, peer, form, Some(why)).await,
    };
    let answer = call(
        &state,
        &session,
        peer,
        Call::new(axum::http::Method::POST, format!("{PUBLISHER}/apis")).json(&record),
    )
    .await;
    match answer.string_member("id") {
        Some(id) => redirect(
            StatusCode::SEE_OTHER,
            &format!("/publisher/apis/{}?done=created", encoded(&id)),
        ),
        None => {
            let why = answer.error_message();
            form_page(&state, &headers, &session, peer, form, Some(why)).await
        }
    }
}

impl ApiForm {
    /// The form's fields and its definition file; anything else in it is ignored.
    fn of(posted: uploads::Posted) -> Self {
        let text = |name: &str| {
            crate::web::field(&posted.fields, name)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        ApiForm {
            name: text("name"),
            version: text("version"),
            context: text("context"),
            endpoint: text("endpoint"),
            cors_origins: text("cors_origins"),
            tiers: posted
                .fields
                .iter()
                .filter(|(name, _)| name == "tiers")
                .map(|(_, tier)| tier.trim().to_string())
                .collect(),
            definition_url: text("definition_url"),
            definition: posted.file.map(|file| file.bytes),
        }
    }
}

/// The definition at `url`, fetched under the gateways' egress policy.
async fn fetch_definition(state: &AppState, url: &str) -> Result<Vec<u8>, String> {
    if !url.starts_with("https://") && !url.starts_with("http://") {
        return Err("give an http:// or https:// URL".into());
    }
    let _permit = FETCHES
        .try_acquire()
        .map_err(|_| "too many definitions are being fetched; try again".to_string())?;
    let fetch = Fetch {
        outbound: state.shared::<Outbound>(),
        accept: "application/json",
        max_bytes: MAX_DEFINITION_BYTES,
        timeout: FETCH_TIMEOUT,
    };
    Ok(fetch.get(url).await?.body)
}

/// The publisher API's body for `form`: what the definition says fills what the form
/// left blank.
fn record_of(form: &ApiForm) -> Result<Value, String> {
    let definition = match &form.definition {
        Some(bytes) => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| "The definition file is not UTF-8 text.".to_string())?;
            let value: Value = serde_json::from_str(text).map_err(|_| {
                "The definition file must be a Swagger 2.0 document in JSON.".to_string()
            })?;
            Some((text.to_string(), value))
        }
        None => None,
    };
    let from_definition = |pointer: &str| {
        definition
            .as_ref()
            .and_then(|(_, value)| value.pointer(pointer))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default()
    };
    let or = |given: &str, fallback: String| {
        if given.is_empty() {
            fallback
        } else {
            given.to_string()
        }
    };
    let name = or(&form.name, from_definition("/info/title"));
    let version = or(&form.version, from_definition("/info/version"));
    let context = or(&form.context, from_definition("/basePath"));
    if name.is_empty() || version.is_empty() || context.is_empty() {
        return Err(
            "Give the API a name, a version and a context, or a definition that \
                    names them (info.title, info.version, basePath)."
                .into(),
        );
    }
    let mut record = json!({
        "name": name,
        "version": version,
        "context": context,
        "visibility": "PUBLIC",
        "transport": ["http", "https"],
        "tiers": form.tiers,
        "isDefaultVersion": false,
    });
    if !form.endpoint.is_empty() {
        let endpoints = json!({
            "endpoint_type": "http",
            "production_endpoints": {"url": form.endpoint},
            "sandbox_endpoints": {"url": form.endpoint},
        });
        record["endpointConfig"] = json!(endpoints.to_string());
    }
    let origins: Vec<&str> = form
        .cors_origins
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    if !origins.is_empty() {
        record["corsConfiguration"] = json!({
            "corsConfigurationEnabled": true,
            "accessControlAllowOrigins": origins,
            "accessControlAllowCredentials": false,
            "accessControlAllowHeaders": ["authorization", "content-type", "accept"],
            "accessControlAllowMethods": ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"],
        });
    }
    if let Some((text, _)) = definition {
        record["apiDefinition"] = json!(text);
    }
    Ok(record)
}

/// The form, with `error` when it was refused (400) and what it held.
async fn form_page(
    state: &AppState,
    headers: &HeaderMap,
    session: &Option<Session>,
    peer: Option<SocketAddr>,
    form: ApiForm,
    error: Option<String>,
) -> Response {
    let tiers = subscription_tiers(state, session, peer)
        .await
        .into_iter()
        .map(|tier| {
            let chosen = form.tiers.contains(&tier);
            (tier, chosen)
        })
        .collect();
    let (chrome, cookie) = chrome(state, headers, session, "/publisher/apis/new");
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = NewApiPage {
        title: "Create an API",
        chrome,
        error,
        form,
        tiers,
    };
    with_cookie(Page::render(status, &page).into_response(), cookie)
}

/// The names of the tenant's subscription tiers.
pub(super) async fn subscription_tiers(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<SocketAddr>,
) -> Vec<String> {
    let target = format!("{PUBLISHER}/tiers/api?limit=100");
    call(state, session, peer, Call::get(target))
        .await
        .names_in_list()
        .unwrap_or_else(|| vec!["Unlimited".to_string()])
}

/// The 403 page of a user whose roles do not create APIs.
fn may_not_create() -> Response {
    let page = MessagePage::saying(
        "You may not create APIs",
        "Your account has no creator role: an administrator can give you one.",
        true,
    );
    Page::render(StatusCode::FORBIDDEN, &page).into_response()
}

/// The 400 page of a form that could not be read.
fn refused_upload(why: &str) -> Response {
    let message = format!("The form could not be read: {why}");
    let page = MessagePage::saying("That did not work", &message, true);
    Page::render(StatusCode::BAD_REQUEST, &page).into_response()
}

/// This page in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(new_api, create_api))]
pub struct Api;
