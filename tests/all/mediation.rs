//! An API's sequences at a real gateway: policies uploaded through WSO2's mediation
//! operations and named in the API's `sequences` change what the backend gets (`in`),
//! what the client gets (`out`) and the answer to a failed backend (`fault`); a change
//! to a named policy reaches the gateways as any change does. What cannot run is refused
//! at upload or update, changing nothing.

use harness::stack::Stack;
use harness::{Backend, Client, Reply, free_port};
use serde_json::{Value, json};

const PUBLISHER: &str = "/api/am/publisher/v0.14";

pub async fn sequences_on_the_host_path(database: Backend) {
    sequences_apply_at_the_gateway(database, &[]).await;
}

pub async fn sequences_on_the_component_path(database: Backend) {
    let component = [("APIM_HOST_FORWARDING", "false".into())];
    sequences_apply_at_the_gateway(database, &component).await;
}

/// WSO2's documented sample (adding a header to the backend's request), and a removal.
const ADD_HEADER: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header">
    <header name="CustomHeader" scope="transport" value="CustomHeaderValue"/>
    <property name="X-Debug" scope="transport" action="remove"/>
    <property name="asked" expression="get-property('transport', 'Accept')"/>
    <filter source="$trp:X-Mock" regex="yes">
        <then>
            <payloadFactory media-type="json">
                <format>{"mock": true, "user": "$1"}</format>
                <args><arg expression="$url:user"/></args>
            </payloadFactory>
            <property name="HTTP_SC" value="201" scope="axis2"/>
            <respond/>
        </then>
    </filter>
</sequence>"#;

const OUT_HEADER: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="out_header">
    <property name="X-Mediated" scope="transport" value="out"/>
    <header name="X-Asked" expression="$ctx:asked" scope="transport"/>
</sequence>"#;

const FAULT_HEADER: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="fault_header">
    <property name="X-Fault" scope="transport" value="by-sequence"/>
</sequence>"#;

fn policy(name: &str, flow: &str, config: &str) -> Value {
    json!({"name": name, "type": flow, "config": config})
}

/// The API's record with `sequences`.
async fn with_sequences(mgmt: &Client, admin: &str, api: &str, sequences: Value) -> Reply {
    let path = format!("{PUBLISHER}/apis/{api}");
    let mut record = mgmt.get(&path, admin).await.expect(200).body;
    record["sequences"] = sequences;
    mgmt.put_json(&path, admin, &record).await
}

fn sent_header<'r>(reply: &'r Reply, name: &str) -> Option<&'r str> {
    reply.body["headers"][name].as_str()
}

