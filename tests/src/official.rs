//! Programs written from the official `mongodb` crate's 3.x documentation (its README
//! and the docs of `Client`, `Collection`, `ClientSession`, `options`,
//! `change_stream` and `gridfs`), with only `mongodb` replaced by `anymongo`. They are
//! written here from the documentation, not copied. What differs from the documents:
//! the connection string (the test server's, given as `uri`) and each program's
//! database name (its own); and the programs check what they read, so that a test can
//! fail.
//!
//! The same programs run natively (`tests/official_api.rs`) and as the wasm32-wasip2
//! `official` binary under wasmtime (`tests/wasi.rs`): the API is the same on both.

use anymongo::bson::{doc, Document};
use futures::future::LocalBoxFuture;

/// One program: it runs against the deployment at the given connection string.
pub type Program = for<'a> fn(&'a str) -> LocalBoxFuture<'a, anymongo::error::Result<()>>;

/// Every program, by name.
pub const PROGRAMS: &[(&str, Program)] = &[
    (
        "readme: connect, list, insert and find typed documents",
        |uri| Box::pin(readme::connect_list_insert_and_find_typed_documents(uri)),
    ),
    ("readme: the Stable API", |uri| {
        Box::pin(readme::the_stable_api(uri))
    }),
    (
        "Collection: CRUD with options, aggregation and indexes",
        |uri| {
            Box::pin(collection_docs::crud_with_options_aggregation_and_indexes(
                uri,
            ))
        },
    ),
    (
        "change_stream: a change stream resumes after its token",
        |uri| {
            Box::pin(change_stream_docs::a_change_stream_resumes_after_its_token(
                uri,
            ))
        },
    ),
    (
        "ClientSession: a manual transaction retried on transient errors",
        |uri| Box::pin(session_docs::a_manual_transaction_retried_on_transient_errors(uri)),
    ),
    ("ClientSession: and_run2 runs a transaction", |uri| {
        Box::pin(session_docs::and_run2_runs_a_transaction(uri))
    }),
    (
        "ClientSession: a session advanced to another reads its writes",
        |uri| Box::pin(session_docs::a_session_advanced_to_another_reads_its_writes(uri)),
    ),
    (
        "gridfs: a file is uploaded and downloaded as streams",
        |uri| {
            Box::pin(gridfs_docs::a_file_is_uploaded_and_downloaded_as_streams(
                uri,
            ))
        },
    ),
    ("error: errors are matched by their kind", |uri| {
        Box::pin(error_docs::errors_are_matched_by_their_kind(uri))
    }),
    ("Client: a client bulk write over two collections", |uri| {
        Box::pin(bulk_write_docs::a_client_bulk_write_over_two_collections(
            uri,
        ))
    }),
    (
        "event: a command event handler on ClientOptions sees a find",
        |uri| Box::pin(event_docs::a_command_event_handler_sees_a_find(uri)),
    ),
    (
        "error: a failed client bulk write carries its partial result",
        |uri| Box::pin(bulk_write_docs::a_failed_bulk_write_carries_its_partial_result(uri)),
    ),
    ("error: GridFS errors name the file", |uri| {
        Box::pin(gridfs_docs::gridfs_errors_name_the_file(uri))
    }),
];

/// A clean database for one program, named `name`.
async fn fresh_database(uri: &str, name: &str) -> anymongo::Database {
    let client = anymongo::Client::with_uri_str(uri).await.unwrap();
    let db = client.database(name);
    db.drop().await.unwrap();
    db
}

/// From the README: a first program, and the Stable API.
pub mod readme {
    use super::*;
    use anymongo::{bson::doc, options::ClientOptions, Client};
    use futures::stream::TryStreamExt;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    struct Book {
        title: String,
        author: String,
    }

