//! A client of a replica set with 10,000 members stays responsive (issue 21,
//! "Hardening against hostile servers and large deployments"): a scripted primary on
//! loopback lists itself and 9,999 members at loopback addresses where nothing listens,
//! so every member but the primary is Unknown and its monitor fails fast every
//! heartbeatFrequencyMS. A find against the primary must succeed, and the process's CPU
//! over a whole heartbeat period must stay under 10% of one core once the members have
//! been discovered: in the second period after the find (the first holds the first
//! check of every member, each a change of the description; its CPU is reported).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Document};
use anymongo::Client;
use anymongo_tests::harness::within;
use anymongo_tests::mock::{standalone_hello, MockServer};
use futures::TryStreamExt;

/// How many members the primary's hello lists, itself included.
const MEMBERS: usize = 10_000;

/// A measured window: one heartbeatFrequencyMS (the default 10 s), so that it holds
/// one check of every unreachable member.
const WINDOW: Duration = Duration::from_secs(10);

/// The acceptance bound: CPU time over the window, as a share of one core.
const MAX_CPU_SHARE: f64 = 0.10;

/// The port of the unreachable members. Port 1 (tcpmux) is privileged and unused on
/// loopback; every member address is checked to refuse connections before the client
/// starts.
const CLOSED_PORT: u16 = 1;

/// The `i`th unreachable member: a distinct address of 127.2.0.0/16, all on
/// [`CLOSED_PORT`], so that connections are refused at once and traffic stays on
/// loopback.
fn unreachable_member(i: usize) -> String {
    format!("127.2.{}.{}:{CLOSED_PORT}", i / 250, i % 250 + 1)
}

/// The process's user + system CPU time so far, from `/proc/self/stat` (fields 14 and
/// 15, in clock ticks of 1/100 s: Linux's USER_HZ).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) may hold spaces; the fields after it do not.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// The CPU time the process uses while `window` passes, and the wall time that took.
async fn cpu_over(window: Duration) -> (Duration, Duration) {
    let (cpu, wall) = (cpu_time(), Instant::now());
    tokio::time::sleep(window).await;
    (cpu_time() - cpu, wall.elapsed())
}

/// A `/proc/self/status` figure in KiB, e.g. `VmHWM` (peak resident memory).
fn memory_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The primary's hello: a replica set member listing itself (`me`) first, then the
/// unreachable members. No `topologyVersion`: the client polls rather than streams.
fn primary_hello(me: &str, election_id: ObjectId) -> Document {
    let hosts: Vec<String> = std::iter::once(me.to_owned())
        .chain((1..MEMBERS).map(unreachable_member))
        .collect();
    let mut reply = standalone_hello();
    reply.extend(doc! {
        "setName": "rs", "setVersion": 1, "electionId": election_id, "me": me,
        "primary": me, "hosts": hosts, "secondary": false,
    });
    reply
}

/// Checks that every unreachable member refuses connections (nothing listens there on
/// this machine), so that the test measures fast-failing checks.
async fn assert_members_refuse() {
    for i in 1..MEMBERS {
        let member = unreachable_member(i);
        let refused = tokio::net::TcpStream::connect(&member)
            .await
            .is_err_and(|error| error.kind() == std::io::ErrorKind::ConnectionRefused);
        assert!(refused, "something listens at {member}: pick another port");
    }
}

// The bound is on the driver as its users build it: an unoptimized build spends about
// twice the CPU on each check (10-12% of a core, against 5% optimized). `./run.sh test`
// runs this test in a release build.
#[cfg_attr(
    debug_assertions,
    ignore = "measures CPU: run it optimized, `cargo test --release --test large_topology`"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_10_000_members_finds_on_the_primary_with_little_cpu() {
    within(Duration::from_secs(60), async {
        assert_members_refuse().await;
        // The reply names the primary's port, known once bound: the script reads it
        // from a cell filled in then (built once, as a server would not rebuild it).
        let hello = Arc::new(OnceLock::<Document>::new());
        let script_hello = hello.clone();
        let primary = MockServer::start(move |command| {
            let name = command.keys().next().map(String::as_str).unwrap_or("");
            match name {
                "hello" | "isMaster" | "ismaster" => script_hello.get().unwrap().clone(),
                "find" => doc! {
                    "cursor": { "id": 0_i64, "ns": "db.c", "firstBatch": [{ "_id": 1 }] },
                    "ok": 1.0,
                },
                _ => doc! { "ok": 1.0 },
            }
        })
        .await;
        hello
            .set(primary_hello(primary.address(), ObjectId::new()))
            .unwrap();

        let started = Instant::now();
        let uri = format!(
            "mongodb://{}/?replicaSet=rs&serverSelectionTimeoutMS=10000",
            primary.address()
        );
        let client = Client::with_uri_str(&uri).await.unwrap();
        let found: Vec<Document> = client
            .database("db")
            .collection::<Document>("c")
            .find(doc! {})
            .await
            .expect("a find against the reachable primary succeeds")
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found, [doc! { "_id": 1 }]);
        let discovered = started.elapsed();
        assert_eq!(client.topology_description().servers.len(), MEMBERS);

        // Two whole heartbeat periods: the first checks of the members, then the
        // steady state, each member checked once more.
        let (first_cpu, first_wall) = cpu_over(WINDOW).await;
        let (cpu, wall) = cpu_over(WINDOW).await;
        let share = cpu.as_secs_f64() / wall.as_secs_f64();
        eprintln!(
            "{MEMBERS} members: find after {discovered:?}; CPU {first_cpu:?} over \
             {first_wall:?} of discovery, {cpu:?} over the next {wall:?} ({:.1}% of a \
             core); peak RSS {} MiB",
            share * 100.0,
            memory_kib("VmHWM:") / 1024,
        );
        // A find still succeeds at the end of the window.
        let again = client
            .database("db")
            .collection::<Document>("c")
            .find(doc! {})
            .await;
        assert!(again.is_ok(), "the second find failed: {again:?}");
        client.shutdown().await;
        assert!(
            share < MAX_CPU_SHARE,
            "{:.1}% of a core over {wall:?} with {MEMBERS} members (bound {:.0}%)",
            share * 100.0,
            MAX_CPU_SHARE * 100.0
        );
    })
    .await;
}