async fn sequences_apply_at_the_gateway(database: Backend, settings: &[(&'static str, String)]) {
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], settings, &[]).await;
    let (mgmt, gw, admin) = (&stack.mgmt, &stack.gw, stack.admin.as_str());
    let api = stack.api("Mediated", json!({}), &[]).await;
    let policies = format!("{PUBLISHER}/apis/{api}/policies/mediation");
    let mut ids = Vec::new();
    for (name, flow, config) in [
        ("add_header", "in", ADD_HEADER),
        ("out_header", "out", OUT_HEADER),
        ("fault_header", "fault", FAULT_HEADER),
    ] {
        let created = mgmt
            .post_json(&policies, admin, &policy(name, flow, config))
            .await;
        ids.push(created.expect(200).str("id"));
    }

    // A mediator the gateway cannot run is refused at upload, naming it and the subset;
    // nothing is stored.
    let unsupported = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="p">
        <call><endpoint key="other"/></call></sequence>"#;
    let refused = mgmt
        .post_json(&policies, admin, &policy("p", "in", unsupported))
        .await
        .expect_error(400, "The mediator 'call' is not supported");
    assert!(
        refused
            .body
            .to_string()
            .contains("property, header, log, filter")
    );
    assert_eq!(
        mgmt.get(&policies, admin).await.expect(200).body["count"],
        3
    );

    // Sequences naming no policy are refused, the record unchanged; the API's own and
    // the seed's global ones are taken.
    with_sequences(mgmt, admin, &api, json!([{"name": "nope", "type": "in"}]))
        .await
        .expect_error(400, "Unknown mediation policy 'nope'");
    with_sequences(
        mgmt,
        admin,
        &api,
        json!([{"name": "out_header", "type": "in"}]),
    )
    .await
    .expect_error(400, "Unknown mediation policy 'out_header' of type 'in'");
    let record = mgmt
        .get(&format!("{PUBLISHER}/apis/{api}"), admin)
        .await
        .expect(200);
    assert_eq!(record.body["sequences"][0]["name"], "json_validator");
    let named = json!([
        {"name": "add_header", "type": "in"},
        {"name": "out_header", "type": "out"},
        {"name": "fault_header", "type": "fault"},
    ]);
    with_sequences(mgmt, admin, &api, named).await.expect(200);

    stack.lifecycle(&api, "Publish").await;
    let (_, key, secret, _) = stack.application("Mediator", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/mediated/v1.0.0/devs/alice";
    let call = gw
        .request(reqwest::Method::GET, path, &token)
        .header("x-debug", "on")
        .header("accept", "application/json");
    let reply = gw.send(call).await.expect(200);
    assert_eq!(
        sent_header(&reply, "customheader"),
        Some("CustomHeaderValue")
    );
    assert_eq!(sent_header(&reply, "x-debug"), None);
    assert_eq!(reply.header("x-mediated"), Some("out"));
    assert_eq!(reply.header("x-asked"), Some("application/json"));

    // A payload factory and respond answer for the backend, which is not called.
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let mock = gw
        .request(reqwest::Method::GET, &format!("{path}?user=ann"), &token)
        .header("x-mock", "yes");
    let mocked = gw.send(mock).await.expect(201);
    assert_eq!(mocked.body, json!({"mock": true, "user": "ann"}));
    assert_eq!(mocked.header("content-type"), Some("application/json"));
    assert_eq!(
        mocked.header("x-mediated"),
        None,
        "respond skips the out flow"
    );
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );

    // A change to a policy the sequences name reaches the gateway.
    let changed = ADD_HEADER.replace("CustomHeaderValue", "Changed");
    mgmt.put_json(
        &format!("{policies}/{}", ids[0]),
        admin,
        &policy("add_header", "in", &changed),
    )
    .await
    .expect(200);
    harness::eventually(gw, reqwest::Method::GET, path, &token, |reply| {
        sent_header(reply, "customheader") == Some("Changed")
    })
    .await;

    // A named policy cannot go, nor be renamed away, nor become one that cannot run.
    mgmt.delete(&format!("{policies}/{}", ids[1]), admin)
        .await
        .expect_error(409, "take it out of them first");
    mgmt.put_json(
        &format!("{policies}/{}", ids[1]),
        admin,
        &policy("renamed", "out", OUT_HEADER),
    )
    .await
    .expect(409);
    assert_eq!(
        mgmt.get(&policies, admin).await.expect(200).body["count"],
        3
    );
    let reply = gw
        .send(gw.request(reqwest::Method::GET, path, &token))
        .await;
    assert_eq!(reply.expect(200).header("x-mediated"), Some("out"));

    // The fault flow runs when the backend cannot be reached.
    let path_of = format!("{PUBLISHER}/apis/{api}");
    let mut record = mgmt.get(&path_of, admin).await.expect(200).body;
    let dead = format!("http://127.0.0.1:{}/", free_port());
    record["endpointConfig"] = json!(
        json!({"production_endpoints": {"url": dead}, "sandbox_endpoints": {"url": dead},
               "endpoint_type": "http"})
        .to_string()
    );
    mgmt.put_json(&path_of, admin, &record).await.expect(200);
    let failed = harness::eventually(gw, reqwest::Method::GET, path, &token, |reply| {
        reply.status >= 500
    })
    .await;
    assert_eq!(failed.fault_code(), "101503");
    assert_eq!(failed.header("x-fault"), Some("by-sequence"));
    assert_eq!(
        failed.header("x-mediated"),
        None,
        "the out flow is not the fault's"
    );

    // WSO2's global json_fault instead: the fault as JSON, status 500.
    let json_fault = json!([
        {"name": "add_header", "type": "in"},
        {"name": "json_fault", "type": "fault"},
    ]);
    with_sequences(mgmt, admin, &api, json_fault)
        .await
        .expect(200);
    let failed = harness::eventually(gw, reqwest::Method::GET, path, &token, |reply| {
        reply.status == 500
    })
    .await;
    assert_eq!(
        failed.body,
        json!({"fault": {"code": 101503, "type": "Status report", "message": "Runtime Error",
                         "description": "Error connecting to the back end"}})
    );
    assert_eq!(failed.header("content-type"), Some("application/json"));
}

