//! Differences from the official `mongodb` crate's 3.x API that were closed: code
//! written from its documentation, with only `mongodb` replaced by `anymongo`,
//! compiles (the annotations name the official types) and behaves as documented
//! against the tests' SecantusDB.

use std::future::IntoFuture;
use std::io;
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::error::ErrorKind;
use anymongo::event::cmap::CmapEvent;
use anymongo::event::command::CommandEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::options::ClientOptions;
use anymongo::{Client, ClientSession, ClusterTime};
use anymongo_tests::mock::{is_hello, standalone_hello, Answer, MockServer};
use anymongo_tests::{harness, server};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// `ClientSession::cluster_time(&self) -> Option<&ClusterTime>`: a borrow, which stays
/// as it was while the session's cluster time advances.
#[tokio::test]
async fn a_session_lends_its_cluster_time() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let coll = client
            .database("official_differences")
            .collection::<Document>("cluster_time");
        let mut session: ClientSession = client.start_session().await?;
        assert!(session.cluster_time().is_none());
        coll.insert_one(doc! { "x": 1 })
            .session(&mut session)
            .await?;
        let first: Option<&ClusterTime> = session.cluster_time();
        let first = first.expect("a replica set gossips the cluster time");
        let kept = first.clone();
        // Another operation of the session (a shared borrow, an addition) advances its
        // cluster time while `first` is borrowed: `first` does not change.
        coll.insert_one(doc! { "x": 2 }).session(&session).await?;
        let second = session.cluster_time().expect("still there");
        assert_eq!(*first, kept);
        assert!(second.timestamp() >= first.timestamp());
        // The official way to carry it over: `advance_cluster_time(&ClusterTime)`.
        // `mut` as the official `advance_cluster_time(&mut self, …)` needs; anymongo's
        // takes `&self`.
        #[allow(unused_mut)]
        let mut other = client.start_session().await?;
        other.advance_cluster_time(second);
        assert_eq!(other.cluster_time(), Some(second));
        // A mutable borrow again (every operation given `&mut session`).
        let latest = session.cluster_time().cloned();
        coll.find_one(doc! {}).session(&mut session).await?;
        assert!(
            session.cluster_time().map(ClusterTime::timestamp) >= latest.map(|t| t.timestamp())
        );
        Ok(())
    })
    .await
}

/// A socket timeout is `ErrorKind::Io` of kind `TimedOut`, as the official crate
/// reports it, and the driver's own `is_network_timeout`, `network_timeout` say what
/// timed out; the operation's `timeoutMS` is `OperationTimeout` instead.
#[tokio::test]
async fn a_socket_timeout_is_an_io_error_of_kind_timed_out() -> anymongo::error::Result<()> {
    // Answers the handshakes and monitors, never the operation.
    let server = MockServer::answering(|command, _| match is_hello(command) {
        true => Answer::Reply(standalone_hello()),
        false => Answer::Silence,
    })
    .await;
    harness::within(TEST_BOUND, async {
        let uri = format!(
            "mongodb://{}/?directConnection=true&socketTimeoutMS=300",
            server.address()
        );
        let client = Client::with_uri_str(&uri).await?;
        let error = client
            .database("x")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap_err();
        // As the official crate's users match it.
        match *error.kind {
            ErrorKind::Io(ref io) if io.kind() == io::ErrorKind::TimedOut => {}
            ref other => panic!("expected an I/O timeout, got {other:?}: {error}"),
        }
        assert!(error.is_network_error() && error.is_network_timeout());
        let timeout = error.network_timeout().expect("the driver's own bound");
        assert_eq!(timeout.during, "reading a reply");
        assert_eq!(timeout.after, Duration::from_millis(300));
        assert_eq!(error.server_address(), Some(server.address()));

        // timeoutMS passing is told apart: another kind, with the socket's error inside.
        let error = client
            .database("x")
            .run_command(doc! { "ping": 1 })
            .timeout(Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(error.is_operation_timeout(), "{error}");
        assert!(!matches!(*error.kind, ErrorKind::Io(_)), "{error}");
        Ok(())
    })
    .await
}

/// A TLS handshake that fails is `ErrorKind::Io`, as in the official crate (kind
/// `InvalidData` for what TLS refused, `UnexpectedEof` for a server that hung up):
/// what a monitor's check met, as `ServerInfo::error()` gives it in an SDAM event.
#[tokio::test]
async fn a_failed_tls_handshake_is_an_io_error() -> anymongo::error::Result<()> {
    for (answer, kind) in [
        (
            &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..],
            io::ErrorKind::InvalidData,
        ),
        (&b""[..], io::ErrorKind::UnexpectedEof),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                use tokio::io::AsyncWriteExt;
                let _ = socket.write_all(answer).await;
                // Dropped: closed after the answer.
            }
        });
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut options = ClientOptions::parse(format!(
            "mongodb://{address}/?tls=true&directConnection=true&serverSelectionTimeoutMS=2000"
        ))
        .await?;
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            if let SdamEvent::ServerDescriptionChanged(event) = event {
                if let Some(error) = event.new_description.error() {
                    let _ = sender.send(error.clone());
                }
            }
        }));
        let client = Client::with_options(options)?;
        let error = harness::within(TEST_BOUND, receiver.recv())
            .await
            .expect("the monitor's check fails");
        match *error.kind {
            ErrorKind::Io(ref io) => assert_eq!(io.kind(), kind, "{error}"),
            ref other => panic!("expected an I/O error, got {other:?}: {error}"),
        }
        // Only what TLS refused is a TLS error; a hang-up is a network error.
        assert_eq!(
            error.is_tls_error(),
            kind == io::ErrorKind::InvalidData,
            "{error}"
        );
        assert_eq!(error.is_network_error(), kind != io::ErrorKind::InvalidData);
        client.shutdown().immediate(true).await;
        server.abort();
    }
    Ok(())
}

