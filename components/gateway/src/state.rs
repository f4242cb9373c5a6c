//! The manifest an instance serves: verified, indexed, and kept for as long as the
//! instance lives, keyed by version. The key-value store holds the authoritative copy,
//! so every instance (and every Spin request, which gets a fresh one) sees the same.

use std::collections::{HashMap, HashSet};

use apim_manifest::{ApiRoute, Manifest, SubscriptionEntry};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use crate::auth::TokenCache;
use crate::host::Host;

/// Key of the signed manifest in the store.
pub const MANIFEST_KEY: &str = "apim:manifest";
/// Key of its version, read on every request to notice a new manifest cheaply.
pub const VERSION_KEY: &str = "apim:manifest-version";

/// A verified manifest with lookup tables, and the tokens verified under it.
pub struct Loaded {
    /// What the manifest says, indexed.
    pub index: Index,
    /// Tokens verified under this manifest.
    pub tokens: TokenCache,
}

impl Loaded {
    /// Indexes a verified manifest, keeping the APIs deployed to `environment`.
    pub fn new(mut manifest: Manifest, environment: Option<&str>) -> Self {
        manifest.apis.retain(|api| api.deployed_to(environment));
        Loaded {
            index: Index::new(manifest),
            tokens: TokenCache::default(),
        }
    }
}

/// A verified manifest with lookup tables.
pub struct Index {
    /// The manifest.
    pub manifest: Manifest,
    /// Token verification keys by `kid`.
    pub token_keys: HashMap<String, DecodingKey>,
    /// Subscriptions by (application, API).
    pub subscriptions: HashMap<(String, String), SubscriptionEntry>,
    /// Application tiers by application id.
    pub application_tiers: HashMap<String, String>,
    /// Revoked token ids.
    pub revoked: HashSet<String>,
}

impl Index {
    /// Indexes a verified manifest.
    pub fn new(manifest: Manifest) -> Self {
        Index {
            token_keys: manifest
                .token_keys
                .iter()
                .filter_map(|k| Some((k.kid.clone(), DecodingKey::from_ed_components(&k.x).ok()?)))
                .collect(),
            subscriptions: manifest
                .subscriptions
                .iter()
                .map(|s| ((s.application_id.clone(), s.api_id.clone()), s.clone()))
                .collect(),
            application_tiers: manifest
                .applications
                .iter()
                .map(|a| (a.id.clone(), a.tier.clone()))
                .collect(),
            revoked: manifest
                .revoked_tokens
                .iter()
                .map(|r| r.jti.clone())
                .collect(),
            manifest,
        }
    }

    /// The API serving `path` and the resource path within it: `/<context>/<version>/...`,
    /// or `/<context>/...` for a default version. The longest context wins.
    pub fn route<'a>(&'a self, path: &'a str) -> Option<(&'a ApiRoute, &'a str)> {
        let mut best: Option<(&ApiRoute, &str, usize)> = None;
        for api in &self.manifest.apis {
            let versioned = format!("{}/{}", api.context, api.version);
            let candidates = [
                Some(versioned.as_str()),
                api.default_version.then_some(api.context.as_str()),
            ];
            for prefix in candidates.into_iter().flatten() {
                if let Some(rest) = strip_segment_prefix(path, prefix)
                    && best.is_none_or(|(_, _, len)| prefix.len() > len)
                {
                    best = Some((api, rest, prefix.len()));
                }
            }
        }
        best.map(|(api, rest, _)| (api, rest))
    }
}

/// `path` without `prefix`, if the prefix ends at a segment boundary.
fn strip_segment_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// Verifies a signed manifest with the configured public key.
pub fn verify(jws: &str, public_key: &str) -> Result<Manifest, String> {
    let key = DecodingKey::from_ed_components(public_key.trim())
        .map_err(|e| format!("manifest_public_key is not an Ed25519 key: {e}"))?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<Manifest>(jws.trim(), &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| format!("manifest signature or content invalid: {e}"))
}

/// The version the store holds, if any.
pub fn stored_version(host: &dyn Host) -> Option<u64> {
    let bytes = host.kv_get(VERSION_KEY).ok()??;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}

/// Reads and verifies the manifest in the store.
pub fn load_stored(host: &dyn Host, public_key: &str) -> Option<Manifest> {
    let bytes = host.kv_get(MANIFEST_KEY).ok()??;
    let jws = String::from_utf8(bytes).ok()?;
    verify(&jws, public_key).ok()
}

/// Stores a signed manifest if it is newer than the stored one; the version the store
/// holds afterwards, and whether this one was applied.
pub fn store_if_newer(
    host: &dyn Host,
    jws: &str,
    manifest: &Manifest,
) -> Result<(u64, bool), String> {
    let current = stored_version(host).unwrap_or(0);
    if manifest.version <= current {
        return Ok((current, false));
    }
    // The manifest first, then the version readers poll: a reader that sees the new
    // version always finds (at least) that manifest.
    host.kv_set(MANIFEST_KEY, jws.trim().as_bytes())?;
    host.kv_set(VERSION_KEY, manifest.version.to_string().as_bytes())?;
    Ok((manifest.version, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apim_manifest::{ApiState, MaxTps};

    fn api(context: &str, version: &str, default_version: bool) -> ApiRoute {
        ApiRoute {
            id: format!("{context}-{version}"),
            name: "n".into(),
            version: version.into(),
            context: context.into(),
            state: ApiState::Published,
            default_version,
            operations: vec![],
            production_url: None,
            sandbox_url: None,
            backend_authorization: None,
            max_tps: MaxTps::default(),
            cors: None,
            cache_timeout_secs: None,
            environments: vec![],
        }
    }

    #[test]
    fn routes_by_context_and_version_at_segment_boundaries() {
        let loaded = Index::new(Manifest {
            apis: vec![
                api("/dev", "v1", true),
                api("/dev", "v2", false),
                api("/developers", "v1", false),
            ],
            ..Default::default()
        });
        let (found, rest) = loaded.route("/dev/v2/devs/a").unwrap();
        assert_eq!((found.version.as_str(), rest), ("v2", "/devs/a"));
        let (found, rest) = loaded.route("/dev/devs/a").unwrap();
        assert_eq!((found.version.as_str(), rest), ("v1", "/devs/a"));
        let (found, _) = loaded.route("/developers/v1").unwrap();
        assert_eq!(found.context, "/developers");
        assert!(loaded.route("/devx/v1").is_none());
        assert!(loaded.route("/other").is_none());
    }
}
