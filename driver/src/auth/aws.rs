//! MONGODB-AWS (Authentication spec, "MONGODB-AWS"): AWS IAM credentials proven by an
//! AWS Signature Version 4 of an STS `GetCallerIdentity` request that the server
//! forwards to STS.
//!
//! Everything here is I/O-free. The caller supplies the inputs a sans-IO core cannot
//! fetch itself: the credentials ([`credentials_from`] reads them through an
//! environment-variable lookup; `auth::cloud` fetches them from AWS endpoints) and the
//! current UTC time.
//!
//! The conversation ("Conversation"):
//!
//! 1. client-first `saslStart` payload `{r: <32-byte client nonce>, p: 110}`;
//! 2. server-first `{s: <64-byte server nonce>, h: <STS host>}`, validated;
//! 3. client-final `saslContinue` payload `{a: <Authorization header>, d: <X-Amz-Date>,
//!    t: <session token, only with temporary credentials>}`.
//!

use std::fmt;

use base64::Engine as _;
use bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::sasl::{continue_command, start_command, Reply};
use super::{auth_error, AuthMechanism, Conversation, Credential, Step};
use crate::error::{Error, Result};

const MECHANISM: AuthMechanism = AuthMechanism::MongoDbAws;
/// The mechanism's database ("source MUST be $external").
const SOURCE: &str = "$external";

/// An authentication failure the driver detects (a bad reply, a failed callback).
fn failure(message: impl fmt::Display) -> Error {
    auth_error(MECHANISM, SOURCE, message)
}

/// Length of the client nonce `r` ("32 byte cryptographically secure random number").
const CLIENT_NONCE_LEN: usize = 32;
/// Length of the server nonce `s` ("64 bytes total").
const SERVER_NONCE_LEN: usize = 64;
/// The gs2-cb-flag `p`: ASCII `n`, "Drivers MUST NOT advertise support for channel
/// binding".
const GS2_CB_FLAG: i32 = b'n' as i32;
/// Longest valid STS host ("less than or equal to 255 bytes per RFC 1035").
const MAX_HOST_LEN: usize = 255;
/// The request the signature covers (the table under "Conversation").
const STS_BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";
const STS_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";
const STS_SERVICE: &str = "sts";
const SIGV4_ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// "Region Calculation": the default region.
const DEFAULT_REGION: &str = "us-east-1";

