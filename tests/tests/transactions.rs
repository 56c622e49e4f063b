//! Transactions (`ClientSession::start_transaction`, `commit_transaction`,
//! `abort_transaction`, `StartTransaction::and_run` and `and_run2`) against a real SecantusDB server, a
//! single-node replica set, on loopback.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use anymongo::event::command::CommandEvent;
use anymongo::options::{InsertOneOptions, ReadPreference};
use anymongo::session::ClientSession;
use anymongo::transactions::{TransactionOptions, TransactionState};
use anymongo::{Client, Collection};
use anymongo_tests::harness::{self, recording_client, CommandLog};
use futures::TryStreamExt;

/// The fail point is one per server: tests that configure it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// A fresh collection named after the test, created outside any transaction (a
/// transaction may create one, but the tests keep to inserts).
async fn fresh(client: &Client, name: &str) -> Collection<Document> {
    let collection = client
        .database("transactions_tests")
        .collection::<Document>(name);
    collection.drop().await.unwrap();
    collection.insert_one(doc! { "_id": 0 }).await.unwrap();
    collection
}

/// The `_id`s in `collection`, read outside any transaction.
async fn ids(collection: &Collection<Document>) -> Vec<i32> {
    let mut ids: Vec<i32> = collection
        .find(doc! {})
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|document| document.get_i32("_id").unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

/// The commands started, by name, in order.
fn started(events: &CommandLog, names: &[&str]) -> Vec<Document> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            CommandEvent::Started(started) if names.contains(&started.command_name.as_str()) => {
                Some(started.command.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_commit_makes_the_writes_visible_and_an_abort_discards_them() {
    harness::within(TEST_BOUND, async {
        let (client, _) = recording_client("appName=tx_commit_abort");
        let collection = fresh(&client, "commit_abort").await;
        let mut session = client.start_session().await.unwrap();

        session.start_transaction().await.unwrap();
        assert_eq!(session.transaction_state(), TransactionState::Starting);
        // An operation in a transaction cannot have a write concern of its own; the
        // client-side error leaves the transaction as it was.
        let own_concern = InsertOneOptions {
            write_concern: Some(anymongo::concern::WriteConcern::majority()),
            ..InsertOneOptions::default()
        };
        let refused = collection
            .insert_one(doc! { "_id": 9 })
            .with_options(own_concern)
            .session(&session)
            .await
            .unwrap_err();
        assert!(refused
            .to_string()
            .contains("Cannot set write concern after starting a transaction"));
        assert_eq!(session.transaction_state(), TransactionState::Starting);
        collection
            .insert_one(doc! { "_id": 1 })
            .session(&session)
            .await
            .unwrap();
        collection
            .insert_one(doc! { "_id": 2 })
            .session(&session)
            .await
            .unwrap();
        assert_eq!(session.transaction_state(), TransactionState::InProgress);
        // Inside, the transaction sees its writes; outside, nothing yet.
        let inside = collection
            .count_documents(doc! {})
            .session(&session)
            .await
            .unwrap();
        assert_eq!(inside, 3);
        assert_eq!(ids(&collection).await, [0]);
        session.commit_transaction().await.unwrap();
        assert_eq!(session.transaction_state(), TransactionState::Committed);
        assert_eq!(ids(&collection).await, [0, 1, 2]);

        session.start_transaction().await.unwrap();
        collection
            .insert_one(doc! { "_id": 3 })
            .session(&session)
            .await
            .unwrap();
        collection
            .delete_one(doc! { "_id": 0 })
            .session(&session)
            .await
            .unwrap();
        session.abort_transaction().await.unwrap();
        assert_eq!(session.transaction_state(), TransactionState::Aborted);
        assert_eq!(ids(&collection).await, [0, 1, 2]);

        // The spec's errors for invalid transitions leave the state alone.
        let twice = session.abort_transaction().await.unwrap_err();
        assert!(twice
            .to_string()
            .contains("Cannot call abortTransaction twice"));
        let commit = session.commit_transaction().await.unwrap_err();
        assert!(commit
            .to_string()
            .contains("after calling abortTransaction"));
        session.start_transaction().await.unwrap();
        let again = session.start_transaction().await.unwrap_err();
        assert!(again
            .to_string()
            .contains("Transaction already in progress"));
        session.close().await;
    })
    .await;
}

#[tokio::test]
async fn commands_in_a_transaction_carry_its_fields() {
    harness::within(TEST_BOUND, async {
        let (client, events) = recording_client("appName=tx_fields&w=majority");
        let collection = fresh(&client, "fields").await;
        let mut session = client.start_session().await.unwrap();
        events.lock().unwrap().clear();
        session
            .start_transaction()
            .read_concern(anymongo::concern::ReadConcern::new(
                anymongo::concern::ReadConcernLevel::Snapshot,
            ))
            .await
            .unwrap();
        collection
            .insert_one(doc! { "_id": 1 })
            .session(&session)
            .await
            .unwrap();
        let found = collection
            .find_one(doc! { "_id": 1 })
            .session(&session)
            .await
            .unwrap();
        assert!(found.is_some());
        session.commit_transaction().await.unwrap();

        let commands = started(&events, &["insert", "find", "commitTransaction"]);
        assert_eq!(commands.len(), 3, "{commands:?}");
        let lsid = commands[0].get_document("lsid").unwrap();
        for command in &commands {
            assert_eq!(command.get_document("lsid").unwrap(), lsid);
            assert_eq!(command.get("txnNumber"), commands[0].get("txnNumber"));
            assert!(matches!(command.get("txnNumber"), Some(Bson::Int64(_))));
            assert_eq!(
                command.get("autocommit"),
                Some(&Bson::Boolean(false)),
                "{command}"
            );
        }
        let (first, second, commit) = (&commands[0], &commands[1], &commands[2]);
        assert_eq!(first.get("startTransaction"), Some(&Bson::Boolean(true)));
        assert_eq!(
            first.get_document("readConcern").unwrap(),
            &doc! { "level": "snapshot" }
        );
        // The client's w: majority goes with the commit only.
        assert!(!first.contains_key("writeConcern"), "{first}");
        for later in [second, commit] {
            assert!(!later.contains_key("startTransaction"), "{later}");
            assert!(!later.contains_key("readConcern"), "{later}");
        }
        assert!(!second.contains_key("writeConcern"), "{second}");
        assert_eq!(
            commit.get_document("writeConcern").unwrap(),
            &doc! { "w": "majority" }
        );

        // A read with a read preference other than primary is refused.
        let secondary = TransactionOptions {
            selection_criteria: Some(ReadPreference::Secondary { options: None }.into()),
            ..TransactionOptions::default()
        };
        session
            .start_transaction()
            .with_options(secondary)
            .await
            .unwrap();
        let refused = collection
            .find_one(doc! {})
            .session(&session)
            .await
            .unwrap_err();
        assert!(refused
            .to_string()
            .contains("read preference in a transaction must be primary"));
        assert_eq!(session.transaction_state(), TransactionState::Starting);
        session.abort_transaction().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn with_transaction_retries_a_transient_transaction_error() {
    let _turn = FAIL_POINT.lock().await;
    harness::within(TEST_BOUND, async {
        let app = "tx_with_transaction";
        let (client, events) = recording_client(&format!("appName={app}"));
        let collection = fresh(&client, "with_transaction").await;
        let admin = client.database("admin");
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["insert"],
                    "errorCode": 112,
                    "errorLabels": [TRANSIENT_TRANSACTION_ERROR],
                    "appName": app,
                },
            })
            .await
            .unwrap();
        events.lock().unwrap().clear();
        let mut session = client.start_session().await.unwrap();
        let calls = Arc::new(AtomicU32::new(0));
        let result = session
            .start_transaction()
            .and_run(
                (collection.clone(), calls.clone()),
                |session, (collection, calls)| {
                    Box::pin(async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        collection
                            .insert_one(doc! { "_id": 1 })
                            .session(&*session)
                            .await?;
                        Ok("done")
                    })
                },
            )
            .await;
        admin
            .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
            .await
            .unwrap();
        assert_eq!(result.unwrap(), "done");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(ids(&collection).await, [0, 1]);
        // The failed attempt was aborted, the second one committed, each with its
        // own transaction number.
        let commands = started(
            &events,
            &["insert", "abortTransaction", "commitTransaction"],
        );
        let names: Vec<&str> = commands
            .iter()
            .map(|command| command.keys().next().unwrap().as_str())
            .collect();
        assert_eq!(
            names,
            ["insert", "abortTransaction", "insert", "commitTransaction"]
        );
        assert_ne!(commands[0].get("txnNumber"), commands[2].get("txnNumber"));
        assert_eq!(commands[2].get("txnNumber"), commands[3].get("txnNumber"));
        session.close().await;
    })
    .await;
}

#[tokio::test]
async fn ending_a_session_aborts_its_transaction_in_progress() {
    harness::within(TEST_BOUND, async {
        let (client, events) = recording_client("appName=tx_end_session");
        let collection = fresh(&client, "end_session").await;
        let mut session = client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        collection
            .insert_one(doc! { "_id": 1 })
            .session(&session)
            .await
            .unwrap();
        session.close().await;
        assert!(session.has_ended());
        let aborts = started(&events, &["abortTransaction"]);
        assert_eq!(aborts.len(), 1);
        assert_eq!(ids(&collection).await, [0]);
        // The server session went back to the pool once aborted: the next session
        // reuses it, with a higher transaction number.
        let mut next = client.start_session().await.unwrap();
        next.start_transaction().await.unwrap();
        collection
            .insert_one(doc! { "_id": 2 })
            .session(&next)
            .await
            .unwrap();
        next.commit_transaction().await.unwrap();
        let inserts = started(&events, &["insert"]);
        let [.., before, last] = inserts.as_slice() else {
            panic!("two inserts expected: {inserts:?}");
        };
        assert_eq!(before.get("lsid"), last.get("lsid"));
        assert!(last.get_i64("txnNumber").unwrap() > before.get_i64("txnNumber").unwrap());
        assert_eq!(ids(&collection).await, [0, 2]);
    })
    .await;
}

/// One attempt of the manual transaction of
/// `a_manual_transaction_is_retried_after_a_transient_error`, as the official
/// driver's documentation writes one: start, the operations in the session, then the
/// commit, itself retried while its outcome is unknown.
async fn insert_in_a_transaction(
    collection: &Collection<Document>,
    session: &mut ClientSession,
    attempts: &AtomicU32,
) -> anymongo::Result<()> {
    attempts.fetch_add(1, Ordering::SeqCst);
    session.start_transaction().await?;
    collection
        .insert_one(doc! { "_id": 1 })
        .session(&*session)
        .await?;
    loop {
        match session
            .commit_transaction()
            .timeout(Duration::from_secs(10))
            .await
        {
            Err(error) if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) => continue,
            result => return result,
        }
    }
}

#[tokio::test]
async fn a_manual_transaction_is_retried_after_a_transient_error() {
    let _turn = FAIL_POINT.lock().await;
    harness::within(TEST_BOUND, async {
        let app = "tx_manual_retry";
        let (client, events) = recording_client(&format!("appName={app}"));
        let collection = fresh(&client, "manual_retry").await;
        let admin = client.database("admin");
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["insert"],
                    "errorCode": 112,
                    "errorLabels": [TRANSIENT_TRANSACTION_ERROR],
                    "appName": app,
                },
            })
            .await
            .unwrap();
        events.lock().unwrap().clear();
        let mut session = client
            .start_session()
            .causal_consistency(true)
            .await
            .unwrap();
        assert_eq!(session.options().causal_consistency, Some(true));
        let attempts = AtomicU32::new(0);
        let result = loop {
            match insert_in_a_transaction(&collection, &mut session, &attempts).await {
                Err(error) if error.contains_label(TRANSIENT_TRANSACTION_ERROR) => {
                    // The failed attempt's transaction is still open on this side.
                    if session.in_transaction() {
                        session.abort_transaction().await.unwrap();
                    }
                }
                result => break result,
            }
        };
        admin
            .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
            .await
            .unwrap();
        result.unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        assert_eq!(session.transaction_state(), TransactionState::Committed);
        assert_eq!(ids(&collection).await, [0, 1]);
        // The commit's `.timeout(…)` is its timeoutMS: the command carries maxTimeMS.
        let commits = started(&events, &["commitTransaction"]);
        assert_eq!(commits.len(), 1, "{commits:?}");
        assert!(commits[0].contains_key("maxTimeMS"), "{}", commits[0]);
        assert_eq!(
            session.client().options().app_name.as_deref(),
            Some(app),
            "session.client() is the session's client"
        );
    })
    .await;
}

