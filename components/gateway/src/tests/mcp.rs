//! An API's MCP server: both revisions' messages, a tool call as the operation's call
//! (token, scopes, tiers, the backend's path), and what is refused.

use apim_manifest::mcp::{ArgumentLocation, McpServer, McpTool, ToolArgument};
use serde_json::{Value, json};

use super::mediation::decided_with_body;
use super::*;
use crate::gateway::AnswerShape;

const ENDPOINT: &str = "/dev/v1/mcp";

fn argument(name: &str, location: ArgumentLocation, required: bool) -> ToolArgument {
    ToolArgument {
        name: name.into(),
        location,
        required,
    }
}

/// The dev API's tools: a developer (with an output schema), and their repos (under a
/// scope, with a query argument).
fn server() -> McpServer {
    McpServer {
        tools: vec![
            McpTool {
                name: "get_developer".into(),
                description: "A developer".into(),
                method: "GET".into(),
                template: "/devs/{username}".into(),
                scope: None,
                arguments: vec![argument("username", ArgumentLocation::Path, true)],
                input_schema: json!({"type": "object", "additionalProperties": false,
                    "properties": {"username": {"type": "string"}}, "required": ["username"]})
                .to_string(),
                output_schema: Some(json!({"type": "object"}).to_string()),
            },
            McpTool {
                name: "repos".into(),
                description: "Their repos".into(),
                method: "GET".into(),
                template: "/devs/{username}/repos".into(),
                scope: Some("repos_read".into()),
                arguments: vec![
                    argument("username", ArgumentLocation::Path, true),
                    argument("limit", ArgumentLocation::Query, false),
                ],
                input_schema: json!({"type": "object",
                    "properties": {"username": {"type": "string"}, "limit": {"type": "integer"}}})
                .to_string(),
                output_schema: None,
            },
            McpTool {
                name: "add_repo".into(),
                description: "Adds a repo".into(),
                method: "POST".into(),
                template: "/repos".into(),
                scope: None,
                arguments: vec![argument("body", ArgumentLocation::Body, true)],
                input_schema: json!({"type": "object", "required": ["body"],
                    "properties": {"body": {"$ref": "#/$defs/Repo"}},
                    "$defs": {"Repo": {"type": "object", "required": ["name"],
                        "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}}}})
                .to_string(),
                output_schema: None,
            },
        ],
    }
}

fn world() -> World {
    let mut world = World::new();
    let route = &mut world.manifest.apis[0].route;
    route.mcp = Some(server());
    route
        .operations
        .push(operation("POST", "/repos", AuthType::Required, None));
    world.manifest.meta.gateway_urls = vec!["http://gw.example".into()];
    assert_eq!(world.publish().status, 200);
    world
}

fn bearer_with_scope(world: &World, application: &str, jti: &str, scope: &str) -> String {
    let claims = json!({"iss": ISSUER, "sub": "admin", "iat": NOW_SECS, "exp": NOW_SECS + 3600,
        "jti": jti, "scope": scope, "client_id": "c", "application_id": application,
        "key_type": "PRODUCTION"});
    format!("Bearer {}", sign(&world.token_keys, "k1", &claims))
}

/// A 2026-07-28 message: its `_meta` and the headers that say what it says.
fn modern(world: &mut World, bearer: &str, id: u64, method: &str, params: Value) -> Response {
    let message = modern_message(bearer, id, method, params);
    world.gateway.handle(&world.host, message)
}

/// The request of a 2026-07-28 message.
fn modern_message(bearer: &str, id: u64, method: &str, mut params: Value) -> Request {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let name = params["name"].as_str().unwrap_or_default().to_string();
    let mut headers = vec![
        ("authorization", bearer),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("content-type", "application/json"),
    ];
    if method == "tools/call" {
        headers.push(("mcp-name", &name));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    request("POST", ENDPOINT, &headers, body.to_string().as_bytes())
}

fn post(world: &mut World, headers: &[(&str, &str)], body: &str) -> Response {
    world.gateway.handle(
        &world.host,
        request("POST", ENDPOINT, headers, body.as_bytes()),
    )
}

fn json_of(response: &Response) -> Value {
    serde_json::from_slice(&response.body).unwrap_or(Value::Null)
}

fn tool_names(response: &Response) -> Vec<String> {
    json_of(response)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_stateless_client_discovers_lists_and_calls_through_the_operation() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let discovered = modern(&mut world, &bearer, 1, "server/discover", json!({}));
    assert_eq!(discovered.status, 200);
    let result = &json_of(&discovered)["result"];
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["resultType"], "complete");
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());

    let listed = modern(&mut world, &bearer, 2, "tools/list", json!({}));
    assert_eq!(
        tool_names(&listed),
        ["get_developer", "add_repo"],
        "repos needs a scope the token lacks"
    );
    let result = &json_of(&listed)["result"];
    assert_eq!(result["cacheScope"], "private");
    assert!(result["ttlMs"].as_u64().unwrap() > 0);
    assert_eq!(result["tools"][0]["annotations"]["readOnlyHint"], true);

    let called = modern(
        &mut world,
        &bearer,
        3,
        "tools/call",
        json!({"name": "get_developer", "arguments": {"username": "al ice~é"}}),
    );
    assert_eq!(called.status, 200);
    let result = &json_of(&called)["result"];
    assert_eq!(result["isError"], false, "{}", json_of(&called));
    assert_eq!(result["structuredContent"], json!({"ok": true}));
    let sent = world.host.sent.borrow();
    let backend = sent.last().unwrap();
    assert_eq!(backend.path_with_query, "/base/devs/al%20ice~%C3%A9");
    assert_eq!(backend.method, "GET");
}

#[test]
fn a_scoped_tool_is_listed_and_called_only_with_its_scope() {
    let mut world = world();
    let without = world.bearer("app-1");
    let refused = modern(
        &mut world,
        &without,
        1,
        "tools/call",
        json!({"name": "repos", "arguments": {"username": "alice"}}),
    );
    assert_eq!(json_of(&refused)["error"]["code"], -32602);
    assert!(
        world.host.sent.borrow().is_empty(),
        "nothing reached the backend"
    );

    let with = bearer_with_scope(&world, "app-1", "t-scoped", "default repos_read");
    let listed = modern(&mut world, &with, 2, "tools/list", json!({}));
    assert_eq!(tool_names(&listed), ["get_developer", "repos", "add_repo"]);
    let called = modern(
        &mut world,
        &with,
        3,
        "tools/call",
        json!({"name": "repos", "arguments": {"username": "alice", "limit": 5}}),
    );
    assert_eq!(json_of(&called)["result"]["isError"], false);
    let sent = world.host.sent.borrow();
    assert_eq!(
        sent.last().unwrap().path_with_query,
        "/base/devs/alice/repos?limit=5"
    );
}

#[test]
fn a_handshake_client_initializes_without_a_session_and_calls() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let auth = [("authorization", bearer.as_str())];
    let initialized = post(
        &mut world,
        &auth,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    assert_eq!(initialized.status, 200);
    assert_eq!(
        json_of(&initialized)["result"]["protocolVersion"],
        "2025-06-18"
    );
    assert!(header(&initialized.headers, "mcp-session-id").is_none());
    let noted = post(
        &mut world,
        &auth,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!((noted.status, noted.body.len()), (202, 0));

    let versioned = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let listed = post(
        &mut world,
        &versioned,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(tool_names(&listed), ["get_developer", "add_repo"]);
    assert!(json_of(&listed)["result"].get("ttlMs").is_none());
    let called = post(
        &mut world,
        &versioned,
        r#"{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"get_developer","arguments":{"username":"bob"}}}"#,
    );
    let answer = json_of(&called);
    assert_eq!(answer["id"], "two");
    assert_eq!(answer["result"]["structuredContent"], json!({"ok": true}));
    // An error in this era is a 200: its clients take any other status as the transport's.
    let unknown = post(
        &mut world,
        &versioned,
        r#"{"jsonrpc":"2.0","id":3,"method":"nothing"}"#,
    );
    assert_eq!(
        (unknown.status, json_of(&unknown)["error"]["code"].clone()),
        (200, json!(-32601))
    );
}

#[test]
fn without_a_token_the_challenge_names_the_metadata_and_other_methods_get_405() {
    let mut world = world();
    let refused = post(
        &mut world,
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(refused.status, 401);
    let challenge = header(&refused.headers, "www-authenticate").unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    let bearer = world.bearer("app-1");
    let got = world.call("GET", ENDPOINT, &[("authorization", &bearer)]);
    assert_eq!(
        (got.status, header(&got.headers, "allow")),
        (405, Some("POST"))
    );
    // Without MCP switched on, the path is an ordinary resource path of the API.
    let mut plain = World::new();
    let bearer = plain.bearer("app-1");
    let missing = plain.call("POST", ENDPOINT, &[("authorization", &bearer)]);
    assert_ne!(missing.status, 405);
}

#[test]
fn malformed_and_mismatched_messages_are_refused_as_the_specification_says() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let modern_headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let cases = [
        ("{not json", 400, -32700),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            400,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            400,
            -32602,
        ),
        (
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{meta}}}}}"#
            ),
            400,
            -32020,
        ),
        (
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"cursor":"x",{meta}}}}}"#
            ),
            400,
            -32602,
        ),
    ];
    for (body, status, code) in cases {
        let answer = post(&mut world, &modern_headers, body);
        assert_eq!(
            (answer.status, json_of(&answer)["error"]["code"].as_i64()),
            (status, Some(code)),
            "{body}"
        );
    }
    let future = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2099-01-01"),
        ("mcp-method", "tools/list"),
    ];
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let answer = json_of(&post(&mut world, &future, body));
    assert_eq!(answer["error"]["code"], -32022);
    assert_eq!(answer["error"]["data"]["supported"], json!(["2026-07-28"]));
    // A name header that is not the body's name.
    let mut headers = modern_headers.to_vec();
    headers[2] = ("mcp-method", "tools/call");
    headers.push(("mcp-name", "repos"));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"get_developer",{meta}}}}}"#
    );
    assert_eq!(
        json_of(&post(&mut world, &headers, &body))["error"]["code"],
        -32020
    );
    assert!(
        world.host.sent.borrow().is_empty(),
        "nothing reached the backend"
    );
}

