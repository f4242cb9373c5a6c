//! The developer portal as a browser sees it: the catalogue and API pages for anonymous
//! visitors and signed-in users (each seeing what their token sees, another tenant's APIs
//! never), search and paging, sign-in through the authorization code flow and the
//! sign-in pages, sign-out; the refusals beside (a callback this browser did not start,
//! a forged session, a sign-out without its token); then the same pages in Chromium,
//! checked by axe-core.

use harness::signin::{Browser, Seen, control_plane_at_its_issuer, every_control_is_named};
use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Client, spec_api_record};

use crate::publisher_console::definition_file;
use serde_json::{Value, json};

/// Publishes the spec's API as `name` with `changes`, by `token`; its id.
async fn publish(api: &Client, token: &str, name: &str, changes: Value) -> String {
    let mut record = spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    for (key, value) in changes.as_object().unwrap() {
        record[key] = value.clone();
    }
    Steps::new(api, token).publish_api(&record).await.unwrap()
}

/// Adds three documents to `api`: Markdown (with what would run), a URL, an HTML file;
/// their ids.
async fn add_documents(api: &Client, token: &str, id: &str) -> Vec<String> {
    use reqwest::multipart::{Form, Part};
    let docs = format!("/api/am/publisher/v0.14/apis/{id}/documents");
    let mut ids = Vec::new();
    for (name, source, extra) in [
        ("Getting started", "MARKDOWN", json!({})),
        (
            "Pets site",
            "URL",
            json!({"sourceUrl": "https://example.com/pets"}),
        ),
        ("Page", "FILE", json!({})),
    ] {
        let mut body = json!({"name": name, "type": "HOWTO", "summary": "", "sourceType": source,
            "visibility": "API_LEVEL"});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        ids.push(
            api.post_json(&docs, token, &body)
                .await
                .expect(201)
                .str("documentId"),
        );
    }
    let content = |doc: &str| format!("{docs}/{doc}/content");
    let markdown = "## Calling it\n\nSend a **token**. <script>alert(1)</script>\n\n<img src=x onerror=alert(1)> [x](javascript:alert(1))";
    let form = Form::new().text("inlineContent", markdown);
    api.send(
        api.request(reqwest::Method::POST, &content(&ids[0]), token)
            .multipart(form),
    )
    .await
    .expect(200);
    let file = Part::bytes(b"<html><script>alert(1)</script></html>".to_vec())
        .file_name("page.html")
        .mime_str("text/html")
        .unwrap();
    let form = Form::new().part("file", file);
    api.send(
        api.request(reqwest::Method::POST, &content(&ids[2]), token)
            .multipart(form),
    )
    .await
    .expect(200);
    ids
}

/// A page every portal page must be: HTML under the strict policy, every control named.
pub fn checked_page(seen: &Seen) {
    assert_eq!(seen.status, 200, "{}", seen.body);
    assert!(seen.header("content-type").starts_with("text/html"));
    let policy = seen.header("content-security-policy");
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"));
    every_control_is_named(&seen.body).unwrap();
}

/// Signs `user` in from `page`: the portal's sign-in, the sign-in and consent pages, the
/// callback; the page it comes back to.
async fn sign_in(browser: &Browser, page: &str, user: &str, password: &str) -> Seen {
    sign_in_to("/devportal", browser, page, user, password).await
}

/// Signs `user` in to the web application at `app` from its `page`; the page it comes
/// back to.
pub async fn sign_in_to(
    app: &str,
    browser: &Browser,
    page: &str,
    user: &str,
    password: &str,
) -> Seen {
    let next: String = url::form_urlencoded::byte_serialize(page.as_bytes()).collect();
    let started = browser.open(&format!("{app}/login?next={next}")).await;
    assert_eq!(started.status, 302);
    let authorize = browser.follow(started).await;
    let callback = browser.sign_in_and_allow(authorize, user, password).await;
    assert_eq!(callback.path(), format!("{app}/callback"), "{callback}");
    let back = browser.open(callback.as_str()).await;
    assert_eq!(back.status, 303, "{}", back.body);
    assert!(back.header("set-cookie").contains("HttpOnly"));
    assert_eq!(back.location().unwrap().path(), page);
    // The same callback again is not a sign-in this browser started.
    let replayed = browser.open(callback.as_str()).await;
    assert_eq!(replayed.status, 400);
    browser.open(page).await
}

