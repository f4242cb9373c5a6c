//! The manifest as keyed entries: the keys, what each holds, and how a whole manifest (a
//! compile on the control plane, or a test's) becomes entries.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::trust::EndpointTrust;
use crate::{ApiRoute, Application, Meta, Revocation, Subscription};

/// Entry keys. Ids are UUIDs and token ids, so the `:` separators are unambiguous; a route
/// prefix is the last part of its key.
pub mod key {
    use super::Key;

    /// The [`Meta`](crate::Meta) entry.
    pub const META: &str = "meta";

    /// The targets of a route prefix: `/<context>/<version>`, or `/<context>` for a
    /// default version.
    pub fn route(prefix: &str) -> String {
        Key::Route(prefix).to_string()
    }

    /// An [`ApiRoute`](crate::ApiRoute).
    pub fn api(id: &str) -> String {
        Key::Api(id).to_string()
    }

    /// The [`Subscription`](crate::Subscription) of an application to an API.
    pub fn subscription(application_id: &str, api_id: &str) -> String {
        Key::Subscription(application_id, api_id).to_string()
    }

    /// An [`Application`](crate::Application).
    pub fn application(id: &str) -> String {
        Key::Application(id).to_string()
    }

    /// A [`Revocation`](crate::Revocation).
    pub fn revocation(jti: &str) -> String {
        Key::Revocation(jti).to_string()
    }

    /// The [`EndpointTrust`](crate::trust::EndpointTrust) of a backend host (lower-case,
    /// without brackets) and port.
    pub fn trust(host: &str, port: u16) -> String {
        format!("{TRUST_PREFIX}{host}:{port}")
    }

    /// What every trust entry's key starts with.
    pub const TRUST_PREFIX: &str = "trust:";
}

/// An entry's key, which a reader on a hot path writes into a buffer it keeps
/// ([`Key::write_to`]) rather than allocate ([`key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// [`key::route`].
    Route(&'a str),
    /// [`key::api`].
    Api(&'a str),
    /// [`key::subscription`]: application, API.
    Subscription(&'a str, &'a str),
    /// [`key::application`].
    Application(&'a str),
    /// [`key::revocation`].
    Revocation(&'a str),
}

impl Key<'_> {
    /// Appends the key to `buffer`.
    pub fn write_to(&self, buffer: &mut String) {
        let parts: [&str; 4] = match *self {
            Key::Route(prefix) => ["route:", prefix, "", ""],
            Key::Api(id) => ["api:", id, "", ""],
            Key::Subscription(application, api) => ["sub:", application, ":", api],
            Key::Application(id) => ["app:", id, "", ""],
            Key::Revocation(jti) => ["revoked:", jti, "", ""],
        };
        for part in parts {
            buffer.push_str(part);
        }
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        self.write_to(&mut text);
        f.write_str(&text)
    }
}

/// What routing needs of a deployed API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSource {
    /// API id.
    pub id: String,
    /// Context, starting with `/`.
    pub context: String,
    /// Version.
    pub version: String,
    /// Also routed at the bare context.
    pub default_version: bool,
    /// Gateway environments it is deployed to (`gatewayEnvironments`); empty means all.
    pub environments: Vec<String>,
}

impl RouteSource {
    /// Where `route` is routed, deployed to `environments`.
    pub fn of(route: &ApiRoute, environments: Vec<String>) -> Self {
        RouteSource {
            id: route.id.clone(),
            context: route.context.clone(),
            version: route.version.clone(),
            default_version: route.default_version,
            environments,
        }
    }

    /// The prefixes this API is routed at.
    pub fn prefixes(&self) -> impl Iterator<Item = String> + '_ {
        route_prefixes(&self.context, &self.version, self.default_version)
    }
}

/// Where an API of this context and version is routed: `<context>/<version>`, and
/// `<context>` too for a default version.
pub fn route_prefixes(
    context: &str,
    version: &str,
    default_version: bool,
) -> impl Iterator<Item = String> + use<> {
    let versioned = format!("{context}/{version}");
    let bare = default_version.then(|| context.to_string());
    std::iter::once(versioned).chain(bare)
}

/// One API a route prefix leads to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteTarget {
    /// API id.
    pub api: String,
    /// Gateway environments it is deployed to; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<String>,
}

impl RouteTarget {
    /// Whether a gateway of `environment` serves this API (a gateway without one serves all).
    pub fn deployed_to(&self, environment: Option<&str>) -> bool {
        match environment {
            None => true,
            Some(env) => self.environments.is_empty() || self.environments.iter().any(|e| e == env),
        }
    }
}

/// Route prefixes and the APIs each leads to, lowest API id first, so that when two APIs
/// claim one prefix the same one wins everywhere.
pub fn route_table<'a>(
    apis: impl IntoIterator<Item = &'a RouteSource>,
) -> BTreeMap<String, Vec<RouteTarget>> {
    let mut table: BTreeMap<String, Vec<RouteTarget>> = BTreeMap::new();
    for api in apis {
        for prefix in api.prefixes() {
            table.entry(prefix).or_default().push(RouteTarget {
                api: api.id.clone(),
                environments: api.environments.clone(),
            });
        }
    }
    for targets in table.values_mut() {
        targets.sort_by(|a, b| a.api.cmp(&b.api));
        targets.dedup_by(|a, b| a.api == b.api);
    }
    table
}

