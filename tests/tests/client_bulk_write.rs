//! `Client::bulk_write` (Bulk Write spec) against a real SecantusDB server on
//! loopback: results, errors, batch splitting, the results cursor, retries and
//! unacknowledged writes, after the CRUD spec's prose tests where the server allows
//! (those that need `maxWriteBatchSize + 1` = 100 001 writes take SecantusDB minutes:
//! the split by count is unit tested in the driver).

use std::sync::Mutex;
use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::concern::WriteConcern;
use anymongo::crud::client_bulk_write::{
    ClientBulkWriteOptions, DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel,
    SummaryBulkWriteResult, UpdateManyModel, UpdateOneModel, WriteModel,
};
use anymongo::error::{BulkWriteError, PartialBulkWriteResult};
use anymongo::event::command::CommandEvent;
use anymongo::{Client, Error, ErrorKind};
use anymongo_tests::harness::{self, recording_client};
use futures::TryStreamExt;

/// The fail point is one per server: tests that configure it take turns.
static FAIL_POINT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(120);

/// SecantusDB's `maxBsonObjectSize` and `maxMessageSizeBytes` (checked by
/// [`limits`]).
const MAX_BSON_OBJECT_SIZE: usize = 16 * 1024 * 1024;
const MAX_MESSAGE_SIZE_BYTES: usize = 48_000_000;

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// The commands named `name` that were started.
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

/// Drops `namespace`'s collection.
async fn drop(client: &Client, namespace: &str) {
    let (database, collection) = namespace.split_once('.').unwrap();
    let collection = client.database(database).collection::<Document>(collection);
    collection.drop().await.unwrap();
}

/// The documents of `namespace`, by `_id`.
async fn contents(client: &Client, namespace: &str) -> Vec<Document> {
    let (database, collection) = namespace.split_once('.').unwrap();
    let collection = client.database(database).collection::<Document>(collection);
    let sort = anymongo::crud::FindOptions {
        sort: Some(doc! { "_id": 1 }),
        ..Default::default()
    };
    let cursor = collection.find(doc! {}).with_options(sort).await.unwrap();
    cursor.try_collect().await.unwrap()
}

fn failure(error: &Error) -> &BulkWriteError {
    match &*error.kind {
        ErrorKind::BulkWrite(failure) => failure,
        _ => panic!("expected a client bulk write failure, got {error:?}"),
    }
}

/// The counts of a summary bulk write's failure: a bulk write without
/// `.verbose_results()` carries a summary partial result.
fn partial_counts(failure: &BulkWriteError) -> &SummaryBulkWriteResult {
    match &failure.partial_result {
        Some(PartialBulkWriteResult::Summary(summary)) => summary,
        other => panic!("expected a summary partial result, got {other:?}"),
    }
}

fn ops_len(command: &Document) -> usize {
    command.get_array("ops").unwrap().len()
}

/// Sets `failCommand` for the client named `app`, runs `body`, and turns it off.
async fn with_fail_point<T>(
    client: &Client,
    app: &str,
    times: i32,
    data: Document,
    body: impl std::future::IntoFuture<Output = T>,
) -> T {
    let _turn = FAIL_POINT.lock().await;
    let admin = client.database("admin");
    let mut data = data;
    data.insert("appName", app);
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand", "mode": { "times": times }, "data": data,
        })
        .await
        .unwrap();
    let output = body.await;
    admin
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await
        .unwrap();
    output
}

#[tokio::test]
async fn the_server_limits_are_those_the_tests_assume() {
    bounded(async {
        let (client, _) = recording_client("appName=cbw_limits");
        let hello = client.hello().await.unwrap();
        assert_eq!(hello.max_bson_object_size as usize, MAX_BSON_OBJECT_SIZE);
        assert_eq!(
            hello.max_message_size_bytes as usize,
            MAX_MESSAGE_SIZE_BYTES
        );
    })
    .await;
}

