//! The developer-management facade (spec 4.6): the component hosted by edge-gateway beside
//! the gateway, in front of the stand-in for the legacy SOAP service over real HTTP, and
//! published through the platform with the public REST interface only.

use e2e::dev_api::{self, Target};
use e2e::legacy::{
    SOAP_PASSWORD, SOAP_USER, recorded_requests, start_legacy_soap_at, validate_soap_request,
};
use e2e::{Backend, Client, FacadeSetup, ServerProcess};
use serde_json::{Value, json};

/// A facade (hosted by an edge gateway) in front of a stand-in SOAP service.
struct Facade {
    soap: ServerProcess,
    gateway: ServerProcess,
    /// `{dev_backend_url}`.
    url: String,
}

impl Facade {
    async fn start(
        control_plane: &e2e::ControlPlane,
        data_dir: &std::path::Path,
        soap_dir: &std::path::Path,
        record_dir: Option<&std::path::Path>,
        gateway_addr: &str,
    ) -> Self {
        let soap_addr = format!("127.0.0.1:{}", e2e::free_port());
        let soap = start_legacy_soap_at(&soap_addr, soap_dir, record_dir).await;
        let setup = FacadeSetup {
            addr: format!("127.0.0.1:{}", e2e::free_port()),
            soap_url: format!("{}/ws", soap.url),
            soap_user: SOAP_USER.into(),
            soap_password: SOAP_PASSWORD.into(),
        };
        let gateway = e2e::start_edge_gateway_with_facade(
            control_plane,
            data_dir,
            gateway_addr,
            &setup,
            None,
        )
        .await;
        Facade {
            soap,
            gateway,
            url: format!("http://{}", setup.addr),
        }
    }

    async fn stop(self) {
        self.gateway.stop().await;
        self.soap.stop().await;
    }
}

/// One of the facade's JSON errors, with its status.
fn assert_error(reply: &e2e::Reply, status: u16, text: &str) {
    assert_eq!(reply.status, status, "{:?}", reply.body);
    assert_eq!(reply.body["code"], status, "{:?}", reply.body);
    let description = reply.body["description"].as_str().unwrap_or_default();
    assert!(description.contains(text), "{description:?} lacks {text:?}");
}

/// The JSON body of a GET that must answer 200.
async fn found(client: &Client, path: &str, token: &str) -> Value {
    client.get(path, token).await.expect(200).body
}

