#!/usr/bin/env bash
# Refreshes wit/deps from the WIT that ships in the spin-sdk 5.2 crate (Apache-2.0):
# the interfaces every Spin host from 3.0 on provides besides wasi:http.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sdk=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/spin-sdk-5.2.* 2>/dev/null | tail -n 1)
[ -n "$sdk" ] || { echo "spin-sdk 5.2 is not in the cargo registry: cargo fetch it first" >&2; exit 1; }
rm -rf "$here/deps/keyvalue" "$here/deps/config"
mkdir -p "$here/deps/keyvalue" "$here/deps/config"
cp "$sdk"/wit/deps/keyvalue-2024-10-17/*.wit "$here/deps/keyvalue/"
cp "$sdk"/wit/deps/wasi-runtime-config-2024-09-27/*.wit "$here/deps/config/"
echo "vendored from $sdk"
