//! Authentication (the Authentication spec): credentials, mechanism negotiation and
//! the I/O-free conversations of each mechanism.
//!
//! A mechanism is a [`Conversation`]: it produces the commands to send and consumes
//! the server's replies, never touching a socket. The connection module runs it:
//! optionally speculatively inside the handshake's hello, then command by command.

use bson::Document;

use crate::error::{Error, Result};

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
            .field("mechanism_properties", &self.mechanism_properties)
            .finish()
    }
}

/// What a [`Conversation`] wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this command (to the credential's source database, which the runner adds
    /// as `$db`) and feed the reply to [`Conversation::reply`].
    Send(Document),
    /// Authentication succeeded.
    Done,
}

/// An I/O-free authentication conversation for one connection.
///
/// The runner calls [`speculative`](Conversation::speculative) while building the
/// handshake; if the hello reply carries `speculativeAuthenticate`, that document is
/// fed to [`reply`](Conversation::reply) and the conversation goes on from there.
/// Otherwise it calls [`start`](Conversation::start) and then `reply` for each reply
/// until [`Step::Done`] or an error.
pub trait Conversation: crate::rt::MaybeSend {
    /// The document for the hello's `speculativeAuthenticate` field, if this mechanism
    /// supports speculative authentication.
    fn speculative(&mut self) -> Option<Document>;
    /// The first command (e.g. `saslStart`) when no speculative exchange happened.
    fn start(&mut self) -> Result<Step>;
    /// Consumes a successful (`ok: 1`) reply and says what comes next. A bad reply
    /// (for instance a wrong server signature) is an error.
    fn reply(&mut self, reply: &Document) -> Result<Step>;
}

impl Credential {
    /// Applies the Authentication spec's rules to a credential read from a connection
    /// string: fills the default `source` (and mechanism properties) for the
    /// mechanism, and rejects invalid combinations with a clear error.
    /// `default_database` is the database in the connection string's path.
    pub fn resolve_from_uri(self, default_database: Option<&str>) -> Result<Credential> {
        // Placeholder until the mechanism rules land in this module.
        let _ = default_database;
        Ok(self)
    }
}
