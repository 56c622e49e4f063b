//! `ClientOptions`, `Tls`, `TlsOptions` and `ServerAddress` used as the official
//! `mongodb` crate's documentation (3.x) uses them, written here from that
//! documentation with only the crate name changed, against SecantusDB: the typed
//! builder, assignment of `Option` fields on parsed options, `None` meaning the
//! driver's default, and TLS configured in code.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::event::cmap::CmapEvent;
use anymongo::event::cmap::{ConnectionPoolOptions, PoolCreatedEvent};
use anymongo::options::{
    ClientOptions, ServerAddress, ServerApi, ServerApiVersion, Tls, TlsOptions,
};
use anymongo::{Client, ErrorKind};
use anymongo_tests::certs;
use anymongo_tests::harness::within;
use anymongo_tests::pool_events::{created_connections, PoolEvents};
use anymongo_tests::server::{self, TestServer};

const BOUND: Duration = Duration::from_secs(60);

/// The shared server's address, as the official docs build one.
fn shared_address() -> ServerAddress {
    let server = server::shared();
    ServerAddress::Tcp {
        host: server.host.clone(),
        port: Some(server.port),
    }
}

/// The options of the first pool the client created.
fn first_pool_created(events: &PoolEvents) -> ConnectionPoolOptions {
    events
        .lock()
        .iter()
        .find_map(|event| match event {
            CmapEvent::PoolCreated(PoolCreatedEvent { options, .. }) => options.clone(),
            _ => None,
        })
        .expect("a PoolCreated event")
}

#[tokio::test]
async fn options_built_with_the_builder_connect() {
    within(BOUND, async {
        let options = ClientOptions::builder()
            .hosts(vec![shared_address()])
            .app_name("official_client_options".to_string())
            .server_api(ServerApi::builder().version(ServerApiVersion::V1).build())
            .connect_timeout(Duration::from_secs(5))
            .build();
        assert_eq!(options.app_name.as_deref(), Some("official_client_options"));
        assert_eq!(options.max_pool_size, None);
        let client = Client::with_options(options).unwrap();
        let collection = client
            .database("official_client_options")
            .collection::<Document>("builder");
        collection.drop().await.unwrap();
        collection
            .insert_one(doc! { "built": "with the builder" })
            .await
            .unwrap();
        let found = collection.find_one(doc! {}).await.unwrap().unwrap();
        assert_eq!(found.get_str("built").unwrap(), "with the builder");
    })
    .await;
}

#[tokio::test]
async fn fields_assigned_on_parsed_options_are_used() {
    within(BOUND, async {
        let mut options = ClientOptions::parse(server::shared().uri()).await.unwrap();
        options.max_pool_size = Some(5);
        options.min_pool_size = Some(1);
        options.connect_timeout = Some(Duration::from_secs(3));
        options.retry_writes = Some(false);
        options.repl_set_name = Some("secantus".to_string());
        options.app_name = Some("assigned".to_string());
        let events = PoolEvents::default();
        let client = Client::with_options(events.record(options)).unwrap();
        let collection = client
            .database("official_client_options")
            .collection::<Document>("assigned");
        collection.drop().await.unwrap();
        collection.insert_one(doc! { "n": 1 }).await.unwrap();
        assert_eq!(collection.count_documents(doc! {}).await.unwrap(), 1);
        let pool = first_pool_created(&events);
        assert_eq!((pool.max_pool_size, pool.min_pool_size), (Some(5), Some(1)));
    })
    .await;
}

