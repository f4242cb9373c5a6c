//! `cargo run -p tools --bin local-stack`: the whole local stack on its embedded defaults.
//!
//! Builds the components, then starts
//! - the control plane (development mode, SQLite in `./apim-data`, admin/admin) on
//!   127.0.0.1:9763, pushing manifests to
//! - an edge gateway on 127.0.0.1:8280, which also hosts the developer-management facade on
//!   `APIM_DEV_FACADE_ADDR` (127.0.0.1:8290), in front of
//! - the stand-in for the legacy SOAP service on 127.0.0.1:8291 (data in
//!   `./apim-data/legacy-soap`), unless `APIM_DEV_SOAP_URL` points at a real one
//!   (credentials `APIM_DEV_SOAP_USER` / `APIM_DEV_SOAP_PASSWORD`);
//!
//! then publishes the facade as the API DevManagement (/dev-management/v1.0.0) through the
//! public REST interface, subscribes DefaultApplication, prints a bearer token and example
//! calls, and stops everything on Ctrl-C.
//!
//! With `--tls` (`cargo run -p tools --bin local-stack -- --tls`) every listener serves
//! HTTPS (and h2) with a development certificate made at start (ECDSA P-256, for
//! 127.0.0.1 and localhost) by an authority made with it, both written to
//! `./apim-data/tls/`; the printed curl lines verify against the authority (`--cacert`).
//! The control plane then pushes to no gateway: the gateway pulls its manifest.

use std::time::Duration;

use harness::tls::Listening;
use harness::{FacadeSetup, ServerProcess, binary, gateway_component};
use tools::dev_api::{self, Published, Target};
use tools::legacy::{SOAP_PASSWORD, SOAP_USER, start_legacy_soap_at};

const CONTROL_PLANE: &str = "127.0.0.1:9763";
const GATEWAY: &str = "127.0.0.1:8280";
const FACADE: &str = "127.0.0.1:8290";
const LEGACY_SOAP: &str = "127.0.0.1:8291";
const ADMIN: (&str, &str) = ("admin", "admin");

fn setting(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// The development certificate and its authority, written into `data_dir/tls`.
fn development_certificate(data_dir: &std::path::Path) -> Listening {
    let dir = data_dir.join("tls");
    std::fs::create_dir_all(&dir).expect("TLS directory");
    Listening::new(&dir)
}

#[tokio::main]
async fn main() {
    let tls = std::env::args().skip(1).any(|arg| arg == "--tls");
    // Build everything before starting anything.
    gateway_component();
    let data_dir = std::env::current_dir()
        .expect("working directory")
        .join("apim-data");
    let listening = tls.then(|| development_certificate(&data_dir));
    let mut control_plane_settings = vec![
        ("APIM_DEV_MODE", "true".to_string()),
        ("APIM_MGMT_ADDR", CONTROL_PLANE.into()),
        ("APIM_DATA_DIR", data_dir.display().to_string()),
        ("APIM_GATEWAYS", format!("http://{GATEWAY}")),
        // Its backends (the facade, the walk-through's) listen on loopback.
        ("APIM_EGRESS_ALLOW", harness::TEST_EGRESS_ALLOW.into()),
    ];
    let mut gateway_settings = Vec::new();
    if let Some(listening) = &listening {
        control_plane_settings
            .extend(listening.settings("APIM_MGMT_TLS_CERT", "APIM_MGMT_TLS_KEY"));
        // Pushes verify gateways against the public roots only: the gateway pulls.
        control_plane_settings.push(("APIM_GATEWAYS", String::new()));
        gateway_settings = listening.settings("APIM_TLS_CERT", "APIM_TLS_KEY");
        gateway_settings.push(("APIM_BACKEND_CA_FILE", listening.ca.display().to_string()));
    }
    let control_plane = ServerProcess::start_echoing(
        &binary("control-plane"),
        &control_plane_settings,
        Some("control-plane"),
    )
    .await;
    let legacy = match std::env::var("APIM_DEV_SOAP_URL")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(_) => None,
        None => {
            let dir = data_dir.join("legacy-soap");
            std::fs::create_dir_all(&dir).expect("legacy-soap data directory");
            Some(start_legacy_soap_at(LEGACY_SOAP, &dir, None).await)
        }
    };
    let facade = FacadeSetup {
        addr: setting("APIM_DEV_FACADE_ADDR", FACADE),
        soap_url: setting("APIM_DEV_SOAP_URL", &format!("http://{LEGACY_SOAP}/ws")),
        soap_user: setting("APIM_DEV_SOAP_USER", SOAP_USER),
        soap_password: setting("APIM_DEV_SOAP_PASSWORD", SOAP_PASSWORD),
    };
    let gateway = harness::start_edge_gateway_with_facade_and(
        &control_plane,
        &data_dir,
        GATEWAY,
        &facade,
        Some("edge-gateway"),
        &gateway_settings,
    )
    .await;
    let scheme = if tls { "https" } else { "http" };
    let target = Target {
        management_url: control_plane.url.clone(),
        gateway_url: gateway.url.clone(),
        user: ADMIN.0.into(),
        password: ADMIN.1.into(),
        facade_url: format!("{scheme}://{}", facade.addr),
    };
    let ca_file = listening.as_ref().map(|l| relative(&l.ca));
    let published = dev_api::publish(&target).await;
    println!();
    println!(
        "Control plane (registration, token service, publisher, store): {}/",
        control_plane.url
    );
    println!(
        "Gateway (token at /token, APIs at /<context>/<version>/...):   {}/",
        gateway.url
    );
    println!(
        "Developer-management facade ({{dev_backend_url}}):              {}/",
        target.facade_url
    );
    println!(
        "Legacy SOAP service:                                            {}",
        facade.soap_url
    );
    if let Some(ca_file) = &ca_file {
        println!(
            "TLS 1.2/1.3 and h2 on every listener; the development authority: {ca_file}\n\
             (curl --cacert {ca_file} ..., or export CURL_CA_BUNDLE={ca_file})"
        );
    }
    println!("Administrator: admin / admin. Ctrl-C stops everything.");
    match published {
        Ok(published) => {
            wait_until_live(&published).await;
            println!(
                "\n{}",
                dev_api::summary_verifying(&published, ca_file.as_deref())
            );
        }
        Err(err) => eprintln!("\nPublishing DevManagement failed: {err:#}"),
    }
    let _ = tokio::signal::ctrl_c().await;
    gateway.stop().await;
    if let Some(legacy) = legacy {
        legacy.stop().await;
    }
    control_plane.stop().await;
}

/// The control plane pushes the new manifest within moments; wait for it so the printed
/// commands work as soon as they are shown. The gateway's own refusals are XML faults;
/// anything JSON came from the facade.
async fn wait_until_live(published: &Published) {
    let url = format!("{}/devs/athiththan11", published.base_url);
    let client = harness::http_client();
    for _ in 0..100 {
        let answer = client
            .get(&url)
            .bearer_auth(&published.access_token)
            .send()
            .await;
        let from_facade = answer.is_ok_and(|a| {
            a.headers()
                .get("content-type")
                .is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"))
        });
        if from_facade {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("DevManagement is not live on the gateway yet; try the commands in a moment.");
}

/// `path` relative to the working directory when it is under it, for shorter commands.
fn relative(path: &std::path::Path) -> String {
    let here = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&here)
        .unwrap_or(path)
        .display()
        .to_string()
}
