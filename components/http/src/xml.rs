//! A small namespace-aware element tree, enough to read SOAP responses whatever prefixes
//! and namespace declarations the backend chooses, and the bodies an API's mediation
//! reads and converts.

use quick_xml::NsReader;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::name::ResolveResult;

/// Deepest nesting accepted; SOAP responses here are four or five levels deep.
pub const MAX_DEPTH: usize = 64;
/// Most elements a document may hold: a body of a mebibyte of empty elements would
/// otherwise take tens of mebibytes as a tree.
pub const MAX_ELEMENTS: usize = 65_536;
/// Most attributes an element may carry (namespace declarations included).
pub const MAX_ATTRIBUTES: usize = 64;

/// An element: namespace, local name, its text and its child elements.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Element {
    /// Namespace URI, empty when unqualified.
    pub namespace: String,
    /// Local name.
    pub name: String,
    /// Attributes by local name and value, namespace declarations left out.
    pub attributes: Vec<(String, String)>,
    /// Text content directly inside the element, entities and CDATA resolved.
    pub text: String,
    /// Child elements in document order.
    pub children: Vec<Element>,
}

impl Element {
    /// Whether this is `{namespace}name`.
    pub fn is(&self, namespace: &str, name: &str) -> bool {
        self.namespace == namespace && self.name == name
    }

    /// The first child element `{namespace}name`.
    pub fn child(&self, namespace: &str, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.is(namespace, name))
    }

    /// Every child element `{namespace}name`.
    pub fn children_named<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.is(namespace, name))
    }
}

