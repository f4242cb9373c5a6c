//! The rest of WSO2's publisher and store catalogue: gateway environments, the store's
//! Swagger with the gateway filled in, SDK generation (501), new API versions and the
//! default version, endpoint certificates, and tiers managed per tenant and enforced by
//! the gateway without a restart.

use harness::stack::{ALL_SCOPES, Launch, TIER_SCOPES};
use harness::steps::Steps;
use harness::steps::tier_record as tier;
use harness::{Backend, PUBLISHER, STORE, spec_api_record};
use serde_json::{Value, json};

use crate::InProcess;

async fn admin_token(env: &InProcess) -> String {
    env.api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await
}

/// A user with only the subscriber role: asking for every scope, it gets `subscribe`.
async fn subscriber_token(env: &InProcess, name: &str) -> String {
    env.api.add_user(name, "sub-pw-1", &["subscriber"]).await;
    env.api.login(name, "sub-pw-1", ALL_SCOPES).await
}

pub async fn environments_store_swagger_and_sdks(env: InProcess) {
    let api = &env.api;
    let admin = admin_token(&env).await;
    let sam = subscriber_token(&env, "sam").await;
    let environments = format!("{PUBLISHER}/environments");

    // Every gateway environment: WSO2's default one, reached at the gateways' URL.
    let listed = api.get(&environments, &admin).await.expect(200);
    assert_eq!(listed.body["count"], 1, "{}", listed.body);
    let default = &listed.body["list"][0];
    assert_eq!(default["name"], "Production and Sandbox");
    assert_eq!(default["type"], "hybrid");
    assert_eq!(default["showInApiConsole"], true);
    assert_eq!(default["endpoints"]["http"], "http://127.0.0.1:8280");
    // Without a token, or without api_view, 401; an unknown parameter is a 400.
    api.get(&environments, "")
        .await
        .expect_error(401, "Unauthenticated");
    api.get(&environments, &sam)
        .await
        .expect_error(401, "Unauthenticated");
    api.get(&format!("{environments}?tenant=x"), &admin)
        .await
        .expect(400);

    // With apiId: the API's environments; 404 for an API that does not exist.
    let steps = Steps::new(api, &admin);
    let id = steps.create_api(&spec_api_record()).await.unwrap();
    let of_api = api
        .get(&format!("{environments}?apiId={id}"), &admin)
        .await
        .expect(200);
    assert_eq!(of_api.body["list"][0]["name"], "Production and Sandbox");
    api.get(&format!("{environments}?apiId=no-such-api"), &admin)
        .await
        .expect_error(404, "no-such-api");

    // The store's Swagger: not before the API is published (404), then with the
    // gateway's host, `<context>/<version>` and the schemes it listens on, anonymously.
    let swagger = format!("{STORE}/apis/{id}/swagger");
    api.get(&swagger, "").await.expect(404);
    steps.lifecycle(&id, "Publish").await.unwrap();
    let served = api.get(&swagger, "").await.expect(200);
    assert_eq!(served.body["host"], "127.0.0.1:8280", "{}", served.body);
    assert_eq!(served.body["basePath"], "/dev-management/v1.0.0");
    assert_eq!(served.body["schemes"], json!(["http"]));
    assert!(served.body["paths"]["/devs/{username}"].is_object());
    api.get(&format!("{STORE}/apis/no-such-api/swagger"), "")
        .await
        .expect(404);

    // SDK generation: WSO2's contract, answered 501 rather than a silent 404; its
    // parameters, the API and the scope are checked first.
    let sdk = |query: &str| format!("{STORE}/apis/generate-sdk?{query}");
    api.post_empty(&sdk(&format!("apiId={id}&language=java")), &admin)
        .await
        .expect_error(501, "SDK generation");
    api.post_empty(&sdk(&format!("apiId={id}&language=java")), &sam)
        .await
        .expect_error(501, "SDK generation");
    api.post_empty(&sdk(&format!("apiId={id}")), &admin)
        .await
        .expect_error(400, "language");
    api.post_empty(&sdk("apiId=no-such-api&language=java"), &admin)
        .await
        .expect(404);
    api.post_empty(&sdk(&format!("apiId={id}&language=java")), "")
        .await
        .expect(401);
}