#[test]
fn arguments_are_checked_before_anything_reaches_the_backend() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let cases = [
        json!({}),
        json!({"username": 7}),
        json!({"username": "alice", "extra": 1}),
        json!({"username": ".."}),
        json!({"username": "a/b"}),
        json!({"username": ["a"]}),
    ];
    for (id, arguments) in cases.into_iter().enumerate() {
        let answer = modern(
            &mut world,
            &bearer,
            id as u64,
            "tools/call",
            json!({"name": "get_developer", "arguments": arguments}),
        );
        let result = &json_of(&answer)["result"];
        assert_eq!(result["isError"], true, "{arguments}: {result}");
    }
    assert!(
        world.host.sent.borrow().is_empty(),
        "nothing reached the backend"
    );
}

#[test]
fn a_backend_error_is_a_tool_error_and_a_tier_refusal_carries_wso2s_code() {
    let mut world = world();
    world.host.backend = Box::new(|_| Ok(Response::new(404, "application/json", "{\"gone\":1}")));
    let bearer = world.bearer("app-1");
    let answer = modern(
        &mut world,
        &bearer,
        1,
        "tools/call",
        json!({"name": "get_developer", "arguments": {"username": "alice"}}),
    );
    let result = &json_of(&answer)["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("404")
    );

    // app-2's application tier admits two calls a minute.
    let limited = world.bearer("app-2");
    let mut refusal = Value::Null;
    for id in 0..3 {
        let answer = modern(
            &mut world,
            &limited,
            10 + id,
            "tools/call",
            json!({"name": "get_developer", "arguments": {"username": "alice"}}),
        );
        refusal = json_of(&answer);
    }
    assert_eq!(refusal["error"]["code"], -32000, "{refusal}");
    assert_eq!(refusal["error"]["data"]["status"], 429);
    assert!(refusal["error"]["data"]["code"].as_u64().unwrap() >= 900_000);
}

