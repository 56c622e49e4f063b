//! Certificate revocation on loopback, for the OCSP Support spec's test matrix: a CA
//! (`rcgen`; ECDSA P-256 or RSA 2048 keys, [`KeyKind`]), a delegated OCSP responder it
//! certified, server
//! certificates with and without Must-Staple, OCSP responses signed here (good,
//! revoked, unknown, expired, by the wrong key…), a CRL, and a TLS front (rustls) that
//! staples a given response in front of a plain server.
//!
//! SecantusDB's Python TLS cannot staple, hence the front: it terminates TLS with the
//! test certificate and its staple, and relays the bytes to the server behind it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rcgen::{
    CertificateRevocationListParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, Issuer,
    KeyIdMethod, KeyPair, RevokedCertParams, SerialNumber, SigningKey,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::certs::{leaf_params, new_ca_with_key, pem_writer};

/// What a response says of the certificate (RFC 6960 4.2.1, `CertStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertStatus {
    /// Not revoked.
    Good,
    /// Revoked.
    Revoked,
    /// The responder does not know the certificate.
    Unknown,
}

/// Who signs a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// The CA that issued the certificate (responderID by key hash).
    Issuer,
    /// A responder the CA certified for OCSP signing (responderID by name), its
    /// certificate sent along in the response.
    Delegate,
    /// A responder the CA certified without the OCSP signing purpose: its responses
    /// must be refused.
    DelegateWithoutOcspSigning,
    /// A key nobody certified: its responses must be refused.
    Stranger,
}

/// The keys of a PKI: its certificates' and the signatures of its responses (the OCSP
/// Support spec's matrix has both kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA P-256 with SHA-256.
    Ecdsa,
    /// RSA 2048 with SHA-256 (PKCS #1 v1.5).
    Rsa,
}

/// How many keys a PKI has: the CA's, its two server certificates', its two
/// responders' and a stranger's.
const KEYS: usize = 6;

impl KeyKind {
    /// The [`KEYS`] distinct keys of a PKI.
    fn keys(self) -> Result<[KeyPair; KEYS], rcgen::Error> {
        let keys: Result<Vec<KeyPair>, rcgen::Error> = match self {
            KeyKind::Ecdsa => (0..KEYS).map(|_| KeyPair::generate()).collect(),
            KeyKind::Rsa => rsa_keys()
                .iter()
                .map(|der| {
                    let der = PrivatePkcs8KeyDer::from(der.as_slice());
                    KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_RSA_SHA256)
                })
                .collect(),
        };
        Ok(keys?.try_into().expect("KEYS keys"))
    }
}

/// [`KEYS`] RSA 2048 keys (PKCS #8 DER), which rcgen over ring cannot generate: made
/// with the `rsa` crate once per test process, in parallel (about two seconds on two
/// cores), and shared by every RSA PKI it makes (a PKI needs distinct keys, not fresh
/// ones).
fn rsa_keys() -> &'static [Vec<u8>; KEYS] {
    use rsa::pkcs8::EncodePrivateKey;
    static GENERATED: OnceLock<[Vec<u8>; KEYS]> = OnceLock::new();
    GENERATED.get_or_init(|| {
        std::thread::scope(|scope| {
            let generating: Vec<_> = (0..KEYS)
                .map(|_| {
                    scope.spawn(|| {
                        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
                            .expect("an RSA key");
                        key.to_pkcs8_der()
                            .expect("its PKCS #8 DER")
                            .as_bytes()
                            .to_vec()
                    })
                })
                .collect();
            let keys: Vec<Vec<u8>> = generating
                .into_iter()
                .map(|thread| thread.join().expect("an RSA key"))
                .collect();
            keys.try_into().expect("KEYS keys")
        })
    })
}

/// A server certificate of the test CA, for `localhost` and `127.0.0.1`.
pub struct ServerCert {
    der: CertificateDer<'static>,
    key: KeyPair,
    serial: u64,
    /// The intermediate CAs' certificates sent along, issuer last.
    chain: Vec<CertificateDer<'static>>,
}

/// The CA, its responders, its server certificates and the PEM files tests name.
pub struct OcspPki {
    /// The CA's certificate (`tlsCAFile`).
    pub ca_pem: PathBuf,
    /// A CRL of the CA revoking [`OcspPki::plain`] (`tlsCRLFile`).
    pub crl_revoking_plain: PathBuf,
    /// A CRL of the CA revoking nothing.
    pub crl_revoking_nothing: PathBuf,
    /// A server certificate without Must-Staple.
    pub plain: ServerCert,
    /// A server certificate with Must-Staple (the TLS feature extension naming
    /// `status_request`, RFC 7633).
    pub must_staple: ServerCert,
    ca: Issuer<'static, KeyPair>,
    ca_subject: Vec<u8>,
    delegate: (Vec<u8>, KeyPair),
    delegate_without_ocsp_signing: (Vec<u8>, KeyPair),
    stranger: KeyPair,
}

