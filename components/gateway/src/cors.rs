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
    Response {
        status: 200,
        headers: headers(cors, request_headers),
        body: vec![],
    }
}

/// The CORS headers an answer to this request carries (none for a disallowed origin).
pub fn headers(cors: &Cors, request_headers: &Headers) -> Headers {
    let Some(origin) = allowed_origin(cors, request_headers) else {
        return Headers::new();
    };
    let mut headers: Headers = vec![
        (
            "access-control-allow-origin".into(),
            origin.clone().into_bytes(),
        ),
        (
            "access-control-allow-methods".into(),
            cors.allow_methods.clone().into_bytes(),
        ),
        (
            "access-control-allow-headers".into(),
            cors.allow_headers.clone().into_bytes(),
        ),
    ];
    if cors.allow_credentials {
        headers.push(("access-control-allow-credentials".into(), b"true".to_vec()));
    }
    if origin != "*" {
        headers.push(("vary".into(), b"Origin".to_vec()));
    }
    headers
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
