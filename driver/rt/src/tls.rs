//! TLS (rustls, `ring` provider) layered over any [`Stream`] — shared by the hosts
//! that bring their own TLS (native, WASI); JavaScript hosts use theirs.
//!
//! rustls is driven sans-IO: ciphertext read from the inner stream is fed to the
//! [`rustls::ClientConnection`], and whatever it wants to send is written out. No
//! file is read here: a host passes [`secure`] its way of reading `tlsCAFile` and
//! `tlsCertificateKeyFile`, and the authorities it trusts when a connection names no
//! `tlsCAFile` ([`TrustedRoots`]: its operating system's store where it can read it,
//! else the Mozilla roots compiled in).
//!
//! One client's connections share one rustls configuration per distinct
//! [`TlsOptions`] ([`ClientConfigs`], which the host keeps per client, see
//! [`Transport::for_client`](crate::rt::Transport::for_client)), and with it rustls'
//! in-memory session cache: after the first handshake with a server, later connections
//! of the same client resume its session (TLS 1.3 tickets, TLS 1.2 session ids) and
//! skip the certificate exchange. Each handshake is logged at debug level under the
//! target `anymongo::tls`, with the fields `server` and `handshake` (`Full`,
//! `FullWithHelloRetryRequest` or `Resumed`).
//!
//! The URI Options spec's TLS options, as rustls honours them:
//!
//! - `tlsAllowInvalidCertificates`: any server certificate is accepted — untrusted,
//!   expired, or for another host name (as with the official drivers, no hostname can
//!   be checked on a certificate that is not checked). The handshake signature is
//!   still verified against the certificate presented.
//! - `tlsAllowInvalidHostnames`: the certificate must chain to a trusted authority and
//!   be valid in time, but may name another host.
//! - `tlsInsecure`: both of the above.
//! - `tlsCertificateKeyFilePassword`: decrypts a PKCS#8 `ENCRYPTED PRIVATE KEY` (PBES2:
//!   PBKDF2 or scrypt with AES or 3DES) in `tlsCertificateKeyFile`. Keys encrypted in
//!   the legacy OpenSSL format (`Proc-Type: 4,ENCRYPTED`) are refused with an error
//!   saying how to convert them.
//! - Revocation (the OCSP Support spec, [`ocsp`]): the server's stapled OCSP
//!   response is verified and a revoked certificate refused, as is a Must-Staple one
//!   without a staple; `tlsCRLFile`'s revocation lists (a PEM file the host reads) are
//!   checked by webpki for every certificate of the chain, and a certificate none of
//!   them covers passes. `tlsDisableCertificateRevocationCheck` turns both off, as do
//!   `tlsInsecure` and `tlsAllowInvalidCertificates`. Without a stapled or cached
//!   answer, the responders the certificate names are asked after the handshake
//!   through the host's [`ocsp::OcspResponder`] ([`ClientConfigs::with_ocsp_responder`];
//!   none by default, then "soft fail"; the built-in native and WASI transports give
//!   each client the driver's [`HttpClient`](crate::http::HttpClient)), unless
//!   `tlsDisableOCSPEndpointCheck`.

pub mod ocsp;

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName,
    UnixTime,
};
use rustls::HandshakeKind;
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};

use crate::rt::{boxed, BoxFuture, ConnectTarget, PemSource, Stream, TlsError, TlsOptions};
use crate::sync::lock;

/// The `tracing` target of the handshake log line (see the module docs).
const LOG_TARGET: &str = "anymongo::tls";

/// Size of the buffer ciphertext is read into: one maximal TLS record and its overhead.
const READ_CHUNK: usize = 16 * 1024 + 512;

fn tls_error(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TlsError(message.into()))
}

/// The certificate authorities a host trusts when a connection names no `tlsCAFile`.
///
/// A host that can read its operating system's store passes those certificates
/// ([`TrustedRoots::system`]: what users of a private CA installed system-wide
/// expect, as with the drivers built on OpenSSL or the platform's TLS); one that
/// cannot (a WASI guest sees only the directories it was given) uses the Mozilla roots
/// compiled in ([`TrustedRoots::webpki`]). Cheap to clone: the store is shared.
#[derive(Debug, Clone)]
pub struct TrustedRoots {
    store: Arc<RootCertStore>,
    system: bool,
}