/// The OCSP responder the server certificates name: nothing listens there (the
/// discard port), as with the spec's Soft Fail Test.
pub const RESPONDER_URL: &str = "http://127.0.0.1:9/ocsp";

/// id-pe-authorityInfoAccess (RFC 5280 4.2.2.1).
const AUTHORITY_INFO_ACCESS: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 1];

/// An Authority Information Access extension's value naming the OCSP responder `url`.
fn authority_info_access(url: &str) -> Vec<u8> {
    // id-ad-ocsp (1.3.6.1.5.5.7.48.1), and the URL as a uniformResourceIdentifier.
    let method = tlv(0x06, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01]);
    seq(&[&seq(&[&method, &tlv(0x86, url.as_bytes())])])
}

/// id-pe-tlsfeature (RFC 7633).
const TLS_FEATURE: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 24];
/// A TLS feature extension's value: `SEQUENCE { INTEGER 5 }`, `status_request`.
const MUST_STAPLE: &[u8] = &[0x30, 0x03, 0x02, 0x01, 0x05];

impl OcspPki {
    /// Makes the CA and its certificates, naming [`RESPONDER_URL`], and writes the PEM
    /// files into `dir`.
    pub fn generate(dir: &Path) -> Result<OcspPki, String> {
        OcspPki::generate_naming(dir, RESPONDER_URL)
    }

    /// [`generate`](Self::generate), with server certificates naming the OCSP
    /// responder `responder_url` (a scripted one, say).
    pub fn generate_naming(dir: &Path, responder_url: &str) -> Result<OcspPki, String> {
        OcspPki::generate_with(dir, responder_url, KeyKind::Ecdsa)
    }

    /// [`generate_naming`](Self::generate_naming), with keys of the kind `keys`.
    pub fn generate_with(
        dir: &Path,
        responder_url: &str,
        keys: KeyKind,
    ) -> Result<OcspPki, String> {
        let fail = |e: rcgen::Error| format!("cannot generate OCSP test certificates: {e}");
        let [ca_key, plain_key, must_staple_key, delegate_key, not_a_responder_key, stranger] =
            keys.keys().map_err(fail)?;
        let (ca_cert, ca) = new_ca_with_key("anymongo OCSP test CA", ca_key).map_err(fail)?;
        let server =
            |serial: u64, must_staple: bool, key: KeyPair| -> Result<ServerCert, rcgen::Error> {
                let mut params = leaf_params(
                    &["localhost", "127.0.0.1"],
                    &[(DnType::CommonName, "localhost")],
                    ExtendedKeyUsagePurpose::ServerAuth,
                )?;
                params.serial_number = Some(SerialNumber::from(serial));
                params.custom_extensions = vec![CustomExtension::from_oid_content(
                    AUTHORITY_INFO_ACCESS,
                    authority_info_access(responder_url),
                )];
                if must_staple {
                    params
                        .custom_extensions
                        .push(CustomExtension::from_oid_content(
                            TLS_FEATURE,
                            MUST_STAPLE.to_vec(),
                        ));
                }
                let der = params.signed_by(&key, &ca)?.der().clone();
                Ok(ServerCert {
                    der,
                    key,
                    serial,
                    chain: Vec::new(),
                })
            };
        let responder =
            |name: &str, purpose, key: KeyPair| -> Result<(Vec<u8>, KeyPair), rcgen::Error> {
                let params = leaf_params(&[], &[(DnType::CommonName, name)], purpose)?;
                Ok((params.signed_by(&key, &ca)?.der().to_vec(), key))
            };
        let plain = server(0x1001, false, plain_key).map_err(fail)?;
        let must_staple = server(0x1002, true, must_staple_key).map_err(fail)?;
        let delegate = responder(
            "OCSP responder",
            ExtendedKeyUsagePurpose::OcspSigning,
            delegate_key,
        )
        .map_err(fail)?;
        let delegate_without_ocsp_signing = responder(
            "not a responder",
            ExtendedKeyUsagePurpose::ClientAuth,
            not_a_responder_key,
        )
        .map_err(fail)?;
        let crl = |revoked: &[u64]| crl(&ca, revoked);
        let write = pem_writer(dir)?;
        Ok(OcspPki {
            ca_pem: write("ocsp-ca.pem", ca_cert.pem())?,
            crl_revoking_plain: write("revoking.crl.pem", crl(&[plain.serial]).map_err(fail)?)?,
            crl_revoking_nothing: write("empty.crl.pem", crl(&[]).map_err(fail)?)?,
            ca_subject: subject(ca_cert.der()),
            plain,
            must_staple,
            ca,
            delegate,
            delegate_without_ocsp_signing,
            stranger,
        })
    }