#[tokio::test]
async fn mixed_writes_on_several_namespaces_run_in_one_command_with_verbose_results() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_mixed");
        let (a, b) = ("cbw_mixed0.a", "cbw_mixed1.b");
        drop(&client, a).await;
        drop(&client, b).await;
        let seed: Vec<WriteModel> = (1..=4)
            .map(|i| on(b, InsertOneModel::new(doc! { "_id": i, "x": i })))
            .collect();
        client.bulk_write(seed).await.unwrap();
        let mut upsert = ReplaceOneModel::new(doc! { "_id": 9 }, doc! { "x": 99 });
        upsert.upsert = Some(true);
        let models: Vec<WriteModel> = vec![
            on(a, InsertOneModel::new(doc! { "x": 1 })),
            on(
                b,
                UpdateOneModel::new(doc! { "_id": 1 }, doc! { "$inc": { "x": 10 } }),
            ),
            on(
                b,
                UpdateManyModel::new(
                    doc! { "_id": { "$gt": 2 } },
                    vec![doc! { "$set": { "y": 1 } }],
                ),
            ),
            on(a, upsert),
            on(b, DeleteOneModel::new(doc! { "_id": 2 })),
            on(a, DeleteManyModel::new(doc! { "none": true })),
        ];
        let result = client.bulk_write(models).verbose_results().await.unwrap();
        let summary = &result.summary;
        assert!(summary.acknowledged);
        let counts = (
            summary.inserted_count,
            summary.upserted_count,
            summary.matched_count,
            summary.modified_count,
            summary.deleted_count,
        );
        assert_eq!(counts, (1, 1, 3, 3, 1));
        let verbose = result;
        let inserted_id = verbose.insert_results[&0].inserted_id.clone();
        assert!(matches!(inserted_id, Bson::ObjectId(_)));
        assert_eq!(verbose.update_results[&1].modified_count, 1);
        assert_eq!(verbose.update_results[&2].matched_count, 2);
        assert_eq!(verbose.update_results[&3].upserted_id, Some(Bson::Int32(9)));
        assert_eq!(verbose.update_results[&1].upserted_id, None);
        assert_eq!(verbose.delete_results[&4].deleted_count, 1);
        assert_eq!(verbose.delete_results[&5].deleted_count, 0);

        assert_eq!(
            contents(&client, a).await,
            [
                doc! { "_id": 9, "x": 99 },
                doc! { "_id": inserted_id, "x": 1 }
            ]
        );
        assert_eq!(
            contents(&client, b).await,
            [
                doc! { "_id": 1, "x": 11 },
                doc! { "_id": 3, "x": 3, "y": 1 },
                doc! { "_id": 4, "x": 4, "y": 1 },
            ]
        );
        // One command on admin, its namespaces listed once each.
        let commands = started(&events, "bulkWrite");
        let command = commands.last().unwrap();
        assert_eq!(command.get_str("$db").ok(), Some("admin"));
        assert_eq!(
            command.get_array("nsInfo").unwrap(),
            &vec![Bson::from(doc! { "ns": a }), Bson::from(doc! { "ns": b })]
        );
        assert_eq!(command.get_bool("errorsOnly").ok(), Some(false));
        // CRUD prose test 16: the generated _id is the document's first field.
        let first = command.get_array("ops").unwrap()[0].as_document().unwrap();
        let document = first.get_document("document").unwrap();
        assert_eq!(document.keys().next().map(String::as_str), Some("_id"));
    })
    .await;
}

#[tokio::test]
async fn write_errors_are_reported_by_index_with_the_partial_result() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_write_errors");
        let ns = "cbw_write_errors.coll";
        drop(&client, ns).await;
        let models = || -> Vec<WriteModel> {
            vec![
                on(ns, InsertOneModel::new(doc! { "_id": 1 })),
                on(ns, InsertOneModel::new(doc! { "_id": 1 })),
                on(ns, InsertOneModel::new(doc! { "_id": 2 })),
            ]
        };
        // Ordered: the write after the failure is not done.
        let error = client.bulk_write(models()).await.unwrap_err();
        let failed = failure(&error);
        assert_eq!(failed.write_errors.keys().collect::<Vec<_>>(), [&1]);
        assert_eq!(failed.write_errors[&1].code, 11000);
        assert_eq!(partial_counts(failed).inserted_count, 1);
        assert!(failed.error.is_none());
        assert_eq!(error.code(), None);
        assert_eq!(contents(&client, ns).await, [doc! { "_id": 1 }]);

        // Unordered: every write is tried; the first failure leaves no partial result
        // only when nothing succeeded.
        drop(&client, ns).await;
        let unordered = ClientBulkWriteOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let error = client
            .bulk_write(models())
            .with_options(unordered.clone())
            .await
            .unwrap_err();
        let failed = failure(&error);
        assert_eq!(failed.write_errors.keys().collect::<Vec<_>>(), [&1]);
        assert_eq!(partial_counts(failed).inserted_count, 2);
        let error = client
            .bulk_write(models())
            .with_options(unordered)
            .await
            .unwrap_err();
        let failed = failure(&error);
        assert_eq!(failed.write_errors.len(), 3);
        assert_eq!(failed.partial_result, None);
        assert_eq!(started(&events, "bulkWrite").len(), 3);
    })
    .await;
}

