//! Mechanism negotiation and speculative authentication in the handshake
//! (Authentication spec, "Mechanism Negotiation via Handshake" and "Default
//! Authentication Methods"; MongoDB Handshake spec, "Speculative Authentication").

use std::sync::Arc;

use bson::{Bson, Document};

use super::cloud::{self, AwsCredentialCache, CloudAccess};
use super::scram::ScramCache;
use super::{aws, plain, scram, x509, AuthMechanism, Conversation, Credential, Step};
use crate::error::{Error, Result};
use crate::rt::KeyDerivation;

/// What the mechanisms need from the client and the host, besides the credential.
#[derive(Clone)]
pub struct AuthContext {
    /// The client's cache of SCRAM keys, shared by all its connections.
    pub scram_cache: ScramCache,
    /// The host's key derivation for SCRAM, if it has one (see [`KeyDerivation`]).
    pub key_derivation: Option<Arc<dyn KeyDerivation>>,
    /// The host's environment variables (MONGODB-AWS credentials); read anew for
    /// every connection, as the spec requires.
    pub env: fn(&str) -> Option<String>,
    /// The wall-clock time, since the Unix epoch (MONGODB-AWS signs requests with it
    /// and checks its cached credentials' expiry against it): set it for each
    /// connection.
    pub unix_time: std::time::Duration,
    /// HTTP to the AWS endpoints, for MONGODB-AWS credentials that are not in the
    /// environment; `None`: the environment only.
    pub cloud: Option<CloudAccess>,
    /// The client's cache of the MONGODB-AWS credentials that `cloud` fetched.
    pub aws_cache: AwsCredentialCache,
}

impl Default for AuthContext {
    /// An empty cache, the core's own key derivation, no environment, and the Unix
    /// epoch as the time.
    fn default() -> Self {
        AuthContext {
            scram_cache: ScramCache::default(),
            key_derivation: None,
            env: |_| None,
            unix_time: std::time::Duration::ZERO,
            cloud: None,
            aws_cache: AwsCredentialCache::default(),
        }
    }
}

impl std::fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthContext")
            .field("scram_cache", &self.scram_cache)
            .field("key_derivation", &self.key_derivation.is_some())
            .field("unix_time", &self.unix_time)
            .field("cloud", &self.cloud)
            .field("aws_cache", &self.aws_cache)
            .finish_non_exhaustive()
    }
}

/// Builds the conversation of `mechanism` for `credential`: the credential's own
/// mechanism, or the one [`negotiate`] picked when it has none.
///
/// Fails with [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) when
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
        AuthMechanism::MongoDbAws => {
            let credentials =
                aws::credentials_from(credential, &context.env)?.ok_or_else(|| {
                    Error::invalid_argument(
                        "MONGODB-AWS found no credentials in the environment (AWS_ACCESS_KEY_ID, \
                     AWS_SECRET_ACCESS_KEY); those of AWS endpoints need \
                     ConnectionAuth::establish",
                    )
                })?;
            Box::new(aws::AwsConversation::new(
                credentials,
                context.unix_time.as_secs(),
            )?)
        }
        AuthMechanism::MongoDbOidc | AuthMechanism::Gssapi => {
            return Err(Error::invalid_argument(format!(
                "the {} authentication mechanism is not supported",
                mechanism.name()
            )))
        }
    })
}

/// The hello's `saslSupportedMechs` value, `"<source>.<username>"`, sent when the
/// credential names no mechanism so that the server says which SCRAM variants the
/// user has. The user name is sent as given (no SASLprep). `None` when the credential
/// has a mechanism or no user name.
pub fn sasl_supported_mechs_request(credential: &Credential) -> Option<String> {
    match (&credential.mechanism, &credential.username) {
        (None, Some(username)) => Some(format!("{}.{username}", credential.effective_source())),
        _ => None,
    }
}

/// The mechanism to authenticate with: the credential's own if it names one ("the
/// driver MUST honor this"); otherwise SCRAM-SHA-256 if the hello reply's
/// `saslSupportedMechs` lists it, else SCRAM-SHA-1 — also when the list is absent.
/// The list is not validated: unknown names are ignored.
pub fn negotiate(
    credential: &Credential,
    sasl_supported_mechs: Option<&[String]>,
) -> AuthMechanism {
    match credential.mechanism {
        Some(mechanism) => mechanism,
        None if sasl_supported_mechs
            .unwrap_or_default()
            .iter()
            .any(|name| name == AuthMechanism::ScramSha256.name()) =>
        {
            AuthMechanism::ScramSha256
        }
        None => AuthMechanism::ScramSha1,
    }
}

