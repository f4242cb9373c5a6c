//! Sign-in for browsers and agents: the authorization code flow with PKCE through the real
//! sign-in and consent pages, driven by maintained clients (the `openidconnect` crate, on
//! `oauth2`) over HTTP; discovery, id_tokens, UserInfo, refresh and revocation; and, beside
//! the legitimate flow, what attacks send: open redirects, code reuse and injection, PKCE
//! downgrades, mix-ups, CSRF on the forms, session fixation, framing, tokens in URLs or logs.

use harness::signin::{
    Browser, control_plane_at_its_issuer, every_control_is_named, query_param, register_code_client,
};
use harness::{ADMIN_PASSWORD, Backend, Client};
use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AccessToken, AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse,
};
use serde_json::Value;

/// Where the clients of these scenarios say they are sent back: never reached, the
/// browser stops at the redirect.
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// An HTTP client for the OIDC library: no redirects followed (its documentation's advice).
fn oidc_http() -> openidconnect::reqwest::Client {
    openidconnect::reqwest::ClientBuilder::new()
        .redirect(openidconnect::reqwest::redirect::Policy::none())
        .build()
        .expect("HTTP client")
}

/// Discovers the control plane at `base` as an OpenID Connect client does.
async fn discover(base: &str) -> CoreProviderMetadata {
    let issuer = IssuerUrl::new(base.to_string()).expect("an issuer URL");
    CoreProviderMetadata::discover_async(issuer, &oidc_http())
        .await
        .expect("discovery succeeds")
}

/// What a flow came back with.
struct Authorized {
    code: String,
    verifier: PkceCodeVerifier,
    nonce: Nonce,
}

/// Runs the front half of the flow in `browser` for `client_id`: the authorization URL the
/// library builds (PKCE S256, a nonce, `openid profile` and `scopes`), the sign-in and
/// consent pages; checks `state` and `iss` of the answer.
async fn authorize(
    browser: &Browser,
    metadata: &CoreProviderMetadata,
    client_id: &str,
    username: &str,
    password: &str,
) -> Authorized {
    let client = oidc_client(metadata, client_id, None);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("mgr:api_view".into()))
        .set_pkce_challenge(challenge)
        .url();
    let page = browser.open(url.as_str()).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let back = browser.sign_in_and_allow(page, username, password).await;
    assert!(back.as_str().starts_with(REDIRECT), "{back}");
    assert_eq!(
        query_param(&back, "state").as_deref(),
        Some(state.secret().as_str())
    );
    // RFC 9207: the answer names its issuer, which a client talking to several checks.
    assert_eq!(
        query_param(&back, "iss").as_deref(),
        Some(metadata.issuer().as_str())
    );
    Authorized {
        code: query_param(&back, "code").expect("a code"),
        verifier,
        nonce,
    }
}

/// The client library's client for `client_id` (with its secret, for a confidential one).
fn oidc_client(
    metadata: &CoreProviderMetadata,
    client_id: &str,
    secret: Option<&str>,
) -> CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
> {
    CoreClient::from_provider_metadata(
        metadata.clone(),
        ClientId::new(client_id.to_string()),
        secret.map(|secret| ClientSecret::new(secret.to_string())),
    )
    .set_redirect_uri(RedirectUrl::new(REDIRECT.to_string()).unwrap())
}

/// Exchanges the code `authorized` holds as the client `client_id` (with its secret, for a
/// confidential one), and verifies the id_token with the library's defaults: it is for
/// `username`, from the issuer discovered.
async fn exchange(
    metadata: &CoreProviderMetadata,
    (client_id, secret): (&str, Option<&str>),
    authorized: Authorized,
    username: &str,
) -> openidconnect::core::CoreTokenResponse {
    let client = oidc_client(metadata, client_id, secret);
    let tokens = client
        .exchange_code(AuthorizationCode::new(authorized.code))
        .unwrap()
        .set_pkce_verifier(authorized.verifier)
        .request_async(&oidc_http())
        .await
        .expect("the code is exchanged");
    let claims = tokens
        .id_token()
        .expect("an id_token for openid")
        .claims(&client.id_token_verifier(), &authorized.nonce)
        .expect("the id_token verifies with the library's defaults");
    assert_eq!(claims.subject().as_str(), username);
    assert_eq!(claims.issuer().as_str(), metadata.issuer().as_str());
    tokens
}

