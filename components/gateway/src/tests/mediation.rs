//! An API's sequences at the gateway: the in flow changes what the backend gets, the out
//! flow what the client gets, the fault flow the answer to a failed backend; the same on
//! the handler's forwarding and in the decision a forwarding host carries out.

use apim_manifest::mediation::{BodyPath, CallFact, Media, Mediation, PathPart, Step, Value};

use super::*;
use crate::gateway::{Decision, Forwarding};

fn set(name: &str, value: Value) -> Step {
    Step::SetHeader {
        name: name.into(),
        value,
    }
}

fn text(value: &str) -> Value {
    Value::Text(value.into())
}

/// A world whose API runs `plan`, and whose backend answers with `x-internal` and
/// `server` headers.
fn mediated(plan: Mediation) -> World {
    let mut world = World::new();
    world.host.backend = Box::new(|_| Ok(backend_answer()));
    world.manifest.apis[0].route.mediation = Some(plan);
    assert_eq!(world.publish().status, 200);
    world
}

/// The backend's answer in [`mediated`] worlds.
fn backend_answer() -> Response {
    let mut answer = Response::new(200, "application/json", "{}");
    answer
        .headers
        .push(("x-internal".into(), b"secret-host".to_vec()));
    answer
        .headers
        .push(("server".into(), b"legacy/1.0".to_vec()));
    answer
}

/// The headers the backend got with the last call.
fn sent_headers(world: &World) -> Headers {
    world
        .host
        .sent
        .borrow()
        .last()
        .expect("sent")
        .headers
        .clone()
}

/// What a forwarding host gets for `head`: once the decision asks for the body, the
/// decision made with it (the body `head` holds).
pub(super) fn decided_with_body(world: &mut World, head: &Request) -> Verdict {
    let streamed = Request {
        body: Vec::new(),
        ..head.clone()
    };
    let first = world.gateway.decide(&world.host, &streamed);
    let Decision::ReadBody(limit) = first.decision else {
        return first;
    };
    assert!(
        first.limits.is_empty(),
        "nothing counts before the body is read"
    );
    assert!(head.body.len() as u64 <= limit);
    let moment = Moment {
        manifest_epoch: 0,
        now_ms: NOW_SECS * 1000,
    };
    world.gateway.decide_with_body(&world.host, head, moment)
}

fn in_flow() -> Mediation {
    Mediation {
        request: vec![
            set("x-tenant", text("acme")),
            Step::RemoveHeader {
                name: "x-debug".into(),
            },
            Step::SetProperty {
                name: "agent".into(),
                value: Value::Header("user-agent".into()),
            },
            set("x-agent", Value::Property("agent".into())),
            set("x-page", Value::Query("page".into())),
            set("x-api", Value::Call(CallFact::ApiName)),
            set("x-app", Value::Call(CallFact::ApplicationId)),
            set("x-note", Value::Query("note".into())),
            set("authorization", text("Basic b3duOmNyZWRz")),
            Step::Filter {
                source: Value::Header("x-env".into()),
                regex: "^(?:prod|live)$".into(),
                then: vec![set("x-branch", text("then"))],
                otherwise: vec![set("x-branch", text("else"))],
            },
        ],
        ..Mediation::default()
    }
}

