//! Authentication (the Authentication spec): credentials, mechanism negotiation and
//! the I/O-free conversations of each mechanism.
//!
//! A mechanism is a [`Conversation`]: it produces the commands to send and consumes
//! the server's replies, never touching a socket. The connection module runs it:
//! optionally speculatively inside the handshake's hello, then command by command.
//! [`ConnectionAuth`] strings the pieces together for one connection: the hello's
//! `saslSupportedMechs` and `speculativeAuthenticate` fields, mechanism negotiation
//! from the hello reply, and the conversation that follows.
//!
//! Implemented here: SCRAM-SHA-1, SCRAM-SHA-256, PLAIN and MONGODB-X509. GSSAPI
//! (Kerberos) is not supported.

use std::fmt;
use std::time::Duration;

use bson::{Bson, Document};

use crate::error::{Error, ErrorKind, Result};
use crate::rt::Clock;

pub mod aws;
mod credential;
mod negotiate;
pub mod oidc;
mod plain;
mod sasl;
mod scram;
mod x509;

pub use negotiate::{negotiate, sasl_supported_mechs_request, ConnectionAuth};
pub use scram::ScramCache;

/// An authentication mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthMechanism {
    /// `SCRAM-SHA-1`.
    ScramSha1,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `MONGODB-X509`: the TLS client certificate is the identity.
    MongoDbX509,
    /// `PLAIN` (LDAP proxy authentication).
    Plain,
    /// `MONGODB-AWS`: AWS IAM credentials, SigV4-signed.
    MongoDbAws,
    /// `MONGODB-OIDC`: OpenID Connect access tokens from a callback.
    MongoDbOidc,
    /// `GSSAPI` (Kerberos).
    Gssapi,
}

impl AuthMechanism {
    /// The mechanism's name as the server and the connection string spell it.
    pub fn name(self) -> &'static str {
        match self {
            AuthMechanism::ScramSha1 => "SCRAM-SHA-1",
            AuthMechanism::ScramSha256 => "SCRAM-SHA-256",
            AuthMechanism::MongoDbX509 => "MONGODB-X509",
            AuthMechanism::Plain => "PLAIN",
            AuthMechanism::MongoDbAws => "MONGODB-AWS",
            AuthMechanism::MongoDbOidc => "MONGODB-OIDC",
            AuthMechanism::Gssapi => "GSSAPI",
        }
    }

    /// Parses a mechanism name (exact spelling, as the spec requires).
    pub fn from_name(name: &str) -> Result<AuthMechanism> {
        ALL_MECHANISMS
            .iter()
            .copied()
            .find(|mechanism| mechanism.name() == name)
            .ok_or_else(|| Error::invalid_argument(format!("unknown authMechanism '{name}'")))
    }
}

const ALL_MECHANISMS: [AuthMechanism; 7] = [
    AuthMechanism::ScramSha1,
    AuthMechanism::ScramSha256,
    AuthMechanism::MongoDbX509,
    AuthMechanism::Plain,
    AuthMechanism::MongoDbAws,
    AuthMechanism::MongoDbOidc,
    AuthMechanism::Gssapi,
];

