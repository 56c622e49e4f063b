//! A cold request at a distance: SecantusDB with TLS and SCRAM-SHA-256 behind the
//! latency proxy (`anymongo_tests::latency`, 25 ms each way by default: 50 ms RTT),
//! and, per driver, a fresh process whose fresh client finds one document (cold: from
//! creating the client to the first result) and then finds it again on the same
//! client (warm). Prints, per driver, both times (measured inside the child) and both
//! round-trip counts (from the proxy's flight log), then each cold request's flights.
//! A benchmark: not part of `cargo test`.
//!
//! ```text
//! cargo run --release -q -p anymongo-tests --bin cold_request -- [OPTIONS]
//!
//!   --one-way-ms N   the delay each way (default 25)
//!   --no-wasi        leave out the wasip2 build (otherwise built, release, and run
//!                    under the test cache's wasmtime)
//!   --bench PATH     the benchmark binary (`tests/bench`, built by `cargo build
//!                    --release` there), whose child runs the official Rust driver;
//!                    default tests/bench/target/release/anymongo-bench if it exists
//!   --no-node        leave out the Node.js rows (the npm package under Node.js and
//!                    workerd, the official Node.js driver)
//!   --atlas          against the Atlas-shaped fixture instead (see below)
//!   --dns-one-way-ms N  with --atlas, DNS's delay each way (default: --one-way-ms)
//! ```
//!
//! The drivers: native anymongo (this binary as its own child, `--child URI`), the
//! same as a wasip2 program under wasmtime, the official Rust driver (through the
//! benchmark binary's `--cold-request-child`), pymongo (the test venv's), the npm
//! package (`wasm-demo/`, built here by its `build.sh`) under Node.js and under workerd
//! (`tests/cold_request/node.mjs` and `workerd.mjs`), and the official Node.js driver
//! (`node.mjs` again, with the `mongodb` that `./run.sh bench` installs into the cache's
//! `bench-node`). Each child follows `anymongo_tests::cold_request`. The connection
//! string is what a user writes: user and password, `tls=true` (and the test CA), the
//! authentication mechanism left to negotiation (SCRAM-SHA-256 for this user). The
//! server is a standalone, so that no driver leaves the proxy for a replica set
//! member's own address. (A Worker cannot take a CA file: `workerd.mjs` says how its
//! workerd trusts the test CA instead.)
//!
//! With `--atlas`, each driver meets `anymongo_tests::atlas_fixture` instead (issue
//! 44): a `mongodb+srv://` name resolved through the fixture's DNS relay, three TLS
//! members, the delay on DNS too, and the round trips counted from the first DNS query.
//! The rows are those whose resolver can be pointed at the relay: native anymongo
//! (its runtime's resolver asking the relay), pymongo (dnspython's default resolver,
//! and the members' names, asked of the relay), the npm package under Node.js (its
//! transport's `nameServers`) and under workerd (DNS over HTTPS to a gateway in front
//! of the relay, `workerd.mjs`), and the official Node.js driver (`dns.setServers` and
//! a `lookup` asking the relay), each given the relay's address in `ATLAS_NAMESERVER`;
//! the wasip2 build and the official Rust driver resolve through the system only, so
//! they are left out. The fronts'
//! certificate names the members, which the official drivers check it against.

use std::process::ExitCode;