#[test]
fn the_in_flow_changes_what_the_backend_gets_on_both_paths() {
    let mut world = mediated(in_flow());
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("x-debug", "1"),
        ("x-tenant", "forged"),
        ("user-agent", "curl/8"),
        ("x-env", "live"),
        ("x-note", "spoofed"),
    ];
    // A query parameter decoded into a line break is not a header's value.
    let path = "/dev/v1/devs/alice/repos?page=2&note=a%0D%0Ab";
    let response = world.call("GET", path, &client);
    assert_eq!(response.status, 200);
    let sent = sent_headers(&world);
    let values = |name: &str| -> Vec<&str> {
        sent.iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| std::str::from_utf8(v).unwrap())
            .collect()
    };
    assert_eq!(values("x-tenant"), ["acme"], "set replaces the client's");
    assert!(values("x-debug").is_empty());
    assert_eq!(values("x-agent"), ["curl/8"]);
    assert_eq!(values("x-page"), ["2"]);
    assert_eq!(values("x-api"), ["Dev"]);
    assert_eq!(values("x-app"), ["app-1"]);
    assert!(
        values("x-note").is_empty(),
        "a value that cannot be set takes the client's away"
    );
    assert_eq!(
        values("authorization"),
        ["Basic b3duOmNyZWRz"],
        "the sequence's credentials replace the endpoint's"
    );
    assert_eq!(values("x-branch"), ["then"]);
    assert_eq!(values("x-forwarded-for").len(), 1, "the gateway's own stay");

    // The decision says the same for a host that forwards.
    let head = request("GET", path, &client, b"");
    let forwarding = forwarded(&mut world, &head);
    let outbound = forwarding
        .backend
        .outbound(&forwarding.backend.targets[0], &head);
    let mut decided = outbound.headers.clone();
    let mut handled = sent.clone();
    decided.sort();
    handled.sort();
    assert_eq!(decided, handled);
    for name in ["x-debug", "x-tenant", "authorization"] {
        assert!(
            forwarding.backend.removed_headers.iter().any(|n| n == name),
            "{name} in {:?}",
            forwarding.backend.removed_headers
        );
    }

    // Without the header the filter reads, its other branch.
    world.call("GET", path, &client[..4]);
    assert_eq!(header(&sent_headers(&world), "x-branch"), Some("else"));
}

#[test]
fn the_out_flow_changes_what_the_client_gets_and_reads_the_in_flows_properties() {
    let plan = Mediation {
        request: vec![Step::SetProperty {
            name: "accept".into(),
            value: Value::Header("accept".into()),
        }],
        response: vec![
            Step::RemoveHeader {
                name: "x-internal".into(),
            },
            set("server", text("gateway")),
            set("x-asked", Value::Property("accept".into())),
            Step::RemoveHeader {
                name: "access-control-allow-origin".into(),
            },
        ],
        ..Mediation::default()
    };
    let mut world = mediated(plan);
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("accept", "application/xml"),
        ("origin", "http://site"),
    ];
    let response = world.call("GET", "/dev/v1/devs/alice/repos", &client);
    assert_eq!(response.status, 200);
    assert_eq!(header(&response.headers, "x-internal"), None);
    assert_eq!(header(&response.headers, "server"), Some("gateway"));
    assert_eq!(
        header(&response.headers, "x-asked"),
        Some("application/xml")
    );
    assert_eq!(
        header(&response.headers, "access-control-allow-origin"),
        None,
        "the out flow runs after CORS"
    );
    let head = request("GET", "/dev/v1/devs/alice/repos", &client, b"");
    let forwarding = forwarded(&mut world, &head);
    // Every name the flow changed comes off the backend's answer; those it set go back
    // with their new values.
    assert_eq!(
        forwarding.response_removed,
        [
            "x-internal",
            "server",
            "x-asked",
            "access-control-allow-origin"
        ]
    );
    assert_eq!(
        header(&forwarding.response_headers, "server"),
        Some("gateway")
    );
}

