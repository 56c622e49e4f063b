#!/usr/bin/env bash
# Builds the Worker into pkg/ (generated, not committed): this crate for
# wasm32-unknown-unknown, then wasm-bindgen's JavaScript bindings (`--target web`,
# the wasm-bindgen CLI of the version in Cargo.lock, which tests/setup.sh builds and
# caches), then `wasm-opt -Oz` when binaryen's wasm-opt is installed (the npm
# package's). index.js, the Worker's entry module, instantiates the bindings. Size-
# optimized (the workspace's wasm-release profile) by default, for `wrangler deploy`;
# `--dev`: the debug profile, quicker to build from a test build's cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

profile=wasm-release
if [[ "${1:-}" == "--dev" ]]; then
    profile=dev
fi
cargo build -q -p cloudflare-worker-rust --target wasm32-unknown-unknown --profile "$profile"
dir=$([[ $profile == dev ]] && echo debug || echo "$profile")
wasm="${CARGO_TARGET_DIR:-$root/target}/wasm32-unknown-unknown/$dir/cloudflare_worker_rust.wasm"
wasm_bindgen="$(bash tests/setup.sh wasm-bindgen)"
out="$here/pkg"
rm -rf "$out"
"$wasm_bindgen" --target web --out-dir "$out" --no-typescript "$wasm"
wasm_opt="$root/wasm-demo/node_modules/.bin/wasm-opt"
if [[ $profile != dev && -x "$wasm_opt" ]]; then
    "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
        "$out/cloudflare_worker_rust_bg.wasm" -o "$out/cloudflare_worker_rust_bg.wasm"
fi
size=$(stat -c %s "$out/cloudflare_worker_rust_bg.wasm")
gzipped=$(gzip -9 -c "$out/cloudflare_worker_rust_bg.wasm" | wc -c)
echo "pkg/cloudflare_worker_rust_bg.wasm ($profile): $((size / 1024)) KiB, $((gzipped / 1024)) KiB gzipped" >&2
