//! Failure responses as WSO2's gateway writes them: XML by default, JSON when the client
//! accepts exactly `application/json` (SUMMARY §11).

use quick_xml::escape::escape;

use crate::host::{Headers, Response, header};

/// WSO2's code for a request without credentials.
const MISSING_CREDENTIALS: u32 = 900902;
/// WSO2's code for a token without the operation's scope.
const INSUFFICIENT_SCOPE: u32 = 900910;

/// The XML namespace a fault belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `ams`: authentication.
    Security,
    /// `amt`: throttling.
    Throttling,
    /// `am`: everything else (with `<am:type>Status report</am:type>`).
    General,
}

/// A gateway failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// HTTP status.
    pub status: u16,
    /// WSO2 error code.
    pub code: u32,
    /// Short message.
    pub message: &'static str,
    /// Longer description.
    pub description: String,
    /// Namespace.
    pub family: Family,
    /// When a throttled client may try again (`yyyy-MMM-dd HH:mm:ss+0000 UTC`).
    pub next_access_time: Option<String>,
    /// Seconds after which the same request may be tried again (`Retry-After`).
    pub retry_after_secs: Option<u32>,
    /// A 401's (or a missing scope's 403's) `WWW-Authenticate: Bearer` challenge, sent
    /// before WSO2's own ([`crate::resource::challenge`]).
    pub challenge: Option<String>,
    /// The scope a token lacked (900910), for its challenge. Boxed: every `Result` of the
    /// request path carries a `Fault`, so it stays small.
    #[allow(clippy::box_collection)]
    pub needed_scope: Option<Box<String>>,
    /// Headers the answer carries besides its own: the API's CORS headers for the
    /// request's origin (WSO2's fault sequences run its CORS handler too, so that a page
    /// calling the API reads why it was refused), and what the API's fault flow sets.
    pub extra_headers: Option<Box<crate::host::Headers>>,
}

impl Fault {
    fn new(
        status: u16,
        code: u32,
        message: &'static str,
        description: String,
        family: Family,
    ) -> Self {
        Fault {
            status,
            code,
            message,
            description,
            family,
            next_access_time: None,
            retry_after_secs: None,
            challenge: None,
            needed_scope: None,
            extra_headers: None,
        }
    }

    /// Whether the backend failed it (could not be reached, timed out, every endpoint
    /// suspended): what an API's fault flow runs on.
    pub fn is_backend_failure(&self) -> bool {
        matches!(self.code, 101503 | 101504)
    }

    /// The same fault, its answer carrying `headers` too (replacing any it carried of
    /// the same names).
    pub fn with_headers(mut self, headers: crate::host::Headers) -> Self {
        if headers.is_empty() {
            return self;
        }
        let extra = self.extra_headers.get_or_insert_with(Box::default);
        apim_http::set_headers(extra, headers);
        self
    }

    /// The same fault, challenging the client with `challenge` if it is a 401 or says the
    /// token lacks a scope.
    pub fn with_challenge(mut self, challenge: String) -> Self {
        if self.status == 401 || self.is_insufficient_scope() {
            self.challenge = Some(challenge);
        }
        self
    }

    /// Whether it says the request sent no credentials at all (900902).
    pub fn is_missing_credentials(&self) -> bool {
        self.code == MISSING_CREDENTIALS
    }

    /// 500 900900: the key manager (the control plane's introspection) could not be
    /// asked about an opaque token, so it is neither admitted nor called invalid
    /// (WSO2's `API_AUTH_GENERAL_ERROR`, which its gateway answers with a 500).
    pub fn key_manager_unavailable(context: &str, version: &str) -> Self {
        Self::new(
            500,
            900900,
            "Unclassified Authentication Failure",
            format!(
                "Access failure for API: {context}, version: {version} status: (900900) - Unclassified Authentication Failure. Error while accessing backend services for API key validation"
            ),
            Family::Security,
        )
    }

