//! The legacy service's SOAP 1.1 document/literal contract (`developers.xsd`): request
//! envelopes for its five operations, and what their responses and faults say.

use quick_xml::escape::escape;

use crate::records::{Developer, Repo};
use crate::xml::{self, Element};

/// SOAP 1.1 envelope namespace.
pub const SOAP_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// The service's target namespace; every payload element is qualified with it.
pub const NAMESPACE: &str = "http://www.athiththan.com/devservice";

/// One call of the service.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    /// `getDeveloper(username)`.
    GetDeveloper(&'a str),
    /// `addDeveloper(username, name, email)`.
    AddDeveloper(&'a Developer),
    /// `deleteDeveloper(username)`.
    DeleteDeveloper(&'a str),
    /// `getRepo(username)`.
    GetRepo(&'a str),
    /// `addRepo(name, username, forks)`.
    AddRepo(&'a Repo),
}

impl Call<'_> {
    /// The operation's name in the WSDL.
    pub fn operation(&self) -> &'static str {
        match self {
            Call::GetDeveloper(_) => "getDeveloper",
            Call::AddDeveloper(_) => "addDeveloper",
            Call::DeleteDeveloper(_) => "deleteDeveloper",
            Call::GetRepo(_) => "getRepo",
            Call::AddRepo(_) => "addRepo",
        }
    }

    /// The request element's children, in the schema's sequence order.
    fn fields(&self) -> Vec<(&'static str, String)> {
        match self {
            Call::GetDeveloper(username)
            | Call::DeleteDeveloper(username)
            | Call::GetRepo(username) => {
                vec![("username", username.to_string())]
            }
            Call::AddDeveloper(d) => vec![
                ("username", d.username.clone()),
                ("name", d.name.clone()),
                ("email", d.email.clone()),
            ],
            Call::AddRepo(r) => vec![
                ("name", r.name.clone()),
                ("username", r.username.clone()),
                ("forks", r.forks.to_string()),
            ],
        }
    }

    /// The request envelope, its text XML-escaped.
    pub fn envelope(&self) -> String {
        let operation = self.operation();
        let mut payload = String::new();
        for (name, value) in self.fields() {
            payload.push_str(&format!(
                "<dev:{name}>{}</dev:{name}>",
                escape(value.as_str())
            ));
        }
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="{SOAP_ENV}" xmlns:dev="{NAMESPACE}"><soapenv:Header/><soapenv:Body><dev:{operation}Request>{payload}</dev:{operation}Request></soapenv:Body></soapenv:Envelope>"#
        )
    }
}

/// A SOAP fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// `faultcode`, e.g. `SOAP-ENV:Server`.
    pub code: String,
    /// `faultstring`.
    pub reason: String,
}

impl Fault {
    /// Whether the fault is the service's (`Server`, or a dotted `Server.*` subcode, in
    /// whatever prefix), rather than one blaming the request (`Client`) or a header.
    pub fn is_server(&self) -> bool {
        let local = self.code.rsplit(':').next().unwrap_or_default();
        local == "Server" || local.starts_with("Server.")
    }
}

/// What the service answered to a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The `<operation>Response` element.
    Payload(Element),
    /// A fault.
    Fault(Fault),
}

/// Reads a response envelope to `call`: its payload or its fault.
pub fn read_reply(call: &Call<'_>, body: &[u8]) -> Result<Reply, String> {
    let envelope = xml::parse(body)?;
    if !envelope.is(SOAP_ENV, "Envelope") {
        return Err(format!(
            "the answer is not a SOAP 1.1 envelope but {{{}}}{}",
            envelope.namespace, envelope.name
        ));
    }
    let payload = envelope
        .child(SOAP_ENV, "Body")
        .and_then(|body| body.children.first())
        .ok_or("the SOAP envelope has an empty Body")?;
    if payload.is(SOAP_ENV, "Fault") {
        return Ok(Reply::Fault(Fault {
            code: unqualified_text(payload, "faultcode"),
            reason: unqualified_text(payload, "faultstring"),
        }));
    }
    let expected = format!("{}Response", call.operation());
    if !payload.is(NAMESPACE, &expected) {
        return Err(format!(
            "expected {expected}, the service answered {{{}}}{}",
            payload.namespace, payload.name
        ));
    }
    Ok(Reply::Payload(payload.clone()))
}

