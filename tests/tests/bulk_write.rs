//! `Collection::bulk_write` (CRUD spec, "Bulk Write") against a real SecantusDB server
//! on loopback: how models become commands, the result and its indexes, ordered and
//! unordered failures, retries and sessions.

use std::sync::Mutex;
use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::crud::bulk_write::{
    BulkWriteOptions, DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel,
    UpdateManyModel, UpdateOneModel, WriteModel,
};
use anymongo::event::command::CommandEvent;
use anymongo::{Client, Collection, ErrorKind};
use anymongo_tests::harness::{self, CommandLog};
use serde::{Deserialize, Serialize};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// A client of the shared server whose started commands are recorded.
fn recording_client(app_name: &str) -> (Client, CommandLog) {
    harness::recording_client(&format!("appName={app_name}"))
}

/// A fresh, empty collection named after the test.
async fn fresh<T>(client: &Client, name: &str) -> Collection<T> {
    let collection = client.database("bulk_write_tests").collection::<T>(name);
    collection.drop().await.unwrap();
    collection
}

/// The write commands started so far, by name, with their statements.
fn writes(events: &Mutex<Vec<CommandEvent>>) -> Vec<(String, Document)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            CommandEvent::Started(started)
                if ["insert", "update", "delete"].contains(&started.command_name.as_str()) =>
            {
                Some((started.command_name.clone(), started.command.clone()))
            }
            _ => None,
        })
        .collect()
}

