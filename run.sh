#!/usr/bin/env bash
# anymongo's task runner — the two commands of the README:
#   ./run.sh demo [MONGODB_URI]   the demo: native, wasip2 under wasmtime, npm package under Node.js
#   ./run.sh test                 every check CI runs (.ci/run calls this)
#   ./run.sh bench [OPTIONS]      the benchmarks, anymongo next to the official drivers
#                                 (not part of test; options: tests/bench/src/main.rs)
# Tools are installed and cached by tests/setup.sh; cargo fetches the rest.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n== %s\n' "$*"; }
source tests/progress.sh

# The core must stay runtime-agnostic on every target (BRIEF: "The seams").
check_core_is_runtime_agnostic() {
    local target forbidden
    for target in wasm32-unknown-unknown wasm32-wasip2; do
        forbidden=$(cargo tree -q -p anymongo --target "$target" -e normal --prefix none \
            | grep -E '^(tokio|mio|socket2) ' | sort -u || true)
        if [ -n "$forbidden" ]; then
            echo "driver/ depends on $forbidden for $target" >&2
            return 1
        fi
    done
    if grep -rnE 'std::(net|fs)|std::time::Instant|\btokio::' driver/src driver/rt/src --include=*.rs \
        | grep -vE '^\S+:\s*(//|\*)'; then
        echo "driver/src or driver/rt/src reaches std::net, std::fs, std::time::Instant or tokio (above)" >&2
        return 1
    fi
}

