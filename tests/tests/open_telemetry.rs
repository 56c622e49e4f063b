//! The driver's OpenTelemetry spans as an application sees them: a `tracing`
//! subscriber with `tracing-opentelemetry`'s layer over an OpenTelemetry SDK tracer
//! whose exporter keeps the finished spans in memory, and a find against a real
//! SecantusDB server on loopback. The spans must carry the OpenTelemetry spec's names,
//! kind, attributes and nesting ("Instrumenting Driver Operations", "Instrumenting
//! Server Commands").

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::options::OpentelemetryOptions;
use anymongo::{Client, ClientOptions};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// An exporter that keeps the spans, and the subscriber that sends them there.
fn pipeline() -> (InMemorySpanExporter, impl tracing::Subscriber + Send + Sync) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("open_telemetry_test");
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    (exporter, subscriber)
}

fn client(tracing: OpentelemetryOptions) -> Client {
    let mut options = ClientOptions::parse_uri(&server::shared().uri()).unwrap();
    options.tracing = Some(tracing);
    Client::with_options(options).unwrap()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| &attribute.value)
}

fn string<'a>(span: &'a SpanData, key: &str) -> &'a str {
    match attribute(span, key) {
        Some(Value::String(value)) => value.as_str(),
        other => panic!("{}: {key} is {other:?}", span.name),
    }
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attribute(span, key) {
        Some(Value::I64(value)) => *value,
        other => panic!("{}: {key} is {other:?}", span.name),
    }
}

