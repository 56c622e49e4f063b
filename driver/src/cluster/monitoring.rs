//! Server monitoring in the cluster (server-monitoring.md): what a check's outcome
//! does — heartbeat events, the server's new description, a cleared pool — in both
//! modes. In background mode each server's monitor task
//! ([`run_monitor`](crate::sdam::monitor::run_monitor)) reports through
//! [`MonitoredServer`]; in single-threaded mode selection runs a [`scan`](Shared::scan).

use std::collections::BTreeSet;
use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Server, Shared};
use crate::error::Error;
use crate::event::sdam::{
    SdamEvent, ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
};
use crate::rt;
use crate::sdam::monitor::{
    run_monitor, CheckReply, Checker, HeartbeatConnection, MonitorHost, MonitorSignal,
};
use crate::sdam::{ServerDescription, ServerType, Stamp};
use crate::signal::{lock, TaskTracker};
use crate::uri::ServerAddress;

impl Shared {
    /// Starts the background monitor of `server`.
    pub(super) fn start_monitor(self: &Arc<Self>, server: Arc<Server>) {
        let Some(spawner) = &self.runtime.spawner else {
            return;
        };
        let checker = self.checker(&server.address);
        let host = MonitoredServer {
            server,
            cluster: Arc::downgrade(self),
            spawner: spawner.clone(),
            tasks: self.monitor_tasks.clone(),
        };
        host.spawn(rt::boxed(run_monitor(
            checker,
            host.clone(),
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
    fn is_known(&self, address: &ServerAddress) -> bool {
        self.state()
            .description
            .servers
            .get(address)
            .is_some_and(|server| server.server_type != ServerType::Unknown)
    }

    /// A check of `address` on the monitoring connection `connection` starts.
    fn heartbeat_started(
        &self,
        address: &ServerAddress,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        // Heartbeat events are built only when someone listens: every check of every
        // member publishes them.
        self.events.queue_with(|| {
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                server_address: address.clone(),
                driver_connection_id: connection.driver_id,
                server_connection_id: connection.server_id,
                awaited,
            })
        });
        self.events.flush();
    }

    /// A check of `address` ended without a reply: it failed, or it was cancelled (an
    /// operation's network error marked the server Unknown). Either way the started
    /// heartbeat gets its failed event (SDAM monitoring spec: every
    /// ServerHeartbeatStartedEvent is followed by a succeeded or a failed one).
    fn heartbeat_failed(
        &self,
        address: &ServerAddress,
        failure: impl FnOnce() -> Error,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        self.events.queue_with(|| {
            SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                server_address: address.clone(),
                driver_connection_id: connection.driver_id,
                server_connection_id: connection.server_id,
                duration,
                failure: failure(),
                awaited,
            })
        });
        self.events.flush();
    }

