//! The driver's log messages (logging spec) against a real SecantusDB server on
//! loopback: the command logging prose tests of truncation (Command Logging and
//! Monitoring, tests README "Prose Tests" 1 and 2; test 3, multi-byte code points, is
//! a unit test of `anymongo::logging`), and the server selection messages of a
//! selection that times out.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::client::ClientConfig;
use anymongo::ClientOptions;
use anymongo_tests::unified::logs::{observed_client, LogMessage};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;
use tracing::Level;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// The ellipsis a truncated document ends with.
const ELLIPSIS: &str = "...";

fn options(uri: &str) -> ClientOptions {
    ClientOptions::parse_uri(uri).unwrap()
}

/// The messages whose `message` field is `text`.
fn named<'a>(messages: &'a [LogMessage], text: &str) -> Vec<&'a LogMessage> {
    messages
        .iter()
        .filter(|message| message.data.get_str("message").ok() == Some(text))
        .collect()
}

fn field<'a>(message: &'a LogMessage, name: &str) -> &'a str {
    message
        .data
        .get_str(name)
        .unwrap_or_else(|_| panic!("no {name} in {}", message.data))
}

#[tokio::test]
async fn documents_are_truncated_to_1000_bytes_by_default() {
    let uri = format!("{}?appName=logging_default", server::shared().uri());
    let observe = doc! { "command": "debug" };
    let (client, logs) = observed_client(options(&uri), &observe, ClientConfig::default()).unwrap();
    let collection = client
        .database("logging_tests")
        .collection::<Document>("default_truncation");
    harness::within(TEST_BOUND, async {
        collection.drop().await.unwrap();
        let docs: Vec<Document> = (0..100).map(|_| doc! { "x": "y" }).collect();
        collection.insert_many(docs).await.unwrap();
    })
    .await;
    let messages = logs.messages();
    let started = named(&messages, "Command started");
    let insert = started
        .iter()
        .find(|message| field(message, "commandName") == "insert")
        .expect("an insert was logged");
    let command = field(insert, "command");
    assert_eq!(command.len(), 1000 + ELLIPSIS.len(), "{command}");
    assert!(command.ends_with(ELLIPSIS));
    let succeeded = named(&messages, "Command succeeded");
    let insert_reply = succeeded
        .iter()
        .find(|message| field(message, "commandName") == "insert")
        .expect("the insert's success was logged");
    assert!(field(insert_reply, "reply").len() <= 1000 + ELLIPSIS.len());

    let found: Vec<Document> = harness::within(TEST_BOUND, async {
        collection.find(doc! {}).await.unwrap().try_collect().await
    })
    .await
    .unwrap();
    assert_eq!(found.len(), 100);
    let messages = logs.messages();
    let find_reply = named(&messages, "Command succeeded")
        .into_iter()
        .find(|message| field(message, "commandName") == "find")
        .expect("the find's success was logged");
    assert_eq!(field(find_reply, "reply").len(), 1000 + ELLIPSIS.len());
}

#[tokio::test]
async fn the_max_document_length_applies_to_commands_replies_and_failures() {
    let uri = format!("{}?appName=logging_configured", server::shared().uri());
    let observe = doc! { "command": "debug" };
    let config = ClientConfig {
        log_max_document_length: Some(5),
        ..ClientConfig::default()
    };
    let (client, logs) = observed_client(options(&uri), &observe, config).unwrap();
    let database = client.database("admin");
    harness::within(TEST_BOUND, async {
        database.run_command(doc! { "hello": true }).await.unwrap();
        let refused = database.run_command(doc! { "notARealCommand": true }).await;
        assert!(refused.is_err(), "{refused:?}");
    })
    .await;
    let messages = logs.messages();
    let started = named(&messages, "Command started");
    assert_eq!(field(started[0], "command"), "{\"hel...");
    let succeeded = named(&messages, "Command succeeded");
    assert_eq!(field(succeeded[0], "reply").len(), 5 + ELLIPSIS.len());
    let failed = named(&messages, "Command failed");
    assert_eq!(field(failed[0], "commandName"), "notARealCommand");
    assert_eq!(field(failed[0], "failure").len(), 5 + ELLIPSIS.len());
}

#[tokio::test]
async fn a_selection_that_times_out_logs_started_waiting_and_failed() {
    // Nothing listens on this port once its listener is dropped.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let uri =
        format!("mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300");
    let observe = doc! { "serverSelection": "debug" };
    let (client, logs) = observed_client(options(&uri), &observe, ClientConfig::default()).unwrap();
    let inserted = harness::within(TEST_BOUND, async {
        client
            .database("logging_tests")
            .collection::<Document>("unreachable")
            .insert_one(doc! { "x": 1 })
            .await
    })
    .await;
    assert!(inserted.is_err(), "{inserted:?}");
    let messages = logs.messages();
    let texts: Vec<&str> = messages
        .iter()
        .map(|message| field(message, "message"))
        .collect();
    assert_eq!(
        texts,
        [
            "Server selection started",
            "Waiting for suitable server to become available",
            "Server selection failed"
        ]
    );
    for message in &messages {
        assert_eq!(field(message, "operation"), "insert");
        assert!(
            message.data.get_i64("operationId").is_ok(),
            "{}",
            message.data
        );
        assert!(
            field(message, "selector").contains("Write"),
            "{}",
            message.data
        );
        assert!(!field(message, "topologyDescription").is_empty());
    }
    // server-selection.md: the waiting message at info, the others at debug.
    let levels: Vec<Level> = messages.iter().map(|message| message.level).collect();
    assert_eq!(levels, [Level::DEBUG, Level::INFO, Level::DEBUG]);
    assert!(messages[1].data.get_i64("remainingTimeMS").unwrap() <= 300);
    assert!(field(&messages[2], "failure").contains("timed out"));
}
