//! Server Monitoring (server-monitoring.md): how one server is checked.
//!
//! A [`Checker`] performs single checks — the handshake of a new monitoring
//! connection, a polled `hello`, or an awaited `hello` of the streaming protocol — and
//! is shared by both monitoring modes. [`run_monitor`] and [`run_rtt_monitor`] are the
//! background tasks of the multi-threaded mode; the single-threaded mode calls
//! [`Checker::poll`] inline from its scans (see `crate::cluster`). The background
//! tasks report to whoever runs them — the cluster — through [`MonitorHost`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bson::{doc, Document, RawDocumentBuf};
use futures::future::{select, Either};

use crate::connection::{Connection, ConnectionSettings};
use crate::error::{Error, ErrorKind, Result};
use crate::rt::{Clock, Instant, MaybeSend, MaybeSync, Runtime};
use crate::sdam::TopologyVersion;
use crate::signal::Notify;

/// minHeartbeatFrequencyMS: the shortest time between two checks of one server
/// (spec, "minHeartbeatFrequencyMS"; not configurable).
pub(crate) const MIN_HEARTBEAT_FREQUENCY: Duration = Duration::from_millis(500);

/// Opens monitoring connections and checks servers. Monitoring connections never
/// authenticate (spec, "Monitoring must not use authentication").
#[derive(Clone)]
pub(crate) struct Checker {
    pub runtime: Runtime,
    /// For the server being checked; `auth` is `None`.
    pub settings: ConnectionSettings,
    /// heartbeatFrequencyMS: also the server's maxAwaitTimeMS in streaming checks.
    pub heartbeat_frequency: Duration,
}

/// The outcome of one successful check.
#[derive(Debug)]
pub(crate) struct CheckReply {
    /// The hello reply.
    pub reply: Document,
    /// How long the check took; a round-trip-time sample unless it was awaited.
    pub duration: Duration,
}

/// A monitor's connection, with the driver ids of the connections it opens.
/// Monitoring connections belong to no pool, so the monitor numbers them itself, as a
/// pool does (CMAP, "Monotonically Increasing ID": in order of creation, from 1);
/// heartbeat events and log messages name the connection by this id (SDAM logging,
/// `driverConnectionId`).
#[derive(Debug, Default)]
pub(crate) struct MonitorConnection {
    /// The connection, while it is open.
    pub open: Option<Connection>,
    /// The id of `open`, else of the last connection opened or attempted; 0 before
    /// the first.
    id: u32,
}

/// The ids of a heartbeat's monitoring connection (SDAM logging, "Common Fields").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeartbeatConnection {
    /// The driver's id of the connection.
    pub driver_id: u32,
    /// The server's id of the connection (`connectionId` of its hello reply), once
    /// the handshake told it.
    pub server_id: Option<i64>,
}

impl MonitorConnection {
    /// The ids a heartbeat about to start is published with: the open connection's,
    /// or, when there is none, those of the connection the check is about to open —
    /// the started event comes just before its socket is created (spec, "Events
    /// API"), so the server's id is not known yet (SDAM logging: it "can be omitted
    /// in certain cases, e.g. the first 'heartbeat started' message").
    pub fn start_heartbeat(&mut self) -> HeartbeatConnection {
        if self.open.is_none() {
            self.id += 1;
        }
        self.ids()
    }

    /// The ids of the connection of the heartbeat under way (the one just opened,
    /// after a successful handshake).
    pub fn ids(&self) -> HeartbeatConnection {
        HeartbeatConnection {
            driver_id: self.id,
            server_id: self
                .open
                .as_ref()
                .and_then(|connection| connection.hello().connection_id),
        }
    }
}

impl Checker {
    fn clock(&self) -> &dyn Clock {
        &*self.runtime.clock
    }

    /// After a cancelled check (its connection closed): waits for a requested check
    /// or heartbeatFrequencyMS, and no less than what remains of
    /// minHeartbeatFrequencyMS since the last check `started` (spec, "Requesting an
    /// immediate check").
    async fn wait_after_cancel(&self, signal: &MonitorSignal, started: Instant) {
        let clock = self.clock();
        let earliest = MIN_HEARTBEAT_FREQUENCY.saturating_sub(clock.now() - started);
        signal.wait(clock, self.heartbeat_frequency, earliest).await;
    }

    /// A polled check: the handshake of a new connection when there is none (its
    /// hello reply is the check's), else a `hello` on the existing one. A failure
    /// closes the connection.
    pub async fn poll(&self, connection: &mut Option<Connection>) -> Result<CheckReply> {
        let started = self.clock().now();
        let result = match connection {
            None => {
                let runtime = &self.runtime;
                Connection::establish(&*runtime.transport, &*runtime.clock, &self.settings)
                    .await
                    .map(|opened| {
                        let reply = opened.hello().raw.clone();
                        *connection = Some(opened);
                        reply
                    })
            }
            Some(open) => {
                let command = self.hello_command(open, None)?;
                open.command(command, self.clock()).await
            }
        };
        self.outcome(started, result, connection)
    }

