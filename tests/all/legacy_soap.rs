//! The stand-in for the customer's legacy SOAP service (`legacy-soap`) keeps their contract:
//! the SoapUI requests work on the seeded data, every answer validates against
//! developers.xsd, and anything the schema rejects is a Client fault.

use std::path::PathBuf;

use harness::ServerProcess;
use tools::legacy::service::UNKNOWN_DEVELOPER_FAULT;
use tools::legacy::soap::{SOAP_ENV_NS, TNS};
use tools::legacy::wsdl::OPERATIONS;
use tools::legacy::{
    Framing, SOAP_PASSWORD, SOAP_USER, check_well_formed, fixture, recorded_requests, soap_call,
    start_legacy_soap, start_legacy_soap_framed, validate_soap_request,
};

/// What Spring-WS answers with.
const XML_CONTENT_TYPE: &str = "text/xml; charset=utf-8";

/// A running service on its own data directory, removed afterwards.
struct Legacy {
    process: ServerProcess,
    endpoint: String,
    dir: PathBuf,
}

impl Legacy {
    async fn start() -> Self {
        let dir = harness::temp_dir();
        let process = start_legacy_soap(&dir, Some(&dir.join("requests"))).await;
        Legacy {
            endpoint: format!("{}/ws", process.url),
            process,
            dir,
        }
    }

    async fn call(&self, envelope: &str) -> (u16, String) {
        soap_call(&self.endpoint, SOAP_USER, SOAP_PASSWORD, envelope).await
    }

    /// A POST /ws with the right credentials and content type.
    fn soap_post(&self) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .post(&self.endpoint)
            .basic_auth(SOAP_USER, Some(SOAP_PASSWORD))
            .header("Content-Type", "text/xml; charset=utf-8")
    }

    /// POSTs raw bytes with the right credentials and content type.
    async fn post(&self, body: Vec<u8>) -> (u16, String) {
        let response = self.soap_post().body(body).send().await.expect("POST /ws");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }
}

impl Drop for Legacy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The customer's SoapUI request for `operation`, with the CR line ends SoapUI stores as
/// a literal `\r`.
fn soapui_envelope(operation: &str) -> String {
    let project = std::fs::read_to_string(fixture("soapui-project.xml")).expect("SoapUI project");
    project
        .split("<con:request><![CDATA[")
        .skip(1)
        .filter_map(|rest| rest.split_once("]]></con:request>"))
        .map(|(envelope, _)| envelope.replace("\\r\n", "\r\n"))
        .find(|envelope| envelope.contains(&format!("<dev:{operation}Request>")))
        .unwrap_or_else(|| panic!("no SoapUI request for {operation}"))
}

/// A request envelope for `operation` with `fields` (already escaped), in order.
fn request(operation: &str, fields: &[(&str, &str)]) -> String {
    let fields: String = fields
        .iter()
        .map(|(name, value)| format!("<dev:{name}>{value}</dev:{name}>"))
        .collect();
    envelope(&format!(
        "<dev:{operation}Request>{fields}</dev:{operation}Request>"
    ))
}

fn envelope(body: &str) -> String {
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"{SOAP_ENV_NS}\" xmlns:dev=\"{TNS}\">\
         <soapenv:Header/><soapenv:Body>{body}</soapenv:Body></soapenv:Envelope>"
    )
}

/// The unescaped text of every `ns2:{tag}` element.
fn texts(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<ns2:{tag}>"), format!("</ns2:{tag}>"));
    xml.split(&open)
        .skip(1)
        .map(|rest| {
            let raw = rest.split(&close).next().unwrap_or_default();
            quick_xml::escape::unescape(raw)
                .expect("escaped text")
                .into_owned()
        })
        .collect()
}

#[track_caller]
fn assert_valid(xml: &str) {
    if let Err(e) = validate_soap_request(xml.as_bytes()) {
        panic!("not valid against developers.xsd: {e}\n{xml}");
    }
}

/// A 200 whose envelope validates; returns the body.
#[track_caller]
fn ok((status, body): (u16, String)) -> String {
    assert_eq!(status, 200, "{body}");
    assert_valid(&body);
    body
}

