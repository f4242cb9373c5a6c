//! Forwarding the API calls the component decided (`apim:gateway/policy`): the request
//! goes to the component's URL with the client's headers as the component changes them
//! (hop-by-hop ones dropped) and the client's body, streamed; the backend's answer comes
//! back streamed, without its hop-by-hop headers and with the component's response
//! headers set (read whole and kept in the store first when the component says the answer
//! is to be cached and the cache rules allow it). A WebSocket handshake goes as one of the
//! host's own ([`websocket::offer`]), whose 101 [`crate::dispatch`] relays. The component
//! still decides everything; the host only moves bytes, through the same pooled client as
//! `wasi:http`.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use wasmtime_wasi_http::{RequestOptions, WasiBody};

use apim_http::endpoints::EndpointConfig;

use crate::failure::{Failure, Kind};
use crate::kv::{KvStore, Store as _};
use crate::outbound::{self, OutboundClient};
use crate::responses::{BoxError, ResponseBody};
use crate::websocket;
use crate::wit_host::bindings::exports::apim::gateway::policy::{
    self, CacheStore, EndpointSettings, Forward, ReplacedHeaders, RequestHead, Target,
};
use apim_http::contract::{KV_BUCKET, Replaced};

/// The head of a request, as the component reads it.
pub fn head_of<B>(request: &Request<B>) -> RequestHead {
    RequestHead {
        method: request.method().as_str().to_string(),
        path_with_query: request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        headers: apim_http::packed::pack(
            request
                .headers()
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes())),
        ),
        scheme: crate::scheme::policy_scheme(request.uri()),
    }
}

/// The length a message's `Content-Length` announces, if it announces one.
pub fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Sends a request (`client` as the client sent it, `body`) to `target`, one of `plan`'s
/// endpoints; the backend's answer as the client gets it, kept in `kv` first when the
/// plan says so and the cache rules allow.
pub async fn send(
    outbound: &OutboundClient,
    kv: &KvStore,
    client: &http::request::Parts,
    body: WasiBody,
    plan: &Forward,
    target: &Target,
) -> Result<Response<ResponseBody>, Failure> {
    let mut backend = Request::new(body);
    *backend.uri_mut() = backend_uri(target).map_err(|err| {
        tracing::warn!("the component's backend URL is not valid: {err}");
        Failure::because(Kind::InvalidUrl, "the component's backend URL", err)
    })?;
    *backend.method_mut() = match &plan.method {
        Some(method) => http::Method::from_bytes(method.as_bytes()).map_err(|err| {
            tracing::warn!("the component's method is not valid: {err}");
            Failure::because(Kind::Component, "the component's method", err)
        })?,
        None => client.method.clone(),
    };
    *backend.version_mut() = http::Version::HTTP_11;
    let headers = backend.headers_mut();
    *headers = backend_headers(&client.headers, plan);
    let offered = plan.upgrade.then(|| websocket::offer(headers));
    let timeout = Some(Duration::from_millis(target.timeout_ms));
    let options = RequestOptions {
        connect_timeout: timeout,
        first_byte_timeout: timeout,
        between_bytes_timeout: timeout,
    };
    let answer = outbound
        .send(backend, Some(options))
        .await
        .inspect_err(|failure| tracing::debug!("backend failed: {failure}"))?;
    if let Some(key) = offered
        && answer.status() == http::StatusCode::SWITCHING_PROTOCOLS
        && !websocket::accepted(answer.headers(), &key)
    {
        let unaccepted = "a WebSocket backend switched without accepting the handshake";
        tracing::warn!("{unaccepted}");
        return Err(Failure::new(Kind::Protocol, unaccepted));
    }
    let (mut parts, body) = answer.into_parts();
    parts.headers = passing_on(&parts.headers, NONE_REMOVED);
    let body = match &plan.cache {
        Some(store) => Box::pin(keep(kv, store, &parts, body, &client.headers)).await?,
        None => body.map_err(BoxError::from).boxed_unsync(),
    };
    for name in &plan.response_removed {
        parts.headers.remove(name.as_str());
    }
    set_headers(&mut parts.headers, &plan.response_headers, true);
    Ok(Response::from_parts(parts, body))
}

