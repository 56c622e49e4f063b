//! Servers that lie or go silent (issue 21): a hostile `maxMessageSizeBytes` and frame
//! length, and servers that stop answering at the handshake, at an operation, or
//! everywhere after the handshake, in both monitoring modes; a reply that says more
//! replies follow (`moreToCome`) to a command that did not allow them; numbers no
//! server sends (issue 41).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anymongo::bson::RawDocumentBuf;
use anymongo::bson::{doc, Document};
use anymongo::client::MonitoringThreads;
use anymongo::crud::bulk_write::{InsertOneModel, UpdateManyModel, WriteModel};
use anymongo::event::cmap::ConnectionClosedReason;
use anymongo::wire::{op_code, MessageHeader, MsgFlags, OpMsg, WireError};
use anymongo::{Client, ClientOptions, Error, ErrorKind};
use anymongo_tests::harness::within;
use anymongo_tests::mock::{is_hello, standalone_hello, Answer, MockServer};
use anymongo_tests::pool_events::{closed_connections, created_connections, PoolEvents};

/// Every test ends within this, whatever the driver does.
const BOUND: Duration = Duration::from_secs(20);

/// Small timeouts keep the tests fast: 200 ms to connect (and for each monitor check),
/// a check every 500 ms (the least the spec permits).
const TIMEOUTS: &str = "connectTimeoutMS=200&heartbeatFrequencyMS=500";

const MODES: [MonitoringThreads; 2] = [
    MonitoringThreads::Background,
    MonitoringThreads::SingleThreaded,
];

fn client(server: &MockServer, options: &str, monitoring: MonitoringThreads) -> Client {
    anymongo_tests::harness::client_at(server.address(), options, monitoring)
}

/// Runs `ping` and returns its error and how long it took.
async fn failed_ping(client: &Client) -> (Error, Duration) {
    let started = Instant::now();
    let result = within(BOUND, client.database("x").run_command(doc! { "ping": 1 })).await;
    (result.unwrap_err(), started.elapsed())
}

