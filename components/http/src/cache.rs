//! Cached answers as the store keeps them, shared by the gateway component (which looks
//! them up, and stores them when it forwards itself) and edge-gateway (which stores what
//! it forwards): what may be kept for others, and which request headers an answer varies on.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::{Headers, Response, header};

/// Largest answer kept, bytes of body.
pub const MAX_CACHED_BODY_BYTES: usize = 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Entry {
    expires_ms: i64,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// The request headers the answer varies on (lower-case) and the values it was made for.
    #[serde(default)]
    vary: Vec<(String, Option<String>)>,
}

/// Whether an answer with this status and these headers may be kept for later callers:
/// a 200, not private, not to be stored or revalidated, setting no cookie, not varying
/// on `*` or on credentials, and not larger than [`MAX_CACHED_BODY_BYTES`] when it says.
pub fn storable(status: u16, headers: &Headers) -> bool {
    status == 200
        && shareable(headers)
        && vary_names(headers).is_some()
        && crate::content_length(headers).is_none_or(|n| n <= MAX_CACHED_BODY_BYTES)
}

/// The stored form of `response` (to a request with `request` headers), fresh for
/// `ttl_secs` from `now_ms`; `None` when it may not be kept.
pub fn encode(
    response: &Response,
    request: &Headers,
    ttl_secs: u64,
    now_ms: i64,
) -> Option<Vec<u8>> {
    if ttl_secs == 0
        || !storable(response.status, &response.headers)
        || response.body.len() > MAX_CACHED_BODY_BYTES
    {
        return None;
    }
    let vary = vary_names(&response.headers)?;
    let entry = Entry {
        expires_ms: now_ms.saturating_add((ttl_secs as i64).saturating_mul(1000)),
        status: response.status,
        headers: response
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), STANDARD.encode(v)))
            .collect(),
        body: STANDARD.encode(&response.body),
        vary: vary
            .into_iter()
            .map(|name| {
                let value = header(request, &name).map(str::to_string);
                (name, value)
            })
            .collect(),
    };
    // Sized up front: grown by doubling, a large answer's buffer would be up to twice its
    // length, and the key-value store then copies it into one of its own length.
    let mut encoded = Vec::with_capacity(encoded_size_hint(&entry));
    serde_json::to_writer(&mut encoded, &entry).ok()?;
    Some(encoded)
}

/// A little more than the JSON of `entry` takes: its strings, plus room for names,
/// quotes, separators and escapes.
fn encoded_size_hint(entry: &Entry) -> usize {
    let headers: usize = entry
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len() + 16)
        .sum();
    let vary: usize = entry
        .vary
        .iter()
        .map(|(n, v)| 2 * (n.len() + v.as_ref().map_or(4, String::len)) + 16)
        .sum();
    entry.body.len() + headers + vary + 128
}

/// What a stored answer holds for a request with `request` headers at `now_ms`.
pub enum Lookup {
    /// The answer.
    Fresh(Response),
    /// Past its time: to be removed.
    Expired,
    /// Made for other values of the headers it varies on, or unreadable.
    Miss,
}

/// Reads a stored answer for a request with these headers.
pub fn decode(bytes: &[u8], request: &Headers, now_ms: i64) -> Lookup {
    let Ok(entry) = serde_json::from_slice::<Entry>(bytes) else {
        return Lookup::Miss;
    };
    if entry.expires_ms <= now_ms {
        return Lookup::Expired;
    }
    let same_variant = entry
        .vary
        .iter()
        .all(|(name, value)| header(request, name) == value.as_deref());
    let headers = entry
        .headers
        .into_iter()
        .map(|(n, v)| Some((n, STANDARD.decode(v).ok()?)))
        .collect::<Option<Headers>>();
    match (same_variant, headers, STANDARD.decode(entry.body)) {
        (true, Some(headers), Ok(body)) => Lookup::Fresh(Response {
            status: entry.status,
            headers,
            body,
        }),
        _ => Lookup::Miss,
    }
}

/// Whether an answer may be kept for others: not private, not to be stored or
/// revalidated, setting no cookie.
fn shareable(headers: &Headers) -> bool {
    let private = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("cache-control"))
        .filter_map(|(_, value)| crate::text(value))
        .flat_map(|value| value.split(','))
        .map(|directive| directive.split('=').next().unwrap_or_default().trim())
        .any(|directive| {
            ["private", "no-store", "no-cache"]
                .iter()
                .any(|d| d.eq_ignore_ascii_case(directive))
        });
    !private
        && !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
}

/// The request headers an answer varies on, lower-case; `None` when it cannot be cached
/// (`Vary: *`, or varying on credentials, which the gateway replaces).
fn vary_names(headers: &Headers) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for (_, value) in headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("vary"))
    {
        for name in String::from_utf8_lossy(value).split(',') {
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "" => {}
                "*" | "authorization" | "cookie" => return None,
                _ => names.push(name),
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_answer_holds_little_more_than_its_length() {
        let answer = Response {
            status: 200,
            headers: headers(&[("content-type", "application/json"), ("vary", "Accept")]),
            body: vec![b'x'; 64 * 1024],
        };
        let request = headers(&[("accept", "application/json")]);
        let encoded = encode(&answer, &request, 60, 0).unwrap();
        assert!(
            encoded.capacity() <= encoded.len() + 1024,
            "{} bytes in {}",
            encoded.len(),
            encoded.capacity()
        );
        assert!(matches!(decode(&encoded, &request, 1), Lookup::Fresh(_)));
    }

    fn headers(list: &[(&str, &str)]) -> Headers {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn private_answers_are_not_shared() {
        assert!(shareable(&headers(&[(
            "cache-control",
            "public, max-age=60"
        )])));
        assert!(!shareable(&headers(&[(
            "Cache-Control",
            "max-age=60, Private"
        )])));
        assert!(!shareable(&headers(&[("cache-control", "no-store")])));
        assert!(!shareable(&headers(&[("cache-control", "no-cache=\"x\"")])));
        assert!(!shareable(&headers(&[("set-cookie", "s=1")])));
        assert!(!storable(404, &headers(&[])));
        assert!(!storable(200, &headers(&[("content-length", "2000000")])));
    }

    #[test]
    fn vary_names_the_request_headers() {
        assert_eq!(
            vary_names(&headers(&[
                ("vary", "Accept, X-Tenant"),
                ("Vary", "origin")
            ])),
            Some(vec!["accept".into(), "x-tenant".into(), "origin".into()])
        );
        assert_eq!(vary_names(&headers(&[("vary", "*")])), None);
        assert_eq!(vary_names(&headers(&[("vary", "Authorization")])), None);
        assert_eq!(vary_names(&headers(&[])), Some(vec![]));
    }

    #[test]
    fn answers_come_back_for_their_variant_until_they_expire() {
        let answer = Response::new(200, "text/plain", "hi").with_header("vary", "Accept");
        let english = headers(&[("accept", "text/en")]);
        let stored = encode(&answer, &english, 60, 1_000).unwrap();
        assert!(matches!(decode(&stored, &english, 2_000), Lookup::Fresh(r) if r == answer));
        assert!(matches!(
            decode(&stored, &headers(&[]), 2_000),
            Lookup::Miss
        ));
        assert!(matches!(decode(&stored, &english, 61_000), Lookup::Expired));
        assert!(matches!(decode(b"junk", &english, 0), Lookup::Miss));
        let private = answer.clone().with_header("cache-control", "private");
        assert!(encode(&private, &english, 60, 0).is_none());
    }
}
