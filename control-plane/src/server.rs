//! Start-up: data directory, database, administrator, signing keys, then the listener.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use sqlx::AnyPool;
use tokio::net::TcpListener;

use crate::config::{Command, Config};
use crate::gateways::{self, ManifestHub};
use crate::http::{AppState, app};
use crate::keys::KeyRing;
use crate::manifest::Compiler;
use crate::scopes::ScopeNames;
use crate::users;

/// Runs the command the configuration names (serving by default).
pub async fn run(config: Config) -> anyhow::Result<()> {
    config.validate()?;
    std::fs::create_dir_all(&config.data_dir).with_context(|| {
        format!(
            "could not create data directory {}",
            config.data_dir.display()
        )
    })?;
    let db = crate::db::connect(&config.effective_database_url()).await?;
    match config.command.clone().unwrap_or(Command::Serve) {
        Command::Serve => serve(config, db).await,
        Command::AddUser {
            username,
            password,
            roles,
        } => {
            users::validate_username(&username).map_err(anyhow::Error::msg)?;
            let roles = users::parse_roles(&roles).map_err(anyhow::Error::msg)?;
            users::upsert(&db, &username, &password, &roles).await?;
            println!("user {username} stored with roles [{}]", roles.join(", "));
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

async fn serve(config: Config, db: AnyPool) -> anyhow::Result<()> {
    ensure_admin(&config, &db).await?;
    let keys = Arc::new(KeyRing::load_or_create(&config.data_dir.join("keys"))?);
    let listener = TcpListener::bind(config.mgmt_addr)
        .await
        .with_context(|| format!("could not listen on {}", config.mgmt_addr))?;
    let addr = listener.local_addr()?;
    // Derived from the configured address, not the bound one, so that tokens stay valid
    // across restarts even when the port is chosen at start-up.
    let issuer = if config.token_issuer.is_empty() {
        format!("http://{}/oauth2/token", config.mgmt_addr)
    } else {
        config.token_issuer.clone()
    };
    let manifest_keys = Arc::new(KeyRing::load_or_create(
        &config.data_dir.join("manifest-keys"),
    )?);
    let gateway_secret = gateway_secret(&config)?;
    let manifests = ManifestHub::new();
    gateways::spawn(
        manifests.clone(),
        db.clone(),
        Compiler::new(db.clone(), keys.clone(), issuer.clone()),
        gateways::Pusher {
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
    let endpoints = Arc::new(crate::apis::EndpointPolicy {
        egress: config.egress_policy()?,
        listener: addr,
    });
    let state = AppState {
        endpoints,
        db: db.clone(),
        keys,
        manifests,
        manifest_keys,
        gateway_secret,
        scopes: ScopeNames::new(&config.scope_prefix),
        issuer,
        config: Arc::new(config),
        store_users: Arc::new(Mutex::new(HashSet::new())),
        clients: Arc::default(),
        logins: Arc::default(),
    };
    // The harness and scripts read this line to find the bound port.
    println!("Serving HTTP on http://{addr}/");
    tracing::info!(%addr, "control plane listening");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    db.close().await;
    tracing::info!("control plane stopped");
    Ok(())
}

/// The configured gateway secret, or the one generated into the data directory.
fn gateway_secret(config: &Config) -> anyhow::Result<String> {
    if !config.gateway_secret.is_empty() {
        return Ok(config.gateway_secret.clone());
    }
    let path = config.data_dir.join("gateway-secret");
    if let Ok(secret) = std::fs::read_to_string(&path) {
        return Ok(secret.trim().to_string());
    }
    let secret = crate::clients::new_client_secret() + &crate::clients::new_client_secret();
    crate::keys::write_private(&path, secret.as_bytes())?;
    Ok(secret)
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
            users::upsert(db, &config.admin_user, password, &admin_roles).await
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

/// Resolves on Ctrl-C or SIGTERM, letting in-flight requests finish.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}
