//! Documents whose field names start with `$` (allowed since MongoDB 5.0) read back as
//! stored, against a real SecantusDB server on loopback: BSON is not extended JSON, so
//! a stored `{"n": {"$numberLong": "12"}}` is a document with a string field, through
//! `Collection<Document>` (find, find_one, aggregate, find_one_and_*, after a replace)
//! and a change stream's `fullDocument`, byte for byte what `Collection<RawDocumentBuf>`
//! reads; a typed value reads it with `bson_deserializer::as_stored`, and a plain bson
//! `Document` field refuses it with an error instead of misreading it.

use std::time::Duration;

use anymongo::bson::{doc, oid::ObjectId, Bson, Document, RawDocumentBuf};
use anymongo::change_stream::{ChangeStreamOptions, OperationType};
use anymongo::options::{FindOneAndReplaceOptions, ReturnDocument};
use anymongo::{Client, Collection};
use anymongo_tests::harness;
use futures::TryStreamExt;
use serde::Deserialize;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

const DATABASE: &str = "stored_documents_tests";

/// A fresh, empty collection named after the test.
async fn fresh(client: &Client, name: &str) -> Collection<Document> {
    let collection = client.database(DATABASE).collection::<Document>(name);
    collection.drop().await.unwrap();
    client
        .database(DATABASE)
        .run_command(doc! { "create": name })
        .await
        .unwrap();
    collection
}

/// Documents with `$`-prefixed field names that the bson crate's `Document` visitor
/// would read as extended JSON: nested, in arrays, beside ordinary fields, with values
/// no extended JSON allows, and at the top level.
fn stored() -> Vec<Document> {
    let oid = ObjectId::parse_str("0123456789abcdef01234567").unwrap();
    vec![
        doc! { "_id": 1, "n": { "$numberLong": "12" } },
        doc! { "_id": 2, "n": { "$date": 5 } },
        doc! { "_id": 3, "n": { "$oid": oid.to_hex() } },
        doc! { "_id": 4, "n": { "a": 1, "$numberLong": "12" } },
        doc! { "_id": 5, "n": { "$oid": "not-an-oid" } },
        doc! {
            "_id": 6,
            "list": [{ "$date": { "$numberLong": "x" } }, { "x": 1, "$uuid": 1 }, [{ "$minKey": 2 }]],
            "n": { "m": { "$binary": "x", "$type": "00" }, "$timestamp": { "t": 1 } },
        },
        doc! { "_id": 7, "n": { "$regularExpression": 1, "$code": "c", "$scope": 2, "$undefined": false } },
    ]
}

/// The one document with a `$`-prefixed field at the top level (a replacement cannot
/// have one: the CRUD spec takes it for an update operator).
fn stored_top_level() -> Document {
    doc! { "_id": 8, "$numberDecimal": "x", "n": { "$numberInt": "1" } }
}

fn bytes(document: &Document) -> Vec<u8> {
    anymongo::bson::serialize_to_vec(document).unwrap()
}

/// `read`, compared with `expected` as bytes (field order and types included).
fn assert_as_stored(what: &str, read: &Document, expected: &Document) {
    assert_eq!(
        bytes(read),
        bytes(expected),
        "{what}: read {read} but stored {expected}"
    );
}

#[tokio::test]
async fn dollar_fields_read_back_as_stored_through_every_read() {
    harness::within(TEST_BOUND, async {
        let (client, _) = harness::recording_client("appName=stored_reads");
        let documents = fresh(&client, "reads").await;
        let mut all = stored();
        all.push(stored_top_level());
        for document in &all {
            documents.insert_one(document).await.unwrap();
        }
        // What the server holds, as its bytes: the stored documents exactly.
        let raw = client
            .database(DATABASE)
            .collection::<RawDocumentBuf>("reads");
        let held: Vec<RawDocumentBuf> = raw
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let held: Vec<Vec<u8>> = held.into_iter().map(RawDocumentBuf::into_bytes).collect();
        let expected: Vec<Vec<u8>> = all.iter().map(bytes).collect();
        assert_eq!(
            held, expected,
            "the server does not hold the documents as sent"
        );

        let found: Vec<Document> = documents
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found.len(), all.len());
        for (read, document) in found.iter().zip(&all) {
            assert_as_stored("find", read, document);
        }
        let aggregated: Vec<Document> = documents
            .aggregate([doc! { "$match": {} }])
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(aggregated.len(), all.len());
        for (read, document) in aggregated.iter().zip(&all) {
            assert_as_stored("aggregate", read, document);
        }
        for document in &all {
            let filter = doc! { "_id": document.get("_id").unwrap() };
            let read = documents.find_one(filter.clone()).await.unwrap();
            assert_as_stored("find_one", &read.unwrap(), document);
            // Returns the document before the update: as stored.
            let before = documents
                .find_one_and_update(filter.clone(), doc! { "$set": { "seen": true } })
                .await
                .unwrap()
                .unwrap();
            assert_as_stored("find_one_and_update", &before, document);
            let mut after = document.clone();
            after.insert("seen", true);
            let deleted = documents
                .find_one_and_delete(filter)
                .await
                .unwrap()
                .unwrap();
            assert_as_stored("find_one_and_delete", &deleted, &after);
        }
    })
    .await;
}

