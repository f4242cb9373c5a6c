//! Bodies as an API's mediation converts and reads them (JSON and XML, both ways, and the
//! JSONPath and XPath subsets): no body panics, and a conversion stays within its bound.
#![no_main]

use apim_manifest::mediation::{BodyPath, PathPart, XmlFrom, XmlPath};
use gateway::payloads::{MAX_CONVERTED_BYTES, convert, read};
use libfuzzer_sys::fuzz_target;

const TYPES: &[&str] = &[
    "application/json",
    "application/xml",
    "text/xml",
    "application/soap+xml",
    "text/plain",
    "",
];

fuzz_target!(|data: &[u8]| {
    for from in TYPES {
        for to in TYPES {
            if let Ok(made) = convert(data, from, to) {
                assert!(made.len() <= MAX_CONVERTED_BYTES.max(data.len()));
            }
        }
        let json = BodyPath::Json(vec![PathPart::Key("a".into()), PathPart::Index(0)]);
        let _ = read(data, from, &json);
        for from_where in [XmlFrom::Root, XmlFrom::Anywhere, XmlFrom::Body] {
            let xml = BodyPath::Xml(XmlPath {
                from: from_where,
                names: vec!["a".into(), "b".into()],
            });
            let _ = read(data, from, &xml);
        }
    }
});
