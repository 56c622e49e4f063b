//! Mechanisms SecantusDB does not offer, against the scripted mock server, which
//! checks the SASL payloads the driver sends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anymongo::bson::spec::BinarySubtype;
use anymongo::bson::{doc, Binary, Bson, Document};
use anymongo::options::oidc::{Callback, CallbackContext, IdpServerResponse};
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::harness::within;
use anymongo_tests::mock::{standalone_hello, MockServer};
use futures::FutureExt;

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

/// The BSON document carried in a SASL command's binary `payload`.
fn payload(command: &Document) -> Document {
    let bytes = &command.get_binary_generic("payload").unwrap()[..];
    Document::from_reader(bytes).unwrap()
}

/// A MONGODB-AWS server: checks the client's messages and answers as the spec's
/// conversation goes, or fails the step with code 18 when the payload is wrong.
fn aws_server(sts_host: &'static str) -> impl Fn(&Document) -> Document + Send + Sync {
    let client_nonce = Mutex::new(Vec::new());
    move |command| match command.keys().next().map(String::as_str) {
        Some("isMaster") => standalone_hello(),
        Some("saslStart") => {
            assert_eq!(command.get_str("mechanism").ok(), Some("MONGODB-AWS"));
            assert_eq!(command.get_str("$db").ok(), Some("$external"));
            let first = payload(command);
            assert_eq!(first.keys().collect::<Vec<_>>(), ["r", "p"]);
            assert_eq!(first.get_i32("p").ok(), Some(110), "gs2 flag 'n'");
            let nonce = first.get_binary_generic("r").unwrap().clone();
            assert_eq!(nonce.len(), 32);
            let mut server_nonce = nonce.clone();
            server_nonce.extend([7u8; 32]);
            *client_nonce.lock().unwrap() = server_nonce.clone();
            let server_first = doc! { "s": binary(server_nonce), "h": sts_host };
            doc! {
                "conversationId": 1, "done": false, "ok": 1.0,
                "payload": binary(server_first.to_vec().unwrap()),
            }
        }
        Some("saslContinue") => {
            let last = payload(command);
            let date = last.get_str("d").unwrap().to_string();
            assert_eq!(date.len(), 16, "X-Amz-Date is YYYYMMDD'T'HHMMSS'Z': {date}");
            let header = last.get_str("a").unwrap();
            let expected_prefix = format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{}/{}/sts/aws4_request, \
                 SignedHeaders=content-length;content-type;host;x-amz-date;x-amz-security-token;\
                 x-mongodb-gs2-cb-flag;x-mongodb-server-nonce, Signature=",
                &date[..8],
                if sts_host == "sts.amazonaws.com" {
                    "us-east-1"
                } else {
                    "eu-west-3"
                },
            );
            assert!(header.starts_with(&expected_prefix), "{header}");
            let signature = &header[expected_prefix.len()..];
            assert!(
                signature.len() == 64 && signature.bytes().all(|b| b.is_ascii_hexdigit()),
                "{signature}"
            );
            assert_eq!(last.get_str("t").ok(), Some("SESSION/TOKEN"));
            assert!(!client_nonce.lock().unwrap().is_empty());
            doc! { "conversationId": 1, "done": true, "ok": 1.0, "payload": binary(Vec::new()) }
        }
        _ => doc! { "ok": 1.0 },
    }
}

/// Runs `ping` on `admin`: the first command, which makes the client connect and
/// authenticate.
///
/// Every command list below starts with the `isMaster` of the client's monitor: server
/// selection waits for it before the application connection opens (and so
/// authenticates), and the next check is a heartbeat (10 s) away.
async fn ping(client: &Client) -> anymongo::Result<Document> {
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
}

/// The environment of a host with temporary AWS credentials: MONGODB-AWS reads them
/// there only (Authentication spec, "Obtaining Credentials").
fn aws_env(name: &str) -> Option<String> {
    let value = match name {
        "AWS_ACCESS_KEY_ID" => "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY" => "wJalrXUtnFEMI/K7MDENG",
        "AWS_SESSION_TOKEN" => "SESSION/TOKEN",
        _ => return None,
    };
    Some(value.to_owned())
}

/// A MONGODB-AWS client of `server` on a host whose environment is [`aws_env`].
fn aws_client(server: &MockServer) -> Client {
    let mut runtime = anymongo_native::runtime();
    runtime.host.env = aws_env;
    let uri = format!("mongodb://{}/?authMechanism=MONGODB-AWS", server.address());
    Client::with_runtime(ClientOptions::parse_uri(&uri).unwrap(), runtime).unwrap()
}