#[tokio::test]
async fn the_client_side_errors_send_nothing() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_client_errors");
        let ns = "cbw_client_errors.coll";
        let invalid = |error: Error| {
            assert!(
                matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
                "{error:?}"
            );
            error.to_string()
        };
        let none: Vec<WriteModel> = Vec::new();
        invalid(client.bulk_write(none).await.unwrap_err());
        let update = on(ns, UpdateOneModel::new(doc! {}, doc! { "x": 1 }));
        invalid(client.bulk_write([update]).await.unwrap_err());
        let w0 = ClientBulkWriteOptions {
            write_concern: Some(WriteConcern::nodes(0)),
            ..Default::default()
        };
        let insert = on(ns, InsertOneModel::new(doc! {}));
        let message = invalid(
            client
                .bulk_write([insert])
                .with_options(w0)
                .await
                .unwrap_err(),
        );
        assert!(message.contains("Cannot request unacknowledged write concern and ordered writes"));
        // CRUD prose test 12: a document, or a namespace, too large for any command.
        let large = "b".repeat(MAX_MESSAGE_SIZE_BYTES);
        let document = on(ns, InsertOneModel::new(doc! { "a": large.as_str() }));
        invalid(client.bulk_write([document]).await.unwrap_err());
        let namespace = on(
            format!("db.{large}"),
            InsertOneModel::new(doc! { "a": "b" }),
        );
        invalid(client.bulk_write([namespace]).await.unwrap_err());
        assert!(started(&events, "bulkWrite").is_empty());
    })
    .await;
}

/// CRUD prose test 4: `maxMessageSizeBytes / maxBsonObjectSize + 1` documents of
/// nearly `maxBsonObjectSize` bytes need two commands.
fn large_inserts(ns: &str) -> Vec<WriteModel> {
    let count = MAX_MESSAGE_SIZE_BYTES / MAX_BSON_OBJECT_SIZE + 1;
    let large = "b".repeat(MAX_BSON_OBJECT_SIZE - 500);
    (0..count)
        .map(|_| on(ns, InsertOneModel::new(doc! { "a": large.as_str() })))
        .collect()
}

#[tokio::test]
async fn batches_split_where_the_message_size_runs_out() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_split");
        let ns = "cbw_split.coll";
        drop(&client, ns).await;
        let models = large_inserts(ns);
        let count = models.len();
        let result = client.bulk_write(models).await.unwrap();
        assert_eq!(result.inserted_count as usize, count);
        let commands = started(&events, "bulkWrite");
        let lengths: Vec<_> = commands.iter().map(ops_len).collect();
        assert_eq!(lengths, [count - 1, 1]);
        // Each command lists only the namespaces its writes use.
        for command in &commands {
            assert_eq!(command.get_array("nsInfo").unwrap().len(), 1);
        }
    })
    .await;
}

#[tokio::test]
async fn a_new_namespace_that_does_not_fit_goes_in_the_next_command() {
    bounded(async {
        // CRUD prose test 11, with the sizes it derives.
        let (client, events) = recording_client("appName=cbw_namespace_split");
        let ns = "db.coll";
        let ops_bytes = MAX_MESSAGE_SIZE_BYTES - 1122;
        let mut count = ops_bytes / MAX_BSON_OBJECT_SIZE;
        let remainder = ops_bytes % MAX_BSON_OBJECT_SIZE;
        let first = "b".repeat(MAX_BSON_OBJECT_SIZE - 57);
        let mut models: Vec<WriteModel> = (0..count)
            .map(|_| on(ns, InsertOneModel::new(doc! { "a": first.as_str() })))
            .collect();
        if remainder >= 217 {
            count += 1;
            let rest = "b".repeat(remainder - 57);
            models.push(on(ns, InsertOneModel::new(doc! { "a": rest })));
        }
        let mut same = models.clone();
        same.push(on(ns, InsertOneModel::new(doc! { "a": "b" })));
        let result = client.bulk_write(same).await.unwrap();
        assert_eq!(result.inserted_count as usize, count + 1);
        let commands = started(&events, "bulkWrite");
        assert_eq!(commands.len(), 1);
        assert_eq!(ops_len(&commands[0]), count + 1);

        let namespace = format!("db.{}", "c".repeat(200));
        models.push(on(
            namespace.as_str(),
            InsertOneModel::new(doc! { "a": "b" }),
        ));
        let result = client.bulk_write(models).await.unwrap();
        assert_eq!(result.inserted_count as usize, count + 1);
        let commands = started(&events, "bulkWrite");
        let (first, second) = (&commands[1], &commands[2]);
        assert_eq!((ops_len(first), ops_len(second)), (count, 1));
        let ns_of = |command: &Document| {
            let ns_info = command.get_array("nsInfo").unwrap();
            assert_eq!(ns_info.len(), 1);
            ns_info[0]
                .as_document()
                .unwrap()
                .get_str("ns")
                .unwrap()
                .to_owned()
        };
        assert_eq!(ns_of(first), ns);
        assert_eq!(ns_of(second), namespace);
        drop(&client, ns).await;
        drop(&client, &namespace).await;
    })
    .await;
}

