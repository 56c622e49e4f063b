//! The public entry points: [`Client`] and [`Database`].
//!
//! A client owns a live topology (`cluster`): its servers are discovered and
//! monitored, every operation selects a server (`selection`) and borrows a
//! connection from that server's pool (`cmap`). All of that is the operations
//! layer's executor (`operation::Executor`); a client is a handle to one.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::oidc::{OidcAuthenticator, OidcOptions};
use crate::auth::AuthMechanism;
use crate::cluster::{Cluster, EventHandlers};
pub use crate::cluster::{MonitoringThreads, SdamEventHandler};
use crate::cmap::CmapEventHandler;
use crate::command_monitoring::{CommandEventHandler, CommandMonitor};
use crate::connection::ConnectionSettings;
use crate::crud::bulk_write::{client_level, BulkWriteOptions, BulkWriteResult, ClientWriteModel};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::handshake::{DriverInfo, HelloReply};
use crate::logging;
use crate::operation::Executor;
use crate::rt::Runtime;
use crate::sdam::TopologyDescription;
use crate::session::ClientSession;
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
    /// Everything the client's operations share; dropped with the last clone of the
    /// client and the last cursor or session it started: monitors stop, pools close.
    executor: Arc<Executor>,
    /// The `timeoutMS` of this handle's operations: the connection string's, unless
    /// [`Client::with_timeout`] changed it.
    timeout: Option<Duration>,
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
    /// The longest document text (relaxed extended JSON, in bytes) in a log message;
    /// longer ones are cut and end in `...`. `None`: 1000
    /// ([`logging::DEFAULT_MAX_DOCUMENT_LENGTH`]). See [`crate::logging`].
    pub log_max_document_length: Option<usize>,
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
            .field("log_max_document_length", &self.log_max_document_length)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", self.executor.options())
            .field("runtime", self.executor.runtime())
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
        mut runtime: Runtime,
    ) -> Result<Client> {
        // Before validate(): resolved mongodb+srv options (several hosts) fail it with a
        // less helpful message. Resolution awaits DNS, which a sync constructor cannot.
        if options.srv {
            let host = options.hosts.first().map(ToString::to_string);
            return Err(Error::invalid_argument(format!(
                "mongodb+srv://{}: the seed list comes from DNS look-ups, which must be awaited: \
                 use Client::connect(uri, runtime).await or Client::connect_with(options, config, runtime).await \
                 (or srv::resolve_seed_list, then Client::with_seed_list)",
                host.as_deref().unwrap_or_default()
            )));
        }
        options.validate()?;
        let oidc = match &options.credential {
            Some(credential) if credential.mechanism == Some(AuthMechanism::MongoDbOidc) => {
                Some(Arc::new(OidcAuthenticator::new(credential, config.oidc)?))
            }
            _ => None,
        };
        // The client's own transport, if the host gives one: its TLS sessions are
        // resumed by this client's connections only.
        if let Some(transport) = runtime.transport.for_client() {
            runtime.transport = transport;
        }
        let settings = ConnectionSettings::new(&options, &runtime, oidc.clone());
        let handlers = EventHandlers {
            sdam: config.sdam_event_handler,
            cmap: config.cmap_event_handler,
            log_max_document_length: config
                .log_max_document_length
                .unwrap_or(logging::DEFAULT_MAX_DOCUMENT_LENGTH),
        };
        let topology = Cluster::open(
            &options,
            runtime.clone(),
            settings,
            config.monitoring,
            handlers,
        )?;
        let log = topology.shared().log_context();
        let commands =
            CommandMonitor::new(Some(logging::logged(config.command_event_handler, log)));
        Ok(Client {
            timeout: options.timeout,
            executor: Arc::new(Executor::new(options, runtime, topology, commands)),
        })
    }

    /// A client for the deployment named by a connection string, `mongodb+srv://`
    /// included. For `mongodb+srv` the SRV and TXT records are looked up first through
    /// the runtime's resolver (Initial DNS Seedlist Discovery spec; see
    /// [`crate::srv`]), each look-up bounded by `connectTimeoutMS`, or
    /// `serverSelectionTimeoutMS` when that is 0 ([`crate::srv::lookup_timeout`]); the
    /// client then polls the SRV records while the deployment is sharded (Polling SRV
    /// Records for mongos Discovery spec). A `mongodb://` string needs no look-up and
    /// gives the client of [`Client::with_uri`].
    ///
    /// Errors: those of [`Client::with_uri`], and of the resolution
    /// ([`crate::srv::resolve_uri`]): [`crate::ErrorKind::Timeout`] when the DNS server
    /// does not answer within the bound, [`crate::ErrorKind::Network`] when a look-up
    /// fails, [`crate::ErrorKind::InvalidArgument`] for records the spec refuses.
    ///
    /// ```no_run
    /// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
    /// use anymongo::{bson::doc, Client};
    /// let client = Client::connect("mongodb+srv://user:pass@cluster0.example.com/", runtime).await?;
    /// client.database("admin").run_command(doc! { "ping": 1 }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(uri: &str, runtime: Runtime) -> Result<Client> {
        let options = ClientOptions::parse(uri)?;
        if !options.srv {
            return Client::with_options(options, runtime);
        }
        let seeds = crate::srv::resolve_parsed_uri(
            uri,
            &options,
            &*runtime.resolver,
            &*runtime.clock,
            crate::srv::lookup_timeout(&options),
        )
        .await?;
        Client::with_seed_list(seeds, ClientConfig::default(), runtime)
    }

    /// [`Client::connect`] for options built in code, with a [`ClientConfig`]: resolves
    /// the seed list of `mongodb+srv` options ([`crate::srv::resolve_seed_list`]), then
    /// builds the client like [`Client::with_config`] (which it is for other options).
    ///
    /// ```no_run
    /// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
    /// use anymongo::client::ClientConfig;
    /// use anymongo::{Client, ClientOptions};
    /// let mut options = ClientOptions::parse("mongodb+srv://cluster0.example.com/")?;
    /// options.app_name = Some("inventory".into());
    /// let client = Client::connect_with(options, ClientConfig::default(), runtime).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(
        options: ClientOptions,
        config: ClientConfig,
        runtime: Runtime,
    ) -> Result<Client> {
        if !options.srv {
            return Client::with_config(options, config, runtime);
        }
        let seeds = crate::srv::resolve_seed_list(
            &options,
            &*runtime.resolver,
            &*runtime.clock,
            crate::srv::lookup_timeout(&options),
        )
        .await?;
        Client::with_seed_list(seeds, config, runtime)
    }

    /// A client for a `mongodb+srv` seed list resolved beforehand
    /// ([`crate::srv::resolve_seed_list`]), without awaiting: built like
    /// [`Client::with_config`] from the options of the equivalent `mongodb://`
    /// connection string (the spec's "as if the following URI was used instead", which
    /// [`Client::options`] then shows), and polling the SRV records — in background
    /// mode on a task of its own, in single-threaded mode before server selection —
    /// while the topology is Sharded or Unknown, never with `loadBalanced=true`.
    pub fn with_seed_list(
        seeds: crate::srv::SeedList,
        config: ClientConfig,
        runtime: Runtime,
    ) -> Result<Client> {
        let client = Client::with_config(seeds.equivalent_options(), config, runtime)?;
        client.executor.poll_srv(seeds);
        Ok(client)
    }

    /// What the client currently knows about the deployment.
    pub fn topology_description(&self) -> TopologyDescription {
        self.executor.topology_description()
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        self.executor.options()
    }

    /// A handle to the database `name`; no I/O happens until a command runs.
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name)
    }

    /// The database named in the connection string's path, if any.
    pub fn default_database(&self) -> Option<Database> {
        let name = self.options().default_database.as_deref()?;
        Some(self.database(name))
    }

    /// Shuts the client down (the official drivers' `close()`): the server sessions it
    /// pooled are ended with `endSessions` (Driver Sessions spec, "EndSessions": at
    /// most 10,000 ids per command, sent to a server selected with read preference
    /// primaryPreferred, errors ignored since the server expires sessions anyway),
    /// then the topology closes: monitors stop, connection pools close with their
    /// events, and every later operation of any handle of this client fails. It
    /// returns once the monitors have ended and closed their connections.
    /// Dropping the last handle closes the topology too, without `endSessions`.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) {
    /// client.shutdown().await;
    /// # }
    /// ```
    pub async fn shutdown(self) {
        // Errors ignored: the server expires the sessions anyway.
        let _ignored = self.executor.end_sessions().await;
        let topology = self.executor.topology();
        topology.close();
        topology.monitors_ended().await;
    }

    /// The handshake reply of a connection to a server selected for a primary read
    /// (connecting first if no connection is idle), within this handle's `timeoutMS`.
    ///
    /// It sends no command of its own: a new connection's handshake authenticates it,
    /// so this is how to check, without a round trip more, that a deployment answers
    /// and accepts the credential; the connection then serves the next operation.
    pub async fn hello(&self) -> Result<HelloReply> {
        self.executor.hello(self.timeout).await
    }

    /// This client with `timeoutMS` = `timeout` for its operations (and those of the
    /// databases and collections it hands out), whatever the connection string says:
    /// the same client (its connections, sessions and monitors), another default.
    /// `Duration::ZERO` means no limit.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// let quick = client.with_timeout(Duration::from_millis(200));
    /// let names = quick.list_database_names(None).await?;
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// The `timeoutMS` of this handle's operations, if one is set.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Appends a wrapping library's name, version and platform to the `client`
    /// metadata of the client's new connections (Handshake spec, "Metadata updates
    /// after MongoClient initialization"): connections already open are neither
    /// closed nor told. The same `info` appended twice is appended once.
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when a
    /// field contains the separator `|`.
    ///
    /// ```no_run
    /// # fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::handshake::DriverInfo;
    /// client.append_metadata(DriverInfo {
    ///     name: "my-odm".into(),
    ///     version: Some("2.0".into()),
    ///     platform: None,
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        self.executor.topology().client_metadata().append(&info)
    }

    /// The executor the client's operations run on.
    pub(crate) fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }
}

