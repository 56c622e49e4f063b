//! Change streams (`Collection::watch`, `Database::watch`, `Client::watch`) against a
//! real SecantusDB server on loopback: events arrive typed, the resume token follows
//! the spec's rules, and a stream resumes after a killed cursor or a failed getMore.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::change_stream::event::ResumeToken;
use anymongo::change_stream::{ChangeStreamOptions, OperationType};
use anymongo::event::command::CommandEvent;
use anymongo::{ChangeStream, Client, Collection};
use anymongo_tests::harness::{self, CommandLog};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// The fail point is one per server: tests that configure it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

const DATABASE: &str = "change_stream_tests";

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// A client of the shared server whose command events are recorded. A failed
/// getMore can mark the server Unknown: a short heartbeat finds it again quickly.
fn recording_client(app_name: &str) -> (Client, CommandLog) {
    harness::recording_client(&format!("appName={app_name}&heartbeatFrequencyMS=500"))
}

/// A fresh, empty collection named after the test.
async fn fresh<T>(client: &Client, name: &str) -> Collection<T> {
    let collection = client.database(DATABASE).collection::<T>(name);
    collection.drop().await.unwrap();
    client
        .database(DATABASE)
        .run_command(doc! { "create": name })
        .await
        .unwrap();
    collection
}

/// The commands named `name` the client sent.
fn started(events: &CommandLog, name: &str) -> Vec<Document> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            CommandEvent::Started(started) if started.command_name == name => {
                Some(started.command.clone())
            }
            _ => None,
        })
        .collect()
}

/// The replies to the commands named `name`.
fn replies(events: &CommandLog, name: &str) -> Vec<Document> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            CommandEvent::Succeeded(succeeded) if succeeded.command_name == name => {
                Some(succeeded.reply.clone())
            }
            _ => None,
        })
        .collect()
}

/// The `$changeStream` stage of an aggregate.
fn change_stream_stage(aggregate: &Document) -> Document {
    aggregate.get_array("pipeline").unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("$changeStream")
        .unwrap()
        .clone()
}

/// Turns the fail point on for the commands of `app_name`'s client.
async fn fail(client: &Client, mode: Document, data: Document) {
    client
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": mode, "data": data })
        .await
        .unwrap();
}

async fn fail_point_off(client: &Client) {
    client
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await
        .unwrap();
}