/// AWS credentials for MONGODB-AWS: an access key ID and a secret access key, plus a
/// session token for temporary credentials.
///
/// `Debug` shows the access key ID (not a secret, says the spec) but never the secret
/// access key or the session token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// The access key ID (`AWS_ACCESS_KEY_ID`, or the connection string's user name).
    pub access_key_id: String,
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`, or the connection string's
    /// password).
    pub secret_access_key: String,
    /// The session token of temporary credentials (`AWS_SESSION_TOKEN`).
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The AWS credentials of the environment ("Obtaining Credentials", "Environment
/// variables"): `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`,
/// looked up with `env` (empty values count as unset); `None` when neither key is set,
/// and the chain goes on to the cloud endpoints (see `auth::cloud`). The spec requires
/// reading them afresh for every authentication, so call this once per connection
/// rather than caching the result.
///
/// An [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) error for
/// credentials in `credential` itself (a user name, a password or an
/// `AWS_SESSION_TOKEN` property: "If credentials are provided in the URI or client
/// options, the driver MUST raise an error", since 2025-09-30) and for half a key pair.
pub fn credentials_from(
    credential: &Credential,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<AwsCredentials>> {
    let session_token = credential
        .mechanism_properties
        .as_ref()
        .is_some_and(|properties| {
            properties
                .keys()
                .any(|name| name.eq_ignore_ascii_case("AWS_SESSION_TOKEN"))
        });
    credential.forbid_aws_credentials(session_token)?;
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(access_key_id), Some(secret_access_key)) => Ok(Some(AwsCredentials {
            access_key_id,
            secret_access_key,
            session_token: var("AWS_SESSION_TOKEN"),
        })),
        (Some(_), None) => Err(Error::invalid_argument(
            "MONGODB-AWS: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
        )),
        (None, Some(_)) => Err(Error::invalid_argument(
            "MONGODB-AWS: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not",
        )),
        (None, None) => Ok(None),
    }
}

/// The I/O-free MONGODB-AWS conversation for one connection (on `$external`).
///
/// MONGODB-AWS has no speculative form, so [`Conversation::speculative`] is `None`.
#[derive(Debug)]
pub struct AwsConversation {
    credentials: AwsCredentials,
    now_unix_secs: u64,
    client_nonce: [u8; CLIENT_NONCE_LEN],
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    /// `saslStart` sent; the server-first message comes next.
    ClientFirstSent,
    /// `saslContinue` with the signature sent; the server's verdict comes next.
    ClientFinalSent,
    Done,
}

impl AwsConversation {
    /// A conversation that signs with `credentials` at `now_unix_secs` (the current UTC
    /// time, in seconds since the Unix epoch, which the caller reads from its wall
    /// clock). Draws the client nonce from the operating system's secure random source;
    /// fails only if that source does.
    pub fn new(credentials: AwsCredentials, now_unix_secs: u64) -> Result<Self> {
        let mut client_nonce = [0; CLIENT_NONCE_LEN];
        getrandom::fill(&mut client_nonce).map_err(|error| {
            Error::invalid_argument(format!(
                "MONGODB-AWS could not draw a random client nonce: {error}"
            ))
        })?;
        Ok(Self::with_nonce(credentials, now_unix_secs, client_nonce))
    }

    /// [`new`](AwsConversation::new) with a chosen client nonce (deterministic tests).
    pub(crate) fn with_nonce(
        credentials: AwsCredentials,
        now_unix_secs: u64,
        client_nonce: [u8; CLIENT_NONCE_LEN],
    ) -> Self {
        AwsConversation {
            credentials,
            now_unix_secs,
            client_nonce,
            state: State::New,
        }
    }

    /// The client-first payload `{r: <client nonce>, p: 110}`.
    fn client_first(&self) -> Result<Vec<u8>> {
        encode(&doc! {
            "r": generic_binary(self.client_nonce.to_vec()),
            "p": GS2_CB_FLAG,
        })
    }

    /// Validates the server-first payload and builds the client-final payload.
    fn client_final(&self, server_first: &[u8]) -> Result<Vec<u8>> {
        let server_first = Document::from_reader(server_first).map_err(|error| {
            failure(format!(
                "the server's first message is not a BSON document: {error}"
            ))
        })?;
        let server_nonce = match server_first.get("s") {
            Some(Bson::Binary(binary)) => &binary.bytes[..],
            _ => {
                return Err(failure(
                    "the server's first message has no binary server nonce 's'",
                ))
            }
        };
        // "Drivers MUST validate that the server nonce is exactly 64 bytes and the first
        // 32 bytes are the same as the client nonce."
        if server_nonce.len() != SERVER_NONCE_LEN {
            return Err(failure(format!(
                "the server nonce is {} bytes long, not {SERVER_NONCE_LEN}",
                server_nonce.len()
            )));
        }
        if !server_nonce.starts_with(&self.client_nonce) {
            return Err(failure(
                "the server nonce does not start with the client nonce",
            ));
        }
        let host = match server_first.get("h") {
            Some(Bson::String(host)) => host.as_str(),
            _ => return Err(failure("the server's first message has no STS host 'h'")),
        };
        let region = region_from_host(host)?;
        let amz_date = amz_date(self.now_unix_secs);
        let request = SignedRequest {
            host,
            region,
            amz_date: &amz_date,
            server_nonce_b64: &base64::engine::general_purpose::STANDARD.encode(server_nonce),
            session_token: self.credentials.session_token.as_deref(),
        };
        let mut payload = doc! {
            "a": request.authorization(&self.credentials),
            "d": amz_date.as_str(),
        };
        // "X-AMZ-Security-Token is required when using temporary credentials. When using
        // regular credentials, it MUST be omitted."
        if let Some(token) = &self.credentials.session_token {
            payload.insert("t", token.as_str());
        }
        encode(&payload)
    }
}

impl Conversation for AwsConversation {
    fn speculative(&mut self) -> Option<Document> {
        None
    }

    fn start(&mut self) -> Result<Step> {
        if self.state != State::New {
            return Err(out_of_order());
        }
        let command = start_command(MECHANISM, self.client_first()?, false);
        self.state = State::ClientFirstSent;
        Ok(Step::Send(command))
    }

    fn reply(&mut self, reply: &Document) -> Result<Step> {
        let parsed = Reply::parse(MECHANISM, SOURCE, reply)?;
        match self.state {
            State::ClientFirstSent => {
                if parsed.done {
                    return Err(failure(
                        "the server ended the conversation before the client's signature",
                    ));
                }
                let payload = self.client_final(parsed.payload)?;
                self.state = State::ClientFinalSent;
                Ok(Step::Send(continue_command(
                    parsed.conversation_id,
                    payload,
                )))
            }
            State::ClientFinalSent if parsed.done => {
                self.state = State::Done;
                Ok(Step::Done)
            }
            State::ClientFinalSent => Err(failure(
                "the server asked for more after the client's signature",
            )),
            State::New | State::Done => Err(out_of_order()),
        }
    }
}

fn out_of_order() -> Error {
    failure("a reply arrived out of order")
}

fn generic_binary(bytes: Vec<u8>) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

fn encode(document: &Document) -> Result<Vec<u8>> {
    document
        .to_vec()
        .map_err(|error| failure(format!("could not encode a payload as BSON: {error}")))
}

/// The AWS region of an STS host ("Region Calculation"). The host must be valid
/// ("Conversation"): 1 to 255 bytes, with no empty label (so no leading or trailing
/// period either).
///
/// The spec's pseudocode names `aws.amazonaws.com` and its table `sts.amazonaws.com` as
/// the host of the default region; both are honoured. Any other host with a period
/// gives its second label, and a host without one the default region.
fn region_from_host(host: &str) -> Result<&str> {
    if host.is_empty() || host.len() > MAX_HOST_LEN {
        return Err(failure(format!(
            "the STS host is {} bytes long; it must be 1 to {MAX_HOST_LEN}",
            host.len()
        )));
    }
    if host.split('.').any(str::is_empty) {
        return Err(failure(format!("the STS host '{host}' has an empty label")));
    }
    if host == "sts.amazonaws.com" || host == "aws.amazonaws.com" {
        return Ok(DEFAULT_REGION);
    }
    Ok(host.split('.').nth(1).unwrap_or(DEFAULT_REGION))
}

/// The `X-Amz-Date` of `unix_secs`: `YYYYMMDD'T'HHMMSS'Z'` in UTC.
pub(super) fn amz_date(unix_secs: u64) -> String {
    let days = unix_secs / 86_400;
    let secs_of_day = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    )
}

/// The proleptic Gregorian date `days` days after 1970-01-01, by counting 400-year eras
/// of 146 097 days from 0000-03-01 (so that the leap day ends each counted year).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Days from 0000-03-01 to 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March: 0 = March ... 11 = February.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The STS `GetCallerIdentity` request MONGODB-AWS signs (the table under
/// "Conversation") and its Signature Version 4.
struct SignedRequest<'a> {
    host: &'a str,
    region: &'a str,
    amz_date: &'a str,
    server_nonce_b64: &'a str,
    session_token: Option<&'a str>,
}

impl SignedRequest<'_> {
    /// The headers, lower-case and sorted by name as SigV4's canonical form wants them;
    /// `x-amz-security-token` only with a session token.
    fn headers(&self) -> Vec<(&'static str, &str)> {
        let mut headers = vec![
            ("content-length", "43"),
            ("content-type", STS_CONTENT_TYPE),
            ("host", self.host),
            ("x-amz-date", self.amz_date),
        ];
        if let Some(token) = self.session_token {
            headers.push(("x-amz-security-token", token));
        }
        headers.push(("x-mongodb-gs2-cb-flag", "n"));
        headers.push(("x-mongodb-server-nonce", self.server_nonce_b64));
        headers
    }

    /// `SignedHeaders`: the header names joined by `;`.
    fn signed_headers(&self) -> String {
        let names: Vec<&str> = self.headers().iter().map(|(name, _)| *name).collect();
        names.join(";")
    }

    /// SigV4 task 1, the canonical request: method, path, (empty) query string, one
    /// `name:value` line per header, a blank line, the signed header names and the
    /// hex SHA-256 of the body.
    fn canonical_request(&self) -> String {
        let headers: String = self
            .headers()
            .iter()
            .map(|(name, value)| format!("{name}:{value}\n"))
            .collect();
        format!(
            "POST\n/\n\n{headers}\n{}\n{}",
            self.signed_headers(),
            hex(&Sha256::digest(STS_BODY))
        )
    }

    /// The credential scope: `date/region/sts/aws4_request`.
    fn scope(&self) -> String {
        let date = self.amz_date.get(..8).unwrap_or(self.amz_date);
        format!("{date}/{}/{STS_SERVICE}/aws4_request", self.region)
    }

    /// SigV4 task 2, the string to sign.
    fn string_to_sign(&self) -> String {
        format!(
            "{SIGV4_ALGORITHM}\n{}\n{}\n{}",
            self.amz_date,
            self.scope(),
            hex(&Sha256::digest(self.canonical_request()))
        )
    }

    /// SigV4 tasks 3 and 4: the signature and the `Authorization` header.
    fn authorization(&self, credentials: &AwsCredentials) -> String {
        let date = self.amz_date.get(..8).unwrap_or(self.amz_date);
        let key = signing_key(
            &credentials.secret_access_key,
            date,
            self.region,
            STS_SERVICE,
        );
        let signature = hex(&hmac_sha256(&key, self.string_to_sign().as_bytes()));
        format!(
            "{SIGV4_ALGORITHM} Credential={}/{}, SignedHeaders={}, Signature={signature}",
            credentials.access_key_id,
            self.scope(),
            self.signed_headers()
        )
    }
}

/// SigV4's signing key: HMAC-SHA256 chained over date, region, service and
/// `aws4_request`, starting from `AWS4` + the secret access key.
fn signing_key(secret_access_key: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k_date = hmac_sha256(
        format!("AWS4{secret_access_key}").as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    hmac_sha256(&k_service, b"aws4_request")
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length: `new_from_slice` cannot fail here.
    let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(message);
    mac.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// The client nonce of the spec's example conversation ("Conversation").
    const SPEC_CLIENT_NONCE: [u8; 32] = [
        90, 61, 37, 74, 58, 124, 51, 64, 76, 40, 101, 62, 65, 80, 51, 69, 42, 86, 126, 77, 33, 38,
        40, 42, 59, 85, 126, 111, 65, 90, 87, 62,
    ];
    /// The spec's example client-first `saslStart` payload.
    const SPEC_CLIENT_FIRST: &str =
        "NAAAAAVyACAAAAAAWj0lSjp8M0BMKGU+QVAzRSpWfk0hJigqO1V+b0FaVz4QcABuAAAAAA==";
    /// The spec's example server-first payload (host `sts.amazonaws.com`).
    const SPEC_SERVER_FIRST: &str = "ZgAAAAVzAEAAAAAAWj0lSjp8M0BMKGU+QVAzRSpWfk0hJigqO1V+b0FaVz5Rj7x9UOBHJLvPgvgPS9sSzZUWgAPTy8HBbI1cG1WJ9gJoABIAAABzdHMuYW1hem9uYXdzLmNvbQAA";
    /// 2019-11-12T21:01:22Z, the date of the spec's example client-final message.
    const SPEC_TIME: u64 = 1_573_592_482;
    const ACCESS_KEY_ID: &str = "AKIDEXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const SESSION_TOKEN: &str = "SESSIONTOKEN/with+chars=";

    fn b64(text: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    }

    fn credentials(session_token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: ACCESS_KEY_ID.into(),
            secret_access_key: SECRET.into(),
            session_token: session_token.map(Into::into),
        }
    }

    fn payload(command: &Document) -> Document {
        let bytes = &command.get_binary_generic("payload").unwrap()[..];
        Document::from_reader(bytes).unwrap()
    }

    fn server_reply(conversation_id: i32, done: bool, payload: Vec<u8>) -> Document {
        doc! { "conversationId": conversation_id, "done": done, "payload": generic_binary(payload), "ok": 1.0 }
    }

    fn started(session_token: Option<&str>) -> AwsConversation {
        let mut conversation =
            AwsConversation::with_nonce(credentials(session_token), SPEC_TIME, SPEC_CLIENT_NONCE);
        conversation.start().unwrap();
        conversation
    }

    #[test]
    fn client_first_is_the_spec_example_byte_for_byte() {
        let mut conversation =
            AwsConversation::with_nonce(credentials(None), SPEC_TIME, SPEC_CLIENT_NONCE);
        assert_eq!(conversation.speculative(), None);
        let Step::Send(command) = conversation.start().unwrap() else {
            panic!("expected a command")
        };
        assert_eq!(
            command,
            doc! {
                "saslStart": 1,
                "mechanism": "MONGODB-AWS",
                "payload": generic_binary(b64(SPEC_CLIENT_FIRST)),
            }
        );
        assert!(conversation.start().is_err(), "start twice");
    }

    #[test]
    fn full_conversation_with_the_spec_server_first() {
        for token in [None, Some(SESSION_TOKEN)] {
            let mut conversation = started(token);
            let reply = server_reply(1, false, b64(SPEC_SERVER_FIRST));
            let Step::Send(command) = conversation.reply(&reply).unwrap() else {
                panic!("expected saslContinue")
            };
            assert_eq!(command.get_i32("saslContinue").ok(), Some(1));
            assert_eq!(command.get_i32("conversationId").ok(), Some(1));
            let client_final = payload(&command);
            let keys: Vec<&str> = client_final.keys().map(String::as_str).collect();
            match token {
                None => assert_eq!(keys, ["a", "d"]),
                Some(token) => {
                    assert_eq!(keys, ["a", "d", "t"]);
                    assert_eq!(client_final.get_str("t").ok(), Some(token));
                }
            }
            assert_eq!(client_final.get_str("d").ok(), Some("20191112T210122Z"));
            let authorization = client_final.get_str("a").unwrap();
            assert!(
                authorization.starts_with(
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20191112/us-east-1/sts/aws4_request, "
                ),
                "{authorization}"
            );
            assert_eq!(
                conversation
                    .reply(&server_reply(1, true, Vec::new()))
                    .unwrap(),
                Step::Done
            );
            assert!(conversation
                .reply(&server_reply(1, true, Vec::new()))
                .is_err());
        }
    }

    /// The SigV4 steps followed by hand, with the expected hashes and signatures
    /// computed independently (Python's `hashlib` and `hmac`) from the same inputs: the
    /// spec's example nonces, 2019-11-12T21:01:22Z, AWS's documentation example keys.
    #[test]
    fn sigv4_signature_step_by_step() {
        let server_nonce_b64 =
            "Wj0lSjp8M0BMKGU+QVAzRSpWfk0hJigqO1V+b0FaVz5Rj7x9UOBHJLvPgvgPS9sSzZUWgAPTy8HBbI1cG1WJ9g==";
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(&b64(SPEC_SERVER_FIRST)[12..76]),
            server_nonce_b64
        );
        let body_hash = "ab821ae955788b0e33ebd34c208442ccfc2d406e2edc5e7a39bd6458fbb4f843";
        assert_eq!(hex(&Sha256::digest(STS_BODY)), body_hash);

        for (token, canonical_hash, signature) in [
            (
                None,
                "a66a096e6f9c4c28bcedd08b81b4669e997370db85f2cc0bb62d408014871747",
                "95ca8f1971ee57c1ae1231057ce014e76e7789fc2bb282f796510897f96d3374",
            ),
            (
                Some(SESSION_TOKEN),
                "2126c479c209af95014efd35a88c56619b683669191e4ec48a666d87d8e37d78",
                "58053fd52cc3df219abf4ad67ac2907c4906629db91e8f32203d2206f55a9f84",
            ),
        ] {
            let request = SignedRequest {
                host: "sts.amazonaws.com",
                region: "us-east-1",
                amz_date: "20191112T210122Z",
                server_nonce_b64,
                session_token: token,
            };
            let token_line = token
                .map(|token| format!("x-amz-security-token:{token}\n"))
                .unwrap_or_default();
            let token_name = if token.is_some() {
                "x-amz-security-token;"
            } else {
                ""
            };
            let signed_headers = format!(
                "content-length;content-type;host;x-amz-date;{token_name}x-mongodb-gs2-cb-flag;x-mongodb-server-nonce"
            );
            // Task 1: the canonical request.
            let canonical = format!(
                "POST\n\
                 /\n\
                 \n\
                 content-length:43\n\
                 content-type:application/x-www-form-urlencoded\n\
                 host:sts.amazonaws.com\n\
                 x-amz-date:20191112T210122Z\n\
                 {token_line}\
                 x-mongodb-gs2-cb-flag:n\n\
                 x-mongodb-server-nonce:{server_nonce_b64}\n\
                 \n\
                 {signed_headers}\n\
                 {body_hash}"
            );
            assert_eq!(request.canonical_request(), canonical);
            assert_eq!(hex(&Sha256::digest(&canonical)), canonical_hash);
            // Task 2: the string to sign.
            assert_eq!(
                request.string_to_sign(),
                format!(
                    "AWS4-HMAC-SHA256\n20191112T210122Z\n20191112/us-east-1/sts/aws4_request\n{canonical_hash}"
                )
            );
            // Task 3: the signing key.
            assert_eq!(
                hex(&signing_key(SECRET, "20191112", "us-east-1", "sts")),
                "dfba27d1c927396252038373def181fb2987184a758f4d81611b21d3c6e5b4b7"
            );
            // Task 4: the Authorization header, and the same from the conversation.
            let expected = format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20191112/us-east-1/sts/aws4_request, SignedHeaders={signed_headers}, Signature={signature}"
            );
            assert_eq!(request.authorization(&credentials(token)), expected);
            let mut conversation = started(token);
            let Step::Send(command) = conversation
                .reply(&server_reply(7, false, b64(SPEC_SERVER_FIRST)))
                .unwrap()
            else {
                panic!("expected saslContinue")
            };
            assert_eq!(payload(&command).get_str("a").ok(), Some(expected.as_str()));
        }
    }

    /// AWS's published example of a derived signing key ("Examples of how to derive a
    /// signing key for Signature Version 4").
    #[test]
    fn signing_key_matches_the_aws_documentation_example() {
        assert_eq!(
            hex(&signing_key(SECRET, "20120215", "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn dates_in_amz_format() {
        for (secs, expected) in [
            (0, "19700101T000000Z"),
            (951_782_400, "20000229T000000Z"),
            (1_709_168_461, "20240229T010101Z"),
            (SPEC_TIME, "20191112T210122Z"),
            (4_102_444_799, "20991231T235959Z"),
            (253_402_300_799, "99991231T235959Z"),
        ] {
            assert_eq!(amz_date(secs), expected, "{secs}");
        }
        // Absurd inputs format oddly but never panic.
        let _ = amz_date(u64::MAX);
    }

    #[test]
    fn region_calculation_table() {
        let long = "a".repeat(256);
        for (host, region) in [
            ("sts.amazonaws.com", Some("us-east-1")),
            ("aws.amazonaws.com", Some("us-east-1")),
            ("sts.us-west-2.amazonaws.com", Some("us-west-2")),
            ("sts.us-west-2.amazonaws.com.ch", Some("us-west-2")),
            ("example.com", Some("com")),
            ("localhost", Some("us-east-1")),
            ("sts..com", None),
            (".amazonaws.com", None),
            ("sts.amazonaws.", None),
            ("", None),
            (long.as_str(), None),
        ] {
            assert_eq!(region_from_host(host).ok(), region, "{host:?}");
        }
        assert_eq!(region_from_host(&"a".repeat(255)).ok(), Some("us-east-1"));
    }

    fn server_first(nonce: Vec<u8>, host: &str) -> Vec<u8> {
        doc! { "s": generic_binary(nonce), "h": host }
            .to_vec()
            .unwrap()
    }

    fn spec_server_nonce() -> Vec<u8> {
        b64(SPEC_SERVER_FIRST)[12..76].to_vec()
    }

    #[test]
    fn server_first_validation() {
        let mut wrong_prefix = spec_server_nonce();
        wrong_prefix[31] ^= 1;
        let good_host = "sts.amazonaws.com";
        let cases: Vec<(Vec<u8>, String)> = vec![
            (wrong_prefix, good_host.into()),
            (spec_server_nonce()[..63].to_vec(), good_host.into()),
            ([spec_server_nonce(), vec![0]].concat(), good_host.into()),
            (SPEC_CLIENT_NONCE.to_vec(), good_host.into()),
            (spec_server_nonce(), "sts..amazonaws.com".into()),
            (spec_server_nonce(), ".amazonaws.com".into()),
            (spec_server_nonce(), "sts.amazonaws.com.".into()),
            (spec_server_nonce(), String::new()),
            (spec_server_nonce(), "a".repeat(256)),
        ];
        for (nonce, host) in cases {
            let mut conversation = started(None);
            let error = conversation
                .reply(&server_reply(1, false, server_first(nonce.clone(), &host)))
                .expect_err(&format!("nonce {} bytes, host {host:?}", nonce.len()));
            assert!(
                matches!(
                    &*error.kind,
                    ErrorKind::Authentication {
                        mechanism: "MONGODB-AWS",
                        ..
                    }
                ),
                "{error:?}"
            );
        }
        for bad in [
            doc! { "h": good_host },
            doc! { "s": generic_binary(spec_server_nonce()) },
            doc! { "s": "text", "h": good_host },
            doc! { "s": generic_binary(spec_server_nonce()), "h": 5 },
        ] {
            let mut conversation = started(None);
            let bytes = bad.to_vec().unwrap();
            assert!(conversation.reply(&server_reply(1, false, bytes)).is_err());
        }
        // Not BSON at all; and a server-first that claims to be done.
        assert!(started(None)
            .reply(&server_reply(1, false, b"junk".to_vec()))
            .is_err());
        assert!(started(None)
            .reply(&server_reply(1, true, b64(SPEC_SERVER_FIRST)))
            .is_err());
        // A final reply that is not done.
        let mut conversation = started(None);
        conversation
            .reply(&server_reply(1, false, b64(SPEC_SERVER_FIRST)))
            .unwrap();
        assert!(conversation
            .reply(&server_reply(1, false, Vec::new()))
            .is_err());
    }

    /// Random server-first payloads (a deterministic xorshift sequence, bounded): never a
    /// panic, and never a signature for a payload that breaks the spec's rules.
    #[test]
    fn random_server_first_payloads_never_panic() {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"ab.-.1.";
        for round in 0..3000 {
            let payload = match round % 3 {
                // Raw random bytes, sometimes with a plausible BSON length prefix.
                0 => {
                    let len = (next() % 120) as usize;
                    let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                    if len >= 4 && next() % 2 == 0 {
                        bytes[..4].copy_from_slice(&(len as i32).to_le_bytes());
                    }
                    bytes
                }
                // Structured: a nonce of random length and prefix, a random host.
                _ => {
                    let nonce_len = [0, 32, 63, 64, 64, 64, 65, 128][(next() % 8) as usize];
                    let mut nonce: Vec<u8> = SPEC_CLIENT_NONCE
                        .iter()
                        .copied()
                        .chain(std::iter::repeat_with(|| next() as u8))
                        .take(nonce_len)
                        .collect();
                    if next() % 4 == 0 && !nonce.is_empty() {
                        let at = (next() as usize) % nonce.len();
                        nonce[at] ^= 0x80;
                    }
                    let host_len = [0, 1, 5, 20, 255, 256, 300][(next() % 7) as usize];
                    let host: String = (0..host_len)
                        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                        .collect();
                    server_first(nonce, &host)
                }
            };
            let mut conversation = started(None);
            let result = conversation.reply(&server_reply(1, false, payload.clone()));
            if result.is_ok() {
                let parsed = Document::from_reader(&payload[..]).unwrap();
                let nonce = parsed.get_binary_generic("s").unwrap();
                let host = parsed.get_str("h").unwrap();
                assert_eq!(nonce.len(), 64);
                assert_eq!(nonce[..32], SPEC_CLIENT_NONCE);
                assert!(region_from_host(host).is_ok());
            }
        }
    }

    #[test]
    fn credentials_from_the_environment_only() {
        let env_vars = |name: &str| match name {
            "AWS_ACCESS_KEY_ID" => Some("ENVKEY".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("envsecret".to_string()),
            "AWS_SESSION_TOKEN" => Some("envtoken".to_string()),
            _ => None,
        };
        // Credentials in the client options are an error, even with the environment set.
        let given = Credential {
            username: Some("URIKEY".into()),
            password: Some("urisecret".into()),
            mechanism: Some(AuthMechanism::MongoDbAws),
            mechanism_properties: Some(doc! { "AWS_SESSION_TOKEN": "uritoken" }),
            ..Credential::default()
        };
        for credential in [
            given.clone(),
            Credential {
                mechanism_properties: None,
                ..given.clone()
            },
            Credential {
                username: None,
                password: None,
                ..given
            },
        ] {
            let error = credentials_from(&credential, &env_vars).unwrap_err();
            assert!(error.to_string().contains("no credentials"), "{error}");
        }
        // No credentials given: the environment.
        let bare = Credential {
            mechanism: Some(AuthMechanism::MongoDbAws),
            ..Credential::default()
        };
        assert_eq!(
            credentials_from(&bare, &env_vars).unwrap().unwrap(),
            AwsCredentials {
                access_key_id: "ENVKEY".into(),
                secret_access_key: "envsecret".into(),
                session_token: Some("envtoken".into()),
            }
        );
        let no_token = |name: &str| match name {
            "AWS_SESSION_TOKEN" => Some(String::new()),
            other => env_vars(other),
        };
        assert_eq!(
            credentials_from(&bare, &no_token)
                .unwrap()
                .unwrap()
                .session_token,
            None
        );
    }

    #[test]
    fn credentials_from_rejects_incomplete_credentials() {
        let nothing = |_: &str| None;
        let bare = Credential {
            mechanism: Some(AuthMechanism::MongoDbAws),
            ..Credential::default()
        };
        let key_only = |name: &str| (name == "AWS_ACCESS_KEY_ID").then(|| "ENVKEY".to_string());
        let error = credentials_from(&bare, &key_only).unwrap_err();
        assert!(
            error.to_string().contains("AWS_SECRET_ACCESS_KEY"),
            "{error}"
        );
        // No credentials in the environment: the chain goes on.
        assert_eq!(credentials_from(&bare, &nothing).unwrap(), None);
    }

    #[test]
    fn secrets_never_in_debug_or_errors() {
        let credentials = credentials(Some(SESSION_TOKEN));
        let shown = format!("{credentials:?} {credentials:#?}");
        assert!(shown.contains(ACCESS_KEY_ID), "{shown}");
        assert!(
            !shown.contains(SECRET) && !shown.contains(SESSION_TOKEN),
            "{shown}"
        );
        let mut conversation = started(Some(SESSION_TOKEN));
        let shown = format!("{conversation:?}");
        assert!(
            !shown.contains(SECRET) && !shown.contains(SESSION_TOKEN),
            "{shown}"
        );
        let error = conversation
            .reply(&server_reply(
                1,
                false,
                server_first(spec_server_nonce(), ""),
            ))
            .unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(
            !shown.contains(SECRET) && !shown.contains(SESSION_TOKEN),
            "{shown}"
        );
    }

    #[test]
    fn new_draws_a_random_nonce() {
        let a = AwsConversation::new(credentials(None), SPEC_TIME).unwrap();
        let b = AwsConversation::new(credentials(None), SPEC_TIME).unwrap();
        assert_ne!(a.client_nonce, b.client_nonce);
    }
}
