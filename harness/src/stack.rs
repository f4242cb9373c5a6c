//! A whole platform for a test or a benchmark: control plane, edge gateway, backend.

use std::time::Duration;

use serde_json::{Value, json};

use crate::steps::{Steps, TokenType};
use crate::{Backend, Client, ControlPlane, EchoBackend, ServerProcess};

/// Every management scope the flows need.
pub const ALL_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe";
/// [`ALL_SCOPES`] and the tier ones: what creating and changing tiers needs.
pub const TIER_SCOPES: &str =
    "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe mgr:tier_view mgr:tier_manage";

/// A control plane pushing to one edge gateway, a backend, and an administrator token.
pub struct Stack {
    /// The control plane's data directory.
    pub data_dir: std::path::PathBuf,
    /// The control plane (taken when a test stops it).
    pub control_plane: Option<ControlPlane>,
    /// The edge gateway it pushes to.
    pub gateway: ServerProcess,
    /// The backend APIs point at.
    pub backend: EchoBackend,
    /// Client of the management listener.
    pub mgmt: Client,
    /// Client of the gateway.
    pub gw: Client,
    /// An administrator's token with every management scope.
    pub admin: String,
    /// The listeners' certificate files, when both planes serve TLS ([`Launch::tls`]).
    pub listening: Option<crate::tls::Listening>,
}

/// What every platform starts with: a backend, a control plane, and an administrator's
/// token from it.
pub struct Core {
    /// The control plane's data directory.
    pub data_dir: std::path::PathBuf,
    /// The control plane.
    pub control_plane: ControlPlane,
    /// The backend APIs point at.
    pub backend: EchoBackend,
    /// Client of the management listener.
    pub mgmt: Client,
    /// An administrator's token with every management scope (spec §5 steps 1 and 2).
    pub admin: String,
}

impl Core {
    /// Starts the backend and a control plane on `database` with its data in `data_dir`
    /// and `settings` (`APIM_*`), and logs in as the administrator.
    pub async fn start(
        database: &Backend,
        data_dir: std::path::PathBuf,
        settings: &[(&'static str, String)],
    ) -> Self {
        crate::gateway_component();
        let backend = EchoBackend::start().await;
        let control_plane = crate::start_control_plane(database, &data_dir, settings).await;
        let mgmt = Client::new(&control_plane.url);
        let admin = mgmt.login("admin", crate::ADMIN_PASSWORD, ALL_SCOPES).await;
        Core {
            data_dir,
            control_plane,
            backend,
            mgmt,
            admin,
        }
    }

    /// The whole stack, with `gateway` (of several, the one [`Stack::gw`] talks to).
    pub fn with_gateway(self, gateway: ServerProcess) -> Stack {
        Stack {
            gw: Client::new(&gateway.url),
            data_dir: self.data_dir,
            control_plane: Some(self.control_plane),
            gateway,
            backend: self.backend,
            mgmt: self.mgmt,
            admin: self.admin,
            listening: None,
        }
    }
}

/// How a [`Stack`] starts: each field's default is the plain case.
pub struct Launch<'a> {
    /// The control plane's database (SQLite by default).
    pub database: Backend,
    /// Its data directory (a fresh one by default).
    pub data_dir: Option<std::path::PathBuf>,
    /// Component variables (`name=value`).
    pub vars: &'a [&'a str],
    /// More of edge-gateway's settings (`APIM_*`).
    pub gateway: &'a [(&'static str, String)],
    /// More of the control plane's settings (`APIM_*`).
    pub control_plane: &'a [(&'static str, String)],
    /// How long after the control plane the gateway starts, as an operator deploys.
    pub gateway_after: Duration,
    /// The CPUs the gateway runs on (taskset syntax; all by default).
    pub gateway_cpus: Option<&'a str>,
    /// Both planes serve TLS with the certificates of a [`crate::tls::Listening`] (the
    /// gateway trusting the control plane's); the control plane then pushes to nobody,
    /// the gateway pulls.
    pub tls: bool,
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Self {
            database: Backend::Sqlite,
            data_dir: None,
            vars: &[],
            gateway: &[],
            control_plane: &[],
            gateway_after: Duration::ZERO,
            gateway_cpus: None,
            tls: false,
        }
    }
}

impl Launch<'_> {
    /// Starts backend, control plane and gateway, and logs in.
    pub async fn start(self) -> Stack {
        let data_dir = self.data_dir.unwrap_or_else(crate::temp_dir);
        let gateway_addr = format!("127.0.0.1:{}", crate::free_port());
        let mut control_plane_settings = vec![("APIM_GATEWAYS", format!("http://{gateway_addr}"))];
        let mut gateway_settings = Vec::new();
        let listening = self.tls.then(|| {
            let listening = crate::tls::Listening::new(&crate::temp_dir());
            control_plane_settings = listening.settings("APIM_MGMT_TLS_CERT", "APIM_MGMT_TLS_KEY");
            control_plane_settings.push(("APIM_GATEWAYS", String::new()));
            gateway_settings = listening.settings("APIM_TLS_CERT", "APIM_TLS_KEY");
            gateway_settings.push(("APIM_BACKEND_CA_FILE", listening.ca.display().to_string()));
            listening
        });
        control_plane_settings.extend(self.control_plane.iter().cloned());
        gateway_settings.extend(self.gateway.iter().cloned());
        let core = Core::start(&self.database, data_dir, &control_plane_settings).await;
        tokio::time::sleep(self.gateway_after).await;
        if let Some(cpus) = self.gateway_cpus {
            // The gateway inherits this thread's mask.
            crate::machine::pin_thread(cpus);
        }
        let gateway = crate::start_edge_gateway_with(
            &core.control_plane,
            &core.data_dir,
            &gateway_addr,
            self.vars,
            &gateway_settings,
        )
        .await;
        if self.gateway_cpus.is_some() {
            crate::machine::pin_thread(&all_cpus());
        }
        Stack {
            listening,
            ..core.with_gateway(gateway)
        }
    }
}

