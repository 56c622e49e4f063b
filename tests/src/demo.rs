//! The demo's script, shared by the native and the WASI builds of the `demo` binary:
//! insert a few documents, read them back, and report what happened.

use anymongo::bson::{doc, Document};
use anymongo::{Client, Result};

/// The database the demo writes to.
pub const DATABASE: &str = "anymongo_demo";

/// Runs the demo against `client` in collection `collection`, tagging every document
/// with `runtime`. Returns the lines to print, one per step.
pub async fn run(client: &Client, collection: &str, runtime: &str) -> Result<Vec<String>> {
    let db = client.database(DATABASE);
    let mut report = Vec::new();

    let hello = client.hello().await?;
    report.push(format!(
        "connected from {runtime}: wire version {}, {}",
        hello.max_wire_version,
        match &hello.set_name {
            Some(set) => format!("replica set '{set}'"),
            None => "standalone".to_string(),
        }
    ));

    // Start from an empty collection; "ns not found" (26) just means there was none.
    if let Err(error) = db.run_command(doc! { "drop": collection }).await {
        if error.code() != Some(26) {
            return Err(error);
        }
    }

    let fruits: Vec<Document> = ["apple", "banana", "cherry"]
        .iter()
        .enumerate()
        .map(|(i, name)| doc! { "_id": i as i32 + 1, "name": *name, "runtime": runtime })
        .collect();
    let inserted = db
        .run_command(doc! { "insert": collection, "documents": fruits })
        .await?;
    report.push(format!(
        "inserted {} documents into {DATABASE}.{collection}",
        inserted.get_i32("n").unwrap_or(0)
    ));

    let found = db
        .run_command(doc! { "find": collection, "filter": {}, "sort": { "_id": 1 } })
        .await?;
    let batch = first_batch(&found);
    report.push(format!("read back {} documents:", batch.len()));
    for document in batch {
        report.push(format!("  {document}"));
    }
    Ok(report)
}

/// The documents of a `find` reply's first batch (none if the reply has no cursor).
pub fn first_batch(reply: &Document) -> Vec<Document> {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .map(|batch| {
            batch
                .iter()
                .filter_map(|d| d.as_document().cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// The `name` field of each document (empty where it has none).
pub fn names(documents: &[Document]) -> Vec<&str> {
    documents
        .iter()
        .map(|d| d.get_str("name").unwrap_or_default())
        .collect()
}
