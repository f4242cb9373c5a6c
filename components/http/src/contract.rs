//! What the gateway component and its hosts must agree on besides the WIT types
//! (`wit/world.wit`): the names of the settings a host gives the component through
//! `wasi:config` (edge-gateway from its `APIM_*` options, Spin from `spin.toml`'s
//! variables), the values some of them take, the key-value bucket, and the header that
//! carries the client's address. The manifest's key formats and the control plane's and
//! gateway's paths are `apim_manifest`'s (`stored`, `paths`); keys with a lifetime and
//! sliding-window counters are [`crate::expiry`]'s.

/// Settings the gateway reads from its host.
pub mod settings {
    /// Base URL of the control plane (token service, manifest pulls).
    pub const CONTROL_PLANE_URL: &str = "control_plane_url";
    /// The control plane's manifest public key (base64url Ed25519).
    pub const MANIFEST_PUBLIC_KEY: &str = "manifest_public_key";
    /// Bearer secret for pulling manifests, and that callers of `/_apim/...` prove.
    pub const GATEWAY_SECRET: &str = "gateway_secret";
    /// Timeout of backend and control-plane requests, milliseconds.
    pub const BACKEND_TIMEOUT_MS: &str = "backend_timeout_ms";
    /// The gateway environment this gateway is (e.g. `Production and Sandbox`); only APIs
    /// deployed to it are routed. Unset: every API.
    pub const GATEWAY_ENVIRONMENT: &str = "gateway_environment";
    /// The name this gateway gives itself in `Via` and when it checks in with the control
    /// plane (default [`super::DEFAULT_GATEWAY_ID`]); a request whose `Via` already names
    /// it is refused as a loop.
    pub const GATEWAY_ID: &str = "gateway_id";
    /// Where backends may be: comma-separated CIDRs and host names beyond the default
    /// policy (no loopback, link-local, private-use metadata, unspecified or multicast).
    pub const EGRESS_ALLOW: &str = "egress_allow";
    /// Where the host runs no loop of its own (Spin): how often, in milliseconds, a
    /// request's arrival checks the control plane for changes, after its answer is sent
    /// (default [`super::DEFAULT_CATCH_UP_MS`]; 0: never, as edge-gateway sets it).
    pub const CATCH_UP_MS: &str = "catch_up_interval_ms";
    /// [`super::ACCESS_LOG_ON`]: the `wasi:http` handler prints an access-log line per
    /// request on standard output (Spin, which collects it; edge-gateway writes its own
    /// and leaves this off).
    pub const ACCESS_LOG: &str = "access_log";
    /// [`super::TRACE_SPANS_BY_HOST`]: the host makes (and exports) the gateway's trace
    /// span and hands the `wasi:http` handler requests whose `traceparent` names it, to
    /// pass on as it is (edge-gateway). Otherwise the handler makes the span itself.
    pub const TRACE_SPANS: &str = "trace_spans";
    /// The largest request body the gateway takes, in bytes ([`crate::bodies`]).
    pub const MAX_REQUEST_BODY_BYTES: &str = crate::bodies::SETTING;
    /// `true`: the `wasi:http` handler writes every throttled call to its counters, never
    /// in batches, for a store where a write is cheap (Redis); edge-gateway sets it when
    /// its store is Redis.
    pub const EXACT_COUNTING: &str = "exact_counting";
    /// [`super::BACKEND_JWT_ON`]: this gateway sends WSO2's backend JWT
    /// (`X-JWT-Assertion`) to the backends of the tenants that switched it on.
    pub const BACKEND_JWT: &str = "backend_jwt";
}

/// The value of [`settings::BACKEND_JWT`] that turns the backend JWT on.
pub const BACKEND_JWT_ON: &str = "on";

/// Default of [`settings::CATCH_UP_MS`].
pub const DEFAULT_CATCH_UP_MS: i64 = 1000;

/// The gateway's name when [`settings::GATEWAY_ID`] is not set.
pub const DEFAULT_GATEWAY_ID: &str = "apim-gateway";

/// The value of [`settings::ACCESS_LOG`] that turns the component's access log on.
pub const ACCESS_LOG_ON: &str = "on";

/// The value of [`settings::TRACE_SPANS`] saying the host makes the gateway's span.
pub const TRACE_SPANS_BY_HOST: &str = "host";

/// The `wasi:keyvalue` bucket the gateway keeps its state in (manifest entries, counters,
/// cached answers), Spin's default store.
pub const KV_BUCKET: &str = "default";

/// The header carrying the client's socket address, which the host sets (replacing any
/// the client sent), as Spin does.
pub const CLIENT_ADDR_HEADER: &str = "spin-client-addr";

/// Which client headers a forwarded request leaves behind besides the hop-by-hop ones
/// (which never travel on): the component names the set in its verdict, and whoever
/// forwards (the host, or the component through `wasi:http`) drops its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// An API call: the client's credentials, the `X-Forwarded-For` and `Via` the
    /// gateway extends, and any `X-JWT-Assertion` (only the gateway's may reach a
    /// backend, which trusts it to say who called).
    ApiCall,
    /// A WebSocket handshake: an API call's, and the handshake's own, which the host
    /// makes anew for the backend's hop (its key and version; no extensions, since the
    /// host reads every frame).
    WebSocket,
    /// A `/token` or `/revoke` relayed to the token service: only `X-Forwarded-For`,
    /// which the gateway extends (the client's credentials are the service's to check).
    TokenRelay,
}

impl Replaced {
    /// The header names (lower case) that do not pass on.
    pub const fn names(self) -> &'static [&'static str] {
        match self {
            Replaced::ApiCall => &["authorization", "x-forwarded-for", "via", "x-jwt-assertion"],
            Replaced::WebSocket => &[
                "authorization",
                "x-forwarded-for",
                "via",
                "x-jwt-assertion",
                "sec-websocket-key",
                "sec-websocket-version",
                "sec-websocket-extensions",
            ],
            Replaced::TokenRelay => &["x-forwarded-for"],
        }
    }
}
