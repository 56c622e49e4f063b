//! Certificate revocation by OCSP (the OCSP Support spec; RFC 6960), checked by the
//! certificate verifier during the TLS handshake, without I/O: the stapled response
//! rustls hands the verifier (RFC 6066 `status_request`, which rustls always asks
//! for), Must-Staple (RFC 7633), and a per-client cache of conclusive responses.
//!
//! What is checked, after webpki has validated the chain (and the `tlsCRLFile`'s
//! revocation lists, when given) — the spec's "Suggested OCSP Behavior":
//!
//! 1. A Must-Staple certificate (its TLS feature extension lists `status_request`)
//!    without a stapled response ends the connection.
//! 2. A stapled response that is invalid per RFC 6960 section 3.2 (its signature is
//!    neither the issuer's nor a delegated responder's that the issuer certified for
//!    OCSP signing, its time window `thisUpdate ⩽ now < nextUpdate` does not hold, it
//!    is not `successful`), or that does not cover the server's certificate, ends the
//!    connection.
//! 3. A valid stapled response that says `revoked` ends the connection; `good` or
//!    `revoked` are cached (keyed by the CertID, until `nextUpdate`), `unknown` is not.
//! 4. Without a conclusive staple, the cache answers.
//! 5. Else, after the handshake (a certificate verifier cannot wait for the network),
//!    the responders the certificate names (its Authority Information Access
//!    extension) are asked in parallel through the host's [`OcspResponder`], unless
//!    `tlsDisableOCSPEndpointCheck`; the first valid response that says `good` or
//!    `revoked` decides (and is cached). When none does — no responder named, none
//!    reachable, no [`OcspResponder`] given — the connection goes on: the spec's "soft
//!    fail". A resumed TLS session is not checked again: its first handshake was.
//!
//! `tlsDisableCertificateRevocationCheck` skips all of this; `tlsInsecure` and
//! `tlsAllowInvalidCertificates` skip it too, as they skip the chain's validation.
//! Only the server's own certificate is checked, never intermediates' (spec steps 8
//! and 9: no further round trips for them).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime};
use rustls::{CertificateError, OtherError, RootCertStore};

use crate::http::HttpClient;
use crate::rt::{boxed, BoxFuture, MaybeSend, MaybeSync};
use crate::sync::lock;

/// The seam through which OCSP responders are asked: the host's HTTP client.
///
/// Given to a client's TLS configurations with
/// [`ClientConfigs::with_ocsp_responder`](super::ClientConfigs::with_ocsp_responder);
/// without one, certificates without a stapled or cached answer pass (the spec's soft
/// fail).
pub trait OcspResponder: MaybeSend + MaybeSync {
    /// POSTs the DER OCSP request `request` (RFC 6960 appendix A.1: `Content-Type:
    /// application/ocsp-request`) to the responder at `url` (as the certificate names
    /// it, usually `http://`) and returns the response's body when its status is 200,
    /// giving up after `timeout` (see [`responder_timeout`]); an error or a timeout
    /// counts as no answer.
    fn post<'a>(
        &'a self,
        url: &'a str,
        request: &'a [u8],
        timeout: Duration,
    ) -> BoxFuture<'a, io::Result<Vec<u8>>>;
}

/// How long asking one responder may take at most: the OCSP Support spec's default
/// timeout ("Suggested OCSP Behavior" step 7: per the Client Side Operations Timeout
/// spec, five seconds by default).
pub const RESPONDER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the responders may be asked on a connection that has `time_left` to open
/// ([`ConnectTarget::time_left`](crate::rt::ConnectTarget::time_left); `None`:
/// unbounded): [`RESPONDER_TIMEOUT`], and at most half of what is left, so that a
/// responder that does not answer in time is no answer (the spec's soft fail) and
/// the MongoDB handshake and authentication that follow still have the other half
/// (the Client Side Operations Timeout spec, "Server Selection": requests to OCSP
/// responders get `min(operationTimeout, remaining time)`), instead of the connection
/// timing out while the responder keeps silent.
pub fn responder_timeout(time_left: Option<Duration>) -> Duration {
    match time_left {
        Some(left) => RESPONDER_TIMEOUT.min(left / 2),
        None => RESPONDER_TIMEOUT,
    }
}

/// The driver's own HTTP client asks responders: the built-in transports give each
/// client one, over a transport of its own without a responder (an `https` responder
/// is not asked about its own certificate).
impl OcspResponder for HttpClient {
    fn post<'a>(
        &'a self,
        url: &'a str,
        request: &'a [u8],
        timeout: Duration,
    ) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        boxed(async move {
            let deadline = self.clock().now() + timeout;
            let headers = [
                ("Content-Type", "application/ocsp-request"),
                ("Accept", "application/ocsp-response"),
            ];
            let response = HttpClient::post(self, url, &headers, request, deadline).await?;
            // Any other status carries no OCSP response (RFC 6960 appendix A.1.2).
            match response.status {
                200 => Ok(response.body),
                status => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the OCSP responder {url} answered with status {status}"),
                )),
            }
        })
    }
}