pub async fn the_portal_shows_each_visitor_what_their_token_sees(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    api.add_user("erin", "erin-pw-1", &["subscriber"]).await;
    api.add_user(
        "alice@acme.com",
        "alice-pw-1",
        &["admin", "creator", "publisher", "subscriber"],
    )
    .await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let alice = api.login("alice@acme.com", "alice-pw-1", ALL_SCOPES).await;
    let business = json!({"businessOwner": "Pet Team", "technicalOwnerEmail": "pets@example.com"});
    let pets = publish(
        &api,
        &admin,
        "Pets",
        json!({"tags": ["animals"],
        "description": "Everything about pets", "businessInformation": business}),
    )
    .await;
    publish(
        &api,
        &admin,
        "Inner",
        json!({"visibility": "RESTRICTED", "visibleRoles": ["admin"]}),
    )
    .await;
    publish(
        &api,
        &alice,
        "AcmeOnly",
        json!({"provider": "alice@acme.com"}),
    )
    .await;

    let browser = Browser::new(&control_plane.url);
    // Anonymous: public APIs of the super tenant only.
    let catalogue = browser.open("/devportal").await;
    checked_page(&catalogue);
    assert!(catalogue.body.contains(&format!("/devportal/apis/{pets}")));
    assert!(catalogue.body.contains("Everything about pets"));
    for hidden in ["Inner", "AcmeOnly"] {
        assert!(!catalogue.body.contains(hidden), "{hidden} is not shown");
    }
    assert!(catalogue.body.contains("Sign in"));

    // Search, with the store's syntax, and a search that finds nothing.
    let found = browser.open("/devportal?q=tag%3Aanimals").await;
    checked_page(&found);
    assert!(found.body.contains("Pets"));
    let none = browser.open("/devportal?q=nothing-like-it").await;
    checked_page(&none);
    assert!(none.body.contains("No API matches"));
    for odd in [
        "/devportal?page=0",
        "/devportal?page=99999999999",
        "/devportal?q=%00%ff&page=x",
    ] {
        assert_eq!(browser.open(odd).await.status, 200, "{odd}");
    }

    // An API's page: overview, business information, operations from its definition.
    let page = browser.open(&format!("/devportal/apis/{pets}")).await;
    checked_page(&page);
    for shown in [
        "Everything about pets",
        "Pet Team",
        "pets@example.com",
        "/devs/{username}",
        "Unlimited",
        // Where the (configured, here the default) gateway serves it.
        "http://127.0.0.1:8280/pets/v1.0.0",
    ] {
        assert!(page.body.contains(shown), "{shown} on the API's page");
    }
    let unknown = browser.open("/devportal/apis/no-such-api").await;
    assert_eq!(unknown.status, 404);

    // Its documents: Markdown rendered with what would run removed, a link, a file.
    let docs = add_documents(&api, &admin, &pets).await;
    let page = browser.open(&format!("/devportal/apis/{pets}")).await;
    assert!(page.body.contains("Getting started"));
    let guide = browser
        .open(&format!("/devportal/apis/{pets}/documents/{}", docs[0]))
        .await;
    checked_page(&guide);
    assert!(guide.body.contains("<h2>Calling it</h2>"), "{}", guide.body);
    assert!(guide.body.contains("<strong>token</strong>"));
    for gone in ["<script", "onerror", "javascript:"] {
        assert!(!guide.body.contains(gone), "{gone} in {}", guide.body);
    }
    let link = browser
        .open(&format!("/devportal/apis/{pets}/documents/{}", docs[1]))
        .await;
    checked_page(&link);
    assert!(link.body.contains("href=\"https://example.com/pets\""));
    let file = browser
        .open(&format!("/devportal/apis/{pets}/documents/{}", docs[2]))
        .await;
    checked_page(&file);
    let download = browser
        .open(&format!(
            "/devportal/apis/{pets}/documents/{}/file",
            docs[2]
        ))
        .await;
    assert_eq!(download.status, 200);
    assert!(
        download
            .header("content-disposition")
            .starts_with("attachment")
    );
    assert_eq!(download.header("content-type"), "application/octet-stream");
    assert_eq!(download.body, "<html><script>alert(1)</script></html>");
    let missing = browser
        .open(&format!("/devportal/apis/{pets}/documents/none"))
        .await;
    assert_eq!(missing.status, 404);

    // Signed in: erin (a subscriber) sees the public API and not the restricted one.
    let here = format!("/devportal/apis/{pets}");
    let signed_in = sign_in(&browser, &here, "erin", "erin-pw-1").await;
    checked_page(&signed_in);
    assert!(
        signed_in
            .body
            .contains("Signed in as <strong>erin</strong>")
    );
    let catalogue = browser.open("/devportal").await;
    assert!(!catalogue.body.contains("Inner"));

    // A callback this browser did not start signs no one in.
    let forged = browser
        .open("/devportal/callback?code=abc&state=xyz&iss=http%3A%2F%2Fevil")
        .await;
    assert_eq!(forged.status, 400);

    // Sign-out needs its form's token; with it, the session ends.
    let logout = catalogue
        .form("/devportal/logout")
        .expect("a sign-out form");
    let refused = browser
        .submit(&logout.clone().with("csrf_token", "forged"))
        .await;
    assert_eq!(refused.status, 403);
    let out = browser.submit(&logout).await;
    assert_eq!(out.status, 303);
    assert!(browser.open("/devportal").await.body.contains("Sign in"));

    // Alice of acme.com sees her tenant's API and not the super tenant's restricted one.
    let alice_browser = Browser::new(&control_plane.url);
    let acme = sign_in(&alice_browser, "/devportal", "alice@acme.com", "alice-pw-1").await;
    checked_page(&acme);
    assert!(acme.body.contains("AcmeOnly"), "{}", acme.body);
    assert!(!acme.body.contains("Inner"));

    // A session cookie made up by hand is no session.
    let forger = reqwest::Client::new();
    let cookie = r#"apim_devportal={"user":"admin","access_token":"x","refresh_token":null,"expires_at":9999999999}"#;
    let made_up = forger
        .get(format!("{}/devportal", control_plane.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!made_up.contains("Signed in as"));
    control_plane.stop().await;
}

pub async fn the_portal_in_chromium(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let base = control_plane.url.clone();
    let api = Client::new(&base);
    api.add_user("erin", "erin-pw-1", &["subscriber"]).await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let pets = publish(&api, &admin, "Pets", json!({"tags": ["animals"]})).await;
    // Served as MCP too, so that its page shows the MCP server's section.
    let switch = format!("/api/am/publisher/v0.14/apis/{pets}/mcp");
    api.put_json(&switch, &admin, &json!({"enabled": true}))
        .await
        .expect(200);
    let chromium = harness::browser::Chromium::start().await;
    let no_violations = Vec::<String>::new();

    chromium.open(&format!("{base}/devportal")).await;
    chromium.wait_for_text("Pets").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        no_violations
    );
    chromium.fill("q", "tag:animals\u{E007}").await;
    chromium.wait_for_url(&format!("{base}/devportal?q=")).await;
    chromium.wait_for_text("1 API").await;

    chromium
        .open(&format!("{base}/devportal/apis/{pets}"))
        .await;
    chromium.wait_for_text("MCP server").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        no_violations
    );
    chromium
        .open(&format!("{base}/devportal/login?next=%2Fdevportal"))
        .await;
    chromium.fill("username", "erin").await;
    chromium.fill("password", "erin-pw-1\u{E007}").await;
    chromium.wait_for_text("Allow access?").await;
    chromium.click_button("Allow").await;
    chromium.wait_for_text("Signed in as").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        no_violations
    );
    // The pages that refuse: an API no one may see, a page of the console a subscriber
    // may not open, a sign-in that was not started here.
    for (page, text) in [
        ("/devportal/apis/no-such-api", "API not found"),
        ("/publisher/apis/new", "You may not create APIs"),
        ("/devportal/callback?state=x&code=y", "Sign-in failed"),
    ] {
        chromium.open(&format!("{base}{page}")).await;
        if page.starts_with("/publisher") && chromium.source().await.contains("Allow access?") {
            chromium.click_button("Allow").await;
        }
        chromium.wait_for_text(text).await;
        assert_eq!(
            chromium.serious_accessibility_violations().await,
            no_violations,
            "{page}"
        );
    }
    chromium.open(&format!("{base}/devportal")).await;
    chromium.click_button("Sign out").await;
    chromium.wait_for_text("Sign in").await;
    chromium.close().await;
    control_plane.stop().await;
}