impl TrustedRoots {
    /// The Mozilla roots of `webpki-roots`, compiled into the program.
    pub fn webpki() -> TrustedRoots {
        let mut store = RootCertStore::empty();
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        TrustedRoots {
            store: Arc::new(store),
            system: false,
        }
    }

    /// The operating system's certificates (DER, as `rustls-native-certs` loads them),
    /// with the number of those skipped because rustls cannot use them as trust
    /// anchors. When none is usable (a minimal container without a CA bundle), the
    /// Mozilla roots instead, so that public authorities are still trusted.
    ///
    /// Only the system's when it has any, not both: an authority its administrator
    /// removed stays untrusted, and the usual system bundles (Debian's
    /// `ca-certificates`, say) hold the Mozilla roots already.
    pub fn system(
        certificates: impl IntoIterator<Item = CertificateDer<'static>>,
    ) -> (TrustedRoots, usize) {
        let mut store = RootCertStore::empty();
        let (_, skipped) = store.add_parsable_certificates(certificates);
        match store.is_empty() {
            true => (TrustedRoots::webpki(), skipped),
            false => (
                TrustedRoots {
                    store: Arc::new(store),
                    system: true,
                },
                skipped,
            ),
        }
    }

    /// How many authorities are trusted.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no authority is trusted (never, from these constructors).
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Whether these are the operating system's authorities, not the Mozilla roots.
    pub fn is_system(&self) -> bool {
        self.system
    }

    /// What they are, for error messages.
    fn describe(&self) -> String {
        let source = match self.system {
            true => "the operating system's certificate store",
            false => "the Mozilla roots built into the driver",
        };
        format!("{source}, {} authorities", self.len())
    }
}

/// The rustls configurations of one client's TLS connections, one per distinct
/// [`TlsOptions`] (a client has one; `Vec` rather than a map, as options are neither
/// `Hash` nor `Ord`), each built on the client's first connection with those options
/// and then shared by all of them, monitoring connections included: rustls keeps its
/// session cache (the default in-memory [`rustls::client::Resumption`]) in the
/// configuration, so sharing it is what lets later connections resume a session.
///
/// A host keeps one per client ([`Transport::for_client`](crate::rt::Transport::for_client)),
/// never one for the process: a resumed session skips certificate verification, so a
/// session must not outlive the options (and the client) that verified it. Clones
/// share the configurations.
#[derive(Clone, Default)]
pub struct ClientConfigs {
    built: Arc<Mutex<Vec<(TlsOptions, Built)>>>,
    ocsp_responder: Option<Arc<dyn ocsp::OcspResponder>>,
}

impl std::fmt::Debug for ClientConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfigs")
            .field("built", &lock(&self.built).len())
            .field("ocsp_responder", &self.ocsp_responder.is_some())
            .finish()
    }
}

/// A configuration, and its OCSP checks when revocation is checked.
#[derive(Clone)]
struct Built {
    config: Arc<ClientConfig>,
    revocation: Option<Arc<ocsp::Revocation>>,
}

impl ClientConfigs {
    /// These configurations, asking OCSP responders through `responder` when neither
    /// the server's stapled response nor the cache tells whether its certificate was
    /// revoked (see [`ocsp`]).
    pub fn with_ocsp_responder(mut self, responder: Arc<dyn ocsp::OcspResponder>) -> Self {
        self.ocsp_responder = Some(responder);
        self
    }

