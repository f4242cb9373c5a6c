//! `cargo run -p e2e --bin local-stack`: the whole local stack on its embedded defaults.
//! Builds the gateway component, starts the control plane (development mode, SQLite in
//! `./apim-data`, admin/admin) on 127.0.0.1:9763 and an edge gateway on 127.0.0.1:8280
//! that the control plane pushes to, prints both URLs, and stops both on Ctrl-C.

use e2e::{ServerProcess, binary, gateway_component};

const CONTROL_PLANE: &str = "127.0.0.1:9763";
const GATEWAY: &str = "127.0.0.1:8280";

#[tokio::main]
async fn main() {
    // Build everything before starting anything.
    gateway_component();
    let data_dir = std::env::current_dir()
        .expect("working directory")
        .join("apim-data");
    let control_plane = ServerProcess::start_echoing(
        &binary("control-plane"),
        &[
            ("APIM_DEV_MODE", "true".into()),
            ("APIM_MGMT_ADDR", CONTROL_PLANE.into()),
            ("APIM_DATA_DIR", data_dir.display().to_string()),
            ("APIM_GATEWAYS", format!("http://{GATEWAY}")),
        ],
        Some("control-plane"),
    )
    .await;
    let gateway = e2e::start_edge_gateway_echoing(
        &control_plane,
        &data_dir,
        GATEWAY,
        &[],
        Some("edge-gateway"),
    )
    .await;
    println!();
    println!(
        "Control plane (registration, token service, publisher, store): {}/",
        control_plane.url
    );
    println!(
        "Gateway (token at /token, APIs at /<context>/<version>/...):   {}/",
        gateway.url
    );
    println!("Administrator: admin / admin. Ctrl-C stops both.");
    let _ = tokio::signal::ctrl_c().await;
    gateway.stop().await;
    control_plane.stop().await;
}