fn statements(command: &Document) -> usize {
    ["documents", "updates", "deletes"]
        .iter()
        .find_map(|key| command.get_array(key).ok())
        .map_or(0, Vec::len)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Item {
    #[serde(rename = "_id")]
    id: i32,
    qty: i32,
}

#[tokio::test]
async fn an_ordered_bulk_write_sends_one_command_per_run_and_reports_by_index() {
    bounded(async {
        let (client, events) = recording_client("bulk_ordered");
        let items = fresh::<Item>(&client, "ordered").await;
        let item = |id, qty| Item { id, qty };
        let models: Vec<WriteModel<Item>> = vec![
            InsertOneModel::new(item(1, 1)).into(),
            InsertOneModel::new(item(2, 2)).into(),
            UpdateOneModel::new(doc! { "_id": 1 }, doc! { "$inc": { "qty": 10 } }).into(),
            WriteModel::UpdateOne(UpdateOneModel {
                upsert: Some(true),
                ..UpdateOneModel::new(doc! { "_id": 3 }, doc! { "$set": { "qty": 3 } })
            }),
            ReplaceOneModel::new(doc! { "_id": 2 }, item(2, 20)).into(),
            DeleteOneModel::new(doc! { "_id": 1 }).into(),
            InsertOneModel::new(item(4, 4)).into(),
        ];
        let result = items.bulk_write(models).await.unwrap();
        assert_eq!(result.inserted_count, 3);
        assert_eq!(
            result.inserted_ids.keys().copied().collect::<Vec<_>>(),
            vec![0, 1, 6]
        );
        assert_eq!((result.matched_count, result.modified_count), (2, 2));
        assert_eq!(result.upserted_count, 1);
        assert_eq!(result.upserted_ids.get(&3), Some(&Bson::Int32(3)));
        assert_eq!(result.deleted_count, 1);
        let mut left: Vec<Item> = Vec::new();
        for id in 1..=4 {
            left.extend(items.find_one(doc! { "_id": id }).await.unwrap());
        }
        assert_eq!(left, vec![item(2, 20), item(3, 3), item(4, 4)]);
        // Consecutive models of a kind share a command; the order is kept.
        let sent: Vec<(String, usize)> = writes(&events)
            .iter()
            .map(|(name, command)| (name.clone(), statements(command)))
            .collect();
        let expected = [("insert", 2), ("update", 3), ("delete", 1), ("insert", 1)];
        assert_eq!(
            sent,
            expected.map(|(name, n)| (name.to_owned(), n)).to_vec()
        );
    })
    .await;
}

#[tokio::test]
async fn ordered_stops_at_the_first_write_error_and_unordered_goes_on() {
    bounded(async {
        let (client, events) = recording_client("bulk_errors");
        let numbers = fresh::<Document>(&client, "errors").await;
        numbers.insert_one(doc! { "_id": 2 }).await.unwrap();
        let models = || -> Vec<WriteModel> {
            vec![
                DeleteManyModel::new(doc! { "_id": { "$gt": 100 } }).into(),
                InsertOneModel::new(doc! { "_id": 1 }).into(),
                InsertOneModel::new(doc! { "_id": 2 }).into(),
                InsertOneModel::new(doc! { "_id": 3 }).into(),
                UpdateManyModel::new(doc! {}, doc! { "$set": { "seen": true } }).into(),
            ]
        };
        let error = numbers.bulk_write(models()).await.unwrap_err();
        let ErrorKind::CollectionBulkWrite(failure) = &*error.kind else {
            panic!("expected a bulk write error, got {error}");
        };
        // The index is the model's in the given list, not the statement's in its
        // command.
        let failed: Vec<(usize, i32)> = failure
            .write_errors
            .iter()
            .map(|error| (error.index, error.code))
            .collect();
        assert_eq!(failed, vec![(2, 11000)]);
        assert_eq!(
            failure
                .write_result
                .inserted_ids
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            vec![1]
        );
        // Nothing after the failure was attempted: no update.
        let names: Vec<String> = writes(&events).into_iter().map(|(name, _)| name).collect();
        assert!(!names.contains(&"update".to_owned()), "{names:?}");
        assert_eq!(numbers.count_documents(doc! {}).await.unwrap(), 2);

        numbers.delete_many(doc! { "_id": 1 }).await.unwrap();
        let unordered = BulkWriteOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let error = numbers
            .bulk_write(models())
            .with_options(unordered)
            .await
            .unwrap_err();
        let ErrorKind::CollectionBulkWrite(failure) = &*error.kind else {
            panic!("expected a bulk write error, got {error}");
        };
        assert_eq!(failure.write_errors.len(), 1);
        assert_eq!(failure.write_errors[0].index, 2);
        let result = &failure.write_result;
        assert_eq!(result.inserted_count, 2);
        assert_eq!(
            result.inserted_ids.keys().copied().collect::<Vec<_>>(),
            vec![1, 3]
        );
        // The update ran after the failed insert.
        assert_eq!(result.matched_count, 3);
        let seen = numbers
            .count_documents(doc! { "seen": true })
            .await
            .unwrap();
        assert_eq!(seen, 3);
    })
    .await;
}

#[tokio::test]
async fn invalid_models_are_refused_before_anything_is_sent() {
    bounded(async {
        let (client, events) = recording_client("bulk_invalid");
        let numbers = fresh::<Document>(&client, "invalid").await;
        let empty = numbers
            .bulk_write(Vec::<WriteModel>::new())
            .await
            .unwrap_err();
        assert!(matches!(&*empty.kind, ErrorKind::InvalidArgument { .. }));
        let models: Vec<WriteModel> = vec![
            InsertOneModel::new(doc! { "_id": 1 }).into(),
            UpdateOneModel::new(doc! {}, doc! { "x": 1 }).into(),
        ];
        let error = numbers.bulk_write(models).await.unwrap_err();
        assert!(matches!(&*error.kind, ErrorKind::InvalidArgument { .. }));
        assert!(error.to_string().contains("write model 1"), "{error}");
        assert!(writes(&events).is_empty());
    })
    .await;
}

#[tokio::test]
async fn only_commands_without_multi_statements_are_retryable_writes() {
    bounded(async {
        let (client, events) = recording_client("bulk_txn");
        let numbers = fresh::<Document>(&client, "txn").await;
        let session = client.start_session().await.unwrap();
        let models: Vec<WriteModel> = vec![
            InsertOneModel::new(doc! { "_id": 1 }).into(),
            DeleteOneModel::new(doc! { "_id": 9 }).into(),
            DeleteManyModel::new(doc! { "_id": 8 }).into(),
            UpdateOneModel::new(doc! { "_id": 1 }, doc! { "$set": { "x": 1 } }).into(),
        ];
        numbers.bulk_write(models).session(&session).await.unwrap();
        let sent = writes(&events);
        let txn: Vec<(&str, bool)> = sent
            .iter()
            .map(|(name, command)| (name.as_str(), command.contains_key("txnNumber")))
            .collect();
        // The delete command carries a deleteMany: it is not a retryable write.
        assert_eq!(
            txn,
            vec![("insert", true), ("delete", false), ("update", true)]
        );
        for (_, command) in &sent {
            assert_eq!(command.get_document("lsid").ok(), Some(session.id()));
        }
    })
    .await;
}
