//! Wire compression (OP_COMPRESSED spec) through the real client: against a mock
//! server that speaks only OP_COMPRESSED once it is negotiated (and closes the
//! connection on any message that breaks the rules), and against SecantusDB, which
//! supports no compressor.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::uri::Compressor;
use anymongo::wire::WireError;
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::compression::{CompressingServer, Received, SizeClaim};
use anymongo_tests::harness::within;
use anymongo_tests::server;
use futures::TryStreamExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(60);

fn client(server: &CompressingServer, query: &str) -> Client {
    let uri = format!("mongodb://{}/?{query}", server.address());
    Client::with_options(ClientOptions::parse_uri(&uri).unwrap()).unwrap()
}

/// The messages that are no hello, and those that are.
fn split_hellos(received: Vec<Received>) -> (Vec<Received>, Vec<Received>) {
    received
        .into_iter()
        .partition(|r| r.command != "hello" && r.command != "isMaster")
}

/// Inserts `count` documents and reads them back through a cursor of batches of 2.
async fn insert_and_find(client: &Client, count: i32) {
    let collection = client.database("db").collection::<Document>("c");
    collection.drop().await.unwrap();
    let documents: Vec<Document> = (0..count)
        .map(|i| doc! { "_id": i, "text": "compressible ".repeat(20) })
        .collect();
    collection.insert_many(&documents).await.unwrap();
    let options = anymongo::crud::FindOptions {
        batch_size: Some(2),
        ..Default::default()
    };
    let found: Vec<Document> = collection
        .find(doc! {})
        .with_options(options)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found, documents);
}