#[tokio::test]
async fn dollar_fields_survive_a_replace() {
    harness::within(TEST_BOUND, async {
        let (client, _) = harness::recording_client("appName=stored_replace");
        let documents = fresh(&client, "replace").await;
        for document in stored() {
            let id = document.get("_id").unwrap().clone();
            documents
                .insert_one(doc! { "_id": id.clone(), "n": "before" })
                .await
                .unwrap();
            let result = documents
                .replace_one(doc! { "_id": id.clone() }, &document)
                .await
                .unwrap();
            assert_eq!(result.modified_count, 1);
            let read = documents
                .find_one(doc! { "_id": id.clone() })
                .await
                .unwrap();
            assert_as_stored("replace, then find_one", &read.unwrap(), &document);
            // Replaced again, and the new document returned.
            let options = FindOneAndReplaceOptions {
                return_document: Some(ReturnDocument::After),
                ..Default::default()
            };
            let after = documents
                .find_one_and_replace(doc! { "_id": id }, &document)
                .with_options(options)
                .await
                .unwrap()
                .unwrap();
            assert_as_stored("find_one_and_replace", &after, &document);
        }
    })
    .await;
}

#[tokio::test]
async fn change_events_carry_dollar_fields_as_stored() {
    harness::within(TEST_BOUND, async {
        let (client, _) = harness::recording_client("appName=stored_changes");
        let documents = fresh(&client, "changes").await;
        let options = ChangeStreamOptions {
            max_await_time: Some(Duration::from_millis(100)),
            ..ChangeStreamOptions::default()
        };
        let mut changes = documents.watch().with_options(options).await.unwrap();
        let mut all = stored();
        all.push(stored_top_level());
        for document in &all {
            documents.insert_one(document).await.unwrap();
        }
        // A replace event's fullDocument, and its documentKey, are stored documents too.
        let replacement = doc! { "_id": 1, "k": { "$oid": 1, "a": [{ "$date": "x" }] } };
        documents
            .replace_one(doc! { "_id": 1 }, &replacement)
            .await
            .unwrap();
        let operations =
            std::iter::repeat_n(OperationType::Insert, all.len()).chain([OperationType::Replace]);
        for (document, operation) in all.iter().chain([&replacement]).zip(operations) {
            let event = changes.try_next().await.unwrap().unwrap();
            assert_eq!(event.operation_type, operation);
            let full = event
                .full_document
                .expect("an insert or replace has fullDocument");
            assert_as_stored("fullDocument", &full, document);
            let key = doc! { "_id": document.get("_id").unwrap() };
            assert_eq!(event.document_key, Some(key));
        }
        changes.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn typed_values_read_dollar_fields_as_stored_or_refuse_them() {
    #[derive(Debug, Deserialize)]
    struct AsStored {
        #[serde(deserialize_with = "anymongo::bson_deserializer::as_stored::document")]
        n: Document,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct PlainBson {
        n: Bson,
    }
    harness::within(TEST_BOUND, async {
        let (client, _) = harness::recording_client("appName=stored_typed");
        let documents = fresh(&client, "typed").await;
        for document in stored() {
            documents.insert_one(&document).await.unwrap();
        }
        let typed = client.database(DATABASE).collection::<AsStored>("typed");
        let read: Vec<AsStored> = typed
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        for (read, document) in read.iter().zip(stored()) {
            assert_as_stored(
                "as_stored field",
                &read.n,
                document.get_document("n").unwrap(),
            );
        }
        // A plain bson `Bson` field cannot hold such a document: an error, not a value
        // with fields lost (`{"a": 1, "$numberLong": "12"}` as an Int64).
        let plain = client.database(DATABASE).collection::<PlainBson>("typed");
        let error = plain.find_one(doc! { "_id": 4 }).await.unwrap_err();
        assert!(error.to_string().contains("as extended JSON"), "{error}");
    })
    .await;
}