    /// The configuration for `options`, built with `build` the first time. A failure
    /// is not kept: each connection tries again, and reports its own error.
    fn get_or_build(
        &self,
        options: &TlsOptions,
        build: impl FnOnce() -> io::Result<Built>,
    ) -> io::Result<Built> {
        if let Some((_, config)) = lock(&self.built).iter().find(|(built, _)| built == options) {
            return Ok(config.clone());
        }
        // Built outside the lock (it reads files); two first connections racing build
        // twice, and the first one kept wins, so that later ones share its sessions.
        let config = build()?;
        let mut built = lock(&self.built);
        if let Some((_, kept)) = built.iter().find(|(built, _)| built == options) {
            return Ok(kept.clone());
        }
        built.push((options.clone(), config.clone()));
        Ok(config)
    }
}

/// Returns `stream` as is when `target` asks for no TLS, and otherwise runs the TLS
/// handshake over it with the client's configuration for its options from `configs`,
/// built on first use trusting the authorities `target` names (a `tlsCAFile` is read
/// with the host's `read_file`) or else those `roots` returns, the host's default.
/// `roots` is called only then: loading a certificate store costs milliseconds (146
/// files on Debian), which a cold start without TLS, or with its own CA, must not pay.
pub async fn secure(
    stream: Box<dyn Stream>,
    target: &ConnectTarget,
    configs: &ClientConfigs,
    read_file: impl Fn(&Path) -> io::Result<Vec<u8>>,
    roots: fn() -> &'static TrustedRoots,
) -> io::Result<Box<dyn Stream>> {
    let Some(options) = &target.tls else {
        return Ok(stream);
    };
    let config = configs.get_or_build(options, || {
        let ca = read_pem(options.ca(), "tlsCAFile", &read_file)?;
        let identity = read_pem(options.cert_key(), "tlsCertificateKeyFile", &read_file)?;
        // Not read when unused: revocation checks are off.
        let crls = match options.checks_revocation() {
            true => {
                let crl_file = options.crl_file_path.as_deref().map(PemSource::File);
                read_pem(crl_file, "tlsCRLFile", &read_file)?
            }
            false => None,
        };
        let pem = Pem {
            ca: ca.as_deref(),
            identity: identity.as_deref(),
            crls: crls.as_deref(),
        };
        client_config(options, pem, roots)
    })?;
    let trusted = match options.ca() {
        Some(_) => "the tlsCAFile's authorities".to_owned(),
        None => format!("{}; name another CA with tlsCAFile", roots().describe()),
    };
    let stream = connect(stream, &target.host, config.config, &trusted).await?;
    if let (Some(revocation), Some(responder)) = (&config.revocation, &configs.ocsp_responder) {
        // A resumed session skipped certificate verification: its first handshake
        // checked the certificate.
        let full = !matches!(
            stream.connection.handshake_kind(),
            Some(HandshakeKind::Resumed)
        );
        if let (true, Some(chain)) = (full, stream.connection.peer_certificates()) {
            revocation
                .ask_responders(chain, responder.as_ref(), target.time_left)
                .await
                .map_err(|error| tls_error(describe(error, &trusted)))?;
        }
    }
    Ok(Box::new(stream))
}

/// The PEM bytes `source` names, if any: a file is read with the host's `read_file`,
/// in-memory PEM is used as is. `option` names the URI option in errors.
fn read_pem(
    source: Option<PemSource<'_>>,
    option: &str,
    read_file: &impl Fn(&Path) -> io::Result<Vec<u8>>,
) -> io::Result<Option<Vec<u8>>> {
    match source {
        None => Ok(None),
        Some(PemSource::Pem(pem)) => Ok(Some(pem.as_bytes().to_vec())),
        Some(PemSource::File(path)) => read_file(path).map(Some).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("{option} {}: {error}", path.display()),
            )
        }),
    }
}

/// The PEM data a client configuration is built from, as the host read it.
#[derive(Default, Clone, Copy)]
struct Pem<'a> {
    /// `tlsCAFile`'s authorities.
    ca: Option<&'a [u8]>,
    /// `tlsCertificateKeyFile`'s certificate chain and key.
    identity: Option<&'a [u8]>,
    /// `tlsCRLFile`'s revocation lists.
    crls: Option<&'a [u8]>,
}

