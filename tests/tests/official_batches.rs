//! The official `mongodb` crate's raw batch cursors, as its documentation shows them:
//! `.batch()` on `find`, `aggregate`, `list_collections`, `list_indexes` and
//! `run_cursor_command`, in and out of a session, yielding `raw_batch_cursor::RawBatch`es
//! read with `doc_slices()` and `as_raw_document()`. Written here from the
//! documentation, with only `mongodb` replaced by `anymongo`; each program checks what
//! it got, so that the test can fail.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anymongo::bson::{doc, Bson, Document, RawDocument};
use anymongo::event::command::{CommandEvent, CommandStartedEvent};
use anymongo::event::EventHandler;
use anymongo::options::ClientOptions;
use anymongo::raw_batch_cursor::{RawBatch, RawBatchCursor, SessionRawBatchCursor};
use anymongo::{Client, Collection};
use anymongo_tests::{harness, server};
use futures::stream::StreamExt;
use futures::TryStreamExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// A collection of `_id` 0 to 9, fresh.
async fn ten_documents(
    client: &Client,
    name: &str,
) -> anymongo::error::Result<Collection<Document>> {
    let coll = client
        .database("official_batches")
        .collection::<Document>(name);
    coll.drop().await?;
    coll.insert_many((0..10).map(|id| doc! { "_id": id, "x": id * 10 }))
        .await?;
    Ok(coll)
}

/// The `_id`s of a batch's documents, read in place.
fn ids(batch: &RawBatch) -> anymongo::error::Result<Vec<i32>> {
    let mut ids = Vec::new();
    for document in batch.doc_slices()? {
        let document: &RawDocument = document?.as_document().expect("a document");
        ids.push(document.get_i32("_id").expect("an _id"));
    }
    Ok(ids)
}

#[tokio::test]
async fn find_batch_yields_the_server_batches_whole() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = ten_documents(&client, "find").await?;

        // The documentation's loop: each batch, then each document of it.
        let mut cursor: RawBatchCursor = coll
            .find(doc! { "_id": { "$gte": 2 } })
            .sort(doc! { "_id": 1 })
            .batch_size(3)
            .batch()
            .await?;
        let mut batches = Vec::new();
        while let Some(batch) = cursor.next().await {
            let batch = batch?;
            let reply = batch.as_raw_document();
            assert!(
                reply.get_document("cursor").is_ok(),
                "the whole reply: {reply:?}"
            );
            assert_eq!(
                reply.get_f64("ok").ok(),
                Some(1.0),
                "the whole reply: {reply:?}"
            );
            batches.push(ids(&batch)?);
        }
        assert_eq!(batches[0], [2, 3, 4], "the find's batch first");
        assert!(batches.iter().all(|batch| batch.len() <= 3), "{batches:?}");
        assert_eq!(batches.concat(), (2..10).collect::<Vec<_>>());
        Ok(())
    })
    .await
}

