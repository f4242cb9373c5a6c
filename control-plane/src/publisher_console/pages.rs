//! The console's pages: the user's APIs (`/publisher`, searched with the publisher's
//! `query` syntax), an API's page (`/publisher/apis/{apiId}`: what it is, its lifecycle
//! actions, its subscriptions with block and unblock), and signing in and out.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::views::{ApiList, ApiRow, Application, PublisherApi, SubscriptionList, SubscriptionRow};
use super::{PUBLISHER_CONSOLE, SCOPES, chrome, done_message, may, signed_in};
use crate::apis::lifecycle;
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, get, post};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin::{self, Session};
use crate::web::visit::{Peer, call, encoded, ended_session, not_found, peer_of};
use crate::web::{Page, field, form_pairs, with_cookie};

/// APIs on a page of the list.
const PAGE_SIZE: i64 = 25;
/// Subscriptions an API's page lists at most.
const MAX_SUBSCRIPTIONS: usize = 100;

pub fn router() -> Routes {
    Routes::new()
        .route("/publisher", get(home))
        .route("/publisher/apis/{api_id}", get(api_page))
        .route("/publisher/login", get(login))
        .route("/publisher/callback", get(callback))
        .route("/publisher/logout", post(logout))
}

#[derive(Template)]
#[template(path = "publisher/apis.html")]
struct ApisPage {
    title: &'static str,
    chrome: Chrome,
    /// Why the list is empty or missing: signed out, or no publisher role.
    notice: Option<&'static str>,
    error: Option<String>,
    query: String,
    summary: String,
    apis: Vec<ApiRow>,
    may_create: bool,
    next: Option<String>,
}

/// `GET /publisher`: the APIs of the user's tenant they may see, a page at a time.
#[utoipa::path(
    get,
    operation_id = "console_pages_home",
    path = "/publisher",
    tag = "Pages",
    params(
        ("q" = Option<String>, Query, description = "A search, in the publisher's query syntax"),
        ("page" = Option<i64>, Query, description = "The page, from 1"),
    ),
    responses((status = 200, description = "The publisher console's list of APIs", content_type = "text/html", body = String))
)]
async fn home(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let search = field(&pairs, "q").unwrap_or_default().trim().to_string();
    let page = field(&pairs, "page")
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| (1..=10_000).contains(p))
        .unwrap_or(1);
    let session = signed_in(&state, &headers);
    let here = "/publisher".to_string();
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let mut template = ApisPage {
        title: "APIs",
        chrome,
        notice: None,
        error: None,
        query: search.clone(),
        summary: String::new(),
        apis: Vec::new(),
        may_create: may(&state, &session, Scope::ApiCreate),
        next: None,
    };
    if session.is_none() {
        template.notice = Some("Sign in to see and publish your APIs.");
    } else if !may(&state, &session, Scope::ApiView) {
        template.notice = Some(
            "Your account has no publisher role: an administrator can give you the \
             creator or publisher role.",
        );
    } else {
        let target = format!(
            "{PUBLISHER}/apis?limit={PAGE_SIZE}&offset={}&query={}",
            (page - 1) * PAGE_SIZE,
            encoded(&search)
        );
        let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
        if let Some(ended) = ended_session(&state, &PUBLISHER_CONSOLE, &session, &answer, &here) {
            return ended;
        }
        match answer.json::<ApiList>() {
            Some(list) => {
                let total = list.pagination.map_or(list.count as i64, |p| p.total);
                template.summary = match total {
                    0 if search.is_empty() => "You have no APIs yet.".to_string(),
                    0 => format!("No API matches “{search}”."),
                    1 => "1 API".to_string(),
                    n => format!("{n} APIs"),
                };
                template.next = (page * PAGE_SIZE < total)
                    .then(|| format!("/publisher?q={}&page={}", encoded(&search), page + 1));
                template.apis = list.list;
            }
            None => template.error = Some(answer.error_message()),
        }
    }
    with_cookie(
        Page::render(StatusCode::OK, &template).into_response(),
        cookie,
    )
}

#[derive(Template)]
#[template(path = "publisher/api.html")]
struct ApiPage {
    title: String,
    chrome: Chrome,
    done: Option<&'static str>,
    api: PublisherApi,
    endpoint: Option<String>,
    resources: Vec<super::resources::Operation>,
    /// The lifecycle actions the user may take from the API's state.
    actions: Vec<&'static str>,
    /// Whether the first publish's checklist applies.
    checklist: bool,
    /// `None` when the user may not see subscriptions.
    subscriptions: Option<Vec<SubscriptionRow>>,
    may_block: bool,
    may_edit: bool,
    may_see_analytics: bool,
    /// Its documents: id, name, type, where the content comes from.
    documents: Vec<(String, String, String, String)>,
    /// Every endpoint URL of the API, for its certificates.
    endpoints: Vec<String>,
    /// The certificates gateways use for those endpoints.
    certificates: Vec<super::implementation::Certificate>,
    /// The file name of its WSDL, when it has one.
    wsdl: Option<String>,
    document_types: &'static [&'static str],
    sources: &'static [(&'static str, &'static str)],
}

