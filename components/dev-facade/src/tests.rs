//! The facade against a scripted SOAP service: what it sends, and what it makes of
//! answers, faults and failures. (End-to-end tests run it against the stand-in service.)

use std::cell::RefCell;
use std::collections::HashMap;

use apim_http::{Outbound, Request, Response, SendError};
use serde_json::Value;

use crate::backend::{Host, settings};
use crate::facade::handle;
use crate::soap::{NAMESPACE, SOAP_ENV};
use crate::xml;

type Script = Box<dyn Fn(&str, &xml::Element) -> Result<Response, SendError>>;

/// A host whose SOAP service answers by script, recording each operation called.
struct ScriptedHost {
    settings: HashMap<&'static str, String>,
    script: Script,
    calls: RefCell<Vec<String>>,
}

impl ScriptedHost {
    fn new(script: impl Fn(&str, &xml::Element) -> Result<Response, SendError> + 'static) -> Self {
        let settings = HashMap::from([
            (settings::SOAP_URL, "http://soap.test:8291/ws".to_string()),
            (settings::SOAP_USER, "hydrogen".to_string()),
            (settings::SOAP_PASSWORD, "pandaAsthma".to_string()),
        ]);
        ScriptedHost {
            settings,
            script: Box::new(script),
            calls: RefCell::default(),
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn call(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let request = Request {
            method: method.into(),
            path_with_query: path.into(),
            headers: vec![("content-type".into(), b"application/json".to_vec())],
            body: body.as_bytes().to_vec(),
            ..Request::default()
        };
        let response = handle(self, &request);
        let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        (response.status, body)
    }
}

impl Host for ScriptedHost {
    fn setting(&self, name: &str) -> Option<String> {
        self.settings.get(name).cloned()
    }

    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        assert_eq!(request.method, "POST");
        assert_eq!(request.authority, "soap.test:8291");
        assert_eq!(request.path_with_query, "/ws");
        let auth = apim_http::header(&request.headers, "authorization").unwrap();
        assert_eq!(auth, "Basic aHlkcm9nZW46cGFuZGFBc3RobWE=");
        let length = apim_http::header(&request.headers, "content-length");
        assert_eq!(length, Some(request.body.len().to_string().as_str()));
        assert_eq!(
            apim_http::header(&request.headers, "transfer-encoding"),
            None
        );
        let envelope = xml::parse(&request.body).expect("the facade sends well-formed XML");
        assert!(envelope.is(SOAP_ENV, "Envelope"));
        let payload = envelope.child(SOAP_ENV, "Body").unwrap().children[0].clone();
        assert_eq!(payload.namespace, NAMESPACE);
        let operation = payload.name.trim_end_matches("Request").to_string();
        self.calls.borrow_mut().push(operation.clone());
        (self.script)(&operation, &payload)
    }
}

fn answer(operation: &str, inner: &str) -> Result<Response, SendError> {
    let body = format!(
        r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP_ENV}"><SOAP-ENV:Header/><SOAP-ENV:Body><ns2:{operation}Response xmlns:ns2="{NAMESPACE}">{inner}</ns2:{operation}Response></SOAP-ENV:Body></SOAP-ENV:Envelope>"#
    );
    Ok(Response::new(200, "text/xml", body))
}

fn fault(reason: &str) -> Result<Response, SendError> {
    fault_of("SOAP-ENV:Server", reason)
}

fn fault_of(code: &str, reason: &str) -> Result<Response, SendError> {
    let body = format!(
        r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP_ENV}"><SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>{code}</faultcode><faultstring>{reason}</faultstring></SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>"#
    );
    Ok(Response::new(500, "text/xml", body))
}

fn username(payload: &xml::Element) -> String {
    payload.child(NAMESPACE, "username").unwrap().text.clone()
}

/// What the real service answers an unknown user name with: the runtime's message.
const UNKNOWN: &str =
    r#"Cannot invoke "java.util.function.Supplier.get()" because "exceptionSupplier" is null"#;

const ATHITHTHAN: &str = "<ns2:developer><ns2:username>athiththan11</ns2:username><ns2:name>Athiththan</ns2:name><ns2:email>athiththan@demo.com</ns2:email></ns2:developer>";

const STACKCHEATS: &str = "<ns2:repos><ns2:name>stackcheats</ns2:name><ns2:username>athiththan11</ns2:username><ns2:forks>0</ns2:forks></ns2:repos>";

/// The service as BEHAVIOUR.md describes it, knowing only athiththan11 and their
/// stackcheats; getDeveloper of anyone else faults with `unknown`.
fn real_service(
    unknown: &'static str,
) -> impl Fn(&str, &xml::Element) -> Result<Response, SendError> {
    move |operation, payload| {
        let known = username(payload) == "athiththan11";
        match (operation, known) {
            ("getDeveloper", true) => answer("getDeveloper", ATHITHTHAN),
            ("getDeveloper", false) => fault(unknown),
            ("getRepo", true) => answer("getRepo", STACKCHEATS),
            ("getRepo", false) => answer("getRepo", ""),
            (other, _) => panic!("{other} must not be called"),
        }
    }
}

