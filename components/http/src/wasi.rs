//! WASI 0.2 glue: the incoming request read whole, the response written, outbound
//! requests sent and their responses read whole; and settings from `wasi:config/store`.

use std::cell::RefCell;
use std::collections::HashMap;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingRequest,
    OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};

use crate::wasi_glue::with_content_length;
use crate::{
    MAX_BODY_BYTES, Outbound, Request, Response, SendError, content_length, may_have_body,
};

mod bindings {
    wit_bindgen::generate!({
        world: "apim:gateway/settings",
        path: "../../wit",
        generate_all,
    });
}

/// The `wasi:config/store` bindings, for components whose own worlds include `settings`
/// (wit-bindgen's `with`), so that every component reads settings through [`setting`].
pub use bindings::wasi::config::store as config_store;

/// The settings an instance has read: they do not change while it lives, and the host may
/// reuse it for many requests.
enum Settings {
    /// None yet.
    Unread,
    /// Every one, read in one call on the first lookup (a fresh instance per request, as
    /// on Spin, makes one call rather than one per name); empty values left out.
    All(SettingMap<String>),
    /// Those looked up so far, one by one (a host that could not list them all).
    ByName(SettingMap<Option<String>>),
}

/// Settings by name.
type SettingMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

thread_local! {
    static SETTINGS: RefCell<Settings> = const { RefCell::new(Settings::Unread) };
}

/// A setting from `wasi:config/store`; `None` when absent or empty.
pub fn setting(name: &str) -> Option<String> {
    SETTINGS.with(|settings| {
        let mut settings = settings.borrow_mut();
        if let Settings::Unread = *settings {
            *settings = match config_store::get_all() {
                Ok(all) => Settings::All(all.into_iter().filter(|(_, v)| !v.is_empty()).collect()),
                Err(_) => Settings::ByName(SettingMap::default()),
            };
        }
        match &mut *settings {
            Settings::All(all) => all.get(name).cloned(),
            Settings::ByName(known) => known
                .entry(name.to_string())
                .or_insert_with(|| {
                    config_store::get(name)
                        .ok()
                        .flatten()
                        .filter(|v| !v.is_empty())
                })
                .clone(),
            Settings::Unread => None,
        }
    })
}

/// Bytes per write to an output stream (wasi:io streams accept at most 4096 per call).
const CHUNK: usize = 4096;

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyError {
    /// Larger than its limit, or already taken.
    TooLarge,
    /// The stream broke off.
    Broken(String),
}

/// The incoming request with its body read whole (at most [`MAX_BODY_BYTES`]).
pub fn read_request(request: &IncomingRequest) -> Result<Request, BodyError> {
    let mut head = request_head(request);
    read_request_body(request, &mut head, MAX_BODY_BYTES)?;
    Ok(head)
}

/// The incoming request's method, target and headers, its body not read yet.
pub fn request_head(request: &IncomingRequest) -> Request {
    Request {
        method: method_name(&request.method()),
        path_with_query: request.path_with_query().unwrap_or_else(|| "/".into()),
        headers: request.headers().entries(),
        body: Vec::new(),
        scheme: scheme_of(request.scheme()),
    }
}

/// Reads the body of the request whose head is `head` into it: at most `limit` bytes
/// (capped at [`MAX_BODY_BYTES`]), announced or chunked alike.
pub fn read_request_body(
    request: &IncomingRequest,
    head: &mut Request,
    limit: usize,
) -> Result<(), BodyError> {
    // Every host call costs, and most requests (GET, DELETE) have no body to read.
    if may_have_body(&head.method, &head.headers) {
        let expected = content_length(&head.headers);
        head.body = read_body(
            request.consume().map_err(|()| BodyError::TooLarge)?,
            expected,
            limit.min(MAX_BODY_BYTES),
        )?;
    }
    Ok(())
}

/// Reads a body whole, at most `limit` bytes. With its length known, it stops once that
/// much has arrived rather than wait for end-of-stream, and skips the trailers (one host
/// call less each).
fn read_body(
    body: IncomingBody,
    expected: Option<usize>,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    let stream = body.stream().map_err(|()| BodyError::TooLarge)?;
    let (bytes, complete) = read_stream(&stream, expected, limit)?;
    drop(stream);
    if !complete {
        let _ = IncomingBody::finish(body);
    }
    Ok(bytes)
}

