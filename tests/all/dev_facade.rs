//! The developer-management facade (spec 4.6): the component hosted by edge-gateway beside
//! the gateway, in front of the stand-in for the legacy SOAP service over real HTTP (strict
//! about framing and answering as the customer's service does, BEHAVIOUR.md), and
//! published through the platform with the public REST interface only.

use std::path::Path;

use harness::mcp::{Sdk, call_tool};
use harness::{Client, FacadeSetup, ServerProcess};
use serde_json::{Value, json};
use tools::dev_api::{self, Target};
use tools::legacy::{
    Framing, SOAP_PASSWORD, SOAP_USER, break_database, recorded_requests, restore_database,
    soap_call, start_legacy_soap_framed, validate_soap_request,
};

use crate::Env;

/// A facade (hosted by an edge gateway) in front of a stand-in SOAP service.
pub(crate) struct Facade {
    soap: ServerProcess,
    pub(crate) gateway: ServerProcess,
    /// `{dev_backend_url}`.
    pub(crate) url: String,
    /// The stand-in's SOAP endpoint.
    pub(crate) soap_endpoint: String,
}

impl Facade {
    pub(crate) async fn start(
        control_plane: &harness::ControlPlane,
        data_dir: &Path,
        soap_dir: &Path,
        record_dir: Option<&Path>,
        gateway_addr: &str,
        framing: Framing,
        p3: bool,
    ) -> Self {
        // The workspace's binaries (`legacy-soap` among them) are built with the components,
        // the first time a test asks for them.
        harness::gateway_component();
        let soap_addr = format!("127.0.0.1:{}", harness::free_port());
        let soap = start_legacy_soap_framed(&soap_addr, soap_dir, record_dir, framing).await;
        let setup = FacadeSetup {
            addr: format!("127.0.0.1:{}", harness::free_port()),
            soap_url: format!("{}/ws", soap.url),
            soap_user: SOAP_USER.into(),
            soap_password: SOAP_PASSWORD.into(),
        };
        let gateway = if p3 {
            harness::start_edge_gateway_with_p3_facade(
                control_plane,
                data_dir,
                gateway_addr,
                &setup,
            )
            .await
        } else {
            harness::start_edge_gateway_with_facade(
                control_plane,
                data_dir,
                gateway_addr,
                &setup,
                None,
            )
            .await
        };
        Facade {
            soap_endpoint: setup.soap_url.clone(),
            soap,
            gateway,
            url: format!("http://{}", setup.addr),
        }
    }

    pub(crate) async fn stop(self) {
        self.gateway.stop().await;
        self.soap.stop().await;
    }
}