/// The unescaped faultstring of a fault envelope.
fn fault_string(xml: &str) -> String {
    let raw = xml
        .split_once("<faultstring xml:lang=\"en\">")
        .and_then(|(_, rest)| rest.split_once("</faultstring>"))
        .map_or("", |(string, _)| string);
    quick_xml::escape::unescape(raw)
        .expect("escaped faultstring")
        .into_owned()
}

/// A fault of `code` saying exactly `string`, in a valid envelope.
#[track_caller]
fn assert_fault((status, body): &(u16, String), code: &str, string: &str) {
    assert_eq!(*status, 500, "{body}");
    assert!(
        body.contains(&format!("<faultcode>SOAP-ENV:{code}</faultcode>")),
        "expected a {code} fault: {body}"
    );
    assert_eq!(fault_string(body), string, "in {body}");
    assert_valid(body);
}

#[tokio::test]
async fn soapui_requests_work_on_the_seeded_data() {
    let legacy = Legacy::start().await;
    let mut sent = Vec::new();
    let mut call = async |operation: &str| {
        let envelope = soapui_envelope(operation);
        sent.push(envelope.clone().into_bytes());
        ok(legacy.call(&envelope).await)
    };

    let developer = call("getDeveloper").await;
    assert_eq!(texts(&developer, "email"), ["athiththan@demo.com"]);
    assert!(developer.starts_with(
        "<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"http://schemas.xmlsoap.org/soap/envelope/\">\
         <SOAP-ENV:Header/><SOAP-ENV:Body><ns2:getDeveloperResponse xmlns:ns2=\"http://www.athiththan.com/devservice\">"
    ));
    let repos = call("getRepo").await;
    assert_eq!(
        texts(&repos, "name"),
        ["stackcheats", "event-handler-archetype", "angular-locus"]
    );
    assert_eq!(texts(&repos, "forks"), ["0", "1", "0"]);
    assert_eq!(texts(&call("addDeveloper").await, "name"), ["John Doe"]);
    let added = call("addRepo").await;
    assert_eq!(texts(&added, "name"), ["repodews"]);
    assert_eq!(texts(&call("getRepo").await, "name").len(), 4);
    assert_eq!(
        texts(&call("deleteDeveloper").await, "message"),
        ["Success"]
    );

    let recorded = recorded_requests(&legacy.dir.join("requests"));
    assert_eq!(
        recorded, sent,
        "the service records exactly what it received"
    );
    assert!(recorded.iter().all(|r| r.windows(2).any(|w| w == b"\r\n")));
}