#[test]
fn the_fault_flow_marks_the_answer_to_a_failed_backend() {
    let plan = Mediation {
        request: vec![Step::SetProperty {
            name: "agent".into(),
            value: Value::Header("user-agent".into()),
        }],
        fault: vec![
            set("x-fault-by", Value::Call(CallFact::ApiName)),
            set("x-agent", Value::Property("agent".into())),
        ],
        ..Mediation::default()
    };
    let mut world = mediated(plan);
    world.host.backend = Box::new(|_| Err(SendError::Unreachable("refused".into())));
    let bearer = world.bearer("app-1");
    let client = [("authorization", bearer.as_str()), ("user-agent", "curl/8")];
    let response = world.call("GET", "/dev/v1/devs/alice/repos", &client);
    assert_eq!(code(&response), "101503");
    assert_eq!(header(&response.headers, "x-fault-by"), Some("Dev"));
    assert_eq!(header(&response.headers, "x-agent"), Some("curl/8"));

    // A host that forwards asks the component for the answer, which runs the same flow.
    let head = request("GET", "/dev/v1/devs/alice/repos", &client, b"");
    let (answer, fault_code) = world
        .gateway
        .backend_failed(&world.host, &head, true, false, None);
    assert_eq!((answer.status, fault_code), (504, 101504));
    assert_eq!(header(&answer.headers, "x-fault-by"), Some("Dev"));

    // A refusal before the backend is not a fault of the flow's.
    let refused = world.call("GET", "/dev/v1/devs/alice/repos", &[]);
    assert_eq!(refused.status, 401);
    assert_eq!(header(&refused.headers, "x-fault-by"), None);
}

#[test]
fn a_fault_flow_answers_with_the_failure_as_wso2s_json_fault_does() {
    let plan = Mediation {
        request: vec![Step::SetProperty {
            name: "CUSTOM_HTTP_SC".into(),
            value: Value::Header("x-status".into()),
        }],
        fault: vec![
            Step::Payload {
                media: apim_manifest::mediation::Media::Json,
                format: r#"{"fault":{"code":$1,"description":"$2"}}"#.into(),
                args: vec![
                    Value::Call(CallFact::ErrorCode),
                    Value::Call(CallFact::ErrorMessage),
                ],
            },
            Step::Filter {
                source: Value::Property("CUSTOM_HTTP_SC".into()),
                regex: "^(?:[1-5][0-9][0-9])$".into(),
                then: vec![Step::SetStatus {
                    value: Value::Property("CUSTOM_HTTP_SC".into()),
                }],
                otherwise: vec![Step::SetStatus { value: text("500") }],
            },
            Step::Respond,
        ],
        ..Mediation::default()
    };
    let mut world = mediated(plan);
    world.host.backend = Box::new(|_| Err(SendError::Unreachable("refused".into())));
    let bearer = world.bearer("app-1");
    let client = [("authorization", bearer.as_str())];
    let response = world.call("GET", "/dev/v1/devs/alice/repos", &client);
    assert_eq!(response.status, 500);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("application/json")
    );
    let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        body,
        json!({"fault": {"code": 101503, "description": "Error connecting to the back end"}})
    );
    let with_status = [("authorization", bearer.as_str()), ("x-status", "418")];
    let head = request("GET", "/dev/v1/devs/alice/repos", &with_status, b"");
    let (answer, fault_code) = world
        .gateway
        .backend_failed(&world.host, &head, false, false, None);
    assert_eq!((answer.status, fault_code), (418, 101503));
}

#[test]
fn an_api_without_sequences_is_forwarded_as_before() {
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let head = request(
        "GET",
        "/dev/v1/devs/alice/repos",
        &[("authorization", &bearer)],
        b"",
    );
    let forwarding = forwarded(&mut world, &head);
    assert!(forwarding.backend.removed_headers.is_empty());
    assert!(forwarding.response_removed.is_empty());
    assert!(forwarding.answer.is_none());
}

