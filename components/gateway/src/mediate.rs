//! An API's mediation ([`apim_manifest::mediation`]) run on an admitted call: what the
//! backend's request and the client's answer get, as a [`Rewrite`] both forwarding paths
//! apply (the host's, through `apim:gateway/policy`'s `forward`, and the component's own).
//!
//! The in flow runs when the call is decided, on the request's head, and on its body
//! when the flow reads or makes one ([`touches_body`]: the body is then read whole
//! first). The out flow runs then too when it only sets headers; when it needs the
//! backend's answer ([`needs_answer`]), once the answer has been read whole
//! ([`answer`]). Both see the properties the in flow leaves. The fault flow runs when
//! the backend fails ([`fault`]), on those properties and the failure.

use std::cell::RefCell;

use apim_manifest::ApiRoute;
use apim_manifest::mediation::{
    BodyPath, CallFact, MAX_PATTERN_BYTES, MAX_PAYLOAD_BYTES, Media, Mediation, PathPart, Step,
    Value,
};
pub use apim_manifest::mediation::{needs_answer, touches_body};
use regex::Regex;

use apim_http::text;

use crate::faults::Fault;
use crate::host::{Headers, Response, header};
use crate::payloads::{self, BodyValue, Parsed, Unconverted};

/// Patterns an instance keeps compiled at most (cleared when full).
const MAX_PATTERNS: usize = 256;
/// Longest value a log line shows, bytes.
const MAX_LOGGED_BYTES: usize = 1024;
/// Headers whose values a log never shows.
const CREDENTIALS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "apikey",
    "x-api-key",
    "x-jwt-assertion",
];
/// Query parameters whose values a log never shows.
const CREDENTIAL_PARAMETERS: &[&str] = &["access_token", "apikey", "api_key", "token"];
/// Body members and elements whose values a log never shows.
const CREDENTIAL_FIELDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "client_secret",
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "apikey",
    "api_key",
    "authorization",
];

/// Whether a body path ends at a member or element named as a credential.
fn reads_a_credential_field(path: &BodyPath) -> bool {
    let last = match path {
        BodyPath::Json(parts) => match parts.last() {
            Some(PathPart::Key(key)) => key.as_str(),
            _ => return false,
        },
        BodyPath::Xml(path) => path.names.last().map_or("", String::as_str),
    };
    CREDENTIAL_FIELDS.contains(&last.to_ascii_lowercase().as_str())
}

/// Filters' patterns, compiled once per instance.
#[derive(Debug, Clone, Default)]
pub struct Patterns(RefCell<Vec<(String, Option<Regex>)>>);

impl Patterns {
    /// Whether `text` matches `pattern` (anchored by the control plane); a pattern that
    /// does not compile here matches nothing.
    fn matches(&self, pattern: &str, text: &str) -> bool {
        let mut known = self.0.borrow_mut();
        if let Some((_, regex)) = known.iter().find(|(p, _)| p == pattern) {
            return regex.as_ref().is_some_and(|r| r.is_match(text));
        }
        if known.len() >= MAX_PATTERNS {
            known.clear();
        }
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(MAX_PATTERN_BYTES)
            .dfa_size_limit(MAX_PATTERN_BYTES)
            .build()
            .ok();
        let matched = regex.as_ref().is_some_and(|r| r.is_match(text));
        known.push((pattern.to_string(), regex));
        matched
    }
}

/// What a call's mediation changes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Rewrite {
    /// Client headers that do not pass on to the backend (removed, or set anew).
    pub removed: Vec<String>,
    /// Headers the backend's request gets.
    pub added: Headers,
    /// Headers taken off the backend's answer.
    pub response_removed: Vec<String>,
    /// Headers the backend's answer gets, replacing any of the same names.
    pub response_set: Headers,
    /// The answer the in flow gave (`respond`, `drop`): the call goes no further.
    pub answer: Option<Response>,
    /// The body the backend gets instead of the client's (the in flow made or
    /// converted it).
    pub body: Option<Body>,
    /// The path and query the backend gets after the endpoint's instead of the client's
    /// (`REST_URL_POSTFIX`), as the flow set it: not checked yet.
    pub path: Option<String>,
}

/// A message's body and its content type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Body {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