    /// An awaited check of the streaming protocol: the first sends `hello` with the
    /// server's `topologyVersion` and `maxAwaitTimeMS` (flagged exhaustAllowed); while
    /// the server streams (`moreToCome`), the next reply is simply read. The server
    /// answers when its state changes or maxAwaitTimeMS passes, so reads may wait up
    /// to connectTimeoutMS + heartbeatFrequencyMS (spec, "Streaming protocol").
    pub async fn awaited(
        &self,
        connection: &mut Option<Connection>,
        topology_version: TopologyVersion,
    ) -> Result<CheckReply> {
        let started = self.clock().now();
        // connectTimeoutMS=0 means no limit, and then awaited reads have none either.
        let limit = self
            .settings
            .connect_timeout
            .map(|connect_timeout| connect_timeout + self.heartbeat_frequency);
        let Some(open) = connection else {
            return Err(Error::invalid_argument(
                "an awaited check needs a connection",
            ));
        };
        let result = if open.has_more_to_come() {
            open.next_streamed_reply(self.clock(), limit).await
        } else {
            let command = self.hello_command(open, Some(topology_version))?;
            open.stream_command(command, self.clock(), limit).await
        };
        self.outcome(started, result, connection)
    }

    /// A check's reply with its duration; a failed check closes the connection.
    fn outcome(
        &self,
        started: Instant,
        result: Result<Document>,
        connection: &mut Option<Connection>,
    ) -> Result<CheckReply> {
        let duration = self.clock().now() - started;
        if result.is_err() {
            *connection = None;
        }
        result.map(|reply| CheckReply { reply, duration })
    }

    /// `hello` (or legacy `isMaster` for servers that did not say helloOk), with the
    /// streaming fields when `topology_version` is given.
    fn hello_command(
        &self,
        connection: &Connection,
        topology_version: Option<TopologyVersion>,
    ) -> Result<RawDocumentBuf> {
        // A declared API version rules the legacy hello out (Stable API spec,
        // "Handshake behavior").
        let name = if connection.hello().hello_ok || self.settings.server_api.is_some() {
            "hello"
        } else {
            "isMaster"
        };
        let mut command = doc! { name: 1 };
        if let Some(version) = topology_version {
            command.insert("topologyVersion", version.to_document());
            let max_await = i64::try_from(self.heartbeat_frequency.as_millis()).unwrap_or(i64::MAX);
            command.insert("maxAwaitTimeMS", max_await);
        }
        crate::versioned_api::declare(self.settings.server_api.as_ref(), &mut command);
        command.insert("$db", "admin");
        RawDocumentBuf::try_from(&command)
            .map_err(|error| Error::invalid_argument(format!("hello cannot be encoded: {error}")))
    }
}

/// Tells a background monitor to check now, or to stop.
#[derive(Debug, Default)]
pub(crate) struct MonitorSignal {
    closed: AtomicBool,
    check_requested: AtomicBool,
    /// The check in progress must be abandoned and its connection closed.
    cancelled: AtomicBool,
    wake: Notify,
}

