//! Bearer tokens: JWTs by their EdDSA signatures against the manifest's keys, opaque
//! tokens by the control plane's introspection ([`crate::introspect`]); then expiry,
//! revocation and the application's subscription, the same for both. Verified tokens are
//! remembered by the instance, and in the shared store under the token's SHA-256 (never
//! the token) with the key that verified it, so that a fresh instance (Spin's, one per
//! request) skips the signature check of a token any instance has verified. A remembered
//! token counts only while the manifest still holds that key and accepts its issuer, until
//! its expiry and at most [`MEMO_SECS`]; its revocation is checked on every use, as for
//! every token.
//! A token issued for a resource (RFC 8707) is admitted only to the API its audience names
//! ([`crate::audience`]).

use std::fmt;
use std::rc::Rc;

use apim_manifest::{ApiRoute, Application, Subscription, TokenKey};
use jsonwebtoken::{Algorithm, Validation};
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::audience::{self, Addressed};
use crate::faults::Fault;
use crate::host::Host;
use crate::introspect::{self, OpaqueTokens, Refusal};
use crate::keys::{Key, KeyMap};
use crate::view::{MetaIndex, View};

/// At most this many verified tokens are remembered per instance.
const TOKEN_CACHE_LIMIT: usize = 10_000;

/// Longest a token verified by one instance is taken on trust by the others, seconds
/// (its store entry's lifetime; a store that does not expire keys, as Spin's, has stale
/// entries deleted when met).
pub const MEMO_SECS: u64 = 900;

/// The claims the gateway reads (of a JWT, or of an opaque token's introspection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// Token id.
    pub jti: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// The application of a consumer-key token.
    #[serde(default)]
    pub application_id: Option<String>,
    /// PRODUCTION or SANDBOX.
    #[serde(default)]
    pub key_type: Option<String>,
    /// The end user (the application's owner for client credentials).
    #[serde(default)]
    pub sub: Option<String>,
    /// The resources the token was issued for (RFC 8707); `None` for a token issued
    /// without one, which every API its application subscribes to takes.
    #[serde(default)]
    pub aud: Option<Audience>,
    /// Its scopes: read from JSON's space-separated `scope`.
    #[serde(default)]
    pub scope: Scopes,
}

/// The scope an application's own tokens carry (WSO2's `APPLICATION` user type).
pub const APPLICATION_SCOPE: &str = "am_application_scope";

/// A token's scopes. Read from a token's JSON as its space-separated `scope`; from what
/// the gateway wrote itself as the list it wrote (postcard memos, JSON of introspected
/// tokens), or as the flag of application tokens written before scopes were kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Scopes(Vec<String>);

impl Scopes {
    /// The scopes of a space-separated `scope`.
    pub fn of_text(text: &str) -> Self {
        Scopes(text.split_whitespace().map(str::to_string).collect())
    }

    /// Whether it holds `scope`.
    pub fn has(&self, scope: &str) -> bool {
        self.0.iter().any(|held| held == scope)
    }

    /// Whether it is an application's own token (client credentials: its scopes hold
    /// [`APPLICATION_SCOPE`]) rather than a user's.
    pub fn is_application(&self) -> bool {
        self.has(APPLICATION_SCOPE)
    }
}

impl<'de> Deserialize<'de> for Scopes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// What the field may hold in JSON.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Flag(bool),
            Text(Option<String>),
            List(Vec<String>),
        }
        if !deserializer.is_human_readable() {
            return Vec::<String>::deserialize(deserializer).map(Scopes);
        }
        Ok(match Written::deserialize(deserializer)? {
            Written::Flag(true) => Scopes(vec![APPLICATION_SCOPE.to_string()]),
            Written::Flag(false) => Scopes::default(),
            Written::Text(text) => Scopes::of_text(text.as_deref().unwrap_or_default()),
            Written::List(list) => Scopes(list),
        })
    }
}

