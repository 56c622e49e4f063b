//! The native driver against a real SecantusDB server on loopback, and against small
//! misbehaving listeners for the failure cases.

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Bson};
use anymongo::event::cmap::ConnectionCheckedOutEvent;
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::mock::{standalone_hello, MockServer};
use anymongo_tests::server::{self, ServerOptions, TestServer};
use anymongo_tests::{certs, demo, harness};

fn client(uri: &str) -> Client {
    Client::with_options(ClientOptions::parse_uri(uri).expect("valid URI")).expect("valid options")
}

/// A URI for the shared server of this test binary.
fn shared_uri() -> String {
    server::shared().uri()
}

#[tokio::test]
async fn ping() {
    let reply = client(&shared_uri())
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
}

/// The official driver's constructors, with nothing but the `anymongo` crate named:
/// `Client::with_uri_str`, and `ClientOptions::parse(..).await` (an action), options
/// changed in code, then `Client::with_options`, on the built-in (tokio) transport.
#[tokio::test]
async fn the_built_in_constructors_reach_the_server() {
    let client = anymongo::Client::with_uri_str(shared_uri()).await.unwrap();
    let reply = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));

    let mut options = anymongo::options::ClientOptions::parse(shared_uri())
        .await
        .unwrap();
    options.app_name = Some("built-in-constructors".into());
    let client = anymongo::Client::with_options(options).unwrap();
    assert_eq!(
        client.options().app_name.as_deref(),
        Some("built-in-constructors")
    );
    let reply = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));

    // A bad connection string fails the action, before any client exists.
    let error = anymongo::Client::with_uri_str("mongodb://localhost:99999")
        .await
        .unwrap_err();
    assert!(
        matches!(*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
}

#[test]
fn a_client_built_outside_a_tokio_runtime_works_in_one_later() {
    // No runtime to spawn monitors on: the client monitors in single-threaded mode
    // instead of panicking.
    let client = client(&shared_uri());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reply = runtime
        .block_on(
            client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .into_future(),
        )
        .unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
}

#[tokio::test]
async fn hello_is_parsed() {
    let hello = client(&shared_uri()).hello().await.unwrap();
    assert!(hello.is_writable_primary);
    assert!(
        hello.hello_ok,
        "legacy hello with helloOk must be acknowledged"
    );
    assert_eq!(hello.set_name.as_deref(), Some("secantus"));
    assert!(hello.max_wire_version >= anymongo::handshake::MIN_WIRE_VERSION);
    assert!(hello.connection_id.is_some());
    assert_eq!(hello.max_message_size_bytes, 48_000_000);
    assert_eq!(hello.logical_session_timeout_minutes, Some(30));
}

#[tokio::test]
async fn insert_find_delete_through_run_command() {
    let db = client(&shared_uri()).database("native_crud");
    let _ = db.run_command(doc! { "drop": "items" }).await;
    let inserted = db
        .run_command(doc! { "insert": "items", "documents": [
            { "_id": 1, "name": "one" }, { "_id": 2, "name": "two" }, { "_id": 3, "name": "three" },
        ] })
        .await
        .unwrap();
    assert_eq!(inserted.get_i32("n").ok(), Some(3));

    let found = db
        .run_command(
            doc! { "find": "items", "filter": { "_id": { "$gte": 2 } }, "sort": { "_id": 1 } },
        )
        .await
        .unwrap();
    assert_eq!(demo::names(&demo::first_batch(&found)), ["two", "three"]);

    let deleted = db
        .run_command(doc! { "delete": "items", "deletes": [{ "q": { "_id": 2 }, "limit": 1 }] })
        .await
        .unwrap();
    assert_eq!(deleted.get_i32("n").ok(), Some(1));
    let count = db.run_command(doc! { "count": "items" }).await.unwrap();
    assert_eq!(count.get_i32("n").ok(), Some(2));
}

#[tokio::test]
async fn server_error_carries_code_and_code_name() {
    let db = client(&shared_uri()).database("native_errors");
    let error = db
        .run_command(doc! { "find": "x", "filter": { "$bad": 1 } })
        .await
        .unwrap_err();
    let ErrorKind::Command(command) = &*error.kind else {
        panic!("expected a command error, got {error}");
    };
    assert_eq!(command.code, 2);
    assert_eq!(command.code_name, "BadValue");
    assert!(command.message.contains("$bad"), "{}", command.message);
    assert_eq!(error.code(), Some(2));
}

#[tokio::test]
async fn server_error_carries_error_labels() {
    // A server of its own: the fail point must not disturb the other tests.
    let server = TestServer::start(&ServerOptions::default()).unwrap();
    let client = client(&server.uri());
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": { "failCommands": ["find"], "errorCode": 91, "errorLabels": ["RetryableWriteError", "Custom"] },
        })
        .await
        .unwrap();
    let error = client
        .database("labels")
        .run_command(doc! { "find": "x" })
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(91));
    assert_eq!(
        error.labels(),
        &std::collections::HashSet::from(["RetryableWriteError".to_owned(), "Custom".to_owned()])
    );
    assert!(error.contains_label("Custom"));
    let ErrorKind::Command(command) = &*error.kind else {
        panic!("expected a command error, got {error}");
    };
    assert_eq!(command.code_name, "ShutdownInProgress");
    // The fail point fired once; the same client goes on working.
    client
        .database("labels")
        .run_command(doc! { "find": "x" })
        .await
        .unwrap();
}