/// A client configuration for `options`: trusting the PEM certificates in `pem.ca`,
/// or those `default_roots` returns when `None`, relaxed as `tlsAllowInvalid*` ask,
/// checking revocation (OCSP, and `pem.crls`) unless told not to, and presenting the
/// certificate chain and private key in `pem.identity` when given (mutual TLS,
/// MONGODB-X509).
fn client_config<'r>(
    options: &TlsOptions,
    pem: Pem<'_>,
    default_roots: impl FnOnce() -> &'r TrustedRoots,
) -> io::Result<Built> {
    let roots = match pem.ca {
        None => default_roots().store.clone(),
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for certificate in CertificateDer::pem_slice_iter(pem) {
                let certificate = certificate
                    .map_err(|error| tls_error(format!("invalid CA certificate PEM: {error}")))?;
                roots
                    .add(certificate)
                    .map_err(|error| tls_error(format!("unusable CA certificate: {error}")))?;
            }
            if roots.is_empty() {
                return Err(tls_error("the CA file holds no certificate"));
            }
            Arc::new(roots)
        }
    };
    let crls = match pem.crls {
        None => Vec::new(),
        Some(pem) => {
            let crls = CertificateRevocationListDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| tls_error(format!("tlsCRLFile: invalid PEM: {error}")))?;
            if crls.is_empty() {
                return Err(tls_error("tlsCRLFile holds no certificate revocation list"));
            }
            crls
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| tls_error(error.to_string()))?;
    let verifier = Verifier::new(options, roots, crls, provider)?;
    let revocation = verifier.revocation.clone();
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let config = match pem.identity {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let chain = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| tls_error(format!("tlsCertificateKeyFile: {error}")))?;
            if chain.is_empty() {
                return Err(tls_error("tlsCertificateKeyFile holds no certificate"));
            }
            let key = private_key(pem, options.tls_certificate_key_file_password.as_deref())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| tls_error(format!("tlsCertificateKeyFile: {error}")))?
        }
    };
    Ok(Built {
        config: Arc::new(config),
        revocation,
    })
}

const ENCRYPTED_KEY_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_KEY_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The client's private key in the PEM of `tlsCertificateKeyFile`: a PKCS#8
/// `ENCRYPTED PRIVATE KEY` decrypted with `password`
/// (`tlsCertificateKeyFilePassword`), else a plain key (PKCS#8, PKCS#1 or SEC1).
fn private_key(pem: &[u8], password: Option<&[u8]>) -> io::Result<PrivateKeyDer<'static>> {
    let text = String::from_utf8_lossy(pem);
    let encrypted = text.find(ENCRYPTED_KEY_BEGIN).and_then(|begin| {
        let end = text[begin..].find(ENCRYPTED_KEY_END)? + begin + ENCRYPTED_KEY_END.len();
        Some(&text[begin..end])
    });
    let Some(encrypted) = encrypted else {
        if text.contains("Proc-Type: 4,ENCRYPTED") {
            return Err(tls_error(
                "tlsCertificateKeyFile: the private key is encrypted in the legacy OpenSSL \
                 format, which is not supported; convert it to encrypted PKCS#8 \
                 (openssl pkcs8 -topk8 -v2 aes-256-cbc)",
            ));
        }
        return PrivateKeyDer::from_pem_slice(pem).map_err(|error| {
            tls_error(format!(
                "tlsCertificateKeyFile: no usable private key ({error})"
            ))
        });
    };
    let Some(password) = password else {
        return Err(tls_error(
            "tlsCertificateKeyFile: the private key is encrypted; give its password with \
             tlsCertificateKeyFilePassword",
        ));
    };
    decrypt_key(encrypted, password)
}

