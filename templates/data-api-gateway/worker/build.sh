#!/usr/bin/env bash
# Builds the gateway Worker's WebAssembly into pkg/ (generated, not committed): this
# crate for wasm32-unknown-unknown, then wasm-bindgen's JavaScript bindings
# (`--target web`: index.js instantiates them from the module wrangler bundles), then
# `wasm-opt -Os` when the npm package's binaryen is installed. Size-optimized (the
# workspace's wasm-release profile) by default, for `wrangler deploy`; `--dev`: the
# debug profile, quicker to build from a test build's cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"

profile=wasm-release
if [[ "${1:-}" == "--dev" ]]; then
    profile=dev
fi
cargo build -q -p data-api-gateway-worker --target wasm32-unknown-unknown --profile "$profile"
dir=$([[ $profile == dev ]] && echo debug || echo "$profile")
wasm="${CARGO_TARGET_DIR:-$root/target}/wasm32-unknown-unknown/$dir/data_api_gateway_worker.wasm"
wasm_bindgen="$(bash tests/setup.sh wasm-bindgen)"
out="$here/pkg"
rm -rf "$out"
"$wasm_bindgen" --target web --out-dir "$out" --no-typescript "$wasm"
wasm_opt="$root/wasm-demo/node_modules/.bin/wasm-opt"
if [[ $profile != dev && -x "$wasm_opt" ]]; then
    "$wasm_opt" -Os --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
        "$out/data_api_gateway_worker_bg.wasm" -o "$out/data_api_gateway_worker_bg.wasm"
fi
size=$(stat -c %s "$out/data_api_gateway_worker_bg.wasm")
gzipped=$(gzip -9 -c "$out/data_api_gateway_worker_bg.wasm" | wc -c)
echo "pkg/data_api_gateway_worker_bg.wasm ($profile): $((size / 1024)) KiB, $((gzipped / 1024)) KiB gzipped" >&2