/// The stream's bytes, and whether they are all `expected` (so end-of-stream was not
/// read); more than `limit` bytes, announced or arriving, are refused.
fn read_stream(
    stream: &InputStream,
    expected: Option<usize>,
    limit: usize,
) -> Result<(Vec<u8>, bool), BodyError> {
    if expected.is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(expected.unwrap_or(0));
    loop {
        if expected.is_some_and(|n| bytes.len() >= n) {
            return Ok((bytes, true));
        }
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > limit {
                    return Err(BodyError::TooLarge);
                }
            }
            Err(StreamError::Closed) => return Ok((bytes, false)),
            Err(StreamError::LastOperationFailed(err)) => {
                return Err(BodyError::Broken(err.to_debug_string()));
            }
        }
    }
}

fn write_stream(stream: &OutputStream, bytes: &[u8]) -> Result<(), StreamError> {
    for chunk in bytes.chunks(CHUNK) {
        stream.blocking_write_and_flush(chunk)?;
    }
    Ok(())
}

crate::wasi_glue::http_conversions!(OutgoingRequest);

/// Sends `response` as the answer to the incoming request; a body is framed by its
/// length (an empty one keeps whatever length the headers say, as for a HEAD).
pub fn write_response(out: ResponseOutparam, response: Response) {
    let headers = if response.body.is_empty() {
        fields(&response.headers)
    } else {
        fields(&with_content_length(&response.headers, response.body.len()))
    };
    let outgoing = OutgoingResponse::new(headers);
    let _ = outgoing.set_status_code(response.status);
    let Ok(body) = outgoing.body() else {
        ResponseOutparam::set(out, Ok(outgoing));
        return;
    };
    ResponseOutparam::set(out, Ok(outgoing));
    if let Ok(stream) = body.write()
        && let Err(err) = write_stream(&stream, &response.body)
    {
        eprintln!("writing the response failed: {err:?}");
    }
    let _ = OutgoingBody::finish(body, None);
}

/// Sends `request` through `wasi:http/outgoing-handler` and reads the whole response.
pub fn send(request: Outbound) -> Result<Response, SendError> {
    let unreachable = |what: &str| SendError::Unreachable(what.to_string());
    let outgoing = outgoing_request(&request).map_err(unreachable)?;
    // A body never taken is sent empty: no body resource, stream or finish for GETs.
    let body = if request.body.is_empty() {
        None
    } else {
        Some(outgoing.body().map_err(|()| unreachable("body"))?)
    };
    let future = outgoing_handler::handle(outgoing, Some(options(request.timeout_ms)))
        .map_err(send_error)?;
    if let Some(body) = body {
        if let Ok(stream) = body.write() {
            write_stream(&stream, &request.body).map_err(|e| unreachable(&format!("{e:?}")))?;
        }
        OutgoingBody::finish(body, None).map_err(send_error)?;
    }
    // The answer is never there yet when asked first: wait before looking.
    future.subscribe().block();
    let incoming = loop {
        match future.get() {
            Some(result) => break result,
            None => future.subscribe().block(),
        }
    }
    .map_err(|()| unreachable("response already taken"))?
    .map_err(send_error)?;
    let status = incoming.status();
    let headers = incoming.headers().entries();
    let body = incoming
        .consume()
        .map_err(|()| unreachable("response body"))?;
    let body = read_body(body, content_length(&headers), MAX_BODY_BYTES)
        .map_err(|_| unreachable("response body"))?;
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// The outgoing request's head; a body goes with its `Content-Length`.
fn outgoing_request(request: &Outbound) -> Result<OutgoingRequest, &'static str> {
    let headers = if request.body.is_empty() {
        fields(&request.headers)
    } else {
        fields(&with_content_length(&request.headers, request.body.len()))
    };
    let outgoing = OutgoingRequest::new(headers);
    address(&outgoing, request)?;
    Ok(outgoing)
}

/// Waits `ms` milliseconds.
pub fn sleep_ms(ms: u64) {
    wasip2::clocks::monotonic_clock::subscribe_duration(ms * 1_000_000).block();
}

/// Random bits.
pub fn random_u64() -> u64 {
    wasip2::random::random::get_random_u64()
}