#[tokio::test]
async fn each_compressor_round_trips_commands_and_replies() {
    within(TEST_BOUND, async {
        for compressor in Compressor::ALL.iter().copied() {
            let server = CompressingServer::start(&["snappy", "zlib", "zstd"]).await;
            let client = client(&server, &format!("compressors={compressor}"));
            insert_and_find(&client, 5).await;
            assert_eq!(server.violations(), Vec::<String>::new(), "{compressor}");
            let (commands, hellos) = split_hellos(server.received());
            let names: Vec<&str> = commands.iter().map(|r| r.command.as_str()).collect();
            assert_eq!(names, ["drop", "insert", "find", "getMore", "getMore"]);
            assert!(
                commands
                    .iter()
                    .all(|r| r.compressor_id == Some(compressor.id())),
                "{compressor}: {commands:?}"
            );
            assert!(!hellos.is_empty());
            assert!(
                hellos.iter().all(|r| r.compressor_id.is_none()),
                "{hellos:?}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn the_first_of_the_clients_compressors_the_server_supports_wins() {
    within(TEST_BOUND, async {
        let server = CompressingServer::start(&["zlib", "zstd"]).await;
        let client = client(
            &server,
            "compressors=snappy,zstd,zlib&zlibCompressionLevel=9",
        );
        client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap();
        let (commands, _) = split_hellos(server.received());
        assert_eq!(
            commands,
            [Received {
                command: "ping".into(),
                compressor_id: Some(Compressor::Zstd.id())
            }]
        );
    })
    .await;
}

#[tokio::test]
async fn hello_and_authentication_commands_go_uncompressed() {
    within(TEST_BOUND, async {
        let server = CompressingServer::start(&["snappy"]).await;
        let client = client(&server, "compressors=snappy");
        let db = client.database("admin");
        for command in [
            doc! { "hello": 1 },
            doc! { "saslStart": 1, "mechanism": "PLAIN", "payload": "" },
            doc! { "saslContinue": 1, "conversationId": 1, "payload": "" },
            doc! { "createUser": "u", "pwd": "p", "roles": [] },
            doc! { "ping": 1 },
        ] {
            db.run_command(command).await.unwrap();
        }
        assert_eq!(server.violations(), Vec::<String>::new());
        let received: Vec<(String, Option<u8>)> = split_hellos(server.received())
            .0
            .into_iter()
            .map(|r| (r.command, r.compressor_id))
            .collect();
        assert_eq!(
            received,
            [
                ("saslStart".into(), None),
                ("saslContinue".into(), None),
                ("createUser".into(), None),
                ("ping".into(), Some(1)),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn without_a_compressor_in_common_nothing_is_compressed() {
    within(TEST_BOUND, async {
        let server = CompressingServer::start(&["zlib"]).await;
        let client = client(&server, "compressors=snappy");
        insert_and_find(&client, 3).await;
        assert!(server.received().iter().all(|r| r.compressor_id.is_none()));
    })
    .await;
}

#[tokio::test]
async fn a_reply_claiming_a_wrong_or_huge_size_is_a_clean_error() {
    within(TEST_BOUND, async {
        for &compressor in Compressor::ALL {
            for claim in [SizeClaim::Wrong, SizeClaim::Huge] {
                let server = CompressingServer::start(&["snappy", "zlib", "zstd"]).await;
                let query = format!("compressors={compressor}&serverSelectionTimeoutMS=2000");
                let client = client(&server, &query);
                let db = client.database("admin");
                db.run_command(doc! { "ping": 1 }).await.unwrap();
                server.claim_sizes(claim);
                let error = db.run_command(doc! { "ping": 1 }).await.unwrap_err();
                let ErrorKind::InvalidResponse { error: wire, .. } = &*error.kind else {
                    panic!("{compressor} {claim:?}: {error:?}");
                };
                match claim {
                    SizeClaim::Huge => assert!(
                        matches!(
                            wire,
                            WireError::UncompressedSizeOutOfBounds { size: i32::MAX, .. }
                        ),
                        "{compressor}: {wire:?}"
                    ),
                    _ => assert!(
                        matches!(wire, WireError::UncompressedSizeMismatch { .. }),
                        "{compressor}: {wire:?}"
                    ),
                }
                assert!(error.to_string().contains("OP_COMPRESSED"), "{error}");
                // The connection was closed; the next operation opens a new one.
                server.claim_sizes(SizeClaim::True);
                db.run_command(doc! { "ping": 1 }).await.unwrap();
            }
        }
    })
    .await;
}

#[tokio::test]
async fn secantusdb_names_no_compressor_and_the_client_goes_uncompressed() {
    within(TEST_BOUND, async {
        let uri = format!(
            "{}?compressors=snappy,zlib,zstd&appName=compression",
            server::shared().uri()
        );
        let client = anymongo::Client::with_uri_str(&uri).await.unwrap();
        let hello = client.hello().await.unwrap();
        assert_eq!(hello.compression, Vec::<String>::new());
        let collection = client
            .database("compression_tests")
            .collection::<Document>("uncompressed");
        collection.drop().await.unwrap();
        collection
            .insert_one(doc! { "_id": 1, "x": "y" })
            .await
            .unwrap();
        let found: Vec<Document> = collection
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found, [doc! { "_id": 1, "x": "y" }]);
    })
    .await;
}

/// The TWEET document of the benchmarking spec's data sets, from
/// `$ANYMONGO_BENCH_DATA` (default: `../shared/bench-data` beside the workspace).
fn tweet() -> Document {
    let dir = std::env::var_os("ANYMONGO_BENCH_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| anymongo_tests::setup::workspace_root().join("../shared/bench-data"));
    let archive = dir.join("single_and_multi_document.tgz");
    let output = std::process::Command::new("tar")
        .arg("xzOf")
        .arg(&archive)
        .arg("single_and_multi_document/tweet.json")
        .output()
        .expect("tar runs");
    assert!(output.status.success(), "cannot read {}", archive.display());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    match anymongo::bson::Bson::try_from(json).unwrap() {
        anymongo::bson::Bson::Document(tweet) => tweet,
        other => panic!("tweet.json is no document: {other}"),
    }
}

/// Bytes on the wire with each compressor, and none, for the data set of the
/// benchmarking spec's "Find many and empty the cursor": the TWEET document inserted
/// 10,000 times (driver-generated `_id`s), then all read back with `find`. Counted by
/// the mock server, hellos left out. Run with
/// `cargo test -p anymongo-tests --test compression -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: prints bytes on the wire"]
async fn bytes_on_the_wire_for_the_find_many_data_set() {
    let tweet = tweet();
    let runs = [
        ("none", ""),
        ("snappy", "compressors=snappy"),
        ("zlib (level -1, i.e. 6)", "compressors=zlib"),
        ("zlib (level 1)", "compressors=zlib&zlibCompressionLevel=1"),
        ("zlib (level 9)", "compressors=zlib&zlibCompressionLevel=9"),
        ("zstd (ruzstd, fastest)", "compressors=zstd"),
    ];
    println!(
        "| compressor | insert: sent | insert: received | find: sent | find: received | total |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (label, query) in runs {
        let server = CompressingServer::start(&["snappy", "zlib", "zstd"]).await;
        let client = client(&server, query);
        let collection = client.database("perftest").collection::<Document>("corpus");
        server.reset_bytes();
        let documents = vec![tweet.clone(); 10_000];
        collection.insert_many(&documents).await.unwrap();
        let (insert_sent, insert_received) = server.bytes();
        server.reset_bytes();
        let found: Vec<Document> = collection
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found.len(), 10_000);
        let (find_sent, find_received) = server.bytes();
        assert_eq!(server.violations(), Vec::<String>::new());
        let total = insert_sent + insert_received + find_sent + find_received;
        println!(
            "| {label} | {insert_sent} | {insert_received} | {find_sent} | {find_received} | {total} |"
        );
    }
}
