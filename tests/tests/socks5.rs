//! Connections through a SOCKS5 proxy (SOCKS5 Support spec and its prose tests):
//! `pproxy` on loopback, with and without username/password, in front of SecantusDB —
//! plain, over TLS, and from the wasip2 build under wasmtime.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anymongo::bson::doc;
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::harness::within;
use anymongo_tests::server::{self, TestServer};
use anymongo_tests::socks5::Socks5Proxy;
use anymongo_tests::{certs, demo};

const BOUND: Duration = Duration::from_secs(60);
const USER: &str = "username";
const PASSWORD: &str = "p4ssw0rd";

/// Inserts, reads back, updates and deletes a document in `collection` with `client`.
async fn crud(client: &Client, collection: &str) {
    let db = client.database("socks5");
    db.run_command(doc! { "insert": collection, "documents": [{ "_id": 1, "via": "proxy" }] })
        .await
        .unwrap();
    let found = db
        .run_command(doc! { "find": collection, "filter": { "_id": 1 } })
        .await
        .unwrap();
    assert_eq!(demo::first_batch(&found).len(), 1, "{found}");
    let updated = db
        .run_command(doc! { "update": collection, "updates": [
            { "q": { "_id": 1 }, "u": { "$set": { "updated": true } } }
        ] })
        .await
        .unwrap();
    assert_eq!(updated.get_i32("nModified").ok(), Some(1), "{updated}");
    let deleted = db
        .run_command(doc! { "delete": collection, "deletes": [{ "q": { "_id": 1 }, "limit": 1 }] })
        .await
        .unwrap();
    assert_eq!(deleted.get_i32("n").ok(), Some(1), "{deleted}");
}

/// The error of a ping through `uri`, and how long it took.
async fn ping_error(uri: &str) -> (String, Duration) {
    let client = anymongo::Client::with_uri_str(uri).await.unwrap();
    let started = Instant::now();
    let error = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::ServerSelection { .. }),
        "{error}"
    );
    (error.to_string(), started.elapsed())
}

#[tokio::test]
async fn crud_through_a_proxy_without_authentication_sends_the_host_name() {
    within(BOUND, async {
        let proxy = Socks5Proxy::start(None).unwrap();
        let port = server::shared().port;
        // A host name, not an address: the proxy resolves it (the spec: no DNS look-up
        // by the driver), and its log shows the name it was given.
        let uri = format!(
            "mongodb://localhost:{port}/?directConnection=true&{}",
            proxy.uri_options()
        );
        crud(
            &anymongo::Client::with_uri_str(&uri).await.unwrap(),
            "no_auth",
        )
        .await;
        let destination = format!("localhost:{port}");
        assert!(
            proxy.tunnels_to(&destination) >= 1,
            "no tunnel to {destination}: {}",
            proxy.log()
        );
    })
    .await;
}

/// The official crate's way: `ClientOptions::socks5_proxy` set in code, with
/// credentials, and no proxy option in the connection string.
#[tokio::test]
async fn crud_through_a_proxy_set_in_client_options() {
    within(BOUND, async {
        let proxy = Socks5Proxy::start(Some((USER, PASSWORD))).unwrap();
        let port = server::shared().port;
        let uri = format!("mongodb://localhost:{port}/?directConnection=true");
        let mut options = ClientOptions::parse(&uri).await.unwrap();
        options.socks5_proxy = Some(
            anymongo::options::Socks5Proxy::builder()
                .host("127.0.0.1")
                .port(proxy.port)
                .authentication((USER.to_string(), PASSWORD.to_string()))
                .build(),
        );
        let client = Client::with_options(options).unwrap();
        crud(&client, "client_options").await;
        let destination = format!("localhost:{port}");
        assert!(
            proxy.tunnels_to(&destination) >= 1,
            "no tunnel to {destination}: {}",
            proxy.log()
        );
    })
    .await;
}