impl MonitorSignal {
    /// Asks for a check as soon as minHeartbeatFrequencyMS allows.
    pub fn request_check(&self) {
        self.check_requested.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// Abandons the check in progress and closes the monitoring connection: an
    /// operation's network error marked the server Unknown (spec, "Drivers cancel
    /// in-progress monitor checks"), so a streaming hello may wait maxAwaitTimeMS on a
    /// dead connection. The monitor then waits for a requested check or
    /// heartbeatFrequencyMS.
    pub fn cancel_check(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// Whether a cancel came (and consumes it).
    fn take_cancel(&self) -> bool {
        self.cancelled.swap(false, Ordering::SeqCst)
    }

    /// Resolves once the check in progress is cancelled (the request is consumed).
    async fn check_cancelled(&self) {
        loop {
            let woken = self.wake.listen();
            if self.take_cancel() {
                return;
            }
            woken.await;
        }
    }

    /// Stops the monitor (and its RTT monitor) at its next await.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Resolves once [`MonitorSignal::close`] is called.
    async fn closed(&self) {
        loop {
            let woken = self.wake.listen();
            if self.is_closed() {
                return;
            }
            woken.await;
        }
    }

    /// Runs `work` unless the monitor closes first (`None`): a closing client never
    /// waits for a server that is slow to answer.
    async fn unless_closed<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        let work = std::pin::pin!(work);
        let closed = std::pin::pin!(self.closed());
        match select(work, closed).await {
            Either::Left((output, _)) => Some(output),
            Either::Right(((), _)) => None,
        }
    }

    /// Waits between checks: `interval`, cut short by a check request (but never
    /// before `earliest` has passed since the wait began: callers pass what remains of
    /// minHeartbeatFrequencyMS since the last check started) or by closing.
    async fn wait(&self, clock: &dyn Clock, interval: Duration, earliest: Duration) {
        let began = clock.now();
        let requested = async {
            loop {
                let woken = self.wake.listen();
                if self.check_requested.swap(false, Ordering::SeqCst) {
                    return;
                }
                woken.await;
            }
        };
        let requested = std::pin::pin!(requested);
        let sleep = clock.sleep(interval);
        // Closing ends the wait too: a polling monitor must not hold its socket open
        // until its next heartbeat once the client is closed.
        if let Some(Either::Left(((), _))) = self.unless_closed(select(requested, sleep)).await {
            // Requested early: keep at least minHeartbeatFrequencyMS between checks.
            let rest = earliest.saturating_sub(clock.now() - began);
            if !rest.is_zero() {
                self.unless_closed(clock.sleep(rest)).await;
            }
        }
    }
}

/// What a background monitor reports to: the cluster, which keeps the server's
/// description and pool. Each report returns `None` once the topology is closed or
/// gone, and the monitor then ends.
pub(crate) trait MonitorHost: Clone + MaybeSend + MaybeSync + 'static {
    /// The controls of the monitored server's monitor.
    fn signal(&self) -> &MonitorSignal;

