//! The wasm32-wasip2 build of the same core, run under wasmtime against the same
//! SecantusDB servers, checked by the harness: the WASI demo connects, inserts and
//! reads back, and a native client then verifies what it wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anymongo::bson::doc;
use anymongo_tests::compression::CompressingServer;
use anymongo_tests::harness;
use anymongo_tests::mock::{is_hello, standalone_hello, Answer, MockServer};
use anymongo_tests::replica_set::MockReplicaSet;
use anymongo_tests::server::{self, TestServer};
use anymongo_tests::silent::SilentServer;
use anymongo_tests::socks5::Socks5Proxy;
use anymongo_tests::{certs, demo, official, round_trip, setup};

/// The wasip2 build of the anymongo-tests binary `name`.
fn wasi_binary(name: &str) -> PathBuf {
    setup::wasip2_binary("anymongo-tests", name)
}

/// `wasmtime run` with the network (names included) open to the program.
fn wasmtime_run() -> Command {
    let mut command = Command::new(setup::wasmtime());
    command.args([
        "run",
        "-S",
        "inherit-network=y",
        "-S",
        "allow-ip-name-lookup=y",
    ]);
    command
}

/// Runs the WASI demo against `uri` into `collection`, granting it read access to
/// `readable` (for a CA file), and checks its report and what it wrote.
async fn run_wasi_demo(uri: &str, collection: &str, readable: Option<&Path>) {
    run_wasi_demo_checked_through(uri, uri, collection, readable).await;
}

/// [`run_wasi_demo`], checking what it wrote through `check_uri`.
async fn run_wasi_demo_checked_through(
    uri: &str,
    check_uri: &str,
    collection: &str,
    readable: Option<&Path>,
) {
    let mut command = wasmtime_run();
    if let Some(dir) = readable {
        command.arg("--dir").arg(format!("{0}::{0}", dir.display()));
    }
    let output = command
        .arg(wasi_binary("demo"))
        .args([uri, collection])
        .output()
        .expect("wasmtime runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "WASI demo failed: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("connected from wasi: wire version"),
        "{stdout}"
    );
    let inserted = format!("inserted 3 documents into {}.{collection}", demo::DATABASE);
    assert!(stdout.contains(&inserted), "{stdout}");
    assert!(stdout.contains("read back 3 documents"), "{stdout}");

    // What the WASI build wrote is really on the server.
    let client = anymongo::Client::with_uri_str(check_uri).await.unwrap();
    let found = client
        .database(demo::DATABASE)
        .run_command(
            doc! { "find": collection, "filter": { "runtime": "wasi" }, "sort": { "_id": 1 } },
        )
        .await
        .unwrap();
    assert_eq!(
        demo::names(&demo::first_batch(&found)),
        ["apple", "banana", "cherry"]
    );
}

#[tokio::test]
async fn wasi_build_pings_inserts_and_finds_against_the_same_server() {
    run_wasi_demo(&server::shared().uri(), "from_wasi", None).await;
}

/// Runs `command` to its end, or kills it and fails the test once `bound` has passed.
fn output_within(command: &mut Command, bound: Duration) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wasmtime runs");
    let id = child.id();
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match outcome.recv_timeout(bound) {
        Ok(output) => output.expect("wasmtime runs"),
        Err(_) => {
            // Ends the process this test started, by its id.
            let _ = Command::new("kill")
                .args(["-KILL", &id.to_string()])
                .status();
            panic!("{command:?} did not finish within {bound:?}");
        }
    }
}

