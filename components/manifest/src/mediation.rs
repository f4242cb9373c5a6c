//! An API's mediation as gateways run it: the steps the control plane compiled once from
//! its Synapse sequences (WSO2's `in`, `out` and `fault` flows), so that the request path
//! never reads XML. Each flow is a list of [`Step`]s run in order; a step reads [`Value`]s
//! the request's head holds (and, in the fault flow, the failure), so the `in` and `out`
//! flows are decided with the request's head and the fault flow when the backend fails.

use serde::{Deserialize, Serialize};

/// Most steps in all of an API's flows, filters' branches included.
pub const MAX_STEPS: usize = 256;
/// Deepest nesting of filters.
pub const MAX_DEPTH: usize = 8;
/// Longest name, literal or pattern a step holds, bytes.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Largest a filter's pattern may compile to, bytes (`regex`'s `size_limit`, and its lazy
/// DFA's cache): a pattern the control plane takes compiles at every gateway.
pub const MAX_PATTERN_BYTES: usize = 256 * 1024;
/// Largest body a payload factory makes, bytes.
pub const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

/// The steps of an API's flows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mediation {
    /// Run on the request before it goes to the backend (WSO2's `in` flow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request: Vec<Step>,
    /// Run on the backend's answer before it goes to the client (`out`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response: Vec<Step>,
    /// Run when the backend cannot be reached or times out (`fault`), on the properties
    /// the `in` flow leaves: the answer it makes (`respond`), or the headers it sets on
    /// the gateway's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault: Vec<Step>,
    /// The tenant's own WebAssembly policy run as the `in` flow (then `request` is
    /// empty), by the host that forwards the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmPolicy>,
}

impl Mediation {
    /// Whether nothing runs: no flow has a step and there is no Wasm policy.
    pub fn is_empty(&self) -> bool {
        self.request.is_empty()
            && self.response.is_empty()
            && self.fault.is_empty()
            && self.wasm.is_none()
    }
}

/// A tenant's WebAssembly policy (the world of `wit/policy/world.wit`), named by its
/// content: gateways fetch its bytes from the control plane by digest, check them
/// against it, and keep them, so the manifest never carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WasmPolicy {
    /// The SHA-256 of its bytes, lower-case hex.
    pub digest: String,
    /// Its size, bytes.
    pub size: u64,
    /// The most body bytes it is given (the client's body is read whole first, a longer
    /// one refused with 413); 0: it sees the request's head only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub body_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One step of a flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Sets a transport header (`property` or `header` of scope `transport`), replacing
    /// any of that name; nothing when the value is unset.
    SetHeader {
        /// Lower-case name.
        name: String,
        /// Its value.
        value: Value,
    },
    /// Removes a transport header.
    RemoveHeader {
        /// Lower-case name.
        name: String,
    },
    /// Sets a message property (`property` of scope `default`), which later steps, of
    /// this flow or a later one, read.
    SetProperty {
        /// Its name, as written.
        name: String,
        /// Its value.
        value: Value,
    },
    /// Removes a message property.
    RemoveProperty {
        /// Its name.
        name: String,
    },
    /// Writes a line to the gateway's log (`log` of level `custom` or `simple`).
    Log {
        /// The log's `category` (`INFO` when not given).
        category: String,
        /// Each property's name and value, in order.
        properties: Vec<(String, Value)>,
    },
    /// Makes the message's body (`payloadFactory`): `format` with each `$n` replaced by
    /// the n-th argument's value, escaped for the media type (unset: empty).
    Payload {
        /// What the body is.
        media: Media,
        /// The body with its `$1`, `$2`, ... placeholders.
        format: String,
        /// The arguments, in order.
        args: Vec<Value>,
    },
    /// Sets the status the message answers with (`property` `HTTP_SC`, scope `axis2`).
    SetStatus {
        /// A status code from 100 to 599 once read; another value leaves it unchanged.
        value: Value,
    },
    /// Sets the format the message leaves in (`property` `messageType`, scope `axis2`):
    /// its content type, and its body converted between JSON and XML as Synapse's
    /// builders and formatters do when the value names one and the body is the other.
    SetFormat {
        /// A media type once read; an unset or empty value leaves the format unchanged.
        value: Value,
    },
    /// Sets what the backend's URL has after the endpoint's (`property`
    /// `REST_URL_POSTFIX`, scope `axis2`, in the in flow): the resource path and query it
    /// is sent to instead of the client's; removed (or unset), nothing.
    SetPath {
        /// A path and query once read, `/` or `?` first, or empty.
        value: Value,
    },
    /// Answers the client with the message as the flow made it (`respond`): its status
    /// (200 unless set), the headers the flow set, the body its payload factory made.
    /// The flow ends there; the call still counts against its limits.
    Respond,
    /// Ends the flow without a message (`drop`): the client gets `202 Accepted` and no
    /// body (what WSO2 answers with `FORCE_SC_ACCEPTED`; without it, WSO2 leaves the
    /// client waiting until it gives up, which a gateway should not).
    Drop,
    /// Runs `then` when the source's whole text matches the pattern (as Java's
    /// `Matcher.matches`, which Synapse's `filter` uses), `otherwise` when not.
    Filter {
        /// What is matched; an unset value matches as empty text.
        source: Value,
        /// The pattern, anchored at both ends.
        regex: String,
        /// Steps when it matches.
        then: Vec<Step>,
        /// Steps when it does not.
        otherwise: Vec<Step>,
    },
}