#[tokio::test]
async fn write_errors_are_collected_across_commands() {
    bounded(async {
        // CRUD prose test 6, with commands split by size rather than by count.
        let (client, events) = recording_client("appName=cbw_errors_across");
        let ns = "cbw_errors_across.coll";
        drop(&client, ns).await;
        client
            .bulk_write([on(ns, InsertOneModel::new(doc! { "_id": 1 }))])
            .await
            .unwrap();
        let large = "b".repeat(MAX_BSON_OBJECT_SIZE - 500);
        let count = MAX_MESSAGE_SIZE_BYTES / MAX_BSON_OBJECT_SIZE + 1;
        let models = || -> Vec<WriteModel> {
            (0..count)
                .map(|_| {
                    on(
                        ns,
                        InsertOneModel::new(doc! { "_id": 1, "a": large.as_str() }),
                    )
                })
                .collect()
        };
        let unordered = ClientBulkWriteOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let error = client
            .bulk_write(models())
            .with_options(unordered)
            .await
            .unwrap_err();
        assert_eq!(failure(&error).write_errors.len(), count);
        assert_eq!(started(&events, "bulkWrite").len(), 1 + 2);
        let error = client.bulk_write(models()).await.unwrap_err();
        assert_eq!(failure(&error).write_errors.len(), 1);
        assert_eq!(started(&events, "bulkWrite").len(), 1 + 2 + 1);
    })
    .await;
}

#[tokio::test]
async fn write_concern_errors_are_collected_across_commands() {
    bounded(async {
        // CRUD prose test 5, with commands split by size rather than by count.
        let app = "cbw_concern_errors";
        let (client, events) = recording_client(&format!("appName={app}&retryWrites=false"));
        let ns = "cbw_concern_errors.coll";
        drop(&client, ns).await;
        let models = large_inserts(ns);
        let count = models.len();
        let data = doc! {
            "failCommands": ["bulkWrite"],
            "writeConcernError": { "code": 91, "errmsg": "Replication is being shut down" },
        };
        let error = with_fail_point(&client, app, 2, data, client.bulk_write(models))
            .await
            .unwrap_err();
        let failed = failure(&error);
        assert_eq!(failed.write_concern_errors.len(), 2);
        assert_eq!(failed.write_concern_errors[0].code, 91);
        assert_eq!(partial_counts(failed).inserted_count as usize, count);
        assert_eq!(started(&events, "bulkWrite").len(), 2);
    })
    .await;
}

/// CRUD prose tests 7 and 9: two upserts whose `_id`s make results too large for one
/// reply.
fn large_upserts(ns: &str) -> Vec<WriteModel> {
    ["a", "b"]
        .iter()
        .map(|c| {
            let filter = doc! { "_id": c.repeat(MAX_BSON_OBJECT_SIZE / 2) };
            let mut model = UpdateOneModel::new(filter, doc! { "$set": { "x": 1 } });
            model.upsert = Some(true);
            on(ns, model)
        })
        .collect()
}

#[tokio::test]
async fn the_results_cursor_is_read_to_its_end() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_get_more");
        let ns = "cbw_get_more.coll";
        drop(&client, ns).await;
        let result = client
            .bulk_write(large_upserts(ns))
            .verbose_results()
            .await
            .unwrap();
        assert_eq!(result.summary.upserted_count, 2);
        assert_eq!(result.update_results.len(), 2);
        let get_mores = started(&events, "getMore");
        assert_eq!(get_mores.len(), 1);
        assert_eq!(
            get_mores[0].get_str("collection").ok(),
            Some("$cmd.bulkWrite")
        );
        assert_eq!(get_mores[0].get_str("$db").ok(), Some("admin"));
        // In the bulk write's session.
        let bulk_write = &started(&events, "bulkWrite")[0];
        assert_eq!(
            get_mores[0].get_document("lsid").ok(),
            bulk_write.get_document("lsid").ok()
        );
    })
    .await;
}

