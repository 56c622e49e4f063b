//! Sharded clusters, against the test sharded cluster: two mongoses in front of the
//! shared SecantusDB ([`anymongo_tests::mongos_proxy`]), whose fail points with an
//! `appName` fire only for the commands that come through the mongos they were set
//! through (one fail point at a time: the mongoses share the server's).
//!
//! - Retryable reads and writes retry on another mongos than the one that failed
//!   when there is one, and on the same one when there is none (Retryable Reads and
//!   Retryable Writes tests READMEs, prose tests "Retryable Reads/Writes Are Retried
//!   on a Different mongos When One is Available" and "... on the Same mongos When No
//!   Others are Available").
//! - A transaction stays on the mongos of its first command (Transactions spec,
//!   "Mongos Pinning"), and a new transaction or an operation outside transactions
//!   selects a mongos again, within `localThresholdMS` (Transactions tests README,
//!   "Mongos Pinning Prose Tests").

use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::sdam::ServerType;
use anymongo::uri::ServerAddress;
use anymongo::{Client, ClientOptions};
use anymongo_tests::harness::{self, recording_client_of, CommandLog};
use anymongo_tests::mongos_proxy::ShardedCluster;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// The fail point is one per server: tests that configure it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn cluster() -> ShardedCluster {
    let server = anymongo_tests::server::shared();
    ShardedCluster::start(&format!("{}:{}", server.host, server.port), 2)
        .await
        .unwrap()
}

/// Sets `failCommand` in `mode` with `data` (and `appName: app`) through the mongos
/// at `address`: so it fires for `app`'s commands through that mongos only.
async fn fail_on(address: &str, mode: Bson, app: &str, mut data: Document) {
    data.insert("appName", app);
    let direct = Client::with_uri_str(&format!("mongodb://{address}/?directConnection=true"))
        .await
        .unwrap();
    direct
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": mode, "data": data })
        .await
        .unwrap();
}

async fn turn_off_fail_point() {
    let (internal, _) = recording_client_of(&anymongo_tests::server::shared().uri());
    internal
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await
        .unwrap();
}

/// The servers of the failed and of the succeeded `name` commands, in order.
fn outcomes(events: &CommandLog, name: &str) -> (Vec<ServerAddress>, Vec<ServerAddress>) {
    let (mut failed, mut succeeded) = (Vec::new(), Vec::new());
    for event in events.lock().unwrap().iter() {
        if event.command_name() != name {
            continue;
        }
        let address = event.connection().address.clone();
        match event {
            CommandEvent::Failed(_) => failed.push(address),
            CommandEvent::Succeeded(_) => succeeded.push(address),
            _ => {}
        }
    }
    (failed, succeeded)
}

/// How many times the test with two mongoses runs its operation: each picks one of
/// the two at random, and the chance that none picks the failing one is 2^-20.
const TRIES: usize = 20;

/// The command of a read (`write` false: a find) or a write (an insert), and the
/// failCommand data that fails it retryably: HostUnreachable, and for the write the
/// RetryableWriteError label.
fn failing(write: bool) -> (&'static str, Document) {
    match write {
        false => ("find", doc! { "failCommands": ["find"], "errorCode": 6 }),
        true => (
            "insert",
            doc! {
                "failCommands": ["insert"], "errorCode": 6,
                "errorLabels": ["RetryableWriteError"],
            },
        ),
    }
}

/// Runs the read or the write `tries` times with a client of the first `mongoses`
/// mongoses while the first mongos fails it (`mode`); returns the client's command
/// events and whether every run succeeded.
async fn run_while_first_fails(
    mongoses: usize,
    mode: Bson,
    write: bool,
    tries: usize,
) -> (CommandLog, ShardedCluster, bool) {
    let cluster = cluster().await;
    let app = format!("sharded_retry_{mongoses}_{write}");
    let (_, data) = failing(write);
    fail_on(&cluster.addresses()[0], mode, &app, data).await;
    let uri = format!("{}?appName={app}", cluster.uri(mongoses));
    let (client, events) = recording_client_of(&uri);
    let collection = client
        .database("sharded_tests")
        .collection::<Document>(&app);
    let mut all_succeeded = true;
    for _ in 0..tries {
        let result = match write {
            false => collection.find_one(doc! {}).await.map(|_| ()),
            true => collection.insert_one(doc! {}).await.map(|_| ()),
        };
        all_succeeded &= result.is_ok();
    }
    turn_off_fail_point().await;
    (events, cluster, all_succeeded)
}

#[tokio::test]
async fn retryable_reads_and_writes_retry_on_another_mongos_when_there_is_one() {
    let _turn = FAIL_POINT.lock().await;
    harness::within(TEST_BOUND, async {
        for write in [false, true] {
            let (name, _) = failing(write);
            let (events, cluster, succeeded) =
                run_while_first_fails(2, Bson::from("alwaysOn"), write, TRIES).await;
            // Every attempt on the first mongos failed, and its retry went to the
            // other one, where it succeeded.
            assert!(succeeded, "{name}");
            let (failed, succeeded) = outcomes(&events, name);
            let first = ServerAddress::parse(&cluster.addresses()[0]).unwrap();
            assert!(
                !failed.is_empty(),
                "{name}: no attempt went to the first mongos"
            );
            assert!(failed.iter().all(|server| *server == first), "{name}");
            assert_eq!(succeeded.len(), TRIES, "{name}");
            assert!(succeeded.iter().all(|server| *server != first), "{name}");
        }
    })
    .await;
}

