//! The user API (`Collection<T>`, cursors, sessions, retryable writes) against a real
//! SecantusDB server on loopback.

use std::sync::Mutex;
use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::crud::bulk_write::{InsertOneModel, ReplaceOneModel, WriteModel};
use anymongo::crud::{CursorType, FindOptions, ReturnDocument};
use anymongo::event::cmap::CmapEvent;
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::index_management::{IndexModel, IndexOptions};
use anymongo::options::{
    Collation, CollationStrength, FindOneAndUpdateOptions, InsertManyOptions, InsertOneOptions,
    UpdateOptions,
};
use anymongo::{Client, ClientOptions, Collection, ErrorKind};
use anymongo_tests::harness::{self, recording_client};
use anymongo_tests::pool_events::PoolEvents;
use anymongo_tests::round_trip;
use anymongo_tests::server;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// The fail point is one per server: tests that configure it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// A fresh, empty collection named after the test.
async fn fresh<T>(client: &Client, name: &str) -> Collection<T> {
    let collection = client.database("crud_tests").collection::<T>(name);
    collection.drop().await.unwrap();
    collection
}

fn started(events: &Mutex<Vec<CommandEvent>>, name: &str) -> Vec<Document> {
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    item: String,
    qty: i32,
}

#[tokio::test]
async fn typed_documents_round_trip_through_insert_find_update_replace_delete() {
    bounded(async {
        let (client, _) = recording_client("appName=crud_round_trip");
        let orders = fresh::<Order>(&client, "round_trip").await;
        let tea = Order {
            item: "tea".into(),
            qty: 2,
        };
        let inserted = orders.insert_one(&tea).await.unwrap();
        assert!(matches!(inserted.inserted_id, Bson::ObjectId(_)));
        assert_eq!(
            orders.find_one(doc! { "item": "tea" }).await.unwrap(),
            Some(tea)
        );

        let updated = orders
            .update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 3 } })
            .await
            .unwrap();
        assert_eq!((updated.matched_count, updated.modified_count), (1, 1));
        let found = orders.find_one(doc! {}).await.unwrap().unwrap();
        assert_eq!(found.qty, 5);

        let replaced = orders
            .replace_one(
                doc! { "item": "tea" },
                Order {
                    item: "coffee".into(),
                    qty: 1,
                },
            )
            .await
            .unwrap();
        assert_eq!(replaced.matched_count, 1);
        let upserted = orders
            .update_one(doc! { "item": "milk" }, doc! { "$set": { "qty": 7 } })
            .with_options(UpdateOptions {
                upsert: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(upserted.matched_count, 0);
        assert!(upserted.upserted_id.is_some());
        assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 2);
        assert_eq!(orders.estimated_document_count().await.unwrap(), 2);
        let mut items = orders.distinct("item", doc! {}).await.unwrap();
        items.sort_by_key(|item| item.to_string());
        assert_eq!(items, vec![Bson::from("coffee"), Bson::from("milk")]);

        let deleted = orders.delete_many(doc! {}).await.unwrap();
        assert_eq!(deleted.deleted_count, 2);
        assert_eq!(orders.find_one(doc! {}).await.unwrap(), None);
    })
    .await;
}

/// Every kind of field a typed document may have (`anymongo_tests::round_trip`, also
/// run by the wasip2 build in `wasi.rs`) comes back unchanged.
#[tokio::test]
async fn a_typed_document_with_nested_arrays_dates_decimals_uuids_and_options_round_trips() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_typed_round_trip");
        let outcome = round_trip::run(&client, "native").await.unwrap();
        assert_eq!(outcome.found.as_ref(), Some(&outcome.sent));
        assert_eq!(outcome.problems(), Vec::<String>::new(), "{outcome:?}");
        // What the `None`s were sent as: `null`, or nothing where the field says so.
        let insert = started(&events, "insert").pop().unwrap();
        let sent = insert.get_array("documents").unwrap()[0]
            .as_document()
            .unwrap();
        assert_eq!(sent.get("referrer"), Some(&Bson::Null), "{sent}");
        assert!(!sent.contains_key("closed"), "{sent}");
        let orders = sent.get_array("orders").unwrap();
        assert_eq!(
            orders[1].as_document().unwrap().get("note"),
            Some(&Bson::Null)
        );
    })
    .await;
}

#[tokio::test]
async fn invalid_updates_and_replacements_are_refused_before_sending() {
    let (client, events) = recording_client("appName=crud_invalid_updates");
    let orders = client
        .database("crud_tests")
        .collection::<Document>("invalid_updates");
    let error = orders
        .update_one(doc! {}, doc! { "qty": 1 })
        .await
        .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    let error = orders
        .replace_one(doc! {}, doc! { "$set": { "qty": 1 } })
        .await
        .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(started(&events, "update").is_empty());
}

