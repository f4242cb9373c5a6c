//! What an authorization request must be, and where its answer goes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::records::AuthorizationRequest;
use crate::http::urls;

/// Longest `state`, `nonce` or `scope` taken, bytes.
const MAX_TEXT_BYTES: usize = 1024;
/// Most resources one request may name.
const MAX_RESOURCES: usize = 8;

/// The parameters of the request's pages carry through their forms, in this order.
pub const PARAMETERS: &[&str] = &[
    "client_id",
    "redirect_uri",
    "response_type",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "nonce",
    "resource",
    "prompt",
];

/// Why a request is refused: an OAuth error code (RFC 6749 §4.1.2.1) and what it lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: &'static str,
    pub description: String,
}

impl Refusal {
    pub fn invalid_request(description: impl Into<String>) -> Self {
        Refusal {
            error: "invalid_request",
            description: description.into(),
        }
    }
}

/// Reads the request's parameters; every one but `resource` at most once (RFC 6749 §3.1).
/// Parameters it does not know are ignored, as §3.1 says.
pub fn parse(pairs: &[(String, String)]) -> Result<AuthorizationRequest, Refusal> {
    let mut request = AuthorizationRequest::default();
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in pairs {
        let Some(known) = PARAMETERS.iter().find(|p| **p == name) else {
            continue;
        };
        if *known != "resource" {
            if seen.contains(known) {
                return Err(Refusal::invalid_request(format!(
                    "{known} is given more than once"
                )));
            }
            seen.push(known);
        }
        if value.len() > MAX_TEXT_BYTES.max(urls::MAX_URL_BYTES) {
            return Err(Refusal::invalid_request(format!("{known} is too long")));
        }
        let value = value.clone();
        match *known {
            "client_id" => request.client_id = value,
            "redirect_uri" => request.redirect_uri = Some(value),
            "response_type" => request.response_type = value,
            "scope" => request.scope = value,
            "state" => request.state = Some(value),
            "code_challenge" => request.code_challenge = Some(value),
            "code_challenge_method" => request.code_challenge_method = Some(value),
            "nonce" => request.nonce = Some(value),
            "resource" => request.resources.push(value),
            _ => request.prompt = Some(value),
        }
    }
    Ok(request)
}

/// The rules a request whose client is known must follow: a code asked for, PKCE S256
/// (required of public clients, and never `plain`), resources as RFC 8707 has them.
pub fn check(request: &AuthorizationRequest, public_client: bool) -> Result<(), Refusal> {
    if request.response_type != "code" {
        return Err(Refusal {
            error: "unsupported_response_type",
            description: "Only response_type=code is supported".into(),
        });
    }
    for (name, value) in [
        ("scope", Some(&request.scope)),
        ("state", request.state.as_ref()),
        ("nonce", request.nonce.as_ref()),
    ] {
        if value.is_some_and(|v| v.len() > MAX_TEXT_BYTES) {
            return Err(Refusal::invalid_request(format!(
                "{name} is longer than {MAX_TEXT_BYTES} bytes"
            )));
        }
    }
    check_challenge(request, public_client)?;
    if request.resources.len() > MAX_RESOURCES
        || request.resources.iter().any(|r| !urls::is_resource(r))
    {
        return Err(Refusal {
            error: "invalid_target",
            description: format!(
                "resource must be at most {MAX_RESOURCES} absolute http(s) URLs without a fragment"
            ),
        });
    }
    match request.prompt.as_deref() {
        None | Some("none" | "login" | "consent" | "login consent" | "consent login") => Ok(()),
        Some(_) => Err(Refusal::invalid_request(
            "prompt must be none, login or consent",
        )),
    }
}

/// PKCE (RFC 7636): `S256` only, a challenge of 43 to 128 unreserved characters.
fn check_challenge(request: &AuthorizationRequest, public_client: bool) -> Result<(), Refusal> {
    let Some(challenge) = &request.code_challenge else {
        if request.code_challenge_method.is_some() {
            return Err(Refusal::invalid_request(
                "code_challenge_method without code_challenge",
            ));
        }
        return if public_client {
            Err(Refusal::invalid_request(
                "A public client must send a PKCE code_challenge (S256)",
            ))
        } else {
            Ok(())
        };
    };
    if request.code_challenge_method.as_deref() != Some("S256") {
        return Err(Refusal::invalid_request(
            "code_challenge_method must be S256 (plain is not accepted)",
        ));
    }
    if !is_pkce_text(challenge) {
        return Err(Refusal::invalid_request(
            "code_challenge must be 43 to 128 unreserved characters",
        ));
    }
    Ok(())
}

