//! One instance's view of the manifest: the entries its requests needed, read from the
//! store and kept until the head moves, so that a reused instance reads almost nothing
//! per request and a fresh one (Spin) reads only what its one request needs.

use std::any::Any;
use std::rc::Rc;

use apim_manifest::{ApiRoute, Application, Key, Meta, RouteTarget, Subscription, key};
use foldhash::HashMap;
use jsonwebtoken::DecodingKey;
use serde::de::DeserializeOwned;

use crate::auth::TokenCache;
use crate::host::Host;
use crate::keys::{self, KeyMap};
use crate::state::{self, Head};

/// Entries kept at most; past this (a flood of unknown paths, say) the cache starts over.
const MAX_CACHED: usize = 10_000;

/// [`Meta`] with the token keys ready for verification.
pub struct MetaIndex {
    /// The entry.
    pub meta: Meta,
    /// Token verification keys by `kid`.
    pub token_keys: HashMap<String, DecodingKey>,
}

impl MetaIndex {
    fn new(meta: Meta) -> Self {
        let token_keys = meta
            .token_keys
            .iter()
            .filter_map(|k| Some((k.kid.clone(), DecodingKey::from_ed_components(&k.x).ok()?)))
            .collect();
        MetaIndex { meta, token_keys }
    }
}

/// The manifest as one instance sees it.
pub struct View {
    head: Head,
    /// The gateway environment this gateway is, if set.
    environment: Option<String>,
    /// The meta entry as stored, to tell whether a new head changed it.
    meta_bytes: Vec<u8>,
    meta: Rc<MetaIndex>,
    /// Entries read so far by key (`None`: absent), typed on first read.
    entries: KeyMap<Option<Rc<dyn Any>>>,
    /// Where keys are written for lookups, so that a hit allocates nothing.
    key: String,
    /// Tokens verified against the current meta's keys.
    pub tokens: TokenCache,
}

impl View {
    /// The view of the manifest at `head`; `None` when its meta entry is missing.
    pub fn load(host: &dyn Host, head: Head, environment: Option<String>) -> Option<Self> {
        let meta_bytes = read_meta(host, head)?;
        let meta = parse_meta(&meta_bytes)?;
        Some(View {
            head,
            environment,
            meta_bytes,
            meta,
            entries: KeyMap::default(),
            key: String::new(),
            tokens: TokenCache::default(),
        })
    }

    /// The head this view shows.
    pub fn head(&self) -> Head {
        self.head
    }

    /// Moves the view to `head`: entries are read afresh; verified tokens are kept unless
    /// the token keys or the issuers taken changed.
    pub fn advance(&mut self, host: &dyn Host, head: Head) {
        if head == self.head {
            return;
        }
        self.head = head;
        self.entries.clear();
        let Some(bytes) = read_meta(host, head) else {
            return;
        };
        if bytes != self.meta_bytes
            && let Some(meta) = parse_meta(&bytes)
        {
            if meta.meta.token_keys != self.meta.meta.token_keys
                || meta.meta.token_issuer != self.meta.meta.token_issuer
                || meta.meta.accepted_issuers != self.meta.meta.accepted_issuers
            {
                self.tokens = TokenCache::default();
            }
            self.meta = meta;
            self.meta_bytes = bytes;
        }
    }

    /// Issuer, token keys, tiers.
    pub fn meta(&self) -> &MetaIndex {
        &self.meta
    }

    /// The same, shared, for use while the view changes.
    pub fn meta_index(&self) -> Rc<MetaIndex> {
        self.meta.clone()
    }