#[test]
fn a_rest_call_without_the_operations_scope_is_refused_with_900910() {
    let mut world = World::new();
    world.manifest.apis[0].route.operations[0].scope = Some("repos_read".into());
    world.manifest.meta.gateway_urls = vec!["http://gw.example".into()];
    assert_eq!(world.publish().status, 200);
    let path = "/dev/v1/devs/alice/repos";

    let without = world.bearer("app-1");
    let refused = world.call("GET", path, &[("authorization", &without)]);
    assert_eq!(refused.status, 403);
    let body = String::from_utf8_lossy(&refused.body).to_string();
    assert!(body.contains("<ams:code>900910</ams:code>"), "{body}");
    let challenge = refused
        .headers
        .iter()
        .find(|(name, _)| name == "www-authenticate")
        .map(|(_, value)| String::from_utf8_lossy(value).to_string())
        .unwrap();
    assert_eq!(
        challenge,
        "Bearer resource_metadata=\"http://gw.example/.well-known/oauth-protected-resource/dev/v1\", \
         error=\"insufficient_scope\", scope=\"repos_read\""
    );
    assert!(
        world.host.sent.borrow().is_empty(),
        "nothing reached the backend"
    );

    // The scope among others: the call goes through; operations without one are as before.
    let with = bearer_with_scope(&world, "app-1", "t-scoped", "default repos_read");
    assert_eq!(
        world.call("GET", path, &[("authorization", &with)]).status,
        200
    );
    let other = world.call("GET", "/dev/v1/devs/alice", &[("authorization", &without)]);
    assert_eq!(other.status, 200);
}