#[test]
fn a_developer_is_read_in_one_call() {
    let host = ScriptedHost::new(real_service(UNKNOWN));
    let (status, body) = host.call("GET", "/devs/athiththan11", "");
    assert_eq!(status, 200);
    assert_eq!(body["email"], "athiththan@demo.com");
    assert_eq!(host.calls(), ["getDeveloper"]);
}

/// The fault's text is not relied on: whatever it says, a service that answers getRepo
/// right after is working, so the user name is unknown.
#[test]
fn a_server_fault_for_a_working_service_is_an_unknown_developer() {
    for text in [
        UNKNOWN,
        "No value present",
        "java.lang.NullPointerException",
        "",
    ] {
        let host = ScriptedHost::new(real_service(text));
        let (status, body) = host.call("GET", "/devs/nobody", "");
        assert_eq!(status, 404, "{text}: {body}");
        assert_eq!(body["description"], "Developer 'nobody' not found");
        assert_eq!(host.calls(), ["getDeveloper", "getRepo"]);
    }
}

#[test]
fn a_failing_service_is_502_not_an_unknown_developer() {
    let failing = || {
        ScriptedHost::new(|_, _| {
            fault("Could not open JPA EntityManager for transaction; nested exception")
        })
    };
    for (method, path, body) in [
        ("GET", "/devs/athiththan11", ""),
        ("GET", "/devs/athiththan11/repos", ""),
        ("DELETE", "/devs/athiththan11", ""),
        (
            "POST",
            "/devs",
            r#"{"username":"u","name":"n","email":"e"}"#,
        ),
        (
            "POST",
            "/repos",
            r#"{"name":"r","username":"athiththan11","forks":1}"#,
        ),
    ] {
        let host = failing();
        let (status, reply) = host.call(method, path, body);
        assert_eq!(status, 502, "{method} {path}: {reply}");
        assert!(
            reply["description"].as_str().unwrap().contains("fault"),
            "{reply}"
        );
    }
    // A service whose getDeveloper faults and whose getRepo cannot be reached either.
    let host = ScriptedHost::new(|operation, _| match operation {
        "getDeveloper" => fault(UNKNOWN),
        _ => Err(SendError::Unreachable("connection reset".into())),
    });
    assert_eq!(host.call("GET", "/devs/nobody", "").0, 502);
    assert_eq!(host.calls(), ["getDeveloper", "getRepo"]);
}

#[test]
fn a_client_fault_is_502_without_a_second_call() {
    let host = ScriptedHost::new(|_, _| fault_of("SOAP-ENV:Client", "Unmarshalling Error"));
    assert_eq!(host.call("GET", "/devs/a", "").0, 502);
    assert_eq!(host.calls(), ["getDeveloper"]);
}

#[test]
fn repos_are_those_of_a_known_developer() {
    let host = ScriptedHost::new(real_service(UNKNOWN));
    let (status, body) = host.call("GET", "/devs/athiththan11/repos", "");
    assert_eq!(status, 200);
    assert_eq!(body[0]["name"], "stackcheats");
    assert_eq!(host.calls(), ["getDeveloper", "getRepo"]);
    assert_eq!(host.call("GET", "/devs/nobody/repos", "").0, 404);
    // Repositories added for a user name the service does not know (addRepo checks no
    // owner) do not make a developer of them.
    let host = ScriptedHost::new(|operation, _| match operation {
        "getDeveloper" => fault(UNKNOWN),
        _ => answer("getRepo", STACKCHEATS),
    });
    assert_eq!(host.call("GET", "/devs/ghost/repos", "").0, 404);
}

