//! Message bodies as an API's mediation reads and converts them: JSON and XML mapped onto
//! each other as Synapse's JSON support does it in outline (a JSON object is the element
//! `jsonObject`, an array repeats its member's element, an XML element's repeated children
//! are an array, numbers and booleans are read as such), SOAP envelopes made and opened
//! as Synapse's formatters do for a `messageType`, and the values JSONPath and XPath
//! subsets select ([`BodyPath`]).

use std::cell::OnceCell;
use std::fmt::Write as _;

use apim_http::xml::{self, Element};
use apim_manifest::mediation::{BodyPath, PathPart, XmlFrom, XmlPath};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

/// Largest body a conversion makes, bytes (JSON to XML repeats names, so the result may
/// be a few times the body read).
pub const MAX_CONVERTED_BYTES: usize = 4 * 1024 * 1024;

const SOAP11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";

/// What a body is, read from its content type (sniffed from its first character when
/// the type says neither JSON nor XML).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    Json,
    Xml,
    Other,
}

/// How a body leaves, by its `messageType`: Synapse's formatter for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Json,
    /// Plain XML (`application/xml`): a SOAP envelope's payload without the envelope.
    Pox,
    /// A SOAP 1.1 envelope (`text/xml`).
    Soap11,
    /// A SOAP 1.2 envelope (`application/soap+xml`).
    Soap12,
    /// Anything else: the body as it is.
    AsIs,
}

/// Why a body could not be read or converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unconverted {
    /// It is not the JSON or XML its content type says.
    Unreadable(String),
    /// The result would be larger than [`MAX_CONVERTED_BYTES`].
    TooLarge,
}

fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether `text` names one media type (`type/subtype`, parameters aside): not a list,
/// nor a range with `*`.
pub fn is_one_media_type(text: &str) -> bool {
    let essence = essence(text);
    !text.contains(',')
        && !essence.contains('*')
        && essence
            .split_once('/')
            .is_some_and(|(kind, subtype)| !kind.is_empty() && !subtype.is_empty())
}

fn read_kind(content_type: &str, body: &[u8]) -> Read {
    let essence = essence(content_type);
    if essence.ends_with("/json") || essence.ends_with("+json") {
        return Read::Json;
    }
    if essence.ends_with("/xml") || essence.ends_with("+xml") {
        return Read::Xml;
    }
    // A type that says something else (an HTML error page) is not read as either.
    if !essence.is_empty() {
        return Read::Other;
    }
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{' | b'[') => Read::Json,
        Some(b'<') => Read::Xml,
        _ => Read::Other,
    }
}

fn write_kind(message_type: &str) -> Write {
    match essence(message_type).as_str() {
        "text/xml" => Write::Soap11,
        "application/soap+xml" => Write::Soap12,
        t if t.ends_with("/json") || t.ends_with("+json") => Write::Json,
        t if t.ends_with("/xml") || t.ends_with("+xml") => Write::Pox,
        _ => Write::AsIs,
    }
}

/// The body `body` (of `content_type`) as it leaves in `message_type`.
pub fn convert(
    body: &[u8],
    content_type: &str,
    message_type: &str,
) -> Result<Vec<u8>, Unconverted> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(body.to_vec());
    }
    let out = match (read_kind(content_type, body), write_kind(message_type)) {
        (_, Write::AsIs) | (Read::Other, _) | (Read::Json, Write::Json) => return Ok(body.to_vec()),
        (Read::Json, Write::Pox) => json_to_xml(body)?,
        (Read::Json, Write::Soap11) => enveloped(&json_to_xml(body)?, SOAP11),
        (Read::Json, Write::Soap12) => enveloped(&json_to_xml(body)?, SOAP12),
        (Read::Xml, to) => {
            let root = parse_xml(body)?;
            match (to, is_envelope(&root)) {
                (Write::Json, _) => xml_to_json(payload_of(&root)),
                (Write::Pox, true) => payload_of(&root).map(serialize).unwrap_or_default(),
                (Write::Soap11 | Write::Soap12, true) | (Write::Pox, false) => {
                    return Ok(body.to_vec());
                }
                // The document as it came, its declaration left off.
                (Write::Soap11, false) => enveloped(text_of_body(body)?, SOAP11),
                (Write::Soap12, false) => enveloped(text_of_body(body)?, SOAP12),
                (Write::AsIs, _) => unreachable!("matched above"),
            }
        }
    };
    if out.len() > MAX_CONVERTED_BYTES {
        return Err(Unconverted::TooLarge);
    }
    Ok(out.into_bytes())
}

