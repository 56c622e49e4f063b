//! DNS seedlist discovery in the wasm32-wasip2 build through its own resolver
//! (`anymongo_wasi::WasiResolver`: DNS messages over wasi:sockets UDP, TCP when an
//! answer is truncated), run under wasmtime against the loopback test DNS server and
//! compared with the native build (hickory) against the same server. Both builds run
//! the `srv_probe` binary, so they share every line of code but the resolver and the
//! clock.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anymongo_tests::dns::{spec_records, DnsServer, Entry};
use anymongo_tests::{setup, spec};
use serde_json::Value;

/// Every probe run (wasmtime included, which compiles the module on first use) ends
/// within this, or the test fails.
const PROBE_BOUND: Duration = Duration::from_secs(180);

/// The WASI resolver's bound on one exchange, and how many UDP exchanges it tries
/// (private constants of anymongo-wasi's dns module, restated).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
const UDP_ATTEMPTS: u32 = 2;

/// Slack for the time a lookup takes beyond its bound.
const SLACK: Duration = Duration::from_secs(2);

fn localhost() -> IpAddr {
    IpAddr::from([127, 0, 0, 1])
}

/// Which build of the probe to run.
#[derive(Debug, Clone, Copy)]
enum Build<'a> {
    Native,
    /// Under wasmtime, with `/etc` mapped to a host folder when given.
    Wasi(Option<&'a Path>),
}

