//! SCRAM-SHA-1 and SCRAM-SHA-256 (Authentication spec, "SCRAM-SHA-1" and
//! "SCRAM-SHA-256"; RFC 5802 and RFC 7677): one conversation, parameterised by the
//! hash function.
//!
//! The two differ only in the hash and in how the password is prepared: SCRAM-SHA-1
//! uses MongoDB's digest `HEX(MD5(username + ":mongo:" + password))`, SCRAM-SHA-256
//! the SASLprep'd password.

use std::collections::HashMap;
use std::fmt;
use std::mem;
use std::sync::{Arc, Mutex, PoisonError};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bson::{Bson, Document};
use hmac::digest::{Digest, KeyInit};
use hmac::{Hmac, Mac};

use super::sasl::{self, Reply};
use super::{auth_error, missing, AuthMechanism, Conversation, Credential, Step};
use crate::error::{Error, Result};
use crate::rt::{Pbkdf2, Pbkdf2Hash};

/// "Drivers MUST enforce a minimum iteration count of 4096."
const MIN_ITERATIONS: u32 = 4096;

/// The largest iteration count accepted: a server-first message asking for more is
/// refused before any key derivation starts. RFC 5802, section 9: "A hostile server
/// can perform a computational denial-of-service attack on clients by sending a big
/// iteration count value." Without a bound, `i=4294967295` costs a quarter of an hour
/// of CPU.
///
/// MongoDB's defaults are 10,000 (`scramIterationCount`, SCRAM-SHA-1) and 15,000
/// (`scramSHA256IterationCount`); the server accepts any 32-bit signed value from 5,000
/// up, and its own test harness keeps them at or below 50,000. The Authentication spec
/// sets only the minimum ("SCRAM-SHA-1", "SCRAM-SHA-256"); PostgreSQL's clients
/// (pgjdbc, node-postgres) refuse more than 100,000 by default. 10,000,000 is far above any deployment's
/// hardened setting (OWASP's 2023 advice for PBKDF2 is 1,300,000 iterations with
/// SHA-1 and 600,000 with SHA-256) and costs a few seconds at most natively, which
/// `connectTimeoutMS` bounds in any case: the derivation yields to the executor between
/// rounds (see [`DERIVATION_ROUND`]) and is dropped with the connection attempt.
const MAX_ITERATIONS: u32 = 10_000_000;

/// Iterations of the key derivation per round: between rounds the conversation hands
/// control back to its runner, which lets the executor's other tasks and timers run.
/// A round takes about 0.1 ms natively. It is kept that short because an executor may
/// look at its timers only every so many task polls (tokio: every 61), so a timer can
/// wait for that many rounds; the cost of a yield per round is under 1%.
const DERIVATION_ROUND: u32 = 256;

/// Bytes of randomness in the client nonce.
const NONCE_BYTES: usize = 24;

/// The cache holds at most this many entries; a server that keeps changing the salt
/// cannot make it grow without bound.
const CACHE_CAPACITY: usize = 64;

/// The hash function of a SCRAM variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hash {
    Sha1,
    Sha256,
}

impl Hash {
    fn mechanism(self) -> AuthMechanism {
        match self {
            Hash::Sha1 => AuthMechanism::ScramSha1,
            Hash::Sha256 => AuthMechanism::ScramSha256,
        }
    }

    /// `H(data)`.
    fn h(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    /// `HMAC(key, data)`.
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut out = vec![0; self.output_size()];
        self.prf(key).apply(data, &mut out);
        out
    }

    /// HMAC of this hash, keyed with `key`.
    fn prf(self, key: &[u8]) -> Prf {
        match self {
            Hash::Sha1 => Prf::Sha1(keyed(key)),
            Hash::Sha256 => Prf::Sha256(keyed(key)),
        }
    }

    /// The length of a digest, in bytes.
    fn output_size(self) -> usize {
        match self {
            Hash::Sha1 => <sha1::Sha1 as Digest>::output_size(),
            Hash::Sha256 => <sha2::Sha256 as Digest>::output_size(),
        }
    }

    /// The password the keys are derived from. SCRAM-SHA-1: "The password variable
    /// MUST be the mongodb hashed variant" (and no SASLprep). SCRAM-SHA-256:
    /// "Passwords MUST be prepared with SASLprep ... they MUST NOT be digested".
    fn prepare_password(self, username: &str, password: &str) -> Result<String> {
        match self {
            Hash::Sha1 => {
                let digest = md5::Md5::digest(format!("{username}:mongo:{password}"));
                Ok(digest.iter().map(|byte| format!("{byte:02x}")).collect())
            }
            Hash::Sha256 => stringprep::saslprep(password)
                .map(|prepared| prepared.into_owned())
                .map_err(|_| {
                    Error::invalid_argument(
                        "the password contains characters that SASLprep (RFC 4013) prohibits",
                    )
                }),
        }
    }
}

/// `Hi(password, salt, i)` (RFC 5802, section 2.2): PBKDF2 (RFC 8018, section 5.2)
/// with HMAC of the SCRAM hash and one block of output, `U1 XOR U2 XOR ... XOR Ui`
/// where `U1 = HMAC(password, salt + INT(1))` and `Uk = HMAC(password, Uk-1)`.
///
/// It is computed in rounds ([`Derivation::advance`]) rather than in one call, so that
/// the deliberately slow derivation never holds the executor for long.
struct Derivation {
    /// HMAC keyed with the password, cloned for each iteration.
    prf: Prf,
    /// The last `Uk`.
    u: Vec<u8>,
    /// Room for the next `Uk`.
    next: Vec<u8>,
    /// The XOR of `U1` to `Uk`.
    salted_password: Vec<u8>,
    /// Iterations still to run.
    remaining: u32,
}