/// The value `path` selects in `body` (of `content_type`): a JSON scalar's text (a
/// string's without quotes), an object's or array's JSON; an element's text; none when
/// nothing is there or the body cannot be read so.
pub fn read(body: &[u8], content_type: &str, path: &BodyPath) -> Option<String> {
    Parsed::default()
        .read(body, content_type, path)
        .map(|value| value.text)
}

/// A value read from a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyValue {
    pub text: String,
    /// It is a JSON object or array (its JSON), which a JSON payload takes as it is.
    pub structured: bool,
}

/// A body parsed at most once in each form, however many values a flow reads of it.
#[derive(Debug, Default)]
pub struct Parsed {
    json: OnceCell<Option<Json>>,
    xml: OnceCell<Option<Element>>,
}

impl Parsed {
    /// [`read`], parsing the body (of `content_type`) the first time a form is asked.
    pub fn read(&self, body: &[u8], content_type: &str, path: &BodyPath) -> Option<BodyValue> {
        let kind = read_kind(content_type, body);
        match path {
            BodyPath::Json(parts) => {
                let json = self.json.get_or_init(|| as_json(body, kind)).as_ref()?;
                let found = parts.iter().try_fold(json, |at, part| match part {
                    PathPart::Key(key) => at.get(key.as_str()),
                    PathPart::Index(index) => at.get(*index),
                })?;
                Some(match found {
                    Json::String(text) => BodyValue {
                        text: text.clone(),
                        structured: false,
                    },
                    other => BodyValue {
                        text: other.to_string(),
                        structured: other.is_object() || other.is_array(),
                    },
                })
            }
            BodyPath::Xml(path) => {
                let root = self.xml.get_or_init(|| as_xml(body, kind)).as_ref()?;
                select(root, path).map(|element| BodyValue {
                    text: text_of(element),
                    structured: false,
                })
            }
        }
    }
}

/// A body as JSON: an XML one as Synapse shows it in JSON.
fn as_json(body: &[u8], kind: Read) -> Option<Json> {
    match kind {
        Read::Json => serde_json::from_slice(body).ok(),
        Read::Xml => {
            let root = parse_xml(body).ok()?;
            let json = xml_to_json(payload_of(&root));
            (json.len() <= MAX_CONVERTED_BYTES)
                .then(|| serde_json::from_str(&json).ok())
                .flatten()
        }
        Read::Other => None,
    }
}

/// A body as XML: a JSON one as Synapse holds it.
fn as_xml(body: &[u8], kind: Read) -> Option<Element> {
    match kind {
        Read::Xml => parse_xml(body).ok(),
        Read::Json => parse_xml(json_to_xml(body).ok()?.as_bytes()).ok(),
        Read::Other => None,
    }
}

fn text_of_body(body: &[u8]) -> Result<&str, Unconverted> {
    let text = std::str::from_utf8(body)
        .map_err(|_| Unconverted::Unreadable("the body is not UTF-8".into()))?;
    if text.contains("<!DOCTYPE") {
        return Err(Unconverted::Unreadable(
            "a document type declaration cannot go into an envelope".into(),
        ));
    }
    Ok(text)
}

fn parse_xml(body: &[u8]) -> Result<Element, Unconverted> {
    xml::parse(body).map_err(Unconverted::Unreadable)
}

