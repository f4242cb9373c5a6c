//! The service's WSDL 1.1, shaped like the one Spring-WS's `DefaultWsdl11Definition`
//! derives from developers.xsd: one operation per `…Request`/`…Response` pair, a SOAP 1.1
//! document/literal binding with `soapAction=""`, and the schema inline.

use std::fmt::Write;

use super::soap::{TNS, escape};

/// The customer's schema, embedded as it is.
pub const DEVELOPERS_XSD: &str = include_str!("../../fixtures/legacy-soap/developers.xsd");

/// The operations, each a `…Request`/`…Response` element pair of developers.xsd.
pub const OPERATIONS: [&str; 5] = [
    "getDeveloper",
    "addDeveloper",
    "deleteDeveloper",
    "getRepo",
    "addRepo",
];

/// The WSDL with its endpoint at `location` (e.g. `http://127.0.0.1:8291/ws`).
pub fn render(location: &str) -> String {
    let mut messages = String::new();
    let mut port_type = String::new();
    let mut binding = String::new();
    for op in OPERATIONS {
        for part in [format!("{op}Request"), format!("{op}Response")] {
            let _ = write!(
                messages,
                "\n  <wsdl:message name=\"{part}\">\
                 \n    <wsdl:part element=\"tns:{part}\" name=\"{part}\"/>\
                 \n  </wsdl:message>"
            );
        }
        let _ = write!(
            port_type,
            "\n    <wsdl:operation name=\"{op}\">\
             \n      <wsdl:input message=\"tns:{op}Request\" name=\"{op}Request\"/>\
             \n      <wsdl:output message=\"tns:{op}Response\" name=\"{op}Response\"/>\
             \n    </wsdl:operation>"
        );
        let _ = write!(
            binding,
            "\n    <wsdl:operation name=\"{op}\">\
             \n      <soap:operation soapAction=\"\"/>\
             \n      <wsdl:input name=\"{op}Request\"><soap:body use=\"literal\"/></wsdl:input>\
             \n      <wsdl:output name=\"{op}Response\"><soap:body use=\"literal\"/></wsdl:output>\
             \n    </wsdl:operation>"
        );
    }
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:sch="{TNS}" xmlns:tns="{TNS}" targetNamespace="{TNS}">
  <wsdl:types>
{schema}
  </wsdl:types>{messages}
  <wsdl:portType name="DevelopersPort">{port_type}
  </wsdl:portType>
  <wsdl:binding name="DevelopersPortSoap11" type="tns:DevelopersPort">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>{binding}
  </wsdl:binding>
  <wsdl:service name="DevelopersPortService">
    <wsdl:port binding="tns:DevelopersPortSoap11" name="DevelopersPortSoap11">
      <soap:address location="{location}"/>
    </wsdl:port>
  </wsdl:service>
</wsdl:definitions>
"#,
        schema = schema_element(),
        location = escape(location).replace('"', "&quot;"),
    )
}

/// developers.xsd without its XML declaration, to sit inside `wsdl:types`.
pub fn schema_element() -> &'static str {
    let xsd = DEVELOPERS_XSD.trim_start_matches('\u{feff}');
    match xsd.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(xsd, |(_, schema)| schema),
        None => xsd,
    }
    .trim()
}
