//! The public entry points: [`Client`] and [`Database`].
//!
//! A client owns a live topology (`cluster`): its servers are discovered and
//! monitored, every operation selects a server (`selection`) and borrows a
//! connection from that server's pool (`cmap`). All of that is the operations
//! layer's executor (`operation::Executor`); a client is a handle to one.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::cloud::CloudAccess;
use crate::auth::oidc::OidcAuthenticator;
use crate::auth::AuthMechanism;
pub use crate::cluster::MonitoringThreads;
use crate::cluster::{Cluster, EventHandlers};
use crate::command_monitoring::CommandMonitor;
use crate::connection::ConnectionSettings;
use crate::database::Database;
use crate::default_runtime::{default_runtime_with, with_default_runtime, NO_DEFAULT_RUNTIME};
use crate::error::{Error, Result};
use crate::event::EventHandler;
use crate::handshake::{DriverInfo, HelloReply};
use crate::logging;
use crate::operation::Executor;
use crate::rt::Runtime;
use crate::sdam::TopologyDescription;
use crate::session::ClientSession;
use crate::uri::ClientOptions;

/// A handle to a MongoDB deployment. Cheap to clone; clones share connections.
///
/// One constructor for each way of making one:
///
/// | constructor | what it takes |
/// | --- | --- |
/// | [`Client::with_uri_str`] (async) | a connection string, `mongodb+srv` included |
/// | [`Client::with_options`] | [`ClientOptions`], as [`ClientOptions::parse`] gives them or built in code |
/// | [`Client::with_runtime`] | options and a [`Runtime`] of your own (another transport, resolver, clock or spawner) |
/// | [`Client::with_config`] | options and a [`ClientConfig`]: what the official crate's options do not have (MONGODB-OIDC callbacks, the monitoring mode, a runtime) |
///
/// The first two use the target's built-in runtime (natively tokio + rustls,
/// wasi:sockets on wasm32-wasip2) and do not exist on wasm32-unknown-unknown, which
/// has none; the last two work on every target.
///
/// ```no_run
/// # async fn example() -> anymongo::Result<()> {
/// use anymongo::{bson::doc, Client};
/// let client = Client::with_uri_str("mongodb://localhost:27017").await?;
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
/// string cannot carry, and the official crate's options do not have. (Event handlers
/// are [`ClientOptions`] fields, as in the official crate.)
///
/// ```no_run
/// # fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use anymongo::client::{ClientConfig, MonitoringThreads};
/// use anymongo::{Client, ClientOptions};
///
/// let config = ClientConfig {
///     monitoring: MonitoringThreads::SingleThreaded,
///     runtime: Some(runtime),
///     ..ClientConfig::default()
/// };
/// let options = ClientOptions::parse_uri("mongodb://db.example.com/?replicaSet=rs0")?;
/// let client = Client::with_config(options, config)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// The host's seams: transport, resolver, clock, spawner. `None`: the target's
    /// built-in runtime (natively tokio + rustls, wasi:sockets on wasm32-wasip2); on a
    /// target without one (wasm32-unknown-unknown) the client cannot be made without.
    pub runtime: Option<Runtime>,
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
            .field("monitoring", &self.monitoring)
            .field("log_max_document_length", &self.log_max_document_length)
            .field("runtime", &self.runtime)
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

