//! `/oauth2/authorize` (RFC 6749 §4.1.1): the sign-in page (GET shows it, POST signs in)
//! and the consent page (`/oauth2/consent`), then the code sent to the client's redirect
//! URI with `state` and `iss` (RFC 9207). A request whose client or redirect URI does not
//! check out is answered with a page and never redirected (RFC 6749 §4.1.2.1).

use std::net::IpAddr;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::queries;
use super::records::{Admitted, AuthorizationRequest, IssuedCode};
use super::rules::{self, Refusal};
use crate::clients::ClientCache;
use crate::error::Result;
use crate::http::auth::ClientAddress;
use crate::http::routes::{Routes, get, post};
use crate::http::urls;
use crate::sessions::{self, Session};
use crate::state::AppState;
use crate::users::{LoginError, VerifiedLogins};
use crate::web::{MessagePage, Page, csrf, field, form_pairs, redirect, with_cookie};

pub fn router() -> Routes {
    Routes::new()
        .route("/oauth2/authorize", get(authorize).post(sign_in))
        .route("/oauth2/consent", post(consent))
}

/// The sign-in page.
#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    title: &'a str,
    client_name: &'a str,
    error: Option<String>,
    username: &'a str,
    hidden: Vec<(&'static str, String)>,
    csrf_token: String,
}

/// The consent page.
#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage<'a> {
    title: &'a str,
    client_name: &'a str,
    username: &'a str,
    scopes: Vec<&'a str>,
    resources: &'a [String],
    redirect_host: String,
    hidden: Vec<(&'static str, String)>,
    csrf_token: String,
}

/// An error page for a request that cannot be sent back to its client.
fn error_page(message: &str) -> Response {
    let page = MessagePage::saying("Sign-in request refused", message, true);
    Page::render(StatusCode::BAD_REQUEST, &page).into_response()
}

/// Starts the authorization code flow: signs the user in (unless the browser is signed in
/// already), asks for consent (unless given before), then sends the code.
#[utoipa::path(
    get,
    path = "/oauth2/authorize",
    tag = "OAuth 2.0",
    summary = "The authorization endpoint (RFC 6749 §4.1, PKCE S256, OpenID Connect, RFC 8707 resources)",
    params(
        ("client_id" = String, Query, description = "The client"),
        ("response_type" = String, Query, description = "`code`"),
        ("redirect_uri" = Option<String>, Query, description = "One of the client's redirect URIs, exactly"),
        ("scope" = Option<String>, Query, description = "Scopes, space separated; `openid` for an id_token"),
        ("state" = Option<String>, Query, description = "Returned as given"),
        ("code_challenge" = Option<String>, Query, description = "PKCE (required of public clients)"),
        ("code_challenge_method" = Option<String>, Query, description = "`S256`"),
        ("nonce" = Option<String>, Query, description = "Put into the id_token"),
        ("resource" = Option<String>, Query, description = "RFC 8707: the API the token is for"),
        ("prompt" = Option<String>, Query, description = "`none`, `login` or `consent`"),
    ),
    responses(
        (status = 200, description = "The sign-in or consent page", content_type = "text/html", body = String),
        (status = 302, description = "The code, or an OAuth error, sent to the redirect URI"),
        (status = "default", description = "A request that names no known client or redirect URI, as a page", content_type = "text/html", body = String)
    )
)]
async fn authorize(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let pairs = form_pairs(query.as_deref().unwrap_or_default().as_bytes());
    let admitted = match admit(&state, &pairs).await? {
        Ok(admitted) => admitted,
        Err(answer) => return Ok(answer),
    };
    let session = if rules::prompts(&admitted.request, "login") {
        None
    } else {
        sessions::find(&state.db, &headers).await?
    };
    match session {
        None if rules::prompts(&admitted.request, "none") => Ok(refuse(
            &state,
            &admitted,
            "login_required",
            "The user is not signed in",
            StatusCode::FOUND,
        )),
        None => Ok(login_page(
            &state,
            &headers,
            &admitted,
            None,
            "",
            StatusCode::OK,
        )),
        Some(session) => signed_in(&state, &headers, &admitted, &session, StatusCode::FOUND).await,
    }
}