impl Body {
    /// The body of a message with these headers.
    pub fn of(headers: &Headers, bytes: Vec<u8>) -> Self {
        Self {
            content_type: header(headers, "content-type")
                .unwrap_or_default()
                .to_string(),
            bytes,
        }
    }
}

/// What the gateway knows of the call.
pub struct Facts<'a> {
    pub api: &'a ApiRoute,
    pub method: &'a str,
    /// The request's query, canonical, without `?`.
    pub query: Option<&'a str>,
    /// The token's end user (empty when none).
    pub user: &'a str,
    /// The calling application's id (empty when none).
    pub application: &'a str,
    pub now_ms: i64,
    /// The failure's WSO2 code and message, in the fault flow.
    pub error: Option<(u32, &'a str)>,
}

impl<'a> Facts<'a> {
    /// What a flow run after the call was decided knows of it: the API and the request;
    /// no user, application or failure.
    pub fn after(
        api: &'a ApiRoute,
        request: &'a crate::host::Request,
        target: &'a apim_manifest::canon::Target,
        now_ms: i64,
    ) -> Self {
        Self {
            api,
            method: &request.method,
            query: target.query.as_deref(),
            user: "",
            application: "",
            now_ms,
            error: None,
        }
    }
}

/// Runs the in flow of `plan` for a call whose client headers are `request` and whose
/// body is `body` (read whole where the flow [`touches_body`]), and the out flow unless
/// it [`needs_answer`]. A body the in flow cannot read or convert is refused: the
/// client's fault when it is not the JSON or XML it says it is.
pub fn run(
    plan: &Mediation,
    request: &Headers,
    body: Option<Body>,
    facts: &Facts,
    patterns: &Patterns,
) -> Result<Rewrite, Fault> {
    let mut properties = Properties::default();
    let mut rewrite = Rewrite::default();
    let mut incoming = Message::new(Some(request), body);
    incoming.run(&plan.request, facts, &mut properties, patterns);
    if incoming.ended() {
        rewrite.answer = Some(incoming.into_answer(refused_request)?);
        return Ok(rewrite);
    }
    rewrite.body = incoming.outgoing_body().map_err(refused_request)?;
    rewrite.path = incoming.path.take();
    (rewrite.removed, rewrite.added) = incoming.into_changes();
    if needs_answer(&plan.response) {
        // The out flow reads the answer as it is sent, not compressed.
        rewrite.removed.push("accept-encoding".into());
    }
    if let Some(body) = &rewrite.body {
        // What described the client's body does not describe this one.
        rewrite
            .removed
            .extend(BODY_DESCRIPTIONS.iter().map(|name| name.to_string()));
        rewrite.removed.push("content-type".into());
        rewrite.added.retain(|(name, _)| name != "content-type");
        rewrite.added.push((
            "content-type".into(),
            body.content_type.clone().into_bytes(),
        ));
    }
    if !needs_answer(&plan.response) {
        let mut outgoing = Message::new(None, None);
        outgoing.run(&plan.response, facts, &mut properties, patterns);
        (rewrite.response_removed, rewrite.response_set) = outgoing.into_changes();
    }
    Ok(rewrite)
}

/// Runs the out flow of `plan` on the backend's `answer`, for a call whose client
/// headers are `request` (the in flow run again, quietly and on the head alone, for the
/// properties it leaves): the answer the client gets.
pub fn answer(
    plan: &Mediation,
    request: &Headers,
    facts: &Facts,
    patterns: &Patterns,
    mut answer: Response,
) -> Result<Response, Fault> {
    if answer.body.len() > apim_http::bodies::MAX_MEDIATED_BYTES {
        return Err(Fault::payload_past_its_bound());
    }
    let mut properties = Properties::default();
    let mut incoming = Message::new(Some(request), None);
    incoming.quiet = true;
    incoming.run(&plan.request, facts, &mut properties, patterns);
    let body = Body::of(&answer.headers, std::mem::take(&mut answer.body));
    let answered = answer.headers.clone();
    let mut outgoing = Message::new(Some(&answered), Some(body));
    outgoing.run(&plan.response, facts, &mut properties, patterns);
    if outgoing.dropped {
        return Ok(dropped());
    }
    let status = outgoing.status;
    let made = outgoing.outgoing_body().map_err(refused_answer)?;
    let kept = outgoing.body.take();
    let (removed, set) = outgoing.into_changes();
    apim_http::remove_headers(&mut answer.headers, &removed);
    apim_http::set_headers(&mut answer.headers, set);
    if let Some(status) = status {
        answer.status = status;
    }
    match made {
        Some(body) => {
            apim_http::remove_headers(&mut answer.headers, &["content-length"]);
            apim_http::remove_headers(&mut answer.headers, BODY_DESCRIPTIONS);
            let content_type = ("content-type".to_string(), body.content_type.into_bytes());
            apim_http::set_headers(&mut answer.headers, [content_type]);
            answer.body = body.bytes;
        }
        None => answer.body = kept.map(|body| body.bytes).unwrap_or_default(),
    }
    Ok(answer)
}

