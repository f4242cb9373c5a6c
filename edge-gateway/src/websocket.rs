//! WebSocket APIs on the host-forwarding path: the component admits the client's
//! handshake (token, subscription, the tiers' allowance) and says it is one
//! (`forward.upgrade`); the host sends the backend a handshake of its own through the
//! pooled client (so the egress policy, the endpoints' trust and timeouts are those of
//! every call), and once the backend answers 101, answers the client's and relays
//! messages both ways.
//!
//! The relay reads whole messages of at most `max_message_bytes` (longer ones close the
//! connection with 1009) and sends each on before it reads the next from that side, so
//! a slow reader holds its sender back instead of filling memory. As in WSO2 2.6, each
//! text or binary message from the client counts against the subscription's,
//! application's and API's limits the handshake counted against (control frames do
//! not); a message a limit refuses closes the connection with WSO2's frame code 4003
//! ("Websocket frame throttled out") rather than dropping it, as WSO2 2.6 does, unseen
//! by the client. Every `recheck_every` the handshake is decided again, so a revoked or
//! expired token, a blocked subscription or a retired API closes the connection (4001,
//! 4002, 1008); a connection with no message either way for `idle_timeout` is closed
//! with 1001, and so is every connection when the gateway shuts down, once kept-alive
//! connections have had their time (`APIM_DRAIN_KEEPALIVE_MS`): the drain waits for them.

use std::sync::Arc;
use std::time::Duration;

use apim_tls::connection::Watcher;
use futures_util::{SinkExt as _, StreamExt as _};
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use crate::counters::Counters;
use crate::responses::{self, ResponseBody};
use crate::wit_host::bindings::exports::apim::gateway::policy::{Decision, Limit, RequestHead};
use crate::wit_host::instances::Runtime;

/// WSO2's close code for a message a limit refused (`THROTTLED_OUT_ERROR`).
pub const THROTTLED_OUT: u16 = 4003;
/// WSO2's close code for credentials no longer valid (`API_AUTH_INVALID_CREDENTIALS`).
pub const INVALID_CREDENTIALS: u16 = 4001;
/// WSO2's close code for a caller no longer allowed (`RESOURCE_FORBIDDEN_ERROR`).
pub const FORBIDDEN: u16 = 4002;
/// Read buffer of each side of a connection: enough for most messages in one read, far
/// less than tungstenite's 128 KiB default per connection.
const READ_BUFFER_BYTES: usize = 16 * 1024;
/// Longest wait for a free instance to decide a handshake again; busy, it is tried at
/// the next recheck.
const RECHECK_WAIT: Duration = Duration::from_secs(1);

/// How WebSocket connections are relayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebSocketSettings {
    /// Largest message (and frame) read from either side.
    pub max_message_bytes: usize,
    /// A connection with no message either way for this long is closed.
    pub idle_timeout: Duration,
    /// How often an open connection's handshake is decided again.
    pub recheck_every: Duration,
}

impl Default for WebSocketSettings {
    fn default() -> Self {
        Self {
            max_message_bytes: 1 << 20,
            idle_timeout: Duration::from_secs(300),
            recheck_every: Duration::from_secs(30),
        }
    }
}

impl WebSocketSettings {
    /// Each side's frame settings.
    fn frames(&self) -> WebSocketConfig {
        WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER_BYTES)
            .write_buffer_size(0)
            .max_message_size(Some(self.max_message_bytes))
            .max_frame_size(Some(self.max_message_bytes))
    }
}

/// Makes a request for the backend a WebSocket handshake of the host's own (a fresh key,
/// version 13, no extensions: the relay reads every frame); the key, to check its answer.
pub fn offer(headers: &mut HeaderMap) -> String {
    let key = generate_key();
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        http::header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    if let Ok(value) = HeaderValue::from_str(&key) {
        headers.insert(SEC_WEBSOCKET_KEY, value);
    }
    key
}

/// Whether a backend's 101 accepts the handshake offered with `key`.
pub fn accepted(headers: &HeaderMap, key: &str) -> bool {
    let upgraded = headers
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    let accept = headers.get(SEC_WEBSOCKET_ACCEPT).map(HeaderValue::as_bytes);
    upgraded && accept == Some(derive_accept_key(key.as_bytes()).as_bytes())
}

/// The client's 101 for its handshake `head`, with the subprotocol the backend chose
/// (`backend`, its 101's headers); `None` without a key (the component refuses those).
pub fn switching(head: &RequestHead, backend: &HeaderMap) -> Option<Response<ResponseBody>> {
    let headers = apim_http::packed::unpack(&head.headers).ok()?;
    let key = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-key"))
        .map(|(_, value)| value.trim_ascii())?;
    let accept = HeaderValue::from_str(&derive_accept_key(key)).ok()?;
    let mut response = responses::empty(StatusCode::SWITCHING_PROTOCOLS);
    let headers = response.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    if let Some(protocol) = backend.get(http::header::SEC_WEBSOCKET_PROTOCOL) {
        headers.insert(http::header::SEC_WEBSOCKET_PROTOCOL, protocol.clone());
    }
    Some(response)
}