    /// Connects with parsed options, inserts documents, lists databases and collections,
    /// and reads a typed collection.
    pub async fn connect_list_insert_and_find_typed_documents(
        uri: &str,
    ) -> anymongo::error::Result<()> {
        fresh_database(uri, "official_readme").await;
        // Parse a connection string into an options struct.
        let mut client_options = ClientOptions::parse(uri).await?;
        // Manually set an option.
        client_options.app_name = Some("My App".to_string());
        // Get a handle to the deployment.
        let client = Client::with_options(client_options)?;

        let db = client.database("official_readme");
        let collection = db.collection::<Document>("books");
        let docs = vec![
            doc! { "title": "1984", "author": "George Orwell" },
            doc! { "title": "Animal Farm", "author": "George Orwell" },
            doc! { "title": "The Great Gatsby", "author": "F. Scott Fitzgerald" },
        ];
        collection.insert_many(docs).await?;

        let mut names = Vec::new();
        for db_name in client.list_database_names().await? {
            names.push(db_name);
        }
        assert!(
            names.iter().any(|name| name == "official_readme"),
            "{names:?}"
        );
        let collections = db.list_collection_names().await?;
        assert_eq!(collections, ["books"]);

        // A typed collection.
        let typed_collection = db.collection::<Book>("books");
        let books = vec![
            Book {
                title: "The Grapes of Wrath".to_string(),
                author: "John Steinbeck".to_string(),
            },
            Book {
                title: "To Kill a Mockingbird".to_string(),
                author: "Harper Lee".to_string(),
            },
        ];
        typed_collection.insert_many(books).await?;

        let filter = doc! { "author": "George Orwell" };
        let mut cursor = typed_collection
            .find(filter)
            .sort(doc! { "title": 1 })
            .await?;
        let mut titles = Vec::new();
        while let Some(book) = cursor.try_next().await? {
            titles.push(book.title);
        }
        assert_eq!(titles, ["1984", "Animal Farm"]);
        Ok(())
    }

    /// Declares Stable API version 1 and runs a command.
    pub async fn the_stable_api(uri: &str) -> anymongo::error::Result<()> {
        use anymongo::options::{ServerApi, ServerApiVersion};
        let mut client_options = ClientOptions::parse(uri).await?;
        let server_api = ServerApi::builder().version(ServerApiVersion::V1).build();
        client_options.server_api = Some(server_api);
        let client = Client::with_options(client_options)?;
        let reply = client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await?;
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
        Ok(())
    }
}

/// From the docs of `Collection`.
pub mod collection_docs {
    use super::*;
    use anymongo::options::ReturnDocument;
    use anymongo::IndexModel;
    use futures::stream::{StreamExt, TryStreamExt};