pub async fn authorization_code_through_the_pages(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    api.add_user("carol", "carol-pw", &["creator", "subscriber"])
        .await;
    let metadata = discover(&control_plane.url).await;
    check_discovery_documents(&control_plane.url).await;

    // A confidential client: its secret at the token endpoint, PKCE all the same.
    let registered =
        register_code_client(&api, ("admin", ADMIN_PASSWORD), "portal", REDIRECT, false)
            .await
            .expect(200);
    let (client_id, secret) = (registered.str("clientId"), registered.str("clientSecret"));
    let browser = Browser::new(&control_plane.url);
    let authorized = authorize(&browser, &metadata, &client_id, "carol", "carol-pw").await;
    let tokens = exchange(&metadata, (&client_id, Some(&secret)), authorized, "carol").await;
    let client = oidc_client(&metadata, &client_id, Some(&secret));
    let http = oidc_http();
    // The access token serves the management API with the scopes carol's roles allow.
    let access = tokens.access_token().secret().clone();
    api.get(&format!("{}/apis", harness::PUBLISHER), &access)
        .await
        .expect(200);
    let scopes: Vec<String> = tokens
        .scopes()
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(
        scopes.contains(&"mgr:api_view".to_string()) && scopes.contains(&"openid".to_string()),
        "{scopes:?}"
    );
    let user: openidconnect::core::CoreUserInfoClaims = client
        .user_info(AccessToken::new(access.clone()), None)
        .unwrap()
        .request_async(&http)
        .await
        .expect("UserInfo answers");
    assert_eq!(user.subject().as_str(), "carol");

    // Refresh, then revoke: the family's tokens stop working.
    let refreshed = client
        .exchange_refresh_token(tokens.refresh_token().expect("a refresh token"))
        .unwrap()
        .request_async(&http)
        .await
        .expect("the refresh token is exchanged");
    let fresh = refreshed.access_token().secret().clone();
    api.get(&format!("{}/apis", harness::PUBLISHER), &fresh)
        .await
        .expect(200);
    // RFC 7009 revocation (the library sends it over HTTPS only; these listeners are plain).
    let revoked = reqwest::Client::new()
        .post(format!("{}/oauth2/revoke", control_plane.url))
        .basic_auth(&client_id, Some(&secret))
        .form(&[(
            "token",
            refreshed.refresh_token().unwrap().secret().as_str(),
        )])
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status().as_u16(), 200);
    api.get(&format!("{}/apis", harness::PUBLISHER), &fresh)
        .await
        .expect(401);

    // A public client: no secret anywhere, PKCE required; the browser is still signed in,
    // so only the consent page for this new client shows.
    let public = register_code_client(&api, ("admin", ADMIN_PASSWORD), "spa", REDIRECT, true)
        .await
        .expect(200);
    assert!(public.body.get("clientSecret").is_none(), "{}", public.body);
    let public_id = public.str("clientId");
    let authorized = authorize(&browser, &metadata, &public_id, "carol", "carol-pw").await;
    exchange(&metadata, (&public_id, None), authorized, "carol").await;
    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The two discovery documents carry every member their specifications require, and name