/// Headers that describe a body's bytes, which a body made anew leaves behind.
const BODY_DESCRIPTIONS: &[&str] = &["content-encoding", "content-md5", "digest", "etag"];

/// The answer to a dropped message: accepted, nothing more.
fn dropped() -> Response {
    Response {
        status: 202,
        headers: Headers::new(),
        body: Vec::new(),
    }
}

/// The refusal of a request whose body its mediation could not read or convert: the
/// client's fault, as is a body made from it past the bound.
fn refused_request(why: Unconverted) -> Fault {
    match why {
        Unconverted::Unreadable(why) => {
            Fault::bad_request(&format!("The request's body could not be read: {why}."))
        }
        Unconverted::TooLarge => Fault::payload_too_large(),
    }
}

/// The fault for a backend's answer its mediation could not read or convert.
fn refused_answer(why: Unconverted) -> Fault {
    match why {
        Unconverted::Unreadable(_) => Fault::answer_unconverted(),
        Unconverted::TooLarge => Fault::payload_past_its_bound(),
    }
}

/// What the fault flow makes of a failed call.
#[derive(Debug, PartialEq)]
pub enum FaultOutcome {
    /// Its own answer (`respond`).
    Answer(Response),
    /// Headers for the gateway's own answer.
    Headers(Headers),
}

/// Runs the fault flow of `plan` for a call whose client headers are `request`, once
/// the in flow has left its properties again (without its log lines, written already);
/// `facts` name the failure.
pub fn fault(
    plan: &Mediation,
    request: &Headers,
    facts: &Facts,
    patterns: &Patterns,
) -> FaultOutcome {
    let mut properties = Properties::default();
    let mut incoming = Message::new(Some(request), None);
    incoming.quiet = true;
    incoming.run(&plan.request, facts, &mut properties, patterns);
    let mut fault = Message::new(None, None);
    fault.run(&plan.fault, facts, &mut properties, patterns);
    if fault.ended() {
        FaultOutcome::Answer(
            fault
                .into_answer(refused_answer)
                .unwrap_or_else(|fault| fault.render(&Headers::new())),
        )
    } else {
        FaultOutcome::Headers(fault.into_changes().1)
    }
}

/// Message properties, by name, in the order first set; each with whether it holds a
/// credential (read from one), which a log never shows.
#[derive(Default)]
struct Properties(Vec<(String, String, bool)>);

impl Properties {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.as_str())
    }

    fn is_secret(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _, secret)| n == name && *secret)
    }

    fn set(&mut self, name: &str, value: String, secret: bool) {
        match self.0.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, old, was_secret)) => (*old, *was_secret) = (value, secret),
            None => self.0.push((name.to_string(), value, secret)),
        }
    }

    fn remove(&mut self, name: &str) {
        self.0.retain(|(n, _, _)| n != name);
    }

    /// Whether a value reads a credential: a credential's header or query parameter, or
    /// a property read from one.
    fn reads_a_secret(&self, value: &Value) -> bool {
        match value {
            Value::Header(name) => CREDENTIALS.contains(&name.as_str()),
            Value::Query(name) => {
                CREDENTIAL_PARAMETERS.contains(&name.to_ascii_lowercase().as_str())
            }
            Value::Property(name) => self.is_secret(name),
            Value::Body(path) => reads_a_credential_field(path),
            Value::Text(_) | Value::Call(_) => false,
        }
    }
}