#[tokio::test]
async fn a_replica_set_name_that_does_not_match_finds_no_server() {
    within(BOUND, async {
        let mut options = ClientOptions::parse(server::shared().uri()).await.unwrap();
        options.repl_set_name = Some("not-this-set".to_string());
        options.server_selection_timeout = Some(Duration::from_millis(500));
        let client = Client::with_options(options).unwrap();
        let error = client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .expect_err("no member of set not-this-set");
        assert!(
            matches!(*error.kind, ErrorKind::ServerSelection { .. }),
            "{error}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_option_left_none_means_the_documented_default() {
    within(BOUND, async {
        let options = ClientOptions::parse(server::shared().uri()).await.unwrap();
        assert_eq!(options.max_pool_size, None);
        assert_eq!(options.min_pool_size, None);
        assert_eq!(options.max_connecting, None);
        assert_eq!(options.retry_writes, None);
        assert_eq!(options.connect_timeout, None);
        let events = PoolEvents::default();
        let client = Client::with_options(events.record(options)).unwrap();
        client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap();
        // maxPoolSize 100, minPoolSize 0 and maxConnecting 2 (URI Options spec and
        // the official docs of these fields).
        let pool = first_pool_created(&events);
        assert_eq!(
            (pool.max_pool_size, pool.min_pool_size, pool.max_connecting),
            (Some(100), Some(0), Some(2))
        );
    })
    .await;
}

#[test]
fn server_addresses_parse_and_compare_as_the_official_ones() {
    let parsed = ServerAddress::parse("db.example.com:27018").unwrap();
    assert_eq!(
        parsed,
        ServerAddress::Tcp {
            host: "db.example.com".to_string(),
            port: Some(27018),
        }
    );
    let without_port = ServerAddress::parse("db.example.com").unwrap();
    assert!(matches!(
        &without_port,
        ServerAddress::Tcp { port: None, .. }
    ));
    // No port is the default port.
    assert_eq!(
        without_port,
        ServerAddress::parse("db.example.com:27017").unwrap()
    );
    assert_eq!(without_port.to_string(), "db.example.com:27017");
    assert!(ServerAddress::parse("db.example.com:0").is_err());
}

#[tokio::test]
async fn tls_configured_in_code_connects_with_the_ca_and_fails_with_another() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(false)).unwrap();
        let options_with = |tls: TlsOptions| {
            let mut options = ClientOptions::builder()
                .hosts(vec![ServerAddress::Tcp {
                    host: "localhost".to_string(),
                    port: Some(server.port),
                }])
                .direct_connection(true)
                .server_selection_timeout(Duration::from_secs(2))
                .build();
            options.tls = Some(Tls::Enabled(tls));
            options
        };
        let ping = |options: ClientOptions| async move {
            let client = Client::with_options(options).unwrap();
            client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .await
        };

        let trusted = TlsOptions::builder()
            .ca_file_path(certs.ca_pem.clone())
            .build();
        ping(options_with(trusted)).await.unwrap();

        let untrusted = TlsOptions::builder()
            .ca_file_path(certs.untrusted_ca_pem.clone())
            .build();
        let error = ping(options_with(untrusted.clone())).await.unwrap_err();
        assert!(error.to_string().contains("TLS handshake"), "{error}");

        let mut allowed = untrusted;
        allowed.allow_invalid_certificates = Some(true);
        ping(options_with(allowed)).await.unwrap();

        // `TlsOptions` converts into the builder's `tls` (`From<TlsOptions> for
        // Option<Tls>`), and `Tls::Disabled` turns TLS off, which this server refuses.
        let converted = ClientOptions::builder()
            .hosts(vec![ServerAddress::parse(format!(
                "localhost:{}",
                server.port
            ))
            .unwrap()])
            .direct_connection(true)
            .tls(
                TlsOptions::builder()
                    .ca_file_path(certs.ca_pem.clone())
                    .build(),
            )
            .build();
        ping(converted).await.unwrap();
        let mut disabled = options_with(TlsOptions::default());
        disabled.tls = Some(Tls::Disabled);
        assert!(ping(disabled).await.is_err());
    })
    .await;
}

/// `warm_connection_pool` opens minPoolSize connections before the first operation;
/// `run_raw_command` takes raw BSON; `shutdown().immediate(true)` ends the client,
/// whose handles then fail.
#[tokio::test]
async fn warm_pool_raw_command_and_shutdown() {
    within(BOUND, async {
        let server = server::shared();
        let mut options = ClientOptions::parse(server.uri()).await.unwrap();
        options.min_pool_size = Some(3);
        let events = PoolEvents::default();
        let client = Client::with_options(events.record(options)).unwrap();
        client.warm_connection_pool().await;
        assert_eq!(created_connections(&events.lock()), 3);

        let db = client.database("official_client_options");
        let reply = db
            .run_raw_command(anymongo::bson::rawdoc! { "ping": 1 })
            .await
            .unwrap();
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
        // An int32 element "a" with two bytes of its four: well framed, not valid.
        let cut_short = vec![10, 0, 0, 0, 0x10, b'a', 0, 1, 0, 0];
        let cut_short = anymongo::bson::RawDocumentBuf::from_bytes(cut_short).unwrap();
        let error = db.run_raw_command(cut_short).await.unwrap_err();
        assert!(
            matches!(*error.kind, ErrorKind::InvalidArgument { .. }),
            "{error}"
        );

        let handle = client.clone();
        client.shutdown().immediate(true).await;
        assert!(handle
            .database("official_client_options")
            .run_command(doc! { "ping": 1 })
            .await
            .is_err());
    })
    .await;
}
