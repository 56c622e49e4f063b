//! A server killed (SIGKILL) and restarted under a stream of retryable writes: the same
//! client is back within a second of the server accepting connections again, in each
//! monitoring mode, and no acknowledged write is lost or stored twice.
//!
//! Why a second: while an operation waits in server selection, the monitor of a server
//! that is down checks it again every minHeartbeatFrequencyMS (500 ms), not every
//! heartbeatFrequencyMS (server-selection.md, "request an immediate check";
//! server-monitoring.md, "Requesting an immediate check"); a single-threaded client
//! scans again no sooner than 500 ms after its last scan. pymongo resumes 0.2–0.4 s
//! after the restart on this kind of machine; a client that waits a heartbeat resumes
//! after 10 s.
//!
//! The server runs with `--sync-on-commit` on disk, so what it acknowledged survives
//! the kill. It forgets its retryable-write records across a restart, so a write
//! whose reply was lost to the kill and whose retry reaches the new server is refused
//! as a duplicate key although it was stored: a server fact (pymongo sees the same),
//! counted apart, never counted as acknowledged.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Document};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::{Client, ClientOptions, Collection};
use anymongo_tests::harness::within;
use anymongo_tests::server::{ServerOptions, TestServer};
use futures::TryStreamExt;
use tokio::sync::watch;

/// Kill/restart cycles per monitoring mode.
const CYCLES: usize = 3;

/// Writes acknowledged between two kills, so that each kill lands in a stream of
/// writes.
const WRITES_BETWEEN_KILLS: usize = 20;

/// The recovery every cycle must beat: from the first connection the restarted server
/// accepts to the client's first acknowledged write after it.
const RECOVERY_BOUND: Duration = Duration::from_secs(1);

/// The bound on one mode's whole run (three server starts of a few seconds each).
const RUN_BOUND: Duration = Duration::from_secs(120);

/// The bound on the writer: it stops by itself after this many writes.
const MAX_WRITES: i32 = 100_000;

/// How often the prober tries to connect while the server is down.
const PROBE_INTERVAL: Duration = Duration::from_millis(2);

/// What the writer saw of each write, by its number.
#[derive(Default)]
struct Outcomes {
    /// Acknowledged writes, with when each was acknowledged.
    acknowledged: BTreeMap<i32, Instant>,
    /// Refused as a duplicate key: stored before the kill, its retry reached the
    /// restarted server, which had forgotten the write (a server fact).
    duplicate_key: BTreeSet<i32>,
    /// Any other failure (single-threaded mode fails fast while the server is down).
    failed: usize,
}

impl Outcomes {
    /// The first write acknowledged at or after `since`.
    fn first_acknowledged_after(&self, since: Instant) -> Option<Instant> {
        self.acknowledged
            .values()
            .copied()
            .filter(|&at| at >= since)
            .min()
    }
}

/// Inserts `{n}` for n = 0, 1, … one after the other until `stop` (or [`MAX_WRITES`]),
/// recording each outcome and announcing each in `written`.
async fn write_until_stopped(
    numbers: Collection<Document>,
    outcomes: Arc<Mutex<Outcomes>>,
    written: watch::Sender<i32>,
    stop: Arc<AtomicBool>,
) {
    for n in 0..MAX_WRITES {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let result = numbers.insert_one(doc! { "n": n }).await;
        let mut outcomes = outcomes.lock().unwrap();
        match result {
            Ok(_) => {
                outcomes.acknowledged.insert(n, Instant::now());
            }
            Err(error) if is_duplicate_key(&error) => {
                outcomes.duplicate_key.insert(n);
            }
            Err(_) => outcomes.failed += 1,
        }
        written.send_replace(n);
    }
}

fn is_duplicate_key(error: &anymongo::Error) -> bool {
    error.code() == Some(11000)
}

/// Kills the server, restarts it on the same port and storage, and returns when it
/// first accepted a connection again (a prober tries every [`PROBE_INTERVAL`]; the
/// restart's own readiness check bounds it when the prober is late).
async fn kill_and_restart(server: Arc<Mutex<TestServer>>) -> Instant {
    tokio::task::spawn_blocking(move || {
        let mut server = server.lock().unwrap();
        server.kill();
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port));
        let accepted = Arc::new(Mutex::new(None));
        let done = Arc::new(AtomicBool::new(false));
        let prober = {
            let (accepted, done) = (accepted.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_ok() {
                        *accepted.lock().unwrap() = Some(Instant::now());
                        return;
                    }
                    std::thread::sleep(PROBE_INTERVAL);
                }
            })
        };
        let restarted = server.restart();
        let restart_returned = Instant::now();
        done.store(true, Ordering::SeqCst);
        prober.join().unwrap();
        restarted.unwrap_or_else(|why| panic!("the server did not restart: {why}"));
        // `restart` returns only after its own connection was accepted, so the server
        // accepted by then at the latest; a prober starved of CPU on a busy machine
        // may not have connected before it was told to stop.
        let accepted = *accepted.lock().unwrap();
        accepted.map_or(restart_returned, |at| at.min(restart_returned))
    })
    .await
    .unwrap()
}

