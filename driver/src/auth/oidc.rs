//! MONGODB-OIDC (Authentication spec, "MONGODB-OIDC"): OpenID Connect access tokens
//! from a callback, cached per client.
//!
//! The pieces:
//!
//! - [`Callback`]: the application's source of tokens, for the machine workflow
//!   ("OIDC Callback", [`Callback::machine`]) or the human one ("OIDC Human
//!   Callback", [`Callback::human`]), set as [`Credential::oidc_callback`]. The
//!   built-in `ENVIRONMENT` integrations `test` and `k8s` are machine callbacks that
//!   read a token file through the host's [`OidcHost`] ([`Credential::oidc_host`]);
//!   `azure` and `gcp` ask their cloud's metadata service over HTTP (`auth::cloud`).
//! - [`OidcAuthenticator`]: one per client. It holds the *Client Cache* ("Credential
//!   Caching": the access token, and for the human workflow the `IdpInfo` and the
//!   refresh token), makes sure one callback runs at a time, and runs the spec's
//!   algorithms for authentication, speculative authentication and reauthentication.
//! - [`OidcConnectionCache`]: the *Connection Cache*, one per connection: the token
//!   that authenticated it.
//!
//! The SASL conversations themselves are I/O-free; the authenticator reaches the
//! server only through the [`SaslSender`] the connection code gives it, and time only
//! through the [`Clock`] of [`OidcContext`].
//!
//! How a connection uses it:
//!
//! 1. hello: `speculativeAuthenticate` = [`OidcAuthenticator::speculative`] (present
//!    only when the client cache has a token); then
//!    [`OidcAuthenticator::speculative_done`] with the reply's
//!    `speculativeAuthenticate`; if that says `true`, the connection is authenticated;
//! 2. otherwise [`OidcAuthenticator::authenticate`];
//! 3. later, when a command fails and [`should_reauthenticate`] says so,
//!    [`OidcAuthenticator::reauthenticate`] (no hello, no speculative attempt), then
//!    the command again.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::cloud::{CloudAccess, MetadataTokenSource};
use super::sasl::{continue_command, start_command, Reply};
use super::{auth_error, AuthMechanism, Conversation, Credential, Step};
use crate::error::{Error, Result};
use crate::rt::{self, BoxFuture, Clock, Instant, MaybeSend};

use super::oidc_callback::{token_file_error, TokenSource, Workflow};
pub use super::oidc_callback::{
    Callback, CallbackContext, IdpServerInfo, IdpServerResponse, OidcHost,
};

const MECHANISM: AuthMechanism = AuthMechanism::MongoDbOidc;
/// The mechanism's database ("source MUST be $external").
const SOURCE: &str = "$external";

/// An authentication failure the driver detects (a bad reply, a failed callback).
fn failure(message: impl fmt::Display) -> Error {
    auth_error(MECHANISM, SOURCE, message)
}

/// The server's `AuthenticationFailed` code: a cached token it refuses is invalidated.
const AUTHENTICATION_FAILED: i32 = 18;
/// The server's `ReauthenticationRequired` code.
const REAUTHENTICATION_REQUIRED: i32 = 391;

/// The callback API version passed to callbacks ("OIDC Callback": "Drivers MUST pass
/// 1 for the initial callback API version number").
pub const CALLBACK_API_VERSION: u32 = 1;

/// The machine callback's timeout when no client-side operation timeout applies
/// ("OIDC Callback": "If CSOT is not applied, then the driver MUST use 1 minute").
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(60);

/// The human callback's timeout ("OIDC Human Callback": "The timeout duration MUST be
/// 5 minutes").
pub const HUMAN_CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);

/// "Wait until it has been at least 100ms since the last callback invocation".
const MIN_CALLBACK_INTERVAL: Duration = Duration::from_millis(100);

/// The default `ALLOWED_HOSTS` of the human workflow ("MongoCredential Properties").
pub const DEFAULT_ALLOWED_HOSTS: [&str; 8] = [
    "*.mongodb.net",
    "*.mongodb-qa.net",
    "*.mongodb-dev.net",
    "*.mongodbgov.net",
    "localhost",
    "127.0.0.1",
    "::1",
    "*.mongo.com",
];

