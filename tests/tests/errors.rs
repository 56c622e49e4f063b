//! Errors read as with the official `mongodb` crate: `match *error.kind`, the write
//! failures' shapes, and `contains_label`, against SecantusDB.

use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::error::{
    Error, ErrorKind, WriteError, WriteFailure, TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
};
use anymongo::options::InsertManyOptions;
use anymongo::{Client, Collection};
use anymongo_tests::harness::{self, recording_client};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

async fn fresh(client: &Client, name: &str) -> Collection<Document> {
    let collection = client.database("error_tests").collection(name);
    collection.drop().await.unwrap();
    collection
}

#[tokio::test]
async fn a_duplicate_id_is_a_write_error_with_code_11000() {
    harness::within(TEST_BOUND, async {
        let (client, _) = recording_client("appName=errors_duplicate");
        let numbers = fresh(&client, "duplicate").await;
        numbers.insert_one(doc! { "_id": 1 }).await.unwrap();
        let error: Error = numbers.insert_one(doc! { "_id": 1 }).await.unwrap_err();
        match *error.kind {
            ErrorKind::Write(WriteFailure::WriteError(WriteError {
                code: 11000,
                ref message,
                ..
            })) => assert!(message.contains("duplicate"), "{message}"),
            _ => panic!("expected a duplicate key write error, got {error:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn an_unordered_insert_many_reports_each_duplicate_and_the_ids_inserted() {
    harness::within(TEST_BOUND, async {
        let (client, _) = recording_client("appName=errors_insert_many");
        let numbers = fresh(&client, "insert_many").await;
        numbers.insert_one(doc! { "_id": 1 }).await.unwrap();
        // Indexes 1 and 3 are duplicates (of the stored _id 1 and of index 0's _id 0).
        let documents: Vec<Document> = [0, 1, 2, 0, 3]
            .into_iter()
            .map(|id| doc! { "_id": id })
            .collect();
        let options = InsertManyOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let error = numbers
            .insert_many(&documents)
            .with_options(options)
            .await
            .unwrap_err();
        let ErrorKind::InsertMany(ref failure) = *error.kind else {
            panic!("expected an insert_many error, got {error:?}");
        };
        let write_errors = failure.write_errors.as_deref().unwrap_or_default();
        let failed: Vec<(usize, i32)> = write_errors.iter().map(|e| (e.index, e.code)).collect();
        assert_eq!(failed, [(1, 11000), (3, 11000)]);
        assert_eq!(failure.write_concern_error, None);
        let mut inserted: Vec<(usize, Bson)> = failure
            .inserted_ids
            .iter()
            .map(|(index, id)| (*index, id.clone()))
            .collect();
        inserted.sort_by_key(|(index, _)| *index);
        assert_eq!(
            inserted,
            [
                (0, Bson::Int32(0)),
                (2, Bson::Int32(2)),
                (4, Bson::Int32(3))
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn a_labelled_server_error_contains_its_labels() {
    harness::within(TEST_BOUND, async {
        let (client, _) = recording_client("appName=errors_labels");
        let admin = client.database("admin");
        admin
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["find"],
                    "errorCode": 112,
                    "errorLabels": [TRANSIENT_TRANSACTION_ERROR],
                    "appName": "errors_labels",
                },
            })
            .await
            .unwrap();
        let result = client
            .database("error_tests")
            .run_command(doc! { "find": "labels" })
            .await;
        admin
            .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
            .await
            .unwrap();
        let error = result.unwrap_err();
        assert!(
            error.contains_label(TRANSIENT_TRANSACTION_ERROR),
            "{error:?}"
        );
        assert!(error.contains_label(String::from(TRANSIENT_TRANSACTION_ERROR)));
        assert!(!error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT));
        assert!(error.labels().contains(TRANSIENT_TRANSACTION_ERROR));
        match *error.kind {
            ErrorKind::Command(ref command) => assert_eq!(command.code, 112),
            _ => panic!("expected a command error, got {error:?}"),
        }
    })
    .await;
}
