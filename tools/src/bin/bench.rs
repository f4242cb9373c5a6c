//! `cargo run --release -p tools --bin bench`: the gateway against nginx and Envoy, and the
//! control plane, in one run; prints a table and writes `BENCHMARKS.md` (see
//! `tools::bench`, `--help` for the options).

use clap::Parser as _;

fn main() {
    tools::bench::run(tools::bench::Options::parse());
}