#[tokio::test]
async fn a_find_spanning_several_batches_uses_get_more_and_an_exhausted_cursor_sends_no_kill() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_batches");
        let numbers = fresh::<Document>(&client, "batches").await;
        let documents: Vec<Document> = (0..10).map(|n| doc! { "_id": n, "n": n }).collect();
        let inserted = numbers.insert_many(&documents).await.unwrap();
        assert_eq!(inserted.inserted_ids.len(), 10);
        let options = FindOptions {
            batch_size: Some(3),
            sort: Some(doc! { "_id": 1 }),
            ..Default::default()
        };
        let cursor = numbers.find(doc! {}).with_options(options).await.unwrap();
        let all: Vec<Document> = cursor.try_collect().await.unwrap();
        assert_eq!(all, documents);
        let get_mores = started(&events, "getMore");
        assert_eq!(get_mores.len(), 3, "{get_mores:?}");
        assert!(get_mores
            .iter()
            .all(|command| command.get_i64("batchSize").ok() == Some(3)));
        // Every getMore ran in the find's (implicit) session.
        let find = &started(&events, "find")[0];
        let lsid = find.get_document("lsid").unwrap();
        assert!(get_mores
            .iter()
            .all(|command| command.get_document("lsid").ok() == Some(lsid)));
        assert!(started(&events, "killCursors").is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_cursor_dropped_early_is_killed() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_kill");
        let numbers = fresh::<Document>(&client, "kill").await;
        let documents: Vec<Document> = (0..10).map(|n| doc! { "_id": n }).collect();
        numbers.insert_many(documents).await.unwrap();
        let options = FindOptions {
            batch_size: Some(2),
            ..Default::default()
        };
        let mut cursor = numbers.find(doc! {}).with_options(options).await.unwrap();
        assert!(cursor.try_next().await.unwrap().is_some());
        let id = cursor.id();
        assert_ne!(id, 0);
        drop(cursor);
        // The kill runs in a spawned task: wait for its event, bounded.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let kills = started(&events, "killCursors");
            if let Some(kill) = kills.first() {
                assert_eq!(kill.get_array("cursors").unwrap(), &vec![Bson::Int64(id)]);
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no killCursors was sent"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// A fresh capped collection named after the test, holding `documents`: what a
/// tailable cursor needs.
async fn fresh_capped(client: &Client, name: &str, documents: &[Document]) -> Collection<Document> {
    let collection = fresh::<Document>(client, name).await;
    client
        .database("crud_tests")
        .create_collection(name)
        .capped(true)
        .size(4096)
        .max(10)
        .await
        .unwrap();
    collection.insert_many(documents).await.unwrap();
    collection
}

/// The `nextBatch` of every getMore reply.
fn next_batches(events: &Mutex<Vec<CommandEvent>>) -> Vec<Vec<Bson>> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            CommandEvent::Succeeded(succeeded) if succeeded.command_name == "getMore" => {
                let cursor = succeeded.reply.get_document("cursor").unwrap();
                Some(cursor.get_array("nextBatch").unwrap().clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tailable_cursor_returns_none_after_an_empty_batch_and_stays_alive_for_new_documents() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_tailable");
        let first = [doc! { "_id": 1 }, doc! { "_id": 2 }];
        let log = fresh_capped(&client, "tailable", &first).await;
        let options = FindOptions {
            cursor_type: Some(CursorType::Tailable),
            ..Default::default()
        };
        let mut cursor = log.find(doc! {}).with_options(options).await.unwrap();
        assert_ne!(cursor.id(), 0, "a tailable cursor stays open");
        // The first batch, without a getMore.
        for expected in &first {
            assert_eq!(cursor.next_if_any().await.unwrap().as_ref(), Some(expected));
        }
        assert!(started(&events, "getMore").is_empty());
        // Drained: one getMore, whose empty batch comes back as None on a live cursor.
        assert_eq!(cursor.next_if_any().await.unwrap(), None);
        assert!(cursor.is_alive());
        assert_ne!(cursor.id(), 0);
        assert_eq!(next_batches(&events), vec![vec![]]);
        // Tailable, not awaitData: no maxTimeMS on the getMore.
        assert!(!started(&events, "getMore")[0].contains_key("maxTimeMS"));
        // A new document comes with the next call's getMore.
        log.insert_one(doc! { "_id": 3 }).await.unwrap();
        assert_eq!(cursor.next_if_any().await.unwrap(), Some(doc! { "_id": 3 }));
        assert_eq!(started(&events, "getMore").len(), 2);
        assert!(cursor.is_alive());
        cursor.close().await.unwrap();
        assert_eq!(started(&events, "killCursors").len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_tailable_await_command_cursor_waits_on_each_get_more_and_its_stream_skips_empty_batches()
{
    bounded(async {
        let (client, events) = recording_client("appName=crud_tailable_await");
        let log = fresh_capped(&client, "tailable_await", &[doc! { "_id": 1 }]).await;
        let command = doc! { "find": "tailable_await", "tailable": true, "awaitData": true };
        let mut cursor = client
            .database("crud_tests")
            .run_cursor_command(command.clone())
            .cursor_type(CursorType::TailableAwait)
            .max_time(Duration::from_millis(20))
            .await
            .unwrap();
        assert_eq!(cursor.next_if_any().await.unwrap(), Some(doc! { "_id": 1 }));
        assert_eq!(cursor.next_if_any().await.unwrap(), None);
        assert!(cursor.is_alive());
        // The command went as given; its getMore carries the wait.
        let find = &started(&events, "find")[0];
        assert_eq!(find.get("awaitData"), Some(&Bson::Boolean(true)));
        assert!(!find.contains_key("maxTimeMS"));
        let get_mores = started(&events, "getMore");
        assert_eq!(get_mores.len(), 1);
        assert_eq!(get_mores[0].get("maxTimeMS"), Some(&Bson::Int64(20)));
        // The Stream asks again after empty batches until a document comes: the
        // insert, whenever it lands, ends the wait.
        let (next, inserted) = tokio::join!(cursor.try_next(), log.insert_one(doc! { "_id": 2 }));
        inserted.unwrap();
        assert_eq!(next.unwrap(), Some(doc! { "_id": 2 }));
        assert!(cursor.is_alive());
        drop(cursor);
    })
    .await;
}

#[tokio::test]
async fn insert_many_reports_every_failure_by_index() {
    bounded(async {
        let (client, _) = recording_client("appName=crud_bulk_errors");
        let numbers = fresh::<Document>(&client, "bulk_errors").await;
        numbers.insert_one(doc! { "_id": 2 }).await.unwrap();
        let documents: Vec<Document> = (0..5).map(|n| doc! { "_id": n % 4 }).collect();
        // Ordered: stops at the duplicate _id 2 (index 2).
        let error = numbers.insert_many(&documents).await.unwrap_err();
        let ErrorKind::InsertMany(failure) = &*error.kind else {
            panic!("expected an insert_many error, got {error}");
        };
        let write_errors = failure.write_errors.as_deref().unwrap_or_default();
        assert_eq!(write_errors.len(), 1);
        assert_eq!((write_errors[0].index, write_errors[0].code), (2, 11000));
        let mut inserted: Vec<usize> = failure.inserted_ids.keys().copied().collect();
        inserted.sort();
        assert_eq!(inserted, vec![0, 1]);
        // Unordered: everything else is inserted; index 4 (_id 0) is a duplicate too.
        numbers.delete_many(doc! {}).await.unwrap();
        numbers.insert_one(doc! { "_id": 2 }).await.unwrap();
        let options = InsertManyOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let error = numbers
            .insert_many(&documents)
            .with_options(options)
            .await
            .unwrap_err();
        let ErrorKind::InsertMany(failure) = &*error.kind else {
            panic!("expected an insert_many error, got {error}");
        };
        let failed: Vec<usize> = failure
            .write_errors
            .iter()
            .flatten()
            .map(|e| e.index)
            .collect();
        assert_eq!(failed, vec![2, 4]);
        assert_eq!(numbers.count_documents(doc! {}).await.unwrap(), 4);
    })
    .await;
}

#[tokio::test]
async fn find_one_and_modify_return_the_document_before_or_after() {
    bounded(async {
        let (client, _) = recording_client("appName=crud_find_and_modify");
        let orders = fresh::<Order>(&client, "find_and_modify").await;
        orders
            .insert_one(Order {
                item: "tea".into(),
                qty: 1,
            })
            .await
            .unwrap();
        let before = orders
            .find_one_and_update(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } })
            .await
            .unwrap();
        assert_eq!(before.map(|order| order.qty), Some(1));
        let options = FindOneAndUpdateOptions {
            return_document: Some(ReturnDocument::After),
            ..Default::default()
        };
        let after = orders
            .find_one_and_update(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(after.map(|order| order.qty), Some(3));
        let deleted = orders.find_one_and_delete(doc! {}).await.unwrap();
        assert_eq!(deleted.map(|order| order.item), Some("tea".to_string()));
        assert_eq!(orders.find_one_and_delete(doc! {}).await.unwrap(), None);
    })
    .await;
}

/// `with_result_metadata` (the Node driver's `includeResultMetadata`): the server's
/// `lastErrorObject` beside the document, through the same retryable write.
#[tokio::test]
async fn find_one_and_modify_with_result_metadata_gives_the_last_error_object() {
    bounded(async {
        let (client, _) = recording_client("appName=crud_find_and_modify_metadata");
        let counters = fresh::<Document>(&client, "find_and_modify_metadata").await;
        let upserted = counters
            .find_one_and_update(doc! { "_id": "order" }, doc! { "$inc": { "n": 1 } })
            .upsert(true)
            .with_result_metadata()
            .await
            .unwrap();
        assert_eq!(upserted.value, None);
        let last = upserted.last_error_object.unwrap();
        assert_eq!(last.get_bool("updatedExisting").ok(), Some(false));
        assert_eq!(last.get("upserted"), Some(&Bson::String("order".into())));
        let updated = counters
            .find_one_and_update(doc! { "_id": "order" }, doc! { "$inc": { "n": 1 } })
            .return_document(ReturnDocument::After)
            .with_result_metadata()
            .await
            .unwrap();
        assert_eq!(updated.value, Some(doc! { "_id": "order", "n": 2 }));
        assert_eq!(
            updated
                .last_error_object
                .unwrap()
                .get_bool("updatedExisting")
                .ok(),
            Some(true)
        );
        let missed = counters
            .find_one_and_delete(doc! { "_id": "none" })
            .with_result_metadata()
            .await
            .unwrap();
        assert_eq!(missed.value, None);
        assert_eq!(
            missed.last_error_object.unwrap().get("n"),
            Some(&Bson::Int32(0))
        );
    })
    .await;
}

#[tokio::test]
async fn aggregate_streams_the_pipeline_results() {
    bounded(async {
        let (client, _) = recording_client("appName=crud_aggregate");
        let numbers = fresh::<Document>(&client, "aggregate").await;
        let documents: Vec<Document> = (0..6)
            .map(|n| doc! { "_id": n, "even": n % 2 == 0 })
            .collect();
        numbers.insert_many(documents).await.unwrap();
        let pipeline = [
            doc! { "$group": { "_id": "$even", "count": { "$sum": 1 } } },
            doc! { "$sort": { "_id": 1 } },
        ];
        let groups: Vec<Document> = numbers
            .aggregate(pipeline)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            groups,
            vec![
                doc! { "_id": false, "count": 3 },
                doc! { "_id": true, "count": 3 }
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn writes_carry_a_session_and_a_transaction_number_and_sessions_are_reused() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_sessions");
        let orders = fresh::<Document>(&client, "sessions").await;
        orders.insert_one(doc! { "n": 1 }).await.unwrap();
        orders.insert_one(doc! { "n": 2 }).await.unwrap();
        orders
            .update_many(doc! {}, doc! { "$set": { "seen": true } })
            .await
            .unwrap();
        let inserts = started(&events, "insert");
        assert_eq!(inserts.len(), 2);
        // Sequential operations reuse the pooled server session (LIFO), with a new
        // transaction number for each retryable write.
        assert_eq!(
            inserts[0].get_document("lsid").ok(),
            inserts[1].get_document("lsid").ok()
        );
        let txn = |command: &Document| command.get_i64("txnNumber").unwrap();
        assert!(txn(&inserts[1]) > txn(&inserts[0]));
        // Multi-document updates are not retryable: no transaction number.
        let update = &started(&events, "update")[0];
        assert!(update.contains_key("lsid"));
        assert!(!update.contains_key("txnNumber"));
        // An unacknowledged write sends no session id.
        let unacknowledged = InsertOneOptions {
            write_concern: Some(anymongo::concern::WriteConcern::nodes(0)),
            ..Default::default()
        };
        orders
            .insert_one(doc! { "n": 3 })
            .with_options(unacknowledged)
            .await
            .unwrap();
        let last = started(&events, "insert").pop().unwrap();
        assert!(!last.contains_key("lsid"), "{last}");
    })
    .await;
}

#[tokio::test]
async fn an_explicit_session_is_causally_consistent_and_gossips_the_cluster_time() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_causal");
        let orders = fresh::<Document>(&client, "causal").await;
        let session = client.start_session().await.unwrap();
        orders
            .insert_one(doc! { "item": "tea" })
            .session(&session)
            .await
            .unwrap();
        let operation_time = session
            .operation_time()
            .expect("the insert's operationTime");
        let found = orders
            .find_one(doc! { "item": "tea" })
            .session(&session)
            .await
            .unwrap();
        assert!(found.is_some());
        let find = started(&events, "find").pop().unwrap();
        let read_concern = find.get_document("readConcern").unwrap();
        assert_eq!(
            read_concern.get("afterClusterTime"),
            Some(&Bson::Timestamp(operation_time))
        );
        assert!(find.contains_key("$clusterTime"), "{find}");
        let insert = started(&events, "insert").pop().unwrap();
        assert_eq!(insert.get_document("lsid").ok(), Some(session.id()));
        session.end_session();
        let error = orders
            .find_one(doc! {})
            .session(&session)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("ended"), "{error}");
    })
    .await;
}

#[tokio::test]
async fn a_write_is_retried_once_after_a_retryable_error() {
    bounded(async {
        let _turn = FAIL_POINT.lock().await;
        let (client, events) = recording_client("appName=crud_retry_write");
        let orders = fresh::<Document>(&client, "retry_write").await;
        let admin = client.database("admin");
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["insert"],
                    "closeConnection": true,
                    "appName": "crud_retry_write",
                },
            })
            .await
            .unwrap();
        let result = orders.insert_one(doc! { "_id": 1 }).await;
        admin
            .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
            .await
            .unwrap();
        result.unwrap();
        let inserts = started(&events, "insert");
        assert_eq!(inserts.len(), 2, "one attempt and one retry");
        assert_eq!(
            inserts[0].get_i64("txnNumber").ok(),
            inserts[1].get_i64("txnNumber").ok()
        );
        assert_eq!(
            inserts[0].get_document("lsid").ok(),
            inserts[1].get_document("lsid").ok()
        );
        assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_read_is_retried_once_and_a_second_failure_is_reported() {
    bounded(async {
        let _turn = FAIL_POINT.lock().await;
        let (client, events) = recording_client(
            // The fail point's ShutdownInProgress marks the server Unknown; a streaming
            // monitor learns otherwise only after heartbeatFrequencyMS.
            "appName=crud_retry_read&heartbeatFrequencyMS=500",
        );
        let orders = fresh::<Document>(&client, "retry_read").await;
        let admin = client.database("admin");
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 2 },
                "data": {
                    "failCommands": ["find"],
                    "errorCode": 91,
                    "appName": "crud_retry_read",
                },
            })
            .await
            .unwrap();
        let error = orders.find_one(doc! {}).await.unwrap_err();
        admin
            .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
            .await
            .unwrap();
        assert_eq!(error.code(), Some(91), "{error}");
        assert_eq!(
            started(&events, "find").len(),
            2,
            "one attempt and one retry"
        );
    })
    .await;
}