pub async fn an_expired_session_is_renewed_with_its_refresh_token(backend: Backend) {
    // Access tokens of two seconds: a page after them renews the session.
    let settings = [("APIM_TOKEN_VALIDITY", "2".to_string())];
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &settings).await;
    let api = Client::new(&control_plane.url);
    api.add_user("erin", "erin-pw-1", &["subscriber"]).await;
    let browser = Browser::new(&control_plane.url);
    let list = sign_in(&browser, "/devportal/applications", "erin", "erin-pw-1").await;
    checked_page(&list);
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let renewed = browser.open("/devportal/applications").await;
    checked_page(&renewed);
    assert!(renewed.body.contains("Signed in as"), "{}", renewed.body);
    assert!(renewed.header("set-cookie").starts_with("apim_devportal="));
    // The renewed session goes on working until the user signs out.
    let again = browser.open("/devportal/applications").await;
    assert_eq!(again.status, 200);
    let home = browser.open("/devportal").await;
    assert_eq!(
        browser
            .submit(&home.form("/devportal/logout").unwrap())
            .await
            .status,
        303
    );
    assert_eq!(browser.open("/devportal/applications").await.status, 303);
    control_plane.stop().await;
}

pub async fn applications_keys_and_subscriptions_in_the_portal(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    api.add_user("erin", "erin-pw-1", &["subscriber"]).await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let pets = publish(&api, &admin, "Pets", json!({})).await;
    let browser = Browser::new(&control_plane.url);

    // Not signed in: the applications send the browser to the sign-in.
    let anonymous = browser.open("/devportal/applications").await;
    assert_eq!(anonymous.status, 303);
    assert!(
        anonymous
            .header("location")
            .starts_with("/devportal/login?next=")
    );

    let list = sign_in(&browser, "/devportal/applications", "erin", "erin-pw-1").await;
    checked_page(&list);
    assert!(
        list.body.contains("DefaultApplication"),
        "WSO2's, made on the first call"
    );

    // Create: without its token refused, a name taken refused with why, then made.
    let create = list
        .form("/devportal/applications")
        .expect("the create form");
    let forged = browser
        .submit(&create.clone().with("csrf_token", "x").with("name", "Mine"))
        .await;
    assert_eq!(forged.status, 403);
    let odd_tokens = browser
        .submit(
            &create
                .clone()
                .with("name", "Odd")
                .with("tier", "Unlimited")
                .with("token_type", "BOGUS"),
        )
        .await;
    assert_eq!(odd_tokens.status, 400, "{}", odd_tokens.body);
    let made = browser
        .submit(
            &create
                .clone()
                .with("name", "Mine")
                .with("tier", "Unlimited")
                .with("token_type", "JWT"),
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.body);
    let app_page = made.location().unwrap().path().to_string();
    let erin = api.login("erin", "erin-pw-1", "mgr:subscribe").await;
    let app_id = app_page.rsplit('/').next().unwrap();
    let stored = api
        .get(&format!("/api/am/store/v0.14/applications/{app_id}"), &erin)
        .await
        .expect(200);
    assert_eq!(stored.body["tokenType"], "JWT");
    let listed = api
        .get("/api/am/store/v0.14/applications", &erin)
        .await
        .expect(200);
    assert!(
        !listed.body.to_string().contains("\"Odd\""),
        "the refused form made nothing"
    );
    let again = browser
        .submit(&create.with("name", "Mine").with("tier", "Unlimited"))
        .await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.body.contains("role=\"alert\""));
    let page = browser.open(made.location().unwrap().as_str()).await;
    checked_page(&page);
    assert!(page.body.contains("The application is created."));

    // Keys: the secret shown once, never again.
    let generate = page
        .form(&format!("{app_page}/keys"))
        .expect("the keys form");
    let keys = browser.submit(&generate).await;
    checked_page(&keys);
    let secret = harness::signin::text_of(&keys.body, "#consumer-secret");
    assert!(secret.len() > 10, "{}", keys.body);
    assert_eq!(keys.header("cache-control"), "no-store");
    // Copy buttons, which the portal's own script shows.
    assert!(keys.body.contains("data-copy=\"consumer-secret\""));
    assert!(
        keys.header("content-security-policy")
            .contains("script-src 'self'")
    );
    let page = browser.open(&app_page).await;
    assert!(!page.body.contains(&secret), "shown once");
    let twice = browser.submit(&generate).await;
    assert_eq!(twice.status, 400);

    // A new secret, shown once; the old one is refused at the token endpoint at once.
    let consumer_key = harness::signin::text_of(&keys.body, "#consumer-key");
    let renew = page
        .form(&format!("{app_page}/keys/PRODUCTION/secret"))
        .expect("the new-secret form");
    assert_eq!(
        browser
            .submit(&renew.clone().without("csrf_token"))
            .await
            .status,
        403
    );
    let renewed = browser.submit(&renew).await;
    checked_page(&renewed);
    let new_secret = harness::signin::text_of(&renewed.body, "#consumer-secret");
    assert!(new_secret.len() > 10 && new_secret != secret);
    let grant = [("grant_type", "client_credentials")];
    let old = api.token(&consumer_key, &secret, &grant).await;
    assert_eq!(old.status, 401, "{}", old.body);
    api.token(&consumer_key, &new_secret, &grant)
        .await
        .expect(200);
    let odd_type = renew.clone();
    let odd_type = harness::signin::Form {
        action: odd_type.action.replace("PRODUCTION", "NOPE"),
        ..odd_type
    };
    assert_eq!(browser.submit(&odd_type).await.status, 400);

    // Grant types and callback URL: an unknown grant or none at all refused, then saved.
    let grants = page
        .form(&format!("{app_page}/keys/PRODUCTION/grants"))
        .expect("the grants form")
        .without("grant_types");
    let keys_path = format!(
        "/api/am/store/v0.14/applications/{}/keys/PRODUCTION",
        app_page.rsplit('/').next().unwrap()
    );
    let erin = api.login("erin", "erin-pw-1", "mgr:subscribe").await;
    let before = api.get(&keys_path, &erin).await.expect(200).body;
    for odd in [
        grants.clone().with("grant_types", "bogus"),
        grants.clone(),
        grants
            .clone()
            .with("grant_types", "authorization_code")
            .with("callback_url", "javascript:alert(1)"),
    ] {
        assert_eq!(browser.submit(&odd).await.status, 400);
    }
    assert_eq!(api.get(&keys_path, &erin).await.expect(200).body, before);
    let saved = browser
        .submit(
            &grants
                .clone()
                .with("grant_types", "authorization_code")
                .with("callback_url", "https://app.example.com/callback"),
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let after = api.get(&keys_path, &erin).await.expect(200).body;
    assert_eq!(after["supportedGrantTypes"], json!(["authorization_code"]));
    assert_eq!(after["callbackUrl"], "https://app.example.com/callback");
    let page = browser.open(saved.location().unwrap().as_str()).await;
    checked_page(&page);
    assert!(page.body.contains("grant types and callback URL are saved"));

    // Subscribe from the API's page; the application lists it with what it means.
    let api_page = browser.open(&format!("/devportal/apis/{pets}")).await;
    checked_page(&api_page);
    let application_id = app_page.rsplit('/').next().unwrap();
    let subscribe = api_page
        .form("/devportal/subscriptions")
        .expect("the subscribe form");
    let bad_tier = browser
        .submit(
            &subscribe
                .clone()
                .with("application_id", application_id)
                .with("tier", "NoSuchTier"),
        )
        .await;
    assert_eq!(bad_tier.status, 400);
    let subscribed = browser
        .submit(
            &subscribe
                .with("application_id", application_id)
                .with("tier", "Unlimited"),
        )
        .await;
    assert_eq!(subscribed.status, 303, "{}", subscribed.body);
    let page = browser.open(&app_page).await;
    checked_page(&page);
    assert!(page.body.contains("calls go through"), "{}", page.body);

    // Its analytics: the page, and the store operation behind it, which answers for
    // the caller's own applications only.
    let analytics = browser
        .open(&format!("{app_page}/analytics?range=1d"))
        .await;
    checked_page(&analytics);
    assert!(
        analytics.body.contains("0 requests, 0 errors"),
        "{}",
        analytics.body
    );
    let erin = api.login("erin", "erin-pw-1", "mgr:subscribe").await;
    let admins = Steps::new(&api, &admin)
        .create_application("Admin's", "Unlimited")
        .await
        .unwrap();
    let of =
        |id: &str, query: &str| format!("/api/am/store/v0.14/applications/{id}/analytics{query}");
    api.get(&of(&admins, ""), &erin).await.expect(403);
    api.get(&of("no-such-application", ""), &erin)
        .await
        .expect(404);
    api.get(&of(application_id, "?interval=3m"), &erin)
        .await
        .expect(400);
    api.get(&of(application_id, "?from=yesterday"), &erin)
        .await
        .expect(400);
    let figures = api.get(&of(application_id, ""), &erin).await.expect(200);
    assert_eq!(figures.body["requests"], 0);
    assert_eq!(figures.body["name"], "Mine");

    // Unsubscribe, then delete the application.
    let unsubscribe_action = harness::signin::form_actions(&page.body)
        .into_iter()
        .find(|action| action.starts_with("/devportal/subscriptions/"))
        .expect("an unsubscribe form");
    let unsubscribe = page.form(&unsubscribe_action).unwrap();
    assert_eq!(browser.submit(&unsubscribe).await.status, 303);
    let page = browser.open(&app_page).await;
    assert!(page.body.contains("subscribes to no API yet"));
    let delete = page.form(&format!("{app_page}/delete")).unwrap();
    assert_eq!(browser.submit(&delete).await.status, 303);
    assert_eq!(browser.open(&app_page).await.status, 404);
    control_plane.stop().await;
}