#[tokio::test]
async fn a_failed_get_more_stops_the_bulk_write_and_kills_the_cursor() {
    bounded(async {
        let app = "cbw_get_more_error";
        let (client, events) = recording_client(&format!("appName={app}"));
        let ns = "cbw_get_more_error.coll";
        drop(&client, ns).await;
        let data = doc! { "failCommands": ["getMore"], "errorCode": 8 };
        let bulk_write = client.bulk_write(large_upserts(ns)).verbose_results();
        let error = with_fail_point(&client, app, 1, data, bulk_write)
            .await
            .unwrap_err();
        let failed = failure(&error);
        let top_level = failed.error.as_deref().unwrap();
        assert_eq!(top_level.code(), Some(8));
        // The server's reply stays available.
        assert_eq!(
            top_level
                .server_reply()
                .and_then(|reply| reply.get_i32("code").ok()),
            Some(8)
        );
        assert_eq!(error.code(), Some(8));
        // Verbose results asked for: a verbose partial result.
        let Some(PartialBulkWriteResult::Verbose(partial)) = &failed.partial_result else {
            panic!("expected a verbose partial result: {failed:?}");
        };
        assert_eq!(partial.summary.upserted_count, 2);
        assert_eq!(partial.update_results.len(), 1);
        assert_eq!(started(&events, "getMore").len(), 1);
        assert_eq!(started(&events, "killCursors").len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_batch_is_retried_once_unless_it_holds_a_multi_write() {
    bounded(async {
        let app = "cbw_retry";
        let (client, events) = recording_client(&format!("appName={app}"));
        let ns = "cbw_retry.coll";
        drop(&client, ns).await;
        let data = doc! { "failCommands": ["bulkWrite"], "closeConnection": true };
        let models = [on(ns, InsertOneModel::new(doc! { "_id": 1 }))];
        let result = with_fail_point(&client, app, 1, data.clone(), client.bulk_write(models))
            .await
            .unwrap();
        assert_eq!(result.inserted_count, 1);
        let attempts = started(&events, "bulkWrite");
        assert_eq!(attempts.len(), 2, "one attempt and one retry");
        let txn = |command: &Document| command.get_i64("txnNumber").ok();
        assert!(txn(&attempts[0]).is_some());
        assert_eq!(txn(&attempts[0]), txn(&attempts[1]));

        // With updateMany, no transaction number and no retry.
        let models = [on(
            ns,
            UpdateManyModel::new(doc! {}, doc! { "$set": { "x": 1 } }),
        )];
        let error = with_fail_point(&client, app, 1, data, client.bulk_write(models))
            .await
            .unwrap_err();
        assert!(error.is_network_error(), "{error:?}");
        let attempts = started(&events, "bulkWrite");
        assert_eq!(attempts.len(), 3);
        assert_eq!(txn(&attempts[2]), None);
    })
    .await;
}

#[tokio::test]
async fn unacknowledged_bulk_writes_are_sent_without_waiting_for_a_reply() {
    bounded(async {
        let (client, events) = recording_client("appName=cbw_unacknowledged");
        let ns = "cbw_unacknowledged.coll";
        drop(&client, ns).await;
        let options = ClientBulkWriteOptions {
            ordered: Some(false),
            write_concern: Some(WriteConcern::nodes(0)),
            ..Default::default()
        };
        // CRUD prose test 15: every command has w: 0.
        let models = large_inserts(ns);
        let count = models.len();
        let result = client
            .bulk_write(models)
            .with_options(options)
            .await
            .unwrap();
        assert!(!result.acknowledged);
        assert_eq!(result.inserted_count, 0);
        let commands = started(&events, "bulkWrite");
        assert_eq!(
            commands.iter().map(ops_len).collect::<Vec<_>>(),
            [count - 1, 1]
        );
        for command in &commands {
            assert_eq!(
                command.get_document("writeConcern").ok(),
                Some(&doc! { "w": 0 })
            );
            // Sessions spec: no session for an unacknowledged write.
            assert!(command.get("lsid").is_none());
        }
        // The replies the driver reports are `{ ok: 1 }`: the server sent none.
        let replies: Vec<Document> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                CommandEvent::Succeeded(done) if done.command_name == "bulkWrite" => {
                    Some(done.reply.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(replies.len(), 2);
        assert!(replies.iter().all(|reply| reply.get("nInserted").is_none()));
        // The writes are done: a count on the same connection comes after them.
        let collection = client
            .database("cbw_unacknowledged")
            .collection::<Document>("coll");
        assert_eq!(
            collection.count_documents(doc! {}).await.unwrap() as usize,
            count
        );
    })
    .await;
}

/// `model` on `namespace` ("db.coll"), for a client bulk write.
fn on(namespace: impl AsRef<str>, model: impl Into<WriteModel>) -> WriteModel {
    model
        .into()
        .with_namespace(namespace.as_ref().parse().unwrap())
}