/// Decrypts one PEM `ENCRYPTED PRIVATE KEY` block with `password`.
fn decrypt_key(block: &str, password: &[u8]) -> io::Result<PrivateKeyDer<'static>> {
    use pkcs8::der::Decode;
    let (_, der) = pkcs8::der::pem::decode_vec(block.as_bytes()).map_err(|error| {
        tls_error(format!(
            "tlsCertificateKeyFile: invalid encrypted private key PEM ({error})"
        ))
    })?;
    let info = pkcs8::EncryptedPrivateKeyInfo::from_der(&der).map_err(|error| {
        tls_error(format!(
            "tlsCertificateKeyFile: invalid encrypted private key ({error})"
        ))
    })?;
    let wrong_password = || {
        tls_error(
            "tlsCertificateKeyFile: cannot decrypt the private key: \
             wrong tlsCertificateKeyFilePassword?",
        )
    };
    let key = info.decrypt(password).map_err(|error| match error {
        // An unsupported cipher or KDF says so; anything else is a failed decryption.
        pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::AlgorithmParametersInvalid {
            ..
        })
        | pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::UnsupportedAlgorithm { .. }) => {
            tls_error(format!(
                "tlsCertificateKeyFile: the private key's encryption is not supported ({error})"
            ))
        }
        _ => wrong_password(),
    })?;
    // A wrong password may still unpad by chance: then the plaintext is no key.
    pkcs8::PrivateKeyInfo::from_der(key.as_bytes()).map_err(|_| wrong_password())?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        key.as_bytes().to_vec(),
    )))
}

/// The server certificate verifier: webpki's (the chain, its validity in time, the
/// host name, `tlsCRLFile`'s lists), minus what `tlsAllowInvalid*` allow, then the
/// certificate's OCSP status ([`ocsp`]). Handshake signatures are always checked.
#[derive(Debug)]
struct Verifier {
    /// Checks chains (and names): `None` when any certificate is accepted.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    allow_invalid_hostnames: bool,
    /// The OCSP checks, when revocation is checked.
    revocation: Option<Arc<ocsp::Revocation>>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    fn new(
        options: &TlsOptions,
        roots: Arc<RootCertStore>,
        crls: Vec<CertificateRevocationListDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> io::Result<Verifier> {
        let webpki = match options.allows_invalid_certificates() {
            true => None,
            false => {
                let builder =
                    WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone());
                // A CRL file lists some certificates as revoked; those of issuers it
                // has no list of pass (the spec's soft fail), rather than failing all.
                let builder = match crls.is_empty() {
                    true => builder,
                    false => builder.with_crls(crls).allow_unknown_revocation_status(),
                };
                Some(
                    builder
                        .build()
                        .map_err(|error| tls_error(format!("tlsCRLFile: {error}")))?,
                )
            }
        };
        let revocation = options.checks_revocation().then(|| {
            Arc::new(ocsp::Revocation::new(
                roots,
                provider.signature_verification_algorithms,
                !options.disable_ocsp_endpoint_check.unwrap_or(false),
            ))
        });
        Ok(Verifier {
            webpki,
            allow_invalid_hostnames: options.allows_invalid_hostnames(),
            revocation,
            provider,
        })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain (trust, validity period, CRLs) before the name, so a
        // name mismatch means all else was valid.
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.allow_invalid_hostnames => {}
            other => {
                other?;
            }
        }
        if let Some(revocation) = &self.revocation {
            revocation.check_staple(end_entity, intermediates, ocsp_response, now)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Runs a TLS handshake with `server_name` over `inner` and returns the encrypted
/// stream; `trusted` says which authorities were trusted, for the error of a
/// certificate none of them issued.
async fn connect(
    inner: Box<dyn Stream>,
    server_name: &str,
    config: Arc<ClientConfig>,
    trusted: &str,
) -> io::Result<TlsStream> {
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|_| tls_error(format!("'{server_name}' is not a valid TLS server name")))?;
    let connection =
        ClientConnection::new(config, name).map_err(|error| tls_error(error.to_string()))?;
    let mut stream = TlsStream {
        inner,
        connection,
        incoming: vec![0; READ_CHUNK],
        outgoing: Vec::new(),
        trusted: trusted.to_owned(),
    };
    while stream.connection.is_handshaking() {
        if stream.connection.wants_write() {
            stream.send_pending().await?;
        } else if !stream.receive().await? {
            // An I/O failure, not one of TLS: the CMAP spec ("Backpressure-enabled")
            // treats an EOF during the handshake as a possible overload.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection during the TLS handshake",
            ));
        }
    }
    stream.send_pending().await?;
    // Known once the handshake is done, as it is here.
    if let Some(kind) = stream.connection.handshake_kind() {
        tracing::debug!(target: LOG_TARGET, server = server_name, handshake = ?kind, "TLS handshake done");
    }
    Ok(stream)
}