    /// Every CRUD operation with its options, an aggregation, and an index.
    pub async fn crud_with_options_aggregation_and_indexes(
        uri: &str,
    ) -> anymongo::error::Result<()> {
        let db = fresh_database(uri, "official_collection").await;
        let coll = db.collection::<Document>("inventory");

        let inserted = coll
            .insert_one(doc! { "item": "canvas", "qty": 100 })
            .await?;
        assert!(inserted.inserted_id.as_object_id().is_some());
        coll.insert_many(vec![
            doc! { "item": "journal", "qty": 25 },
            doc! { "item": "mat", "qty": 85 },
        ])
        .await?;

        let upserted = coll
            .update_one(doc! { "item": "paper" }, doc! { "$set": { "qty": 5 } })
            .upsert(true)
            .await?;
        assert!(upserted.upserted_id.is_some());
        let updated = coll
            .update_many(doc! { "qty": { "$lt": 50 } }, doc! { "$inc": { "qty": 1 } })
            .await?;
        assert_eq!(updated.modified_count, 2);
        let replaced = coll
            .replace_one(doc! { "item": "mat" }, doc! { "item": "mat", "qty": 90 })
            .await?;
        assert_eq!(replaced.modified_count, 1);
        let after = coll
            .find_one_and_update(doc! { "item": "canvas" }, doc! { "$inc": { "qty": -1 } })
            .return_document(ReturnDocument::After)
            .await?
            .expect("canvas is there");
        assert_eq!(after.get_i32("qty").ok(), Some(99));

        let found: Vec<Document> = coll
            .find(doc! { "qty": { "$gt": 10 } })
            .sort(doc! { "qty": -1 })
            .projection(doc! { "_id": 0, "item": 1 })
            .limit(2)
            .await?
            .try_collect()
            .await?;
        assert_eq!(
            found,
            [doc! { "item": "canvas" }, doc! { "item": "mat" }],
            "{found:?}"
        );
        assert_eq!(coll.count_documents(doc! {}).await?, 4);
        assert_eq!(coll.estimated_document_count().await?, 4);
        let mut items = coll.distinct("item", doc! {}).await?;
        items.sort_by_key(|item| item.to_string());
        assert_eq!(items.len(), 4);

        let pipeline = vec![
            doc! { "$match": { "qty": { "$gte": 26 } } },
            doc! { "$group": { "_id": null, "total": { "$sum": "$qty" } } },
        ];
        let mut results = coll.aggregate(pipeline).await?;
        let mut totals = Vec::new();
        while let Some(result) = results.next().await {
            totals.push(result?.get_i32("total").unwrap_or(-1));
        }
        assert_eq!(totals, [99 + 26 + 90]);

        let index = IndexModel::builder().keys(doc! { "item": 1 }).build();
        let created = coll.create_index(index).await?;
        assert_eq!(created.index_name, "item_1");
        assert!(coll
            .list_index_names()
            .await?
            .contains(&"item_1".to_string()));
        coll.drop_index("item_1").await?;

        let deleted = coll.delete_many(doc! { "qty": { "$lt": 50 } }).await?;
        assert_eq!(deleted.deleted_count, 2);
        let deleted = coll.delete_one(doc! { "item": "mat" }).await?;
        assert_eq!(deleted.deleted_count, 1);
        Ok(())
    }
}

/// From the docs of `change_stream`.
pub mod change_stream_docs {
    use super::*;
    use anymongo::change_stream::event::{ChangeStreamEvent, OperationType};
    use futures::stream::StreamExt;

    /// Watches a collection, then resumes after the first event's token.
    pub async fn a_change_stream_resumes_after_its_token(uri: &str) -> anymongo::error::Result<()> {
        let db = fresh_database(uri, "official_change_streams").await;
        let coll = db.collection::<Document>("events");
        db.create_collection("events").await?;

        let mut change_stream = coll.watch().await?;
        coll.insert_one(doc! { "x": 1 }).await?;
        let event: ChangeStreamEvent<Document> =
            change_stream.next().await.transpose()?.expect("an event");
        assert_eq!(event.operation_type, OperationType::Insert);
        let resume_token = change_stream.resume_token();
        drop(change_stream);

        coll.insert_one(doc! { "x": 2 }).await?;
        let mut change_stream = coll.watch().resume_after(resume_token).await?;
        let event = change_stream
            .next()
            .await
            .transpose()?
            .expect("the later event");
        let x = event.full_document.and_then(|d| d.get_i32("x").ok());
        assert_eq!(x, Some(2));
        Ok(())
    }
}

/// From the docs of `ClientSession`: both transaction styles.
pub mod session_docs {
    use super::*;
    use anymongo::error::{Result, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
    use anymongo::options::{ReadConcern, WriteConcern};
    use anymongo::{ClientSession, Collection};

    async fn execute_transaction(
        coll: &Collection<Document>,
        session: &mut ClientSession,
    ) -> Result<()> {
        coll.insert_one(doc! { "x": 1 })
            .session(&mut *session)
            .await?;
        coll.delete_one(doc! { "y": 2 })
            .session(&mut *session)
            .await?;
        loop {
            let result = session.commit_transaction().await;
            if let Err(ref error) = result {
                if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) {
                    continue;
                }
            }
            break result;
        }
    }