#[tokio::test]
async fn a_find_is_an_operation_span_with_its_command_span_nested() {
    let (exporter, subscriber) = pipeline();
    // The test's runtime runs on this thread: the subscriber sees all of it.
    let _default = tracing::subscriber::set_default(subscriber);
    let client = client(
        OpentelemetryOptions::builder()
            .enabled(true)
            .query_text_max_length(1000)
            .build(),
    );
    let collection = client
        .database("open_telemetry_tests")
        .collection::<Document>("find");
    let found: Vec<Document> = harness::within(TEST_BOUND, async {
        collection.drop().await.unwrap();
        collection.insert_one(doc! { "x": 1 }).await.unwrap();
        collection
            .find(doc! { "x": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(found.len(), 1);
    let spans = exporter.get_finished_spans().unwrap();
    let named =
        |name: &str| -> Vec<&SpanData> { spans.iter().filter(|span| span.name == name).collect() };
    let [operation] = named("find open_telemetry_tests.find")[..] else {
        panic!("one find operation span in {spans:#?}")
    };
    assert_eq!(operation.span_kind, SpanKind::Client);
    assert_eq!(string(operation, "db.system.name"), "mongodb");
    assert_eq!(string(operation, "db.namespace"), "open_telemetry_tests");
    assert_eq!(string(operation, "db.collection.name"), "find");
    assert_eq!(string(operation, "db.operation.name"), "find");
    assert_eq!(
        string(operation, "db.operation.summary"),
        "find open_telemetry_tests.find"
    );
    let commands: Vec<&SpanData> = named("find")
        .into_iter()
        .filter(|span| span.parent_span_id == operation.span_context.span_id())
        .collect();
    let [command] = commands[..] else {
        panic!("one find command span in the operation span: {spans:#?}")
    };
    assert_eq!(command.span_kind, SpanKind::Client);
    assert_eq!(
        command.span_context.trace_id(),
        operation.span_context.trace_id()
    );
    assert_eq!(string(command, "db.command.name"), "find");
    assert_eq!(
        string(command, "db.query.summary"),
        "find open_telemetry_tests.find"
    );
    assert_eq!(string(command, "network.transport"), "tcp");
    assert!(!string(command, "server.address").is_empty());
    assert!(int(command, "server.port") > 0);
    assert!(int(command, "db.mongodb.driver_connection_id") > 0);
    assert!(string(command, "db.mongodb.lsid").contains("$binary"));
    let text = string(command, "db.query.text");
    assert!(
        text.starts_with(r#"{"find":"find","filter":{"x":1}"#),
        "{text}"
    );
    assert!(!text.contains("lsid") && !text.contains("$db"), "{text}");
    assert!(attribute(command, "db.response.status_code").is_none());
    assert_eq!(command.status, Status::Unset);
    // The insert and the drop have spans of their own.
    assert_eq!(named("insert open_telemetry_tests.find").len(), 1);
    assert_eq!(named("dropCollection open_telemetry_tests.find").len(), 1);
}

#[tokio::test]
async fn failed_commands_carry_the_error_and_a_client_without_tracing_has_no_spans() {
    let (exporter, subscriber) = pipeline();
    let _default = tracing::subscriber::set_default(subscriber);
    let traced = client(OpentelemetryOptions::builder().enabled(true).build());
    let untraced = client(OpentelemetryOptions::builder().enabled(false).build());
    harness::within(TEST_BOUND, async {
        let database = untraced.database("open_telemetry_tests");
        database.run_command(doc! { "ping": 1 }).await.unwrap();
        let database = traced.database("open_telemetry_tests");
        let error = database
            .run_command(doc! { "noSuchCommand": 1 })
            .await
            .unwrap_err();
        assert!(error.code().is_some(), "{error}");
    })
    .await;
    let spans = exporter.get_finished_spans().unwrap();
    assert!(
        spans.iter().all(|span| span.name != "ping"),
        "the untraced client's ping: {spans:#?}"
    );
    let command = spans
        .iter()
        .find(|span| span.name == "noSuchCommand")
        .unwrap_or_else(|| panic!("no command span in {spans:#?}"));
    assert!(
        matches!(command.status, Status::Error { .. }),
        "{command:#?}"
    );
    assert!(!string(command, "db.response.status_code").is_empty());
    assert!(!string(command, "exception.message").is_empty());
    assert!(string(command, "exception.type").contains("Command"));
    // The operation failed too: a runCommand on the database.
    let operation = spans
        .iter()
        .find(|span| span.span_context.span_id() == command.parent_span_id)
        .unwrap_or_else(|| panic!("no operation span in {spans:#?}"));
    assert_eq!(operation.name, "runCommand open_telemetry_tests");
    assert_eq!(string(operation, "db.operation.name"), "runCommand");
    assert!(
        matches!(operation.status, Status::Error { .. }),
        "{operation:#?}"
    );
    assert!(!string(operation, "exception.message").is_empty());
    // No query text unless asked for.
    assert!(attribute(command, "db.query.text").is_none());
}

#[tokio::test]
async fn a_write_error_fails_the_operation_span_though_its_command_succeeded() {
    let (exporter, subscriber) = pipeline();
    let _default = tracing::subscriber::set_default(subscriber);
    let traced = client(OpentelemetryOptions::builder().enabled(true).build());
    let collection = traced
        .database("open_telemetry_tests")
        .collection::<Document>("write_errors");
    harness::within(TEST_BOUND, async {
        collection.drop().await.unwrap();
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        let error = collection.insert_one(doc! { "_id": 1 }).await.unwrap_err();
        assert_eq!(error.code(), Some(11000), "{error}");
    })
    .await;
    let spans = exporter.get_finished_spans().unwrap();
    let inserts: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "insert open_telemetry_tests.write_errors")
        .collect();
    assert_eq!(inserts.len(), 2, "{spans:#?}");
    // The first insert succeeded; the duplicate is an error the application sees,
    // carried by a reply with `ok: 1` and `writeErrors`.
    assert!(
        !matches!(inserts[0].status, Status::Error { .. }),
        "{:#?}",
        inserts[0]
    );
    assert!(
        matches!(inserts[1].status, Status::Error { .. }),
        "{:#?}",
        inserts[1]
    );
    assert!(
        string(inserts[1], "exception.message").contains("E11000")
            || string(inserts[1], "exception.message").contains("duplicate"),
        "{:#?}",
        inserts[1]
    );
}

/// A findAndModify whose write concern fails (a reply with `ok: 1` and a
/// `writeConcernError`) fails its operation span too (OpenTelemetry spec, "Exception
/// Handling"): the operation returns that error.
#[tokio::test]
async fn a_find_and_modify_write_concern_error_fails_the_operation_span() {
    let (exporter, subscriber) = pipeline();
    let _default = tracing::subscriber::set_default(subscriber);
    let traced = client(OpentelemetryOptions::builder().enabled(true).build());
    let collection = traced
        .database("open_telemetry_tests")
        .collection::<Document>("find_and_modify_wce");
    harness::within(TEST_BOUND, async {
        collection.drop().await.unwrap();
        collection.insert_one(doc! { "_id": 1 }).await.unwrap();
        // More members than the test's replica set has: unsatisfiable.
        let unsatisfiable = anymongo::options::WriteConcern::builder()
            .w(anymongo::options::Acknowledgment::Nodes(5))
            .w_timeout(Duration::from_millis(100))
            .build();
        let error = collection
            .find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "x": 1 } })
            .write_concern(unsatisfiable)
            .await
            .unwrap_err();
        assert!(
            matches!(
                *error.kind,
                anymongo::error::ErrorKind::Write(
                    anymongo::error::WriteFailure::WriteConcernError(_)
                ) | anymongo::error::ErrorKind::Command(_)
            ),
            "{error:?}"
        );
    })
    .await;
    let spans = exporter.get_finished_spans().unwrap();
    let operation = spans
        .iter()
        .find(|span| {
            span.name == "findAndModify open_telemetry_tests.find_and_modify_wce"
                && span.span_kind == SpanKind::Client
                && attribute(span, "db.command.name").is_none()
        })
        .unwrap_or_else(|| panic!("no operation span: {spans:#?}"));
    assert!(
        matches!(operation.status, Status::Error { .. }),
        "{operation:#?}"
    );
}
