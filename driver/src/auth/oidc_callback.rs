//! The application's side of MONGODB-OIDC: the token callback set on a
//! [`Credential`](super::Credential), what it is given and what it returns. Apart from
//! [`oidc`](super::oidc) so that the credential can hold a callback without depending
//! on the authenticator that uses it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use typed_builder::TypedBuilder;

use crate::error::{Error, Result};
use crate::rt::{BoxFuture, HostInfo, MaybeSend, MaybeSync};

/// What the identity provider told the server about itself, passed to a human
/// callback (the two-step conversation's `IdpInfo`).
#[derive(Debug, Clone, PartialEq, Eq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IdpServerInfo {
    /// The URL of the authorization server (the `iss` of its tokens).
    pub issuer: String,
    /// This client's ID at the identity provider; absent for machine principals.
    pub client_id: Option<String>,
    /// Extra scopes to request from the identity provider.
    pub request_scopes: Option<Vec<String>>,
}

/// What the driver passes to a [`Callback`] ("OIDC Callback", "OIDC Human Callback").
///
/// The official crate's `timeout` is a deadline (the standard library's `Instant`);
/// here it is the time the callback has left, because that `Instant` panics on
/// wasm32-unknown-unknown and this type is the same on every target. `username` is an
/// addition.
///
/// `Debug` never shows the refresh token.
#[derive(Clone, PartialEq, Eq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct CallbackContext {
    /// How long the callback may take; the driver gives up on it after this. For a
    /// machine callback, the time left of the connection's timeout (one minute without
    /// one); for a human callback, five minutes. Always set by the driver.
    pub timeout: Option<Duration>,
    /// The callback API version, 1.
    pub version: u32,
    /// Human callbacks: the refresh token the previous call returned, when the driver
    /// asks for a new access token with it.
    pub refresh_token: Option<String>,
    /// Human callbacks: the identity provider's information.
    pub idp_info: Option<IdpServerInfo>,
    /// The credential's user name, if it has one.
    pub username: Option<String>,
}

impl fmt::Debug for CallbackContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackContext")
            .field("timeout", &self.timeout)
            .field("version", &self.version)
            .field("refresh_token", &redacted(&self.refresh_token))
            .field("idp_info", &self.idp_info)
            .field("username", &self.username)
            .finish()
    }
}

/// What a [`Callback`] returns: an access token, and optionally its lifetime and a
/// refresh token (human workflow).
///
/// ```
/// use anymongo::options::oidc::IdpServerResponse;
/// let response = IdpServerResponse::builder()
///     .access_token("eyJ0eXAi...".to_string())
///     .refresh_token(Some("refresh".to_string()))
///     .build();
/// ```
///
/// The official crate's `expires` is the standard library's `Instant`; here it is how
/// long the token stays valid, for the reason given at [`CallbackContext`]. The driver
/// does not use it (the spec's caching rules ignore it).
///
/// `Debug` never shows the tokens.
#[derive(Clone, PartialEq, Eq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IdpServerResponse {
    /// The access token (a JWT), sent to the server as is.
    #[builder(!default)]
    pub access_token: String,
    /// How long the access token is valid.
    pub expires: Option<Duration>,
    /// A refresh token the human callback can use for a new access token without
    /// asking the user again.
    pub refresh_token: Option<String>,
}

impl fmt::Debug for IdpServerResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdpServerResponse")
            .field("access_token", &"<redacted>")
            .field("expires", &self.expires)
            .field("refresh_token", &redacted(&self.refresh_token))
            .finish()
    }
}

fn redacted(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| "<redacted>")
}