/// Every operation and error case, against `client` (the facade, or the gateway with a
/// token); `name` keeps the records of separate runs apart.
async fn exercise(client: &Client, token: &str, name: &str) {
    let seeded = client.get("/devs/athiththan11", token).await.expect(200);
    assert_eq!(
        seeded.body,
        json!({"username": "athiththan11", "name": "Athiththan", "email": "athiththan@demo.com"})
    );
    let repos = client
        .get("/devs/athiththan11/repos", token)
        .await
        .expect(200);
    let names: Vec<&str> = repos
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["stackcheats", "event-handler-archetype", "angular-locus"]
    );
    assert_error(
        &client.get("/devs/nobody", token).await,
        404,
        "'nobody' not found",
    );
    assert_error(
        &client.get("/devs/nobody/repos", token).await,
        404,
        "not found",
    );

    // Text that needs escaping both ways, and UTF-8 beyond ASCII.
    let developer =
        json!({"username": name, "name": "Zoë <O'Brien> & \"Co\" 🦀", "email": "zoe@example.com"});
    let added = client
        .post_json("/devs", token, &developer)
        .await
        .expect(201);
    assert_eq!(added.body, developer);
    assert_eq!(
        found(client, &format!("/devs/{name}"), token).await,
        developer
    );
    assert_eq!(
        found(client, &format!("/devs/{name}/repos"), token).await,
        json!([])
    );
    assert_error(
        &client.post_json("/devs", token, &developer).await,
        409,
        "already exists",
    );

    let repo = json!({"name": "repodews & <co>", "username": name, "forks": 3});
    assert_eq!(
        client
            .post_json("/repos", token, &repo)
            .await
            .expect(201)
            .body,
        repo
    );
    assert_eq!(
        found(client, &format!("/devs/{name}/repos"), token).await,
        json!([repo])
    );
    assert_error(
        &client.post_json("/repos", token, &repo).await,
        409,
        "already has",
    );
    let orphan = json!({"name": "x", "username": "nobody", "forks": 0});
    assert_error(
        &client.post_json("/repos", token, &orphan).await,
        404,
        "'nobody' not found",
    );

    // Malformed and mistyped bodies: 400 naming the field; nothing reaches the service.
    for (body, field) in [
        (
            json!({"name": "x", "username": name, "forks": "3"}),
            "forks",
        ),
        (
            json!({"name": "x", "username": name, "forks": 1.5}),
            "forks",
        ),
        (json!({"name": "x", "username": name}), "forks"),
        (json!({"username": name, "forks": 1}), "name"),
        (json!({"name": "x", "forks": 1}), "username"),
    ] {
        let reply = client.post_json("/repos", token, &body).await;
        assert_error(&reply, 400, field);
        assert_eq!(reply.body["error"][0]["code"], format!("400_{field}"));
    }
    assert_error(
        &client
            .post_json(
                "/devs",
                token,
                &json!({"username": "u", "name": 7, "email": "e"}),
            )
            .await,
        400,
        "'name'",
    );
    let raw = client
        .send(
            client
                .request(reqwest::Method::POST, "/devs", token)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_error(&raw, 400, "not valid JSON");

    // Wrong methods.
    let put = client
        .send(client.request(reqwest::Method::PUT, "/repos", token))
        .await;
    assert!(
        matches!(put.status, 405 | 403),
        "PUT /repos: {}",
        put.status
    );

    assert_eq!(
        client
            .delete(&format!("/devs/{name}"), token)
            .await
            .expect(200)
            .body["message"],
        "Success"
    );
    assert_error(
        &client.delete(&format!("/devs/{name}"), token).await,
        404,
        "not found",
    );
    assert_error(
        &client.get(&format!("/devs/{name}"), token).await,
        404,
        "not found",
    );
}

/// Spec §1, §5 and 4.6: the facade answers at {dev_backend_url} and, once published, at
/// {gateway_url}/dev-management/v1.0.0 with the bearer token; without it the gateway refuses.
/// Every request the facade sent is valid against developers.xsd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facade_serves_every_operation_directly_and_through_the_gateway() {
    let data_dir = e2e::temp_dir();
    let soap_dir = data_dir.join("soap");
    let record_dir = data_dir.join("soap-requests");
    std::fs::create_dir_all(&soap_dir).unwrap();
    std::fs::create_dir_all(&record_dir).unwrap();
    let gateway_addr = format!("127.0.0.1:{}", e2e::free_port());
    let control_plane = e2e::start_control_plane(
        &Backend::Sqlite,
        &data_dir,
        &[("APIM_GATEWAYS", format!("http://{gateway_addr}"))],
    )
    .await;
    let facade = Facade::start(
        &control_plane,
        &data_dir,
        &soap_dir,
        Some(&record_dir),
        &gateway_addr,
    )
    .await;

    exercise(&Client::new(&facade.url), "", "direct").await;

    let target = Target {
        management_url: control_plane.url.clone(),
        gateway_url: facade.gateway.url.clone(),
        user: "admin".into(),
        password: e2e::ADMIN_PASSWORD.into(),
        facade_url: facade.url.clone(),
    };
    let published = dev_api::publish(&target)
        .await
        .expect("publish DevManagement");
    // Publishing again changes nothing and still yields working credentials.
    let again = dev_api::publish(&target)
        .await
        .expect("publish DevManagement again");
    assert_eq!(again.api_id, published.api_id);
    assert_eq!(again.consumer_key, published.consumer_key);

    let through = Client::new(&published.base_url);
    wait_for_route(&through, &published.access_token).await;
    exercise(&through, &published.access_token, "gateway").await;
    let refused = through.get("/devs/athiththan11", "").await;
    assert_eq!(refused.status, 401, "{:?}", refused.body);

    let sent = recorded_requests(&record_dir);
    assert!(
        sent.len() > 30,
        "only {} SOAP requests recorded",
        sent.len()
    );
    for request in &sent {
        if let Err(why) = validate_soap_request(request) {
            panic!("{why}\n{}", String::from_utf8_lossy(request));
        }
    }

    facade.stop().await;
    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The gateway learns of the publication from a pushed manifest, moments later.