/// HMAC of the SCRAM hash, keyed.
enum Prf {
    Sha1(Hmac<sha1::Sha1>),
    Sha256(Hmac<sha2::Sha256>),
}

impl Derivation {
    /// Starts `Hi(password, salt, iterations)` with `U1`.
    fn new(hash: Hash, password: &[u8], salt: &[u8], iterations: u32) -> Self {
        let prf = hash.prf(password);
        let mut first_block = salt.to_vec();
        first_block.extend_from_slice(&1u32.to_be_bytes());
        let mut u = vec![0; hash.output_size()];
        prf.apply(&first_block, &mut u);
        Derivation {
            prf,
            next: u.clone(),
            salted_password: u.clone(),
            u,
            remaining: iterations.saturating_sub(1),
        }
    }

    /// Runs at most `round` more iterations; the salted password once all have run.
    fn advance(&mut self, round: u32) -> Option<&[u8]> {
        let n = self.remaining.min(round);
        for _ in 0..n {
            self.prf.apply(&self.u, &mut self.next);
            mem::swap(&mut self.u, &mut self.next);
            for (salted, u) in self.salted_password.iter_mut().zip(&self.u) {
                *salted ^= u;
            }
        }
        self.remaining -= n;
        (self.remaining == 0).then_some(&self.salted_password[..])
    }
}

impl Prf {
    /// `HMAC(key, data)` into `out`, which has the hash's output size.
    fn apply(&self, data: &[u8], out: &mut [u8]) {
        match self {
            Prf::Sha1(mac) => finish(mac.clone(), data, out),
            Prf::Sha256(mac) => finish(mac.clone(), data, out),
        }
    }
}

fn keyed<M: KeyInit>(key: &[u8]) -> M {
    // HMAC takes keys of any length (RFC 2104, section 2): this never fails.
    M::new_from_slice(key).expect("HMAC accepts keys of any length")
}

fn finish<M: Mac>(mut mac: M, data: &[u8], out: &mut [u8]) {
    mac.update(data);
    out.copy_from_slice(&mac.finalize().into_bytes());
}

/// A client's cache of SCRAM keys (Authentication spec, "Caching credentials in
/// SCRAM"), so that a new connection does not redo the deliberately slow key
/// derivation. Entries are keyed by the mechanism, the (prepared) password, the salt
/// and the iteration count, and hold the `ClientKey` and `ServerKey`.
///
/// Cloning shares the cache: create one per client and hand a clone to each
/// connection's conversation. `Debug` shows only the number of entries.
#[derive(Clone, Default)]
pub struct ScramCache {
    entries: Arc<Mutex<HashMap<CacheKey, Keys>>>,
}

#[derive(PartialEq, Eq, Hash)]
struct CacheKey {
    hash: Hash,
    password: String,
    salt: Vec<u8>,
    iterations: u32,
}

