//! anymongo's test harness.
//!
//! - [`server`]: starts SecantusDB (a MongoDB-wire-compatible server) for a test.
//! - [`harness`]: the bound on every integration test, and a client recording its
//!   command events.
//! - [`certs`]: generates the CA, server and client certificates of the TLS tests.
//! - [`mock`]: a scripted mock server speaking OP_QUERY and OP_MSG.
//! - [`compression`]: a mock server that speaks OP_COMPRESSED and insists on it, with
//!   an in-memory collection and a count of the bytes on the wire.
//! - [`counting`]: a transport that counts each connection's messages and tells
//!   whether the driver still holds its socket.
//! - [`canned`]: a server answering from replies encoded once, for measuring a
//!   driver's own cost (the benchmarks and the counts check).
//! - [`counts`]: instructions, allocations, system calls and wake-ups per operation of
//!   a child process, under cachegrind and strace (the `counts` binary, the benchmarks).
//! - [`fake`]: fake connections, for measuring and testing pools by themselves.
//! - [`fuzz`]: the mutation fuzzer of the parsers facing the network (the `fuzz`
//!   binary runs it).
//! - [`dns`]: an authoritative DNS server on loopback with records tests can change.
//! - [`replica_set`]: a scripted mock replica set (members on 127.0.0.1, .2, .3 …) for
//!   live SDAM tests.
//! - [`load_balancer`]: a scripted mock load balancer with two backends of distinct
//!   serviceIds, for live tests of load-balanced mode.
//! - [`socks5`]: a SOCKS5 proxy (`pproxy`) on loopback, with or without credentials.
//! - [`lb_proxy`]: a load balancer in front of SecantusDB (hellos answered as a mongos
//!   with a serviceId), to run the `load_balancer` unified files against a real server.
//! - [`mongos_proxy`]: a test sharded cluster, mongoses in front of SecantusDB, to run
//!   the unified files written for sharded clusters against a real server.
//! - [`ocsp`]: a CA with OCSP responses signed on demand, a CRL, and a TLS front that
//!   staples a response, in front of SecantusDB (the OCSP Support spec's matrix).
//! - [`atlas_fixture`]: an Atlas-shaped deployment — `mongodb+srv` through the test
//!   DNS server, three TLS members fronting SecantusDB with SCRAM, delays on every
//!   hop — for counting a cold request's round trips, DNS included.
//! - [`spec`]: the registry and runner of the JSON specification tests.
//! - [`unified`]: the runner of the Unified Test Format's files.
//! - [`reply_loss`]: a proxy in front of SecantusDB that loses the replies of
//!   chosen inserts after the server ran them, for live exactly-once tests.
//! - [`latency`]: a proxy that delays each direction and records who waited for whom,
//!   and the count of the round trips a request spent.
//! - [`http_mock`]: a scripted HTTP/1.1 server on loopback (the cloud credential
//!   endpoints), which can also stay silent or flood its client.
//! - [`silent`]: a server that accepts connections and never answers, for the
//!   `timeoutMS` tests.
//! - [`demo`]: the demo's script, shared by its native and WASI builds.
//! - [`round_trip`]: a typed document with every kind of field through `insert_one`
//!   and `find_one`, shared by the native test and the `round_trip` WASI binary.
//! - [`cold_request`]: the child's side of the `cold_request` binary's measurement
//!   (a cold and a warm request behind [`latency`]'s proxy), native and WASI.
//! - [`official`]: programs written from the official `mongodb` crate's documentation,
//!   run natively and as the `official` WASI binary.
//! - [`pool_events`]: a client's connection pool events, recorded in order, and the
//!   connections closed and created among them.
//! - [`probe`]: a scripted series of operations that reports the topology after each,
//!   run by the `topology` binary natively and under WASI.
//! - [`setup`]: the cache of tools installed by `tests/setup.sh`.
//! - [`wasmtime_serve`]: a wasi:http component served by `wasmtime serve` (or the
//!   gateway's Worker by workerd), and HTTP requests to it (the edge templates' tests).
//!
//! - `guide` (doc tests only): the pages of docs/guide/ and docs/migration.md, whose
//!   Rust code blocks `cargo test` compiles.
//!
//! All of it runs on the test machine only, so it is left out of WASI builds.

#[cfg(not(target_os = "wasi"))]
pub mod atlas_fixture;
#[cfg(not(target_os = "wasi"))]
pub mod canned;
#[cfg(not(target_os = "wasi"))]
pub mod certs;
pub mod clock;
pub mod cold_request;
#[cfg(not(target_os = "wasi"))]
pub mod compression;
#[cfg(not(target_os = "wasi"))]
pub mod counting;
pub mod counts;
pub mod demo;
#[cfg(not(target_os = "wasi"))]
pub mod dns;
#[cfg(not(target_os = "wasi"))]
pub mod fake;
#[cfg(not(target_os = "wasi"))]
pub mod fuzz;
#[cfg(not(target_os = "wasi"))]
pub mod harness;
#[cfg(not(target_os = "wasi"))]
pub mod http_mock;
#[cfg(not(target_os = "wasi"))]
pub mod latency;
#[cfg(not(target_os = "wasi"))]
pub mod lb_proxy;
#[cfg(not(target_os = "wasi"))]
pub mod load_balancer;
#[cfg(not(target_os = "wasi"))]
pub mod mock;
#[cfg(not(target_os = "wasi"))]
pub mod mongos_proxy;
#[cfg(not(target_os = "wasi"))]
pub mod ocsp;
pub mod official;
pub mod pool_events;
pub mod probe;
#[cfg(not(target_os = "wasi"))]
pub mod replica_set;
#[cfg(not(target_os = "wasi"))]
pub mod reply_loss;
pub mod round_trip;
#[cfg(not(target_os = "wasi"))]
pub mod server;
#[cfg(not(target_os = "wasi"))]
pub mod silent;
#[cfg(not(target_os = "wasi"))]
pub mod socks5;
#[cfg(not(target_os = "wasi"))]
pub mod spec;
#[cfg(not(target_os = "wasi"))]
pub mod unified;
pub mod warm_requests;
#[cfg(not(target_os = "wasi"))]
pub mod wasmtime_serve;

