//! `cargo run --release -p e2e --bin bench`: the gateway against nginx and Envoy, and the
//! control plane, in one run; prints a table and writes `BENCHMARKS.md` (see
//! `e2e::bench`, `--help` for the options).

use clap::Parser as _;

fn main() {
    e2e::bench::run(e2e::bench::Options::parse());
}
