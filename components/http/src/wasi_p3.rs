//! WASI 0.3 glue (`wasi:http@0.3.0`, the `wasi:http/service` world): the incoming request
//! read whole, the response handed back with its body, outbound requests sent and their
//! responses read whole; settings as in WASI 0.2 ([`setting`]).
//!
//! The components' logic is synchronous, so an outbound request blocks the task that
//! sends it ([`send`] waits in `waitable-set.wait`): while it waits, the host may run
//! other components but not another request in this instance, which therefore takes its
//! requests one at a time in the logic, as a WASI 0.2 instance does. What an instance
//! gains from WASIp3 is that the host may keep it for many requests (Spin from 4.1 does).

use futures::future;
use wasip3::http::client;
use wasip3::http::types::{
    ErrorCode, Fields, Method, Request as WasiRequest, RequestOptions, Response as WasiResponse,
    Scheme,
};
use wasip3::wit_bindgen::{StreamReader, StreamResult, block_on};
use wasip3::{wit_future, wit_stream};

pub use crate::wasi::{BodyError, setting};
pub use wasip3;

/// Exports `$component`, which implements `wasip3::exports::http::handler::Guest`, as
/// the component's `wasi:http/handler@0.3.0`.
pub use crate::__export_handler as export_handler;

#[doc(hidden)]
#[macro_export]
macro_rules! __export_handler {
    ($component:ident) => {
        #[allow(
            unsafe_code,
            reason = "wit-bindgen's export glue for wasi:http/handler@0.3.0"
        )]
        mod handler_export {
            use super::$component;
            use $crate::wasi_p3::wasip3;
            wasip3::http::service::export!($component);
        }
    };
}

use crate::wasi_glue::with_content_length;
use crate::{
    MAX_BODY_BYTES, Outbound, Request, Response, SendError, content_length, may_have_body,
};

crate::wasi_glue::http_conversions!(WasiRequest);

/// Bytes asked for per read of a body stream.
const READ_CHUNK: usize = 64 * 1024;

/// The incoming request's method, target and headers, its body not read yet.
pub fn request_head(request: &WasiRequest) -> Request {
    Request {
        method: method_name(&request.get_method()),
        path_with_query: request.get_path_with_query().unwrap_or_else(|| "/".into()),
        headers: request.get_headers().copy_all(),
        body: Vec::new(),
        scheme: scheme_of(request.get_scheme()),
    }
}

/// The incoming request with its body read whole.
pub async fn read_request(request: WasiRequest) -> Result<Request, BodyError> {
    let mut head = request_head(&request);
    read_request_body(request, &mut head, MAX_BODY_BYTES).await?;
    Ok(head)
}

/// Reads the body of `request`, whose head is `head`, into it: at most `limit` bytes
/// (capped at [`MAX_BODY_BYTES`]), announced or chunked alike.
pub async fn read_request_body(
    request: WasiRequest,
    head: &mut Request,
    limit: usize,
) -> Result<(), BodyError> {
    // Most requests (GET, DELETE) have no body to read.
    if may_have_body(&head.method, &head.headers) {
        let expected = content_length(&head.headers);
        // Dropped once read: the host then hears the body was taken whole (its default).
        let (_taken, taken) = wit_future::new(|| Ok(()));
        let (stream, _trailers) = WasiRequest::consume_body(request, taken);
        head.body = read_stream(stream, expected, limit.min(MAX_BODY_BYTES)).await?;
    }
    Ok(())
}

/// A body stream's bytes, at most `limit`. With its length known, it stops once that much
/// has arrived rather than wait for the end of the stream.
async fn read_stream(
    mut stream: StreamReader<u8>,
    expected: Option<usize>,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    if expected.is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(expected.unwrap_or(0));
    loop {
        if expected.is_some_and(|n| bytes.len() >= n) {
            return Ok(bytes);
        }
        if bytes.len() == bytes.capacity() {
            bytes.reserve(READ_CHUNK.min(limit + 1 - bytes.len()));
        }
        let (result, read) = stream.read(bytes).await;
        bytes = read;
        if bytes.len() > limit {
            return Err(BodyError::TooLarge);
        }
        match result {
            StreamResult::Complete(_) => {}
            StreamResult::Dropped => return Ok(bytes),
            StreamResult::Cancelled => return Err(BodyError::Broken("read cancelled".into())),
        }
    }
}

/// `response` as the handler's answer; a body is framed by its length (an empty one keeps
/// whatever length the headers say, as for a HEAD) and written once the handler has
/// returned, as the host reads it.
pub fn response(response: Response) -> WasiResponse {
    let (contents, headers) = if response.body.is_empty() {
        (None, fields(&response.headers))
    } else {
        let length = response.body.len();
        let (mut writer, reader) = wit_stream::new::<u8>();
        wasip3::spawn(async move {
            let unsent = writer.write_all(response.body).await;
            if !unsent.is_empty() {
                eprintln!("writing the response failed: the client went away");
            }
        });
        let headers = fields(&with_content_length(&response.headers, length));
        (Some(reader), headers)
    };
    // No trailers: the writer, dropped, sends its default.
    let (_trailers, trailers) = wit_future::new(|| Ok(None));
    let (answer, _sent) = WasiResponse::new(headers, contents, trailers);
    let _ = answer.set_status_code(response.status);
    answer
}

/// Sends `request` through `wasi:http/client` and reads the whole response, blocking the
/// calling task until then (see the module's documentation).
pub fn send(request: Outbound) -> Result<Response, SendError> {
    block_on(send_async(request))
}

async fn send_async(request: Outbound) -> Result<Response, SendError> {
    let unreachable = |what: &str| SendError::Unreachable(what.to_string());
    let (headers, body) = if request.body.is_empty() {
        (fields(&request.headers), None)
    } else {
        let headers = fields(&with_content_length(&request.headers, request.body.len()));
        (headers, Some(wit_stream::new::<u8>()))
    };
    let (_trailers, trailers) = wit_future::new(|| Ok(None));
    let (contents, writer) = match body {
        Some((writer, reader)) => (Some(reader), Some(writer)),
        None => (None, None),
    };
    let (outgoing, _transmitted) = WasiRequest::new(
        headers,
        contents,
        trailers,
        Some(options(request.timeout_ms)),
    );
    address(&outgoing, &request).map_err(unreachable)?;
    let sending = client::send(outgoing);
    let answer = match writer {
        None => sending.await,
        // The host reads the body as it sends the request: write it meanwhile.
        Some(mut writer) => {
            let writing = async move {
                writer.write_all(request.body).await;
            };
            future::join(sending, writing).await.0
        }
    }
    .map_err(send_error)?;
    let status = answer.get_status_code();
    let headers = answer.get_headers().copy_all();
    let (_read, read) = wit_future::new(|| Ok(()));
    let (stream, _trailers) = WasiResponse::consume_body(answer, read);
    let body = read_stream(stream, content_length(&headers), MAX_BODY_BYTES)
        .await
        .map_err(|_| unreachable("response body"))?;
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Waits `ms` milliseconds.
pub fn sleep_ms(ms: u64) {
    block_on(wasip3::clocks::monotonic_clock::wait_for(ms * 1_000_000));
}

/// Random bits.
pub fn random_u64() -> u64 {
    wasip3::random::random::get_random_u64()
}
