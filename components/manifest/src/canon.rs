//! The canonical form of a request target: the one reading of a path and query that
//! routing, template matching, authorization, throttling, the cache and the backend all
//! share, so that no backend can read a request differently from how it was authorized.
//!
//! The path is parsed once (RFC 3986 §6.2.2): percent-escapes are decoded, empty segments
//! (`//`) are merged, and what must never be guessed is refused: an encoded `/` or `\`
//! (or a raw `\`, which some servers read as `/`), dot segments raw or encoded, control
//! characters and NUL, escapes that are not two hex digits, text that is not UTF-8 once
//! decoded, and over-long paths. The canonical path re-encodes each decoded segment with
//! [`SEGMENT_ENCODED`]: unreserved characters and a few harmless sub-delimiters go raw,
//! everything else (`;` above all, which Java servers cut path parameters at) as an
//! upper-case escape, so a backend decoding it gets exactly the segments that were matched.
//!
//! The query keeps its meaning byte for byte (`+`, `&`, `=` and escapes of reserved
//! characters are left as they are); only unreserved escapes are decoded and escapes
//! upper-cased, so equal queries read alike (for the cache key too).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Longest path accepted, in bytes as received.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest query accepted, in bytes as received.
pub const MAX_QUERY_BYTES: usize = 16 * 1024;

/// Bytes of a decoded path segment that the canonical path carries as escapes: all but
/// the unreserved characters and `! $ ' ( ) * , = : @ &`.
pub const SEGMENT_ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'!')
    .remove(b'$')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b',')
    .remove(b'=')
    .remove(b':')
    .remove(b'@')
    .remove(b'&');

/// Why a request target has no canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The path does not start with `/`.
    NotAbsolute,
    /// The path or the query is longer than accepted.
    TooLong,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// An encoded `/` or `\`, or a raw `\`.
    Separator,
    /// A `.` or `..` segment, raw or encoded.
    DotSegment,
    /// NUL or another control character, raw or encoded, in the path.
    ControlCharacter,
    /// A path segment that is not UTF-8 once decoded.
    InvalidUtf8,
}

impl Rejection {
    /// What is wrong, for the client.
    pub fn describe(self) -> &'static str {
        match self {
            Self::NotAbsolute => "The request path must start with '/'",
            Self::TooLong => "The request path or query is too long",
            Self::BadEscape => "The request target has a malformed percent-escape",
            Self::Separator => "The request path has an encoded '/' or a '\\'",
            Self::DotSegment => "The request path has a '.' or '..' segment",
            Self::ControlCharacter => "The request path has a control character",
            Self::InvalidUtf8 => "The request path is not UTF-8 once decoded",
        }
    }
}

/// A request target in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The canonical path: `/` alone, or `/`-separated encoded segments, with a trailing
    /// `/` when the request had one.
    pub path: String,
    /// The canonical query without its `?`; `None` when absent or empty.
    pub query: Option<String>,
}

impl Target {
    /// The canonical form of a request's path and query (`path?query`).
    pub fn parse(path_with_query: &str) -> Result<Self, Rejection> {
        let (path, query) = match path_with_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_with_query, None),
        };
        Ok(Target {
            path: canonical_path(path)?,
            query: query
                .map(canonical_query)
                .transpose()?
                .filter(|q| !q.is_empty()),
        })
    }

    /// `rest` (a part of [`Target::path`]) followed by `?` and the query, if any.
    pub fn with_query(&self, rest: &str) -> String {
        match &self.query {
            Some(query) => apim_http::joined([rest, "?", query.as_str()]),
            None => rest.to_string(),
        }
    }
}

/// The path and query a mediation set for after the endpoint's URL (`REST_URL_POSTFIX`,
/// or a tenant's policy), as the backend gets it: empty, or `/` or `?` first and made
/// canonical; `None` when it has no canonical form (it may come from the client: a
/// header, the query, the body).
pub fn backend_postfix(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some(String::new());
    }
    let (rooted, query_only) = match path.strip_prefix('?') {
        Some(query) => (apim_http::joined(["/?", query]), true),
        None if path.starts_with('/') => (path.to_string(), false),
        None => return None,
    };
    let target = Target::parse(&rooted).ok()?;
    Some(match (query_only, &target.query) {
        (true, Some(query)) => apim_http::joined(["?", query.as_str()]),
        (true, None) => String::new(),
        (false, _) => target.with_query(&target.path),
    })
}