    /// A server certificate issued by an intermediate CA that this CA issued (its
    /// chain sent along by [`TlsFront`]), naming no OCSP responder, and a CRL of this
    /// CA revoking the intermediate, both written into `dir`: `tlsCRLFile` covers the
    /// chain (OCSP Support spec, "Suggested OCSP Behavior" step 5). ECDSA keys.
    pub fn behind_an_intermediate(&self, dir: &Path) -> Result<(ServerCert, PathBuf), String> {
        let fail = |e: rcgen::Error| format!("cannot generate the intermediate CA: {e}");
        const INTERMEDIATE_SERIAL: u64 = 0x2001;
        let key = KeyPair::generate().map_err(fail)?;
        let mut params = leaf_params(
            &[],
            &[(DnType::CommonName, "anymongo OCSP test intermediate")],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
        .map_err(fail)?;
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        params.extended_key_usages = Vec::new();
        params.serial_number = Some(SerialNumber::from(INTERMEDIATE_SERIAL));
        let intermediate = params.signed_by(&key, &self.ca).map_err(fail)?;
        let intermediate_issuer = Issuer::new(params, key);
        let mut params = leaf_params(
            &["localhost", "127.0.0.1"],
            &[(DnType::CommonName, "localhost")],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
        .map_err(fail)?;
        params.serial_number = Some(SerialNumber::from(0x1003));
        let key = KeyPair::generate().map_err(fail)?;
        let der = params
            .signed_by(&key, &intermediate_issuer)
            .map_err(fail)?
            .der()
            .clone();
        let cert = ServerCert {
            der,
            key,
            serial: 0x1003,
            chain: vec![intermediate.der().clone()],
        };
        let crl = crl(&self.ca, &[INTERMEDIATE_SERIAL]).map_err(fail)?;
        let crl = pem_writer(dir)?("revoking-intermediate.crl.pem", crl)?;
        Ok((cert, crl))
    }

    /// A DER OCSP response about `cert` saying `status`, signed by `signer`, for the
    /// window from `this_update` to `next_update` (GeneralizedTime text,
    /// `YYYYMMDDHHMMSSZ`).
    pub fn response(
        &self,
        cert: &ServerCert,
        status: CertStatus,
        signer: Signer,
        this_update: &str,
        next_update: Option<&str>,
    ) -> Vec<u8> {
        let time = |text: &str| tlv(0x18, text.as_bytes());
        let cert_id = seq(&[
            &seq(&[&tlv(0x06, &[0x2b, 0x0e, 0x03, 0x02, 0x1a]), &[0x05, 0x00]]),
            &tlv(0x04, &sha1(&self.ca_subject)),
            &tlv(0x04, &sha1(self.ca.key().public_key_raw())),
            &tlv(0x02, &integer(cert.serial)),
        ]);
        let status = match status {
            CertStatus::Good => vec![0x80, 0x00],
            CertStatus::Revoked => tlv(0xa1, &time("20240101000000Z")),
            CertStatus::Unknown => vec![0x82, 0x00],
        };
        let mut single = [cert_id, status, time(this_update)].concat();
        if let Some(next) = next_update {
            single.extend(tlv(0xa0, &time(next)));
        }
        let (key, sent_along): (&KeyPair, Option<&[u8]>) = match signer {
            Signer::Issuer => (self.ca.key(), None),
            Signer::Delegate => (&self.delegate.1, Some(&self.delegate.0)),
            Signer::DelegateWithoutOcspSigning => (
                &self.delegate_without_ocsp_signing.1,
                Some(&self.delegate_without_ocsp_signing.0),
            ),
            Signer::Stranger => (&self.stranger, None),
        };
        let responder_id = match sent_along {
            Some(cert) => tlv(0xa1, &subject(cert)),
            None => tlv(0xa2, &tlv(0x04, &sha1(key.public_key_raw()))),
        };
        let tbs = seq(&[&responder_id, &time(this_update), &seq(&[&seq(&[&single])])]);
        let signature = key.sign(&tbs).expect("a signature");
        let algorithm = match key.algorithm() == &rcgen::PKCS_RSA_SHA256 {
            // sha256WithRSAEncryption (1.2.840.113549.1.1.11), NULL parameters.
            true => seq(&[
                &tlv(
                    0x06,
                    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b],
                ),
                &[0x05, 0x00],
            ]),
            // ecdsa-with-SHA256 (1.2.840.10045.4.3.2).
            false => seq(&[&tlv(
                0x06,
                &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02],
            )]),
        };
        let mut basic = vec![tbs, algorithm, tlv(0x03, &[&[0][..], &signature].concat())];
        if let Some(cert) = sent_along {
            basic.push(tlv(0xa0, &seq(&[cert])));
        }
        let basic = seq(&basic.iter().map(Vec::as_slice).collect::<Vec<_>>());
        // id-pkix-ocsp-basic (1.3.6.1.5.5.7.48.1.1).
        let basic_oid = tlv(
            0x06,
            &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01],
        );
        seq(&[
            &[0x0a, 0x01, 0x00],
            &tlv(0xa0, &seq(&[&basic_oid, &tlv(0x04, &basic)])),
        ])
    }
}

