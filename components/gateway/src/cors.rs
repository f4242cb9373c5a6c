//! CORS per the API's `corsConfiguration`: preflight answers and response headers.

use apim_manifest::Cors;

use crate::host::{Headers, Response, header};

/// The origin to allow for this request, if the configuration allows it.
fn allowed_origin(cors: &Cors, request_headers: &Headers) -> Option<String> {
    let origin = header(request_headers, "origin");
    if cors.allow_origins.iter().any(|o| o == "*") {
        return Some(match (origin, cors.allow_credentials) {
            // Credentials cannot go with a wildcard: echo the origin instead.
            (Some(origin), true) => origin.to_string(),
            _ => "*".to_string(),
        });
    }
    let origin = origin?;
    cors.allow_origins
        .iter()
        .any(|o| o == origin)
        .then(|| origin.to_string())
}

/// Whether the request is a CORS preflight.
pub fn is_preflight(method: &str, request_headers: &Headers) -> bool {
    method == "OPTIONS"
        && header(request_headers, "origin").is_some()
        && header(request_headers, "access-control-request-method").is_some()
}

/// The answer to a preflight.
pub fn preflight(cors: &Cors, request_headers: &Headers) -> Response {
    let mut response = Response {
        status: 200,
        headers: vec![],
        body: vec![],
    };
    add_headers(cors, request_headers, &mut response);
    response
}

/// Adds the CORS headers to a response.
pub fn add_headers(cors: &Cors, request_headers: &Headers, response: &mut Response) {
    let Some(origin) = allowed_origin(cors, request_headers) else {
        return;
    };
    let mut set = |name: &str, value: &str| {
        response
            .headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        response
            .headers
            .push((name.to_string(), value.as_bytes().to_vec()));
    };
    set("access-control-allow-origin", &origin);
    set("access-control-allow-methods", &cors.allow_methods);
    set("access-control-allow-headers", &cors.allow_headers);
    if cors.allow_credentials {
        set("access-control-allow-credentials", "true");
    }
    if origin != "*" {
        set("vary", "Origin");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cors(origins: &[&str], credentials: bool) -> Cors {
        Cors {
            allow_origins: origins.iter().map(|s| s.to_string()).collect(),
            allow_headers: "authorization,content-type".into(),
            allow_methods: "GET,POST".into(),
            allow_credentials: credentials,
        }
    }

    #[test]
    fn allows_listed_origins_only() {
        let from = |o: &str| vec![("origin".to_string(), o.as_bytes().to_vec())];
        assert_eq!(
            allowed_origin(&cors(&["*"], false), &from("http://a")).as_deref(),
            Some("*")
        );
        assert_eq!(
            allowed_origin(&cors(&["*"], true), &from("http://a")).as_deref(),
            Some("http://a")
        );
        assert_eq!(
            allowed_origin(&cors(&["http://a"], false), &from("http://a")).as_deref(),
            Some("http://a")
        );
        assert_eq!(
            allowed_origin(&cors(&["http://a"], false), &from("http://b")),
            None
        );
        let response = preflight(&cors(&["*"], false), &from("http://a"));
        assert!(
            response
                .headers
                .iter()
                .any(|(n, v)| n == "access-control-allow-methods" && v == b"GET,POST")
        );
    }
}