/// the endpoints that are served.
async fn check_discovery_documents(base: &str) {
    let http = reqwest::Client::new();
    for path in [
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server",
    ] {
        let document: Value = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(document["issuer"], base, "{path}");
        // RFC 8414 §2 and OpenID Connect Discovery §3's required members.
        for member in [
            "issuer",
            "authorization_endpoint",
            "token_endpoint",
            "jwks_uri",
            "response_types_supported",
            "subject_types_supported",
            "id_token_signing_alg_values_supported",
        ] {
            assert!(!document[member].is_null(), "{path} lacks {member}");
        }
        assert_eq!(
            document["code_challenge_methods_supported"],
            serde_json::json!(["S256"])
        );
        assert_eq!(
            document["authorization_response_iss_parameter_supported"],
            true
        );
        for endpoint in [
            "authorization_endpoint",
            "token_endpoint",
            "jwks_uri",
            "userinfo_endpoint",
            "end_session_endpoint",
        ] {
            let url = document[endpoint].as_str().unwrap();
            assert!(url.starts_with(base), "{endpoint}: {url}");
            let status = http.get(url).send().await.unwrap().status().as_u16();
            assert_ne!(status, 404, "{endpoint} {url} is served");
        }
    }
}

/// An authorization request's URL on the control plane, with `params` after the client's.
fn authorize_path(client_id: &str, params: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("client_id", client_id);
    query.append_pair("response_type", "code");
    query.append_pair("redirect_uri", REDIRECT);
    query.append_pair("scope", "openid");
    query.append_pair("state", "s-1");
    query.extend_pairs(params);
    format!("/oauth2/authorize?{}", query.finish())
}

/// A token request for a code, as the client `(id, secret)` makes it.
async fn redeem(
    base: &str,
    (id, secret): (&str, &str),
    code: &str,
    verifier: Option<&str>,
) -> Value {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
    ];
    if let Some(verifier) = verifier {
        form.push(("code_verifier", verifier));
    }
    let response = reqwest::Client::new()
        .post(format!("{base}/oauth2/token"))
        .basic_auth(id, Some(secret))
        .form(&form)
        .send()
        .await
        .expect("the token endpoint answers");
    let status = response.status().as_u16();
    let mut body: Value = response.json().await.expect("a JSON answer");
    body["status"] = status.into();
    body
}

