//! The MongoDB Handshake spec against the scripted mock server, which records the
//! `client` document of each connection's handshake as the native host sends it.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::client::MonitoringThreads;
use anymongo::handshake::{DriverInfo, DRIVER_NAME};
use anymongo::Client;
use anymongo_tests::harness::{client_at, within};
use anymongo_tests::mock::{standalone_hello, MockServer};

const BOUND: Duration = Duration::from_secs(10);

/// A standalone that answers every hello, refuses `shutdown` with ShutdownInProgress
/// (code 91: the driver clears its pool, so the next operation opens a new
/// connection), and acknowledges the rest.
async fn server() -> MockServer {
    MockServer::start(|command| match command.keys().next().map(String::as_str) {
        Some("isMaster" | "hello") => standalone_hello(),
        Some("shutdown") => doc! {
            "ok": 0, "code": 91, "codeName": "ShutdownInProgress", "errmsg": "shutting down",
        },
        _ => doc! { "ok": 1 },
    })
    .await
}

/// The `client` documents of the handshakes received so far, in order.
fn handshakes(server: &MockServer) -> Vec<Document> {
    server
        .received()
        .iter()
        .filter_map(|command| command.get_document("client").ok().cloned())
        .collect()
}

async fn ping(client: &Client) -> anymongo::Result<Document> {
    within(
        BOUND,
        client.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await
}

#[tokio::test]
async fn each_handshake_names_the_driver_the_os_the_platform_and_the_app() {
    let server = server().await;
    let client = client_at(
        server.address(),
        "appName=inventory&directConnection=true",
        MonitoringThreads::Background,
    );
    ping(&client).await.unwrap();
    let handshakes = handshakes(&server);
    // The monitor's and the application connection's.
    assert!(handshakes.len() >= 2, "{handshakes:?}");
    for client in handshakes {
        let driver = client.get_document("driver").unwrap();
        assert_eq!(driver.get_str("name").unwrap(), DRIVER_NAME);
        // The workspace's crates share one version: the driver's is this one.
        assert_eq!(
            driver.get_str("version").unwrap(),
            env!("CARGO_PKG_VERSION")
        );
        let os = client.get_document("os").unwrap();
        assert_eq!(os.get_str("type").unwrap(), std::env::consts::OS);
        assert_eq!(os.get_str("architecture").unwrap(), std::env::consts::ARCH);
        let platform = client.get_str("platform").unwrap();
        assert!(
            platform.starts_with("anymongo native runtime, tokio"),
            "{platform}"
        );
        assert_eq!(
            client.get_document("application").unwrap(),
            &doc! { "name": "inventory" }
        );
    }
}

#[tokio::test]
async fn appended_metadata_goes_to_new_connections_only() {
    let server = server().await;
    let client = client_at(
        server.address(),
        "directConnection=true",
        MonitoringThreads::Background,
    );
    ping(&client).await.unwrap();
    let before = handshakes(&server).len();
    client
        .append_metadata(DriverInfo {
            name: "framework".into(),
            version: Some("2.0".into()),
            platform: Some("Framework Platform".into()),
        })
        .unwrap();
    // The open connection is kept, and says nothing more.
    ping(&client).await.unwrap();
    assert_eq!(handshakes(&server).len(), before);
    // A state change error clears the pool: the next ping needs a new connection.
    let admin = client.database("admin");
    let shutdown = within(BOUND, admin.run_command(doc! { "shutdown": 1 })).await;
    assert_eq!(shutdown.unwrap_err().code(), Some(91));
    ping(&client).await.unwrap();
    let handshakes = handshakes(&server);
    let (old, new) = handshakes.split_at(before);
    assert!(!new.is_empty(), "no new connection: {handshakes:?}");
    for client in old {
        let name = client.get_document("driver").unwrap().get_str("name");
        assert_eq!(name.unwrap(), DRIVER_NAME);
    }
    for client in new {
        let driver = client.get_document("driver").unwrap();
        assert_eq!(
            driver.get_str("name").unwrap(),
            format!("{DRIVER_NAME}|framework")
        );
        let version = format!("{}|2.0", env!("CARGO_PKG_VERSION"));
        assert_eq!(driver.get_str("version").unwrap(), version);
        let platform = client.get_str("platform").unwrap();
        assert!(platform.ends_with("|Framework Platform"), "{platform}");
    }
}