/// The typed document of `anymongo_tests::round_trip` (the native test's, in
/// `crud.rs`) through the wasip2 build's `insert_one` and `find_one`; what it wrote
/// reads back natively as the same struct.
#[tokio::test]
async fn wasi_build_round_trips_a_typed_document_unchanged() {
    let uri = server::shared().uri();
    let collection = "from_wasi";
    let output = output_within(
        wasmtime_run()
            .arg(wasi_binary("round_trip"))
            .args([uri.as_str(), collection]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "WASI round trip failed: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("typed round trip from wasi: unchanged"),
        "{stdout}"
    );
    let client = anymongo::Client::with_uri_str(&uri).await.unwrap();
    let found = harness::within(
        Duration::from_secs(30),
        client
            .database(round_trip::DATABASE)
            .collection::<round_trip::Account>(collection)
            .find_one(doc! {}),
    )
    .await
    .unwrap();
    assert_eq!(found, Some(round_trip::sample()));
}

/// The programs written from the official `mongodb` crate's documentation
/// (`anymongo_tests::official`, run natively by `tests/official_api.rs`) build for
/// wasm32-wasip2 unchanged and run under wasmtime: the same API on both targets.
#[tokio::test]
async fn wasi_build_runs_the_programs_written_for_the_official_crate() {
    let uri = server::shared().uri();
    let output = output_within(
        wasmtime_run()
            .arg(wasi_binary("official"))
            .arg(uri.as_str()),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for (name, _) in official::PROGRAMS {
        assert!(
            stdout.contains(&format!("ok: {name}\n")),
            "{name} did not run:\n{stdout}"
        );
    }
}

#[tokio::test]
async fn wasi_build_speaks_tls_with_rustls() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.server_options(false)).unwrap();
    assert!(
        server.uri().contains("tls=true&tlsCAFile="),
        "{}",
        server.uri()
    );
    run_wasi_demo(&server.uri(), "from_wasi_over_tls", Some(dir.path())).await;
}

#[tokio::test]
async fn wasi_build_authenticates_with_x509_over_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.x509_server_options()).unwrap();
    let uri = certs.x509_uri(&server);
    run_wasi_demo(&uri, "from_wasi_as_x509", Some(dir.path())).await;
}

#[tokio::test]
async fn wasi_build_speaks_tls_through_a_socks5_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.server_options(false)).unwrap();
    let proxy = Socks5Proxy::start(Some(("user", "p4ss"))).unwrap();
    let uri = format!(
        "{}&{}&proxyUsername=user&proxyPassword=p4ss",
        server.uri(),
        proxy.uri_options()
    );
    // Checked directly, so that the tunnels counted are the WASI build's.
    run_wasi_demo_checked_through(
        &uri,
        &server.uri(),
        "from_wasi_via_socks5",
        Some(dir.path()),
    )
    .await;
    let destination = format!("127.0.0.1:{}", server.port);
    assert!(
        proxy.tunnels_to(&destination) >= 1,
        "the WASI build opened no tunnel to {destination}: {}",
        proxy.log()
    );
}

