//! The OCSP Support spec's test matrix (`ocsp-support/tests/README.md`), natively:
//! SecantusDB behind a TLS front that staples the OCSP response each test signs
//! (`anymongo_tests::ocsp`), with ECDSA and RSA certificates (the matrix's rows; the
//! other checks with ECDSA), and responses signed by the issuing CA or by a delegated
//! responder. Each test pings with the row's URI options; a failure must be a TLS
//! error saying why. And `tlsCRLFile`.
//!
//! The matrix's columns, and where each is:
//!
//! - Test 1 (valid certificate, server staples): [`test_1_valid_staple`].
//! - Test 2 (revoked, staples): [`test_2_revoked_staple`].
//! - Test 3 (valid, no staple) and the Soft Fail Test (no staple, the responder the
//!   certificate names unreachable): [`test_3_and_soft_fail_no_staple`]; a responder
//!   that stays silent, or answers an error status:
//!   [`soft_fail_a_silent_or_failing_responder_connects_in_bounded_time`].
//! - Test 4 (revoked, no staple): the built-in transport asks the responder the
//!   certificate names (a scripted HTTP server on loopback) after the handshake with
//!   the driver's HTTP client: [`test_4_the_responder_says_revoked`]; a good answer is
//!   cached for the client: [`a_good_answer_from_the_responder_is_cached_for_the_client`].
//!   The same through the `anymongo::tls::ocsp::OcspResponder` seam with a scripted
//!   responder, over `anymongo::tls::secure`:
//!   [`test_4_and_soft_fail_through_the_responder_seam`].
//! - Malicious Server Tests 1 and 2 (Must-Staple certificate, no staple; revoked or no
//!   responder): [`malicious_server_must_staple_without_staple`] — identical for a
//!   driver that checks Must-Staple itself, as the spec notes.
//! - `tlsCRLFile`: [`a_crl_file_refuses_the_certificates_it_revokes`], and over the
//!   chain (step 5): [`a_crl_file_revoking_the_intermediate_refuses_its_certificates`].
//! - Under wasip2, every row above (Test 3 with a responder saying good, the Soft Fail
//!   Test with none listening): `wasi_build_runs_the_ocsp_matrix_and_checks_crl_files`
//!   in `tests/wasi.rs`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anymongo::bson::doc;
use anymongo::rt::{boxed, BoxFuture, ConnectTarget, TlsOptions, Transport};
use anymongo::tls::ocsp::{OcspResponder, RESPONDER_TIMEOUT};
use anymongo::tls::ClientConfigs;
use anymongo::{ClientOptions, ErrorKind};
use anymongo_native::TokioTransport;
use anymongo_tests::harness::within;
use anymongo_tests::http_mock::{HttpReply, MockHttp};
use anymongo_tests::ocsp::{
    CertStatus, KeyKind, OcspPki, ServerCert, Signer, TlsFront, RESPONDER_URL, VALID_FROM,
    VALID_UNTIL,
};
use anymongo_tests::pool_events::{created_connections, PoolEvents};
use anymongo_tests::server;

const BOUND: Duration = Duration::from_secs(60);

/// The options of the matrix's rows that relax TLS: OCSP is off with them.
const RELAXED: [&str; 2] = ["tlsInsecure=true", "tlsAllowInvalidCertificates=true"];

/// A front presenting `cert` and stapling `staple` before the shared server.
async fn front(cert: &ServerCert, staple: Vec<u8>) -> TlsFront {
    let backend = SocketAddr::from((Ipv4Addr::LOCALHOST, server::shared().port));
    TlsFront::start(cert, staple, backend).await
}

/// Pings through `front` with the URI options `options` (bounded waits added): `Err`
/// with the server selection error's message otherwise.
async fn ping(front: &TlsFront, ca: &Path, options: &str) -> Result<(), String> {
    let options = format!("{options}&serverSelectionTimeoutMS=1500&connectTimeoutMS=3000");
    let client = client(front, ca, &options).await;
    ping_with(&client).await
}

/// A client of `front` with the URI options `options`.
async fn client(front: &TlsFront, ca: &Path, options: &str) -> anymongo::Client {
    let uri = format!(
        "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}&{options}",
        front.port,
        ca.display()
    );
    anymongo::Client::with_uri_str(&uri).await.unwrap()
}