/// Why a certificate's revocation check failed: its message is the TLS error's.
#[derive(Debug)]
struct RevocationError(String);

impl std::fmt::Display for RevocationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RevocationError {}

fn refuse(message: impl Into<String>) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(std::sync::Arc::new(
        RevocationError(message.into()),
    ))))
}

/// What an OCSP response says of a certificate (RFC 6960 4.2.1, `CertStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Good,
    Revoked,
    Unknown,
}

/// A verified response's answer for one certificate, with its time window (seconds
/// since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    status: Status,
    this_update: u64,
    next_update: Option<u64>,
}

/// Conclusive OCSP answers (`good` or `revoked`), keyed by the CertID (SHA-1) of the
/// certificate they are about, each kept until its `nextUpdate` (OCSP Support spec,
/// "Suggested OCSP Caching Behavior"). One per client configuration.
#[derive(Debug, Default)]
pub(crate) struct OcspCache {
    answers: Mutex<HashMap<Vec<u8>, Answer>>,
}

impl OcspCache {
    /// The cached status of `cert_id` at `now`: valid while `thisUpdate ⩽ now <
    /// nextUpdate`; an expired entry is dropped.
    fn get(&self, cert_id: &[u8], now: u64) -> Option<Status> {
        let mut answers = lock(&self.answers);
        let answer = *answers.get(cert_id)?;
        match answer.next_update {
            Some(next) if answer.this_update <= now && now < next => Some(answer.status),
            _ => {
                answers.remove(cert_id);
                None
            }
        }
    }

    /// Keeps a conclusive answer that has a `nextUpdate`, unless a fresher one (a
    /// later `nextUpdate`) is kept already.
    fn put(&self, cert_id: Vec<u8>, answer: Answer) {
        let (Some(next), Status::Good | Status::Revoked) = (answer.next_update, answer.status)
        else {
            return;
        };
        let mut answers = lock(&self.answers);
        match answers.get(&cert_id).and_then(|kept| kept.next_update) {
            Some(kept) if kept >= next => {}
            _ => {
                answers.insert(cert_id, answer);
            }
        }
    }
}

/// A client configuration's OCSP checks: the authorities the verifier trusts (to find
/// the issuer of the server's certificate), the cache, and whether responders may be
/// asked.
#[derive(Debug)]
pub(crate) struct Revocation {
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
    cache: OcspCache,
    /// Not `tlsDisableOCSPEndpointCheck`.
    ask_responders: bool,
}

impl Revocation {
    pub(crate) fn new(
        roots: Arc<RootCertStore>,
        algorithms: WebPkiSupportedAlgorithms,
        ask_responders: bool,
    ) -> Revocation {
        Revocation {
            roots,
            algorithms,
            cache: OcspCache::default(),
            ask_responders,
        }
    }

    /// Checks the revocation status of the server's certificate `end_entity` (whose
    /// chain webpki validated) from the stapled OCSP response `staple` (empty when
    /// none) and the cache, during the handshake, as the module docs say.
    pub(crate) fn check_staple(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        staple: &[u8],
        now: UnixTime,
    ) -> Result<(), rustls::Error> {
        let now = now.as_secs();
        let leaf = Certificate::parse(end_entity)
            .map_err(|error| refuse(format!("cannot read the server's certificate: {error}")))?;
        if staple.is_empty() && leaf.must_staple {
            return Err(refuse(
                "the server's certificate requires a stapled OCSP response (Must-Staple) and \
                 the server sent none",
            ));
        }
        let Some(issuer) = Issuer::find(&leaf, intermediates, &self.roots) else {
            // webpki found the issuer; not finding it again means it is a root whose
            // name is encoded differently: nothing to check a response against.
            return Ok(());
        };
        let cert_id = CertId::of(&leaf, &issuer, HashAlgorithm::Sha1);
        if !staple.is_empty() {
            let answer = verify_response(staple, &leaf, &issuer, now, &self.algorithms)
                .map_err(|error| refuse(format!("invalid stapled OCSP response: {error}")))?;
            if answer.status != Status::Unknown {
                self.cache.put(cert_id.key(), answer);
            }
            match answer.status {
                Status::Revoked => {
                    return Err(refuse(
                        "the server's certificate is revoked (its stapled OCSP response says so)",
                    ))
                }
                Status::Good => return Ok(()),
                Status::Unknown => {}
            }
        }
        match self.cache.get(&cert_id.key(), now) {
            Some(Status::Revoked) => Err(refuse(
                "the server's certificate is revoked (a cached OCSP response says so)",
            )),
            // Good, or still unknown: the responders are asked after the handshake.
            _ => Ok(()),
        }
    }