/// edge-gateway's settings that host the gateway component as Spin hosts a WASI 0.2
/// component: a fresh instance per request, forwarding through `wasi:http`, every key in
/// a SQLite file (in `dir`) as Spin's default store keeps it, and no loop of its own
/// (pushes still land; with the variable `catch_up_interval_ms`, requests catch up).
pub fn spin_like(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    let store = dir.join("sqlite_key_value.db");
    vec![
        ("APIM_HOST_FORWARDING", "false".into()),
        ("APIM_INSTANCE_REUSE", "1".into()),
        ("APIM_SYNC_INTERVAL_SECS", "0".into()),
        ("APIM_KV_URL", format!("sqlite:{}", store.display())),
    ]
}

/// Every CPU of the machine, in taskset syntax.
fn all_cpus() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("0-{}", cpus - 1)
}

impl Stack {
    /// Starts backend, control plane and gateway (with component `vars`), and logs in.
    pub async fn start(vars: &[&str]) -> Self {
        Self::start_with(vars, &[]).await
    }

    /// The same, with more of edge-gateway's settings (`APIM_*`).
    pub async fn start_with(vars: &[&str], settings: &[(&'static str, String)]) -> Self {
        Self::start_configured(vars, settings, &[]).await
    }

    /// The same, with more of the control plane's settings too.
    pub async fn start_configured(
        vars: &[&str],
        settings: &[(&'static str, String)],
        control_plane_settings: &[(&'static str, String)],
    ) -> Self {
        let data_dir = crate::temp_dir();
        Self::start_on(
            &Backend::Sqlite,
            data_dir,
            vars,
            settings,
            control_plane_settings,
        )
        .await
    }

    /// The same, on `database` with the control plane's data in `data_dir`.
    pub async fn start_on(
        database: &Backend,
        data_dir: std::path::PathBuf,
        vars: &[&str],
        settings: &[(&'static str, String)],
        control_plane_settings: &[(&'static str, String)],
    ) -> Self {
        Launch {
            database: database.clone(),
            data_dir: Some(data_dir),
            vars,
            gateway: settings,
            control_plane: control_plane_settings,
            ..Launch::default()
        }
        .start()
        .await
    }

    /// As an operator deploys: the control plane first (pushing to a gateway that is not
    /// up yet), the gateway `after` that.
    pub async fn start_late(after: Duration) -> Self {
        Launch {
            gateway_after: after,
            ..Launch::default()
        }
        .start()
        .await
    }

    /// The domain steps, taken as the administrator.
    pub fn steps(&self) -> Steps<'_> {
        Steps::new(&self.mgmt, &self.admin)
    }

    /// Creates an API of the spec's shape pointing at the backend (with `changes`), and
    /// applies `actions` to its lifecycle.
    pub async fn api(&self, name: &str, changes: Value, actions: &[&str]) -> String {
        let mut record = api_record(name, &format!("{}/", self.backend.url));
        for (key, value) in changes.as_object().unwrap() {
            record[key] = value.clone();
        }
        let id = self.steps().create_api(&record).await.unwrap();
        for action in actions {
            self.lifecycle(&id, action).await;
        }
        id
    }

    /// Applies a lifecycle action.
    pub async fn lifecycle(&self, id: &str, action: &str) {
        self.steps().lifecycle(id, action).await.unwrap();
    }

    /// An application of `tier` (and WSO2's default tokenType), subscribed to `apis`, with
    /// PRODUCTION keys; returns (application id, consumer key, consumer secret,
    /// subscription ids).
    pub async fn application(
        &self,
        name: &str,
        tier: &str,
        apis: &[&str],
    ) -> (String, String, String, Vec<String>) {
        self.typed_application(name, tier, TokenType::Opaque, apis)
            .await
    }

    /// Like [`Stack::application`], with keys whose tokens are `token_type`.
    pub async fn typed_application(
        &self,
        name: &str,
        tier: &str,
        token_type: TokenType,
        apis: &[&str],
    ) -> (String, String, String, Vec<String>) {
        let app = self
            .steps()
            .subscribed_typed_application(name, tier, token_type, apis)
            .await
            .unwrap();
        (app.id, app.keys.key, app.keys.secret, app.subscriptions)
    }

    /// Spec §5 step 3: a token for the consumer key, from {gateway_url}/token; `extra`
    /// fields added (a `scope` in it replaces the default one).
    pub async fn app_token(&self, key: &str, secret: &str, extra: &[(&str, &str)]) -> String {
        let mut form = vec![
            ("grant_type", "password"),
            ("username", "admin"),
            ("password", crate::ADMIN_PASSWORD),
            ("scope", "default"),
        ];
        for (name, value) in extra {
            match form.iter_mut().find(|(known, _)| known == name) {
                Some(field) => field.1 = value,
                None => form.push((name, value)),
            }
        }
        self.gw
            .token_at("/token", key, secret, &form)
            .await
            .expect(200)
            .str("access_token")
    }
}

/// The API record of spec 2.3 named `name` (context `/<name in lower case>`), with
/// `endpoint` as its production and sandbox endpoint.
pub fn api_record(name: &str, endpoint: &str) -> Value {
    let mut record = crate::spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    record["endpointConfig"] = json!(
        json!({
            "production_endpoints": {"url": endpoint, "config": null},
            "sandbox_endpoints": {"url": endpoint, "config": null},
            "endpoint_type": "http"
        })
        .to_string()
    );
    record
}