/// BEHAVIOUR.md: an unknown user name is a Server fault with the runtime's text; a taken
/// one is an addDeveloper answer without a developer that changes nothing; addRepo adds
/// anything, for anyone, again and again; a deleted developer's repositories stay.
#[tokio::test]
async fn faults_and_messages_follow_the_original_service() {
    let legacy = Legacy::start().await;
    let get = |who: &str| request("getDeveloper", &[("username", who)]);
    let repos = |who: &str| request("getRepo", &[("username", who)]);
    let add_repo = |name: &str, who: &str| {
        request(
            "addRepo",
            &[("name", name), ("username", who), ("forks", "3")],
        )
    };

    let (status, not_found) = legacy.call(&get("nobody")).await;
    assert_eq!(status, 500);
    assert_eq!(
        not_found,
        format!(
            "<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"http://schemas.xmlsoap.org/soap/envelope/\">\
             <SOAP-ENV:Header/><SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>SOAP-ENV:Server</faultcode>\
             <faultstring xml:lang=\"en\">{}</faultstring></SOAP-ENV:Fault>\
             </SOAP-ENV:Body></SOAP-ENV:Envelope>",
            tools::legacy::soap::escape(UNKNOWN_DEVELOPER_FAULT)
        )
    );
    assert_valid(&not_found);

    let twin = request(
        "addDeveloper",
        &[
            ("username", "athiththan11"),
            ("name", "Twin"),
            ("email", "t@t"),
        ],
    );
    let (status, taken) = legacy.call(&twin).await;
    assert_eq!(status, 200, "{taken}");
    assert!(
        taken.contains(&format!(
            "<ns2:addDeveloperResponse xmlns:ns2=\"{TNS}\"></ns2:addDeveloperResponse>"
        )),
        "{taken}"
    );
    let kept = ok(legacy.call(&get("athiththan11")).await);
    assert_eq!(texts(&kept, "name"), ["Athiththan"]);

    let twice = add_repo("stackcheats", "athiththan11");
    assert_eq!(
        texts(&ok(legacy.call(&twice).await), "name"),
        ["stackcheats"]
    );
    let listed = ok(legacy.call(&repos("athiththan11")).await);
    assert_eq!(
        texts(&listed, "name"),
        [
            "stackcheats",
            "event-handler-archetype",
            "angular-locus",
            "stackcheats"
        ]
    );
    let orphan = ok(legacy.call(&add_repo("x", "nobody")).await);
    assert_eq!(texts(&orphan, "username"), ["nobody"]);
    assert_eq!(
        texts(&ok(legacy.call(&repos("nobody")).await), "name"),
        ["x"]
    );
    assert_fault(
        &legacy.call(&get("nobody")).await,
        "Server",
        UNKNOWN_DEVELOPER_FAULT,
    );
    let empty = ok(legacy.call(&repos("stranger")).await);
    assert!(empty.contains(&format!(
        "<ns2:getRepoResponse xmlns:ns2=\"{TNS}\"></ns2:getRepoResponse>"
    )));

    let delete = request("deleteDeveloper", &[("username", "athiththan11")]);
    assert_eq!(
        texts(&ok(legacy.call(&delete).await), "message"),
        ["Success"]
    );
    assert_fault(
        &legacy.call(&get("athiththan11")).await,
        "Server",
        UNKNOWN_DEVELOPER_FAULT,
    );
    assert_eq!(
        texts(&ok(legacy.call(&repos("athiththan11")).await), "repos").len(),
        4
    );
    assert_eq!(
        texts(&ok(legacy.call(&delete).await), "message"),
        ["Resource not found"]
    );
}

/// Strict by default: a chunked body gets 411 before anything is read or changed, the
/// same request with Content-Length is served; `--accept-chunked` reads both.
#[tokio::test]
async fn bodies_need_content_length_unless_chunked_ones_are_accepted() {
    let dir = harness::temp_dir();
    let add = request(
        "addDeveloper",
        &[("username", "chunky"), ("name", "C"), ("email", "c@e")],
    );
    let chunked = format!("{:x}\r\n{add}\r\n0\r\n\r\n", add.len());
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{SOAP_USER}:{SOAP_PASSWORD}")
        )
    );
    let send = async |url: &str, framing: (&str, String), body: &str| {
        let headers = [
            ("Authorization", auth.as_str()),
            ("Content-Type", "text/xml; charset=utf-8"),
            (framing.0, framing.1.as_str()),
        ];
        harness::raw_request(url, "POST", "/ws", &headers, body.as_bytes()).await
    };
    let is_chunked = || ("Transfer-Encoding", "chunked".to_string());
    let length = || ("Content-Length", add.len().to_string());

    for framing in [Framing::Strict, Framing::AcceptChunked] {
        let data = dir.join(format!("{framing:?}"));
        let legacy = start_legacy_soap_framed("127.0.0.1:0", &data, None, framing).await;
        let reply = send(&legacy.url, is_chunked(), &chunked).await;
        if framing == Framing::Strict {
            assert_eq!(reply.status, 411, "{}", reply.body);
            assert!(reply.body.contains("Content-Length"), "{}", reply.body);
            // The refused request added nothing: the name is still free.
            let again = send(&legacy.url, length(), &add).await;
            assert_eq!(again.status, 200, "{}", again.body);
            assert_eq!(texts(&again.body, "username"), ["chunky"]);
        } else {
            assert_eq!(reply.status, 200, "{}", reply.body);
            assert_eq!(texts(&reply.body, "username"), ["chunky"]);
            let again = send(&legacy.url, length(), &add).await;
            assert_eq!(again.status, 200);
            assert!(texts(&again.body, "username").is_empty(), "taken now");
        }
        legacy.stop().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn http_basic_credentials_are_required() {
    let legacy = Legacy::start().await;
    let envelope = soapui_envelope("getDeveloper");
    let http = reqwest::Client::new();
    let attempts = [
        http.post(&legacy.endpoint),
        http.post(&legacy.endpoint)
            .basic_auth(SOAP_USER, Some("wrong")),
        http.post(&legacy.endpoint)
            .basic_auth("admin", Some(SOAP_PASSWORD)),
        http.post(&legacy.endpoint).bearer_auth("pandaAsthma"),
    ];
    for attempt in attempts {
        let response = attempt
            .header("Content-Type", "text/xml")
            .body(envelope.clone())
            .send()
            .await
            .expect("POST /ws");
        assert_eq!(response.status(), 401);
        assert_eq!(
            response.headers()["www-authenticate"],
            "Basic realm=\"HydrogenRealm\""
        );
    }
    let response = legacy.soap_post().body(envelope).send().await;
    let response = response.expect("POST /ws");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], XML_CONTENT_TYPE);
}