/// Short getMore waits: an empty batch comes back quickly.
fn short_waits() -> ChangeStreamOptions {
    ChangeStreamOptions {
        max_await_time: Some(Duration::from_millis(100)),
        ..ChangeStreamOptions::default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    #[serde(rename = "_id")]
    id: i32,
    item: String,
}

#[tokio::test]
async fn a_collection_stream_returns_typed_events_and_tracks_the_resume_token() {
    bounded(async {
        let (client, events) = recording_client("cs_typed");
        let orders = fresh::<Order>(&client, "typed").await;
        let mut changes = orders
            .watch()
            .pipeline([doc! { "$match": { "operationType": "insert" } }])
            .with_options(short_waits())
            .await
            .unwrap();
        let tea = Order {
            id: 1,
            item: "tea".into(),
        };
        orders.insert_one(&tea).await.unwrap();
        let event = changes.try_next().await.unwrap().unwrap();
        assert_eq!(event.operation_type, OperationType::Insert);
        assert_eq!(event.full_document, Some(tea));
        assert_eq!(event.document_key, Some(doc! { "_id": 1 }));
        let ns = event.ns.unwrap();
        assert_eq!(
            (ns.db.as_str(), ns.coll.as_deref()),
            (DATABASE, Some("typed"))
        );
        assert!(event.cluster_time.is_some());
        // The aggregate: $changeStream first, then the user's stages; no maxTimeMS.
        let aggregate = &started(&events, "aggregate")[0];
        assert_eq!(aggregate.get_str("aggregate").unwrap(), "typed");
        assert_eq!(change_stream_stage(aggregate), doc! {});
        assert_eq!(aggregate.get_array("pipeline").unwrap().len(), 2);
        assert!(!aggregate.contains_key("maxTimeMS"));
        // maxAwaitTimeMS goes on the getMore.
        let get_mores = started(&events, "getMore");
        assert_eq!(get_mores[0].get_i64("maxTimeMS").unwrap(), 100);
        // The event was the last of its batch: the token is the batch's
        // postBatchResumeToken (Change Streams prose test 11).
        let last_reply = replies(&events, "getMore").pop().unwrap();
        let post_batch = last_reply
            .get_document("cursor")
            .unwrap()
            .get_document("postBatchResumeToken")
            .unwrap()
            .clone();
        assert_eq!(changes.resume_token(), Some(post_batch.into()));
        // An empty batch: next_if_any returns nothing, and the token moves to the new
        // postBatchResumeToken.
        assert_eq!(changes.next_if_any().await.unwrap(), None);
        assert!(changes.is_alive());
        let last_reply = replies(&events, "getMore").pop().unwrap();
        let cursor = last_reply.get_document("cursor").unwrap();
        assert!(cursor.get_array("nextBatch").unwrap().is_empty());
        assert_eq!(
            changes.resume_token().map(Document::from).as_ref(),
            Some(cursor.get_document("postBatchResumeToken").unwrap())
        );
        changes.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn database_and_client_streams_see_every_collection() {
    bounded(async {
        let (client, events) = recording_client("cs_wide");
        let first = fresh::<Document>(&client, "wide_first").await;
        let second = fresh::<Document>(&client, "wide_second").await;
        let database = client.database(DATABASE);
        let mut in_database = database.watch().await.unwrap();
        let mut in_cluster = client.watch().await.unwrap();
        first.insert_one(doc! { "_id": 1 }).await.unwrap();
        second.insert_one(doc! { "_id": 2 }).await.unwrap();
        for changes in [&mut in_database, &mut in_cluster] {
            let mut seen = Vec::new();
            while seen.len() < 2 {
                let event = changes.try_next().await.unwrap().unwrap();
                let ns = event.ns.unwrap();
                // The cluster stream may see other tests' changes.
                if ns.db == DATABASE && ns.coll.as_deref().is_some_and(|c| c.starts_with("wide")) {
                    seen.push(ns.coll.unwrap());
                }
            }
            assert_eq!(seen, ["wide_first", "wide_second"]);
        }
        let aggregates = started(&events, "aggregate");
        assert_eq!(aggregates[0].get_i32("aggregate").unwrap(), 1);
        assert_eq!(aggregates[0].get_str("$db").unwrap(), DATABASE);
        assert_eq!(aggregates[1].get_str("$db").unwrap(), "admin");
        assert_eq!(
            change_stream_stage(&aggregates[1]),
            doc! { "allChangesForCluster": true }
        );
        // getMores name the collection the aggregate's reply named (spec, "Database.watch").
        let get_mores = started(&events, "getMore");
        assert!(get_mores
            .iter()
            .all(|get_more| get_more.get_str("collection").unwrap() == "$cmd.aggregate"));
    })
    .await;
}

#[tokio::test]
async fn a_killed_cursor_is_resumed_after_the_last_change() {
    bounded(async {
        let (client, events) = recording_client("cs_killed");
        let collection = fresh::<Document>(&client, "killed").await;
        let mut changes = collection
            .watch()
            .with_options(short_waits())
            .await
            .unwrap();
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        let first = changes.try_next().await.unwrap().unwrap();
        assert_eq!(first.document_key, Some(doc! { "_id": 1 }));
        let token = changes.resume_token().unwrap();
        // Another client kills the stream's cursor on the server.
        let aggregate_reply = &replies(&events, "aggregate")[0];
        let id = aggregate_reply
            .get_document("cursor")
            .unwrap()
            .get_i64("id")
            .unwrap();
        let (other, _) = recording_client("cs_killer");
        other
            .database(DATABASE)
            .run_command(doc! { "killCursors": "killed", "cursors": [id] })
            .await
            .unwrap();
        collection.insert_one(doc! { "_id": 2 }).await.unwrap();
        let second = changes.try_next().await.unwrap().unwrap();
        assert_eq!(second.document_key, Some(doc! { "_id": 2 }));
        // CursorNotFound, then the aggregate again, after the cached token.
        let failed = events.lock().unwrap().iter().any(|event| {
            matches!(event, CommandEvent::Failed(failed)
                if failed.command_name == "getMore" && failed.failure.code() == Some(43))
        });
        assert!(failed, "a getMore met CursorNotFound");
        let aggregates = started(&events, "aggregate");
        assert_eq!(aggregates.len(), 2);
        assert_eq!(
            change_stream_stage(&aggregates[1]),
            doc! { "resumeAfter": Document::from(token) }
        );
        // The same implicit session throughout (spec, "Resume Process").
        assert_eq!(
            aggregates[0].get_document("lsid").unwrap(),
            aggregates[1].get_document("lsid").unwrap()
        );
    })
    .await;
}

#[tokio::test]
async fn a_network_error_on_get_more_resumes_and_a_non_resumable_error_ends_the_stream() {
    bounded(async {
        let _turn = FAIL_POINT.lock().await;
        let (client, events) = recording_client("cs_network");
        let collection = fresh::<Document>(&client, "network").await;
        let mut changes = collection
            .watch()
            .with_options(short_waits())
            .await
            .unwrap();
        fail(
            &client,
            doc! { "times": 1 },
            doc! { "failCommands": ["getMore"], "closeConnection": true, "appName": "cs_network" },
        )
        .await;
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        let resumed = changes.try_next().await;
        fail_point_off(&client).await;
        let event = resumed.unwrap().unwrap();
        assert_eq!(event.document_key, Some(doc! { "_id": 1 }));
        assert_eq!(started(&events, "aggregate").len(), 2, "one resume");
        // An error without the ResumableChangeStreamError label: no resume.
        fail(
            &client,
            doc! { "times": 1 },
            doc! { "failCommands": ["getMore"], "errorCode": 50, "appName": "cs_network" },
        )
        .await;
        let error = changes.try_next().await;
        fail_point_off(&client).await;
        assert_eq!(error.unwrap_err().code(), Some(50));
        assert!(!changes.is_alive());
        assert!(changes.try_next().await.unwrap().is_none());
        assert_eq!(started(&events, "aggregate").len(), 2, "no second resume");
    })
    .await;
}

#[tokio::test]
async fn a_stream_started_after_a_token_resumes_with_start_after_until_it_returns_a_change() {
    bounded(async {
        let _turn = FAIL_POINT.lock().await;
        let (client, events) = recording_client("cs_start_after");
        let collection = fresh::<Document>(&client, "start_after").await;
        let mut earlier = collection.watch().with_options(short_waits()).await.unwrap();
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        let token = earlier.try_next().await.unwrap().unwrap().id;
        earlier.close().await.unwrap();
        let options = ChangeStreamOptions {
            start_after: Some(token.clone()),
            ..short_waits()
        };
        let mut changes = collection.watch().with_options(options).await.unwrap();
        let data = doc! { "failCommands": ["getMore"], "closeConnection": true, "appName": "cs_start_after" };
        // Prose test 17: no change returned yet, so startAfter again.
        fail(&client, doc! { "times": 1 }, data.clone()).await;
        collection.insert_one(doc! { "_id": 2 }).await.unwrap();
        let second = changes.try_next().await;
        fail_point_off(&client).await;
        assert_eq!(second.unwrap().unwrap().document_key, Some(doc! { "_id": 2 }));
        // Prose test 18: after a change, resumeAfter.
        fail(&client, doc! { "times": 1 }, data).await;
        collection.insert_one(doc! { "_id": 3 }).await.unwrap();
        let third = changes.try_next().await;
        fail_point_off(&client).await;
        assert_eq!(third.unwrap().unwrap().document_key, Some(doc! { "_id": 3 }));
        let stages: Vec<Document> = started(&events, "aggregate")
            .iter()
            .map(change_stream_stage)
            .collect();
        // The earlier stream's aggregate, then this one's first and its two resumes.
        assert_eq!(stages.len(), 4, "{stages:?}");
        assert_eq!(stages[1], doc! { "startAfter": Document::from(token) });
        assert!(
            stages[2].contains_key("startAfter") && !stages[2].contains_key("resumeAfter"),
            "{stages:?}"
        );
        assert!(
            stages[3].contains_key("resumeAfter") && !stages[3].contains_key("startAfter"),
            "{stages:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_stream_resumed_after_a_dropped_one_sees_the_later_changes() {
    bounded(async {
        let (client, events) = recording_client("cs_resume_after");
        let collection = fresh::<Document>(&client, "resume_after").await;
        let mut first = collection
            .watch()
            .max_await_time(Duration::from_millis(100))
            .await
            .unwrap();
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        let seen = first.try_next().await.unwrap().unwrap();
        assert_eq!(seen.document_key, Some(doc! { "_id": 1 }));
        let token = first.resume_token().unwrap();
        // The token stored as BSON reads back the same.
        let stored = anymongo::bson::serialize_to_document(&token).unwrap();
        let token: ResumeToken = anymongo::bson::deserialize_from_document(stored).unwrap();
        drop(first);
        collection.insert_one(doc! { "_id": 2 }).await.unwrap();
        // In a session, the stream is a SessionChangeStream iterated with it.
        let mut session = client.start_session().await.unwrap();
        let mut resumed = collection
            .watch()
            .resume_after(token.clone())
            .max_await_time(Duration::from_millis(100))
            .session(&mut session)
            .await
            .unwrap();
        let later = resumed.next(&mut session).await.unwrap().unwrap();
        assert_eq!(later.document_key, Some(doc! { "_id": 2 }));
        let aggregate = started(&events, "aggregate").pop().unwrap();
        assert_eq!(
            change_stream_stage(&aggregate),
            doc! { "resumeAfter": Document::from(token) }
        );
        assert_eq!(aggregate.get_document("lsid").unwrap(), session.id());
        ChangeStream::from(resumed).close().await.unwrap();
    })
    .await;
}
