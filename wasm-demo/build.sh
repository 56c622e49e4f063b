#!/usr/bin/env bash
# Builds the npm package's WebAssembly into wasm-demo/pkg/ (generated, not committed):
# the crate for wasm32-unknown-unknown (profile wasm-release: size-optimized, LTO),
# then wasm-bindgen's JavaScript bindings, `--target web`: an ES module that any
# runtime can instantiate from the bytes or WebAssembly.Module its entry point gives
# it (js/node.js, js/deno.js, js/workers.js). wasm-opt runs when the `binaryen` npm
# package is installed (optional).
set -euo pipefail
cd "$(dirname "$0")/.."

wasm_bindgen="$(bash tests/setup.sh wasm-bindgen)"
cargo build -q -p anymongo-wasm --target wasm32-unknown-unknown --profile wasm-release
out=wasm-demo/pkg
rm -rf "$out"
"$wasm_bindgen" --target web --out-dir "$out" --no-typescript \
    target/wasm32-unknown-unknown/wasm-release/anymongo_wasm.wasm
if [[ -x wasm-demo/node_modules/.bin/wasm-opt ]]; then
    wasm-demo/node_modules/.bin/wasm-opt -Os --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
        "$out/anymongo_wasm_bg.wasm" -o "$out/anymongo_wasm_bg.wasm"
fi
size=$(stat -c %s "$out/anymongo_wasm_bg.wasm")
gzipped=$(gzip -9 -c "$out/anymongo_wasm_bg.wasm" | wc -c)
echo "wasm-demo/pkg/anymongo_wasm_bg.wasm: $((size / 1024)) KiB, $((gzipped / 1024)) KiB gzipped" >&2