/// A token's `aud`: one URL or several, as RFC 7519 §4.1.3 lets a JWT write it. Kept as a
/// list; read from JSON as either, and from the store's postcard (which cannot ask what
/// comes) as the list it was written as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Audience(pub Vec<String>);

impl<'de> Deserialize<'de> for Audience {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(AudienceVisitor)
        } else {
            deserializer.deserialize_seq(AudienceVisitor)
        }
    }
}

/// Reads an [`Audience`] from a string or a sequence of strings.
struct AudienceVisitor;

impl<'de> Visitor<'de> for AudienceVisitor {
    type Value = Audience;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a string or a list of strings")
    }

    fn visit_str<E: serde::de::Error>(self, one: &str) -> Result<Audience, E> {
        Ok(Audience(vec![one.to_string()]))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Audience, A::Error> {
        let mut all = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
        while let Some(one) = seq.next_element::<String>()? {
            all.push(one);
        }
        Ok(Audience(all))
    }
}

/// Tokens whose signature has been checked, so a reused instance verifies each once
/// (revocation is checked on every use, against the manifest). They are looked up by
/// their tail ([`cache_key`]) and must then match whole. Opaque tokens introspected,
/// likewise.
#[derive(Default)]
pub struct TokenCache {
    verified: KeyMap<(Key, Rc<Claims>)>,
    opaque: OpaqueTokens,
}

/// Which endpoint a caller goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// Production endpoints.
    Production,
    /// Sandbox endpoints.
    Sandbox,
}

impl Environment {
    /// The name used in keys and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Production => "production",
            Self::Sandbox => "sandbox",
        }
    }
}

/// A caller allowed through: its token's claims, its subscription and application, and
/// its environment (shared with the caches they came from, not copied).
#[derive(Debug, Clone)]
pub struct Admitted {
    claims: Rc<Claims>,
    subscription: Rc<Subscription>,
    application: Option<Rc<Application>>,
    /// Where the request goes.
    pub environment: Environment,
}

impl Admitted {
    /// The token's claims.
    pub fn claims(&self) -> &Rc<Claims> {
        &self.claims
    }

    /// The subscription it calls under.
    pub fn subscription(&self) -> &Rc<Subscription> {
        &self.subscription
    }

    /// Its application, if the manifest has it.
    pub fn application(&self) -> Option<&Rc<Application>> {
        self.application.as_ref()
    }

    /// Application id.
    pub fn application_id(&self) -> &str {
        self.claims.application_id.as_deref().unwrap_or_default()
    }

    /// Notes the caller in `call` (application, key type, end user).
    pub fn describe(&self, call: &mut crate::call::Call) {
        call.application = self.application_id().to_string();
        call.key_type = match self.environment {
            Environment::Production => "PRODUCTION",
            Environment::Sandbox => "SANDBOX",
        }
        .to_string();
        call.user = self.claims.sub.clone().unwrap_or_default();
    }

    /// Subscription tier.
    pub fn subscription_tier(&self) -> &str {
        &self.subscription.tier
    }

    /// Application tier.
    pub fn application_tier(&self) -> Option<&str> {
        self.application.as_deref().map(|a| a.tier.as_str())
    }
}

