//! The cluster: the runtime hub of a client, the layer above server selection
//! ([`crate::selection`]), the pools ([`crate::cmap`]), SDAM ([`crate::sdam`]: the pure
//! [`TopologyDescription`] state machine and the server monitor) and seed lists
//! ([`crate::srv`]). It drives that state machine with real checks, owns the servers
//! with their pools and monitors, publishes the events, and does the waiting part of
//! server selection.
//!
//! Two monitoring modes share everything but who runs the checks
//! (server-monitoring.md, "Single-threaded monitoring"):
//!
//! - **background**: when the runtime can spawn tasks, every server gets a monitor
//!   task ([`crate::sdam::monitor::run_monitor`]) that polls or streams and reports to
//!   the cluster through [`MonitorHost`](crate::sdam::monitor::MonitorHost), and
//!   selection waits for the description to change;
//! - **single-threaded**: without a spawner (a WASI request handler, a Worker) — or when
//!   asked for — nothing runs between operations; selection scans the servers inline
//!   when the description is stale (server-selection.md, "Single-threaded server
//!   selection"), see [`monitoring`].
//!
//! A client made from a `mongodb+srv` seed list also polls the SRV records (Polling SRV
//! Records for mongos Discovery spec) while the topology is Sharded or Unknown:
//! [`srv_polling`].
//!
//! - [`server`]: one server, its pool and the connections checked out of it;
//! - [`monitoring`]: the checks of both modes and what their outcomes do;
//! - [`first_contact`]: a cold client's first operation opens a connection to every
//!   seed without waiting for a check, and those connections' handshakes make the
//!   servers known;
//! - [`srv_polling`]: SRV polling, in both modes.

mod first_contact;
mod monitoring;
mod server;
mod srv_polling;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use bson::oid::ObjectId;

use crate::cmap::PoolOptions;
use crate::connection::{Connection, ConnectionSettings};
use crate::error::{Error, ErrorKind, Result};
use crate::event::cmap::CmapEvent;
use crate::event::sdam::SdamEvent;
use crate::event::{EventHandler, EventSink};
use crate::logging::{self, LogContext, SelectionLog};
use crate::rt::{self, Instant, Runtime};
use crate::sdam::monitor::MIN_HEARTBEAT_FREQUENCY;
use crate::sdam::topology::{
    ApplicationError, ApplicationErrorKind, ErrorPhase, TopologyState, TopologyUpdate,
};
use crate::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
use crate::selection::{self, Criteria};
use crate::signal::{lock, Notify, TaskTracker};
use crate::uri::{ClientOptions, ServerAddress};

pub(crate) use server::{ConnectionInfo, PinnedConnection, PooledConnection, Server};
use srv_polling::SrvPolling;

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

/// Where the event handlers of a topology go.
#[derive(Clone, Default)]
pub(crate) struct EventHandlers {
    pub sdam: Option<EventHandler<SdamEvent>>,
    pub cmap: Option<EventHandler<CmapEvent>>,
    /// The longest document text in a log message ([`crate::logging`]).
    pub log_max_document_length: usize,
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
    /// The server's minimum round trip time in the description it was selected from
    /// (Client Side Operations Timeout spec, "Command Execution": read then, before a
    /// monitor may reset it).
    pub min_round_trip_time: Duration,
    /// The connection whose handshake made the server selectable, or the error that
    /// ended it after its hello (a cold client's first operation,
    /// [`Shared::first_contact`]): what [`Shared::check_out`] hands to the pool.
    established: Mutex<Option<Result<Connection>>>,
}