/// Who to authenticate as, and how. Built from the connection string or in code.
///
/// `Debug` never shows the password.
#[derive(Clone, Default, PartialEq)]
pub struct Credential {
    /// The user name.
    pub username: Option<String>,
    /// The password.
    pub password: Option<String>,
    /// The database the user is defined in (`authSource`).
    pub source: Option<String>,
    /// The mechanism; `None` negotiates SCRAM-SHA-256 or SCRAM-SHA-1 with the server.
    pub mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`, typed as the spec's tests expect them.
    pub mechanism_properties: Option<Document>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .field(
                "mechanism_properties",
                &self.mechanism_properties.as_ref().map(redact_properties),
            )
            .finish()
    }
}

/// Mechanism properties whose values are secrets, shown as `<redacted>` by `Debug`.
const SECRET_PROPERTIES: [&str; 1] = ["AWS_SESSION_TOKEN"];

fn redact_properties(properties: &Document) -> Document {
    properties
        .iter()
        .map(|(key, value)| {
            let value = if SECRET_PROPERTIES
                .iter()
                .any(|secret| secret.eq_ignore_ascii_case(key))
            {
                Bson::String("<redacted>".into())
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect()
}

/// What a [`Conversation`] wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this command (to the credential's source database, which the runner adds
    /// as `$db`) and feed the reply to [`Conversation::reply`].
    Send(Document),
    /// Call [`Conversation::compute`] for a round of slow, CPU-bound work (SCRAM's key
    /// derivation), after letting the executor run its other tasks: see
    /// [`next_command`].
    Compute,
    /// Authentication succeeded.
    Done,
}

/// An I/O-free authentication conversation for one connection.
///
/// The runner calls [`speculative`](Conversation::speculative) while building the
/// handshake; if the hello reply carries `speculativeAuthenticate`, that document is
/// fed to [`reply`](Conversation::reply) and the conversation goes on from there.
/// Otherwise it calls [`start`](Conversation::start) and then `reply` for each reply
/// until [`Step::Done`] or an error; [`next_command`] runs the [`Step::Compute`] steps
/// in between.
pub trait Conversation: crate::rt::MaybeSend {
    /// The document for the hello's `speculativeAuthenticate` field, if this mechanism
    /// supports speculative authentication.
    fn speculative(&mut self) -> Option<Document>;
    /// The first command (e.g. `saslStart`) when no speculative exchange happened.
    fn start(&mut self) -> Result<Step>;
    /// Consumes a successful (`ok: 1`) reply and says what comes next. A bad reply
    /// (for instance a wrong server signature) is an error.
    fn reply(&mut self, reply: &Document) -> Result<Step>;
    /// Runs one bounded round of the work a [`Step::Compute`] announced and says what
    /// comes next. Only mechanisms that return `Step::Compute` (SCRAM) implement it;
    /// for the others a call is out of turn, an error.
    fn compute(&mut self) -> Result<Step> {
        Err(Error::invalid_argument(
            "this authentication conversation has no work to compute",
        ))
    }
}

/// How long the rounds of a [`Step::Compute`] run back to back at most before
/// [`next_command`] gives the host a turn through the clock (a timer), not only the
/// executor.
const LONGEST_STRETCH: Duration = Duration::from_millis(20);

/// Runs the [`Step::Compute`] rounds of `conversation` from `step` on: the next command
/// to send, or `None` once authentication succeeded.
///
/// Before each round it yields to the executor ([`crate::rt::yield_now`]), so that a
/// long key derivation never starves the other tasks and timers of a runtime worker,
/// and the connection attempt's timeout (`connectTimeoutMS`) can fire and drop it. On
/// a JavaScript event loop that yield is a microtask, after which the host's timers and
/// I/O callbacks still wait; so every 20 ms of work the rounds wait for
/// a zero-length timer of `clock` instead, which lets the host run them.
pub async fn next_command(
    conversation: &mut dyn Conversation,
    mut step: Step,
    clock: &dyn Clock,
) -> Result<Option<Document>> {
    let mut stretch_started = clock.now();
    loop {
        step = match step {
            Step::Send(command) => return Ok(Some(command)),
            Step::Done => return Ok(None),
            Step::Compute => {
                if clock.now() - stretch_started >= LONGEST_STRETCH {
                    clock.sleep(Duration::ZERO).await;
                    stretch_started = clock.now();
                } else {
                    crate::rt::yield_now().await;
                }
                conversation.compute()?
            }
        };
    }
}

impl Credential {
    /// The database the authentication commands go to: `source` if set, else the
    /// mechanism's default (Authentication spec, "MongoCredential Properties" of each
    /// mechanism): `admin` for SCRAM and the default mechanism, `$external` for the
    /// others. A credential read from a connection string always has `source` set by
    /// [`resolve_from_uri`](Credential::resolve_from_uri), which also honours the
    /// URI's database.
    pub fn effective_source(&self) -> &str {
        match (&self.source, self.mechanism) {
            (Some(source), _) => source,
            (None, None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256)) => "admin",
            (None, Some(_)) => "$external",
        }
    }
}

/// What the mechanisms need from the client and the host, besides the credential.
#[derive(Debug, Clone)]
pub struct AuthContext {
    /// The client's cache of SCRAM keys, shared by all its connections.
    pub scram_cache: ScramCache,
    /// The host's environment variables (MONGODB-AWS credentials); read anew for
    /// every connection, as the spec requires.
    pub env: fn(&str) -> Option<String>,
    /// The wall-clock time, since the Unix epoch (MONGODB-AWS signs requests with it).
    pub unix_time: std::time::Duration,
}

impl Default for AuthContext {
    /// An empty cache, no environment, and the Unix epoch as the time.
    fn default() -> Self {
        AuthContext {
            scram_cache: ScramCache::default(),
            env: |_| None,
            unix_time: std::time::Duration::ZERO,
        }
    }
}

/// Builds the conversation of `mechanism` for `credential`: the credential's own
/// mechanism, or the one [`negotiate`] picked when it has none.
///
/// Fails with [`ErrorKind::InvalidArgument`] when
/// the credential lacks what the mechanism needs (a SCRAM credential without a
/// password, say) or the mechanism is not supported.
pub fn conversation(
    credential: &Credential,
    mechanism: AuthMechanism,
    context: &AuthContext,
) -> Result<Box<dyn Conversation>> {
    Ok(match mechanism {
        AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256 => Box::new(
            scram::ScramConversation::new(mechanism, credential, &context.scram_cache)?,
        ),
        AuthMechanism::Plain => Box::new(plain::PlainConversation::new(credential)?),
        AuthMechanism::MongoDbX509 => Box::new(x509::X509Conversation::new(credential)?),
        AuthMechanism::MongoDbAws => Box::new(aws::AwsConversation::new(
            aws::credentials_from(credential, &context.env)?,
            context.unix_time.as_secs(),
        )?),
        AuthMechanism::MongoDbOidc | AuthMechanism::Gssapi => {
            return Err(Error::invalid_argument(format!(
                "the {} authentication mechanism is not supported",
                mechanism.name()
            )))
        }
    })
}

/// An authentication failure the driver detects in the server's replies (a wrong
/// server signature, a malformed SCRAM message, ...) while authenticating against
/// `source`. The message never contains a secret.
pub(crate) fn auth_error(
    mechanism: AuthMechanism,
    source: &str,
    message: impl fmt::Display,
) -> Error {
    Error::new(ErrorKind::Authentication {
        mechanism: mechanism.name(),
        source: source.to_owned(),
        message: message.to_string(),
        code: None,
    })
}

/// The error for a credential that lacks `what` for `mechanism`.
pub(crate) fn missing(mechanism: AuthMechanism, what: &str) -> Error {
    Error::invalid_argument(format!(
        "{} authentication requires {what}",
        mechanism.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A conversation that computes `rounds` rounds, then sends a command.
    struct Rounds {
        rounds: u32,
    }

    impl Conversation for Rounds {
        fn speculative(&mut self) -> Option<Document> {
            None
        }
        fn start(&mut self) -> Result<Step> {
            Ok(Step::Compute)
        }
        fn reply(&mut self, _reply: &Document) -> Result<Step> {
            Ok(Step::Done)
        }
        fn compute(&mut self) -> Result<Step> {
            self.rounds -= 1;
            Ok(match self.rounds {
                0 => Step::Send(doc! { "saslContinue": 1 }),
                _ => Step::Compute,
            })
        }
    }

    /// A clock 5 ms later at each reading, counting the timers asked of it.
    #[derive(Default)]
    struct Ticking {
        readings: AtomicU64,
        timers: AtomicU64,
    }

    impl Clock for Ticking {
        fn now(&self) -> crate::rt::Instant {
            let reading = self.readings.fetch_add(1, Ordering::Relaxed);
            crate::rt::Instant::from_origin(Duration::from_millis(5 * reading))
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _duration: Duration) -> crate::rt::BoxFuture<'static, ()> {
            self.timers.fetch_add(1, Ordering::Relaxed);
            crate::rt::boxed(async {})
        }
    }

    /// Long work gives the host a timer's turn (a JavaScript event loop runs its timers
    /// and I/O then) every LONGEST_STRETCH, not only microtask-like yields.
    #[test]
    fn long_work_gives_the_host_a_turn_through_the_clock() {
        let clock = Ticking::default();
        let mut conversation = Rounds { rounds: 40 };
        let step = conversation.start().unwrap();
        let command =
            futures::executor::block_on(next_command(&mut conversation, step, &clock)).unwrap();
        assert_eq!(command, Some(doc! { "saslContinue": 1 }));
        // 5 ms a reading: the stretch reaches 20 ms every few rounds.
        let timers = clock.timers.load(Ordering::Relaxed);
        assert!((5..=20).contains(&timers), "{timers} timers for 40 rounds");
    }

    #[test]
    fn debug_never_shows_secrets() {
        let credential = Credential {
            username: Some("user".into()),
            password: Some("hunter2-secret".into()),
            mechanism: Some(AuthMechanism::MongoDbAws),
            mechanism_properties: Some(doc! { "AWS_SESSION_TOKEN": "token-secret" }),
            ..Credential::default()
        };
        let shown = format!("{credential:?}");
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(!shown.contains("token-secret"), "{shown}");
        assert!(
            shown.contains("user") && shown.contains("<redacted>"),
            "{shown}"
        );
        let pretty = format!("{credential:#?}");
        assert!(!pretty.contains("secret"), "{pretty}");
    }

    #[test]
    fn mechanism_names_round_trip() {
        for mechanism in ALL_MECHANISMS {
            assert_eq!(AuthMechanism::from_name(mechanism.name()), Ok(mechanism));
        }
        assert!(AuthMechanism::from_name("scram-sha-1").is_err());
    }

    #[test]
    fn effective_source_defaults_per_mechanism() {
        let mut credential = Credential::default();
        assert_eq!(credential.effective_source(), "admin");
        credential.mechanism = Some(AuthMechanism::MongoDbX509);
        assert_eq!(credential.effective_source(), "$external");
        credential.source = Some("db".into());
        assert_eq!(credential.effective_source(), "db");
    }

    #[test]
    fn unsupported_mechanisms_are_a_clear_error() {
        let credential = Credential {
            username: Some("user@EXAMPLE.COM".into()),
            mechanism: Some(AuthMechanism::Gssapi),
            ..Credential::default()
        };
        let err = conversation(&credential, AuthMechanism::Gssapi, &AuthContext::default())
            .err()
            .expect("GSSAPI is not supported");
        assert!(err.to_string().contains("GSSAPI"), "{err}");
    }
}
