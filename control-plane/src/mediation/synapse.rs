//! Synapse sequences compiled into the steps gateways run ([`apim_manifest::mediation`]):
//! the subset of WSO2's mediators estates write most (`property` and `header` on
//! transport headers and message properties, the message's format, `log`, `filter`,
//! `payloadFactory`, `makefault`, `respond`, `drop`), each checked once here, with the
//! expressions that read the head, the call and the body (JSONPath and XPath subsets).
//! Anything else is refused naming the mediator and the subset, never accepted and
//! ignored.

use apim_manifest::mediation::{
    BodyPath, CallFact, MAX_DEPTH, MAX_PATTERN_BYTES, MAX_STEPS, MAX_TEXT_BYTES, Media, Mediation,
    PathPart, Step, Value, XmlFrom, XmlPath, size,
};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// The mediators a sequence may hold.
pub const SUPPORTED: &[&str] = &[
    "property",
    "header",
    "log",
    "filter",
    "payloadFactory",
    "makefault",
    "respond",
    "drop",
];

/// Most steps a JSONPath or an XPath takes.
const MAX_PATH_PARTS: usize = 32;

/// Longest payload format, bytes.
const MAX_FORMAT_BYTES: usize = 64 * 1024;
/// Most arguments a payload factory takes.
const MAX_ARGS: usize = 64;
/// Most placeholders a payload format holds.
const MAX_PLACEHOLDERS: usize = 256;

/// Headers the gateway writes for what it checked, which no sequence changes: `Via`
/// finds loops, `X-Forwarded-For` names the client, `X-JWT-Assertion` the caller.
const GATEWAYS_OWN: &[&str] = &["via", "x-forwarded-for", "x-jwt-assertion"];

/// Headers no sequence sets or removes: they frame the message or name its hop, which
/// the gateway and its host own.
const FRAMING: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Which of an API's flows a sequence runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// `in`: the request.
    In,
    /// `out`: the backend's answer.
    Out,
    /// `fault`: the answer to a failed call.
    Fault,
}

impl Flow {
    /// The flow a WSO2 `type` names.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "in" => Some(Self::In),
            "out" => Some(Self::Out),
            "fault" => Some(Self::Fault),
            _ => None,
        }
    }

    /// Its steps in a plan.
    pub fn steps_of(self, plan: &mut Mediation) -> &mut Vec<Step> {
        match self {
            Self::In => &mut plan.request,
            Self::Out => &mut plan.response,
            Self::Fault => &mut plan.fault,
        }
    }
}

/// Why a sequence cannot run; said as a 400.
pub type Refusal = String;

/// An element of a sequence: its local name, attributes and child elements (text and
/// comments are not part of any supported mediator).
#[derive(Debug, Default)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
    /// A payload factory's `format`: its content as written.
    raw: Option<String>,
}

