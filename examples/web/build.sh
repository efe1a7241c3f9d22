#!/usr/bin/env bash
# Builds examples/web: the wasm module and its JS glue land in
# examples/web/pkg. Needs the wasm32-unknown-unknown target and the
# wasm-bindgen CLI at the version of the wasm-bindgen crate in Cargo.lock.
#
# Usage: examples/web/build.sh [PROFILE]   (release by default; CI builds
# `dev`, which shares every build with the browser suites' and keeps
# overflow checks on)
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${1:-release}"
cargo build --profile "$profile" --example web --target wasm32-unknown-unknown
dir="$profile"
[[ "$profile" == dev ]] && dir=debug
wasm-bindgen --target web --no-typescript --out-dir examples/web/pkg \
    "target/wasm32-unknown-unknown/$dir/examples/web.wasm"
echo "built examples/web/pkg; serve with: python3 -m http.server 8000 -d examples/web"
