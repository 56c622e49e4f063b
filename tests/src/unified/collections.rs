//! Setting up collections before a test (`initialData`) and checking them after it
//! (`outcome`), through the runner's internal client (spec "Executing a Test").

use anymongo::{Client, Database};
use bson::{doc, Bson, Document};

use super::matching::exactly_equal;
use super::model::CollectionData;

/// The server's NamespaceNotFound code: dropping a collection that does not exist.
pub const NAMESPACE_NOT_FOUND: i32 = 26;

/// Drops and recreates each collection with its documents, with a "majority" write
/// concern. The collections of Queryable Encryption (`enxcol_.<name>.esc` and `.ecoc`)
/// are dropped too, as the spec requires.
pub async fn set_up(client: &Client, collections: &[CollectionData]) -> Result<(), String> {
    for data in collections {
        let database = client.database(&data.database_name);
        let name = &data.collection_name;
        for dropped in [
            name.clone(),
            format!("enxcol_.{name}.esc"),
            format!("enxcol_.{name}.ecoc"),
        ] {
            drop_collection(&database, &dropped).await?;
        }
        let majority = doc! { "w": "majority" };
        if data.create_options.is_some() || data.documents.is_empty() {
            let mut create = doc! { "create": name };
            create.extend(data.create_options.clone().unwrap_or_default());
            create.insert("writeConcern", majority.clone());
            run(&database, create).await?;
        }
        if !data.documents.is_empty() {
            let insert = doc! {
                "insert": name,
                "documents": data.documents.clone(),
                "writeConcern": majority,
            };
            run(&database, insert).await?;
        }
    }
    Ok(())
}

/// Checks that each collection holds exactly the expected documents, read sorted by
/// `_id` with a "local" read concern from the primary.
pub async fn check(client: &Client, collections: &[CollectionData]) -> Result<(), String> {
    for data in collections {
        let database = client.database(&data.database_name);
        let actual = documents(&database, &data.collection_name).await?;
        let namespace = format!("{}.{}", data.database_name, data.collection_name);
        if actual.len() != data.documents.len() {
            return Err(format!(
                "outcome: {namespace} holds {} documents, expected {}: {actual:?}",
                actual.len(),
                data.documents.len()
            ));
        }
        for (expected, actual) in data.documents.iter().zip(&actual) {
            let (expected, actual) = (
                Bson::Document(expected.clone()),
                Bson::Document(actual.clone()),
            );
            if !exactly_equal(&expected, &actual) {
                return Err(format!(
                    "outcome: {namespace}: expected {expected}, found {actual}"
                ));
            }
        }
    }
    Ok(())
}

/// Every document of a collection, sorted by `_id` (a `find` and its `getMore`s).
async fn documents(database: &Database, collection: &str) -> Result<Vec<Document>, String> {
    let find = doc! {
        "find": collection,
        "filter": {},
        "sort": { "_id": 1 },
        "readConcern": { "level": "local" },
    };
    let mut reply = run(database, find).await?;
    let mut documents = Vec::new();
    loop {
        let cursor = reply
            .get_document("cursor")
            .map_err(|_| format!("a reply without a cursor: {reply}"))?;
        let batch = cursor
            .get_array("firstBatch")
            .or_else(|_| cursor.get_array("nextBatch"))
            .map_err(|_| format!("a cursor without a batch: {cursor}"))?;
        for document in batch {
            match document {
                Bson::Document(document) => documents.push(document.clone()),
                other => return Err(format!("a batch holds a non-document: {other}")),
            }
        }
        let id = cursor.get_i64("id").unwrap_or(0);
        if id == 0 {
            return Ok(documents);
        }
        reply = run(database, doc! { "getMore": id, "collection": collection }).await?;
    }
}

async fn drop_collection(database: &Database, name: &str) -> Result<(), String> {
    let command = doc! { "drop": name, "writeConcern": { "w": "majority" } };
    match run_once_more(database, command).await {
        Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => Ok(()),
        other => other.map(drop).map_err(|e| format!("dropping {name}: {e}")),
    }
}

async fn run(database: &Database, command: Document) -> Result<Document, String> {
    run_once_more(database, command.clone())
        .await
        .map_err(|e| format!("{command} failed: {e}"))
}

/// Runs `command` for the runner itself, once more if its pool was cleared: a
/// previous test may have left the server busy enough (a command held by a
/// `blockConnection` fail point) for a monitor check of the runner's client to fail,
/// which is no failure of the test about to start.
async fn run_once_more(database: &Database, command: Document) -> anymongo::Result<Document> {
    match database.run_command(command.clone()).await {
        Err(error)
            if matches!(
                &*error.kind,
                anymongo::ErrorKind::ConnectionPoolCleared { .. }
            ) =>
        {
            database.run_command(command).await
        }
        other => other,
    }
}