pub async fn bodies_on_the_host_path(database: Backend) {
    bodies_are_made_and_converted(database, &[]).await;
}

pub async fn bodies_on_the_component_path(database: Backend) {
    let component = [("APIM_HOST_FORWARDING", "false".into())];
    bodies_are_made_and_converted(database, &component).await;
}

/// In the shape of WSO2 2.6's tutorial "Convert a JSON Message to SOAP and SOAP to
/// JSON": the client's JSON made into a SOAP 1.2 call by a payload factory reading it,
/// with its `SOAPAction`; and a `drop` for the calls that ask for it.
const JSON_TO_SOAP: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="JSONtoSOAP">
    <filter source="json-eval($.mode)" regex="drop"><then><drop/></then></filter>
    <payloadFactory media-type="xml">
        <format>
            <soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope">
                <soap12:Body>
                    <CheckPhoneNumber xmlns="http://ws.cdyne.com/PhoneVerify/query">
                        <PhoneNumber>$1</PhoneNumber>
                        <LicenseKey>$2</LicenseKey>
                    </CheckPhoneNumber>
                </soap12:Body>
            </soap12:Envelope>
        </format>
        <args>
            <arg evaluator="json" expression="$.phoneNumber"/>
            <arg evaluator="json" expression="$.licenseKey"/>
        </args>
    </payloadFactory>
    <property name="SOAPAction" scope="transport" value="http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumber"/>
    <property name="messageType" scope="axis2" value="application/soap+xml"/>
</sequence>"#;

/// The text of the first `<name>` element in `xml`, entities as written.
fn element_text<'x>(xml: &'x str, name: &str) -> Option<&'x str> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..start + end])
}