/// The token file of a Kubernetes service account when neither
/// `AZURE_FEDERATED_TOKEN_FILE` nor `AWS_WEB_IDENTITY_TOKEN_FILE` is set.
const K8S_DEFAULT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Reads the server's `IdpInfo` payload: `issuer` is required, `clientId` and
/// `requestScopes` optional.
fn idp_info_from_payload(payload: &[u8]) -> Result<IdpServerInfo> {
    let document = Document::from_reader(payload).map_err(|error| {
        failure(format!(
            "the server's IdpInfo is not a BSON document: {error}"
        ))
    })?;
    let issuer = match document.get("issuer") {
        Some(Bson::String(issuer)) => issuer.clone(),
        _ => return Err(failure("the server's IdpInfo has no issuer")),
    };
    let client_id = match document.get("clientId") {
        None | Some(Bson::Null) => None,
        Some(Bson::String(client_id)) => Some(client_id.clone()),
        Some(_) => return Err(failure("the server's IdpInfo clientId is not a string")),
    };
    let request_scopes = match document.get("requestScopes") {
        None | Some(Bson::Null) => None,
        Some(Bson::Array(scopes)) => Some(
            scopes
                .iter()
                .map(|scope| match scope {
                    Bson::String(scope) => Ok(scope.clone()),
                    _ => Err(failure(
                        "the server's IdpInfo requestScopes are not all strings",
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        Some(_) => {
            return Err(failure(
                "the server's IdpInfo requestScopes is not an array",
            ))
        }
    };
    Ok(IdpServerInfo {
        issuer,
        client_id,
        request_scopes,
    })
}

/// Sends one authentication command on the connection being authenticated and
/// returns the server's reply. Implemented by the connection code: it adds
/// `$db: "$external"`, and turns an `ok: 0` reply into an error that carries the
/// server's code ([`Error::code`]), which is how the authenticator recognises
/// `AuthenticationFailed` (18).
pub trait SaslSender: MaybeSend {
    /// Sends `command` and returns its `ok: 1` reply.
    fn send<'a>(&'a mut self, command: Document) -> BoxFuture<'a, Result<Document>>;
}

/// What an authentication of one connection needs to know besides the connection.
#[derive(Clone, Copy)]
pub struct OidcContext<'a> {
    /// The server's host name or IP address, without port or brackets, after SRV
    /// resolution: checked against `ALLOWED_HOSTS` in the human workflow.
    pub server_host: &'a str,
    /// The machine callback's timeout: the smaller of what is left of
    /// `connectTimeoutMS` and of `timeoutMS`, or [`DEFAULT_CALLBACK_TIMEOUT`] when no
    /// client-side operation timeout applies ("OIDC Callback").
    pub timeout: Duration,
    /// The client's clock: bounds the callback and spaces calls 100 ms apart.
    pub clock: &'a dyn Clock,
}

/// The *Connection Cache* ("Credential Caching"): the access token that authenticated
/// one connection, which reauthentication invalidates. One per connection, starting
/// empty.
#[derive(Debug, Default)]
pub struct OidcConnectionCache {
    access_token: Option<Secret>,
}

/// An access or refresh token; `Debug` shows `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The *Client Cache* ("Credential Caching").
#[derive(Debug, Default)]
struct ClientCache {
    access_token: Option<Secret>,
    /// Human workflow only.
    refresh_token: Option<Secret>,
    /// Human workflow only.
    idp_info: Option<IdpServerInfo>,
}

/// A token fetched for an authentication attempt.
struct Fetched {
    token: Secret,
    /// Whether it came from the client cache rather than from the callback.
    cached: bool,
}

/// The human callback's inputs besides the common ones.
struct HumanInputs {
    idp_info: IdpServerInfo,
    refresh_token: Option<Secret>,
}

/// How a one-step conversation ended, when no other error stopped it.
enum Outcome {
    Authenticated,
    /// The server answered `AuthenticationFailed` (18).
    Refused(Error),
}

/// MONGODB-OIDC for one client: the token cache shared by its connections and the
/// spec's authentication algorithms. Share it between connections (e.g. in an `Arc`).
pub struct OidcAuthenticator {
    username: Option<String>,
    workflow: Workflow,
    source: Arc<dyn TokenSource>,
    allowed_hosts: Vec<String>,
    cache: Mutex<ClientCache>,
    /// Held while a callback runs, so that one runs at a time; holds the time of the
    /// last invocation.
    callback_turn: futures::lock::Mutex<Option<Instant>>,
}

impl fmt::Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("username", &self.username)
            .field("workflow", &self.workflow)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cache", &*self.cache())
            .finish()
    }
}

impl OidcAuthenticator {
    /// The authenticator of a client whose credential uses MONGODB-OIDC: its
    /// [`oidc_callback`](Credential::oidc_callback), or the built-in environment its
    /// `ENVIRONMENT` property names (reading files through its
    /// [`oidc_host`](Credential::oidc_host)).
    ///
    /// Fails with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when
    /// the configuration breaks the spec's rules ("MongoCredential Properties"): a
    /// password; both or neither of a callback and `ENVIRONMENT`; `ALLOWED_HOSTS`
    /// without a human callback, or not an array of strings; `TOKEN_RESOURCE` outside
    /// `azure`/`gcp`, or missing there; and when it cannot be served here:
    /// `ENVIRONMENT` `azure` or `gcp` without HTTP (see [`with_cloud`](Self::with_cloud)),
    /// or `test`/`k8s` without an [`OidcHost`] on the credential.
    pub fn new(credential: &Credential) -> Result<Self> {
        Self::build(credential, None)
    }

    /// [`new`](Self::new), with the HTTP access that the `azure` and `gcp` environments
    /// need to reach their metadata services, and the runtime's files, where `test` and
    /// `k8s` read their token files when the credential has no [`OidcHost`].
    pub fn with_cloud(credential: &Credential, cloud: CloudAccess) -> Result<Self> {
        Self::build(credential, Some(cloud))
    }

    fn build(credential: &Credential, cloud: Option<CloudAccess>) -> Result<Self> {
        if credential.password.is_some() {
            return Err(Error::invalid_argument(
                "the MONGODB-OIDC authentication mechanism does not take a password",
            ));
        }
        let environment = property(credential, "ENVIRONMENT")?;
        let (workflow, source) = match (&credential.oidc_callback.inner, environment) {
            (Some(_), Some(environment)) => {
                return Err(Error::invalid_argument(format!(
                    "MONGODB-OIDC takes an OIDC callback or the ENVIRONMENT property, not both \
                     (ENVIRONMENT is '{environment}')"
                )))
            }
            (Some((workflow, source)), None) => (*workflow, source.clone()),
            (None, Some(environment)) => (
                Workflow::Machine,
                environment_callback(environment, credential, cloud)?,
            ),
            (None, None) => {
                return Err(Error::invalid_argument(
                    "MONGODB-OIDC needs an OIDC callback (Credential::oidc_callback) or the \
                     ENVIRONMENT property",
                ))
            }
        };
        let cloud_environment = matches!(environment, Some("azure" | "gcp"));
        if !cloud_environment && property(credential, "TOKEN_RESOURCE")?.is_some() {
            return Err(Error::invalid_argument(
                "the MONGODB-OIDC TOKEN_RESOURCE property applies only to the azure and gcp environments",
            ));
        }
        let allowed_hosts = match (workflow, allowed_hosts_property(credential)?) {
            (Workflow::Human, Some(hosts)) => hosts,
            (Workflow::Human, None) => DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|&host| host.into())
                .collect(),
            (Workflow::Machine, Some(_)) => {
                return Err(Error::invalid_argument(
                    "the MONGODB-OIDC ALLOWED_HOSTS property applies only to a human callback",
                ))
            }
            (Workflow::Machine, None) => Vec::new(),
        };
        Ok(OidcAuthenticator {
            username: credential.username.clone(),
            workflow,
            source,
            allowed_hosts,
            cache: Mutex::new(ClientCache::default()),
            callback_turn: futures::lock::Mutex::new(None),
        })
    }

    /// The hello's `speculativeAuthenticate` document ("Speculative Authentication"):
    /// a `saslStart` with the client cache's access token, recorded in `connection`;
    /// `None` when the cache has no token (or, in the human workflow, when
    /// `server_host` is not allowed).
    pub fn speculative(
        &self,
        connection: &mut OidcConnectionCache,
        server_host: &str,
    ) -> Option<Document> {
        if !self.host_allowed(server_host) {
            return None;
        }
        let token = self.cached_access_token()?;
        let command = OidcConversation::new(token.clone()).speculative()?;
        connection.access_token = Some(token);
        Some(command)
    }

    /// Whether the hello reply's `speculativeAuthenticate` (`None` when absent) shows
    /// that speculative authentication succeeded. If it did not, `connection` is
    /// cleared and the caller goes on with [`authenticate`](Self::authenticate); the
    /// cached token is not invalidated ("MUST NOT invalidate tokens from the Client
    /// Cache if speculative authentication does not succeed").
    pub fn speculative_done(
        &self,
        connection: &mut OidcConnectionCache,
        reply: Option<&Document>,
    ) -> bool {
        let done = connection.access_token.is_some()
            && reply
                .and_then(|reply| Reply::parse(MECHANISM, SOURCE, reply).ok())
                .is_some_and(|reply| reply.done);
        if !done {
            connection.access_token = None;
        }
        done
    }

    /// Authenticates a connection ("Credential Caching", "Authentication"), sending
    /// its commands through `sender`.
    ///
    /// Machine workflow: a one-step conversation with the cached token, or with a new
    /// one from the callback; a cached token the server refuses (18) is invalidated and
    /// replaced once. Human workflow: the cached access token, then the refresh token,
    /// then a two-step conversation (principal step, callback with the server's
    /// `IdpInfo`, JWT step); the server's host must be in `ALLOWED_HOSTS` before any
    /// token is sent or the callback is called.
    ///
    /// Server errors come back as `sender` returned them; a callback's error as the
    /// callback returned it.
    pub async fn authenticate(
        &self,
        connection: &mut OidcConnectionCache,
        context: &OidcContext<'_>,
        sender: &mut dyn SaslSender,
    ) -> Result<()> {
        match self.workflow {
            Workflow::Machine => self.authenticate_machine(connection, context, sender).await,
            Workflow::Human => self.authenticate_human(connection, context, sender).await,
        }
    }

    /// Reauthenticates a connection after `ReauthenticationRequired` ("Reauthentication"):
    /// invalidates the connection's token in the client cache, then authenticates as
    /// [`authenticate`](Self::authenticate) does. The caller sends no hello and then
    /// retries the command that failed.
    pub async fn reauthenticate(
        &self,
        connection: &mut OidcConnectionCache,
        context: &OidcContext<'_>,
        sender: &mut dyn SaslSender,
    ) -> Result<()> {
        if let Some(token) = connection.access_token.take() {
            self.invalidate(&token);
        }
        self.authenticate(connection, context, sender).await
    }

    async fn authenticate_machine(
        &self,
        connection: &mut OidcConnectionCache,
        context: &OidcContext<'_>,
        sender: &mut dyn SaslSender,
    ) -> Result<()> {
        let fetched = self.fetch_token(context, None).await?;
        connection.access_token = Some(fetched.token.clone());
        match one_step(&fetched.token, sender, context.clock).await? {
            Outcome::Authenticated => return Ok(()),
            Outcome::Refused(error) if !fetched.cached => return Err(error),
            // A cached token the server refuses: invalidate it and fetch another.
            Outcome::Refused(_) => self.invalidate(&fetched.token),
        }
        let fetched = self.fetch_token(context, None).await?;
        connection.access_token = Some(fetched.token.clone());
        match one_step(&fetched.token, sender, context.clock).await? {
            Outcome::Authenticated => Ok(()),
            Outcome::Refused(error) => Err(error),
        }
    }

    async fn authenticate_human(
        &self,
        connection: &mut OidcConnectionCache,
        context: &OidcContext<'_>,
        sender: &mut dyn SaslSender,
    ) -> Result<()> {
        // ALLOWED_HOSTS: "raise a client-side error without invoking any user-provided
        // callbacks".
        if !self.host_allowed(context.server_host) {
            return Err(Error::invalid_argument(format!(
                "MONGODB-OIDC: the host '{}' is not in ALLOWED_HOSTS, so the human callback's \
                 tokens may not be sent to it",
                context.server_host
            )));
        }
        // 1. The cached access token. On 18: invalidate it and go on.
        let cached = self.cached_access_token();
        if let Some(token) = cached {
            connection.access_token = Some(token.clone());
            match one_step(&token, sender, context.clock).await? {
                Outcome::Authenticated => return Ok(()),
                Outcome::Refused(_) => {
                    self.invalidate(&token);
                    connection.access_token = None;
                }
            }
        }
        // 2. The refresh token, with the cached IdpInfo. On 18: forget both tokens and
        //    go on.
        let refresh = {
            let cache = self.cache();
            cache.idp_info.clone().zip(cache.refresh_token.clone())
        };
        if let Some((idp_info, refresh_token)) = refresh {
            let inputs = HumanInputs {
                idp_info,
                refresh_token: Some(refresh_token.clone()),
            };
            let fetched = self.fetch_token(context, Some(inputs)).await?;
            connection.access_token = Some(fetched.token.clone());
            match one_step(&fetched.token, sender, context.clock).await? {
                Outcome::Authenticated => return Ok(()),
                Outcome::Refused(_) => {
                    self.forget_refresh_token(&refresh_token);
                    self.invalidate(&fetched.token);
                    connection.access_token = None;
                }
            }
        }
        // 3. A two-step conversation; any error goes to the caller.
        self.two_step(connection, context, sender).await
    }

    /// The two-step conversation ("Conversation", "Two-Step").
    async fn two_step(
        &self,
        connection: &mut OidcConnectionCache,
        context: &OidcContext<'_>,
        sender: &mut dyn SaslSender,
    ) -> Result<()> {
        let principal = principal_payload(self.username.as_deref())?;
        let reply = sender
            .send(start_command(MECHANISM, principal, false))
            .await?;
        let reply = Reply::parse(MECHANISM, SOURCE, &reply)?;
        if reply.done {
            return Err(failure(
                "the server ended the conversation before the client sent a token",
            ));
        }
        let inputs = HumanInputs {
            idp_info: idp_info_from_payload(reply.payload)?,
            // "Drivers MUST NOT pass a cached refresh token to the callback when
            // performing a new Two-Step conversation."
            refresh_token: None,
        };
        let conversation_id = reply.conversation_id.clone();
        let fetched = self.fetch_token(context, Some(inputs)).await?;
        connection.access_token = Some(fetched.token.clone());
        let reply = sender
            .send(continue_command(
                &conversation_id,
                jwt_payload(&fetched.token)?,
            ))
            .await?;
        if Reply::parse(MECHANISM, SOURCE, &reply)?.done {
            Ok(())
        } else {
            Err(failure("the server asked for more after the access token"))
        }
    }

    /// The spec's `get_access_token`: under the callback turn, the cached access token
    /// if there is one, else a new one from the callback, cached.
    async fn fetch_token(
        &self,
        context: &OidcContext<'_>,
        human: Option<HumanInputs>,
    ) -> Result<Fetched> {
        let mut last_call = self.callback_turn.lock().await;
        let cached = self.cached_access_token();
        if let Some(token) = cached {
            return Ok(Fetched {
                token,
                cached: true,
            });
        }
        if let Some(last) = *last_call {
            let since = context.clock.now() - last;
            if since < MIN_CALLBACK_INTERVAL {
                context.clock.sleep(MIN_CALLBACK_INTERVAL - since).await;
            }
        }
        *last_call = Some(context.clock.now());
        let timeout = match human {
            Some(_) => HUMAN_CALLBACK_TIMEOUT,
            None => context.timeout,
        };
        let (idp_info, refresh_token) = match human {
            Some(inputs) => (Some(inputs.idp_info), inputs.refresh_token),
            None => (None, None),
        };
        let params = CallbackContext {
            timeout: Some(timeout),
            version: CALLBACK_API_VERSION,
            username: self.username.clone(),
            idp_info: idp_info.clone(),
            refresh_token: refresh_token.map(|token| token.0),
        };
        let response = rt::timeout(context.clock, timeout, self.source.call(params))
            .await
            .map_err(|rt::Elapsed| {
                failure(format!(
                    "the OIDC callback did not return within {timeout:?}"
                ))
            })??;
        let token = Secret(response.access_token);
        let mut cache = self.cache();
        cache.access_token = Some(token.clone());
        if let Some(idp_info) = idp_info {
            // Human workflow: "Cache the new IdpInfo and refresh token".
            cache.idp_info = Some(idp_info);
            cache.refresh_token = response.refresh_token.map(Secret);
        }
        Ok(Fetched {
            token,
            cached: false,
        })
    }

    fn cache(&self) -> MutexGuard<'_, ClientCache> {
        // The cache holds plain values that every critical section leaves consistent,
        // so a panic elsewhere cannot have broken it.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cached_access_token(&self) -> Option<Secret> {
        self.cache().access_token.clone()
    }

    /// Clears the cached access token if it is still `token` ("Invalidation MUST only
    /// clear the cached access token if it is the same as the invalid access token and
    /// MUST be an atomic operation").
    fn invalidate(&self, token: &Secret) {
        let mut cache = self.cache();
        if cache.access_token.as_ref() == Some(token) {
            cache.access_token = None;
        }
    }

    /// Clears the cached refresh token if it is still `token`.
    fn forget_refresh_token(&self, token: &Secret) {
        let mut cache = self.cache();
        if cache.refresh_token.as_ref() == Some(token) {
            cache.refresh_token = None;
        }
    }

    /// `ALLOWED_HOSTS` (human workflow only): `host` matches an entry exactly or, for
    /// `*.domain`, is a subdomain of `domain`; case-insensitively.
    fn host_allowed(&self, host: &str) -> bool {
        if self.workflow == Workflow::Machine {
            return true;
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.allowed_hosts
            .iter()
            .any(|pattern| match pattern.strip_prefix("*.") {
                Some(domain) => host
                    .len()
                    .checked_sub(domain.len() + 1)
                    .and_then(|dot| host.get(dot..))
                    .is_some_and(|tail| {
                        tail.starts_with('.') && tail[1..].eq_ignore_ascii_case(domain)
                    }),
                None => pattern.eq_ignore_ascii_case(host),
            })
    }
}

