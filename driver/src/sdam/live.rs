//! The live topology: the pure [`TopologyDescription`] state machine driven by real
//! checks, the servers with their pools and monitors, event publication, and the
//! waiting part of server selection.
//!
//! Two monitoring modes share everything but who runs the checks
//! (server-monitoring.md, "Single-threaded monitoring"):
//!
//! - **background**: when the runtime can spawn tasks, every server gets a monitor
//!   task ([`super::monitor::run_monitor`]) that polls or streams, and selection waits
//!   for the description to change;
//! - **single-threaded**: without a spawner (a WASI request handler, a Worker) — or when
//!   asked for — nothing runs between operations; selection scans the servers inline
//!   when the description is stale (server-selection.md, "Single-threaded server
//!   selection").
//!
//! A client made from a `mongodb+srv` seed list also polls the SRV records (Polling SRV
//! Records for mongos Discovery spec) while the topology is Sharded or Unknown: a
//! background task in background mode ([`run_srv_poller`]); in single-threaded mode,
//! a rescan before server selection once the interval has passed. Either way a
//! rescan's hosts go through [`TopologyState::apply_srv_rescan`] and the same
//! [`Shared::act_on`] as servers discovered from a hello reply.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use bson::oid::ObjectId;

use crate::cmap::{
    CheckedOut, CmapEventHandler, ConnectionPool, Connector, Establish, PoolOptions,
};
use crate::connection::{Connection, ConnectionSettings};
use crate::error::{Error, ErrorKind, Result};
use crate::event::{EventHandler, EventSink};
use crate::logging::{self, LogContext, SelectionLog};
use crate::rt::{self, BoxFuture, Instant, Runtime};
use crate::sdam::events::SdamEvent;
use crate::sdam::monitor::{
    run_monitor, CheckReply, Checker, HeartbeatConnection, MonitorConnection, MonitorSignal,
    MIN_HEARTBEAT_FREQUENCY,
};
use crate::sdam::topology::{
    ApplicationError, ApplicationErrorKind, ErrorPhase, TopologyState, TopologyUpdate,
};
use crate::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
use crate::selection::{self, RoundTripTime, SelectionCriteria};
use crate::srv::{self, SeedList, SrvHosts};
use crate::sync::{lock, Notify};
use crate::uri::{ClientOptions, ServerAddress};

/// Receives SDAM events (topology and server opening, changes, closing, heartbeats).
pub type SdamEventHandler = EventHandler<SdamEvent>;

/// Who checks the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MonitoringThreads {
    /// Background monitors when the runtime has a spawner, single-threaded otherwise.
    #[default]
    Auto,
    /// Background monitors (an error at client creation if the runtime cannot spawn).
    Background,
    /// No background work: servers are scanned inline before selection when the
    /// description is older than heartbeatFrequencyMS (default 60 s in this mode) or
    /// marked stale by an error.
    SingleThreaded,
}

/// cooldownMS: a server whose check failed is not checked again by single-threaded
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
    operation_count: AtomicU32,
    rtt: Mutex<RoundTripTime>,
    /// Single-threaded mode: the monitoring connection kept between scans.
    scan_connection: Mutex<MonitorConnection>,
}

