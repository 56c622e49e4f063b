//! The driver's own [`Establish`]: real connections, opened through the runtime's
//! transport.

use bson::oid::ObjectId;

use super::{Establish, Poolable};
use crate::connection::{Connection, ConnectionSettings, HelloObserver};
use crate::error::Result;
use crate::rt::{self, BoxFuture, Runtime};
use crate::uri::{ClientOptions, ServerAddress};

/// Opens the driver's connections to one server: the transport's connection (TLS
/// included), the handshake and authentication, all within connectTimeoutMS.
///
/// A client's pools use one each; given to a [`ConnectionPool`](super::ConnectionPool)
/// it makes a pool of real connections outside a client.
///
/// ```no_run
/// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use anymongo::cmap::{ConnectionPool, Connector, PoolOptions};
/// use anymongo::{ClientOptions, ServerAddress};
///
/// let options = ClientOptions::parse_uri("mongodb://localhost:27017/?appName=pooled")?;
/// let address = options.hosts[0].clone();
/// let connector = Connector::new(&options, &address, runtime.clone());
/// let pool = ConnectionPool::new(
///     address,
///     PoolOptions::from_client_options(&options),
///     connector,
///     runtime.clock.clone(),
///     runtime.spawner.clone(),
///     None,
/// )?;
/// pool.ready();
/// let connection = pool.check_out(None).await?;
/// println!("connected to {:?}", connection.hello().max_wire_version);
/// pool.check_in(connection)?;
/// # Ok(()) }
/// ```
pub struct Connector {
    runtime: Runtime,
    settings: ConnectionSettings,
}

impl Connector {
    /// A connector to `address` with the connection settings of `options` (TLS,
    /// timeouts, appName, credential, loadBalanced). A MONGODB-OIDC credential needs
    /// its callback, which only a [`Client`](crate::Client) carries: such connections
    /// fail to authenticate.
    pub fn new(options: &ClientOptions, address: &ServerAddress, runtime: Runtime) -> Connector {
        let settings = ConnectionSettings::new(options, &runtime, None).for_address(address);
        Connector { runtime, settings }
    }

    /// A connector with settings already aimed at their server.
    pub(crate) fn with_settings(settings: ConnectionSettings, runtime: Runtime) -> Connector {
        Connector { runtime, settings }
    }

    /// Opens one connection.
    pub(crate) async fn connect(&self) -> Result<Connection> {
        self.connect_observed(None).await
    }

    /// Opens one connection, telling `observer` of its hello reply.
    pub(crate) async fn connect_observed(
        &self,
        observer: Option<&dyn HelloObserver>,
    ) -> Result<Connection> {
        let mut settings = self.settings.clone();
        if let Some(auth) = &mut settings.auth {
            // MONGODB-AWS signs with the wall-clock time of the connection.
            auth.context.unix_time = self.runtime.clock.unix_time();
        }
        let runtime = &self.runtime;
        Connection::establish_observed(&*runtime.transport, &*runtime.clock, &settings, observer)
            .await
    }
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("target", &self.settings.target)
            .finish_non_exhaustive()
    }
}

impl Establish for Connector {
    type Connection = Connection;

    fn establish(&self, _connection_id: u32) -> BoxFuture<'_, Result<Connection>> {
        rt::boxed(self.connect())
    }
}

/// The driver's connections, as a pool sees them.
impl Poolable for Connection {
    fn is_broken(&self) -> bool {
        Connection::is_broken(self)
    }

    fn is_open_and_idle(&self) -> bool {
        Connection::is_open_and_idle(self)
    }

    fn service_id(&self) -> Option<ObjectId> {
        self.hello().service_id
    }
}
