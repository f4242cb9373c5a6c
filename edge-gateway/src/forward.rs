//! Forwarding the API calls the component decided (`apim:gateway/policy`): the request
//! goes to the component's URL with the client's headers as the component changes them
//! (hop-by-hop ones dropped) and the client's body, streamed; the backend's answer comes
//! back streamed, without its hop-by-hop headers and with the component's response
//! headers set. The component still decides
//! everything; the host only moves bytes, through the same pooled client as `wasi:http`.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use http_body_util::BodyExt as _;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use crate::bindings::exports::apim::gateway::policy::{self, Forward, RequestHead};
use crate::gateway::{BoxError, ResponseBody};
use crate::outbound::OutboundClient;

/// The head of a request, as the component reads it.
pub fn head_of<B>(request: &Request<B>) -> RequestHead {
    RequestHead {
        method: request.method().as_str().to_string(),
        path_with_query: request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        headers: request
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
            .collect(),
    }
}

/// Why a forwarded request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The backend was too slow.
    TimedOut,
    /// It could not be reached, or broke the exchange.
    Unreachable,
}

/// Sends `request` as `plan` says; the backend's answer as the client gets it.
pub async fn send(
    outbound: &OutboundClient,
    request: Request<WasiBody>,
    plan: Forward,
) -> Result<Response<ResponseBody>, Failure> {
    let (mut parts, body) = request.into_parts();
    let uri = format!(
        "{}://{}{}",
        plan.scheme, plan.authority, plan.path_with_query
    );
    parts.uri = uri.parse().map_err(|err| {
        tracing::warn!("the component's backend URL is not valid: {err}");
        Failure::Unreachable
    })?;
    parts.version = http::Version::HTTP_11;
    parts.extensions = http::Extensions::new();
    drop_hop_by_hop(&mut parts.headers);
    for name in &plan.removed_headers {
        parts.headers.remove(name.as_str());
    }
    set_headers(&mut parts.headers, plan.added_headers, false);
    let backend = Request::from_parts(parts, body);
    let timeout = Some(Duration::from_millis(plan.timeout_ms));
    let options = RequestOptions {
        connect_timeout: timeout,
        first_byte_timeout: timeout,
        between_bytes_timeout: timeout,
    };
    let answer = outbound.send(backend, Some(options)).await.map_err(|err| {
        tracing::debug!("backend failed: {err}");
        failure(&err)
    })?;
    let (mut parts, body) = answer.into_parts();
    drop_hop_by_hop(&mut parts.headers);
    set_headers(&mut parts.headers, plan.response_headers, true);
    Ok(Response::from_parts(
        parts,
        body.map_err(BoxError::from).boxed_unsync(),
    ))
}

/// A response of the component's own.
pub fn response(answer: policy::Response) -> Response<ResponseBody> {
    let body = http_body_util::Full::new(bytes::Bytes::from(answer.body))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() =
        http::StatusCode::from_u16(answer.status).unwrap_or(http::StatusCode::BAD_GATEWAY);
    set_headers(response.headers_mut(), answer.headers, false);
    response
}

fn failure(err: &Error) -> Failure {
    match err {
        Error::ConnectionTimeout
        | Error::ConnectionReadTimeout
        | Error::ConnectionWriteTimeout
        | Error::HttpResponseTimeout => Failure::TimedOut,
        _ => Failure::Unreachable,
    }
}

/// Adds headers (replacing those of the same names when `replace`); names or values that
/// are not valid HTTP are left out, as `wasi:http` leaves them out.
fn set_headers(headers: &mut HeaderMap, list: Vec<(String, Vec<u8>)>, replace: bool) {
    for (name, value) in list {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(&value),
        ) else {
            tracing::debug!(header = %name, "header left out: not valid HTTP");
            continue;
        };
        if replace {
            headers.insert(name, value);
        } else {
            headers.append(name, value);
        }
    }
}

/// Removes the headers that belong to the backend's hop (the list the component uses).
fn drop_hop_by_hop(headers: &mut HeaderMap) {
    let connection = apim_http::connection_tokens(
        headers
            .get(http::header::CONNECTION)
            .and_then(|v| v.to_str().ok()),
    );
    let hop: Vec<HeaderName> = headers
        .keys()
        .filter(|name| apim_http::is_hop_by_hop(name.as_str(), &connection))
        .cloned()
        .collect();
    for name in hop {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_go_and_response_headers_replace() {
        let mut headers = HeaderMap::new();
        headers.insert("connection", HeaderValue::from_static("close, x-hop"));
        headers.insert("x-hop", HeaderValue::from_static("1"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert("content-type", HeaderValue::from_static("text/plain"));
        headers.insert("vary", HeaderValue::from_static("Accept"));
        drop_hop_by_hop(&mut headers);
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["content-type", "vary"]);
        set_headers(
            &mut headers,
            vec![("vary".into(), b"Origin".to_vec())],
            true,
        );
        assert_eq!(headers["vary"], "Origin");
        set_headers(
            &mut headers,
            vec![("bad name".into(), b"x".to_vec())],
            false,
        );
        assert_eq!(headers.len(), 2);
    }

    #[test]
    fn heads_carry_method_path_and_headers() {
        let request = Request::post("/pets/v1/dogs?x=1")
            .header("accept", "application/json")
            .body(())
            .unwrap();
        let head = head_of(&request);
        assert_eq!(
            (head.method.as_str(), head.path_with_query.as_str()),
            ("POST", "/pets/v1/dogs?x=1")
        );
        assert_eq!(
            head.headers,
            vec![("accept".to_string(), b"application/json".to_vec())]
        );
    }
}
