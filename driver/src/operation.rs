//! Running an operation: server selection, a pooled connection, the session and
//! cluster time, the command itself with its monitoring events, SDAM error handling,
//! and one retry when the Retryable Reads or Writes spec allows it.
//!
//! The [`Executor`] runs the operations of one client and holds what they share (the
//! public `Client` is a handle to one). Each operation (an insert, a find, a
//! getMore...) is an [`Operation`]: it builds its command for the connection it is
//! given and turns the reply into its result. Everything the specs add to every
//! command — `lsid`, `txnNumber`, `$clusterTime`, `readConcern.afterClusterTime`,
//! `$db`, `$readPreference` — is added here, once. Every command goes out through
//! [`Executor::run_on`], with the [`OperationContext`] of its operation.

use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::{rawdoc, Bson, Document, RawDocumentBuf};
use futures::future::{self, Either};
use tracing::{Instrument, Span};

use crate::cluster::PinnedConnection;
use crate::cluster::{Cluster, ConnectionInfo, PooledConnection, SelectedServer, Server, Shared};
use crate::cmap::PinnedTo;
use crate::command_monitoring::{is_sensitive, CommandInfo, CommandMonitor, InFlight};
use crate::concern::WriteConcern;
use crate::connection::check_reply;
use crate::error::{Error, Result, SYSTEM_OVERLOADED_ERROR};
use crate::handshake::HelloReply;
use crate::open_telemetry::{self, ConnectionAttributes, Traced, Tracer};
use crate::retry::{self, Retryability};
use crate::rt::{Clock, Instant, Runtime};
use crate::sdam::topology::ErrorPhase;
use crate::sdam::{ServerType, TopologyDescription, TopologyType};
use crate::selection::{Criteria, ReadPreference, SelectionCriteria};
use crate::session::{
    ClientSession, LatestClusterTime, PendingAbort, Pin, ServerSession, ServerSessionPool,
};
use crate::signal::{lock, TaskGuard, TaskTracker};
use crate::srv::SeedList;
use crate::transactions::state::pins_mongos;
use crate::uri::{ClientOptions, ServerAddress};
use crate::wire::{next_request_id, DocumentSequence, MsgFlags, OpMsg};

/// Runs the operations of one client, and holds what they share: the options, the
/// runtime, the live topology, the command monitor, the server session pool, the
/// gossiped cluster time, and the follow-up commands (cursor kills, transaction
/// aborts) left for the next operation. Operations, cursors, sessions and
/// transactions hold an `Arc` of it; the public `Client` is a handle to one.
pub(crate) struct Executor {
    options: ClientOptions,
    runtime: Runtime,
    /// Dropped with the last handle to the executor: monitors stop, pools close.
    topology: Cluster,
    commands: CommandMonitor,
    /// The client's OpenTelemetry spans.
    tracer: Tracer,
    /// Server sessions for reuse (Driver Sessions spec, "Server Session Pool").
    sessions: ServerSessionPool,
    /// The highest `$clusterTime` a server reported.
    cluster_time: LatestClusterTime,
    /// Cursors dropped unexhausted with no runtime to kill them at once: killed ahead
    /// of the next command to their server (pinned ones before the next operation).
    pending_kills: Mutex<Vec<PendingKill>>,
    /// Transactions of ended sessions to abort, with no runtime to do it then.
    pending_aborts: Mutex<Vec<PendingAbort>>,
    /// The application's handles to server-side state that a shutdown waits for
    /// (explicit sessions, open cursors, GridFS upload streams), as the official
    /// crate's `Client::shutdown` does.
    live_handles: Arc<TaskTracker>,
}

/// One operation as it runs, from server selection to its last reply: created once
/// per operation by the executor and passed to every step of it — server selection,
/// connection check-out, each round trip of its commands (a retry's too). A
/// follow-up command that is an operation of its own (a cursor's getMore or
/// killCursors, endSessions on close) gets a context of its own; a transaction
/// aborted as its session ends runs through [`Executor::execute`] like any operation.
///
/// It is the one place where how long an operation may take is decided. Without
/// `timeoutMS` each step keeps the bound its own spec gives it: serverSelectionTimeoutMS
/// for server selection and the check-out after it (waitQueueTimeoutMS if shorter),
/// socketTimeoutMS for each reply. With `timeoutMS` (Client Side Operations Timeout
/// spec) one deadline bounds them all: selection and check-out get
/// `min(serverSelectionTimeoutMS, what is left)`, waitQueueTimeoutMS and
/// socketTimeoutMS are ignored, each read ends at the deadline, each command carries
/// `maxTimeMS` = what is left minus the server's minimum round trip, and retries go
/// on while time is left.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperationContext {
    /// The operation's id: command monitoring's `operationId` of each of its commands
    /// (a retry's, a resend after reauthentication), and the `operationId` of server
    /// selection's log messages.
    pub id: i32,
    /// The `timeoutMS` the operation runs with; `Some` turns the Client Side
    /// Operations Timeout spec's behaviour on (`Some(ZERO)`: with no limit).
    pub timeout: Option<Duration>,
    /// When the whole operation must have ended: `timeoutMS` after it started.
    pub deadline: Option<Instant>,
    /// Whether its commands carry a `maxTimeMS` derived from the deadline: not a
    /// cursor's getMore, nor the first command of a cursor whose timeout applies to
    /// each iteration (spec, "Cursors").
    pub max_time: bool,
}

impl OperationContext {
    /// The context of a new operation, with an id of its own and no timeoutMS.
    pub fn new() -> OperationContext {
        OperationContext {
            id: next_request_id(),
            timeout: None,
            deadline: None,
            max_time: true,
        }
    }

    /// The context of a new operation that starts at `now` with `timeout` (timeoutMS;
    /// `None`: not set).
    pub fn with_timeout(timeout: Option<Duration>, now: Instant) -> OperationContext {
        OperationContext {
            timeout,
            deadline: timeout
                .filter(|limit| !limit.is_zero())
                .map(|limit| now + limit),
            ..OperationContext::new()
        }
    }

    /// Whether timeoutMS is set (to any value, 0 included).
    pub fn is_timed(&self) -> bool {
        self.timeout.is_some()
    }

    /// How long is left at `now` before the deadline, if there is one.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_duration_since(now))
    }

    /// Whether the deadline has passed at `now`.
    pub fn has_expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }

    /// The timeout error of this operation, noticed `during` a step whose error, if
    /// any, is the `cause`.
    pub fn timeout_error(&self, during: &'static str, cause: Option<Error>) -> Error {
        Error::operation_timeout(self.timeout.unwrap_or_default(), during, cause)
    }

    /// How long server selection may take from `now`: serverSelectionTimeoutMS, within
    /// the deadline (spec, "Server Selection": `computedServerSelectionTimeout`).
    pub fn selection_timeout(&self, options: &ClientOptions, now: Instant) -> Duration {
        let bound = options.server_selection_timeout_or_default();
        self.within(Some(bound), now).unwrap_or(bound)
    }

    /// The waitQueueTimeoutMS a check-out honours: none with timeoutMS, which replaces
    /// it (spec, "Validation and Overrides").
    pub fn wait_queue_timeout(&self, options: &ClientOptions) -> Option<Duration> {
        options.wait_queue_timeout.filter(|_| !self.is_timed())
    }

    /// How long a check-out on a known server (no selection before it) may wait at
    /// `now`: the shorter of waitQueueTimeoutMS and serverSelectionTimeoutMS, within
    /// the deadline.
    pub fn check_out_timeout(&self, options: &ClientOptions, now: Instant) -> Duration {
        let bound = match self.wait_queue_timeout(options) {
            Some(wait) => wait.min(options.server_selection_timeout_or_default()),
            None => options.server_selection_timeout_or_default(),
        };
        self.within(Some(bound), now).unwrap_or(bound)
    }

    /// How long a reply sent at `now` on a connection opened with `socket_timeout`
    /// (socketTimeoutMS; `None`: no bound) may take to come: with timeoutMS, what is
    /// left before the deadline (socketTimeoutMS is ignored).
    pub fn read_limit(&self, socket_timeout: Option<Duration>, now: Instant) -> Option<Duration> {
        match self.is_timed() {
            true => self.remaining(now),
            false => socket_timeout,
        }
    }

    /// The `maxTimeMS` a command sent at `now` to a server whose minimum round trip
    /// is `min_rtt` carries (spec, "Command Execution"): what is left minus that
    /// round trip; `None` without a deadline. When no more than the round trip is
    /// left, the command is not sent: the timeout error.
    pub fn max_time_ms(&self, now: Instant, min_rtt: Duration) -> Result<Option<i64>> {
        let Some(left) = self.remaining(now) else {
            return Ok(None);
        };
        if left <= min_rtt {
            return Err(self.timeout_error("command construction", None));
        }
        let millis = (left - min_rtt).as_millis().max(1);
        Ok(Some(i64::try_from(millis).unwrap_or(i64::MAX)))
    }

    /// `error` as the operation reports it: with timeoutMS, a server's
    /// MaxTimeMSExpired (code 50, at the top, in a write error or a write concern
    /// error), a socket timeout, and a selection, check-out or network failure once the
    /// deadline passed become the timeout error, with `error` as the cause (spec,
    /// "Error Transformations").
    pub fn report(&self, error: Error, now: Instant) -> Error {
        if !self.is_timed() || error.is_operation_timeout() {
            return error;
        }
        let error = transform_max_time_expired(self.timeout, error);
        if error.is_operation_timeout() {
            return error;
        }
        // A failure the deadline caused (a read it ended, a selection or check-out it
        // cut short, a connection lost with it): not a server's answer that merely
        // came late, which stays as it is.
        use crate::error::ErrorKind;
        let cut = match &*error.kind {
            _ if error.is_network_timeout() => true,
            ErrorKind::ServerSelection { .. }
            | ErrorKind::WaitQueueTimeout { .. }
            | ErrorKind::ConnectionPoolCleared { .. } => self.has_expired(now),
            ErrorKind::Io(_) => error.is_network_error() && self.has_expired(now),
            _ => false,
        };
        match cut {
            true => self.timeout_error("the operation", Some(error)),
            false => error,
        }
    }

    /// A step's own `bound` (`None`: none), cut to what is left at `now` before the
    /// deadline, if there is one.
    fn within(&self, bound: Option<Duration>, now: Instant) -> Option<Duration> {
        let Some(left) = self.remaining(now) else {
            return bound;
        };
        Some(bound.map_or(left, |bound| bound.min(left)))
    }
}