fn is_envelope(root: &Element) -> bool {
    root.is(SOAP11, "Envelope") || root.is(SOAP12, "Envelope")
}

/// What a message carries: a SOAP envelope's first body element; a plain document's
/// root (which Synapse holds as the first element of a body it wraps it in).
fn payload_of(root: &Element) -> Option<&Element> {
    if !is_envelope(root) {
        return Some(root);
    }
    root.children
        .iter()
        .find(|c| c.name == "Body" && c.namespace == root.namespace)
        .and_then(|body| body.children.first())
}

/// `xml` (a document, its declaration left off) as the body of a SOAP envelope.
fn enveloped(xml: &str, namespace: &str) -> String {
    let inner = match xml.trim_start().strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or("", |(_, after)| after),
        None => xml,
    };
    let mut out = String::with_capacity(inner.len() + 128);
    out.push_str(r#"<soapenv:Envelope xmlns:soapenv=""#);
    out.push_str(namespace);
    out.push_str(r#""><soapenv:Body>"#);
    out.push_str(inner.trim());
    out.push_str("</soapenv:Body></soapenv:Envelope>");
    out
}

/// An element written back as XML, each namespace as a default one where it changes.
fn serialize(root: &Element) -> String {
    let mut out = String::new();
    write_element(root, "", &mut out);
    out
}

fn write_element(element: &Element, parent_namespace: &str, out: &mut String) {
    out.push('<');
    out.push_str(&element.name);
    if element.namespace != parent_namespace {
        out.push_str(" xmlns=\"");
        escape_into(&element.namespace, out);
        out.push('"');
    }
    for (name, value) in &element.attributes {
        let _ = write!(out, " {name}=\"");
        escape_into(value, out);
        out.push('"');
    }
    if element.children.is_empty() && element.text.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    escape_into(&element.text, out);
    for child in &element.children {
        write_element(child, &element.namespace, out);
    }
    out.push_str("</");
    out.push_str(&element.name);
    out.push('>');
}

fn escape_into(text: &str, out: &mut String) {
    // Most text needs nothing: one scan, one copy.
    let plain = |b: &u8| {
        !matches!(b, b'&' | b'<' | b'>' | b'"')
            && (*b >= 0x20 || b"\t\n\r".contains(b))
            && b.is_ascii()
    };
    if text.as_bytes().iter().all(plain) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if xml::is_xml_char(c) => out.push(c),
            _ => {}
        }
    }
}

/// A JSON body as XML: an object as `jsonObject`, an array as `jsonArray` of
/// `jsonElement`s, a lone scalar as `jsonValue`; members as elements of their names
/// (made into XML names), an array member as its element repeated, `null` as an empty
/// element.
pub fn json_to_xml(body: &[u8]) -> Result<String, Unconverted> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    let mut out = String::with_capacity(body.len() * 2);
    let mut reader = serde_json::Deserializer::from_slice(body);
    let written = match first {
        Some(b'[') => {
            out.push_str("<jsonArray>");
            let done = ToXml {
                name: "jsonElement",
                out: &mut out,
            }
            .deserialize(&mut reader);
            out.push_str("</jsonArray>");
            done
        }
        Some(b'{') => ToXml {
            name: "jsonObject",
            out: &mut out,
        }
        .deserialize(&mut reader),
        _ => ToXml {
            name: "jsonValue",
            out: &mut out,
        }
        .deserialize(&mut reader),
    };
    match written.and_then(|()| reader.end()) {
        Ok(()) => Ok(out),
        Err(_) if out.len() > MAX_CONVERTED_BYTES => Err(Unconverted::TooLarge),
        Err(err) => Err(Unconverted::Unreadable(err.to_string())),
    }
}

/// Writes the JSON value it reads as the element `name` (an array as that element
/// repeated).
struct ToXml<'a> {
    name: &'a str,
    out: &'a mut String,
}