#[derive(Clone)]
struct Keys {
    client_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl ScramCache {
    /// The cached keys for `key`, if any.
    fn get(&self, key: &CacheKey) -> Option<Keys> {
        self.lock().get(key).cloned()
    }

    /// Derives the keys from a salted password and caches them under `key`.
    fn insert(&self, key: CacheKey, salted_password: &[u8]) -> Keys {
        let hash = key.hash;
        let keys = Keys {
            client_key: hash.hmac(salted_password, b"Client Key"),
            server_key: hash.hmac(salted_password, b"Server Key"),
        };
        let mut entries = self.lock();
        if entries.len() >= CACHE_CAPACITY {
            entries.clear();
        }
        entries.insert(key, keys.clone());
        keys
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Keys>> {
        // The map is consistent even if a holder panicked: each insert is one call.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ScramCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCache")
            .field("entries", &self.lock().len())
            .finish()
    }
}

/// Where a SCRAM conversation stands.
enum State {
    /// Nothing sent yet.
    Initial,
    /// The client-first message went out (in `saslStart` or speculatively).
    AwaitingServerFirst,
    /// The server-first message was accepted; the keys are being derived, a round per
    /// [`Step::Compute`].
    Deriving(Box<Pending>),
    /// The client-final message went out; the server must prove it knows the keys.
    AwaitingServerFinal {
        conversation_id: Bson,
        server_signature: Vec<u8>,
    },
    /// The server's signature checked out but it wants one more (empty) exchange
    /// (servers before 4.4, or ones that ignore `skipEmptyExchange`).
    AwaitingDone,
    /// Authenticated.
    Done,
    /// A reply was rejected; the conversation cannot go on.
    Failed,
}

/// A key derivation under way, and what the client-final message needs once it ends.
struct Pending {
    conversation_id: Bson,
    server_first: String,
    nonce: String,
    cache_key: CacheKey,
    derivation: Derivation,
}

/// A SCRAM-SHA-1 or SCRAM-SHA-256 conversation for one connection.
pub(crate) struct ScramConversation {
    hash: Hash,
    source: String,
    /// The user name as given: "User names MUST NOT be prepared with SASLprep."
    username: String,
    /// The prepared password (see [`Hash::prepare_password`]).
    password: String,
    client_nonce: String,
    cache: ScramCache,
    state: State,
}

impl ScramConversation {
    /// A conversation with a fresh random nonce.
    pub(crate) fn new(
        mechanism: AuthMechanism,
        credential: &Credential,
        cache: &ScramCache,
    ) -> Result<Self> {
        let mut nonce = [0; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|error| {
            Error::invalid_argument(format!(
                "no random numbers for the SCRAM nonce on this platform: {error}"
            ))
        })?;
        Self::with_nonce(mechanism, credential, cache, BASE64.encode(nonce))
    }

    fn with_nonce(
        mechanism: AuthMechanism,
        credential: &Credential,
        cache: &ScramCache,
        client_nonce: String,
    ) -> Result<Self> {
        let hash = match mechanism {
            AuthMechanism::ScramSha1 => Hash::Sha1,
            AuthMechanism::ScramSha256 => Hash::Sha256,
            other => {
                return Err(Error::invalid_argument(format!(
                    "{} is not a SCRAM mechanism",
                    other.name()
                )))
            }
        };
        let username = credential
            .username
            .clone()
            .ok_or_else(|| missing(mechanism, "a user name"))?;
        let password = credential
            .password
            .as_deref()
            .ok_or_else(|| missing(mechanism, "a password"))?;
        Ok(ScramConversation {
            hash,
            source: credential.effective_source().to_owned(),
            password: hash.prepare_password(&username, password)?,
            username,
            client_nonce,
            cache: cache.clone(),
            state: State::Initial,
        })
    }

    fn mechanism(&self) -> AuthMechanism {
        self.hash.mechanism()
    }

    fn error(&self, message: impl fmt::Display) -> Error {
        auth_error(self.mechanism(), &self.source, message)
    }

    fn parse_reply<'a>(&self, reply: &'a Document) -> Result<Reply<'a>> {
        Reply::parse(self.mechanism(), &self.source, reply)
    }

    /// `client-first-message-bare`: `n=<saslname>,r=<c-nonce>`, where the user name
    /// has `=` and `,` escaped as `=3D` and `=2C` (RFC 5802, section 5.1).
    fn client_first_bare(&self) -> String {
        let username = self.username.replace('=', "=3D").replace(',', "=2C");
        format!("n={username},r={}", self.client_nonce)
    }

    /// `saslStart` with the client-first message. The GS2 header `n,,` says the client
    /// does not support channel binding ("the client-first-message MUST start with n,").
    fn sasl_start(&self) -> Document {
        let client_first = format!("n,,{}", self.client_first_bare());
        sasl::start_command(self.mechanism(), client_first.into_bytes(), true)
    }

    /// Checks the server-first message and answers with the client-final message, at
    /// once if the keys are cached, else after the key derivation (`Step::Compute`).
    fn server_first(&self, reply: &Document) -> Result<(Step, State)> {
        let reply = self.parse_reply(reply)?;
        if reply.done {
            return Err(self
                .error("the server ended the conversation before proving it knows the password"));
        }
        let server_first = self.utf8(reply.payload)?;
        let ServerFirst {
            nonce,
            salt,
            iterations,
        } = self.parse_server_first(server_first)?;
        let cache_key = CacheKey {
            hash: self.hash,
            password: self.password.clone(),
            salt,
            iterations,
        };
        if let Some(keys) = self.cache.get(&cache_key) {
            return Ok(self.client_final(reply.conversation_id, server_first, nonce, &keys));
        }
        let derivation = Derivation::new(
            self.hash,
            self.password.as_bytes(),
            &cache_key.salt,
            iterations,
        );
        let pending = Pending {
            conversation_id: reply.conversation_id.clone(),
            server_first: server_first.to_owned(),
            nonce: nonce.to_owned(),
            cache_key,
            derivation,
        };
        Ok((Step::Compute, State::Deriving(Box::new(pending))))
    }

    /// One round of the key derivation; the client-final message once it is done.
    fn derive(&self, mut pending: Box<Pending>) -> (Step, State) {
        let Some(salted_password) = pending.derivation.advance(DERIVATION_ROUND) else {
            return (Step::Compute, State::Deriving(pending));
        };
        let salted_password = salted_password.to_vec();
        self.salted(*pending, &salted_password)
    }

    /// The client-final message from the salted password, derived by the rounds or by
    /// the host; the keys are cached for the client's next connections.
    fn salted(&self, pending: Pending, salted_password: &[u8]) -> (Step, State) {
        let Pending {
            conversation_id,
            server_first,
            nonce,
            cache_key,
            ..
        } = pending;
        let keys = self.cache.insert(cache_key, salted_password);
        self.client_final(&conversation_id, &server_first, &nonce, &keys)
    }