#[tokio::test]
async fn every_cursor_action_has_batch() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = ten_documents(&client, "actions").await?;
        coll.create_index(
            anymongo::IndexModel::builder()
                .keys(doc! { "x": 1 })
                .build(),
        )
        .await?;
        let db = client.database("official_batches");

        let batches: Vec<RawBatch> = coll
            .aggregate([
                doc! { "$match": { "_id": { "$lt": 5 } } },
                doc! { "$sort": { "_id": 1 } },
            ])
            .batch_size(2)
            .batch()
            .await?
            .try_collect()
            .await?;
        let aggregated: Vec<i32> = batches
            .iter()
            .map(ids)
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        assert_eq!(aggregated, [0, 1, 2, 3, 4]);
        assert_eq!(ids(&batches[0])?.len(), 2);

        let mut names = Vec::new();
        let mut cursor = db
            .list_collections()
            .filter(doc! { "name": "actions" })
            .batch()
            .await?;
        while let Some(batch) = cursor.try_next().await? {
            for collection in batch.doc_slices()? {
                let collection = collection?.as_document().expect("a document");
                names.push(collection.get_str("name").expect("a name").to_string());
            }
        }
        assert_eq!(names, ["actions"]);

        let mut keys = Vec::new();
        let mut cursor = coll.list_indexes().batch().await?;
        while let Some(batch) = cursor.try_next().await? {
            for index in batch.doc_slices()? {
                let index = index?.as_document().expect("a document");
                keys.push(index.get_str("name").expect("a name").to_string());
            }
        }
        keys.sort();
        assert_eq!(keys, ["_id_", "x_1"]);

        let batches: Vec<RawBatch> = db
            .run_cursor_command(
                doc! { "find": "actions", "filter": { "_id": { "$gte": 7 } }, "batchSize": 1 },
            )
            .batch_size(1)
            .batch()
            .await?
            .try_collect()
            .await?;
        let mut found: Vec<i32> = batches
            .iter()
            .map(ids)
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        found.sort();
        assert_eq!(found, [7, 8, 9]);
        assert!(batches.len() >= 3, "one document a batch, then getMores");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn batch_in_a_session_is_iterated_with_the_session() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = ten_documents(&client, "session").await?;
        let mut session = client.start_session().await?;

        let mut cursor: SessionRawBatchCursor = coll
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .batch_size(4)
            .session(&mut session)
            .batch()
            .await?;
        let mut found = Vec::new();
        let mut stream = cursor.stream(&mut session);
        while let Some(batch) = stream.next().await {
            found.extend(ids(&batch?)?);
        }
        assert_eq!(found, (0..10).collect::<Vec<_>>());

        let mut cursor = coll
            .aggregate([doc! { "$sort": { "_id": -1 } }, doc! { "$limit": 3 }])
            .session(&mut session)
            .batch()
            .await?;
        let batches: Vec<RawBatch> = cursor.stream(&mut session).try_collect().await?;
        let found: Vec<i32> = batches
            .iter()
            .map(ids)
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        assert_eq!(found, [9, 8, 7]);

        let db = client.database("official_batches");
        let mut cursor = db.list_collections().session(&mut session).batch().await?;
        let listed: Vec<RawBatch> = cursor.stream(&mut session).try_collect().await?;
        assert!(!listed.is_empty());
        let mut cursor = coll.list_indexes().session(&mut session).batch().await?;
        let listed: Vec<RawBatch> = cursor.stream(&mut session).try_collect().await?;
        assert_eq!(listed_names(&listed), ["_id_"]);
        let mut cursor = db
            .run_cursor_command(doc! { "find": "session", "batchSize": 2 })
            .session(&mut session)
            .batch()
            .await?;
        let batches: Vec<RawBatch> = cursor.stream(&mut session).try_collect().await?;
        let mut found: Vec<i32> = batches
            .iter()
            .map(ids)
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        found.sort();
        assert_eq!(found, (0..10).collect::<Vec<_>>());
        Ok(())
    })
    .await
}

/// The `name`s of the documents of `batches` (a listing's).
fn listed_names(batches: &[RawBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|batch| batch.doc_slices().expect("a batch"))
        .map(|entry| {
            let entry = entry.expect("an entry").as_document().expect("a document");
            entry.get_str("name").expect("a name").to_string()
        })
        .collect()
}

#[tokio::test]
async fn a_batch_cursor_runs_the_cursor_s_get_mores_and_is_killed_when_dropped(
) -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let events = Arc::new(Mutex::new(Vec::<CommandStartedEvent>::new()));
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        let seen = events.clone();
        options.command_event_handler = Some(EventHandler::callback(move |event| {
            if let CommandEvent::Started(started) = event {
                seen.lock().unwrap().push(started);
            }
        }));
        let client = Client::with_options(options)?;
        let coll = ten_documents(&client, "kill").await?;
        let started = |name: &str| -> Vec<Document> {
            let events = events.lock().unwrap();
            let named = events.iter().filter(|event| event.command_name == name);
            named.map(|event| event.command.clone()).collect()
        };

        let mut cursor = coll.find(doc! {}).batch_size(2).batch().await?;
        let first = cursor.try_next().await?.expect("a first batch");
        assert_eq!(first.doc_slices()?.into_iter().count(), 2);
        assert!(
            started("getMore").is_empty(),
            "the find's reply is the first batch"
        );
        let second = cursor.try_next().await?.expect("a second batch");
        assert_eq!(second.doc_slices()?.into_iter().count(), 2);
        let get_mores = started("getMore");
        assert_eq!(get_mores.len(), 1);
        assert_eq!(get_mores[0].get_i64("batchSize").ok(), Some(2));
        let lsid = started("find")[0].get_document("lsid").ok().cloned();
        assert_eq!(
            get_mores[0].get_document("lsid").ok().cloned(),
            lsid,
            "in the find's session"
        );
        let id = second
            .as_raw_document()
            .get_document("cursor")
            .and_then(|cursor| cursor.get_i64("id"))
            .expect("the cursor's id");
        assert_ne!(id, 0);

        drop(cursor);
        // The kill runs in a spawned task: wait for its event, bounded by the test's.
        loop {
            if let Some(kill) = started("killCursors").first() {
                assert_eq!(kill.get_array("cursors").ok(), Some(&vec![Bson::Int64(id)]));
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    })
    .await
}