/// The headers the backend gets of the client's `headers` as `plan` says. The pool sets
/// the backend's `Host`; the client's does not pass on.
fn backend_headers(headers: &HeaderMap, plan: &Forward) -> HeaderMap {
    let mut passing = client_headers_passing_on(headers, plan);
    set_headers(&mut passing, &plan.added_headers, false);
    passing
}

/// The client's `headers` that pass on to the backend as `plan` says, without those the
/// gateway adds (the endpoint's credentials, the backend JWT among them).
pub fn client_headers_passing_on(headers: &HeaderMap, plan: &Forward) -> HeaderMap {
    let mut passing = passing_on(headers, replaced(plan.replaced).names());
    for name in &plan.removed_headers {
        passing.remove(name.as_str());
    }
    passing
}

/// An endpoint's settings as the shared decision reads them.
pub fn endpoint_config(settings: &EndpointSettings) -> EndpointConfig {
    EndpointConfig {
        timeout_ms: None,
        discard_on_timeout: settings.discard_on_timeout,
        suspend_codes: settings.suspend_codes.clone(),
        suspend_ms: settings.suspend_ms,
        suspend_max_ms: settings.suspend_max_ms,
        factor: settings.factor,
        retry_codes: settings.retry_codes.clone(),
        retries: settings.retries,
        retry_delay_ms: settings.retry_delay_ms,
    }
}

/// The answer's body, kept in the store first when the cache rules allow (read whole: a
/// kept answer has a known length of at most [`apim_http::cache::MAX_CACHED_BODY_BYTES`]).
async fn keep(
    kv: &KvStore,
    store: &CacheStore,
    parts: &http::response::Parts,
    body: WasiBody,
    request: &HeaderMap,
) -> Result<ResponseBody, Failure> {
    let headers = header_list(&parts.headers);
    let status = parts.status.as_u16();
    // Its framing headers are gone by now; the body still knows its length.
    let small = body
        .size_hint()
        .exact()
        .is_some_and(|n| n <= apim_http::cache::MAX_CACHED_BODY_BYTES as u64);
    if !small || !apim_http::cache::storable(status, &headers) {
        return Ok(body.map_err(BoxError::from).boxed_unsync());
    }
    let bytes = body
        .collect()
        .await
        .map_err(|err| {
            tracing::debug!("backend body failed: {err}");
            outbound::body_failure(err)
        })?
        .to_bytes();
    let answer = apim_http::Response {
        status,
        headers,
        body: bytes.to_vec(),
    };
    let now_ms = i64::try_from(apim_http::time::now_ms()).unwrap_or(i64::MAX);
    let request = header_list(request);
    if let Some(entry) = apim_http::cache::encode(&answer, &request, store.ttl_secs, now_ms)
        && let Err(err) = kv.set(KV_BUCKET, &store.key, entry).await
    {
        tracing::warn!("could not keep a cached answer: {err:?}");
    }
    Ok(http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync())
}

/// Headers as the component's types list them.
pub fn header_list(headers: &HeaderMap) -> apim_http::Headers {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
        .collect()
}

/// A response of the component's own.
pub fn response(answer: policy::Response) -> Response<ResponseBody> {
    made(answer.status, &answer.headers, answer.body)
}

/// A response made whole, of a status, headers and a body.
pub fn made(status: u16, headers: &[(String, Vec<u8>)], body: Vec<u8>) -> Response<ResponseBody> {
    let body = http_body_util::Full::new(bytes::Bytes::from(body))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
    set_headers(response.headers_mut(), headers, false);
    response
}

