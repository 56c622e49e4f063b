//! The URI Options spec's TLS options against SecantusDB serving flawed certificates:
//! each flaw fails the handshake with a certificate error, and passes only with the
//! option that allows it (`tlsAllowInvalidCertificates` for an untrusted or expired
//! certificate, `tlsAllowInvalidHostnames` for another host's, `tlsInsecure` for all);
//! and an encrypted client key (`tlsCertificateKeyFilePassword`). And TLS session
//! resumption: a client's later connections resume its session, another client's do
//! not.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::bson::doc;
use anymongo::ErrorKind;
use anymongo_tests::certs::{self, KEY_PASSWORD};
use anymongo_tests::harness::within;
use anymongo_tests::server::TestServer;

const BOUND: Duration = Duration::from_secs(60);

/// Pings through `uri` (given its query, bounded waits added): `Err` with the message
/// of the server selection error otherwise.
async fn ping(uri: &str) -> Result<(), String> {
    let uri = format!("{uri}&serverSelectionTimeoutMS=1500&connectTimeoutMS=3000");
    let client = anymongo_native::client(&uri).map_err(|error| error.to_string())?;
    match client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
    {
        Ok(_) => Ok(()),
        Err(error) => match error.kind() {
            ErrorKind::ServerSelection { message } => Err(message.clone()),
            _ => panic!("expected a server selection error, got {error}"),
        },
    }
}

/// Asserts that `uri` fails with a TLS error whose message holds `reason`.
async fn fails_with(uri: &str, reason: &str) {
    let message = ping(uri).await.expect_err(uri);
    assert!(
        message.contains("TLS handshake") && message.contains(reason),
        "expected a TLS failure with '{reason}', got: {message}"
    );
}

/// Checks each option against the server on `port` whose certificate, as `ca_pem`
/// sees it, has one flaw: without options the handshake fails with `reason`;
/// `tlsAllowInvalidHostnames` lets it through only when the flaw is the host name
/// (`name_only`); `tlsAllowInvalidCertificates` and `tlsInsecure` always do.
async fn check_options(port: u16, ca_pem: &Path, reason: &str, name_only: bool) {
    let uri = format!(
        "mongodb://localhost:{port}/?tls=true&directConnection=true&tlsCAFile={}",
        ca_pem.display()
    );
    fails_with(&uri, reason).await;
    let allow_hostnames = format!("{uri}&tlsAllowInvalidHostnames=true");
    match name_only {
        true => ping(&allow_hostnames).await.unwrap(),
        false => fails_with(&allow_hostnames, reason).await,
    }
    // An unchecked certificate has no name to check either.
    ping(&format!("{uri}&tlsAllowInvalidCertificates=true"))
        .await
        .unwrap();
    ping(&format!("{uri}&tlsInsecure=true")).await.unwrap();
}

#[tokio::test]
async fn an_untrusted_certificate_passes_only_with_allow_invalid_certificates() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(false)).unwrap();
        check_options(server.port, &certs.untrusted_ca_pem, "UnknownIssuer", false).await;
    })
    .await;
}

#[tokio::test]
async fn another_hosts_certificate_passes_only_with_allow_invalid_hostnames() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate_flawed(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(&certs.wrong_host_cert)).unwrap();
        check_options(server.port, &certs.ca_pem, "not valid for name", true).await;
    })
    .await;
}

#[tokio::test]
async fn an_expired_certificate_passes_only_with_allow_invalid_certificates() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate_flawed(dir.path()).unwrap();
        let server = TestServer::start(&certs.server_options(&certs.expired_cert)).unwrap();
        check_options(server.port, &certs.ca_pem, "expired", false).await;
    })
    .await;
}

#[tokio::test]
async fn an_encrypted_client_key_works_with_its_password_only() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        // The server demands a client certificate signed by the CA.
        let server = TestServer::start(&certs.server_options(true)).unwrap();
        let uri = format!(
            "{}&directConnection=true&tlsCertificateKeyFile={}",
            server.uri(),
            certs.client_cert_and_encrypted_key.display()
        );
        ping(&format!(
            "{uri}&tlsCertificateKeyFilePassword={KEY_PASSWORD}"
        ))
        .await
        .unwrap();
        // The revocation options are accepted (rustls checks no revocation anyway).
        for option in [
            "tlsDisableOCSPEndpointCheck",
            "tlsDisableCertificateRevocationCheck",
        ] {
            ping(&format!(
                "{uri}&tlsCertificateKeyFilePassword={KEY_PASSWORD}&{option}=true"
            ))
            .await
            .unwrap();
        }
        fails_with(&uri, "the private key is encrypted; give its password").await;
        fails_with(
            &format!("{uri}&tlsCertificateKeyFilePassword=wrong"),
            "wrong tlsCertificateKeyFilePassword",
        )
        .await;
    })
    .await;
}

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

/// One rustls configuration per client, shared by its connections (issue 24: the TLS
/// handshake of a cold request's second connection is a resumption, one round trip
/// shorter in TLS 1.2 and without the certificate exchange in TLS 1.3): a client's
/// first connection (its monitor's) makes a full handshake, and its application
/// connection resumes that session; a second client resumes nothing of the first's.
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
            let client_handle = anymongo_native::client(&uri).unwrap();
            client_handle
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .await
                .unwrap();
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