    /// After a full handshake with the server whose certificate chain is `chain`: when
    /// neither a staple nor the cache gave a conclusive answer, asks the responders the
    /// certificate names through `responder`, in parallel (spec step 7), each for
    /// [`responder_timeout`] of the connection's `time_left`, and refuses a certificate
    /// the first conclusive valid answer says is revoked.
    pub(crate) async fn ask_responders(
        &self,
        chain: &[CertificateDer<'_>],
        responder: &dyn OcspResponder,
        time_left: Option<Duration>,
    ) -> Result<(), rustls::Error> {
        let Some((end_entity, intermediates)) = chain.split_first() else {
            return Ok(());
        };
        let Ok(leaf) = Certificate::parse(end_entity) else {
            return Ok(());
        };
        if !self.ask_responders || leaf.ocsp_urls.is_empty() {
            return Ok(());
        }
        let Some(issuer) = Issuer::find(&leaf, intermediates, &self.roots) else {
            return Ok(());
        };
        let cert_id = CertId::of(&leaf, &issuer, HashAlgorithm::Sha1);
        if self
            .cache
            .get(&cert_id.key(), UnixTime::now().as_secs())
            .is_some()
        {
            return Ok(());
        }
        let request = cert_id.request();
        let timeout = responder_timeout(time_left);
        let mut answers: FuturesUnordered<_> = leaf
            .ocsp_urls
            .iter()
            .map(|url| responder.post(url, &request, timeout))
            .collect();
        while let Some(body) = answers.next().await {
            // An unreachable responder, or an invalid answer, is no answer.
            let Ok(body) = body else { continue };
            let now = UnixTime::now().as_secs();
            let Ok(answer) = verify_response(&body, &leaf, &issuer, now, &self.algorithms) else {
                continue;
            };
            match answer.status {
                Status::Unknown => continue,
                Status::Good => {
                    self.cache.put(cert_id.key(), answer);
                    return Ok(());
                }
                Status::Revoked => {
                    self.cache.put(cert_id.key(), answer);
                    return Err(refuse(
                        "the server's certificate is revoked (its OCSP responder says so)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Verifies the OCSP response `der` about `leaf` per RFC 6960 section 3.2, and
/// returns its answer for `leaf`.
fn verify_response(
    der: &[u8],
    leaf: &Certificate<'_>,
    issuer: &Issuer<'_>,
    now: u64,
    algorithms: &WebPkiSupportedAlgorithms,
) -> Result<Answer, String> {
    let response = Response::parse(der)?;
    let signer = response.signer(issuer, now, algorithms)?;
    verify_signature(
        algorithms,
        signer.spki,
        response.signature_algorithm,
        response.tbs,
        response.signature,
    )
    .map_err(|_| "its signature does not verify".to_owned())?;
    let mut covering = None;
    for single in &response.responses {
        let hash = HashAlgorithm::from_alg_id(single.hash_algorithm);
        if let Some(hash) = hash {
            if CertId::of(leaf, issuer, hash) == single.cert_id {
                covering = Some(single);
                break;
            }
        }
    }
    let single = covering.ok_or("it is not about the server's certificate")?;
    if now < single.this_update {
        return Err("its thisUpdate is in the future".into());
    }
    if let Some(next) = single.next_update {
        if now >= next {
            return Err("it expired (its nextUpdate has passed)".into());
        }
    }
    Ok(Answer {
        status: single.status,
        this_update: single.this_update,
        next_update: single.next_update,
    })
}

/// Verifies `signature` over `message` with the key in `spki` (a
/// SubjectPublicKeyInfo's contents) and the signature algorithm `signature_algorithm`
/// (an AlgorithmIdentifier's contents), among those rustls' provider supports.
fn verify_signature(
    algorithms: &WebPkiSupportedAlgorithms,
    spki: &[u8],
    signature_algorithm: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), ()> {
    let mut spki = Der::new(spki);
    let key_algorithm = spki.expect(SEQUENCE).map_err(|_| ())?;
    let key = bit_string(spki.expect(BIT_STRING).map_err(|_| ())?).map_err(|_| ())?;
    algorithms
        .all
        .iter()
        .filter(|algorithm| {
            algorithm.public_key_alg_id().as_ref() == key_algorithm
                && algorithm.signature_alg_id().as_ref() == signature_algorithm
        })
        .find_map(|algorithm| algorithm.verify_signature(key, message, signature).ok())
        .ok_or(())
}

/// The issuer of the server's certificate: its subject (a Name's contents) and key (a
/// SubjectPublicKeyInfo's contents).
struct Issuer<'a> {
    subject: &'a [u8],
    spki: &'a [u8],
}

impl<'a> Issuer<'a> {
    /// The certificate among `intermediates`, else the trust anchor among `roots`,
    /// whose subject is `leaf`'s issuer.
    fn find(
        leaf: &Certificate<'_>,
        intermediates: &'a [CertificateDer<'_>],
        roots: &'a RootCertStore,
    ) -> Option<Issuer<'a>> {
        let intermediate = intermediates
            .iter()
            .filter_map(|der| Certificate::parse(der).ok())
            .find(|certificate| certificate.subject == leaf.issuer)
            .map(|certificate| Issuer {
                subject: certificate.subject,
                spki: certificate.spki,
            });
        intermediate.or_else(|| {
            roots
                .roots
                .iter()
                .find(|anchor: &&TrustAnchor<'_>| anchor.subject.as_ref() == leaf.issuer)
                .map(|anchor| Issuer {
                    subject: anchor.subject.as_ref(),
                    spki: anchor.subject_public_key_info.as_ref(),
                })
        })
    }

    /// The `subjectPublicKey` bits.
    fn key(&self) -> Option<&'a [u8]> {
        let mut spki = Der::new(self.spki);
        spki.expect(SEQUENCE).ok()?;
        bit_string(spki.expect(BIT_STRING).ok()?).ok()
    }
}

/// The hash algorithms a CertID may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HashAlgorithm {
    Sha1,
    Sha256,
}

/// id-sha1 (1.3.14.3.2.26) and id-sha256 (2.16.840.1.101.3.4.2.1), DER-encoded OIDs.
const OID_SHA1: &[u8] = &[0x2b, 0x0e, 0x03, 0x02, 0x1a];
const OID_SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];

impl HashAlgorithm {
    /// The algorithm an AlgorithmIdentifier's contents name (parameters, absent or
    /// NULL, ignored).
    fn from_alg_id(alg_id: &[u8]) -> Option<HashAlgorithm> {
        let oid = Der::new(alg_id).expect(OID).ok()?;
        match oid {
            OID_SHA1 => Some(HashAlgorithm::Sha1),
            OID_SHA256 => Some(HashAlgorithm::Sha256),
            _ => None,
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        let algorithm = match self {
            HashAlgorithm::Sha1 => &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
            HashAlgorithm::Sha256 => &ring::digest::SHA256,
        };
        ring::digest::digest(algorithm, data).as_ref().to_vec()
    }
}

/// RFC 6960 4.1.1 `CertID`, its hash algorithm aside.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CertId {
    issuer_name_hash: Vec<u8>,
    issuer_key_hash: Vec<u8>,
    serial: Vec<u8>,
}

impl CertId {
    /// The CertID of `leaf` issued by `issuer` with `hash`: the hash of the issuer's
    /// DER-encoded Name, that of its public key's bits, and the serial number.
    fn of(leaf: &Certificate<'_>, issuer: &Issuer<'_>, hash: HashAlgorithm) -> CertId {
        CertId {
            issuer_name_hash: hash.digest(&encode(SEQUENCE, issuer.subject)),
            issuer_key_hash: hash.digest(issuer.key().unwrap_or_default()),
            serial: leaf.serial.to_vec(),
        }
    }

    /// The DER `OCSPRequest` (RFC 6960 4.1.1) for this certificate alone, unsigned,
    /// without a nonce (the spec's Q&A: not required).
    fn request(&self) -> Vec<u8> {
        let hash_algorithm = encode(
            SEQUENCE,
            &[encode(OID, OID_SHA1), vec![0x05, 0x00]].concat(),
        );
        let cert_id = [
            hash_algorithm,
            encode(OCTET_STRING, &self.issuer_name_hash),
            encode(OCTET_STRING, &self.issuer_key_hash),
            encode(INTEGER, &self.serial),
        ]
        .concat();
        let request = encode(SEQUENCE, &encode(SEQUENCE, &cert_id));
        let tbs_request = encode(SEQUENCE, &encode(SEQUENCE, &request));
        encode(SEQUENCE, &tbs_request)
    }

    /// The cache's key.
    fn key(&self) -> Vec<u8> {
        [
            &self.issuer_name_hash[..],
            &self.issuer_key_hash,
            &self.serial,
        ]
        .concat()
    }
}

/// id-pe-tlsfeature (1.3.6.1.5.5.7.1.24), RFC 7633.
const OID_TLS_FEATURE: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x18];
/// The TLS extension `status_request` (RFC 6066), as a TLS feature.
const STATUS_REQUEST: &[u8] = &[0x05];
/// id-pe-authorityInfoAccess (1.3.6.1.5.5.7.1.1).
const OID_AUTHORITY_INFO_ACCESS: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x01];
/// id-ad-ocsp (1.3.6.1.5.5.7.48.1).
const OID_AD_OCSP: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01];
/// id-ce-extKeyUsage (2.5.29.37).
const OID_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
/// id-kp-OCSPSigning (1.3.6.1.5.5.7.3.9).
const OID_OCSP_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09];
/// id-pkix-ocsp-basic (1.3.6.1.5.5.7.48.1.1).
const OID_OCSP_BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];