/// Most segments of any route prefix of these APIs ([`Meta::route_depth`]).
pub fn route_depth<'a>(apis: impl IntoIterator<Item = &'a RouteSource>) -> usize {
    apis.into_iter()
        .flat_map(RouteSource::prefixes)
        .map(|prefix| segments(&prefix))
        .max()
        .unwrap_or(0)
}

/// Segments of a route prefix: `/t/acme.com/pets/v1` has 4.
pub fn segments(prefix: &str) -> usize {
    prefix.matches('/').count()
}

/// Collects entries as JSON text; API entries come serialized already, so that a
/// compiler can keep them from one compile to the next.
#[derive(Debug, Default)]
pub struct EntriesBuilder {
    entries: BTreeMap<String, Arc<str>>,
    routes: Vec<RouteSource>,
}

impl EntriesBuilder {
    /// Adds a deployed API: where it is routed and its [`ApiRoute`] as JSON.
    pub fn api(&mut self, source: RouteSource, route_json: Arc<str>) {
        self.entries.insert(key::api(&source.id), route_json);
        self.routes.push(source);
    }

    /// Adds an application.
    pub fn application(&mut self, id: &str, application: &Application) {
        self.entries.insert(key::application(id), json(application));
    }

    /// Adds a subscription.
    pub fn subscription(
        &mut self,
        application_id: &str,
        api_id: &str,
        subscription: &Subscription,
    ) {
        self.entries.insert(
            key::subscription(application_id, api_id),
            json(subscription),
        );
    }

    /// Adds a revoked token.
    pub fn revocation(&mut self, jti: &str, revocation: &Revocation) {
        self.entries.insert(key::revocation(jti), json(revocation));
    }

    /// Adds what is trusted for a backend host and port.
    pub fn trust(&mut self, host: &str, port: u16, trust: &EndpointTrust) {
        self.entries.insert(key::trust(host, port), json(trust));
    }

    /// Adds the route entries and `meta` (its route depth set from the routes): every
    /// entry by key.
    pub fn finish(mut self, mut meta: Meta) -> BTreeMap<String, Arc<str>> {
        meta.route_depth = route_depth(&self.routes);
        for (prefix, targets) in &route_table(&self.routes) {
            self.entries.insert(key::route(prefix), json(targets));
        }
        self.entries.insert(key::META.to_string(), json(&meta));
        self.entries
    }
}

/// An entry's JSON text.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Arc<str> {
    serde_json::to_string(value)
        .expect("manifest entries serialize")
        .into()
}

/// A deployed API with the environments it is deployed to.
#[derive(Debug, Clone, PartialEq)]
pub struct DeployedApi {
    /// How the gateway serves it.
    pub route: ApiRoute,
    /// Gateway environments (`gatewayEnvironments`); empty means all.
    pub environments: Vec<String>,
}

impl DeployedApi {
    /// Where it is routed.
    pub fn route_source(&self) -> RouteSource {
        RouteSource::of(&self.route, self.environments.clone())
    }
}

/// A whole manifest in typed form, for building entries in one go.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// Issuer, token keys and tiers (the route depth is computed).
    pub meta: Meta,
    /// Deployed APIs.
    pub apis: Vec<DeployedApi>,
    /// Applications by id.
    pub applications: BTreeMap<String, Application>,
    /// Subscriptions by (application id, API id).
    pub subscriptions: BTreeMap<(String, String), Subscription>,
    /// Revoked tokens by `jti`.
    pub revocations: BTreeMap<String, Revocation>,
}

impl Manifest {
    /// Every entry by key.
    pub fn entries(&self) -> BTreeMap<String, Arc<str>> {
        let mut builder = EntriesBuilder::default();
        for api in &self.apis {
            builder.api(api.route_source(), json(&api.route));
        }
        for (id, application) in &self.applications {
            builder.application(id, application);
        }
        for ((application, api), subscription) in &self.subscriptions {
            builder.subscription(application, api, subscription);
        }
        for (jti, revocation) in &self.revocations {
            builder.revocation(jti, revocation);
        }
        builder.finish(self.meta.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(id: &str, context: &str, version: &str, default_version: bool) -> RouteSource {
        RouteSource {
            id: id.into(),
            context: context.into(),
            version: version.into(),
            default_version,
            environments: vec![],
        }
    }

    #[test]
    fn route_prefixes_list_every_claimant_lowest_id_first() {
        let table = route_table(&[
            source("b", "/dev", "v1", true),
            source("a", "/dev/v1", "v2", true),
            source("c", "/dev", "v2", false),
        ]);
        let ids =
            |prefix: &str| -> Vec<&str> { table[prefix].iter().map(|t| t.api.as_str()).collect() };
        assert_eq!(ids("/dev/v1"), ["a", "b"]);
        assert_eq!(ids("/dev"), ["b"]);
        assert_eq!(ids("/dev/v2"), ["c"]);
        assert_eq!(ids("/dev/v1/v2"), ["a"]);
    }

    #[test]
    fn meta_knows_the_deepest_route() {
        let mut builder = EntriesBuilder::default();
        builder.api(source("a", "/t/acme.com/pets", "v1", false), "{}".into());
        let entries = builder.finish(Meta::default());
        let meta: Meta = serde_json::from_str(&entries[key::META]).unwrap();
        assert_eq!(meta.route_depth, 4);
        assert!(entries.contains_key("route:/t/acme.com/pets/v1"));
        assert!(entries.contains_key("api:a"));
    }
}
