//! Retryable writes against a real SecantusDB server on loopback: 1,000 `insert_one`
//! calls, every third of which loses its connection, leave each document exactly once
//! (Retryable Writes spec: a retry sends the same `lsid` and `txnNumber`, and the
//! server runs a write of a transaction number once).
//!
//! Two ways of losing the connection: a `failCommand` fail point that closes it
//! before the insert runs (the retry must not be lost), and a proxy that closes it
//! after the server ran the insert, losing only the reply (the retry must not insert
//! twice: the server deduplicates it).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Bson, Document};
use anymongo::crud::FindOptions;
use anymongo::event::command::CommandEvent;
use anymongo::{Client, Collection};
use anymongo_tests::harness::{self, recording_client, recording_client_of};
use anymongo_tests::reply_loss::ReplyLosingProxy;
use anymongo_tests::server;
use futures::TryStreamExt;

/// The acceptance test's inserts, one `insert_one` each. Each lost connection marks
/// the server Unknown (SDAM spec, "Network error when reading or writing"), and the
/// retry waits for the monitor's next check, which comes no sooner than
/// minHeartbeatFrequencyMS (500 ms): 333 of them take minutes, so the full run is
/// `#[ignore]`d and CI runs [`CI_INSERTS`].
const ACCEPTANCE_INSERTS: i32 = 1_000;

/// The inserts of the runs CI makes: 20 lost connections.
const CI_INSERTS: i32 = 60;

/// The bound on a CI run.
const CI_BOUND: Duration = Duration::from_secs(90);

/// The bound on an acceptance run: measured about 1 s a lost connection.
const ACCEPTANCE_BOUND: Duration = Duration::from_secs(900);

/// Whether the first attempt of insert `n` loses its connection: every third insert.
fn loses_its_connection(n: i32) -> bool {
    n % 3 == 2
}

/// A fresh, empty collection named after the test.
async fn fresh(client: &Client, name: &str) -> Collection<Document> {
    let collection = client.database("exactly_once").collection(name);
    collection.drop().await.unwrap();
    collection
}

/// The `insert` commands started, and how many failed.
fn insert_events(events: &Mutex<Vec<CommandEvent>>) -> (Vec<Document>, usize) {
    let events = events.lock().unwrap();
    let mut started = Vec::new();
    let mut failed = 0;
    for event in events.iter() {
        match event {
            CommandEvent::Started(event) if event.command_name == "insert" => {
                started.push(event.command.clone());
            }
            CommandEvent::Failed(event) if event.command_name == "insert" => failed += 1,
            _ => {}
        }
    }
    (started, failed)
}

/// The one document an `insert` command sends.
fn sent(insert: &Document) -> &Document {
    let documents = insert.get_array("documents").unwrap();
    assert_eq!(documents.len(), 1, "{insert}");
    documents[0].as_document().unwrap()
}

/// Inserts `n` = 0..`inserts` one by one, calling `before_losing` before each insert
/// whose connection is to be lost. Returns how many were, and the first failed insert.
async fn insert_all<F: std::future::Future<Output = ()>>(
    numbers: &Collection<Document>,
    inserts: i32,
    mut before_losing: impl FnMut() -> F,
) -> (usize, Option<String>) {
    let mut lost = 0;
    for n in 0..inserts {
        if loses_its_connection(n) {
            before_losing().await;
            lost += 1;
        }
        if let Err(error) = numbers.insert_one(doc! { "n": n }).await {
            return (lost, Some(format!("insert {n} failed: {error}")));
        }
    }
    (lost, None)
}

/// Every insert was sent once, and those that lost their connection exactly once
/// more, as a retry of the same write: same document, same `lsid` and `txnNumber`.
/// No two different inserts share a transaction number.
fn assert_retried(events: &Mutex<Vec<CommandEvent>>, inserts: i32, lost: usize) {
    let (started, failed) = insert_events(events);
    assert_eq!(
        started.len(),
        inserts as usize + lost,
        "one attempt each and one retry for each lost connection"
    );
    assert_eq!(failed, lost, "each lost connection fails one attempt");
    let transaction = |insert: &Document| {
        (
            insert.get_document("lsid").unwrap().clone(),
            insert.get_i64("txnNumber").unwrap(),
        )
    };
    let mut transactions = HashSet::new();
    let mut attempts = started.iter();
    for n in 0..inserts {
        let first = attempts.next().unwrap();
        assert_eq!(sent(first).get_i32("n").ok(), Some(n), "{first}");
        assert!(
            transactions.insert(format!("{:?}", transaction(first))),
            "insert {n} reuses a transaction number: {first}"
        );
        if loses_its_connection(n) {
            let retry = attempts.next().unwrap();
            assert_eq!(sent(retry), sent(first), "the retry of insert {n}");
            assert_eq!(
                transaction(retry),
                transaction(first),
                "the retry of insert {n}"
            );
        }
    }
}