/// Whether `text` has PKCE's form: 43 to 128 of `[A-Za-z0-9-._~]` (RFC 7636 §4.1).
fn is_pkce_text(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `verifier` is the one `challenge` was made from (S256), compared in constant time.
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    if !is_pkce_text(verifier) {
        return false;
    }
    let made = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    made.as_bytes().ct_eq(challenge.as_bytes()).into()
}

/// Whether the prompt asks for `what` (`login`, `consent`, `none`).
pub fn prompts(request: &AuthorizationRequest, what: &str) -> bool {
    request
        .prompt
        .as_deref()
        .is_some_and(|p| p.split_whitespace().any(|p| p == what))
}

/// `redirect_uri` with `params` added to its query (RFC 6749 §4.1.2: its own query kept).
pub fn redirect_to(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(params);
            url.to_string()
        }
        Err(_) => redirect_uri.to_string(),
    }
}

/// The request's parameters again, as the pages' forms carry them (`prompt` left out once
/// a sign-in has answered it).
pub fn as_pairs(request: &AuthorizationRequest, keep_prompt: bool) -> Vec<(&'static str, String)> {
    let mut pairs = vec![
        ("client_id", request.client_id.clone()),
        ("response_type", request.response_type.clone()),
        ("scope", request.scope.clone()),
    ];
    let optional = [
        ("redirect_uri", &request.redirect_uri),
        ("state", &request.state),
        ("code_challenge", &request.code_challenge),
        ("code_challenge_method", &request.code_challenge_method),
        ("nonce", &request.nonce),
    ];
    pairs.extend(
        optional
            .into_iter()
            .filter_map(|(name, value)| Some((name, value.clone()?))),
    );
    pairs.extend(request.resources.iter().map(|r| ("resource", r.clone())));
    if keep_prompt && let Some(prompt) = &request.prompt {
        pairs.push(("prompt", prompt.clone()));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn request(extra: &[(&str, &str)]) -> Result<(), Refusal> {
        let mut list = vec![("client_id", "c"), ("response_type", "code")];
        list.extend_from_slice(extra);
        check(&parse(&pairs(&list))?, true)
    }

    #[test]
    fn pkce_s256_is_required_of_public_clients_and_plain_is_refused() {
        request(&[
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ])
        .unwrap();
        assert_eq!(request(&[]).unwrap_err().error, "invalid_request");
        let plain = request(&[
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "plain"),
        ]);
        assert!(plain.unwrap_err().description.contains("S256"));
        assert!(request(&[("code_challenge", CHALLENGE)]).is_err());
        assert!(
            request(&[
                ("code_challenge", "short"),
                ("code_challenge_method", "S256")
            ])
            .is_err()
        );
        let confidential = parse(&pairs(&[("client_id", "c"), ("response_type", "code")])).unwrap();
        check(&confidential, false).unwrap();
        // RFC 7636 appendix B's example.
        assert!(verifier_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            CHALLENGE
        ));
        assert!(!verifier_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx",
            CHALLENGE
        ));
        assert!(!verifier_matches(CHALLENGE, CHALLENGE));
    }

    #[test]
    fn parameters_are_given_once_and_resources_are_urls() {
        let twice = parse(&pairs(&[("client_id", "a"), ("client_id", "b")]));
        assert!(twice.unwrap_err().description.contains("more than once"));
        let with = |resource| {
            request(&[
                ("code_challenge", CHALLENGE),
                ("code_challenge_method", "S256"),
                ("resource", resource),
            ])
        };
        with("https://gw.example/pizza/1.0.0").unwrap();
        assert_eq!(with("urn:pizza").unwrap_err().error, "invalid_target");
        assert_eq!(with("https://gw/x#y").unwrap_err().error, "invalid_target");
        let token = request(&[("response_type", "token")]);
        assert!(token.is_err());
        assert_eq!(
            check(
                &parse(&pairs(&[("client_id", "c"), ("response_type", "token")])).unwrap(),
                false
            )
            .unwrap_err()
            .error,
            "unsupported_response_type"
        );
    }

    #[test]
    fn answers_keep_the_redirect_uris_own_query() {
        assert_eq!(
            redirect_to("https://app/cb?x=1", &[("code", "a b"), ("state", "s")]),
            "https://app/cb?x=1&code=a+b&state=s"
        );
    }
}
