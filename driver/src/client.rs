//! The public entry points: [`Client`] and [`Database`].
//!
//! A client owns a live topology (`sdam::live`): its servers are discovered and
//! monitored, every operation selects a server (`selection`) and borrows a
//! connection from that server's pool (`cmap`).

use std::sync::Arc;

use bson::{Document, RawDocumentBuf};

use crate::auth::oidc::{OidcAuthenticator, OidcOptions};
use crate::auth::AuthMechanism;
use crate::cmap::CmapEventHandler;
use crate::command_monitoring::{CommandEventHandler, CommandInfo, CommandMonitor, ConnectionId};
use crate::connection::ConnectionSettings;
use crate::error::{Error, Result};
use crate::handshake::HelloReply;
use crate::rt::Runtime;
use crate::sdam::live::{ConnectionInfo, EventHandlers, PooledConnection, Topology};
pub use crate::sdam::live::{MonitoringThreads, SdamEventHandler};
use crate::sdam::topology::ErrorPhase;
use crate::sdam::TopologyDescription;
use crate::selection::{read_preference_document, SelectionCriteria};
use crate::uri::{ClientOptions, ReadPreference};
use crate::wire::next_request_id;

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
    /// The MONGODB-OIDC token cache and callback, for a credential of that mechanism.
    oidc: Option<Arc<OidcAuthenticator>>,
    /// Dropped with the last clone of the client: monitors stop, pools close.
    topology: Topology,
    commands: CommandMonitor,
}