/// Whether a command that failed with `error` must be retried after
/// [`OidcAuthenticator::reauthenticate`] (Authentication spec, "Reauthentication"): the
/// server said `ReauthenticationRequired` (391) and the connection authenticated with
/// a mechanism that supports it, which today is MONGODB-OIDC only.
pub fn should_reauthenticate(mechanism: Option<AuthMechanism>, error: &Error) -> bool {
    mechanism == Some(MECHANISM) && error.code() == Some(REAUTHENTICATION_REQUIRED)
}

/// The one-step conversation with `token` over `sender`.
async fn one_step(
    token: &Secret,
    sender: &mut dyn SaslSender,
    clock: &dyn Clock,
) -> Result<Outcome> {
    let mut conversation = OidcConversation::new(token.clone());
    let mut step = conversation.start()?;
    while let Some(command) = super::next_command(&mut conversation, step, clock, None).await? {
        let reply = match sender.send(command).await {
            Ok(reply) => reply,
            Err(error) if error.code() == Some(AUTHENTICATION_FAILED) => {
                return Ok(Outcome::Refused(error))
            }
            Err(error) => return Err(error),
        };
        step = conversation.reply(&reply)?;
    }
    Ok(Outcome::Authenticated)
}

/// The I/O-free one-step conversation ("Conversation", "One-Step"): a `saslStart`
/// whose payload is the `JwtStepRequest` `{jwt: <access token>}`, answered with
/// `done: true`.
#[derive(Debug)]
struct OidcConversation {
    token: Secret,
    sent: bool,
}