/// One message as a flow changes it: the headers it came with (a request's, or the
/// backend's answer's once it is at hand) and each name's last change; its body.
struct Message<'r> {
    original: Option<&'r Headers>,
    /// Lower-case name and its new value; `None` removed.
    changes: Vec<(String, Option<Vec<u8>>)>,
    /// Its body: as it came, or as a payload factory made it.
    body: Option<Body>,
    /// The body parsed, once per form, for the values read of it.
    parsed: Parsed,
    /// Whether a payload factory made the body.
    made: bool,
    /// Whether a payload factory would have made a body past its bound.
    overflowed: bool,
    /// Whether the body made is a SOAP fault (`makefault`), answered 500 unless a
    /// status is set.
    soap_fault: bool,
    /// The format it leaves in (`messageType`).
    format: Option<String>,
    /// The path and query after the endpoint's (`REST_URL_POSTFIX`).
    path: Option<String>,
    /// The status set (`HTTP_SC`).
    status: Option<u16>,
    /// Whether a `respond` ended the flow.
    responded: bool,
    /// Whether a `drop` ended it.
    dropped: bool,
    /// Whether its log lines are left out (a flow run again).
    quiet: bool,
}

impl<'r> Message<'r> {
    fn new(original: Option<&'r Headers>, body: Option<Body>) -> Self {
        Self {
            original,
            changes: Vec::new(),
            body,
            parsed: Parsed::default(),
            made: false,
            overflowed: false,
            soap_fault: false,
            format: None,
            path: None,
            status: None,
            responded: false,
            dropped: false,
            quiet: false,
        }
    }

    /// Whether a `respond` or a `drop` ended the flow.
    fn ended(&self) -> bool {
        self.responded || self.dropped
    }

    /// The body the message leaves with, where the flow made or converted one: in the
    /// format set, else in the one made.
    fn outgoing_body(&self) -> Result<Option<Body>, Unconverted> {
        if self.overflowed {
            return Err(Unconverted::TooLarge);
        }
        // A format changes a body there is; it adds none.
        let Some(body) = self
            .body
            .as_ref()
            .filter(|body| self.made || (self.format.is_some() && !body.bytes.is_empty()))
        else {
            return Ok(None);
        };
        Ok(Some(match &self.format {
            Some(format) => Body {
                bytes: payloads::convert(&body.bytes, &body.content_type, format)?,
                content_type: format.clone(),
            },
            None => body.clone(),
        }))
    }

    fn header(&self, name: &str) -> Option<String> {
        match self.changes.iter().find(|(n, _)| n == name) {
            Some((_, value)) => value.as_deref().and_then(text).map(str::to_string),
            None => self
                .original
                .and_then(|headers| crate::host::header(headers, name))
                .map(str::to_string),
        }
    }

    fn change(&mut self, name: &str, value: Option<Vec<u8>>) {
        self.changes.retain(|(n, _)| n != name);
        self.changes.push((name.to_string(), value));
    }

    /// The names changed (none pass on as they came) and the values set.
    fn into_changes(self) -> (Vec<String>, Headers) {
        let mut names = Vec::with_capacity(self.changes.len());
        let mut set = Headers::new();
        for (name, value) in self.changes {
            if let Some(value) = value {
                set.push((name.clone(), value));
            }
            names.push(name);
        }
        (names, set)
    }

    /// The answer a `respond` gives: the status set (200 otherwise, 500 for a SOAP
    /// fault), the body made (in the format set), the headers the flow set (never the
    /// client's); or a `drop`'s.
    /// `refused` says whose fault a body that cannot be made is.
    fn into_answer(self, refused: fn(Unconverted) -> Fault) -> Result<Response, Fault> {
        if self.dropped {
            return Ok(dropped());
        }
        let status = (self.status).unwrap_or(if self.soap_fault { 500 } else { 200 });
        let made = self.outgoing_body().map_err(refused)?;
        let mut answer = match made {
            Some(body) => Response::new(status, &body.content_type, body.bytes),
            None => Response {
                status,
                headers: Headers::new(),
                body: Vec::new(),
            },
        };
        apim_http::set_headers(&mut answer.headers, self.into_changes().1);
        Ok(answer)
    }