impl Element {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses attributes other than `known` (namespace declarations aside).
    fn only(&self, known: &[&str]) -> Result<(), Refusal> {
        match self
            .attributes
            .iter()
            .find(|(n, _)| !known.contains(&n.as_str()) && n != "xmlns" && !n.starts_with("xmlns:"))
        {
            Some((name, _)) => Err(format!(
                "The attribute '{name}' of '{}' is not supported (supported: {})",
                self.name,
                known.join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// Compiles a sequence (checked as well-formed by `crate::xml`) for `flow`.
pub fn compile(config: &str, flow: Flow) -> Result<Vec<Step>, Refusal> {
    let root = parse(config)?;
    root.only(&["name", "trace", "statistics", "description"])?;
    let steps = mediators(&root.children, flow)?;
    if flow == Flow::Fault {
        check_payloads_answer(&steps, false)?;
    }
    let (count, depth) = size(&steps);
    if count > MAX_STEPS {
        return Err(format!(
            "The sequence has {count} mediators; at most {MAX_STEPS} are allowed"
        ));
    }
    if depth > MAX_DEPTH {
        return Err(format!(
            "The sequence nests filters {depth} deep; at most {MAX_DEPTH} are allowed"
        ));
    }
    Ok(steps)
}

/// The sequence's root element with its descendants.
fn parse(config: &str) -> Result<Element, Refusal> {
    let mut reader = Reader::from_str(config);
    let mut open: Vec<Element> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("The XML is not well formed: {e}"))?;
        match event {
            Event::Start(start) => {
                if open.len() > 2 * MAX_DEPTH + 2 {
                    return Err(format!(
                        "The sequence nests elements deeper than {MAX_DEPTH} filters need"
                    ));
                }
                let mut element = element(&start)?;
                let in_factory = open.last().is_some_and(|p| p.name == "payloadFactory");
                if element.name == "format" && in_factory {
                    let raw = reader
                        .read_text(start.name())
                        .map_err(|e| format!("The XML is not well formed: {e}"))?;
                    if raw.len() > MAX_FORMAT_BYTES {
                        return Err(format!(
                            "A payload format is longer than {MAX_FORMAT_BYTES} bytes"
                        ));
                    }
                    element.raw = Some(raw.into_owned());
                    if let Some(parent) = open.last_mut() {
                        parent.children.push(element);
                    }
                    continue;
                }
                open.push(element);
            }
            Event::Empty(start) => {
                let element = element(&start)?;
                match open.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => return Ok(element),
                }
            }
            Event::End(_) => {
                let done = open.pop().ok_or("The XML is not well formed")?;
                match open.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
            }
            Event::Eof => return Err("The sequence has no root element".into()),
            _ => {}
        }
    }
}

fn element(start: &BytesStart) -> Result<Element, Refusal> {
    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
    let mut attributes = Vec::new();
    for attribute in start.attributes() {
        let attribute = attribute.map_err(|e| format!("The XML is not well formed: {e}"))?;
        let key = String::from_utf8_lossy(attribute.key.as_ref()).into_owned();
        let value = attribute
            .unescape_value()
            .map_err(|e| format!("The XML is not well formed: {e}"))?
            .into_owned();
        if value.len() > MAX_TEXT_BYTES {
            return Err(format!(
                "The attribute '{key}' of '{name}' is longer than {MAX_TEXT_BYTES} bytes"
            ));
        }
        attributes.push((key, value));
    }
    Ok(Element {
        name,
        attributes,
        children: Vec::new(),
        raw: None,
    })
}

/// The steps of a list of mediators.
fn mediators(elements: &[Element], flow: Flow) -> Result<Vec<Step>, Refusal> {
    let mut steps = Vec::new();
    for element in elements {
        match element.name.as_str() {
            "description" => {}
            "property" => steps.push(property(element, flow)?),
            "header" => steps.push(header(element, flow)?),
            "log" => steps.push(log(element, flow)?),
            "filter" => steps.push(filter(element, flow)?),
            "payloadFactory" => steps.push(payload(element, flow)?),
            "makefault" => steps.push(makefault(element, flow)?),
            "respond" => {
                element.only(&["description"])?;
                answering_flow_only("respond", flow)?;
                steps.push(Step::Respond);
            }
            "drop" => {
                element.only(&["description"])?;
                no_children(element)?;
                // A failed backend's client is owed an answer, not an acceptance.
                if flow == Flow::Fault {
                    return Err(
                        "The mediator 'drop' is supported in the in and out flows only".into(),
                    );
                }
                steps.push(Step::Drop);
            }
            other => {
                return Err(format!(
                    "The mediator '{other}' is not supported at the gateway (supported: {})",
                    SUPPORTED.join(", ")
                ));
            }
        }
    }
    Ok(steps)
}

/// Whether a mediator sets or removes.
fn removes(element: &Element) -> Result<bool, Refusal> {
    match element.attribute("action") {
        None | Some("set") => Ok(false),
        Some("remove") => Ok(true),
        Some(other) => Err(format!(
            "The action '{other}' of '{}' is not supported (set or remove)",
            element.name
        )),
    }
}

/// `property`: a transport header or a message property, set or removed.
fn property(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    element.only(&["name", "value", "expression", "scope", "action", "type"])?;
    no_children(element)?;
    let name = required(element, "name")?;
    if let Some(kind) = element.attribute("type")
        && !matches!(
            kind,
            "STRING" | "INTEGER" | "LONG" | "BOOLEAN" | "DOUBLE" | "FLOAT" | "SHORT"
        )
    {
        return Err(format!(
            "The property type '{kind}' is not supported (STRING or a number or boolean, kept as text)"
        ));
    }
    let remove = removes(element)?;
    match element.attribute("scope").unwrap_or("default") {
        "transport" => header_step(element, name, remove, flow),
        "axis2" if name == "HTTP_SC" && !remove => Ok(Step::SetStatus {
            value: value(element, flow)?,
        }),
        "axis2" if name == "REST_URL_POSTFIX" => {
            if flow != Flow::In {
                return Err("REST_URL_POSTFIX is supported in the in flow only".into());
            }
            let value = if remove {
                Value::Text(String::new())
            } else {
                value(element, flow)?
            };
            if let Value::Text(path) = &value
                && !(path.is_empty() || path.starts_with(['/', '?']))
            {
                return Err(format!(
                    "The REST_URL_POSTFIX '{}' is neither empty nor a path or query ('/' or '?' first)",
                    path.escape_default()
                ));
            }
            Ok(Step::SetPath { value })
        }
        "axis2" if name == "messageType" && !remove => {
            let value = value(element, flow)?;
            if let Value::Text(media) = &value
                && !is_media_type(media)
            {
                return Err(format!(
                    "The messageType '{}' is not a media type",
                    media.escape_default()
                ));
            }
            Ok(Step::SetFormat { value })
        }
        "default" | "synapse" => {
            if CallFact::named(name).is_some() {
                return Err(format!(
                    "The property '{name}' is the gateway's own and cannot be changed"
                ));
            }
            Ok(if remove {
                Step::RemoveProperty { name: name.into() }
            } else {
                Step::SetProperty {
                    name: name.into(),
                    value: value(element, flow)?,
                }
            })
        }
        other => Err(format!(
            "The property scope '{other}' is not supported (default, synapse or transport; axis2 for HTTP_SC, messageType and REST_URL_POSTFIX alone)"
        )),
    }
}

/// `header`: a transport header, set or removed (SOAP headers are not supported).
fn header(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    element.only(&["name", "value", "expression", "scope", "action"])?;
    no_children(element)?;
    if element.attribute("scope") != Some("transport") {
        return Err(
            "The header mediator is supported for transport headers only (scope=\"transport\"); SOAP headers are not"
                .into(),
        );
    }
    let name = required(element, "name")?;
    header_step(element, name, removes(element)?, flow)
}

fn header_step(element: &Element, name: &str, remove: bool, flow: Flow) -> Result<Step, Refusal> {
    let name = header_name(name)?;
    Ok(if remove {
        Step::RemoveHeader { name }
    } else {
        Step::SetHeader {
            name,
            value: value(element, flow)?,
        }
    })
}

/// A header name a sequence may change, lower-cased.
fn header_name(name: &str) -> Result<String, Refusal> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("'{}' is not a header name", name.escape_default()));
    }
    let lower = name.to_ascii_lowercase();
    if FRAMING.contains(&lower.as_str()) || lower.starts_with("spin-") {
        return Err(format!(
            "The header '{name}' frames the message and cannot be changed by a sequence"
        ));
    }
    if GATEWAYS_OWN.contains(&lower.as_str()) {
        return Err(format!(
            "The header '{name}' is the gateway's own and cannot be changed by a sequence"
        ));
    }
    Ok(lower)
}

