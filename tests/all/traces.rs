//! Traces: W3C `traceparent` through the gateway to backends, on both of
//! edge-gateway's forwarding paths, and the spans both planes export over OTLP, received
//! by a small OTLP/HTTP receiver of the test's own and checked link by link.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::stack::{Launch, Stack};
use harness::{Reply, eventually, wait_until};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use reqwest::Method;
use serde_json::{Value, json};

/// The client's trace and span in the tests' `traceparent`.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// A span as the receiver got it (ids in hex, `parent` empty for a root).
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    links: Vec<String>,
}

/// An OTLP/HTTP receiver (`POST /v1/traces`, protobuf) on a free port.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start() -> Self {
        let spans: Arc<Mutex<Vec<Received>>> = Arc::default();
        let kept = spans.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                    kept.lock().unwrap().extend(received(request));
                    ([("content-type", "application/x-protobuf")], Vec::new())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, spans, task }
    }

    /// The settings that make a process export here, soon after each span ends.
    fn settings(&self) -> [(&'static str, String); 2] {
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", self.url.clone()),
            ("OTEL_BSP_SCHEDULE_DELAY", "50".to_string()),
        ]
    }

    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits for the first span `matches` accepts. Spans come in batches every few
    /// seconds, after the work they describe (a compile waits for its debounce), which
    /// a CI machine running every test at once may take well beyond 20 seconds to do.
    async fn span(&self, what: &str, matches: impl Fn(&Received) -> bool) -> Received {
        wait_until(what, Duration::from_secs(60), async || {
            self.spans().iter().any(&matches)
        })
        .await;
        self.spans().into_iter().find(matches).unwrap()
    }
}