    /// A transaction committed by hand, retried on `TransientTransactionError`.
    pub async fn a_manual_transaction_retried_on_transient_errors(uri: &str) -> Result<()> {
        let db = fresh_database(uri, "official_sessions").await;
        let coll = db.collection::<Document>("coll");
        coll.insert_one(doc! { "y": 2 }).await?;
        let client = db.client();
        let mut session = client.start_session().await?;
        session
            .start_transaction()
            .read_concern(ReadConcern::majority())
            .write_concern(WriteConcern::majority())
            .await?;
        while let Err(error) = execute_transaction(&coll, &mut session).await {
            if !error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
                return Err(error);
            }
            session.abort_transaction().await.ok();
            session.start_transaction().await?;
        }
        assert_eq!(coll.count_documents(doc! { "x": 1 }).await?, 1);
        assert_eq!(coll.count_documents(doc! { "y": 2 }).await?, 0);
        Ok(())
    }

    /// A transaction run by `and_run2`.
    pub async fn and_run2_runs_a_transaction(uri: &str) -> Result<()> {
        let db = fresh_database(uri, "official_and_run2").await;
        let coll = db.collection::<Document>("coll");
        db.create_collection("coll").await?;
        let client = db.client();
        let mut session = client.start_session().await?;
        let inserted = session
            .start_transaction()
            .and_run2(async |session| {
                coll.insert_one(doc! { "x": 1 }).session(session).await?;
                Ok(1)
            })
            .await?;
        assert_eq!(inserted, 1);
        assert_eq!(coll.count_documents(doc! {}).await?, 1);
        Ok(())
    }

    /// Two sessions, the second made causally consistent with the first by its
    /// cluster and operation times: the second reads the first one's write.
    pub async fn a_session_advanced_to_another_reads_its_writes(uri: &str) -> Result<()> {
        let db = fresh_database(uri, "official_causal").await;
        let client = db.client().clone();
        let coll = db.collection::<Document>("items");
        let mut session1 = client.start_session().causal_consistency(true).await?;
        coll.insert_one(doc! { "x": 1 })
            .session(&mut session1)
            .await?;
        let mut session2 = client.start_session().causal_consistency(true).await?;
        assert!(session2.cluster_time().is_none());
        session2.advance_cluster_time(session1.cluster_time().unwrap());
        session2.advance_operation_time(session1.operation_time().unwrap());
        assert_eq!(session2.cluster_time(), session1.cluster_time());
        assert_eq!(session2.operation_time(), session1.operation_time());
        let found = coll
            .find_one(doc! { "x": 1 })
            .session(&mut session2)
            .await?;
        assert!(found.is_some());
        Ok(())
    }
}

/// From the docs of `Client::database_with_options` and
/// `Database::collection_with_options`.
pub mod database_docs {
    use super::*;
    use anymongo::options::{
        CollectionOptions, DatabaseOptions, ReadConcern, ReadPreference, SelectionCriteria,
        WriteConcern,
    };
    use anymongo::Client;

    /// A database and a collection with their own concerns, which their operations use.
    pub async fn database_and_collection_options(uri: &str) -> anymongo::error::Result<()> {
        fresh_database(uri, "official_db_options").await;
        let client = Client::with_uri_str(uri).await?;
        let db = client.database_with_options(
            "official_db_options",
            DatabaseOptions::builder()
                .write_concern(WriteConcern::majority())
                .build(),
        );
        let coll = db.collection_with_options::<Document>(
            "coll",
            CollectionOptions::builder()
                .read_concern(ReadConcern::majority())
                .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary))
                .build(),
        );
        assert_eq!(db.write_concern(), Some(&WriteConcern::majority()));
        assert_eq!(coll.write_concern(), Some(&WriteConcern::majority()));
        assert_eq!(coll.read_concern(), Some(&ReadConcern::majority()));
        coll.insert_one(doc! { "x": 1 }).await?;
        assert_eq!(coll.count_documents(doc! {}).await?, 1);
        Ok(())
    }
}

/// From the docs of `gridfs`.
pub mod gridfs_docs {
    use super::*;
    use futures::io::{AsyncReadExt, AsyncWriteExt};