    /// 503 900900 with `Retry-After`: the gateway asks the key manager about no more
    /// unknown tokens for now (its introspection bound); a real token is admitted on a
    /// retry.
    pub fn key_manager_busy(context: &str, version: &str) -> Self {
        let mut fault = Self::new(
            503,
            900900,
            "Unclassified Authentication Failure",
            format!(
                "Access failure for API: {context}, version: {version} status: (900900) - Unclassified Authentication Failure. API key validation is busy: retry shortly"
            ),
            Family::Security,
        );
        fault.retry_after_secs = Some(1);
        fault
    }

    /// 401 900902: no credentials.
    pub fn missing_credentials() -> Self {
        Self::new(
            401,
            MISSING_CREDENTIALS,
            "Missing Credentials",
            "Required OAuth credentials not provided. Make sure your API invocation call has a header: \"Authorization: Bearer ACCESS_TOKEN\"".into(),
            Family::Security,
        )
    }

    /// 401 900901: invalid, unknown or revoked token.
    pub fn invalid_credentials(context: &str, version: &str) -> Self {
        Self::new(
            401,
            900901,
            "Invalid Credentials",
            format!(
                "Access failure for API: {context}, version: {version} status: (900901) - Invalid Credentials. Make sure you have given the correct access token"
            ),
            Family::Security,
        )
    }

    /// 403 900910: the token lacks the scope the operation needs.
    pub fn insufficient_scope(context: &str, version: &str) -> Self {
        Self::new(
            403,
            INSUFFICIENT_SCOPE,
            "The access token does not allow you to access the requested resource",
            format!(
                "Access failure for API: {context}, version: {version} status: (900910) - The access token does not allow you to access the requested resource"
            ),
            Family::Security,
        )
    }

    /// The same fault, naming the scope the token lacked.
    pub fn needing(mut self, scope: &str) -> Self {
        self.needed_scope = Some(Box::new(scope.to_string()));
        self
    }

    /// Whether it says the token lacks the operation's scope (900910).
    pub fn is_insufficient_scope(&self) -> bool {
        self.code == INSUFFICIENT_SCOPE
    }

    /// 401 900903: expired token.
    pub fn expired(context: &str, version: &str) -> Self {
        Self::new(
            401,
            900903,
            "Access Token Expired",
            format!(
                "Access failure for API: {context}, version: {version} status: (900903) - Access Token Expired. Renew the access token and try again"
            ),
            Family::Security,
        )
    }

    /// 401 900905: a key of the wrong type for this API's endpoints.
    pub fn wrong_key_type(context: &str, version: &str) -> Self {
        Self::new(
            401,
            900905,
            "Incorrect Access Token Type is provided",
            format!(
                "Access failure for API: {context}, version: {version} status: (900905) - Incorrect Access Token Type is provided"
            ),
            Family::Security,
        )
    }

    /// 403 900906: the API has no operation for this method on this path.
    pub fn no_matching_resource(context: &str, version: &str) -> Self {
        Self::new(
            403,
            900906,
            "No matching resource found in the API for the given request",
            format!(
                "Access failure for API: {context}, version: {version} status: (900906) - No matching resource found in the API for the given request"
            ),
            Family::Security,
        )
    }

    /// 401 900907: the subscription is blocked.
    pub fn subscription_blocked(context: &str, version: &str) -> Self {
        Self::new(
            401,
            900907,
            "The requested API is temporarily blocked",
            format!(
                "Access failure for API: {context}, version: {version} status: (900907) - The requested API is temporarily blocked"
            ),
            Family::Security,
        )
    }

    /// 403 900908: the application is not subscribed (WSO2's message ends in a space).
    pub fn not_subscribed(context: &str, version: &str) -> Self {
        Self::new(
            403,
            900908,
            "Resource forbidden ",
            format!(
                "Access failure for API: {context}, version: {version} status: (900908) - Resource forbidden "
            ),
            Family::Security,
        )
    }