/// Server Write Commands spec, "Request Size Limits": documents to insert, filters and
/// updates must be at most the server's `maxBsonObjectSize`. One that is larger is
/// refused before anything is sent (issue 41: a 50 MB document went to the server,
/// which dropped the connection, and the retry sent it again); one at the limit is
/// written.
#[tokio::test]
async fn a_document_above_max_bson_object_size_is_refused_before_anything_is_sent() {
    bounded(async {
        let commands = harness::CommandLog::default();
        let pool = PoolEvents::default();
        let log = commands.clone();
        let uri = format!("{}?appName=crud_too_large", server::shared().uri());
        let mut options = pool.record(ClientOptions::parse_uri(&uri).unwrap());
        options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
            log.lock().unwrap().push(event);
        }));
        let client = Client::with_options(options).unwrap();
        let collection = fresh::<Document>(&client, "too_large").await;
        let hello = (client.database("admin"))
            .run_command(doc! { "hello": 1 })
            .await
            .unwrap();
        let max = usize::try_from(hello.get_i32("maxBsonObjectSize").unwrap()).unwrap();
        // A document of `size` bytes: 22 bytes of BSON around the string.
        let sized = |id: i32, size: usize| doc! { "_id": id, "x": "a".repeat(size - 22) };
        assert_eq!(
            anymongo::bson::serialize_to_vec(&sized(0, max))
                .unwrap()
                .len(),
            max
        );

        let refused = |result: anymongo::Result<()>, expected: &str| {
            let error = result.unwrap_err();
            assert!(
                matches!(&*error.kind, ErrorKind::InvalidArgument { message }
                    if message.contains(expected) && message.contains("maxBsonObjectSize")),
                "{error}"
            );
        };
        let huge = sized(0, 50_000_000);
        refused(
            collection.insert_one(&huge).await.map(drop),
            "write 0: the document to insert is 50000000 bytes",
        );
        let above = sized(1, max + 1);
        refused(
            collection.insert_one(&above).await.map(drop),
            "the document to insert",
        );
        refused(
            (collection.insert_many([sized(2, 100), above.clone()]).await).map(drop),
            "write 1: the document to insert",
        );
        refused(
            (collection.replace_one(doc! { "_id": 1 }, &above).await).map(drop),
            "the filter or the update",
        );
        let large_filter = doc! { "_id": "a".repeat(max) };
        refused(
            (collection.update_one(large_filter.clone(), doc! { "$set": { "y": 1 } }))
                .await
                .map(drop),
            "the filter or the update",
        );
        refused(
            (collection.delete_one(large_filter).await).map(drop),
            "the filter",
        );
        // Ordered, the replacement is the first write: nothing is sent.
        let models = vec![
            WriteModel::ReplaceOne(ReplaceOneModel::new(doc! { "_id": 3 }, above.clone())),
            WriteModel::InsertOne(InsertOneModel::new(sized(3, 100))),
        ];
        refused(
            collection.bulk_write(models).await.map(drop),
            "the filter or the update",
        );
        let namespace = "crud_tests.too_large";
        let models = [on(namespace, InsertOneModel::new(above))];
        refused(
            client.bulk_write(models).await.map(drop),
            "write 0: the document to insert",
        );
        // Nothing was sent, so nothing failed on the server's side.
        for name in ["insert", "update", "delete", "bulkWrite"] {
            assert!(started(&commands, name).is_empty(), "{name} was sent");
        }
        let cleared = (pool.lock().iter())
            .filter(|event| matches!(event, CmapEvent::PoolCleared(_)))
            .count();
        assert_eq!(cleared, 0);

        // A document of exactly maxBsonObjectSize is written, and replaced.
        collection.insert_one(sized(4, max)).await.unwrap();
        let replaced = (collection.replace_one(doc! { "_id": 4 }, sized(4, max)))
            .await
            .unwrap();
        assert_eq!(replaced.matched_count, 1);
    })
    .await;
}