async fn bodies_are_made_and_converted(database: Backend, settings: &[(&'static str, String)]) {
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], settings, &[]).await;
    let (mgmt, gw, admin) = (&stack.mgmt, &stack.gw, stack.admin.as_str());
    let api = stack.api("Soapish", json!({}), &[]).await;
    let policies = format!("{PUBLISHER}/apis/{api}/policies/mediation");
    mgmt.post_json(&policies, admin, &policy("JSONtoSOAP", "in", JSON_TO_SOAP))
        .await
        .expect(200);
    // The echo backend answers JSON; WSO2's global policy gives the client XML.
    let named = json!([
        {"name": "JSONtoSOAP", "type": "in"},
        {"name": "json_to_xml_out_message", "type": "out"},
    ]);
    with_sequences(mgmt, admin, &api, named).await.expect(200);
    stack.lifecycle(&api, "Publish").await;
    let (_, key, secret, _) = stack.application("Converter", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/soapish/v1.0.0/devs";
    let post = |body: &str| {
        gw.request(reqwest::Method::POST, path, &token)
            .header("content-type", "application/json")
            .body(body.to_string())
    };

    // A body the in flow reads is read whole only up to 4 MiB; a longer one is 413 and
    // reaches no backend.
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let long = format!(r#"{{"phoneNumber": "{}"}}"#, "1".repeat(4 * 1024 * 1024));
    gw.send(post(&long)).await.expect(413);
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );
    let reply = gw
        .send(post(
            r#"{"phoneNumber": "+1 (555) <0100>", "licenseKey": "k&1"}"#,
        ))
        .await
        .expect(200);
    assert_eq!(reply.header("content-type"), Some("application/xml"));
    let xml = reply.body.as_str().expect("an XML answer").to_string();
    assert!(xml.starts_with("<jsonObject>"), "{xml}");
    assert_eq!(element_text(&xml, "method"), Some("POST"));
    let sent_type = element_text(&xml, "content-type").expect("the backend's content type");
    assert_eq!(sent_type, "application/soap+xml");
    assert_eq!(
        element_text(&xml, "soapaction"),
        Some("http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumber")
    );
    // The envelope the backend got, escaped once more as the echo's XML text.
    let sent = element_text(&xml, "body").expect("the body the backend got");
    assert!(
        sent.contains("&lt;PhoneNumber&gt;+1 (555) &amp;lt;0100&amp;gt;&lt;/PhoneNumber&gt;"),
        "{sent}"
    );
    assert!(
        sent.contains("&lt;LicenseKey&gt;k&amp;amp;1&lt;/LicenseKey&gt;"),
        "{sent}"
    );

    // A drop answers 202 and the backend is not called.
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let dropped = gw.send(post(r#"{"mode": "drop"}"#)).await.expect(202);
    assert_eq!(dropped.body, Value::Null);
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );

    // WSO2's global json_to_xml_in_message on a body that is not the JSON it says it is:
    // the client's fault, and the backend is not called.
    let named = json!([{"name": "json_to_xml_in_message", "type": "in"}]);
    with_sequences(mgmt, admin, &api, named).await.expect(200);
    // Applied once a GET's answer is the backend's JSON again (no out flow).
    harness::eventually(
        gw,
        reqwest::Method::GET,
        &format!("{path}/x"),
        &token,
        |reply| reply.status == 200 && reply.body["method"] == "GET",
    )
    .await;
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let refused = gw.send(post(r#"{"phoneNumber": "#)).await.expect(400);
    assert!(
        refused.body.to_string().contains("could not be read"),
        "{:?}",
        refused.body
    );
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );
    let reply = gw
        .send(post(r#"{"a": [1, 2], "b": "x"}"#))
        .await
        .expect(200);
    assert_eq!(
        reply.body["body"],
        "<jsonObject><a>1</a><a>2</a><b>x</b></jsonObject>"
    );
    assert_eq!(reply.body["headers"]["content-type"], "application/xml");

    // REST_URL_POSTFIX from a header sends the call to another backend path, made
    // canonical or refused; the out flow reads the backend's answer's headers.
    let reroute = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="reroute">
        <property name="REST_URL_POSTFIX" expression="$trp:X-To" scope="axis2"/>
    </sequence>"#;
    let served = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="served">
        <header name="X-Backend-Type" expression="$trp:Content-Type" scope="transport"/>
    </sequence>"#;
    for (name, flow, config) in [("reroute", "in", reroute), ("served", "out", served)] {
        mgmt.post_json(&policies, admin, &policy(name, flow, config))
            .await
            .expect(200);
    }
    let named = json!([
        {"name": "reroute", "type": "in"},
        {"name": "served", "type": "out"},
    ]);
    with_sequences(mgmt, admin, &api, named).await.expect(200);
    let rerouted = |to: &str| {
        gw.request(
            reqwest::Method::GET,
            &format!("{path}/x?from=client"),
            &token,
        )
        .header("x-to", to)
    };
    // Within 30 seconds the gateways apply the change.
    let mut reply = gw.send(rerouted("/people/ann?y=1")).await;
    for _ in 0..150 {
        if reply.header("x-backend-type").is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        reply = gw.send(rerouted("/people/ann?y=1")).await;
    }
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["path"], "/people/ann");
    assert_eq!(reply.body["query"], "y=1");
    assert_eq!(reply.header("x-backend-type"), Some("application/json"));
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    gw.send(rerouted("/people/../admin")).await.expect(400);
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );

    // WSO2's pair: the client's Accept kept from the backend, then the answer in it.
    let named = json!([
        {"name": "preserve_accept_header", "type": "in"},
        {"name": "apply_accept_header", "type": "out"},
    ]);
    with_sequences(mgmt, admin, &api, named).await.expect(200);
    let asking = |accept: &str| {
        gw.request(reqwest::Method::GET, &format!("{path}/x"), &token)
            .header("accept", accept)
    };
    let mut reply = gw.send(asking("application/xml")).await;
    for _ in 0..150 {
        if reply.header("content-type") == Some("application/xml") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        reply = gw.send(asking("application/xml")).await;
    }
    assert_eq!(reply.header("content-type"), Some("application/xml"));
    let xml = reply.body.as_str().expect("an XML answer");
    assert!(xml.contains("<path>/devs/x</path>"), "{xml}");
    assert!(!xml.contains("<accept>"), "the backend never saw it: {xml}");
    // A range names no format: the answer stays as the backend gave it.
    let reply = gw.send(asking("*/*")).await.expect(200);
    assert_eq!(reply.body["path"], "/devs/x");
    assert_eq!(reply.body["headers"]["accept"], Value::Null);
}