/// The collection holds each `n` of 0..`inserts` exactly once, under distinct `_id`s.
async fn assert_each_document_once(numbers: &Collection<Document>, inserts: i32) {
    assert_eq!(
        numbers.count_documents(doc! {}).await.unwrap(),
        inserts as u64
    );
    let options = FindOptions {
        sort: Some(doc! { "n": 1 }),
        ..Default::default()
    };
    let all: Vec<Document> = numbers
        .find(doc! {})
        .with_options(options)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ns: Vec<i32> = all.iter().map(|d| d.get_i32("n").unwrap()).collect();
    assert_eq!(ns, (0..inserts).collect::<Vec<_>>());
    let ids: HashSet<String> = all
        .iter()
        .map(|d| match d.get("_id") {
            Some(Bson::ObjectId(id)) => id.to_hex(),
            other => panic!("_id {other:?}"),
        })
        .collect();
    assert_eq!(ids.len(), inserts as usize, "distinct _ids");
}

/// `failCommand` closes the connection before the insert runs: without the retry the
/// document would be missing.
async fn every_third_insert_closed_by_a_fail_point(inserts: i32) {
    let app = format!("exactly_once_fail_point_{inserts}");
    let (client, events) = recording_client(&format!("appName={app}&retryWrites=true"));
    let numbers = fresh(&client, &app).await;
    let admin = client.database("admin");
    let started = Instant::now();
    let (lost, failure) = insert_all(&numbers, inserts, || async {
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["insert"],
                    "closeConnection": true,
                    "appName": &app,
                },
            })
            .await
            .unwrap();
    })
    .await;
    admin
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await
        .unwrap();
    eprintln!(
        "{inserts} inserts, {lost} connections closed by the fail point, in {:?}",
        started.elapsed()
    );
    assert_eq!(failure, None);
    assert_eq!(lost, inserts as usize / 3);
    assert_retried(&events, inserts, lost);
    assert_each_document_once(&numbers, inserts).await;
}

/// The proxy lets the server run the insert and closes the connection instead of
/// relaying the reply: the retry must be deduplicated by the server.
async fn every_third_insert_losing_its_reply(inserts: i32) {
    let server = server::shared();
    let proxy = ReplyLosingProxy::start(&format!("{}:{}", server.host, server.port))
        .await
        .unwrap();
    let app = format!("exactly_once_lost_reply_{inserts}");
    let (client, events) = recording_client_of(&format!(
        "mongodb://{}/?directConnection=true&retryWrites=true&appName={app}",
        proxy.address()
    ));
    let numbers = fresh(&client, &app).await;
    let started = Instant::now();
    let (lost, failure) = insert_all(&numbers, inserts, || {
        proxy.lose_next_insert_reply();
        std::future::ready(())
    })
    .await;
    eprintln!(
        "{inserts} inserts, {lost} replies lost by the proxy, in {:?}",
        started.elapsed()
    );
    assert_eq!(failure, None);
    assert_eq!(lost, inserts as usize / 3);
    assert_eq!(proxy.still_armed(), 0);
    // Each lost reply says the server did insert the document.
    let replies = proxy.lost_replies();
    assert_eq!(replies.len(), lost);
    for reply in &replies {
        assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
        assert!(
            matches!(reply.get("ok"), Some(Bson::Double(ok)) if *ok == 1.0),
            "{reply}"
        );
    }
    assert_retried(&events, inserts, lost);
    assert_each_document_once(&numbers, inserts).await;
}

#[tokio::test]
async fn every_third_insert_closed_by_a_fail_point_is_retried_and_each_document_is_there_once() {
    harness::within(
        CI_BOUND,
        every_third_insert_closed_by_a_fail_point(CI_INSERTS),
    )
    .await;
}

#[tokio::test]
async fn every_third_insert_whose_reply_is_lost_is_retried_and_the_server_runs_it_once() {
    harness::within(CI_BOUND, every_third_insert_losing_its_reply(CI_INSERTS)).await;
}

/// The acceptance criterion itself: 1,000 inserts, 333 connections closed.
#[tokio::test]
#[ignore = "takes about 6 minutes (333 retries, each waiting for a monitor check); run with --ignored"]
async fn acceptance_1000_inserts_every_third_closed_by_a_fail_point_leave_1000_documents() {
    harness::within(
        ACCEPTANCE_BOUND,
        every_third_insert_closed_by_a_fail_point(ACCEPTANCE_INSERTS),
    )
    .await;
}

/// The acceptance criterion with the write done and only its reply lost.
#[tokio::test]
#[ignore = "takes about 6 minutes (333 retries, each waiting for a monitor check); run with --ignored"]
async fn acceptance_1000_inserts_every_third_reply_lost_leave_1000_documents() {
    harness::within(
        ACCEPTANCE_BOUND,
        every_third_insert_losing_its_reply(ACCEPTANCE_INSERTS),
    )
    .await;
}