/// Runs the wasip2 `topology` probe (single-threaded monitoring: WASI has no
/// spawner) against `uri` with `steps`; returns its report. Blocking work runs off
/// the runtime, whose threads serve the mock replica set meanwhile.
async fn wasi_topology(uri: String, steps: &[&str]) -> String {
    let wasm = wasi_binary("topology");
    let mut command = Command::new(setup::wasmtime());
    command
        .args(["run", "-S", "inherit-network=y"])
        .arg(wasm)
        .arg(uri)
        .args(steps);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("wasmtime runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "topology probe failed: {stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_build_discovers_a_replica_set_and_follows_a_step_down() {
    let set = MockReplicaSet::start().await;
    let report = wasi_topology(set.uri(""), &["insert:1", "stepdown", "insert:2"]).await;
    let lines: Vec<&str> = report.lines().collect();
    // Discovery of all three members from the one seed, in the first scan.
    let first = lines
        .iter()
        .position(|line| line.starts_with("topology:"))
        .unwrap();
    assert_eq!(lines[first - 1], "step insert:1: ok", "{report}");
    let topology = lines[first];
    assert!(topology.contains("ReplicaSetWithPrimary"), "{report}");
    for index in 0..3 {
        assert!(topology.contains(set.address(index)), "{report}");
    }
    assert!(report.contains("step stepdown: ok"), "{report}");
    // The client still believes in the old primary: the refusal sends it to rescan.
    assert!(report.contains("insert:2 refused"), "{report}");
    assert!(report.contains("step insert:2: ok"), "{report}");
    let accepted: Vec<(i32, usize)> = set
        .inserts()
        .iter()
        .filter(|insert| insert.accepted)
        .map(|insert| (insert.documents[0].get_i32("_id").unwrap(), insert.member))
        .collect();
    assert_eq!(accepted, [(1, 0), (2, 1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_build_names_every_member_when_all_are_down() {
    let set = MockReplicaSet::start().await;
    for index in 0..3 {
        set.down(index).await;
    }
    let report = wasi_topology(set.uri_all("serverSelectionTimeoutMS=1000"), &["ping"]).await;
    // Single-threaded selection tries once (serverSelectionTryOnce defaults to true).
    assert!(
        report.contains("step ping: error: server selection failed after one scan"),
        "{report}"
    );
    for index in 0..3 {
        assert!(report.contains(set.address(index)), "{report}");
    }
}

/// The WASI demo through a server that speaks only OP_COMPRESSED once negotiated:
/// each compressor round-trips the demo's commands and replies from the wasip2 build
/// (the multi-threaded runtime serves the mock while the demo runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_build_round_trips_with_each_compressor() {
    for &compressor in anymongo::uri::Compressor::ALL {
        let server = CompressingServer::start(&["snappy", "zlib", "zstd"]).await;
        let uri = format!("mongodb://{}/?compressors={compressor}", server.address());
        run_wasi_demo(&uri, "compressed", None).await;
        assert_eq!(server.violations(), Vec::<String>::new(), "{compressor}");
        let commands: Vec<_> = server
            .received()
            .into_iter()
            .filter(|r| r.command != "hello" && r.command != "isMaster")
            .collect();
        // drop, insert and find from the demo, then the native check's find.
        assert_eq!(commands.len(), 4, "{commands:?}");
        assert!(
            commands
                .iter()
                .all(|r| r.compressor_id == Some(compressor.id())),
            "{compressor}: {commands:?}"
        );
    }
}

/// `timeoutMS` from the wasip2 build against a server that accepts connections and
/// never answers (issue 22): the operation fails with the operation-timeout error once
/// its 200 ms have passed, measured on the WASI monotonic clock by the `op_timeout`
/// program. Single-threaded monitoring (WASI has no spawner): the scan that server
/// selection runs on demand is cut by the operation's deadline too. The bound is
/// generous (200 ms + 1 s) for loaded CI machines; the figures are printed.
#[tokio::test]
async fn wasi_build_times_out_at_timeout_ms_against_a_silent_server() {
    let cases = [
        ("find_one", "timeoutMS=200&directConnection=true"),
        (
            "insert_one",
            "timeoutMS=200&serverSelectionTimeoutMS=30000&connectTimeoutMS=30000",
        ),
    ];
    for (op, options) in cases {
        let server = SilentServer::start().unwrap();
        let uri = format!("mongodb://{}/?{options}", server.address());
        let output = output_within(
            wasmtime_run()
                .arg(wasi_binary("op_timeout"))
                .args([&uri, op]),
            Duration::from_secs(60),
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!(
            "wasi {op} ?{options}: {}",
            stdout.trim().replace('\n', "; ")
        );
        assert!(stdout.contains("outcome: timeout"), "{stdout}\n{stderr}");
        assert!(output.status.success(), "{stdout}\n{stderr}");
        let elapsed = stdout
            .lines()
            .find_map(|line| line.strip_prefix("elapsed_us: "))
            .and_then(|micros| micros.parse().ok())
            .map(Duration::from_micros)
            .unwrap_or_else(|| panic!("no elapsed time: {stdout}"));
        assert!(elapsed >= Duration::from_millis(190), "too soon: {stdout}");
        assert!(elapsed < Duration::from_millis(1200), "too late: {stdout}");
        // The program did reach the server: what ran out was the wait for an answer.
        let (seen, reached) = server
            .wait_for(Duration::from_secs(10), |seen| seen.bytes_read > 0)
            .await;
        assert!(reached, "the server saw nothing: {seen:?}");
    }
}

/// Kills the child process it holds when dropped: a test that fails midway leaves no
/// wasmtime behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the wasip2 `idle_check` program against `server` (see its documentation):
/// after its first ping, waits until the server has closed a connection when
/// `server_closes`, then lets the program go on. Returns the lines it printed after the
/// first ping's.
async fn idle_check_on_wasi(server: &MockServer, server_closes: bool) -> Vec<String> {
    use std::io::{BufRead, Write};

    let uri = format!("mongodb://{}/?directConnection=true", server.address());
    let mut child = Killed(
        wasmtime_run()
            .arg(wasi_binary("idle_check"))
            .arg(&uri)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("wasmtime runs"),
    );
    let mut stdin = child.0.stdin.take().expect("piped");
    let stdout = child.0.stdout.take().expect("piped");
    let (lines, mut printed) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let bound = Duration::from_secs(60);
    let first = harness::within(bound, printed.recv()).await;
    assert_eq!(first.as_deref(), Some("first: ok"), "{uri}");
    if server_closes {
        harness::within(bound, server.closed_connections(1)).await;
    }
    stdin
        .write_all(b"go on\n")
        .expect("the program reads its input");
    drop(stdin);
    let mut rest = Vec::new();
    harness::within(bound, async {
        while let Some(line) = printed.recv().await {
            rest.push(line);
        }
    })
    .await;
    println!("wasi idle_check {uri}: {}", rest.join("; "));
    let status = child.0.wait().expect("wasmtime ends");
    assert!(status.success(), "{status}: {rest:?}");
    rest
}

/// A connection the server closed while it sat idle is replaced at check-out on the
/// wasip2 build too (the native side is in `pool.rs`): the `idle_check` program pings a
/// mock server that closes each connection after one command, waits until the server
/// has closed it, puts its clock past the pool's idle check and pings again, which must
/// succeed on a new connection (`ping` is not retried).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_build_replaces_a_connection_the_server_closed_while_idle() {
    let server = MockServer::answering(|command, _| match is_hello(command) {
        true => Answer::Reply(standalone_hello()),
        false => Answer::ReplyAndClose(doc! { "ok": 1 }),
    })
    .await;
    let printed = idle_check_on_wasi(&server, true).await;
    assert_eq!(printed, ["second: ok", "closed: 1 Error", "created: 2"]);
}

/// The same check finds a connection still open after sitting idle, and the pool hands
/// it out again; over IPv6 loopback, which the WASI transport connects to as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_build_reuses_a_connection_still_open_after_sitting_idle_over_ipv6() {
    let server = MockServer::answering_at("[::1]:0", |command, _| match is_hello(command) {
        true => Answer::Reply(standalone_hello()),
        false => Answer::Reply(doc! { "ok": 1 }),
    })
    .await;
    assert!(
        server.address().starts_with("[::1]:"),
        "{}",
        server.address()
    );
    let printed = idle_check_on_wasi(&server, false).await;
    assert_eq!(printed, ["second: ok", "created: 1"]);
}

/// The OCSP Support spec's matrix under WASI, as `tests/ocsp.rs` runs it natively: a
/// good stapled response connects (Test 1), a revoked one (Test 2), a Must-Staple
/// certificate without a staple (Malicious Server Tests 1 and 2), and a certificate
/// without a staple whose responder says it is revoked (Test 4) fail the handshake, and
/// so does a certificate `tlsCRLFile` revokes; without a staple, a responder saying good
/// (Test 3), none listening (the Soft Fail Test), or one silent past a short
/// connectTimeoutMS connects. Multi-threaded: the TLS front runs on the test's runtime
/// while wasmtime runs.
#[tokio::test(flavor = "multi_thread")]
async fn wasi_build_runs_the_ocsp_matrix_and_checks_crl_files() {
    use anymongo_tests::http_mock::{HttpReply, MockHttp};
    use anymongo_tests::ocsp::{CertStatus, OcspPki, Signer, TlsFront, VALID_FROM, VALID_UNTIL};
    use std::net::{Ipv4Addr, SocketAddr};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let pki = OcspPki::generate(dir.path()).unwrap();
    let shared = server::shared();
    let backend = SocketAddr::from((Ipv4Addr::LOCALHOST, shared.port));
    let uri = |front: &TlsFront, options: &str| {
        format!(
            "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}\
             &serverSelectionTimeoutMS=1500{options}",
            front.port,
            pki.ca_pem.display()
        )
    };
    let fails_with = |uri: String, reason: &str| {
        let output = output_within(
            wasmtime_run()
                .arg("--dir")
                .arg(format!("{0}::{0}", dir.path().display()))
                .arg(wasi_binary("demo"))
                .args([&uri, "refused_by_ocsp"]),
            Duration::from_secs(60),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains("TLS handshake") && stderr.contains(reason),
            "expected a TLS failure with '{reason}', got: {stderr}"
        );
    };

    let good = pki.response(
        &pki.plain,
        CertStatus::Good,
        Signer::Delegate,
        VALID_FROM,
        Some(VALID_UNTIL),
    );
    let front = TlsFront::start(&pki.plain, good, backend).await;
    run_wasi_demo_checked_through(
        &uri(&front, ""),
        &shared.uri(),
        "from_wasi_with_ocsp",
        Some(dir.path()),
    )
    .await;
    let revoking = format!("&tlsCRLFile={}", pki.crl_revoking_plain.display());
    fails_with(uri(&front, &revoking), "revoked (listed in the tlsCRLFile)");

    let revoked = pki.response(
        &pki.plain,
        CertStatus::Revoked,
        Signer::Issuer,
        VALID_FROM,
        Some(VALID_UNTIL),
    );
    let front = TlsFront::start(&pki.plain, revoked, backend).await;
    fails_with(uri(&front, ""), "certificate is revoked");

    let front = TlsFront::start(&pki.must_staple, Vec::new(), backend).await;
    fails_with(uri(&front, ""), "Must-Staple");

    // Test 4: no staple, and the responder the certificate names (a scripted one on
    // loopback) says revoked, asked over wasi:sockets with the driver's HTTP client.
    let answer = Arc::new(Mutex::new(Vec::new()));
    let served = answer.clone();
    let responder = MockHttp::start(move |_| HttpReply::ok(served.lock().unwrap().clone())).await;
    let named_dir = dir.path().join("responder");
    std::fs::create_dir(&named_dir).unwrap();
    let named = OcspPki::generate_naming(&named_dir, &format!("{}/ocsp", responder.url())).unwrap();
    *answer.lock().unwrap() = named.response(
        &named.plain,
        CertStatus::Revoked,
        Signer::Issuer,
        VALID_FROM,
        Some(VALID_UNTIL),
    );
    let front = TlsFront::start(&named.plain, Vec::new(), backend).await;
    fails_with(
        format!(
            "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}\
             &serverSelectionTimeoutMS=1500",
            front.port,
            named.ca_pem.display()
        ),
        "certificate is revoked (",
    );
    let asked = responder.requests().len();
    assert!(asked >= 1);

    // Test 3: no staple, and the responder says good: the demo connects (each wasmtime
    // run is a new client, with an empty cache, so it asks again).
    *answer.lock().unwrap() = named.response(
        &named.plain,
        CertStatus::Good,
        Signer::Delegate,
        VALID_FROM,
        Some(VALID_UNTIL),
    );
    run_wasi_demo_checked_through(
        &format!(
            "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}\
             &serverSelectionTimeoutMS=1500",
            front.port,
            named.ca_pem.display()
        ),
        &shared.uri(),
        "from_wasi_with_ocsp_responder",
        Some(dir.path()),
    )
    .await;
    assert!(responder.requests().len() > asked);

    // The Soft Fail Test: no staple, and nothing listens where the certificate's
    // responder is ([`RESPONDER_URL`](anymongo_tests::ocsp::RESPONDER_URL)): connects.
    let front = TlsFront::start(&pki.plain, Vec::new(), backend).await;
    run_wasi_demo_checked_through(
        &uri(&front, ""),
        &shared.uri(),
        "from_wasi_soft_fail",
        Some(dir.path()),
    )
    .await;

    // A responder that stays silent, with a connectTimeoutMS under its five seconds:
    // given up on within what is left of the connection's time, which opens.
    let silent = MockHttp::start(|_| HttpReply::Silent).await;
    let silent_dir = dir.path().join("silent");
    std::fs::create_dir(&silent_dir).unwrap();
    let naming_silent =
        OcspPki::generate_naming(&silent_dir, &format!("{}/ocsp", silent.url())).unwrap();
    let front = TlsFront::start(&naming_silent.plain, Vec::new(), backend).await;
    run_wasi_demo_checked_through(
        &format!(
            "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}\
             &connectTimeoutMS=1000&serverSelectionTimeoutMS=5000",
            front.port,
            naming_silent.ca_pem.display()
        ),
        &shared.uri(),
        "from_wasi_silent_responder",
        Some(dir.path()),
    )
    .await;
    assert!(!silent.requests().is_empty());
}
