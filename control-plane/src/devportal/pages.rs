//! The developer portal's pages: the catalogue (`/devportal`, searched with the store's
//! `query` syntax, paged), an API's page (`/devportal/apis/{apiId}`: overview, plans,
//! business information, operations from its definition, documents), its thumbnail, and
//! signing in and out.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::DEVPORTAL;
use super::views::{self, ApiCard, ApiList, DocumentCard, DocumentList, OperationView, StoreApi};
use super::visits::{NAV, Peer, call, done_message, encoded, peer_of};
use crate::http::STORE;
use crate::http::routes::{Routes, get, post};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin;
use crate::web::visit::ended_session;
use crate::web::{MessagePage, Page, field, form_pairs, with_cookie};

/// APIs on a catalogue page.
const PAGE_SIZE: i64 = 24;
/// The last catalogue page one may ask for (10,000 pages of APIs).
const MAX_PAGE: i64 = 10_000;
/// Documents an API page lists at most.
const MAX_DOCUMENTS: usize = 100;

pub fn router() -> Routes {
    Routes::new()
        .route("/devportal", get(catalogue))
        .route("/devportal/apis/{api_id}", get(api_page))
        .route("/devportal/apis/{api_id}/thumbnail", get(thumbnail))
        .route("/devportal/login", get(login))
        .route("/devportal/callback", get(callback))
        .route("/devportal/logout", post(logout))
}