#[test]
fn a_developer_is_added_in_one_call_and_a_taken_name_is_409() {
    let host = ScriptedHost::new(|operation, payload| {
        assert_eq!(operation, "addDeveloper");
        match username(payload).as_str() {
            // The service keeps the stored record and answers without a developer.
            "athiththan11" => answer("addDeveloper", ""),
            _ => answer(
                "addDeveloper",
                "<ns2:developer><ns2:username>new</ns2:username><ns2:name>N</ns2:name><ns2:email>n@e</ns2:email></ns2:developer>",
            ),
        }
    });
    let (status, body) = host.call(
        "POST",
        "/devs",
        r#"{"username":"new","name":"N","email":"n@e"}"#,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["email"], "n@e");
    let (status, body) = host.call(
        "POST",
        "/devs",
        r#"{"username":"athiththan11","name":"X","email":"x@y"}"#,
    );
    assert_eq!(status, 409);
    assert_eq!(
        body["description"],
        "Developer 'athiththan11' already exists"
    );
    assert_eq!(host.calls(), ["addDeveloper", "addDeveloper"]);
}

#[test]
fn a_repo_is_added_once_its_owner_is_known_and_the_name_free() {
    let host = ScriptedHost::new(|operation, payload| match operation {
        "addRepo" => {
            let forks = &payload.child(NAMESPACE, "forks").unwrap().text;
            let repo = format!(
                "<ns2:repo><ns2:name>repodews</ns2:name><ns2:username>athiththan11</ns2:username><ns2:forks>{forks}</ns2:forks></ns2:repo>"
            );
            answer("addRepo", &repo)
        }
        other => real_service(UNKNOWN)(other, payload),
    });
    let (status, body) = host.call(
        "POST",
        "/repos",
        r#"{"name":"repodews","username":"athiththan11","forks":7}"#,
    );
    assert_eq!(status, 201);
    assert_eq!(body["forks"], 7);
    assert_eq!(host.calls(), ["getDeveloper", "getRepo", "addRepo"]);

    // Refusals are decided before addRepo, which would add anything.
    let host = ScriptedHost::new(real_service(UNKNOWN));
    let (status, body) = host.call(
        "POST",
        "/repos",
        r#"{"name":"stackcheats","username":"athiththan11","forks":0}"#,
    );
    assert_eq!(status, 409, "{body}");
    let (status, body) = host.call(
        "POST",
        "/repos",
        r#"{"name":"x","username":"nobody","forks":0}"#,
    );
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["description"], "Developer 'nobody' not found");
    assert_eq!(
        host.calls(),
        ["getDeveloper", "getRepo", "getDeveloper", "getRepo"]
    );
}

#[test]
fn invalid_bodies_are_400_naming_the_field_without_a_soap_call() {
    let host = ScriptedHost::new(|operation, _| panic!("{operation} must not be called"));
    let (status, body) = host.call(
        "POST",
        "/repos",
        r#"{"name":"r","username":"u","forks":"x"}"#,
    );
    assert_eq!(status, 400);
    assert_eq!(body["error"][0]["code"], "400_forks");
    assert!(body["description"].as_str().unwrap().contains("forks"));
    assert_eq!(host.call("POST", "/devs", "{not json").0, 400);
    assert_eq!(
        host.call("POST", "/devs", r#"{"username":"u"}"#).1["error"][0]["code"],
        "400_name"
    );
    assert!(host.calls().is_empty());
}

#[test]
fn wrong_methods_and_paths_are_refused() {
    let host = ScriptedHost::new(|operation, _| panic!("{operation} must not be called"));
    let request = Request {
        method: "PUT".into(),
        path_with_query: "/devs/a".into(),
        ..Request::default()
    };
    let response = handle(&host, &request);
    assert_eq!(response.status, 405);
    assert_eq!(
        apim_http::header(&response.headers, "allow"),
        Some("GET, DELETE")
    );
    assert_eq!(host.call("GET", "/devs", "").0, 405);
    assert_eq!(host.call("GET", "/nothing", "").0, 404);
}

#[test]
fn backend_failures_are_502_or_504() {
    let cases: Vec<(Script, u16)> = vec![
        (
            Box::new(|_, _| Err(SendError::Unreachable("refused".into()))),
            502,
        ),
        (Box::new(|_, _| Err(SendError::Timeout("slow".into()))), 504),
        (
            Box::new(|_, _| Ok(Response::new(401, "text/html", "no"))),
            502,
        ),
        (
            Box::new(|_, _| Ok(Response::new(200, "text/html", "<html>"))),
            502,
        ),
        (Box::new(|_, _| fault("Database is down")), 502),
        (Box::new(|_, _| answer("getRepo", "")), 502),
    ];
    for (script, expected) in cases {
        let host = ScriptedHost {
            script,
            ..ScriptedHost::new(|_, _| unreachable!())
        };
        let (status, body) = host.call("GET", "/devs/a", "");
        assert_eq!(status, expected, "{body}");
        assert_eq!(body["code"], expected);
    }
}

#[test]
fn deletion_maps_the_services_message() {
    let host = ScriptedHost::new(|_, payload| {
        match payload.child(NAMESPACE, "username").unwrap().text.as_str() {
            "gone" => answer(
                "deleteDeveloper",
                "<ns2:message>Resource not found</ns2:message>",
            ),
            _ => answer("deleteDeveloper", "<ns2:message>Success</ns2:message>"),
        }
    });
    assert_eq!(host.call("DELETE", "/devs/here", "").0, 200);
    assert_eq!(host.call("DELETE", "/devs/gone", "").0, 404);
}