/// Parses a whole document into its root element.
pub fn parse(xml: &[u8]) -> Result<Element, String> {
    let text = std::str::from_utf8(xml).map_err(|_| "the document is not UTF-8".to_string())?;
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut open: Vec<Element> = Vec::new();
    let mut elements = 0;
    loop {
        let position = reader.buffer_position();
        let (namespace, event) = reader
            .read_resolved_event()
            .map_err(|e| format!("malformed XML after byte {position}: {e}"))?;
        if matches!(event, Event::Start(_) | Event::Empty(_)) {
            elements += 1;
            if elements > MAX_ELEMENTS {
                return Err(format!(
                    "the document has more than {MAX_ELEMENTS} elements"
                ));
            }
        }
        match event {
            Event::Start(start) => {
                if open.len() >= MAX_DEPTH {
                    return Err("the document is nested too deeply".into());
                }
                open.push(element(namespace, &start)?);
            }
            Event::Empty(start) => {
                let done = element(namespace, &start)?;
                if let Some(root) = close(&mut open, done) {
                    return Ok(root);
                }
            }
            Event::End(_) => {
                let done = open.pop().ok_or("unbalanced end tag")?;
                if let Some(root) = close(&mut open, done) {
                    return Ok(root);
                }
            }
            Event::Text(text) => append(&mut open, &text.xml_content().map_err(|e| e.to_string())?),
            Event::CData(data) => append(&mut open, &data.decode().map_err(|e| e.to_string())?),
            Event::GeneralRef(reference) => append(&mut open, &entity(&reference)?),
            Event::Eof => return Err("the document ends before its root element closes".into()),
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
}

fn element(namespace: ResolveResult<'_>, start: &BytesStart<'_>) -> Result<Element, String> {
    let namespace = match namespace {
        ResolveResult::Bound(ns) => String::from_utf8_lossy(ns.as_ref()).into_owned(),
        ResolveResult::Unbound => String::new(),
        ResolveResult::Unknown(prefix) => {
            return Err(format!(
                "undeclared namespace prefix {:?}",
                String::from_utf8_lossy(&prefix)
            ));
        }
    };
    let mut attributes = Vec::new();
    // Checked for duplicates by quick-xml, each against all before it: quadratic in a
    // hostile element's count, which is bounded instead.
    for (count, attribute) in start.attributes().with_checks(false).enumerate() {
        if count >= MAX_ATTRIBUTES {
            return Err(format!(
                "an element has more than {MAX_ATTRIBUTES} attributes"
            ));
        }
        let attribute = attribute.map_err(|e| e.to_string())?;
        let key = attribute.key;
        if key.as_namespace_binding().is_some() {
            continue;
        }
        let value = attribute.unescape_value().map_err(|e| e.to_string())?;
        let name = String::from_utf8_lossy(key.local_name().as_ref()).into_owned();
        attributes.push((name, value.into_owned()));
    }
    Ok(Element {
        namespace,
        name: String::from_utf8_lossy(start.local_name().as_ref()).into_owned(),
        attributes,
        ..Element::default()
    })
}

/// Attaches a finished element to its parent; the root when there is none.
fn close(open: &mut [Element], done: Element) -> Option<Element> {
    match open.last_mut() {
        Some(parent) => {
            parent.children.push(done);
            None
        }
        None => Some(done),
    }
}

fn append(open: &mut [Element], text: &str) {
    if let Some(current) = open.last_mut() {
        current.text.push_str(text);
    }
}

/// A character reference or one of XML's five predefined entities.
fn entity(reference: &BytesRef<'_>) -> Result<String, String> {
    if let Some(c) = reference.resolve_char_ref().map_err(|e| e.to_string())? {
        return Ok(c.to_string());
    }
    let name = reference.decode().map_err(|e| e.to_string())?;
    resolve_predefined_entity(&name)
        .map(str::to_string)
        .ok_or_else(|| format!("unknown entity &{name};"))
}

/// Whether XML 1.0 can carry `c` at all (escaping cannot help the others).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_resolve_whatever_the_prefixes() {
        let doc = br#"<a:Root xmlns:a="urn:a" xmlns="urn:d"><x>1 &amp; &#x32;</x><a:y><![CDATA[<z>]]></a:y><e/></a:Root>"#;
        let root = parse(doc).unwrap();
        assert!(root.is("urn:a", "Root"));
        assert_eq!(root.child("urn:d", "x").unwrap().text, "1 & 2");
        assert_eq!(root.child("urn:a", "y").unwrap().text, "<z>");
        assert!(root.child("urn:d", "e").is_some());
    }

    #[test]
    fn broken_documents_are_errors() {
        for doc in [
            &b""[..],
            b"<a>",
            b"<a></b>",
            b"<p:a/>",
            b"<a>&bogus;</a>",
            b"\xff\xfe",
            b"not xml",
        ] {
            assert!(parse(doc).is_err(), "{:?}", String::from_utf8_lossy(doc));
        }
    }

    #[test]
    fn deep_nesting_and_too_many_elements_are_refused() {
        let doc = "<a>".repeat(100) + &"</a>".repeat(100);
        assert!(parse(doc.as_bytes()).is_err());
        let wide = format!("<a>{}</a>", "<b/>".repeat(MAX_ELEMENTS));
        assert!(parse(wide.as_bytes()).unwrap_err().contains("elements"));
        let fits = format!("<a>{}</a>", "<b/>".repeat(MAX_ELEMENTS - 1));
        assert_eq!(
            parse(fits.as_bytes()).unwrap().children.len(),
            MAX_ELEMENTS - 1
        );
    }

    #[test]
    fn attributes_are_kept_without_namespace_declarations() {
        let many = format!(
            "<a {}/>",
            (0..=MAX_ATTRIBUTES)
                .map(|n| format!("a{n}=\"\""))
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert!(parse(many.as_bytes()).unwrap_err().contains("attributes"));
        let root = parse(br#"<a xmlns="urn:a" xmlns:p="urn:p" id="1" p:k="x &amp; y"/>"#).unwrap();
        assert_eq!(
            root.attributes,
            vec![
                ("id".to_string(), "1".to_string()),
                ("k".into(), "x & y".into())
            ]
        );
    }
}