/// Fault children are unqualified in SOAP 1.1, but some stacks qualify them.
fn unqualified_text(fault: &Element, name: &str) -> String {
    fault
        .children
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.text.trim().to_string())
        .unwrap_or_default()
}

/// The `developer` element of a getDeveloper or addDeveloper response, if present.
pub fn developer_in(payload: &Element) -> Result<Option<Developer>, String> {
    payload
        .child(NAMESPACE, "developer")
        .map(|d| {
            Ok(Developer {
                username: field(d, "username")?,
                name: field(d, "name")?,
                email: field(d, "email")?,
            })
        })
        .transpose()
}

/// The `repos` (getRepo) or `repo` (addRepo) elements of a response.
pub fn repos_in(payload: &Element, element: &str) -> Result<Vec<Repo>, String> {
    payload
        .children_named(NAMESPACE, element)
        .map(|r| {
            let forks = field(r, "forks")?;
            Ok(Repo {
                name: field(r, "name")?,
                username: field(r, "username")?,
                forks: forks
                    .trim()
                    .parse()
                    .map_err(|_| format!("forks {forks:?} is not an xs:int"))?,
            })
        })
        .collect()
}

/// The `message` of a deleteDeveloper response.
pub fn message_in(payload: &Element) -> Result<String, String> {
    field(payload, "message")
}

fn field(parent: &Element, name: &str) -> Result<String, String> {
    parent
        .child(NAMESPACE, name)
        .map(|e| e.text.clone())
        .ok_or_else(|| format!("{} has no {name}", parent.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPRING_ANSWER: &str = r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Header/><SOAP-ENV:Body><ns2:getRepoResponse xmlns:ns2="http://www.athiththan.com/devservice"><ns2:repos><ns2:name>stackcheats</ns2:name><ns2:username>athiththan11</ns2:username><ns2:forks>0</ns2:forks></ns2:repos><ns2:repos><ns2:name>a &amp; b</ns2:name><ns2:username>athiththan11</ns2:username><ns2:forks> 1 </ns2:forks></ns2:repos></ns2:getRepoResponse></SOAP-ENV:Body></SOAP-ENV:Envelope>"#;

    #[test]
    fn envelopes_escape_their_text() {
        let dev = Developer {
            username: "zoë".into(),
            name: "<Zoë & \"co\">".into(),
            email: "z@e".into(),
        };
        let envelope = Call::AddDeveloper(&dev).envelope();
        assert!(envelope.contains("<dev:name>&lt;Zoë &amp; &quot;co&quot;&gt;</dev:name>"));
        let parsed = xml::parse(envelope.as_bytes()).unwrap();
        let request = &parsed.child(SOAP_ENV, "Body").unwrap().children[0];
        assert!(request.is(NAMESPACE, "addDeveloperRequest"));
        assert_eq!(request.child(NAMESPACE, "name").unwrap().text, dev.name);
    }

    #[test]
    fn responses_are_read_whatever_the_prefixes() {
        let call = Call::GetRepo("athiththan11");
        let Reply::Payload(payload) = read_reply(&call, SPRING_ANSWER.as_bytes()).unwrap() else {
            panic!("a payload")
        };
        let repos = repos_in(&payload, "repos").unwrap();
        assert_eq!(repos.len(), 2);
        assert_eq!(repos[1].name, "a & b");
        assert_eq!(repos[1].forks, 1);
        assert!(matches!(
            read_reply(&Call::GetDeveloper("x"), SPRING_ANSWER.as_bytes()),
            Err(e) if e.contains("expected getDeveloperResponse")
        ));
    }

    #[test]
    fn faults_are_recognised() {
        let fault = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode>s:Server</faultcode><faultstring xml:lang="en">No value present</faultstring></s:Fault></s:Body></s:Envelope>"#;
        let Reply::Fault(fault) = read_reply(&Call::GetDeveloper("x"), fault.as_bytes()).unwrap()
        else {
            panic!("a fault")
        };
        assert_eq!(fault.code, "s:Server");
        assert!(fault.is_server());
        for (code, server) in [
            ("SOAP-ENV:Server", true),
            ("Server.Database", true),
            ("soap:Client", false),
            ("SOAP-ENV:MustUnderstand", false),
            ("x:ServerError", false),
            ("", false),
        ] {
            let fault = Fault {
                code: code.into(),
                reason: String::new(),
            };
            assert_eq!(fault.is_server(), server, "{code}");
        }
    }
}
