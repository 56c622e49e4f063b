//! TLS session resumption (issue 24): a client's later connections resume its session,
//! another client's do not.
//!
//! The test watches the driver's `anymongo::tls` log through a thread-local `tracing`
//! subscriber, so it lives alone in its test binary: `tracing` caches each log
//! callsite's interest when the callsite is first hit, and a test on another thread
//! hitting the same callsite while this one installs its subscriber can cache
//! "never" for it (which CI once saw as no handshake logged at all).

use std::future::IntoFuture;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::bson::doc;
use anymongo_tests::certs;
use anymongo_tests::harness::within;
use anymongo_tests::server::TestServer;

const BOUND: Duration = Duration::from_secs(60);

/// The kinds of the TLS handshakes the driver logs (`handshake`, target
/// `anymongo::tls`, as `Full` or `Resumed`), in order: the `tracing` subscriber of the
/// test's thread, which a current-thread tokio test shares with the client's tasks.
#[derive(Clone, Default)]
struct Handshakes(Arc<Mutex<Vec<String>>>);

impl Handshakes {
    /// The handshakes logged since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl tracing::field::Visit for Handshakes {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "handshake" {
            let kind = format!("{value:?}");
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(kind);
        }
    }
}

impl tracing::Subscriber for Handshakes {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "anymongo::tls"
    }

    fn new_span(&self, _span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _span: &tracing::span::Id, _values: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _span: &tracing::span::Id, _follows: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        event.record(&mut self.clone());
    }

    fn enter(&self, _span: &tracing::span::Id) {}

    fn exit(&self, _span: &tracing::span::Id) {}
}

/// One rustls configuration per client, shared by its connections (issue 24: a
/// resumed TLS handshake is one round trip shorter in TLS 1.2 and has no certificate
/// exchange in TLS 1.3): a client's first connections (its first operation's and its
/// monitor's, opened together) make full handshakes, and the connections it opens
/// after them resume; a second client resumes nothing of the first's.
#[tokio::test]
async fn a_clients_later_connections_resume_its_tls_session_but_not_another_clients() {
    let handshakes = Handshakes::default();
    let _subscriber = tracing::subscriber::set_default(handshakes.clone());
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(false)).unwrap();
        // Polling: no RTT monitor opens a connection of its own.
        let uri = format!(
            "{}&directConnection=true&serverMonitoringMode=poll",
            server.uri()
        );
        for client in ["first", "second"] {
            let client_handle = anymongo::Client::with_uri_str(&uri).await.unwrap();
            let admin = client_handle.database("admin");
            admin.run_command(doc! { "ping": 1 }).await.unwrap();
            // Pings at once: the pool opens more connections, after the first ones.
            let pings = (0..3).map(|_| admin.run_command(doc! { "ping": 1 }).into_future());
            for ping in futures::future::join_all(pings).await {
                ping.unwrap();
            }
            let kinds = handshakes.take();
            assert_eq!(
                kinds.first().map(String::as_str),
                Some("Full"),
                "the {client} client's first handshake: {kinds:?}"
            );
            assert!(
                kinds[1..].iter().any(|kind| kind == "Resumed"),
                "the {client} client's later connections resume: {kinds:?}"
            );
            drop(client_handle);
        }
    })
    .await;
}