    fn run(
        &mut self,
        steps: &[Step],
        facts: &Facts,
        properties: &mut Properties,
        patterns: &Patterns,
    ) {
        for step in steps {
            if self.ended() {
                return;
            }
            match step {
                Step::SetHeader { name, value } => {
                    // A value that cannot be set still takes the client's away: a header
                    // a sequence sets is never the client's own.
                    let value = self
                        .value(value, facts, properties)
                        .filter(|value| fits_a_header(value));
                    self.change(name, value.map(String::into_bytes));
                }
                Step::RemoveHeader { name } => self.change(name, None),
                Step::SetProperty { name, value: read } => {
                    let secret = properties.reads_a_secret(read);
                    match self.value(read, facts, properties) {
                        Some(value) => properties.set(name, value, secret),
                        None => properties.remove(name),
                    }
                }
                Step::RemoveProperty { name } => properties.remove(name),
                Step::Payload {
                    media,
                    format,
                    args,
                } => {
                    let values: Vec<Option<Arg>> = args
                        .iter()
                        .map(|arg| match arg {
                            Value::Body(path) => self.body_value(path).map(|v| Arg {
                                text: v.text,
                                structured: v.structured,
                            }),
                            other => self.value(other, facts, properties).map(Arg::text),
                        })
                        .collect();
                    match fill(*media, format, &values) {
                        Ok(made) => {
                            self.body = Some(Body {
                                content_type: media.content_type().to_string(),
                                bytes: made.into_bytes(),
                            });
                            self.parsed = Parsed::default();
                            self.made = true;
                            self.overflowed = false;
                            self.soap_fault = matches!(media, Media::Soap11 | Media::Soap12);
                        }
                        Err(()) => self.overflowed = true,
                    }
                }
                Step::SetFormat { value } => {
                    // One media type, as a content type can be (an `Accept` kept by
                    // `preserve_accept_header` may name several, or a range).
                    if let Some(format) = self
                        .value(value, facts, properties)
                        .filter(|f| payloads::is_one_media_type(f) && fits_a_header(f))
                    {
                        self.format = Some(format.trim().to_string());
                    }
                }
                Step::Drop => self.dropped = true,
                Step::SetPath { value } => {
                    self.path = Some(self.value(value, facts, properties).unwrap_or_default());
                }
                Step::SetStatus { value } => {
                    if let Some(status) = self
                        .value(value, facts, properties)
                        .and_then(|v| v.trim().parse::<u16>().ok())
                        .filter(|s| (200..=599).contains(s))
                    {
                        self.status = Some(status);
                    }
                }
                Step::Respond => self.responded = true,
                Step::Log {
                    category,
                    properties: logged,
                } => {
                    if !self.quiet {
                        eprintln!("{}", self.log_line(category, logged, facts, properties));
                    }
                }
                Step::Filter {
                    source,
                    regex,
                    then,
                    otherwise,
                } => {
                    let source = self.value(source, facts, properties).unwrap_or_default();
                    let branch = if patterns.matches(regex, &source) {
                        then
                    } else {
                        otherwise
                    };
                    self.run(branch, facts, properties, patterns);
                }
            }
        }
    }

    /// What a value reads now; `None` when unset.
    fn value(&self, value: &Value, facts: &Facts, properties: &Properties) -> Option<String> {
        match value {
            Value::Text(text) => Some(text.clone()),
            Value::Header(name) => self.header(name),
            Value::Property(name) => properties.get(name).map(str::to_string),
            Value::Query(name) => query_parameter(facts.query, name),
            Value::Call(fact) => fact_of(*fact, facts),
            Value::Body(path) => self.body_value(path).map(|value| value.text),
        }
    }

    /// What `path` reads in the body now.
    fn body_value(&self, path: &BodyPath) -> Option<BodyValue> {
        let body = self.body.as_ref()?;
        self.parsed.read(&body.bytes, &body.content_type, path)
    }

    /// A line for the gateway's log: the API and each property, credentials masked.
    fn log_line(
        &self,
        category: &str,
        logged: &[(String, Value)],
        facts: &Facts,
        properties: &Properties,
    ) -> String {
        let mut line = format!(
            "mediation {category} API {}:{}",
            facts.api.name, facts.api.version
        );
        for (name, value) in logged {
            let shown = match value {
                value if properties.reads_a_secret(value) => "****".to_string(),
                _ => self
                    .value(value, facts, properties)
                    .map_or_else(|| "null".to_string(), |v| printable(&v)),
            };
            line.push_str(&format!(", {} = {shown}", printable(name)));
        }
        line
    }
}