/// Requests developers.xsd or SOAP 1.1 reject, and the words their fault must contain.
fn invalid_requests() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let get = |payload: &str| envelope(payload).into_bytes();
    let add_repo = |fields: &str| {
        get(&format!(
            "<dev:addRepoRequest>{fields}</dev:addRepoRequest>"
        ))
    };
    let add_developer = |fields: &str| {
        get(&format!(
            "<dev:addDeveloperRequest>{fields}</dev:addDeveloperRequest>"
        ))
    };
    let soap12 = "http://www.w3.org/2003/05/soap-envelope";
    vec![
        ("not XML", b"hello".to_vec(), "Malformed XML"),
        (
            "mismatched tags",
            get("<dev:getRepoRequest><dev:username>x</dev:user></dev:getRepoRequest>"),
            "Malformed XML",
        ),
        (
            "truncated",
            soapui_envelope("getRepo").as_bytes()[..120].to_vec(),
            "Malformed XML",
        ),
        ("empty body", Vec::new(), "empty"),
        ("not UTF-8", b"<a>\xff\xfe</a>".to_vec(), "not UTF-8"),
        (
            "declared Latin-1",
            [
                b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>".as_slice(),
                &get(""),
            ]
            .concat(),
            "Unsupported encoding",
        ),
        (
            "SOAP 1.2 envelope",
            format!("<e:Envelope xmlns:e=\"{soap12}\"><e:Body/></e:Envelope>").into_bytes(),
            "Expected a SOAP 1.1 Envelope",
        ),
        (
            "payload in another namespace",
            get(
                "<x:getRepoRequest xmlns:x=\"http://www.athiththan.com/devservice/v2\"><x:username>a</x:username></x:getRepoRequest>",
            ),
            "Unknown operation",
        ),
        (
            "unqualified field",
            get("<dev:getRepoRequest><username>a</username></dev:getRepoRequest>"),
            "expected element {http://www.athiththan.com/devservice}username, found username",
        ),
        (
            "unknown operation",
            get("<dev:getEverythingRequest/>"),
            "Unknown operation",
        ),
        (
            "wrong order",
            add_developer(
                "<dev:name>N</dev:name><dev:username>u</dev:username><dev:email>e</dev:email>",
            ),
            "found {http://www.athiththan.com/devservice}name",
        ),
        (
            "missing element",
            add_developer("<dev:username>u</dev:username><dev:name>N</dev:name>"),
            "missing element {http://www.athiththan.com/devservice}email",
        ),
        (
            "extra element",
            add_repo(
                "<dev:name>r</dev:name><dev:username>u</dev:username><dev:forks>1</dev:forks><dev:forks>2</dev:forks>",
            ),
            "unexpected element",
        ),
        (
            "forks not a number",
            add_repo(
                "<dev:name>r</dev:name><dev:username>athiththan11</dev:username><dev:forks>abc</dev:forks>",
            ),
            "forks 'abc' is not a valid xs:int",
        ),
        (
            "forks beyond xs:int",
            add_repo(
                "<dev:name>r</dev:name><dev:username>athiththan11</dev:username><dev:forks>2147483648</dev:forks>",
            ),
            "is not a valid xs:int",
        ),
        (
            "two body elements",
            get(
                "<dev:getRepoRequest><dev:username>a</dev:username></dev:getRepoRequest><dev:getRepoRequest><dev:username>a</dev:username></dev:getRepoRequest>",
            ),
            "exactly one element, found 2",
        ),
        ("empty Body", get(""), "exactly one element, found 0"),
        (
            "Body before Header",
            format!("<s:Envelope xmlns:s=\"{SOAP_ENV_NS}\"><s:Body/><s:Header/></s:Envelope>")
                .into_bytes(),
            "optional Header followed by a Body",
        ),
        (
            "text among elements",
            get("<dev:getRepoRequest>junk<dev:username>a</dev:username></dev:getRepoRequest>"),
            "must not contain text",
        ),
        (
            "no-break space among elements",
            get("<dev:getRepoRequest>&#160;<dev:username>a</dev:username></dev:getRepoRequest>"),
            "must not contain text",
        ),
        (
            "element inside a field",
            get("<dev:getRepoRequest><dev:username><dev:x/></dev:username></dev:getRepoRequest>"),
            "must contain text only",
        ),
        (
            "attribute on a field",
            get("<dev:getRepoRequest><dev:username id=\"1\">a</dev:username></dev:getRepoRequest>"),
            "Attribute id is not allowed",
        ),
        (
            "undeclared prefix",
            get("<q:getRepoRequest><q:username>a</q:username></q:getRepoRequest>"),
            "prefix 'q' is not declared",
        ),
        (
            "undeclared entity",
            get("<dev:getRepoRequest><dev:username>&nbsp;</dev:username></dev:getRepoRequest>"),
            "undeclared entity &nbsp;",
        ),
        (
            "DTD",
            [b"<!DOCTYPE x [<!ENTITY e \"boom\">]>".as_slice(), &get("")].concat(),
            "DTD is not allowed",
        ),
        (
            "deep nesting",
            get(&format!(
                "{}{}",
                "<dev:a>".repeat(40),
                "</dev:a>".repeat(40)
            )),
            "nested deeper",
        ),
    ]
}