    /// The API serving `path` and the resource path within it: the longest prefix of
    /// `/<context>/<version>/...` (or `/<context>/...` for a default version) that names
    /// an API deployed to this gateway.
    pub fn route<'p>(&mut self, host: &dyn Host, path: &'p str) -> Option<(Rc<ApiRoute>, &'p str)> {
        let mut end = prefix_end(path, self.meta.meta.route_depth)?;
        loop {
            let prefix = &path[..end];
            if let Some(targets) = self.entry::<Vec<RouteTarget>>(host, Key::Route(prefix)) {
                let environment = self.environment.as_deref();
                if let Some(target) = targets.iter().find(|t| t.deployed_to(environment))
                    && let Some(api) = self.api(host, &target.api)
                {
                    return Some((api, &path[end..]));
                }
            }
            // The next shorter prefix ends at the last `/` before this one ends.
            end = prefix.rfind('/').filter(|i| *i > 0)?;
        }
    }

    /// An API by id.
    pub fn api(&mut self, host: &dyn Host, id: &str) -> Option<Rc<ApiRoute>> {
        self.entry(host, Key::Api(id))
    }

    /// The subscription of an application to an API.
    pub fn subscription(
        &mut self,
        host: &dyn Host,
        application_id: &str,
        api_id: &str,
    ) -> Option<Rc<Subscription>> {
        self.entry(host, Key::Subscription(application_id, api_id))
    }

    /// An application.
    pub fn application(&mut self, host: &dyn Host, id: &str) -> Option<Rc<Application>> {
        self.entry(host, Key::Application(id))
    }

    /// Whether the token with this id has been revoked.
    pub fn is_revoked(&mut self, host: &dyn Host, jti: &str) -> bool {
        self.entry::<serde::de::IgnoredAny>(host, Key::Revocation(jti))
            .is_some()
    }

    /// An entry, from the cache or the store; absent or unreadable entries are `None`.
    fn entry<T: DeserializeOwned + 'static>(&mut self, host: &dyn Host, key: Key) -> Option<Rc<T>> {
        self.key.clear();
        key.write_to(&mut self.key);
        if let Some(cached) = self.entries.get(self.key.as_str()) {
            return cached.clone().and_then(|any| any.downcast::<T>().ok());
        }
        let key = keys::Key::from(self.key.as_str());
        let value: Option<Rc<T>> = read_entry(host, self.head, key.as_str()).map(Rc::new);
        if self.entries.len() >= MAX_CACHED {
            self.entries.clear();
        }
        let erased = value.clone().map(|v| v as Rc<dyn Any>);
        self.entries.insert(key, erased);
        value
    }
}

/// Where the first `depth` segments of `path` end (`/a/b/c`, 2: at 4); all of it when it
/// has fewer; `None` for `/` or a depth of 0.
fn prefix_end(path: &str, depth: usize) -> Option<usize> {
    if depth == 0 || path.len() <= 1 {
        return None;
    }
    let mut segments = 0;
    for (i, byte) in path.bytes().enumerate().skip(1) {
        if byte == b'/' {
            segments += 1;
            if segments == depth {
                return Some(i);
            }
        }
    }
    Some(path.len())
}

fn read_meta(host: &dyn Host, head: Head) -> Option<Vec<u8>> {
    host.kv_get(&state::entry_key(head.generation, key::META))
        .ok()
        .flatten()
}

fn parse_meta(bytes: &[u8]) -> Option<Rc<MetaIndex>> {
    match serde_json::from_slice::<Meta>(bytes) {
        Ok(meta) => Some(Rc::new(MetaIndex::new(meta))),
        Err(err) => {
            eprintln!("the manifest's meta entry is unreadable: {err}");
            None
        }
    }
}

fn read_entry<T: DeserializeOwned>(host: &dyn Host, head: Head, key: &str) -> Option<T> {
    let bytes = match host.kv_get(&state::entry_key(head.generation, key)) {
        Ok(bytes) => bytes?,
        Err(err) => {
            eprintln!("manifest entry {key} unavailable: {err}");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(err) => {
            eprintln!("manifest entry {key} is unreadable: {err}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefixes_end_after_the_route_depth() {
        assert_eq!(prefix_end("/a/b/c", 2), Some(4));
        assert_eq!(prefix_end("/a/b/c", 3), Some(6));
        assert_eq!(prefix_end("/a/b/", 5), Some(5));
        assert_eq!(prefix_end("/a", 2), Some(2));
        assert_eq!(prefix_end("/", 2), None);
        assert_eq!(prefix_end("/a/b", 0), None);
    }
}