/// The guide's pages (docs/guide/) and docs/migration.md as doc tests, so that `cargo
/// test` compiles their Rust code blocks (`rust,no_run` where they need a server): a
/// page's code cannot drift from the API it describes. Their links are checked by
/// `tests/docs.rs`.
#[cfg(doctest)]
pub mod guide {
    macro_rules! pages {
        ($($page:ident = $path:literal,)*) => {$(
            #[doc = include_str!(concat!("../../docs/", $path))]
            pub struct $page;
        )*};
    }
    pages! {
        Index = "guide/README.md",
        Connecting = "guide/connecting.md",
        Authentication = "guide/authentication.md",
        Tls = "guide/tls.md",
        Crud = "guide/crud.md",
        SessionsAndTransactions = "guide/sessions-and-transactions.md",
        ChangeStreams = "guide/change-streams.md",
        Gridfs = "guide/gridfs.md",
        Timeouts = "guide/timeouts.md",
        Monitoring = "guide/monitoring.md",
        Targets = "guide/targets.md",
        Edge = "guide/edge.md",
        Transports = "guide/transports.md",
        Trust = "guide/trust.md",
        Migration = "migration.md",
    }
}

/// The tools installed by `tests/setup.sh` and where they are cached.
#[cfg(not(target_os = "wasi"))]
pub mod setup {
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::{Mutex, PoisonError};

    /// The workspace root (the folder holding `tests/setup.sh`).
    pub fn workspace_root() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// The cache of installed tools, by the same rule as `tests/setup.sh`:
    /// `$ANYMONGO_CACHE`, else `$XDG_CACHE_HOME/anymongo`, else `$HOME/.cache/anymongo`.
    pub fn cache_dir() -> PathBuf {
        let var = |name| std::env::var_os(name).filter(|value| !value.is_empty());
        if let Some(dir) = var("ANYMONGO_CACHE") {
            return dir.into();
        }
        let cache_home = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(var("HOME").unwrap_or_default()).join(".cache"));
        cache_home.join("anymongo")
    }

    /// The wasmtime of the cache, installed first (`tests/setup.sh venv`) if missing.
    ///
    /// # Panics
    /// If it cannot be installed.
    pub fn wasmtime() -> PathBuf {
        let wasmtime = cache_dir().join("venv/bin/wasmtime");
        if !wasmtime.exists() {
            run("venv").unwrap_or_else(|why| panic!("cannot install wasmtime: {why}"));
        }
        wasmtime
    }

    /// The workerd of the cache (the Cloudflare Workers runtime), installed first
    /// (`tests/setup.sh js-runtimes`) if missing.
    ///
    /// # Panics
    /// If it cannot be installed.
    pub fn workerd() -> PathBuf {
        let workerd = cache_dir().join("js-runtimes/node_modules/.bin/workerd");
        if !workerd.exists() {
            run("js-runtimes").unwrap_or_else(|why| panic!("cannot install workerd: {why}"));
        }
        workerd
    }

    /// Builds the binary `bin` of the workspace package `package` for wasm32-wasip2
    /// (debug) once per test process — a no-op when `./run.sh test` already did — and
    /// returns the path of its `.wasm`.
    ///
    /// # Panics
    /// If the build fails.
    pub fn wasip2_binary(package: &str, bin: &str) -> PathBuf {
        wasip2_binary_of_profile(package, bin, false)
    }

    /// [`wasip2_binary`], optimized (the release profile) when `release`: for
    /// measurements.
    ///
    /// # Panics
    /// If the build fails.
    pub fn wasip2_binary_of_profile(package: &str, bin: &str, release: bool) -> PathBuf {
        static BUILT: Mutex<Vec<(String, String, bool)>> = Mutex::new(Vec::new());
        let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (package.to_owned(), bin.to_owned(), release);
        if !built.contains(&key) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .current_dir(workspace_root())
                .args(["build", "-q", "-p", package, "--bin", bin])
                .args(["--target", "wasm32-wasip2"])
                .args(release.then_some("--release"))
                .status()
                .expect("cargo runs");
            assert!(
                status.success(),
                "building the wasip2 {bin} of {package} failed"
            );
            built.push(key);
        }
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let profile = if release { "release" } else { "debug" };
        target_dir.join(format!("wasm32-wasip2/{profile}/{bin}.wasm"))
    }

    /// Runs `bash tests/setup.sh <what>` (`venv`, `corpus`, `rust` or `all`).
    ///
    /// Calls from one process are serialized; the script itself locks out other processes.
    pub fn run(what: &str) -> Result<(), String> {
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let script = workspace_root().join("tests/setup.sh");
        let status = Command::new("bash")
            .arg(&script)
            .arg(what)
            .status()
            .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "`bash {} {what}` failed ({status})",
                script.display()
            ))
        }
    }
}