#[tokio::test]
async fn invalid_requests_get_client_faults_and_the_service_lives_on() {
    let legacy = Legacy::start().await;
    for (label, body, text) in invalid_requests() {
        // The schema agrees, but for what only SOAP forbids (a DTD) or xmllint can read.
        if !matches!(label, "DTD" | "declared Latin-1") {
            let verdict = validate_soap_request(&body);
            assert!(verdict.is_err(), "{label}: developers.xsd accepts it too");
        }
        let reply = legacy.post(body).await;
        assert!(
            reply.0 == 500 && reply.1.contains("<faultcode>SOAP-ENV:Client</faultcode>"),
            "{label}: expected a Client fault, got {reply:?}"
        );
        let string = fault_string(&reply.1);
        assert!(
            string.contains(text),
            "{label}: expected '{text}' in '{string}'"
        );
        assert_valid(&reply.1);
    }
    let must_understand = envelope("").replace(
        "<soapenv:Header/>",
        "<soapenv:Header><t:Trace xmlns:t=\"urn:t\" soapenv:mustUnderstand=\"1\"/></soapenv:Header>",
    );
    assert_fault(
        &legacy.post(must_understand.into_bytes()).await,
        "MustUnderstand",
        "Header block {urn:t}Trace was not understood",
    );

    let (status, _) = harness::oversized_post(&legacy.process.url, "/ws", "", 2 << 20).await;
    assert_eq!(status, 413, "bodies over 1 MiB are refused");
    let http = reqwest::Client::new();
    let status = |r: reqwest::Response| r.status().as_u16();
    let wrong_type = http
        .post(&legacy.endpoint)
        .basic_auth(SOAP_USER, Some(SOAP_PASSWORD))
        .header("Content-Type", "application/json")
        .body(soapui_envelope("getRepo"));
    assert_eq!(status(wrong_type.send().await.expect("POST")), 415);
    let get_ws = http.get(&legacy.endpoint).send().await.expect("GET /ws");
    assert_eq!(status(get_ws), 405);
    let elsewhere = format!("{}/services/ws", legacy.process.url);
    assert_eq!(status(http.get(elsewhere).send().await.expect("GET")), 404);

    ok(legacy.call(&soapui_envelope("getDeveloper")).await);
    assert!(!legacy.process.output().contains("panicked"));
}

