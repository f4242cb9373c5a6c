//! SOAP 1.1 document/literal messages: requests parsed namespace-aware and checked strictly
//! against developers.xsd, responses and faults written the way Spring-WS writes them.

use quick_xml::NsReader;
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::name::ResolveResult;

use super::store::{Developer, Repo};

/// SOAP 1.1 envelope namespace.
pub const SOAP_ENV_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// Target namespace of developers.xsd.
pub const TNS: &str = "http://www.athiththan.com/devservice";

/// Deeper than any real envelope; bounds the work a hostile body can cause.
const MAX_DEPTH: usize = 32;

/// A request, as a payload root element of developers.xsd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `getDeveloperRequest`.
    GetDeveloper {
        /// Whom to read.
        username: String,
    },
    /// `addDeveloperRequest`.
    AddDeveloper(Developer),
    /// `deleteDeveloperRequest`.
    DeleteDeveloper {
        /// Whom to delete.
        username: String,
    },
    /// `getRepoRequest`.
    GetRepo {
        /// Whose repositories.
        username: String,
    },
    /// `addRepoRequest`.
    AddRepo(Repo),
}

/// A successful answer, one per operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `getDeveloperResponse`.
    GetDeveloper(Developer),
    /// `addDeveloperResponse`: the stored developer, or none when the user name was taken
    /// (the original answers so, outside its own schema, which requires one).
    AddDeveloper(Option<Developer>),
    /// `deleteDeveloperResponse` with its message.
    DeleteDeveloper(&'static str),
    /// `getRepoResponse`.
    GetRepo(Vec<Repo>),
    /// `addRepoResponse`.
    AddRepo(Repo),
}

/// SOAP 1.1 fault codes (§4.4.1) this service uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCode {
    /// The message was wrong.
    Client,
    /// The message was right but could not be processed.
    Server,
    /// A header block marked mustUnderstand was not understood.
    MustUnderstand,
}

/// A SOAP fault (always sent with HTTP 500, SOAP 1.1 §6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// `faultcode`.
    pub code: FaultCode,
    /// `faultstring`.
    pub string: String,
}

impl Fault {
    /// A fault of the sender.
    pub fn client(string: impl Into<String>) -> Self {
        Fault {
            code: FaultCode::Client,
            string: string.into(),
        }
    }

    /// A fault of the service.
    pub fn server(string: impl Into<String>) -> Self {
        Fault {
            code: FaultCode::Server,
            string: string.into(),
        }
    }
}

/// Parses and validates a request body.
pub fn parse_request(body: &[u8]) -> Result<Request, Fault> {
    let text = std::str::from_utf8(body)
        .map_err(|e| Fault::client(format!("Request body is not UTF-8: {e}")))?;
    if is_blank(text) {
        return Err(Fault::client("Request body is empty"));
    }
    let envelope = parse_document(text).map_err(Fault::client)?;
    let payload = body_payload(&envelope)?;
    request(payload).map_err(Fault::client)
}