/// `maxTimeMS` of a recorded command, if it has one.
fn max_time_ms(command: &Document) -> Option<i64> {
    command.get("maxTimeMS").and_then(Bson::as_i64).or_else(|| {
        command
            .get("maxTimeMS")
            .and_then(Bson::as_i32)
            .map(i64::from)
    })
}

#[tokio::test]
async fn insert_actions_take_their_setters_a_session_and_a_timeout() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_insert_actions");
        let orders = fresh::<Document>(&client, "insert_actions").await;
        let session = client.start_session().await.unwrap();
        orders
            .insert_one(doc! { "_id": 1 })
            .comment("first")
            .bypass_document_validation(true)
            .session(&session)
            .await
            .unwrap();
        let error = orders
            .insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }])
            .ordered(false)
            .timeout(Duration::from_secs(5))
            .await
            .unwrap_err();
        // Unordered: the duplicate fails, the other document is inserted.
        assert!(matches!(*error.kind, ErrorKind::InsertMany(_)), "{error}");
        assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 2);

        let inserts = started(&events, "insert");
        assert_eq!(inserts[0].get("comment"), Some(&Bson::from("first")));
        assert_eq!(
            inserts[0].get_bool("bypassDocumentValidation").ok(),
            Some(true)
        );
        assert_eq!(inserts[0].get_document("lsid").ok(), Some(session.id()));
        assert_eq!(max_time_ms(&inserts[0]), None);
        assert_eq!(inserts[1].get_bool("ordered").ok(), Some(false));
        assert_ne!(inserts[1].get_document("lsid").ok(), Some(session.id()));
        let max_time = max_time_ms(&inserts[1]).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");
    })
    .await;
}