/// The message of the TLS error `error`; `trusted` says which authorities were
/// trusted, for a certificate none of them issued.
fn describe(error: rustls::Error, trusted: &str) -> String {
    match error {
        // Say where the trust came from: the fix is usually tlsCAFile.
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("{error} (trusted: {trusted})")
        }
        // The revocation checks' own messages (`ocsp`), not their Debug form.
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            format!("invalid peer certificate: {other}")
        }
        rustls::Error::InvalidCertificate(CertificateError::Revoked) => {
            "invalid peer certificate: revoked (listed in the tlsCRLFile)".to_owned()
        }
        error => error.to_string(),
    }
}

struct TlsStream {
    inner: Box<dyn Stream>,
    connection: ClientConnection,
    incoming: Vec<u8>,
    outgoing: Vec<u8>,
    /// Which authorities are trusted, for the error of an untrusted certificate.
    trusted: String,
}

impl TlsStream {
    /// Reads ciphertext from the inner stream and processes it; `false` at end of stream.
    async fn receive(&mut self) -> io::Result<bool> {
        let n = self.inner.read(&mut self.incoming).await?;
        if n == 0 {
            // Tell rustls about the end of the stream so that it can tell a clean
            // close_notify from a truncation.
            self.connection.read_tls(&mut &[][..])?;
            return Ok(false);
        }
        let mut ciphertext = &self.incoming[..n];
        while !ciphertext.is_empty() {
            self.connection.read_tls(&mut ciphertext)?;
            if let Err(error) = self.connection.process_new_packets() {
                // Send the alert rustls queued before reporting the failure.
                let _ = self.send_pending().await;
                return Err(tls_error(describe(error, &self.trusted)));
            }
        }
        self.send_pending().await?;
        Ok(true)
    }

    /// Writes out every TLS record rustls has queued.
    async fn send_pending(&mut self) -> io::Result<()> {
        while self.connection.wants_write() {
            self.outgoing.clear();
            self.connection.write_tls(&mut self.outgoing)?;
            self.inner.write_all(&self.outgoing).await?;
        }
        Ok(())
    }
}