/// The authentication of one new connection, from the handshake to the first command
/// of the conversation.
///
/// 1. [`ConnectionAuth::new`] picks the conversation to try speculatively: the
///    credential's mechanism, or SCRAM-SHA-256 when it has none ("drivers MUST use the
///    SCRAM-SHA-256 mechanism for speculative authentication").
/// 2. [`ConnectionAuth::prepare_hello`] adds `saslSupportedMechs` and
///    `speculativeAuthenticate` to the hello.
/// 3. [`ConnectionAuth::after_hello`] reads the hello reply and returns the
///    conversation with its first [`Step`]: the answer to the server's
///    `speculativeAuthenticate` reply if there is one, else the start of the
///    negotiated mechanism's conversation. The caller then sends each command that
///    [`next_command`](super::next_command) returns (running the [`Step::Compute`]
///    rounds) to the credential's [`effective_source`](Credential::effective_source)
///    and feeds the replies to [`Conversation::reply`] until [`Step::Done`].
pub struct ConnectionAuth {
    credential: Credential,
    context: AuthContext,
    speculative_mechanism: AuthMechanism,
    conversation: Box<dyn Conversation>,
}

impl std::fmt::Debug for ConnectionAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionAuth")
            .field("credential", &self.credential)
            .field("speculative_mechanism", &self.speculative_mechanism)
            .finish_non_exhaustive()
    }
}

impl ConnectionAuth {
    /// Prepares to authenticate a connection with `credential`, sharing the client's
    /// `context`. Fails if the credential cannot be used (see [`conversation`]).
    /// MONGODB-AWS takes its credentials from the environment only here; see
    /// [`establish`](Self::establish).
    pub fn new(credential: &Credential, context: &AuthContext) -> Result<Self> {
        let speculative_mechanism = credential.mechanism.unwrap_or(AuthMechanism::ScramSha256);
        Ok(ConnectionAuth {
            conversation: conversation(credential, speculative_mechanism, context)?,
            credential: credential.clone(),
            context: context.clone(),
            speculative_mechanism,
        })
    }

    /// [`new`](Self::new), with MONGODB-AWS credentials from the whole chain of the
    /// spec ("Obtaining Credentials"): the client's cache, the environment, then the
    /// AWS endpoints over [`AuthContext::cloud`] (see [`cloud::aws_credentials`]).
    /// MONGODB-AWS is never negotiated, so its conversation is the one built here.
    pub async fn establish(credential: &Credential, context: &AuthContext) -> Result<Self> {
        if credential.mechanism != Some(AuthMechanism::MongoDbAws) {
            return Self::new(credential, context);
        }
        let credentials = cloud::aws_credentials(
            credential,
            context.env,
            context.cloud.as_ref(),
            &context.aws_cache,
            context.unix_time,
        )
        .await?;
        Ok(ConnectionAuth {
            conversation: Box::new(aws::AwsConversation::new(
                credentials,
                context.unix_time.as_secs(),
            )?),
            credential: credential.clone(),
            context: context.clone(),
            speculative_mechanism: AuthMechanism::MongoDbAws,
        })
    }

    /// Adds `saslSupportedMechs` (when negotiating) and `speculativeAuthenticate`
    /// (when the mechanism has a speculative form) to the `hello` command.
    pub fn prepare_hello(&mut self, hello: &mut Document) {
        if let Some(user) = sasl_supported_mechs_request(&self.credential) {
            hello.insert("saslSupportedMechs", user);
        }
        if let Some(speculative) = self.conversation.speculative() {
            hello.insert("speculativeAuthenticate", speculative);
        }
    }