    /// 401 900909: the subscription is on hold or rejected.
    pub fn subscription_inactive(context: &str, version: &str) -> Self {
        Self::new(
            401,
            900909,
            "The subscription to the API is inactive",
            format!(
                "Access failure for API: {context}, version: {version} status: (900909) - The subscription to the API is inactive"
            ),
            Family::Security,
        )
    }

    /// 429 (900802 resource, 900803 application, 900804 subscription tier).
    pub fn throttled(code: u32, next_access_time: String) -> Self {
        let mut fault = Self::new(
            429,
            code,
            "Message throttled out",
            "You have exceeded your quota".into(),
            Family::Throttling,
        );
        fault.next_access_time = Some(next_access_time);
        fault
    }

    /// 503 900801: the API's maxTps is reached.
    pub fn api_limit_reached() -> Self {
        Self::new(
            503,
            900801,
            "API Limit Reached",
            "API not accepting requests".into(),
            Family::Throttling,
        )
    }

    /// 503 700700: the API is BLOCKED.
    pub fn api_blocked() -> Self {
        Self::new(
            503,
            700700,
            "API blocked",
            "This API has been blocked temporarily. Please try again later or contact the system administrators.".into(),
            Family::General,
        )
    }

    /// 404: no API at this path (unknown, CREATED, RETIRED).
    pub fn not_found() -> Self {
        Self::new(
            404,
            404,
            "Not Found",
            "The requested resource is not available.".into(),
            Family::General,
        )
    }

    /// 404: the API has no resource at this path.
    pub fn resource_mismatch() -> Self {
        Self::new(
            404,
            404,
            "Runtime Error",
            "No matching resource found for given API Request".into(),
            Family::General,
        )
    }

    /// 502 101503: the backend could not be reached.
    pub fn backend_unreachable() -> Self {
        Self::new(
            502,
            101503,
            "Runtime Error",
            "Error connecting to the back end".into(),
            Family::General,
        )
    }

    /// 503 101503: every endpoint of the API's list is suspended after failures; no
    /// connection is tried until one's suspension ends.
    pub fn endpoints_suspended() -> Self {
        Self::new(
            503,
            101503,
            "Runtime Error",
            "Every endpoint of the API is suspended after failing".into(),
            Family::General,
        )
    }

    /// 504 101504: the backend did not answer in time.
    pub fn backend_timeout() -> Self {
        Self::new(
            504,
            101504,
            "Runtime Error",
            "Send timeout".into(),
            Family::General,
        )
    }

    /// 500 101500: an API's payload factory made a body past
    /// [`apim_manifest::mediation::MAX_PAYLOAD_BYTES`].
    pub fn payload_past_its_bound() -> Self {
        Self::new(
            500,
            101500,
            "Runtime Error",
            "The API's mediation made a payload larger than the gateway sends".into(),
            Family::General,
        )
    }

    /// 500 101500 (503 when it cannot run here or is suspended): an API's WebAssembly
    /// policy gave no decision; 400 when the path it set is not canonical.
    pub fn policy_failed(failure: PolicyFailure) -> Self {
        let why = match failure {
            PolicyFailure::Trapped => "failed",
            PolicyFailure::CpuBudget => "ran past its CPU budget",
            PolicyFailure::MemoryBudget => "ran past its memory budget",
            PolicyFailure::TimeBudget => "ran past its time budget",
            PolicyFailure::BadPath => {
                return Self::bad_request(
                    "The API's policy made a backend path that is not canonical.",
                );
            }
            PolicyFailure::BadChange => "set headers the gateway does not send",
            PolicyFailure::Unavailable => "cannot run on this gateway",
            PolicyFailure::Suspended => "is suspended for running past its budgets",
        };
        let unavailable = matches!(
            failure,
            PolicyFailure::Unavailable | PolicyFailure::Suspended
        );
        let status = if unavailable { 503 } else { 500 };
        Self::new(
            status,
            101500,
            "Runtime Error",
            apim_http::joined(["The API's policy ", why]),
            Family::General,
        )
    }