#[tokio::test]
async fn update_and_replace_actions_take_their_setters_a_session_and_a_timeout() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_update_actions");
        let stock = fresh::<Document>(&client, "update_actions").await;
        let session = client.start_session().await.unwrap();
        let upserted = stock
            .update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 2 } })
            .upsert(true)
            .session(&session)
            .await
            .unwrap();
        assert!(upserted.upserted_id.is_some());
        let updated = stock
            .update_many(
                doc! { "item": "tea" },
                doc! { "$set": { "tags.$[tag]": "hot" } },
            )
            .array_filters(vec![doc! { "tag": "cold" }])
            .timeout(Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(updated.matched_count, 1);
        let replaced = stock
            .replace_one(doc! { "item": "milk" }, doc! { "item": "milk", "qty": 1 })
            .upsert(true)
            .let_vars(doc! { "unused": 1 })
            .await
            .unwrap();
        assert!(replaced.upserted_id.is_some());
        assert_eq!(stock.count_documents(doc! {}).await.unwrap(), 2);

        let updates = started(&events, "update");
        let statement = |command: &Document| {
            command.get_array("updates").unwrap()[0]
                .as_document()
                .unwrap()
                .clone()
        };
        assert_eq!(statement(&updates[0]).get_bool("upsert").ok(), Some(true));
        assert_eq!(updates[0].get_document("lsid").ok(), Some(session.id()));
        assert_eq!(
            statement(&updates[1])
                .get_array("arrayFilters")
                .unwrap()
                .len(),
            1
        );
        let max_time = max_time_ms(&updates[1]).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");
        assert_eq!(
            updates[2].get_document("let").ok(),
            Some(&doc! { "unused": 1 })
        );
    })
    .await;
}

