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
    let body = format!(
        r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP_ENV}"><SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>SOAP-ENV:Server</faultcode><faultstring>{reason}</faultstring></SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>"#
    );
    Ok(Response::new(500, "text/xml", body))
}

const ATHITHTHAN: &str = "<ns2:developer><ns2:username>athiththan11</ns2:username><ns2:name>Athiththan</ns2:name><ns2:email>athiththan@demo.com</ns2:email></ns2:developer>";

#[test]
fn a_developer_is_read_and_an_unknown_one_is_404() {
    let host = ScriptedHost::new(|_, payload| {
        match payload.child(NAMESPACE, "username").unwrap().text.as_str() {
            "athiththan11" => answer("getDeveloper", ATHITHTHAN),
            _ => fault("Resource not found"),
        }
    });
    let (status, body) = host.call("GET", "/devs/athiththan11", "");
    assert_eq!(status, 200);
    assert_eq!(body["email"], "athiththan@demo.com");
    let (status, body) = host.call("GET", "/devs/nobody", "");
    assert_eq!(status, 404);
    assert_eq!(body["description"], "Developer 'nobody' not found");
    assert_eq!(host.calls(), ["getDeveloper", "getDeveloper"]);
}

#[test]
fn an_empty_repo_list_is_told_apart_from_an_unknown_developer() {
    let host = ScriptedHost::new(|operation, payload| {
        let known = payload.child(NAMESPACE, "username").unwrap().text == "athiththan11";
        match (operation, known) {
            ("getRepo", _) => answer("getRepo", ""),
            ("getDeveloper", true) => answer("getDeveloper", ATHITHTHAN),
            _ => fault("Resource not found"),
        }
    });
    assert_eq!(
        host.call("GET", "/devs/athiththan11/repos", ""),
        (200, Value::Array(vec![]))
    );
    assert_eq!(host.call("GET", "/devs/nobody/repos", "").0, 404);
}

#[test]
fn a_taken_username_is_409_and_nothing_is_added() {
    let host = ScriptedHost::new(|operation, _| match operation {
        "getDeveloper" => answer("getDeveloper", ATHITHTHAN),
        other => panic!("{other} must not be called"),
    });
    let body = r#"{"username":"athiththan11","name":"X","email":"x@y"}"#;
    let (status, body) = host.call("POST", "/devs", body);
    assert_eq!(status, 409);
    assert!(
        body["description"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
    assert_eq!(host.calls(), ["getDeveloper"]);
}

#[test]
fn a_repo_is_added_once_its_owner_is_known() {
    let host = ScriptedHost::new(|operation, payload| match operation {
        "getDeveloper" => answer("getDeveloper", ATHITHTHAN),
        "getRepo" => answer("getRepo", ""),
        "addRepo" => {
            let forks = &payload.child(NAMESPACE, "forks").unwrap().text;
            let repo = format!(
                "<ns2:repo><ns2:name>repodews</ns2:name><ns2:username>athiththan11</ns2:username><ns2:forks>{forks}</ns2:forks></ns2:repo>"
            );
            answer("addRepo", &repo)
        }
        other => panic!("unexpected {other}"),
    });
    let (status, body) = host.call(
        "POST",
        "/repos",
        r#"{"name":"repodews","username":"athiththan11","forks":7}"#,
    );
    assert_eq!(status, 201);
    assert_eq!(body["forks"], 7);
    assert_eq!(host.calls(), ["getDeveloper", "getRepo", "addRepo"]);
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