/// The parts of an X.509 certificate the checks read; slices are contents (no tag
/// nor length) of the DER fields, except `tbs`.
struct Certificate<'a> {
    /// The whole `tbsCertificate`, tag and length included: what is signed.
    tbs: &'a [u8],
    serial: &'a [u8],
    issuer: &'a [u8],
    subject: &'a [u8],
    spki: &'a [u8],
    not_before: u64,
    not_after: u64,
    signature_algorithm: &'a [u8],
    signature: &'a [u8],
    must_staple: bool,
    ocsp_signing: bool,
    /// The OCSP responders its Authority Information Access extension names.
    ocsp_urls: Vec<String>,
}

impl<'a> Certificate<'a> {
    fn parse(der: &'a [u8]) -> Result<Certificate<'a>, String> {
        let mut outer = Der::new(Der::new(der).expect(SEQUENCE)?);
        let (_, tbs_contents, tbs) = outer.read()?;
        let signature_algorithm = outer.expect(SEQUENCE)?;
        let signature = bit_string(outer.expect(BIT_STRING)?)?;
        let mut fields = Der::new(tbs_contents);
        fields.optional(0xa0)?; // version
        let serial = fields.expect(INTEGER)?;
        fields.expect(SEQUENCE)?; // signature
        let issuer = fields.expect(SEQUENCE)?;
        let mut validity = Der::new(fields.expect(SEQUENCE)?);
        let not_before = validity.time()?;
        let not_after = validity.time()?;
        let subject = fields.expect(SEQUENCE)?;
        let spki = fields.expect(SEQUENCE)?;
        fields.optional(0x81)?; // issuerUniqueID
        fields.optional(0x82)?; // subjectUniqueID
        let mut certificate = Certificate {
            tbs,
            serial,
            issuer,
            subject,
            spki,
            not_before,
            not_after,
            signature_algorithm,
            signature,
            must_staple: false,
            ocsp_signing: false,
            ocsp_urls: Vec::new(),
        };
        if let Some(extensions) = fields.optional(0xa3)? {
            let mut extensions = Der::new(Der::new(extensions).expect(SEQUENCE)?);
            while !extensions.is_empty() {
                let mut extension = Der::new(extensions.expect(SEQUENCE)?);
                let oid = extension.expect(OID)?;
                extension.optional(BOOLEAN)?; // critical
                let value = extension.expect(OCTET_STRING)?;
                match oid {
                    OID_TLS_FEATURE => {
                        certificate.must_staple = sequence_holds(value, INTEGER, STATUS_REQUEST)?
                    }
                    OID_EXT_KEY_USAGE => {
                        certificate.ocsp_signing = sequence_holds(value, OID, OID_OCSP_SIGNING)?
                    }
                    OID_AUTHORITY_INFO_ACCESS => certificate.ocsp_urls = ocsp_urls(value)?,
                    _ => {}
                }
            }
        }
        Ok(certificate)
    }
}

/// The OCSP responders' URLs in an Authority Information Access extension's value
/// (RFC 5280 4.2.2.1: `accessLocation`s of method id-ad-ocsp that are URIs).
fn ocsp_urls(der: &[u8]) -> Result<Vec<String>, String> {
    let mut urls = Vec::new();
    let mut descriptions = Der::new(Der::new(der).expect(SEQUENCE)?);
    while !descriptions.is_empty() {
        let mut description = Der::new(descriptions.expect(SEQUENCE)?);
        let method = description.expect(OID)?;
        // uniformResourceIdentifier [6] IA5String.
        let (tag, location, _) = description.read()?;
        if method == OID_AD_OCSP && tag == 0x86 {
            urls.extend(std::str::from_utf8(location).ok().map(str::to_owned));
        }
    }
    Ok(urls)
}

/// Whether the DER `SEQUENCE OF` in `der` holds an element of type `tag` and contents
/// `wanted`.
fn sequence_holds(der: &[u8], tag: u8, wanted: &[u8]) -> Result<bool, String> {
    let mut elements = Der::new(Der::new(der).expect(SEQUENCE)?);
    while !elements.is_empty() {
        let (element_tag, contents, _) = elements.read()?;
        if element_tag == tag && contents == wanted {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A `BasicOCSPResponse` (RFC 6960 4.2.1), the parts the checks read.
struct Response<'a> {
    /// The whole `tbsResponseData`: what is signed.
    tbs: &'a [u8],
    responder: ResponderId<'a>,
    responses: Vec<SingleResponse<'a>>,
    signature_algorithm: &'a [u8],
    signature: &'a [u8],
    /// The certificates sent along: a delegated responder's.
    certs: Vec<Certificate<'a>>,
}

enum ResponderId<'a> {
    /// A Name's contents.
    ByName(&'a [u8]),
    /// The SHA-1 hash of the responder's public key bits.
    ByKey(&'a [u8]),
}

struct SingleResponse<'a> {
    hash_algorithm: &'a [u8],
    cert_id: CertId,
    status: Status,
    this_update: u64,
    next_update: Option<u64>,
}

/// The key (a SubjectPublicKeyInfo's contents) that signed a response.
struct Signer<'a> {
    spki: &'a [u8],
}

impl<'a> Response<'a> {
    fn parse(der: &'a [u8]) -> Result<Response<'a>, String> {
        let mut response = Der::new(Der::new(der).expect(SEQUENCE)?);
        match response.expect(ENUMERATED)? {
            [0] => {}
            [status] => {
                return Err(format!(
                    "the responder answered {} instead of successful",
                    match status {
                        1 => "malformedRequest",
                        2 => "internalError",
                        3 => "tryLater",
                        5 => "sigRequired",
                        6 => "unauthorized",
                        _ => "an unknown status",
                    }
                ))
            }
            _ => return Err("malformed responseStatus".into()),
        }
        let mut bytes = Der::new(Der::new(response.expect(0xa0)?).expect(SEQUENCE)?);
        if bytes.expect(OID)? != OID_OCSP_BASIC {
            return Err("it is not a basic OCSP response".into());
        }
        let mut basic = Der::new(Der::new(bytes.expect(OCTET_STRING)?).expect(SEQUENCE)?);
        let (_, data, tbs) = basic.read()?;
        let signature_algorithm = basic.expect(SEQUENCE)?;
        let signature = bit_string(basic.expect(BIT_STRING)?)?;
        let mut certs = Vec::new();
        if let Some(list) = basic.optional(0xa0)? {
            let mut list = Der::new(Der::new(list).expect(SEQUENCE)?);
            while !list.is_empty() {
                let (_, _, whole) = list.read()?;
                certs.push(Certificate::parse(whole)?);
            }
        }

        let mut data = Der::new(data);
        data.optional(0xa0)?; // version
        let responder = match data.read()? {
            (0xa1, name, _) => ResponderId::ByName(Der::new(name).expect(SEQUENCE)?),
            (0xa2, key, _) => ResponderId::ByKey(Der::new(key).expect(OCTET_STRING)?),
            _ => return Err("malformed responderID".into()),
        };
        data.expect(GENERALIZED_TIME)?; // producedAt
        let mut list = Der::new(data.expect(SEQUENCE)?);
        let mut responses = Vec::new();
        while !list.is_empty() {
            let mut single = Der::new(list.expect(SEQUENCE)?);
            let mut cert_id = Der::new(single.expect(SEQUENCE)?);
            let hash_algorithm = cert_id.expect(SEQUENCE)?;
            let cert_id = CertId {
                issuer_name_hash: cert_id.expect(OCTET_STRING)?.to_vec(),
                issuer_key_hash: cert_id.expect(OCTET_STRING)?.to_vec(),
                serial: cert_id.expect(INTEGER)?.to_vec(),
            };
            let status = match single.read()?.0 {
                0x80 => Status::Good,
                0xa1 => Status::Revoked,
                0x82 => Status::Unknown,
                _ => return Err("malformed certStatus".into()),
            };
            let this_update = generalized_time(single.expect(GENERALIZED_TIME)?)?;
            let next_update = match single.optional(0xa0)? {
                Some(next) => Some(generalized_time(Der::new(next).expect(GENERALIZED_TIME)?)?),
                None => None,
            };
            responses.push(SingleResponse {
                hash_algorithm,
                cert_id,
                status,
                this_update,
                next_update,
            });
        }
        Ok(Response {
            tbs,
            responder,
            responses,
            signature_algorithm,
            signature,
            certs,
        })
    }

    /// The key that signed this response, per RFC 6960 4.2.2.2: the issuer's own, or
    /// that of a delegated responder whose certificate, sent along, the issuer signed,
    /// valid now, for OCSP signing. The responderID names it.
    fn signer(
        &self,
        issuer: &Issuer<'a>,
        now: u64,
        algorithms: &WebPkiSupportedAlgorithms,
    ) -> Result<Signer<'a>, String> {
        let names = |subject: &[u8], spki: &[u8]| match self.responder {
            ResponderId::ByName(name) => name == subject,
            ResponderId::ByKey(hash) => {
                let mut key = Der::new(spki);
                key.expect(SEQUENCE).is_ok()
                    && key
                        .expect(BIT_STRING)
                        .ok()
                        .and_then(|bits| bit_string(bits).ok())
                        .is_some_and(|bits| HashAlgorithm::Sha1.digest(bits) == hash)
            }
        };
        if names(issuer.subject, issuer.spki) {
            return Ok(Signer { spki: issuer.spki });
        }
        let delegate = self
            .certs
            .iter()
            .find(|cert| names(cert.subject, cert.spki))
            .ok_or("its signer is neither the issuer nor a responder certificate sent along")?;
        if delegate.issuer != issuer.subject
            || verify_signature(
                algorithms,
                issuer.spki,
                delegate.signature_algorithm,
                delegate.tbs,
                delegate.signature,
            )
            .is_err()
        {
            return Err("its responder's certificate was not issued by the server's issuer".into());
        }
        if !delegate.ocsp_signing {
            return Err("its responder's certificate is not for OCSP signing".into());
        }
        if now < delegate.not_before || now > delegate.not_after {
            return Err("its responder's certificate is not valid now".into());
        }
        Ok(Signer {
            spki: delegate.spki,
        })
    }
}

const BOOLEAN: u8 = 0x01;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const ENUMERATED: u8 = 0x0a;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const SEQUENCE: u8 = 0x30;

/// A reader of DER elements one after another (single-byte tags: all that
/// certificates and OCSP responses use).
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(der: &'a [u8]) -> Der<'a> {
        Der { rest: der }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element: its tag, its contents, and the whole element.
    fn read(&mut self) -> Result<(u8, &'a [u8], &'a [u8]), String> {
        let malformed = || "malformed DER".to_owned();
        let [tag, first, ..] = *self.rest else {
            return Err(malformed());
        };
        let (length, header) = match first {
            0..=0x7f => (usize::from(first), 2),
            0x81..=0x84 => {
                let count = usize::from(first & 0x7f);
                let bytes = self.rest.get(2..2 + count).ok_or_else(malformed)?;
                let length = bytes
                    .iter()
                    .fold(0usize, |length, byte| length << 8 | usize::from(*byte));
                (length, 2 + count)
            }
            _ => return Err(malformed()),
        };
        let end = header.checked_add(length).ok_or_else(malformed)?;
        let whole = self.rest.get(..end).ok_or_else(malformed)?;
        self.rest = &self.rest[end..];
        Ok((tag, &whole[header..], whole))
    }

    /// The contents of the next element, which must have tag `tag`.
    fn expect(&mut self, tag: u8) -> Result<&'a [u8], String> {
        match self.read()? {
            (found, contents, _) if found == tag => Ok(contents),
            (found, ..) => Err(format!(
                "malformed DER: tag {found:#04x} where {tag:#04x} was expected"
            )),
        }
    }

    /// The contents of the next element if its tag is `tag`, else nothing is read.
    fn optional(&mut self, tag: u8) -> Result<Option<&'a [u8]>, String> {
        match self.rest.first() {
            Some(&found) if found == tag => self.expect(tag).map(Some),
            _ => Ok(None),
        }
    }

    /// The next element, a UTCTime or a GeneralizedTime, in seconds since the epoch.
    fn time(&mut self) -> Result<u64, String> {
        match self.read()? {
            (UTC_TIME, text, _) => {
                // RFC 5280 4.1.2.5.1: YY below 50 is 20YY.
                let year = digits(text.get(..2).ok_or("malformed UTCTime")?)?;
                let century = if year < 50 { b"20" } else { b"19" };
                generalized_time(&[&century[..], text].concat())
            }
            (GENERALIZED_TIME, text, _) => generalized_time(text),
            _ => Err("malformed time".into()),
        }
    }
}

/// The bits of a BIT STRING's contents (whole bytes: keys and signatures).
fn bit_string(contents: &[u8]) -> Result<&[u8], String> {
    match contents.split_first() {
        Some((0, bits)) => Ok(bits),
        _ => Err("malformed BIT STRING".into()),
    }
}

/// `contents` as one DER element with tag `tag`.
fn encode(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut der = vec![tag];
    match contents.len() {
        length @ 0..=0x7f => der.push(length as u8),
        length => {
            let bytes = length.to_be_bytes();
            let skip = bytes.iter().take_while(|byte| **byte == 0).count();
            der.push(0x80 | (bytes.len() - skip) as u8);
            der.extend_from_slice(&bytes[skip..]);
        }
    }
    der.extend_from_slice(contents);
    der
}

fn digits(text: &[u8]) -> Result<u64, String> {
    text.iter().try_fold(0, |value, digit| match digit {
        b'0'..=b'9' => Ok(value * 10 + u64::from(digit - b'0')),
        _ => Err("malformed time".to_owned()),
    })
}

/// A DER GeneralizedTime (`YYYYMMDDHHMMSSZ`, RFC 5280 4.1.2.5.2) in seconds since the
/// Unix epoch.
fn generalized_time(text: &[u8]) -> Result<u64, String> {
    if text.len() != 15 || text[14] != b'Z' {
        return Err("malformed GeneralizedTime".into());
    }
    let field = |range: std::ops::Range<usize>| digits(&text[range]);
    let (year, month, day) = (field(0..4)?, field(4..6)?, field(6..8)?);
    let (hour, minute, second) = (field(8..10)?, field(10..12)?, field(12..14)?);
    if !(1970..=9999).contains(&year) || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err("malformed GeneralizedTime".into());
    }
    // Days from the epoch to the civil date (Howard Hinnant's algorithm).
    let (y, m) = match month {
        1 | 2 => (year - 1, month + 9),
        _ => (year, month - 3),
    };
    let era = y / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Ok(days * 86_400 + hour * 3600 + minute * 60 + second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generalized_times_count_seconds_from_the_epoch() {
        assert_eq!(generalized_time(b"19700101000000Z"), Ok(0));
        assert_eq!(generalized_time(b"20000301000000Z"), Ok(951_868_800));
        assert_eq!(generalized_time(b"20261207185400Z"), Ok(1_796_669_640));
        assert!(generalized_time(b"2026120718540Z").is_err());
        let mut validity = Der::new(b"\x17\x0d491231235959Z\x17\x0d500101000000Z");
        assert_eq!(validity.time(), generalized_time(b"20491231235959Z"));
        assert!(validity.time().is_err(), "1950 is before the epoch");
    }

    #[test]
    fn the_ocsp_urls_are_the_ocsp_access_descriptions_uris() {
        // caIssuers (1.3.6.1.5.5.7.48.2) then OCSP, as RFC 5280 4.2.2.1 writes them.
        let description = |method: u8, url: &str| {
            let oid = encode(OID, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, method]);
            encode(SEQUENCE, &[oid, encode(0x86, url.as_bytes())].concat())
        };
        let value = encode(
            SEQUENCE,
            &[
                description(2, "http://ca.test/ca.crt"),
                description(1, "http://ocsp.test"),
            ]
            .concat(),
        );
        assert_eq!(ocsp_urls(&value), Ok(vec!["http://ocsp.test".to_owned()]));
        assert!(ocsp_urls(&value[..value.len() - 1]).is_err());
    }