#[tokio::test]
async fn delete_actions_take_their_setters_a_session_and_a_timeout() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_delete_actions");
        let orders = fresh::<Document>(&client, "delete_actions").await;
        orders
            .insert_many([
                doc! { "item": "TEA" },
                doc! { "item": "tea" },
                doc! { "item": "milk" },
            ])
            .await
            .unwrap();
        let session = client.start_session().await.unwrap();
        let deleted = orders
            .delete_many(doc! { "item": "tea" })
            .collation(
                Collation::builder()
                    .locale("en")
                    .strength(CollationStrength::Secondary)
                    .build(),
            )
            .session(&session)
            .await
            .unwrap();
        assert_eq!(deleted.deleted_count, 2);
        let deleted = orders
            .delete_one(doc! {})
            .comment("last")
            .timeout(Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(deleted.deleted_count, 1);

        let deletes = started(&events, "delete");
        assert_eq!(deletes[0].get_document("lsid").ok(), Some(session.id()));
        let statement = deletes[0].get_array("deletes").unwrap()[0]
            .as_document()
            .unwrap();
        assert!(statement.contains_key("collation"), "{statement}");
        assert_eq!(deletes[1].get("comment"), Some(&Bson::from("last")));
        let max_time = max_time_ms(&deletes[1]).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");
    })
    .await;
}