#[derive(Template)]
#[template(path = "devportal/catalogue.html")]
struct CataloguePage {
    title: &'static str,
    chrome: Chrome,
    query: String,
    error: Option<String>,
    summary: String,
    apis: Vec<ApiCard>,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /devportal`: the APIs the visitor may see, a page at a time; `q` searches them
/// as the store's `query` does, `page` picks the page.
#[utoipa::path(
    get,
    path = "/devportal",
    tag = "Pages",
    params(
        ("q" = Option<String>, Query, description = "A search, in the store's query syntax"),
        ("page" = Option<i64>, Query, description = "The page, from 1"),
    ),
    responses((status = 200, description = "The developer portal's catalogue", content_type = "text/html", body = String))
)]
async fn catalogue(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let search = field(&pairs, "q").unwrap_or_default().trim().to_string();
    let page = field(&pairs, "page")
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| (1..=MAX_PAGE).contains(p))
        .unwrap_or(1);
    let session = signin::session(&state, &DEVPORTAL, &headers);
    let target = format!(
        "{STORE}/apis?limit={PAGE_SIZE}&offset={}&query={}",
        (page - 1) * PAGE_SIZE,
        encoded(&search)
    );
    let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
    let here = format!("/devportal{}", page_query(&search, page));
    if let Some(ended) = ended_session(&state, &DEVPORTAL, &session, &answer, &here) {
        return ended;
    }
    let (apis, total, error) = match answer.json::<ApiList>() {
        Some(list) => {
            let total = list
                .pagination
                .as_ref()
                .map_or(list.count as i64, |p| p.total);
            let apis = list.list.into_iter().map(ApiCard::shown).collect();
            (apis, total, None)
        }
        None => (Vec::new(), 0, Some(answer.error_message())),
    };
    let summary = match (total, search.is_empty()) {
        (0, true) => "No APIs are published yet.".to_string(),
        (0, false) => format!("No API matches “{search}”."),
        (1, _) => "1 API".to_string(),
        (n, _) => format!(
            "{n} APIs, page {page} of {}",
            (n + PAGE_SIZE - 1) / PAGE_SIZE
        ),
    };
    let previous = (page > 1).then(|| format!("/devportal{}", page_query(&search, page - 1)));
    let next =
        (page * PAGE_SIZE < total).then(|| format!("/devportal{}", page_query(&search, page + 1)));
    let (chrome, cookie) = Chrome::of(&state, &DEVPORTAL, NAV, &headers, session.as_ref(), here);
    let template = CataloguePage {
        title: "APIs",
        chrome,
        query: search,
        error,
        summary,
        apis,
        previous,
        next,
    };
    with_cookie(
        Page::render(StatusCode::OK, &template).into_response(),
        cookie,
    )
}

#[derive(Template)]
#[template(path = "devportal/api.html")]
struct ApiPage {
    title: String,
    chrome: Chrome,
    api_id: String,
    done: Option<&'static str>,
    /// The subscribe form, for a signed-in user.
    subscribe: Option<SubscribeForm>,
    /// The try-it console, for a signed-in user with applications.
    console: Option<Console>,
    api: StoreApi,
    /// Where the gateways serve it.
    endpoints: Vec<String>,
    /// Each tag, with the search for its APIs.
    tags: Vec<(String, String)>,
    business: Vec<(String, String)>,
    operations: Vec<OperationView>,
    documents: Vec<DocumentCard>,
    /// Its MCP server, when its provider serves one.
    mcp: Option<views::McpServer>,
}

/// What the try-it console offers: the user's applications, the gateways, and the
/// first operation of the API to start from.
struct Console {
    /// The API's base path at a gateway (`/pets/1.0.0`).
    context: String,
    applications: Vec<(String, String)>,
    gateways: Vec<String>,
    method: String,
    path: String,
}

/// What the subscribe form offers: the user's applications, by id and name.
struct SubscribeForm {
    api_id: String,
    applications: Vec<(String, String)>,
}

/// `GET /devportal/apis/{apiId}`: an API's page, when the visitor may see the API.
#[utoipa::path(
    get,
    path = "/devportal/apis/{api_id}",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The API's page", content_type = "text/html", body = String),
        (status = 404, description = "No API the visitor may see has this id", content_type = "text/html", body = String),
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
    let session = signin::session(&state, &DEVPORTAL, &headers);
    let id = encoded(&api_id);
    let here = format!("/devportal/apis/{id}");
    let answer = call(
        &state,
        &session,
        peer,
        Call::get(format!("{STORE}/apis/{id}")),
    )
    .await;
    if let Some(ended) = ended_session(&state, &DEVPORTAL, &session, &answer, &here) {
        return ended;
    }
    let Some(api) = answer.json::<StoreApi>() else {
        let message = if answer.status == StatusCode::NOT_FOUND {
            "There is no API with this id that you may see.".to_string()
        } else {
            answer.error_message()
        };
        let status = if answer.status.is_client_error() {
            StatusCode::NOT_FOUND
        } else {
            answer.status
        };
        return Page::render(
            status,
            &MessagePage::saying("API not found", &message, true),
        )
        .into_response();
    };
    let documents = call(
        &state,
        &session,
        peer,
        Call::get(format!("{STORE}/apis/{id}/documents?limit={MAX_DOCUMENTS}")),
    )
    .await
    .json::<DocumentList>()
    .map(|list| list.list)
    .unwrap_or_default();
    let subscribe = match &session {
        Some(_) => {
            let target = format!("{STORE}/applications?limit=200");
            let mine = call(&state, &session, peer, Call::get(target)).await;
            let applications = views::applications(&mine)
                .into_iter()
                .map(|app| (app.id, app.name))
                .collect();
            Some(SubscribeForm {
                api_id: api_id.clone(),
                applications,
            })
        }
        None => None,
    };
    let mcp = call(
        &state,
        &session,
        peer,
        Call::get(format!("{STORE}/apis/{id}/mcp")),
    )
    .await
    .json::<views::McpServer>();
    let operations = views::operations(api.api_definition.as_deref());
    let gateways = crate::environments::gateway_urls(&state.config);
    let console = subscribe
        .as_ref()
        .filter(|form| !form.applications.is_empty())
        .map(|form| Console {
            context: format!("{}/{}", api.context.trim_end_matches('/'), api.version),
            applications: form.applications.clone(),
            gateways: gateways.clone(),
            method: first_to_try(&operations).map_or("GET".into(), |op| op.method.clone()),
            path: first_to_try(&operations).map_or("/".into(), |op| op.path.clone()),
        });
    let endpoints = endpoint_urls(&gateways, &api);
    let (mut chrome, cookie) =
        Chrome::of(&state, &DEVPORTAL, NAV, &headers, session.as_ref(), here);
    chrome.script = console.is_some();
    let scripts = console.is_some();
    let template = ApiPage {
        title: api.name.clone(),
        chrome,
        console,
        endpoints,
        done: done_message(query.as_deref()),
        api_id: api_id.clone(),
        subscribe,
        tags: api
            .tags
            .iter()
            .map(|tag| {
                (
                    tag.clone(),
                    format!("/devportal?q={}", encoded(&format!("tag:{tag}"))),
                )
            })
            .collect(),
        business: views::business(api.business_information.as_ref()),
        operations,
        documents,
        mcp,
        api,
    };
    let mut page = Page::render(StatusCode::OK, &template);
    if scripts {
        page = page.with_scripts_calling(gateways);
    }
    with_cookie(page.into_response(), cookie)
}

/// `GET /devportal/apis/{apiId}/thumbnail`: the API's image, as the store answers it to
/// the visitor (an image's bytes only, never anything a browser would run).
#[utoipa::path(
    get,
    path = "/devportal/apis/{api_id}/thumbnail",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The API's thumbnail", content_type = "image/png", body = Vec<u8>),
        (status = 404, description = "No thumbnail the visitor may see"),
    )
)]
async fn thumbnail(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
) -> Response {
    let session = signin::session(&state, &DEVPORTAL, &headers);
    let target = format!("{STORE}/apis/{}/thumbnail", encoded(&api_id));
    let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
    let image_type = answer
        .headers
        .get(header::CONTENT_TYPE)
        .filter(|t| matches!(t.as_bytes(), b"image/png" | b"image/jpeg" | b"image/gif"))
        .cloned();
    match image_type {
        Some(content_type) if answer.status.is_success() => (
            [
                (header::CONTENT_TYPE, content_type),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
                (
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static("default-src 'none'"),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, max-age=300"),
                ),
            ],
            answer.body,
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /devportal/login`: signs the visitor in, then back to `next`.
#[utoipa::path(
    get,
    path = "/devportal/login",
    tag = "Pages",
    params(("next" = Option<String>, Query, description = "The portal page to come back to")),
    responses((status = 302, description = "To the authorization endpoint, with PKCE"))
)]
async fn login(State(state): State<AppState>, RawQuery(query): RawQuery) -> Response {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let scope = format!("openid {}", state.scopes.name(Scope::Subscribe));
    signin::start(&state, &DEVPORTAL, field(&pairs, "next"), &scope)
}