/// The spans of an export request, with their service's name.
fn received(request: ExportTraceServiceRequest) -> Vec<Received> {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|resource| &resource.attributes)
            .find(|attribute| attribute.key == "service.name")
            .and_then(|attribute| attribute.value.as_ref())
            .map(|value| format!("{:?}", value.value))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    links: span.links.iter().map(|link| hex(&link.span_id)).collect(),
                });
            }
        }
    }
    spans
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `GET path` with `headers`; the backend's echo of the request.
async fn call(stack: &Stack, path: &str, token: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = stack.gw.request(Method::GET, path, token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    stack.gw.send(request).await.expect(200)
}

/// The backend's `traceparent` as (trace id, parent span id), and its `tracestate`.
fn backend_trace(echo: &Reply) -> ((String, String), Option<String>) {
    let headers = &echo.body["headers"];
    let parent = headers["traceparent"]
        .as_str()
        .expect("traceparent sent on");
    let parsed = apim_http::trace::TraceParent::parse(parent.as_bytes()).expect("valid");
    let ids = (
        String::from_utf8(parsed.trace_id_hex().to_vec()).unwrap(),
        format!("{:016x}", parsed.span_id),
    );
    (ids, headers["tracestate"].as_str().map(str::to_string))
}

/// An API, an application subscribed to it and its token, the API answering; the path
/// to call.
async fn reachable_api(stack: &Stack, name: &str) -> (String, String) {
    let api = stack.api(name, json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application(name, "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = format!("/{}/v1.0.0/devs/alice", name.to_lowercase());
    eventually(&stack.gw, Method::GET, &path, &token, |r| r.status == 200).await;
    (path, token)
}

/// Backends see the client's trace with the gateway's span as parent, a new trace when
/// the client sent none or a value that is not valid (never the value itself, nor its
/// `tracestate`); the access log names the trace.
async fn traceparent_reaches_the_backend(stack: &Stack, path: &str, token: &str) {
    let client = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let echo = call(
        stack,
        path,
        token,
        &[("traceparent", &client), ("tracestate", "v=1")],
    )
    .await;
    let ((trace, parent), state) = backend_trace(&echo);
    assert_eq!(trace, CLIENT_TRACE);
    assert_ne!(
        parent, CLIENT_SPAN,
        "the gateway's span is the backend's parent"
    );
    assert_eq!(state.as_deref(), Some("v=1"));

    let logged_from = stack.gateway.output().len();
    let echo = call(stack, path, token, &[]).await;
    let ((fresh, _), _) = backend_trace(&echo);
    assert_ne!(fresh, CLIENT_TRACE);
    wait_until("the access-log line", Duration::from_secs(5), async || {
        stack.gateway.output()[logged_from..].contains(&fresh)
    })
    .await;
    let logged = stack.gateway.output()[logged_from..]
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["trace_id"] == fresh.as_str());
    assert!(logged.is_some(), "the access log names the request's trace");

    let hostile = [
        format!("00-{}-{CLIENT_SPAN}-01", CLIENT_TRACE.to_uppercase()),
        format!("00-{CLIENT_TRACE}-0000000000000000-01"),
        format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01-and-more"),
        "garbage".to_string(),
    ];
    for value in &hostile {
        let Ok(header) = reqwest::header::HeaderValue::from_str(value) else {
            continue;
        };
        let request = stack
            .gw
            .request(Method::GET, path, token)
            .header("traceparent", header)
            .header("tracestate", "forged=1");
        let echo = stack.gw.send(request).await.expect(200);
        let ((trace, _), state) = backend_trace(&echo);
        assert_ne!(trace, CLIENT_TRACE, "{value} was not replaced");
        assert_eq!(state, None, "{value}: its tracestate went on");
        let forwarded = echo.body["headers"]["traceparent"].as_str().unwrap();
        assert_ne!(forwarded, value);
    }
}

/// With host forwarding: the traceparent rules, and both planes' spans. The gateway's
/// request span is the client span's child, `decide` and `backend call` the request
/// span's, and the backend's parent is `backend call`; a change's request span is the
/// parent of the compile that took it in, whose span is the parent of its delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_run_from_the_client_through_both_planes() {
    let receiver = Receiver::start().await;
    let settings = receiver.settings();
    let stack = Launch {
        gateway: &settings,
        control_plane: &settings,
        ..Launch::default()
    }
    .start()
    .await;
    let (path, token) = reachable_api(&stack, "Traced").await;
    traceparent_reaches_the_backend(&stack, &path, &token).await;

    let client = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let echo = call(&stack, &path, &token, &[("traceparent", &client)]).await;
    let ((_, backend_parent), _) = backend_trace(&echo);
    // Earlier calls were in the client's trace too: this call's spans hang off its
    // backend call, whose id the backend got.
    let backend = receiver
        .span("backend call", |s| s.span_id == backend_parent)
        .await;
    assert_eq!(backend.name, "backend call");
    let request = receiver
        .span("the gateway's request span", |s| {
            s.span_id == backend.parent
        })
        .await;
    assert_eq!(
        (request.trace_id.as_str(), request.parent.as_str()),
        (CLIENT_TRACE, CLIENT_SPAN),
        "the client's span is the request span's parent"
    );
    assert!(request.service.contains("edge-gateway"), "{request:?}");
    assert_eq!(request.name, "GET /devs/{username}");
    let decide = receiver
        .span("decide", |s| {
            s.parent == request.span_id && s.name == "decide"
        })
        .await;
    assert_eq!(decide.trace_id, CLIENT_TRACE);

    // A change through the control plane: publish an API, in a trace of the caller's.
    let api = stack.api("TracedChange", json!({}), &[]).await;
    let change_trace = "0af7651916cd43dd8448eb211c80319c";
    let change_parent = "b7ad6b7169203331";
    let publish = stack
        .mgmt
        .request(
            Method::POST,
            &format!("/api/am/publisher/v0.14/apis/change-lifecycle?apiId={api}&action=Publish"),
            &stack.admin,
        )
        .header(
            "traceparent",
            format!("00-{change_trace}-{change_parent}-01"),
        );
    stack.mgmt.send(publish).await.expect(200);
    let changed = receiver
        .span("the change's request span", |s| {
            s.trace_id == change_trace && s.parent == change_parent
        })
        .await;
    assert!(changed.service.contains("control-plane"), "{changed:?}");
    assert_eq!(
        changed.name,
        "POST /api/am/publisher/v0.14/apis/change-lifecycle"
    );
    let compile = receiver
        .span("the compile of the change", |s| {
            s.name == "compile manifest"
                && (s.parent == changed.span_id || s.links.contains(&changed.span_id))
        })
        .await;
    let delivery = receiver
        .span("its delivery", |s| {
            s.name == "deliver manifest" && s.parent == compile.span_id
        })
        .await;
    assert_eq!(delivery.trace_id, compile.trace_id);
}

/// Through the component's `wasi:http` handler (edge-gateway without host forwarding),
/// the same rules; and the component making the span itself, as on Spin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traceparent_reaches_the_backend_through_the_component() {
    let settings = [("APIM_HOST_FORWARDING", "false".to_string())];
    let stack = Stack::start_with(&[], &settings).await;
    let (path, token) = reachable_api(&stack, "Handled").await;
    traceparent_reaches_the_backend(&stack, &path, &token).await;

    let own = Stack::start_with(&["trace_spans=own"], &settings).await;
    let (path, token) = reachable_api(&own, "Spun").await;
    traceparent_reaches_the_backend(&own, &path, &token).await;
}