    /// Runs `task` in the background as one of the monitor's (the RTT monitor), so
    /// that closing the client waits for it too.
    fn spawn(&self, task: crate::rt::BoxFuture<'static, ()>);

    /// A round-trip-time sample of the RTT monitor.
    fn add_rtt_sample(&self, sample: Duration);

    /// A check on the monitoring connection `connection` starts; whether the server
    /// is known (its type is not Unknown).
    fn heartbeat_started(&self, connection: HeartbeatConnection, awaited: bool) -> Option<bool>;

    /// The check was cancelled ([`MonitorSignal::cancel_check`]) after `duration`: its
    /// heartbeat fails, and the description stays (the operation's error marked the
    /// server Unknown already).
    fn check_cancelled(
        &self,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()>;

    /// The check succeeded (a polled check's duration is a round-trip-time sample).
    fn check_succeeded(
        &self,
        check: CheckReply,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()>;

    /// The check failed after `duration`.
    fn check_failed(
        &self,
        error: &Error,
        duration: Duration,
        connection: HeartbeatConnection,
        awaited: bool,
    ) -> Option<()>;
}

/// The background monitor of one server (spec, "Monitor thread"): checks it every
/// heartbeatFrequencyMS — or, once the server supports it, streams its state — and
/// reports every outcome to `host`. Ends when the server's signal closes or the
/// topology is gone.
pub(crate) async fn run_monitor(checker: Checker, host: impl MonitorHost, streaming_allowed: bool) {
    let clock = checker.runtime.clock.clone();
    let signal = host.signal();
    let mut connection = MonitorConnection::default();
    let mut streaming_version: Option<TopologyVersion> = None;
    let mut rtt_monitor_started = false;
    // When the last awaited check started: the pacing below keeps awaited checks
    // apart, not the polled check that begins a stream from the awaited one after it.
    let mut last_awaited: Option<Instant> = None;
    while !signal.is_closed() {
        if signal.take_cancel() {
            // Cancelled between checks: no check to abandon, but the connection is
            // presumed dead as well, so the next check opens a new one. (Left set,
            // the cancel would abandon the check a request starts — and the monitor
            // would then wait a whole heartbeatFrequencyMS for the request it used.)
            connection.open = None;
            streaming_version = None;
        }
        let awaited = streaming_version.is_some() && connection.open.is_some();
        let ids = connection.start_heartbeat();
        let Some(known_before) = host.heartbeat_started(ids, awaited) else {
            return;
        };
        let started = clock.now();
        if awaited {
            last_awaited = Some(started);
        }
        let check = async {
            match (awaited, streaming_version) {
                (true, Some(version)) => checker.awaited(&mut connection.open, version).await,
                _ => checker.poll(&mut connection.open).await,
            }
        };
        let outcome = {
            let check = std::pin::pin!(check);
            let cancelled = std::pin::pin!(signal.check_cancelled());
            match signal.unless_closed(select(check, cancelled)).await {
                None => return,
                Some(Either::Left((result, _))) => Some(result),
                Some(Either::Right(((), _))) => None,
            }
        };
        let result = match outcome {
            Some(result) => result,
            None => {
                if host
                    .check_cancelled(clock.now() - started, ids, awaited)
                    .is_none()
                {
                    return;
                }
                connection.open = None;
                streaming_version = None;
                checker.wait_after_cancel(signal, started).await;
                continue;
            }
        };
        let network_error = matches!(&result, Err(error) if is_network_error(error));
        let reported = match result {
            Ok(check) => {
                let version = TopologyVersion::from_reply(&check.reply);
                host.check_succeeded(check, connection.ids(), awaited)
                    .map(|()| version)
            }
            Err(error) => host
                .check_failed(&error, clock.now() - started, ids, awaited)
                .map(|()| None),
        };
        let Some(version) = reported else {
            return;
        };
        streaming_version = version.filter(|_| streaming_allowed && connection.open.is_some());
        if streaming_version.is_some() {
            if !rtt_monitor_started {
                // While streaming, awaited replies say nothing about latency: a second
                // connection measures it (spec, "Measuring RTT").
                rtt_monitor_started = true;
                host.spawn(crate::rt::boxed(run_rtt_monitor(
                    checker.clone(),
                    host.clone(),
                )));
            }
            // The next awaited hello goes out at once: the server paces the stream
            // (spec, "Heartbeat frequency": after an ok:1 reply the client "MUST NOT
            // sleep and MUST begin the next check immediately"). One that answers at
            // once anyway (it ignores maxAwaitTimeMS), or a stream that keeps failing
            // and being reopened, would make this a busy loop, so awaited checks stay
            // minHeartbeatFrequencyMS apart. The polled check that begins a stream
            // (the handshake) is not held back: its awaited hello goes out at once,
            // so the first streamed reply, which carries the RTT monitor's first
            // samples into the description, comes one heartbeatFrequencyMS after the
            // handshake, not up to minHeartbeatFrequencyMS later.
            // An operation's network error may cancel the stream meanwhile: the
            // connection goes then, and the next check is a new one as soon as the
            // pacing allows, not a pacing later.
            let since_awaited = last_awaited.map(|awaited_at| clock.now() - awaited_at);
            if let Some(since_start) =
                since_awaited.filter(|&since| since < MIN_HEARTBEAT_FREQUENCY)
            {
                let pacing = std::pin::pin!(clock.sleep(MIN_HEARTBEAT_FREQUENCY - since_start));
                let cancelled = std::pin::pin!(signal.check_cancelled());
                match signal.unless_closed(select(pacing, cancelled)).await {
                    None => return,
                    Some(Either::Left(_)) => {}
                    Some(Either::Right(_)) => {
                        connection.open = None;
                        streaming_version = None;
                        checker.wait_after_cancel(signal, started).await;
                    }
                }
            }
            continue;
        }
        if network_error && known_before {
            // A server that was known and just failed is checked again at once
            // (spec, "Network or command error during server check").
            continue;
        }
        let since_start = clock.now() - started;
        let earliest = MIN_HEARTBEAT_FREQUENCY.saturating_sub(since_start);
        let interval = checker.heartbeat_frequency.saturating_sub(since_start);
        signal.wait(&*clock, interval, earliest).await;
    }
}

/// Measures round-trip time on its own connection every heartbeatFrequencyMS while
/// the main monitor streams. Its failures change nothing but its connection (spec,
/// "RTT monitor").
async fn run_rtt_monitor(checker: Checker, host: impl MonitorHost) {
    let clock = checker.runtime.clock.clone();
    let signal = host.signal();
    let mut connection = None;
    while !signal.is_closed() {
        let Some(result) = signal.unless_closed(checker.poll(&mut connection)).await else {
            return;
        };
        if let Ok(check) = result {
            host.add_rtt_sample(check.duration);
        }
        signal
            .unless_closed(clock.sleep(checker.heartbeat_frequency))
            .await;
    }
}

/// Network errors and timeouts (as opposed to command errors).
fn is_network_error(error: &Error) -> bool {
    error.is_network_error() || matches!(&*error.kind, ErrorKind::InvalidResponse { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_connection_attempt_takes_the_next_driver_id() {
        let mut slot = MonitorConnection::default();
        let first = slot.start_heartbeat();
        assert_eq!(
            first,
            HeartbeatConnection {
                driver_id: 1,
                server_id: None
            }
        );
        // The attempt failed (no connection open): the next one is a new connection.
        assert_eq!(slot.ids(), first);
        assert_eq!(slot.start_heartbeat().driver_id, 2);
        assert_eq!(slot.ids().driver_id, 2);
    }
}