    #[test]
    fn a_request_holds_the_cert_id_alone() {
        let cert_id = CertId {
            issuer_name_hash: vec![1; 20],
            issuer_key_hash: vec![2; 20],
            serial: vec![0x10, 0x01],
        };
        let request = cert_id.request();
        let mut der = Der::new(&request);
        let mut der = Der::new(der.expect(SEQUENCE).unwrap()); // OCSPRequest
        let mut der = Der::new(der.expect(SEQUENCE).unwrap()); // tbsRequest
        let mut der = Der::new(der.expect(SEQUENCE).unwrap()); // requestList
        let mut der = Der::new(der.expect(SEQUENCE).unwrap()); // Request
        let mut fields = Der::new(der.expect(SEQUENCE).unwrap()); // CertID
        let hash = fields.expect(SEQUENCE).unwrap();
        assert_eq!(HashAlgorithm::from_alg_id(hash), Some(HashAlgorithm::Sha1));
        assert_eq!(fields.expect(OCTET_STRING).unwrap(), [1; 20]);
        assert_eq!(fields.expect(OCTET_STRING).unwrap(), [2; 20]);
        assert_eq!(fields.expect(INTEGER).unwrap(), [0x10, 0x01]);
        assert!(fields.is_empty() && der.is_empty());
    }