    /// The client-final message, `c=biws,r=<nonce>,p=<ClientProof>` (RFC 5802,
    /// section 3), and the server signature to expect.
    fn client_final(
        &self,
        conversation_id: &Bson,
        server_first: &str,
        nonce: &str,
        keys: &Keys,
    ) -> (Step, State) {
        // RFC 5802, section 3: "c=biws" is the base64 of the GS2 header "n,,".
        let client_final_without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!(
            "{},{server_first},{client_final_without_proof}",
            self.client_first_bare()
        );
        let stored_key = self.hash.h(&keys.client_key);
        let client_signature = self.hash.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = keys
            .client_key
            .iter()
            .zip(&client_signature)
            .map(|(key, signature)| key ^ signature)
            .collect();
        let client_final = format!("{client_final_without_proof},p={}", BASE64.encode(proof));
        let state = State::AwaitingServerFinal {
            conversation_id: conversation_id.clone(),
            server_signature: self.hash.hmac(&keys.server_key, auth_message.as_bytes()),
        };
        let command = sasl::continue_command(conversation_id, client_final.into_bytes());
        (Step::Send(command), state)
    }

    /// `server-first-message = [reserved-mext ","] nonce "," salt "," iteration-count
    /// ["," extensions]` (RFC 5802, section 7).
    fn parse_server_first<'a>(&self, message: &'a str) -> Result<ServerFirst<'a>> {
        let mut attributes = message.split(',');
        let mut next = |name: char| {
            let attribute = attributes.next().unwrap_or_default();
            match attribute
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('='))
            {
                Some(value) => Ok(value),
                None if attribute.starts_with("m=") => {
                    Err(self.error("the server requires an unsupported SCRAM extension"))
                }
                None => Err(self.error(format!(
                    "the server-first message lacks its '{name}=' attribute"
                ))),
            }
        };
        let (nonce, salt, iterations) = (next('r')?, next('s')?, next('i')?);
        if !nonce.starts_with(&self.client_nonce) {
            return Err(self.error("the server's nonce does not start with the client's"));
        }
        let salt = BASE64
            .decode(salt)
            .map_err(|_| self.error("the server's salt is not valid base64"))?;
        let iterations: u32 = iterations
            .parse()
            .map_err(|_| self.error("the server's iteration count is not a number"))?;
        if iterations < MIN_ITERATIONS {
            return Err(self.error(format!(
                "the server's iteration count {iterations} is below the minimum of {MIN_ITERATIONS}"
            )));
        }
        if iterations > MAX_ITERATIONS {
            return Err(self.error(format!(
                "the server's iteration count {iterations} is above the maximum of {MAX_ITERATIONS} \
                 (a hostile server can ask for a key derivation that takes hours)"
            )));
        }
        Ok(ServerFirst {
            nonce,
            salt,
            iterations,
        })
    }

    /// Checks the server-final message `v=<ServerSignature>` (or `e=<error>`).
    fn server_final(
        &self,
        reply: &Document,
        conversation_id: Bson,
        expected: &[u8],
    ) -> Result<(Step, State)> {
        let reply = self.parse_reply(reply)?;
        let server_final = self.utf8(reply.payload)?;
        let first = server_final.split(',').next().unwrap_or_default();
        if let Some(error) = first.strip_prefix("e=") {
            return Err(self.error(format!("the server reported '{error}'")));
        }
        let signature = first
            .strip_prefix("v=")
            .ok_or_else(|| self.error("the server-final message has no server signature"))?;
        if BASE64.decode(signature).ok().as_deref() != Some(expected) {
            return Err(self.error(
                "the server's signature is wrong: it does not know the password (is something impersonating the server?)",
            ));
        }
        Ok(if reply.done {
            (Step::Done, State::Done)
        } else {
            let command = sasl::continue_command(&conversation_id, Vec::new());
            (Step::Send(command), State::AwaitingDone)
        })
    }

    fn utf8<'a>(&self, payload: &'a [u8]) -> Result<&'a str> {
        std::str::from_utf8(payload).map_err(|_| self.error("the server's message is not UTF-8"))
    }
}

/// The parts of the server-first message the client uses.
struct ServerFirst<'a> {
    nonce: &'a str,
    salt: Vec<u8>,
    iterations: u32,
}

impl Conversation for ScramConversation {
    /// The `saslStart` command plus the authentication database as `db` (MongoDB
    /// Handshake spec, "Speculative Authentication").
    fn speculative(&mut self) -> Option<Document> {
        if !matches!(self.state, State::Initial) {
            return None;
        }
        self.state = State::AwaitingServerFirst;
        let mut command = self.sasl_start();
        command.insert("db", self.source.clone());
        Some(command)
    }

    fn start(&mut self) -> Result<Step> {
        match self.state {
            State::Initial | State::AwaitingServerFirst => {
                self.state = State::AwaitingServerFirst;
                Ok(Step::Send(self.sasl_start()))
            }
            _ => Err(self.error("the conversation has already started")),
        }
    }

    fn reply(&mut self, reply: &Document) -> Result<Step> {
        let (step, state) = match mem::replace(&mut self.state, State::Failed) {
            State::AwaitingServerFirst => self.server_first(reply)?,
            State::AwaitingServerFinal {
                conversation_id,
                server_signature,
            } => self.server_final(reply, conversation_id, &server_signature)?,
            State::AwaitingDone => match self.parse_reply(reply)?.done {
                true => (Step::Done, State::Done),
                false => return Err(self.error("the server did not end the conversation")),
            },
            State::Initial | State::Deriving(_) | State::Done | State::Failed => {
                return Err(self.error("unexpected reply: no SCRAM message is awaiting one"))
            }
        };
        self.state = state;
        Ok(step)
    }