#[tokio::test]
async fn mongodb_aws_sends_the_spec_payloads() {
    for sts_host in ["sts.amazonaws.com", "sts.eu-west-3.amazonaws.com"] {
        let server = MockServer::start(aws_server(sts_host)).await;
        let client = aws_client(&server);
        ping(&client).await.unwrap();
        let commands = server.command_names();
        assert_eq!(
            commands,
            ["isMaster", "isMaster", "saslStart", "saslContinue", "ping"]
        );
        // No speculative authentication for MONGODB-AWS, and no secret on the wire.
        let hello = &server.received()[1];
        assert!(!hello.contains_key("speculativeAuthenticate"), "{hello}");
        let everything = format!("{:?}", server.received());
        assert!(
            !everything.contains("wJalrXUtnFEMI"),
            "the secret key travelled"
        );
    }
}

#[tokio::test]
async fn mongodb_aws_rejects_a_server_nonce_that_does_not_extend_the_client_nonce() {
    let server = MockServer::start(|command| match command.keys().next().map(String::as_str) {
        Some("isMaster") => standalone_hello(),
        Some("saslStart") => {
            let server_first = doc! { "s": binary(vec![1; 64]), "h": "sts.amazonaws.com" };
            doc! {
                "conversationId": 1, "done": false, "ok": 1.0,
                "payload": binary(server_first.to_vec().unwrap()),
            }
        }
        _ => doc! { "ok": 1.0 },
    })
    .await;
    let client = aws_client(&server);
    let error = ping(&client).await.unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::Authentication { mechanism: "MONGODB-AWS", source, .. } if source == "$external"),
        "{error}"
    );
    let commands = server.command_names();
    assert_eq!(
        commands,
        ["isMaster", "isMaster", "saslStart"],
        "nothing is signed for a bad nonce"
    );
}

/// A MONGODB-OIDC server: accepts any `jwt`, records them, and fails the first `ping`
/// with ReauthenticationRequired (391).
fn oidc_server(tokens: Arc<Mutex<Vec<String>>>) -> impl Fn(&Document) -> Document + Send + Sync {
    let pings = AtomicUsize::new(0);
    move |command| match command.keys().next().map(String::as_str) {
        Some("isMaster") => {
            assert!(!command.contains_key("saslSupportedMechs"), "{command}");
            standalone_hello()
        }
        Some("saslStart") => {
            assert_eq!(command.get_str("mechanism").ok(), Some("MONGODB-OIDC"));
            assert_eq!(command.get_str("$db").ok(), Some("$external"));
            let jwt = payload(command).get_str("jwt").unwrap().to_string();
            tokens.lock().unwrap().push(jwt);
            doc! { "conversationId": 1, "done": true, "ok": 1.0, "payload": binary(Vec::new()) }
        }
        Some("ping") if pings.fetch_add(1, Ordering::SeqCst) == 0 => doc! {
            "ok": 0.0, "code": 391, "codeName": "ReauthenticationRequired", "errmsg": "token expired",
        },
        _ => doc! { "ok": 1.0 },
    }
}

