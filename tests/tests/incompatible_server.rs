//! A server whose wire versions do not overlap the driver's: server selection must
//! report the incompatibility as soon as the server has been checked, not after
//! serverSelectionTimeoutMS (server-selection.md, "Checking wire protocol
//! compatibility"), in both monitoring modes.

use std::time::{Duration, Instant};

use anymongo::bson::{doc, Document};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::harness::within;
use anymongo_tests::mock::{standalone_hello, MockServer};

/// Far below the default serverSelectionTimeoutMS (30 s), which the test keeps: an
/// error that comes only when selection gives up takes that long.
const PROMPTLY: Duration = Duration::from_secs(5);

/// A standalone whose hello has `overrides` (its wire versions).
async fn server_with(overrides: Document) -> MockServer {
    MockServer::start(
        move |command| match command.keys().next().map(String::as_str) {
            Some("isMaster" | "hello") => {
                let mut hello = standalone_hello();
                hello.extend(overrides.clone());
                hello
            }
            _ => doc! { "ok": 1.0 },
        },
    )
    .await
}

fn client(address: &str, monitoring: MonitoringThreads) -> Client {
    let options = ClientOptions::parse_uri(&format!("mongodb://{address}/")).unwrap();
    let config = ClientConfig {
        monitoring,
        ..ClientConfig::default()
    };
    Client::with_config(options, config).unwrap()
}

/// Runs `ping` on a fresh client of a server with `overrides`; returns the error's
/// message once checked to be an incompatibility reported within [`PROMPTLY`].
async fn ping_fails_promptly(overrides: Document, monitoring: MonitoringThreads) -> String {
    let server = server_with(overrides).await;
    let client = client(server.address(), monitoring);
    let started = Instant::now();
    let result = within(
        Duration::from_secs(40),
        client.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await;
    let elapsed = started.elapsed();
    let error = result.expect_err("an incompatible server must not be used");
    assert!(
        matches!(&*error.kind, ErrorKind::IncompatibleServer { .. }),
        "{monitoring:?}: expected an incompatibility error, got {error}"
    );
    assert!(
        elapsed < PROMPTLY,
        "{monitoring:?}: the incompatibility took {elapsed:?} to be reported"
    );
    assert!(
        !server.command_names().iter().any(|name| name == "ping"),
        "the command reached an incompatible server"
    );
    client.shutdown().await;
    error.to_string()
}

#[tokio::test]
async fn a_server_too_old_is_reported_at_once() {
    for monitoring in [
        MonitoringThreads::Background,
        MonitoringThreads::SingleThreaded,
    ] {
        let message = ping_fails_promptly(
            doc! { "minWireVersion": 0, "maxWireVersion": 0 },
            monitoring,
        )
        .await;
        assert!(message.contains("reports wire version 0"), "{message}");
    }
}

#[tokio::test]
async fn a_server_too_new_is_reported_at_once() {
    for monitoring in [
        MonitoringThreads::Background,
        MonitoringThreads::SingleThreaded,
    ] {
        let message = ping_fails_promptly(
            doc! { "minWireVersion": 99, "maxWireVersion": 100 },
            monitoring,
        )
        .await;
        assert!(message.contains("requires wire version 99"), "{message}");
    }
}

/// The description keeps the incompatible server (with its wire versions), so that
/// `Client::topology_description` shows why it is not used.
#[tokio::test]
async fn the_topology_records_the_incompatibility() {
    let server = server_with(doc! { "minWireVersion": 99, "maxWireVersion": 100 }).await;
    let client = client(server.address(), MonitoringThreads::Background);
    let _ = within(
        Duration::from_secs(40),
        client.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await;
    let topology = client.topology_description();
    let reason = topology.compatibility_error.clone();
    assert!(
        reason
            .as_deref()
            .is_some_and(|reason| reason.contains("99")),
        "{topology}"
    );
    client.shutdown().await;
}
