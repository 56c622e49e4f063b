//! Authentication against SecantusDB started with `--auth`: SCRAM-SHA-1 and
//! SCRAM-SHA-256 users, mechanism negotiation, SASLprep, speculative authentication,
//! wrong passwords, and MONGODB-X509 over mutual TLS.

use std::sync::{Arc, Mutex, OnceLock};

use anymongo::bson::doc;
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::certs::{self, CLIENT_SUBJECT};
use anymongo_tests::counting::counting;
use anymongo_tests::server::{ServerOptions, TestServer, TestUser};

/// The password of the SASLprep users, as created: a soft hyphen, which SASLprep
/// maps to nothing, so that `IX` is the same password.
const SOFT_HYPHEN_PASSWORD: &str = "I\u{00AD}X";
/// ROMAN NUMERAL NINE, which SASLprep's NFKC normalisation turns into `IX`.
const ROMAN_NINE_PASSWORD: &str = "\u{2168}";

/// One `--auth` server for this file, with a user of each kind.
fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        TestServer::start(&ServerOptions {
            auth: true,
            users: vec![
                TestUser::scram("sha1", "sha1-pw", &["SCRAM-SHA-1"]),
                TestUser::scram("sha256", "sha256-pw", &["SCRAM-SHA-256"]),
                TestUser::scram("both", "both-pw", &["SCRAM-SHA-1", "SCRAM-SHA-256"]),
                TestUser::scram("hyphen", SOFT_HYPHEN_PASSWORD, &["SCRAM-SHA-256"]),
                TestUser::scram("roman", ROMAN_NINE_PASSWORD, &["SCRAM-SHA-256"]),
            ],
            ..ServerOptions::default()
        })
        .expect("the --auth server starts")
    })
}

fn uri(user: &str, password: &str, options: &str) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|byte| match byte {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {
                    (byte as char).to_string()
                }
                _ => format!("%{byte:02X}"),
            })
            .collect::<String>()
    };
    format!(
        "mongodb://{}:{}@127.0.0.1:{}/?{options}",
        encode(user),
        encode(password),
        server().port
    )
}

/// Connects as `user` and runs one find; returns how many messages the find's
/// connection sent before the find. Single-threaded monitoring keeps the count
/// deterministic: the client's first operation opens its connection instead of a scan
/// (`cluster::first_contact`), so that connection is the only one.
async fn round_trips_to_authenticate(uri: &str) -> anymongo::Result<usize> {
    let (runtime, connections) = counting(anymongo_native::runtime());
    let config = ClientConfig {
        monitoring: MonitoringThreads::SingleThreaded,
        runtime: Some(runtime),
        ..ClientConfig::default()
    };
    let client = Client::with_config(ClientOptions::parse_uri(uri)?, config)?;
    client
        .database("test")
        .run_command(doc! { "find": "x", "limit": 1 })
        .await?;
    let counts = connections.sent();
    assert_eq!(
        counts.len(),
        1,
        "the operation's connection only: {counts:?}"
    );
    Ok(counts[0] - 1)
}

async fn find_as(uri: &str) -> anymongo::Result<()> {
    let client = anymongo::Client::with_uri_str(uri).await?;
    client
        .database("test")
        .run_command(doc! { "find": "x", "limit": 1 })
        .await
        .map(drop)
}