#[tokio::test]
async fn find_one_and_modify_actions_take_their_setters_a_session_and_a_timeout() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_find_and_modify_actions");
        let counters = fresh::<Document>(&client, "find_and_modify_actions").await;
        let session = client.start_session().await.unwrap();
        let after = counters
            .find_one_and_update(doc! { "_id": "orders" }, doc! { "$inc": { "n": 1 } })
            .upsert(true)
            .return_document(ReturnDocument::After)
            .session(&session)
            .await
            .unwrap();
        assert_eq!(after, Some(doc! { "_id": "orders", "n": 1 }));
        let before = counters
            .find_one_and_replace(doc! { "_id": "orders" }, doc! { "n": 10 })
            .projection(doc! { "_id": 0 })
            .timeout(Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(before, Some(doc! { "n": 1 }));
        let deleted = counters
            .find_one_and_delete(doc! {})
            .sort(doc! { "n": -1 })
            .await
            .unwrap();
        assert_eq!(deleted, Some(doc! { "_id": "orders", "n": 10 }));

        let commands = started(&events, "findAndModify");
        assert_eq!(commands[0].get_document("lsid").ok(), Some(session.id()));
        assert_eq!(commands[0].get_bool("new").ok(), Some(true));
        let max_time = max_time_ms(&commands[1]).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");
        assert_eq!(
            commands[2].get_document("sort").ok(),
            Some(&doc! { "n": -1 })
        );
    })
    .await;
}

#[tokio::test]
async fn bulk_write_actions_take_their_setters_a_session_and_a_timeout() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_bulk_write_actions");
        let orders = fresh::<Document>(&client, "bulk_write_actions").await;
        let session = client.start_session().await.unwrap();
        let result = orders
            .bulk_write([
                InsertOneModel::new(doc! { "_id": 1 }).into(),
                InsertOneModel::new(doc! { "_id": 1 }).into(),
                InsertOneModel::new(doc! { "_id": 2 }).into(),
            ])
            .ordered(false)
            .session(&session)
            .await
            .unwrap_err();
        assert!(
            matches!(*result.kind, ErrorKind::CollectionBulkWrite(_)),
            "{result}"
        );
        assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 2);
        let inserts = started(&events, "insert");
        assert_eq!(inserts[0].get_bool("ordered").ok(), Some(false));
        assert_eq!(inserts[0].get_document("lsid").ok(), Some(session.id()));

        orders
            .bulk_write([InsertOneModel::new(doc! { "_id": 3 }).into()])
            .timeout(Duration::from_secs(5))
            .await
            .unwrap();
        let last = started(&events, "insert").pop().unwrap();
        let max_time = max_time_ms(&last).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");

        // The client's bulk write: the same setters, and its verbose results. In a
        // session of its own: after an operation, a causally consistent session sends
        // `readConcern.afterClusterTime` with a `bulkWrite`, which SecantusDB refuses.
        let session = client.start_session().await.unwrap();
        let namespace = orders.namespace().to_string();
        let result = client
            .bulk_write([
                on(&namespace, InsertOneModel::new(doc! { "_id": 4 })),
                on(&namespace, InsertOneModel::new(doc! { "_id": 5 })),
            ])
            .ordered(false)
            .verbose_results()
            .comment("client")
            .session(&session)
            .timeout(Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(result.summary.inserted_count, 2);
        assert_eq!(result.insert_results.len(), 2);
        let command = started(&events, "bulkWrite").pop().unwrap();
        assert_eq!(command.get_bool("ordered").ok(), Some(false));
        assert_eq!(command.get_bool("errorsOnly").ok(), Some(false));
        assert_eq!(command.get("comment"), Some(&Bson::from("client")));
        assert_eq!(command.get_document("lsid").ok(), Some(session.id()));
        let max_time = max_time_ms(&command).expect("the timeout's maxTimeMS");
        assert!(0 < max_time && max_time <= 5000, "{max_time}");
    })
    .await;
}