#[test]
fn a_tool_call_is_logged_under_the_tools_name() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let params = json!({"name": "get_developer", "arguments": {"username": "alice"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "get_developer"),
        ("content-type", "application/json"),
    ];
    let mut call = crate::gateway::Call::default();
    let answer = world.gateway.handle_described(
        &world.host,
        request("POST", ENDPOINT, &headers, body.to_string().as_bytes()),
        &mut call,
    );
    assert_eq!(answer.status, 200);
    assert_eq!(
        (call.api.as_str(), call.resource.as_str()),
        ("Dev", "mcp:get_developer")
    );
    let logged = crate::access::Logged {
        method: "POST".into(),
        client: "10.0.0.9:4444".into(),
    };
    let line = crate::access::line(&call, &logged, &[b'a'; 32], 200, (1_764_134_485_123, 3));
    let line: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(line["resource"], "mcp:get_developer");
}

#[test]
fn a_forwarding_host_sends_the_operations_request_and_gets_the_same_result() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let call = |id| {
        let arguments = json!({"name": "get_developer", "arguments": {"username": "al ice"}});
        modern_message(&bearer, id, "tools/call", arguments)
    };
    let served = world.gateway.handle(&world.host, call(7));

    let message = call(7);
    let verdict = decided_with_body(&mut world, &message);
    assert!(!verdict.limits.is_empty(), "a tool call counts as a call");
    assert_eq!(verdict.call.resource, "mcp:get_developer");
    assert!(!verdict.call.api.is_empty() && !verdict.call.application.is_empty());
    let Decision::Forward(forwarding) = verdict.decision else {
        panic!("forwarded");
    };
    let backend = &forwarding.backend;
    assert_eq!(backend.method.as_deref(), Some("GET"));
    assert_eq!(backend.targets[0].path_with_query, "/base/devs/al%20ice");
    assert_eq!(backend.body.as_deref(), Some(&b""[..]));
    for name in [
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "content-type",
    ] {
        assert!(backend.removed_headers.iter().any(|n| n == name), "{name}");
    }
    assert!(!backend.removed_headers.iter().any(|n| n == "authorization"));
    assert!((backend.added_headers.iter()).any(|(n, v)| n == "accept" && v == b"application/json"));
    let authorization: Vec<_> = (backend.added_headers.iter())
        .filter(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_slice())
        .collect();
    assert_eq!(
        authorization,
        [b"Basic dTpw"],
        "the endpoint's credentials, never the token"
    );

    let shape = forwarding
        .answer_shape()
        .expect("the tool's result is made");
    let shape = AnswerShape::read(&shape).expect("read back");
    let answer = Response::new(200, "application/json", "{\"ok\":true}");
    let (made, code) =
        (world.gateway).shape_answer(&world.host, &message, &shape, Some(answer), ("", ""));
    assert_eq!(code, 0);
    assert_eq!(
        (made.status, json_of(&made)),
        (served.status, json_of(&served))
    );
    let result = &json_of(&made)["result"];
    assert_eq!(
        (
            &result["resultType"],
            &result["isError"],
            &result["structuredContent"]
        ),
        (&json!("complete"), &json!(false), &json!({"ok": true}))
    );
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "{\"ok\":true}"}])
    );
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].is_string());

    // What the host is given to make the result itself makes the same.
    let tool = forwarding.tool_answered_by_host().expect("no out flow");
    let id = serde_json::from_str(&tool.reply.id.to_string()).unwrap();
    let reply = crate::mcp::Reply {
        era: tool.reply.era,
        id,
    };
    let by_host = crate::mcp::tool_result(&reply, tool.structured, 200, b"{\"ok\":true}");
    assert_eq!(by_host, made);

    let (failed, code) =
        (world.gateway).backend_failed(&world.host, &message, true, false, shape.tool.as_ref());
    let failed = json_of(&failed);
    assert_eq!(
        (failed["id"].as_u64(), failed["error"]["code"].as_i64()),
        (Some(7), Some(-32000))
    );
    assert_eq!(failed["error"]["data"]["code"], code);
    let (too_long, _) = (world.gateway).shape_answer(&world.host, &message, &shape, None, ("", ""));
    assert_eq!(json_of(&too_long)["error"]["code"], -32000);
}