impl ToXml<'_> {
    fn scalar<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
        self.check()?;
        open_tag(self.name, self.out);
        escape_into(text, self.out);
        close_tag(self.name, self.out);
        Ok(())
    }

    fn check<E: serde::de::Error>(&self) -> Result<(), E> {
        if self.out.len() > MAX_CONVERTED_BYTES {
            Err(E::custom("the XML would be too large"))
        } else {
            Ok(())
        }
    }
}

impl<'de> DeserializeSeed<'de> for ToXml<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ToXml<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(if v { "true" } else { "false" })
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.check()?;
        self.out.push('<');
        self.out.push_str(self.name);
        self.out.push_str("/>");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(ToXml {
                name: self.name,
                out: &mut *self.out,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.check()?;
        open_tag(self.name, self.out);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let name = xml_name(&key);
            map.next_value_seed(ToXml {
                name: &name,
                out: &mut *self.out,
            })?;
        }
        close_tag(self.name, self.out);
        Ok(())
    }
}

fn open_tag(name: &str, out: &mut String) {
    out.push('<');
    out.push_str(name);
    out.push('>');
}

fn close_tag(name: &str, out: &mut String) {
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

/// A JSON member's name as an XML name: as it is when it is one; a leading digit
/// prefixed as Synapse does (`_JsonReader_PD_`); other characters an XML name cannot
/// hold as `_`.
fn xml_name(key: &str) -> std::borrow::Cow<'_, str> {
    let plain = key.bytes().enumerate().all(|(at, b)| {
        b.is_ascii_alphabetic()
            || b == b'_'
            || (at > 0 && (b.is_ascii_digit() || b == b'-' || b == b'.'))
    });
    if plain && !key.is_empty() {
        return std::borrow::Cow::Borrowed(key);
    }
    let mut name = String::with_capacity(key.len() + 16);
    if key.starts_with(|c: char| c.is_ascii_digit()) {
        name.push_str(DIGIT_PREFIX);
    }
    for (at, c) in key.chars().enumerate() {
        let fits = c.is_alphabetic()
            || c == '_'
            || ((at > 0 || !name.is_empty()) && (c.is_ascii_digit() || matches!(c, '-' | '.')));
        name.push(if fits { c } else { '_' });
    }
    if name.is_empty() {
        name.push('_');
    }
    std::borrow::Cow::Owned(name)
}

/// What Synapse puts before a member name that begins with a digit.
const DIGIT_PREFIX: &str = "_JsonReader_PD_";

/// An element's name as a JSON member's: as it is, but for the prefix a leading digit
/// got ([`xml_name`]).
fn json_name(name: &str) -> &str {
    name.strip_prefix(DIGIT_PREFIX).unwrap_or(name)
}

/// An XML payload as JSON: `jsonObject` and `jsonArray` back to what they were made
/// from, any other element as an object of its name.
pub fn xml_to_json(payload: Option<&Element>) -> String {
    let mut out = String::new();
    match payload {
        None => out.push_str("{}"),
        Some(root) if root.name == "jsonObject" => {
            if root.children.is_empty() && root.attributes.is_empty() {
                out.push_str("{}");
            } else {
                element_json(root, &mut out);
            }
        }
        Some(root) if root.name == "jsonArray" => {
            out.push('[');
            for (at, element) in root.children.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                element_json(element, &mut out);
            }
            out.push(']');
        }
        Some(root) => {
            out.push('{');
            push_string(json_name(&root.name), &mut out);
            out.push(':');
            element_json(root, &mut out);
            out.push('}');
        }
    }
    out
}