impl SelectedServer {
    /// `server`, selected: the operation counts against it from now on.
    fn new(
        server: Arc<Server>,
        server_type: ServerType,
        topology_type: TopologyType,
        deadline: Instant,
        min_round_trip_time: Duration,
    ) -> SelectedServer {
        server.operation_count.fetch_add(1, Ordering::SeqCst);
        SelectedServer {
            server,
            server_type,
            topology_type,
            deadline,
            min_round_trip_time,
            established: Mutex::new(None),
        }
    }
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

/// How long [`Shared::monitors_ended`] waits at most.
const MONITORS_END_BOUND: Duration = Duration::from_secs(1);

/// What the cluster's background tasks (monitors, SRV poller), its pools and the
/// client share.
pub(crate) struct Shared {
    options: ClientOptions,
    runtime: Runtime,
    /// Settings for application connections (with credentials), retargeted per server.
    connection_settings: ConnectionSettings,
    pool_options: PoolOptions,
    /// The pools' listener: the application's, behind the connection log.
    cmap_events: EventHandler<CmapEvent>,
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
    /// Whether the first selection may open the first connection itself
    /// ([`Shared::first_contact`]); taken by the first selection.
    first_contact: AtomicBool,
    /// SRV polling, for a client made from a `mongodb+srv` seed list.
    srv: OnceLock<Arc<SrvPolling>>,
    /// The background monitors (and RTT monitors) still running.
    monitor_tasks: Arc<TaskTracker>,
}

/// The client's handle on its cluster: closes it when dropped.
pub(crate) struct Cluster {
    shared: Arc<Shared>,
}

impl Cluster {
    /// Opens the topology of `options` and starts its monitors (background mode).
    pub fn open(
        options: &ClientOptions,
        runtime: Runtime,
        connection_settings: ConnectionSettings,
        threads: MonitoringThreads,
        handlers: EventHandlers,
    ) -> Result<Cluster> {
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
        let heartbeat_frequency = options.heartbeat_freq.unwrap_or(match single_threaded {
            true => Duration::from_secs(60),
            false => Duration::from_secs(10),
        });
        // serverMonitoringMode (server-monitoring.md, "Streaming protocol"): `auto`
        // streams except on a FaaS platform.
        let streaming_allowed = match options.server_monitoring_mode_or_default() {
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
        let spawner = runtime.spawner.clone();
        let shared = Arc::new(Shared {
            options: options.clone(),
            runtime,
            connection_settings,
            pool_options: PoolOptions::from_client_options(options),
            cmap_events: logging::logged(handlers.cmap, spawner.clone(), log),
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
            events: EventSink::new(Some(logging::logged(handlers.sdam, spawner, log))),
            scanning: futures::lock::Mutex::new(()),
            first_contact: AtomicBool::new(options.load_balanced != Some(true)),
            srv: OnceLock::new(),
            monitor_tasks: Arc::default(),
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
        Ok(Cluster { shared })
    }

    /// The shared state, for operations.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The `client` metadata new connections send, which the client may append to.
    pub fn client_metadata(&self) -> &crate::handshake::ClientMetadata {
        &self.connection_settings.metadata
    }

    /// The state, locked to update the description: its TopologyDescriptionChanged
    /// events, two copies of the whole topology each, are built only while someone
    /// listens (an event handler, or the debug log, which may be turned on later).
    fn state_for_update(&self) -> MutexGuard<'_, State> {
        let mut state = self.state();
        state.description.set_describing(self.events.is_listened());
        state
    }

    /// Runs `f` on the cluster if it still exists and is open (monitors, pools and the
    /// SRV poller hold only a weak reference, so that dropping the client ends them).
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

    /// Applies a server's new description and acts on the update. `ready`, a server
    /// a check found known, has its pool marked ready in the same step, under the
    /// topology's lock: whoever selects the server then finds its pool serving, and
    /// an operation's error (which marks the server Unknown and clears the pool in
    /// one step too, [`Shared::handle_application_error`]) comes wholly before or
    /// wholly after. Between the two steps, such an error's clear left a server
    /// selectable with its pool paused, and a retry failed on it.
    fn apply(self: &Arc<Self>, description: ServerDescription, ready: Option<&Server>) {
        let mut state = self.state_for_update();
        if state.closed {
            return;
        }
        let ready = ready.map(|server| server.pool.ready_then());
        let update = state.description.apply(description);
        self.act_on(state, update);
        if let Some(ready) = ready {
            ready.finish();
        }
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
        if matches!(error.kind, ApplicationErrorKind::Network { .. })
            && error.phase == ErrorPhase::AfterHandshakeCompletes
            && response.clear_pool
        {
            // SDAM spec, "Network error when reading or writing": the monitor's
            // connection is likely broken too.
            server.monitor.cancel_check();
        }
        // After the cancel: a check it cancelled (a cold client's first, which may
        // still be running when its first operation fails) is followed by this one.
        if response.request_check {
            state.stale = true;
            server.monitor.request_check();
        }
        // The pool is cleared after the server is marked Unknown (SDAM spec, "Error
        // handling": "mark the server Unknown ... clear the connection pool"), in the
        // same step, under the topology's lock (see `apply`); unless another error of
        // the same generation cleared it meanwhile.
        let cleared = response.clear_pool.then(|| {
            server
                .pool
                .clear_generation_then(connection.service_id, pool_generation, false)
        });
        self.act_on(state, response.update);
        if let Some(cleared) = cleared {
            cleared.finish();
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

    /// Server selection (server-selection.md): a suitable server within `timeout`
    /// (serverSelectionTimeoutMS, or less with timeoutMS), waiting for the topology to
    /// change — or, in single-threaded mode, scanning — while there is none.
    /// `operation` (the command name) and `operation_id` go into the selection's log
    /// messages (server-selection.md, "Logging").
    pub async fn select_server(
        self: &Arc<Self>,
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        operation: &str,
        operation_id: i32,
        timeout: Duration,
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
        let selected = self
            .select(criteria, deprioritized, timeout, &mut log)
            .await;
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
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        timeout: Duration,
        log: &mut Option<SelectionLog<'_>>,
    ) -> Result<SelectedServer> {
        let clock = self.runtime.clock.clone();
        let started = clock.now();
        let deadline = started + timeout;
        // The cold steps below (an SRV rescan, first contact, a scan: connecting and
        // handshaking, authentication included) are boxed, so that their large futures
        // are not part of every selection's, which each operation moves and boxes
        // (`Executor::select_server`).
        if self.single_threaded {
            Box::pin(self.rescan_srv_if_due()).await;
        }
        if self.scans {
            let mut state = self.state();
            let due = state
                .last_scan
                .is_none_or(|last| clock.now() - last >= self.heartbeat_frequency);
            state.stale |= due;
        }
        let seeds = self.first_contact();
        if !seeds.is_empty() {
            if let Some(selected) =
                Box::pin(self.connect_first(seeds, criteria, deprioritized, deadline)).await?
            {
                return Ok(selected);
            }
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
                    if !self.options.server_selection_try_once_or_default() && ready > deadline {
                        return Err(self.selection_error(criteria, Some(timeout)));
                    }
                    let wait = ready.saturating_duration_since(clock.now());
                    if !wait.is_zero() {
                        clock.sleep(wait).await;
                    }
                }
                Box::pin(self.scan()).await;
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
                    if self.options.server_selection_try_once_or_default() && scanned_since_start {
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
                    if remaining.is_zero() {
                        return Err(self.selection_error(criteria, Some(timeout)));
                    }
                    // Wait for a change, but ask again every minHeartbeatFrequencyMS: a
                    // check of a server that is still down changes nothing and wakes no
                    // one, and its monitor, its request used, would otherwise wait a
                    // whole heartbeatFrequencyMS before the check that finds the server
                    // back (server-selection.md, "request an immediate check" each time
                    // selection waits; server-monitoring.md, "Requesting an immediate
                    // check"). The loop above then looks and asks again.
                    let _woken_or_due =
                        rt::timeout(&*clock, remaining.min(MIN_HEARTBEAT_FREQUENCY), changed).await;
                }
            }
        }
    }

    /// One selection attempt on the current description.
    fn try_select(
        &self,
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
    ) -> Result<Option<SelectedServer>> {
        let state = self.state();
        if state.closed {
            return Err(Error::new(crate::error::ErrorKind::Shutdown));
        }
        let candidates = selection::candidates(
            &state.description,
            criteria,
            self.options.local_threshold_or_default(),
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
        Ok(Some(SelectedServer::new(
            server,
            chosen.server_type,
            state.description.topology_type,
            deadline,
            chosen.min_round_trip_time.unwrap_or_default(),
        )))
    }

    /// The error of a failed selection. `timeout` is `None` when single-threaded
    /// selection gave up after one scan (serverSelectionTryOnce).
    fn selection_error(&self, criteria: &Criteria<'_>, timeout: Option<Duration>) -> Error {
        let wanted = match criteria {
            Criteria::Write => "writable server".to_owned(),
            Criteria::Read(preference) => {
                format!("server for read preference {}", preference.mode())
            }
            Criteria::Predicate(_) => "server the selection predicate accepts".to_owned(),
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

    /// A connection to the selected server, from its pool, within what is left of
    /// the selection's timeout (or `wait_queue_timeout`, waitQueueTimeoutMS, if
    /// shorter). A failed establishment has already gone through SDAM error handling
    /// ([`ServerConnector`]).
    pub async fn check_out(
        &self,
        selected: &SelectedServer,
        wait_queue_timeout: Option<Duration>,
    ) -> Result<PooledConnection> {
        let remaining = selected
            .deadline
            .saturating_duration_since(self.runtime.clock.now());
        let timeout = match wait_queue_timeout {
            Some(wait_queue_timeout) => remaining.min(wait_queue_timeout),
            None => remaining,
        };
        let pool = &selected.server.pool;
        let established = lock(&selected.established).take();
        match established {
            Some(established) => pool.check_out_established(established, Some(timeout)).await,
            None => pool.check_out(Some(timeout)).await,
        }
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
            // Single-threaded mode's monitoring connection.
            lock(&server.scan_connection).open = None;
        }
        self.events.flush();
        self.changed.notify_all();
    }

    /// Runs each server's pool upkeep now and waits for it: the pools of servers a
    /// check found (ready ones) open connections until minPoolSize.
    pub async fn populate_pools(&self) {
        let servers: Vec<Arc<Server>> = self.state().servers.values().cloned().collect();
        for server in servers {
            server.pool.populate().await;
        }
    }

    /// Resolves once every background monitor has ended (after [`close`](Self::close))
    /// and so has closed its connection; at once in single-threaded mode. Each ends at
    /// its next await once closed; the wait is bounded all the same
    /// ([`MONITORS_END_BOUND`]), should a host be slow to run a task it was given.
    pub async fn monitors_ended(&self) {
        let clock = &*self.runtime.clock;
        let _ended_or_bounded =
            rt::timeout(clock, MONITORS_END_BOUND, self.monitor_tasks.all_ended()).await;
    }
}