    fn compute(&mut self) -> Result<Step> {
        let State::Deriving(pending) = mem::replace(&mut self.state, State::Failed) else {
            return Err(self.error("no key derivation is under way"));
        };
        let (step, state) = self.derive(pending);
        self.state = state;
        Ok(step)
    }

    /// `Hi(password, salt, i)` of the pending derivation, as PBKDF2 with one block of
    /// output (RFC 5802, section 2.2).
    fn key_derivation(&self) -> Option<Pbkdf2<'_>> {
        let State::Deriving(pending) = &self.state else {
            return None;
        };
        let key = &pending.cache_key;
        Some(Pbkdf2 {
            hash: match key.hash {
                Hash::Sha1 => Pbkdf2Hash::Sha1,
                Hash::Sha256 => Pbkdf2Hash::Sha256,
            },
            password: key.password.as_bytes(),
            salt: &key.salt,
            iterations: key.iterations,
            length: self.hash.output_size(),
        })
    }

    fn derived(&mut self, key: &[u8]) -> Result<Step> {
        let State::Deriving(pending) = mem::replace(&mut self.state, State::Failed) else {
            return Err(self.error("no key derivation is under way"));
        };
        let (step, state) = self.salted(*pending, key);
        self.state = state;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{BoxFuture, KeyDerivation};
    use bson::{doc, spec::BinarySubtype, Binary};
    use std::io;

    fn credential(username: &str, password: &str) -> Credential {
        Credential {
            username: Some(username.into()),
            password: Some(password.into()),
            ..Credential::default()
        }
    }

    fn conversation(mechanism: AuthMechanism, nonce: &str) -> ScramConversation {
        ScramConversation::with_nonce(
            mechanism,
            &credential("user", "pencil"),
            &ScramCache::default(),
            nonce.into(),
        )
        .unwrap()
    }

    fn payload(command: &Document) -> String {
        let bytes = &command.get_binary_generic("payload").unwrap()[..];
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn sent(step: Step) -> Document {
        match step {
            Step::Send(command) => command,
            other => panic!("expected a command, got {other:?}"),
        }
    }

    /// `reply`, then the rounds of key derivation it starts, if any.
    fn answer(scram: &mut ScramConversation, reply: &Document) -> Result<Step> {
        let mut step = scram.reply(reply)?;
        while step == Step::Compute {
            step = scram.compute()?;
        }
        Ok(step)
    }

    fn server(payload: &str, done: bool) -> Document {
        doc! {
            "conversationId": 1,
            "done": done,
            "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload.as_bytes().to_vec() },
            "ok": 1,
        }
    }

    /// The Authentication spec's worked example of each mechanism: the client's
    /// messages, byte for byte, and the server's signature accepted.
    fn spec_example(
        mechanism: AuthMechanism,
        nonce: &str,
        server_first: &str,
        client_final: &str,
        server_final: &str,
    ) {
        let mut scram = conversation(mechanism, nonce);
        let start = sent(scram.start().unwrap());
        assert_eq!(start.get_str("mechanism").unwrap(), mechanism.name());
        assert_eq!(payload(&start), format!("n,,n=user,r={nonce}"));
        assert_eq!(
            start.get_document("options").unwrap(),
            &doc! { "skipEmptyExchange": true }
        );
        let next = sent(answer(&mut scram, &server(server_first, false)).unwrap());
        assert_eq!(next.get_i32("saslContinue").unwrap(), 1);
        assert_eq!(next.get_i32("conversationId").unwrap(), 1);
        assert_eq!(payload(&next), client_final);
        assert_eq!(
            scram.reply(&server(server_final, true)).unwrap(),
            Step::Done
        );
    }

    const SHA1_NONCE: &str = "fyko+d2lbbFgONRv9qkxdawL";
    const SHA1_SERVER_FIRST: &str =
        "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000";
    const SHA1_CLIENT_FINAL: &str =
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY=";
    const SHA1_SERVER_FINAL: &str = "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=";

    const SHA256_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SHA256_SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const SHA256_CLIENT_FINAL: &str =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SHA256_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    /// A host key derivation: PBKDF2 by the core's own [`Derivation`] (or a failure,
    /// or a key of the wrong length), recording what it was asked.
    struct Host {
        answer: Answer,
        asked: Mutex<Vec<Asked>>,
    }

    /// A request's hash, password, salt, iteration count and length.
    type Asked = (Pbkdf2Hash, Vec<u8>, Vec<u8>, u32, usize);

    #[derive(Clone, Copy)]
    enum Answer {
        Key,
        Fail,
        Short,
    }

    impl KeyDerivation for Host {
        fn pbkdf2<'a>(&'a self, request: Pbkdf2<'a>) -> BoxFuture<'a, io::Result<Vec<u8>>> {
            self.asked.lock().unwrap().push((
                request.hash,
                request.password.to_vec(),
                request.salt.to_vec(),
                request.iterations,
                request.length,
            ));
            let hash = match request.hash {
                Pbkdf2Hash::Sha1 => Hash::Sha1,
                Pbkdf2Hash::Sha256 => Hash::Sha256,
            };
            let mut derivation =
                Derivation::new(hash, request.password, request.salt, request.iterations);
            let key = derivation.advance(u32::MAX).unwrap().to_vec();
            let answer = match self.answer {
                Answer::Key => Ok(key),
                Answer::Fail => Err(io::Error::other("iteration count above the host's limit")),
                Answer::Short => Ok(key[1..].to_vec()),
            };
            crate::rt::boxed(async move { answer })
        }
    }

    /// The client-final message of each spec example through `next_command` with
    /// `host`: the same bytes whether the host derives the key, fails, gives a key of
    /// the wrong length (the core's own rounds take over) or there is no host (the
    /// default). Returns what the host was asked.
    fn through_host(host: Option<&Host>) -> Vec<Asked> {
        for (mechanism, nonce, server_first, client_final) in [
            (
                AuthMechanism::ScramSha1,
                SHA1_NONCE,
                SHA1_SERVER_FIRST,
                SHA1_CLIENT_FINAL,
            ),
            (
                AuthMechanism::ScramSha256,
                SHA256_NONCE,
                SHA256_SERVER_FIRST,
                SHA256_CLIENT_FINAL,
            ),
        ] {
            let mut scram = conversation(mechanism, nonce);
            scram.start().unwrap();
            let step = scram.reply(&server(server_first, false)).unwrap();
            assert_eq!(step, Step::Compute);
            let clock = super::super::conversation::tests::Ticking::default();
            let host = host.map(|host| host as &dyn KeyDerivation);
            let next = futures::executor::block_on(super::super::next_command(
                &mut scram, step, &clock, host,
            ))
            .unwrap()
            .unwrap();
            assert_eq!(payload(&next), client_final, "{mechanism:?}");
        }
        host.map(|host| mem::take(&mut *host.asked.lock().unwrap()))
            .unwrap_or_default()
    }

    #[test]
    fn a_host_key_derivation_is_asked_for_hi_and_its_key_used() {
        let host = Host {
            answer: Answer::Key,
            asked: Mutex::default(),
        };
        let md5_digest = Hash::Sha1.prepare_password("user", "pencil").unwrap();
        assert_eq!(
            through_host(Some(&host)),
            [
                (
                    Pbkdf2Hash::Sha1,
                    md5_digest.into_bytes(),
                    BASE64.decode("rQ9ZY3MntBeuP3E1TDVC4w==").unwrap(),
                    10_000,
                    20
                ),
                (
                    Pbkdf2Hash::Sha256,
                    b"pencil".to_vec(),
                    BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap(),
                    4096,
                    32
                ),
            ]
        );
    }

    #[test]
    fn without_a_working_host_key_derivation_the_core_derives_the_key() {
        assert!(through_host(None).is_empty());
        for answer in [Answer::Fail, Answer::Short] {
            let host = Host {
                answer,
                asked: Mutex::default(),
            };
            assert_eq!(through_host(Some(&host)).len(), 2);
        }
    }

    #[test]
    fn scram_sha_1_spec_example() {
        spec_example(
            AuthMechanism::ScramSha1,
            SHA1_NONCE,
            SHA1_SERVER_FIRST,
            SHA1_CLIENT_FINAL,
            SHA1_SERVER_FINAL,
        );
    }

    #[test]
    fn scram_sha_256_spec_example() {
        spec_example(
            AuthMechanism::ScramSha256,
            SHA256_NONCE,
            SHA256_SERVER_FIRST,
            SHA256_CLIENT_FINAL,
            SHA256_SERVER_FINAL,
        );
    }

    /// A conversation of the SCRAM-SHA-256 example that has sent its client-final.
    fn awaiting_server_final() -> ScramConversation {
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        scram.start().unwrap();
        answer(&mut scram, &server(SHA256_SERVER_FIRST, false)).unwrap();
        scram
    }

    #[test]
    fn the_longer_conversation_of_older_servers_ends_with_an_empty_exchange() {
        let mut scram = awaiting_server_final();
        let empty = sent(scram.reply(&server(SHA256_SERVER_FINAL, false)).unwrap());
        assert_eq!(payload(&empty), "");
        assert_eq!(empty.get_i32("conversationId").unwrap(), 1);
        assert_eq!(scram.reply(&server("", true)).unwrap(), Step::Done);
        assert!(scram.reply(&server("", true)).is_err());
    }

    #[test]
    fn a_server_that_never_ends_the_conversation_fails() {
        let mut scram = awaiting_server_final();
        scram.reply(&server(SHA256_SERVER_FINAL, false)).unwrap();
        assert!(scram.reply(&server("", false)).is_err());
    }

    #[test]
    fn a_wrong_missing_or_error_server_final_fails() {
        for server_final in [
            "v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "v=not base64!",
            "",
            "x=1",
            "e=invalid-proof",
        ] {
            let err = awaiting_server_final()
                .reply(&server(server_final, true))
                .unwrap_err();
            assert!(
                matches!(&*err.kind, crate::ErrorKind::Authentication { .. }),
                "{server_final}: {err}"
            );
        }
        let err = awaiting_server_final()
            .reply(&server("e=invalid-proof", true))
            .unwrap_err();
        assert!(err.to_string().contains("invalid-proof"), "{err}");
    }

    #[test]
    fn a_low_iteration_count_fails() {
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        scram.start().unwrap();
        let low = SHA256_SERVER_FIRST.replace("i=4096", "i=4095");
        let err = scram.reply(&server(&low, false)).unwrap_err();
        assert!(err.to_string().contains("4095"), "{err}");
    }

    /// Issue 21: `i=4294967295` made the driver derive keys for a quarter of an hour.
    /// A count above the maximum fails at once, before any derivation.
    #[test]
    fn an_iteration_count_above_the_maximum_fails_at_once() {
        for count in [u32::MAX, MAX_ITERATIONS + 1] {
            let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
            scram.start().unwrap();
            let huge = SHA256_SERVER_FIRST.replace("i=4096", &format!("i={count}"));
            let err = scram.reply(&server(&huge, false)).unwrap_err();
            assert!(
                matches!(&*err.kind, crate::ErrorKind::Authentication { .. }),
                "{err}"
            );
            let message = err.to_string();
            assert!(
                message.contains(&count.to_string()) && message.contains("maximum"),
                "{message}"
            );
        }
        // The maximum itself is accepted: the derivation starts.
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        scram.start().unwrap();
        let max = SHA256_SERVER_FIRST.replace("i=4096", &format!("i={MAX_ITERATIONS}"));
        assert_eq!(scram.reply(&server(&max, false)).unwrap(), Step::Compute);
    }

    /// The key derivation of a cold cache runs in rounds of [`DERIVATION_ROUND`]
    /// iterations, one per `Step::Compute`, so that the runner can yield between them;
    /// replies are refused meanwhile.
    #[test]
    fn the_key_derivation_runs_in_rounds() {
        let mut scram = conversation(AuthMechanism::ScramSha1, SHA1_NONCE);
        scram.start().unwrap();
        let mut step = scram.reply(&server(SHA1_SERVER_FIRST, false)).unwrap();
        let mut rounds = 0;
        while step == Step::Compute {
            rounds += 1;
            step = scram.compute().unwrap();
        }
        // i=10000: U1, then 9,999 iterations in rounds of 256.
        assert_eq!(rounds, 9_999_u32.div_ceil(DERIVATION_ROUND));
        assert_eq!(payload(&sent(step)), SHA1_CLIENT_FINAL);
        assert!(scram.compute().is_err());
        let mut scram = conversation(AuthMechanism::ScramSha1, SHA1_NONCE);
        scram.start().unwrap();
        assert_eq!(
            scram.reply(&server(SHA1_SERVER_FIRST, false)).unwrap(),
            Step::Compute
        );
        assert!(scram.reply(&server(SHA1_SERVER_FINAL, true)).is_err());
    }

    /// `Hi` computed in rounds equals its definition, `U1 XOR ... XOR Ui`, whatever
    /// the count's position relative to the rounds.
    #[test]
    fn the_derivation_in_rounds_matches_the_definition() {
        let (password, salt) = (b"pencil".as_slice(), b"salt".as_slice());
        for hash in [Hash::Sha1, Hash::Sha256] {
            for iterations in [1, 2, 9, 10, 11, 30] {
                let mut first_block = salt.to_vec();
                first_block.extend_from_slice(&[0, 0, 0, 1]);
                let mut u = hash.hmac(password, &first_block);
                let mut expected = u.clone();
                for _ in 1..iterations {
                    u = hash.hmac(password, &u);
                    expected.iter_mut().zip(&u).for_each(|(x, u)| *x ^= u);
                }
                let mut derivation = Derivation::new(hash, password, salt, iterations);
                let mut calls = 1;
                while derivation.advance(10).is_none() {
                    calls += 1;
                }
                assert_eq!(calls, (iterations as usize - 1).div_ceil(10).max(1));
                assert_eq!(derivation.advance(10), Some(&expected[..]));
            }
        }
    }

    #[test]
    fn a_bad_server_first_fails() {
        for server_first in [
            // The nonce does not extend the client's.
            "r=someoneElsesNonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "m=ext,r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "r=rOprNGfwEbeRWgbNEkqOx,s=***,i=4096",
            "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=lots",
            "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==",
            "s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOx,i=4096",
        ] {
            let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
            scram.start().unwrap();
            assert!(
                scram.reply(&server(server_first, false)).is_err(),
                "{server_first}"
            );
            // A failed conversation stays failed.
            assert!(scram.reply(&server(SHA256_SERVER_FIRST, false)).is_err());
        }
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        scram.start().unwrap();
        assert!(scram.reply(&server(SHA256_SERVER_FIRST, true)).is_err());
    }

    #[test]
    fn speculative_start_carries_the_database_and_accepts_the_hello_reply() {
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        let speculative = scram.speculative().unwrap();
        assert_eq!(speculative.get_str("db").unwrap(), "admin");
        assert_eq!(speculative.get_i32("saslStart").unwrap(), 1);
        assert_eq!(payload(&speculative), format!("n,,n=user,r={SHA256_NONCE}"));
        assert_eq!(scram.speculative(), None);
        // The hello's speculativeAuthenticate reply has no `ok`.
        let mut reply = server(SHA256_SERVER_FIRST, false);
        reply.remove("ok");
        let next = sent(answer(&mut scram, &reply).unwrap());
        assert_eq!(payload(&next), SHA256_CLIENT_FINAL);
    }

    #[test]
    fn start_after_an_unanswered_speculative_attempt_resends_the_same_message() {
        let mut scram = conversation(AuthMechanism::ScramSha256, SHA256_NONCE);
        let mut speculative = scram.speculative().unwrap();
        speculative.remove("db");
        assert_eq!(sent(scram.start().unwrap()), speculative);
        scram.reply(&server(SHA256_SERVER_FIRST, false)).unwrap();
        assert!(scram.start().is_err());
    }

    #[test]
    fn keys_are_cached_and_reused() {
        let cache = ScramCache::default();
        for _ in 0..2 {
            let mut scram = ScramConversation::with_nonce(
                AuthMechanism::ScramSha256,
                &credential("user", "pencil"),
                &cache,
                SHA256_NONCE.into(),
            )
            .unwrap();
            scram.start().unwrap();
            let next = sent(answer(&mut scram, &server(SHA256_SERVER_FIRST, false)).unwrap());
            assert_eq!(payload(&next), SHA256_CLIENT_FINAL);
        }
        assert_eq!(cache.lock().len(), 1);
        assert_eq!(format!("{cache:?}"), "ScramCache { entries: 1 }");
    }

    #[test]
    fn user_names_escape_equals_and_comma() {
        let scram = ScramConversation::with_nonce(
            AuthMechanism::ScramSha256,
            &credential("a=b,c", "pencil"),
            &ScramCache::default(),
            "nonce".into(),
        )
        .unwrap();
        assert_eq!(scram.client_first_bare(), "n=a=3Db=2Cc,r=nonce");
    }

    #[test]
    fn sha_256_passwords_are_saslprepped_and_sha_1_passwords_digested() {
        let prepare = |password| Hash::Sha256.prepare_password("user", password).unwrap();
        assert_eq!(prepare("I\u{00AD}X"), "IX");
        assert_eq!(prepare("\u{2168}"), "IX");
        assert_eq!(prepare("IX"), "IX");
        assert!(Hash::Sha256.prepare_password("user", "a\u{0007}b").is_err());
        // HEX(MD5("user:mongo:pencil")), no SASLprep on either part.
        assert_eq!(
            Hash::Sha1.prepare_password("user", "pencil").unwrap(),
            "1c33006ec1ffd90f9cadcbcc0e118200"
        );
    }

    #[test]
    fn a_credential_without_user_name_or_password_is_refused() {
        let cache = ScramCache::default();
        let mut no_password = credential("user", "");
        no_password.password = None;
        let mut no_user = credential("", "pencil");
        no_user.username = None;
        for credential in [no_password, no_user] {
            let err = ScramConversation::new(AuthMechanism::ScramSha1, &credential, &cache)
                .err()
                .unwrap();
            assert!(matches!(
                &*err.kind,
                crate::ErrorKind::InvalidArgument { .. }
            ));
        }
    }

    #[test]
    fn fresh_nonces_are_24_random_bytes() {
        let cache = ScramCache::default();
        let make = || {
            ScramConversation::new(AuthMechanism::ScramSha256, &credential("u", "p"), &cache)
                .unwrap()
                .client_nonce
        };
        let (a, b) = (make(), make());
        assert_ne!(a, b);
        assert_eq!(BASE64.decode(&a).unwrap().len(), NONCE_BYTES);
    }

    /// A small deterministic generator (xorshift64*) for the property test below.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// A server message: random bytes, or SCRAM-shaped text built from fragments
        /// that hit the parser's edge cases.
        fn message(&mut self) -> Vec<u8> {
            const FRAGMENTS: &[&str] = &[
                "r=",
                "s=",
                "i=",
                "v=",
                "e=",
                "m=",
                ",",
                "=",
                "rOprNGfwEbeRWgbNEkqO",
                "W22ZaJ0SNY7soEsUEjb6gQ==",
                "4096",
                "4095",
                "-1",
                "4294967296",
                "",
                "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
                "\u{00e9}",
                "==",
            ];
            if self.below(4) == 0 {
                return (0..self.below(40)).map(|_| self.next() as u8).collect();
            }
            // Often start like a real server-first, to get past the nonce check.
            let mut text = match self.below(2) {
                0 => format!("r={SHA256_NONCE}"),
                _ => String::new(),
            };
            for _ in 0..self.below(12) {
                text.push_str(FRAGMENTS[self.below(FRAGMENTS.len())]);
            }
            text.into_bytes()
        }

        fn reply(&mut self) -> Document {
            let mut reply = doc! {
                "conversationId": 1,
                "done": self.below(2) == 0,
                "payload": Binary { subtype: BinarySubtype::Generic, bytes: self.message() },
            };
            match self.below(8) {
                0 => drop(reply.remove("conversationId")),
                1 => drop(reply.remove("done")),
                2 => drop(reply.insert("payload", "text")),
                _ => {}
            }
            reply
        }
    }

    /// Random server-first and server-final messages never make SCRAM panic; they end
    /// the conversation with an error (or, by chance, a valid step).
    #[test]
    fn random_server_messages_never_panic() {
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        // One cache: the valid server-first below derives its keys once.
        let cache = ScramCache::default();
        for _ in 0..2000 {
            let mut scram = ScramConversation::with_nonce(
                AuthMechanism::ScramSha256,
                &credential("user", "pencil"),
                &cache,
                SHA256_NONCE.into(),
            )
            .unwrap();
            scram.start().unwrap();
            if rng.below(2) == 0 {
                // Reach the server-final stage with a valid server-first.
                answer(&mut scram, &server(SHA256_SERVER_FIRST, false)).unwrap();
            }
            for _ in 0..3 {
                let _ = scram.reply(&rng.reply());
            }
        }
    }
}