pub async fn copy_api_and_default_version(env: InProcess) {
    let api = &env.api;
    let admin = admin_token(&env).await;
    let steps = Steps::new(api, &admin);
    let mut record = spec_api_record();
    record["isDefaultVersion"] = json!(true);
    let v1 = steps.publish_api(&record).await.unwrap();
    let application = steps
        .create_application("Copier", "Unlimited")
        .await
        .unwrap();
    steps
        .subscribe(&application, &v1, "Unlimited")
        .await
        .unwrap();

    let copy = |query: &str| format!("{PUBLISHER}/apis/copy-api?{query}");
    let created = api
        .post_empty(&copy(&format!("apiId={v1}&newVersion=v2.0.0")), &admin)
        .await
        .expect(201);
    let v2 = created.str("id");
    assert_ne!(v2, v1);
    let location = created.headers["location"].to_str().unwrap();
    assert!(location.ends_with(&format!("/apis/{v2}")), "{location}");
    assert_eq!(created.body["version"], "v2.0.0");
    assert_eq!(created.body["status"], "CREATED");
    assert_eq!(created.body["context"], "/dev-management");
    assert_eq!(created.body["isDefaultVersion"], false);
    assert_eq!(created.body["endpointSecurity"]["password"], "********");
    assert_eq!(created.body["tags"], record["tags"]);
    let definition: Value =
        serde_json::from_str(created.body["apiDefinition"].as_str().unwrap()).unwrap();
    assert_eq!(definition["info"]["version"], "v2.0.0");
    // Everything but the subscriptions.
    let subscriptions = api
        .get(&format!("{STORE}/subscriptions?apiId={v2}"), &admin)
        .await
        .expect(200);
    assert_eq!(subscriptions.body["count"], 0, "{}", subscriptions.body);

    // Refusals, none of which creates anything: the version exists (409), parameters
    // missing or a version WSO2 refuses (400), an unknown API (404), no api_create (401).
    let total = || async {
        api.get(&format!("{PUBLISHER}/apis"), &admin)
            .await
            .expect(200)
            .body["pagination"]["total"]
            .clone()
    };
    assert_eq!(total().await, 2);
    api.post_empty(&copy(&format!("apiId={v1}&newVersion=v2.0.0")), &admin)
        .await
        .expect_error(409, "v2.0.0");
    api.post_empty(&copy(&format!("apiId={v2}&newVersion=v1.0.0")), &admin)
        .await
        .expect(409);
    api.post_empty(&copy(&format!("apiId={v1}")), &admin)
        .await
        .expect_error(400, "newVersion");
    api.post_empty(&copy(&format!("apiId={v1}&newVersion=v%2F3")), &admin)
        .await
        .expect(400);
    api.post_empty(&copy("apiId=no-such-api&newVersion=v3"), &admin)
        .await
        .expect(404);
    let sam = subscriber_token(&env, "sam").await;
    api.post_empty(&copy(&format!("apiId={v1}&newVersion=v3")), &sam)
        .await
        .expect_error(401, "Unauthenticated");
    // Another tenant's API is not found.
    api.add_user("tess@acme.com", "tess-pw-1", &["creator", "publisher"])
        .await;
    let tess = api.login("tess@acme.com", "tess-pw-1", ALL_SCOPES).await;
    api.post_empty(&copy(&format!("apiId={v1}&newVersion=v3")), &tess)
        .await
        .expect(404);
    assert_eq!(total().await, 2);

    // isDefaultVersion on the new version moves the default route: v1 is no longer it.
    let mut v2_record = created.body.clone();
    v2_record["isDefaultVersion"] = json!(true);
    api.put_json(&format!("{PUBLISHER}/apis/{v2}"), &admin, &v2_record)
        .await
        .expect(200);
    let v1_now = api
        .get(&format!("{PUBLISHER}/apis/{v1}"), &admin)
        .await
        .expect(200);
    assert_eq!(v1_now.body["isDefaultVersion"], false);
    // A copy made the default on creation moves it too, in one step.
    let v3 = api
        .post_empty(&copy(&format!("apiId={v2}&newVersion=v3.0.0")), &admin)
        .await
        .expect(201)
        .str("id");
    let mut v3_record = api
        .get(&format!("{PUBLISHER}/apis/{v3}"), &admin)
        .await
        .expect(200)
        .body;
    v3_record["isDefaultVersion"] = json!(true);
    api.put_json(&format!("{PUBLISHER}/apis/{v3}"), &admin, &v3_record)
        .await
        .expect(200);
    for (id, default) in [(&v1, false), (&v2, false), (&v3, true)] {
        let now = api
            .get(&format!("{PUBLISHER}/apis/{id}"), &admin)
            .await
            .expect(200);
        assert_eq!(now.body["isDefaultVersion"], default, "{id}");
    }
}