#[test]
fn a_forwarding_host_answers_the_servers_own_messages_and_refusals_at_once() {
    let mut world = world();
    let bearer = world.bearer("app-1");
    let listed = decided_with_body(
        &mut world,
        &modern_message(&bearer, 1, "tools/list", json!({})),
    );
    assert!(listed.limits.is_empty());
    let Decision::Respond(answer) = listed.decision else {
        panic!("answered");
    };
    assert_eq!(tool_names(&answer), ["get_developer", "add_repo"]);

    // The arguments are checked before anything is forwarded.
    let bad = json!({"name": "get_developer", "arguments": {"username": 7}});
    let refused = decided_with_body(&mut world, &modern_message(&bearer, 2, "tools/call", bad));
    let Decision::Respond(answer) = refused.decision else {
        panic!("answered");
    };
    assert!(json_of(&answer)["error"].is_object() || json_of(&answer)["result"]["isError"] == true);

    // Another method is answered from the head.
    let head = request("GET", ENDPOINT, &[("authorization", &bearer)], b"");
    let verdict = world.gateway.decide(&world.host, &head);
    let Decision::Respond(answer) = verdict.decision else {
        panic!("answered");
    };
    assert_eq!(answer.status, 405);

    // A tool call's refusal by a tier is a JSON-RPC error with WSO2's code.
    let tool = AnswerShape::tool_of(Some(br#"{"tool":{"reply":{"era":"Stateless","id":3},"structured":false,"method":"GET","path_with_query":"/x"}}"#))
        .expect("a tool's shape");
    let fault = crate::throttle::refusal(crate::throttle::LimitKind::ApplicationTier, 0);
    let refusal = json_of(&crate::gateway::tool_refusal(&tool.reply, &fault));
    assert_eq!(refusal["error"]["data"]["code"], 900_803);
    assert_eq!(refusal["id"], 3);
    assert!(AnswerShape::tool_of(Some(b"not a shape")).is_none());
}

#[test]
fn a_forwarding_host_reads_no_message_of_a_caller_without_a_token() {
    let mut world = world();
    let head = request(
        "POST",
        ENDPOINT,
        &[("content-type", "application/json")],
        b"",
    );
    let verdict = world.gateway.decide(&world.host, &head);
    let Decision::Respond(answer) = verdict.decision else {
        panic!("refused from the head");
    };
    assert_eq!(answer.status, 401);
    assert!(
        header(&answer.headers, "www-authenticate")
            .is_some_and(|c| c.contains("resource_metadata"))
    );
}

#[test]
fn form_arguments_make_a_url_encoded_body_and_hop_by_hop_headers_are_left_out() {
    let tool = McpTool {
        name: "login".into(),
        description: "Signs in".into(),
        method: "POST".into(),
        template: "/login".into(),
        scope: None,
        arguments: vec![
            argument("user", ArgumentLocation::Form, true),
            argument("remember", ArgumentLocation::Form, false),
            argument("tags", ArgumentLocation::Form, false),
            argument("Transfer-Encoding", ArgumentLocation::Header, false),
            argument("host", ArgumentLocation::Header, false),
            argument("x-trace-me", ArgumentLocation::Header, false),
        ],
        input_schema: json!({"type": "object"}).to_string(),
        output_schema: None,
    };
    let client = request("POST", ENDPOINT, &[("authorization", "Bearer t")], b"");
    let arguments = json!({"user": "al ice&x=1", "remember": true, "tags": ["a", "b"],
        "Transfer-Encoding": "chunked", "host": "evil.example", "x-trace-me": "yes"});
    let operation = crate::mcp::operation_request(&tool, &arguments, "/dev/v1", &client);
    assert_eq!(operation.path_with_query, "/dev/v1/login");
    assert_eq!(
        String::from_utf8(operation.body).unwrap(),
        "user=al%20ice%26x%3D1&remember=true&tags=a%2Cb"
    );
    assert_eq!(
        header(&operation.headers, "content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // A header argument the gateway sets itself never goes out as the argument says.
    assert_eq!(header(&operation.headers, "x-trace-me"), Some("yes"));
    assert_eq!(header(&operation.headers, "transfer-encoding"), None);
    assert_eq!(header(&operation.headers, "host"), None);
}

#[test]
fn a_long_tool_list_comes_in_pages_whose_cursors_any_instance_takes() {
    let mut world = World::new();
    let tool = |n: usize| McpTool {
        name: format!("tool_{n:03}"),
        description: "One of many".into(),
        method: "GET".into(),
        template: "/devs/{username}".into(),
        // Every seventh needs a scope the token lacks: pages count what the caller sees.
        scope: n.is_multiple_of(7).then(|| "repos_read".into()),
        arguments: vec![argument("username", ArgumentLocation::Path, true)],
        input_schema: json!({"type": "object"}).to_string(),
        output_schema: None,
    };
    let tools: Vec<McpTool> = (0..130).map(tool).collect();
    world.manifest.apis[0].route.mcp = Some(McpServer { tools });
    world.manifest.meta.gateway_urls = vec!["http://gw.example".into()];
    assert_eq!(world.publish().status, 200);
    let bearer = world.bearer("app-1");
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Value::Null => json!({}),
            cursor => json!({"cursor": cursor}),
        };
        // A fresh instance for every page, as Spin runs them.
        world.gateway = Default::default();
        let listed = modern(&mut world, &bearer, pages + 1, "tools/list", params);
        let result = &json_of(&listed)["result"];
        let names = tool_names(&listed);
        assert!(names.len() <= 50);
        seen.extend(names);
        pages += 1;
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    let expected: Vec<String> = (0..130)
        .filter(|n: &usize| !n.is_multiple_of(7))
        .map(|n| format!("tool_{n:03}"))
        .collect();
    assert_eq!((pages, seen), (3, expected));

    for forged in ["x", "dG9vbHM6OTk5", "dG9vbHM6LTE", ""] {
        let refused = modern(
            &mut world,
            &bearer,
            9,
            "tools/list",
            json!({"cursor": forged}),
        );
        assert_eq!(json_of(&refused)["error"]["code"], -32602, "{forged}");
    }
}