/// `GET /publisher/apis/{apiId}`: an API of the user's tenant.
#[utoipa::path(
    get,
    operation_id = "console_pages_api_page",
    path = "/publisher/apis/{api_id}",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The API's page in the console", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No API the user may see has this id", content_type = "text/html", body = String),
    )
)]
async fn api_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let peer = peer_of(peer);
    let id = encoded(&api_id);
    let here = format!("/publisher/apis/{id}");
    let Some(session) = signed_in(&state, &headers) else {
        return super::to_sign_in(&here);
    };
    let session = Some(session);
    let answer = call(
        &state,
        &session,
        peer,
        Call::get(format!("{PUBLISHER}/apis/{id}")),
    )
    .await;
    if let Some(ended) = ended_session(&state, &PUBLISHER_CONSOLE, &session, &answer, &here) {
        return ended;
    }
    let Some(api) = answer.json::<PublisherApi>() else {
        return not_found("There is no API with this id that you may see.");
    };
    let subscriptions = if may(&state, &session, Scope::SubscriptionView) {
        Some(subscriptions_of(&state, &session, peer, &api.id).await)
    } else {
        None
    };
    let actions = if may(&state, &session, Scope::ApiPublish) {
        lifecycle::allowed_actions(&api.status)
    } else {
        Vec::new()
    };
    let documents = documents_of(&state, &session, peer, &api.id).await;
    let endpoints = api.endpoint_urls();
    let certificates =
        super::implementation::certificates_of(&state, &session, peer, &endpoints).await;
    let wsdl = super::implementation::wsdl_of(&state, &session, peer, &api.id).await;
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let template = ApiPage {
        title: format!("{} {}", api.name, api.version),
        chrome,
        done: done_message(query.as_deref()),
        endpoint: api.production_url(),
        resources: super::resources::operations(&api.definition()),
        checklist: actions.contains(&"Publish")
            && lifecycle::is_first_publish(&api.status, "PUBLISHED"),
        actions,
        subscriptions,
        may_block: may(&state, &session, Scope::SubscriptionBlock),
        may_edit: may(&state, &session, Scope::ApiCreate),
        may_see_analytics: may(&state, &session, Scope::Admin),
        documents,
        endpoints,
        certificates,
        wsdl,
        document_types: crate::documents::DOCUMENT_TYPES,
        sources: &super::documents::SOURCES,
        api,
    };
    with_cookie(
        Page::render(StatusCode::OK, &template).into_response(),
        cookie,
    )
}

/// The documents of the API `api_id`.
async fn documents_of(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
) -> Vec<(String, String, String, String)> {
    let target = format!("{PUBLISHER}/apis/{}/documents?limit=100", encoded(api_id));
    let list = call(state, session, peer, Call::get(target))
        .await
        .json::<serde_json::Value>()
        .unwrap_or_default();
    let text =
        |doc: &serde_json::Value, name: &str| doc[name].as_str().unwrap_or_default().to_string();
    list["list"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|doc| {
            (
                text(doc, "documentId"),
                text(doc, "name"),
                text(doc, "type"),
                text(doc, "sourceType"),
            )
        })
        .collect()
}

/// The subscriptions to the API `api_id`, each with its application's name and owner.
async fn subscriptions_of(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
) -> Vec<SubscriptionRow> {
    let target = format!(
        "{PUBLISHER}/subscriptions?apiId={}&limit={MAX_SUBSCRIPTIONS}",
        encoded(api_id)
    );
    let list = call(state, session, peer, Call::get(target))
        .await
        .json::<SubscriptionList>()
        .map(|l| l.list)
        .unwrap_or_default();
    let mut rows = Vec::with_capacity(list.len());
    for subscription in list.into_iter().take(MAX_SUBSCRIPTIONS) {
        let target = format!(
            "{PUBLISHER}/applications/{}",
            encoded(&subscription.application_id)
        );
        let application = call(state, session, peer, Call::get(target))
            .await
            .json::<Application>();
        let (application, subscriber) = application.map_or_else(
            || (subscription.application_id.clone(), String::new()),
            |a| (a.name, a.subscriber),
        );
        rows.push(SubscriptionRow {
            id: subscription.subscription_id,
            application,
            subscriber,
            tier: subscription.tier,
            status: subscription.status,
        });
    }
    rows
}

/// `GET /publisher/login`: signs the user in, then back to `next`.
#[utoipa::path(
    get,
    operation_id = "console_pages_login",
    path = "/publisher/login",
    tag = "Pages",
    params(("next" = Option<String>, Query, description = "The console's page to come back to")),
    responses((status = 302, description = "To the authorization endpoint, with PKCE"))
)]
async fn login(State(state): State<AppState>, RawQuery(query): RawQuery) -> Response {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let mut scope = String::from("openid");
    for wanted in SCOPES {
        scope.push(' ');
        scope.push_str(&state.scopes.name(wanted));
    }
    signin::start(&state, &PUBLISHER_CONSOLE, field(&pairs, "next"), &scope)
}

/// `GET /publisher/callback`: where the authorization server sends the user back.
#[utoipa::path(
    get,
    operation_id = "console_pages_callback",
    path = "/publisher/callback",
    tag = "Pages",
    params(
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("state" = Option<String>, Query, description = "The sign-in's state"),
        ("iss" = Option<String>, Query, description = "The issuer (RFC 9207)"),
        ("error" = Option<String>, Query, description = "Why no code was given"),
    ),
    responses(
        (status = 303, description = "Signed in: to the page the sign-in started from"),
        (status = 400, description = "Not the sign-in this browser started, or it failed", content_type = "text/html", body = String),
    )
)]
async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    signin::finish(&state, &PUBLISHER_CONSOLE, &headers, peer_of(peer), &pairs).await
}

/// `POST /publisher/logout`: signs the user out (a form with its CSRF token).
#[utoipa::path(
    post,
    operation_id = "console_pages_logout",
    path = "/publisher/logout",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Signed out: to the console's first page"),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    crate::web::visit::sign_out(&state, &PUBLISHER_CONSOLE, &headers, peer_of(peer), &body).await
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(home, api_page, login, callback, logout))]
pub struct Api;