/// An element, its namespace resolved ("" when it has none).
#[derive(Debug, Default)]
struct Element {
    ns: String,
    name: String,
    /// Attributes other than namespace declarations: (namespace, local name, value).
    attributes: Vec<(String, String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn is(&self, ns: &str, name: &str) -> bool {
        self.ns == ns && self.name == name
    }

    /// `{namespace}name`, as schema validators name elements.
    fn qname(&self) -> String {
        if self.ns.is_empty() {
            self.name.clone()
        } else {
            format!("{{{}}}{}", self.ns, self.name)
        }
    }

    /// Element-only content: whitespace between children is all the text it may have.
    fn expect_no_text(&self) -> Result<(), String> {
        if is_blank(&self.text) {
            Ok(())
        } else {
            Err(format!("Element {} must not contain text", self.qname()))
        }
    }
}

/// Parses a whole document into its root element.
fn parse_document(xml: &str) -> Result<Element, String> {
    let mut reader = NsReader::from_str(xml);
    reader.config_mut().check_comments = true;
    let mut open: Vec<Element> = Vec::new();
    let mut root = None;
    let mut first = true;
    loop {
        let at = reader.buffer_position();
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|e| format!("Malformed XML at byte {at}: {e}"))?;
        let ns = namespace(ns);
        match event {
            Event::Decl(decl) if first => check_encoding(decl.encoding())?,
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                return Err(format!(
                    "Malformed XML at byte {at}: content after the document element ({})",
                    String::from_utf8_lossy(start.name().as_ref())
                ));
            }
            Event::Start(start) => {
                if open.len() == MAX_DEPTH {
                    return Err(format!("Elements nested deeper than {MAX_DEPTH} levels"));
                }
                open.push(element(&reader, ns?, &start)?);
            }
            Event::Empty(start) => close(element(&reader, ns?, &start)?, &mut open, &mut root),
            Event::End(_) => {
                let done = open.pop().ok_or("Malformed XML: unmatched end tag")?;
                close(done, &mut open, &mut root);
            }
            Event::Text(text) => add_text(&mut open, &text.xml10_content().map_err(bad)?)?,
            Event::CData(data) => add_text(&mut open, &data.xml10_content().map_err(bad)?)?,
            Event::GeneralRef(reference) => add_text(&mut open, &entity(&reference)?)?,
            Event::Comment(_) => {}
            Event::Decl(_) => return Err("Malformed XML: misplaced XML declaration".into()),
            Event::PI(_) => return Err("Processing instructions are not allowed in SOAP".into()),
            Event::DocType(_) => return Err("A DTD is not allowed in SOAP messages".into()),
            Event::Eof => break,
        }
        first = false;
    }
    match (root, open.last()) {
        (Some(root), None) => Ok(root),
        (_, Some(unclosed)) => Err(format!(
            "Malformed XML: element {} is not closed",
            unclosed.qname()
        )),
        (None, None) => Err("Malformed XML: no document element".into()),
    }
}

fn bad(err: impl std::fmt::Display) -> String {
    format!("Malformed XML: {err}")
}

fn namespace(resolved: ResolveResult<'_>) -> Result<String, String> {
    match resolved {
        ResolveResult::Unbound => Ok(String::new()),
        ResolveResult::Bound(ns) => Ok(String::from_utf8_lossy(ns.as_ref()).into_owned()),
        ResolveResult::Unknown(prefix) => Err(format!(
            "Malformed XML: namespace prefix '{}' is not declared",
            String::from_utf8_lossy(&prefix)
        )),
    }
}

/// We read UTF-8 only; a body that says otherwise would be misread.
fn check_encoding(
    encoding: Option<Result<std::borrow::Cow<'_, [u8]>, quick_xml::events::attributes::AttrError>>,
) -> Result<(), String> {
    match encoding {
        None => Ok(()),
        Some(Ok(name)) if name.eq_ignore_ascii_case(b"utf-8") => Ok(()),
        Some(Ok(name)) => Err(format!(
            "Unsupported encoding '{}': only UTF-8 is accepted",
            String::from_utf8_lossy(&name)
        )),
        Some(Err(e)) => Err(bad(e)),
    }
}

fn element(reader: &NsReader<&[u8]>, ns: String, start: &BytesStart) -> Result<Element, String> {
    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
    let mut attributes = Vec::new();
    for attribute in start.attributes() {
        let attribute = attribute.map_err(bad)?;
        if attribute.key.as_namespace_binding().is_some() {
            continue;
        }
        let (attribute_ns, local) = reader.resolve_attribute(attribute.key);
        let value = attribute.unescape_value().map_err(bad)?.into_owned();
        attributes.push((
            namespace(attribute_ns)?,
            String::from_utf8_lossy(local.as_ref()).into_owned(),
            value,
        ));
    }
    Ok(Element {
        ns,
        name,
        attributes,
        ..Element::default()
    })
}

fn close(done: Element, open: &mut [Element], root: &mut Option<Element>) {
    match open.last_mut() {
        Some(parent) => parent.children.push(done),
        None => *root = Some(done),
    }
}

/// Character data of the innermost open element; outside the root only whitespace.
fn add_text(open: &mut [Element], text: &str) -> Result<(), String> {
    if let Some(c) = text.chars().find(|c| !is_xml_char(*c)) {
        return Err(format!(
            "Malformed XML: character U+{:04X} is not allowed",
            c as u32
        ));
    }
    match open.last_mut() {
        Some(current) => current.text.push_str(text),
        None if is_blank(text) => {}
        None => return Err("Malformed XML: text outside the document element".into()),
    }
    Ok(())
}