/// Asks the SOAP service itself for the names of `username`'s repositories.
async fn soap_repo_names(endpoint: &str, username: &str) -> Vec<String> {
    let (status, body) = soap_call(
        endpoint,
        SOAP_USER,
        SOAP_PASSWORD,
        &soap_request(
            "getRepo",
            &format!("<dev:username>{username}</dev:username>"),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body.split("<ns2:name>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</ns2:name>"))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Adds a repository through the SOAP service itself, which checks no owner.
async fn soap_add_repo(endpoint: &str, name: &str, username: &str) {
    let fields = format!(
        "<dev:name>{name}</dev:name><dev:username>{username}</dev:username><dev:forks>0</dev:forks>"
    );
    let (status, body) = soap_call(
        endpoint,
        SOAP_USER,
        SOAP_PASSWORD,
        &soap_request("addRepo", &fields),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

fn soap_request(operation: &str, fields: &str) -> String {
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         xmlns:dev=\"http://www.athiththan.com/devservice\"><soapenv:Body>\
         <dev:{operation}Request>{fields}</dev:{operation}Request></soapenv:Body></soapenv:Envelope>"
    )
}

/// The operations of the SOAP requests recorded in `record_dir`, in order.
fn recorded_operations(record_dir: &Path) -> Vec<String> {
    recorded_requests(record_dir)
        .iter()
        .map(|body| {
            let text = String::from_utf8_lossy(body);
            let payload = text.split("<dev:").nth(1).unwrap_or_default();
            let element = payload.split(['>', ' ', '/']).next().unwrap_or_default();
            element.trim_end_matches("Request").to_string()
        })
        .collect()
}

/// One of the facade's JSON errors, with its status.
fn assert_error(reply: &harness::Reply, status: u16, text: &str) {
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
/// token) in front of the SOAP service at `soap`; `name` keeps the records of separate
/// runs apart.
pub(crate) async fn exercise(client: &Client, token: &str, name: &str, soap: &str) {
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
    // A taken user name: 409, and the service keeps the stored record.
    let twin = json!({"username": name, "name": "Someone Else", "email": "else@example.com"});
    assert_error(
        &client.post_json("/devs", token, &twin).await,
        409,
        "already exists",
    );
    assert_eq!(
        found(client, &format!("/devs/{name}"), token).await,
        developer
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
    // The service would add both of these; the facade refuses them and nothing changes.
    assert_error(
        &client.post_json("/repos", token, &repo).await,
        409,
        "already has",
    );
    assert_eq!(
        found(client, &format!("/devs/{name}/repos"), token).await,
        json!([repo])
    );
    let orphan = json!({"name": "x", "username": "nobody", "forks": 0});
    assert_error(
        &client.post_json("/repos", token, &orphan).await,
        404,
        "'nobody' not found",
    );
    assert!(soap_repo_names(soap, "nobody").await.is_empty());
    // Repositories the service holds for a user name it does not know (added by other
    // clients: addRepo checks no owner) do not make a developer of it.
    let ghost = format!("{name}-ghost");
    soap_add_repo(soap, "haunted", &ghost).await;
    assert_error(
        &client.get(&format!("/devs/{ghost}/repos"), token).await,
        404,
        "not found",
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
    // The service keeps a deleted developer's repositories; they are nobody's now.
    assert_eq!(
        soap_repo_names(soap, name).await,
        ["repodews &amp; &lt;co&gt;"]
    );
    assert_error(
        &client.get(&format!("/devs/{name}/repos"), token).await,
        404,
        "not found",
    );
}

/// Spec §1, §5 and 4.6: the facade answers at {dev_backend_url} and, once published, at
/// {gateway_url}/dev-management/v1.0.0 with the bearer token; without it the gateway refuses.
/// Each REST call makes the SOAP calls the README's table says, and every request the
/// facade sent is valid against developers.xsd (and framed by Content-Length, or the
/// strict stand-in would have refused it).
pub async fn facade_serves_every_operation_directly_and_through_the_gateway(env: Env) {
    every_operation_directly_and_through_the_gateway(env, false).await;
}

/// The same seed flow with both components' WASIp3 artefacts, hosted with instance reuse.
pub async fn facade_serves_every_operation_on_the_p3_artefacts(env: Env) {
    every_operation_directly_and_through_the_gateway(env, true).await;
}

/// The facade's every operation, directly and once published through the gateway (with
/// `p3`, both hosted as WASIp3 artefacts).
async fn every_operation_directly_and_through_the_gateway(mut env: Env, p3: bool) {
    let data_dir = env.data_dir.clone();
    let soap_dir = data_dir.join("soap");
    let record_dir = data_dir.join("soap-requests");
    std::fs::create_dir_all(&soap_dir).unwrap();
    std::fs::create_dir_all(&record_dir).unwrap();
    let gateway_addr = format!("127.0.0.1:{}", harness::free_port());
    env.restart_with(&[("APIM_GATEWAYS", format!("http://{gateway_addr}"))])
        .await;
    let control_plane = &env.control_plane;
    let facade = Facade::start(
        control_plane,
        &data_dir,
        &soap_dir,
        Some(&record_dir),
        &gateway_addr,
        Framing::Strict,
        p3,
    )
    .await;

    let direct = Client::new(&facade.url);
    soap_calls_per_rest_call(&direct, &record_dir).await;
    exercise(&direct, "", "direct", &facade.soap_endpoint).await;

    let target = Target {
        management_url: control_plane.url.clone(),
        gateway_url: facade.gateway.url.clone(),
        user: "admin".into(),
        password: harness::ADMIN_PASSWORD.into(),
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
    exercise(
        &through,
        &published.access_token,
        "gateway",
        &facade.soap_endpoint,
    )
    .await;
    let refused = through.get("/devs/athiththan11", "").await;
    assert_eq!(refused.status, 401, "{:?}", refused.body);
    facade_as_mcp_tools(&control_plane.url, &published).await;

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
}

/// The facade served as MCP tools by its provider's switch: an agent gets a developer,
/// lists their repositories and adds one, each a SOAP call behind the facade.
async fn facade_as_mcp_tools(management_url: &str, published: &dev_api::Published) {
    let provider = Client::new(management_url)
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            "mgr:api_view mgr:api_create",
        )
        .await;
    let switch = format!("/api/am/publisher/v0.14/apis/{}/mcp", published.api_id);
    Client::new(management_url)
        .put_json(&switch, &provider, &json!({"enabled": true}))
        .await
        .expect(200);
    let url = format!("{}/mcp", published.base_url);
    let token = &published.access_token;
    let through = Client::new(&published.base_url);
    harness::eventually(&through, reqwest::Method::GET, "/mcp", token, |r| {
        r.status == 405
    })
    .await;
    let call = async |tool: &str, arguments: Value| {
        let seen = call_tool(Sdk::Stateless, &url, token, tool, &arguments)
            .await
            .unwrap_or_else(|why| panic!("{tool}: {why}"));
        assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
        assert_eq!(seen["call"]["isError"], false, "{tool}: {seen}");
        seen
    };
    let developer = call("getDeveloper", json!({"username": "athiththan11"})).await;
    assert_eq!(
        developer["call"]["structured"]["username"], "athiththan11",
        "{developer}"
    );
    let tools = developer["tools"].as_array().unwrap();
    for tool in [
        "getDeveloper",
        "getRepos",
        "addRepo",
        "addDeveloper",
        "deleteDeveloper",
    ] {
        assert!(
            tools.contains(&json!(tool)),
            "{tool} is not listed: {developer}"
        );
    }
    let repo = json!({"name": "mcp-tools", "username": "athiththan11", "forks": 0});
    let added = call("addRepo", json!({"body": repo})).await;
    assert_eq!(added["call"]["structured"]["name"], "mcp-tools", "{added}");
    let repos = call("getRepos", json!({"username": "athiththan11"})).await;
    let listed = repos["call"]["texts"][0].as_str().unwrap_or_default();
    assert!(listed.contains("mcp-tools"), "{repos}");
}

/// A REST call (method, path, JSON body), its status and the SOAP operations it makes.
type Case<'a> = (&'a str, &'a str, Option<&'a Value>, u16, &'a [&'a str]);

/// The README's table: the SOAP operations each REST call makes, in order (the recorded
/// requests also include the test's own calls to the service, so none is made here).
async fn soap_calls_per_rest_call(client: &Client, record_dir: &Path) {
    let developer = json!({"username": "counted", "name": "C", "email": "c@example.com"});
    let repo = json!({"name": "r", "username": "counted", "forks": 1});
    let orphan = json!({"name": "r", "username": "nobody", "forks": 1});
    let cases: [Case; 11] = [
        ("GET", "/devs/athiththan11", None, 200, &["getDeveloper"]),
        (
            "GET",
            "/devs/nobody",
            None,
            404,
            &["getDeveloper", "getRepo"],
        ),
        (
            "GET",
            "/devs/athiththan11/repos",
            None,
            200,
            &["getDeveloper", "getRepo"],
        ),
        (
            "GET",
            "/devs/nobody/repos",
            None,
            404,
            &["getDeveloper", "getRepo"],
        ),
        ("POST", "/devs", Some(&developer), 201, &["addDeveloper"]),
        ("POST", "/devs", Some(&developer), 409, &["addDeveloper"]),
        (
            "POST",
            "/repos",
            Some(&repo),
            201,
            &["getDeveloper", "getRepo", "addRepo"],
        ),
        (
            "POST",
            "/repos",
            Some(&repo),
            409,
            &["getDeveloper", "getRepo"],
        ),
        (
            "POST",
            "/repos",
            Some(&orphan),
            404,
            &["getDeveloper", "getRepo"],
        ),
        ("DELETE", "/devs/counted", None, 200, &["deleteDeveloper"]),
        ("DELETE", "/devs/counted", None, 404, &["deleteDeveloper"]),
    ];
    for (method, path, body, status, operations) in cases {
        let before = recorded_operations(record_dir).len();
        let reply = match (method, body) {
            ("GET", _) => client.get(path, "").await,
            ("DELETE", _) => client.delete(path, "").await,
            (_, Some(body)) => client.post_json(path, "", body).await,
            _ => unreachable!(),
        };
        assert_eq!(reply.status, status, "{method} {path}: {:?}", reply.body);
        let made = recorded_operations(record_dir).split_off(before);
        assert_eq!(made, operations, "{method} {path} answering {status}");
    }
}

/// The gateway learns of the publication from a pushed manifest, moments later.
pub(crate) async fn wait_for_route(client: &Client, token: &str) {
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
/// facade restart (then in front of a service that also reads chunked bodies); a failing
/// service (its database down) is 502 everywhere, never taken for an unknown developer;
/// and a facade whose service is down or refuses it answers 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facade_data_survives_restarts_and_backend_failures_are_502() {
    let data_dir = harness::temp_dir();
    let soap_dir = data_dir.join("soap");
    std::fs::create_dir_all(&soap_dir).unwrap();
    let control_plane =
        harness::start_control_plane(&harness::Backend::Sqlite, &data_dir, &[]).await;
    let local = "127.0.0.1:0";
    let start = async |framing: Framing| {
        Facade::start(
            &control_plane,
            &data_dir,
            &soap_dir,
            None,
            local,
            framing,
            false,
        )
        .await
    };

    let facade = start(Framing::Strict).await;
    let client = Client::new(&facade.url);
    let developer = json!({"username": "keeper", "name": "Kept", "email": "k@example.com"});
    client.post_json("/devs", "", &developer).await.expect(201);
    let repo = json!({"name": "kept-repo", "username": "keeper", "forks": 5});
    client.post_json("/repos", "", &repo).await.expect(201);
    client.delete("/devs/crudestVoyage", "").await.expect(200);

    // The service's database goes away: every operation faults, and an unknown user
    // name is not told from a known one any more: 502 for both, and nothing changes.
    break_database(&soap_dir).await;
    let newcomer = json!({"username": "newcomer", "name": "N", "email": "n@example.com"});
    for reply in [
        client.get("/devs/keeper", "").await,
        client.get("/devs/nobody", "").await,
        client.get("/devs/keeper/repos", "").await,
        client.get("/devs/nobody/repos", "").await,
        client.post_json("/devs", "", &newcomer).await,
        client.post_json("/repos", "", &repo).await,
        client.delete("/devs/keeper", "").await,
    ] {
        assert_error(&reply, 502, "with a fault");
    }
    restore_database(&soap_dir).await;
    assert_eq!(
        client.get("/devs/keeper", "").await.expect(200).body,
        developer
    );
    assert_error(&client.get("/devs/nobody", "").await, 404, "not found");
    assert_error(&client.get("/devs/newcomer", "").await, 404, "not found");
    let soap_endpoint = facade.soap_endpoint.clone();
    facade.stop().await;

    // The service is gone: 502, and the refusal changes nothing.
    let setup = FacadeSetup {
        addr: format!("127.0.0.1:{}", harness::free_port()),
        soap_url: soap_endpoint,
        soap_user: SOAP_USER.into(),
        soap_password: "wrong".into(),
    };
    let orphaned =
        harness::start_edge_gateway_with_facade(&control_plane, &data_dir, local, &setup, None)
            .await;
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

    let facade = start(Framing::AcceptChunked).await;
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
    let soap = tools::legacy::start_legacy_soap(&soap_dir, None).await;
    let setup = FacadeSetup {
        soap_url: format!("{}/ws", soap.url),
        ..setup
    };
    let refused =
        harness::start_edge_gateway_with_facade(&control_plane, &data_dir, local, &setup, None)
            .await;
    let client = Client::new(&format!("http://{}", setup.addr));
    let reply = client.get("/devs/keeper", "").await;
    assert_error(&reply, 502, "credentials");
    assert_eq!(reply.body["message"], Value::from("Bad Gateway"));
    refused.stop().await;
    soap.stop().await;

    control_plane.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// On Spin the published DevManagement API points at the private facade,
/// `http://dev-facade.spin.internal`: a control plane whose egress policy names it takes
/// that endpoint, one whose policy does not refuses it (and so refuses any API pointing
/// at the facade, or at any other `*.spin.internal` component).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spin_internal_facade_is_an_endpoint_only_where_the_policy_names_it() {
    let facade = "http://dev-facade.spin.internal";
    let mut record = harness::stack::api_record("DevManagement", facade);
    record["context"] = json!("/dev-management");
    record["version"] = json!("v1.0.0");
    for (allow, status) in [
        (
            format!("{},dev-facade.spin.internal", harness::TEST_EGRESS_ALLOW),
            201,
        ),
        (harness::TEST_EGRESS_ALLOW.to_string(), 400),
    ] {
        let dir = harness::temp_dir();
        let settings = [("APIM_EGRESS_ALLOW", allow)];
        let control_plane =
            harness::start_control_plane(&harness::Backend::Sqlite, &dir, &settings).await;
        let api = Client::new(&control_plane.url);
        let token = api
            .login("admin", harness::ADMIN_PASSWORD, "mgr:api_create")
            .await;
        let path = format!("{}/apis", harness::PUBLISHER);
        let reply = api.post_json(&path, &token, &record).await.expect(status);
        if status == 400 {
            assert!(
                reply.body.to_string().contains("spin.internal"),
                "{}",
                reply.body
            );
            // Nor under another name of the same kind.
            let mut other = harness::stack::api_record("Sneaky", "http://gateway.spin.internal/x");
            other["context"] = json!("/sneaky");
            api.post_json(&path, &token, &other).await.expect(400);
        }
        control_plane.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
