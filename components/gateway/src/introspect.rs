//! Opaque tokens (36-character UUIDs, issued to applications whose `tokenType` is not
//! `JWT`): the gateway cannot verify them offline, so it asks the control plane's
//! introspection endpoint (RFC 7662, with the gateway secret) on a token's first use and
//! remembers the answer twice: in the instance (at most [`INSTANCE_LIMIT`] tokens) and in
//! the shared store under the token's SHA-256 (never the token), so that a token's later
//! uses, on any instance or node sharing the store, cost no round trip. Neither outlives
//! the token's expiry nor [`CACHE_SECS`]; revocation is checked on every use against the
//! manifest, as for JWTs, so a cached token is refused as soon as its revocation arrives.
//!
//! What an unknown token may cost is bounded, so that tokens made up by anyone do not
//! drive the control plane one for one: a token found inactive is refused without asking
//! again for [`INACTIVE_SECS`]; at most [`INTROSPECTIONS_PER_SEC`] questions a second
//! leave this gateway (the store's counters: per node, or per fleet with Redis), and at
//! most [`CLIENT_INTROSPECTIONS_PER_SEC`] for one client address, counted before the
//! gateway's so that one flooder cannot spend the others' share; and each question waits
//! at most [`INTROSPECT_TIMEOUT_MS`], so that no more than the rate times that wait are
//! ever in flight. Uses of one token that meet at once are asked about once: the others
//! wait for that answer in the store ([`ask_once`]). Past a bound the token is neither admitted nor called invalid: 503
//! with `Retry-After`, at once, so that a real token's first use is retried.

use std::fmt::Write as _;
use std::rc::Rc;

use apim_http::expiry;
use apim_manifest::Introspection;
use apim_manifest::paths::CONTROL_PLANE_INTROSPECT;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::auth::{Audience, Claims};
use crate::host::Host;
use crate::keys::{Key, KeyMap};
use crate::sync::{self, settings};

/// At most this many opaque tokens are remembered per instance; past it the instance
/// starts over (a flood of tokens then costs round trips, never memory).
pub const INSTANCE_LIMIT: usize = 10_000;

/// Longest an introspection is trusted, seconds: WSO2's gateway key cache keeps a key
/// validation 15 minutes too. Within it a token stays admitted only while unexpired and
/// unrevoked.
pub const CACHE_SECS: u64 = 900;

/// How long a token the control plane called inactive is refused without asking again,
/// seconds (tokens are active from their issue, so a real one is never in this list).
pub const INACTIVE_SECS: u64 = 30;

/// Most introspections this gateway asks for in one second.
pub const INTROSPECTIONS_PER_SEC: i64 = 50;

/// Most introspections asked for in one second on behalf of one client address.
pub const CLIENT_INTROSPECTIONS_PER_SEC: i64 = 10;

/// Longest an introspection is waited for, milliseconds, whatever the backend timeout.
pub const INTROSPECT_TIMEOUT_MS: u64 = 2_000;

/// Why an opaque token was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Known and past its expiry.
    Expired,
    /// Unknown, expired before this gateway knew it, revoked, or not ours.
    Invalid,
    /// The control plane could not be asked or did not answer sensibly.
    Unavailable,
    /// Unknown here, and past the introspection bounds for now.
    Busy,
}

/// A token's introspection as this gateway keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Known {
    /// Trusted until then (Unix seconds): the token's expiry or [`CACHE_SECS`] after it
    /// was asked, whichever is first.
    until: i64,
    claims: Claims,
}

/// The opaque tokens an instance knows, by token.
#[derive(Default)]
pub struct OpaqueTokens {
    known: KeyMap<(i64, Rc<Claims>)>,
}

