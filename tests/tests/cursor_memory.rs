//! A find of 100,000 documents from a real SecantusDB server on loopback streams them
//! batch by batch: every document comes back once and in order, in 99 or 100
//! getMores, and the process's memory does not grow with the result.
//!
//! Alone in its test binary: resident memory is the process's, and no other test may
//! allocate while it is sampled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Document};
use anymongo::crud::FindOptions;
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::{Client, ClientOptions};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;

/// How many documents are inserted and read back.
const DOCUMENTS: i32 = 100_000;
/// The find's batch size.
const BATCH: u32 = 1_000;
/// RSS is sampled after every this many documents read.
const SAMPLE_EVERY: i32 = 10_000;
/// The payload's length: with it a document is 128 bytes of BSON, so all of them are
/// 12.8 MB of BSON, and several times that as `Document`s.
const PAYLOAD: usize = 100;
/// How much resident memory may grow while the find runs. One batch is 1,000
/// documents: 128 KB of BSON, under 1 MiB as `Document`s. Measured: the find streams
/// within +0.3 MiB, while the same find keeping every document grows by 74 MiB; the
/// bound leaves the allocator and the runtime room and still fails a cursor that
/// held a tenth of the result.
const GROWTH_BOUND: u64 = 8 << 20;

/// Every test finishes well within this, or fails: SecantusDB is a Python program,
/// whose 100,000 inserts take some tens of seconds.
const TEST_BOUND: Duration = Duration::from_secs(180);

/// A line of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes; `None` off Linux.
fn memory(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line
        .trim_start_matches(field)
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The payload of document `n`: its number, zero-padded.
fn payload(n: i32) -> String {
    format!("{n:0>PAYLOAD$}")
}

/// A client of the shared server that counts its getMore commands and checks their
/// batch size, keeping no events (a log of the replies would hold every document).
fn counting_client(get_mores: Arc<AtomicUsize>, wrong_batch_size: Arc<AtomicUsize>) -> Client {
    let uri = format!("{}?appName=cursor_memory", server::shared().uri());
    let mut options = ClientOptions::parse_uri(&uri).unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        if let CommandEvent::Started(started) = event {
            if started.command_name == "getMore" {
                get_mores.fetch_add(1, Ordering::SeqCst);
                if started.command.get_i64("batchSize").ok() != Some(BATCH.into()) {
                    wrong_batch_size.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }));
    Client::with_options(options).unwrap()
}

/// Inserts the documents, with a client (without command monitoring) of its own.
/// Returns how long it took.
async fn insert() -> Duration {
    let client = anymongo::Client::with_uri_str(&server::shared().uri())
        .await
        .unwrap();
    let large = client
        .database("cursor_memory")
        .collection::<Document>("large");
    large.drop().await.unwrap();
    let started = Instant::now();
    // Generated as they are sent: the test holds no copy of its own.
    let inserted = large
        .insert_many((0..DOCUMENTS).map(|n| doc! { "_id": n, "payload": payload(n) }))
        .await
        .unwrap();
    assert_eq!(inserted.inserted_ids.len(), DOCUMENTS as usize);
    started.elapsed()
}

/// Finds the documents in batches of [`BATCH`], checking each, with RSS sampled every
/// [`SAMPLE_EVERY`] documents. Returns how long it took, the RSS before it, and the
/// samples.
async fn find(
    get_mores: Arc<AtomicUsize>,
    wrong_batch_size: Arc<AtomicUsize>,
) -> (Duration, u64, Vec<u64>) {
    let client = counting_client(get_mores, wrong_batch_size);
    let large = client
        .database("cursor_memory")
        .collection::<Document>("large");
    let started = Instant::now();
    let options = FindOptions {
        batch_size: Some(BATCH),
        sort: Some(doc! { "_id": 1 }),
        ..Default::default()
    };
    let mut cursor = large.find(doc! {}).with_options(options).await.unwrap();
    let baseline = memory("VmRSS").unwrap();
    let mut samples = Vec::new();
    let mut next = 0;
    while let Some(document) = cursor.try_next().await.unwrap() {
        assert_eq!(
            document,
            doc! { "_id": next, "payload": payload(next) },
            "document {next}"
        );
        assert!(cursor.buffered() < BATCH as usize, "{}", cursor.buffered());
        next += 1;
        if next % SAMPLE_EVERY == 0 {
            samples.push(memory("VmRSS").unwrap());
        }
        assert!(next <= DOCUMENTS, "more documents than were inserted");
    }
    assert_eq!(next, DOCUMENTS, "every document came back");
    (started.elapsed(), baseline, samples)
}

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_find_of_100_000_documents_streams_them_in_order_within_bounded_memory() {
    let Some(start_rss) = memory("VmRSS") else {
        eprintln!("skipped: no VmRSS in /proc/self/status (not Linux), so no memory to sample");
        return;
    };
    // The insert runs on a thread of its own: the memory it frees stays with that
    // thread's allocator arena, rather than being reused by the find unseen.
    let inserting = std::thread::spawn(|| {
        current_thread_runtime().block_on(harness::within(TEST_BOUND, insert()))
    })
    .join()
    .expect("the insert");
    let inserted_rss = memory("VmRSS").unwrap();

    let get_mores = Arc::new(AtomicUsize::new(0));
    let wrong_batch_size = Arc::new(AtomicUsize::new(0));
    let (finding, baseline, samples) = current_thread_runtime().block_on(harness::within(
        TEST_BOUND,
        find(get_mores.clone(), wrong_batch_size.clone()),
    ));

    let peak = samples.iter().copied().max().unwrap_or(baseline);
    let growth = peak.saturating_sub(baseline);
    eprintln!(
        "inserted {DOCUMENTS} documents in {inserting:?}, found them in {finding:?} \
         with {} getMores",
        get_mores.load(Ordering::SeqCst)
    );
    eprintln!(
        "RSS: {} at the start, {} after the insert, {} before the find, every \
         {SAMPLE_EVERY} documents: [{}]; growth {} (bound {}); peak RSS of the process \
         (VmHWM) {}",
        mib(start_rss),
        mib(inserted_rss),
        mib(baseline),
        samples
            .iter()
            .map(|s| mib(*s))
            .collect::<Vec<_>>()
            .join(", "),
        mib(growth),
        mib(GROWTH_BOUND),
        memory("VmHWM").map_or("unknown".into(), mib),
    );
    // 1,000 in the first batch, then 99 full getMores; the server may need one more,
    // empty, to say the cursor is exhausted.
    assert!(
        (99..=100).contains(&get_mores.load(Ordering::SeqCst)),
        "{get_mores:?} getMores"
    );
    assert_eq!(wrong_batch_size.load(Ordering::SeqCst), 0);
    assert_eq!(samples.len(), (DOCUMENTS / SAMPLE_EVERY) as usize);
    assert!(
        growth < GROWTH_BOUND,
        "RSS grew by {} while streaming, over {}",
        mib(growth),
        mib(GROWTH_BOUND)
    );
}