/// A private key, which no upload may carry.
const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIB4PmVhB0u1Z6Zk1bJj0b1U6vOqzZZ0n5Q6lq0y1bq9g\n-----END PRIVATE KEY-----\n";

fn certificate_form(
    certificate: &str,
    alias: Option<&str>,
    endpoint: Option<&str>,
) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new().part(
        "certificate",
        reqwest::multipart::Part::bytes(certificate.as_bytes().to_vec()).file_name("cert.pem"),
    );
    if let Some(alias) = alias {
        form = form.text("alias", alias.to_string());
    }
    if let Some(endpoint) = endpoint {
        form = form.text("endpoint", endpoint.to_string());
    }
    form
}

pub async fn certificates_per_tenant(env: InProcess) {
    let api = &env.api;
    let admin = admin_token(&env).await;
    let certificates = format!("{PUBLISHER}/certificates");
    let pem = harness::tls::Authority::new("Backend One").ca_pem;
    let other_pem = harness::tls::Authority::new("Backend Two").ca_pem;
    let upload = |token: &str, form| {
        api.send(
            api.request(reqwest::Method::POST, &certificates, token)
                .multipart(form),
        )
    };

    let created = upload(
        &admin,
        certificate_form(&pem, Some("backend1"), Some("https://backend1.example")),
    )
    .await
    .expect(200);
    assert_eq!(
        created.body,
        json!({"alias": "backend1", "endpoint": "https://backend1.example",
               "trustedAs": ["endpoint certificate", "certificate authority"]})
    );
    assert!(
        created.headers["location"]
            .to_str()
            .unwrap()
            .ends_with("/certificates/backend1")
    );

    // Refused uploads, none stored: the alias taken (409); not PEM, a private key, a
    // certificate with its key, two certificates, a field missing or unknown, a bad alias
    // or endpoint (400); no api_create (401).
    upload(
        &admin,
        certificate_form(&other_pem, Some("backend1"), Some("https://b.example")),
    )
    .await
    .expect_error(409, "backend1");
    let refusals: Vec<(reqwest::multipart::Form, &str)> = vec![
        (
            certificate_form("hello", Some("c1"), Some("https://c.example")),
            "PEM",
        ),
        (
            certificate_form(PRIVATE_KEY, Some("c1"), Some("https://c.example")),
            "private key",
        ),
        (
            certificate_form(
                &format!("{pem}{PRIVATE_KEY}"),
                Some("c1"),
                Some("https://c.example"),
            ),
            "private key",
        ),
        (
            certificate_form(
                &format!("{pem}{other_pem}"),
                Some("c1"),
                Some("https://c.example"),
            ),
            "exactly one",
        ),
        (
            certificate_form(&pem, None, Some("https://c.example")),
            "alias",
        ),
        (certificate_form(&pem, Some("c1"), None), "endpoint"),
        (
            certificate_form(&pem, Some("../c1"), Some("https://c.example")),
            "alias",
        ),
        (
            certificate_form(&pem, Some("c1"), Some("c.example")),
            "endpoint",
        ),
        (
            certificate_form(&pem, Some("c1"), Some("https://c.example")).text("extra", "x"),
            "extra",
        ),
    ];
    for (form, why) in refusals {
        upload(&admin, form).await.expect_error(400, why);
    }
    let sam = subscriber_token(&env, "sam").await;
    upload(
        &sam,
        certificate_form(&pem, Some("c1"), Some("https://c.example")),
    )
    .await
    .expect_error(401, "Unauthenticated");
    api.get(&certificates, &sam).await.expect(401);

    let listed = api.get(&certificates, &admin).await.expect(200);
    assert_eq!(listed.body["count"], 1, "{}", listed.body);
    assert_eq!(listed.body["certificates"][0]["alias"], "backend1");
    assert_eq!(listed.body["pagination"]["total"], 1);
    let by_endpoint = api
        .get(
            &format!("{certificates}?endpoint=https://nowhere.example"),
            &admin,
        )
        .await
        .expect(200);
    assert_eq!(by_endpoint.body["count"], 0);

    let one = format!("{certificates}/backend1");
    let info = api.get(&one, &admin).await.expect(200);
    assert_eq!(info.body["status"], "Active");
    assert_eq!(info.body["version"], "V3");
    assert!(
        info.body["subject"]
            .as_str()
            .unwrap()
            .contains("CN=Backend One"),
        "{}",
        info.body
    );
    assert!(info.body["validity"]["from"].is_string() && info.body["validity"]["to"].is_string());
    let content = api.get(&format!("{one}/content"), &admin).await.expect(200);
    let downloaded = content.body.as_str().unwrap().to_string();
    assert!(downloaded.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(downloaded.trim(), pem.trim());

    // Another tenant sees none of them, and cannot read, replace or delete them (404); it
    // may use the same alias for a certificate of its own.
    api.add_user("tess@acme.com", "tess-pw-1", &["creator", "publisher"])
        .await;
    let tess = api.login("tess@acme.com", "tess-pw-1", ALL_SCOPES).await;
    let theirs = api.get(&certificates, &tess).await.expect(200);
    assert_eq!(theirs.body["count"], 0);
    api.get(&one, &tess).await.expect_error(404, "backend1");
    api.get(&format!("{one}/content"), &tess).await.expect(404);
    let replace = |token: &str, form| {
        api.send(
            api.request(reqwest::Method::PUT, &one, token)
                .multipart(form),
        )
    };
    replace(&tess, certificate_form(&other_pem, None, None))
        .await
        .expect(404);
    api.delete(&one, &tess).await.expect(404);
    upload(
        &tess,
        certificate_form(&other_pem, Some("backend1"), Some("https://t.example")),
    )
    .await
    .expect(200);

    // Replacing: a non-PEM body is refused and changes nothing; a certificate replaces.
    replace(&admin, certificate_form("nope", None, None))
        .await
        .expect(400);
    replace(&admin, certificate_form(PRIVATE_KEY, None, None))
        .await
        .expect(400);
    let unchanged = api.get(&one, &admin).await.expect(200);
    assert!(
        unchanged.body["subject"]
            .as_str()
            .unwrap()
            .contains("Backend One")
    );
    let replaced = replace(&admin, certificate_form(&other_pem, None, None))
        .await
        .expect(200);
    assert_eq!(replaced.body["endpoint"], "https://backend1.example");
    let now = api.get(&one, &admin).await.expect(200);
    assert!(
        now.body["subject"]
            .as_str()
            .unwrap()
            .contains("Backend Two")
    );
    replace(&admin, certificate_form(&pem, None, None))
        .await
        .expect(200);
    api.send(
        api.request(
            reqwest::Method::PUT,
            &format!("{certificates}/missing"),
            &admin,
        )
        .multipart(certificate_form(&pem, None, None)),
    )
    .await
    .expect(404);

    api.delete(&one, &admin).await.expect(200);
    api.delete(&one, &admin).await.expect(404);
    api.get(&one, &admin).await.expect(404);
    // The other tenant's certificate of the same alias is still there.
    api.get(&one, &tess).await.expect(200);
}

/// `Basic` of the spec record's backend credentials (`backend:backend-secret`).
const BACKEND_AUTHORIZATION: &str = "Basic YmFja2VuZDpiYWNrZW5kLXNlY3JldA==";

/// A new version copied from the default one, published and made the default, answers
/// at the bare context in its place, with the backend credentials it was copied with, and
/// its copied documents, thumbnail and WSDL are readable.
pub async fn copied_version_becomes_the_default_route(database: Backend) {
    let stack = Launch {
        database,
        ..Launch::default()
    }
    .start()
    .await;
    let v1 = stack
        .api("Pets", json!({"isDefaultVersion": true}), &["Publish"])
        .await;
    let source_doc =
        crate::content::add_content(&stack.mgmt, &stack.admin, &format!("{PUBLISHER}/apis/{v1}"))
            .await;
    let copied = stack
        .mgmt
        .post_empty(
            &format!("{PUBLISHER}/apis/copy-api?apiId={v1}&newVersion=v2.0.0"),
            &stack.admin,
        )
        .await
        .expect(201);
    let v2 = copied.str("id");
    // The new version's own backend path tells its answers apart.
    let mut record = copied.body.clone();
    record["endpointConfig"] = json!(
        json!({"production_endpoints": {"url": format!("{}/v2/", stack.backend.url)},
               "endpoint_type": "http"})
        .to_string()
    );
    record["isDefaultVersion"] = json!(true);
    stack.lifecycle(&v2, "Publish").await;
    let (_, key, secret, _) = stack.application("Walker", "Unlimited", &[&v1, &v2]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let backend_path =
        |reply: &harness::Reply| reply.body["path"].as_str().unwrap_or_default().to_string();

    // Before: the bare context is v1's.
    let bare = harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        "/pets/devs/alice",
        &token,
        |r| r.status == 200,
    )
    .await;
    assert_eq!(backend_path(&bare), "/devs/alice", "{}", bare.body);
    harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        "/pets/v2.0.0/devs/alice",
        &token,
        |r| r.status == 200,
    )
    .await;

    stack
        .mgmt
        .put_json(&format!("{PUBLISHER}/apis/{v2}"), &stack.admin, &record)
        .await
        .expect(200);
    let moved = harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        "/pets/devs/alice",
        &token,
        |r| r.status == 200 && r.body["path"] == "/v2/devs/alice",
    )
    .await;
    assert_eq!(
        moved.body["headers"]["authorization"], BACKEND_AUTHORIZATION,
        "{}",
        moved.body
    );
    // v1 still answers at its own version.
    let v1_reply = stack
        .gw
        .get("/pets/v1.0.0/devs/alice", &token)
        .await
        .expect(200);
    assert_eq!(backend_path(&v1_reply), "/devs/alice");
    crate::content::check_content_in_store(&stack.mgmt, &stack.admin, &v2, &source_doc).await;
}