/// `GET /devportal/callback`: where the authorization server sends the visitor back.
#[utoipa::path(
    get,
    path = "/devportal/callback",
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
    signin::finish(&state, &DEVPORTAL, &headers, peer_of(peer), &pairs).await
}

/// `POST /devportal/logout`: signs the user out (a form with its CSRF token).
#[utoipa::path(
    post,
    path = "/devportal/logout",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Signed out: to the catalogue"),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    crate::web::visit::sign_out(&state, &DEVPORTAL, &headers, peer_of(peer), &body).await
}

/// The API's URLs at each configured gateway: with its version, and without it when it
/// is the default version.
fn endpoint_urls(gateways: &[String], api: &StoreApi) -> Vec<String> {
    let context = api.context.trim_end_matches('/');
    let mut urls = Vec::new();
    for gateway in gateways {
        urls.push(format!("{gateway}{context}/{}", api.version));
        if api.is_default_version {
            urls.push(format!("{gateway}{context}"));
        }
    }
    urls
}

/// The operation the console starts from: the first GET, else the first.
fn first_to_try(operations: &[OperationView]) -> Option<&OperationView> {
    operations
        .iter()
        .find(|op| op.method == "GET")
        .or(operations.first())
}

/// The catalogue's query for `search` at `page`.
fn page_query(search: &str, page: i64) -> String {
    match (search.is_empty(), page) {
        (true, 1) => String::new(),
        (true, page) => format!("?page={page}"),
        (false, 1) => format!("?q={}", encoded(search)),
        (false, page) => format!("?q={}&page={page}", encoded(search)),
    }
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(catalogue, api_page, thumbnail, login, callback, logout))]
pub struct Api;
