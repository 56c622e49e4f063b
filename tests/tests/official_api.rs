//! The programs written from the official `mongodb` crate's 3.x documentation
//! ([`anymongo_tests::official`]), run natively against the tests' SecantusDB (a
//! single-member replica set), and the one that needs tokio (spawned tasks). The same
//! programs run under wasmtime in `tests/wasi.rs`.

use anymongo::bson::{doc, Document};
use anymongo_tests::{official, server};

/// The test server's connection string, where the documentation writes
/// `mongodb://localhost:27017`.
fn uri() -> String {
    server::shared().uri()
}

#[tokio::test]
async fn every_program_runs() {
    for (name, program) in official::PROGRAMS {
        if let Err(error) = program(&uri()).await {
            panic!("{name}: {error}");
        }
    }
}

#[tokio::test]
async fn a_client_is_shared_by_spawned_tasks() -> anymongo::error::Result<()> {
    anymongo::Client::with_uri_str(uri())
        .await?
        .database("official_tasks")
        .drop()
        .await?;
    let client = anymongo::Client::with_uri_str(uri()).await?;
    let mut tasks = Vec::new();
    for i in 0..5 {
        let client_ref = client.clone();
        tasks.push(tokio::task::spawn(async move {
            let collection = client_ref
                .database("official_tasks")
                .collection::<Document>(&format!("coll{i}"));
            collection.insert_one(doc! { "i": i }).await
        }));
    }
    for task in tasks {
        task.await.expect("the task ran")?;
    }
    let names = client
        .database("official_tasks")
        .list_collection_names()
        .await?;
    assert_eq!(names.len(), 5, "{names:?}");
    Ok(())
}