/// A payload's media type (`payloadFactory`'s `media-type`, or the SOAP version of a
/// `makefault`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Media {
    /// `application/xml`: arguments escaped as XML text.
    Xml,
    /// `application/json`: arguments escaped as the inside of a JSON string.
    Json,
    /// A SOAP 1.1 envelope, `text/xml`: arguments escaped as XML text.
    Soap11,
    /// A SOAP 1.2 envelope, `application/soap+xml`: arguments escaped as XML text.
    Soap12,
}

impl Media {
    /// Its content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Media::Xml => "application/xml",
            Media::Json => "application/json",
            Media::Soap11 => "text/xml",
            Media::Soap12 => "application/soap+xml",
        }
    }

    /// Whether it is JSON (else XML).
    pub fn is_json(self) -> bool {
        self == Media::Json
    }
}

/// What a step reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// This text.
    Text(String),
    /// A request header (`$trp:` or `get-property('transport', ...)`), by lower-case name;
    /// unset when the request has none.
    Header(String),
    /// A message property set by an earlier step (`get-property('...')`, `$ctx:`).
    Property(String),
    /// A query parameter of the request (`$url:`), decoded; unset when absent.
    Query(String),
    /// What the gateway knows of the call (`get-property('api.ut.api')`, ...).
    Call(CallFact),
    /// A value in the message's body (`json-eval(...)`, an argument of evaluator
    /// `json`, or an XPath): a scalar's text, an object's or array's JSON; unset when the
    /// body has none there or is neither JSON nor XML.
    Body(BodyPath),
}

/// Where in a body a value is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyPath {
    /// A JSONPath of names and indices from the root (`$.order.items[0].id`), read in
    /// the body as JSON (an XML body as Synapse shows it in JSON).
    Json(Vec<PathPart>),
    /// An XPath of element names (`//symbol`, `/Envelope/Body/order/id`, `$body/order`),
    /// read in the body as XML (a JSON body as Synapse shows it in XML): the text of the
    /// first element it selects. Names match local names; prefixes are not checked.
    Xml(XmlPath),
}

/// One step of a JSONPath.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathPart {
    /// An object's member.
    Key(String),
    /// An array's element, from 0.
    Index(usize),
}

/// An XPath of element names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XmlPath {
    /// Where the first name is looked for.
    pub from: XmlFrom,
    /// Local names, each a child of the one before.
    pub names: Vec<String>,
}

/// Where an XPath starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XmlFrom {
    /// `/`: the first name is the root element's.
    Root,
    /// `//`: the first name is any element's.
    Anywhere,
    /// `$body/`: the first name is a child of the SOAP body (the root element itself
    /// when the body is not a SOAP envelope, as Synapse wraps a plain one).
    Body,
}

impl Value {
    /// Whether it reads the message's body.
    pub fn reads_body(&self) -> bool {
        matches!(self, Value::Body(_))
    }
}

/// What the gateway knows of a call, by the property names WSO2's handlers set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallFact {
    /// `api.ut.api`: the API's name.
    ApiName,
    /// `api.ut.version`: its version.
    ApiVersion,
    /// `api.ut.context`: its context.
    ApiContext,
    /// `api.ut.userName`: the token's end user (unset for an open operation).
    UserName,
    /// `api.ut.application.id`: the calling application's id.
    ApplicationId,
    /// `api.ut.HTTP_METHOD`: the request's method.
    HttpMethod,
    /// `SYSTEM_TIME`: milliseconds since the Unix epoch.
    SystemTime,
    /// `ERROR_CODE`: in the fault flow, the failure's WSO2 code (101503, 101504).
    ErrorCode,
    /// `ERROR_MESSAGE`: in the fault flow, what failed.
    ErrorMessage,
}