with_default_runtime! {
    impl Client {
        /// A client for the deployment named by a connection string, `mongodb+srv://`
        /// included, on the target's built-in runtime: [`ClientOptions::parse`] (which
        /// looks up the seed list of a `mongodb+srv` string), then
        /// [`Client::with_options`]. Connects lazily, on the first operation.
        ///
        /// Not on wasm32-unknown-unknown, which has no built-in runtime: there, parse
        /// with [`ClientOptions::parse`] and its `runtime` setter, and use
        /// [`Client::with_runtime`].
        ///
        /// ```no_run
        /// # async fn example() -> anymongo::Result<()> {
        /// use anymongo::{bson::doc, Client};
        /// let client = Client::with_uri_str("mongodb+srv://user:pass@cluster0.example.com/").await?;
        /// client.database("admin").run_command(doc! { "ping": 1 }).await?;
        /// # Ok(()) }
        /// ```
        pub async fn with_uri_str(uri: impl AsRef<str>) -> Result<Client> {
            let options = ClientOptions::parse(uri.as_ref()).await?;
            Client::with_options(options)
        }

        /// A client with `options` (as [`ClientOptions::parse`] gives them, or built
        /// in code; they are validated first, [`ClientOptions::validate`]) on the
        /// target's built-in runtime. Connects lazily, on the first operation; starts
        /// monitoring at once where the runtime can run background tasks.
        ///
        /// Not on wasm32-unknown-unknown, which has no built-in runtime: use
        /// [`Client::with_runtime`] there.
        ///
        /// ```no_run
        /// # async fn example() -> anymongo::Result<()> {
        /// use anymongo::{options::ClientOptions, Client};
        /// let mut options = ClientOptions::parse("mongodb://localhost:27017").await?;
        /// options.app_name = Some("inventory".into());
        /// let client = Client::with_options(options)?;
        /// # Ok(()) }
        /// ```
        pub fn with_options(options: ClientOptions) -> Result<Client> {
            Client::with_config(options, ClientConfig::default())
        }
    }
}

impl Client {
    /// A client with `options` on a [`Runtime`] of your own: another transport,
    /// resolver, clock or spawner (the npm package's JavaScript sockets, a test's
    /// DNS server…). Works on every target; shorthand for [`Client::with_config`]
    /// with [`ClientConfig::runtime`] set.
    ///
    /// ```no_run
    /// # fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
    /// use anymongo::{options::ClientOptions, Client};
    /// let options = ClientOptions::parse_uri("mongodb://localhost:27017")?;
    /// let client = Client::with_runtime(options, runtime)?;
    /// # Ok(()) }
    /// ```
    pub fn with_runtime(options: ClientOptions, runtime: Runtime) -> Result<Client> {
        let config = ClientConfig {
            runtime: Some(runtime),
            ..ClientConfig::default()
        };
        Client::with_config(options, config)
    }