/// A loopback port with nothing listening on it.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Runs a ping that must fail server selection; returns the error's message, which
/// must name the server and say what went wrong with it.
async fn selection_failure(uri: &str, address: &str) -> String {
    let started = Instant::now();
    let error = client(uri)
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    // serverSelectionTimeoutMS=1000 in every URI below.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(&*error.kind, ErrorKind::ServerSelection { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains(address), "{message}");
    message
}

#[tokio::test]
async fn connection_refused_is_a_clear_selection_error() {
    let port = closed_port();
    let address = format!("127.0.0.1:{port}");
    let uri = format!("mongodb://{address}/?connectTimeoutMS=2000&serverSelectionTimeoutMS=1000");
    let message = selection_failure(&uri, &address).await;
    assert!(message.contains("refused"), "{message}");
}

#[tokio::test]
async fn a_port_that_never_answers_times_out_within_connect_timeout() {
    // Accepts connections and never says a word.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let address = format!("127.0.0.1:{port}");
    let uri = format!("mongodb://{address}/?connectTimeoutMS=300&serverSelectionTimeoutMS=1000");
    let message = selection_failure(&uri, &address).await;
    assert!(
        message.contains(&format!("connect to {address} timed out after 300ms")),
        "{message}"
    );
    silent.abort();
}

#[tokio::test]
async fn a_port_that_speaks_another_protocol_is_a_protocol_error() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let http = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 512];
            let _ = socket.read(&mut request).await;
            let _ = socket
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    });
    let address = format!("127.0.0.1:{port}");
    let uri = format!("mongodb://{address}/?connectTimeoutMS=2000&serverSelectionTimeoutMS=1000");
    let message = selection_failure(&uri, &address).await;
    // "HTTP" read as a little-endian message length is ~1.3 GB: refused before allocating.
    assert!(message.contains("invalid reply"), "{message}");
    assert!(
        message.contains("exceeds the maximum message size"),
        "{message}"
    );
    http.abort();
}

#[tokio::test]
async fn tls_with_the_generated_ca_passes_and_an_untrusted_ca_fails() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.server_options(false)).unwrap();
    let base = format!(
        "mongodb://localhost:{}/?tls=true&connectTimeoutMS=5000&serverSelectionTimeoutMS=2000",
        server.port
    );

    let trusted = client(&format!("{base}&tlsCAFile={}", certs.ca_pem.display()));
    let reply = trusted
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)));
    let db = trusted.database("tls");
    db.run_command(doc! { "insert": "t", "documents": [{ "over": "tls" }] })
        .await
        .unwrap();
    let found = db.run_command(doc! { "find": "t" }).await.unwrap();
    assert_eq!(demo::first_batch(&found).len(), 1);

    let untrusted = client(&format!(
        "{base}&tlsCAFile={}",
        certs.untrusted_ca_pem.display()
    ));
    let error = untrusted
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    // The monitor's TLS handshake fails, and selection reports it.
    assert!(
        matches!(&*error.kind, ErrorKind::ServerSelection { message }
            if message.contains("TLS handshake") && message.contains("certificate")),
        "expected a TLS failure, got {error}"
    );

    // Plain TCP to a TLS port is not silently accepted either.
    let plain = client(&format!(
        "mongodb://localhost:{}/?connectTimeoutMS=2000&serverSelectionTimeoutMS=1000",
        server.port
    ));
    assert!(plain
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .is_err());
}