    /// 500: an API's mediation could not read or convert the backend's answer.
    pub fn answer_unconverted() -> Self {
        Self::new(
            500,
            101500,
            "Runtime Error",
            "The API's mediation could not read the backend's answer as JSON or XML".into(),
            Family::General,
        )
    }

    /// 500: the mediation a host gave back with a backend's answer is not what the
    /// decision gave it.
    pub fn mediation_unreadable() -> Self {
        Self::new(
            500,
            101500,
            "Runtime Error",
            "The gateway could not read the call's mediation".into(),
            Family::General,
        )
    }

    /// 503: the token service could not be reached.
    pub fn token_service_unavailable() -> Self {
        Self::new(
            503,
            101503,
            "Runtime Error",
            "The token service is not reachable".into(),
            Family::General,
        )
    }

    /// 413: the request body is larger than the gateway accepts.
    pub fn payload_too_large() -> Self {
        Self::new(
            413,
            413,
            "Payload Too Large",
            "The request body is larger than the gateway accepts".into(),
            Family::General,
        )
    }

    /// 400: a request target with no canonical form (`why` says what is wrong).
    pub fn bad_request(why: &str) -> Self {
        Self::new(400, 400, "Bad Request", why.to_string(), Family::General)
    }

    /// 400: a WebSocket handshake to an HTTP API, which would otherwise reach its backend
    /// as a plain GET without the upgrade.
    pub fn not_a_websocket_api(context: &str, version: &str) -> Self {
        Self::bad_request(&format!(
            "The API {context}, version {version} is an HTTP API: it does not take WebSocket connections"
        ))
    }

    /// 400: a plain request to a WebSocket API, which takes handshakes only.
    pub fn websocket_only(context: &str, version: &str) -> Self {
        Self::bad_request(&format!(
            "The API {context}, version {version} is a WebSocket API: connect with a WebSocket handshake (GET with Upgrade: websocket)"
        ))
    }

    /// 501: a WebSocket handshake to a host that cannot upgrade a connection (WASI 0.2
    /// HTTP has none: Spin, and edge-gateway without host forwarding).
    pub fn upgrade_unsupported() -> Self {
        Self::new(
            501,
            501,
            "Not Implemented",
            "This gateway host cannot upgrade connections (wasi:http 0.2 has no upgrade): WebSocket APIs are served by edge-gateway with host forwarding".into(),
            Family::General,
        )
    }

    /// 508: the request has passed through this gateway before (a `Via` names it).
    pub fn loop_detected() -> Self {
        Self::new(
            508,
            508,
            "Loop Detected",
            "The request has already passed through this gateway".into(),
            Family::General,
        )
    }

    /// 502 101503: the backend is somewhere the egress policy does not let the gateway go.
    pub fn egress_denied() -> Self {
        Self::new(
            502,
            101503,
            "Runtime Error",
            "The back end is not reachable under the gateway's egress policy".into(),
            Family::General,
        )
    }

    /// 401 900901: the gateway's own endpoints without the gateway secret.
    pub fn internal_unauthorized() -> Self {
        Self::new(
            401,
            900901,
            "Invalid Credentials",
            "The gateway's own endpoints need the gateway secret".into(),
            Family::Security,
        )
    }

