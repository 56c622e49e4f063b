#!/usr/bin/env bash
# Builds the npm package's WebAssembly into wasm-demo/pkg/ (generated, not committed):
# the crate for wasm32-unknown-unknown (profile wasm-release: size-optimized, LTO),
# then wasm-bindgen's JavaScript bindings, `--target web`: an ES module that any
# runtime can instantiate from the bytes or WebAssembly.Module its entry point gives
# it (js/node.js, js/deno.js, js/workers.js). Then `wasm-opt -Os`, from the `binaryen`
# npm package (a devDependency), when installed. Then the CommonJS entry for `require('anymongo')`,
# pkg/node.cjs (and its types, pkg/node.d.cts): js/node.js and what it imports bundled
# by esbuild (a devDependency), so that there is no second copy of the sources to keep
# in step.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/progress.sh

wasm_bindgen="$(bash tests/setup.sh wasm-bindgen)"
# A fresh clone has no node_modules yet (./run.sh installs them after this script):
# wasm-opt and esbuild come from there.
if [[ ! -x wasm-demo/node_modules/.bin/esbuild || ! -x wasm-demo/node_modules/.bin/wasm-opt ]]; then
    (cd wasm-demo && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
fi
cargo_build "the npm package's wasm" build -p anymongo-wasm --target wasm32-unknown-unknown --profile wasm-release
out=wasm-demo/pkg
rm -rf "$out"
with_progress "generating the JavaScript bindings (wasm-bindgen)" \
    "$wasm_bindgen" --target web --out-dir "$out" --no-typescript \
    "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/wasm-release/anymongo_wasm.wasm"
if [[ -x wasm-demo/node_modules/.bin/wasm-opt ]]; then
    with_progress "optimizing the wasm (wasm-opt -Os --converge)" \
        wasm-demo/node_modules/.bin/wasm-opt -Os --converge --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
        "$out/anymongo_wasm_bg.wasm" -o "$out/anymongo_wasm_bg.wasm"
fi
size=$(stat -c %s "$out/anymongo_wasm_bg.wasm")
gzipped=$(gzip -9 -c "$out/anymongo_wasm_bg.wasm" | wc -c)
echo "wasm-demo/pkg/anymongo_wasm_bg.wasm: $((size / 1024)) KiB, $((gzipped / 1024)) KiB gzipped" >&2
# The budget of an edge function's bundle (issue 23): 1 MiB gzipped, and 8 KiB of grace
# since issue 44's cold path (first contact with every seed, the address book, killCursors
# pipelined) took the package to 1025 KiB; issue 46's size work is to bring it back under
# 1 MiB (Workers' own limit is 3 MB gzipped on the free plan, 10 MB paid).
budget_kib=1032
if ((gzipped > budget_kib * 1024)); then
    echo "the gzipped wasm is over its ${budget_kib} KiB budget" >&2
    exit 1
fi

# bson stays external: require('bson') gives its own CommonJS build, as the official
# driver's users get it. import.meta.url, by which js/node.js finds the .wasm, becomes
# this file's URL: pkg/node.cjs reads ../pkg/anymongo_wasm_bg.wasm as js/node.js does.
wasm-demo/node_modules/.bin/esbuild wasm-demo/js/node.js --bundle --platform=node --format=cjs \
    --target=node20 --external:bson --log-level=warning --outfile="$out/node.cjs" \
    --define:import.meta.url=__import_meta_url \
    --banner:js="const __import_meta_url = require('node:url').pathToFileURL(__filename).href;"
# `require('anymongo/lib/bson')` (`mongodb/lib/bson` for libraries that require the
# Node driver's subpaths): bson stays external, so its classes are the main entry's;
# the option helpers it adds hold no state, so their copy in this bundle is harmless.
wasm-demo/node_modules/.bin/esbuild wasm-demo/js/lib/bson.js --bundle --platform=node --format=cjs \
    --target=node20 --external:bson --log-level=warning --outfile="$out/lib/bson.cjs"
# Its types: TypeScript reads a .d.ts next to a "type": "module" package as an ES
# module's, which a CommonJS file may not require (node16 resolution); the same
# declarations as a .d.cts are a CommonJS module's.
cp wasm-demo/index.d.ts "$out/node.d.cts"