pub async fn tiers_per_tenant(env: InProcess) {
    let api = &env.api;
    let admin = api
        .login("admin", harness::ADMIN_PASSWORD, TIER_SCOPES)
        .await;
    let tiers = |level: &str| format!("{PUBLISHER}/tiers/{level}");

    // A subscription tier of the tenant's own: 201 with Location, listed after WSO2's.
    let created = api
        .post_json(&tiers("api"), &admin, &tier("Tiny", 3, 60_000))
        .await
        .expect(201);
    assert_eq!(created.body["tierLevel"], "api");
    assert_eq!(created.body["requestCount"], 3);
    assert_eq!(created.body["attributes"]["plan"], "1");
    assert!(
        created.headers["location"]
            .to_str()
            .unwrap()
            .ends_with("/tiers/api/Tiny")
    );
    let listed = api.get(&tiers("api"), &admin).await.expect(200);
    assert_eq!(listed.body["count"], 6, "{}", listed.body);
    assert_eq!(listed.body["list"][0]["name"], "Gold");
    assert_eq!(listed.body["list"][5]["name"], "Tiny");
    api.get(&format!("{}/Tiny", tiers("api")), &admin)
        .await
        .expect(200);

    // Refusals, each changing nothing: a name taken (its own or a default's, 409), a bad
    // body (400), an unknown level (400), an unknown tier (404), no tier_manage (401).
    api.post_json(&tiers("api"), &admin, &tier("Tiny", 9, 60_000))
        .await
        .expect_error(409, "Tiny");
    api.post_json(&tiers("api"), &admin, &tier("Gold", 9, 60_000))
        .await
        .expect(409);
    for (body, why) in [
        (tier("Zero", 0, 60_000), "requestCount"),
        (tier("Blink", 5, 10), "unitTime"),
        (tier("a/b", 5, 60_000), "tier name"),
        (json!({"name": "Half"}), "400_tierPlan"),
        (
            json!({"name": "Odd", "tierPlan": "FREE", "requestCount": 1, "unitTime": 60000,
                "stopOnQuotaReach": true, "bandwidth": 5}),
            "bandwidth",
        ),
    ] {
        api.post_json(&tiers("api"), &admin, &body)
            .await
            .expect_error(400, why);
    }
    api.post_json(&tiers("bogus"), &admin, &tier("Bogus", 5, 60_000))
        .await
        .expect(400);
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        api.send(api.request(method, &format!("{}/Nope", tiers("api")), &admin))
            .await
            .expect_error(404, "Nope");
    }
    api.put_json(
        &format!("{}/Nope", tiers("api")),
        &admin,
        &tier("Nope", 5, 60_000),
    )
    .await
    .expect(404);
    api.add_user("cora", "cora-pw-1", &["creator"]).await;
    let cora = api.login("cora", "cora-pw-1", TIER_SCOPES).await;
    api.get(&tiers("api"), &cora).await.expect(200);
    api.post_json(&tiers("api"), &cora, &tier("Cora", 5, 60_000))
        .await
        .expect_error(401, "Unauthenticated");
    api.delete(&format!("{}/Tiny", tiers("api")), &cora)
        .await
        .expect(401);
    assert_eq!(api.get(&tiers("api"), &admin).await.body["count"], 6);

    // Changing: the tenant's own and a default (for this tenant); never Unlimited, nor a
    // tier's name.
    let changed = api
        .put_json(
            &format!("{}/Tiny", tiers("api")),
            &admin,
            &tier("Tiny", 5, 1000),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            changed.body["requestCount"].clone(),
            changed.body["timeUnit"].clone()
        ),
        (json!(5), json!("sec"))
    );
    api.put_json(
        &format!("{}/Tiny", tiers("api")),
        &admin,
        &tier("Other", 5, 1000),
    )
    .await
    .expect(400);
    api.put_json(
        &format!("{}/Gold", tiers("api")),
        &admin,
        &tier("Gold", 10, 60_000),
    )
    .await
    .expect(200);
    let gold = api
        .get(&format!("{}/Gold", tiers("api")), &admin)
        .await
        .expect(200);
    assert_eq!(gold.body["requestCount"], 10);
    api.put_json(
        &format!("{}/Unlimited", tiers("api")),
        &admin,
        &tier("Unlimited", 10, 60_000),
    )
    .await
    .expect(409);

    // APIs and applications may use the tenant's tiers, not unknown ones; a tier in use
    // cannot be deleted, nor can a default.
    let steps = Steps::new(api, &admin);
    let mut record = spec_api_record();
    record["tiers"] = json!(["Nope"]);
    api.post_json(&format!("{PUBLISHER}/apis"), &admin, &record)
        .await
        .expect_error(400, "Specified tier(s) [Nope] are invalid");
    record["tiers"] = json!(["Tiny", "Unlimited"]);
    let metered = steps.publish_api(&record).await.unwrap();
    api.delete(&format!("{}/Tiny", tiers("api")), &admin)
        .await
        .expect_error(409, "offers it");
    api.delete(&format!("{}/Gold", tiers("api")), &admin)
        .await
        .expect_error(409, "default");
    api.post_json(&tiers("application"), &admin, &tier("Trickle", 2, 60_000))
        .await
        .expect(201);
    let app = steps
        .create_application("Trickled", "Trickle")
        .await
        .unwrap();
    steps
        .create_application("Nowhere", "Nope")
        .await
        .unwrap_err();
    api.delete(&format!("{}/Trickle", tiers("application")), &admin)
        .await
        .expect_error(409, "applications use it");
    api.post_json(&tiers("resource"), &admin, &tier("Drip", 1, 60_000))
        .await
        .expect(201);
    let mut dripping = spec_api_record();
    dripping["name"] = json!("Dripping");
    dripping["context"] = json!("/dripping");
    dripping["apiDefinition"] = json!(
        json!({"swagger": "2.0", "paths": {"/d": {"get": {"x-throttling-tier": "Drip"}}}})
            .to_string()
    );
    let drip_api = steps.create_api(&dripping).await.unwrap();
    api.delete(&format!("{}/Drip", tiers("resource")), &admin)
        .await
        .expect_error(409, "resources of API");
    api.delete(&format!("{PUBLISHER}/apis/{drip_api}"), &admin)
        .await
        .expect(200);
    api.delete(&format!("{}/Drip", tiers("resource")), &admin)
        .await
        .expect(200);
    api.get(&format!("{}/Drip", tiers("resource")), &admin)
        .await
        .expect(404);

    // The store shows the tiers the caller's roles may use: once Tiny is allowed to
    // creators only, a subscriber and anonymous callers no longer see it, and a
    // subscriber cannot subscribe on it (403).
    let store_tiers = format!("{STORE}/tiers/api");
    let sam = subscriber_token(&env, "sam").await;
    let names = |reply: harness::Reply| -> Vec<String> {
        reply.body["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(api.get(&store_tiers, "").await.expect(200)).contains(&"Tiny".to_string()));
    let permission = format!("{PUBLISHER}/tiers/update-permission?tierName=Tiny&tierLevel=api");
    api.post_json(
        &permission,
        &admin,
        &json!({"permissionType": "maybe", "roles": ["creator"]}),
    )
    .await
    .expect(400);
    api.post_json(
        &format!("{PUBLISHER}/tiers/update-permission?tierName=Nope&tierLevel=api"),
        &admin,
        &json!({"permissionType": "allow", "roles": ["creator"]}),
    )
    .await
    .expect(404);
    api.post_json(
        &format!("{PUBLISHER}/tiers/update-permission?tierName=Tiny"),
        &admin,
        &json!({"permissionType": "allow", "roles": ["creator"]}),
    )
    .await
    .expect(400);
    api.post_json(
        &permission,
        &cora,
        &json!({"permissionType": "allow", "roles": ["creator"]}),
    )
    .await
    .expect(401);
    let updated = api
        .post_json(
            &permission,
            &admin,
            &json!({"permissionType": "allow", "roles": ["Internal/creator"]}),
        )
        .await
        .expect(200);
    assert_eq!(updated.body.as_array().unwrap().len(), 6);
    for token in ["", sam.as_str()] {
        let seen = names(api.get(&store_tiers, token).await.expect(200));
        assert!(!seen.contains(&"Tiny".to_string()), "{seen:?}");
        api.get(&format!("{store_tiers}/Tiny"), token)
            .await
            .expect(404);
    }
    let sams_app = Steps::new(api, &sam)
        .create_application("SamApp", "Unlimited")
        .await
        .unwrap();
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &sam,
        &json!({"tier": "Tiny", "apiIdentifier": metered, "applicationId": sams_app}),
    )
    .await
    .expect(403);
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &sam,
        &json!({"tier": "Unlimited", "apiIdentifier": metered, "applicationId": sams_app}),
    )
    .await
    .expect(201);
    // Nor may anyone else without the role, the administrator included.
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &admin,
        &json!({"tier": "Tiny", "apiIdentifier": metered, "applicationId": app}),
    )
    .await
    .expect(403);

    // Another tenant has WSO2's tiers and none of this one's; its names are its own.
    api.add_user("ada@acme.com", "ada-pw-1", &["admin"]).await;
    let ada = api.login("ada@acme.com", "ada-pw-1", TIER_SCOPES).await;
    let theirs = api.get(&tiers("api"), &ada).await.expect(200);
    assert_eq!(theirs.body["count"], 5);
    assert_eq!(
        api.get(&format!("{}/Gold", tiers("api")), &ada).await.body["requestCount"],
        5000
    );
    api.get(&format!("{}/Tiny", tiers("api")), &ada)
        .await
        .expect(404);
    api.delete(&format!("{}/Tiny", tiers("api")), &ada)
        .await
        .expect(404);
    api.post_json(&tiers("api"), &ada, &tier("Tiny", 100, 60_000))
        .await
        .expect(201);
    api.delete(&format!("{}/Tiny", tiers("api")), &ada)
        .await
        .expect(200);
    api.get(&format!("{}/Tiny", tiers("api")), &admin)
        .await
        .expect(200);
}