/// A CRL (PEM) of `ca` revoking the certificates of serial numbers `revoked`.
fn crl(ca: &Issuer<'static, KeyPair>, revoked: &[u64]) -> Result<String, rcgen::Error> {
    CertificateRevocationListParams {
        this_update: rcgen::date_time_ymd(2020, 1, 1),
        next_update: rcgen::date_time_ymd(2100, 1, 1),
        crl_number: SerialNumber::from(1),
        issuing_distribution_point: None,
        revoked_certs: revoked
            .iter()
            .map(|serial| RevokedCertParams {
                serial_number: SerialNumber::from(*serial),
                revocation_time: rcgen::date_time_ymd(2024, 1, 1),
                reason_code: None,
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(ca)
    .and_then(|crl| crl.pem())
}

/// A response's time window that holds now.
pub const VALID_FROM: &str = "20200101000000Z";
/// The end of a window that holds now.
pub const VALID_UNTIL: &str = "21000101000000Z";

/// A TLS server on 127.0.0.1 presenting a certificate with a stapled OCSP response
/// (none when empty), relaying each connection to a plain server; its listener and
/// connections end when it is dropped. It resumes no TLS session.
pub struct TlsFront {
    /// The loopback port it listens on.
    pub port: u16,
    acceptor: JoinHandle<()>,
}

impl TlsFront {
    /// Starts a front presenting `cert` and stapling `staple`, in front of `backend`.
    pub async fn start(cert: &ServerCert, staple: Vec<u8>, backend: SocketAddr) -> TlsFront {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| {
                builder.with_no_client_auth().with_single_cert_with_ocsp(
                    [&[cert.der.clone()][..], &cert.chain].concat(),
                    key,
                    staple,
                )
            })
            .expect("a TLS server configuration");
        // No session resumption: every connection is a full handshake, which the
        // client checks (a resumed session's certificate is not checked again), so
        // that a test sees each check, and the cache's answers, on every connection.
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let acceptor = tokio::spawn(async move {
            // Dropped with the acceptor task: the relays end with the front.
            let mut relays = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                relays.spawn(async move {
                    // A client that refuses the certificate ends its handshake here.
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let Ok(mut server) = TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                });
            }
        });
        TlsFront { port, acceptor }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// `contents` as one DER element with tag `tag`.
fn tlv(tag: u8, contents: &[u8]) -> Vec<u8> {
    let length = contents.len();
    let mut der = vec![tag];
    match u8::try_from(length) {
        Ok(short) if short < 0x80 => der.push(short),
        _ => {
            let bytes = u32::try_from(length)
                .expect("a short element")
                .to_be_bytes();
            let skip = bytes.iter().take_while(|byte| **byte == 0).count();
            der.push(0x80 | (4 - skip) as u8);
            der.extend_from_slice(&bytes[skip..]);
        }
    }
    der.extend_from_slice(contents);
    der
}

/// A DER SEQUENCE of `elements`.
fn seq(elements: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &elements.concat())
}

/// An INTEGER's contents for `value` (as rcgen encodes a serial number).
fn integer(value: u64) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|byte| **byte == 0).count();
    let mut contents = bytes[skip..].to_vec();
    if contents.first().is_none_or(|first| first & 0x80 != 0) {
        contents.insert(0, 0);
    }
    contents
}

fn sha1(data: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data)
        .as_ref()
        .to_vec()
}

/// The DER subject Name (tag and length included) of the certificate `der`.
fn subject(der: &[u8]) -> Vec<u8> {
    /// The next element of `der`: (whole element, its contents, the rest).
    fn next(der: &[u8]) -> (&[u8], &[u8], &[u8]) {
        let (length, header) = match der[1] {
            short @ 0..=0x7f => (usize::from(short), 2),
            long => {
                let count = usize::from(long & 0x7f);
                let length = der[2..2 + count]
                    .iter()
                    .fold(0, |length, byte| length << 8 | usize::from(*byte));
                (length, 2 + count)
            }
        };
        let end = header + length;
        (&der[..end], &der[header..end], &der[end..])
    }
    let (_, certificate, _) = next(der);
    let (_, tbs, _) = next(certificate);
    let (_, _, rest) = next(tbs); // version
    let (_, _, rest) = next(rest); // serialNumber
    let (_, _, rest) = next(rest); // signature
    let (_, _, rest) = next(rest); // issuer
    let (_, _, rest) = next(rest); // validity
    next(rest).0.to_vec()
}