/// Decides an open connection's handshake again.
pub struct Recheck {
    /// The component.
    pub runtime: Arc<Runtime>,
    /// The gateway's instance permits.
    pub permits: Arc<Semaphore>,
    /// The client's handshake.
    pub head: RequestHead,
}

impl Recheck {
    /// `Err` with the close frame for the client when the handshake would now be
    /// refused; `Ok` when admitted, or when it cannot be decided now (no free instance,
    /// a failed call: the connection stays open until the next recheck).
    async fn still_admitted(&self) -> Result<(), CloseFrame> {
        let Ok(Ok(_permit)) =
            tokio::time::timeout(RECHECK_WAIT, self.permits.clone().acquire_owned()).await
        else {
            return Ok(());
        };
        match self.runtime.decide(&self.head, None).await {
            Ok(verdict) => match verdict.decision {
                Decision::Respond(answer) => Err(refusal(answer.status)),
                Decision::Forward(_) | Decision::Handle | Decision::ReadBody(_) => Ok(()),
            },
            Err(err) => {
                tracing::warn!("could not decide an open WebSocket's handshake again: {err:?}");
                Ok(())
            }
        }
    }
}

/// The close frame for a handshake now refused with `status`: WSO2's frame codes for
/// credentials (401) and permission (403), policy violation for the rest (a blocked or
/// retired API, a blocked subscription).
fn refusal(status: u16) -> CloseFrame {
    match status {
        401 => close(INVALID_CREDENTIALS, "Invalid Credentials"),
        403 => close(FORBIDDEN, "User NOT authorized to access the resource"),
        _ => close(1008, "The API is no longer available to this connection"),
    }
}

fn close(code: u16, reason: &'static str) -> CloseFrame {
    CloseFrame {
        code: CloseCode::from(code),
        reason: Utf8Bytes::from_static(reason),
    }
}

/// What one connection needs while it is relayed.
pub struct Session {
    /// Where messages are counted.
    pub counters: Counters,
    /// The limits each message from the client counts against.
    pub limits: Vec<Limit>,
    /// How the handshake is decided again.
    pub recheck: Recheck,
    /// Sizes and times.
    pub settings: WebSocketSettings,
    /// The listener's graceful shutdown: the connection closes with 1001 when it ends
    /// the listener's connections.
    pub shutdown: Option<Watcher>,
}

type Side = WebSocketStream<TokioIo<Upgraded>>;

/// How a relayed connection ends.
#[derive(Debug)]
enum Ending {
    /// The client closed it, with this frame.
    ClientClosed(Option<CloseFrame>),
    /// The backend closed it, with this frame.
    BackendClosed(Option<CloseFrame>),
    /// The client went away without closing, or broke the protocol.
    ClientGone,
    /// The backend went away without closing, or broke the protocol.
    BackendGone,
    /// A message over the size limit, from either side.
    TooBig,
    /// The gateway ends it: the client gets this frame, the backend 1001.
    Ended(CloseFrame),
}

/// Relays a connection once both sides have switched: the client's (`client`, upgraded
/// by the listener) and the backend's (`backend`, by the pooled client).
pub async fn relay(client: OnUpgrade, backend: OnUpgrade, mut session: Session) {
    let (client, backend) = match tokio::try_join!(client, backend) {
        Ok(both) => both,
        Err(err) => {
            tracing::debug!("a WebSocket connection did not switch: {err}");
            return;
        }
    };
    let frames = session.settings.frames();
    let mut client =
        WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, Some(frames)).await;
    let mut backend =
        WebSocketStream::from_raw_socket(TokioIo::new(backend), Role::Client, Some(frames)).await;
    let ending = session.pass(&mut client, &mut backend).await;
    tracing::debug!(?ending, "WebSocket connection ends");
    finish(ending, &mut client, &mut backend).await;
}

impl Session {
    /// Passes messages until one side closes or fails, or the gateway ends it.
    async fn pass(&mut self, client: &mut Side, backend: &mut Side) -> Ending {
        let every = self.settings.recheck_every;
        let mut recheck = tokio::time::interval_at(Instant::now() + every, every);
        recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let idle = tokio::time::sleep(self.settings.idle_timeout);
        tokio::pin!(idle);
        loop {
            tokio::select! {
                read = client.next() => {
                    let message = match received(read, Ending::ClientGone, Ending::ClientClosed) {
                        Ok(message) => message,
                        Err(ending) => return ending,
                    };
                    if is_data(&message)
                        && let Err(refused) = self.counters.admit(&self.limits).await
                    {
                        tracing::debug!(kind = ?refused.kind, "a WebSocket message is throttled out");
                        return Ending::Ended(close(THROTTLED_OUT, "Websocket frame throttled out"));
                    }
                    if pass_on(message, backend).await.is_err() {
                        return Ending::BackendGone;
                    }
                }
                read = backend.next() => {
                    let message = match received(read, Ending::BackendGone, Ending::BackendClosed) {
                        Ok(message) => message,
                        Err(ending) => return ending,
                    };
                    if pass_on(message, client).await.is_err() {
                        return Ending::ClientGone;
                    }
                }
                _ = recheck.tick() => {
                    if let Err(frame) = self.recheck.still_admitted().await {
                        return Ending::Ended(frame);
                    }
                    continue;
                }
                () = &mut idle => return Ending::Ended(close(1001, "Idle timeout")),
                () = shut_down(&mut self.shutdown) => {
                    return Ending::Ended(close(1001, "Going away"));
                }
            }
            idle.as_mut()
                .reset(Instant::now() + self.settings.idle_timeout);
        }
    }
}

