//! The one check of XML the publisher stores (WSDLs, mediation sequences): well formed,
//! one root element of an expected name, and no document type declaration, so no entity
//! is ever defined (no "billion laughs", no external entities); only XML's five
//! predefined entities and character references may appear.

use quick_xml::Reader;
use quick_xml::events::Event;

/// Why a document was refused; the caller says it as a 400.
pub type XmlProblem = String;

/// Checks that `text` is one well-formed XML document whose root element's local name
/// (its prefix ignored) is `root`, without a DOCTYPE or undefined entities.
pub fn check_document(text: &str, root: &str) -> Result<(), XmlProblem> {
    let mut reader = Reader::from_str(text);
    let mut depth: usize = 0;
    let mut seen_root = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("The XML is not well formed: {e}"))?;
        match event {
            Event::DocType(_) => {
                return Err("A DOCTYPE (and so any entity declaration) is not allowed".into());
            }
            Event::Start(ref element) | Event::Empty(ref element) => {
                if depth == 0 {
                    if seen_root {
                        return Err("The XML has more than one root element".into());
                    }
                    seen_root = true;
                    let name = element.local_name();
                    if name.as_ref() != root.as_bytes() {
                        return Err(format!(
                            "The root element must be '{root}', not '{}'",
                            String::from_utf8_lossy(name.as_ref())
                        ));
                    }
                }
                for attribute in element.attributes() {
                    let attribute =
                        attribute.map_err(|e| format!("The XML is not well formed: {e}"))?;
                    attribute
                        .unescape_value()
                        .map_err(|e| format!("The XML is not well formed: {e}"))?;
                }
                if matches!(event, Event::Start(_)) {
                    depth += 1;
                }
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::GeneralRef(reference) => check_reference(&reference)?,
            Event::Text(text) if depth == 0 && !text.iter().all(u8::is_ascii_whitespace) => {
                return Err("The XML has text outside its root element".into());
            }
            Event::CData(_) if depth == 0 => {
                return Err("The XML has text outside its root element".into());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match (seen_root, depth) {
        (false, _) => Err("The XML has no root element".into()),
        (true, 0) => Ok(()),
        (true, _) => Err("The XML is not well formed: an element is not closed".into()),
    }
}

/// A reference in text: a character reference or one of the predefined entities.
fn check_reference(reference: &quick_xml::events::BytesRef<'_>) -> Result<(), XmlProblem> {
    if reference.is_char_ref() {
        return match reference.resolve_char_ref() {
            Ok(Some(_)) => Ok(()),
            _ => Err("The XML has an invalid character reference".into()),
        };
    }
    let name = String::from_utf8_lossy(reference);
    if quick_xml::escape::resolve_predefined_entity(&name).is_some() {
        Ok(())
    } else {
        Err(format!("The XML refers to an undefined entity '&{name};'"))
    }
}

#[cfg(test)]
mod tests {
    use super::check_document;

    #[test]
    fn accepts_well_formed_documents_of_the_root_asked() {
        let wsdl = r#"<?xml version="1.0"?>
            <!-- a comment -->
            <wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" name="a&amp;b">
              <wsdl:types>x &lt; y &#x41;</wsdl:types><wsdl:message name="m"/>
            </wsdl:definitions>"#;
        assert_eq!(check_document(wsdl, "definitions"), Ok(()));
        assert_eq!(
            check_document("<sequence name='s'><log/></sequence>", "sequence"),
            Ok(())
        );
    }

    #[test]
    fn refuses_doctypes_entities_and_malformed_documents() {
        let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>
            <definitions>&lol;</definitions>"#;
        assert!(
            check_document(laughs, "definitions")
                .unwrap_err()
                .contains("DOCTYPE")
        );
        let external = r#"<!DOCTYPE d SYSTEM "file:///etc/passwd"><definitions/>"#;
        assert!(check_document(external, "definitions").is_err());
        for (text, problem) in [
            ("<definitions>&lol;</definitions>", "undefined entity"),
            ("<definitions a='&x;'/>", "well formed"),
            ("<definitions><a></definitions>", "well formed"),
            ("<definitions>", "not closed"),
            ("<definitions/><definitions/>", "more than one root"),
            ("<description/>", "must be 'definitions'"),
            ("not xml", "outside its root"),
            ("", "no root"),
            ("<definitions a='1' a='2'/>", "well formed"),
            ("<definitions>&#0;</definitions>", "character reference"),
        ] {
            let refused = check_document(text, "definitions").unwrap_err();
            assert!(refused.contains(problem), "{text}: {refused}");
        }
    }
}