/// Whether `token` has the form of an opaque token: a UUID in its 36-character text form.
/// Only these are worth a question to the control plane.
pub fn is_opaque(token: &str) -> bool {
    let bytes = token.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

impl OpaqueTokens {
    /// The claims of the opaque `token`, presented by `client` (its address) at
    /// `now_secs`: from the instance, the store, or the control plane within its bounds
    /// (then remembered in both).
    pub fn claims(
        &mut self,
        host: &dyn Host,
        token: &str,
        client: &str,
        now_secs: i64,
    ) -> Result<Rc<Claims>, Refusal> {
        if let Some((until, claims)) = self.known.get(token) {
            if claims.exp <= now_secs {
                return Err(Refusal::Expired);
            }
            if *until > now_secs {
                return Ok(claims.clone());
            }
        }
        let store_key = digest_key(CACHE_SECS, "introspected", token);
        let known = match remembered(host, &store_key, now_secs) {
            Some(known) => known,
            None => ask_once(host, token, client, &store_key, now_secs)?,
        };
        if self.known.len() >= INSTANCE_LIMIT {
            self.known.clear();
        }
        let claims = Rc::new(known.claims);
        self.known
            .insert(Key::from(token), (known.until, claims.clone()));
        Ok(claims)
    }
}

/// What the control plane says of `token`, asked once however many instances meet it at
/// the same moment: the first to mark it asks, within the bounds, and remembers the
/// answer under `store_key` (or the token as inactive); the others wait for that answer
/// as long as an introspection may take.
fn ask_once(
    host: &dyn Host,
    token: &str,
    client: &str,
    store_key: &str,
    now_secs: i64,
) -> Result<Known, Refusal> {
    let inactive_key = digest_key(INACTIVE_SECS, "inactive", token);
    if host.kv_get(&inactive_key).ok().flatten().is_some() {
        return Err(Refusal::Invalid);
    }
    // A mark per two clock seconds, so that one a store never expires (Spin's) goes stale.
    let asking_key = digest_key(4, &format!("asking:{}", now_secs / 2), token);
    if host.kv_increment(&asking_key, 1).unwrap_or(1) > 1 {
        return wait_for_answer(host, store_key, &inactive_key, now_secs);
    }
    let asked = within_bounds(host, client, now_secs)
        .and_then(|()| ask_control_plane(host, token, now_secs));
    match &asked {
        Ok(known) => {
            if let Ok(bytes) = serde_json::to_vec(known) {
                let _ = host.kv_set(store_key, &bytes);
            }
        }
        Err(Refusal::Invalid) => {
            let _ = host.kv_set(&inactive_key, b"1");
        }
        // No answer to wait for: the next use asks again.
        Err(_) => {
            let _ = host.kv_delete(&asking_key);
        }
    }
    asked
}

/// How often a use waiting for another's introspection looks for its answer, ms.
const WAIT_POLL_MS: u64 = 20;

/// The answer another instance is getting for the token: its claims once remembered,
/// `Invalid` once it is found inactive, `Busy` when neither comes within
/// [`INTROSPECT_TIMEOUT_MS`].
fn wait_for_answer(
    host: &dyn Host,
    store_key: &str,
    inactive_key: &str,
    now_secs: i64,
) -> Result<Known, Refusal> {
    for _ in 0..INTROSPECT_TIMEOUT_MS / WAIT_POLL_MS {
        host.sleep_ms(WAIT_POLL_MS);
        if let Some(known) = remembered(host, store_key, now_secs) {
            return Ok(known);
        }
        if host.kv_get(inactive_key).ok().flatten().is_some() {
            return Err(Refusal::Invalid);
        }
    }
    Err(Refusal::Busy)
}

/// Counts one introspection for `client` and for the gateway in the second `now_secs`;
/// `Busy` past either bound (the client's first, so that its excess is not counted
/// against the others). A store that cannot count does not stop the question.
fn within_bounds(host: &dyn Host, client: &str, now_secs: i64) -> Result<(), Refusal> {
    let second = now_secs.to_string();
    let client_key = expiry::key(2, &["introspections", client, &second].join(":"));
    let gateway_key = expiry::key(2, &["introspections", &second].join(":"));
    let counted = |key: &str| host.kv_increment(key, 1).unwrap_or(0);
    if counted(&client_key) > CLIENT_INTROSPECTIONS_PER_SEC
        || counted(&gateway_key) > INTROSPECTIONS_PER_SEC
    {
        return Err(Refusal::Busy);
    }
    Ok(())
}

/// The store key of what is known of a token (`what`: its introspection, its verified
/// claims): the token's SHA-256, never the token, under a key that expires in `ttl_secs`.
pub fn digest_key(ttl_secs: u64, what: &str, token: &str) -> String {
    let mut rest = String::with_capacity(what.len() + 65);
    rest.push_str(what);
    rest.push(':');
    for byte in Sha256::digest(token.as_bytes()) {
        let _ = write!(rest, "{byte:02x}");
    }
    expiry::key(ttl_secs, &rest)
}

/// The introspection the store holds, while it may be trusted (a store that does not
/// expire keys, as Spin's, keeps stale ones: they are deleted when met).
fn remembered(host: &dyn Host, store_key: &str, now_secs: i64) -> Option<Known> {
    let bytes = host.kv_get(store_key).ok()??;
    match serde_json::from_slice::<Known>(&bytes) {
        Ok(known) if known.until > now_secs => Some(known),
        _ => {
            let _ = host.kv_delete(store_key);
            None
        }
    }
}

/// Asks the control plane about `token`: `Invalid` when it is not active, `Unavailable`
/// when there was no sensible answer. The token is never logged.
fn ask_control_plane(host: &dyn Host, token: &str, now_secs: i64) -> Result<Known, Refusal> {
    let unavailable = |reason: String| {
        eprintln!("token introspection failed: {reason}");
        Refusal::Unavailable
    };
    let secret = host.setting(settings::GATEWAY_SECRET).unwrap_or_default();
    let headers = vec![
        (
            "authorization".into(),
            format!("Bearer {secret}").into_bytes(),
        ),
        (
            "content-type".into(),
            b"application/x-www-form-urlencoded".to_vec(),
        ),
        ("accept".into(), b"application/json".to_vec()),
    ];
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("token", token)
        .finish()
        .into_bytes();
    let mut request = sync::to_control_plane(host, "POST", CONTROL_PLANE_INTROSPECT, headers, body)
        .map_err(unavailable)?;
    request.timeout_ms = request.timeout_ms.min(INTROSPECT_TIMEOUT_MS);
    let response = host
        .send(request)
        .map_err(|err| unavailable(format!("control plane unreachable: {err:?}")))?;
    if response.status != 200 {
        return Err(unavailable(format!(
            "the control plane answered {}",
            response.status
        )));
    }
    let answer: Introspection = serde_json::from_slice(&response.body)
        .map_err(|err| unavailable(format!("unreadable answer: {err}")))?;
    known_of(answer, now_secs)
}

/// What the gateway keeps of an answer: an active token's claims, trusted until its
/// expiry or [`CACHE_SECS`] from now.
fn known_of(answer: Introspection, now_secs: i64) -> Result<Known, Refusal> {
    let (true, Some(jti), Some(exp)) = (answer.active, answer.jti, answer.exp) else {
        return Err(Refusal::Invalid);
    };
    if exp <= now_secs {
        return Err(Refusal::Invalid);
    }
    let until = exp.min(now_secs.saturating_add(CACHE_SECS as i64));
    Ok(Known {
        until,
        claims: Claims {
            jti,
            exp,
            application_id: answer.application_id,
            key_type: answer.key_type,
            sub: answer.sub.or(answer.username),
            aud: answer.aud.map(Audience),
            scope: crate::auth::Scopes::of_text(answer.scope.as_deref().unwrap_or_default()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uuid_text_forms_are_opaque_tokens() {
        assert!(is_opaque("0b9ad3a4-2f6e-4c1e-9d7a-5a1f8c2e4b6d"));
        assert!(is_opaque("0B9AD3A4-2F6E-4C1E-9D7A-5A1F8C2E4B6D"));
        assert!(!is_opaque("0b9ad3a42f6e4c1e9d7a5a1f8c2e4b6d"));
        assert!(!is_opaque("0b9ad3a4-2f6e-4c1e-9d7a-5a1f8c2e4b6"));
        assert!(!is_opaque("0b9ad3a4-2f6e-4c1e-9d7a-5a1f8c2e4b6g"));
        assert!(!is_opaque("0b9ad3a4+2f6e-4c1e-9d7a-5a1f8c2e4b6d"));
        assert!(!is_opaque("header.payload.signature"));
    }

    #[test]
    fn an_answer_is_trusted_until_expiry_or_the_cache_bound() {
        let answer = |exp| Introspection {
            active: true,
            jti: Some("j".into()),
            exp: Some(exp),
            ..Introspection::default()
        };
        assert_eq!(known_of(answer(1_060), 1_000).unwrap().until, 1_060);
        let far = 1_000 + 10 * CACHE_SECS as i64;
        assert_eq!(
            known_of(answer(far), 1_000).unwrap().until,
            1_000 + CACHE_SECS as i64
        );
        assert_eq!(
            known_of(answer(1_000), 1_000).unwrap_err(),
            Refusal::Invalid
        );
        let inactive = Introspection::default();
        assert_eq!(known_of(inactive, 1_000).unwrap_err(), Refusal::Invalid);
    }
}