impl Server {
    /// A server of `topology`, with its pool (paused until the server is known).
    fn new(address: ServerAddress, topology: &Arc<Shared>) -> Result<Server> {
        let connector = ServerConnector {
            connector: Connector::with_settings(
                topology.connection_settings.for_address(&address),
                topology.runtime.clone(),
            ),
            address: address.clone(),
            topology: Arc::downgrade(topology),
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

    fn rtt(&self) -> (Option<Duration>, Option<Duration>) {
        let rtt = lock(&self.rtt);
        (rtt.average(), rtt.minimum())
    }
}

/// Where the event handlers of a topology go.
#[derive(Clone, Default)]
pub(crate) struct EventHandlers {
    pub sdam: Option<SdamEventHandler>,
    pub cmap: Option<CmapEventHandler>,
    /// The longest document text in a log message ([`crate::logging`]).
    pub log_max_document_length: usize,
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

/// A selected server; the operation counts against it until this is dropped.
pub(crate) struct SelectedServer {
    pub server: Arc<Server>,
    /// The server's type when it was selected.
    pub server_type: ServerType,
    /// The topology type when it was selected (for `$readPreference`).
    pub topology_type: TopologyType,
    /// When serverSelectionTimeoutMS, counted from the start of selection, runs out:
    /// the check-out of a connection must end by then too (CMAP spec, "Checking Out
    /// a Connection").
    deadline: Instant,
}

impl Drop for SelectedServer {
    fn drop(&mut self) {
        self.server.operation_count.fetch_sub(1, Ordering::SeqCst);
    }
}

struct State {
    description: TopologyState,
    servers: BTreeMap<ServerAddress, Arc<Server>>,
    closed: bool,
    /// Single-threaded mode: a scan is due before the next selection.
    stale: bool,
    /// Single-threaded mode: when the last scan ended.
    last_scan: Option<Instant>,
}

/// What the topology's background tasks and the client share.
pub(crate) struct Shared {
    options: ClientOptions,
    runtime: Runtime,
    /// Settings for application connections (with credentials), retargeted per server.
    connection_settings: ConnectionSettings,
    pool_options: PoolOptions,
    /// The pools' listener: the application's, behind the connection log.
    cmap_events: CmapEventHandler,
    /// What every log message of this client carries.
    log: LogContext,
    heartbeat_frequency: Duration,
    single_threaded: bool,
    /// Single-threaded, and not load-balanced (its one server is never checked,
    /// Load Balancer spec "Monitoring"): selection scans the servers when stale.
    scans: bool,
    streaming_allowed: bool,
    state: Mutex<State>,
    /// Notified whenever the description changes or the topology closes.
    changed: Notify,
    events: EventSink<SdamEvent>,
    /// Single-threaded mode: one scan at a time.
    scanning: futures::lock::Mutex<()>,
    /// SRV polling, for a client made from a `mongodb+srv` seed list.
    srv: OnceLock<Arc<SrvPolling>>,
}

/// SRV polling of one topology (Polling SRV Records for mongos Discovery spec).
struct SrvPolling {
    /// The SRV name, `srvServiceName`, `srvMaxHosts` and the interval's floor.
    seeds: SeedList,
    /// The bound of each look-up, as for the initial one ([`srv::lookup_timeout`]).
    lookup_timeout: Duration,
    schedule: Mutex<SrvSchedule>,
}

struct SrvSchedule {
    /// When the next rescan is due: rescanSRVIntervalMS after the end of the last one
    /// (or of the initial seedlist discovery), as the spec recommends.
    due: Instant,
    /// A rescan is under way (single-threaded mode: concurrent selections run one).
    running: bool,
}

/// What SRV polling does next.
enum SrvNext {
    /// Nothing, ever again: the topology is no longer Sharded or Unknown, or closed.
    Stop,
    /// Wait this long.
    Wait(Duration),
    /// Rescan now (the schedule marks it as running).
    Rescan,
}

impl SrvPolling {
    /// Looks up the SRV records. `None` when the look-up failed or found no verified
    /// host: the spec's "MUST NOT change the topology, MUST NOT raise an error".
    async fn lookup(&self, runtime: &Runtime) -> Option<SrvHosts> {
        srv::lookup_hosts(
            self.seeds.srv_options(),
            &*runtime.resolver,
            &*runtime.clock,
            self.lookup_timeout,
        )
        .await
        .ok()
        .filter(|found| !found.hosts.is_empty())
    }
}

/// The client's handle: closes the topology when dropped.
pub(crate) struct Topology {
    shared: Arc<Shared>,
}

impl Topology {
    /// Opens the topology of `options` and starts its monitors (background mode).
    pub fn open(
        options: &ClientOptions,
        runtime: Runtime,
        connection_settings: ConnectionSettings,
        threads: MonitoringThreads,
        handlers: EventHandlers,
    ) -> Result<Topology> {
        let single_threaded = match threads {
            MonitoringThreads::Auto => runtime.spawner.is_none(),
            MonitoringThreads::SingleThreaded => true,
            MonitoringThreads::Background if runtime.spawner.is_none() => {
                return Err(Error::invalid_argument(
                    "background monitoring needs a runtime that can spawn tasks",
                ))
            }
            MonitoringThreads::Background => false,
        };
        // heartbeatFrequencyMS defaults to 10 s, or 60 s when single-threaded
        // (server-monitoring.md, "heartbeatFrequencyMS").
        let heartbeat_frequency = options
            .heartbeat_frequency
            .unwrap_or(match single_threaded {
                true => Duration::from_secs(60),
                false => Duration::from_secs(10),
            });
        // serverMonitoringMode (server-monitoring.md, "Streaming protocol"): `auto`
        // streams except on a FaaS platform.
        let streaming_allowed = match options.server_monitoring_mode {
            crate::uri::ServerMonitoringMode::Stream => true,
            crate::uri::ServerMonitoringMode::Poll => false,
            crate::uri::ServerMonitoringMode::Auto => {
                crate::handshake::faas_name(&runtime.host).is_none()
            }
        };
        let id = ObjectId::new();
        let log = LogContext {
            topology_id: id,
            max_document_length: handlers.log_max_document_length,
        };
        let (mut description, opening_events) = TopologyState::open(options, id);
        description.set_heartbeat_frequency(heartbeat_frequency);
        let addresses: Vec<ServerAddress> = description.servers.keys().cloned().collect();
        let shared = Arc::new(Shared {
            options: options.clone(),
            runtime,
            connection_settings,
            pool_options: PoolOptions::from_client_options(options),
            cmap_events: logging::logged(handlers.cmap, log),
            log,
            heartbeat_frequency,
            single_threaded,
            scans: single_threaded && options.load_balanced != Some(true),
            streaming_allowed,
            state: Mutex::new(State {
                description,
                servers: BTreeMap::new(),
                closed: false,
                stale: true,
                last_scan: None,
            }),
            changed: Notify::default(),
            events: EventSink::new(Some(logging::logged(handlers.sdam, log))),
            scanning: futures::lock::Mutex::new(()),
            srv: OnceLock::new(),
        });
        shared.events.publish(opening_events);
        let load_balanced = options.load_balanced == Some(true);
        for address in addresses {
            let server = Arc::new(Server::new(address.clone(), &shared)?);
            if load_balanced {
                // The load balancer is known from the start and never checked
                // (Load Balancer spec, "Monitoring"): its pool is ready at once.
                server.pool.ready();
            }
            shared.state().servers.insert(address, server);
        }
        if !single_threaded && !load_balanced {
            let servers: Vec<_> = shared.state().servers.values().cloned().collect();
            for server in servers {
                shared.start_monitor(server);
            }
        }
        Ok(Topology { shared })
    }

    /// The shared state, for operations.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Starts polling the SRV records of `seeds`, the seed list this topology was
    /// opened with (Polling SRV Records for mongos Discovery spec, "Implementation"):
    /// unless the topology is already neither Sharded nor Unknown (`loadBalanced=true`,
    /// a `replicaSet`), which it then stays. The first rescan is due the records'
    /// interval after now, the end of the initial discovery. In background mode a
    /// task polls ([`run_srv_poller`]); in single-threaded mode selection rescans.
    pub fn poll_srv(&self, seeds: SeedList) {
        let shared = &self.shared;
        if !shared.state().description.polls_srv() {
            return;
        }
        let polling = Arc::new(SrvPolling {
            lookup_timeout: srv::lookup_timeout(seeds.srv_options()),
            schedule: Mutex::new(SrvSchedule {
                due: shared.runtime.clock.now() + seeds.rescan_interval(seeds.min_ttl()),
                running: false,
            }),
            seeds,
        });
        if shared.srv.set(polling.clone()).is_err() || shared.single_threaded {
            return;
        }
        if let Some(spawner) = &shared.runtime.spawner {
            spawner.spawn(rt::boxed(run_srv_poller(
                Arc::downgrade(shared),
                polling,
                shared.runtime.clone(),
            )));
        }
    }
}

/// The SRV poller of background mode ("Multi-Threaded Drivers": a separate task, so
/// that look-ups never hold up operations). Holds the topology weakly, like the
/// monitors: it ends when the topology closes or is dropped (which wakes its waits),
/// or when the topology is no longer Sharded or Unknown.
async fn run_srv_poller(topology: Weak<Shared>, polling: Arc<SrvPolling>, runtime: Runtime) {
    loop {
        let next = Shared::upgrade(&topology, |shared| {
            // Listen first: a change between the decision and the wait is not lost.
            let changed = shared.changed.listen();
            (shared.srv_next(&polling), changed)
        });
        match next {
            None | Some((SrvNext::Stop, _)) => return,
            // Woken early by any change of the description, to stop at once when the
            // topology type rules polling out.
            Some((SrvNext::Wait(wait), changed)) => {
                let _ = rt::timeout(&*runtime.clock, wait, changed).await;
            }
            Some((SrvNext::Rescan, _)) => {
                let found = polling.lookup(&runtime).await;
                if Shared::upgrade(&topology, |shared| shared.srv_rescanned(&polling, found))
                    .is_none()
                {
                    return;
                }
            }
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The state, locked to update the description: its TopologyDescriptionChanged
    /// events, two copies of the whole topology each, are built only while someone
    /// listens (an event handler, or the debug log, which may be turned on later).
    fn state_for_update(&self) -> MutexGuard<'_, State> {
        let mut state = self.state();
        state.description.set_describing(self.events.is_listened());
        state
    }

    /// Runs `f` on the topology if it still exists (monitors hold only a weak
    /// reference, so that dropping the client ends them).
    pub fn upgrade<R>(weak: &Weak<Shared>, f: impl FnOnce(&Arc<Shared>) -> R) -> Option<R> {
        let shared = weak.upgrade()?;
        if shared.state().closed {
            return None;
        }
        Some(f(&shared))
    }

    /// The current description.
    pub fn description(&self) -> TopologyDescription {
        self.with_description(TopologyDescription::clone)
    }

    /// Reads the current description in place: what every operation asks of it (the
    /// session timeout, for one) is a field or two, and copying all of it on each
    /// operation, under the lock every operation takes, made the operations of other
    /// threads queue for that lock.
    pub fn with_description<R>(&self, read: impl FnOnce(&TopologyDescription) -> R) -> R {
        read(self.state().description.description())
    }

    /// What SRV polling does next; claims the rescan when one is due.
    fn srv_next(&self, polling: &SrvPolling) -> SrvNext {
        if !self.state().description.polls_srv() {
            return SrvNext::Stop;
        }
        let mut schedule = lock(&polling.schedule);
        let wait = schedule
            .due
            .saturating_duration_since(self.runtime.clock.now());
        match wait.is_zero() && !schedule.running {
            true => {
                schedule.running = true;
                SrvNext::Rescan
            }
            // A rescan under way ends by its look-up's bound; check again then.
            false if schedule.running => SrvNext::Wait(polling.lookup_timeout),
            false => SrvNext::Wait(wait),
        }
    }

    /// Applies a rescan's outcome (`None`: nothing verified found) and schedules the
    /// next one: after the records' interval, or heartbeatFrequencyMS while no
    /// verified record was obtained (spec: "MUST temporarily set rescanSRVIntervalMS to
    /// heartbeatFrequencyMS"). Returns whether the servers changed.
    fn srv_rescanned(self: &Arc<Self>, polling: &SrvPolling, found: Option<SrvHosts>) -> bool {
        let interval = match &found {
            Some(found) => polling.seeds.rescan_interval(found.min_ttl),
            None => self.heartbeat_frequency,
        };
        {
            let mut schedule = lock(&polling.schedule);
            schedule.due = self.runtime.clock.now() + interval;
            schedule.running = false;
        }
        let Some(found) = found else {
            return false;
        };
        let mut state = self.state_for_update();
        let update = state.description.apply_srv_rescan(
            &found.hosts,
            polling.seeds.srv_options().srv_max_hosts,
            selection::random_index,
        );
        if update.is_empty() {
            return false;
        }
        self.act_on(state, update);
        true
    }

    /// Single-threaded mode: the SRV rescan before selection, if one is due ("The
    /// rescan MUST happen before scanning all servers ... but only if
    /// rescanSRVIntervalMS has passed"). New servers make a scan due.
    async fn rescan_srv_if_due(self: &Arc<Self>) {
        let Some(polling) = self.srv.get() else {
            return;
        };
        if !matches!(self.srv_next(polling), SrvNext::Rescan) {
            return;
        }
        let found = polling.lookup(&self.runtime).await;
        if self.srv_rescanned(polling, found) {
            self.state().stale = true;
        }
    }

    fn start_monitor(self: &Arc<Self>, server: Arc<Server>) {
        let Some(spawner) = &self.runtime.spawner else {
            return;
        };
        let checker = self.checker(&server.address);
        spawner.spawn(rt::boxed(run_monitor(
            checker,
            server,
            Arc::downgrade(self),
            self.streaming_allowed,
        )));
    }

    fn checker(&self, address: &ServerAddress) -> Checker {
        let mut settings = self.connection_settings.for_address(address);
        settings.auth = None;
        settings.load_balanced = false;
        settings.monitoring = true;
        // Monitoring reads are bounded by connectTimeoutMS (spec, "Monitor thread").
        settings.socket_timeout = settings.connect_timeout;
        Checker {
            runtime: self.runtime.clone(),
            settings,
            heartbeat_frequency: self.heartbeat_frequency,
        }
    }

    /// Whether the server is known (its type is not Unknown).
    pub fn is_known(&self, address: &ServerAddress) -> bool {
        self.state()
            .description
            .servers
            .get(address)
            .is_some_and(|server| server.server_type != ServerType::Unknown)
    }

    /// A check of `address` on the monitoring connection `connection` starts.
    pub fn heartbeat_started(
        &self,
        address: &ServerAddress,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        // Heartbeat events are built only when someone listens: every check of every
        // member publishes them.
        self.events
            .queue_with(|| SdamEvent::ServerHeartbeatStarted {
                address: address.clone(),
                driver_connection_id: connection.driver_id,
                server_connection_id: connection.server_id,
                awaited,
            });
        self.events.flush();
    }

    /// A check of `address` ended without a reply: it failed, or it was cancelled (an
    /// operation's network error marked the server Unknown). Either way the started
    /// heartbeat gets its failed event (SDAM monitoring spec: every
    /// ServerHeartbeatStartedEvent is followed by a succeeded or a failed one).
    pub fn heartbeat_failed(
        &self,
        address: &ServerAddress,
        failure: impl FnOnce() -> String,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        self.events.queue_with(|| SdamEvent::ServerHeartbeatFailed {
            address: address.clone(),
            driver_connection_id: connection.driver_id,
            server_connection_id: connection.server_id,
            duration,
            failure: failure(),
            awaited,
        });
        self.events.flush();
    }

    /// A check of `server` on the monitoring connection `connection` succeeded:
    /// publish the heartbeat, apply the description.
    pub fn check_succeeded(
        self: &Arc<Self>,
        server: &Server,
        check: CheckReply,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        // The reply is copied for the event only when someone listens: a primary's
        // lists all the members.
        self.events
            .queue_with(|| SdamEvent::ServerHeartbeatSucceeded {
                address: server.address.clone(),
                driver_connection_id: connection.driver_id,
                server_connection_id: connection.server_id,
                duration: check.duration,
                reply: check.reply.clone(),
                awaited,
            });
        self.events.flush();
        let (average, minimum) = server.rtt();
        let now = self.runtime.clock.now();
        let mut description =
            ServerDescription::from_hello(server.address.clone(), check.reply, average, Some(now));
        description.min_round_trip_time = minimum;
        if description.server_type != ServerType::Unknown {
            // Ready before the description is applied: whoever selects the server
            // finds its pool serving (CMAP spec, "Connection Pool Behaviour").
            server.pool.ready();
        }
        self.apply(description);
    }

    /// A check of `server` on the monitoring connection `connection` failed: publish
    /// the heartbeat, mark it Unknown, clear its pool (server-monitoring.md, "Network
    /// or command error during server check").
    pub fn check_failed(
        self: &Arc<Self>,
        server: &Server,
        error: &Error,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        self.heartbeat_failed(
            &server.address,
            || error.to_string(),
            duration,
            connection,
            awaited,
        );
        // An Unknown server starts its round-trip average afresh (server-monitoring.md,
        // "Measuring RTT").
        lock(&server.rtt).reset();
        let now = self.runtime.clock.now();
        self.apply(ServerDescription::from_error(
            server.address.clone(),
            error,
            None,
            Some(now),
        ));
        // After a network timeout, connections in use are presumed dead as well
        // (server-monitoring.md, "Network or command error during server check").
        let timed_out = matches!(error.kind(), ErrorKind::Timeout { .. });
        server.pool.clear(None, timed_out);
    }

    /// Applies a server's new description and acts on the update.
    fn apply(self: &Arc<Self>, description: ServerDescription) {
        let mut state = self.state_for_update();
        if state.closed {
            return;
        }
        let update = state.description.apply(description);
        self.act_on(state, update);
    }

    /// Starts and stops monitors for added and removed servers, publishes the
    /// update's events and wakes selection. Pools are created, and events delivered,
    /// outside the state lock (an event handler may call back into the client).
    fn act_on(self: &Arc<Self>, mut state: MutexGuard<'_, State>, update: TopologyUpdate) {
        let mut removed = Vec::new();
        for address in &update.removed {
            if let Some(server) = state.servers.remove(address) {
                server.monitor.close();
                removed.push(server);
            }
        }
        for address in &update.check_immediately {
            // A primary that lost its place to a newer one may well be a secondary now.
            state.stale = true;
            if let Some(server) = state.servers.get(address) {
                server.monitor.request_check();
            }
        }
        self.events.queue(update.events);
        drop(state);
        self.events.flush();
        for server in removed {
            server.pool.close();
        }
        let changed = update.changed;
        let mut started = Vec::new();
        for address in update.added {
            // The options were validated when the topology opened: a new pool cannot
            // refuse them.
            let Ok(server) = Server::new(address.clone(), self) else {
                continue;
            };
            let server = Arc::new(server);
            let mut state = self.state();
            // Unless the server left again (or the topology closed) in the meantime.
            if !state.closed && state.description.servers.contains_key(&address) {
                state.servers.insert(address, server.clone());
                started.push(server);
            }
        }
        // Only a change wakes selection: a waiting selection looks at every server and
        // asks each for a check, and a check that changes nothing (a member that stays
        // unreachable) must not cost that.
        if changed {
            self.changed.notify_all();
        }
        if !self.single_threaded {
            for server in started {
                self.start_monitor(server);
            }
        }
    }

    /// SDAM "Error handling" for an error of an application operation on `address`,
    /// on a connection of pool generation `generation` (and `service_id`, in
    /// load-balanced mode).
    pub fn handle_application_error(
        self: &Arc<Self>,
        address: &ServerAddress,
        error_source: &Error,
        connection: ConnectionInfo,
        phase: ErrorPhase,
    ) {
        // Network errors and timeouts before the hello reply came are labelled
        // SystemOverloadedError (`Connection::establish`): SDAM leaves the server alone.
        let Some(error) = ApplicationError::from_error(
            error_source,
            address.clone(),
            Some(connection.generation),
            connection.max_wire_version,
            phase,
        ) else {
            return;
        };
        let mut state = self.state_for_update();
        if state.closed {
            return;
        }
        if error.system_overloaded {
            // No monitor runs between operations in single-threaded mode: rescan
            // before the next selection rather than fail on this server again.
            state.stale = true;
        }
        let Some(server) = state.servers.get(address).cloned() else {
            return;
        };
        // In load-balanced mode generations are counted per service.
        let pool_generation = match connection.service_id {
            Some(service_id) => server.pool.service_generation(service_id),
            None => None,
        }
        .unwrap_or_else(|| server.pool.generation());
        let response = state
            .description
            .handle_application_error(&error, pool_generation);
        if response.request_check {
            state.stale = true;
            server.monitor.request_check();
        }
        if matches!(error.kind, ApplicationErrorKind::Network { .. })
            && error.phase == ErrorPhase::AfterHandshakeCompletes
            && response.clear_pool
        {
            // SDAM spec, "Network error when reading or writing": the monitor's
            // connection is likely broken too.
            server.monitor.cancel_check();
        }
        self.act_on(state, response.update);
        // The pool is cleared after the server is marked Unknown (SDAM spec, "Error
        // handling": "mark the server Unknown ... clear the connection pool").
        if response.clear_pool {
            // Unless another error of the same generation cleared it meanwhile.
            server
                .pool
                .clear_generation(connection.service_id, pool_generation, false);
        }
    }

    /// Establishing a connection to `address` failed (CMAP spec: an application
    /// error before the handshake completes). In load-balanced mode, only errors
    /// after the hello count, for the service it named: before it, the service is
    /// not known (Load Balancer spec, "Initial Handshake Errors").
    fn establishment_failed(
        self: &Arc<Self>,
        address: &ServerAddress,
        error: &Error,
        generation: u32,
    ) {
        let load_balanced = self.options.load_balanced == Some(true);
        let service_id = error.service_id().filter(|_| load_balanced);
        if load_balanced && service_id.is_none() {
            return;
        }
        let (server, max_wire_version) = {
            let state = self.state();
            let max_wire_version = state
                .description
                .servers
                .get(address)
                .map_or(0, |server| server.max_wire_version);
            (state.servers.get(address).cloned(), max_wire_version)
        };
        let Some(server) = server else {
            return;
        };
        // Load-balanced mode counts generations per service.
        let generation = match service_id {
            Some(service_id) => server.pool.service_generation(service_id).unwrap_or(0),
            None => generation,
        };
        let connection = ConnectionInfo {
            generation,
            max_wire_version,
            service_id,
        };
        self.handle_application_error(
            address,
            error,
            connection,
            ErrorPhase::BeforeHandshakeCompletes,
        );
    }

    /// Server selection (server-selection.md): a suitable server within
    /// serverSelectionTimeoutMS, waiting for the topology to change — or, in
    /// single-threaded mode, scanning — while there is none. `operation` (the command
    /// name) and `operation_id` go into the selection's log messages
    /// (server-selection.md, "Logging").
    pub async fn select_server(
        self: &Arc<Self>,
        criteria: &SelectionCriteria<'_>,
        deprioritized: &[ServerAddress],
        operation: &str,
        operation_id: i32,
    ) -> Result<SelectedServer> {
        let mut log = SelectionLog::new(
            operation,
            operation_id,
            || format!("{criteria:?}"),
            self.log,
        );
        if let Some(log) = &log {
            log.started(&self.description());
        }
        let selected = self.select(criteria, deprioritized, &mut log).await;
        if let Some(log) = &log {
            match &selected {
                Ok(selected) => log.succeeded(&self.description(), &selected.server.address),
                Err(error) => log.failed(&self.description(), error),
            }
        }
        selected
    }

    /// What this client's log messages carry.
    pub fn log_context(&self) -> LogContext {
        self.log
    }

    /// The selection loop of [`Shared::select_server`].
    async fn select(
        self: &Arc<Self>,
        criteria: &SelectionCriteria<'_>,
        deprioritized: &[ServerAddress],
        log: &mut Option<SelectionLog<'_>>,
    ) -> Result<SelectedServer> {
        let clock = self.runtime.clock.clone();
        let started = clock.now();
        let timeout = self.options.server_selection_timeout;
        let deadline = started + timeout;
        if self.single_threaded {
            self.rescan_srv_if_due().await;
        }
        if self.scans {
            let mut state = self.state();
            let due = state
                .last_scan
                .is_none_or(|last| clock.now() - last >= self.heartbeat_frequency);
            state.stale |= due;
        }
        loop {
            // Single-threaded and stale: `Some(when the last scan ended, if ever)`.
            let scan_due = match self.scans {
                true => {
                    let state = self.state();
                    state.stale.then_some(state.last_scan)
                }
                false => None,
            };
            if let Some(last_scan) = scan_due {
                if let Some(ready) = last_scan.map(|last| last + MIN_HEARTBEAT_FREQUENCY) {
                    if !self.options.server_selection_try_once && ready > deadline {
                        return Err(self.selection_error(criteria, Some(timeout)));
                    }
                    let wait = ready.saturating_duration_since(clock.now());
                    if !wait.is_zero() {
                        clock.sleep(wait).await;
                    }
                }
                self.scan().await;
            }
            if let Some(selected) = self.try_select(criteria, deprioritized, deadline)? {
                return Ok(selected);
            }
            // No server yet: listen for changes, then look once more, so that a change
            // between the two looks still ends the wait below. (Listening only now keeps
            // the common case, a server at the first look, off the listeners' lock.)
            let changed = self.changed.listen();
            let selected = self.try_select(criteria, deprioritized, deadline)?;
            if selected.is_none() {
                if let Some(log) = log {
                    let remaining = deadline.saturating_duration_since(clock.now());
                    log.waiting(&self.description(), remaining);
                }
            }
            match selected {
                Some(selected) => return Ok(selected),
                None if self.scans => {
                    let mut state = self.state();
                    state.stale = true;
                    let scanned_since_start = state.last_scan.is_some_and(|last| last >= started);
                    drop(state);
                    if self.options.server_selection_try_once && scanned_since_start {
                        return Err(self.selection_error(criteria, None));
                    }
                    if clock.now() >= deadline {
                        return Err(self.selection_error(criteria, Some(timeout)));
                    }
                }
                None => {
                    for server in self.state().servers.values() {
                        server.monitor.request_check();
                    }
                    let remaining = deadline.saturating_duration_since(clock.now());
                    if remaining.is_zero()
                        || rt::timeout(&*clock, remaining, changed).await.is_err()
                    {
                        return Err(self.selection_error(criteria, Some(timeout)));
                    }
                }
            }
        }
    }

    /// One selection attempt on the current description.
    fn try_select(
        &self,
        criteria: &SelectionCriteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
    ) -> Result<Option<SelectedServer>> {
        let state = self.state();
        if state.closed {
            return Err(Error::invalid_argument("the client was closed"));
        }
        let candidates = selection::candidates(
            &state.description,
            criteria,
            self.options.local_threshold,
            deprioritized,
        )?;
        let operation_count = |address: &ServerAddress| {
            state.servers.get(address).map_or(u32::MAX, |server| {
                server.operation_count.load(Ordering::SeqCst)
            })
        };
        let Some(chosen) = selection::choose(&candidates, operation_count, selection::random_index)
        else {
            return Ok(None);
        };
        let Some(server) = state.servers.get(&chosen.address).cloned() else {
            return Ok(None);
        };
        server.operation_count.fetch_add(1, Ordering::SeqCst);
        Ok(Some(SelectedServer {
            server,
            server_type: chosen.server_type,
            topology_type: state.description.topology_type,
            deadline,
        }))
    }

    /// The error of a failed selection. `timeout` is `None` when single-threaded
    /// selection gave up after one scan (serverSelectionTryOnce).
    fn selection_error(
        &self,
        criteria: &SelectionCriteria<'_>,
        timeout: Option<Duration>,
    ) -> Error {
        let wanted = match criteria {
            SelectionCriteria::Write => "writable server".to_owned(),
            SelectionCriteria::Read(preference) => {
                format!("server for read preference {}", preference.mode)
            }
        };
        let description = self.description();
        let failed = match timeout {
            Some(timeout) => format!(
                "server selection timed out after {} ms",
                timeout.as_millis()
            ),
            None => "server selection failed after one scan (serverSelectionTryOnce)".to_owned(),
        };
        let message = match &description.compatibility_error {
            Some(incompatible) => incompatible.clone(),
            None => format!("{failed}: no {wanted} in the topology {description}"),
        };
        Error::new(ErrorKind::ServerSelection { message })
    }

    /// A single-threaded scan (server-monitoring.md, "Scanning order"): every server
    /// once, the primary first, then known servers, then Unknown ones, least recently
    /// checked first; servers that failed within cooldownMS are skipped; servers
    /// discovered during the scan are checked in it.
    async fn scan(self: &Arc<Self>) {
        let _one_scan = self.scanning.lock().await;
        let clock = self.runtime.clock.clone();
        let scan_start = clock.now();
        let mut checked = BTreeSet::new();
        loop {
            let next = {
                let state = self.state();
                let in_cooldown = |server: &ServerDescription| {
                    server.server_type == ServerType::Unknown
                        && server.error.is_some()
                        && server.last_update_time.is_some_and(|time| {
                            scan_start.saturating_duration_since(time) < COOLDOWN
                                && time <= scan_start
                        })
                };
                let candidates: Vec<&ServerDescription> = state
                    .description
                    .servers
                    .values()
                    .filter(|server| !checked.contains(&server.address) && !in_cooldown(server))
                    .collect();
                let rank = |server: &&ServerDescription| match server.server_type {
                    ServerType::RsPrimary => 0,
                    ServerType::PossiblePrimary => 1,
                    ServerType::Unknown | ServerType::RsGhost => 3,
                    _ => 2,
                };
                candidates
                    .iter()
                    .min_by_key(|server| (rank(server), server.last_update_time))
                    .and_then(|server| state.servers.get(&server.address).cloned())
            };
            let Some(server) = next else {
                break;
            };
            checked.insert(server.address.clone());
            self.check_inline(&server).await;
        }
        let mut state = self.state();
        state.last_scan = Some(clock.now());
        state.stale = false;
    }

    /// One polled check, run inline by a single-threaded scan.
    async fn check_inline(self: &Arc<Self>, server: &Arc<Server>) {
        let checker = self.checker(&server.address);
        // The connection is taken out for the check, its numbering stays: a scan
        // abandoned mid-check loses the connection only.
        let (ids, mut connection) = {
            let mut slot = lock(&server.scan_connection);
            (slot.start_heartbeat(), slot.open.take())
        };
        self.heartbeat_started(&server.address, ids, false);
        let started = self.runtime.clock.now();
        let result = checker.poll(&mut connection).await;
        let duration = self.runtime.clock.now() - started;
        let ids_after = {
            let mut slot = lock(&server.scan_connection);
            slot.open = connection;
            slot.ids()
        };
        match result {
            Ok(check) => {
                server.add_rtt_sample(check.duration);
                self.check_succeeded(server, check, ids_after, false);
            }
            Err(error) => self.check_failed(server, &error, duration, ids, false),
        }
    }

    /// A connection to the selected server, from its pool, within what is left of
    /// serverSelectionTimeoutMS (or waitQueueTimeoutMS, if shorter). A failed
    /// establishment has already gone through SDAM error handling
    /// ([`ServerConnector`]).
    pub async fn check_out(&self, selected: &SelectedServer) -> Result<PooledConnection> {
        let remaining = selected
            .deadline
            .saturating_duration_since(self.runtime.clock.now());
        let timeout = match self.options.wait_queue_timeout {
            Some(wait_queue_timeout) => remaining.min(wait_queue_timeout),
            None => remaining,
        };
        selected.server.pool.check_out(Some(timeout)).await
    }

    /// Closes the topology: monitors stop, pools close, closing events go out, and
    /// selections in progress fail.
    pub fn close(&self) {
        let mut state = self.state_for_update();
        if state.closed {
            return;
        }
        state.closed = true;
        let servers: Vec<Arc<Server>> = state.servers.values().cloned().collect();
        for server in &servers {
            server.monitor.close();
        }
        let events = state.description.close();
        self.events.queue(events);
        drop(state);
        // Pools close outside the lock: they deliver events.
        for server in servers {
            server.pool.close();
        }
        self.events.flush();
        self.changed.notify_all();
    }
}