case "${1:-}" in
demo)
    shift
    started=$SECONDS
    step "set-up: SecantusDB, wasmtime, the Rust targets (tests/setup.sh; cached after a first run)"
    bash tests/setup.sh venv
    bash tests/setup.sh rust
    step "building the demo for wasm32-wasip2 (a first build of the three takes minutes)"
    cargo_build "the demo for wasm32-wasip2" build -p anymongo-tests --bin demo --target wasm32-wasip2
    step "building the npm package (wasm32-unknown-unknown and wasm-bindgen)"
    bash wasm-demo/build.sh
    (cd wasm-demo && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
    step "building the demo natively"
    cargo_build "the native demo" build -p anymongo-tests --bin demo
    step "the demo"
    cargo run -q -p anymongo-tests --bin demo -- "$@"
    step "done in $(elapsed_since "$started")"
    ;;
test)
    started=$SECONDS
    step "setup (cached)"
    bash tests/setup.sh all
    step "format and lints"
    cargo fmt --all --check
    # The benchmark package and tests/wasm-bindgen-cli are outside the workspace
    # (./run.sh bench lints the first); their format is checked here, without
    # resolving their dependencies.
    rustfmt --check --edition 2021 tests/bench/src/main.rs tests/wasm-bindgen-cli/main.rs
    cargo clippy -q --workspace --all-targets -- -D warnings
    cargo clippy -q -p anymongo-wasi -p wasi-http-handler -p data-api-gateway --target wasm32-wasip2 -- -D warnings
    cargo clippy -q -p anymongo-tests --bin demo --bin topology --bin srv_probe --bin op_timeout --bin cold_request --bin idle_check --bin warm_requests --target wasm32-wasip2 -- -D warnings
    cargo clippy -q -p anymongo -p anymongo-wasm -p data-api-gateway-worker -p anymongo-workers -p cloudflare-worker-rust --target wasm32-unknown-unknown -- -D warnings
    step "docs"
    RUSTDOCFLAGS="-D warnings" cargo doc -q --workspace --no-deps
    RUSTDOCFLAGS="-D warnings" cargo doc -q -p anymongo-wasi --no-deps --target wasm32-wasip2
    RUSTDOCFLAGS="-D warnings" cargo doc -q -p anymongo-workers --no-deps --target wasm32-unknown-unknown
    step "publish-ready: cargo package of the crates a user depends on"
    # The five in one command, so that each one's dependencies on the others resolve to
    # the packages just made, not to the registry; each .crate is then built as the
    # registry would build it. The npm package's contents: wasm-demo/test/pack.test.js.
    cargo package -q --allow-dirty -p anymongo-rt -p anymongo-native -p anymongo-wasi -p anymongo -p anymongo-workers
    step "the core builds for every target, without tokio, mio or socket2"
    cargo build -q -p anymongo --target wasm32-unknown-unknown
    cargo build -q -p anymongo --target wasm32-wasip2
    cargo build -q -p anymongo-wasm --target wasm32-unknown-unknown
    cargo build -q -p anymongo-tests --bin demo --bin topology --bin srv_probe --bin op_timeout --bin idle_check --bin warm_requests --target wasm32-wasip2
    cargo build -q -p wasi-http-handler -p data-api-gateway --target wasm32-wasip2
    check_core_is_runtime_agnostic
    step "spec test suites"
    cargo run -q -p anymongo-tests --bin spec
    step "fuzz smoke"
    # A fixed seed keeps CI deterministic; longer runs with other seeds: docs/guide/trust.md, "Fuzzing".
    cargo run -q -p anymongo-tests --bin fuzz -- --seconds 3 --seed 1
    step "unit and integration tests (native, and wasip2 under wasmtime)"
    cargo test -q --workspace
    step "a client of 10,000 members: CPU measured on an optimized build"
    cargo test -q --release -p anymongo-tests --test large_topology
    step "counts per operation on the canned-reply server, against tests/counts-baseline.json"
    # Instructions (cachegrind) and allocations of four operations, release build; a change
    # that moves them on purpose rewrites the baseline with --write (docs/BENCHMARKS.md).
    cargo run -q --release -p anymongo-tests --bin counts
    step "npm package: the wasm-bindgen build"
    cargo build -q -p anymongo-tests --bin dns_server --bin lb_proxy --bin warm_requests --bin atlas_fixture
    bash wasm-demo/build.sh
    (cd wasm-demo && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
    step "npm package: Mongoose, connect-mongo and the Auth.js adapter, anymongo against the official driver"
    # Fails when a test that passes with the official driver fails with anymongo (wasm-demo/test/libraries/run.js).
    # First, because it installs the official driver, which npm test compares with.
    node wasm-demo/test/libraries/run.js
    step "npm package: node:test against SecantusDB"
    (cd wasm-demo && npm test)
    step "npm package: the unified-format spec tests over its public API"
    # One line per suite folder; fails when a test fails (docs/UNIFIED_GAPS.md, "The npm package's runner").
    (cd wasm-demo && node test/unified/run.js)
    step "every check passed, in $(elapsed_since "$started")"
    ;;
bench)
    shift
    bash tests/setup.sh venv
    bash tests/setup.sh rust
    # A package of its own (tests/bench: own lockfile and target directory), so that CI
    # never compiles the official driver; its format and lints are checked here.
    step "benchmarks: format, lints, unit tests, builds (native and wasip2)"
    (
        cd tests/bench
        cargo fmt --check
        cargo clippy -q --release --all-targets -- -D warnings
        cargo clippy -q --release --target wasm32-wasip2 -- -D warnings
        cargo test -q --release
        cargo build -q --release --target wasm32-wasip2
        cargo build -q --release
    )
    step "benchmarks: the npm package, and the official Node.js driver (into the cache)"
    bash wasm-demo/build.sh
    (cd wasm-demo && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
    node_dir="$(bash tests/setup.sh path)/bench-node"
    if [ ! -f "$node_dir/node_modules/mongodb/package.json" ]; then
        mkdir -p "$node_dir"
        npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error mongodb@7
    fi
    step "benchmarks"
    tests/bench/target/release/anymongo-bench --wasi --node \
        --json tests/bench/target/bench.json "$@"
    ;;
*)
    echo "usage: ./run.sh demo [MONGODB_URI] | ./run.sh test | ./run.sh bench [--quick] [OPTIONS]" >&2
    exit 2
    ;;
esac