/// Signs the user in from the sign-in page's form, then goes on with the request.
#[utoipa::path(
    post,
    path = "/oauth2/authorize",
    tag = "OAuth 2.0",
    summary = "The sign-in page's form",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "The authorization request's parameters, `username`, `password` and `csrf_token`"),
    responses(
        (status = 303, description = "Signed in: on to the consent page or the client"),
        (status = "default", description = "The sign-in page again, saying why, or a page refusing the request", content_type = "text/html", body = String)
    )
)]
async fn sign_in(
    State(state): State<AppState>,
    ClientAddress(from): ClientAddress,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let pairs = form_pairs(&body);
    let admitted = match admit(&state, &pairs).await? {
        Ok(admitted) => admitted,
        Err(answer) => return Ok(answer),
    };
    let username = field(&pairs, "username").unwrap_or_default();
    if !csrf::check(&headers, &state.gateway_secret, field(&pairs, csrf::FIELD)) {
        let why = "This sign-in form has expired. Please sign in again.";
        return Ok(login_page(
            &state,
            &headers,
            &admitted,
            Some(why.into()),
            username,
            StatusCode::FORBIDDEN,
        ));
    }
    let password = field(&pairs, "password").unwrap_or_default();
    match authenticate(&state, username, password, from).await? {
        Ok(()) => {}
        Err((status, why)) => {
            return Ok(login_page(
                &state,
                &headers,
                &admitted,
                Some(why),
                username,
                status,
            ));
        }
    }
    let started = sessions::start(&state.db, &headers, username).await?;
    let back = back_to_authorize(&admitted.request);
    let mut response = see_other(&back);
    let cookie = crate::web::cookies::set(
        sessions::COOKIE,
        &started.cookie,
        crate::web::cookies::Attributes {
            strict: false,
            secure: crate::web::secure_cookies(&state),
            max_age: Some(sessions::SESSION_SECS),
        },
    );
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Checks a password through the lock-out; why not, as the page says it.
async fn authenticate(
    state: &AppState,
    username: &str,
    password: &str,
    from: IpAddr,
) -> Result<std::result::Result<(), (StatusCode, String)>> {
    if username.is_empty() || password.is_empty() {
        return Ok(Err((
            StatusCode::UNAUTHORIZED,
            "Enter your user name and password.".into(),
        )));
    }
    let logins = state.shared::<VerifiedLogins>();
    match logins
        .authenticate(&state.db, username, password, from)
        .await
    {
        Ok(Some(_)) => Ok(Ok(())),
        Ok(None) => Ok(Err((
            StatusCode::UNAUTHORIZED,
            "The user name or password is not right, or the account is locked.".into(),
        ))),
        Err(LoginError::Throttled { retry_after }) => Ok(Err((
            StatusCode::TOO_MANY_REQUESTS,
            format!("Too many failed sign-ins. Try again in {retry_after} seconds."),
        ))),
        Err(LoginError::Busy) => Ok(Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign-in is busy. Try again in a moment.".into(),
        ))),
        Err(LoginError::Internal(err)) => Err(err.into()),
    }
}