pub async fn a_provider_publishes_and_blocks_while_a_consumer_tries_it(backend: Backend) {
    let mgmt_addr = format!("127.0.0.1:{}", harness::free_port());
    let settings = [("APIM_MGMT_ADDR", mgmt_addr)];
    // Analytics reach the control plane within moments, for the page to show them.
    let gateway = [("APIM_ANALYTICS_REPORT_MS", "200".to_string())];
    let stack = harness::stack::Launch {
        database: backend,
        control_plane: &settings,
        gateway: &gateway,
        ..Default::default()
    }
    .start()
    .await;
    let base = stack.mgmt.base.clone();

    // The provider creates the API from a Swagger file in the publisher console, letting
    // browsers call it (CORS: the console's calls cross to the gateway), and publishes it.
    let provider = harness::browser::Chromium::start().await;
    provider
        .open(&format!(
            "{base}/publisher/login?next=%2Fpublisher%2Fapis%2Fnew"
        ))
        .await;
    provider.fill("username", "admin").await;
    provider
        .fill("password", &format!("{ADMIN_PASSWORD}\u{E007}"))
        .await;
    provider.wait_for_text("Allow access?").await;
    provider.click_button("Allow").await;
    provider.wait_for_text("Swagger 2.0 definition").await;
    assert_eq!(
        provider.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    let file = stack.data_dir.join("pets-swagger.json");
    std::fs::write(&file, definition_file("Pets", "/pets")).unwrap();
    provider.fill("definition", file.to_str().unwrap()).await;
    provider
        .fill("endpoint", &format!("{}/", stack.backend.url))
        .await;
    provider.fill("cors_origins", "*").await;
    provider.click_button("Create").await;
    provider.wait_for_text("The API is created").await;
    let api_page = provider.current_url().await;
    let pets = api_page
        .split('?')
        .next()
        .and_then(|page| page.rsplit('/').next())
        .unwrap()
        .to_string();
    provider.click_button("Publish").await;
    provider.wait_for_text("lifecycle state is changed").await;
    assert!(provider.source().await.contains("PUBLISHED"));
    assert_eq!(
        provider.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    // A guide for it, and another tenant's API, which the consumer never sees.
    let admin = stack.mgmt.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let docs = add_documents(&stack.mgmt, &admin, &pets).await;
    stack
        .mgmt
        .add_user("alice@acme.com", "alice-pw-1", &["creator", "publisher"])
        .await;
    let alice = stack
        .mgmt
        .login("alice@acme.com", "alice-pw-1", ALL_SCOPES)
        .await;
    let mut acme = harness::stack::api_record("AcmePets", &format!("{}/", stack.backend.url));
    acme["provider"] = json!("alice@acme.com");
    Steps::new(&stack.mgmt, &alice)
        .publish_api(&acme)
        .await
        .unwrap();
    stack
        .mgmt
        .add_user("erin", "erin-pw-1", &["subscriber"])
        .await;

    // A new consumer signs in, finds the API by search, reads its guide, creates an
    // application, generates its keys and subscribes, all in the portal.
    let chromium = harness::browser::Chromium::start().await;
    chromium
        .open(&format!(
            "{base}{}",
            DEVPORTAL_SIGN_IN.replace("{next}", "%2Fdevportal")
        ))
        .await;
    chromium.fill("username", "erin").await;
    chromium.fill("password", "erin-pw-1\u{E007}").await;
    chromium.wait_for_text("Allow access?").await;
    chromium.click_button("Allow").await;
    chromium.wait_for_text("Signed in as").await;
    chromium.fill("q", "Pets\u{E007}").await;
    chromium.wait_for_url(&format!("{base}/devportal?q=")).await;
    chromium.wait_for_text("1 API").await;
    assert!(!chromium.source().await.contains("AcmePets"));
    let page = format!("/devportal/apis/{pets}");
    chromium.open(&format!("{base}{page}")).await;
    chromium.wait_for_text("Getting started").await;
    chromium
        .open(&format!("{base}{page}/documents/{}", docs[0]))
        .await;
    chromium.wait_for_text("Calling it").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium
        .open(&format!("{base}/devportal/applications"))
        .await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.fill("name", "Console app").await;
    chromium.click_button("Create").await;
    chromium.wait_for_text("The application is created").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    let app_page = chromium.current_url().await;
    let app_id = app_page
        .split('?')
        .next()
        .and_then(|page| page.rsplit('/').next())
        .unwrap()
        .to_string();
    chromium.click_button("Generate production keys").await;
    chromium.wait_for_text("Copy the consumer secret now").await;
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    // The portal's script shows the copy buttons; a click copies, or says why not where
    // the browser keeps the clipboard from the page.
    chromium.click_button("Copy the consumer secret").await;
    let mut said = String::new();
    for _ in 0..50 {
        said = chromium.source().await;
        if said.contains("Copied.") || said.contains("did not let this page copy") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        said.contains("Copied.") || said.contains("did not let this page copy"),
        "{said}"
    );
    chromium.open(&format!("{base}{page}")).await;
    chromium.choose("application", "Console app").await;
    chromium.click_button("Subscribe").await;
    chromium.wait_for_text("Subscribed.").await;

    // The try-it console gets a token of the application and calls the real gateway
    // (again while the gateway is still learning of the subscription).
    chromium.choose("try-application", "Console app").await;
    chromium.replace("try-path", "/devs/alice").await;
    send_until(&chromium, "200 OK").await;
    chromium.wait_for_text("curl -X GET").await;
    // Everything the page loaded or called came from the control plane or the gateway.
    let gateway = stack.gw.base.clone();
    for url in chromium.requested_urls().await {
        assert!(
            url.starts_with(&base) || url.starts_with(&gateway),
            "{url} is neither {base} nor {gateway}"
        );
    }
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    let path = "/pets/v1.0.0/devs/alice";
    let preflight = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{}{path}", stack.gw.base))
        .header("origin", &base)
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "authorization,accept")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 200, "{:?}", preflight.headers());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "*",
        "{:?}",
        preflight.headers()
    );

    // The calls show in the application's analytics, drawn and tabled.
    let analytics = format!("{base}/devportal/applications/{app_id}/analytics");
    let mut shown = false;
    for _ in 0..100 {
        chromium.open(&analytics).await;
        let source = chromium.source().await;
        if !source.contains(">0 requests") && source.contains(" requests, ") {
            shown = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(shown, "{}", chromium.source().await);
    assert!(chromium.source().await.contains("Pets v1.0.0"));
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.open(&format!("{base}{page}")).await;
    chromium.wait_for_text("Try it").await;
    chromium.choose("try-application", "Console app").await;
    chromium.replace("try-path", "/devs/alice").await;

    // Blocked by the provider in the publisher console, the try-it console shows the
    // gateway's refusal.
    provider
        .open(&format!("{base}/publisher/apis/{pets}"))
        .await;
    provider.wait_for_text("Console app").await;
    assert_eq!(
        provider.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    provider.click_button("Block subscription").await;
    provider.wait_for_text("The subscription is blocked").await;
    let edit = format!("/publisher/apis/{pets}/edit");
    let resources = format!("/publisher/apis/{pets}/resources");
    let analytics = format!("/publisher/apis/{pets}/analytics");
    for (page, text) in [
        (analytics.as_str(), "Per application"),
        ("/publisher", "Your tenant's APIs"),
        ("/publisher/administration", "Waiting for approval"),
        (edit.as_str(), "Production URLs"),
        (resources.as_str(), "Save resources"),
    ] {
        provider.open(&format!("{base}{page}")).await;
        provider.wait_for_text(text).await;
        assert_eq!(
            provider.serious_accessibility_violations().await,
            Vec::<String>::new(),
            "{page}"
        );
    }
    provider.close().await;
    send_until(&chromium, "900907").await;

    // A subscriber signing in to the publisher console is offered nothing to do there.
    chromium
        .open(&format!("{base}/publisher/login?next=%2Fpublisher"))
        .await;
    chromium.wait_for_text("Allow access?").await;
    chromium.click_button("Allow").await;
    chromium.wait_for_text("no publisher role").await;
    let source = chromium.source().await;
    assert!(!source.contains("Create an API"), "{source}");
    assert_eq!(
        chromium.serious_accessibility_violations().await,
        Vec::<String>::new()
    );
    chromium.close().await;
}

/// Sends the try-it console's request until its answer shows `expected` (the gateway
/// learns of a subscription or a block within moments).
async fn send_until(chromium: &harness::browser::Chromium, expected: &str) {
    for _ in 0..50 {
        chromium.click_button("Send").await;
        for _ in 0..10 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            if chromium.source().await.contains(expected) {
                return;
            }
        }
    }
    panic!(
        "the console never showed {expected}: {}",
        chromium.source().await
    );
}

/// Where the portal's sign-in starts, back to `{next}` (percent-encoded).
const DEVPORTAL_SIGN_IN: &str = "/devportal/login?next={next}";
