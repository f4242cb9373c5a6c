//! The WASI glue: the `wasi:http/incoming-handler` export, and [`Host`] over
//! `wasi:http/outgoing-handler`, `wasi:keyvalue` (draft2) and `wasi:config/store`.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingRequest,
    OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};

use crate::faults::Fault;
use crate::gateway::Gateway;
use crate::host::{Headers, Host, Outbound, Request, Response, SendError};

mod bindings {
    wit_bindgen::generate!({
        world: "apim:gateway/gateway",
        path: "../../wit",
        generate_all,
    });
}

use bindings::wasi::config::store as config;
use bindings::wasi::keyvalue::{atomics, store as kv};

/// Largest request or response body the gateway buffers.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Bytes per write to an output stream.
const CHUNK: usize = 4096;

thread_local! {
    /// The instance's gateway, kept across requests when the host reuses the instance.
    static GATEWAY: RefCell<Gateway> = RefCell::new(Gateway::default());
    /// The opened key-value bucket.
    static BUCKET: RefCell<Option<kv::Bucket>> = const { RefCell::new(None) };
    /// Settings read so far; they do not change while an instance lives.
    static SETTINGS: RefCell<std::collections::HashMap<String, Option<String>>> = RefCell::new(Default::default());
}

struct Component;

wasip2::http::proxy::export!(Component);

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let response = match read_request(&request) {
            Ok(request) => GATEWAY.with(|gateway| gateway.borrow_mut().handle(&WasiHost, request)),
            Err(fault) => fault.render(&request.headers().entries()),
        };
        write_response(response_out, response);
    }
}

fn read_request(request: &IncomingRequest) -> Result<Request, Fault> {
    let body = request.consume().map_err(|()| Fault::payload_too_large())?;
    let bytes = read_body(body)?;
    Ok(Request {
        method: method_name(&request.method()),
        path_with_query: request.path_with_query().unwrap_or_else(|| "/".into()),
        headers: request.headers().entries(),
        body: bytes,
    })
}

fn read_body(body: IncomingBody) -> Result<Vec<u8>, Fault> {
    let stream = body.stream().map_err(|()| Fault::payload_too_large())?;
    let bytes = read_stream(&stream)?;
    drop(stream);
    let _ = IncomingBody::finish(body);
    Ok(bytes)
}

fn read_stream(stream: &InputStream) -> Result<Vec<u8>, Fault> {
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > MAX_BODY_BYTES {
                    return Err(Fault::payload_too_large());
                }
            }
            Err(StreamError::Closed) => return Ok(bytes),
            Err(StreamError::LastOperationFailed(err)) => {
                eprintln!("reading a body failed: {}", err.to_debug_string());
                return Err(Fault::backend_unreachable());
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

/// Header fields in one host call; header by header (dropping those the host refuses to
/// take from a guest) only when the list as a whole is refused.
fn fields(headers: &Headers) -> Fields {
    Fields::from_list(headers).unwrap_or_else(|_| {
        let fields = Fields::new();
        for (name, value) in headers {
            let _ = fields.append(name, value);
        }
        fields
    })
}

fn write_response(out: ResponseOutparam, response: Response) {
    let outgoing = OutgoingResponse::new(fields(&response.headers));
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

/// The component's host, over WASI.
struct WasiHost;

impl WasiHost {
    fn with_bucket<T>(
        &self,
        f: impl FnOnce(&kv::Bucket) -> Result<T, kv::Error>,
    ) -> Result<T, String> {
        BUCKET.with(|cell| {
            let mut bucket = cell.borrow_mut();
            if bucket.is_none() {
                *bucket = Some(kv::open("default").map_err(|e| format!("{e:?}"))?);
            }
            f(bucket.as_ref().expect("opened above")).map_err(|e| format!("{e:?}"))
        })
    }
}

impl Host for WasiHost {
    fn kv_get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.with_bucket(|b| b.get(key))
    }

    fn kv_set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.with_bucket(|b| b.set(key, value))
    }

    fn kv_delete(&self, key: &str) -> Result<(), String> {
        self.with_bucket(|b| b.delete(key))
    }

    fn kv_increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.with_bucket(|b| atomics::increment(b, key, delta))
    }

    fn setting(&self, name: &str) -> Option<String> {
        SETTINGS.with(|settings| {
            settings
                .borrow_mut()
                .entry(name.to_string())
                .or_insert_with(|| config::get(name).ok().flatten().filter(|v| !v.is_empty()))
                .clone()
        })
    }

    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        let outgoing = OutgoingRequest::new(fields(&request.headers));
        let unreachable = |what: &str| SendError::Unreachable(what.to_string());
        outgoing
            .set_method(&method_of(&request.method))
            .map_err(|()| unreachable("method"))?;
        let scheme = if request.scheme == "https" {
            Scheme::Https
        } else {
            Scheme::Http
        };
        outgoing
            .set_scheme(Some(&scheme))
            .map_err(|()| unreachable("scheme"))?;
        outgoing
            .set_authority(Some(&request.authority))
            .map_err(|()| unreachable("authority"))?;
        outgoing
            .set_path_with_query(Some(&request.path_with_query))
            .map_err(|()| unreachable("path"))?;
        let body = outgoing.body().map_err(|()| unreachable("body"))?;
        let options = RequestOptions::new();
        let timeout = Some(request.timeout_ms * 1_000_000);
        let _ = options.set_connect_timeout(timeout);
        let _ = options.set_first_byte_timeout(timeout);
        let _ = options.set_between_bytes_timeout(timeout);
        let future = outgoing_handler::handle(outgoing, Some(options)).map_err(send_error)?;
        if let Ok(stream) = body.write() {
            write_stream(&stream, &request.body).map_err(|e| unreachable(&format!("{e:?}")))?;
        }
        OutgoingBody::finish(body, None).map_err(send_error)?;
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
        let bytes = read_body(body).map_err(|_| unreachable("response body"))?;
        Ok(Response {
            status,
            headers,
            body: bytes,
        })
    }

    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }
}

fn send_error(code: ErrorCode) -> SendError {
    match code {
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::HttpResponseTimeout => SendError::Timeout(format!("{code:?}")),
        other => SendError::Unreachable(format!("{other:?}")),
    }
}