/// XML 1.0 `S`: narrower than Unicode whitespace (no-break space is content).
fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_blank(text: &str) -> bool {
    text.chars().all(is_xml_space)
}

/// XML 1.0 `Char` (surrogates cannot occur in a Rust `char`).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{FFFD}' | '\u{10000}'..)
}

/// A character reference or one of the five predefined entities; nothing else is
/// declared (SOAP forbids a DTD).
fn entity(reference: &BytesRef) -> Result<String, String> {
    if let Some(c) = reference.resolve_char_ref().map_err(bad)? {
        return Ok(c.to_string());
    }
    let name = reference.decode().map_err(bad)?;
    let c = match name.as_ref() {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        other => return Err(format!("Malformed XML: undeclared entity &{other};")),
    };
    Ok(c.to_string())
}

/// The one element in the Body of a SOAP 1.1 Envelope.
fn body_payload(envelope: &Element) -> Result<&Element, Fault> {
    if !envelope.is(SOAP_ENV_NS, "Envelope") {
        return Err(Fault::client(format!(
            "Expected a SOAP 1.1 Envelope ({{{SOAP_ENV_NS}}}Envelope), found {}",
            envelope.qname()
        )));
    }
    envelope.expect_no_text().map_err(Fault::client)?;
    let (header, body) = match envelope.children.as_slice() {
        [body] => (None, body),
        [header, body] if header.is(SOAP_ENV_NS, "Header") => (Some(header), body),
        _ => {
            return Err(Fault::client(
                "Envelope must contain an optional Header followed by a Body, and nothing else",
            ));
        }
    };
    if let Some(header) = header {
        check_header(header)?;
    }
    if !body.is(SOAP_ENV_NS, "Body") {
        return Err(Fault::client(format!(
            "Expected {{{SOAP_ENV_NS}}}Body, found {}",
            body.qname()
        )));
    }
    body.expect_no_text().map_err(Fault::client)?;
    match body.children.as_slice() {
        [payload] => Ok(payload),
        children => Err(Fault::client(format!(
            "Body must contain exactly one element, found {}",
            children.len()
        ))),
    }
}

/// Header blocks must be qualified (SOAP 1.1 §4.2); none is understood, so one addressed
/// to us with mustUnderstand="1" is a fault (§4.2.3).
fn check_header(header: &Element) -> Result<(), Fault> {
    header.expect_no_text().map_err(Fault::client)?;
    for block in &header.children {
        if block.ns.is_empty() {
            return Err(Fault::client(format!(
                "Header block {} must be namespace-qualified",
                block.name
            )));
        }
        let attribute = |name: &str| {
            block
                .attributes
                .iter()
                .find(|(ns, local, _)| ns == SOAP_ENV_NS && local == name)
                .map(|(_, _, value)| value.trim_matches(is_xml_space))
        };
        let for_us = matches!(
            attribute("actor"),
            None | Some("http://schemas.xmlsoap.org/soap/actor/next")
        );
        if for_us && attribute("mustUnderstand") == Some("1") {
            return Err(Fault {
                code: FaultCode::MustUnderstand,
                string: format!("Header block {} was not understood", block.qname()),
            });
        }
    }
    Ok(())
}

/// The operation a payload element asks for, with its fields.
fn request(payload: &Element) -> Result<Request, String> {
    if payload.ns != TNS {
        return Err(format!(
            "Unknown operation {}: payloads must be in namespace {TNS}",
            payload.qname()
        ));
    }
    let request = match payload.name.as_str() {
        "getDeveloperRequest" => {
            let [username] = fields(payload, ["username"])?;
            Request::GetDeveloper { username }
        }
        "addDeveloperRequest" => {
            let [username, name, email] = fields(payload, ["username", "name", "email"])?;
            Request::AddDeveloper(Developer {
                username,
                name,
                email,
            })
        }
        "deleteDeveloperRequest" => {
            let [username] = fields(payload, ["username"])?;
            Request::DeleteDeveloper { username }
        }
        "getRepoRequest" => {
            let [username] = fields(payload, ["username"])?;
            Request::GetRepo { username }
        }
        "addRepoRequest" => {
            let [name, username, forks] = fields(payload, ["name", "username", "forks"])?;
            let forks = xs_int(&payload.name, "forks", &forks)?;
            Request::AddRepo(Repo {
                name,
                username,
                forks,
            })
        }
        other => return Err(format!("Unknown operation {{{TNS}}}{other}")),
    };
    Ok(request)
}

