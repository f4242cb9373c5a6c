//! The publisher console as a browser sees it: each user offered what their roles allow
//! (a subscriber no publisher action), an API created from a Swagger file and published,
//! a subscription blocked and unblocked, another tenant's APIs never shown; the refusals
//! beside (a form without its CSRF token, a definition that is not one, an action the
//! lifecycle does not have), each changing nothing.

use harness::signin::{Browser, control_plane_at_its_issuer, form_actions};
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Client, spec_api_record};
use serde_json::Value;

use crate::devportal::{checked_page, sign_in_to};

/// The spec's Swagger 2.0 definition, titled `title`, served at `base_path`.
pub fn definition_file(title: &str, base_path: &str) -> Vec<u8> {
    let text = spec_api_record()["apiDefinition"]
        .as_str()
        .unwrap()
        .to_string();
    let mut definition: Value = serde_json::from_str(&text).unwrap();
    definition["info"]["title"] = title.into();
    definition["basePath"] = base_path.into();
    serde_json::to_vec_pretty(&definition).unwrap()
}

/// The number of APIs `token` sees in the publisher.
async fn api_count(api: &Client, token: &str) -> u64 {
    api.get("/api/am/publisher/v0.14/apis", token)
        .await
        .expect(200)
        .body["count"]
        .as_u64()
        .unwrap()
}