/// The server's MaxTimeMSExpired error code.
const MAX_TIME_MS_EXPIRED: i32 = 50;

/// Whether `error` is the server's MaxTimeMSExpired: at the top, in a write error or
/// in a write concern error.
fn is_max_time_expired(error: &Error) -> bool {
    error.code() == Some(MAX_TIME_MS_EXPIRED)
        || matches!(
            &*error.kind,
            crate::error::ErrorKind::CollectionBulkWrite(failure)
                if failure.write_concern_error.as_ref().is_some_and(|concern| concern.code == MAX_TIME_MS_EXPIRED)
        )
}

/// `error` of an operation that ran with `timeout` (timeoutMS) and turned its reply
/// into an error after the executor returned: with timeoutMS, a MaxTimeMSExpired is
/// the timeout error.
pub(crate) fn transform_max_time_expired(timeout: Option<Duration>, error: Error) -> Error {
    match timeout {
        Some(timeout) if is_max_time_expired(&error) => {
            Error::operation_timeout(timeout, "server execution", Some(error))
        }
        _ => error,
    }
}

/// When an operation must end, as the handle it runs on says: its `timeoutMS`, and
/// the deadline it shares with the other operations of one call (a GridFS
/// download's find and getMores), if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    /// timeoutMS (`None`: not set).
    pub timeout: Option<Duration>,
    /// A deadline set before the operation started, which it keeps.
    pub deadline: Option<Instant>,
}

impl From<Option<Duration>> for Timing {
    fn from(timeout: Option<Duration>) -> Timing {
        Timing {
            timeout,
            deadline: None,
        }
    }
}

/// A cursor to kill: dropped before its end with no runtime to kill it then; the
/// executor keeps it for its next operation. (It holds no executor: the executor keeps
/// the pending kills, and must not keep itself alive.)
pub(crate) struct PendingKill {
    pub server: Arc<Server>,
    pub database: String,
    pub collection: String,
    pub id: i64,
    /// The connection the cursor is pinned to: the kill goes there, and the
    /// connection back to the pool after it, whatever the result.
    pub pinned: Option<PinnedConnection>,
    /// The cursor's timeoutMS, which the kill gets afresh.
    pub timeout: Option<Duration>,
}

impl PendingKill {
    /// Its `killCursors` command (Find, getMore and killCursors Commands spec,
    /// "killCursors").
    pub fn command(&self) -> Command {
        let body = bson::doc! {
            "killCursors": self.collection.as_str(),
            "cursors": [self.id],
        };
        Command::new(self.database.as_str(), body)
    }
}

/// A command as an operation builds it; the executor adds the fields every command
/// carries.
#[derive(Debug, Clone)]
pub(crate) struct Command {
    /// The database it runs against (`$db`).
    pub database: String,
    /// The body, its first key naming the command.
    pub body: Document,
    /// Arguments sent as OP_MSG document sequences (the `documents` of an insert...).
    pub sequences: Vec<DocumentSequence>,
}

impl Command {
    /// A command without document sequences.
    pub fn new(database: impl Into<String>, body: Document) -> Command {
        Command {
            database: database.into(),
            body,
            sequences: Vec::new(),
        }
    }

    /// The command's name: its first key.
    pub fn name(&self) -> &str {
        self.body.keys().next().map_or("", String::as_str)
    }
}

/// Whether an operation reads or writes (Client Backpressure spec: which of
/// retryReads and retryWrites allows its retries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A command the driver does not know (run_command): it may do either.
    Either,
}

/// Which servers an operation may run on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// A read with these selection criteria.
    Read(&'a SelectionCriteria),
    /// A write: a primary, mongos, load balancer or standalone.
    Write,
    /// An aggregate with a write stage (`$out`, `$merge`) and a read preference other
    /// than primary: 5.0+ secondaries can run it ([`Target::resolve`]).
    WriteStage(&'a SelectionCriteria),
}

impl<'a> Target<'a> {
    /// Where the operation goes in `topology` now: a [`Target::WriteStage`] is a read
    /// with its read preference unless an available server is older than 5.0 (wire
    /// version 13), when it is a write (CRUD spec, "Aggregation pipelines with write
    /// stages"; a load balancer is taken to front 5.0+ servers). `topology` is only
    /// asked for then.
    fn resolve(self, topology: impl FnOnce() -> TopologyDescription) -> Target<'a> {
        match self {
            Target::WriteStage(preference) => {
                let topology = topology();
                let pre_5_0 = topology.topology_type != TopologyType::LoadBalanced
                    && topology.servers.values().any(|server| {
                        server.is_available() && server.max_wire_version < WIRE_VERSION_5_0
                    });
                let primary = matches!(
                    preference,
                    SelectionCriteria::ReadPreference(ReadPreference::Primary)
                );
                match pre_5_0 || primary {
                    true => Target::Write,
                    false => Target::Read(preference),
                }
            }
            resolved => resolved,
        }
    }

    fn criteria(&self) -> Criteria<'_> {
        match self {
            Target::Read(criteria) => criteria.for_read(),
            Target::Write | Target::WriteStage(_) => Criteria::Write,
        }
    }
}

/// The wire version of MongoDB 5.0, whose secondaries run `$out` and `$merge`.
const WIRE_VERSION_5_0: i32 = 13;

/// What an operation learns of where its command ran, to build its result (a cursor
/// keeps the server and the session for its getMores).
pub(crate) struct ReplyContext<'a> {
    pub executor: &'a Arc<Executor>,
    /// The operation the command belongs to (a cursor's timeoutMS comes from it).
    pub operation: &'a OperationContext,
    pub server: &'a Arc<Server>,
    /// The session the command ran in, if the server supports sessions.
    pub session: Option<&'a ClientSession>,
    /// Load-balanced mode: the pin the connection goes to if anything keeps it (a
    /// cursor its reply opens clones it; the executor places the connection there).
    pub pinned: Option<&'a PinnedConnection>,
}

/// Where and how one attempt of an operation runs, on a connection already checked
/// out ([`Executor::run_on`]).
pub(crate) struct Attempt<'a> {
    /// The server the connection belongs to.
    pub server: &'a Arc<Server>,
    /// The `$readPreference` to send, if any.
    pub read_preference: Option<Document>,
    /// The session, if the server supports sessions.
    pub session: Option<&'a ClientSession>,
    /// How the attempt treats the transaction number.
    pub txn_number: TxnNumber,
    /// Load-balanced mode: where the connection goes if a cursor keeps it.
    pub pinned: Option<&'a PinnedConnection>,
    /// The server's minimum round trip time when it was selected: what the
    /// `maxTimeMS` derived from timeoutMS leaves for the network.
    pub min_rtt: Duration,
}

/// One operation of the user API.
pub(crate) trait Operation {
    /// What it returns.
    type Output;

    /// The name of its command (before it is built), for server selection's log
    /// messages.
    fn name(&self) -> &str;

    /// Where it may run.
    fn target(&self) -> Target<'_>;

    /// What its OpenTelemetry span names: the operation, its database and collection
    /// (OpenTelemetry spec, "Operation Span Name").
    fn traced(&self) -> Traced<'_>;

    /// Its command for a connection whose handshake said `hello` (message size limits,
    /// wire version). Called again for a retry: an operation that splits its input
    /// into batches must build the same batch again.
    fn build(&mut self, hello: &HelloReply) -> Result<Command>;

    /// Its result from an `ok: 1` reply, as the server sent it: an operation that hands
    /// out documents deserializes them from these bytes, and the others read the
    /// fields they need ([`reply_document`](crate::connection::reply_document)).
    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output>;

    /// The failure a successful result still reports to the application (a write's
    /// write error or write concern error, which the caller turns into its error), for
    /// the operation's span: the operation failed (OpenTelemetry spec, "Exception
    /// Handling") although its command succeeded.
    fn reported_failure(_output: &Self::Output) -> Option<Error>
    where
        Self: Sized,
    {
        None
    }

