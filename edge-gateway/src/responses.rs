//! The bodies of the answers the host sends clients, whoever made them: the component's
//! `wasi:http` handler, a backend, or the host itself.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty};

/// Error type of response bodies sent to clients.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Body of responses sent to clients.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// An empty response with `status`.
pub fn empty(status: StatusCode) -> Response<ResponseBody> {
    let body = Empty::new().map_err(|never| match never {}).boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}