/// An element's value: its text (a number or boolean as such) when it has nothing else;
/// `null` when empty; otherwise an object of its attributes (`@name`), children (an
/// array where a name repeats) and text (`$`).
fn element_json(element: &Element, out: &mut String) {
    let text = element.text.trim();
    if element.children.is_empty() && element.attributes.is_empty() {
        if text.is_empty() {
            out.push_str("null");
        } else {
            primitive(text, out);
        }
        return;
    }
    out.push('{');
    let mut first = true;
    let mut comma = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
    };
    for (name, value) in &element.attributes {
        comma(out);
        push_string(&format!("@{name}"), out);
        out.push(':');
        push_string(value, out);
    }
    for (name, same) in grouped(&element.children) {
        if out.len() > MAX_CONVERTED_BYTES {
            // Past its bound: the caller refuses the whole.
            return;
        }
        comma(out);
        push_string(json_name(name), out);
        out.push(':');
        if let [child] = same.as_slice() {
            element_json(child, out);
        } else {
            out.push('[');
            for (at, each) in same.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                element_json(each, out);
            }
            out.push(']');
        }
    }
    if !text.is_empty() {
        comma(out);
        out.push_str("\"$\":");
        primitive(text, out);
    }
    out.push('}');
}

/// Elements grouped by name, in the order each name first comes, in one pass.
fn grouped(elements: &[Element]) -> Vec<(&str, Vec<&Element>)> {
    let mut groups: Vec<(&str, Vec<&Element>)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for element in elements {
        match at.get(element.name.as_str()) {
            Some(&index) => groups[index].1.push(element),
            None => {
                at.insert(&element.name, groups.len());
                groups.push((&element.name, vec![element]));
            }
        }
    }
    groups
}

/// Text as a JSON number or boolean when it is written as one, else as a string.
fn primitive(text: &str, out: &mut String) {
    if text == "true" || text == "false" || is_json_number(text) {
        out.push_str(text);
    } else {
        push_string(text, out);
    }
}

fn is_json_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (int, rest) = digits.split_at(digits.find(['.', 'e', 'E']).unwrap_or(digits.len()));
    let int_ok = int == "0"
        || (!int.is_empty() && !int.starts_with('0') && int.bytes().all(|b| b.is_ascii_digit()));
    int_ok && (rest.is_empty() || serde_json::from_str::<f64>(digits).is_ok_and(f64::is_finite))
}

fn push_string(text: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into()));
}

/// The first element `path` selects, in document order.
fn select<'e>(root: &'e Element, path: &XmlPath) -> Option<&'e Element> {
    let names = path.names.as_slice();
    match path.from {
        XmlFrom::Root => below(std::slice::from_ref(root), names),
        XmlFrom::Body => {
            let starts: &[Element] = if is_envelope(root) {
                root.children
                    .iter()
                    .find(|c| c.name == "Body")
                    .map_or(&[], |body| body.children.as_slice())
            } else {
                std::slice::from_ref(root)
            };
            below(starts, names)
        }
        XmlFrom::Anywhere => anywhere(root, names),
    }
}

/// The first element, among `elements` and down the names, that the names reach.
fn below<'e>(elements: &'e [Element], names: &[String]) -> Option<&'e Element> {
    let (first, rest) = names.split_first()?;
    elements.iter().filter(|e| &e.name == first).find_map(|e| {
        if rest.is_empty() {
            Some(e)
        } else {
            below(&e.children, rest)
        }
    })
}

fn anywhere<'e>(element: &'e Element, names: &[String]) -> Option<&'e Element> {
    below(std::slice::from_ref(element), names)
        .or_else(|| element.children.iter().find_map(|c| anywhere(c, names)))
}