    /// How it may be retried. Asked before the first build and again after each: an
    /// operation that splits its input into batches may know only once it has built
    /// one whether that batch can be retried (a client bulk write's batch with a
    /// multi-document write cannot: Retryable Writes spec, "Unsupported Write
    /// Operations").
    fn retryability(&self) -> Retryability {
        Retryability::None
    }

    /// Whether its result needs the server's reply even when its write concern is
    /// unacknowledged (an aggregate's cursor, `run_command`'s reply). Otherwise an
    /// unacknowledged run is sent with `moreToCome` and no reply is awaited (OP_MSG
    /// spec, "moreToCome On Requests": "Clients doing unacknowledged writes MUST set
    /// the moreToCome flag"); `handle_reply` gets `{ ok: 1 }`.
    fn needs_reply(&self) -> bool {
        false
    }

    /// Its write concern, for a write: an unacknowledged write sends no session id
    /// (Sessions spec, "When using unacknowledged writes").
    fn write_concern(&self) -> Option<&WriteConcern> {
        None
    }

    /// Whether the command takes a `readConcern`, to which a causally consistent
    /// session adds `afterClusterTime` (Causal Consistency spec).
    fn supports_read_concern(&self) -> bool {
        false
    }

    /// Whether its read preference was given for it alone rather than inherited: in a
    /// transaction such a read preference is kept (and must be primary), where an
    /// inherited one gives way to the transaction's (Transactions spec,
    /// "readPreference").
    fn read_preference_given(&self) -> bool {
        false
    }

    /// Whether its command carries the `maxTimeMS` timeoutMS leaves (Client Side
    /// Operations Timeout spec, "Cursors"): not the command of a tailable cursor that
    /// does not await data, nor of a cursor whose timeoutMS applies to each iteration.
    fn sends_max_time(&self) -> bool {
        true
    }

    /// Whether its command reads or writes, for the retry of an overload error
    /// (Client Backpressure spec, "Overload retry policy"): by default as its target
    /// says.
    fn access(&self) -> Access {
        match self.target() {
            Target::Read(_) => Access::Read,
            Target::Write | Target::WriteStage(_) => Access::Write,
        }
    }

    /// Takes back the document sequences of the command it built, once the attempt is
    /// over, sent or not: an operation that moved its documents into the command
    /// rather than copying them has them again for a retry's build.
    fn reclaim(&mut self, _sequences: Vec<DocumentSequence>) {}

    /// Learns that an attempt failed with `error`, before any retry is built (a
    /// commitTransaction retried after an error other than an overload is sent with
    /// `w: majority`).
    fn attempt_failed(&mut self, _error: &Error) {}

    /// Whether it is commitTransaction or abortTransaction, which end a transaction:
    /// retried whatever `retryWrites` says, and sent with the transaction's fields and
    /// its write concern (Transactions spec, "Interaction with Retryable Writes").
    fn ends_transaction(&self) -> bool {
        false
    }
}

/// An operation borrowed: a caller that needs the operation after it ran (an insert
/// batch reports how many documents it sent) lends it to the executor.
impl<O: Operation> Operation for &mut O {
    type Output = O::Output;

    fn name(&self) -> &str {
        (**self).name()
    }

    fn target(&self) -> Target<'_> {
        (**self).target()
    }

    fn traced(&self) -> Traced<'_> {
        (**self).traced()
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        (**self).build(hello)
    }

    fn reclaim(&mut self, sequences: Vec<DocumentSequence>) {
        (**self).reclaim(sequences)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output> {
        (**self).handle_reply(reply, context)
    }

    fn retryability(&self) -> Retryability {
        (**self).retryability()
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        (**self).write_concern()
    }

    fn needs_reply(&self) -> bool {
        (**self).needs_reply()
    }

    fn supports_read_concern(&self) -> bool {
        (**self).supports_read_concern()
    }

    fn read_preference_given(&self) -> bool {
        (**self).read_preference_given()
    }

    fn ends_transaction(&self) -> bool {
        (**self).ends_transaction()
    }

    fn access(&self) -> Access {
        (**self).access()
    }

    fn sends_max_time(&self) -> bool {
        (**self).sends_max_time()
    }

    fn attempt_failed(&mut self, error: &Error) {
        (**self).attempt_failed(error)
    }
}

/// Whether a server supports retryable writes (Retryable Writes spec, "Supported
/// Server Versions"): it reports a session timeout and is not a standalone.
fn supports_retryable_writes(hello: &HelloReply, server_type: ServerType) -> bool {
    (hello.logical_session_timeout_minutes.is_some() || server_type == ServerType::LoadBalancer)
        && server_type != ServerType::Standalone
}

/// How one attempt treats the transaction number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnNumber {
    /// Not a retryable write: none is sent.
    None,
    /// A retryable write's first attempt: the session's next number.
    Next,
    /// A retry: the number of the first attempt again.
    Same,
}

impl Executor {
    /// An executor over an opened `topology`, its commands reported to `commands`.
    pub fn new(
        options: ClientOptions,
        runtime: Runtime,
        topology: Cluster,
        commands: CommandMonitor,
    ) -> Executor {
        Executor {
            tracer: Tracer::new(options.tracing.as_ref()),
            options,
            runtime,
            topology,
            commands,
            sessions: ServerSessionPool::default(),
            cluster_time: LatestClusterTime::default(),
            pending_kills: Mutex::new(Vec::new()),
            pending_aborts: Mutex::new(Vec::new()),
            live_handles: Arc::default(),
        }
    }

    /// Counts a handle to server-side state until the guard is dropped: a shutdown
    /// that is not immediate waits for it ([`Executor::live_handles_dropped`]).
    pub fn live_handle(&self) -> TaskGuard {
        self.live_handles.track()
    }

    /// Resolves once every guard of [`Executor::live_handle`] is dropped.
    pub async fn live_handles_dropped(&self) {
        self.live_handles.all_ended().await
    }

    /// The options of the client.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The live topology.
    pub fn topology(&self) -> &Arc<Shared> {
        self.topology.shared()
    }

    /// What the client currently knows about the deployment.
    pub fn topology_description(&self) -> TopologyDescription {
        self.topology().description()
    }

    /// Polls the SRV records of `seeds` while the deployment is sharded (Polling SRV
    /// Records for mongos Discovery spec).
    pub fn poll_srv(&self, seeds: SeedList) {
        self.topology.poll_srv(seeds);
    }