    /// A check of `server` on the monitoring connection `connection` succeeded:
    /// publish the heartbeat, apply the description. A polled check's duration is a
    /// round-trip-time sample; an awaited one's is not (server-monitoring.md,
    /// "Measuring RTT").
    fn check_succeeded(
        self: &Arc<Self>,
        server: &Server,
        check: CheckReply,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        if !awaited {
            server.add_rtt_sample(check.duration);
        }
        // The reply is copied for the event only when someone listens: a primary's
        // lists all the members.
        self.events.queue_with(|| {
            SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                server_address: server.address.clone(),
                driver_connection_id: connection.driver_id,
                server_connection_id: connection.server_id,
                duration: check.duration,
                reply: check.reply.clone(),
                awaited,
            })
        });
        self.events.flush();
        self.described(server, check.reply);
    }

    /// `server` answered a hello with `reply` (a check's, or a handshake's): its new
    /// description, with its round-trip times, goes into the topology.
    pub(super) fn described(self: &Arc<Self>, server: &Server, reply: bson::Document) {
        let (average, minimum) = server.rtt();
        let now = Stamp::now(&*self.runtime.clock);
        let mut description =
            ServerDescription::from_hello(server.address.clone(), reply, average, Some(now));
        description.min_round_trip_time = minimum;
        // A known server's pool is ready by the time selection can see it (CMAP spec,
        // "Connection Pool Behaviour").
        let known = description.server_type != ServerType::Unknown;
        self.apply(description, known.then_some(server));
    }

    /// A check of `server` on the monitoring connection `connection` failed: publish
    /// the heartbeat, mark it Unknown, clear its pool (server-monitoring.md, "Network
    /// or command error during server check").
    fn check_failed(
        self: &Arc<Self>,
        server: &Server,
        error: &Error,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) {
        self.heartbeat_failed(
            &server.address,
            || error.clone(),
            duration,
            connection,
            awaited,
        );
        self.unreachable(server, error);
    }

    /// `server` could not be reached (a check failed, or a cold client's first
    /// connection to it failed before its hello): mark it Unknown with `error`, clear
    /// its pool (server-monitoring.md, "Network or command error during server
    /// check").
    pub(super) fn unreachable(self: &Arc<Self>, server: &Server, error: &Error) {
        // An Unknown server starts its round-trip average afresh (server-monitoring.md,
        // "Measuring RTT").
        lock(&server.rtt).reset();
        let now = Stamp::now(&*self.runtime.clock);
        self.apply(
            ServerDescription::from_error(server.address.clone(), error.clone(), None, Some(now)),
            None,
        );
        // After a network timeout, connections in use are presumed dead as well
        // (server-monitoring.md, "Network or command error during server check").
        let timed_out = error.is_network_timeout();
        server.pool.clear(None, timed_out);
    }

    /// A single-threaded scan (server-monitoring.md, "Scanning order"): every server
    /// once, the primary first, then known servers, then Unknown ones, least recently
    /// checked first; servers that failed within cooldownMS are skipped; servers
    /// discovered during the scan are checked in it.
    pub(super) async fn scan(self: &Arc<Self>) {
        let _one_scan = self.scanning.lock().await;
        let clock = self.runtime.clock.clone();
        let scan_start = clock.now();
        let mut checked = BTreeSet::new();
        loop {
            let next = {
                let state = self.state();
                let in_cooldown = |server: &ServerDescription| {
                    server.server_type == ServerType::Unknown
                        && state
                            .servers
                            .get(&server.address)
                            .is_some_and(|server| server.in_cooldown(scan_start))
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
                self.check_succeeded(server, check, ids_after, false);
            }
            Err(error) => {
                server.check_failed_at(self.runtime.clock.now(), &error);
                self.check_failed(server, &error, duration, ids, false);
            }
        }
    }
}

/// What a server's background monitor reports to: the server, and the cluster held
/// weakly, so that dropping the client ends the monitor.
#[derive(Clone)]
struct MonitoredServer {
    server: Arc<Server>,
    cluster: Weak<Shared>,
    spawner: Arc<dyn rt::Spawner>,
    /// The cluster's monitor tasks, which a closing client waits for.
    tasks: Arc<TaskTracker>,
}

impl MonitorHost for MonitoredServer {
    fn signal(&self) -> &MonitorSignal {
        &self.server.monitor
    }

    fn spawn(&self, task: rt::BoxFuture<'static, ()>) {
        let guard = self.tasks.track();
        self.spawner.spawn(rt::boxed(async move {
            task.await;
            drop(guard);
        }));
    }

    fn add_rtt_sample(&self, sample: Duration) {
        self.server.add_rtt_sample(sample);
    }

    fn heartbeat_started(&self, connection: HeartbeatConnection, awaited: bool) -> Option<bool> {
        Shared::upgrade(&self.cluster, |shared| {
            shared.heartbeat_started(&self.server.address, connection, awaited);
            shared.is_known(&self.server.address)
        })
    }

    fn check_cancelled(
        &self,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()> {
        Shared::upgrade(&self.cluster, |shared| {
            shared.heartbeat_failed(
                &self.server.address,
                || {
                    Error::from_io(
                        &self.server.address.to_string(),
                        io::Error::new(
                            io::ErrorKind::Interrupted,
                            "the check was cancelled: an operation's network error marked \
                             the server Unknown",
                        ),
                    )
                },
                duration,
                connection,
                awaited,
            );
        })
    }

    fn check_succeeded(
        &self,
        check: CheckReply,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()> {
        Shared::upgrade(&self.cluster, |shared| {
            shared.check_succeeded(&self.server, check, connection, awaited);
        })
    }

    fn check_failed(
        &self,
        error: &Error,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()> {
        Shared::upgrade(&self.cluster, |shared| {
            shared.check_failed(&self.server, error, duration, connection, awaited);
        })
    }
}