/// What UserInfo answers a bearer of `token`.
async fn userinfo_status(base: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{base}/oauth2/userinfo"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The code a signed-in `browser` gets for `path` (consenting when asked).
async fn code_for(browser: &Browser, path: &str) -> String {
    let mut seen = browser.follow(browser.open(path).await).await;
    if let Some(consent) = seen.form("/oauth2/consent") {
        seen = browser.submit(&consent.with("decision", "allow")).await;
    }
    let back = seen
        .location()
        .unwrap_or_else(|| panic!("a redirect: {} {}", seen.status, seen.body));
    query_param(&back, "code").unwrap_or_else(|| panic!("a code: {back}"))
}

pub async fn attacks_on_the_flow_are_refused(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let base = control_plane.url.clone();
    let api = Client::new(&base);
    api.add_user("dave", "dave-pw", &["subscriber"]).await;
    let admin = ("admin", ADMIN_PASSWORD);
    let a = register_code_client(&api, admin, "client-a", REDIRECT, false)
        .await
        .expect(200);
    let b = register_code_client(&api, admin, "client-b", REDIRECT, false)
        .await
        .expect(200);
    let (a_id, a_secret) = (a.str("clientId"), a.str("clientSecret"));
    let (b_id, b_secret) = (b.str("clientId"), b.str("clientSecret"));
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let pkce = [
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];

    // Open redirects: an unregistered redirect URI, or one that only starts like a
    // registered one, gets a page and is never redirected to.
    let browser = Browser::new(&base);
    for evil in [
        "https://evil.example/callback",
        "http://127.0.0.1:9/callback/../x",
        "http://127.0.0.1:9/callbackx",
    ] {
        let path = authorize_path(&a_id, &[]).replace(
            &url::form_urlencoded::Serializer::new(String::new())
                .append_pair("redirect_uri", REDIRECT)
                .finish(),
            &url::form_urlencoded::Serializer::new(String::new())
                .append_pair("redirect_uri", evil)
                .finish(),
        );
        let seen = browser.open(&path).await;
        assert_eq!(seen.status, 400, "{evil}: {}", seen.body);
        assert!(seen.location().is_none(), "{evil} is never redirected to");
    }
    let unknown = browser.open(&authorize_path("no-such-client", &pkce)).await;
    assert_eq!(unknown.status, 400);

    // The sign-in page: not framed, nothing from elsewhere, every control named.
    let login = browser.open(&authorize_path(&a_id, &pkce)).await;
    assert_eq!(login.status, 200, "{}", login.body);
    let policy = login.header("content-security-policy");
    assert!(
        policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    assert_eq!(login.header("x-frame-options"), "DENY");
    assert_eq!(login.header("referrer-policy"), "same-origin");
    assert_eq!(login.header("cache-control"), "no-store");
    every_control_is_named(&login.body).unwrap();
    let form = login
        .form("/oauth2/authorize")
        .unwrap()
        .with("username", "dave")
        .with("password", "dave-pw");

    // CSRF: the form without its token, or sent from another site, signs no one in.
    let forged = browser.submit(&form.clone().without("csrf_token")).await;
    assert_eq!(forged.status, 403);
    assert!(!forged.header("set-cookie").contains("apim_session"));
    let cross_site = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let csrf_cookie = login
        .header("set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let from_elsewhere = cross_site
        .post(format!("{base}/oauth2/authorize"))
        .header("cookie", &csrf_cookie)
        .header("origin", "https://evil.example")
        .form(&form.fields)
        .send()
        .await
        .unwrap();
    assert_eq!(from_elsewhere.status().as_u16(), 403);

    // Session fixation: a session cookie planted before the sign-in is replaced by it.
    let planted = "apim_session=planted-by-an-attacker-0123456789abcdefghijklmnopq";
    let signed_in = cross_site
        .post(format!("{base}/oauth2/authorize"))
        .header("cookie", format!("{csrf_cookie}; {planted}"))
        .form(&form.fields)
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 303);
    let session = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("apim_session="))
        .expect("a new session cookie");
    assert!(!session.contains("planted"), "{session}");
    assert!(
        session.contains("HttpOnly") && session.contains("SameSite=Lax"),
        "{session}"
    );
    let with_planted = cross_site
        .get(format!("{base}{}", authorize_path(&a_id, &pkce)))
        .header("cookie", planted)
        .send()
        .await
        .unwrap();
    assert_eq!(
        with_planted.status().as_u16(),
        200,
        "the planted session signs no one in"
    );

    // The legitimate sign-in, then consent CSRF and denial.
    let seen = browser.follow(browser.submit(&form).await).await;
    let consent = seen.form("/oauth2/consent").expect("the consent page");
    every_control_is_named(&seen.body).unwrap();
    let forged = browser.submit(&consent.clone().without("csrf_token")).await;
    assert!(forged.status >= 400 && forged.location().is_none());
    let denied = browser
        .submit(&consent.clone().with("decision", "deny"))
        .await
        .location()
        .unwrap();
    assert_eq!(
        query_param(&denied, "error").as_deref(),
        Some("access_denied")
    );
    assert_eq!(query_param(&denied, "state").as_deref(), Some("s-1"));
    assert_eq!(query_param(&denied, "iss").as_deref(), Some(base.as_str()));

    // Code reuse: the second redemption fails and revokes what the first issued.
    let code = code_for(&browser, &authorize_path(&a_id, &pkce)).await;
    let first = redeem(&base, (&a_id, &a_secret), &code, Some(verifier.secret())).await;
    assert_eq!(first["status"], 200, "{first}");
    let access = first["access_token"].as_str().unwrap().to_string();
    assert_eq!(userinfo_status(&base, &access).await, 200);
    let second = redeem(&base, (&a_id, &a_secret), &code, Some(verifier.secret())).await;
    assert_eq!(second["error"], "invalid_grant", "{second}");
    assert_eq!(
        userinfo_status(&base, &access).await,
        401,
        "the first redemption's token is revoked"
    );

    // Code injection: a code of client A redeemed by client B is refused (and spent).
    let code = code_for(&browser, &authorize_path(&a_id, &pkce)).await;
    let injected = redeem(&base, (&b_id, &b_secret), &code, Some(verifier.secret())).await;
    assert_eq!(injected["error"], "invalid_grant", "{injected}");
    let after = redeem(&base, (&a_id, &a_secret), &code, Some(verifier.secret())).await;
    assert_eq!(after["error"], "invalid_grant", "{after}");

    // PKCE: a wrong verifier, a verifier for a code asked without a challenge (a
    // downgrade), `plain`, and a public client without a challenge are refused.
    let code = code_for(&browser, &authorize_path(&a_id, &pkce)).await;
    let wrong = redeem(&base, (&a_id, &a_secret), &code, Some(&"w".repeat(43))).await;
    assert_eq!(wrong["error"], "invalid_grant", "{wrong}");
    let code = code_for(&browser, &authorize_path(&a_id, &[])).await;
    let downgrade = redeem(&base, (&a_id, &a_secret), &code, Some(verifier.secret())).await;
    assert_eq!(downgrade["error"], "invalid_grant", "{downgrade}");
    let plain = [
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "plain"),
    ];
    let refused = browser
        .open(&authorize_path(&a_id, &plain))
        .await
        .location()
        .unwrap();
    assert_eq!(
        query_param(&refused, "error").as_deref(),
        Some("invalid_request")
    );
    assert_eq!(query_param(&refused, "iss").as_deref(), Some(base.as_str()));
    let public = register_code_client(&api, admin, "spa", REDIRECT, true)
        .await
        .expect(200);
    let refused = browser
        .open(&authorize_path(&public.str("clientId"), &[]))
        .await
        .location()
        .unwrap();
    assert_eq!(
        query_param(&refused, "error").as_deref(),
        Some("invalid_request")
    );
    // A public client's id cannot pass for a confidential client's, nor a confidential
    // client authenticate without its secret.
    let anonymous = reqwest::Client::new()
        .post(format!("{base}/oauth2/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", a_id.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);

    // prompt=none without a session answers login_required, never a page.
    let fresh = Browser::new(&base);
    let none = fresh
        .open(&authorize_path(
            &a_id,
            &[pkce[0], pkce[1], ("prompt", "none")],
        ))
        .await;
    let none = none.location().expect("a redirect");
    assert_eq!(
        query_param(&none, "error").as_deref(),
        Some("login_required")
    );

    // Tokens travel in no URL and reach no log; a token in a query is not taken.
    let in_query = reqwest::Client::new()
        .get(format!("{base}/oauth2/userinfo?access_token={access}"))
        .send()
        .await
        .unwrap();
    assert_eq!(in_query.status().as_u16(), 401);
    let output = control_plane.output();
    for secret in ["dave-pw", access.as_str(), code.as_str(), a_secret.as_str()] {
        assert!(
            !output.contains(secret),
            "the control plane's output holds a secret"
        );
    }
    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

pub async fn tokens_of_the_former_issuer_still_verify(backend: Backend) {
    let data_dir = harness::temp_dir();
    let port = harness::free_port();
    let addr = format!("127.0.0.1:{port}");
    let former = format!("http://{addr}/oauth2/token");
    let settings = [
        ("APIM_MGMT_ADDR", addr.clone()),
        ("APIM_TOKEN_ISSUER", former.clone()),
    ];
    let control_plane = harness::start_control_plane(&backend, &data_dir, &settings).await;
    let api = Client::new(&control_plane.url);
    let token = api
        .login("admin", ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    assert_eq!(harness::jwt_claims(&token)["iss"], former.as_str());
    control_plane.stop().await;

    // The default issuer now: the listener's root, where discovery is.
    let control_plane =
        harness::start_control_plane(&backend, &data_dir, &[("APIM_MGMT_ADDR", addr.clone())])
            .await;
    let api = Client::new(&control_plane.url);
    api.get(&format!("{}/apis", harness::PUBLISHER), &token)
        .await
        .expect(200);
    let fresh = api
        .login("admin", ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    assert_eq!(harness::jwt_claims(&fresh)["iss"], format!("http://{addr}"));
    discover(&control_plane.url).await;
    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

pub async fn sign_in_pages_in_chromium(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let base = control_plane.url.clone();
    let api = Client::new(&base);
    api.add_user("erin", "erin-pw", &["subscriber"]).await;
    let client = register_code_client(&api, ("admin", ADMIN_PASSWORD), "portal", REDIRECT, true)
        .await
        .expect(200);
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let pkce = [
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let chromium = harness::browser::Chromium::start().await;

    // The sign-in page, a failed sign-in (its error announced), then a sign-in made with
    // the keyboard alone.
    chromium
        .open(&format!(
            "{base}{}",
            authorize_path(&client.str("clientId"), &pkce)
        ))
        .await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.fill("username", "erin").await;
    chromium.fill("password", "wrong").await;
    chromium.click_button("Sign in").await;
    // The answer replaces the page a moment after the click.
    chromium.wait_for_text("role=\"alert\"").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.fill("password", "erin-pw\u{E007}").await;

    // The consent page; Allow sends the browser to the client (the page's form-action
    // lets the redirect through).
    chromium.wait_for_text("Allow access?").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.click_button("Allow").await;
    chromium.wait_for_url(REDIRECT).await;
    let back = url::Url::parse(&chromium.current_url().await).unwrap();
    assert!(query_param(&back, "code").is_some(), "{back}");

    // The error page and the sign-out page.
    chromium
        .open(&format!("{base}{}", authorize_path("no-such-client", &[])))
        .await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.open(&format!("{base}/oauth2/logout")).await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.click_button("Sign out").await;
    chromium.wait_for_text("You are signed out").await;
    chromium.close().await;
    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

pub async fn a_resource_binds_the_token_to_its_api(backend: Backend) {
    let stack = harness::stack::Launch {
        database: backend,
        ..Default::default()
    }
    .start()
    .await;
    let pizza = stack
        .api("Pizza", serde_json::json!({}), &["Publish"])
        .await;
    let pasta = stack
        .api("Pasta", serde_json::json!({}), &["Publish"])
        .await;
    // An application whose key takes the authorization code flow, both token types.
    for token_type in [
        harness::steps::TokenType::Jwt,
        harness::steps::TokenType::Opaque,
    ] {
        let steps = stack.steps();
        let name = format!("Web-{}", token_type.wso2_name());
        let app = steps
            .create_typed_application(&name, "Unlimited", token_type)
            .await
            .unwrap();
        for api in [&pizza, &pasta] {
            steps.subscribe(&app, api, "Unlimited").await.unwrap();
        }
        let mut request = harness::steps::keys_request();
        request["supportedGrantTypes"] = serde_json::json!(["authorization_code", "refresh_token"]);
        request["callbackUrl"] = REDIRECT.into();
        let keys = steps.generate_keys(&app, &request).await.unwrap();
        let browser = Browser::new(&stack.mgmt.base);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let pizza_resource = format!("{}/pizza/v1.0.0", stack.gw.base);
        let params = [
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", pizza_resource.as_str()),
        ];
        let page = browser.open(&authorize_path(&keys.key, &params)).await;
        let back = browser
            .sign_in_and_allow(page, "admin", ADMIN_PASSWORD)
            .await;
        let code = query_param(&back, "code").expect("a code");
        let tokens = redeem(
            &stack.mgmt.base,
            (&keys.key, &keys.secret),
            &code,
            Some(verifier.secret()),
        )
        .await;
        assert_eq!(tokens["status"], 200, "{tokens}");
        let bound = tokens["access_token"].as_str().unwrap().to_string();
        if token_type == harness::steps::TokenType::Jwt {
            assert_eq!(
                harness::jwt_claims(&bound)["aud"],
                serde_json::json!([pizza_resource])
            );
        }
        let get = reqwest::Method::GET;
        harness::eventually(
            &stack.gw,
            get.clone(),
            "/pizza/v1.0.0/devs/alice",
            &bound,
            |r| r.status == 200,
        )
        .await;
        let elsewhere = stack.gw.get("/pasta/v1.0.0/devs/alice", &bound).await;
        assert_eq!(
            (elsewhere.status, elsewhere.fault_code()),
            (401, "900901"),
            "{name}"
        );
        // A token asked without a resource is for every API, as before.
        let code = code_for(&browser, &authorize_path(&keys.key, &params[..2])).await;
        let unbound = redeem(
            &stack.mgmt.base,
            (&keys.key, &keys.secret),
            &code,
            Some(verifier.secret()),
        )
        .await;
        let unbound = unbound["access_token"].as_str().unwrap().to_string();
        harness::eventually(&stack.gw, get, "/pasta/v1.0.0/devs/alice", &unbound, |r| {
            r.status == 200
        })
        .await;
    }
}

/// A client metadata document served over HTTPS by the tests' own authority: the client
/// whose id is its URL, with `redirect_uris`.
async fn serve_client_document(
    authority: &harness::tls::Authority,
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://{}/agent/client.json",
        listener.local_addr().unwrap()
    );
    let document = serde_json::json!({
        "client_id": url,
        "client_name": "Test agent",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    });
    let app = axum::Router::new().route(
        "/agent/client.json",
        axum::routing::get(move || {
            let document = document.clone();
            async move { axum::Json(document) }
        }),
    );
    let task = tokio::spawn(harness::tls::serve(
        listener,
        authority.server_config(),
        app,
    ));
    (url, task)
}

pub async fn clients_named_by_their_metadata_documents(backend: Backend) {
    let data_dir = harness::temp_dir();
    let authority = harness::tls::Authority::new("client documents");
    let ca = authority.write_ca(&data_dir);
    let settings = [("APIM_OUTBOUND_CA_FILE", ca.display().to_string())];
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &settings).await;
    let base = control_plane.url.clone();
    let (client_id, _server) = serve_client_document(&authority).await;
    let metadata = discover(&base).await;
    let document: Value = reqwest::get(format!("{base}/.well-known/oauth-authorization-server"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["client_id_metadata_document_supported"], true);

    // The agent names itself by its document's URL; the consent page names its host.
    let browser = Browser::new(&base);
    let authorized = authorize(&browser, &metadata, &client_id, "admin", ADMIN_PASSWORD).await;
    exchange(&metadata, (&client_id, None), authorized, "admin").await;

    // A document URL that does not answer, a redirect URI it does not list, and an http
    // URL are refused with a page, never redirected.
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let pkce = [
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let missing = client_id.replace("client.json", "missing.json");
    let plain = client_id.replace("https://", "http://");
    for refused in [missing.as_str(), plain.as_str()] {
        let seen = browser.open(&authorize_path(refused, &pkce)).await;
        assert_eq!(seen.status, 400, "{refused}: {}", seen.body);
    }
    let elsewhere = authorize_path(&client_id, &pkce).replace(
        &url::form_urlencoded::Serializer::new(String::new())
            .append_pair("redirect_uri", REDIRECT)
            .finish(),
        "redirect_uri=https%3A%2F%2Fevil.example%2Fcb",
    );
    assert_eq!(browser.open(&elsewhere).await.status, 400);
    // Without the authority trusted, or where the egress policy refuses the address, the
    // document is not fetched.
    control_plane.stop().await;
    let untrusting = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let seen = Browser::new(&untrusting.url)
        .open(&authorize_path(&client_id, &pkce))
        .await;
    assert_eq!(seen.status, 400);
    untrusting.stop().await;
    let no_egress = [settings[0].clone(), ("APIM_EGRESS_ALLOW", String::new())];
    let closed = control_plane_at_its_issuer(&backend, &data_dir, &no_egress).await;
    let seen = Browser::new(&closed.url)
        .open(&authorize_path(&client_id, &pkce))
        .await;
    assert_eq!(seen.status, 400);
    closed.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}