#[tokio::test]
async fn every_connection_of_a_replica_set_client_goes_through_the_proxy() {
    within(BOUND, async {
        let proxy = Socks5Proxy::start(Some((USER, PASSWORD))).unwrap();
        let server = server::shared();
        let events = Arc::new(Mutex::new(Vec::<CommandEvent>::new()));
        let sink = events.clone();
        let uri = format!(
            "{}?{}&proxyUsername={USER}&proxyPassword={PASSWORD}",
            server.uri(),
            proxy.uri_options()
        );
        let mut options = ClientOptions::parse_uri(&uri).unwrap();
        options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
            sink.lock().unwrap().push(event);
        }));
        let client = Client::with_options(options).unwrap();
        crud(&client, "with_auth").await;

        // The monitor's connection and the pool's: at least two tunnels, and none
        // bypassed the proxy (the server sees connections from the proxy only —
        // checked through its log: pproxy logs each tunnel it opens).
        let destination = format!("127.0.0.1:{}", server.port);
        assert!(
            proxy.tunnels_to(&destination) >= 2,
            "expected the monitor's and the pool's tunnels: {}",
            proxy.log()
        );
        // Command events name the server, never the proxy (spec, "Events").
        let events = events.lock().unwrap();
        assert!(!events.is_empty());
        for event in events.iter() {
            let address = event.connection().address.to_string();
            assert_eq!(address, destination, "{event:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn wrong_or_missing_proxy_credentials_fail_clearly_and_quickly() {
    within(BOUND, async {
        let proxy = Socks5Proxy::start(Some((USER, PASSWORD))).unwrap();
        let base = format!(
            "{}?serverSelectionTimeoutMS=1500&connectTimeoutMS=2000&{}",
            server::shared().uri(),
            proxy.uri_options()
        );
        let named = format!("SOCKS5 proxy 127.0.0.1:{}", proxy.port);

        let (message, took) = ping_error(&format!(
            "{base}&proxyUsername=nonexistentuser&proxyPassword=badauth"
        ))
        .await;
        assert!(message.contains(&named), "{message}");
        assert!(
            message.contains("wrong proxyUsername or proxyPassword"),
            "{message}"
        );
        assert!(
            !message.contains("badauth"),
            "the password leaked: {message}"
        );
        assert!(took < Duration::from_secs(10), "took {took:?}");

        let (message, _) = ping_error(&base).await;
        assert!(message.contains(&named), "{message}");
        assert!(message.contains("require proxyUsername"), "{message}");

        // The prose tests' case: credentials given to a proxy that needs none are
        // fine (it picks "no authentication").
        let open = Socks5Proxy::start(None).unwrap();
        let uri = format!(
            "{}?{}&proxyUsername=nonexistentuser&proxyPassword=badauth",
            server::shared().uri(),
            open.uri_options()
        );
        crud(
            &anymongo::Client::with_uri_str(&uri).await.unwrap(),
            "unused_auth",
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_proxy_that_is_not_there_is_named_in_the_error() {
    within(BOUND, async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (message, _) = ping_error(&format!(
            "{}?serverSelectionTimeoutMS=1000&proxyHost=127.0.0.1&proxyPort={port}",
            server::shared().uri()
        ))
        .await;
        assert!(
            message.contains(&format!(
                "cannot connect to the SOCKS5 proxy 127.0.0.1:{port}"
            )),
            "{message}"
        );
    })
    .await;
}

#[tokio::test]
async fn tls_to_the_server_runs_through_the_proxy() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(false)).unwrap();
        let proxy = Socks5Proxy::start(Some((USER, PASSWORD))).unwrap();
        // The certificate names localhost: the name checked is the server's, not the
        // proxy's.
        let uri = format!(
            "mongodb://localhost:{}/?tls=true&tlsCAFile={}&directConnection=true&{}\
             &proxyUsername={USER}&proxyPassword={PASSWORD}",
            server.port,
            certs.ca_pem.display(),
            proxy.uri_options()
        );
        crud(
            &anymongo::Client::with_uri_str(&uri).await.unwrap(),
            "over_tls",
        )
        .await;
        assert!(proxy.tunnels_to(&format!("localhost:{}", server.port)) >= 1);
    })
    .await;
}
