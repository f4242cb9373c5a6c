//! The management API as the web applications call it: the one router scripts reach, in
//! this process, with the signed-in user's token and the browser's address, so that a
//! page meets every rule (tenancy, roles, scopes, visibility, workflows, throttles)
//! exactly as a script does and no page needs an endpoint of its own.

use std::net::SocketAddr;
use std::sync::OnceLock;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use serde::de::DeserializeOwned;

/// The largest answer a page reads (an API's definition, a document).
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// The management API's router, installed once it is built (it holds the pages too).
#[derive(Default)]
pub struct PublicApi(OnceLock<Router>);

/// One call a page makes.
pub struct Call<'a> {
    method: Method,
    target: String,
    bearer: Option<&'a str>,
    body: Option<(String, Vec<u8>)>,
    peer: Option<SocketAddr>,
}

impl<'a> Call<'a> {
    /// `method` of `target` (path and query).
    pub fn new(method: Method, target: impl Into<String>) -> Self {
        Call {
            method,
            target: target.into(),
            bearer: None,
            body: None,
            peer: None,
        }
    }

    /// A GET of `target`.
    pub fn get(target: impl Into<String>) -> Self {
        Self::new(Method::GET, target)
    }

    /// With the signed-in user's access token, when there is one.
    pub fn bearer(mut self, token: Option<&'a str>) -> Self {
        self.bearer = token;
        self
    }

    /// As the browser at `peer` sent it (per-address limits count the browser).
    pub fn from(mut self, peer: Option<SocketAddr>) -> Self {
        self.peer = peer;
        self
    }

    /// With a JSON body.
    pub fn json(mut self, value: &serde_json::Value) -> Self {
        self.body = Some(("application/json".into(), value.to_string().into_bytes()));
        self
    }

    /// With a form body.
    pub fn form(mut self, pairs: &[(&str, &str)]) -> Self {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        self.body = Some((
            "application/x-www-form-urlencoded".into(),
            body.into_bytes(),
        ));
        self
    }

    /// With a multipart form body of `text` fields and `file`.
    pub fn multipart(
        mut self,
        text: &[(&str, &str)],
        file: Option<(&str, &super::uploads::Upload)>,
    ) -> Self {
        self.body = Some(super::uploads::multipart_body(text, file));
        self
    }
}

/// What a call answered.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    /// The body as `T`, when the call succeeded and the body is one.
    pub fn json<T: DeserializeOwned>(&self) -> Option<T> {
        if !self.status.is_success() {
            return None;
        }
        serde_json::from_slice(&self.body).ok()
    }

    /// The `name` of each item of a WSO2 list answer (`{"list": [{"name": ...}]}`), when
    /// the call succeeded.
    pub fn names_in_list(&self) -> Option<Vec<String>> {
        let list = self.json::<serde_json::Value>()?;
        let items = list["list"].as_array()?;
        Some(
            items
                .iter()
                .filter_map(|item| item["name"].as_str().map(str::to_string))
                .collect(),
        )
    }

    /// The member `name` of the JSON body, when the call succeeded and it is a string.
    pub fn string_member(&self, name: &str) -> Option<String> {
        let body = self.json::<serde_json::Value>()?;
        body[name].as_str().map(str::to_string)
    }

    /// The message of WSO2's error body (`description`, else `message`), for the page
    /// to show.
    pub fn error_message(&self) -> String {
        let body: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_default();
        ["description", "message", "error_description"]
            .iter()
            .find_map(|name| body[*name].as_str().filter(|s| !s.is_empty()))
            .map_or_else(
                || format!("The request failed ({})", self.status),
                str::to_string,
            )
    }
}

impl PublicApi {
    /// Installs the router the calls go to (the first one built in this process).
    pub fn install(&self, router: Router) {
        let _ = self.0.set(router);
    }

    /// Sends `call` through the management API's router.
    pub async fn send(&self, call: Call<'_>) -> Answer {
        let Some(router) = self.0.get() else {
            return unavailable();
        };
        let mut request = Request::new(
            call.body
                .as_ref()
                .map_or_else(Body::empty, |(_, bytes)| Body::from(bytes.clone())),
        );
        *request.method_mut() = call.method;
        let Ok(uri) = call.target.parse() else {
            return unavailable();
        };
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(content_type) = call
            .body
            .as_ref()
            .and_then(|(content_type, _)| HeaderValue::from_str(content_type).ok())
        {
            headers.insert(header::CONTENT_TYPE, content_type);
        }
        if let Some(value) = call
            .bearer
            .and_then(|token| HeaderValue::from_str(&format!("Bearer {token}")).ok())
        {
            headers.insert(header::AUTHORIZATION, value);
        }
        if let Some(peer) = call.peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let mut router = router.clone();
        let response = match tower_service::Service::call(&mut router, request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, MAX_ANSWER_BYTES)
            .await
            .unwrap_or_default();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

/// The answer while no router is installed (never after start-up).
fn unavailable() -> Answer {
    Answer {
        status: StatusCode::SERVICE_UNAVAILABLE,
        headers: HeaderMap::new(),
        body: Bytes::new(),
    }
}
