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
//! Implemented here: SCRAM-SHA-1, SCRAM-SHA-256, PLAIN, MONGODB-X509, MONGODB-AWS and
//! MONGODB-OIDC, with the credentials of cloud endpoints (`cloud`). GSSAPI (Kerberos)
//! is not supported.

pub mod aws;
pub mod cloud;
mod conversation;
mod credential;
mod negotiate;
pub mod oidc;
mod oidc_callback;
mod plain;
mod sasl;
mod scram;
mod x509;

pub(crate) use conversation::auth_error;
pub use conversation::{next_command, Conversation, Step};
pub(crate) use credential::missing;
pub use credential::{AuthMechanism, Credential};
pub use negotiate::{
    conversation, negotiate, sasl_supported_mechs_request, AuthContext, ConnectionAuth,
};
pub use scram::ScramCache;