/// The canonical form of a path (see the module's documentation).
pub fn canonical_path(path: &str) -> Result<String, Rejection> {
    if is_canonical(path) {
        return Ok(path.to_owned());
    }
    canonicalise(path)
}

/// Whether `path` is its own canonical form, as most requests' paths are: within the
/// bound, absolute, no empty segment but a trailing one, no dot segment, and every other
/// byte one that [`SEGMENT_ENCODED`] leaves raw (so nothing to decode, refuse or escape).
/// Decoding and re-encoding such a path took a tenth of the component's instructions per
/// request.
fn is_canonical(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    // An empty segment other than the last is a `//` somewhere in the path.
    path.len() <= MAX_PATH_BYTES
        && !path.as_bytes().windows(2).any(|pair| pair == b"//")
        && rest.as_bytes().split(|&byte| byte == b'/').all(|segment| {
            !matches!(segment, b"." | b"..") && segment.iter().all(|&byte| stays_raw(byte))
        })
}

/// Whether [`SEGMENT_ENCODED`] leaves a byte raw.
fn stays_raw(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~!$'()*,=:@&".contains(&byte)
}

/// [`canonical_path`] of a path that is not its own canonical form.
fn canonicalise(path: &str) -> Result<String, Rejection> {
    if path.len() > MAX_PATH_BYTES {
        return Err(Rejection::TooLong);
    }
    let rest = path.strip_prefix('/').ok_or(Rejection::NotAbsolute)?;
    let mut canonical = String::with_capacity(path.len());
    let mut trailing_slash = false;
    let mut decoded = Vec::new();
    for segment in rest.split('/') {
        if segment.is_empty() {
            // `//` merges; an empty last segment is the trailing slash.
            trailing_slash = true;
            continue;
        }
        trailing_slash = false;
        decoded.clear();
        decode_segment(segment, &mut decoded)?;
        let text = apim_http::text(&decoded).ok_or(Rejection::InvalidUtf8)?;
        if text == "." || text == ".." {
            return Err(Rejection::DotSegment);
        }
        canonical.push('/');
        canonical.extend(utf8_percent_encode(text, SEGMENT_ENCODED));
    }
    if canonical.is_empty() || trailing_slash {
        canonical.push('/');
    }
    // Escaping can make a path longer than it came: the bound holds for what is forwarded
    // too (and so a canonical path is its own canonical form).
    if canonical.len() > MAX_PATH_BYTES {
        return Err(Rejection::TooLong);
    }
    Ok(canonical)
}

/// Decodes one raw path segment into `out`, refusing separators and control characters.
fn decode_segment(segment: &str, out: &mut Vec<u8>) -> Result<(), Rejection> {
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let byte = match bytes[i] {
            b'%' => {
                let value = escape_at(bytes, i)?;
                i += 3;
                if value == b'/' {
                    return Err(Rejection::Separator);
                }
                value
            }
            raw => {
                i += 1;
                raw
            }
        };
        if byte == b'\\' {
            return Err(Rejection::Separator);
        }
        if byte.is_ascii_control() {
            return Err(Rejection::ControlCharacter);
        }
        out.push(byte);
    }
    Ok(())
}

/// The byte the escape at `bytes[i]` (a `%`) stands for.
fn escape_at(bytes: &[u8], i: usize) -> Result<u8, Rejection> {
    let hex = |b: u8| (b as char).to_digit(16);
    match (bytes.get(i + 1).copied(), bytes.get(i + 2).copied()) {
        (Some(high), Some(low)) => match (hex(high), hex(low)) {
            (Some(high), Some(low)) => Ok((high * 16 + low) as u8),
            _ => Err(Rejection::BadEscape),
        },
        _ => Err(Rejection::BadEscape),
    }
}