#[test]
fn a_respond_answers_with_the_payload_after_counting_the_limits() {
    let mock = Step::Filter {
        source: Value::Header("x-mock".into()),
        regex: "^(?:yes)$".into(),
        then: vec![
            Step::Payload {
                media: apim_manifest::mediation::Media::Json,
                format: r#"{"user": "$1", "api": "$2"}"#.into(),
                args: vec![Value::Query("user".into()), Value::Call(CallFact::ApiName)],
            },
            Step::SetStatus { value: text("201") },
            set("x-mocked", text("1")),
            Step::Respond,
            set("x-never", text("1")),
        ],
        otherwise: vec![],
    };
    let mut world = mediated(Mediation {
        request: vec![set("x-before", text("1")), mock],
        response: vec![set("x-out", text("1"))],
        ..Mediation::default()
    });
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("x-mock", "yes"),
        ("origin", "http://site"),
    ];
    let path = "/dev/v1/devs/alice/repos?user=a%22b";
    let response = world.call("GET", path, &client);
    assert!(
        world.host.sent.borrow().is_empty(),
        "the backend is not called"
    );
    assert_eq!(response.status, 201);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("application/json")
    );
    assert_eq!(header(&response.headers, "x-mocked"), Some("1"));
    assert_eq!(header(&response.headers, "x-before"), Some("1"));
    assert_eq!(
        header(&response.headers, "x-never"),
        None,
        "respond ends the flow"
    );
    assert_eq!(
        header(&response.headers, "x-out"),
        None,
        "nor does the out flow run"
    );
    assert_eq!(header(&response.headers, "authorization"), None);
    assert_eq!(
        header(&response.headers, "access-control-allow-origin"),
        Some("*")
    );
    let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(body, json!({"user": "a\"b", "api": "Dev"}));

    let head = request("GET", path, &client, b"");
    let verdict = decided_with_body(&mut world, &head);
    assert!(!verdict.limits.is_empty(), "the answer still counts");
    let Decision::Respond(answer) = verdict.decision else {
        panic!("answered");
    };
    assert_eq!((answer.status, answer.body), (201, response.body));

    // Without the header the filter reads, the call goes to the backend.
    let response = world.call("GET", path, &client[..1]);
    assert_eq!(response.status, 200);
    assert_eq!(world.host.sent.borrow().len(), 1);
}

/// A world whose API takes `POST /devs/{username}` and runs `plan`, its backend
/// answering with `answer`.
fn posting(plan: Mediation, answer: Response) -> World {
    let mut world = mediated(plan);
    world.host.backend = Box::new(move |_| Ok(answer.clone()));
    world.manifest.apis[0]
        .route
        .operations
        .push(super::operation(
            "POST",
            "/devs/{username}",
            AuthType::Required,
            None,
        ));
    assert_eq!(world.publish().status, 200);
    world
}

fn json_path(names: &[&str]) -> Value {
    Value::Body(BodyPath::Json(
        names.iter().map(|n| PathPart::Key(n.to_string())).collect(),
    ))
}

/// WSO2's tutorial shape: a JSON request made into a SOAP 1.2 call with a payload
/// factory reading the JSON, the SOAP answer made into JSON by the out flow.
fn json_to_soap() -> Mediation {
    Mediation {
        request: vec![
            Step::Payload {
                media: Media::Xml,
                format: r#"<soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope"><soap12:Body><CheckPhoneNumber xmlns="urn:phone"><PhoneNumber>$1</PhoneNumber><LicenseKey>$2</LicenseKey></CheckPhoneNumber></soap12:Body></soap12:Envelope>"#.into(),
                args: vec![json_path(&["phone"]), json_path(&["key"])],
            },
            Step::SetFormat {
                value: text("application/soap+xml"),
            },
            set("soapaction", text("urn:phone/CheckPhoneNumber")),
        ],
        response: vec![Step::SetFormat {
            value: text("application/json"),
        }],
        ..Mediation::default()
    }
}

fn soap_answer() -> Response {
    Response::new(
        200,
        "application/soap+xml; charset=utf-8",
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><CheckPhoneNumberResponse xmlns="urn:phone"><Valid>true</Valid><Carrier>Acme &amp; Co</Carrier></CheckPhoneNumberResponse></s:Body></s:Envelope>"#,
    )
}