    /// A file uploaded and downloaded through GridFS streams.
    pub async fn a_file_is_uploaded_and_downloaded_as_streams(
        uri: &str,
    ) -> anymongo::error::Result<()> {
        let db = fresh_database(uri, "official_gridfs").await;
        let bucket = db.gridfs_bucket(None);
        let bytes = vec![7u8; 600 * 1024];
        let mut upload_stream = bucket.open_upload_stream("test.txt").await?;
        upload_stream
            .write_all(&bytes[..])
            .await
            .expect("the upload");
        upload_stream.close().await.expect("the upload's end");
        let id = upload_stream.id().clone();

        let mut buf = Vec::new();
        let mut download_stream = bucket.open_download_stream(id).await?;
        download_stream
            .read_to_end(&mut buf)
            .await
            .expect("the download");
        assert_eq!(buf, bytes);
        Ok(())
    }

    /// From the docs of `error::GridFsErrorKind`: a missing file, by id or by name, a
    /// missing revision and a closed upload stream are told apart by their kind.
    pub async fn gridfs_errors_name_the_file(uri: &str) -> anymongo::error::Result<()> {
        use anymongo::bson::Bson;
        use anymongo::error::{ErrorKind, GridFsErrorKind, GridFsFileIdentifier};

        let db = fresh_database(uri, "official_gridfs_errors").await;
        let bucket = db.gridfs_bucket(None);

        let error = bucket
            .open_download_stream(Bson::Int32(404))
            .await
            .expect_err("no such file");
        match *error.kind {
            ErrorKind::GridFs(GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Id(ref id),
                ..
            }) => assert_eq!(*id, Bson::Int32(404)),
            ref other => panic!("expected FileNotFound, got {other:?}"),
        }

        let mut upload_stream = bucket.open_upload_stream("notes.txt").await?;
        upload_stream.write_all(b"one revision").await?;
        upload_stream.close().await?;
        let error = bucket
            .open_download_stream_by_name("notes.txt")
            .revision(3)
            .await
            .expect_err("no fourth revision");
        assert!(
            matches!(
                *error.kind,
                ErrorKind::GridFs(GridFsErrorKind::RevisionNotFound { revision: 3, .. })
            ),
            "{error:?}"
        );
        let error = bucket
            .open_download_stream_by_name("other.txt")
            .await
            .expect_err("no such name");
        assert!(
            matches!(
                *error.kind,
                ErrorKind::GridFs(GridFsErrorKind::FileNotFound {
                    identifier: GridFsFileIdentifier::Filename(ref name),
                    ..
                }) if name == "other.txt"
            ),
            "{error:?}"
        );

        // After close, the stream takes no more bytes.
        let error = upload_stream
            .write_all(b"more")
            .await
            .expect_err("the stream is closed");
        let error = anymongo::error::Error::from(error);
        assert!(
            matches!(
                *error.kind,
                ErrorKind::GridFs(GridFsErrorKind::UploadStreamClosed)
            ),
            "{error:?}"
        );
        Ok(())
    }
}

/// From the docs of `error::ErrorKind`: an application tells a duplicate key, a
/// command the server refused, a dropped connection and an unreachable server apart
/// by matching `*error.kind`.
pub mod error_docs {
    use super::*;
    use anymongo::error::{ErrorKind, Result, WriteError, WriteFailure};
    use anymongo::options::ClientOptions;
    use anymongo::Client;
    use std::time::Duration;

