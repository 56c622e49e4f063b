//! One server of the cluster: its pool, its monitor's controls, and the connections
//! checked out of its pool — plain or pinned (Load Balancer spec, "Connection
//! Pinning").

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bson::oid::ObjectId;

use super::Shared;
use crate::cmap::{CheckedOut, ConnectionPool, Connector, Establish};
use crate::connection::{Connection, HelloObserver};
use crate::error::{Error, Result};
use crate::handshake::HelloReply;
use crate::load_balancer::{self, PoolHolder};
use crate::rt::{BoxFuture, Instant};
use crate::sdam::monitor::{MonitorConnection, MonitorSignal};
use crate::selection::RoundTripTime;
use crate::signal::lock;
use crate::uri::ServerAddress;

/// cooldownMS: a server whose check timed out is not checked again by single-threaded
/// scans for this long (server-monitoring.md, "cooldownMS").
const COOLDOWN: Duration = Duration::from_secs(5);

/// A connection checked out of a server's pool.
pub(crate) type PooledConnection = CheckedOut<ServerConnector>;

/// What a server's pool opens connections with: the driver's [`Connector`], and SDAM
/// error handling when establishing one fails (CMAP spec, "Establishing a
/// Connection": such errors are application errors before the handshake completes).
pub(crate) struct ServerConnector {
    connector: Connector,
    address: ServerAddress,
    /// Weak: the pools live in the topology.
    topology: Weak<Shared>,
    /// Whether the connection of [`connect_first`](Self::connect_first) got its hello
    /// reply (a failure after that is not the network's: the server answered).
    hello_reported: AtomicBool,
}

impl ServerConnector {
    /// Opens a cold client's first connection ([`Shared::first_contact`]), outside the
    /// pool, reporting the hello of its handshake to the topology.
    pub(super) async fn connect_first(&self) -> Result<Connection> {
        self.hello_reported.store(false, Ordering::SeqCst);
        self.connector.connect_observed(Some(self)).await
    }

    /// Whether the last [`connect_first`](Self::connect_first) got its hello reply.
    pub(super) fn hello_reported(&self) -> bool {
        self.hello_reported.load(Ordering::SeqCst)
    }
}

impl HelloObserver for ServerConnector {
    fn hello_received(&self, hello: &HelloReply) {
        self.hello_reported.store(true, Ordering::SeqCst);
        Shared::upgrade(&self.topology, |shared| {
            shared.handshake_hello(&self.address, hello)
        });
    }
}

impl Establish for ServerConnector {
    type Connection = Connection;

    fn establish(&self, connection_id: u32) -> BoxFuture<'_, Result<Connection>> {
        self.connector.establish(connection_id)
    }

    fn establish_failed(&self, error: &Error, generation: u32) {
        Shared::upgrade(&self.topology, |shared| {
            shared.establishment_failed(&self.address, error, generation)
        });
    }
}

/// One server of the topology: its pool, its monitor's controls and the numbers
/// selection uses.
pub(crate) struct Server {
    pub address: ServerAddress,
    pub pool: ConnectionPool<ServerConnector>,
    pub monitor: MonitorSignal,
    /// Operations in progress on this server ("power of two choices").
    pub(super) operation_count: AtomicU32,
    pub(super) rtt: Mutex<RoundTripTime>,
    /// Single-threaded mode: the monitoring connection kept between scans.
    pub(super) scan_connection: Mutex<MonitorConnection>,
    /// Single-threaded mode: when a scan's check of this server last timed out.
    pub(super) check_timed_out: Mutex<Option<Instant>>,
}

impl Server {
    /// A server of `topology`, with its pool (paused until the server is known).
    pub(super) fn new(address: ServerAddress, topology: &Arc<Shared>) -> Result<Server> {
        let connector = ServerConnector {
            connector: Connector::with_settings(
                topology.connection_settings.for_address(&address),
                topology.runtime.clone(),
            ),
            address: address.clone(),
            topology: Arc::downgrade(topology),
            hello_reported: AtomicBool::new(false),
        };
        // Single-threaded: no background work, connections are opened on demand.
        let spawner = match topology.single_threaded {
            true => None,
            false => topology.runtime.spawner.clone(),
        };
        let pool = ConnectionPool::new(
            address.clone(),
            topology.pool_options.clone(),
            connector,
            topology.runtime.clock.clone(),
            spawner,
            Some(topology.cmap_events.clone()),
        )?;
        Ok(Server {
            address,
            pool,
            monitor: MonitorSignal::default(),
            operation_count: AtomicU32::new(0),
            rtt: Mutex::new(RoundTripTime::new()),
            scan_connection: Mutex::default(),
            check_timed_out: Mutex::default(),
        })
    }

    /// Gives a connection back to the pool it came from.
    pub fn check_in(&self, connection: PooledConnection) {
        // Cannot fail: every connection of this server comes from this pool.
        let _ = self.pool.check_in(connection);
    }

    pub fn add_rtt_sample(&self, sample: Duration) {
        lock(&self.rtt).add_sample(sample);
    }

    /// A scan's check of this server failed at `now` with `error`.
    pub(super) fn check_failed_at(&self, now: Instant, error: &Error) {
        if error.is_network_timeout() {
            *lock(&self.check_timed_out) = Some(now);
        }
    }

    /// Whether a scan starting at `scan_start` skips this server: its check timed out
    /// less than cooldownMS before (server-monitoring.md, "cooldownMS"). The cooldown
    /// exists so that a scan does not "spend connectTimeoutMS on each unavailable
    /// server"; a server that refused the connection, or closed it, cost nothing and
    /// is checked again at the next scan (no sooner than minHeartbeatFrequencyMS after
    /// the last): that is how a single-threaded client finds a restarted server within
    /// a second, as a background monitor does, rather than five.
    pub(super) fn in_cooldown(&self, scan_start: Instant) -> bool {
        lock(&self.check_timed_out)
            .is_some_and(|timed_out| timed_out <= scan_start && scan_start - timed_out < COOLDOWN)
    }

    /// The average and the minimum round-trip time.
    pub(super) fn rtt(&self) -> (Option<Duration>, Option<Duration>) {
        let rtt = lock(&self.rtt);
        (rtt.average(), rtt.minimum())
    }
}

/// A connection of a server's pool pinned to a cursor or a transaction
/// (load-balanced mode).
pub(crate) type PinnedConnection = load_balancer::PinnedConnection<Server>;

impl PoolHolder for Server {
    type Establish = ServerConnector;

    fn pool(&self) -> &ConnectionPool<ServerConnector> {
        &self.pool
    }
}

/// The connection an application error happened on, as SDAM error handling needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionInfo {
    /// The pool generation the connection was opened in.
    pub generation: u32,
    pub max_wire_version: i32,
    /// Load-balanced mode: the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

impl ConnectionInfo {
    pub fn of(connection: &PooledConnection) -> ConnectionInfo {
        ConnectionInfo {
            generation: connection.generation(),
            max_wire_version: connection.hello().max_wire_version,
            service_id: connection.service_id(),
        }
    }
}
