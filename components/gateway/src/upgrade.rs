//! WebSocket handshakes (RFC 6455 §4.1): which requests are one, the token a WebSocket
//! API also takes from the `access_token` query parameter (as WSO2 2.6 does, since a
//! browser cannot set headers on a handshake), and the query the backend gets without it.
//!
//! The component only decides; relaying the connection is the host's. Hosts that forward
//! through `wasi:http` cannot (WASI 0.2 HTTP has no upgrade) and refuse the handshake
//! ([`crate::faults::Fault::upgrade_unsupported`]).

use crate::faults::Fault;
use crate::host::{Headers, header};

/// The query parameter carrying a WebSocket API's token.
pub const ACCESS_TOKEN_PARAM: &str = "access_token";

/// Whether a request asks to upgrade to WebSocket (`Upgrade: websocket`), whatever else
/// it says; [`check_handshake`] says whether it is a valid handshake.
pub fn asks_for_websocket(headers: &Headers) -> bool {
    header(headers, "upgrade").is_some_and(|value| {
        value
            .split(',')
            .any(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
    })
}

/// A request asking for WebSocket that is a valid handshake: a `GET` whose `Connection`
/// names `upgrade`, with a `Sec-WebSocket-Key` and version 13; a 400 otherwise.
pub fn check_handshake(method: &str, headers: &Headers) -> Result<(), Fault> {
    let connection_upgrades = header(headers, "connection").is_some_and(|value| {
        value
            .split(',')
            .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
    });
    let keyed = header(headers, "sec-websocket-key").is_some_and(|key| !key.trim().is_empty());
    let version = header(headers, "sec-websocket-version").map(str::trim) == Some("13");
    if method == "GET" && connection_upgrades && keyed && version {
        Ok(())
    } else {
        Err(Fault::bad_request(
            "A WebSocket handshake is a GET with Connection: Upgrade, Upgrade: websocket, a Sec-WebSocket-Key and Sec-WebSocket-Version: 13",
        ))
    }
}

/// The token of the first `access_token` parameter of a canonical query, if any.
pub fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == ACCESS_TOKEN_PARAM)
        .map(|(_, token)| token)
        .filter(|token| !token.is_empty())
}

/// A canonical query without its `access_token` parameters (`None` when nothing is
/// left): the token never reaches the backend.
pub fn without_token(query: Option<&str>) -> Option<String> {
    let kept: Vec<&str> = query?
        .split('&')
        .filter(|pair| pair.split('=').next() != Some(ACCESS_TOKEN_PARAM))
        .collect();
    let kept = kept.join("&");
    (!kept.is_empty()).then_some(kept)
}

/// The scheme a WebSocket endpoint's handshake is sent with: `http` for `ws`, `https`
/// for `wss` (the handshake is HTTP/1.1; the host upgrades the connection).
pub fn handshake_scheme(scheme: &str) -> &str {
    match scheme {
        "ws" => "http",
        "wss" => "https",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn handshakes_are_recognised_and_checked() {
        let good = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-version", "13"),
        ]);
        assert!(asks_for_websocket(&good));
        assert!(check_handshake("GET", &good).is_ok());
        assert!(check_handshake("POST", &good).is_err());
        let unkeyed = headers(&[("connection", "upgrade"), ("upgrade", "websocket")]);
        assert!(asks_for_websocket(&unkeyed));
        assert_eq!(check_handshake("GET", &unkeyed).unwrap_err().status, 400);
        assert!(!asks_for_websocket(&headers(&[("upgrade", "h2c")])));
        assert!(!asks_for_websocket(&headers(&[])));
    }

    #[test]
    fn the_query_token_is_read_and_kept_from_the_backend() {
        assert_eq!(query_token(Some("a=1&access_token=t0k&b=2")), Some("t0k"));
        assert_eq!(query_token(Some("access_token=")), None);
        assert_eq!(query_token(Some("xaccess_token=t")), None);
        assert_eq!(query_token(None), None);
        assert_eq!(
            without_token(Some("a=1&access_token=t0k&b=2&access_token=x")).as_deref(),
            Some("a=1&b=2")
        );
        assert_eq!(without_token(Some("access_token=t0k")), None);
        assert_eq!(without_token(Some("access_token")), None);
        assert_eq!(without_token(None), None);
        assert_eq!(handshake_scheme("wss"), "https");
        assert_eq!(handshake_scheme("ws"), "http");
    }
}