/// An element's text and its descendants', in document order (XPath's string value).
fn text_of(element: &Element) -> String {
    let mut text = element.text.clone();
    for child in &element.children {
        text.push_str(&text_of(child));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(body: &str, from: &str, message_type: &str) -> String {
        String::from_utf8(convert(body.as_bytes(), from, message_type).unwrap()).unwrap()
    }

    #[test]
    fn json_becomes_xml_in_its_members_order() {
        assert_eq!(
            to(
                r#"{"z":"a<b","a":[1,2.5],"n":null,"o":{"t":true},"1x":"d","a b":"s"}"#,
                "application/json",
                "application/xml"
            ),
            "<jsonObject><z>a&lt;b</z><a>1</a><a>2.5</a><n/><o><t>true</t></o>\
             <_JsonReader_PD_1x>d</_JsonReader_PD_1x><a_b>s</a_b></jsonObject>"
        );
        assert_eq!(
            to("[1,{\"a\":2}]", "application/json", "application/xml"),
            "<jsonArray><jsonElement>1</jsonElement><jsonElement><a>2</a></jsonElement></jsonArray>"
        );
        assert_eq!(
            to(
                r#"{"getQuote":{"symbol":"IBM"}}"#,
                "application/json",
                "text/xml"
            ),
            "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>\
             <jsonObject><getQuote><symbol>IBM</symbol></getQuote></jsonObject></soapenv:Body></soapenv:Envelope>"
        );
    }

    #[test]
    fn xml_becomes_json_with_arrays_numbers_and_attributes() {
        let soap = r#"<?xml version="1.0"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>
            <m:quote xmlns:m="urn:m" id="7"><m:price>12.50</m:price><m:tag>a</m:tag><m:tag>b</m:tag>
            <m:ok>true</m:ok><m:zip>007</m:zip><m:none/></m:quote></s:Body></s:Envelope>"#;
        assert_eq!(
            to(soap, "application/soap+xml", "application/json"),
            r#"{"quote":{"@id":"7","price":12.50,"tag":["a","b"],"ok":true,"zip":"007","none":null}}"#
        );
        let made = to(
            r#"{"a":[1,2],"b":{"c":"x"}}"#,
            "application/json",
            "application/xml",
        );
        assert_eq!(
            to(&made, "application/xml", "application/json"),
            r#"{"a":[1,2],"b":{"c":"x"}}"#
        );
    }

    #[test]
    fn envelopes_are_kept_or_opened_as_the_formatter_says() {
        let soap = r#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body><r xmlns="urn:r"><v>1</v></r></e:Body></e:Envelope>"#;
        assert_eq!(to(soap, "text/xml", "text/xml"), soap);
        assert_eq!(
            to(soap, "text/xml", "application/xml"),
            r#"<r xmlns="urn:r"><v>1</v></r>"#
        );
        assert_eq!(
            to("<r><v>1</v></r>", "application/xml", "application/soap+xml"),
            "<soapenv:Envelope xmlns:soapenv=\"http://www.w3.org/2003/05/soap-envelope\"><soapenv:Body>\
             <r><v>1</v></r></soapenv:Body></soapenv:Envelope>"
        );
        assert_eq!(to("plain", "text/plain", "application/json"), "plain");
        // A type that says neither is not read as either, whatever it starts with.
        let page = "<html><body>Bad Gateway</body></html>";
        assert_eq!(to(page, "text/html", "application/json"), page);
        assert_eq!(to("<a>1</a>", "", "application/json"), r#"{"a":1}"#);
        assert_eq!(
            to("{\"a\":1}", "application/json", "text/plain"),
            "{\"a\":1}"
        );
        assert_eq!(to("", "application/json", "text/xml"), "");
    }

    #[test]
    fn bodies_that_cannot_be_read_are_refused_never_a_panic() {
        for (body, from) in [
            ("{\"a\":", "application/json"),
            ("{\"a\":1} trailing", "application/json"),
            ("<a>", "application/xml"),
            ("<a></b>", "text/xml"),
            ("<p:a/>", "application/xml"),
        ] {
            assert!(
                matches!(
                    convert(body.as_bytes(), from, "application/json"),
                    Err(Unconverted::Unreadable(_))
                ) || matches!(
                    convert(body.as_bytes(), from, "text/xml"),
                    Err(Unconverted::Unreadable(_))
                ),
                "{body}"
            );
        }
        let deep = "[".repeat(10_000);
        assert!(convert(deep.as_bytes(), "application/json", "application/xml").is_err());
        let wide = format!("[{}1]", "1,".repeat(600_000));
        assert_eq!(
            convert(wide.as_bytes(), "application/json", "application/xml"),
            Err(Unconverted::TooLarge)
        );
    }

    #[test]
    fn wide_documents_convert_in_one_pass_over_their_children() {
        // Distinct names, each its own member, in the order they come.
        let names: String = (0..5_000).map(|n| format!("<b{n}>{n}</b{n}>")).collect();
        let json = to(
            &format!("<a>{names}</a>"),
            "application/xml",
            "application/json",
        );
        assert!(
            json.starts_with(r#"{"a":{"b0":0,"b1":1,"#),
            "{}",
            &json[..40]
        );
        assert!(json.ends_with(r#""b4999":4999}}"#));
        // Names that are no XML names, and back.
        let xml = to(
            r#"{"1st":1,"²":2,"a-b":3}"#,
            "application/json",
            "application/xml",
        );
        assert_eq!(
            xml,
            "<jsonObject><_JsonReader_PD_1st>1</_JsonReader_PD_1st><_>2</_><a-b>3</a-b></jsonObject>"
        );
        assert_eq!(
            to(&xml, "application/xml", "application/json"),
            r#"{"1st":1,"_":2,"a-b":3}"#
        );
    }

    #[test]
    fn paths_select_values_in_either_format() {
        let json = br#"{"order":{"line items":[{"id":"a"},{"id":7}],"who":null},"s":"x"}"#;
        let path = |parts: Vec<PathPart>| BodyPath::Json(parts);
        let key = |k: &str| PathPart::Key(k.into());
        let read_json = |p| read(json, "application/json", &p);
        assert_eq!(
            read_json(path(vec![
                key("order"),
                key("line items"),
                PathPart::Index(1),
                key("id")
            ])),
            Some("7".into())
        );
        assert_eq!(read_json(path(vec![key("s")])), Some("x".into()));
        assert_eq!(
            read_json(path(vec![key("order"), key("who")])),
            Some("null".into())
        );
        assert_eq!(read_json(path(vec![key("nope")])), None);
        assert_eq!(
            read_json(path(vec![
                key("order"),
                key("line items"),
                PathPart::Index(0)
            ])),
            Some(r#"{"id":"a"}"#.into())
        );
        let xpath = |from, names: &[&str]| {
            BodyPath::Xml(XmlPath {
                from,
                names: names.iter().map(|n| n.to_string()).collect(),
            })
        };
        // XPath into the JSON as Synapse holds it.
        assert_eq!(
            read(json, "application/json", &xpath(XmlFrom::Anywhere, &["id"])),
            Some("a".into())
        );
        let soap = br#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body><m:q xmlns:m="urn:m"><m:s>IBM</m:s><m:s>X</m:s><m:p><m:v>1</m:v>2</m:p></m:q></e:Body></e:Envelope>"#;
        assert_eq!(
            read(soap, "text/xml", &xpath(XmlFrom::Body, &["q", "s"])),
            Some("IBM".into())
        );
        assert_eq!(
            read(
                soap,
                "text/xml",
                &xpath(XmlFrom::Root, &["Envelope", "Body", "q", "p"])
            ),
            Some("21".into())
        );
        assert_eq!(read(soap, "text/xml", &xpath(XmlFrom::Root, &["q"])), None);
        // JSONPath into the XML as Synapse shows it in JSON.
        assert_eq!(
            read(
                soap,
                "text/xml",
                &path(vec![key("q"), key("s"), PathPart::Index(1)])
            ),
            Some("X".into())
        );
        assert_eq!(read(b"not json", "application/json", &path(vec![])), None);
        assert_eq!(
            read(b"plain", "text/plain", &xpath(XmlFrom::Anywhere, &["a"])),
            None
        );
    }
}