pub async fn the_console_offers_each_user_what_their_roles_allow(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    api.add_user("pat", "pat-pw-1", &["creator", "publisher"])
        .await;
    api.add_user("sam", "sam-pw-1", &["subscriber"]).await;
    api.add_user("tom@acme.com", "tom-pw-1", &["creator", "publisher"])
        .await;
    let admin = api
        .login("admin", ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;

    // Signed out: the way to sign in, no list.
    let anonymous = Browser::new(&control_plane.url);
    let first = anonymous.open("/publisher").await;
    checked_page(&first);
    assert!(first.body.contains("Sign in to see and publish"));
    assert_eq!(anonymous.open("/publisher/apis/new").await.status, 303);

    // A subscriber: no publisher action at all, and the forms refuse them.
    let sam = Browser::new(&control_plane.url);
    let home = sign_in_to("/publisher", &sam, "/publisher", "sam", "sam-pw-1").await;
    checked_page(&home);
    assert!(home.body.contains("no publisher role"), "{}", home.body);
    assert_eq!(form_actions(&home.body), ["/publisher/logout"]);
    assert!(!home.body.contains("Create an API"));
    assert_eq!(sam.open("/publisher/apis/new").await.status, 403);

    // A provider creates an API from a Swagger file; what it leaves blank the file says.
    let pat = Browser::new(&control_plane.url);
    let new = sign_in_to("/publisher", &pat, "/publisher/apis/new", "pat", "pat-pw-1").await;
    checked_page(&new);
    let form = new.form("/publisher/apis/new").unwrap();
    let file = definition_file("Pets", "/pets");
    let filled = form
        .clone()
        .with("version", "v1.0.0")
        .with("endpoint", "http://127.0.0.1:9/")
        .with("tiers", "Unlimited");
    let before = api_count(&api, &admin).await;

    // Refused, each changing nothing: no CSRF token; not a definition; no name at all.
    let forged = filled.clone().without("csrf_token");
    let refused = pat
        .submit_with_file(&forged, ("definition", "pets.json", file.clone()))
        .await;
    assert_eq!(refused.status, 403);
    let not_json = pat
        .submit_with_file(
            &filled,
            ("definition", "pets.json", b"swagger: '2.0'".to_vec()),
        )
        .await;
    assert_eq!(not_json.status, 400);
    assert!(not_json.body.contains("Swagger 2.0 document in JSON"));
    assert!(
        not_json.body.contains("value=\"v1.0.0\""),
        "the form keeps what was typed"
    );
    let no_swagger = pat
        .submit_with_file(&filled, ("definition", "x.json", b"{\"a\": 1}".to_vec()))
        .await;
    assert_eq!(no_swagger.status, 400);
    assert!(no_swagger.body.contains("name, a version and a context"));
    let wrong_swagger = pat
        .submit_with_file(
            &filled.clone().with("name", "X").with("context", "/x"),
            ("definition", "x.json", b"{\"swagger\": \"1.2\"}".to_vec()),
        )
        .await;
    assert_eq!(wrong_swagger.status, 400);
    assert!(
        wrong_swagger.body.contains("Swagger 2.0"),
        "{}",
        wrong_swagger.body
    );
    assert_eq!(api_count(&api, &admin).await, before);

    let created = pat
        .submit_with_file(&filled, ("definition", "pets.json", file))
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let page_url = created.location().unwrap();
    let id = page_url.path().rsplit('/').next().unwrap().to_string();
    let page = pat.open(page_url.as_str()).await;
    checked_page(&page);
    for shown in [
        "The API is created",
        "CREATED",
        "/pets",
        "/devs/{username}",
        "Publish",
    ] {
        assert!(page.body.contains(shown), "{shown}: {}", page.body);
    }
    assert_eq!(api_count(&api, &admin).await, before + 1);

    // Lifecycle: an action the state does not have is refused; Publish publishes.
    let lifecycle = format!("/publisher/apis/{id}/lifecycle");
    let form = page.form(&lifecycle).unwrap();
    let odd = pat.submit(&form.clone().with("action", "Retire")).await;
    assert_eq!(odd.status, 400);
    assert!(pat.open(page_url.as_str()).await.body.contains("CREATED"));
    let forged = pat
        .submit(&form.clone().with("action", "Publish").without("csrf_token"))
        .await;
    assert_eq!(forged.status, 403);
    let published = pat.submit(&form.with("action", "Publish")).await;
    assert_eq!(published.status, 303, "{}", published.body);
    let page = pat.open(page_url.as_str()).await;
    assert!(page.body.contains("PUBLISHED"), "{}", page.body);

    // The provider edits it: load-balanced endpoints with a timeout, caching, a new
    // description. A form that does not read, or that the API refuses, changes nothing.
    let edit_path = format!("/publisher/apis/{id}/edit");
    let edit = pat.open(&edit_path).await;
    checked_page(&edit);
    assert!(edit.body.contains("http://127.0.0.1:9/"), "{}", edit.body);
    let form = edit
        .form(&edit_path)
        .unwrap()
        .with("description", "Pets for everyone")
        .with("visibility", "PUBLIC")
        .with("endpoint_type", "load_balance")
        .with("production", "http://127.0.0.1:9/\nhttp://127.0.0.1:10/")
        .with("sandbox", "")
        .with("timeout_ms", "2000")
        .with("caching", "on")
        .with("cache_seconds", "60");
    let record = |body: Value| body;
    let path = format!("/api/am/publisher/v0.14/apis/{id}");
    let before = record(api.get(&path, &admin).await.expect(200).body);
    for (odd, status) in [
        (form.clone().with("endpoint_type", "http"), 400),
        (form.clone().with("timeout_ms", "soon"), 400),
        (form.clone().with("visibility", "EVERYONE"), 400),
        (
            form.clone().with("production", "http://169.254.169.254/"),
            400,
        ),
        (form.clone().without("csrf_token"), 403),
    ] {
        let refused = pat.submit(&odd).await;
        assert_eq!(refused.status, status, "{}", refused.body);
    }
    assert_eq!(api.get(&path, &admin).await.expect(200).body, before);
    let saved = pat.submit(&form).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let after = api.get(&path, &admin).await.expect(200).body;
    assert_eq!(after["description"], "Pets for everyone");
    assert_eq!(after["responseCaching"], "Enabled");
    assert_eq!(after["cacheTimeout"], 60);
    let endpoints: Value = serde_json::from_str(after["endpointConfig"].as_str().unwrap()).unwrap();
    assert_eq!(endpoints["endpoint_type"], "load_balance");
    assert_eq!(
        endpoints["production_endpoints"][1]["url"],
        "http://127.0.0.1:10/"
    );
    assert_eq!(
        endpoints["sandbox_endpoints"][0]["config"]["actionDuration"],
        "2000"
    );
    assert_eq!(after["status"], "PUBLISHED");

    // Resources: an operation made open and its tier changed; an unknown auth type or
    // tier is refused and changes nothing.
    let resources_path = format!("/publisher/apis/{id}/resources");
    let resources = pat.open(&resources_path).await;
    checked_page(&resources);
    assert!(resources.body.contains("/devs/{username}/repos"));
    let swagger_path = format!("/api/am/publisher/v0.14/apis/{id}/swagger");
    let definition_before = api.get(&swagger_path, &admin).await.expect(200).body;
    let form = resources.form(&resources_path).unwrap();
    for odd in [
        form.clone().with("auth-0", "Nobody"),
        form.clone().with("tier-0", "NoSuchTier"),
    ] {
        assert_eq!(pat.submit(&odd).await.status, 400);
    }
    assert_eq!(
        api.get(&swagger_path, &admin).await.expect(200).body,
        definition_before
    );
    let saved = pat
        .submit(&form.with("auth-0", "None").with("tier-0", "Unlimited"))
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let definition = api.get(&swagger_path, &admin).await.expect(200).body;
    assert_eq!(definition["paths"]["/devs"]["post"]["x-auth-type"], "None");
    assert_eq!(
        definition["paths"]["/devs/{username}"]["get"]["x-auth-type"],
        definition_before["paths"]["/devs/{username}"]["get"]["x-auth-type"]
    );

    // Documents: a Markdown guide added; a file document without its file, or with a
    // name the API refuses, leaves nothing behind; the guide deleted. An image saved,
    // an SVG refused.
    let docs_path = format!("/api/am/publisher/v0.14/apis/{id}/documents");
    let doc_count = || async {
        api.get(&docs_path, &admin).await.expect(200).body["count"]
            .as_u64()
            .unwrap()
    };
    let page = pat.open(page_url.as_str()).await;
    checked_page(&page);
    let add = format!("/publisher/apis/{id}/documents");
    let form = page
        .form(&add)
        .unwrap()
        .with("name", "Getting started")
        .with("type", "HOWTO")
        .with("source", "MARKDOWN")
        .with("content", "## Calling it\n\nSend a token.");
    let no_file = ("file", "", Vec::new());
    let added = pat.submit_with_file(&form, no_file.clone()).await;
    assert_eq!(added.status, 303, "{}", added.body);
    assert_eq!(doc_count().await, 1);
    let file_form = form
        .clone()
        .with("name", "Reference")
        .with("source", "FILE");
    assert_eq!(
        pat.submit_with_file(&file_form, no_file.clone())
            .await
            .status,
        400
    );
    let bad_name = ("file", "../escape.md", b"# x".to_vec());
    let refused = pat.submit_with_file(&file_form, bad_name).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        pat.submit_with_file(&form.clone().without("csrf_token"), no_file.clone())
            .await
            .status,
        403
    );
    assert_eq!(doc_count().await, 1);
    let page = pat.open(page_url.as_str()).await;
    assert!(page.body.contains("Getting started"));
    let document_id = api.get(&docs_path, &admin).await.expect(200).body["list"][0]["documentId"]
        .as_str()
        .unwrap()
        .to_string();
    let delete = format!("/publisher/apis/{id}/documents/{document_id}/delete");
    assert_eq!(pat.submit(&page.form(&delete).unwrap()).await.status, 303);
    assert_eq!(doc_count().await, 0);
    let image = page
        .form(&format!("/publisher/apis/{id}/thumbnail"))
        .unwrap();
    let png = [b"\x89PNG\r\n\x1a\n".as_slice(), &[0u8; 32]].concat();
    let saved = pat
        .submit_with_file(&image, ("file", "pets.png", png))
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let svg = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>".to_vec();
    assert_eq!(
        pat.submit_with_file(&image, ("file", "pets.png", svg))
            .await
            .status,
        400
    );

    // A consumer subscribes; the provider blocks, then unblocks, the subscription.
    let consumer = api.login("sam", "sam-pw-1", "mgr:subscribe").await;
    let app = Steps::new(&api, &consumer)
        .subscribed_application("Sam app", "Unlimited", &[&id])
        .await
        .unwrap();
    let page = pat.open(page_url.as_str()).await;
    checked_page(&page);
    assert!(
        page.body.contains("<td>Sam app</td><td>sam</td>"),
        "{}",
        page.body
    );
    let subscription = &app.subscriptions[0];
    let block = format!("/publisher/apis/{id}/subscriptions/{subscription}/block");
    let form = page.form(&block).unwrap();
    assert_eq!(
        pat.submit(&form.clone().without("csrf_token")).await.status,
        403
    );
    let blocked = pat.submit(&form).await;
    assert_eq!(blocked.status, 303);
    let state = |body: Value| body["status"].as_str().unwrap().to_string();
    let path = format!("/api/am/store/v0.14/subscriptions/{subscription}");
    assert_eq!(
        state(api.get(&path, &consumer).await.expect(200).body),
        "BLOCKED"
    );
    let page = pat.open(blocked.location().unwrap().as_str()).await;
    checked_page(&page);
    assert!(page.body.contains("The subscription is blocked"));
    let unblock = format!("/publisher/apis/{id}/subscriptions/{subscription}/unblock");
    assert_eq!(pat.submit(&page.form(&unblock).unwrap()).await.status, 303);
    assert_eq!(
        state(api.get(&path, &consumer).await.expect(200).body),
        "UNBLOCKED"
    );

    // An administrator switches on approvals for subscriptions; a new subscription waits
    // and is approved from the console. Other users see no administration.
    assert_eq!(pat.open("/publisher/administration").await.status, 403);
    assert!(!pat.open("/publisher").await.body.contains("Administration"));
    let admin_browser = Browser::new(&control_plane.url);
    let administration = sign_in_to(
        "/publisher",
        &admin_browser,
        "/publisher/administration",
        "admin",
        ADMIN_PASSWORD,
    )
    .await;
    checked_page(&administration);
    assert!(administration.body.contains("Nothing waits"));
    assert!(administration.body.contains("No gateway has synced yet"));
    let switches = administration
        .form("/publisher/administration/settings")
        .unwrap();
    let forged = switches
        .clone()
        .with("subscriptionCreation", "on")
        .without("csrf_token");
    assert_eq!(admin_browser.submit(&forged).await.status, 403);
    let saved = admin_browser
        .submit(
            &switches
                .clone()
                .with("subscriptionCreation", "on")
                .without("applicationCreation")
                .without("productionKeyGeneration")
                .without("sandboxKeyGeneration"),
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let settings = api
        .basic(
            reqwest::Method::GET,
            "/api/am/admin/v0.14/workflows/settings",
            ("admin", ADMIN_PASSWORD),
            None,
        )
        .await
        .expect(200);
    assert_eq!(settings.body["subscriptionCreation"], true);
    assert_eq!(settings.body["applicationCreation"], false);
    let second = Steps::new(&api, &consumer)
        .subscribed_application("Sam second app", "Unlimited", &[&id])
        .await
        .unwrap();
    let waiting_path = format!(
        "/api/am/store/v0.14/subscriptions/{}",
        second.subscriptions[0]
    );
    assert_eq!(
        state(api.get(&waiting_path, &consumer).await.expect(200).body),
        "ON_HOLD"
    );
    let administration = admin_browser.open("/publisher/administration").await;
    checked_page(&administration);
    assert!(
        administration.body.contains("Subscription"),
        "{}",
        administration.body
    );
    let decide = harness::signin::form_actions(&administration.body)
        .into_iter()
        .find(|action| action.starts_with("/publisher/administration/workflows/"))
        .unwrap();
    let form = administration.form(&decide).unwrap();
    let odd = admin_browser
        .submit(&form.clone().with("decision", "MAYBE"))
        .await;
    assert_eq!(odd.status, 400);
    let approved = admin_browser
        .submit(&form.with("decision", "APPROVED"))
        .await;
    assert_eq!(approved.status, 303, "{}", approved.body);
    assert_eq!(
        state(api.get(&waiting_path, &consumer).await.expect(200).body),
        "UNBLOCKED"
    );
    assert!(
        admin_browser
            .open("/publisher/administration")
            .await
            .body
            .contains("Nothing waits")
    );
    // The API's analytics, for administrators (no call went through a gateway here).
    let analytics = admin_browser
        .open(&format!("/publisher/apis/{id}/analytics"))
        .await;
    checked_page(&analytics);
    assert!(
        analytics.body.contains("0 requests, 0 errors"),
        "{}",
        analytics.body
    );
    assert!(
        !pat.open(page_url.as_str())
            .await
            .body
            .contains("/analytics\"")
    );

    // Another tenant's provider never sees it.
    let tom = Browser::new(&control_plane.url);
    let theirs = sign_in_to("/publisher", &tom, "/publisher", "tom@acme.com", "tom-pw-1").await;
    checked_page(&theirs);
    assert!(!theirs.body.contains(&id));
    assert!(
        theirs.body.contains("You have no APIs yet"),
        "{}",
        theirs.body
    );
    assert_eq!(tom.open(page_url.as_str()).await.status, 404);

    // Signing out ends the session.
    let home = pat.open("/publisher").await;
    let signed_out = pat.submit(&home.form("/publisher/logout").unwrap()).await;
    assert_eq!(signed_out.status, 303);
    assert_eq!(pat.open(page_url.as_str()).await.status, 303);
    control_plane.stop().await;
}

/// A minimal WSDL 1.1 definition.
const WSDL: &str = r#"<?xml version="1.0"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" name="Orders"
    targetNamespace="http://example.com/orders"/>"#;

/// Serves `definition` at `/swagger.json` on 127.0.0.1 (everything else 404): where a
/// provider's definition lives.
async fn definition_server(definition: Vec<u8>) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/swagger.json",
        axum::routing::get(move || {
            let body = definition.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

pub async fn an_api_from_a_url_with_its_scopes_wsdl_and_certificates(backend: Backend) {
    let data_dir = harness::temp_dir();
    let control_plane = control_plane_at_its_issuer(&backend, &data_dir, &[]).await;
    let api = Client::new(&control_plane.url);
    api.add_user("pat", "pat-pw-1", &["creator", "publisher"])
        .await;
    let admin = api
        .login("admin", ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    let (served_at, server) = definition_server(definition_file("Orders", "/orders")).await;
    let port = served_at.rsplit(':').next().unwrap();

    // A definition by URL: fetched where the egress policy allows, and only there.
    let pat = Browser::new(&control_plane.url);
    let new = sign_in_to("/publisher", &pat, "/publisher/apis/new", "pat", "pat-pw-1").await;
    assert!(new.body.contains("name=\"definition_url\""));
    let endpoint = "https://127.0.0.1:9443/orders";
    let form = new
        .form("/publisher/apis/new")
        .unwrap()
        .with("version", "v1")
        .with("endpoint", endpoint)
        .with("tiers", "Unlimited");
    let no_file = ("definition", "", Vec::new());
    let before = api_count(&api, &admin).await;
    for (url, why) in [
        (
            format!("http://localhost:{port}/swagger.json"),
            "this machine",
        ),
        (format!("{served_at}/missing.json"), "404"),
        (
            "http://169.254.169.254/latest".to_string(),
            "could not be fetched",
        ),
        ("file:///etc/passwd".to_string(), "http:// or https://"),
    ] {
        let refused = pat
            .submit_with_file(&form.clone().with("definition_url", &url), no_file.clone())
            .await;
        assert_eq!(refused.status, 400, "{url}: {}", refused.body);
        assert!(refused.body.contains(why), "{url}: {}", refused.body);
    }
    assert_eq!(api_count(&api, &admin).await, before);
    let url = format!("{served_at}/swagger.json");
    let created = pat
        .submit_with_file(&form.with("definition_url", &url), no_file)
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    server.abort();
    let page_url = created.location().unwrap();
    let id = page_url.path().rsplit('/').next().unwrap().to_string();
    let swagger_path = format!("/api/am/publisher/v0.14/apis/{id}/swagger");
    let definition = api.get(&swagger_path, &admin).await.expect(200).body;
    assert_eq!(definition["info"]["title"], "Orders");
    assert!(definition["paths"]["/devs/{username}"].is_object());

    // Scopes: one declared and given to an operation; a key tokens cannot carry, an
    // undeclared scope, a form without its CSRF token: refused, changing nothing.
    let resources_path = format!("/publisher/apis/{id}/resources");
    let resources = pat.open(&resources_path).await;
    checked_page(&resources);
    assert!(resources.body.contains("The API declares no scope"));
    let form = resources.form(&resources_path).unwrap();
    let with_scope = form
        .clone()
        .with("scope-key", "orders:write")
        .with("scope-name", "Write orders")
        .with("scope-roles", "creator")
        .with("scope-0", "orders:write");
    for (odd, status) in [
        (with_scope.clone().with("scope-key", "two words"), 400),
        (form.clone().with("scope-1", "undeclared"), 400),
        (with_scope.clone().without("csrf_token"), 403),
    ] {
        let refused = pat.submit(&odd).await;
        assert_eq!(refused.status, status, "{}", refused.body);
    }
    assert_eq!(
        api.get(&swagger_path, &admin).await.expect(200).body,
        definition
    );
    let saved = pat.submit(&with_scope).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let scoped = |definition: &Value| -> Vec<String> {
        let mut found = Vec::new();
        for item in definition["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                if let Some(scope) = operation["x-scope"].as_str() {
                    found.push(scope.to_string());
                }
            }
        }
        found
    };
    let definition = api.get(&swagger_path, &admin).await.expect(200).body;
    let declared = &definition["x-wso2-security"]["apim"]["x-wso2-scopes"];
    assert_eq!(declared[0]["key"], "orders:write");
    assert_eq!(declared[0]["roles"], "creator");
    assert_eq!(scoped(&definition), ["orders:write"]);
    let resources = pat.open(&resources_path).await;
    checked_page(&resources);
    assert!(resources.body.contains("Write orders"));
    let removed = resources
        .form(&resources_path)
        .unwrap()
        .with("remove-scope", "orders:write")
        .with("scope-0", "");
    assert_eq!(pat.submit(&removed).await.status, 303);
    let definition = api.get(&swagger_path, &admin).await.expect(200).body;
    assert_eq!(
        definition["x-wso2-security"]["apim"]["x-wso2-scopes"],
        serde_json::json!([])
    );
    assert!(scoped(&definition).is_empty());

    // The WSDL: a file that is not one refused, a WSDL 1.1 saved.
    let wsdl_path = format!("/api/am/publisher/v0.14/apis/{id}/wsdl");
    let page = pat.open(page_url.as_str()).await;
    checked_page(&page);
    let wsdl_form = page.form(&format!("/publisher/apis/{id}/wsdl")).unwrap();
    let refused = pat
        .submit_with_file(&wsdl_form, ("file", "x.wsdl", b"<html/>".to_vec()))
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    api.get(&wsdl_path, &admin).await.expect(404);
    let saved = pat
        .submit_with_file(
            &wsdl_form,
            ("file", "orders.wsdl", WSDL.as_bytes().to_vec()),
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(
        api.get(&wsdl_path, &admin).await.expect(200).body["name"],
        "orders.wsdl"
    );

    // An endpoint certificate: added for the API's endpoint, shown, deleted; a bad alias
    // or a file that is no certificate refused.
    let certificates = "/api/am/publisher/v0.14/certificates";
    let count = || async {
        api.get(certificates, &admin).await.expect(200).body["count"]
            .as_u64()
            .unwrap()
    };
    let page = pat.open(page_url.as_str()).await;
    assert!(page.body.contains("orders.wsdl"));
    assert!(page.body.contains("No certificate for its endpoints"));
    let add = page
        .form(&format!("/publisher/apis/{id}/certificates"))
        .unwrap()
        .with("alias", "orders-backend")
        .with("endpoint", endpoint);
    let pem = harness::tls::Authority::new("Orders CA")
        .ca_pem
        .into_bytes();
    for (odd, file) in [
        (add.clone().with("alias", "bad alias"), pem.clone()),
        (add.clone(), b"not a certificate".to_vec()),
    ] {
        let refused = pat
            .submit_with_file(&odd, ("file", "orders.pem", file))
            .await;
        assert_eq!(refused.status, 400, "{}", refused.body);
    }
    assert_eq!(count().await, 0);
    let added = pat
        .submit_with_file(&add, ("file", "orders.pem", pem))
        .await;
    assert_eq!(added.status, 303, "{}", added.body);
    assert_eq!(count().await, 1);
    let page = pat.open(added.location().unwrap().as_str()).await;
    checked_page(&page);
    assert!(page.body.contains("The certificate is added"));
    assert!(
        page.body.contains("<td>orders-backend</td>"),
        "{}",
        page.body
    );
    let delete = format!("/publisher/apis/{id}/certificates/orders-backend/delete");
    let delete = page.form(&delete).unwrap();
    assert_eq!(
        pat.submit(&delete.clone().without("csrf_token"))
            .await
            .status,
        403
    );
    assert_eq!(pat.submit(&delete).await.status, 303);
    assert_eq!(count().await, 0);
    control_plane.stop().await;
}