#[tokio::test]
async fn and_run2_commits_the_writes_of_its_callback() {
    harness::within(TEST_BOUND, async {
        let (client, events) = recording_client("appName=tx_and_run2");
        let collection = fresh(&client, "and_run2").await;
        let mut session = client
            .start_session()
            .default_timeout(Duration::from_secs(20))
            .await
            .unwrap();
        events.lock().unwrap().clear();
        let mut calls = 0;
        let inserted = session
            .start_transaction()
            .max_commit_time(Duration::from_secs(5))
            .and_run2(async |session| {
                calls += 1;
                for id in [1, 2] {
                    collection
                        .insert_one(doc! { "_id": id })
                        .session(&*session)
                        .await?;
                }
                // Inside, the transaction sees its own writes.
                let inside = collection
                    .find_one(doc! { "_id": 2 })
                    .session(&mut *session)
                    .await?;
                Ok(inside.is_some())
            })
            .await
            .unwrap();
        assert!(inserted);
        assert_eq!(calls, 1);
        assert_eq!(session.transaction_state(), TransactionState::Committed);
        assert_eq!(ids(&collection).await, [0, 1, 2]);
        let commands = started(&events, &["insert", "find", "commitTransaction"]);
        // The transaction's commands, then the read of `ids` outside it.
        let commands = &commands[..4];
        let lsid = commands[0].get_document("lsid").unwrap();
        assert!(commands
            .iter()
            .all(|command| command.get_document("lsid").unwrap() == lsid));
        assert_eq!(
            commands[0].get("startTransaction"),
            Some(&Bson::Boolean(true))
        );
        // The session's default_timeout bounds the whole transaction: each command
        // carries what is left of it as maxTimeMS.
        assert!(commands
            .iter()
            .all(|command| command.get_i64("maxTimeMS").is_ok_and(|ms| ms <= 20_000)));
    })
    .await;
}

#[tokio::test]
async fn and_run2_aborts_when_its_callback_fails() {
    harness::within(TEST_BOUND, async {
        let (client, events) = recording_client("appName=tx_and_run2_fails");
        let collection = fresh(&client, "and_run2_fails").await;
        let mut session = client.start_session().await.unwrap();
        events.lock().unwrap().clear();
        let mut calls = 0;
        let failed = session
            .start_transaction()
            .and_run2(async |session| -> anymongo::Result<()> {
                calls += 1;
                collection
                    .insert_one(doc! { "_id": 1 })
                    .session(&*session)
                    .await?;
                Err(anymongo::Error::invalid_argument("the callback gives up"))
            })
            .await
            .unwrap_err();
        assert!(
            failed.to_string().contains("the callback gives up"),
            "{failed}"
        );
        // Not retried: the error has no TransientTransactionError label.
        assert_eq!(calls, 1);
        assert_eq!(session.transaction_state(), TransactionState::Aborted);
        assert_eq!(started(&events, &["abortTransaction"]).len(), 1);
        assert!(started(&events, &["commitTransaction"]).is_empty());
        assert_eq!(ids(&collection).await, [0]);
    })
    .await;
}