    /// Each failure, caused on purpose, comes back as the kind the documentation names.
    pub async fn errors_are_matched_by_their_kind(uri: &str) -> Result<()> {
        let db = fresh_database(uri, "official_errors").await;
        let items = db.collection::<Document>("items");
        items.insert_one(doc! { "_id": 1 }).await?;

        let duplicate = items.insert_one(doc! { "_id": 1 }).await.unwrap_err();
        match *duplicate.kind {
            ErrorKind::Write(WriteFailure::WriteError(WriteError { code: 11000, .. })) => {}
            ref other => panic!("a duplicate key is a write error: {other:?}"),
        }

        let unknown = db
            .run_command(doc! { "noSuchCommand": 1 })
            .await
            .unwrap_err();
        match *unknown.kind {
            ErrorKind::Command(ref command) => {
                assert_ne!(command.code, 0, "{command:?}");
                assert!(!command.message.is_empty(), "{command:?}");
            }
            ref other => panic!("an unknown command is a command error: {other:?}"),
        }

        // The server drops this client's next `find` (its appName): without retries,
        // the read fails with the I/O error.
        let mut options = ClientOptions::parse(uri).await?;
        options.app_name = Some("official_errors".to_owned());
        options.retry_reads = Some(false);
        let client = Client::with_options(options)?;
        client
            .database("admin")
            .run_command(doc! {
                "configureFailPoint": "failCommand",
                "mode": { "times": 1 },
                "data": {
                    "failCommands": ["find"],
                    "closeConnection": true,
                    "appName": "official_errors",
                },
            })
            .await?;
        let dropped = client
            .database("official_errors")
            .collection::<Document>("items")
            .find_one(doc! {})
            .await
            .unwrap_err();
        match *dropped.kind {
            ErrorKind::Io(ref io) => assert!(!io.to_string().is_empty()),
            ref other => panic!("a dropped connection is an I/O error: {other:?}"),
        }

        // Nothing listens on port 1: no server can be selected.
        let mut options = ClientOptions::parse("mongodb://127.0.0.1:1/").await?;
        options.direct_connection = Some(true);
        options.server_selection_timeout = Some(Duration::from_millis(300));
        let unreachable = Client::with_options(options)?
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap_err();
        match *unreachable.kind {
            ErrorKind::ServerSelection { ref message, .. } => assert!(!message.is_empty()),
            ref other => panic!("an unreachable server is a selection error: {other:?}"),
        }
        Ok(())
    }
}

/// From the docs of `event` and `ClientOptions::command_event_handler`.
pub mod event_docs {
    use std::sync::{Arc, Mutex};

    use super::*;
    use anymongo::event::command::CommandEvent;
    use anymongo::event::EventHandler;
    use anymongo::options::ClientOptions;
    use anymongo::Client;

    /// A callback handler set on the client options receives the started and
    /// succeeded events of a find.
    pub async fn a_command_event_handler_sees_a_find(uri: &str) -> anymongo::error::Result<()> {
        let db = fresh_database(uri, "official_events").await;
        db.collection::<Document>("items")
            .insert_one(doc! { "x": 1 })
            .await?;

        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorder = seen.clone();
        let mut options = ClientOptions::parse(uri).await?;
        options.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
            let entry = match ev {
                CommandEvent::Started(started) => ("started", started.command_name),
                CommandEvent::Succeeded(succeeded) => ("succeeded", succeeded.command_name),
                CommandEvent::Failed(failed) => ("failed", failed.command_name),
                _ => ("other", String::new()),
            };
            recorder.lock().unwrap().push(entry);
        }));
        let client = Client::with_options(options)?;
        let coll = client
            .database("official_events")
            .collection::<Document>("items");
        let found = coll.find_one(doc! { "x": 1 }).await?;
        assert!(found.is_some());

        let seen = seen.lock().unwrap().clone();
        let finds: Vec<&str> = seen
            .iter()
            .filter(|(_, name)| name == "find")
            .map(|(kind, _)| *kind)
            .collect();
        assert_eq!(finds, ["started", "succeeded"], "{seen:?}");
        Ok(())
    }
}

/// From the docs of `Client::bulk_write` and `options::WriteModel`: writes to several
/// collections in one command, their models built with builders or by the collection.
pub mod bulk_write_docs {
    use super::*;
    use anymongo::error::Result;
    use anymongo::options::{DeleteOneModel, InsertOneModel, UpdateOneModel, WriteModel};