#[tokio::test]
async fn prefixes_defaults_entities_and_whitespace_are_accepted() {
    let legacy = Legacy::start().await;
    let variants = [
        // Default namespaces instead of prefixes, no Header.
        format!(
            "<Envelope xmlns=\"{SOAP_ENV_NS}\"><Body><getRepoRequest xmlns=\"{TNS}\">\
             <username>athiththan11</username></getRepoRequest></Body></Envelope>"
        ),
        // Other prefixes, a declaration, comments, tabs and an unrelated header block.
        format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!-- c -->\n<S:Envelope xmlns:S=\"{SOAP_ENV_NS}\">\n\t\
             <S:Header><h:Trace xmlns:h=\"urn:h\" S:mustUnderstand=\"0\">x</h:Trace></S:Header>\n\t\
             <S:Body>\n\t\t<d:getRepoRequest xmlns:d=\"{TNS}\"><!-- who -->\n\t\t\t<d:username>athiththan11</d:username>\n\t\t\
             </d:getRepoRequest>\n\t</S:Body>\n</S:Envelope>\n"
        ),
        // CDATA and character references in the value.
        request(
            "getRepo",
            &[("username", "<![CDATA[athith]]>&#116;&#x68;an11")],
        ),
    ];
    for variant in variants {
        assert_valid(&variant);
        let body = ok(legacy.call(&variant).await);
        assert_eq!(texts(&body, "repos").len(), 3, "{variant}\n{body}");
    }
    let padded = request(
        "addRepo",
        &[
            ("name", "padded"),
            ("username", "athiththan11"),
            ("forks", "\r\n +7 \t"),
        ],
    );
    // xs:int collapses whitespace (XSD 1.0 Part 2, §3.3.17), as Xerces and so Spring-WS
    // do; libxml2 2.9 does not, so xmllint is not asked about this one.
    assert_eq!(texts(&ok(legacy.call(&padded).await), "forks"), ["7"]);
}

#[tokio::test]
async fn markup_and_unicode_round_trip() {
    let legacy = Legacy::start().await;
    let name = "<&>\"' Zoë 🦀\r\nline";
    let add = request(
        "addDeveloper",
        &[
            ("username", "zoë"),
            ("name", &tools::legacy::soap::escape(name)),
            ("email", "<![CDATA[z&o@ë.example]]>"),
        ],
    );
    let added = ok(legacy.call(&add).await);
    assert!(added.contains("<ns2:name>&lt;&amp;&gt;\"' Zoë 🦀&#13;\nline</ns2:name>"));
    let got = ok(legacy
        .call(&request("getDeveloper", &[("username", "zoë")]))
        .await);
    assert_eq!(texts(&got, "name"), [name]);
    assert_eq!(texts(&got, "email"), ["z&o@ë.example"]);
}

#[tokio::test]
async fn wsdl_is_served_without_credentials() {
    let legacy = Legacy::start().await;
    let response = reqwest::get(format!("{}/developers.wsdl", legacy.endpoint))
        .await
        .expect("GET WSDL");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], XML_CONTENT_TYPE);
    let wsdl = response.text().await.expect("WSDL");
    check_well_formed(wsdl.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{wsdl}"));
    assert!(wsdl.contains(&format!("<soap:address location=\"{}\"/>", legacy.endpoint)));
    assert!(wsdl.contains(tools::legacy::wsdl::schema_element()));
    assert!(
        wsdl.contains("<wsdl:binding name=\"DevelopersPortSoap11\" type=\"tns:DevelopersPort\">")
    );
    for operation in OPERATIONS {
        assert!(wsdl.contains(&format!("<wsdl:operation name=\"{operation}\">")));
        assert!(wsdl.contains(&format!("element=\"tns:{operation}Response\"")));
    }
}