/// Pings with `client`: `Err` with the server selection error's message otherwise.
async fn ping_with(client: &anymongo::Client) -> Result<(), String> {
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

/// Asserts that pinging fails with a TLS error whose message holds `reason`.
async fn fails_with(front: &TlsFront, ca: &Path, options: &str, reason: &str) {
    let message = ping(front, ca, options).await.expect_err(options);
    assert!(
        message.contains("TLS handshake") && message.contains(reason),
        "expected a TLS failure with '{reason}', got: {message}"
    );
}

/// The row `tls=true` gives `strict`; the relaxed rows always connect.
async fn check_matrix(front: &TlsFront, ca: &Path, strict: Result<(), &str>) {
    match strict {
        Ok(()) => ping(front, ca, "").await.unwrap(),
        Err(reason) => fails_with(front, ca, "", reason).await,
    }
    for relaxed in RELAXED {
        ping(front, ca, relaxed).await.unwrap();
    }
}

/// The matrix's kinds of certificates.
const BOTH: &[KeyKind] = &[KeyKind::Ecdsa, KeyKind::Rsa];

/// Runs `test` with a fresh PKI in a temporary folder, of each kind of `keys` in turn.
async fn with_pki<F: std::future::Future<Output = ()>>(
    keys: &[KeyKind],
    test: impl Fn(OcspPki) -> F,
) {
    within(BOUND, async {
        for &keys in keys {
            let dir = tempfile::tempdir().unwrap();
            test(OcspPki::generate_with(dir.path(), RESPONDER_URL, keys).unwrap()).await;
        }
    })
    .await;
}

#[tokio::test]
async fn test_1_valid_staple() {
    with_pki(BOTH, |pki| async move {
        for signer in [Signer::Issuer, Signer::Delegate] {
            let staple = pki.response(
                &pki.plain,
                CertStatus::Good,
                signer,
                VALID_FROM,
                Some(VALID_UNTIL),
            );
            let front = front(&pki.plain, staple).await;
            check_matrix(&front, &pki.ca_pem, Ok(())).await;
        }
        // A good staple satisfies Must-Staple.
        let staple = pki.response(
            &pki.must_staple,
            CertStatus::Good,
            Signer::Issuer,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let front = front(&pki.must_staple, staple).await;
        check_matrix(&front, &pki.ca_pem, Ok(())).await;
    })
    .await;
}

#[tokio::test]
async fn test_2_revoked_staple() {
    with_pki(BOTH, |pki| async move {
        for signer in [Signer::Issuer, Signer::Delegate] {
            let staple = pki.response(
                &pki.plain,
                CertStatus::Revoked,
                signer,
                VALID_FROM,
                Some(VALID_UNTIL),
            );
            let front = front(&pki.plain, staple).await;
            check_matrix(&front, &pki.ca_pem, Err("certificate is revoked")).await;
            // The URI Options spec's tlsDisableCertificateRevocationCheck turns it off.
            ping(
                &front,
                &pki.ca_pem,
                "tlsDisableCertificateRevocationCheck=true",
            )
            .await
            .unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn test_3_and_soft_fail_no_staple() {
    with_pki(BOTH, |pki| async move {
        let front = front(&pki.plain, Vec::new()).await;
        check_matrix(&front, &pki.ca_pem, Ok(())).await;
    })
    .await;
}

#[tokio::test]
async fn malicious_server_must_staple_without_staple() {
    with_pki(BOTH, |pki| async move {
        let front = front(&pki.must_staple, Vec::new()).await;
        check_matrix(&front, &pki.ca_pem, Err("Must-Staple")).await;
        ping(
            &front,
            &pki.ca_pem,
            "tlsDisableCertificateRevocationCheck=true",
        )
        .await
        .unwrap();
    })
    .await;
}

/// RFC 6960 3.2, as the spec's "Suggested OCSP Behavior" step 2 asks: a staple that is
/// invalid or about another certificate ends the connection; `unknown` is no answer.
#[tokio::test]
async fn an_invalid_staple_ends_the_connection_and_an_unknown_one_is_no_answer() {
    with_pki(&[KeyKind::Ecdsa], |pki| async move {
        let invalid = [
            (
                pki.response(
                    &pki.plain,
                    CertStatus::Good,
                    Signer::Stranger,
                    VALID_FROM,
                    Some(VALID_UNTIL),
                ),
                "neither the issuer nor a responder",
            ),
            (
                pki.response(
                    &pki.plain,
                    CertStatus::Good,
                    Signer::DelegateWithoutOcspSigning,
                    VALID_FROM,
                    Some(VALID_UNTIL),
                ),
                "not for OCSP signing",
            ),
            (
                pki.response(
                    &pki.plain,
                    CertStatus::Good,
                    Signer::Issuer,
                    VALID_FROM,
                    Some("20210101000000Z"),
                ),
                "expired",
            ),
            (
                pki.response(
                    &pki.plain,
                    CertStatus::Good,
                    Signer::Issuer,
                    "20990101000000Z",
                    None,
                ),
                "thisUpdate is in the future",
            ),
            (
                pki.response(
                    &pki.must_staple,
                    CertStatus::Good,
                    Signer::Issuer,
                    VALID_FROM,
                    Some(VALID_UNTIL),
                ),
                "not about the server's certificate",
            ),
            (b"\x30\x03\x0a\x01\x03".to_vec(), "tryLater"),
        ];
        for (staple, reason) in invalid {
            let front = front(&pki.plain, staple).await;
            fails_with(&front, &pki.ca_pem, "", reason).await;
            for relaxed in RELAXED {
                ping(&front, &pki.ca_pem, relaxed).await.unwrap();
            }
        }
        let unknown = pki.response(
            &pki.plain,
            CertStatus::Unknown,
            Signer::Issuer,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let front = front(&pki.plain, unknown).await;
        ping(&front, &pki.ca_pem, "").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_crl_file_refuses_the_certificates_it_revokes() {
    with_pki(&[KeyKind::Ecdsa], |pki| async move {
        let front = front(&pki.plain, Vec::new()).await;
        let revoking = format!("tlsCRLFile={}", pki.crl_revoking_plain.display());
        fails_with(
            &front,
            &pki.ca_pem,
            &revoking,
            "revoked (listed in the tlsCRLFile)",
        )
        .await;
        for relaxed in RELAXED
            .into_iter()
            .chain(["tlsDisableCertificateRevocationCheck=true"])
        {
            ping(&front, &pki.ca_pem, &format!("{revoking}&{relaxed}"))
                .await
                .unwrap();
        }
        let other = format!("tlsCRLFile={}", pki.crl_revoking_nothing.display());
        ping(&front, &pki.ca_pem, &other).await.unwrap();
        let missing = format!(
            "tlsCRLFile={}",
            pki.ca_pem.with_extension("missing").display()
        );
        let message = ping(&front, &pki.ca_pem, &missing).await.unwrap_err();
        assert!(message.contains("tlsCRLFile"), "{message}");
    })
    .await;
}

/// `tlsCRLFile` covers the chain, as the spec's "Suggested OCSP Behavior" step 5 asks:
/// a CRL of the root revoking the intermediate CA that issued the server's certificate
/// refuses it.
#[tokio::test]
async fn a_crl_file_revoking_the_intermediate_refuses_its_certificates() {
    with_pki(&[KeyKind::Ecdsa], |pki| async move {
        let dir = tempfile::tempdir().unwrap();
        let (cert, revoking) = pki.behind_an_intermediate(dir.path()).unwrap();
        let front = front(&cert, Vec::new()).await;
        ping(&front, &pki.ca_pem, "").await.unwrap();
        let other = format!("tlsCRLFile={}", pki.crl_revoking_nothing.display());
        ping(&front, &pki.ca_pem, &other).await.unwrap();
        let revoking = format!("tlsCRLFile={}", revoking.display());
        fails_with(
            &front,
            &pki.ca_pem,
            &revoking,
            "revoked (listed in the tlsCRLFile)",
        )
        .await;
        let disabled = format!("{revoking}&tlsDisableCertificateRevocationCheck=true");
        ping(&front, &pki.ca_pem, &disabled).await.unwrap();
    })
    .await;
}

/// A scripted OCSP responder: answers `answer` (or is unreachable when `None`) and
/// records the URL and request of each query, and the timeout it was given.
struct ScriptedResponder {
    answer: Option<Vec<u8>>,
    asked: Mutex<Vec<(String, Vec<u8>)>>,
    timeouts: Mutex<Vec<Duration>>,
}

impl ScriptedResponder {
    fn new(answer: Option<Vec<u8>>) -> Arc<ScriptedResponder> {
        Arc::new(ScriptedResponder {
            answer,
            asked: Mutex::default(),
            timeouts: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<(String, Vec<u8>)> {
        self.asked.lock().unwrap().clone()
    }
}

impl OcspResponder for ScriptedResponder {
    fn post<'a>(
        &'a self,
        url: &'a str,
        request: &'a [u8],
        timeout: Duration,
    ) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        self.timeouts.lock().unwrap().push(timeout);
        self.asked
            .lock()
            .unwrap()
            .push((url.to_owned(), request.to_vec()));
        let answer = self.answer.clone();
        boxed(async move {
            answer.ok_or_else(|| io::Error::new(io::ErrorKind::ConnectionRefused, "down"))
        })
    }
}

/// Runs a TLS handshake with `front` as the native transport does, with `configs`.
async fn handshake(
    front: &TlsFront,
    ca: &Path,
    options: TlsOptions,
    configs: &ClientConfigs,
) -> io::Result<()> {
    handshake_within(front, ca, options, configs, None).await
}

/// [`handshake`] for a connection that has `time_left` to open.
async fn handshake_within(
    front: &TlsFront,
    ca: &Path,
    options: TlsOptions,
    configs: &ClientConfigs,
    time_left: Option<Duration>,
) -> io::Result<()> {
    let plain = ConnectTarget {
        host: "localhost".into(),
        port: front.port,
        tls: None,
        addresses: Vec::new(),
        time_left,
    };
    let stream = TokioTransport::default().connect(&plain).await?;
    let mut options = options;
    options.ca_file_path = Some(ca.to_owned());
    let target = ConnectTarget {
        tls: Some(options),
        ..plain
    };
    let read_file = |path: &Path| std::fs::read(path);
    anymongo::tls::secure(
        stream,
        &target,
        configs,
        read_file,
        anymongo_native::system_roots,
    )
    .await
    .map(drop)
}

#[tokio::test]
async fn test_4_and_soft_fail_through_the_responder_seam() {
    with_pki(BOTH, |pki| async move {
        let good = pki.response(
            &pki.plain,
            CertStatus::Good,
            Signer::Delegate,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let revoked = pki.response(
            &pki.plain,
            CertStatus::Revoked,
            Signer::Issuer,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let forged = pki.response(
            &pki.plain,
            CertStatus::Revoked,
            Signer::Stranger,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let unknown = pki.response(
            &pki.plain,
            CertStatus::Unknown,
            Signer::Issuer,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        let no_staple = front(&pki.plain, Vec::new()).await;
        let strict = TlsOptions::default();

        // Test 4: asked once, with the certificate's CertID (its serial, 0x1001).
        let responder = ScriptedResponder::new(Some(revoked.clone()));
        let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
        let error = handshake(&no_staple, &pki.ca_pem, strict.clone(), &configs)
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("revoked (its OCSP responder says so)"),
            "{error}"
        );
        let asked = responder.asked();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].0, RESPONDER_URL);
        assert!(
            asked[0].1.windows(4).any(|w| w == [0x02, 0x02, 0x10, 0x01]),
            "{asked:?}"
        );
        // The answer is cached for the client: refused during the next handshake.
        let error = handshake(&no_staple, &pki.ca_pem, strict.clone(), &configs)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("a cached OCSP response says so"),
            "{error}"
        );
        assert_eq!(responder.asked().len(), 1);

        // The relaxed rows and tlsDisableOCSPEndpointCheck never ask.
        let responder = ScriptedResponder::new(Some(revoked.clone()));
        let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
        let relaxed = [
            TlsOptions::builder()
                .allow_invalid_certificates(true)
                .build(),
            TlsOptions::builder()
                .disable_certificate_revocation_check(true)
                .build(),
            TlsOptions::builder()
                .disable_ocsp_endpoint_check(true)
                .build(),
        ];
        for options in relaxed {
            handshake(&no_staple, &pki.ca_pem, options, &configs)
                .await
                .unwrap();
        }
        assert_eq!(responder.asked(), []);

        // Test 3, and the Soft Fail Test: a good answer, an unreachable responder, and
        // a forged answer (no valid answer) connect.
        for answer in [Some(good.clone()), None, Some(forged)] {
            let responder = ScriptedResponder::new(answer);
            let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
            handshake(&no_staple, &pki.ca_pem, strict.clone(), &configs)
                .await
                .unwrap();
            assert_eq!(responder.asked().len(), 1);
            // Without a bound on the connection, the spec's five seconds.
            assert_eq!(*responder.timeouts.lock().unwrap(), [RESPONDER_TIMEOUT]);
        }
        // A connection with a second left gives the responder half of it.
        let responder = ScriptedResponder::new(None);
        let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
        let second = Some(Duration::from_secs(1));
        handshake_within(&no_staple, &pki.ca_pem, strict.clone(), &configs, second)
            .await
            .unwrap();
        assert_eq!(
            *responder.timeouts.lock().unwrap(),
            [Duration::from_millis(500)]
        );

        // A good staple leaves nothing to ask; an unknown one does (spec step 7).
        let stapled = front(&pki.plain, good).await;
        let responder = ScriptedResponder::new(Some(revoked.clone()));
        let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
        handshake(&stapled, &pki.ca_pem, strict.clone(), &configs)
            .await
            .unwrap();
        assert_eq!(responder.asked(), []);
        let stapled = front(&pki.plain, unknown).await;
        let configs = ClientConfigs::default().with_ocsp_responder(responder.clone());
        let error = handshake(&stapled, &pki.ca_pem, strict, &configs)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("its OCSP responder says so"),
            "{error}"
        );
        assert_eq!(responder.asked().len(), 1);
    })
    .await;
}

/// What the scripted responder answers: a status and body, or nothing (`None`: it
/// keeps the connection open and stays silent).
type Script = Arc<Mutex<Option<(u16, Vec<u8>)>>>;

/// A scripted OCSP responder on loopback answering as its [`Script`] says (silent
/// until set), and a PKI in `dir` whose certificates name it.
async fn responder_and_pki(dir: &Path) -> (MockHttp, Script, OcspPki) {
    responder_and_pki_of(dir, KeyKind::Ecdsa).await
}

/// [`responder_and_pki`] with keys of the kind `keys`.
async fn responder_and_pki_of(dir: &Path, keys: KeyKind) -> (MockHttp, Script, OcspPki) {
    let script = Script::default();
    let answers = script.clone();
    let mock = MockHttp::start(move |_| match answers.lock().unwrap().clone() {
        Some((status, body)) => HttpReply::Respond(status, body),
        None => HttpReply::Silent,
    })
    .await;
    let pki = OcspPki::generate_with(dir, &format!("{}/ocsp", mock.url()), keys).unwrap();
    (mock, script, pki)
}

/// Asserts that each request `mock` received is an OCSP request (RFC 6960 appendix
/// A.1) about the plain certificate (its serial, 0x1001), and returns how many.
fn ocsp_requests(mock: &MockHttp) -> usize {
    let requests = mock.requests();
    for request in &requests {
        assert_eq!(
            (request.method.as_str(), request.target.as_str()),
            ("POST", "/ocsp")
        );
        assert_eq!(
            request.header("Content-Type"),
            Some("application/ocsp-request")
        );
        assert!(
            request
                .body
                .windows(4)
                .any(|w| w == [0x02, 0x02, 0x10, 0x01]),
            "{request:?}"
        );
    }
    requests.len()
}

#[tokio::test]
async fn test_4_the_responder_says_revoked() {
    within(BOUND, async {
        for &keys in BOTH {
            test_4_with(keys).await;
        }
    })
    .await;
}

/// Test 4 with keys of the kind `keys`.
async fn test_4_with(keys: KeyKind) {
    let dir = tempfile::tempdir().unwrap();
    let (mock, script, pki) = responder_and_pki_of(dir.path(), keys).await;
    let revoked = pki.response(
        &pki.plain,
        CertStatus::Revoked,
        Signer::Issuer,
        VALID_FROM,
        Some(VALID_UNTIL),
    );
    *script.lock().unwrap() = Some((200, revoked.clone()));
    let no_staple = front(&pki.plain, Vec::new()).await;
    // The strict row asks (its later connections find the answer cached, as the
    // message may say), the relaxed rows never.
    fails_with(&no_staple, &pki.ca_pem, "", "certificate is revoked (").await;
    let asked = ocsp_requests(&mock);
    assert!(asked >= 1);
    for relaxed in RELAXED {
        ping(&no_staple, &pki.ca_pem, relaxed).await.unwrap();
    }
    assert_eq!(ocsp_requests(&mock), asked);

    // tlsDisableOCSPEndpointCheck: not asked, and no staple to say otherwise.
    ping(&no_staple, &pki.ca_pem, "tlsDisableOCSPEndpointCheck=true")
        .await
        .unwrap();
    assert_eq!(ocsp_requests(&mock), asked);
    // It leaves stapled responses checked.
    let stapled = front(&pki.plain, revoked).await;
    fails_with(
        &stapled,
        &pki.ca_pem,
        "tlsDisableOCSPEndpointCheck=true",
        "stapled OCSP response says so",
    )
    .await;
    assert_eq!(ocsp_requests(&mock), asked);
}

#[tokio::test]
async fn a_good_answer_from_the_responder_is_cached_for_the_client() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let (mock, script, pki) = responder_and_pki(dir.path()).await;
        let good = pki.response(
            &pki.plain,
            CertStatus::Good,
            Signer::Delegate,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        *script.lock().unwrap() = Some((200, good));
        let no_staple = front(&pki.plain, Vec::new()).await;
        let uri = format!(
            "mongodb://localhost:{}/?tls=true&directConnection=true&tlsCAFile={}\
             &serverSelectionTimeoutMS=5000",
            no_staple.port,
            pki.ca_pem.display()
        );
        let events = PoolEvents::default();
        let options = events.record(ClientOptions::parse(&uri).await.unwrap());
        let client = anymongo::Client::with_options(options).unwrap();
        // The first connections ask (those opened at once, before an answer is in,
        // each ask).
        ping_with(&client).await.unwrap();
        let asked = ocsp_requests(&mock);
        assert!(asked >= 1);
        // Pings at once need more connections: full handshakes (the front resumes no
        // session), whose checks find the answer cached.
        let created = created_connections(&events.lock());
        let pings = (0..8).map(|_| ping_with(&client));
        for pinged in futures::future::join_all(pings).await {
            pinged.unwrap();
        }
        assert!(created_connections(&events.lock()) > created);
        assert_eq!(ocsp_requests(&mock), asked);
        // Another client has a cache of its own.
        ping(&no_staple, &pki.ca_pem, "").await.unwrap();
        assert!(ocsp_requests(&mock) > asked);
    })
    .await;
}

#[tokio::test]
async fn soft_fail_a_silent_or_failing_responder_connects_in_bounded_time() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let (mock, script, pki) = responder_and_pki(dir.path()).await;
        let no_staple = front(&pki.plain, Vec::new()).await;
        // Silent: each connection gives up after the spec's five seconds, within its
        // timeout (longer here than the responder's, as by default); the ping waits
        // for one connection, or two one after the other (the monitor's, the pool's).
        let start = std::time::Instant::now();
        let timeouts = "connectTimeoutMS=10000&serverSelectionTimeoutMS=15000";
        ping_with(&client(&no_staple, &pki.ca_pem, timeouts).await)
            .await
            .unwrap();
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(12),
            "{waited:?}"
        );
        let asked = ocsp_requests(&mock);
        assert!(asked >= 1);
        // A revoked answer with an error status is no answer: only a 200's body counts.
        let revoked = pki.response(
            &pki.plain,
            CertStatus::Revoked,
            Signer::Issuer,
            VALID_FROM,
            Some(VALID_UNTIL),
        );
        *script.lock().unwrap() = Some((500, revoked));
        ping(&no_staple, &pki.ca_pem, "").await.unwrap();
        assert!(ocsp_requests(&mock) > asked);
    })
    .await;
}

/// With a connectTimeoutMS under the responder's five seconds, a silent responder is
/// given up on within what is left of it (half), and the connection opens instead of
/// timing out (the Client Side Operations Timeout spec's bound on OCSP requests, the
/// OCSP Support spec's soft fail).
#[tokio::test]
async fn soft_fail_a_silent_responder_within_a_short_connect_timeout() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let (mock, _silent, pki) = responder_and_pki(dir.path()).await;
        let no_staple = front(&pki.plain, Vec::new()).await;
        let start = std::time::Instant::now();
        let timeouts = "connectTimeoutMS=1000&serverSelectionTimeoutMS=5000";
        ping_with(&client(&no_staple, &pki.ca_pem, timeouts).await)
            .await
            .unwrap();
        // Each connection (the monitor's, then the pool's) waited for the responder
        // half of its second.
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(500), "{waited:?}");
        assert!(ocsp_requests(&mock) >= 1);
    })
    .await;
}