/// A subscription tier created while everything runs, 3 requests a minute, lets 3 calls
/// through and refuses the 4th with WSO2's throttling fault; raised to 5, 2 more pass,
/// without restarting anything.
pub async fn a_new_tier_is_enforced_without_a_restart(database: Backend) {
    let stack = Launch {
        database,
        ..Launch::default()
    }
    .start()
    .await;
    let admin = stack
        .mgmt
        .login("admin", harness::ADMIN_PASSWORD, TIER_SCOPES)
        .await;
    let tiers = format!("{PUBLISHER}/tiers/api");
    stack
        .mgmt
        .post_json(&tiers, &admin, &tier("Tiny", 3, 60_000))
        .await
        .expect(201);
    let api = stack
        .api(
            "Metered",
            json!({"tiers": ["Tiny", "Unlimited"]}),
            &["Publish"],
        )
        .await;
    let steps = stack.steps();
    let metered_app = steps
        .create_application("Metered", "Unlimited")
        .await
        .unwrap();
    steps.subscribe(&metered_app, &api, "Tiny").await.unwrap();
    let keys = steps
        .generate_keys(&metered_app, &harness::steps::keys_request())
        .await
        .unwrap();
    let metered = stack.app_token(&keys.key, &keys.secret, &[]).await;
    // An unmetered application made after it: once the gateway knows it, it knows the
    // metered subscription too (versions land in order).
    let (_, key, secret, _) = stack.application("Free", "Unlimited", &[&api]).await;
    let free = stack.app_token(&key, &secret, &[]).await;
    let path = "/metered/v1.0.0/devs/alice";
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &free, |r| {
        r.status == 200
    })
    .await;

    // Well inside one minute: the window the counts are kept in.
    let into = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        % 60_000;
    if into > 25_000 {
        tokio::time::sleep(std::time::Duration::from_millis(60_000 - into + 50)).await;
    }
    for call in 1..=3 {
        let reply = stack.gw.get(path, &metered).await;
        assert_eq!(reply.status, 200, "call {call}: {}", reply.body);
    }
    let refused = stack.gw.get(path, &metered).await;
    assert_eq!(
        (refused.status, refused.fault_code()),
        (429, "900804"),
        "{}",
        refused.body
    );
    let body = refused.body.as_str().unwrap_or_default();
    assert!(body.contains("Message throttled out"), "{body}");
    // The unmetered application is not held back.
    stack.gw.get(path, &free).await.expect(200);

    // Raised to 5: the gateway takes it from the next manifest, without a restart.
    stack
        .mgmt
        .put_json(&format!("{tiers}/Tiny"), &admin, &tier("Tiny", 5, 60_000))
        .await
        .expect(200);
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &metered, |r| {
        r.status == 200
    })
    .await;
    stack.gw.get(path, &metered).await.expect(200);
    let again = stack.gw.get(path, &metered).await;
    assert_eq!(
        (again.status, again.fault_code()),
        (429, "900804"),
        "{}",
        again.body
    );
}