/// Resolves once the listener's drain ends its connections; never without one.
async fn shut_down(shutdown: &mut Option<Watcher>) {
    match shutdown {
        Some(watcher) => watcher.ended().await,
        None => std::future::pending().await,
    }
}

/// Whether a message counts: text and binary ones do, control frames do not.
fn is_data(message: &Message) -> bool {
    matches!(message, Message::Text(_) | Message::Binary(_))
}

/// Sends a data message on to the other side; pings and pongs stay on their hop (each
/// side's are answered there).
async fn pass_on(message: Message, to: &mut Side) -> Result<(), WsError> {
    if is_data(&message) {
        to.send(message).await
    } else {
        Ok(())
    }
}

/// What a side's read brought: a message, or how the connection ends (`closed` with the
/// side's close frame; a message over the limit; `gone` when it failed or went away).
fn received(
    read: Option<Result<Message, WsError>>,
    gone: Ending,
    closed: fn(Option<CloseFrame>) -> Ending,
) -> Result<Message, Ending> {
    match read {
        Some(Ok(Message::Close(frame))) => Err(closed(frame)),
        Some(Ok(message)) => Ok(message),
        Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => Err(Ending::TooBig),
        Some(Err(err)) => {
            tracing::debug!("a WebSocket side failed: {err}");
            Err(gone)
        }
        None => Err(gone),
    }
}

/// Closes both sides as `ending` says; each side's failure here is only logged.
async fn finish(ending: Ending, client: &mut Side, backend: &mut Side) {
    let going_away = || Some(close(1001, "Going away"));
    let (to_client, to_backend) = match ending {
        Ending::ClientClosed(frame) => {
            // Sends tungstenite's reply to the client's close.
            let _ = client.flush().await;
            (None, Some(sendable(frame)))
        }
        Ending::BackendClosed(frame) => {
            let _ = backend.flush().await;
            (Some(sendable(frame)), None)
        }
        Ending::ClientGone => (None, Some(going_away())),
        Ending::BackendGone => (Some(Some(close(1011, "The backend went away"))), None),
        Ending::TooBig => (
            Some(Some(close(1009, "Message too big"))),
            Some(going_away()),
        ),
        Ending::Ended(frame) => (Some(Some(frame)), Some(going_away())),
    };
    if let Some(frame) = to_client {
        let _ = client.close(frame).await;
    }
    if let Some(frame) = to_backend {
        let _ = backend.close(frame).await;
    }
}

/// A close frame as it may be sent on: codes a peer may not send (1005, 1006, 1015 and
/// unassigned ones) become a close without a code.
fn sendable(frame: Option<CloseFrame>) -> Option<CloseFrame> {
    frame.filter(|frame| frame.code.is_allowed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_are_offered_and_checked() {
        let mut headers = HeaderMap::new();
        let key = offer(&mut headers);
        assert_eq!(headers[UPGRADE], "websocket");
        assert_eq!(headers[SEC_WEBSOCKET_KEY], key.as_str());
        let mut answer = HeaderMap::new();
        answer.insert(UPGRADE, HeaderValue::from_static("WebSocket"));
        let accept = derive_accept_key(key.as_bytes());
        answer.insert(
            SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(&accept).unwrap(),
        );
        assert!(accepted(&answer, &key));
        assert!(!accepted(&answer, "another key"));

        // RFC 6455's own example.
        let head = RequestHead {
            method: "GET".into(),
            path_with_query: "/chat".into(),
            headers: apim_http::packed::pack([(
                "sec-websocket-key",
                b"dGhlIHNhbXBsZSBub25jZQ==".as_slice(),
            )]),
            scheme: crate::wit_host::bindings::exports::apim::gateway::policy::Scheme::Http,
        };
        let mut backend = HeaderMap::new();
        backend.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("chat"),
        );
        let response = switching(&head, &backend).unwrap();
        assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(
            response.headers()[SEC_WEBSOCKET_ACCEPT],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(
            response.headers()[http::header::SEC_WEBSOCKET_PROTOCOL],
            "chat"
        );
    }

    #[test]
    fn refusals_close_with_wso2s_codes() {
        assert_eq!(u16::from(refusal(401).code), INVALID_CREDENTIALS);
        assert_eq!(u16::from(refusal(403).code), FORBIDDEN);
        assert_eq!(u16::from(refusal(503).code), 1008);
        let reserved = CloseFrame {
            code: CloseCode::from(1005),
            reason: Utf8Bytes::from_static(""),
        };
        assert!(sendable(Some(reserved)).is_none());
        assert!(sendable(Some(close(1000, "bye"))).is_some());
    }
}