async fn wait_for_route(client: &Client, token: &str) {
    for _ in 0..100 {
        let reply = client.get("/devs/athiththan11", token).await;
        if reply.status == 200 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("DevManagement never became invocable through the gateway");
}

/// What is written through the facade is still there after the SOAP service and the
/// facade restart; and a facade whose service is down or refuses it answers 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facade_data_survives_restarts_and_backend_failures_are_502() {
    let data_dir = e2e::temp_dir();
    let soap_dir = data_dir.join("soap");
    std::fs::create_dir_all(&soap_dir).unwrap();
    let control_plane = e2e::start_control_plane(&Backend::Sqlite, &data_dir, &[]).await;
    let local = "127.0.0.1:0";

    let facade = Facade::start(&control_plane, &data_dir, &soap_dir, None, local).await;
    let client = Client::new(&facade.url);
    let developer = json!({"username": "keeper", "name": "Kept", "email": "k@example.com"});
    client.post_json("/devs", "", &developer).await.expect(201);
    let repo = json!({"name": "kept-repo", "username": "keeper", "forks": 5});
    client.post_json("/repos", "", &repo).await.expect(201);
    client.delete("/devs/crudestVoyage", "").await.expect(200);
    let soap_endpoint = format!("{}/ws", facade.soap.url);
    facade.stop().await;

    // The service is gone: 502, and the refusal changes nothing.
    let setup = FacadeSetup {
        addr: format!("127.0.0.1:{}", e2e::free_port()),
        soap_url: soap_endpoint,
        soap_user: SOAP_USER.into(),
        soap_password: "wrong".into(),
    };
    let orphaned =
        e2e::start_edge_gateway_with_facade(&control_plane, &data_dir, local, &setup, None).await;
    let client = Client::new(&format!("http://{}", setup.addr));
    assert_error(
        &client.get("/devs/keeper", "").await,
        502,
        "could not be reached",
    );
    assert_error(
        &client.post_json("/devs", "", &developer).await,
        502,
        "could not be reached",
    );
    orphaned.stop().await;

    let facade = Facade::start(&control_plane, &data_dir, &soap_dir, None, local).await;
    let client = Client::new(&facade.url);
    assert_eq!(
        client.get("/devs/keeper", "").await.expect(200).body,
        developer
    );
    assert_eq!(
        client.get("/devs/keeper/repos", "").await.expect(200).body,
        json!([repo])
    );
    assert_error(
        &client.get("/devs/crudestVoyage", "").await,
        404,
        "not found",
    );
    facade.stop().await;

    // Wrong credentials for the service: 502 as well.
    let soap = start_legacy_soap_at("127.0.0.1:0", &soap_dir, None).await;
    let setup = FacadeSetup {
        soap_url: format!("{}/ws", soap.url),
        ..setup
    };
    let refused =
        e2e::start_edge_gateway_with_facade(&control_plane, &data_dir, local, &setup, None).await;
    let client = Client::new(&format!("http://{}", setup.addr));
    let reply = client.get("/devs/keeper", "").await;
    assert_error(&reply, 502, "credentials");
    assert_eq!(reply.body["message"], Value::from("Bad Gateway"));
    refused.stop().await;
    soap.stop().await;

    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}