#[tokio::test]
async fn retryable_reads_and_writes_retry_on_the_same_mongos_when_there_is_no_other() {
    let _turn = FAIL_POINT.lock().await;
    harness::within(TEST_BOUND, async {
        for write in [false, true] {
            let (name, _) = failing(write);
            let once = Bson::Document(doc! { "times": 1 });
            let (events, _cluster, succeeded) = run_while_first_fails(1, once, write, 1).await;
            assert!(succeeded, "{name}");
            let (failed, succeeded) = outcomes(&events, name);
            assert_eq!(failed.len(), 1, "{name}");
            assert_eq!(succeeded, failed, "{name}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_transaction_stays_on_the_mongos_of_its_first_command() {
    harness::within(TEST_BOUND, async {
        let cluster = cluster().await;
        let uri = format!("{}?appName=sharded_pinning", cluster.uri(2));
        let (client, events) = recording_client_of(&uri);
        let collection = client
            .database("sharded_tests")
            .collection::<Document>("pinning");
        collection.drop().await.unwrap();
        collection.insert_one(doc! { "_id": 0 }).await.unwrap();
        let mut session = client.start_session().await.unwrap();
        for round in 1..=3 {
            events.lock().unwrap().clear();
            session.start_transaction().await.unwrap();
            assert_eq!(session.pinned_server(), None);
            for n in 0..4 {
                let document = doc! { "_id": round * 10 + n };
                collection
                    .insert_one(document)
                    .session(&session)
                    .await
                    .unwrap();
                collection
                    .find_one(doc! {})
                    .session(&session)
                    .await
                    .unwrap();
            }
            let pinned = session.pinned_server().expect("pinned to a mongos");
            session.commit_transaction().await.unwrap();
            // Committing does not unpin: the commit may be run again.
            assert_eq!(session.pinned_server().as_ref(), Some(&pinned));
            let servers: Vec<ServerAddress> = events
                .lock()
                .unwrap()
                .iter()
                .filter(|event| matches!(event, CommandEvent::Started(_)))
                .map(|event| event.connection().address.clone())
                .collect();
            assert_eq!(servers.len(), 9);
            assert!(
                servers.iter().all(|server| *server == pinned),
                "{servers:?}"
            );
        }
        // A non-transactional operation unpins the session.
        collection
            .find_one(doc! {})
            .session(&session)
            .await
            .unwrap();
        assert_eq!(session.pinned_server(), None);
    })
    .await;
}

/// A client of both mongoses with `localThresholdMS=1000` (so that selection picks
/// either), once it has found both; its command events are recorded.
async fn client_of_both(cluster: &ShardedCluster) -> (Client, CommandLog) {
    let (changed, mut changes) = tokio::sync::watch::channel(0_u64);
    let commands = CommandLog::default();
    let sink = commands.clone();
    let uri = format!("{}?localThresholdMS=1000", cluster.uri(2));
    let mut options = ClientOptions::parse_uri(&uri).unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        sink.lock().unwrap().push(event);
    }));
    options.sdam_event_handler = Some(EventHandler::callback(
        move |_: anymongo::event::sdam::SdamEvent| changed.send_modify(|count| *count += 1),
    ));
    let client = Client::with_options(options).unwrap();
    let both_found = |client: &Client| {
        let servers = client.topology_description().servers;
        servers.len() == 2
            && servers
                .values()
                .all(|server| server.server_type == ServerType::Mongos)
    };
    while !both_found(&client) {
        changes.changed().await.unwrap();
    }
    (client, commands)
}

/// The servers the `find`s recorded since the log was last cleared ran on.
fn find_servers(commands: &CommandLog) -> std::collections::BTreeSet<ServerAddress> {
    commands
        .lock()
        .unwrap()
        .iter()
        .filter(|event| matches!(event, CommandEvent::Started(_)))
        .filter(|event| event.command_name() == "find")
        .map(|event| event.connection().address.clone())
        .collect()
}

/// Transactions tests README, "Mongos Pinning Prose Tests", 1 and 2: after a pinned
/// transaction, the next transaction (`in_transactions`) or operations outside
/// transactions select their mongos again, and find both in 50 tries.
async fn pinned_session_selects_again(in_transactions: bool) {
    let cluster = cluster().await;
    let (client, commands) = client_of_both(&cluster).await;
    let collection = client
        .database("sharded_tests")
        .collection::<Document>("unpinning");
    collection.insert_one(doc! {}).await.unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    collection
        .insert_one(doc! {})
        .session(&session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert!(session.pinned_server().is_some());
    commands.lock().unwrap().clear();
    for _ in 0..50 {
        if in_transactions {
            session.start_transaction().await.unwrap();
        }
        let found = collection
            .find_one(doc! {})
            .session(&session)
            .await
            .unwrap();
        assert!(found.is_some());
        if in_transactions {
            session.commit_transaction().await.unwrap();
        }
    }
    assert_eq!(find_servers(&commands).len(), 2);
}

#[tokio::test]
async fn a_new_transaction_selects_its_mongos_again() {
    harness::within(TEST_BOUND, pinned_session_selects_again(true)).await;
}

#[tokio::test]
async fn an_operation_outside_transactions_selects_its_mongos_again() {
    harness::within(TEST_BOUND, pinned_session_selects_again(false)).await;
}