    /// A client with what the official crate's options do not have ([`ClientConfig`]):
    /// the monitoring mode, a runtime of your own. Starts monitoring at once (in
    /// background mode).
    ///
    /// An [`EventHandler::async_callback`](crate::event::EventHandler::async_callback)
    /// handler needs a runtime with a spawner (an error otherwise).
    ///
    /// `mongodb+srv` options must have been resolved: by [`ClientOptions::parse`]
    /// (awaited), or [`crate::srv::resolve_seed_list`] then
    /// [`SeedList::into_options`](crate::srv::SeedList::into_options). The client then
    /// polls the SRV records while the deployment is sharded (Polling SRV Records for
    /// mongos Discovery spec), in background mode on a task of its own, in
    /// single-threaded mode before server selection.
    ///
    /// ```no_run
    /// # fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
    /// use anymongo::options::oidc::{Callback, CallbackContext, IdpServerResponse};
    /// use anymongo::options::{AuthMechanism, ClientOptions, Credential};
    /// use anymongo::{client::ClientConfig, rt, Client};
    ///
    /// // A connection string cannot name a callback: it is set on the credential in code.
    /// let mut options = ClientOptions::parse_uri("mongodb://db.example.com/")?;
    /// options.credential = Some(
    ///     Credential::builder()
    ///         .mechanism(AuthMechanism::MongoDbOidc)
    ///         .oidc_callback(Callback::machine(|_: CallbackContext| {
    ///             let token = "token from my identity provider".to_string();
    ///             rt::boxed(async { Ok(IdpServerResponse::builder().access_token(token).build()) })
    ///         }))
    ///         .build(),
    /// );
    /// let config = ClientConfig { runtime: Some(runtime), ..ClientConfig::default() };
    /// let client = Client::with_config(options, config)?;
    /// # Ok(()) }
    /// ```
    pub fn with_config(mut options: ClientOptions, config: ClientConfig) -> Result<Client> {
        let Some(mut runtime) = config
            .runtime
            .or_else(|| default_runtime_with(options.resolver_config.as_ref()))
        else {
            return Err(Error::invalid_argument(NO_DEFAULT_RUNTIME));
        };
        let seeds = options.srv_seed_list.take();
        // Before validate(): resolved mongodb+srv options (several hosts) fail it with a
        // less helpful message. Resolution awaits DNS, which a sync constructor cannot.
        if options.srv {
            let host = options.hosts.first().map(ToString::to_string);
            return Err(Error::invalid_argument(format!(
                "mongodb+srv://{}: the seed list comes from DNS look-ups, which must be awaited: \
                 use ClientOptions::parse(uri).await or Client::with_uri_str(uri).await \
                 (or srv::resolve_seed_list(..).await, then SeedList::into_options)",
                host.as_deref().unwrap_or_default()
            )));
        }
        options.validate()?;
        let needs_spawner = options
            .sdam_event_handler
            .as_ref()
            .is_some_and(EventHandler::needs_spawner)
            || options
                .cmap_event_handler
                .as_ref()
                .is_some_and(EventHandler::needs_spawner)
            || options
                .command_event_handler
                .as_ref()
                .is_some_and(EventHandler::needs_spawner);
        if needs_spawner && runtime.spawner.is_none() {
            return Err(Error::invalid_argument(
                "an EventHandler::async_callback needs a runtime that can spawn tasks, and \
                 this one cannot: use EventHandler::callback",
            ));
        }
        let oidc = match &options.credential {
            Some(credential) if credential.mechanism == Some(AuthMechanism::MongoDbOidc) => {
                // The azure and gcp environments ask their metadata service over HTTP.
                let cloud = CloudAccess::new(&runtime, credential);
                Some(Arc::new(OidcAuthenticator::with_cloud(credential, cloud)?))
            }
            _ => None,
        };
        // The client's own transport, if the host gives one: its TLS sessions are
        // resumed by this client's connections only.
        if let Some(transport) = runtime.transport.for_client() {
            runtime.transport = transport;
        }
        let settings = ConnectionSettings::new(&options, &runtime, oidc.clone());
        if let (Some(seeds), Some(book)) = (&seeds, &settings.addresses) {
            // The SRV answer's glue, reckoned from now: parsing and this constructor
            // follow one another, and the clocks of their runtimes may differ.
            for (host, addresses) in seeds.glue() {
                book.learn(host, addresses);
            }
        }
        let handlers = EventHandlers {
            sdam: options.sdam_event_handler.clone(),
            cmap: options.cmap_event_handler.clone(),
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
        let commands = CommandMonitor::new(Some(logging::logged(
            options.command_event_handler.clone(),
            runtime.spawner.clone(),
            log,
        )));
        let client = Client {
            timeout: options.timeout,
            executor: Arc::new(Executor::new(options, runtime, topology, commands)),
        };
        if let Some(seeds) = seeds {
            client.executor.poll_srv(*seeds);
        }
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

    /// Where the client's reads go unless a database, collection or operation says
    /// otherwise ([`ClientOptions::selection_criteria`]); `None`: the primary.
    pub fn selection_criteria(&self) -> Option<&crate::selection::SelectionCriteria> {
        self.options().selection_criteria.as_ref()
    }

    /// The read concern of the client's reads unless a database, collection or
    /// operation says otherwise ([`ClientOptions::read_concern`]); `None`: the
    /// server's default.
    pub fn read_concern(&self) -> Option<&crate::concern::ReadConcern> {
        self.options().read_concern.as_ref()
    }

    /// The write concern of the client's writes unless a database, collection or
    /// operation says otherwise ([`ClientOptions::write_concern`]); `None`: the
    /// server's default.
    pub fn write_concern(&self) -> Option<&crate::concern::WriteConcern> {
        self.options().write_concern.as_ref()
    }

    /// A handle to the database `name`; no I/O happens until a command runs.
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name)
    }

    /// A handle to the database `name` with its own read preference, read concern,
    /// write concern or `timeoutMS` ([`DatabaseOptions`](crate::options::DatabaseOptions));
    /// what `options` leaves unset is the client's.
    pub fn database_with_options(
        &self,
        name: &str,
        options: crate::database::Concerns,
    ) -> Database {
        self.database(name).with_concerns(options)
    }

    /// The database named in the connection string's path, if any.
    pub fn default_database(&self) -> Option<Database> {
        let name = self.options().default_database.as_deref()?;
        Some(self.database(name))
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
    /// let names = quick.list_database_names().await?;
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