/// `Error::server_response()` (the reply as raw BSON), `base_backoff()`, `labels()`,
/// `contains_label` and `ErrorKind::Command` as the official crate has them.
#[tokio::test]
async fn a_command_error_gives_the_servers_response() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let error = client
            .database("official_differences")
            .run_command(doc! { "anymongoNoSuchCommand": 1 })
            .await
            .unwrap_err();
        let code = match *error.kind {
            ErrorKind::Command(ref command) => command.code,
            ref other => panic!("expected a command error, got {other:?}"),
        };
        let response: &anymongo::bson::RawDocumentBuf =
            error.server_response().expect("the server's reply");
        assert_eq!(response.get_i32("code").ok(), Some(code));
        assert!(error.base_backoff().is_none());
        assert!(!error.contains_label("TransientTransactionError"));
        assert!(error.labels().is_empty());
        Ok(())
    })
    .await
}

/// `EventHandler::TokioMpsc` and `From<tokio::sync::mpsc::Sender<T>>`, as in the
/// official crate: the events arrive on the channel, in order while it has room, and
/// all of them once it had none.
#[tokio::test]
async fn events_go_to_a_tokio_channel() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<CommandEvent>(100);
        let (full_sender, mut full_receiver) = tokio::sync::mpsc::channel::<CmapEvent>(1);
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        options.command_event_handler = Some(EventHandler::TokioMpsc(sender));
        options.cmap_event_handler = Some(full_sender.into());
        let client = Client::with_options(options)?;
        let coll = client
            .database("official_differences")
            .collection::<Document>("events");
        coll.insert_one(doc! { "x": 1 }).await?;
        coll.find_one(doc! { "x": 1 }).await?;
        let mut names = Vec::new();
        while names.len() < 4 {
            match receiver.recv().await.expect("the client holds the sender") {
                CommandEvent::Started(started) => names.push(started.command_name),
                CommandEvent::Succeeded(succeeded) => names.push(succeeded.command_name),
                CommandEvent::Failed(failed) => panic!("{failed:?}"),
                _ => {}
            }
        }
        assert_eq!(names, ["insert", "insert", "find", "find"]);
        // A channel of one: the events that found it full come later, none lost.
        let mut created = false;
        let mut checked_out = 0;
        while !(created && checked_out >= 2) {
            match full_receiver
                .recv()
                .await
                .expect("the client holds the sender")
            {
                CmapEvent::ConnectionCreated(_) => created = true,
                CmapEvent::ConnectionCheckedOut(_) => checked_out += 1,
                _ => {}
            }
        }
        Ok(())
    })
    .await
}

/// `Client::shutdown()` waits, as the official crate's, until the application's
/// sessions and open cursors are dropped (a cursor dropped unexhausted: until its
/// killCursors is done); `immediate(true)` does not wait.
#[tokio::test]
async fn shutdown_waits_for_live_sessions_and_cursors() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let setup = Client::with_uri_str(server::shared().uri()).await?;
        let coll = setup
            .database("official_differences")
            .collection::<Document>("shutdown");
        coll.drop().await?;
        coll.insert_many((0..10).map(|i| doc! { "i": i })).await?;

        let (sender, mut receiver) = tokio::sync::mpsc::channel::<CommandEvent>(100);
        let mut options = ClientOptions::parse(server::shared().uri()).await?;
        options.command_event_handler = Some(sender.into());
        let client = Client::with_options(options)?;
        let coll = client
            .database("official_differences")
            .collection::<Document>("shutdown");
        let session = client.start_session().await?;
        let cursor = coll.find(doc! {}).batch_size(2).await?;
        assert_ne!(cursor.id(), 0, "the cursor stays open on the server");

        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let holder = tokio::spawn(async move {
            let _ = released.await;
            drop(cursor);
            drop(session);
        });
        let mut shutdown = std::pin::pin!(client.clone().shutdown().into_future());
        // Still waiting while the handles live: nothing else can end it.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), shutdown.as_mut())
                .await
                .is_err(),
            "shutdown returned with a session and a cursor alive"
        );
        release.send(()).unwrap();
        shutdown.await;
        holder.await.unwrap();
        // The cursor was killed and the session ended before the client closed.
        let mut names = Vec::new();
        while let Ok(event) = receiver.try_recv() {
            if let CommandEvent::Started(started) = event {
                names.push(started.command_name);
            }
        }
        let kill = names.iter().position(|name| name == "killCursors");
        let end = names.iter().position(|name| name == "endSessions");
        assert!(kill.is_some() && end.is_some() && kill < end, "{names:?}");
        assert!(client.list_database_names().await.is_err(), "shut down");

        // `immediate(true)` returns with a session alive.
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let held = client.start_session().await?;
        client.clone().shutdown().immediate(true).await;
        drop(held);
        Ok(())
    })
    .await
}