impl Stream for TlsStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(async move {
            loop {
                match self.connection.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(error) => return Err(error),
                }
                if !self.receive().await? {
                    // The reader now reports a clean close (Ok(0)) or a truncation.
                    return match self.connection.reader().read(buf) {
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(0),
                        other => other,
                    };
                }
            }
        })
    }

    /// The socket underneath tells: an idle TLS stream has nothing to read either (a
    /// close_notify alert counts as bytes nobody asked for, which is right).
    fn is_open_and_idle(&self) -> bool {
        self.inner.is_open_and_idle()
    }

    fn write_all<'a>(&'a mut self, mut buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(async move {
            while !buf.is_empty() {
                let n = self.connection.writer().write(buf)?;
                buf = &buf[n..];
                self.send_pending().await?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream `secure` must hand back without reading or writing.
    struct Untouched;

    impl Stream for Untouched {
        fn read<'a>(&'a mut self, _: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
            unreachable!("a connection without TLS was read from")
        }

        fn write_all<'a>(&'a mut self, _: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
            unreachable!("a connection without TLS was written to")
        }
    }

    #[test]
    fn a_connection_without_tls_loads_no_certificates() {
        fn no_default_roots() -> &'static TrustedRoots {
            panic!("the default roots were loaded for a connection without TLS")
        }
        let target = ConnectTarget {
            host: "db.test".into(),
            port: 27017,
            tls: None,
            addresses: Vec::new(),
            time_left: None,
        };
        let stream = futures::executor::block_on(secure(
            Box::new(Untouched),
            &target,
            &ClientConfigs::default(),
            |path| panic!("{} was read for a connection without TLS", path.display()),
            no_default_roots,
        ));
        assert!(stream.is_ok());
    }

    #[test]
    fn an_empty_or_unusable_system_store_falls_back_to_the_mozilla_roots() {
        let (roots, skipped) = TrustedRoots::system(Vec::new());
        assert!(!roots.is_system());
        assert_eq!(skipped, 0);
        assert_eq!(roots.len(), webpki_roots::TLS_SERVER_ROOTS.len());

        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let (roots, skipped) = TrustedRoots::system(vec![garbage]);
        assert!(!roots.is_system());
        assert_eq!(skipped, 1);
    }

    #[test]
    fn a_usable_system_certificate_makes_the_store_the_systems_alone() {
        let ca = test_ca();
        let garbage = CertificateDer::from(vec![0x30, 0x00]);
        let (roots, skipped) = TrustedRoots::system(vec![ca, garbage]);
        assert!(roots.is_system());
        assert_eq!((roots.len(), skipped), (1, 1));
        assert!(roots.describe().contains("operating system"));
    }

    #[test]
    fn a_clients_configurations_are_built_once_per_options_and_failures_are_not_kept() {
        let configs = ClientConfigs::default();
        let roots = TrustedRoots::webpki();
        let build = |options: &TlsOptions| {
            configs
                .get_or_build(options, || {
                    client_config(options, Pem::default(), || &roots)
                })
                .map(|built| built.config)
        };
        let strict = TlsOptions::default();
        let insecure = TlsOptions::builder()
            .allow_invalid_certificates(true)
            .build();
        let first = build(&strict).unwrap();
        assert!(Arc::ptr_eq(&first, &build(&strict).unwrap()));
        assert!(!Arc::ptr_eq(&first, &build(&insecure).unwrap()));

        let keyed = TlsOptions::builder()
            .tls_certificate_key_file_password(b"secret".to_vec())
            .build();
        let failing = || Err(tls_error("no key"));
        assert!(configs.get_or_build(&keyed, failing).is_err());
        // The next connection builds again.
        assert!(build(&keyed).is_ok());
        // Clones share the configurations.
        assert!(Arc::ptr_eq(
            &first,
            &configs
                .clone()
                .get_or_build(&strict, failing)
                .unwrap()
                .config
        ));
    }

    /// A CA certificate (self-signed, P-256, valid until 2126) in DER: the Mozilla
    /// roots are compiled in as trust anchors, not certificates.
    fn test_ca() -> CertificateDer<'static> {
        const TEST_CA_PEM: &str = "\
-----BEGIN CERTIFICATE-----
MIIBpzCCAU2gAwIBAgIUFpOvFXxRTCHvzEZaNZcVHb10KL4wCgYIKoZIzj0EAwIw
IDEeMBwGA1UEAwwVYW55bW9uZ28gdW5pdC10ZXN0IENBMCAXDTI2MTEyNTE2MzYx
MFoYDzIxMjYxMTAxMTYzNjEwWjAgMR4wHAYDVQQDDBVhbnltb25nbyB1bml0LXRl
c3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQ7xbr980harDX/k/ZaUCDd
CALZDK+nAHCRXoH4QxNT4sc/EZCKnUhHpzZPoQRVmzJIIrCThpDnOvlx1BvCZ2xy
o2MwYTAdBgNVHQ4EFgQUPBOLdshQ52+wPBqs63YZrGa+ioEwHwYDVR0jBBgwFoAU
PBOLdshQ52+wPBqs63YZrGa+ioEwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8E
BAMCAgQwCgYIKoZIzj0EAwIDSAAwRQIgDKwf+Wtms+Blhu7PVgipE6YZoLCPLsfg
mHqeTSwf6+MCIQDymylxmIxdOdOZISJec5QMi1kuR5UDsaY5ROHZjfq4vw==
-----END CERTIFICATE-----";
        CertificateDer::from_pem_slice(TEST_CA_PEM.as_bytes()).expect("a PEM certificate")
    }
}
