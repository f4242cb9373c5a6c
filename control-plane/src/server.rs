//! Start-up: data directory, database, administrator, signing keys, then the listener.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use sqlx::AnyPool;
use tokio::net::TcpListener;

use crate::app::app;
use crate::clients::ClientCache;
use crate::config::{Command, Config};
use crate::fleet::{self, ManifestHub};
use crate::listener;
use crate::manifest::{Compiler, Credentials};
use crate::scopes::ScopeNames;
use crate::secrets::{self, DataKeys};
use crate::signing::KeyRing;
use crate::state::AppState;
use crate::users;
use crate::users::lockout::LockoutPolicy;

/// Runs the command the configuration names (serving by default).
pub async fn run(config: Config) -> anyhow::Result<()> {
    let db = open_database(&config).await?;
    match config.command.clone().unwrap_or(Command::Serve) {
        Command::Serve => serve(config, db).await,
        Command::AddUser {
            username,
            password_file,
            password,
            roles,
        } => {
            users::validate_username(&username).map_err(anyhow::Error::msg)?;
            let roles = users::parse_roles(&roles).map_err(anyhow::Error::msg)?;
            let password = new_user_password(&username, password_file, password)?;
            users::upsert(&db, &username, &password, &roles).await?;
            println!("user {username} stored with roles [{}]", roles.join(", "));
            Ok(())
        }
        Command::UnlockUser { username } => {
            let was_locked = crate::users::lockout::unlock(&db, &username).await?;
            let outcome = if was_locked {
                "unlocked"
            } else {
                "was not locked; its failed logins are forgotten"
            };
            println!("user name {username} {outcome}");
            Ok(())
        }
        Command::RotateDataKey => {
            let keys = data_keys(&config)?;
            let active = keys.rotate()?;
            let resealed = secrets::reseal::reseal_all(&db, &keys).await?;
            println!(
                "data key {active} now encrypts; re-encrypted {} client secrets and {} backend passwords",
                resealed.client_secrets, resealed.backend_passwords
            );
            Ok(())
        }
        Command::RotateSigningKey => {
            let keys = KeyRing::load_or_create(&config.data_dir.join("keys"))?;
            let kid = keys.rotate()?;
            println!("new signing key {kid}; a running control plane uses it after a restart");
            Ok(())
        }
    }
}

/// The configuration checked and the database ready: migrated, with the routes of APIs
/// from before route claims recorded.
async fn open_database(config: &Config) -> anyhow::Result<AnyPool> {
    config.validate()?;
    // Owner only: the database, keys and secrets live here.
    crate::signing::private_dir(&config.data_dir)?;
    let db = crate::db::connect_with_pool_size(
        &config.effective_database_url(),
        config.database_max_connections,
    )
    .await?;
    crate::apis::routes::backfill(&db)
        .await
        .context("could not record the routes of existing APIs")?;
    Ok(db)
}

/// The management API in this process, without a listener: the router `serve` serves,
/// on the configured database, for tests that drive it request by request.
pub async fn in_process(config: Config) -> anyhow::Result<axum::Router> {
    let db = open_database(&config).await?;
    let addr = config.mgmt_addr;
    let prepared = prepare(config, db, addr, "http").await?;
    Ok(app(prepared.state))
}

async fn serve(config: Config, db: AnyPool) -> anyhow::Result<()> {
    // Before the listener: a certificate file that is missing or wrong stops the start.
    let tls = apim_tls::Tls::load(config.tls_pairs()?)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listener = TcpListener::bind(config.mgmt_addr)
        .await
        .with_context(|| format!("could not listen on {}", config.mgmt_addr))?;
    let addr = listener.local_addr()?;
    let Prepared {
        state,
        manifests,
        config,
    } = prepare(config, db.clone(), addr, scheme).await?;
    let limits = listener::Limits {
        header_timeout: Duration::from_millis(config.header_timeout_ms),
        idle_timeout: Duration::from_millis(config.idle_timeout_ms),
        max_connections: config.max_connections,
    };
    let ops = match config.ops_addr {
        Some(ops_addr) => Some(serve_operations(ops_addr, db.clone()).await?),
        None => None,
    };
    let spans = crate::ops::trace::init()?;
    let signal = shutdown_signal();
    if let Some(tls) = &tls {
        apim_tls::reload::spawn(tls.clone())?;
    }
    announce(addr, tls.is_some());
    let hub = manifests.clone();
    let shutdown = async move {
        signal.await;
        hub.close();
    };
    let acceptor = tls.as_ref().map(|tls| tls.acceptor());
    listener::serve(listener, app(state), limits, shutdown, acceptor).await?;
    if let Some(ops) = ops {
        ops.abort();
    }
    db.close().await;
    if let Some(spans) = spans {
        apim_otel::shutdown_provider(spans).await;
    }
    tracing::info!("control plane stopped");
    Ok(())
}