    #[test]
    fn an_unsuccessful_or_malformed_response_says_why() {
        let error = |der: &[u8]| Response::parse(der).err().unwrap_or_default();
        assert!(error(b"\x30\x03\x0a\x01\x03").contains("tryLater"));
        assert!(error(b"\x30\x03\x0a\x01\x06").contains("unauthorized"));
        assert!(error(b"\x30\x05\x0a\x01").contains("malformed"));
        assert!(error(b"").contains("malformed"));
        // A length beyond the data, in long form.
        assert!(error(b"\x30\x82\xff\xff\x0a").contains("malformed"));
    }

    #[test]
    fn the_cache_keeps_conclusive_answers_until_next_update_and_the_freshest() {
        let cache = OcspCache::default();
        let answer = |status, next_update| Answer {
            status,
            this_update: 100,
            next_update,
        };
        cache.put(b"unknown".to_vec(), answer(Status::Unknown, Some(200)));
        cache.put(b"no next update".to_vec(), answer(Status::Good, None));
        assert_eq!(cache.get(b"unknown", 150), None);
        assert_eq!(cache.get(b"no next update", 150), None);

        cache.put(b"id".to_vec(), answer(Status::Good, Some(200)));
        cache.put(b"id".to_vec(), answer(Status::Revoked, Some(150)));
        assert_eq!(cache.get(b"id", 99), None);
        cache.put(b"id".to_vec(), answer(Status::Good, Some(200)));
        assert_eq!(cache.get(b"id", 199), Some(Status::Good));
        cache.put(b"id".to_vec(), answer(Status::Revoked, Some(300)));
        assert_eq!(cache.get(b"id", 250), Some(Status::Revoked));
        assert_eq!(cache.get(b"id", 300), None);
    }
}
