//! WebSocket APIs (`type: WS`) end to end: published with a `ws://` endpoint, reached
//! through edge-gateway's host forwarding with a token in the `Authorization` header or
//! the `access_token` query parameter, their messages counted against the tiers; and
//! refused plainly on the component path, where `wasi:http` cannot upgrade.

use futures_util::{SinkExt as _, StreamExt as _};
use harness::Backend;
use harness::stack::TIER_SCOPES;
use harness::stack::{Launch, Stack};
use harness::websocket::{EchoSocketBackend, Message, Socket, connect, refusal, tungstenite};
use harness::{PUBLISHER, fault_code};
use serde_json::{Value, json};
use tungstenite::protocol::frame::coding::CloseCode;

/// The largest message the gateways of these scenarios relay.
const MAX_MESSAGE: usize = 4096;

/// The `endpointConfig` of a WebSocket API whose endpoints are `url`.
fn ws_endpoints(url: &str) -> Value {
    json!(
        json!({
            "production_endpoints": {"url": url, "config": null},
            "sandbox_endpoints": {"url": url, "config": null},
            "endpoint_type": "http"
        })
        .to_string()
    )
}

/// Publishes the WebSocket API `name` in front of `backend`, offering `tiers`; its
/// `maxTps` leaves the tiers alone to count messages (the spec's record allows 1,000 a
/// second, which the echo exchange exceeds).
async fn publish_chat(
    stack: &Stack,
    name: &str,
    backend: &EchoSocketBackend,
    tiers: &[&str],
) -> String {
    stack
        .api(
            name,
            json!({"type": "WS", "tiers": tiers,
                   "maxTps": {"production": 1_000_000, "sandbox": 1_000_000},
                   "endpointConfig": ws_endpoints(&format!("{}/echo", backend.url))}),
            &["Publish"],
        )
        .await
}