/// The client's side of a session (the API layer's: a session itself knows only the
/// executor its operations run on).
impl ClientSession {
    /// The client that started the session (a clone of its handle).
    pub fn client(&self) -> Client {
        Client {
            executor: self.executor().clone(),
            timeout: self.executor().options().timeout,
        }
    }
}

impl Client {
    /// Runs `models`, writes on any collections of the deployment, as few `bulkWrite`
    /// commands as the server's limits allow (Bulk Write spec; MongoDB 8.0+). Ordered
    /// (the default), it stops at the first failed write; unordered, it does all it
    /// can.
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) before
    /// anything is sent (no models, an update without operators, a replacement with
    /// some, a namespace that is not `database.collection`, `w: 0` with ordered writes
    /// or verbose results, a write too large for a message);
    /// [`ErrorKind::ClientBulkWrite`](crate::ErrorKind::ClientBulkWrite) when writes
    /// failed, write concerns were not satisfied, or an error stopped the bulk write
    /// after some writes were done, with what succeeded; any other error as it is when
    /// nothing is known to have been written. A batch without `updateMany` or
    /// `deleteMany` is retried once after a retryable error (Retryable Writes spec).
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::crud::bulk_write::{
    ///     BulkWriteOptions, ClientWriteModel, DeleteManyModel, InsertOneModel, UpdateOneModel,
    /// };
    /// let models = [
    ///     ClientWriteModel::new("shop.orders", InsertOneModel::new(doc! { "item": "tea", "qty": 2 })),
    ///     ClientWriteModel::new(
    ///         "shop.stock",
    ///         UpdateOneModel::new(doc! { "item": "tea" }, doc! { "$inc": { "qty": -2 } }),
    ///     ),
    ///     ClientWriteModel::new("shop.carts", DeleteManyModel::new(doc! { "user": "ann" })),
    /// ];
    /// let options = BulkWriteOptions { verbose_results: Some(true), ..Default::default() };
    /// let result = client.bulk_write(models, options).await?;
    /// assert_eq!(result.inserted_count, 1);
    /// println!("the order's _id: {}", result.inserted_ids[&0]);
    /// # Ok(()) }
    /// ```
    pub async fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<ClientWriteModel>>,
        options: impl Into<Option<BulkWriteOptions>>,
    ) -> Result<BulkWriteResult> {
        client_level::execute(
            self.executor(),
            models,
            options.into(),
            None,
            self.timeout.into(),
        )
        .await
    }

    /// [`bulk_write`](Self::bulk_write) in `session`.
    pub async fn bulk_write_with_session(
        &self,
        models: impl IntoIterator<Item = impl Into<ClientWriteModel>>,
        options: impl Into<Option<BulkWriteOptions>>,
        session: &ClientSession,
    ) -> Result<BulkWriteResult> {
        client_level::execute(
            self.executor(),
            models,
            options.into(),
            Some(session),
            self.timeout.into(),
        )
        .await
    }
}
