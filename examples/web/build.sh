#!/usr/bin/env bash
# Builds examples/web: the wasm module and its JS glue land in
# examples/web/pkg. Needs the wasm32-unknown-unknown target and the
# wasm-bindgen CLI at the version of the wasm-bindgen crate in Cargo.lock.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --example web --target wasm32-unknown-unknown
wasm-bindgen --target web --no-typescript --out-dir examples/web/pkg \
    target/wasm32-unknown-unknown/release/examples/web.wasm
echo "built examples/web/pkg; serve with: python3 -m http.server 8000 -d examples/web"
