//! The URI Options spec's TLS options against SecantusDB serving flawed certificates:
//! each flaw fails the handshake with a certificate error, and passes only with the
//! option that allows it (`tlsAllowInvalidCertificates` for an untrusted or expired
//! certificate, `tlsAllowInvalidHostnames` for another host's, `tlsInsecure` for all);
//! and an encrypted client key (`tlsCertificateKeyFilePassword`).

use std::path::Path;
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
    let client = anymongo::Client::with_uri_str(&uri)
        .await
        .map_err(|error| error.to_string())?;
    match client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
    {
        Ok(_) => Ok(()),
        Err(error) => match &*error.kind {
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