/// `log` of level `custom` or `simple`: its properties, as a line in the gateway's log.
fn log(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    element.only(&["level", "category", "separator", "description"])?;
    match element.attribute("level").unwrap_or("simple") {
        "custom" | "simple" => {}
        "headers" | "full" => {
            return Err(
                "The log levels 'headers' and 'full' would write credentials and bodies to the gateway's log; use 'custom' with the properties to log"
                    .into(),
            );
        }
        other => return Err(format!("The log level '{other}' is not supported")),
    }
    let category = element.attribute("category").unwrap_or("INFO");
    if !matches!(
        category,
        "INFO" | "DEBUG" | "WARN" | "ERROR" | "TRACE" | "FATAL"
    ) {
        return Err(format!("The log category '{category}' is not supported"));
    }
    let mut properties = Vec::new();
    for child in &element.children {
        if child.name != "property" {
            return Err(format!("A log holds properties only, not '{}'", child.name));
        }
        child.only(&["name", "value", "expression"])?;
        no_children(child)?;
        properties.push((required(child, "name")?.to_string(), value(child, flow)?));
    }
    Ok(Step::Log {
        category: category.into(),
        properties,
    })
}

/// `filter` with `source` and `regex`: `then` (or its direct children) and `else`.
fn filter(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    if element.attribute("xpath").is_some() {
        return Err(
            "A filter on 'xpath' reads the body, which is not supported; use 'source' and 'regex'"
                .into(),
        );
    }
    element.only(&["source", "regex", "description"])?;
    let source = expression(required(element, "source")?, flow)?;
    let regex = required(element, "regex")?;
    // Checked alone first: a pattern like `a)|(?:b` must not escape the anchors.
    let anchored = format!("^(?:{regex})$");
    for pattern in [regex, anchored.as_str()] {
        regex::RegexBuilder::new(pattern)
            .size_limit(MAX_PATTERN_BYTES)
            .dfa_size_limit(MAX_PATTERN_BYTES)
            .build()
            .map_err(|e| format!("The filter's regex is not supported: {e}"))?;
    }
    let branch = |name: &str| element.children.iter().find(|c| c.name == name);
    let (then, otherwise) = match (branch("then"), branch("else")) {
        (None, None) => (mediators(&element.children, flow)?, Vec::new()),
        (then, otherwise) => {
            if let Some(stray) = element
                .children
                .iter()
                .find(|c| c.name != "then" && c.name != "else")
            {
                return Err(format!(
                    "A filter with then or else holds nothing else, not '{}'",
                    stray.name
                ));
            }
            let steps = |branch: Option<&Element>| {
                branch.map_or(Ok(Vec::new()), |b| mediators(&b.children, flow))
            };
            (steps(then)?, steps(otherwise)?)
        }
    };
    Ok(Step::Filter {
        source,
        regex: anchored,
        then,
        otherwise,
    })
}

/// `payloadFactory` with an inline `format` and arguments the request's head holds.
fn payload(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    element.only(&["media-type", "description", "template-type"])?;
    let media = match element.attribute("media-type").unwrap_or("xml") {
        "xml" => Media::Xml,
        "json" => Media::Json,
        other => {
            return Err(format!(
                "The payload media-type '{other}' is not supported (xml or json)"
            ));
        }
    };
    if element
        .attribute("template-type")
        .is_some_and(|t| t != "default")
    {
        return Err("Only the default template-type is supported".into());
    }
    let format = element
        .children
        .iter()
        .find(|c| c.name == "format")
        .ok_or("'payloadFactory' needs a 'format'")?;
    format.only(&[])?;
    let raw = format.raw.as_deref().unwrap_or_default().trim();
    let format = if media.is_json() {
        json_format(raw)?
    } else {
        raw.to_string()
    };
    let mut args = Vec::new();
    if let Some(list) = element.children.iter().find(|c| c.name == "args") {
        for arg in &list.children {
            if arg.name != "arg" {
                return Err(format!("'args' holds 'arg' only, not '{}'", arg.name));
            }
            arg.only(&["value", "expression", "evaluator", "literal"])?;
            args.push(argument(arg, flow)?);
        }
    }
    if args.len() > MAX_ARGS {
        return Err(format!(
            "A payload factory takes at most {MAX_ARGS} arguments"
        ));
    }
    if let Some(stray) = element
        .children
        .iter()
        .find(|c| c.name != "format" && c.name != "args")
    {
        return Err(format!(
            "'payloadFactory' holds format and args, not '{}'",
            stray.name
        ));
    }
    if placeholders(&format).count() > MAX_PLACEHOLDERS {
        return Err(format!(
            "A payload format holds at most {MAX_PLACEHOLDERS} placeholders"
        ));
    }
    if let Some(index) = placeholders(&format).find(|&n| n == 0 || n > args.len()) {
        return Err(format!(
            "The payload format names ${index}, but {} arguments are given",
            args.len()
        ));
    }
    Ok(Step::Payload {
        media,
        format,
        args,
    })
}

/// `makefault` for SOAP 1.1 or 1.2: the fault envelope as a payload (its reason and
/// detail as arguments), which a `respond` answers with, status 500 unless `HTTP_SC` is
/// set.
fn makefault(element: &Element, flow: Flow) -> Result<Step, Refusal> {
    element.only(&["version", "response", "description"])?;
    let soap12 = match element.attribute("version").unwrap_or("soap11") {
        "soap11" => false,
        "soap12" => true,
        other => {
            return Err(format!(
                "The makefault version '{other}' is not supported (soap11 or soap12)"
            ));
        }
    };
    if let Some(stray) = element
        .children
        .iter()
        .find(|c| !matches!(c.name.as_str(), "code" | "reason" | "detail"))
    {
        return Err(format!(
            "'makefault' holds code, reason and detail, not '{}'",
            stray.name
        ));
    }
    let child = |name: &str| element.children.iter().find(|c| c.name == name);
    let code = child("code").ok_or("'makefault' needs a 'code'")?;
    code.only(&["value"])?;
    let local = required(code, "value")?
        .rsplit(':')
        .next()
        .unwrap_or_default();
    let known: &[&str] = if soap12 {
        &[
            "VersionMismatch",
            "MustUnderstand",
            "DataEncodingUnknown",
            "Sender",
            "Receiver",
        ]
    } else {
        &["VersionMismatch", "MustUnderstand", "Client", "Server"]
    };
    if !known.contains(&local) {
        return Err(format!(
            "The fault code '{}' is not a SOAP code (one of {})",
            local.escape_default(),
            known.join(", ")
        ));
    }
    let reason = child("reason").ok_or("'makefault' needs a 'reason'")?;
    reason.only(&["value", "expression"])?;
    let mut args = vec![value(reason, flow)?];
    let detail = match child("detail") {
        Some(detail) => {
            detail.only(&["value", "expression"])?;
            no_children(detail)?;
            args.push(value(detail, flow)?);
            true
        }
        None => false,
    };
    let (media, format) = if soap12 {
        let detail = if detail {
            "<soap:Detail>$2</soap:Detail>"
        } else {
            ""
        };
        (
            Media::Soap12,
            format!(
                r#"<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body><soap:Fault><soap:Code><soap:Value>soap:{local}</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">$1</soap:Text></soap:Reason>{detail}</soap:Fault></soap:Body></soap:Envelope>"#
            ),
        )
    } else {
        let detail = if detail { "<detail>$2</detail>" } else { "" };
        (
            Media::Soap11,
            format!(
                r#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><soapenv:Fault><faultcode>soapenv:{local}</faultcode><faultstring>$1</faultstring>{detail}</soapenv:Fault></soapenv:Body></soapenv:Envelope>"#
            ),
        )
    };
    Ok(Step::Payload {
        media,
        format,
        args,
    })
}