/// The token of an `Authorization: Bearer` header value.
pub fn bearer(value: Option<&str>) -> Option<&str> {
    let (scheme, token) = value?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Admits the bearer of `token` to `api` (as the request `addressed` it), calling from
/// `client` (its address), or says why not, the way WSO2 does.
pub fn admit(
    view: &mut View,
    host: &dyn Host,
    api: &ApiRoute,
    addressed: Addressed,
    token: &str,
    client: &str,
    now_secs: i64,
) -> Result<Admitted, Fault> {
    let (context, version) = (api.context.as_str(), api.version.as_str());
    let claims = if introspect::is_opaque(token) {
        view.tokens
            .opaque
            .claims(host, token, client, now_secs)
            .map_err(|refusal| match refusal {
                Refusal::Expired => Fault::expired(context, version),
                Refusal::Invalid => Fault::invalid_credentials(context, version),
                Refusal::Unavailable => Fault::key_manager_unavailable(context, version),
                Refusal::Busy => Fault::key_manager_busy(context, version),
            })?
    } else {
        let meta = view.meta_index();
        view.tokens
            .verify(host, &meta, token, now_secs)
            .map_err(|expired| {
                if expired {
                    Fault::expired(context, version)
                } else {
                    Fault::invalid_credentials(context, version)
                }
            })?
    };
    if let Some(aud) = &claims.aud
        && !audience::names_api(&aud.0, &view.meta().meta.gateway_urls, api, addressed)
    {
        return Err(Fault::invalid_credentials(context, version));
    }
    if view.is_revoked(host, &claims.jti) {
        return Err(Fault::invalid_credentials(context, version));
    }
    let Some(application_id) = claims.application_id.as_deref() else {
        return Err(Fault::not_subscribed(context, version));
    };
    let subscription = view
        .subscription(host, application_id, &api.id)
        .ok_or_else(|| Fault::not_subscribed(context, version))?;
    let environment = match claims.key_type.as_deref() {
        Some("SANDBOX") => Environment::Sandbox,
        _ => Environment::Production,
    };
    match subscription.status.as_str() {
        "BLOCKED" => return Err(Fault::subscription_blocked(context, version)),
        "PROD_ONLY_BLOCKED" if environment == Environment::Production => {
            return Err(Fault::subscription_blocked(context, version));
        }
        "ON_HOLD" | "REJECTED" => return Err(Fault::subscription_inactive(context, version)),
        _ => {}
    }
    let has_endpoint = match environment {
        Environment::Production => api.production_url.is_some(),
        Environment::Sandbox => api.sandbox_url.is_some(),
    };
    if !has_endpoint {
        return Err(Fault::wrong_key_type(context, version));
    }
    let application = view.application(host, application_id);
    Ok(Admitted {
        claims,
        subscription,
        application,
        environment,
    })
}

impl TokenCache {
    /// The token's claims, verified now or earlier (by this instance, or by any instance
    /// sharing the store) against these keys. `Err(true)` when it has expired, `Err(false)`
    /// when it is invalid.
    fn verify(
        &mut self,
        host: &dyn Host,
        meta: &MetaIndex,
        token: &str,
        now_secs: i64,
    ) -> Result<Rc<Claims>, bool> {
        if let Some((known, claims)) = self.verified.get(cache_key(token))
            && *known == *token
        {
            return if claims.exp > now_secs {
                Ok(claims.clone())
            } else {
                Err(true)
            };
        }
        if !token.contains('.') {
            // Not a JWT: refused before the store is asked.
            return Err(false);
        }
        let memo_key = introspect::digest_key(MEMO_SECS, "verified", token);
        let claims = match Memo::recall(host, &memo_key, meta, now_secs)? {
            Some(claims) => claims,
            None => {
                let (Signed { iss, claims }, key) = check_signature(meta, token)?;
                if claims.exp <= now_secs {
                    // Remembered all the same: a client retrying an expired token is
                    // then refused without another signature check, which costs
                    // several times a whole request.
                    self.remember(token, Rc::new(claims));
                    return Err(true);
                }
                Memo::keep(host, &memo_key, key, iss, &claims, now_secs);
                claims
            }
        };
        let claims = Rc::new(claims);
        self.remember(token, claims.clone());
        Ok(claims)
    }

    /// Remembers the checked `claims` of `token`.
    fn remember(&mut self, token: &str, claims: Rc<Claims>) {
        if self.verified.len() >= TOKEN_CACHE_LIMIT {
            self.verified.clear();
        }
        self.verified
            .insert(Key::from(cache_key(token)), (Key::from(token), claims));
    }
}

/// What a verified token is looked up by: its last 32 bytes (of a JWT, part of its
/// signature), cheaper to hash than the whole token and found without searching it.
/// Tokens that share it only take each other's place.
fn cache_key(token: &str) -> &str {
    let start = token.len().saturating_sub(32);
    // A start inside a character (not a token we issued) falls back to the whole text.
    token.get(start..).unwrap_or(token)
}

/// A signed token's claims, with the issuer it names.
#[derive(Deserialize)]
struct Signed {
    iss: String,
    #[serde(flatten)]
    claims: Claims,
}

/// The token's claims and the manifest key whose signature they carry, checked against the
/// manifest's keys and issuers, but not against the clock (nor the audience, which
/// [`admit`] checks per API); `Err(false)` when invalid.
fn check_signature<'m>(meta: &'m MetaIndex, token: &str) -> Result<(Signed, &'m TokenKey), bool> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| false)?;
    let kid = header.kid.as_deref().ok_or(false)?;
    let key = meta.token_keys.get(kid).ok_or(false)?;
    let described = meta
        .meta
        .token_keys
        .iter()
        .find(|k| k.kid == kid)
        .ok_or(false)?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    // The caller checks the expiry, and remembers expired tokens too.
    validation.validate_exp = false;
    validation.leeway = 0;
    validation.validate_aud = false;
    let issuers = &meta.meta.accepted_issuers;
    let issuers: Vec<&str> = std::iter::once(meta.meta.token_issuer.as_str())
        .chain(issuers.iter().map(String::as_str))
        .collect();
    validation.set_issuer(&issuers);
    validation.set_required_spec_claims(&["exp", "iss", "sub"]);
    let claims = jsonwebtoken::decode::<Signed>(token, key, &validation)
        .map(|data| data.claims)
        .map_err(|_| false)?;
    Ok((claims, described))
}