impl OidcConversation {
    fn new(token: Secret) -> Self {
        OidcConversation { token, sent: false }
    }

    fn command(&mut self) -> Result<Document> {
        self.sent = true;
        Ok(start_command(MECHANISM, jwt_payload(&self.token)?, false))
    }
}

impl Conversation for OidcConversation {
    fn speculative(&mut self) -> Option<Document> {
        // "speculativeAuthenticate has the same structure as seen in the MONGODB-OIDC
        // conversation section": the saslStart with `db`.
        let mut command = self.command().ok()?;
        command.insert("db", SOURCE);
        Some(command)
    }

    fn start(&mut self) -> Result<Step> {
        self.command().map(Step::Send)
    }

    fn reply(&mut self, reply: &Document) -> Result<Step> {
        let reply = Reply::parse(MECHANISM, SOURCE, reply)?;
        match (self.sent, reply.done) {
            (true, true) => {
                self.sent = false;
                Ok(Step::Done)
            }
            (true, false) => Err(failure("the server asked for more after the access token")),
            (false, _) => Err(failure("a reply arrived out of order")),
        }
    }
}

/// The `JwtStepRequest` payload `{jwt: <access token>}`.
fn jwt_payload(token: &Secret) -> Result<Vec<u8>> {
    encode(&doc! { "jwt": token.0.as_str() })
}

/// The `PrincipalStepRequest` payload `{n: <user name>}`, `{}` without a user name.
fn principal_payload(username: Option<&str>) -> Result<Vec<u8>> {
    let mut payload = Document::new();
    if let Some(username) = username {
        payload.insert("n", username);
    }
    encode(&payload)
}

fn encode(document: &Document) -> Result<Vec<u8>> {
    document
        .to_vec()
        .map_err(|error| failure(format!("could not encode a payload as BSON: {error}")))
}

/// The string value of mechanism property `name` (matched case-insensitively).
fn property<'a>(credential: &'a Credential, name: &str) -> Result<Option<&'a str>> {
    let Some(properties) = &credential.mechanism_properties else {
        return Ok(None);
    };
    match properties
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
    {
        None => Ok(None),
        Some((_, Bson::String(value))) => Ok(Some(value)),
        Some(_) => Err(Error::invalid_argument(format!(
            "the MONGODB-OIDC {name} property must be a string"
        ))),
    }
}

/// The `ALLOWED_HOSTS` mechanism property (matched case-insensitively): an array of
/// host names, `None` when absent.
fn allowed_hosts_property(credential: &Credential) -> Result<Option<Vec<String>>> {
    let Some(properties) = &credential.mechanism_properties else {
        return Ok(None);
    };
    let invalid = || {
        Error::invalid_argument(
            "the MONGODB-OIDC ALLOWED_HOSTS property must be an array of strings",
        )
    };
    match properties
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("ALLOWED_HOSTS"))
    {
        None => Ok(None),
        Some((_, Bson::Array(hosts))) => hosts
            .iter()
            .map(|host| host.as_str().map(str::to_owned).ok_or_else(invalid))
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(_) => Err(invalid()),
    }
}

/// The machine callback of a built-in environment ("Built-in OIDC Environment
/// Integrations"): `azure` and `gcp` ask their metadata service for a token for
/// `TOKEN_RESOURCE` (required there) over `cloud`; `test` and `k8s` read a token file
/// through the credential's [`OidcHost`], else the runtime's files (`cloud`'s).
fn environment_callback(
    environment: &str,
    credential: &Credential,
    cloud: Option<CloudAccess>,
) -> Result<Arc<dyn TokenSource>> {
    let token_file = match environment {
        "test" => TokenFile::Test,
        "k8s" => TokenFile::Kubernetes,
        "azure" | "gcp" => {
            let resource = property(credential, "TOKEN_RESOURCE")?.ok_or_else(|| {
                Error::invalid_argument(format!(
                    "the MONGODB-OIDC '{environment}' environment needs the TOKEN_RESOURCE property"
                ))
            })?;
            let cloud = cloud.ok_or_else(|| {
                Error::invalid_argument(format!(
                    "the MONGODB-OIDC '{environment}' environment asks its metadata service over \
                     HTTP, which this authenticator was given no runtime for \
                     (OidcAuthenticator::with_cloud)"
                ))
            })?;
            let source = MetadataTokenSource::new(
                environment,
                resource,
                credential.username.as_deref(),
                cloud,
            )
            .expect("azure and gcp are metadata environments");
            // Natively the HTTP client is `Send + Sync` and so is the callback; on wasm32
            // neither is (JavaScript handles), and the `Arc` is merely shared ownership.
            #[allow(clippy::arc_with_non_send_sync)]
            return Ok(Arc::new(source));
        }
        other => {
            return Err(Error::invalid_argument(format!(
                "unknown MONGODB-OIDC ENVIRONMENT '{other}' (expected test, azure, gcp or k8s)"
            )))
        }
    };
    // The credential's own host, else the client's runtime's (`cloud`).
    let host = credential
        .oidc_host
        .clone()
        .or(cloud.map(|cloud| cloud.files))
        .ok_or_else(|| {
            Error::invalid_argument(format!(
                "the MONGODB-OIDC '{environment}' environment reads a token file, which this \
                 authenticator was given no host for (Credential::oidc_host, or \
                 OidcAuthenticator::with_cloud)"
            ))
        })?;
    // Natively the host is `Send + Sync` and so is the callback; on wasm32 neither is
    // (JavaScript handles), and the `Arc` is merely shared ownership.
    #[allow(clippy::arc_with_non_send_sync)]
    Ok(Arc::new(FileTokenCallback { token_file, host }))
}