#[tokio::test]
async fn adds_and_deletes_survive_a_restart() {
    let dir = harness::temp_dir();
    let first = start_legacy_soap(&dir, None).await;
    let endpoint = format!("{}/ws", first.url);
    let call = async |endpoint: &str, envelope: String| {
        soap_call(endpoint, SOAP_USER, SOAP_PASSWORD, &envelope).await
    };
    ok(call(&endpoint, soapui_envelope("addDeveloper")).await);
    let repo = request(
        "addRepo",
        &[("name", "kept"), ("username", "johndoe"), ("forks", "-2")],
    );
    ok(call(&endpoint, repo).await);
    let delete = request("deleteDeveloper", &[("username", "combatOstrich")]);
    ok(call(&endpoint, delete).await);
    first.stop().await;

    let second = start_legacy_soap(&dir, None).await;
    let endpoint = format!("{}/ws", second.url);
    let repos = ok(call(&endpoint, request("getRepo", &[("username", "johndoe")])).await);
    assert_eq!(texts(&repos, "forks"), ["-2"]);
    let gone = call(
        &endpoint,
        request("getDeveloper", &[("username", "combatOstrich")]),
    )
    .await;
    assert_fault(&gone, "Server", UNKNOWN_DEVELOPER_FAULT);
    ok(call(&endpoint, soapui_envelope("getDeveloper")).await);
    second.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database from before the stand-in modelled the original (repositories unique per
/// owner and tied to it) is unlinked in place, rows kept.
#[tokio::test]
async fn an_older_database_is_unlinked_keeping_its_rows() {
    let dir = harness::temp_dir();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("developers.db"))
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE developer (username TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
         CREATE TABLE repo (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
             username TEXT NOT NULL REFERENCES developer (username) ON DELETE CASCADE,
             forks INTEGER NOT NULL, UNIQUE (username, name));
         INSERT INTO developer VALUES ('old', 'Old', 'o@e');
         INSERT INTO repo (name, username, forks) VALUES ('kept', 'old', 2);",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let legacy = start_legacy_soap(&dir, None).await;
    let endpoint = format!("{}/ws", legacy.url);
    let call =
        async |envelope: String| soap_call(&endpoint, SOAP_USER, SOAP_PASSWORD, &envelope).await;
    let again = request(
        "addRepo",
        &[("name", "kept"), ("username", "old"), ("forks", "3")],
    );
    ok(call(again).await);
    let orphan = request(
        "addRepo",
        &[("name", "x"), ("username", "nobody"), ("forks", "0")],
    );
    ok(call(orphan).await);
    ok(call(request("deleteDeveloper", &[("username", "old")])).await);
    let repos = ok(call(request("getRepo", &[("username", "old")])).await);
    assert_eq!(texts(&repos, "forks"), ["2", "3"]);
    legacy.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_soap_request_checks_payloads_against_developers_xsd() {
    for operation in OPERATIONS {
        let envelope = soapui_envelope(operation);
        validate_soap_request(envelope.as_bytes())
            .unwrap_or_else(|e| panic!("{operation}: {e}\n{envelope}"));
    }
    let mistyped = soapui_envelope("addRepo").replace("<dev:forks>0<", "<dev:forks>zero<");
    let error = validate_soap_request(mistyped.as_bytes()).expect_err("forks must be an xs:int");
    assert!(
        error.contains("forks") && error.contains("xs:int"),
        "{error}"
    );
    let reordered = request(
        "addDeveloper",
        &[("name", "N"), ("username", "u"), ("email", "e")],
    );
    assert!(validate_soap_request(reordered.as_bytes()).is_err());
}