    /// The runtime the client was built with.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The runtime's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.runtime.clock
    }

    /// The time now, on the runtime's clock.
    pub fn now(&self) -> Instant {
        self.runtime.clock.now()
    }

    /// Where the commands' monitoring events go.
    pub fn command_monitor(&self) -> &CommandMonitor {
        &self.commands
    }

    /// The client's OpenTelemetry spans.
    pub fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// The span of `operation` (OpenTelemetry spec, "Instrumenting Driver
    /// Operations"): in the span of the transaction of `session` when it runs in one.
    pub fn operation_span<O: Operation>(
        &self,
        operation: &O,
        session: Option<&ClientSession>,
    ) -> Span {
        if !self.tracer.is_enabled() {
            return Span::none();
        }
        let transaction = session.and_then(ClientSession::transaction_span);
        self.tracer
            .operation(&operation.traced(), transaction.as_ref())
    }

    /// The highest cluster time a server reported.
    pub fn cluster_time(&self) -> Option<Document> {
        self.cluster_time.get()
    }

    /// Records a cluster time a server reported, if it is the highest yet.
    pub fn advance_cluster_time(&self, cluster_time: &Document) {
        self.cluster_time.advance(cluster_time);
    }

    /// The deployment's `logicalSessionTimeoutMinutes` and whether it is load balanced:
    /// what the session pool needs to know of the topology.
    fn session_timeout(&self) -> (Option<i64>, bool) {
        self.topology().with_description(|description| {
            let load_balanced = description.topology_type == TopologyType::LoadBalanced;
            (description.logical_session_timeout_minutes, load_balanced)
        })
    }

    /// A server session from the pool, or a new one.
    pub fn acquire_server_session(&self, now: Instant) -> Result<ServerSession> {
        let (timeout, load_balanced) = self.session_timeout();
        self.sessions.acquire(now, timeout, load_balanced)
    }

    /// Gives a server session back to the pool.
    pub fn release_server_session(&self, session: ServerSession) {
        let (timeout, _) = self.session_timeout();
        self.sessions.release(session, self.now(), timeout);
    }

    /// The kills of cursors dropped without a runtime to send them.
    pub fn pending_kills(&self) -> &Mutex<Vec<PendingKill>> {
        &self.pending_kills
    }

    /// Aborts the transaction of a session that ended while it was in progress: in a
    /// task of its own when the runtime can spawn one, else before the next operation
    /// ([`Executor::send_pending_aborts`]).
    pub fn abort_later(self: &Arc<Self>, pending: PendingAbort) {
        match self.runtime().spawner.clone() {
            Some(spawner) => spawner.spawn(pending.end(self)),
            None => lock(&self.pending_aborts).push(pending),
        }
    }

    /// Runs the aborts [`Executor::abort_later`] could not run then.
    async fn send_pending_aborts(self: &Arc<Self>) {
        let pending = std::mem::take(&mut *lock(&self.pending_aborts));
        for abort in pending {
            abort.end(self).await;
        }
    }

    /// Ends the server sessions of the pool (Driver Sessions spec, "EndSessions"):
    /// `endSessions` for their ids, in batches of at most 10,000, on one connection to
    /// a server selected with read preference primaryPreferred, without a session of
    /// its own.
    pub async fn end_sessions(self: &Arc<Self>) -> Result<()> {
        const END_SESSIONS_BATCH: usize = 10_000;
        let ids = self.sessions.drain();
        if ids.is_empty() {
            return Ok(());
        }
        // The client's timeoutMS bounds it, as any operation of the client.
        let context = OperationContext::with_timeout(self.options.timeout, self.now());
        let preference = ReadPreference::PrimaryPreferred { options: None };
        let criteria = Criteria::Read(&preference);
        let selected = self
            .select_server(&context, &criteria, &[], "endSessions")
            .await?;
        let mut pooled = self.check_out(&context, &selected).await?;
        let mut outcome = Ok(());
        for batch in ids.chunks(END_SESSIONS_BATCH) {
            let attempt = Attempt {
                server: &selected.server,
                read_preference: None,
                session: None,
                txn_number: TxnNumber::None,
                pinned: None,
                min_rtt: selected.min_round_trip_time,
            };
            let mut operation = EndSessions { ids: batch };
            outcome = self
                .run_on(&context, &mut operation, &mut pooled, attempt)
                .await;
            if outcome.is_err() {
                break;
            }
        }
        selected.server.check_in(pooled);
        outcome
    }

    /// Fills the pools to minPoolSize (`Client::warm_connection_pool`), once a
    /// server was found (a check marks its pool ready), within the client's timeoutMS.
    pub async fn warm_pools(&self) {
        if self.options.min_pool_size_or_default() == 0 {
            return;
        }
        let context = OperationContext::with_timeout(self.options.timeout, self.now());
        let criteria = Criteria::Read(&ReadPreference::Nearest { options: None });
        // No server found: nothing to fill, and the next operation reports why.
        if self
            .select_server(&context, &criteria, &[], "warmConnectionPool")
            .await
            .is_ok()
        {
            self.topology().populate_pools().await;
        }
    }

    /// The handshake reply of a connection to a server selected for a primary read
    /// (connecting, and authenticating, first if no connection is idle), within
    /// `timeout` (timeoutMS) when given.
    pub async fn hello(&self, timeout: Option<Duration>) -> Result<HelloReply> {
        let context = OperationContext::with_timeout(timeout, self.now());
        let criteria = Criteria::Read(&ReadPreference::Primary);
        let selected = self
            .select_server(&context, &criteria, &[], "hello")
            .await?;
        let pooled = self.check_out(&context, &selected).await?;
        let hello = pooled.hello().clone();
        selected.server.check_in(pooled);
        Ok(hello)
    }

    /// Server selection for the operation of `context` (server-selection.md), away from
    /// the `deprioritized` servers if it can; `operation` (the command name) goes into
    /// its log messages.
    pub async fn select_server(
        &self,
        context: &OperationContext,
        criteria: &Criteria<'_>,
        deprioritized: &[crate::uri::ServerAddress],
        operation: &str,
    ) -> Result<SelectedServer> {
        let timeout = context.selection_timeout(self.options(), self.now());
        let selection =
            self.topology()
                .select_server(criteria, deprioritized, operation, context.id, timeout);
        Box::pin(self.within_deadline(context, "server selection", selection)).await
    }

    /// A step of the operation of `context` that may block (server selection, with
    /// the scans of single-threaded mode; a check-out, with the establishment of a
    /// new connection: its TCP, TLS, handshake and authentication), cut at the
    /// deadline, if there is one (Client Side Operations Timeout spec, "Blocking
    /// Sections for Operation Execution"); what it was doing is dropped. Round trips
    /// need no cut: each read ends at the deadline on its own
    /// ([`OperationContext::read_limit`]), so that what follows a reply, or its
    /// absence, is still recorded (a transaction started, a session made dirty).
    ///
    /// Not an `async fn`, which would hold `step` once as its argument and again in
    /// each branch (about 3x the step's size); this future is the step's, or the step's
    /// with a timer.
    fn within_deadline<'a, T>(
        &self,
        context: &'a OperationContext,
        during: &'static str,
        step: impl std::future::Future<Output = Result<T>> + 'a,
    ) -> impl std::future::Future<Output = Result<T>> + 'a {
        use futures::future::{Either, FutureExt};
        match context.remaining(self.now()) {
            None => Either::Left(step),
            Some(left) => Either::Right(crate::rt::timeout(self.clock(), left, step).map(
                move |result| match result {
                    Ok(result) => result,
                    Err(crate::rt::Elapsed) => Err(context.timeout_error(during, None)),
                },
            )),
        }
    }

    /// A connection to the `selected` server, for the operation of `context`: within
    /// what is left of the selection's timeout (see [`OperationContext`]).
    pub async fn check_out(
        &self,
        context: &OperationContext,
        selected: &SelectedServer,
    ) -> Result<PooledConnection> {
        let wait_queue_timeout = context.wait_queue_timeout(self.options());
        let check_out = self.topology().check_out(selected, wait_queue_timeout);
        Box::pin(self.within_deadline(context, "connection check-out", check_out)).await
    }

    /// A connection to `server`, known without a selection (a cursor's), for the
    /// operation of `context`.
    pub async fn check_out_from(
        &self,
        context: &OperationContext,
        server: &Server,
    ) -> Result<PooledConnection> {
        let timeout = context.check_out_timeout(&self.options, self.now());
        let check_out = server.pool.check_out(Some(timeout));
        Box::pin(self.within_deadline(context, "connection check-out", check_out)).await
    }

    /// Runs `operation` in `session` (an implicit one when `None`), within `timing`
    /// (its timeoutMS, or a deadline it shares) or the deadline of the session's
    /// `with_transaction`, retrying it when its retryability and the error allow
    /// ([`Executor::execute_in`]). In a transaction, reads go where its read
    /// preference says (primary only), and network and server selection errors get
    /// the TransientTransactionError label (Transactions spec).
    pub async fn execute<O: Operation>(
        self: &Arc<Self>,
        operation: O,
        session: Option<&ClientSession>,
        timing: impl Into<Timing>,
    ) -> Result<O::Output> {
        let context = self.context(timing, session);
        self.execute_with(context, operation, session).await
    }

    /// The context of an operation starting now with `timing` (its timeoutMS, and a
    /// deadline it keeps if it has one), in `session`: inside the session's
    /// `with_transaction`, that call's deadline applies instead (Client Side Operations Timeout spec, "Convenient Transactions
    /// API").
    pub fn context(
        &self,
        timing: impl Into<Timing>,
        session: Option<&ClientSession>,
    ) -> OperationContext {
        let timing = timing.into();
        session
            .and_then(ClientSession::transaction_context)
            .unwrap_or_else(|| match timing.deadline {
                Some(deadline) => OperationContext {
                    timeout: timing.timeout,
                    deadline: Some(deadline),
                    ..OperationContext::new()
                },
                None => OperationContext::with_timeout(timing.timeout, self.now()),
            })
    }

    /// [`Executor::execute`] as the operation of `context`. With a deadline, every
    /// step ends by then: server selection and check-outs are cut at it
    /// ([`Executor::within_deadline`]), each read ends at it, and no retry or backoff
    /// starts after it; the error is then the timeout error
    /// ([`OperationContext::report`]).
    pub async fn execute_with<O: Operation>(
        self: &Arc<Self>,
        context: OperationContext,
        operation: O,
        session: Option<&ClientSession>,
    ) -> Result<O::Output> {
        // The span starts before server selection (OpenTelemetry spec, "Instrumenting
        // Driver Operations"); the commands' spans nest in it.
        let span = self.operation_span(&operation, session);
        // Boxed: the operation's state (retry loop, connection, command) lives on the
        // heap, not in the caller's future, whose poll would otherwise need a deep
        // stack in debug builds.
        let result = Box::pin(self.execute_checked(&context, operation, session))
            .instrument(span.clone())
            .await;
        let result = result.map_err(|error| context.report(error, self.now()));
        match &result {
            Err(error) => open_telemetry::record_error(&span, error),
            Ok(output) => {
                if let Some(failure) = O::reported_failure(output) {
                    open_telemetry::record_error(&span, &failure);
                }
            }
        }
        result
    }

    async fn execute_checked<O: Operation>(
        self: &Arc<Self>,
        context: &OperationContext,
        operation: O,
        session: Option<&ClientSession>,
    ) -> Result<O::Output> {
        if let Some(session) = session {
            self.check_session(session)?;
        }
        let transaction = session
            .filter(|_| !operation.ends_transaction())
            .and_then(ClientSession::enter_operation);
        if let Some(session) =
            session.filter(|_| transaction.is_none() && !operation.ends_transaction())
        {
            // A non-transactional operation releases the connection the last
            // transaction was pinned to (Transactions spec, "When to unpin", 5).
            session.unpin();
        }
        let result = match transaction {
            Some(read_preference) => self
                .execute_in(context, operation, session, Some(&read_preference))
                .await
                .map_err(crate::transactions::state::label_transient),
            None => self.execute_in(context, operation, session, None).await,
        };
        if let (Some(session), Err(error)) = (session, &result) {
            if crate::load_balancer::error_unpins(error) {
                session.unpin();
            }
        }
        result
    }

    /// [`Executor::execute`], in a transaction whose read preference is
    /// `transaction` when one is open, with the retries the specs allow:
    /// - after an error the Retryable Reads or Writes spec calls retryable, once; with
    ///   timeoutMS, as long as time is left (Client Side Operations Timeout spec,
    ///   "Retryability");
    /// - after an error labelled both SystemOverloadedError and RetryableError, in a
    ///   transaction too, up to `maxAdaptiveRetries` times in all, each after an
    ///   exponential backoff with jitter (Client Backpressure spec, "Overload retry
    ///   policy"); from the first overload error on, that limit applies to every
    ///   retry.
    async fn execute_in<O: Operation>(
        self: &Arc<Self>,
        context: &OperationContext,
        mut operation: O,
        session: Option<&ClientSession>,
        transaction: Option<&SelectionCriteria>,
    ) -> Result<O::Output> {
        // In a transaction the transaction's write concern applies, acknowledged.
        let acknowledged = transaction.is_some()
            || operation
                .write_concern()
                .is_none_or(WriteConcern::is_acknowledged);
        let session = match session {
            Some(session) => {
                if !acknowledged {
                    return Err(Error::invalid_argument(
                        "an unacknowledged write (w: 0) cannot run in an explicit session",
                    ));
                }
                Some(session.clone())
            }
            None if acknowledged => Some(self.implicit_session()),
            None => None,
        };
        self.send_pending_kills().await;
        self.send_pending_aborts().await;
        let options = self.options();
        // Commands in a transaction are not retried; commitTransaction and
        // abortTransaction are, whatever retryWrites says (Transactions spec,
        // "Interaction with Retryable Writes").
        let kind = match transaction {
            Some(_) => Retryability::None,
            None => operation.retryability(),
        };
        let retry_writes = options.retry_writes_or_default() || operation.ends_transaction();
        let load_balanced = options.load_balanced == Some(true);
        let mut deprioritized = Vec::new();
        // The error of the last attempt, once one failed.
        let mut previous: Option<Error> = None;
        let mut retries: u32 = 0;
        let mut overloaded = false;
        let mut txn_number = TxnNumber::Next;
        loop {
            let target = match (operation.target(), transaction) {
                // A read in a transaction uses its read preference (Transactions
                // spec, "readPreference").
                (Target::Read(given), Some(_)) if operation.read_preference_given() => {
                    crate::transactions::state::check_read_preference(given)?;
                    Target::Read(given)
                }
                (Target::Read(_) | Target::WriteStage(_), Some(preference)) => {
                    crate::transactions::state::check_read_preference(preference)?;
                    Target::Read(preference)
                }
                (target, _) => target.resolve(|| self.topology_description()),
            };
            // A transaction pinned to a connection (load-balanced mode) runs its
            // commands there, one pinned to a mongos (a sharded cluster) on that
            // mongos, without server selection (Load Balancer spec, "Behaviour With
            // Transactions"; Transactions spec, "Mongos Pinning"). A retried
            // commitTransaction or abortTransaction was unpinned first.
            let pinned_session = session
                .as_ref()
                .filter(|_| transaction.is_some() || operation.ends_transaction());
            let pinned = pinned_session.and_then(ClientSession::pinned);
            let pinned_mongos = pinned_session.and_then(ClientSession::pinned_mongos);
            let (selected, server, server_type, topology_type, min_rtt, checked_out) =
                match (&pinned, pinned_mongos) {
                    (Some(pin), _) => (
                        None,
                        pin.server().clone(),
                        ServerType::LoadBalancer,
                        TopologyType::LoadBalanced,
                        Duration::ZERO,
                        pin.take(),
                    ),
                    (None, Some(mongos)) => {
                        let checked_out = self.check_out_from(context, &mongos).await;
                        (
                            None,
                            mongos,
                            ServerType::Mongos,
                            TopologyType::Sharded,
                            Duration::ZERO,
                            checked_out,
                        )
                    }
                    (None, None) => {
                        let selected = match self
                            .select_server(
                                context,
                                &target.criteria(),
                                &deprioritized,
                                operation.name(),
                            )
                            .await
                        {
                            Ok(selected) => selected,
                            // A retry that finds no server reports the error of the
                            // attempt (or, once the deadline passed, the timeout).
                            Err(error) => {
                                return Err(match previous {
                                    Some(previous) if context.has_expired(self.now()) => {
                                        context.timeout_error("server selection", Some(previous))
                                    }
                                    Some(previous) => previous,
                                    None => error,
                                })
                            }
                        };
                        // The first command of a transaction on a sharded cluster pins
                        // it to the mongos selected, before it runs: an error that
                        // unpins it then does (Transactions spec, "Mongos Pinning").
                        if let Some(session) = &session {
                            if pins_mongos(transaction.is_some(), selected.topology_type) {
                                session.pin(Pin::Mongos(selected.server.clone()));
                            }
                        }
                        let checked_out = self.check_out(context, &selected).await;
                        let server = selected.server.clone();
                        let server_type = selected.server_type;
                        let topology_type = selected.topology_type;
                        let min_rtt = selected.min_round_trip_time;
                        (
                            Some(selected),
                            server,
                            server_type,
                            topology_type,
                            min_rtt,
                            checked_out,
                        )
                    }
                };
            // Load-balanced mode: the first command of a transaction pins its
            // connection, and so does a cursor the reply opens ("Connection Pinning").
            let pin = pinned.or_else(|| {
                let to = match transaction {
                    Some(_) => PinnedTo::Transaction,
                    None => PinnedTo::Cursor,
                };
                (load_balanced && server_type == ServerType::LoadBalancer)
                    .then(|| PinnedConnection::new(server.clone(), to))
            });
            let release = |pooled: PooledConnection| match &pin {
                Some(pin) => {
                    if transaction.is_some() {
                        if let Some(session) = &session {
                            session.pin(Pin::Connection(pin.clone()));
                        }
                    }
                    match pin.is_shared() {
                        true => pin.place(pooled),
                        false => server.check_in(pooled),
                    }
                }
                None => server.check_in(pooled),
            };
            let attempt = match checked_out {
                Err(error) => Err((error, None)),
                Ok(mut pooled) => {
                    let eligible = match kind {
                        Retryability::Write => {
                            retry_writes
                                && acknowledged
                                && supports_retryable_writes(pooled.hello(), server_type)
                        }
                        Retryability::Read => options.retry_reads_or_default(),
                        Retryability::None => false,
                    };
                    let overload_retry =
                        previous.as_ref().is_some_and(retry::is_overload_retryable);
                    if previous.is_some() && !eligible && !overload_retry {
                        // The new server cannot take the retry (Retryable Writes
                        // spec): the first attempt's error stands.
                        release(pooled);
                        return Err(previous.unwrap_or_else(|| {
                            Error::invalid_argument("retry without a first error")
                        }));
                    }
                    let txn = match (kind, eligible) {
                        (Retryability::Write, true) => txn_number,
                        _ => TxnNumber::None,
                    };
                    let read_preference = match target {
                        Target::Read(criteria) => {
                            criteria.command_document(topology_type, server_type)
                        }
                        Target::Write | Target::WriteStage(_) => None,
                    };
                    let result = Box::pin(self.run_on(
                        context,
                        &mut operation,
                        &mut pooled,
                        Attempt {
                            server: &server,
                            read_preference,
                            session: session.as_ref(),
                            txn_number: txn,
                            pinned: pin.as_ref(),
                            min_rtt,
                        },
                    ))
                    .await;
                    let max_wire_version = pooled.hello().max_wire_version;
                    release(pooled);
                    result.map_err(|error| (error, Some((eligible, max_wire_version))))
                }
            };
            let (error, attempted) = match attempt {
                Ok(output) => return Ok(output),
                Err(failure) => failure,
            };
            operation.attempt_failed(&error);
            // As of the batch the attempt built (see Operation::retryability).
            let kind = match operation.retryability() {
                Retryability::None => Retryability::None,
                _ => kind,
            };
            // Did this attempt qualify for a retry?
            let eligible = match attempted {
                Some((eligible, _)) => eligible,
                // The check-out failed: a retry is allowed as if the server qualified.
                None => match kind {
                    Retryability::Write => retry_writes && acknowledged,
                    Retryability::Read => options.retry_reads_or_default(),
                    Retryability::None => false,
                },
            };
            let error = match kind {
                Retryability::Write if retry_writes => retry::label_write_error(
                    error,
                    attempted.map(|(_, wire)| wire),
                    server_type == ServerType::Mongos,
                ),
                _ => error,
            };
            let overload = retry::is_overload_retryable(&error);
            // Retryable under the Retryable Reads or Writes spec, or only as an
            // overload (Client Backpressure spec).
            let spec_retryable = eligible
                && match kind {
                    Retryability::Write => error.contains_label(retry::RETRYABLE_WRITE_ERROR),
                    Retryability::Read => retry::is_retryable_read_error(&error),
                    Retryability::None => false,
                };
            let retryable = spec_retryable || (overload && self.retries_overloads(&operation));
            let error = match previous.take() {
                Some(previous) => retry::reported_error(previous, error),
                None => error,
            };
            if !retryable {
                return Err(retry::explain_unsupported_retryable_writes(error));
            }
            retries += 1;
            overloaded |= error.contains_label(SYSTEM_OVERLOADED_ERROR);
            let allowed = match (overloaded, context.is_timed()) {
                (true, _) => options.max_adaptive_retries_or_default(),
                (false, true) => u32::MAX,
                (false, false) => 1,
            };
            if retries > allowed {
                return Err(error);
            }
            if error.contains_label(SYSTEM_OVERLOADED_ERROR)
                && !self.back_off(context, retries, &error).await
            {
                return Err(error);
            }
            if context.has_expired(self.now()) {
                return Err(context.timeout_error("a retry", Some(error)));
            }
            // Retry elsewhere if possible: the failed mongos always; a server that
            // reported an overload when the retry is a retryable read's or write's
            // (Retryable Reads and Writes specs, "Selecting the server for retry"),
            // or, for the retries only the Client Backpressure spec allows, when
            // enableOverloadRetargeting says so (that spec, "Overload retry policy",
            // 4; off by default, for primaryPreferred reads stay on the primary).
            let overloaded_here = error.contains_label(SYSTEM_OVERLOADED_ERROR)
                && (spec_retryable || options.enable_overload_retargeting_or_default());
            if topology_type == TopologyType::Sharded || overloaded_here {
                deprioritized.push(server.address.clone());
            }
            drop(selected);
            // A retried commitTransaction or abortTransaction is not pinned
            // (Transactions spec, "When to unpin", 1 and 3).
            if let Some(session) = session.as_ref().filter(|_| transaction.is_none()) {
                session.unpin();
            }
            previous = Some(error);
            txn_number = TxnNumber::Same;
        }
    }

    /// Waits before the `retry`th retry after the overload `error` (Client
    /// Backpressure spec, "Overload retry policy", 3), unless the wait would outlast
    /// the deadline of `context`: then returns `false` at once, and the caller gives
    /// up with the error.
    pub(crate) async fn back_off(
        &self,
        context: &OperationContext,
        retry: u32,
        error: &Error,
    ) -> bool {
        let backoff = retry::overload_backoff(retry, error.base_backoff(), retry::jitter());
        if context
            .remaining(self.now())
            .is_some_and(|left| backoff >= left)
        {
            return false;
        }
        self.clock().sleep(backoff).await;
        true
    }

    /// Whether an error labelled as a retryable overload may be retried for
    /// `operation` (Client Backpressure spec, "Overload retry policy", 2.4): a write
    /// when retryWrites allows, a read when retryReads does, a command that may be
    /// either (run_command) when both do; commitTransaction and abortTransaction
    /// always.
    fn retries_overloads<O: Operation>(&self, operation: &O) -> bool {
        let options = self.options();
        if operation.ends_transaction() {
            return true;
        }
        match operation.access() {
            Access::Read => options.retry_reads_or_default(),
            Access::Write => options.retry_writes_or_default(),
            Access::Either => options.retry_reads_or_default() && options.retry_writes_or_default(),
        }
    }

    /// Runs `operation` once on a connection to `server` (already checked out), in
    /// `session` if the server supports sessions, as part of the operation of
    /// `context`: builds the command, adds the fields every command carries, sends it
    /// with its monitoring events and, on error, applies SDAM error handling. Every
    /// command an operation sends goes through here.
    pub async fn run_on<O: Operation>(
        self: &Arc<Self>,
        context: &OperationContext,
        operation: &mut O,
        pooled: &mut PooledConnection,
        attempt: Attempt<'_>,
    ) -> Result<O::Output> {
        let (server, session) = (attempt.server, attempt.session);
        let result = self
            .send_operation(context, operation, pooled, attempt)
            .await;
        if let Err(error) = &result {
            if error.is_network_error() {
                // Sessions spec, "Server Session Pool": the server may not have seen
                // the session's last command; it is not reused.
                if let Some(session) = session {
                    session.mark_dirty();
                }
            }
            self.topology().handle_application_error(
                &server.address,
                error,
                ConnectionInfo::of(pooled),
                ErrorPhase::AfterHandshakeCompletes,
            );
        }
        result
    }

    async fn send_operation<O: Operation>(
        self: &Arc<Self>,
        context: &OperationContext,
        operation: &mut O,
        pooled: &mut PooledConnection,
        attempt: Attempt<'_>,
    ) -> Result<O::Output> {
        let Attempt {
            server,
            read_preference,
            session,
            txn_number,
            pinned,
            min_rtt,
        } = attempt;
        let sessions_supported = pooled.hello().logical_session_timeout_minutes.is_some()
            || pooled.service_id().is_some();
        let session = match session {
            Some(session) if sessions_supported => Some(session),
            Some(session) if !session.is_implicit() => {
                return Err(Error::invalid_argument(
                    "this deployment does not support sessions",
                ))
            }
            _ => None,
        };
        let mut command = operation.build(pooled.hello())?;
        // The batch just built may be one that cannot be retried: no transaction
        // number then (Retryable Writes spec, "Unsupported Write Operations").
        let txn_number = match operation.retryability() {
            Retryability::None => TxnNumber::None,
            _ => txn_number,
        };
        // The documents of the command's sequences go back to the operation after the
        // attempt, whatever its outcome (`Operation::reclaim`): from here on, every
        // path to the end of the attempt hands them back.
        let sequences = std::mem::take(&mut command.sequences);
        let prepared = (|| -> Result<_> {
            let body = &mut command.body;
            let transaction = session
                .and_then(|session| session.transaction_fields(operation.ends_transaction()));
            if let (Some(session), Some(fields)) = (session, &transaction) {
                // The transaction's number, taken when it started (Transactions spec,
                // "Transactions Wire Protocol").
                let (lsid, txn) = session.use_server_session(false)?;
                body.insert("lsid", lsid);
                let after_cluster_time = session
                    .operation_time()
                    .filter(|_| fields.starting && session.is_causally_consistent());
                crate::transactions::state::add_fields(body, txn, fields, after_cluster_time);
            } else if let Some(session) = session {
                let (lsid, txn) = session.use_server_session(txn_number == TxnNumber::Next)?;
                body.insert("lsid", lsid);
                if txn_number != TxnNumber::None {
                    body.insert("txnNumber", Bson::Int64(txn));
                }
                // A cursor's getMore and killCursors belong to the snapshot it was opened at.
                let continues_cursor = matches!(
                    body.keys().next().map(String::as_str),
                    Some("getMore" | "killCursors")
                );
                if let Some(snapshot) = session
                    .snapshot_read_concern()
                    .filter(|_| !continues_cursor)
                {
                    let mut read_concern = body
                        .get_document("readConcern")
                        .cloned()
                        .unwrap_or_default();
                    read_concern.extend(snapshot);
                    body.insert("readConcern", read_concern);
                }
                if operation.supports_read_concern() && session.is_causally_consistent() {
                    if let Some(operation_time) = session.operation_time() {
                        let mut read_concern = body
                            .get_document("readConcern")
                            .cloned()
                            .unwrap_or_default();
                        read_concern.insert("afterClusterTime", operation_time);
                        body.insert("readConcern", read_concern);
                    }
                }
            }
            let cluster_time = match session {
                Some(session) => session.cluster_time_to_send(),
                None => self.cluster_time(),
            };
            if let Some(cluster_time) = cluster_time {
                body.insert("$clusterTime", cluster_time);
            }
            crate::versioned_api::declare(self.options().server_api.as_ref(), body);
            if let Some(read_preference) = read_preference {
                body.insert("$readPreference", read_preference);
            }
            if context.is_timed() {
                let context = OperationContext {
                    max_time: context.max_time && operation.sends_max_time(),
                    ..*context
                };
                apply_timeout(&context, body, self.now(), min_rtt)?;
            }
            let no_reply = transaction.is_none()
                && !operation.needs_reply()
                && operation
                    .write_concern()
                    .is_some_and(|concern| !concern.is_acknowledged());
            Ok((transaction, no_reply))
        })();
        let (transaction, no_reply) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => {
                operation.reclaim(sequences);
                return Err(error);
            }
        };
        command.sequences = sequences;
        let (reply, sequences) = self.send(context, pooled, command, session, no_reply).await;
        operation.reclaim(sequences);
        if let (Some(session), Some(_)) = (session, &transaction) {
            // A command refused as an overload did not start the transaction: its
            // retry starts it (Transactions spec, "Interaction with Client
            // Backpressure").
            if reply
                .as_ref()
                .err()
                .is_none_or(|error| !is_client_side(error) && !retry::is_overload_retryable(error))
            {
                session.transaction_started();
            }
            if let Ok(reply) = &reply {
                session.record_recovery_token(reply);
            }
        }
        let reply = reply?;
        operation.handle_reply(
            reply,
            ReplyContext {
                executor: self,
                operation: context,
                server,
                session,
                pinned,
            },
        )
    }

    /// Sends `command` (adding its `$db`) on `connection`, announced and concluded by
    /// command monitoring events with the `operationId` of `context`; records the
    /// reply's cluster and operation times in `session` (and the client), `ok: 1` or
    /// not. MONGODB-OIDC may ask to authenticate again and resend once (the token
    /// expired). With `no_reply` (an unacknowledged write), the message is flagged
    /// `moreToCome` and the reply is `{ ok: 1 }` (Command Logging and Monitoring spec,
    /// "Unacknowledged/Acknowledged Writes"). The command's document sequences come
    /// back with the result, for [`Operation::reclaim`].
    async fn send(
        &self,
        context: &OperationContext,
        connection: &mut PooledConnection,
        mut command: Command,
        session: Option<&ClientSession>,
        no_reply: bool,
    ) -> (Result<RawDocumentBuf>, Vec<DocumentSequence>) {
        command.body.insert("$db", command.database.as_str());
        let body = match RawDocumentBuf::try_from(&command.body) {
            Ok(body) => body,
            Err(error) => {
                let error = Error::serialization(format!("the command cannot be encoded: {error}"));
                return (Err(error), command.sequences);
            }
        };
        let mut message = OpMsg::new(body);
        // The documents move into the message: from here on they are in
        // `message.sequences` only.
        message.sequences = std::mem::take(&mut command.sequences);
        if no_reply {
            message.flags = MsgFlags::MORE_TO_COME;
        }
        let mut result = self
            .send_message(
                context,
                connection,
                &command,
                &message,
                next_request_id(),
                session,
            )
            .await;
        if let Err(error) = &result {
            if connection.needs_reauthentication(error) {
                let host = connection.server_host().to_string();
                let clock = self.clock();
                result = match connection.reauthenticate(&host, clock).await {
                    Ok(()) => {
                        self.send_message(
                            context,
                            connection,
                            &command,
                            &message,
                            next_request_id(),
                            session,
                        )
                        .await
                    }
                    Err(error) => Err(error),
                };
            }
        }
        (result, message.sequences)
    }

    async fn send_message(
        &self,
        context: &OperationContext,
        connection: &mut PooledConnection,
        command: &Command,
        message: &OpMsg,
        request_id: i32,
        session: Option<&ClientSession>,
    ) -> Result<RawDocumentBuf> {
        let clock = self.clock();
        let monitor = self.command_monitor();
        // The kills of cursors of this server go ahead of the command, on its round
        // trip (an unacknowledged write has none to share).
        let kills = match message.flags.contains(MsgFlags::MORE_TO_COME) {
            true => Vec::new(),
            false => self.pipelined_kills(connection),
        };
        let shown = (monitor.is_listened() || self.tracer.is_enabled())
            .then(|| monitored_command(command, message));
        let span = match &shown {
            Some(shown) if !is_sensitive(command.name(), shown) => {
                let address = connection.address();
                self.tracer.command(
                    shown,
                    &command.database,
                    &ConnectionAttributes {
                        address: address.host(),
                        port: address.tcp_port().map(i64::from),
                        transport: match address {
                            ServerAddress::Unix { .. } => "unix",
                            _ => "tcp",
                        },
                        server_connection_id: connection.hello().connection_id,
                        driver_connection_id: i64::from(connection.id()),
                    },
                )
            }
            _ => Span::none(),
        };
        let in_flight = monitor.started(shown.as_ref().unwrap_or(&command.body), clock, || {
            command_info(command, request_id, context.id, connection)
        });
        // A monitor whose check timed out clears the pool and interrupts the connections
        // in use (server-monitoring.md, "Network or command error during server check"):
        // "canceling whatever task the Connection is currently performing", the
        // operation fails with a retryable error (CMAP spec, "Clearing a non-load
        // balanced pool"), whether or not socketTimeoutMS bounds its read.
        let interrupted = connection.interrupted();
        let exchange = async {
            match message.flags.contains(MsgFlags::MORE_TO_COME) {
                true => connection
                    .send_without_reply(request_id, message)
                    .await
                    .map(|()| rawdoc! { "ok": 1 }),
                false if kills.is_empty() => {
                    let limit = context.read_limit(connection.socket_timeout(), clock.now());
                    connection
                        .send_message(request_id, message, clock, limit)
                        .await
                }
                false => {
                    let limit = context.read_limit(connection.socket_timeout(), clock.now());
                    let (messages, in_flight): (Vec<_>, Vec<_>) = kills.into_iter().unzip();
                    let sent = connection
                        .send_pipelined(&messages, request_id, message, clock, limit)
                        .await;
                    self.finish_kills(in_flight, sent)
                }
            }
        };
        let sent = match future::select(pin!(exchange), pin!(interrupted)).await {
            Either::Left((sent, _)) => Some(sent),
            Either::Right(((), _)) => None,
        };
        let sent = sent.unwrap_or_else(|| Err(connection.interruption()));
        let result = match sent {
            Ok(reply) => {
                match session {
                    Some(session) => session.observe_reply(&reply),
                    None => {
                        if let Some(cluster_time) = crate::session::cluster_time_of(&reply) {
                            self.advance_cluster_time(&cluster_time);
                        }
                    }
                }
                check_reply(reply)
            }
            Err(error) => Err(error),
        };
        in_flight.finish(result.as_ref().map(AsRef::as_ref));
        open_telemetry::record_reply(&span, result.as_ref().map(AsRef::as_ref));
        result
    }

    /// Takes the kills of cursors dropped with no runtime to send them that can go
    /// ahead of the next command on `connection`, with no round trip of their own
    /// ([`Connection::send_pipelined`](crate::connection::Connection::send_pipelined)):
    /// those of cursors of its server that are not pinned to a connection (a pinned
    /// cursor's kill goes on its own connection: `Executor::send_pending_kills`).
    /// Each comes as its message, announced by its started event. A killCursors is
    /// an operation of its own (its own operation id), sent without a session id
    /// (Driver Sessions spec, "When sending a killCursors command"), with the cluster
    /// time, the declared API version, and a `maxTimeMS` from the cursor's timeoutMS
    /// afresh (Client Side Operations Timeout spec, "Cursors": close methods).
    fn pipelined_kills<'a>(
        &'a self,
        connection: &PooledConnection,
    ) -> Vec<((i32, OpMsg), InFlight<'a>)> {
        let kills = {
            let mut pending = lock(&self.pending_kills);
            if pending.is_empty() {
                return Vec::new();
            }
            let address = connection.address();
            pending
                .extract_if(.., |kill| {
                    kill.pinned.is_none() && kill.server.address == *address
                })
                .collect::<Vec<_>>()
        };
        let now = self.now();
        kills
            .iter()
            .filter_map(|kill| {
                let context = OperationContext::with_timeout(kill.timeout, now);
                let mut command = kill.command();
                let body = &mut command.body;
                if let Some(cluster_time) = self.cluster_time() {
                    body.insert("$clusterTime", cluster_time);
                }
                crate::versioned_api::declare(self.options().server_api.as_ref(), body);
                if context.is_timed() {
                    // Cannot fail: the deadline is timeoutMS from now.
                    apply_timeout(&context, body, now, Duration::ZERO).ok()?;
                }
                body.insert("$db", command.database.as_str());
                // Best effort, as the kill is (the server times idle cursors out).
                let message = OpMsg::new(RawDocumentBuf::try_from(&command.body).ok()?);
                let request_id = next_request_id();
                let in_flight = self.commands.started(&command.body, self.clock(), || {
                    command_info(&command, request_id, context.id, connection)
                });
                Some(((request_id, message), in_flight))
            })
            .collect()
    }

    /// Reports the kills pipelined ahead of a command (their replies, or the failure
    /// that ended the exchange) and returns the command's reply. A kill's `ok: 0` is
    /// reported and nothing more: it never fails the command.
    fn finish_kills(
        &self,
        in_flight: Vec<InFlight<'_>>,
        sent: Result<(Vec<RawDocumentBuf>, RawDocumentBuf)>,
    ) -> Result<RawDocumentBuf> {
        match sent {
            Ok((replies, reply)) => {
                for (kill, in_flight) in replies.into_iter().zip(in_flight) {
                    if let Some(cluster_time) = crate::session::cluster_time_of(&kill) {
                        self.advance_cluster_time(&cluster_time);
                    }
                    in_flight.finish(check_reply(kill).as_ref().map(AsRef::as_ref));
                }
                Ok(reply)
            }
            Err(error) => {
                for in_flight in in_flight {
                    in_flight.finish(Err(&error));
                }
                Err(error)
            }
        }
    }

    /// A new implicit session (its server session is taken at the first command).
    fn implicit_session(self: &Arc<Self>) -> ClientSession {
        ClientSession::implicit(self.clone())
    }

    /// Refuses a session of another client, or one that has ended.
    fn check_session(self: &Arc<Self>, session: &ClientSession) -> Result<()> {
        if !Arc::ptr_eq(session.executor(), self) {
            return Err(Error::invalid_argument(
                "the session was started by another client",
            ));
        }
        if session.has_ended() {
            return Err(Error::invalid_argument(
                "the session has ended: start a new one",
            ));
        }
        Ok(())
    }
}