#[tokio::test]
async fn sha1_only_user_with_an_explicit_mechanism() {
    find_as(&uri("sha1", "sha1-pw", "authMechanism=SCRAM-SHA-1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn sha1_only_user_negotiates_sha1() {
    find_as(&uri("sha1", "sha1-pw", "")).await.unwrap();
}

#[tokio::test]
async fn sha256_only_user_with_the_default_and_an_explicit_mechanism() {
    find_as(&uri("sha256", "sha256-pw", "")).await.unwrap();
    find_as(&uri("sha256", "sha256-pw", "authMechanism=SCRAM-SHA-256"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_user_with_both_mechanisms_can_use_either() {
    find_as(&uri("both", "both-pw", "")).await.unwrap();
    find_as(&uri("both", "both-pw", "authMechanism=SCRAM-SHA-1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn speculative_authentication_saves_a_round_trip() {
    // SCRAM-SHA-256 (the default) rides in the hello: hello + one saslContinue.
    let speculative = round_trips_to_authenticate(&uri("sha256", "sha256-pw", ""))
        .await
        .unwrap();
    assert_eq!(speculative, 2, "hello+saslStart, saslContinue");
    // A SHA-1-only user cannot use the speculative SCRAM-SHA-256 exchange: the driver
    // negotiates SHA-1 and needs its own saslStart.
    let negotiated = round_trips_to_authenticate(&uri("sha1", "sha1-pw", ""))
        .await
        .unwrap();
    assert_eq!(
        negotiated,
        speculative + 1,
        "hello, saslStart, saslContinue"
    );
    // A user with both mechanisms gets SCRAM-SHA-256, the speculative one, by default.
    let both = round_trips_to_authenticate(&uri("both", "both-pw", ""))
        .await
        .unwrap();
    assert_eq!(both, speculative, "SCRAM-SHA-256 is picked when offered");
}

/// The first connection's hello answers the speculative SCRAM exchange with the
/// server-first message (nonce, salt, iteration count). That reply makes the server
/// known (`cluster::first_contact`), but it is sensitive (Command Logging and
/// Monitoring spec, "Security"): neither the description the client keeps, its SDAM
/// events, nor the hello it hands out carry it, in either monitoring mode.
#[tokio::test]
async fn the_speculative_reply_is_kept_nowhere() {
    for monitoring in [
        MonitoringThreads::Background,
        MonitoringThreads::SingleThreaded,
    ] {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let config = ClientConfig {
            monitoring,
            ..ClientConfig::default()
        };
        let mut options = ClientOptions::parse_uri(&uri("sha256", "sha256-pw", "")).unwrap();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            sink.lock().unwrap().push(format!("{event:?}"));
        }));
        let client = Client::with_config(options, config).unwrap();
        let hello = client.hello().await.unwrap();
        client
            .database("test")
            .run_command(doc! { "find": "x", "limit": 1 })
            .await
            .unwrap();
        let description = client.topology_description();
        let events = events.lock().unwrap().clone();
        let shown = [
            format!("{hello:?}"),
            format!("{description:?}"),
            description.to_string(),
            events.join("\n"),
        ];
        assert!(
            events.iter().any(|event| event.contains("RsPrimary")),
            "{monitoring:?}: the server became known: {events:?}"
        );
        for shown in shown {
            assert!(
                !shown.contains("speculativeAuthenticate") && !shown.contains("payload"),
                "{monitoring:?}: {shown}"
            );
        }
        client.shutdown().await;
    }
}

#[tokio::test]
async fn saslprep_makes_equivalent_passwords_equal() {
    for (user, password) in [
        ("hyphen", SOFT_HYPHEN_PASSWORD),
        ("hyphen", "IX"),
        ("roman", ROMAN_NINE_PASSWORD),
        ("roman", "IX"),
    ] {
        find_as(&uri(user, password, ""))
            .await
            .unwrap_or_else(|error| panic!("{user} with {password:?}: {error}"));
    }
}

#[tokio::test]
async fn a_wrong_password_is_one_clear_authentication_error() {
    let error = find_as(&uri("sha256", "not-the-password", ""))
        .await
        .unwrap_err();
    match &*error.kind {
        ErrorKind::Authentication {
            mechanism, source, ..
        } => {
            assert_eq!(*mechanism, "SCRAM-SHA-256");
            assert_eq!(source, "admin");
        }
        _ => panic!("expected an authentication error, got {error}"),
    }
    assert_eq!(error.code(), Some(18), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("SCRAM-SHA-256") && message.contains("admin"),
        "{message}"
    );
    assert!(!message.contains("not-the-password"), "{message}");

    let error = find_as(&uri("sha1", "wrong", "authMechanism=SCRAM-SHA-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &*error.kind,
            ErrorKind::Authentication {
                mechanism: "SCRAM-SHA-1",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn x509_with_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.x509_server_options()).unwrap();
    let uri = certs.x509_uri(&server);
    find_as(&uri).await.unwrap();
    let reply = anymongo::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database("admin")
        .run_command(doc! { "connectionStatus": 1 })
        .await
        .unwrap();
    let users = reply
        .get_document("authInfo")
        .and_then(|info| info.get_array("authenticatedUsers"))
        .unwrap();
    assert_eq!(
        users[0].as_document().unwrap().get_str("user").unwrap(),
        CLIENT_SUBJECT
    );

    // Without the client certificate the server refuses the TLS handshake.
    let without = format!("{}&authMechanism=MONGODB-X509", server.uri());
    assert!(find_as(&without).await.is_err());
}