/// What serving needs once the database is ready: the state every handler shares, with
/// the compile loop, the fleet's follower and the retention running.
struct Prepared {
    state: AppState,
    manifests: Arc<ManifestHub>,
    config: Arc<Config>,
}

/// Everything between the database and the listener: the administrator, secrets
/// resealed, keys, and the tasks behind the handlers. `addr` is the management listener
/// as bound, which published endpoints may not point at.
async fn prepare(
    config: Config,
    db: AnyPool,
    addr: std::net::SocketAddr,
    scheme: &str,
) -> anyhow::Result<Prepared> {
    users::set_password_cost(config.password_cost);
    ensure_admin(&config, &db).await?;
    let data_keys = Arc::new(data_keys(&config)?);
    let resealed = secrets::reseal::reseal_all(&db, &data_keys).await?;
    if resealed != secrets::reseal::Resealed::default() {
        tracing::info!(
            client_secrets = resealed.client_secrets,
            backend_passwords = resealed.backend_passwords,
            "secrets re-encrypted under the active data key"
        );
    }
    let keys = Arc::new(KeyRing::load_or_create(&config.data_dir.join("keys"))?);
    let (issuer, issuers) = issuers(&config, scheme);
    let id_token_keys = Arc::new(KeyRing::load_or_create_of(
        &config.data_dir.join("id-token-keys"),
        crate::signing::KeyKind::Rsa,
    )?);
    let manifest_keys = Arc::new(KeyRing::load_or_create(
        &config.data_dir.join("manifest-keys"),
    )?);
    let backend_jwt_keys = Arc::new(KeyRing::load_or_create_of(
        &config.data_dir.join("backend-jwt-keys"),
        crate::signing::KeyKind::Rsa,
    )?);
    let gateway_secret = gateway_secret(&config)?;
    let manifests = ManifestHub::new();
    crate::fleet::follow_database(db.clone(), manifests.clone());
    fleet::hub::spawn(
        manifests.clone(),
        db.clone(),
        Compiler::new(
            db.clone(),
            keys.clone(),
            issuer.clone(),
            Credentials::new(data_keys.clone(), &gateway_secret),
        )
        .with_legacy_throttling(!config.advanced_throttling)
        .with_accepted_issuers(issuers[1..].to_vec())
        .with_gateway_urls(crate::environments::gateway_urls(&config))
        .with_backend_jwt_keys(backend_jwt_keys.clone()),
        fleet::hub::Pusher {
            manifest_keys: manifest_keys.clone(),
            gateways: config
                .gateways
                .iter()
                .filter(|g| !g.is_empty())
                .cloned()
                .collect(),
            gateway_secret: gateway_secret.clone(),
        },
    );
    let endpoints = crate::apis::EndpointPolicy {
        egress: config.egress_policy()?,
        listener: addr,
    };
    let config = Arc::new(config);
    let outbound = Arc::new(crate::http::egress_fetch::Outbound {
        egress: config.egress_policy()?,
        roots: config.outbound_roots()?,
    });
    let state = AppState {
        db: db.clone(),
        keys,
        manifest_keys,
        gateway_secret,
        scopes: ScopeNames::new(&config.scope_prefix),
        issuer,
        issuers,
        id_token_keys,
        backend_jwt_keys,
        config: config.clone(),
        store_users: Arc::new(Mutex::new(HashSet::new())),
        shared: crate::app::shared(
            manifests.clone(),
            ClientCache::new(data_keys.clone())
                .with_metadata_documents(crate::clients::MetadataFetcher::new(outbound.clone())),
            users::VerifiedLogins::new(LockoutPolicy::from_config(&config)),
            endpoints,
            outbound,
        ),
        data_keys,
    };
    crate::analytics::retention::spawn_retention(state.clone());
    for app in [
        &crate::devportal::DEVPORTAL,
        &crate::publisher_console::PUBLISHER_CONSOLE,
    ] {
        let redirect_uri = app.redirect_uri(&state.issuer);
        crate::clients::first_party::register(
            &state.db,
            &state.data_keys,
            app.client_id,
            app.name,
            &redirect_uri,
        )
        .await
        .with_context(|| format!("could not register the {} as an OAuth client", app.name))?;
    }
    users::limit_argon2_queue(config.argon2_queue);
    users::prepare_dummy_hash().await?;
    Ok(Prepared {
        state,
        manifests,
        config,
    })
}