#[tokio::test]
async fn tls_without_a_ca_file_refuses_a_ca_outside_the_system_store() {
    // The generated CA is in no system store: without tlsCAFile the handshake fails,
    // and the error says what was trusted and how to trust another CA.
    let dir = tempfile::tempdir().unwrap();
    let certs = certs::generate(dir.path()).unwrap();
    let server = TestServer::start(&certs.server_options(false)).unwrap();
    let untrusted = client(&format!(
        "mongodb://localhost:{}/?tls=true&connectTimeoutMS=5000&serverSelectionTimeoutMS=2000",
        server.port
    ));
    let error = harness::within(
        Duration::from_secs(30),
        untrusted.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("UnknownIssuer") && message.contains("tlsCAFile"),
        "expected an untrusted-certificate error naming the trusted store, got {message}"
    );
    let store = match anymongo_native::system_roots().is_system() {
        true => "the operating system's certificate store",
        false => "the Mozilla roots",
    };
    assert!(message.contains(store), "{message}");
}

#[tokio::test]
async fn client_metadata_reaches_the_server() {
    let client = client(&format!("{}?appName=native-test", shared_uri()));
    let reply = client
        .database("admin")
        .run_command(doc! { "currentOp": 1, "$all": true })
        .await
        .unwrap();
    let ops = reply.get_array("inprog").unwrap();
    let ours = ops
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|op| op.get_document("clientMetadata").ok())
        .find(|metadata| {
            metadata
                .get_document("application")
                .and_then(|app| app.get_str("name"))
                .ok()
                == Some("native-test")
        })
        .unwrap_or_else(|| panic!("no operation of ours in {ops:?}"));
    assert_eq!(
        ours.get_document("driver").unwrap().get_str("name").ok(),
        Some("anymongo")
    );
    assert!(ours.get_str("platform").unwrap().contains("native runtime"));
}

#[tokio::test]
async fn a_standalone_server_is_seen_as_one() {
    let server = TestServer::start(&ServerOptions {
        standalone: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let hello = client(&server.uri()).hello().await.unwrap();
    assert!(hello.is_writable_primary);
    assert_eq!(hello.set_name, None);
    assert!(hello.hosts.is_empty());
}

#[tokio::test]
async fn an_auth_server_refuses_unauthenticated_commands_with_a_typed_error() {
    let server = TestServer::start(&ServerOptions {
        auth: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let client = client(&server.uri());
    // The handshake is allowed without credentials; reading data is not.
    let hello = client.hello().await.unwrap();
    assert!(hello.max_wire_version >= anymongo::handshake::MIN_WIRE_VERSION);
    let error = client
        .database("secret")
        .run_command(doc! { "find": "x" })
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(13), "{error}");
    let ErrorKind::Command(command) = &*error.kind else {
        panic!("expected a command error, got {error}");
    };
    assert_eq!(command.code_name, "Unauthorized");
}

#[tokio::test]
async fn unix_domain_sockets_work_natively() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mongodb-test.sock");
    let server = MockServer::start_unix(&path, |command| {
        match command.keys().next().map(String::as_str) {
            Some("isMaster") => standalone_hello(),
            _ => doc! { "ok": 1.0, "pong": true },
        }
    })
    .await;
    let uri = format!("mongodb://{}/", path.to_string_lossy().replace('/', "%2F"));
    let reply = client(&uri)
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert_eq!(reply.get_bool("pong").ok(), Some(true));
    // The monitor's handshake, the application connection's, then the ping.
    let received = server.received();
    assert_eq!(received.len(), 3, "{received:?}");
    assert_eq!(received[2], doc! { "ping": 1, "$db": "admin" });
}

#[tokio::test]
async fn a_cursor_answered_only_empty_batches_fails_and_is_killed() {
    use anymongo::bson::Document;
    use anymongo::cursor::MAX_EMPTY_BATCHES;
    use futures::TryStreamExt;
    // A server whose non-tailable cursor lives on and never has a document: on main
    // the cursor asked again forever (about 7,700 getMores a second on loopback).
    let killed = std::sync::Arc::new(tokio::sync::Notify::new());
    let on_kill = killed.clone();
    let server = MockServer::start(move |command| {
        let cursor = |batch: &str| doc! { "ok": 1.0, "cursor": { "id": 42_i64, "ns": "shop.orders", batch: [] } };
        match command.keys().next().map(String::as_str) {
            Some("isMaster" | "hello") => standalone_hello(),
            Some("find") => cursor("firstBatch"),
            Some("getMore") => cursor("nextBatch"),
            Some("killCursors") => {
                on_kill.notify_one();
                doc! { "ok": 1.0, "cursorsKilled": [42_i64] }
            }
            _ => doc! { "ok": 1.0 },
        }
    })
    .await;
    let orders = client(&format!("mongodb://{}/", server.address()))
        .database("shop")
        .collection::<Document>("orders");
    let bound = Duration::from_secs(20);
    let error = harness::within(bound, async {
        let mut cursor = orders.find(doc! {}).await.unwrap();
        cursor.try_next().await.expect_err("no document, no end")
    })
    .await;
    assert!(
        matches!(&*error.kind, ErrorKind::MisbehavingServer { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("empty batch"), "{error}");
    // The server cursor is killed, in the background.
    harness::within(bound, killed.notified()).await;
    let get_mores = server
        .command_names()
        .iter()
        .filter(|name| *name == "getMore")
        .count();
    assert_eq!(get_mores, MAX_EMPTY_BATCHES as usize);
}

#[tokio::test]
async fn a_command_abandoned_mid_flight_closes_its_connection() {
    use anymongo::event::cmap::{CmapEvent, ConnectionClosedReason};
    use anymongo_tests::pool_events::{closed_connections, PoolEvents};

    let events = PoolEvents::default();
    // The fail point only blocks this client's connections (appName), so the shared
    // server's other users go on unhindered.
    let uri = format!("{}?appName=abandoned", shared_uri());
    let options = anymongo::ClientOptions::parse_uri(&uri).unwrap();
    let client = Client::with_options(events.record(options)).unwrap();
    let admin = client.database("admin");
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": { "failCommands": ["find"], "blockConnection": true, "blockTimeMS": 2000, "appName": "abandoned" },
        })
        .await
        .unwrap();
    // The caller gives up while the server holds the reply back: the future, and the
    // checked-out connection in it, are dropped mid-command.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        client.database("abandon").run_command(doc! { "find": "x" }),
    )
    .await;
    assert!(
        abandoned.is_err(),
        "the command should still be blocked: {abandoned:?}"
    );
    let closed = closed_connections(&events.lock());
    assert_eq!(
        closed.len(),
        1,
        "the abandoned connection is closed, not returned: {closed:?}"
    );
    assert_eq!(closed[0].1, ConnectionClosedReason::Error);
    // The next command gets a clean connection and its own reply.
    let reply = client
        .database("abandon")
        .run_command(doc! { "find": "x" })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    let checked_out: Vec<u32> = events
        .lock()
        .iter()
        .filter_map(|event| match event {
            CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                connection_id, ..
            }) => Some(*connection_id),
            _ => None,
        })
        .collect();
    assert_ne!(
        checked_out.last(),
        Some(&closed[0].0),
        "the closed connection is not checked out again: {checked_out:?}"
    );
}