/// Where a built-in environment's token file is.
#[derive(Debug, Clone, Copy)]
enum TokenFile {
    /// `test`: the file named by `OIDC_TOKEN_FILE`.
    Test,
    /// `k8s`: `AZURE_FEDERATED_TOKEN_FILE`, else `AWS_WEB_IDENTITY_TOKEN_FILE`, else
    /// the service account token.
    Kubernetes,
}

/// A machine callback that reads the token from a file; it caches nothing ("The
/// callback itself MUST not perform any caching").
struct FileTokenCallback {
    token_file: TokenFile,
    host: Arc<dyn OidcHost>,
}

impl FileTokenCallback {
    fn read_token(&self) -> Result<IdpServerResponse> {
        let path = match self.token_file {
            TokenFile::Test => self.host.env_var("OIDC_TOKEN_FILE").ok_or_else(|| {
                Error::invalid_argument(
                    "the MONGODB-OIDC 'test' environment needs the OIDC_TOKEN_FILE environment variable",
                )
            })?,
            TokenFile::Kubernetes => self
                .host
                .env_var("AZURE_FEDERATED_TOKEN_FILE")
                .or_else(|| self.host.env_var("AWS_WEB_IDENTITY_TOKEN_FILE"))
                .unwrap_or_else(|| K8S_DEFAULT_TOKEN_FILE.into()),
        };
        let contents = self
            .host
            .read_file(&path)
            .map_err(|error| token_file_error("MONGODB-OIDC", &path, &error))?;
        Ok(IdpServerResponse::builder()
            .access_token(contents.trim().to_owned())
            .build())
    }
}

impl TokenSource for FileTokenCallback {
    fn call(&self, _context: CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> {
        let token = self.read_token();
        rt::boxed(async move { token })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use base64::Engine as _;
    use bson::{spec::BinarySubtype, Binary};
    use futures::executor::block_on;

    use super::*;
    use crate::error::CommandError;

    /// The spec's example payloads ("One-Step", "Two-Step").
    const JWT_ABCD1234: &str = "FwAAAAJqd3QACQAAAGFiY2QxMjM0AAA=";
    const PRINCIPAL_MYIDP: &str = "EgAAAAJuAAYAAABteWlkcAAA";
    const IDP_INFO: &str = "WQAAAAJpc3N1ZXIADwAAAGh0dHBzOi8vaXNzdWVyAAJjbGllbnRJZAAFAAAAYWJjZAAEcmVxdWVzdFNjb3BlcwAXAAAAAjAAAgAAAGEAAjEAAgAAAGIAAAA=";

    fn b64(text: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    }

    fn binary(bytes: Vec<u8>) -> Bson {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes,
        })
    }

    fn jwt_bytes(token: &str) -> Vec<u8> {
        doc! { "jwt": token }.to_vec().unwrap()
    }

    fn sasl_start(payload: Vec<u8>) -> Document {
        doc! { "saslStart": 1, "mechanism": "MONGODB-OIDC", "payload": binary(payload) }
    }

    fn done_reply() -> Document {
        doc! { "conversationId": 1, "done": true, "payload": binary(Vec::new()), "ok": 1 }
    }

    fn server_error(code: i32) -> Error {
        CommandError {
            code,
            code_name: String::new(),
            message: "refused".into(),
            error_labels: Vec::new(),
            topology_version: None,
        }
        .into()
    }

    /// A clock whose sleeps return at once (advancing it), except sleeps of a second or
    /// more (timeouts), which never end unless `fire_timeouts`.
    #[derive(Default)]
    struct TestClock {
        now: Mutex<Duration>,
        sleeps: Mutex<Vec<Duration>>,
        fire_timeouts: bool,
    }