#[tokio::test]
async fn mongodb_oidc_machine_callback_and_reauthentication() {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start(oidc_server(tokens.clone())).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    // As the official crate's documentation has it: the mechanism in the connection
    // string, the callback set on the parsed credential.
    let uri = format!("mongodb://{}/?authMechanism=MONGODB-OIDC", server.address());
    let mut options = ClientOptions::parse(&uri).await.unwrap();
    options.credential.as_mut().unwrap().oidc_callback =
        Callback::machine(move |context: CallbackContext| {
            let call = counter.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(context
                .timeout
                .is_some_and(|timeout| timeout > Duration::ZERO));
            async move {
                Ok(IdpServerResponse::builder()
                    .access_token(format!("token-{call}"))
                    .build())
            }
            .boxed()
        });
    let client = Client::with_options(options).unwrap();

    ping(&client).await.unwrap();

    let commands = server.command_names();
    assert_eq!(
        commands,
        [
            "isMaster",
            "isMaster",
            "saslStart",
            "ping",
            "saslStart",
            "ping"
        ]
    );
    assert_eq!(
        *tokens.lock().unwrap(),
        ["token-1", "token-2"],
        "a fresh token after 391"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn plain_sends_the_rfc_4616_message_to_external() {
    let server = MockServer::start(|command| match command.keys().next().map(String::as_str) {
        Some("isMaster") => standalone_hello(),
        Some("saslStart") => {
            assert_eq!(command.get_str("mechanism").ok(), Some("PLAIN"));
            assert_eq!(command.get_str("$db").ok(), Some("$external"));
            let message = command.get_binary_generic("payload").unwrap();
            assert_eq!(message.as_slice(), b"\0ldap user\0p@ss:word");
            doc! { "conversationId": 1, "done": true, "ok": 1.0, "payload": binary(Vec::new()) }
        }
        _ => doc! { "ok": 1.0 },
    })
    .await;
    let uri = format!(
        "mongodb://ldap%20user:p%40ss%3Aword@{}/?authMechanism=PLAIN",
        server.address()
    );
    let client = anymongo::Client::with_uri_str(&uri).await.unwrap();
    ping(&client).await.unwrap();
    let commands = server.command_names();
    assert_eq!(commands, ["isMaster", "isMaster", "saslStart", "ping"]);
}

/// A SCRAM-SHA-256 server whose server-first message asks for `iterations`; it never
/// gets further.
fn scram_server(iterations: u64) -> impl Fn(&Document) -> Document + Send + Sync {
    move |command| match command.keys().next().map(String::as_str) {
        Some("isMaster") => standalone_hello(),
        Some("saslStart") => {
            let client_first = command.get_binary_generic("payload").unwrap();
            let client_first = String::from_utf8(client_first.clone()).unwrap();
            let (_, nonce) = client_first.rsplit_once("r=").unwrap();
            let server_first = format!("r={nonce}Srv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={iterations}");
            doc! {
                "conversationId": 1, "done": false, "ok": 1.0,
                "payload": binary(server_first.into_bytes()),
            }
        }
        _ => doc! { "ok": 1.0 },
    }
}

fn scram_uri(server: &MockServer, options: &str) -> String {
    format!(
        "mongodb://user:pencil@{}/?authMechanism=SCRAM-SHA-256{options}",
        server.address()
    )
}

/// Issue 21: a server-first message with `i=4294967295` made the driver derive keys
/// for about 14 minutes, blocking the runtime. A count above the driver's maximum
/// fails the connection at once with an authentication error that says why.
#[tokio::test]
async fn scram_refuses_a_huge_iteration_count_at_once() {
    let server = MockServer::start(scram_server(u32::MAX.into())).await;
    let client = anymongo::Client::with_uri_str(&scram_uri(&server, ""))
        .await
        .unwrap();
    let start = Instant::now();
    let error = within(Duration::from_secs(30), ping(&client))
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    assert!(
        matches!(
            &*error.kind,
            ErrorKind::Authentication {
                mechanism: "SCRAM-SHA-256",
                ..
            }
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("4294967295") && message.contains("maximum"),
        "{message}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(
        server.command_names(),
        ["isMaster", "isMaster", "saslStart"]
    );
}

/// An allowed but slow count (the maximum, 10,000,000) is derived in rounds that
/// yield to the executor: on this single-threaded runtime a ticker keeps ticking, and
/// `connectTimeoutMS` ends the connection attempt, derivation included, on time.
/// Before, the derivation ran in one call: nothing else ran until it ended.
#[tokio::test]
async fn a_long_scram_key_derivation_yields_and_obeys_connect_timeout() {
    let server = MockServer::start(scram_server(10_000_000)).await;
    let uri = scram_uri(
        &server,
        "&connectTimeoutMS=500&serverSelectionTimeoutMS=5000",
    );
    let client = anymongo::Client::with_uri_str(&uri).await.unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            let mut interval = tokio::time::interval(Duration::from_millis(10));
            // Missed ticks are not made up for: the count is how often the timer fired.
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                ticks.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let start = Instant::now();
    let error = within(Duration::from_secs(30), ping(&client))
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    ticker.abort();
    let ticks = ticks.load(Ordering::SeqCst);
    eprintln!("failed after {elapsed:?} with {ticks} ticks: {error}");
    assert!(
        error
            .network_timeout()
            .is_some_and(|timeout| timeout.during == "connect"),
        "{error}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    // About 20 when the timers are checked every 61 rounds of 256 iterations; 1 (the
    // immediate first tick) when the derivation runs in one call.
    assert!(ticks >= 3, "the ticker ticked {ticks} times in {elapsed:?}");
    assert_eq!(
        server.command_names(),
        ["isMaster", "isMaster", "saslStart"]
    );
}