/// Whether a byte is unreserved (RFC 3986 §2.3).
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Whether a byte may stand raw in a query (RFC 3986 §3.4: pchar, `/` and `?`).
fn is_query_char(byte: u8) -> bool {
    is_unreserved(byte)
        || matches!(
            byte,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
                | b'?'
        )
}

/// The canonical form of a query: escapes of unreserved characters decoded, other escapes
/// upper-cased, bytes a query may not carry raw escaped; everything else as it was.
pub fn canonical_query(query: &str) -> Result<String, Rejection> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(Rejection::TooLong);
    }
    let bytes = query.as_bytes();
    let mut canonical = String::with_capacity(query.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let value = escape_at(bytes, i)?;
                i += 3;
                if is_unreserved(value) {
                    canonical.push(value as char);
                } else {
                    push_escape(&mut canonical, value);
                }
            }
            raw => {
                i += 1;
                if raw.is_ascii_control() {
                    return Err(Rejection::ControlCharacter);
                }
                if is_query_char(raw) {
                    canonical.push(raw as char);
                } else {
                    push_escape(&mut canonical, raw);
                }
            }
        }
    }
    if canonical.len() > MAX_QUERY_BYTES {
        return Err(Rejection::TooLong);
    }
    Ok(canonical)
}

fn push_escape(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(HEX[usize::from(byte >> 4)] as char);
    out.push(HEX[usize::from(byte & 15)] as char);
}