#[test]
fn a_json_call_reaches_a_soap_backend_and_its_answer_returns_as_json_on_both_paths() {
    let mut world = posting(json_to_soap(), soap_answer());
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("content-encoding", "identity"),
        ("accept-encoding", "gzip"),
    ];
    let body = br#"{"phone":"+1 555 <0100>","key":"k-1"}"#;
    let call = request("POST", "/dev/v1/devs/alice", &client, body);
    let response = world.gateway.handle(&world.host, call.clone());
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let sent = world.host.sent.borrow().last().cloned().expect("sent");
    let sent_body = String::from_utf8(sent.body.clone()).unwrap();
    assert!(
        sent_body
            .contains("<PhoneNumber>+1 555 &lt;0100&gt;</PhoneNumber><LicenseKey>k-1</LicenseKey>"),
        "{sent_body}"
    );
    assert_eq!(
        header(&sent.headers, "content-type"),
        Some("application/soap+xml")
    );
    assert_eq!(
        header(&sent.headers, "soapaction"),
        Some("urn:phone/CheckPhoneNumber")
    );
    // The client's body described no longer, and the answer asked for uncompressed.
    assert_eq!(header(&sent.headers, "content-encoding"), None);
    assert_eq!(header(&sent.headers, "accept-encoding"), None);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("application/json")
    );
    let answer: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        answer,
        json!({"CheckPhoneNumberResponse": {"Valid": true, "Carrier": "Acme & Co"}})
    );

    // The forwarding host reads the body first (at most the mediated bound), then gets
    // the same request to send and the same answer to give.
    let streamed = Request {
        body: Vec::new(),
        ..call.clone()
    };
    let asked = world.gateway.decide(&world.host, &streamed).decision;
    assert!(
        matches!(asked, Decision::ReadBody(limit) if limit == apim_http::bodies::MAX_MEDIATED_BYTES as u64)
    );
    let verdict = decided_with_body(&mut world, &call);
    let Decision::Forward(forwarding) = verdict.decision else {
        panic!("forwarded");
    };
    assert!(!verdict.limits.is_empty());
    assert_eq!(
        forwarding.backend.body.as_deref(),
        Some(sent.body.as_slice())
    );
    assert!(
        forwarding
            .backend
            .removed_headers
            .contains(&"content-type".to_string())
    );
    let plan = decided_mediation(&forwarding);
    assert!(forwarding.cache.is_none());
    let answered = world
        .gateway
        .mediate_answer(&world.host, &call, &plan, soap_answer(), ("", ""))
        .0;
    assert_eq!((answered.status, answered.body), (200, response.body));
    // An answer past the bound is the gateway's fault, not converted.
    let mut long = soap_answer();
    long.body = vec![b' '; apim_http::bodies::MAX_MEDIATED_BYTES + 1];
    let (refused, code) = world
        .gateway
        .mediate_answer(&world.host, &call, &plan, long, ("", ""));
    assert_eq!((refused.status, code), (500, 101500));

    // Held by the component, a body past the bound is 413 and nothing is sent.
    let sent_before = world.host.sent.borrow().len();
    let mut long = call.clone();
    long.body = vec![b' '; apim_http::bodies::MAX_MEDIATED_BYTES + 1];
    assert_eq!(world.gateway.handle(&world.host, long).status, 413);
    assert_eq!(world.host.sent.borrow().len(), sent_before);
}