/// A payload's format with each `$n` replaced by the n-th value, escaped for `media`
/// (an unset value, or a number past the values, as empty text); `Err` once past
/// [`MAX_PAYLOAD_BYTES`].
fn fill(media: Media, format: &str, values: &[Option<Arg>]) -> Result<String, ()> {
    let mut body = String::with_capacity(format.len());
    let mut rest = format;
    while let Some(at) = rest.find('$') {
        body.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        match after[..digits].parse::<usize>() {
            Ok(n) if n >= 1 => {
                match values.get(n - 1).and_then(Option::as_ref) {
                    // A JSON object or array read from a body goes into JSON as it is.
                    Some(arg) if arg.structured && media.is_json() => body.push_str(&arg.text),
                    Some(arg) => escape_into(&mut body, media, &arg.text),
                    None => {}
                }
                if body.len() > MAX_PAYLOAD_BYTES {
                    return Err(());
                }
                rest = &after[digits..];
            }
            _ => {
                body.push('$');
                rest = after;
            }
        }
    }
    body.push_str(rest);
    if body.len() > MAX_PAYLOAD_BYTES {
        return Err(());
    }
    Ok(body)
}

/// A payload's argument as read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arg {
    text: String,
    /// A JSON object or array (its JSON).
    structured: bool,
}

impl Arg {
    fn text(text: String) -> Self {
        Self {
            text,
            structured: false,
        }
    }
}

/// Appends `value` escaped for `media`: inside a JSON string, or as XML text.
fn escape_into(body: &mut String, media: Media, value: &str) {
    let media = if media.is_json() {
        Media::Json
    } else {
        Media::Xml
    };
    for c in value.chars() {
        match (media, c) {
            (Media::Json, '"') => body.push_str("\\\""),
            (Media::Json, '\\') => body.push_str("\\\\"),
            (Media::Json, c) if c.is_control() => body.push_str(&format!("\\u{:04x}", c as u32)),
            (Media::Xml, '&') => body.push_str("&amp;"),
            (Media::Xml, '<') => body.push_str("&lt;"),
            (Media::Xml, '>') => body.push_str("&gt;"),
            (Media::Xml, '"') => body.push_str("&quot;"),
            (Media::Xml, '\'') => body.push_str("&apos;"),
            // XML 1.0 has no character reference for them either.
            (Media::Xml, c) if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {}
            (_, c) => body.push(c),
        }
    }
}

/// Whether a value may travel as a header's: no control character but tab (a query
/// parameter decoded may hold any).
fn fits_a_header(value: &str) -> bool {
    !value.chars().any(|c| c.is_control() && c != '\t')
}

/// A value as a log line shows it: one line, bounded.
fn printable(value: &str) -> String {
    let mut shown: String = value
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if shown.len() > MAX_LOGGED_BYTES {
        let mut end = MAX_LOGGED_BYTES;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push_str("...");
    }
    shown
}

/// A query parameter's first value, decoded.
fn query_parameter(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.into_owned())
}