/// What timeoutMS changes in a command `body` about to be sent at `now` to a server
/// whose minimum round trip is `min_rtt` (Client Side Operations Timeout spec): the
/// deprecated `maxTimeMS` and `wtimeout` given with it are dropped ("Validation and
/// Overrides"), and the command gets the `maxTimeMS` the deadline leaves ("Command
/// Execution") — or, when the round trip alone would outlast it, is not sent.
fn apply_timeout(
    context: &OperationContext,
    body: &mut Document,
    now: Instant,
    min_rtt: Duration,
) -> Result<()> {
    if let Ok(concern) = body.get_document_mut("writeConcern") {
        concern.remove("wtimeout");
        if concern.is_empty() {
            body.remove("writeConcern");
        }
    }
    let max_time = context.max_time_ms(now, min_rtt)?;
    if body.contains_key("getMore") {
        // A getMore carries no maxTimeMS of timeoutMS's, but an awaitData cursor's
        // wait, within what is left (spec, "Tailable awaitData Cursors").
        let wait = body.get("maxTimeMS").and_then(crate::bson_util::as_i64);
        if let (Some(wait), Some(max_time)) = (wait, max_time) {
            body.insert("maxTimeMS", wait.min(max_time));
        }
        return Ok(());
    }
    body.remove("maxTimeMS");
    if let Some(max_time) = max_time.filter(|_| context.max_time) {
        body.insert("maxTimeMS", max_time);
    }
    Ok(())
}