/// The consent page's form: allowed, the code goes to the client; denied, `access_denied`.
#[utoipa::path(
    post,
    path = "/oauth2/consent",
    tag = "OAuth 2.0",
    summary = "The consent page's form",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "The authorization request's parameters, `decision` (`allow` or `deny`) and `csrf_token`"),
    responses(
        (status = 303, description = "The code, or `access_denied`, sent to the redirect URI; or back to sign in"),
        (status = "default", description = "A page refusing the form", content_type = "text/html", body = String)
    )
)]
async fn consent(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let pairs = form_pairs(&body);
    let admitted = match admit(&state, &pairs).await? {
        Ok(admitted) => admitted,
        Err(answer) => return Ok(answer),
    };
    let Some(session) = sessions::find(&state.db, &headers).await? else {
        let back = back_to_authorize(&admitted.request);
        return Ok(see_other(&back));
    };
    if !csrf::check(&headers, &state.gateway_secret, field(&pairs, csrf::FIELD)) {
        return Ok(error_page(
            "This consent form has expired. Go back to the application and try again.",
        ));
    }
    if field(&pairs, "decision") != Some("allow") {
        return Ok(refuse(
            &state,
            &admitted,
            "access_denied",
            "The user denied the request",
            StatusCode::SEE_OTHER,
        ));
    }
    let client_id = &admitted.request.client_id;
    let mut given: Vec<String> = queries::consented(&state.db, &session.username, client_id)
        .await?
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for scope in scopes_asked(&admitted.request.scope) {
        if !given.iter().any(|g| g == scope) {
            given.push(scope.to_string());
        }
    }
    queries::consent(&state.db, &session.username, client_id, &given.join(" ")).await?;
    issue_code(&state, &admitted, &session, StatusCode::SEE_OTHER).await
}

/// The request's client and redirect URI, checked: `Err` holds the answer when they do
/// not check out (a page) or when the request breaks a rule (sent back to the client).
async fn admit(
    state: &AppState,
    pairs: &[(String, String)],
) -> Result<std::result::Result<Admitted, Response>> {
    let request = match rules::parse(pairs) {
        Ok(request) => request,
        Err(refusal) => return Ok(Err(error_page(&refusal.description))),
    };
    if request.client_id.is_empty() {
        return Ok(Err(error_page("The request names no client (client_id).")));
    }
    let Some(principal) = state
        .shared::<ClientCache>()
        .get(&state.db, &request.client_id)
        .await?
    else {
        return Ok(Err(error_page(
            "The request names a client that is not registered.",
        )));
    };
    let client = &principal.client;
    let registered: Vec<&str> = client.redirect_uris().collect();
    let redirect_uri = match &request.redirect_uri {
        Some(uri) if registered.contains(&uri.as_str()) => uri.clone(),
        Some(_) => {
            return Ok(Err(error_page(
                "The redirect URI is not one the client registered; the request is not sent back.",
            )));
        }
        None if registered.len() == 1 => registered[0].to_string(),
        None => {
            return Ok(Err(error_page(
                "The request must name one of the client's redirect URIs.",
            )));
        }
    };
    if !urls::is_redirect_uri(&redirect_uri) {
        return Ok(Err(error_page(
            "The client's redirect URI is not an absolute URI.",
        )));
    }
    let admitted = Admitted {
        request,
        redirect_uri,
        client_name: client.client_name.clone(),
    };
    if !client.allows_grant("authorization_code") {
        let why = "The client may not use the authorization code grant";
        return Ok(Err(refuse(
            state,
            &admitted,
            "unauthorized_client",
            why,
            StatusCode::FOUND,
        )));
    }
    if let Err(Refusal { error, description }) = rules::check(&admitted.request, client.is_public())
    {
        return Ok(Err(refuse(
            state,
            &admitted,
            error,
            &description,
            StatusCode::FOUND,
        )));
    }
    Ok(Ok(admitted))
}

