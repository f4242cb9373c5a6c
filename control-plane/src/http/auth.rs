//! What a request says of its caller: HTTP Basic credentials, a bearer token, the
//! client's address. Who that is, rooms decide (`users::BasicUser`, `tokens::Caller`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::state::AppState;

/// `user:password` from an `Authorization: Basic` header.
pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// The client's address, for the throttle of failed logins.
pub struct ClientAddress(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(ClientAddress(client_address(parts, state)))
    }
}

/// The address of the request's client (see [`forwarded_client`]); unspecified when the
/// listener did not say.
pub fn client_address(parts: &Parts, state: &AppState) -> IpAddr {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
    forwarded_client(peer, &parts.headers, &state.config.trusted_proxies)
}

/// The TCP peer, or, when that is one of the trusted proxies, the last `X-Forwarded-For`
/// entry that is not (entries before it are the client's say, not the proxies').
fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|entry| entry.trim().parse::<IpAddr>().ok())
        .collect::<Vec<_>>();
    let mut address = peer;
    for entry in forwarded.into_iter().rev() {
        match entry {
            Some(ip) if trusted.contains(&ip) => address = ip,
            Some(ip) => return ip,
            // Not an address: the proxies' part of the list is broken from here on.
            None => break,
        }
    }
    address
}

/// The token of an `Authorization: Bearer` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trusted_proxies_name_the_client() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let trusted = [ip("10.0.0.1"), ip("10.0.0.2")];
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", "6.6.6.6, 192.0.2.9".parse().unwrap());
        headers.append("x-forwarded-for", "10.0.0.2".parse().unwrap());
        // A client that is no proxy says what it likes: ignored.
        assert_eq!(
            forwarded_client(ip("192.0.2.1"), &headers, &trusted),
            ip("192.0.2.1")
        );
        // Through the proxies: the last entry they did not add.
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &headers, &trusted),
            ip("192.0.2.9")
        );
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &HeaderMap::new(), &trusted),
            ip("10.0.0.1")
        );
        let mut garbled = HeaderMap::new();
        garbled.insert(
            "x-forwarded-for",
            "6.6.6.6, unknown, 10.0.0.2".parse().unwrap(),
        );
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &garbled, &trusted),
            ip("10.0.0.2")
        );
    }
}