/// The text of a canonical path segment (its escapes decoded); `None` if `segment` is not
/// canonical.
pub fn decode(segment: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !segment.contains('%') {
        return Some(segment.into());
    }
    let mut bytes = Vec::with_capacity(segment.len());
    decode_segment(segment, &mut bytes).ok()?;
    String::from_utf8(bytes).ok().map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(raw: &str) -> Result<String, Rejection> {
        canonical_path(raw)
    }

    #[test]
    fn the_raw_bytes_are_those_the_segment_set_leaves_raw() {
        for byte in 0..=u8::MAX {
            let raw = byte.is_ascii()
                && utf8_percent_encode(&char::from(byte).to_string(), SEGMENT_ENCODED)
                    .to_string()
                    .len()
                    == 1;
            assert_eq!(stays_raw(byte), raw, "byte {byte:#04x}");
        }
    }

    /// Every path of up to five characters from an alphabet of separators, dots, escapes,
    /// refused and non-ASCII characters: the shortcut takes only paths the full reading
    /// leaves as they are, and both read every path alike.
    #[test]
    fn paths_taken_as_canonical_are_those_the_full_reading_leaves_alone() {
        let alphabet = ["/", ".", "a", "%", "2", "f", ";", "\\", "é", "\t"];
        let mut paths = vec![String::new()];
        let mut taken = 0;
        for _ in 0..5 {
            paths = paths
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            for raw in &paths {
                let full = canonicalise(raw);
                if is_canonical(raw) {
                    assert_eq!(full.as_deref(), Ok(raw.as_str()), "{raw:?}");
                    taken += 1;
                }
                assert_eq!(canonical_path(raw), full, "{raw:?}");
            }
        }
        assert!(taken > 500, "the shortcut takes ordinary paths ({taken})");
        assert!(is_canonical("/bench/v1.0.0/echo"));
        assert!(is_canonical("/"));
        assert!(is_canonical("/a/"));
        assert!(!is_canonical(&format!("/{}", "a".repeat(MAX_PATH_BYTES))));
    }

    #[test]
    fn unreserved_escapes_decode_and_slashes_merge() {
        assert_eq!(path("/devs/%61dmin").unwrap(), "/devs/admin");
        assert_eq!(path("/devs//admin").unwrap(), "/devs/admin");
        assert_eq!(path("//devs///admin//").unwrap(), "/devs/admin/");
        assert_eq!(path("/").unwrap(), "/");
        assert_eq!(path("//").unwrap(), "/");
        assert_eq!(path("/a/").unwrap(), "/a/");
        assert_eq!(path("/%7Euser/a.b").unwrap(), "/~user/a.b");
        assert_eq!(path("/x:y@z,1=2").unwrap(), "/x:y@z,1=2");
    }

    #[test]
    fn what_backends_might_read_otherwise_is_escaped() {
        // Java servers cut `;...` off a segment: it travels escaped.
        assert_eq!(path("/devs/admin;x=1").unwrap(), "/devs/admin%3Bx=1");
        assert_eq!(path("/devs/a%3bb").unwrap(), "/devs/a%3Bb");
        assert_eq!(path("/a%20b/%c3%a9").unwrap(), "/a%20b/%C3%A9");
        assert_eq!(path("/a+b/%2B").unwrap(), "/a%2Bb/%2B");
        assert_eq!(path("/a%3Fb%23c%25").unwrap(), "/a%3Fb%23c%25");
        assert_eq!(path("/caf\u{e9}").unwrap(), "/caf%C3%A9");
    }

    #[test]
    fn ambiguous_paths_are_refused() {
        use Rejection::*;
        for (raw, why) in [
            ("/devs/..%2Fsecure", Separator),
            ("/devs/..%2fsecure", Separator),
            ("/devs/a%5Cb", Separator),
            ("/devs/a\\b", Separator),
            ("/devs/..", DotSegment),
            ("/devs/.", DotSegment),
            ("/devs/%2e%2e", DotSegment),
            ("/devs/%2E.", DotSegment),
            ("/devs/.%2e/x", DotSegment),
            ("/devs/%00", ControlCharacter),
            ("/devs/a%0d%0aX: y", ControlCharacter),
            ("/devs/a\u{7f}", ControlCharacter),
            ("/devs/%zz", BadEscape),
            ("/devs/%4", BadEscape),
            ("/devs/%", BadEscape),
            ("/devs/%ff", InvalidUtf8),
            ("/devs/%c3", InvalidUtf8),
            ("devs", NotAbsolute),
            ("", NotAbsolute),
        ] {
            assert_eq!(path(raw), Err(why), "{raw}");
        }
        assert_eq!(
            path(&format!("/{}", "a".repeat(MAX_PATH_BYTES))),
            Err(TooLong)
        );
        assert!(path(&format!("/{}", "a".repeat(MAX_PATH_BYTES - 1))).is_ok());
        // Found by fuzzing: what escaping lengthens past the bound is refused too.
        assert_eq!(
            path(&format!("/{}", "{".repeat(MAX_PATH_BYTES / 2))),
            Err(TooLong)
        );
        assert_eq!(
            canonical_query(&"{".repeat(MAX_QUERY_BYTES / 2)),
            Err(TooLong)
        );
        // Dots inside a segment are ordinary text.
        assert_eq!(path("/a/..b/.c./...").unwrap(), "/a/..b/.c./...");
    }

    #[test]
    fn queries_keep_their_meaning() {
        let q = |raw| canonical_query(raw);
        assert_eq!(q("a=1&b=%2f%41+x").unwrap(), "a=1&b=%2FA+x");
        assert_eq!(q("path=a%2Fb&x=%3D").unwrap(), "path=a%2Fb&x=%3D");
        assert_eq!(q("a b=\"c\"").unwrap(), "a%20b=%22c%22");
        assert_eq!(q("text=%0A").unwrap(), "text=%0A");
        assert_eq!(q("a=%g1"), Err(Rejection::BadEscape));
        assert_eq!(q("a=\n"), Err(Rejection::ControlCharacter));
        let target = Target::parse("/p/%61?x=%61&y").unwrap();
        assert_eq!(
            (target.path.as_str(), target.query.as_deref()),
            ("/p/a", Some("x=a&y"))
        );
        assert_eq!(Target::parse("/p?").unwrap().query, None);
        assert_eq!(target.with_query("/a"), "/a?x=a&y");
    }

    #[test]
    fn canonical_segments_decode() {
        assert_eq!(decode("admin").unwrap(), "admin");
        assert_eq!(decode("a%3Bb").unwrap(), "a;b");
        assert_eq!(decode("%C3%A9").unwrap(), "\u{e9}");
        assert!(decode("%2F").is_none());
    }

    #[test]
    fn canonical_paths_are_fixed_points() {
        for raw in ["/devs/%61dmin;x", "/a%20b//c/", "/%C3%A9/x:y", "/"] {
            let once = path(raw).unwrap();
            assert_eq!(path(&once).unwrap(), once);
        }
    }

    /// How a lenient backend reads a path: `;` cuts path parameters off a raw segment,
    /// every escape is decoded, `\` and decoded `/` separate segments, empty and dot
    /// segments are resolved.
    fn lenient_backend_segments(path: &str) -> Vec<String> {
        let mut segments: Vec<String> = Vec::new();
        for raw in path.split('/') {
            let raw = raw.split(';').next().unwrap_or_default();
            let decoded = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
            for part in decoded.split(['/', '\\']) {
                match part {
                    "" | "." => {}
                    ".." => {
                        segments.pop();
                    }
                    part => segments.push(part.to_string()),
                }
            }
        }
        segments
    }

    /// Whether the segments a backend reads fall under a template.
    fn covers(template: &[crate::Segment], segments: &[String]) -> bool {
        let mut parts = segments.iter();
        for segment in template {
            match segment {
                crate::Segment::Rest => return true,
                crate::Segment::Literal(text) => match parts.next() {
                    Some(part) if part.eq_ignore_ascii_case(text) => {}
                    _ => return false,
                },
                crate::Segment::Param => {
                    if parts.next().is_none() {
                        return false;
                    }
                }
            }
        }
        parts.next().is_none()
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        const TEMPLATES: [&str; 6] = [
            "/devs/{username}",
            "/devs/admin",
            "/devs/{username}/repos",
            "/files/*",
            "/",
            "/a;b/{x}",
        ];

        /// Raw paths built from the pieces attacks are made of.
        fn raw_path() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                Just("/".to_string()),
                Just("//".to_string()),
                Just("devs".to_string()),
                Just("admin".to_string()),
                Just("ADMIN".to_string()),
                Just("repos".to_string()),
                Just("files".to_string()),
                Just(".".to_string()),
                Just("..".to_string()),
                Just(";".to_string()),
                Just("\\".to_string()),
                Just("%2e".to_string()),
                Just("%2F".to_string()),
                Just("%5c".to_string()),
                Just("%61".to_string()),
                Just("%3B".to_string()),
                Just("%25".to_string()),
                Just("%00".to_string()),
                Just("%c3%a9".to_string()),
                Just("%".to_string()),
                "[a-zA-Z0-9._~:@!$&'()*+,=-]{1,4}",
            ];
            proptest::collection::vec(piece, 0..12)
                .prop_map(|pieces| format!("/{}", pieces.concat()))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4_000))]

            /// Any path that matches a template forwards a path the template covers, as
            /// even a lenient backend reads it; and canonical paths are fixed points.
            #[test]
            fn matched_paths_forward_what_was_matched(raw in raw_path()) {
                if let Ok(canonical) = canonical_path(&raw) {
                    prop_assert_eq!(canonical_path(&canonical), Ok(canonical.clone()));
                    let backend = lenient_backend_segments(&canonical);
                    for template in TEMPLATES {
                        let segments = crate::compile_template(template);
                        if crate::matches(&segments, &canonical) {
                            prop_assert!(
                                covers(&segments, &backend),
                                "{} matched {} but a backend reads {:?}", raw, template, backend
                            );
                        }
                    }
                }
            }

            /// Whatever the input, parsing never panics and a query stays one query.
            #[test]
            fn any_target_parses_or_is_refused(raw in "\\PC{0,64}") {
                if let Ok(target) = Target::parse(&raw) {
                    prop_assert!(target.path.starts_with('/'));
                    prop_assert!(!target.path.contains(['?', '#', '\\']));
                    if let Some(query) = &target.query {
                        prop_assert!(!query.contains('#'));
                    }
                }
            }
        }
    }
}