/// Adds headers (replacing those of the same names when `replace`); names or values that
/// are not valid HTTP are left out, as `wasi:http` leaves them out.
fn set_headers(headers: &mut HeaderMap, list: &[(String, Vec<u8>)], replace: bool) {
    for (name, value) in list {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
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

/// The shared set a verdict's `replaced` names.
fn replaced(set: ReplacedHeaders) -> Replaced {
    match set {
        ReplacedHeaders::ApiCall => Replaced::ApiCall,
        ReplacedHeaders::Websocket => Replaced::WebSocket,
        ReplacedHeaders::TokenRelay => Replaced::TokenRelay,
    }
}

/// No headers removed but the hop-by-hop ones.
const NONE_REMOVED: &[&str] = &[];

/// The headers that pass on to the next hop ([`apim_http::passes_on`], the rule the
/// component's own forwarding keeps): copied into a map of their own, which costs less
/// than removing the others one by one.
fn passing_on(headers: &HeaderMap, removed: &[&str]) -> HeaderMap {
    let connection = apim_http::connection_tokens(
        headers
            .get(http::header::CONNECTION)
            .and_then(|v| v.to_str().ok()),
    );
    let mut kept = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if apim_http::passes_on(name.as_str(), &connection, removed) {
            kept.append(name.clone(), value.clone());
        }
    }
    kept
}

/// The endpoint's URL, written straight into the buffer the URI keeps.
fn backend_uri(target: &Target) -> Result<http::Uri, http::uri::InvalidUri> {
    http::Uri::try_from(apim_http::joined([
        target.scheme.as_str(),
        "://",
        &target.authority,
        &target.path_with_query,
    ]))
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
        let mut headers = passing_on(&headers, NONE_REMOVED);
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["content-type", "vary"]);
        set_headers(&mut headers, &[("vary".into(), b"Origin".to_vec())], true);
        assert_eq!(headers["vary"], "Origin");
        set_headers(&mut headers, &[("bad name".into(), b"x".to_vec())], false);
        assert_eq!(headers.len(), 2);
    }

    #[test]
    fn removed_headers_stay_behind_and_the_rest_pass_on_in_order() {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer t"));
        headers.append("accept", HeaderValue::from_static("text/plain"));
        headers.append("accept", HeaderValue::from_static("application/json"));
        headers.insert("host", HeaderValue::from_static("gw.example"));
        headers.insert("spin-client-addr", HeaderValue::from_static("10.0.0.1:5"));
        let passed = passing_on(&headers, &["Authorization"]);
        let pairs: Vec<(&str, &[u8])> = passed
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("accept", b"text/plain".as_slice()),
                ("accept", b"application/json".as_slice())
            ]
        );
    }

    #[test]
    fn backend_urls_are_checked() {
        let mut target = Target {
            scheme: "http".into(),
            authority: "127.0.0.1:8080".into(),
            path_with_query: "/pets?x=1".into(),
            timeout_ms: 1,
            key: String::new(),
            settings: EndpointSettings {
                discard_on_timeout: false,
                suspend_codes: vec![],
                suspend_ms: 0,
                suspend_max_ms: 0,
                factor: 1.0,
                retry_codes: vec![],
                retries: 0,
                retry_delay_ms: 0,
            },
        };
        let uri = backend_uri(&target).unwrap();
        assert_eq!(uri.to_string(), "http://127.0.0.1:8080/pets?x=1");
        target.authority = "bad host".into();
        assert!(backend_uri(&target).is_err());
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
            apim_http::packed::unpack(&head.headers),
            Ok(vec![("accept".to_string(), b"application/json".to_vec())])
        );
        assert_eq!(head.scheme, policy::Scheme::Http);
        let over_tls = Request::get("https://gw.example/pets/v1").body(()).unwrap();
        assert_eq!(head_of(&over_tls).scheme, policy::Scheme::Https);
    }
}