/// The text of exactly the child elements `names`, in that order, each in the target
/// namespace, without attributes or child elements of their own.
fn fields<const N: usize>(parent: &Element, names: [&str; N]) -> Result<[String; N], String> {
    no_attributes(parent)?;
    parent.expect_no_text()?;
    let op = &parent.name;
    if let Some(extra) = parent.children.get(N) {
        return Err(format!("{op}: unexpected element {}", extra.qname()));
    }
    let mut values = names.map(|_| String::new());
    for (i, name) in names.iter().enumerate() {
        let Some(child) = parent.children.get(i) else {
            return Err(format!("{op}: missing element {{{TNS}}}{name}"));
        };
        if !child.is(TNS, name) {
            return Err(format!(
                "{op}: expected element {{{TNS}}}{name}, found {}",
                child.qname()
            ));
        }
        no_attributes(child)?;
        if !child.children.is_empty() {
            return Err(format!("{op}: element {name} must contain text only"));
        }
        values[i] = child.text.clone();
    }
    Ok(values)
}

fn no_attributes(element: &Element) -> Result<(), String> {
    match element.attributes.first() {
        None => Ok(()),
        Some((_, name, _)) => Err(format!(
            "Attribute {name} is not allowed on {}",
            element.qname()
        )),
    }
}

/// An `xs:int`: whitespace collapsed, then a 32-bit signed integer.
fn xs_int(op: &str, name: &str, text: &str) -> Result<i32, String> {
    let collapsed = text.trim_matches(is_xml_space);
    collapsed
        .parse()
        .map_err(|_| format!("{op}: {name} '{text}' is not a valid xs:int"))
}

/// The whole response envelope.
pub fn render_response(response: &Response) -> String {
    let (root, content) = match response {
        Response::GetDeveloper(d) => ("getDeveloperResponse", developer(d)),
        Response::AddDeveloper(d) => (
            "addDeveloperResponse",
            d.as_ref().map(developer).unwrap_or_default(),
        ),
        Response::DeleteDeveloper(message) => ("deleteDeveloperResponse", leaf("message", message)),
        Response::GetRepo(repos) => (
            "getRepoResponse",
            repos.iter().map(|r| repo("repos", r)).collect(),
        ),
        Response::AddRepo(r) => ("addRepoResponse", repo("repo", r)),
    };
    envelope(&format!(
        "<ns2:{root} xmlns:ns2=\"{TNS}\">{content}</ns2:{root}>"
    ))
}

/// The whole fault envelope.
pub fn render_fault(fault: &Fault) -> String {
    let code = match fault.code {
        FaultCode::Client => "Client",
        FaultCode::Server => "Server",
        FaultCode::MustUnderstand => "MustUnderstand",
    };
    envelope(&format!(
        "<SOAP-ENV:Fault><faultcode>SOAP-ENV:{code}</faultcode>\
         <faultstring xml:lang=\"en\">{}</faultstring></SOAP-ENV:Fault>",
        escape(&fault.string)
    ))
}

fn envelope(body: &str) -> String {
    format!(
        "<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"{SOAP_ENV_NS}\"><SOAP-ENV:Header/>\
         <SOAP-ENV:Body>{body}</SOAP-ENV:Body></SOAP-ENV:Envelope>"
    )
}

fn developer(d: &Developer) -> String {
    let fields = leaf("username", &d.username) + &leaf("name", &d.name) + &leaf("email", &d.email);
    format!("<ns2:developer>{fields}</ns2:developer>")
}

fn repo(tag: &str, r: &Repo) -> String {
    let fields = leaf("name", &r.name)
        + &leaf("username", &r.username)
        + &leaf("forks", &r.forks.to_string());
    format!("<ns2:{tag}>{fields}</ns2:{tag}>")
}

fn leaf(tag: &str, text: &str) -> String {
    format!("<ns2:{tag}>{}</ns2:{tag}>", escape(text))
}

/// Escapes character data as Spring-WS does (quotes stay), and CR, which a parser would
/// otherwise read as LF.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}