fn fact_of(fact: CallFact, facts: &Facts) -> Option<String> {
    let known = |text: &str| (!text.is_empty()).then(|| text.to_string());
    match fact {
        CallFact::ApiName => Some(facts.api.name.clone()),
        CallFact::ApiVersion => Some(facts.api.version.clone()),
        CallFact::ApiContext => Some(facts.api.context.clone()),
        CallFact::UserName => known(facts.user),
        CallFact::ApplicationId => known(facts.application),
        CallFact::HttpMethod => Some(facts.method.to_string()),
        CallFact::SystemTime => Some(facts.now_ms.to_string()),
        CallFact::ErrorCode => facts.error.map(|(code, _)| code.to_string()),
        CallFact::ErrorMessage => facts.error.map(|(_, message)| message.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> ApiRoute {
        serde_json::from_value(serde_json::json!({
            "id": "a", "name": "Pets", "version": "v1", "context": "/pets",
            "state": "PUBLISHED", "default_version": false, "operations": [],
            "production_url": null, "sandbox_url": null,
            "sealed_backend_authorization": null,
            "max_tps": {"production": null, "sandbox": null},
            "cors": null, "cache_timeout_secs": null
        }))
        .unwrap()
    }

    fn args(values: &[Option<&str>]) -> Vec<Option<Arg>> {
        values
            .iter()
            .map(|v| v.map(|text| Arg::text(text.to_string())))
            .collect()
    }

    #[test]
    fn payloads_escape_their_arguments_for_their_media_type() {
        let values = args(&[Some("<a & 'b'>"), None]);
        assert_eq!(
            fill(Media::Xml, "<v>$1</v><w>$2</w><x>$3 $ $x $0</x>", &values).unwrap(),
            "<v>&lt;a &amp; &apos;b&apos;&gt;</v><w></w><x> $ $x $0</x>"
        );
        let controls = args(&[Some("a\u{1}b\u{7f}c")]);
        assert_eq!(
            fill(Media::Xml, "<v>$1</v>", &controls).unwrap(),
            "<v>abc</v>"
        );
        let big_value = "x".repeat(64 * 1024);
        let big = args(&[Some(&big_value)]);
        let format = "$1".repeat(16);
        assert_eq!(fill(Media::Json, &format, &big).unwrap().len(), 1024 * 1024);
        assert!(fill(Media::Json, &format!("{format}$1"), &big).is_err());
        // A single value past the bound is refused as it is written in.
        let huge_value = "x".repeat(MAX_PAYLOAD_BYTES + 1);
        assert!(fill(Media::Json, "$1", &args(&[Some(&huge_value)])).is_err());
        let values = args(&[Some("say \"hi\"\\\n")]);
        assert_eq!(
            fill(Media::Json, r#"{"a": "$1", "cost": "$12"}"#, &values).unwrap(),
            r#"{"a": "say \"hi\"\\\u000a", "cost": ""}"#
        );
        // A JSON object or array read from a body goes into a JSON payload as it is,
        // into an XML one as text.
        let object = [Some(Arg {
            text: r#"{"b":1}"#.into(),
            structured: true,
        })];
        assert_eq!(
            fill(Media::Json, r#"{"a": $1}"#, &object).unwrap(),
            r#"{"a": {"b":1}}"#
        );
        assert_eq!(
            fill(Media::Xml, "<a>$1</a>", &object).unwrap(),
            "<a>{&quot;b&quot;:1}</a>"
        );
    }

    #[test]
    fn log_lines_mask_credentials_and_keep_to_one_bounded_line() {
        let api = api();
        let facts = Facts {
            api: &api,
            method: "GET",
            query: Some("q=a%0Ab"),
            user: "",
            application: "",
            now_ms: 7,
            error: None,
        };
        let headers: Headers = vec![
            ("authorization".into(), b"Bearer secret".to_vec()),
            ("x-long".into(), "é".repeat(600).into_bytes()),
        ];
        let message = Message::new(Some(&headers), None);
        let logged = vec![
            ("auth".to_string(), Value::Header("authorization".into())),
            ("q".to_string(), Value::Query("q".into())),
            ("who".to_string(), Value::Call(CallFact::UserName)),
            ("at".to_string(), Value::Call(CallFact::SystemTime)),
            ("long".to_string(), Value::Header("x-long".into())),
            ("copied".to_string(), Value::Property("copied".into())),
            ("token".to_string(), Value::Query("access_token".into())),
            (
                "password".to_string(),
                Value::Body(BodyPath::Json(vec![
                    PathPart::Key("user".into()),
                    PathPart::Key("Password".into()),
                ])),
            ),
        ];
        let mut properties = Properties::default();
        properties.set("copied", "Bearer secret".into(), true);
        let line = message.log_line("INFO", &logged, &facts, &properties);
        assert!(
            line.ends_with("copied = ****, token = ****, password = ****"),
            "{line}"
        );
        let line = message.log_line("INFO", &logged[..5], &facts, &properties);
        assert!(
            line.starts_with(
                "mediation INFO API Pets:v1, auth = ****, q = a?b, who = null, at = 7, long = é"
            ),
            "{line}"
        );
        assert!(!line.contains("secret") && !line.contains('\n'));
        assert!(line.ends_with("..."), "{line}");
        assert!(line.len() < 1200);
    }
}
