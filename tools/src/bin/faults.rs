//! `cargo run --release -p e2e --bin faults`: the platform broken on purpose on loopback
//! (control plane killed during writes, gateways restarted under load, the control plane,
//! Redis and PostgreSQL down and back), printing per case what was sent, acknowledged and
//! lost and how long convergence took (see `e2e::faults`, `--help` for the options).

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    e2e::faults::run(e2e::faults::Options::parse())
}