/// Whether a `messageType` names a media type (`type/subtype`, parameters aside).
fn is_media_type(text: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    essence
        .split_once('/')
        .is_some_and(|(kind, subtype)| token(kind) && token(subtype))
}

/// A JSON format as written between `<format>` and `</format>`: text (its entities
/// read) or a CDATA section.
fn json_format(raw: &str) -> Result<String, Refusal> {
    if let Some(inner) = raw
        .strip_prefix("<![CDATA[")
        .and_then(|r| r.strip_suffix("]]>"))
    {
        return Ok(inner.to_string());
    }
    if raw.contains('<') {
        return Err("A JSON payload format is text, not XML".into());
    }
    quick_xml::escape::unescape(raw)
        .map(|text| text.into_owned())
        .map_err(|e| format!("The payload format is not well formed: {e}"))
}

/// The argument numbers a format names (`$1` is 1).
pub fn placeholders(format: &str) -> impl Iterator<Item = usize> + '_ {
    format.match_indices('$').filter_map(|(at, _)| {
        let digits: String = format[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// Refuses a fault flow's payload made for no answer: there a payload factory must be
/// followed by a `respond` (in its list, or after the filter it is in), since the fault
/// flow has no backend to send it to.
fn check_payloads_answer(steps: &[Step], responds_after: bool) -> Result<(), Refusal> {
    for (at, step) in steps.iter().enumerate() {
        let later = responds_after || steps[at + 1..].contains(&Step::Respond);
        match step {
            Step::Payload { .. } if !later => {
                return Err(
                    "In the fault flow a payloadFactory or makefault must be followed by a respond"
                        .into(),
                );
            }
            Step::Filter {
                then, otherwise, ..
            } => {
                check_payloads_answer(then, later)?;
                check_payloads_answer(otherwise, later)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses what only a flow that can answer the call (`in`, `fault`) may hold.
fn answering_flow_only(what: &str, flow: Flow) -> Result<(), Refusal> {
    if flow == Flow::Out {
        Err(format!(
            "{what} is supported in the in and fault flows only"
        ))
    } else {
        Ok(())
    }
}

fn required<'e>(element: &'e Element, name: &str) -> Result<&'e str, Refusal> {
    element
        .attribute(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("'{}' needs '{name}'", element.name))
}

fn no_children(element: &Element) -> Result<(), Refusal> {
    match element.children.first() {
        Some(child) => Err(format!(
            "'{}' with inline XML ('{}') is not supported",
            element.name, child.name
        )),
        None => Ok(()),
    }
}

/// A mediator's `value` or `expression`.
fn value(element: &Element, flow: Flow) -> Result<Value, Refusal> {
    match (element.attribute("value"), element.attribute("expression")) {
        (Some(text), None) => literal(text),
        (None, Some(expression)) => self::expression(expression, flow),
        _ => Err(format!(
            "'{}' needs either 'value' or 'expression'",
            element.name
        )),
    }
}

fn literal(text: &str) -> Result<Value, Refusal> {
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Err("A value must not hold control characters".into());
    }
    Ok(Value::Text(text.into()))
}

/// A payload factory's argument: a `value`, or an `expression` as its `evaluator` reads it
/// (`json`: a JSONPath into the body; `xml`, the default: any supported expression).
fn argument(element: &Element, flow: Flow) -> Result<Value, Refusal> {
    match element.attribute("evaluator").unwrap_or("xml") {
        "json" => match (element.attribute("value"), element.attribute("expression")) {
            (None, Some(path)) => body_value(BodyPath::Json(json_path(path)?), flow),
            _ => value(element, flow),
        },
        "xml" => value(element, flow),
        other => Err(format!(
            "The evaluator '{other}' is not supported (xml or json)"
        )),
    }
}

/// A value read from the body, where the flow has one: the fault flow has none.
fn body_value(path: BodyPath, flow: Flow) -> Result<Value, Refusal> {
    if flow == Flow::Fault {
        return Err(
            "In the fault flow an expression may not read the body (set a property in the in flow)"
                .into(),
        );
    }
    Ok(Value::Body(path))
}

/// A JSONPath of names and indices: `$`, `$.a.b`, `$.a[0]`, `$['a b']`.
fn json_path(text: &str) -> Result<Vec<PathPart>, Refusal> {
    let refuse = || {
        format!(
            "The JSONPath '{}' is not supported (names and indices from the root: $.a.b[0], $['a b'])",
            text.escape_default()
        )
    };
    let mut rest = text.trim().strip_prefix('$').ok_or_else(refuse)?;
    let mut parts = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() || name.contains(['*', '@', '(', ')', '?', '$', '\'', '"', ']']) {
                return Err(refuse());
            }
            parts.push(PathPart::Key(name.into()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or_else(refuse)?;
            let inside = after[..end].trim();
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|i| i.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|i| i.strip_suffix('"')));
            let part = match (quoted, inside.parse::<usize>()) {
                (Some(name), _) if !name.contains(['\'', '"']) => PathPart::Key(name.into()),
                (None, Ok(index)) => PathPart::Index(index),
                _ => return Err(refuse()),
            };
            parts.push(part);
            rest = &after[end + 1..];
        } else {
            return Err(refuse());
        }
        if parts.len() > MAX_PATH_PARTS {
            return Err(refuse());
        }
    }
    Ok(parts)
}

/// An XPath of element names: `//a/b`, `/a/b`, `$body/a/b`, with prefixes (not checked)
/// and an optional final `/text()`.
fn xml_path(text: &str) -> Option<XmlPath> {
    let text = text.trim();
    let text = text.strip_suffix("/text()").unwrap_or(text);
    let (from, rest) = if let Some(rest) = text.strip_prefix("$body/") {
        (XmlFrom::Body, rest)
    } else if let Some(rest) = text.strip_prefix("//") {
        (XmlFrom::Anywhere, rest)
    } else {
        (XmlFrom::Root, text.strip_prefix('/')?)
    };
    let name = |step: &str| {
        let local = step.rsplit_once(':').map_or(step, |(_, local)| local);
        let mut chars = local.chars();
        let first = chars.next()?;
        ((first.is_alphabetic() || first == '_')
            && chars.all(|c| c.is_alphanumeric() || "_-.".contains(c)))
        .then(|| local.to_string())
    };
    let names = rest.split('/').map(name).collect::<Option<Vec<_>>>()?;
    (!names.is_empty() && names.len() <= MAX_PATH_PARTS).then_some(XmlPath { from, names })
}

/// The supported expressions: `$trp:`, `$ctx:`, `$url:`, `get-property(...)`,
/// `json-eval(...)` and XPaths of element names.
fn expression(text: &str, flow: Flow) -> Result<Value, Refusal> {
    let text = text.trim();
    if let Some(path) = text
        .strip_prefix("json-eval(")
        .and_then(|t| t.strip_suffix(')'))
    {
        return body_value(BodyPath::Json(json_path(path)?), flow);
    }
    if text.starts_with('/') || text.starts_with("$body/") {
        let path = xml_path(text).ok_or_else(|| {
            format!(
                "The XPath '{}' is not supported (element names only: //a/b, /a/b, $body/a/b)",
                text.escape_default()
            )
        })?;
        return body_value(BodyPath::Xml(path), flow);
    }
    let value = if let Some(name) = text.strip_prefix("$trp:") {
        Some(Value::Header(name.to_ascii_lowercase()))
    } else if let Some(name) = text.strip_prefix("$ctx:") {
        Some(property_value(name))
    } else if let Some(name) = text.strip_prefix("$url:") {
        Some(Value::Query(name.into()))
    } else {
        get_property(text)
    };
    let Some(value) = value else {
        return Err(format!(
            "The expression '{}' is not supported (supported: $trp:name, $ctx:name, $url:name, get-property('name'), get-property('transport', 'name'), json-eval($.a.b), //a/b)",
            text.escape_default()
        ));
    };
    // The out flow's headers are the backend's answer's; the fault flow has none.
    let reads_request = match value {
        Value::Query(_) => flow != Flow::In,
        Value::Header(_) => flow == Flow::Fault,
        _ => false,
    };
    if reads_request {
        return Err(
            "In the out and fault flows an expression may read properties and the call's facts, not the query, nor in the fault flow headers (set a property in the in flow)"
                .into(),
        );
    }
    if flow != Flow::Fault && matches!(value, Value::Call(fact) if fact.is_failures()) {
        return Err("ERROR_CODE and ERROR_MESSAGE are known in the fault flow only".into());
    }
    match &value {
        Value::Header(name) | Value::Property(name) | Value::Query(name) if name.is_empty() => Err(
            format!("The expression '{}' names nothing", text.escape_default()),
        ),
        _ => Ok(value),
    }
}

/// A property's value: the call's facts by WSO2's names, `query.param.*` the query.
fn property_value(name: &str) -> Value {
    if let Some(fact) = CallFact::named(name) {
        Value::Call(fact)
    } else if let Some(parameter) = name.strip_prefix("query.param.") {
        Value::Query(parameter.into())
    } else {
        Value::Property(name.into())
    }
}

/// `get-property('name')`, `get-property('default', 'name')`, `get-property('transport',
/// 'name')`.
fn get_property(text: &str) -> Option<Value> {
    let inner = text.strip_prefix("get-property(")?.strip_suffix(')')?;
    let quoted = |part: &str| {
        let part = part.trim();
        part.strip_prefix('\'')
            .and_then(|p| p.strip_suffix('\''))
            .or_else(|| part.strip_prefix('"').and_then(|p| p.strip_suffix('"')))
            .filter(|p| !p.contains(['\'', '"']))
            .map(str::to_string)
    };
    let parts: Vec<&str> = inner.split(',').collect();
    match parts.as_slice() {
        [name] => Some(property_value(&quoted(name)?)),
        [scope, name] => match quoted(scope)?.as_str() {
            "transport" => Some(Value::Header(quoted(name)?.to_ascii_lowercase())),
            "default" | "synapse" => Some(property_value(&quoted(name)?)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(body: &str) -> String {
        format!(r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="s">{body}</sequence>"#)
    }

    fn steps(body: &str, flow: Flow) -> Result<Vec<Step>, Refusal> {
        compile(&sequence(body), flow)
    }

    #[test]
    fn transport_properties_and_headers_set_and_remove_headers() {
        let compiled = steps(
            r#"<property name="X-Tenant" value="acme" scope="transport"/>
               <property name="X-Debug" scope="transport" action="remove"/>
               <header name="X-From" expression="$trp:User-Agent" scope="transport"/>
               <header name="Authorization" expression="get-property('transport','X-Key')" scope="transport"/>"#,
            Flow::In,
        )
        .unwrap();
        assert_eq!(
            compiled,
            vec![
                Step::SetHeader {
                    name: "x-tenant".into(),
                    value: Value::Text("acme".into())
                },
                Step::RemoveHeader {
                    name: "x-debug".into()
                },
                Step::SetHeader {
                    name: "x-from".into(),
                    value: Value::Header("user-agent".into())
                },
                Step::SetHeader {
                    name: "authorization".into(),
                    value: Value::Header("x-key".into())
                },
            ]
        );
    }

    #[test]
    fn properties_read_the_call_the_query_and_one_another() {
        let compiled = steps(
            r#"<property name="who" expression="get-property('api.ut.userName')"/>
               <property name="page" expression="$url:page"/>
               <property name="size" expression="get-property('query.param.size')"/>
               <property name="copy" expression="$ctx:who"/>
               <property name="who" action="remove"/>"#,
            Flow::In,
        )
        .unwrap();
        assert_eq!(
            compiled,
            vec![
                Step::SetProperty {
                    name: "who".into(),
                    value: Value::Call(CallFact::UserName)
                },
                Step::SetProperty {
                    name: "page".into(),
                    value: Value::Query("page".into())
                },
                Step::SetProperty {
                    name: "size".into(),
                    value: Value::Query("size".into())
                },
                Step::SetProperty {
                    name: "copy".into(),
                    value: Value::Property("who".into())
                },
                Step::RemoveProperty { name: "who".into() },
            ]
        );
    }

    #[test]
    fn filters_branch_on_an_anchored_pattern() {
        let compiled = steps(
            r#"<filter source="$trp:X-Env" regex="prod|live">
                 <then><header name="X-A" value="1" scope="transport"/></then>
                 <else><log level="custom"><property name="env" expression="$trp:X-Env"/></log></else>
               </filter>
               <filter source="$ctx:p" regex="a.*"><property name="b" value="c"/></filter>"#,
            Flow::In,
        )
        .unwrap();
        let Step::Filter {
            regex,
            then,
            otherwise,
            ..
        } = &compiled[0]
        else {
            panic!("{compiled:?}")
        };
        assert_eq!(regex, "^(?:prod|live)$");
        assert_eq!((then.len(), otherwise.len()), (1, 1));
        assert!(
            matches!(&compiled[1], Step::Filter { then, otherwise, .. } if then.len() == 1 && otherwise.is_empty())
        );
    }

    #[test]
    fn what_the_gateway_cannot_do_is_refused_naming_it() {
        for (body, flow, says) in [
            (
                r#"<send/>"#,
                Flow::In,
                "The mediator 'send' is not supported",
            ),
            (r#"<payloadFactory/>"#, Flow::In, "needs a 'format'"),
            (
                r#"<payloadFactory><format>{}</format></payloadFactory>"#,
                Flow::Fault,
                "followed by a respond",
            ),
            (
                r#"<payloadFactory media-type="json"><format>{"a":"$2"}</format><args><arg value="x"/></args></payloadFactory><respond/>"#,
                Flow::In,
                "names $2",
            ),
            (
                r#"<payloadFactory><format key="conf:/p"/></payloadFactory><respond/>"#,
                Flow::In,
                "attribute 'key'",
            ),
            (
                r#"<payloadFactory media-type="json"><format>{}</format><args><arg expression="$..a" evaluator="json"/></args></payloadFactory><respond/>"#,
                Flow::In,
                "JSONPath '$..a'",
            ),
            (
                r#"<payloadFactory><format>x</format><args><arg expression="$.a" evaluator="jq"/></args></payloadFactory>"#,
                Flow::In,
                "evaluator 'jq'",
            ),
            (r#"<respond/>"#, Flow::Out, "in and fault flows only"),
            (
                r#"<property name="messageType" value="json" scope="axis2"/>"#,
                Flow::In,
                "not a media type",
            ),
            (
                r#"<makefault version="pox"><code value="Server"/><reason value="r"/></makefault>"#,
                Flow::In,
                "version 'pox'",
            ),
            (
                r#"<makefault><code value="soap11Env:Oops"/><reason value="r"/></makefault>"#,
                Flow::In,
                "fault code 'Oops'",
            ),
            (
                r#"<makefault><code value="Server"/></makefault>"#,
                Flow::In,
                "needs a 'reason'",
            ),
            (
                r#"<makefault><code value="Server"/><reason value="r"/><node value="n"/></makefault>"#,
                Flow::In,
                "not 'node'",
            ),
            (
                r#"<makefault><code value="Server"/><reason value="r"/></makefault>"#,
                Flow::Fault,
                "followed by a respond",
            ),
            (r#"<drop><log/></drop>"#, Flow::In, "inline XML"),
            (r#"<drop/>"#, Flow::Fault, "in and out flows only"),
            (
                r#"<property name="REST_URL_POSTFIX" value="/a" scope="axis2"/>"#,
                Flow::Out,
                "in flow only",
            ),
            (
                r#"<property name="REST_URL_POSTFIX" value="a/b" scope="axis2"/>"#,
                Flow::In,
                "neither empty nor a path",
            ),
            (
                r#"<property name="c" expression="$ctx:ERROR_CODE"/>"#,
                Flow::In,
                "fault flow only",
            ),
            (
                r#"<property name="a" value="b" scope="axis2"/>"#,
                Flow::In,
                "scope 'axis2'",
            ),
            (
                r#"<property name="a" value="b" type="OM"/>"#,
                Flow::In,
                "type 'OM'",
            ),
            (
                r#"<property name="a" expression="//foo[1]"/>"#,
                Flow::In,
                "XPath '//foo[1]'",
            ),
            (
                r#"<property name="a" expression="/a/@b"/>"#,
                Flow::In,
                "XPath",
            ),
            (
                r#"<property name="a" expression="json-eval($.a)"/>"#,
                Flow::Fault,
                "may not read the body",
            ),
            (
                r#"<property name="a" expression="json-eval($.a[*])"/>"#,
                Flow::In,
                "JSONPath",
            ),
            (
                r#"<property name="a"/>"#,
                Flow::In,
                "either 'value' or 'expression'",
            ),
            (
                r#"<property name="a" value="b" expression="$trp:c"/>"#,
                Flow::In,
                "either",
            ),
            (
                r#"<property name="api.ut.api" value="b"/>"#,
                Flow::In,
                "gateway's own",
            ),
            (r#"<header name="h" value="v"/>"#, Flow::In, "SOAP headers"),
            (
                r#"<header name="Content-Length" value="1" scope="transport"/>"#,
                Flow::In,
                "frames",
            ),
            (
                r#"<header name="Host" scope="transport" action="remove"/>"#,
                Flow::In,
                "frames",
            ),
            (
                r#"<header name="Via" scope="transport" action="remove"/>"#,
                Flow::In,
                "gateway's own",
            ),
            (
                r#"<property name="X-JWT-Assertion" value="x" scope="transport"/>"#,
                Flow::In,
                "gateway's own",
            ),
            (
                r#"<filter source="$trp:a" regex="a)|(?:b"/>"#,
                Flow::In,
                "regex",
            ),
            (
                r#"<header name="a b" value="v" scope="transport"/>"#,
                Flow::In,
                "not a header name",
            ),
            (
                r#"<header name="h" value="a&#10;b" scope="transport"/>"#,
                Flow::In,
                "control characters",
            ),
            (
                r#"<header name="h" expression="$trp:x" scope="transport"/>"#,
                Flow::Fault,
                "nor in the fault flow headers",
            ),
            (
                r#"<header name="h" expression="$url:x" scope="transport"/>"#,
                Flow::Out,
                "not the query",
            ),
            (r#"<log level="full"/>"#, Flow::In, "credentials"),
            (r#"<filter xpath="//a"/>"#, Flow::In, "xpath"),
            (
                r#"<filter source="$trp:a" regex="(?=x)"/>"#,
                Flow::In,
                "regex",
            ),
            (
                r#"<filter source="$trp:a" regex="a"><then/><log/></filter>"#,
                Flow::In,
                "nothing else",
            ),
            (
                r#"<property name="a" value="b" action="toggle"/>"#,
                Flow::In,
                "action 'toggle'",
            ),
            (
                r#"<property name="a" value="b" pattern="x"/>"#,
                Flow::In,
                "attribute 'pattern'",
            ),
        ] {
            let refusal = steps(body, flow).expect_err(body);
            assert!(refusal.contains(says), "{body}: {refusal}");
        }
        let refusal = steps("<send/>", Flow::In).unwrap_err();
        assert!(
            refusal.contains("property, header, log, filter"),
            "{refusal}"
        );
        let on_error =
            r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="s" onError="f"/>"#;
        assert!(compile(on_error, Flow::In).unwrap_err().contains("onError"));
    }

    #[test]
    fn a_payload_factory_answers_with_its_format_and_arguments() {
        let compiled = steps(
            r#"<filter source="$trp:X-Mock" regex="yes">
                 <then>
                   <payloadFactory media-type="json">
                     <format>{"user": "$1", "page": $2, "note": "&lt;$1&gt;"}</format>
                     <args><arg expression="$trp:X-User"/><arg expression="$url:page"/></args>
                   </payloadFactory>
                 </then>
                 <else>
                   <payloadFactory>
                     <format><m:ok xmlns:m="urn:m"><m:v>$1</m:v></m:ok></format>
                     <args><arg value="fixed"/></args>
                   </payloadFactory>
                 </else>
               </filter>
               <property name="HTTP_SC" value="201" scope="axis2"/>
               <respond/>"#,
            Flow::In,
        )
        .unwrap();
        let Step::Filter {
            then, otherwise, ..
        } = &compiled[0]
        else {
            panic!("{compiled:?}")
        };
        assert_eq!(
            then[0],
            Step::Payload {
                media: Media::Json,
                format: r#"{"user": "$1", "page": $2, "note": "<$1>"}"#.into(),
                args: vec![Value::Header("x-user".into()), Value::Query("page".into())],
            }
        );
        assert!(
            matches!(&otherwise[0], Step::Payload { media: Media::Xml, format, .. }
            if format == r#"<m:ok xmlns:m="urn:m"><m:v>$1</m:v></m:ok>"#)
        );
        assert_eq!(
            compiled[1],
            Step::SetStatus {
                value: Value::Text("201".into())
            }
        );
        assert_eq!(compiled[2], Step::Respond);
        let cdata = steps(
            r#"<payloadFactory media-type="json"><format><![CDATA[{"a": "<b>"}]]></format></payloadFactory><respond/>"#,
            Flow::In,
        )
        .unwrap();
        assert!(matches!(&cdata[0], Step::Payload { format, .. } if format == r#"{"a": "<b>"}"#));
    }

    /// Valid sequences cut and spliced at pseudo-random places, with characters XML and
    /// the expressions treat specially: each is refused or compiled, never a panic.
    #[test]
    fn mangled_sequences_are_refused_or_compiled_never_a_panic() {
        let mut seeds: Vec<&str> = super::super::defaults::GLOBAL_POLICIES
            .iter()
            .filter_map(|policy| policy.sequence)
            .collect();
        seeds.push(
            r#"<sequence><filter source="$trp:a" regex="b"><then><payloadFactory media-type="json"><format>{"a":"$1"}</format><args><arg expression="$url:x"/></args></payloadFactory><respond/></then></filter></sequence>"#,
        );
        let specials = [
            "<",
            ">",
            "&",
            "&#0;",
            "$",
            "$9",
            "'",
            "\"",
            "é",
            "]]>",
            "<![CDATA[",
            "\u{0}",
            "get-property(",
            ")",
            ",",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound.max(1) as u64) as usize
        };
        for round in 0..3000 {
            let seed = seeds[round % seeds.len()];
            let text: String = seed.chars().collect();
            let chars: Vec<char> = text.chars().collect();
            let (a, b) = (next(chars.len()), next(chars.len()));
            let (from, to) = (a.min(b), a.max(b));
            let mut mangled: String = chars[..from].iter().collect();
            mangled.push_str(specials[next(specials.len())]);
            mangled.extend(&chars[to..]);
            for flow in [Flow::In, Flow::Out, Flow::Fault] {
                let _ = compile(&mangled, flow);
            }
        }
    }

    #[test]
    fn bodies_are_read_by_jsonpath_and_xpath_and_made_or_converted() {
        let compiled = steps(
            r#"<property name="id" expression="json-eval($.order['line items'][2].id)"/>
               <property name="sym" expression="//m:symbol/text()"/>
               <property name="root" expression="/Envelope/Body/getQuote"/>
               <property name="first" expression="$body/order"/>
               <payloadFactory media-type="xml">
                 <format><q xmlns="urn:q"><s>$1</s></q></format>
                 <args><arg evaluator="json" expression="$.symbol"/></args>
               </payloadFactory>
               <property name="messageType" value="text/xml" scope="axis2"/>
               <drop/>
               <property name="REST_URL_POSTFIX" expression="$ctx:id" scope="axis2"/>
               <property name="REST_URL_POSTFIX" scope="axis2" action="remove"/>"#,
            Flow::In,
        )
        .unwrap();
        let body = |step: &Step| match step {
            Step::SetProperty {
                value: Value::Body(path),
                ..
            } => path.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            body(&compiled[0]),
            BodyPath::Json(vec![
                PathPart::Key("order".into()),
                PathPart::Key("line items".into()),
                PathPart::Index(2),
                PathPart::Key("id".into()),
            ])
        );
        let xml = |from, names: &[&str]| {
            BodyPath::Xml(XmlPath {
                from,
                names: names.iter().map(|n| n.to_string()).collect(),
            })
        };
        assert_eq!(body(&compiled[1]), xml(XmlFrom::Anywhere, &["symbol"]));
        assert_eq!(
            body(&compiled[2]),
            xml(XmlFrom::Root, &["Envelope", "Body", "getQuote"])
        );
        assert_eq!(body(&compiled[3]), xml(XmlFrom::Body, &["order"]));
        assert!(matches!(&compiled[4], Step::Payload { args, .. }
            if args == &[Value::Body(BodyPath::Json(vec![PathPart::Key("symbol".into())]))]));
        assert_eq!(
            compiled[5],
            Step::SetFormat {
                value: Value::Text("text/xml".into())
            }
        );
        assert_eq!(compiled[6], Step::Drop);
        assert_eq!(
            compiled[7..],
            [
                Step::SetPath {
                    value: Value::Property("id".into())
                },
                Step::SetPath {
                    value: Value::Text(String::new())
                },
            ]
        );
        // The out flow makes and converts the answer too.
        let out = steps(
            r#"<property name="HTTP_SC" value="202" scope="axis2"/>
               <payloadFactory media-type="json"><format>{"s":"$1"}</format><args><arg expression="//s"/></args></payloadFactory>
               <log level="custom"><property name="s" expression="json-eval($.s)"/></log>"#,
            Flow::Out,
        )
        .unwrap();
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn makefault_answers_a_soap_fault() {
        let compiled = steps(
            r#"<makefault version="soap12" response="true">
                 <code xmlns:soap12Env="http://www.w3.org/2003/05/soap-envelope" value="soap12Env:Receiver"/>
                 <reason expression="$ctx:ERROR_MESSAGE"/>
                 <detail value="backend down"/>
               </makefault>
               <respond/>"#,
            Flow::Fault,
        )
        .unwrap();
        let Step::Payload {
            media,
            format,
            args,
        } = &compiled[0]
        else {
            panic!("{compiled:?}")
        };
        assert_eq!(*media, Media::Soap12);
        assert!(
            format.contains("<soap:Value>soap:Receiver</soap:Value>"),
            "{format}"
        );
        assert!(format.contains("<soap:Detail>$2</soap:Detail>"), "{format}");
        assert_eq!(args[0], Value::Call(CallFact::ErrorMessage));
        let soap11 = steps(
            r#"<makefault><code value="soap11Env:Client"/><reason value="bad"/></makefault><respond/>"#,
            Flow::In,
        )
        .unwrap();
        assert!(
            matches!(&soap11[0], Step::Payload { media: Media::Soap11, format, .. }
            if format.contains("<faultcode>soapenv:Client</faultcode>") && !format.contains("detail"))
        );
    }

    #[test]
    fn sequences_are_bounded_in_size_and_nesting() {
        let many = r#"<property name="a" value="b"/>"#.repeat(MAX_STEPS + 1);
        assert!(steps(&many, Flow::In).unwrap_err().contains("at most"));
        let mut nested = String::from(r#"<property name="a" value="b"/>"#);
        for _ in 0..=MAX_DEPTH {
            nested = format!(r#"<filter source="$ctx:a" regex="b">{nested}</filter>"#);
        }
        assert!(steps(&nested, Flow::In).is_err());
        let fits = r#"<property name="a" value="b"/>"#.repeat(MAX_STEPS);
        assert_eq!(steps(&fits, Flow::In).unwrap().len(), MAX_STEPS);
    }

    #[test]
    fn wso2s_documented_samples_compile() {
        // The publisher's guide: a trace log in the request flow.
        let trace = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="custom_policy">
          <log level="custom"><property name="TRACE" value="API Mediation Policy"/></log>
        </sequence>"#;
        assert!(
            matches!(&compile(trace, Flow::In).unwrap()[0], Step::Log { properties, .. } if properties.len() == 1)
        );
        // Adding a header to the backend's request.
        let add = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header">
          <header name="CustomHeader" scope="transport" value="CustomHeaderValue"/>
        </sequence>"#;
        assert_eq!(compile(add, Flow::In).unwrap().len(), 1);
    }
}