#[test]
fn a_body_the_in_flow_cannot_read_is_the_clients_fault_and_drop_answers_202() {
    let mut world = posting(json_to_soap(), soap_answer());
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    // A payload reads nothing from a body that is not JSON: its arguments are empty.
    let response = world.gateway.handle(
        &world.host,
        request("POST", "/dev/v1/devs/alice", &client, b"{not json"),
    );
    assert_eq!(response.status, 200);
    let sent = world.host.sent.borrow().last().cloned().expect("sent");
    assert!(String::from_utf8_lossy(&sent.body).contains("<PhoneNumber></PhoneNumber>"));

    // Converting a body that is not the JSON it says it is refuses the call.
    let convert = Mediation {
        request: vec![Step::SetFormat {
            value: text("text/xml"),
        }],
        ..Mediation::default()
    };
    let mut world = posting(convert, soap_answer());
    let bearer = world.bearer("app-1");
    let client = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let sent_before = world.host.sent.borrow().len();
    let refused = world.gateway.handle(
        &world.host,
        request("POST", "/dev/v1/devs/alice", &client, b"{\"a\":"),
    );
    assert_eq!(
        refused.status,
        400,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(
        world.host.sent.borrow().len(),
        sent_before,
        "nothing is sent"
    );
    let converted = world.gateway.handle(
        &world.host,
        request("POST", "/dev/v1/devs/alice", &client, br#"{"a":1}"#),
    );
    assert_eq!(converted.status, 200);
    let sent = world.host.sent.borrow().last().cloned().expect("sent");
    assert!(String::from_utf8_lossy(&sent.body).contains("<jsonObject><a>1</a></jsonObject>"));

    // A drop in the in flow answers 202 without calling the backend.
    let mut world = posting(
        Mediation {
            request: vec![Step::Drop],
            ..Mediation::default()
        },
        soap_answer(),
    );
    let bearer = world.bearer("app-1");
    let sent_before = world.host.sent.borrow().len();
    let dropped = world.call(
        "GET",
        "/dev/v1/devs/alice/repos",
        &[("authorization", &bearer)],
    );
    assert_eq!((dropped.status, dropped.body.len()), (202, 0));
    assert_eq!(world.host.sent.borrow().len(), sent_before);
}

#[test]
fn rest_url_postfix_sends_the_call_to_another_path_only_when_canonical() {
    let mut world = mediated(Mediation {
        request: vec![Step::SetPath {
            value: Value::Header("x-path".into()),
        }],
        ..Mediation::default()
    });
    let bearer = world.bearer("app-1");
    let path = "/dev/v1/devs/alice/repos?page=2";
    let sent_path = |world: &World| {
        let sent = world.host.sent.borrow();
        sent.last().expect("sent").path_with_query.clone()
    };
    let plain = world.call("GET", path, &[("authorization", &bearer)]);
    assert_eq!(plain.status, 200);
    let endpoint_alone = sent_path(&world);
    assert!(!endpoint_alone.contains("repos"), "{endpoint_alone}");
    for (asked, ends_with) in [
        ("/v2/people/ann?x=1", "/v2/people/ann?x=1"),
        ("?only=query", "?only=query"),
        // Made canonical as a client's target would be: no way out of the endpoint.
        ("/a b", "/a%20b"),
        ("//evil.example/x", "/evil.example/x"),
    ] {
        let response = world.call(
            "GET",
            path,
            &[("authorization", &bearer), ("x-path", asked)],
        );
        assert_eq!(response.status, 200);
        let sent = sent_path(&world);
        assert!(sent.ends_with(ends_with), "{asked}: {sent}");
        assert!(!sent.contains("//"), "{asked}: {sent}");
    }
    let sent_before = world.host.sent.borrow().len();
    for hostile in ["/a/../../admin", "/a/%2e%2e/admin", "a/b", "/a\\..\\b"] {
        let response = world.call(
            "GET",
            path,
            &[("authorization", &bearer), ("x-path", hostile)],
        );
        assert_eq!(response.status, 400, "{hostile}");
    }
    assert_eq!(
        world.host.sent.borrow().len(),
        sent_before,
        "nothing is sent"
    );
}

#[test]
fn the_out_flow_reads_the_backends_answer_headers_on_both_paths() {
    let mut world = mediated(Mediation {
        response: vec![
            set("x-served-by", Value::Header("server".into())),
            Step::RemoveHeader {
                name: "server".into(),
            },
            Step::Filter {
                source: Value::Header("x-internal".into()),
                regex: "^(?:secret-.*)$".into(),
                then: vec![
                    Step::RemoveHeader {
                        name: "x-internal".into(),
                    },
                    Step::SetStatus { value: text("203") },
                ],
                otherwise: vec![],
            },
        ],
        ..Mediation::default()
    });
    let bearer = world.bearer("app-1");
    let path = "/dev/v1/devs/alice/repos";
    let response = world.call("GET", path, &[("authorization", &bearer)]);
    assert_eq!(response.status, 203);
    assert_eq!(header(&response.headers, "x-served-by"), Some("legacy/1.0"));
    assert_eq!(header(&response.headers, "server"), None);
    assert_eq!(header(&response.headers, "x-internal"), None);
    assert_eq!(response.body, b"{}");

    let head = request("GET", path, &[("authorization", &bearer)], b"");
    let forwarding = forwarded(&mut world, &head);
    let plan = decided_mediation(&forwarding);
    let made = world
        .gateway
        .mediate_answer(&world.host, &head, &plan, backend_answer(), ("", ""))
        .0;
    // The host sets the CORS headers the verdict names; the rest is the component's.
    let mut expected = response.headers.clone();
    expected.retain(|(name, _)| !forwarding.response_headers.iter().any(|(n, _)| n == name));
    assert_eq!(
        (made.status, made.headers, made.body),
        (response.status, expected, response.body)
    );
}

#[test]
fn an_answer_gets_the_out_flow_its_decision_read_though_the_api_changed_since() {
    let served_by = |name: &str| Mediation {
        response: vec![set(name, Value::Header("server".into()))],
        ..Mediation::default()
    };
    let mut world = mediated(served_by("x-before"));
    let bearer = world.bearer("app-1");
    let head = request(
        "GET",
        "/dev/v1/devs/alice/repos",
        &[("authorization", &bearer)],
        b"",
    );
    let before = forwarded(&mut world, &head);
    // The API's flows change while the backend answers, and another call reads them.
    world.manifest.apis[0].route.mediation = Some(served_by("x-after"));
    assert_eq!(world.publish().status, 200);
    let after = forwarded(&mut world, &head);
    let made = |world: &mut World, forwarding: &Forwarding| {
        let plan = decided_mediation(forwarding);
        let answer = backend_answer();
        (world.gateway)
            .mediate_answer(&world.host, &head, &plan, answer, ("", ""))
            .0
    };
    let first = made(&mut world, &before);
    assert_eq!(header(&first.headers, "x-before"), Some("legacy/1.0"));
    assert_eq!(header(&first.headers, "x-after"), None);
    let second = made(&mut world, &after);
    assert_eq!(header(&second.headers, "x-after"), Some("legacy/1.0"));
    assert_eq!(header(&second.headers, "x-before"), None);
}

#[test]
fn a_tool_calls_result_is_left_to_the_component_only_where_an_out_flow_reads_the_answer() {
    let answering = crate::mcp::Answering {
        reply: crate::mcp::Reply {
            era: crate::mcp::Era::Stateless,
            id: 7.into(),
        },
        structured: false,
        method: "GET".into(),
        path_with_query: "/dev/v1/devs/alice/repos".into(),
    };
    let reading = Mediation {
        response: vec![Step::SetFormat {
            value: text("application/json"),
        }],
        ..Mediation::default()
    };
    for (plan, host_answers) in [(Mediation::default(), true), (reading, false)] {
        let mut world = mediated(plan);
        let bearer = world.bearer("app-1");
        let client = [("authorization", bearer.as_str())];
        let head = request("GET", "/dev/v1/devs/alice/repos", &client, b"");
        let mut forwarding = forwarded(&mut world, &head);
        forwarding.tool = Some(Box::new(answering.clone()));
        assert_eq!(forwarding.tool_answered_by_host().is_some(), host_answers);
        assert!(
            forwarding.answer_shape().is_some(),
            "refusals still need it"
        );
    }
}

/// The forwarding `world`'s gateway decides for `head`.
fn forwarded(world: &mut World, head: &Request) -> Forwarding {
    let Decision::Forward(forwarding) = world.gateway.decide(&world.host, head).decision else {
        panic!("forwarded");
    };
    forwarding
}

/// The mediation a forwarding decision hands the host for the backend's answer.
fn decided_mediation(forwarding: &Forwarding) -> Mediation {
    forwarding
        .mediate_answer
        .as_ref()
        .and_then(|api| api.mediation.clone())
        .expect("the host reads the answer first")
}