    /// A summary, then verbose results, of a client bulk write over two collections.
    pub async fn a_client_bulk_write_over_two_collections(uri: &str) -> Result<()> {
        let db = fresh_database(uri, "official_bulk_write").await;
        // A client of its own: SecantusDB refuses a bulkWrite carrying the
        // `afterClusterTime` a causally consistent session would add after the drop.
        let client = anymongo::Client::with_uri_str(uri).await?;
        let db = client.database(db.name());
        let customers = db.collection::<Document>("customers");
        let orders = db.collection::<Document>("orders");

        let models: Vec<WriteModel> = vec![
            InsertOneModel::builder()
                .namespace(customers.namespace())
                .document(doc! { "_id": 1, "name": "Ada" })
                .build()
                .into(),
            orders
                .insert_one_model(doc! { "_id": 10, "customer": 1, "qty": 2 })?
                .into(),
            orders
                .insert_one_model(doc! { "_id": 11, "customer": 1, "qty": 5 })?
                .into(),
            UpdateOneModel::builder()
                .namespace(orders.namespace())
                .filter(doc! { "_id": 10 })
                .update(doc! { "$inc": { "qty": 1 } })
                .build()
                .into(),
        ];
        let summary = client.bulk_write(models).await?;
        assert_eq!(summary.inserted_count, 3);
        assert_eq!(summary.matched_count, 1);
        assert_eq!(summary.modified_count, 1);

        let verbose = client
            .bulk_write(vec![DeleteOneModel::builder()
                .namespace(orders.namespace())
                .filter(doc! { "_id": 11 })
                .build()])
            .verbose_results()
            .await?;
        assert_eq!(verbose.summary.deleted_count, 1);
        assert_eq!(verbose.delete_results[&0].deleted_count, 1);
        assert_eq!(orders.count_documents(doc! {}).await?, 1);
        Ok(())
    }

    /// From the docs of `error::BulkWriteError` and `PartialBulkWriteResult`: an
    /// unordered bulk write with a duplicate key fails with the write errors by index
    /// and, since other writes succeeded, a partial result in the shape asked for.
    pub async fn a_failed_bulk_write_carries_its_partial_result(uri: &str) -> Result<()> {
        use anymongo::error::{ErrorKind, PartialBulkWriteResult};

        let db = fresh_database(uri, "official_bulk_write_error").await;
        // A client of its own, as above.
        let client = anymongo::Client::with_uri_str(uri).await?;
        let coll = client.database(db.name()).collection::<Document>("items");
        let models = |ids: [i32; 3]| -> Vec<WriteModel> {
            ids.iter()
                .map(|id| {
                    InsertOneModel::builder()
                        .namespace(coll.namespace())
                        .document(doc! { "_id": *id })
                        .build()
                        .into()
                })
                .collect()
        };

        let error = client
            .bulk_write(models([1, 1, 2]))
            .ordered(false)
            .await
            .expect_err("a duplicate _id");
        match *error.kind {
            ErrorKind::BulkWrite(ref e) => {
                assert_eq!(e.write_errors.len(), 1);
                assert_eq!(e.write_errors[&1].code, 11000);
                assert!(e.write_concern_errors.is_empty());
                match &e.partial_result {
                    Some(PartialBulkWriteResult::Summary(summary)) => {
                        assert_eq!(summary.inserted_count, 2)
                    }
                    other => panic!("expected a summary partial result, got {other:?}"),
                }
            }
            ref other => panic!("expected a bulk write error, got {other:?}"),
        }

        let error = client
            .bulk_write(models([3, 1, 4]))
            .ordered(false)
            .verbose_results()
            .await
            .expect_err("a duplicate _id");
        let ErrorKind::BulkWrite(e) = *error.kind else {
            panic!("expected a bulk write error, got {error:?}");
        };
        let mut failed: Vec<usize> = e.write_errors.keys().copied().collect();
        failed.sort();
        assert_eq!(failed, [1]);
        let Some(PartialBulkWriteResult::Verbose(verbose)) = e.partial_result else {
            panic!("expected a verbose partial result");
        };
        assert_eq!(verbose.summary.inserted_count, 2);
        let mut inserted: Vec<usize> = verbose.insert_results.keys().copied().collect();
        inserted.sort();
        assert_eq!(inserted, [0, 2]);
        assert_eq!(
            verbose.insert_results[&2].inserted_id,
            anymongo::bson::Bson::Int32(4)
        );
        Ok(())
    }
}