impl CallFact {
    /// The fact a property name reads, if it is one.
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "api.ut.api" => Self::ApiName,
            "api.ut.version" => Self::ApiVersion,
            "api.ut.context" => Self::ApiContext,
            "api.ut.userName" => Self::UserName,
            "api.ut.application.id" => Self::ApplicationId,
            "api.ut.HTTP_METHOD" => Self::HttpMethod,
            "SYSTEM_TIME" => Self::SystemTime,
            "ERROR_CODE" => Self::ErrorCode,
            "ERROR_MESSAGE" => Self::ErrorMessage,
            _ => return None,
        })
    }

    /// The property names that read a fact.
    pub const NAMES: &[&str] = &[
        "api.ut.api",
        "api.ut.version",
        "api.ut.context",
        "api.ut.userName",
        "api.ut.application.id",
        "api.ut.HTTP_METHOD",
        "SYSTEM_TIME",
        "ERROR_CODE",
        "ERROR_MESSAGE",
    ];

    /// Whether only the fault flow knows it.
    pub fn is_failures(self) -> bool {
        matches!(self, Self::ErrorCode | Self::ErrorMessage)
    }
}

/// Whether any step of a flow, its filters' branches included, is one `is`.
fn any_step(steps: &[Step], is: &dyn Fn(&Step) -> bool) -> bool {
    steps.iter().any(|step| {
        is(step)
            || matches!(step, Step::Filter { then, otherwise, .. }
                if any_step(then, is) || any_step(otherwise, is))
    })
}

/// Whether a flow reads or makes the message's body: the in flow then runs once the
/// request's body has been read whole.
pub fn touches_body(steps: &[Step]) -> bool {
    any_step(steps, &|step| match step {
        Step::Payload { .. } | Step::SetFormat { .. } => true,
        Step::SetStatus { value }
        | Step::SetPath { value }
        | Step::SetHeader { value, .. }
        | Step::SetProperty { value, .. } => value.reads_body(),
        Step::Log { properties, .. } => properties.iter().any(|(_, v)| v.reads_body()),
        Step::Filter { source, .. } => source.reads_body(),
        Step::RemoveHeader { .. } | Step::RemoveProperty { .. } | Step::Respond | Step::Drop => {
            false
        }
    })
}

/// Whether an out flow needs the backend's answer: it reads its headers, reads or
/// makes its body, sets its status or drops it. It then runs once the answer has been
/// read whole.
pub fn needs_answer(steps: &[Step]) -> bool {
    let reads_header = |value: &Value| matches!(value, Value::Header(_));
    touches_body(steps)
        || any_step(steps, &|step| match step {
            Step::SetStatus { .. } | Step::Drop => true,
            Step::SetHeader { value, .. }
            | Step::SetProperty { value, .. }
            | Step::SetFormat { value }
            | Step::SetPath { value } => reads_header(value),
            Step::Log { properties, .. } => properties.iter().any(|(_, v)| reads_header(v)),
            Step::Filter { source, .. } => reads_header(source),
            Step::Payload { args, .. } => args.iter().any(reads_header),
            Step::RemoveHeader { .. } | Step::RemoveProperty { .. } | Step::Respond => false,
        })
}

/// How many steps a flow holds (a log's properties each one too), its filters' branches
/// included, and its deepest nesting.
pub fn size(steps: &[Step]) -> (usize, usize) {
    let mut count = 0;
    let mut depth = 0;
    for step in steps {
        count += 1;
        if let Step::Log { properties, .. } = step {
            count += properties.len();
        }
        if let Step::Filter {
            then, otherwise, ..
        } = step
        {
            let (a, da) = size(then);
            let (b, db) = size(otherwise);
            count += a + b;
            depth = depth.max(1 + da.max(db));
        }
    }
    (count, depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_counts_its_branches_and_nests_one_deeper() {
        let set = || Step::RemoveHeader { name: "x".into() };
        let inner = Step::Filter {
            source: Value::Header("a".into()),
            regex: "b".into(),
            then: vec![set(), set()],
            otherwise: vec![],
        };
        let outer = Step::Filter {
            source: Value::Text("t".into()),
            regex: "t".into(),
            then: vec![inner],
            otherwise: vec![set()],
        };
        assert_eq!(size(&[set(), outer]), (6, 2));
        assert_eq!(size(&[]), (0, 0));
    }

    #[test]
    fn plans_travel_as_compact_json() {
        let plan = Mediation {
            request: vec![Step::SetHeader {
                name: "x-a".into(),
                value: Value::Call(CallFact::ApiName),
            }],
            ..Mediation::default()
        };
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(
            json,
            r#"{"request":[{"set_header":{"name":"x-a","value":{"call":"api_name"}}}]}"#
        );
        assert_eq!(serde_json::from_str::<Mediation>(&json).unwrap(), plan);
    }
}