#[tokio::test]
async fn commands_are_announced_and_concluded_by_command_events() {
    use anymongo::event::command::CommandEvent;
    use anymongo::event::EventHandler;
    use std::sync::{Arc, Mutex};

    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = events.clone();
    let mut options = anymongo::ClientOptions::parse_uri(&shared_uri()).unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        recorded.lock().unwrap().push(event);
    }));
    let client = Client::with_options(options).unwrap();
    let db = client.database("events");
    db.run_command(doc! { "ping": 1 }).await.unwrap();
    db.run_command(doc! { "find": "x", "filter": { "$bad": 1 } })
        .await
        .unwrap_err();
    let events = events.lock().unwrap();
    let [CommandEvent::Started(ping), CommandEvent::Succeeded(pinged), CommandEvent::Started(find), CommandEvent::Failed(failed)] =
        &events[..]
    else {
        panic!("expected started/succeeded, started/failed: {events:#?}");
    };
    assert_eq!(ping.command_name, "ping");
    assert_eq!(ping.db, "events");
    assert_eq!(ping.command.get_i32("ping").ok(), Some(1));
    let same = |a: &CommandEvent, b: &CommandEvent| {
        (a.request_id(), a.operation_id(), a.db(), a.connection())
            == (b.request_id(), b.operation_id(), b.db(), b.connection())
    };
    assert!(
        same(&events[0], &events[1]),
        "the same request, connection and operation"
    );
    assert_eq!(pinged.reply.get_f64("ok").ok(), Some(1.0));
    assert!(ping.connection.server_id.is_some());
    assert_eq!(find.command_name, "find");
    assert_ne!(find.request_id, ping.request_id);
    assert!(same(&events[2], &events[3]));
    assert_eq!(
        (failed.command_name.as_str(), failed.db.as_str()),
        ("find", "events")
    );
    assert_eq!(failed.failure.code(), Some(2));
}