/// The issuer tokens are issued under, and every issuer whose tokens verify. The default
/// is the management listener's root (where discovery is served, RFC 8414 §3), derived
/// from the configured address rather than the bound one so that tokens stay valid across
/// restarts even when the port is chosen at start-up; tokens issued under the default of
/// before (the token endpoint's URL) still verify.
fn issuers(config: &Config, scheme: &str) -> (String, Vec<String>) {
    if !config.token_issuer.is_empty() {
        return (
            config.token_issuer.clone(),
            vec![config.token_issuer.clone()],
        );
    }
    let issuer = format!("{scheme}://{}", config.mgmt_addr);
    let before = format!("{issuer}/oauth2/token");
    (issuer.clone(), vec![issuer, before])
}

/// Prints `Serving HTTP on http://ADDR/` (`Serving HTTPS on https://ADDR/` with TLS),
/// which the harness and scripts read to find the bound port, and logs what it serves.
fn announce(addr: std::net::SocketAddr, tls: bool) {
    if tls {
        println!("Serving HTTPS on https://{addr}/");
    } else {
        println!("Serving HTTP on http://{addr}/");
    }
    tracing::info!(%addr, serves = apim_tls::describe(tls), "control plane listening");
}

/// Starts the operations listener at `addr` and announces it (`Serving operations on
/// http://ADDR/`, before the management listener's line, which the harness waits for).
async fn serve_operations(
    addr: std::net::SocketAddr,
    db: AnyPool,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("could not listen on {addr} (APIM_OPS_ADDR)"))?;
    let bound = listener.local_addr()?;
    println!("Serving operations on http://{bound}/");
    tracing::info!(addr = %bound, "operations listener (health, metrics)");
    Ok(crate::ops::spawn(listener, db))
}

/// Fewest bytes a gateway secret may have: it alone guards manifest pages, which carry
/// sealed backend credentials.
pub const MIN_GATEWAY_SECRET_BYTES: usize = 32;

/// The configured gateway secret, or the one generated into the data directory; an
/// empty or short one stops the start.
fn gateway_secret(config: &Config) -> anyhow::Result<String> {
    if !config.gateway_secret.is_empty() {
        return strong_gateway_secret(config.gateway_secret.clone(), "APIM_GATEWAY_SECRET");
    }
    let path = config.data_dir.join("gateway-secret");
    if let Ok(secret) = std::fs::read_to_string(&path) {
        crate::signing::restrict_file(&path)?;
        return strong_gateway_secret(secret.trim().to_string(), &path.display().to_string());
    }
    let secret = crate::clients::new_client_secret() + &crate::clients::new_client_secret();
    crate::signing::write_private(&path, secret.as_bytes())?;
    Ok(secret)
}

/// `secret`, unless it is shorter than [`MIN_GATEWAY_SECRET_BYTES`] (its length only is
/// named, never its value).
fn strong_gateway_secret(secret: String, from: &str) -> anyhow::Result<String> {
    if secret.len() < MIN_GATEWAY_SECRET_BYTES {
        anyhow::bail!(
            "the gateway secret from {from} has {} bytes; at least {MIN_GATEWAY_SECRET_BYTES} \
             are needed",
            secret.len()
        );
    }
    Ok(secret)
}

/// The data keys: the operator's (APIM_DATA_KEY_FILE) or the data directory's.
fn data_keys(config: &Config) -> anyhow::Result<DataKeys> {
    DataKeys::load(&config.data_dir, &config.data_key_file)
}