/// One mode's run: [`CYCLES`] kills under a stream of writes, each recovery measured
/// and bounded, then every acknowledged write looked for.
async fn recovers_after_each_restart(name: &str, query: &str, monitoring: MonitoringThreads) {
    let server = TestServer::start(&ServerOptions {
        durable: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let uri = format!("{}?appName={name}&retryWrites=true&{query}", server.uri());
    let config = ClientConfig {
        monitoring,
        ..ClientConfig::default()
    };
    let client = Client::with_config(ClientOptions::parse_uri(&uri).unwrap(), config).unwrap();
    let numbers: Collection<Document> = client.database("server_restart").collection(name);
    numbers.drop().await.unwrap();
    let server = Arc::new(Mutex::new(server));
    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (written, mut each_write) = watch::channel(-1);
    let writer = tokio::spawn(write_until_stopped(
        numbers.clone(),
        outcomes.clone(),
        written,
        stop.clone(),
    ));

    let mut recoveries = Vec::new();
    for cycle in 1..=CYCLES {
        let enough = outcomes.lock().unwrap().acknowledged.len() + WRITES_BETWEEN_KILLS;
        within(
            RUN_BOUND,
            each_write.wait_for(|_| outcomes.lock().unwrap().acknowledged.len() >= enough),
        )
        .await
        .unwrap();
        let accepting = kill_and_restart(server.clone()).await;
        let mut back = None;
        within(
            RUN_BOUND,
            each_write.wait_for(|_| {
                back = outcomes.lock().unwrap().first_acknowledged_after(accepting);
                back.is_some()
            }),
        )
        .await
        .unwrap();
        let back = back.unwrap_or_else(|| panic!("{name}: restart {cycle} not recovered"));
        recoveries.push(back.saturating_duration_since(accepting));
    }
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();

    let stored: Vec<Document> = numbers
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut copies: BTreeMap<i32, usize> = BTreeMap::new();
    for document in &stored {
        *copies.entry(document.get_i32("n").unwrap()).or_default() += 1;
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    let lost: Vec<i32> = outcomes
        .acknowledged
        .keys()
        .filter(|n| !copies.contains_key(n))
        .copied()
        .collect();
    let duplicated: Vec<i32> = copies
        .iter()
        .filter(|(_, &count)| count > 1)
        .map(|(&n, _)| n)
        .collect();
    eprintln!(
        "{name}: recovery after each restart {recoveries:?}; {} writes acknowledged, \
         {} refused as duplicates by a server that forgot their first attempt, {} failed; \
         {} lost, {} stored twice",
        outcomes.acknowledged.len(),
        outcomes.duplicate_key.len(),
        outcomes.failed,
        lost.len(),
        duplicated.len(),
    );
    assert_eq!(lost, Vec::<i32>::new(), "{name}: acknowledged writes lost");
    assert_eq!(duplicated, Vec::<i32>::new(), "{name}: writes stored twice");
    for (cycle, recovery) in recoveries.iter().enumerate() {
        assert!(
            *recovery < RECOVERY_BOUND,
            "{name}: restart {} took {recovery:?} to recover (all: {recoveries:?})",
            cycle + 1
        );
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_monitor_recovers_within_a_second() {
    within(
        RUN_BOUND * 2,
        recovers_after_each_restart(
            "streaming",
            "serverMonitoringMode=stream",
            MonitoringThreads::Background,
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_monitor_recovers_within_a_second() {
    within(
        RUN_BOUND * 2,
        recovers_after_each_restart(
            "polling",
            "serverMonitoringMode=poll",
            MonitoringThreads::Background,
        ),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_threaded_client_recovers_within_a_second() {
    within(
        RUN_BOUND * 2,
        recovers_after_each_restart("single_threaded", "", MonitoringThreads::SingleThreaded),
    )
    .await;
}