/// Goes on with a request once its user is signed in: the consent page, unless the user
/// consented to these scopes before; then the code.
async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
    admitted: &Admitted,
    session: &Session,
    redirect_status: StatusCode,
) -> Result<Response> {
    let asked = scopes_asked(&admitted.request.scope);
    let given =
        queries::consented(&state.db, &session.username, &admitted.request.client_id).await?;
    let covered = given.is_some_and(|given| {
        asked
            .iter()
            .all(|scope| given.split_whitespace().any(|g| g == *scope))
    });
    if covered && !rules::prompts(&admitted.request, "consent") {
        return issue_code(state, admitted, session, redirect_status).await;
    }
    if rules::prompts(&admitted.request, "none") {
        let why = "The user has not consented to these scopes";
        return Ok(refuse(
            state,
            admitted,
            "consent_required",
            why,
            redirect_status,
        ));
    }
    let prepared = csrf::prepare(
        headers,
        &state.gateway_secret,
        crate::web::secure_cookies(state),
    );
    let page = ConsentPage {
        title: "Allow access?",
        client_name: &admitted.client_name,
        username: &session.username,
        scopes: asked,
        resources: &admitted.request.resources,
        redirect_host: urls::origin(&admitted.redirect_uri)
            .unwrap_or_else(|| admitted.redirect_uri.clone()),
        hidden: rules::as_pairs(&admitted.request, false),
        csrf_token: prepared.token,
    };
    let page =
        Page::render(StatusCode::OK, &page).with_form_target(urls::origin(&admitted.redirect_uri));
    Ok(with_cookie(page.into_response(), prepared.set_cookie))
}

/// The scopes a request asks for, `default` when it names none.
fn scopes_asked(scope: &str) -> Vec<&str> {
    let mut asked: Vec<&str> = Vec::new();
    for scope in scope.split_whitespace() {
        if !asked.contains(&scope) {
            asked.push(scope);
        }
    }
    if asked.is_empty() {
        asked.push(crate::scopes::DEFAULT_SCOPE);
    }
    asked
}

/// Issues a code for the signed-in user and sends it to the client.
async fn issue_code(
    state: &AppState,
    admitted: &Admitted,
    session: &Session,
    redirect_status: StatusCode,
) -> Result<Response> {
    let code = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    let request = &admitted.request;
    let issued = IssuedCode {
        client_id: request.client_id.clone(),
        username: session.username.clone(),
        redirect_uri: admitted.redirect_uri.clone(),
        scope: request.scope.clone(),
        code_challenge: request.code_challenge.clone().unwrap_or_default(),
        resources: request.resources.clone(),
        nonce: request.nonce.clone().unwrap_or_default(),
        auth_time: session.auth_time,
    };
    queries::prune_codes(&state.db).await?;
    queries::insert_code(&state.db, &crate::secrets::stored_digest(&code), &issued).await?;
    let mut params = vec![("code", code.as_str())];
    if let Some(request_state) = &request.state {
        params.push(("state", request_state));
    }
    params.push(("iss", &state.issuer));
    Ok(redirect(
        redirect_status,
        &rules::redirect_to(&admitted.redirect_uri, &params),
    ))
}

/// Sends an OAuth error back to the client (with `state` and `iss`).
fn refuse(
    state: &AppState,
    admitted: &Admitted,
    error: &str,
    description: &str,
    redirect_status: StatusCode,
) -> Response {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(request_state) = &admitted.request.state {
        params.push(("state", request_state));
    }
    params.push(("iss", &state.issuer));
    redirect(
        redirect_status,
        &rules::redirect_to(&admitted.redirect_uri, &params),
    )
}

/// The sign-in page for `admitted`, saying `error` when there is one.
fn login_page(
    state: &AppState,
    headers: &HeaderMap,
    admitted: &Admitted,
    error: Option<String>,
    username: &str,
    status: StatusCode,
) -> Response {
    let prepared = csrf::prepare(
        headers,
        &state.gateway_secret,
        crate::web::secure_cookies(state),
    );
    let page = LoginPage {
        title: "Sign in",
        client_name: &admitted.client_name,
        error,
        username,
        hidden: rules::as_pairs(&admitted.request, false),
        csrf_token: prepared.token,
    };
    let page = Page::render(status, &page).with_form_target(urls::origin(&admitted.redirect_uri));
    with_cookie(page.into_response(), prepared.set_cookie)
}

fn see_other(location: &str) -> Response {
    redirect(StatusCode::SEE_OTHER, location)
}

/// The authorization endpoint again for `request`, once a form has answered its prompt.
fn back_to_authorize(request: &AuthorizationRequest) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(rules::as_pairs(request, false))
        .finish();
    format!("/oauth2/authorize?{query}")
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(authorize, sign_in, consent))]
pub struct Api;