/// Whether `error` came from the driver before anything was sent (a command that
/// cannot be encoded, say): it leaves a transaction's state as it was (Transactions
/// spec, "Client-side errors MUST NOT change transaction state").
fn is_client_side(error: &Error) -> bool {
    matches!(
        &*error.kind,
        crate::error::ErrorKind::InvalidArgument { .. }
            | crate::error::ErrorKind::BsonDeserialization(_)
            | crate::error::ErrorKind::BsonSerialization(_)
    )
}

/// The command as command monitoring shows it: the body with every document sequence
/// as an array field (Command Logging and Monitoring spec, "command").
/// What the monitoring events of `command`, sent with `request_id` on `connection`
/// for the operation `operation_id`, share.
fn command_info(
    command: &Command,
    request_id: i32,
    operation_id: i32,
    connection: &PooledConnection,
) -> CommandInfo {
    CommandInfo {
        command_name: command.name().to_owned(),
        db: command.database.clone(),
        request_id,
        operation_id,
        connection: crate::event::command::ConnectionInfo {
            address: connection.address().clone(),
            id: connection.id(),
            server_id: connection.hello().connection_id,
        },
        service_id: connection.service_id(),
    }
}

fn monitored_command(command: &Command, message: &OpMsg) -> Document {
    let mut shown = command.body.clone();
    for sequence in &message.sequences {
        let documents = sequence
            .documents
            .iter()
            .filter_map(|document| Document::try_from(document.as_ref()).ok())
            .map(Bson::Document)
            .collect::<Vec<_>>();
        shown.insert(sequence.identifier.clone(), documents);
    }
    shown
}

