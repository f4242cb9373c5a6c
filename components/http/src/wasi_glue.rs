//! What the WASI 0.2 and WASI 0.3 HTTP glue ([`crate::wasi`], `crate::wasi_p3`) share:
//! framing, and the conversions between our HTTP shapes and `wasi:http`'s types, which
//! each version generates as types of its own with the same names and methods.

use crate::Headers;

/// `headers` with a `Content-Length` for a body of `length` bytes held whole (any the
/// list had dropped), so the message is framed by length rather than chunked: many
/// backends (legacy SOAP stacks, IIS, Python's `http.server`) refuse chunked requests.
pub(crate) fn with_content_length(headers: &Headers, length: usize) -> Headers {
    let mut framed: Headers = headers
        .iter()
        .filter(|(name, _)| !name.eq_ignore_ascii_case("content-length"))
        .cloned()
        .collect();
    framed.push(("content-length".into(), length.to_string().into_bytes()));
    framed
}

/// The conversions for the `wasi:http` types in scope where it is invoked (`Fields`,
/// `Method`, `Scheme`, `ErrorCode`, `RequestOptions`) and the outgoing request type
/// `$outgoing`, written once for both WASI versions.
macro_rules! http_conversions {
    ($outgoing:ty) => {
        /// Header fields in one host call; header by header (dropping those the host
        /// refuses to take from a guest) only when the list as a whole is refused.
        fn fields(headers: &$crate::Headers) -> Fields {
            Fields::from_list(headers).unwrap_or_else(|_| {
                let fields = Fields::new();
                for (name, value) in headers {
                    let _ = fields.append(name, value);
                }
                fields
            })
        }

        /// Where an outgoing request goes and how: method, scheme, authority and target.
        fn address(outgoing: &$outgoing, request: &$crate::Outbound) -> Result<(), &'static str> {
            outgoing
                .set_method(&method_of(&request.method))
                .map_err(|()| "method")?;
            let scheme = if request.scheme == "https" {
                Scheme::Https
            } else {
                Scheme::Http
            };
            outgoing.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
            outgoing
                .set_authority(Some(&request.authority))
                .map_err(|()| "authority")?;
            outgoing
                .set_path_with_query(Some(&request.path_with_query))
                .map_err(|()| "path")
        }

        /// The same limit for connecting, the first byte and the gaps between bytes.
        fn options(timeout_ms: u64) -> RequestOptions {
            let options = RequestOptions::new();
            let timeout = Some(timeout_ms * 1_000_000);
            let _ = options.set_connect_timeout(timeout);
            let _ = options.set_first_byte_timeout(timeout);
            let _ = options.set_between_bytes_timeout(timeout);
            options
        }

        fn send_error(code: ErrorCode) -> $crate::SendError {
            match code {
                ErrorCode::ConnectionTimeout
                | ErrorCode::ConnectionReadTimeout
                | ErrorCode::ConnectionWriteTimeout
                | ErrorCode::HttpResponseTimeout => $crate::SendError::Timeout(format!("{code:?}")),
                other => $crate::SendError::Unreachable(format!("{other:?}")),
            }
        }

        /// The scheme an incoming request came on, as the host sets it (Spin: its
        /// listener's; edge-gateway: the one it decided); none or another is in clear.
        fn scheme_of(scheme: Option<Scheme>) -> $crate::Scheme {
            match scheme {
                Some(Scheme::Https) => $crate::Scheme::Https,
                _ => $crate::Scheme::Http,
            }
        }

        fn method_name(method: &Method) -> String {
            match method {
                Method::Get => "GET".into(),
                Method::Head => "HEAD".into(),
                Method::Post => "POST".into(),
                Method::Put => "PUT".into(),
                Method::Delete => "DELETE".into(),
                Method::Connect => "CONNECT".into(),
                Method::Options => "OPTIONS".into(),
                Method::Trace => "TRACE".into(),
                Method::Patch => "PATCH".into(),
                Method::Other(other) => other.to_ascii_uppercase(),
            }
        }

        fn method_of(name: &str) -> Method {
            match name {
                "GET" => Method::Get,
                "HEAD" => Method::Head,
                "POST" => Method::Post,
                "PUT" => Method::Put,
                "DELETE" => Method::Delete,
                "CONNECT" => Method::Connect,
                "OPTIONS" => Method::Options,
                "TRACE" => Method::Trace,
                "PATCH" => Method::Patch,
                other => Method::Other(other.to_string()),
            }
        }
    };
}

pub(crate) use http_conversions;
