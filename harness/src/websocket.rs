//! WebSocket backends and clients of the tests: an echo backend that keeps each
//! handshake it accepts (path, query and headers, to show what the gateway passed on),
//! and a client that connects through the gateway with extra headers.

use std::sync::{Arc, Mutex};

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub use tokio_tungstenite::tungstenite::{self, Message};

/// A client's connection.
pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A handshake the backend accepted, as it arrived.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// The request target.
    pub path_with_query: String,
    /// Its headers, names lower-case.
    pub headers: Vec<(String, String)>,
}

impl Handshake {
    /// The value of header `name`, if it came.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A WebSocket backend that sends every text and binary message back.
pub struct EchoSocketBackend {
    /// `ws://127.0.0.1:<port>`.
    pub url: String,
    /// The handshakes it accepted, in order.
    pub handshakes: Arc<Mutex<Vec<Handshake>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EchoSocketBackend {
    /// Starts it.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind WebSocket backend");
        let url = format!("ws://{}", listener.local_addr().expect("addr"));
        let handshakes = Arc::new(Mutex::new(Vec::new()));
        let kept = handshakes.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(echo(stream, kept.clone()));
            }
        });
        Self {
            url,
            handshakes,
            task,
        }
    }

    /// The handshakes accepted so far.
    pub fn handshakes(&self) -> Vec<Handshake> {
        self.handshakes.lock().unwrap().clone()
    }
}

impl Drop for EchoSocketBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts one connection, keeping its handshake, and echoes until it closes.
#[allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback returns its own error response"
)]
async fn echo(stream: TcpStream, handshakes: Arc<Mutex<Vec<Handshake>>>) {
    let keep = |request: &Request, response: Response| {
        let headers = request
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect();
        let path_with_query = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        handshakes.lock().unwrap().push(Handshake {
            path_with_query,
            headers,
        });
        Ok(response)
    };
    let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(stream, keep).await else {
        return;
    };
    while let Some(Ok(message)) = socket.next().await {
        if (message.is_text() || message.is_binary()) && socket.send(message).await.is_err() {
            break;
        }
    }
}

/// Connects to `url` (`ws://...`) with `headers` besides the handshake's own: the
/// connection and the 101, or the handshake's failure (an answer other than 101 is
/// `tungstenite::Error::Http`, with its status and body).
pub async fn connect(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<Socket, Box<tungstenite::Error>> {
    let mut request = url.into_client_request().map_err(Box::new)?;
    for (name, value) in headers {
        request.headers_mut().insert(
            http_name(name),
            value.parse().expect("a header value the test means"),
        );
    }
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(Box::new)?;
    Ok(socket)
}

fn http_name(name: &str) -> tungstenite::http::HeaderName {
    tungstenite::http::HeaderName::from_bytes(name.as_bytes()).expect("a header name")
}

/// The status and body of a refused handshake.
pub fn refusal(failed: &tungstenite::Error) -> (u16, String) {
    match failed {
        tungstenite::Error::Http(response) => (
            response.status().as_u16(),
            String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
        ),
        other => panic!("the handshake failed without an answer: {other}"),
    }
}