/// `endSessions` for a batch of server session ids (Driver Sessions spec,
/// "EndSessions"): sent without a session id of its own.
struct EndSessions<'a> {
    ids: &'a [Document],
}

impl Operation for EndSessions<'_> {
    type Output = ();

    fn name(&self) -> &str {
        "endSessions"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "endSessions",
            database: "admin",
            collection: None,
        }
    }

    fn target(&self) -> Target<'_> {
        // Never used: the server is selected once for all the batches.
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        Ok(Command::new(
            "admin",
            bson::doc! { "endSessions": self.ids },
        ))
    }

    fn handle_reply(&mut self, _reply: RawDocumentBuf, _context: ReplyContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_keeps_its_own_bound_within_the_operations_deadline() {
        let at = |millis| Instant::from_origin(Duration::from_millis(millis));
        let options = ClientOptions::parse_uri("mongodb://h/?waitQueueTimeoutMS=50").unwrap();
        let socket = Some(Duration::from_millis(300));
        let mut context = OperationContext::new();
        assert_eq!(context.deadline, None);
        assert_eq!(context.read_limit(socket, at(0)), socket);
        assert_eq!(context.read_limit(None, at(0)), None);
        assert_eq!(
            context.check_out_timeout(&options, at(0)),
            Duration::from_millis(50)
        );
        context.timeout = Some(Duration::from_millis(100));
        context.deadline = Some(at(100));
        assert_eq!(
            context.read_limit(socket, at(40)),
            Some(Duration::from_millis(60))
        );
        assert_eq!(
            context.read_limit(None, at(90)),
            Some(Duration::from_millis(10))
        );
        assert_eq!(
            context.check_out_timeout(&options, at(70)),
            Duration::from_millis(30)
        );
        assert_eq!(context.read_limit(socket, at(150)), Some(Duration::ZERO));
    }

    #[test]
    fn operations_get_ids_of_their_own() {
        assert_ne!(OperationContext::new().id, OperationContext::new().id);
    }

    #[test]
    fn with_timeout_ms_commands_get_what_is_left_as_max_time_ms_and_no_deprecated_bounds() {
        let at = |millis| Instant::from_origin(Duration::from_millis(millis));
        let context = OperationContext::with_timeout(Some(Duration::from_millis(100)), at(0));
        assert_eq!(context.deadline, Some(at(100)));
        // What is left minus the round trip; nothing sent when the round trip is all.
        assert_eq!(
            context
                .max_time_ms(at(30), Duration::from_millis(10))
                .unwrap(),
            Some(60)
        );
        let late = context.max_time_ms(at(95), Duration::from_millis(10));
        assert!(late.is_err_and(|error| error.is_operation_timeout()));
        let mut body = bson::doc! {
            "insert": "c",
            "maxTimeMS": 5000,
            "writeConcern": { "w": 1, "wtimeout": 10 },
        };
        apply_timeout(&context, &mut body, at(40), Duration::ZERO).unwrap();
        assert_eq!(body.get_i64("maxTimeMS").ok(), Some(60));
        assert_eq!(
            body.get_document("writeConcern").unwrap(),
            &bson::doc! { "w": 1 }
        );
        let mut body = bson::doc! { "insert": "c", "writeConcern": { "wtimeout": 10 } };
        let zero = OperationContext::with_timeout(Some(Duration::ZERO), at(0));
        apply_timeout(&zero, &mut body, at(40), Duration::ZERO).unwrap();
        assert_eq!(body, bson::doc! { "insert": "c" });
        // A getMore keeps an awaitData wait, within what is left.
        let mut get_more = bson::doc! { "getMore": 1_i64, "maxTimeMS": 500_i64 };
        apply_timeout(&context, &mut get_more, at(40), Duration::ZERO).unwrap();
        assert_eq!(get_more.get_i64("maxTimeMS").ok(), Some(60));
        // Without timeoutMS, no deadline and the step bounds as they were.
        let unset = OperationContext::with_timeout(None, at(0));
        assert!(!unset.is_timed());
        assert_eq!(unset.max_time_ms(at(1), Duration::ZERO).unwrap(), None);
    }

    #[test]
    fn with_timeout_ms_server_and_socket_timeouts_become_the_timeout_error() {
        let at = |millis| Instant::from_origin(Duration::from_millis(millis));
        let context = OperationContext::with_timeout(Some(Duration::from_millis(100)), at(0));
        let expired = Error::new(crate::error::ErrorKind::Command(
            crate::error::CommandError {
                code: 50,
                code_name: "MaxTimeMSExpired".into(),
                message: "operation exceeded time limit".into(),
                error_labels: vec!["SomeLabel".into()],
                topology_version: None,
            },
        ));
        let reported = context.report(expired.clone(), at(10));
        assert!(reported.is_operation_timeout());
        assert!(reported.contains_label("SomeLabel"));
        assert!(reported
            .to_string()
            .contains("operation exceeded time limit"));
        let socket = Error::timed_out("h:1", "reading a reply", Duration::from_millis(90));
        assert!(context
            .report(socket.clone(), at(10))
            .is_operation_timeout());
        let other = Error::invalid_argument("x");
        assert!(!context.report(other.clone(), at(10)).is_operation_timeout());
        assert!(!context.report(other, at(100)).is_operation_timeout());
        let selection = Error::new(crate::error::ErrorKind::ServerSelection {
            message: "none".into(),
        });
        assert!(!context
            .report(selection.clone(), at(10))
            .is_operation_timeout());
        assert!(context.report(selection, at(100)).is_operation_timeout());
        // Without timeoutMS, errors stay as they are.
        let unset = OperationContext::with_timeout(None, at(0));
        assert!(!unset.report(expired, at(10)).is_operation_timeout());
        assert!(!unset.report(socket, at(10)).is_operation_timeout());
    }
}