/// A verified token as the shared store keeps it (postcard: read without a JSON parse).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Memo {
    /// Taken on trust until then (Unix seconds): the token's expiry or [`MEMO_SECS`] after
    /// it was verified, whichever is first.
    until: i64,
    /// The key that verified it (`kid` and `x`) and the issuer the token names: the memo
    /// counts only while the manifest still has the key and accepts the issuer.
    kid: String,
    x: String,
    issuer: String,
    claims: Claims,
}

impl Memo {
    /// The claims the store remembers for the token under `key`, if they still count under
    /// `meta`: `Err(true)` when the token has expired. A stale or unreadable memo is
    /// deleted and `None`.
    fn recall(
        host: &dyn Host,
        key: &str,
        meta: &MetaIndex,
        now_secs: i64,
    ) -> Result<Option<Claims>, bool> {
        let Some(bytes) = host.kv_get(key).ok().flatten() else {
            return Ok(None);
        };
        let memo = postcard::from_bytes::<Memo>(&bytes).ok();
        let Some(memo) = memo.filter(|m| m.counts_under(meta, now_secs)) else {
            let _ = host.kv_delete(key);
            return Ok(None);
        };
        if memo.claims.exp <= now_secs {
            let _ = host.kv_delete(key);
            return Err(true);
        }
        Ok(Some(memo.claims))
    }

    /// Whether the manifest still has the key that verified it and accepts its issuer,
    /// within its time.
    fn counts_under(&self, meta: &MetaIndex, now_secs: i64) -> bool {
        self.until > now_secs
            && meta.meta.accepts_issuer(&self.issuer)
            && meta
                .meta
                .token_keys
                .iter()
                .any(|k| k.kid == self.kid && k.x == self.x)
    }

    /// Remembers verified claims under `key` (best effort: a failed write costs only a
    /// later signature check).
    fn keep(
        host: &dyn Host,
        key: &str,
        verified_by: &TokenKey,
        issuer: String,
        claims: &Claims,
        now_secs: i64,
    ) {
        let memo = Memo {
            until: claims.exp.min(now_secs.saturating_add(MEMO_SECS as i64)),
            kid: verified_by.kid.clone(),
            x: verified_by.x.clone(),
            issuer,
            claims: claims.clone(),
        };
        if let Ok(bytes) = postcard::to_allocvec(&memo) {
            let _ = host.kv_set(key, &bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bearer_headers() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(None), None);
    }
}