use anymongo_tests::cold_request;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--child") => child(args.get(1).map_or("", String::as_str)),
        #[cfg(not(target_os = "wasi"))]
        _ => parent::run(&args),
        #[cfg(target_os = "wasi")]
        _ => Err("the wasip2 build is only the child: --child URI".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cold_request: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Native anymongo's child; with `ATLAS_NAMESERVER` (`ip:port`, the `--atlas`
/// fixture's DNS relay), the `mongodb+srv` string is resolved, and the hosts' names
/// too, by asking it only.
#[cfg(not(target_os = "wasi"))]
fn child(uri: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let nameserver = std::env::var("ATLAS_NAMESERVER")
        .ok()
        .map(|address| address.parse().map_err(|e| format!("{address}: {e}")))
        .transpose()?;
    runtime.block_on(cold_then_warm_with(async move {
        let Some(nameserver) = nameserver else {
            return anymongo::Client::with_options(anymongo::ClientOptions::parse_uri(uri)?);
        };
        let runtime = anymongo_tests::dns::runtime_with_nameserver(nameserver);
        let options = anymongo::ClientOptions::parse(uri)
            .runtime(runtime.clone())
            .await?;
        anymongo::Client::with_runtime(options, runtime)
    }))
}

/// The wasip2 build's child.
#[cfg(target_os = "wasi")]
fn child(uri: &str) -> Result<(), String> {
    anymongo_wasi::block_on(cold_then_warm_with(async {
        anymongo::Client::with_options(anymongo::ClientOptions::parse_uri(uri)?)
    }))
}

/// The cold request starts with `new_client`.
async fn cold_then_warm_with(
    new_client: impl std::future::Future<Output = anymongo::Result<anymongo::Client>>,
) -> Result<(), String> {
    let cold = async {
        let client = new_client.await.map_err(|e| e.to_string())?;
        cold_request::find(&client).await?;
        Ok(client)
    };
    cold_request::cold_then_warm(
        cold,
        |client| async move { cold_request::find(&client).await },
    )
    .await
}

/// The measurement: the server, the proxies, the children, the report.
#[cfg(not(target_os = "wasi"))]
mod parent {
    use std::io::{BufRead, BufReader, Write};
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    use anymongo::bson::{doc, Document};
    use anymongo_tests::atlas_fixture::AtlasFixture;
    use anymongo_tests::certs;
    use anymongo_tests::cold_request::{COLLECTION, DATABASE};
    use anymongo_tests::latency::{self, Connection, FlightLog, LatencyProxy};
    use anymongo_tests::server::TestServer;
    use anymongo_tests::setup;

    /// The most a driver may take for each of its two requests.
    const CASE_TIMEOUT: Duration = Duration::from_secs(60);
    /// The user the drivers authenticate as.
    const USER: &str = "cold";
    /// Its password.
    const PASSWORD: &str = "cold-pw";
    /// pymongo's child, `python -c PYMONGO DATABASE COLLECTION URI`: the same protocol as
    /// `anymongo_tests::cold_request`, timed inside the script after `import pymongo`.
    const PYMONGO: &str = r#"
import sys, time, pymongo
database, collection, uri = sys.argv[1:4]
start = time.perf_counter()
client = pymongo.MongoClient(uri)
corpus = client[database][collection]
assert corpus.find_one({"_id": 1}) is not None, "no document with _id 1"
print(f"cold {(time.perf_counter() - start) * 1e3:.1f}", flush=True)
sys.stdin.readline()
start = time.perf_counter()
assert corpus.find_one({"_id": 1}) is not None, "no document with _id 1"
print(f"warm {(time.perf_counter() - start) * 1e3:.1f}", flush=True)
"#;
    /// What pymongo's child runs first against the Atlas-shaped fixture: dnspython's
    /// default resolver (pymongo's SRV and TXT look-ups) and the members' names (which
    /// pymongo resolves with `socket.getaddrinfo`) asked of `ATLAS_NAMESERVER` only.
    const PYMONGO_ATLAS: &str = r#"
import os, socket, dns.resolver
_host, _port = os.environ["ATLAS_NAMESERVER"].rsplit(":", 1)
_resolver = dns.resolver.Resolver(configure=False)
_resolver.nameservers = [_host]
_resolver.port = int(_port)
dns.resolver.default_resolver = _resolver
_getaddrinfo = socket.getaddrinfo
def _atlas_getaddrinfo(host, *args, **kwargs):
    if isinstance(host, str) and host.endswith(".mongodb.test"):
        host = _resolver.resolve(host, "A")[0].address
    return _getaddrinfo(host, *args, **kwargs)
socket.getaddrinfo = _atlas_getaddrinfo
"#;

    /// Where the children's flights are read: a latency proxy, or the Atlas-shaped
    /// fixture (its proxies and its DNS relay on one clock).
    trait Network {
        /// The time on the flights' clock.
        fn elapsed(&self) -> Duration;
        /// The connections so far.
        fn connections(&self) -> Vec<Connection>;
    }

    impl Network for LatencyProxy {
        fn elapsed(&self) -> Duration {
            LatencyProxy::elapsed(self)
        }
        fn connections(&self) -> Vec<Connection> {
            LatencyProxy::connections(self)
        }
    }

    impl Network for AtlasFixture {
        fn elapsed(&self) -> Duration {
            AtlasFixture::elapsed(self)
        }
        fn connections(&self) -> Vec<Connection> {
            AtlasFixture::connections(self)
        }
    }

    /// What one driver took.
    struct Measured {
        driver: String,
        cold_ms: String,
        cold_round_trips: usize,
        warm_ms: String,
        warm_round_trips: usize,
        /// The cold request's flights.
        cold_log: String,
    }

    pub fn run(args: &[String]) -> Result<(), String> {
        let mut one_way = Duration::from_millis(25);
        let mut bench = setup::workspace_root().join("tests/bench/target/release/anymongo-bench");
        let mut wasi = true;
        let mut node = true;
        let mut atlas = false;
        let mut dns_one_way = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value"));
            match arg.as_str() {
                "--one-way-ms" => {
                    let ms = value()?.parse().map_err(|e| format!("--one-way-ms: {e}"))?;
                    one_way = Duration::from_millis(ms);
                }
                "--bench" => bench = PathBuf::from(value()?),
                "--no-wasi" => wasi = false,
                "--no-node" => node = false,
                "--atlas" => atlas = true,
                "--dns-one-way-ms" => {
                    let ms = value()?
                        .parse()
                        .map_err(|e| format!("--dns-one-way-ms: {e}"))?;
                    dns_one_way = Some(Duration::from_millis(ms));
                }
                other => return Err(format!("unknown option {other} (see the source's doc)")),
            }
        }

        if atlas {
            return run_atlas(one_way, dns_one_way.unwrap_or(one_way), node);
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let certs = certs::generate(dir.path())?;
        let server = TestServer::start(&certs.scram_server_options(USER, PASSWORD))?;
        let server_address = format!("{}:{}", server.host, server.port);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(seed(&server))?;

        let python = setup::cache_dir().join("venv/bin/python");
        let myself = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cases: Vec<(&str, Command)> = Vec::new();
        let mut native = Command::new(&myself);
        native.arg("--child");
        cases.push(("anymongo (native)", native));
        if wasi {
            // Built with this program's profile, so that both anymongo rows compare.
            let wasm = setup::wasip2_binary_of_profile(
                "anymongo-tests",
                "cold_request",
                !cfg!(debug_assertions),
            );
            let mut wasip2 = Command::new(setup::wasmtime());
            // The program reads the CA file (tlsCAFile) from the certificates' folder.
            wasip2
                .args(["run", "-S", "inherit-network=y", "--dir"])
                .arg(format!("{0}::{0}", certs.dir.display()))
                .arg(wasm)
                .arg("--child");
            cases.push(("anymongo (wasip2, wasmtime)", wasip2));
        }
        if bench.exists() {
            let mut official = Command::new(&bench);
            official.args(["--cold-request-child", "official"]);
            cases.push(("mongodb 3 (Rust)", official));
        } else {
            eprintln!(
                "cold_request: no {} (cargo build --release in tests/bench): \
                 the official Rust driver is left out",
                bench.display()
            );
        }
        let mut pymongo = Command::new(&python);
        pymongo.args(["-c", PYMONGO, DATABASE, COLLECTION]);
        cases.push(("pymongo", pymongo));
        if node {
            node_cases(&mut cases);
        }

        let mut rows = Vec::new();
        for (driver, mut command) in cases {
            // A proxy per driver: its log holds that driver's connections only.
            let proxy = runtime
                .block_on(LatencyProxy::start(&server_address, one_way))
                .map_err(|e| format!("cannot start the latency proxy: {e}"))?;
            let uri = format!(
                "mongodb://{USER}:{PASSWORD}@{}/?tls=true&tlsCAFile={}",
                proxy.address(),
                certs.ca_pem.display()
            );
            command.arg(&uri);
            match measure(&proxy, driver, command) {
                Ok(measured) => rows.push(measured),
                Err(why) => eprintln!("cold_request: {driver}: {why}"),
            }
        }

        print_report(
            &format!(
                "cold request at {} ms RTT (TLS, SCRAM-SHA-256), SecantusDB on loopback behind the latency proxy",
                2 * one_way.as_millis()
            ),
            &rows,
        );
        Ok(())
    }

    /// The table of `rows`, then each cold request's flights.
    fn print_report(title: &str, rows: &[Measured]) {
        println!("{title}\n");
        println!("| driver | cold ms | cold round trips | warm ms | warm round trips |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        for row in rows {
            println!(
                "| {} | {} | {} | {} | {} |",
                row.driver, row.cold_ms, row.cold_round_trips, row.warm_ms, row.warm_round_trips
            );
        }
        for row in rows {
            println!(
                "\n{}, cold: flights (direction, bytes, @ms sent, [round trip])\n{}",
                row.driver, row.cold_log
            );
        }
    }

    /// The `--atlas` measurement: per driver that can be pointed at the fixture's DNS
    /// (see the module doc), a fixture of its own, seeded, and its child.
    fn run_atlas(one_way: Duration, dns_one_way: Duration, node: bool) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let myself = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cases: Vec<(&str, Command)> = Vec::new();
        let mut native = Command::new(&myself);
        native.arg("--child");
        cases.push(("anymongo (native)", native));
        let mut pymongo = Command::new(setup::cache_dir().join("venv/bin/python"));
        pymongo.args([
            "-c",
            &format!("{PYMONGO_ATLAS}{PYMONGO}"),
            DATABASE,
            COLLECTION,
        ]);
        cases.push(("pymongo", pymongo));
        if node {
            node_cases(&mut cases);
        }
        eprintln!(
            "cold_request: --atlas leaves out the wasip2 build and the official Rust driver \
             (they resolve names through the system only)"
        );

        let mut rows = Vec::new();
        for (driver, mut command) in cases {
            let fixture = runtime.block_on(AtlasFixture::start(one_way, dns_one_way))?;
            runtime.block_on(fixture.seed(
                DATABASE,
                COLLECTION,
                doc! { "_id": 1, "text": "cold" },
            ))?;
            command
                .arg(fixture.uri())
                .env("ATLAS_NAMESERVER", fixture.nameserver().to_string());
            match measure(&fixture, driver, command) {
                Ok(measured) => rows.push(measured),
                Err(why) => eprintln!("cold_request: {driver}: {why}"),
            }
        }
        print_report(
            &format!(
                "cold request against the Atlas-shaped fixture (mongodb+srv, 3 members, TLS, \
                 SCRAM-SHA-256) at {} ms RTT, DNS at {} ms RTT; round trips include DNS's",
                2 * one_way.as_millis(),
                2 * dns_one_way.as_millis()
            ),
            &rows,
        );
        Ok(())
    }

    /// The Node.js rows (see the module doc), those that can run: each one left out
    /// says why.
    fn node_cases(cases: &mut Vec<(&str, Command)>) {
        let root = setup::workspace_root();
        let scripts = root.join("tests/cold_request");
        // Built each time (cargo's build is incremental, wasm-bindgen's quick), so that
        // the package measured is this tree's driver, as the wasip2 row's is.
        let built = Command::new("bash")
            .arg(root.join("wasm-demo/build.sh"))
            .status()
            .map_err(|e| e.to_string())
            .and_then(|status| {
                if status.success() {
                    Ok(())
                } else {
                    Err(format!("wasm-demo/build.sh failed ({status})"))
                }
            });
        // The package's one dependency, which `npm ci` in wasm-demo installs.
        let bson = root.join("wasm-demo/node_modules/bson/lib/bson.mjs");
        let npm = match built {
            Ok(()) if bson.exists() => Ok(()),
            Ok(()) => Err(format!("no {} (npm ci in wasm-demo)", bson.display())),
            Err(why) => Err(why),
        };
        match &npm {
            Ok(()) => {
                let mut package = Command::new("node");
                package
                    .arg(scripts.join("node.mjs"))
                    .args(["anymongo", DATABASE, COLLECTION]);
                cases.push(("anymongo npm (Node.js)", package));
            }
            Err(why) => eprintln!("cold_request: {why}: the npm package's rows are left out"),
        }
        let official_dir = setup::cache_dir().join("bench-node");
        if official_dir
            .join("node_modules/mongodb/package.json")
            .exists()
        {
            let mut official = Command::new("node");
            official
                .arg(scripts.join("node.mjs"))
                .arg(&official_dir)
                .args([DATABASE, COLLECTION]);
            cases.push(("mongodb 7 (Node.js)", official));
        } else {
            eprintln!(
                "cold_request: no mongodb in {} (./run.sh bench installs it): \
                 the official Node.js driver is left out",
                official_dir.display()
            );
        }
        let workerd = setup::cache_dir().join("js-runtimes/node_modules/.bin/workerd");
        match (&npm, workerd.exists()) {
            (Ok(()), true) => {
                let mut worker = Command::new("node");
                worker
                    .arg(scripts.join("workerd.mjs"))
                    .arg(&workerd)
                    .args([DATABASE, COLLECTION]);
                cases.push(("anymongo npm (workerd)", worker));
            }
            (Ok(()), false) => eprintln!(
                "cold_request: no {} (bash tests/setup.sh js-runtimes): \
                 the npm package under workerd is left out",
                workerd.display()
            ),
            (Err(_), _) => {}
        }
    }

    /// Inserts the document the drivers find, straight to the server.
    async fn seed(server: &TestServer) -> Result<(), String> {
        let uri = server
            .uri()
            .replacen("mongodb://", &format!("mongodb://{USER}:{PASSWORD}@"), 1);
        let client = anymongo::Client::with_uri_str(&uri)
            .await
            .map_err(|e| e.to_string())?;
        let corpus = client.database(DATABASE).collection::<Document>(COLLECTION);
        let insert = corpus.insert_one(doc! { "_id": 1, "text": "cold" });
        tokio::time::timeout(CASE_TIMEOUT, insert)
            .await
            .map_err(|_| "seeding timed out".to_owned())?
            .map_err(|e| format!("cannot seed the document: {e}"))?;
        Ok(())
    }

    /// Kills the child when dropped, whatever happened.
    struct Reaped(Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Runs one driver's child behind `proxy` and reads its two lines, each within
    /// [`CASE_TIMEOUT`].
    fn measure(
        proxy: &impl Network,
        driver: &str,
        mut command: Command,
    ) -> Result<Measured, String> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let from = proxy.elapsed();
        let mut child = Reaped(command.spawn().map_err(|e| format!("cannot start: {e}"))?);
        let stdout = child.0.stdout.take().ok_or("no stdout")?;
        let (lines, next) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let expect = |word: &str| -> Result<String, String> {
            match next.recv_timeout(CASE_TIMEOUT) {
                Ok(Ok(line)) => match line.strip_prefix(word) {
                    Some(ms) => Ok(ms.trim().to_owned()),
                    None => Err(format!("expected '{word} MS', got '{line}'")),
                },
                Ok(Err(e)) => Err(e.to_string()),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    Err(format!("no '{word}' line within {CASE_TIMEOUT:?}"))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Err(format!("exited before its '{word}' line"))
                }
            }
        };
        let cold_ms = expect("cold")?;
        let cold_to = proxy.elapsed();
        let mut stdin = child.0.stdin.take().ok_or("no stdin")?;
        writeln!(stdin).map_err(|e| e.to_string())?;
        let warm_ms = expect("warm")?;
        let warm_to = proxy.elapsed();
        let connections: Vec<Connection> = proxy.connections();
        Ok(Measured {
            driver: driver.to_owned(),
            cold_ms,
            cold_round_trips: latency::round_trips(&connections, from, cold_to),
            warm_ms,
            warm_round_trips: latency::round_trips(&connections, cold_to, warm_to),
            cold_log: FlightLog {
                connections: &connections,
                from,
                to: cold_to,
            }
            .to_string(),
        })
    }
}