#[tokio::test]
async fn counts_and_distinct_take_their_options_as_setters_and_run_in_a_session() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_count_actions");
        let orders = fresh::<Document>(&client, "count_actions").await;
        let teas = (0..5).map(|qty| doc! { "item": "tea", "qty": qty });
        orders.insert_many(teas).await.unwrap();
        orders
            .insert_one(doc! { "item": "milk", "qty": 1 })
            .await
            .unwrap();
        let session = client.start_session().await.unwrap();
        let counted = orders
            .count_documents(doc! { "item": "tea" })
            .skip(1)
            .limit(3)
            .session(&session)
            .await
            .unwrap();
        assert_eq!(counted, 3);
        let aggregate = started(&events, "aggregate").pop().unwrap();
        assert_eq!(aggregate.get_document("lsid").ok(), Some(session.id()));
        assert_eq!(orders.estimated_document_count().await.unwrap(), 6);
        let items = orders
            .distinct("item", doc! { "qty": 1 })
            .timeout(Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(items.len(), 2, "{items:?}");
        let distinct = started(&events, "distinct").pop().unwrap();
        assert!(distinct.contains_key("maxTimeMS"), "{distinct}");
    })
    .await;
}

#[tokio::test]
async fn indexes_collections_databases_and_commands_are_actions() {
    bounded(async {
        let (client, events) = recording_client("appName=crud_admin_actions");
        let db = client.database("crud_admin_actions");
        db.drop().await.unwrap();
        db.create_collection("log")
            .capped(true)
            .size(4096)
            .await
            .unwrap();
        let create = started(&events, "create").pop().unwrap();
        assert_eq!(create.get_bool("capped").ok(), Some(true), "{create}");
        let log = db.collection::<Document>("log");
        let created = log
            .create_index(
                IndexModel::builder()
                    .keys(doc! { "at": 1 })
                    .options(IndexOptions::builder().name("by_at".to_string()).build())
                    .build(),
            )
            .await
            .unwrap();
        assert_eq!(created.index_name, "by_at");
        let session = client.start_session().await.unwrap();
        let mut names = log.list_index_names().session(&session).await.unwrap();
        names.sort();
        assert_eq!(names, ["_id_", "by_at"]);
        let listing = started(&events, "listIndexes").pop().unwrap();
        assert_eq!(listing.get_document("lsid").ok(), Some(session.id()));
        log.drop_index("by_at").await.unwrap();
        assert_eq!(log.list_index_names().await.unwrap(), ["_id_"]);
        let collections = db
            .list_collection_names()
            .filter(doc! { "name": "log" })
            .await
            .unwrap();
        assert_eq!(collections, ["log"]);
        let databases = client
            .list_database_names()
            .filter(doc! { "name": "crud_admin_actions" })
            .await
            .unwrap();
        assert_eq!(databases, ["crud_admin_actions"]);
        let reply = db
            .run_command(doc! { "ping": 1 })
            .session(&session)
            .await
            .unwrap();
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
        let ping = started(&events, "ping").pop().unwrap();
        assert_eq!(ping.get_document("lsid").ok(), Some(session.id()));
        log.drop().session(&session).await.unwrap();
        assert!(db.list_collection_names().await.unwrap().is_empty());
        db.drop().await.unwrap();
    })
    .await;
}

/// `model` on `namespace` ("db.coll"), for a client bulk write.
fn on(namespace: impl AsRef<str>, model: impl Into<WriteModel>) -> WriteModel {
    model
        .into()
        .with_namespace(namespace.as_ref().parse().unwrap())
}