/// What a [`Client`] can be given besides its [`ClientOptions`]: things a connection
/// string cannot carry.
///
/// ```no_run
/// # fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use std::sync::Arc;
/// use anymongo::client::{ClientConfig, MonitoringThreads};
/// use anymongo::sdam::events::SdamEvent;
/// use anymongo::{Client, ClientOptions};
///
/// let config = ClientConfig {
///     sdam_event_handler: Some(Arc::new(|event: &SdamEvent| println!("{event:?}"))),
///     monitoring: MonitoringThreads::SingleThreaded,
///     ..ClientConfig::default()
/// };
/// let options = ClientOptions::parse("mongodb://db.example.com/?replicaSet=rs0")?;
/// let client = Client::with_config(options, config, runtime)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// MONGODB-OIDC: the token callback and allowed hosts.
    pub oidc: OidcOptions,
    /// Receives SDAM events, from the opening of the topology on.
    pub sdam_event_handler: Option<SdamEventHandler>,
    /// Receives the connection pools' events (CMAP), from their creation on.
    pub cmap_event_handler: Option<CmapEventHandler>,
    /// Receives the events of the commands operations send.
    pub command_event_handler: Option<CommandEventHandler>,
    /// Background monitors or single-threaded scans.
    pub monitoring: MonitoringThreads,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("sdam_event_handler", &self.sdam_event_handler.is_some())
            .field("cmap_event_handler", &self.cmap_event_handler.is_some())
            .field(
                "command_event_handler",
                &self.command_event_handler.is_some(),
            )
            .field("monitoring", &self.monitoring)
            .finish_non_exhaustive()
    }
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
        Client::with_config(options, ClientConfig::default(), runtime)
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
        let config = ClientConfig {
            oidc,
            ..ClientConfig::default()
        };
        Client::with_config(options, config, runtime)
    }

    /// A client with everything a connection string cannot say ([`ClientConfig`]):
    /// an SDAM event handler, the monitoring mode, MONGODB-OIDC callbacks. Starts
    /// monitoring at once (in background mode).
    pub fn with_config(
        options: ClientOptions,
        config: ClientConfig,
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
                Some(Arc::new(OidcAuthenticator::new(credential, config.oidc)?))
            }
            _ => None,
        };
        let settings = ConnectionSettings::new(&options, &runtime, oidc.clone());
        let handlers = EventHandlers {
            sdam: config.sdam_event_handler,
            cmap: config.cmap_event_handler,
        };
        let topology = Topology::open(
            &options,
            runtime.clone(),
            settings,
            config.monitoring,
            handlers,
        )?;
        Ok(Client {
            inner: Arc::new(ClientInner {
                options,
                runtime,
                oidc,
                topology,
                commands: CommandMonitor::new(config.command_event_handler),
            }),
        })
    }

    /// What the client currently knows about the deployment.
    pub fn topology_description(&self) -> TopologyDescription {
        self.inner.topology.shared().description()
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

    /// The handshake reply of a connection to a server selected for a primary read
    /// (connecting first if no connection is idle).
    pub async fn hello(&self) -> Result<HelloReply> {
        let topology = self.inner.topology.shared();
        let primary = ReadPreference::default();
        let selected = topology
            .select_server(&SelectionCriteria::Read(&primary), &[])
            .await?;
        let pooled = topology.check_out(&selected).await?;
        let hello = pooled.hello().clone();
        selected.server.check_in(pooled);
        Ok(hello)
    }

    async fn run_command(&self, database: &str, mut command: Document) -> Result<Document> {
        if command.is_empty() {
            return Err(Error::invalid_argument(
                "a command document cannot be empty",
            ));
        }
        // A command run as given reads from the primary unless told otherwise
        // (Run Command spec).
        let read_preference = ReadPreference::default();
        let topology = self.inner.topology.shared();
        let selected = topology
            .select_server(&SelectionCriteria::Read(&read_preference), &[])
            .await?;
        command.insert("$db", database);
        if let Some(preference) = read_preference_document(
            selected.topology_type,
            selected.description.server_type,
            &read_preference,
        ) {
            command.insert("$readPreference", preference);
        }
        let body = RawDocumentBuf::try_from(&command).map_err(|error| {
            Error::invalid_argument(format!("command cannot be encoded: {error}"))
        })?;
        let mut pooled = topology.check_out(&selected).await?;
        // If this future is dropped mid-command, `pooled` is dropped with it and
        // closed: a half-read reply never goes back to the pool.
        let clock = &*self.inner.runtime.clock;
        // MONGODB-OIDC may ask to authenticate again and retry once (the token
        // expired): only then is a copy of the command kept.
        let retry = self.inner.oidc.as_ref().map(|_| body.clone());
        let operation_id = next_request_id();
        let mut result = self
            .send(&mut pooled, &command, body, operation_id, operation_id)
            .await;
        if let (Err(error), Some(body)) = (&result, retry) {
            if pooled.needs_reauthentication(error) {
                let host = pooled.server_host().to_string();
                result = match pooled.reauthenticate(&host, clock).await {
                    Ok(()) => {
                        self.send(&mut pooled, &command, body, next_request_id(), operation_id)
                            .await
                    }
                    Err(error) => Err(error),
                };
            }
        }
        if let Err(error) = &result {
            topology.handle_application_error(
                &selected.server.address,
                error,
                ConnectionInfo::of(&pooled),
                ErrorPhase::AfterHandshakeCompletes,
            );
        }
        selected.server.check_in(pooled);
        result
    }

    /// Sends one command (`command`, encoded as `body`) on `connection`, announced
    /// and concluded by command monitoring events.
    async fn send(
        &self,
        connection: &mut PooledConnection,
        command: &Document,
        body: RawDocumentBuf,
        request_id: i32,
        operation_id: i32,
    ) -> Result<Document> {
        let clock = &*self.inner.runtime.clock;
        let in_flight = self.inner.commands.started(command, clock, || CommandInfo {
            command_name: command.keys().next().cloned().unwrap_or_default(),
            database_name: command.get_str("$db").unwrap_or_default().to_owned(),
            request_id,
            operation_id,
            connection: ConnectionId {
                address: connection.address().clone(),
                id: connection.id(),
                server_id: connection.hello().connection_id,
            },
            service_id: connection.service_id(),
        });
        let result = connection.command_with_id(request_id, body, clock).await;
        in_flight.finish(&result);
        result
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