/// The password for `add-user`, from where it shows in no `ps`: the file (`-`: standard
/// input), APIM_NEW_USER_PASSWORD, or standard input (a prompt without echo on a
/// terminal). `--password` is still taken, with a warning.
fn new_user_password(
    username: &str,
    file: Option<PathBuf>,
    flag: Option<String>,
) -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal};
    let from_env = std::env::var("APIM_NEW_USER_PASSWORD").ok();
    let password = match (file, from_env.filter(|p| !p.is_empty()), flag) {
        (Some(path), _, _) if path.as_os_str() == "-" => first_line(std::io::stdin().lock())?,
        (Some(path), _, _) => {
            let file = std::fs::File::open(&path)
                .with_context(|| format!("could not read {}", path.display()))?;
            first_line(std::io::BufReader::new(file))?
        }
        (None, Some(password), _) => password,
        (None, None, Some(password)) => {
            eprintln!(
                "warning: --password shows in `ps` to every user of this machine; use --password-file or APIM_NEW_USER_PASSWORD"
            );
            password
        }
        (None, None, None) if std::io::stdin().is_terminal() => {
            rpassword::prompt_password(format!("Password for {username}: "))?
        }
        (None, None, None) => first_line(std::io::stdin().lock())?,
    };
    anyhow::ensure!(!password.is_empty(), "the password must not be empty");
    return Ok(password);

    fn first_line(mut input: impl BufRead) -> anyhow::Result<String> {
        let mut line = String::new();
        input.read_line(&mut line)?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}

/// Creates or updates the configured administrator. Without a password the existing
/// administrator is kept; a first start needs APIM_ADMIN_PASSWORD, or --dev for admin/admin.
async fn ensure_admin(config: &Config, db: &AnyPool) -> anyhow::Result<()> {
    let admin_roles = vec!["admin".to_string()];
    match (&config.admin_password, config.dev) {
        (Some(password), _) => {
            anyhow::ensure!(
                !password.is_empty(),
                "APIM_ADMIN_PASSWORD must not be empty"
            );
            users::validate_username(&config.admin_user).map_err(anyhow::Error::msg)?;
            users::upsert_unless_held(db, &config.admin_user, password, &admin_roles).await
        }
        (None, true) => {
            if users::find(db, &config.admin_user).await?.is_none() {
                tracing::warn!(user = %config.admin_user, "development mode: administrator password is 'admin'");
                users::upsert(db, &config.admin_user, "admin", &admin_roles).await?;
            }
            Ok(())
        }
        (None, false) => {
            anyhow::ensure!(
                users::admin_exists(db).await?,
                "no administrator yet: set APIM_ADMIN_PASSWORD (or run with --dev for admin/admin)"
            );
            Ok(())
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called, not when
/// the future is first polled, so a signal arriving as soon as the listener is announced
/// still stops the control plane gracefully rather than killing it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (terminate, interrupt) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let received = async |signal: Option<tokio::signal::unix::Signal>| match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            };
            tokio::select! {
                () = received(terminate) => {},
                () = received(interrupt) => {},
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn config_in(dir: &std::path::Path, secret: &str) -> Config {
        let mut config = Config::parse_from(["control-plane"]);
        config.data_dir = dir.to_path_buf();
        config.gateway_secret = secret.into();
        config
    }

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("apim-secret-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_empty_or_short_gateway_secret_stops_the_start() {
        let dir = temp_dir();
        let short = "s".repeat(MIN_GATEWAY_SECRET_BYTES - 1);
        let err = gateway_secret(&config_in(&dir, &short)).unwrap_err();
        assert!(
            err.to_string().contains("APIM_GATEWAY_SECRET has 31 bytes"),
            "{err}"
        );
        assert!(
            !err.to_string().contains(&short),
            "the secret itself is never named"
        );
        for held in ["", "\n", "short-secret\n"] {
            std::fs::write(dir.join("gateway-secret"), held).unwrap();
            let err = gateway_secret(&config_in(&dir, "")).unwrap_err();
            assert!(err.to_string().contains("gateway-secret has"), "{err}");
        }
        // The legitimate twins: a long enough secret, configured or held, is taken.
        let strong = "s".repeat(MIN_GATEWAY_SECRET_BYTES);
        assert_eq!(gateway_secret(&config_in(&dir, &strong)).unwrap(), strong);
        std::fs::write(dir.join("gateway-secret"), format!("{strong}\n")).unwrap();
        assert_eq!(gateway_secret(&config_in(&dir, "")).unwrap(), strong);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_generated_gateway_secret_is_strong_and_kept() {
        let dir = temp_dir();
        let generated = gateway_secret(&config_in(&dir, "")).unwrap();
        assert!(
            generated.len() >= MIN_GATEWAY_SECRET_BYTES,
            "{}",
            generated.len()
        );
        assert_eq!(gateway_secret(&config_in(&dir, "")).unwrap(), generated);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