/// A stack whose gateway has `settings` besides the defaults.
async fn launch(database: Backend, settings: &[(&'static str, String)]) -> Stack {
    Launch {
        database,
        gateway: settings,
        ..Launch::default()
    }
    .start()
    .await
}

/// A token of a new application `name` without subscriptions, as `Authorization`.
async fn unsubscribed_bearer(stack: &Stack, name: &str) -> (String, String) {
    let app = stack
        .steps()
        .subscribed_application(name, "Unlimited", &[])
        .await
        .unwrap();
    let token = stack.app_token(&app.keys.key, &app.keys.secret, &[]).await;
    (app.id, format!("Bearer {token}"))
}

/// The gateway's `ws://` URL for `path`.
fn ws_url(stack: &Stack, path: &str) -> String {
    format!(
        "{}{path}",
        stack.gateway.url.replacen("http://", "ws://", 1)
    )
}

/// Connects once the gateway has the API (the manifest reaches it shortly after).
async fn connect_eventually(url: &str, headers: &[(&str, &str)]) -> Socket {
    let mut tries = 0;
    loop {
        match connect(url, headers).await {
            Ok(socket) => return socket,
            Err(failed) => {
                tries += 1;
                assert!(tries < 150, "no WebSocket connection: {failed}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// The next message that is not a ping or pong.
async fn next(socket: &mut Socket) -> Message {
    loop {
        match socket.next().await {
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(message)) => return message,
            other => panic!("the connection ended without a message: {other:?}"),
        }
    }
}

/// The close code the gateway ends a connection with, reading past echoes.
async fn close_code(socket: &mut Socket) -> (u16, String) {
    loop {
        match next(socket).await {
            Message::Close(Some(frame)) => {
                return (u16::from(frame.code), frame.reason.to_string());
            }
            Message::Close(None) => panic!("closed without a code"),
            _ => continue,
        }
    }
}

/// The handshake's refusal: status and WSO2 fault code.
async fn refused(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let failed = connect(url, headers)
        .await
        .expect_err("the handshake is refused");
    let (status, body) = refusal(&failed);
    (status, fault_code(&body).to_string())
}

pub async fn websocket_apis_on_the_host_path(database: Backend) {
    let settings = [("APIM_WS_MAX_MESSAGE_BYTES", MAX_MESSAGE.to_string())];
    let stack = launch(database, &settings).await;
    let backend = EchoSocketBackend::start().await;
    let api = publish_chat(&stack, "Chat", &backend, &["Unlimited"]).await;
    // The record keeps its type and ws:// endpoint.
    let record = stack
        .mgmt
        .get(&format!("{PUBLISHER}/apis/{api}"), &stack.admin)
        .await
        .expect(200);
    assert_eq!(record.body["type"], "WS");
    let (_, key, secret, _) = stack.application("Chatter", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let bearer = format!("Bearer {token}");
    let url = ws_url(&stack, "/chat/v1.0.0/rooms/general");
    let mut socket = connect_eventually(&url, &[("authorization", &bearer)]).await;

    // Refused handshakes, each beside the one that works: no token, a bogus one, an
    // application without a subscription.
    assert_eq!(refused(&url, &[]).await, (401, "900902".into()));
    let bogus = refused(&url, &[("authorization", "Bearer 0a1b2c3d-bogus-token")]).await;
    assert_eq!(bogus, (401, "900901".into()));
    let (_, unsubscribed) = unsubscribed_bearer(&stack, "Loner").await;
    assert_eq!(
        refused(&url, &[("authorization", &unsubscribed)]).await,
        (403, "900908".into())
    );

    // 10,000 messages there and back, in batches of 100.
    for batch in 0..100 {
        for n in 0..100 {
            socket
                .send(Message::text(format!("message {}", batch * 100 + n)))
                .await
                .unwrap();
        }
        for n in 0..100 {
            let expected = format!("message {}", batch * 100 + n);
            assert_eq!(next(&mut socket).await, Message::text(expected));
        }
    }
    socket.send(Message::binary(vec![7u8; 16])).await.unwrap();
    assert_eq!(next(&mut socket).await, Message::binary(vec![7u8; 16]));

    // The backend got the gateway's handshake: the path under the endpoint's, never the
    // client's token (the backend's own credentials, from the record's
    // endpointSecurity, instead).
    let handshake = backend.handshakes().pop().unwrap();
    assert_eq!(handshake.path_with_query, "/echo/rooms/general");
    assert_eq!(
        handshake.header("authorization"),
        Some("Basic YmFja2VuZDpiYWNrZW5kLXNlY3JldA==")
    );
    assert!(
        !handshake.headers.iter().any(|(_, v)| v.contains(&token)),
        "{handshake:?}"
    );
    assert!(handshake.header("x-forwarded-for").is_some());

    // The token in the query: admitted, and the backend sees the query without it.
    let query_url = ws_url(
        &stack,
        &format!("/chat/v1.0.0/rooms/general?access_token={token}&lang=en"),
    );
    let mut by_query = connect(&query_url, &[]).await.unwrap();
    by_query.send(Message::text("hello")).await.unwrap();
    assert_eq!(next(&mut by_query).await, Message::text("hello"));
    let handshake = backend.handshakes().pop().unwrap();
    assert_eq!(handshake.path_with_query, "/echo/rooms/general?lang=en");
    assert!(
        !handshake.headers.iter().any(|(_, v)| v.contains(&token)),
        "{handshake:?}"
    );
    let bogus_query = ws_url(&stack, "/chat/v1.0.0?access_token=bogus");
    assert_eq!(refused(&bogus_query, &[]).await.0, 401);

    // Messages up to the limit pass; a longer one closes the connection with 1009.
    let largest = "x".repeat(MAX_MESSAGE);
    by_query.send(Message::text(largest.clone())).await.unwrap();
    assert_eq!(next(&mut by_query).await, Message::text(largest));
    by_query
        .send(Message::text("x".repeat(MAX_MESSAGE + 1)))
        .await
        .unwrap();
    assert_eq!(
        close_code(&mut by_query).await.0,
        u16::from(CloseCode::Size)
    );
    // The other connection is not affected.
    socket.send(Message::text("still here")).await.unwrap();
    assert_eq!(next(&mut socket).await, Message::text("still here"));
    socket.close(None).await.unwrap();

    // A handshake to an HTTP API is refused, not sent on as a plain GET; a plain GET to a
    // WebSocket API likewise.
    let http_api = stack.api("Plain", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack
        .application("PlainApp", "Unlimited", &[&http_api])
        .await;
    let plain = stack.app_token(&key, &secret, &[]).await;
    let path = "/plain/v1.0.0/devs/alice";
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &plain, |r| {
        r.status == 200
    })
    .await;
    let hits = || stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let before = hits();
    let bearer_plain = format!("Bearer {plain}");
    let to_http = refused(&ws_url(&stack, path), &[("authorization", &bearer_plain)]).await;
    assert_eq!(to_http.0, 400);
    assert_eq!(
        hits(),
        before,
        "the handshake never reached the HTTP backend"
    );
    let get = stack.gw.get("/chat/v1.0.0/rooms/general", &token).await;
    assert_eq!(get.status, 400, "{}", get.body);
}

pub async fn websocket_messages_count_against_the_tiers(database: Backend) {
    // Rechecked often, so that a revoked token's connection closes soon.
    let settings = [("APIM_WS_RECHECK_MS", "200".to_string())];
    let stack = launch(database, &settings).await;
    let admin = stack
        .mgmt
        .login("admin", harness::ADMIN_PASSWORD, TIER_SCOPES)
        .await;
    // Five requests an hour: the handshake and four messages.
    let tier = json!({"name": "Chatty", "description": "Allows 5 requests an hour",
                      "tierPlan": "FREE", "requestCount": 5, "unitTime": 3_600_000,
                      "stopOnQuotaReach": true, "attributes": {}});
    stack
        .mgmt
        .post_json(&format!("{PUBLISHER}/tiers/api"), &admin, &tier)
        .await
        .expect(201);
    let backend = EchoSocketBackend::start().await;
    let api = publish_chat(&stack, "Metered", &backend, &["Chatty", "Unlimited"]).await;
    let (app, token) = unsubscribed_bearer(&stack, "Metered").await;
    stack.steps().subscribe(&app, &api, "Chatty").await.unwrap();
    let url = ws_url(&stack, "/metered/v1.0.0");
    let mut socket = connect_eventually(&url, &[("authorization", &token)]).await;
    for n in 1..=4 {
        socket.send(Message::text(format!("m{n}"))).await.unwrap();
        assert_eq!(next(&mut socket).await, Message::text(format!("m{n}")));
    }
    socket.send(Message::text("one too many")).await.unwrap();
    let (code, reason) = close_code(&mut socket).await;
    assert_eq!(code, 4003, "{reason}");
    assert_eq!(reason, "Websocket frame throttled out");
    // The allowance is spent: the next handshake is refused as a call would be.
    assert_eq!(
        refused(&url, &[("authorization", &token)]).await,
        (429, "900804".into())
    );

    // An unmetered subscription; its token revoked while the connection is open closes
    // it with 4001.
    let (_, key, secret, _) = stack.application("Free", "Unlimited", &[&api]).await;
    let free = stack.app_token(&key, &secret, &[]).await;
    let mut socket =
        connect_eventually(&url, &[("authorization", &format!("Bearer {free}"))]).await;
    socket.send(Message::text("before")).await.unwrap();
    assert_eq!(next(&mut socket).await, Message::text("before"));
    let revoked = stack
        .gw
        .send(
            reqwest::Client::new()
                .post(format!("{}/revoke", stack.gw.base))
                .basic_auth(&key, Some(&secret))
                .form(&[("token", free.as_str())]),
        )
        .await;
    assert_eq!(revoked.status, 200);
    let (code, reason) = close_code(&mut socket).await;
    assert_eq!((code, reason.as_str()), (4001, "Invalid Credentials"));
}

pub async fn websocket_handshakes_are_refused_on_the_component_path(database: Backend) {
    let settings = [("APIM_HOST_FORWARDING", "false".to_string())];
    let stack = launch(database, &settings).await;
    let backend = EchoSocketBackend::start().await;
    let api = publish_chat(&stack, "Chat", &backend, &["Unlimited"]).await;
    let (_, key, secret, _) = stack.application("Chatter", "Unlimited", &[&api]).await;
    let token = format!("Bearer {}", stack.app_token(&key, &secret, &[]).await);
    let url = ws_url(&stack, "/chat/v1.0.0");
    // wasi:http cannot upgrade: 501 with WSO2's fault body saying so, once the API and
    // its subscription are known (404, then 403 900908, while the API's entry has
    // arrived before its subscription's), and the backend never sees the handshake.
    let mut tries = 0;
    let (status, body) = loop {
        let failed = connect(&url, &[("authorization", &token)])
            .await
            .expect_err("no upgrade on the component path");
        let (status, body) = refusal(&failed);
        if !matches!(status, 403 | 404) {
            break (status, body);
        }
        tries += 1;
        assert!(
            tries < 150,
            "the API never reached the gateway: {status} {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(status, 501, "{body}");
    assert!(body.contains("cannot upgrade connections"), "{body}");
    assert!(backend.handshakes().is_empty());
    // An HTTP API beside it still serves.
    let http_api = stack.api("Plain", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack
        .application("PlainApp", "Unlimited", &[&http_api])
        .await;
    let plain = stack.app_token(&key, &secret, &[]).await;
    harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        "/plain/v1.0.0/devs/a",
        &plain,
        |r| r.status == 200,
    )
    .await;
}

pub async fn websocket_connections_close_with_1001_when_the_gateway_stops(database: Backend) {
    let stack = launch(database, &[]).await;
    let backend = EchoSocketBackend::start().await;
    let api = publish_chat(&stack, "Leaving", &backend, &["Unlimited"]).await;
    let (_, key, secret, _) = stack.application("Leaver", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let url = ws_url(&stack, "/leaving/v1.0.0");
    let mut socket =
        connect_eventually(&url, &[("authorization", &format!("Bearer {token}"))]).await;
    socket.send(Message::text("before")).await.unwrap();
    assert_eq!(next(&mut socket).await, Message::text("before"));

    // SIGTERM: while kept-alive connections have their time (a second by default), the
    // relay goes on; then it closes with 1001 rather than being cut.
    assert!(
        stack.gateway.begin_stopping(),
        "SIGTERM reaches the gateway"
    );
    socket.send(Message::text("during")).await.unwrap();
    assert_eq!(next(&mut socket).await, Message::text("during"));
    let closed = tokio::time::timeout(std::time::Duration::from_secs(10), close_code(&mut socket));
    let (code, reason) = closed.await.expect("closed within the drain");
    assert_eq!((code, reason.as_str()), (1001, "Going away"));
}