    /// Continues from the hello reply and its `speculativeAuthenticate` document
    /// (taken out of the reply, which is kept: see `Connection::handshake`): the
    /// mechanism in use, its conversation, and what to send first.
    ///
    /// An arbiter cannot authenticate, so its reply ends the conversation at once
    /// (Authentication spec, "Authentication Handshake", step 2). A
    /// `speculativeAuthenticate` reply is fed to the speculative conversation;
    /// without one the mechanism is negotiated from `saslSupportedMechs` and its
    /// conversation started.
    pub fn after_hello(
        self,
        hello_reply: &Document,
        speculative: Option<&Document>,
    ) -> Result<(AuthMechanism, Box<dyn Conversation>, Step)> {
        let ConnectionAuth {
            credential,
            context,
            speculative_mechanism,
            mut conversation,
        } = self;
        if hello_reply.get_bool("arbiterOnly").unwrap_or(false) {
            return Ok((speculative_mechanism, conversation, Step::Done));
        }
        let supported: Option<Vec<String>> = match hello_reply.get("saslSupportedMechs") {
            Some(Bson::Array(names)) => Some(
                names
                    .iter()
                    .filter_map(|name| name.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        };
        let mechanism = negotiate(&credential, supported.as_deref());
        // The speculative exchange is continued only if it used the mechanism that
        // negotiation picks: a server listing only SCRAM-SHA-1 for the user cannot
        // finish a SCRAM-SHA-256 exchange, even if it answered one (SecantusDB does).
        if let Some(speculative) = speculative {
            if mechanism == speculative_mechanism {
                let step = conversation.reply(speculative)?;
                return Ok((mechanism, conversation, step));
            }
        }
        if mechanism != speculative_mechanism {
            conversation = self::conversation(&credential, mechanism, &context)?;
        }
        let step = conversation.start()?;
        Ok((mechanism, conversation, step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn credential(mechanism: Option<AuthMechanism>) -> Credential {
        Credential {
            username: Some("user".into()),
            password: Some("pencil".into()),
            source: Some("db".into()),
            mechanism,
            ..Credential::default()
        }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn negotiation_prefers_sha_256_then_sha_1() {
        let default = credential(None);
        let both = names(&["SCRAM-SHA-1", "SCRAM-SHA-256"]);
        assert_eq!(negotiate(&default, Some(&both)), AuthMechanism::ScramSha256);
        let sha1 = names(&["SCRAM-SHA-1"]);
        assert_eq!(negotiate(&default, Some(&sha1)), AuthMechanism::ScramSha1);
        let odd = names(&["PLAIN", "SOMETHING-NEW"]);
        assert_eq!(negotiate(&default, Some(&odd)), AuthMechanism::ScramSha1);
        assert_eq!(negotiate(&default, None), AuthMechanism::ScramSha1);
        let plain = credential(Some(AuthMechanism::Plain));
        assert_eq!(negotiate(&plain, Some(&both)), AuthMechanism::Plain);
    }

    #[test]
    fn sasl_supported_mechs_is_requested_only_when_negotiating() {
        assert_eq!(
            sasl_supported_mechs_request(&credential(None)).as_deref(),
            Some("db.user")
        );
        let mut no_source = credential(None);
        no_source.source = None;
        assert_eq!(
            sasl_supported_mechs_request(&no_source).as_deref(),
            Some("admin.user")
        );
        let explicit = credential(Some(AuthMechanism::ScramSha256));
        assert_eq!(sasl_supported_mechs_request(&explicit), None);
    }

    fn hello(auth: &mut ConnectionAuth) -> Document {
        let mut hello = doc! { "hello": 1 };
        auth.prepare_hello(&mut hello);
        hello
    }

    fn first_command(step: Step) -> Document {
        match step {
            Step::Send(command) => command,
            other => panic!("expected a command, got {other:?}"),
        }
    }

    #[test]
    fn without_a_mechanism_the_hello_negotiates_and_speculates_with_sha_256() {
        let mut auth = ConnectionAuth::new(&credential(None), &AuthContext::default()).unwrap();
        let hello = hello(&mut auth);
        assert_eq!(hello.get_str("saslSupportedMechs").unwrap(), "db.user");
        let speculative = hello.get_document("speculativeAuthenticate").unwrap();
        assert_eq!(speculative.get_str("mechanism").unwrap(), "SCRAM-SHA-256");
        assert_eq!(speculative.get_str("db").unwrap(), "db");

        // No speculative reply and only SCRAM-SHA-1: a new SCRAM-SHA-1 conversation.
        let reply = doc! { "ok": 1, "saslSupportedMechs": ["SCRAM-SHA-1"] };
        let (_, _, step) = auth.after_hello(&reply, None).unwrap();
        let start = first_command(step);
        assert_eq!(start.get_str("mechanism").unwrap(), "SCRAM-SHA-1");
        assert!(!start.contains_key("db"));
    }

    #[test]
    fn the_negotiated_sha_256_reuses_the_speculative_conversation() {
        let mut auth = ConnectionAuth::new(&credential(None), &AuthContext::default()).unwrap();
        let speculative = hello(&mut auth)
            .get_document("speculativeAuthenticate")
            .unwrap()
            .clone();
        let reply = doc! { "ok": 1, "saslSupportedMechs": ["SCRAM-SHA-256", 7] };
        let (_, _, step) = auth.after_hello(&reply, None).unwrap();
        let start = first_command(step);
        assert_eq!(start.get_str("mechanism").unwrap(), "SCRAM-SHA-256");
        assert_eq!(start.get("payload"), speculative.get("payload"));
    }

    #[test]
    fn a_speculative_reply_continues_the_conversation() {
        let x509 = Credential {
            mechanism: Some(AuthMechanism::MongoDbX509),
            ..Credential::default()
        };
        let mut auth = ConnectionAuth::new(&x509, &AuthContext::default()).unwrap();
        let hello = hello(&mut auth);
        assert!(!hello.contains_key("saslSupportedMechs"));
        assert!(hello.contains_key("speculativeAuthenticate"));
        let speculative = doc! { "dbname": "$external", "user": "CN=client" };
        let (_, _, step) = auth
            .after_hello(&doc! { "ok": 1 }, Some(&speculative))
            .unwrap();
        assert_eq!(step, Step::Done);
    }

    #[test]
    fn arbiters_are_not_authenticated() {
        let mut auth = ConnectionAuth::new(&credential(None), &AuthContext::default()).unwrap();
        hello(&mut auth);
        let reply = doc! { "ok": 1, "arbiterOnly": true };
        assert_eq!(auth.after_hello(&reply, None).unwrap().2, Step::Done);
    }

    #[test]
    fn mechanisms_without_a_speculative_form_start_after_the_hello() {
        let plain = credential(Some(AuthMechanism::Plain));
        let mut auth = ConnectionAuth::new(&plain, &AuthContext::default()).unwrap();
        assert!(!hello(&mut auth).contains_key("speculativeAuthenticate"));
        let (_, _, step) = auth.after_hello(&doc! { "ok": 1 }, None).unwrap();
        assert_eq!(first_command(step).get_str("mechanism").unwrap(), "PLAIN");
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