/// A source of access tokens: the application's function, or a built-in environment's.
/// A trait rather than a `dyn Fn` so that `MaybeSend + MaybeSync` can bound it.
pub(super) trait TokenSource: MaybeSend + MaybeSync {
    fn call(&self, context: CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>>;
}

impl<F> TokenSource for F
where
    F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> + MaybeSend + MaybeSync,
{
    fn call(&self, context: CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> {
        self(context)
    }
}

/// Which workflow a callback serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Workflow {
    /// The callback returns a token without human interaction.
    Machine,
    /// The callback receives the identity provider's [`IdpServerInfo`] (and a refresh
    /// token when there is one) and may involve the user.
    Human,
}

/// The application's source of OIDC access tokens ([`Credential::oidc_callback`](super::Credential::oidc_callback)):
/// [`Callback::machine`] ("OIDC Callback") or [`Callback::human`] ("OIDC Human
/// Callback"). The default is no callback, for the `ENVIRONMENT` mechanism property
/// or a credential of another mechanism.
///
/// The driver calls it at most once at a time per client and caches what it returns;
/// it should honour [`CallbackContext::timeout`] (the driver stops waiting then in any
/// case).
///
/// ```no_run
/// # async fn example() -> anymongo::Result<()> {
/// use anymongo::options::{oidc::{Callback, CallbackContext, IdpServerResponse}, ClientOptions};
/// use futures::FutureExt;
///
/// let mut options =
///     ClientOptions::parse("mongodb://db.example.com/?authMechanism=MONGODB-OIDC").await?;
/// options.credential.as_mut().unwrap().oidc_callback = Callback::machine(|_: CallbackContext| {
///     async move {
///         let token = "eyJ0eXAi...".to_string(); // from the identity provider
///         Ok(IdpServerResponse::builder().access_token(token).build())
///     }
///     .boxed()
/// });
/// let client = anymongo::Client::with_options(options)?;
/// # Ok(()) }
/// ```
///
/// The function returns an [`anymongo::rt::BoxFuture`](crate::rt::BoxFuture): natively
/// that is `futures`' `BoxFuture` (`.boxed()`); on wasm32 the future need not be
/// `Send` (`anymongo::rt::boxed`, or `.boxed_local()` on wasm32-unknown-unknown).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Callback {
    pub(super) inner: Option<(Workflow, Arc<dyn TokenSource>)>,
}

impl Callback {
    /// A machine callback ("OIDC Callback"): returns a token without human interaction.
    pub fn machine<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>>
            + MaybeSend
            + MaybeSync
            + 'static,
    {
        Callback::with(Workflow::Machine, Arc::new(function))
    }

    /// A human callback ("OIDC Human Callback"): receives the identity provider's
    /// [`IdpServerInfo`] and, when the driver has one, a refresh token; it may involve
    /// the user. The servers it may send tokens to are the `ALLOWED_HOSTS` mechanism
    /// property (an array of host names, `*.` + a domain matching its subdomains;
    /// the spec's defaults: the MongoDB Atlas domains and the local host when absent).
    pub fn human<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>>
            + MaybeSend
            + MaybeSync
            + 'static,
    {
        Callback::with(Workflow::Human, Arc::new(function))
    }

    // Natively the function is `Send + Sync`; on wasm32 it need not be (JavaScript
    // handles), and the `Arc` is merely shared ownership.
    #[allow(clippy::arc_with_non_send_sync)]
    fn with(workflow: Workflow, source: Arc<dyn TokenSource>) -> Callback {
        Callback {
            inner: Some((workflow, source)),
        }
    }
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match &self.inner {
            None => "Callback(none)",
            Some((Workflow::Machine, _)) => "Callback(machine)",
            Some((Workflow::Human, _)) => "Callback(human)",
        })
    }
}

/// What the built-in `test` and `k8s` environments need from the host: environment
/// variables and the contents of a token file ([`Credential::oidc_host`](super::Credential::oidc_host)).
/// The core reads neither itself. MONGODB-AWS reads its web identity token file
/// through it too.
pub trait OidcHost: MaybeSend + MaybeSync {
    /// The value of environment variable `name`, if set.
    fn env_var(&self, name: &str) -> Option<String>;
    /// The contents of the file at `path`.
    fn read_file(&self, path: &str) -> std::io::Result<String>;
}

/// The runtime's own environment and files ([`HostInfo::env`], [`HostInfo::read_file`])
/// as an [`OidcHost`]: what reads token files for a credential without an
/// [`oidc_host`](super::Credential::oidc_host) of its own, so that natively and under
/// WASI they are read as the official drivers read them.
pub(crate) struct RuntimeHost {
    env: fn(&str) -> Option<String>,
    read_file: fn(&str) -> std::io::Result<String>,
}

impl RuntimeHost {
    /// The environment and files of `host`.
    pub(crate) fn of(host: &HostInfo) -> Self {
        RuntimeHost {
            env: host.env,
            read_file: host.read_file,
        }
    }
}

impl OidcHost for RuntimeHost {
    fn env_var(&self, name: &str) -> Option<String> {
        (self.env)(name)
    }

    fn read_file(&self, path: &str) -> std::io::Result<String> {
        (self.read_file)(path)
    }
}

/// The error of `mechanism` failing to read the token file at `path`; on a host
/// without a file system (the npm package, Workers) it says what to give it instead.
pub(crate) fn token_file_error(mechanism: &str, path: &str, error: &std::io::Error) -> Error {
    let hint = match error.kind() {
        std::io::ErrorKind::Unsupported => {
            "; give the credential an OidcHost that reads it (Credential::oidc_host)"
        }
        _ => "",
    };
    Error::invalid_argument(format!(
        "{mechanism} could not read the token file '{path}': {error}{hint}"
    ))
}