    impl Clock for TestClock {
        fn now(&self) -> Instant {
            Instant::from_origin(*self.now.lock().unwrap())
        }
        fn unix_time(&self) -> Duration {
            *self.now.lock().unwrap()
        }
        fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
            self.sleeps.lock().unwrap().push(duration);
            if duration < Duration::from_secs(1) {
                *self.now.lock().unwrap() += duration;
                rt::boxed(async {})
            } else if self.fire_timeouts {
                rt::boxed(async {})
            } else {
                rt::boxed(futures::future::pending())
            }
        }
    }

    /// Answers each command from a script and records what was sent.
    struct ScriptedServer {
        replies: VecDeque<Result<Document>>,
        sent: Vec<Document>,
    }

    impl ScriptedServer {
        fn new(replies: Vec<Result<Document>>) -> Self {
            ScriptedServer {
                replies: replies.into(),
                sent: Vec::new(),
            }
        }
    }

    impl SaslSender for ScriptedServer {
        fn send<'a>(&'a mut self, command: Document) -> BoxFuture<'a, Result<Document>> {
            self.sent.push(command);
            let reply = self
                .replies
                .pop_front()
                .unwrap_or_else(|| Err(Error::invalid_argument("script exhausted")));
            rt::boxed(async move { reply })
        }
    }

    /// A callback returning `token1`, `token2`, ... (with refresh tokens `refreshN` when
    /// asked) and recording its parameters.
    #[derive(Clone, Default)]
    struct Recorder {
        calls: Arc<Mutex<Vec<CallbackContext>>>,
    }

    impl Recorder {
        /// A machine callback, or a human one (which returns refresh tokens too).
        fn callback(&self, human: bool) -> Callback {
            let calls = self.calls.clone();
            let function =
                move |context: CallbackContext| -> BoxFuture<'static, Result<IdpServerResponse>> {
                    let mut calls = calls.lock().unwrap();
                    calls.push(context);
                    let n = calls.len();
                    let response = IdpServerResponse::builder()
                        .access_token(format!("token{n}"))
                        .refresh_token(human.then(|| format!("refresh{n}")))
                        .build();
                    rt::boxed(async move { Ok(response) })
                };
            if human {
                Callback::human(function)
            } else {
                Callback::machine(function)
            }
        }

        fn calls(&self) -> Vec<CallbackContext> {
            self.calls.lock().unwrap().clone()
        }
    }

    fn credential(username: Option<&str>, properties: Option<Document>) -> Credential {
        Credential {
            username: username.map(Into::into),
            mechanism: Some(AuthMechanism::MongoDbOidc),
            source: Some("$external".into()),
            mechanism_properties: properties,
            ..Credential::default()
        }
    }

    fn with_callback(credential: Credential, callback: Callback) -> Credential {
        Credential {
            oidc_callback: callback,
            ..credential
        }
    }

    fn machine(recorder: &Recorder) -> OidcAuthenticator {
        let credential = with_callback(credential(Some("user"), None), recorder.callback(false));
        OidcAuthenticator::new(&credential).unwrap()
    }

    fn human(recorder: &Recorder, username: Option<&str>) -> OidcAuthenticator {
        let credential = with_callback(credential(username, None), recorder.callback(true));
        OidcAuthenticator::new(&credential).unwrap()
    }

    fn context(clock: &TestClock) -> OidcContext<'_> {
        OidcContext {
            server_host: "localhost",
            timeout: Duration::from_secs(7),
            clock,
        }
    }

    fn poison(authenticator: &OidcAuthenticator, token: &str) {
        authenticator.cache().access_token = Some(Secret(token.into()));
    }

    fn cached(authenticator: &OidcAuthenticator) -> Option<String> {
        authenticator.cached_access_token().map(|token| token.0)
    }

    #[test]
    fn one_step_payload_is_the_spec_example() {
        assert_eq!(
            jwt_payload(&Secret("abcd1234".into())).unwrap(),
            b64(JWT_ABCD1234)
        );
        let mut conversation = OidcConversation::new(Secret("abcd1234".into()));
        assert_eq!(
            conversation.start().unwrap(),
            Step::Send(sasl_start(b64(JWT_ABCD1234)))
        );
        assert_eq!(conversation.reply(&done_reply()).unwrap(), Step::Done);
        assert!(conversation.reply(&done_reply()).is_err());
        let mut conversation = OidcConversation::new(Secret("abcd1234".into()));
        conversation.start().unwrap();
        let not_done = doc! { "conversationId": 1, "done": false, "payload": binary(Vec::new()) };
        assert!(conversation.reply(&not_done).is_err());
    }

    #[test]
    fn machine_workflow_calls_the_callback_once_and_caches() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Ok(done_reply()), Ok(done_reply())]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        // A second connection uses the cached token.
        let mut second = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut second, &context(&clock), &mut server)).unwrap();
        assert_eq!(
            server.sent,
            [
                sasl_start(jwt_bytes("token1")),
                sasl_start(jwt_bytes("token1"))
            ]
        );
        let calls = recorder.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0],
            CallbackContext {
                timeout: Some(Duration::from_secs(7)),
                version: 1,
                username: Some("user".into()),
                idp_info: None,
                refresh_token: None,
            }
        );
        assert_eq!(connection.access_token, Some(Secret("token1".into())));
    }

    /// Prose test 3.1: a refused cached token is invalidated, a new one fetched.
    #[test]
    fn refused_cached_token_is_replaced() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        poison(&authenticator, "bad");
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Err(server_error(18)), Ok(done_reply())]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        assert_eq!(
            server.sent,
            [
                sasl_start(jwt_bytes("bad")),
                sasl_start(jwt_bytes("token1"))
            ]
        );
        assert_eq!(recorder.calls().len(), 1);
        assert_eq!(cached(&authenticator).as_deref(), Some("token1"));
    }

    /// Prose test 3.2: a fresh token the server refuses is an error, one callback call.
    #[test]
    fn refused_fresh_token_is_an_error() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Err(server_error(18))]);
        let error = block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ))
        .unwrap_err();
        assert_eq!(error.code(), Some(18));
        assert_eq!(recorder.calls().len(), 1);
        assert_eq!(server.sent.len(), 1);
    }

    /// Prose test 3.3: another error code does not clear the cache.
    #[test]
    fn other_errors_keep_the_cache() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Err(server_error(20)), Ok(done_reply())]);
        let first = block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ));
        assert_eq!(first.unwrap_err().code(), Some(20));
        block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ))
        .unwrap();
        assert_eq!(recorder.calls().len(), 1);
        assert_eq!(
            server.sent,
            [
                sasl_start(jwt_bytes("token1")),
                sasl_start(jwt_bytes("token1"))
            ]
        );
    }

    #[test]
    fn invalidation_only_clears_the_same_token() {
        let authenticator = machine(&Recorder::default());
        poison(&authenticator, "current");
        authenticator.invalidate(&Secret("stale".into()));
        assert_eq!(cached(&authenticator).as_deref(), Some("current"));
        authenticator.invalidate(&Secret("current".into()));
        assert_eq!(cached(&authenticator), None);
    }

    #[test]
    fn speculative_authentication_uses_only_a_cached_token() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        let mut connection = OidcConnectionCache::default();
        assert_eq!(
            authenticator.speculative(&mut connection, "localhost"),
            None
        );
        assert!(!authenticator.speculative_done(&mut connection, Some(&done_reply())));

        poison(&authenticator, "abcd1234");
        let command = authenticator
            .speculative(&mut connection, "localhost")
            .unwrap();
        let mut expected = sasl_start(b64(JWT_ABCD1234));
        expected.insert("db", "$external");
        assert_eq!(command, expected);
        assert!(authenticator.speculative_done(&mut connection, Some(&done_reply())));
        assert_eq!(connection.access_token, Some(Secret("abcd1234".into())));

        // No speculativeAuthenticate in the reply: the connection cache is cleared, the
        // client cache kept, and authentication retries the cached token.
        authenticator.speculative(&mut connection, "localhost");
        assert!(!authenticator.speculative_done(&mut connection, None));
        assert_eq!(connection.access_token, None);
        assert_eq!(cached(&authenticator).as_deref(), Some("abcd1234"));
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Ok(done_reply())]);
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        assert_eq!(server.sent, [sasl_start(b64(JWT_ABCD1234))]);
        assert!(recorder.calls().is_empty());
    }

    /// Prose test 4.1 (machine): reauthentication invalidates the connection's token
    /// and calls the callback again.
    #[test]
    fn reauthentication_fetches_a_new_token() {
        let recorder = Recorder::default();
        let authenticator = machine(&recorder);
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Ok(done_reply()), Ok(done_reply())]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        block_on(authenticator.reauthenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        assert_eq!(recorder.calls().len(), 2);
        assert_eq!(
            server.sent,
            [
                sasl_start(jwt_bytes("token1")),
                sasl_start(jwt_bytes("token2"))
            ]
        );
        assert_eq!(cached(&authenticator).as_deref(), Some("token2"));
        // The second call waited until 100 ms had passed since the first (the other
        // sleeps are the callbacks' 7 s timeouts).
        assert_eq!(
            *clock.sleeps.lock().unwrap(),
            [
                Duration::from_secs(7),
                Duration::from_millis(100),
                Duration::from_secs(7)
            ]
        );
    }

    #[test]
    fn reauthentication_decision() {
        let oidc = Some(AuthMechanism::MongoDbOidc);
        assert!(should_reauthenticate(oidc, &server_error(391)));
        assert!(!should_reauthenticate(oidc, &server_error(18)));
        assert!(!should_reauthenticate(
            Some(AuthMechanism::ScramSha256),
            &server_error(391)
        ));
        assert!(!should_reauthenticate(None, &server_error(391)));
        assert!(!should_reauthenticate(
            oidc,
            &Error::invalid_argument("391")
        ));
    }

    #[test]
    fn human_two_step_payloads_and_callback_inputs() {
        let recorder = Recorder::default();
        let authenticator = human(&recorder, Some("myidp"));
        let clock = TestClock::default();
        let idp_reply =
            doc! { "conversationId": 1, "done": false, "payload": binary(b64(IDP_INFO)), "ok": 1 };
        let mut server = ScriptedServer::new(vec![Ok(idp_reply), Ok(done_reply())]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        assert_eq!(
            server.sent,
            [
                sasl_start(b64(PRINCIPAL_MYIDP)),
                doc! { "saslContinue": 1, "conversationId": 1, "payload": binary(jwt_bytes("token1")) },
            ]
        );
        let idp_info = IdpServerInfo {
            issuer: "https://issuer".into(),
            client_id: Some("abcd".into()),
            request_scopes: Some(vec!["a".into(), "b".into()]),
        };
        assert_eq!(
            recorder.calls(),
            [CallbackContext {
                timeout: Some(HUMAN_CALLBACK_TIMEOUT),
                version: 1,
                username: Some("myidp".into()),
                idp_info: Some(idp_info.clone()),
                refresh_token: None,
            }]
        );
        let cache = authenticator.cache();
        assert_eq!(cache.idp_info, Some(idp_info));
        assert_eq!(cache.refresh_token, Some(Secret("refresh1".into())));
        assert_eq!(cache.access_token, Some(Secret("token1".into())));
    }

    #[test]
    fn human_principal_step_without_username_is_empty() {
        assert_eq!(principal_payload(None).unwrap(), [5, 0, 0, 0, 0]);
        assert_eq!(
            principal_payload(Some("myidp")).unwrap(),
            b64(PRINCIPAL_MYIDP)
        );
    }

    /// Prose tests 2.3 and 4.1 (human): reauthentication uses the refresh token.
    #[test]
    fn human_reauthentication_uses_the_refresh_token() {
        let recorder = Recorder::default();
        let authenticator = human(&recorder, None);
        let clock = TestClock::default();
        let idp_reply =
            doc! { "conversationId": 1, "done": false, "payload": binary(b64(IDP_INFO)), "ok": 1 };
        let mut server =
            ScriptedServer::new(vec![Ok(idp_reply), Ok(done_reply()), Ok(done_reply())]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        block_on(authenticator.reauthenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        let calls = recorder.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].refresh_token.as_deref(), Some("refresh1"));
        assert_eq!(calls[1].idp_info, calls[0].idp_info);
        assert_eq!(server.sent[2], sasl_start(jwt_bytes("token2")));
    }

    /// Prose test 4.4 (human): cached token refused, refreshed token refused, then a
    /// two-step conversation; three callback calls, the last without a refresh token.
    #[test]
    fn human_falls_back_from_cache_to_refresh_to_two_step() {
        let recorder = Recorder::default();
        let authenticator = human(&recorder, Some("myidp"));
        let clock = TestClock::default();
        let idp_reply = || {
            Ok(
                doc! { "conversationId": 1, "done": false, "payload": binary(b64(IDP_INFO)), "ok": 1 },
            )
        };
        let mut server = ScriptedServer::new(vec![
            idp_reply(),
            Ok(done_reply()),
            // Reauthentication: the refreshed token is refused, then two-step.
            Err(server_error(18)),
            idp_reply(),
            Err(server_error(18)),
        ]);
        let mut connection = OidcConnectionCache::default();
        block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
            .unwrap();
        let error =
            block_on(authenticator.reauthenticate(&mut connection, &context(&clock), &mut server))
                .unwrap_err();
        assert_eq!(error.code(), Some(18));
        let refresh: Vec<Option<String>> = recorder
            .calls()
            .into_iter()
            .map(|params| params.refresh_token)
            .collect();
        assert_eq!(refresh, [None, Some("refresh1".into()), None]);
        assert_eq!(
            server.sent[2..4],
            [
                sasl_start(jwt_bytes("token2")),
                sasl_start(b64(PRINCIPAL_MYIDP))
            ]
        );

        // With a cached token that is refused: straight on to the refresh token.
        let recorder = Recorder::default();
        let authenticator = human(&recorder, None);
        poison(&authenticator, "stale");
        {
            let mut cache = authenticator.cache();
            cache.refresh_token = Some(Secret("refresh0".into()));
            cache.idp_info = Some(idp_info_from_payload(&b64(IDP_INFO)).unwrap());
        }
        let mut server = ScriptedServer::new(vec![Err(server_error(18)), Ok(done_reply())]);
        block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ))
        .unwrap();
        assert_eq!(
            server.sent,
            [
                sasl_start(jwt_bytes("stale")),
                sasl_start(jwt_bytes("token1"))
            ]
        );
        assert_eq!(
            recorder.calls()[0].refresh_token.as_deref(),
            Some("refresh0")
        );
    }

    /// Human prose test 1.6: a host outside ALLOWED_HOSTS fails before any callback.
    #[test]
    fn allowed_hosts_guard_the_human_callback() {
        let recorder = Recorder::default();
        let properties = doc! { "ALLOWED_HOSTS": ["example.com"] };
        let credential = with_callback(credential(None, Some(properties)), recorder.callback(true));
        let authenticator = OidcAuthenticator::new(&credential).unwrap();
        poison(&authenticator, "token");
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(Vec::new());
        let mut connection = OidcConnectionCache::default();
        assert_eq!(
            authenticator.speculative(&mut connection, "localhost"),
            None
        );
        let error =
            block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
                .unwrap_err();
        assert!(error.to_string().contains("ALLOWED_HOSTS"), "{error}");
        assert!(recorder.calls().is_empty() && server.sent.is_empty());
        assert!(authenticator
            .speculative(&mut connection, "example.com")
            .is_some());

        let defaults = human(&Recorder::default(), None);
        for (host, allowed) in [
            ("cluster0.abcde.mongodb.net", true),
            ("a.b.c.MONGODB.NET", true),
            ("mongodb.net", false),
            ("evilmongodb.net", false),
            ("mongodb.net.evil.com", false),
            ("localhost", true),
            ("127.0.0.1", true),
            ("::1", true),
            ("[::1]", true),
            ("x.mongo.com", true),
            ("example.com", false),
            ("", false),
        ] {
            assert_eq!(defaults.host_allowed(host), allowed, "{host}");
        }
        // The machine workflow has no ALLOWED_HOSTS.
        assert!(machine(&Recorder::default()).host_allowed("example.com"));
    }

    #[test]
    fn idp_info_parsing() {
        let info = |document: Document| idp_info_from_payload(&document.to_vec().unwrap());
        // Prose test 1.8: a machine principal's IdpInfo has no clientId.
        assert_eq!(
            info(doc! { "issuer": "https://issuer" }).unwrap(),
            IdpServerInfo::builder().issuer("https://issuer").build()
        );
        assert!(info(doc! { "clientId": "abcd" }).is_err());
        assert!(info(doc! { "issuer": "i", "requestScopes": [1] }).is_err());
        assert!(info(doc! { "issuer": "i", "requestScopes": "a" }).is_err());
        assert!(info(doc! { "issuer": "i", "clientId": 5 }).is_err());
        assert!(idp_info_from_payload(b"junk").is_err());
    }

    #[test]
    fn configuration_rules() {
        let machine_callback = || Recorder::default().callback(false);
        let with = |properties: Option<Document>, callback: Callback| {
            OidcAuthenticator::new(&with_callback(credential(None, properties), callback))
        };
        let error = |result: Result<OidcAuthenticator>| result.unwrap_err().to_string();
        // Prose test 2.4: a callback and ENVIRONMENT.
        let test = Some(doc! { "ENVIRONMENT": "test" });
        assert!(error(with(test.clone(), machine_callback())).contains("not both"));
        assert!(error(with(None, Callback::default())).contains("callback"));
        // Prose test 2.5: ALLOWED_HOSTS without a human callback.
        let hosts = Some(doc! { "ALLOWED_HOSTS": [] });
        assert!(error(with(hosts, machine_callback())).contains("ALLOWED_HOSTS"));
        let human = Recorder::default().callback(true);
        let not_strings = Some(doc! { "ALLOWED_HOSTS": [1] });
        assert!(error(with(not_strings, human.clone())).contains("array of strings"));
        assert!(with(Some(doc! { "allowed_hosts": ["a.example"] }), human).is_ok());
        // Built-in environments without HTTP, or without their TOKEN_RESOURCE; or a
        // host that cannot read files.
        for environment in ["azure", "gcp"] {
            let properties = doc! { "ENVIRONMENT": environment, "TOKEN_RESOURCE": "r" };
            assert!(error(with(Some(properties), Callback::default())).contains("HTTP"));
            let properties = doc! { "ENVIRONMENT": environment };
            assert!(error(with(Some(properties), Callback::default())).contains("TOKEN_RESOURCE"));
        }
        assert!(error(with(test, Callback::default())).contains("token file"));
        let resource = doc! { "ENVIRONMENT": "k8s", "TOKEN_RESOURCE": "r" };
        let files = Credential {
            oidc_host: Some(Arc::new(FakeHost::default())),
            ..credential(None, Some(resource))
        };
        assert!(error(OidcAuthenticator::new(&files)).contains("TOKEN_RESOURCE"));
        let password = Credential {
            password: Some("pw".into()),
            ..with_callback(credential(None, None), machine_callback())
        };
        assert!(OidcAuthenticator::new(&password).is_err());
    }

    #[derive(Default)]
    struct FakeHost {
        env: HashMap<&'static str, &'static str>,
        files: HashMap<&'static str, &'static str>,
    }

    impl OidcHost for FakeHost {
        fn env_var(&self, name: &str) -> Option<String> {
            self.env.get(name).map(|value| value.to_string())
        }
        fn read_file(&self, path: &str) -> std::io::Result<String> {
            self.files
                .get(path)
                .map(|contents| contents.to_string())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }
    }

    fn environment_token(
        environment: &str,
        env: &[(&'static str, &'static str)],
        files: &[(&'static str, &'static str)],
    ) -> Result<String> {
        let host = FakeHost {
            env: env.iter().copied().collect(),
            files: files.iter().copied().collect(),
        };
        let credential = Credential {
            oidc_host: Some(Arc::new(host)),
            ..credential(None, Some(doc! { "environment": environment }))
        };
        let authenticator = OidcAuthenticator::new(&credential)?;
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Ok(done_reply())]);
        block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ))?;
        let payload = server.sent[0]
            .get_binary_generic("payload")
            .unwrap()
            .clone();
        Ok(Document::from_reader(&payload[..])
            .unwrap()
            .get_str("jwt")
            .unwrap()
            .to_string())
    }

    #[test]
    fn built_in_test_and_k8s_environments_read_token_files() {
        let files = [
            ("/tmp/test_user1", "test-jwt\n"),
            ("/azure", "azure-jwt"),
            ("/aws", "aws-jwt"),
            (K8S_DEFAULT_TOKEN_FILE, "k8s-jwt"),
        ];
        assert_eq!(
            environment_token("test", &[("OIDC_TOKEN_FILE", "/tmp/test_user1")], &files).unwrap(),
            "test-jwt"
        );
        let error = environment_token("test", &[], &files).unwrap_err();
        assert!(error.to_string().contains("OIDC_TOKEN_FILE"), "{error}");
        let error =
            environment_token("test", &[("OIDC_TOKEN_FILE", "/missing")], &files).unwrap_err();
        assert!(error.to_string().contains("/missing"), "{error}");
        let both = [
            ("AZURE_FEDERATED_TOKEN_FILE", "/azure"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/aws"),
        ];
        assert_eq!(
            environment_token("k8s", &both, &files).unwrap(),
            "azure-jwt"
        );
        assert_eq!(
            environment_token("k8s", &both[1..], &files).unwrap(),
            "aws-jwt"
        );
        assert_eq!(environment_token("k8s", &[], &files).unwrap(), "k8s-jwt");
    }

    #[test]
    fn a_callback_that_never_returns_times_out() {
        let callback = Callback::machine(
            |_: CallbackContext| -> BoxFuture<'static, Result<IdpServerResponse>> {
                rt::boxed(futures::future::pending())
            },
        );
        let credential = with_callback(credential(None, None), callback);
        let authenticator = OidcAuthenticator::new(&credential).unwrap();
        let clock = TestClock {
            fire_timeouts: true,
            ..TestClock::default()
        };
        let mut server = ScriptedServer::new(Vec::new());
        let error = block_on(authenticator.authenticate(
            &mut OidcConnectionCache::default(),
            &context(&clock),
            &mut server,
        ))
        .unwrap_err();
        assert!(error.to_string().contains("did not return"), "{error}");
        assert!(server.sent.is_empty());
        assert_eq!(*clock.sleeps.lock().unwrap(), [Duration::from_secs(7)]);
    }

    /// A future that is pending once, so that concurrent authentications interleave.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    /// Prose test 1.2: concurrent connections share one callback call.
    #[test]
    fn concurrent_connections_share_one_callback_call() {
        let calls = Arc::new(Mutex::new(0));
        let counter = calls.clone();
        let callback = Callback::machine(
            move |_: CallbackContext| -> BoxFuture<'static, Result<IdpServerResponse>> {
                *counter.lock().unwrap() += 1;
                rt::boxed(async {
                    YieldOnce(false).await;
                    Ok(IdpServerResponse::builder()
                        .access_token("shared".to_string())
                        .build())
                })
            },
        );
        let credential = with_callback(credential(None, None), callback);
        let authenticator = OidcAuthenticator::new(&credential).unwrap();
        let clock = TestClock::default();
        let context = context(&clock);
        let mut servers: Vec<ScriptedServer> = (0..4)
            .map(|_| ScriptedServer::new(vec![Ok(done_reply())]))
            .collect();
        let mut connections: Vec<OidcConnectionCache> =
            (0..4).map(|_| OidcConnectionCache::default()).collect();
        let results = block_on(futures::future::join_all(
            servers
                .iter_mut()
                .zip(connections.iter_mut())
                .map(|(server, connection)| {
                    authenticator.authenticate(connection, &context, server)
                }),
        ));
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(*calls.lock().unwrap(), 1);
        for server in servers {
            assert_eq!(server.sent, [sasl_start(jwt_bytes("shared"))]);
        }
    }

    #[cfg(not(target_family = "wasm"))]
    #[test]
    fn authentication_futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        let authenticator = machine(&Recorder::default());
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(Vec::new());
        let mut connection = OidcConnectionCache::default();
        let context = context(&clock);
        let future = authenticator.authenticate(&mut connection, &context, &mut server);
        assert_send(&future);
        assert_send(&authenticator);
    }

    #[test]
    fn tokens_never_in_debug_or_errors() {
        let response = IdpServerResponse::builder()
            .access_token("access-secret".to_string())
            .refresh_token("refresh-secret".to_string())
            .expires(Duration::from_secs(60))
            .build();
        let params = CallbackContext::builder()
            .timeout(Duration::from_secs(1))
            .version(1u32)
            .refresh_token("refresh-secret".to_string())
            .build();
        let credential = Credential {
            password: Some("password-secret".into()),
            ..with_callback(credential(None, None), Recorder::default().callback(true))
        };
        let recorder = Recorder::default();
        let authenticator = human(&recorder, None);
        poison(&authenticator, "access-secret");
        authenticator.cache().refresh_token = Some(Secret("refresh-secret".into()));
        let mut connection = OidcConnectionCache::default();
        authenticator.speculative(&mut connection, "localhost");
        let conversation = OidcConversation::new(Secret("access-secret".into()));
        let shown = format!(
            "{response:?} {params:?} {authenticator:?} {connection:?} {conversation:?} {credential:?}"
        );
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        // A refused token: the error is the server's, which never contains the token.
        let clock = TestClock::default();
        let mut server = ScriptedServer::new(vec![Err(server_error(20))]);
        let error =
            block_on(authenticator.authenticate(&mut connection, &context(&clock), &mut server))
                .unwrap_err();
        assert!(!format!("{error} {error:?}").contains("secret"));
    }
}
