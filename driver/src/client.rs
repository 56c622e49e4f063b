//! The public entry points: [`Client`] and [`Database`].
//!
//! For now a client keeps a small list of idle connections to the first seed that
//! answers; server discovery and monitoring, server selection and the connection
//! pool of their own specs replace this as they land.

use std::sync::{Arc, Mutex, PoisonError};

use bson::{Document, RawDocumentBuf};

use crate::auth::oidc::{OidcAuthenticator, OidcOptions};
use crate::auth::{AuthContext, AuthMechanism, ScramCache};
use crate::connection::{AuthSettings, Connection, ConnectionSettings};
use crate::error::{Error, Result};
use crate::handshake::{client_metadata, HelloReply};
use crate::rt::{ConnectTarget, Runtime};
use crate::uri::ClientOptions;

/// A handle to a MongoDB deployment. Cheap to clone; clones share connections.
///
/// ```no_run
/// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use anymongo::{bson::doc, Client};
/// let client = Client::with_uri("mongodb://localhost:27017", runtime)?;
/// let reply = client.database("admin").run_command(doc! { "ping": 1 }).await?;
/// assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    options: ClientOptions,
    runtime: Runtime,
    metadata: Document,
    /// SCRAM keys derived for this client's credential, shared by its connections.
    scram_cache: ScramCache,
    /// The MONGODB-OIDC token cache and callback, for a credential of that mechanism.
    oidc: Option<Arc<OidcAuthenticator>>,
    idle: Mutex<Vec<Connection>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.inner.options)
            .field("runtime", &self.inner.runtime)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for the deployment named by a connection string. Connects lazily, on
    /// the first operation.
    pub fn with_uri(uri: &str, runtime: Runtime) -> Result<Client> {
        Client::with_options(ClientOptions::parse(uri)?, runtime)
    }

    /// A client with options built in code; they are validated first
    /// ([`ClientOptions::validate`]).
    pub fn with_options(options: ClientOptions, runtime: Runtime) -> Result<Client> {
        Client::with_oidc(options, OidcOptions::default(), runtime)
    }

    /// A client whose MONGODB-OIDC credential gets its tokens from `oidc` (a callback,
    /// allowed hosts): what a connection string cannot carry.
    ///
    /// ```no_run
    /// # fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
    /// use std::sync::Arc;
    /// use anymongo::auth::oidc::{IdpResponse, OidcCallbackKind, OidcCallbackParams, OidcOptions};
    /// use anymongo::auth::{AuthMechanism, Credential};
    /// use anymongo::{Client, ClientOptions};
    ///
    /// let callback = |_: OidcCallbackParams| -> anymongo::rt::BoxFuture<'static, anymongo::Result<IdpResponse>> {
    ///     anymongo::rt::boxed(async { Ok(IdpResponse::new("token from my identity provider")) })
    /// };
    /// let oidc = OidcOptions { callback: Some(OidcCallbackKind::Machine(Arc::new(callback))), ..Default::default() };
    /// // A connection string cannot name a callback: the credential is set in code.
    /// let mut options = ClientOptions::parse("mongodb://db.example.com/")?;
    /// options.credential = Some(Credential {
    ///     mechanism: Some(AuthMechanism::MongoDbOidc),
    ///     ..Credential::default()
    /// });
    /// let client = Client::with_oidc(options, oidc, runtime)?;
    /// # Ok(()) }
    /// ```
    pub fn with_oidc(
        options: ClientOptions,
        oidc: OidcOptions,
        runtime: Runtime,
    ) -> Result<Client> {
        options.validate()?;
        if options.srv {
            return Err(Error::invalid_argument(
                "mongodb+srv:// needs DNS seedlist discovery, which is not implemented yet",
            ));
        }
        let oidc = match &options.credential {
            Some(credential) if credential.mechanism == Some(AuthMechanism::MongoDbOidc) => {
                Some(Arc::new(OidcAuthenticator::new(credential, oidc)?))
            }
            _ => None,
        };
        let metadata = client_metadata(&runtime.host, options.app_name.as_deref());
        Ok(Client {
            inner: Arc::new(ClientInner {
                options,
                runtime,
                metadata,
                scram_cache: ScramCache::default(),
                oidc,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// A handle to the database `name`; no I/O happens until a command runs.
    pub fn database(&self, name: &str) -> Database {
        Database {
            client: self.clone(),
            name: name.to_string(),
        }
    }

    /// The database named in the connection string's path, if any.
    pub fn default_database(&self) -> Option<Database> {
        let name = self.inner.options.default_database.as_deref()?;
        Some(self.database(name))
    }

    /// The handshake reply of a connection to the server this client talks to,
    /// connecting first if there is no idle connection.
    pub async fn hello(&self) -> Result<HelloReply> {
        let connection = self.checkout().await?;
        let hello = connection.hello().clone();
        self.checkin(connection);
        Ok(hello)
    }

    async fn run_command(&self, database: &str, mut command: Document) -> Result<Document> {
        if command.is_empty() {
            return Err(Error::invalid_argument(
                "a command document cannot be empty",
            ));
        }
        command.insert("$db", database);
        let body = RawDocumentBuf::try_from(&command).map_err(|error| {
            Error::invalid_argument(format!("command cannot be encoded: {error}"))
        })?;
        let mut connection = self.checkout().await?;
        // If this future is dropped mid-command, `connection` is dropped with it and
        // closed: a half-read reply never goes back to the idle list.
        let clock = &*self.inner.runtime.clock;
        // MONGODB-OIDC may ask to authenticate again and retry once (the token
        // expired): only then is a copy of the command kept.
        let retry = self.inner.oidc.as_ref().map(|_| body.clone());
        let mut result = connection.command(body, clock).await;
        if let (Err(error), Some(body)) = (&result, retry) {
            if connection.needs_reauthentication(error) {
                let host = connection.server_host().to_string();
                result = match connection.reauthenticate(&host, clock).await {
                    Ok(()) => connection.command(body, clock).await,
                    Err(error) => Err(error),
                };
            }
        }
        if !connection.is_broken() {
            self.checkin(connection);
        }
        result
    }

    /// An idle connection, or a new one to the first seed that answers.
    async fn checkout(&self) -> Result<Connection> {
        let idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        if let Some(connection) = idle {
            return Ok(connection);
        }
        let options = &self.inner.options;
        let mut first_error = None;
        for address in &options.hosts {
            // A unix domain socket is a target whose host is the socket's path.
            let port = address.port().unwrap_or_default();
            let settings = ConnectionSettings {
                target: ConnectTarget {
                    host: address.host().to_owned(),
                    port,
                    tls: options.tls.clone(),
                },
                // connectTimeoutMS=0 means no limit (URI Options spec).
                connect_timeout: Some(options.connect_timeout).filter(|limit| !limit.is_zero()),
                socket_timeout: options.socket_timeout,
                metadata: self.inner.metadata.clone(),
                auth: options.credential.clone().map(|credential| AuthSettings {
                    credential,
                    context: AuthContext {
                        scram_cache: self.inner.scram_cache.clone(),
                        env: self.inner.runtime.host.env,
                        unix_time: self.inner.runtime.clock.unix_time(),
                    },
                    oidc: self.inner.oidc.clone(),
                }),
            };
            let runtime = &self.inner.runtime;
            match Connection::establish(&*runtime.transport, &*runtime.clock, &settings).await {
                Ok(connection) => return Ok(connection),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| Error::invalid_argument("no hosts to connect to")))
    }

    fn checkin(&self, connection: Connection) {
        self.inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(connection);
    }
}

/// A handle to one database of a [`Client`].
#[derive(Debug, Clone)]
pub struct Database {
    client: Client,
    name: String,
}

impl Database {
    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs a database command and returns the server's reply.
    ///
    /// The command's first key names it (`{ "ping": 1 }`, `{ "insert": "coll", ... }`);
    /// the driver adds `$db`. A reply with `ok: 0` becomes an error of kind
    /// [`crate::ErrorKind::Command`] carrying the server's code, code name, message
    /// and error labels.
    pub async fn run_command(&self, command: Document) -> Result<Document> {
        self.client.run_command(&self.name, command).await
    }
}