#[tokio::test]
async fn a_hostile_max_message_size_does_not_let_a_2_gb_frame_through() {
    // The server advertises maxMessageSizeBytes = 2^31 - 1, then announces a frame of
    // that length and sends a few bytes of it, keeping the connection open.
    let server = MockServer::answering(|command, _| match is_hello(command) {
        true => {
            let mut hello = standalone_hello();
            hello.insert("maxMessageSizeBytes", i32::MAX);
            Answer::Reply(hello)
        }
        false => {
            let header = MessageHeader {
                length: i32::MAX,
                request_id: 1,
                response_to: 0,
                op_code: op_code::MSG,
            };
            let mut frame = header.to_bytes().to_vec();
            frame.extend_from_slice(b"a few bytes");
            Answer::Raw(frame)
        }
    })
    .await;
    for mode in MODES {
        let client = client(&server, TIMEOUTS, mode);
        let (error, _) = failed_ping(&client).await;
        assert!(
            matches!(&*error.kind, ErrorKind::InvalidResponse { .. }),
            "{mode:?}: {error}"
        );
        assert!(
            error.to_string().contains(
                "wire message length 2147483647 exceeds the maximum message size of 48000000 bytes"
            ),
            "{mode:?}: {error}"
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_fails_selection_in_time() {
    // Case (a): TCP connections are accepted, nothing is ever answered.
    let server = MockServer::answering(|_, _| Answer::Silence).await;
    for mode in MODES {
        let client = client(
            &server,
            &format!("{TIMEOUTS}&serverSelectionTimeoutMS=1000"),
            mode,
        );
        let (error, took) = failed_ping(&client).await;
        assert!(
            matches!(&*error.kind, ErrorKind::ServerSelection { .. }),
            "{mode:?}: {error}"
        );
        // The last check's error says why: the handshake timed out.
        assert!(error.to_string().contains("timed out"), "{mode:?}: {error}");
        assert!(took < Duration::from_secs(5), "{mode:?}: {took:?}");
    }
}

#[tokio::test]
async fn an_application_connections_handshake_is_bounded_by_connect_timeout() {
    // The first connection to send a hello is answered (its hellos only); every later
    // handshake is not. Establishing a pooled connection takes its handshake and
    // authentication (CMAP spec, "Establishing a Connection"), and connectTimeoutMS
    // "applies to SDAM hello and legacy hello operations" (URI Options spec): the whole
    // establishment is bounded by it — as is the monitor's.
    //
    // Which connection is first depends on the mode. A cold client's first operation
    // opens its connection at once (`cluster::first_contact`): in single-threaded mode
    // it is the only one, answered, and the ping on it is not: the ping fails at
    // socketTimeoutMS (set for this mode only). In background mode the monitor's connection opens at the same
    // moment: when the operation's is first, the monitor's handshake is the silent one,
    // and its connectTimeoutMS ends the ping (the pool cleared, interrupting it); when
    // the monitor's is first, the operation's handshake times out, and so does the one
    // of the connection its selection then checks out.
    for mode in MODES {
        let first_taken = AtomicBool::new(false);
        let server = MockServer::answering(move |command, carried| {
            let first = carried > 0 || !first_taken.swap(true, Ordering::SeqCst);
            match is_hello(command) && first {
                true => Answer::Reply(standalone_hello()),
                false => Answer::Silence,
            }
        })
        .await;
        // Single-threaded, the silent ping is bounded by socketTimeoutMS.
        let options = match mode {
            MonitoringThreads::SingleThreaded => format!("{TIMEOUTS}&socketTimeoutMS=200"),
            _ => TIMEOUTS.to_owned(),
        };
        let client = client(&server, &options, mode);
        let (error, took) = failed_ping(&client).await;
        let bounded = match (mode, &*error.kind) {
            (MonitoringThreads::SingleThreaded, ErrorKind::Io(_)) => error
                .network_timeout()
                .is_some_and(|timeout| timeout.during == "reading a reply"),
            (_, ErrorKind::Io(_)) => error
                .network_timeout()
                .is_some_and(|timeout| timeout.during == "connect"),
            (_, ErrorKind::ConnectionPoolCleared { message, .. }) => {
                message.contains("server monitor timeout")
            }
            _ => false,
        };
        assert!(bounded, "{mode:?}: {error:?}");
        assert!(took < Duration::from_secs(3), "{mode:?}: {took:?}");
    }
}

#[tokio::test]
async fn a_server_silent_after_the_handshake_interrupts_the_operation_at_the_monitors_timeout() {
    // Case (c): every connection (the monitor's too) gets its handshake answered, then
    // nothing. The monitor's next check times out after connectTimeoutMS, which clears
    // the pool and interrupts the ping (server-monitoring.md, "Network or command error
    // during server check").
    let server = MockServer::answering(|command, carried| match carried {
        0 if is_hello(command) => Answer::Reply(standalone_hello()),
        _ => Answer::Silence,
    })
    .await;
    let client = client(&server, TIMEOUTS, MonitoringThreads::Background);
    let (error, took) = failed_ping(&client).await;
    assert!(
        matches!(&*error.kind, ErrorKind::ConnectionPoolCleared { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("interrupted due to server monitor timeout"),
        "{error}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn a_server_that_answers_monitors_but_not_the_operation_is_bounded_by_socket_timeout() {
    // Case (b): a live server (its monitors get answers) that never answers one
    // operation. Without socketTimeoutMS the driver waits, as the official drivers do;
    // with it, each read is bounded.
    let server = MockServer::answering(|command, _| match is_hello(command) {
        true => Answer::Reply(standalone_hello()),
        false => Answer::Silence,
    })
    .await;
    for mode in MODES {
        let bounded = client(&server, &format!("{TIMEOUTS}&socketTimeoutMS=300"), mode);
        let (error, took) = failed_ping(&bounded).await;
        assert!(
            error
                .network_timeout()
                .is_some_and(|timeout| timeout.during == "reading a reply"),
            "{mode:?}: {error}"
        );
        assert!(took < Duration::from_secs(3), "{mode:?}: {took:?}");

        // Without socketTimeoutMS, the ping outlives several heartbeats (the monitors
        // keep succeeding) and is still waiting when given up on.
        let unbounded = client(&server, TIMEOUTS, mode);
        let database = unbounded.database("x");
        let ping = database.run_command(doc! { "ping": 1 });
        let waited = tokio::time::timeout(Duration::from_millis(1500), ping).await;
        assert!(waited.is_err(), "{mode:?}: {waited:?}");
    }
}

#[tokio::test]
async fn a_more_to_come_reply_to_an_ordinary_command_closes_its_connection() {
    // The first ping is answered with the moreToCome flag, which only a request flagged
    // exhaustAllowed may receive (OP_MSG spec, "exhaustAllowed"); every other command
    // is answered as usual.
    let flagged = AtomicBool::new(false);
    let server = MockServer::answering(move |command, _| {
        if is_hello(command) {
            return Answer::Reply(standalone_hello());
        }
        let reply = RawDocumentBuf::try_from(&doc! { "ok": 1 }).unwrap();
        match flagged.swap(true, Ordering::SeqCst) {
            false => {
                let mut reply = OpMsg::new(reply);
                reply.flags = MsgFlags::MORE_TO_COME;
                // The mock sets `responseTo`.
                Answer::Raw(reply.encode(1, 0))
            }
            true => Answer::Reply(doc! { "ok": 1 }),
        }
    })
    .await;
    let events = PoolEvents::default();
    let uri = format!("mongodb://{}/?{TIMEOUTS}", server.address());
    let options = ClientOptions::parse_uri(&uri).unwrap();
    let client = Client::with_options(events.record(options)).unwrap();

    let (error, _) = failed_ping(&client).await;
    assert!(
        matches!(
            &*error.kind,
            ErrorKind::InvalidResponse {
                error: WireError::UnexpectedMoreToCome,
                ..
            }
        ),
        "{error}"
    );
    // The connection was closed, not checked back in with a reply still coming.
    let closed = closed_connections(&events.lock());
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert_eq!(closed[0].1, ConnectionClosedReason::Error, "{closed:?}");
    // The next operation runs on a new connection, and succeeds.
    within(BOUND, client.database("x").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    assert_eq!(created_connections(&events.lock()), 2);
}

/// A mock standalone server of wire version 25 (8.0, for `bulkWrite`) that takes one
/// write per command and answers every other command with `reply(command)`.
async fn one_write_per_command(reply: fn(&Document) -> Document) -> MockServer {
    MockServer::start(move |command| match is_hello(command) {
        true => {
            let mut hello = standalone_hello();
            hello.insert("maxWireVersion", 25);
            hello.insert("maxWriteBatchSize", 1);
            hello.insert("logicalSessionTimeoutMinutes", 30);
            hello
        }
        false => reply(command),
    })
    .await
}

#[tokio::test]
async fn a_huge_logical_session_timeout_is_no_overflow() {
    // `minutes * 60` overflowed at the end of the first operation, when its implicit
    // session went back to the pool.
    let server = MockServer::start(|command| match is_hello(command) {
        true => {
            let mut hello = standalone_hello();
            hello.insert("logicalSessionTimeoutMinutes", i64::MAX);
            hello
        }
        false => doc! { "ok": 1 },
    })
    .await;
    let client = client(&server, TIMEOUTS, MonitoringThreads::Background);
    for _ in 0..2 {
        within(BOUND, client.database("x").run_command(doc! { "ping": 1 }))
            .await
            .unwrap();
    }
    // The pings carried a session.
    let pings = server
        .received()
        .into_iter()
        .filter(|command| !is_hello(command));
    assert!(pings.into_iter().all(|ping| ping.contains_key("lsid")));
}

/// The error of a bulk write whose replies' counts add up past `u64::MAX`: as it is,
/// or a client bulk write's top-level error (Bulk Write spec, "Top-Level Errors": the
/// writes that succeeded are its partial result).
fn assert_misbehaving(result: anymongo::Result<impl std::fmt::Debug>, server: &MockServer) {
    let mut error = result.unwrap_err();
    if let ErrorKind::BulkWrite(failure) = &*error.kind {
        error = *failure.error.clone().expect("a top-level error");
    }
    assert!(
        matches!(&*error.kind, ErrorKind::MisbehavingServer { address, .. }
            if *address == server.address()),
        "{error}"
    );
}

#[tokio::test]
async fn write_counts_adding_up_past_u64_max_are_a_misbehaving_server() {
    // Each of three commands says it wrote i64::MAX documents.
    let server = one_write_per_command(|command| match command.keys().next().map(String::as_str) {
        Some("bulkWrite") => doc! {
            "ok": 1, "nErrors": 0, "nInserted": i64::MAX, "nUpserted": 0, "nMatched": 0,
            "nModified": 0, "nDeleted": 0,
            "cursor": { "id": 0_i64, "firstBatch": [], "ns": "admin.$cmd.bulkWrite" },
        },
        _ => doc! { "ok": 1, "n": i64::MAX, "nModified": i64::MAX },
    })
    .await;
    let client = client(&server, TIMEOUTS, MonitoringThreads::Background);
    let collection = client.database("x").collection::<Document>("y");
    let documents = [doc! { "_id": 1 }, doc! { "_id": 2 }, doc! { "_id": 3 }];
    assert_misbehaving(
        within(BOUND, collection.insert_many(&documents)).await,
        &server,
    );
    let updates = (0..3).map(|i| {
        WriteModel::UpdateMany(UpdateManyModel::new(
            doc! { "_id": i },
            doc! { "$set": { "x": 1 } },
        ))
    });
    assert_misbehaving(within(BOUND, collection.bulk_write(updates)).await, &server);
    let models = documents
        .iter()
        .map(|document| on("x.y", InsertOneModel::new(document.clone())));
    assert_misbehaving(within(BOUND, client.bulk_write(models)).await, &server);
    let names = server.command_names();
    let count = |name: &str| names.iter().filter(|n| *n == name).count();
    assert_eq!(
        (count("insert"), count("update"), count("bulkWrite")),
        (3, 3, 3)
    );
}

/// `model` on `namespace` ("db.coll"), for a client bulk write.
fn on(namespace: impl AsRef<str>, model: impl Into<WriteModel>) -> WriteModel {
    model
        .into()
        .with_namespace(namespace.as_ref().parse().unwrap())
}
