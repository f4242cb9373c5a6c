//! `cargo run --release -p tools --bin faults`: the platform broken on purpose on loopback
//! (control plane killed during writes, gateways restarted under load, the control plane,
//! Redis and PostgreSQL down and back), printing per case what was sent, acknowledged and
//! lost and how long convergence took (see `tools::faults`, `--help` for the options).

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    tools::faults::run(tools::faults::Options::parse())
}