/// Runs the probe with `args` (`[--bound-ms N] NAMESERVER URI...`) and returns its
/// JSON lines; the process is killed if it outlives [`PROBE_BOUND`].
fn probe(build: Build<'_>, args: &[String]) -> Vec<Value> {
    let mut command = match build {
        Build::Native => Command::new(env!("CARGO_BIN_EXE_srv_probe")),
        Build::Wasi(etc) => {
            let mut command = Command::new(setup::wasmtime());
            command.args([
                "run",
                "-S",
                "inherit-network=y",
                "-S",
                "udp=y",
                "-S",
                "tcp=y",
            ]);
            if let Some(dir) = etc {
                command.arg("--dir").arg(format!("{}::/etc", dir.display()));
            }
            command.arg(setup::wasip2_binary("anymongo-tests", "srv_probe"));
            command
        }
    };
    let child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the probe starts");
    let pid = child.id();
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output: Output = match outcome.recv_timeout(PROBE_BOUND) {
        Ok(output) => output.expect("the probe runs"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the {build:?} probe did not finish within {PROBE_BOUND:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the {build:?} probe failed: {stdout}\n{stderr}"
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// The probe's arguments: the bound, the name server and the URIs.
fn args(bound_ms: u64, nameserver: &str, uris: &[String]) -> Vec<String> {
    let mut args = vec![
        "--bound-ms".to_owned(),
        bound_ms.to_string(),
        nameserver.to_owned(),
    ];
    args.extend(uris.iter().cloned());
    args
}

/// The `uri` of every srv_seedlist spec file, and each again with user information
/// when it has none (so an `authSource` from a TXT record lands in a credential).
fn spec_uris() -> Vec<String> {
    let dir = spec::corpus_dir().unwrap().join("srv_seedlist");
    let mut uris = BTreeSet::new();
    for file in spec::json_files(&dir).unwrap() {
        let test = spec::read_json_object(&dir.join(&file)).unwrap();
        let uri = test["uri"].as_str().unwrap().to_owned();
        if !uri.contains('@') {
            uris.insert(uri.replacen("mongodb+srv://", "mongodb+srv://user:password@", 1));
        }
        uris.insert(uri);
    }
    uris.into_iter().collect()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|array| array.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Checks that the WASI line says what the native one does: the same SRV look-up, and
/// the same seed list and options or the same error. With `srvMaxHosts` below the
/// number of records the seeds are a random pick, so then each build's seeds must be
/// distinct hosts of the look-up, as many as the other build's.
fn assert_same(native: &Value, wasi: &Value) {
    let uri = &native["uri"];
    assert_eq!(uri, &wasi["uri"]);
    assert_eq!(
        native["lookup"], wasi["lookup"],
        "{uri}: SRV look-ups differ"
    );
    let found = strings(&native["lookup"]["hosts"]);
    let (native, wasi) = (&native["resolved"], &wasi["resolved"]);
    let (native_hosts, wasi_hosts) = (strings(&native["hosts"]), strings(&wasi["hosts"]));
    if native.get("error").is_none() && native_hosts.len() < found.len() {
        assert_eq!(native["options"], wasi["options"], "{uri}");
        assert_eq!(native_hosts.len(), wasi_hosts.len(), "{uri}");
        let picked: BTreeSet<&str> = wasi_hosts.iter().copied().collect();
        assert_eq!(picked.len(), wasi_hosts.len(), "{uri}: {wasi_hosts:?}");
        assert!(
            picked.iter().all(|host| found.contains(host)),
            "{uri}: {wasi_hosts:?}"
        );
    } else {
        assert_eq!(native, wasi, "{uri}: resolutions differ");
    }
}

#[test]
fn the_wasi_resolver_resolves_every_srv_seedlist_uri_as_the_native_one_does() {
    let server = DnsServer::start().unwrap();
    server.load(spec_records(localhost()));
    let uris = spec_uris();
    let args = args(5000, &server.address().to_string(), &uris);
    let native = probe(Build::Native, &args);
    let before = server.queries();
    let wasi = probe(Build::Wasi(None), &args);
    assert!(
        server.queries() > before,
        "the WASI build never asked the server"
    );
    assert_eq!(native.len(), uris.len());
    assert_eq!(wasi.len(), uris.len());
    for (native, wasi) in native.iter().zip(&wasi) {
        assert_same(native, wasi);
    }
    // At least half of them resolve; the rest fail for what the URIs or the records
    // hold, never for want of an answer (two timeouts would compare equal).
    for line in &wasi {
        let error = line["resolved"]["error"].as_str().unwrap_or_default();
        assert!(!error.contains("timed out"), "{line}");
    }
    let resolved = wasi
        .iter()
        .filter(|line| line["resolved"].get("error").is_none())
        .count();
    assert!(
        resolved >= uris.len() / 2,
        "only {resolved} of {} resolved",
        uris.len()
    );
    println!(
        "{} URIs compared: {resolved} resolved, {} failed alike",
        uris.len(),
        uris.len() - resolved
    );
}

/// The one line of a probe run with `bound_ms` for `uri` against `nameserver`.
fn wasi_line(etc: Option<&Path>, bound_ms: u64, nameserver: &str, uri: &str) -> Value {
    let mut lines = probe(
        Build::Wasi(etc),
        &args(bound_ms, nameserver, &[uri.to_owned()]),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines.remove(0)
}

fn error_of(line: &Value) -> &str {
    line["resolved"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error: {line}"))
}

fn elapsed(line: &Value) -> Duration {
    Duration::from_millis(line["elapsed_ms"].as_u64().unwrap())
}

#[test]
fn a_silent_dns_server_makes_the_wasi_lookup_time_out_within_the_bound() {
    let server = DnsServer::start().unwrap();
    server.load(spec_records(localhost()));
    server.set_silent(true);
    let nameserver = server.address().to_string();
    let uri = "mongodb+srv://test1.test.build.10gen.cc/";

    // The driver's bound ends the look-up first.
    let line = wasi_line(None, 1000, &nameserver, uri);
    let error = error_of(&line);
    assert!(error.contains("timed out"), "{error}");
    assert!(error.contains("test1.test.build.10gen.cc"), "{error}");
    let bound = Duration::from_secs(1);
    assert!(elapsed(&line) >= bound, "gave up early: {line}");
    assert!(elapsed(&line) < bound + SLACK, "{line}");

    // Without one (--bound-ms 0), the resolver's own timeouts end it: each of the SRV
    // and TXT questions is asked UDP_ATTEMPTS times, each for ATTEMPT_TIMEOUT.
    let before = server.queries();
    let line = wasi_line(None, 0, &nameserver, uri);
    let error = error_of(&line);
    assert!(error.contains("did not answer over UDP"), "{error}");
    assert!(error.contains(&nameserver), "{error}");
    let bound = ATTEMPT_TIMEOUT * UDP_ATTEMPTS;
    assert!(elapsed(&line) >= bound, "gave up early: {line}");
    assert!(elapsed(&line) < bound + SLACK, "{line}");
    // The probe's SRV look-up alone, then resolve_uri's SRV and TXT look-ups.
    let expected = 3 * usize::try_from(UDP_ATTEMPTS).unwrap();
    assert_eq!(server.queries() - before, expected);
}

#[test]
fn answers_too_long_for_udp_come_to_the_wasi_build_over_tcp() {
    let server = DnsServer::start().unwrap();
    let name = "_mongodb._tcp.big.test.build.10gen.cc";
    let targets: Vec<String> = (0..40)
        .map(|i| format!("a-rather-long-host-name-number-{i:02}.test.build.10gen.cc"))
        .collect();
    server.load(targets.iter().map(|target| Entry::srv(name, target, 27017)));
    let uri = "mongodb+srv://big.test.build.10gen.cc/".to_owned();
    let args = args(5000, &server.address().to_string(), &[uri]);
    let native = probe(Build::Native, &args);
    let before = server.tcp_queries();
    let wasi = probe(Build::Wasi(None), &args);
    assert!(server.tcp_queries() > before, "no WASI query came over TCP");
    let hosts: Vec<String> = targets.iter().map(|t| format!("{t}:27017")).collect();
    assert_eq!(strings(&wasi[0]["resolved"]["hosts"]), hosts, "{}", wasi[0]);
    assert_same(&native[0], &wasi[0]);
}

#[test]
fn the_wasi_resolver_reads_resolv_conf_or_says_how_to_name_a_server() {
    let uri = "mongodb+srv://test1.test.build.10gen.cc/";
    // wasmtime grants no file system by default.
    let line = wasi_line(None, 5000, "system", uri);
    let error = error_of(&line);
    assert!(error.contains("/etc/resolv.conf"), "{error}");
    assert!(error.contains("WasiResolver::with_nameserver"), "{error}");

    // A granted resolv.conf names the server (on port 53, where nothing answers on
    // this loopback address: the error names it).
    let etc = tempfile::tempdir().unwrap();
    std::fs::write(
        etc.path().join("resolv.conf"),
        "# test\nsearch example.com\nnameserver 127.0.0.77\nnameserver 127.0.0.78\n",
    )
    .unwrap();
    let line = wasi_line(Some(etc.path()), 5000, "system", uri);
    let error = error_of(&line);
    assert!(error.contains("127.0.0.77:53"), "{error}");
}