    /// The response for a client whose request carried these headers.
    pub fn render(&self, request_headers: &Headers) -> Response {
        let json = header(request_headers, "accept")
            .map(|a| {
                a.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            })
            .unwrap_or(false);
        let mut response = if json {
            Response::json(self.status, &self.json())
        } else {
            Response::new(self.status, "application/xml", self.xml())
        };
        // First, for clients that read only the first challenge (MCP's SDKs do).
        if let Some(challenge) = &self.challenge {
            response = response.with_header("www-authenticate", challenge.as_str());
        }
        if self.status == 401 {
            // WSO2 sends this on every 401, whatever the cause.
            response = response.with_header(
                "www-authenticate",
                "OAuth2 realm=\"WSO2 API Manager\", error=\"invalid token\", error_description=\"The access token expired\"",
            );
        }
        if let Some(secs) = self.retry_after_secs {
            response = response.with_header("retry-after", secs.to_string());
        }
        if let Some(extra) = &self.extra_headers {
            apim_http::set_headers(&mut response.headers, extra.iter().cloned());
        }
        response
    }

    fn json(&self) -> serde_json::Value {
        let mut fault = serde_json::json!({
            "code": self.code,
            "message": self.message,
            "description": self.description,
        });
        if self.family == Family::General {
            fault["type"] = "Status report".into();
        }
        if let Some(next) = &self.next_access_time {
            fault["nextAccessTime"] = next.clone().into();
        }
        serde_json::json!({ "fault": fault })
    }

    fn xml(&self) -> String {
        let (prefix, namespace) = match self.family {
            Family::Security => ("ams", "http://wso2.org/apimanager/security"),
            Family::Throttling => ("amt", "http://wso2.org/apimanager/throttling"),
            Family::General => ("am", "http://wso2.org/apimanager"),
        };
        let kind = if self.family == Family::General {
            format!("<{prefix}:type>Status report</{prefix}:type>")
        } else {
            String::new()
        };
        let next = self
            .next_access_time
            .as_ref()
            .map(|t| {
                format!(
                    "<{prefix}:nextAccessTime>{}</{prefix}:nextAccessTime>",
                    escape(t.as_str())
                )
            })
            .unwrap_or_default();
        format!(
            "<{prefix}:fault xmlns:{prefix}=\"{namespace}\"><{prefix}:code>{}</{prefix}:code>{kind}<{prefix}:message>{}</{prefix}:message><{prefix}:description>{}</{prefix}:description>{next}</{prefix}:fault>",
            self.code,
            escape(self.message),
            escape(self.description.as_str()),
        )
    }
}

/// `yyyy-MMM-dd HH:mm:ss+0000 UTC`, WSO2's `nextAccessTime`.
pub fn access_time(millis: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month repr:short]-[day] [hour]:[minute]:[second]+0000 UTC"
    );
    time::OffsetDateTime::from_unix_timestamp(millis.div_euclid(1000))
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_xml_by_default_and_json_on_request() {
        let fault = Fault::invalid_credentials("/ctx<", "v1");
        let xml = fault.render(&vec![]);
        assert_eq!(xml.status, 401);
        let body = String::from_utf8(xml.body).unwrap();
        assert!(body.starts_with("<ams:fault xmlns:ams=\"http://wso2.org/apimanager/security\"><ams:code>900901</ams:code>"));
        assert!(body.contains("/ctx&lt;"));
        assert!(xml.headers.iter().any(|(n, _)| n == "www-authenticate"));
        let json = fault.render(&vec![("accept".into(), b"application/json".to_vec())]);
        let value: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
        assert_eq!(value["fault"]["code"], 900901);
        let blocked = String::from_utf8(Fault::api_blocked().render(&vec![]).body).unwrap();
        assert!(blocked.contains("<am:code>700700</am:code><am:type>Status report</am:type>"));
    }

    #[test]
    fn next_access_time_reads_like_wso2() {
        assert_eq!(
            access_time(1_700_000_000_000),
            "2023-Nov-14 22:13:20+0000 UTC"
        );
    }
}

/// Why an API's WebAssembly policy gave no decision (the host's `policy-failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyFailure {
    Trapped,
    CpuBudget,
    MemoryBudget,
    TimeBudget,
    BadPath,
    BadChange,
    Unavailable,
    Suspended,
}
