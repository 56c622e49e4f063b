//! Sessions (Driver Sessions spec) and causal consistency (Causal Consistency spec).
//!
//! Every operation that allows one runs in a session: the application's explicit
//! [`ClientSession`], or an implicit one the driver starts for the operation (and, for
//! a cursor, keeps until the cursor is exhausted). A session's id comes from the
//! client's server session pool, generated locally (a random UUID), and goes back to
//! the pool when the session ends: it is reused LIFO and discarded when it is about to
//! expire on the server or took part in a network error ("dirty").
//!
//! The client also gossips the cluster time: it keeps the highest `$clusterTime` any
//! server reported and sends it with every command.

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::Duration;

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document, RawDocument, Timestamp};
use serde::{Deserialize, Serialize};

use crate::cluster::{PinnedConnection, Server};
use crate::error::{Error, Result};
use crate::operation::{Executor, OperationContext};
use crate::rt::{BoxFuture, Instant};
use crate::signal::{lock, TaskGuard};
use crate::transactions::state::{Transaction, TransactionOptions, TransactionState};
use crate::uri::ServerAddress;

/// A server session is discarded when it has less than this left before the server
/// would expire it (spec, "Server Session Pool").
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// The id and state of one server-side session (spec, "ServerSession").
#[derive(Debug)]
pub(crate) struct ServerSession {
    /// `{ id: <UUID, binary subtype 4> }`.
    pub id: Document,
    /// When the id was last sent to a server.
    pub last_use: Instant,
    /// The last transaction number used with this id (Retryable Writes spec,
    /// "Generating Transaction IDs": preserved across reuse from the pool).
    pub txn_number: i64,
    /// Took part in a network error: discarded instead of going back to the pool.
    pub dirty: bool,
}

impl ServerSession {
    /// A new session with a locally generated version 4 UUID (spec, "Generating a
    /// session ID locally"; RFC 4122 section 4.4).
    fn generate(now: Instant) -> Result<ServerSession> {
        let mut uuid = [0u8; 16];
        getrandom::fill(&mut uuid).map_err(|error| {
            Error::invalid_argument(format!(
                "cannot generate a session id: no source of randomness ({error})"
            ))
        })?;
        uuid[6] = (uuid[6] & 0x0f) | 0x40; // version 4
        uuid[8] = (uuid[8] & 0x3f) | 0x80; // RFC 4122 variant
        let id = Binary {
            subtype: BinarySubtype::Uuid,
            bytes: uuid.to_vec(),
        };
        Ok(ServerSession {
            id: doc! { "id": id },
            last_use: now,
            txn_number: 0,
            dirty: false,
        })
    }

    /// Whether the server would expire this session within a minute, given the
    /// deployment's `logicalSessionTimeoutMinutes` (none: sessions do not expire).
    fn about_to_expire(&self, now: Instant, timeout_minutes: Option<i64>) -> bool {
        let Some(minutes) = timeout_minutes else {
            return false;
        };
        // Saturating: a server may advertise any int64 (issue 41: i64::MAX minutes
        // overflowed here at the first operation), and a timeout longer than any
        // duration is one that never passes.
        let minutes = u64::try_from(minutes).unwrap_or(0);
        let timeout = Duration::from_secs(minutes.saturating_mul(60));
        let idle = now.saturating_duration_since(self.last_use);
        idle + EXPIRY_MARGIN >= timeout
    }
}

/// The client's pool of server sessions: a double-ended queue, most recently released
/// at the front (spec, "Server Session Pool").
#[derive(Debug, Default)]
pub(crate) struct ServerSessionPool {
    sessions: Mutex<VecDeque<ServerSession>>,
}

impl ServerSessionPool {
    /// A session for an operation (spec, "Algorithm to acquire a ServerSession"): the
    /// most recently released one that is not about to expire, else a new one. In
    /// load-balanced mode sessions are reused whatever their age (Load Balancer spec,
    /// "Session Expiration").
    pub fn acquire(
        &self,
        now: Instant,
        timeout_minutes: Option<i64>,
        load_balanced: bool,
    ) -> Result<ServerSession> {
        let mut sessions = lock(&self.sessions);
        while let Some(session) = sessions.pop_front() {
            if load_balanced || !session.about_to_expire(now, timeout_minutes) {
                return Ok(session);
            }
        }
        drop(sessions);
        ServerSession::generate(now)
    }

    /// Gives a session back (spec, "Algorithm to return a ServerSession"): sessions
    /// about to expire are pruned from the back first; a dirty or expiring session is
    /// discarded; any other goes to the front.
    pub fn release(&self, session: ServerSession, now: Instant, timeout_minutes: Option<i64>) {
        let mut sessions = lock(&self.sessions);
        while sessions
            .back()
            .is_some_and(|oldest| oldest.about_to_expire(now, timeout_minutes))
        {
            sessions.pop_back();
        }
        if !session.dirty && !session.about_to_expire(now, timeout_minutes) {
            sessions.push_front(session);
        }
    }

    /// Empties the pool: the ids of the sessions it held, for `endSessions`.
    pub fn drain(&self) -> Vec<Document> {
        lock(&self.sessions)
            .drain(..)
            .map(|session| session.id)
            .collect()
    }

    /// The ids of the pooled sessions, most recently used first.
    #[cfg(test)]
    fn ids(&self) -> Vec<Document> {
        lock(&self.sessions)
            .iter()
            .map(|session| session.id.clone())
            .collect()
    }
}

/// The highest `$clusterTime` the client has seen (spec, "Gossipping the cluster
/// time").
#[derive(Debug, Default)]
pub(crate) struct LatestClusterTime {
    latest: Mutex<Option<Document>>,
}

impl LatestClusterTime {
    /// The highest cluster time seen so far.
    pub fn get(&self) -> Option<Document> {
        lock(&self.latest).clone()
    }

    /// Keeps `candidate` if it is later than the one held.
    pub fn advance(&self, candidate: &Document) {
        advance(&mut lock(&self.latest), candidate);
    }
}

/// A deployment's logical time: the `$clusterTime` the servers gossip (Driver Sessions
/// spec, "Gossipping the cluster time"), as [`ClientSession::cluster_time`] returns it
/// and [`ClientSession::advance_cluster_time`] takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClusterTime(Document);

impl ClusterTime {
    /// Its `clusterTime` timestamp.
    pub fn timestamp(&self) -> Option<Timestamp> {
        timestamp_of(&self.0)
    }
}

/// The `clusterTime` timestamp of a `$clusterTime` document.
fn timestamp_of(cluster_time: &Document) -> Option<Timestamp> {
    match cluster_time.get("clusterTime") {
        Some(Bson::Timestamp(timestamp)) => Some(*timestamp),
        _ => None,
    }
}

/// Replaces `held` by `candidate` when the candidate's `clusterTime` is later.
fn advance(held: &mut Option<Document>, candidate: &Document) {
    let Some(new) = timestamp_of(candidate) else {
        return;
    };
    let later = match held.as_ref().and_then(timestamp_of) {
        Some(old) => (new.time, new.increment) > (old.time, old.increment),
        None => true,
    };
    if later {
        *held = Some(candidate.clone());
    }
}

/// A reply's `$clusterTime`, if it has a readable one.
pub(crate) fn cluster_time_of(reply: &RawDocument) -> Option<Document> {
    reply_times(reply).0
}

/// A reply's readable `$clusterTime` and `operationTime`, in one pass over it: the
/// server puts both after the rest of the reply, so two lookups would walk every
/// reply twice (issue 46: the lookups were an eighth of a run command's instructions).
/// The first of a repeated key counts, as with a lookup.
fn reply_times(reply: &RawDocument) -> (Option<Document>, Option<Timestamp>) {
    let (mut cluster_time, mut operation_time) = (None, None);
    let (mut cluster_time_seen, mut operation_time_seen) = (false, false);
    for element in reply.iter_elements() {
        let Ok(element) = element else { break };
        match element.key().as_str() {
            "$clusterTime" if !cluster_time_seen => {
                cluster_time_seen = true;
                cluster_time = element
                    .value()
                    .ok()
                    .and_then(|value| value.as_document())
                    .and_then(|document| Document::try_from(document).ok());
            }
            "operationTime" if !operation_time_seen => {
                operation_time_seen = true;
                operation_time = element.value().ok().and_then(|value| value.as_timestamp());
            }
            _ => {}
        }
        if cluster_time_seen && operation_time_seen {
            break;
        }
    }
    (cluster_time, operation_time)
}

/// The later of two optional cluster times.
pub(crate) fn later_cluster_time(a: Option<Document>, b: Option<Document>) -> Option<Document> {
    let mut held = a;
    if let Some(b) = &b {
        advance(&mut held, b);
    }
    held
}

/// Options of an explicit session.
///
/// ```
/// use anymongo::session::SessionOptions;
/// let options = SessionOptions { causal_consistency: Some(false), ..SessionOptions::default() };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct SessionOptions {
    /// Reads see the session's earlier writes and reads (Causal Consistency spec).
    /// Default `true`, unless `snapshot` is set.
    pub causal_consistency: Option<bool>,
    /// Every read of the session sees the same snapshot of the data (Snapshot Reads
    /// spec; MongoDB 5.0+). Default `false`; excludes `causal_consistency`.
    pub snapshot: Option<bool>,
    /// The snapshot's time, when `snapshot` is set; when unset, the time the first
    /// find, aggregate or distinct of the session read at.
    pub snapshot_time: Option<Timestamp>,
    /// The options of the session's transactions where
    /// [`ClientSession::start_transaction`] leaves them unset (Transactions spec,
    /// "defaultTransactionOptions"); what these leave unset comes from the client.
    pub default_transaction_options: Option<TransactionOptions>,
    /// `defaultTimeoutMS` (Client Side Operations Timeout spec, "Sessions"): the
    /// timeoutMS of the session's commitTransaction, abortTransaction,
    /// convenient transactions (`and_run2`) and end; the client's timeoutMS when unset.
    pub default_timeout: Option<std::time::Duration>,
}

impl SessionOptions {
    /// Refuses the combinations the specs rule out (Snapshot Reads spec, "snapshot",
    /// "snapshotTime").
    fn validate(&self) -> Result<()> {
        let snapshot = self.snapshot == Some(true);
        if snapshot && self.causal_consistency == Some(true) {
            return Err(Error::invalid_argument(
                "a session cannot be both snapshot and causally consistent",
            ));
        }
        if self.snapshot_time.is_some() && !snapshot {
            return Err(Error::invalid_argument(
                "snapshot_time is only allowed in a snapshot session (snapshot: true)",
            ));
        }
        Ok(())
    }
}

/// A session: a sequence of operations the server relates to each other. Cheap to
/// clone; clones are the same session.
///
/// An explicit session comes from
/// [`Client::start_session`](crate::Client::start_session) and is passed to the
/// `*_with_session` methods; its reads are causally consistent by default (they see
/// its earlier writes). It ends when [`end_session`](Self::end_session) is called or
/// the last clone is dropped, and its server session then goes back to the client's
/// pool. Like the other drivers' sessions, one session serves one operation at a time:
/// do not run operations of the same session concurrently.
///
/// A session's server-side state expires after `logicalSessionTimeoutMinutes` (30 by
/// default) without use; the server session a new session gets from the pool may have
/// as little as one minute left, so an application that waits more than a minute
/// between starting a session and using it risks an error for an expired session.
///
/// Unacknowledged writes (`w: 0`) never send a session id.
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// let session = client.start_session().await?;
/// let orders = client.database("shop").collection::<Document>("orders");
/// orders.insert_one(doc! { "item": "tea" }).session(&session).await?;
/// // Causally consistent: this read sees the insert, even from a secondary.
/// let found = orders.find_one(doc! { "item": "tea" }).session(&session).await?;
/// assert!(found.is_some());
/// session.end_session();
/// # Ok(()) }
/// ```
pub struct ClientSession {
    inner: Arc<SessionInner>,
    /// The timeoutMS this handle's commit, abort and convenient transactions (`and_run2`) use, when
    /// [`ClientSession::with_timeout`] gave one.
    timeout: Option<Duration>,
    /// The cluster times [`ClientSession::cluster_time`] lent out through this handle.
    lent: LentClusterTimes,
}

impl Clone for ClientSession {
    /// Another handle of the same session (its state is shared), which has lent
    /// nothing yet.
    fn clone(&self) -> Self {
        ClientSession {
            inner: self.inner.clone(),
            timeout: self.timeout,
            lent: LentClusterTimes::default(),
        }
    }
}

/// The cluster times a session handle lent out as `&ClusterTime` (the official
/// crate's `cluster_time(&self) -> Option<&ClusterTime>`): the session's own cluster
/// time sits behind its lock, where other handles and the session's operations advance
/// it, so each value lent stays here, unchanged, while a borrow of the handle may
/// still point at it. A chain that only grows through `&self`, by one link for each
/// new value lent; emptied when the handle is next borrowed mutably (no borrow can
/// remain then: every operation given `.session(&mut session)`) or dropped.
#[derive(Default)]
struct LentClusterTimes {
    first: OnceLock<Box<LentClusterTime>>,
}

struct LentClusterTime {
    time: ClusterTime,
    next: OnceLock<Box<LentClusterTime>>,
}

impl LentClusterTimes {
    /// `current`, from the link that holds it: the last one, or a new one after it.
    fn lend(&self, current: Document) -> &ClusterTime {
        let mut slot = &self.first;
        loop {
            let link = slot.get_or_init(|| {
                Box::new(LentClusterTime {
                    time: ClusterTime(current.clone()),
                    next: OnceLock::new(),
                })
            });
            if link.next.get().is_none() && link.time.0 == current {
                return &link.time;
            }
            slot = &link.next;
        }
    }
}

impl Drop for LentClusterTimes {
    /// Unlinks the chain link by link, so that a long chain does not recurse.
    fn drop(&mut self) {
        let mut next = self.first.take();
        while let Some(mut link) = next {
            next = link.next.take();
        }
    }
}

struct SessionInner {
    /// The executor of the client that started the session.
    executor: Arc<Executor>,
    options: SessionOptions,
    implicit: bool,
    /// Its `lsid`, set when it takes its server session, which it keeps for its life.
    id: OnceLock<Document>,
    state: Mutex<SessionState>,
    /// An explicit session counts among the client's live handles until its last
    /// clone is dropped: a shutdown waits for it.
    _live: Option<TaskGuard>,
}

/// What a session's transaction is pinned to, from its first command until it ends
/// (Transactions spec, "Mongos Pinning", "When to unpin").
#[derive(Clone)]
pub(crate) enum Pin {
    /// Load-balanced mode: the connection of the first command (Load Balancer spec,
    /// "Behaviour With Transactions").
    Connection(PinnedConnection),
    /// A sharded cluster: the mongos the first command was sent to.
    Mongos(Arc<Server>),
}

impl Pin {
    /// The server pinned to: the mongos, or the load balancer.
    fn address(&self) -> &ServerAddress {
        match self {
            Pin::Connection(connection) => &connection.server().address,
            Pin::Mongos(server) => &server.address,
        }
    }
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pin::Connection(connection) => connection.fmt(f),
            Pin::Mongos(server) => f.debug_tuple("Mongos").field(&server.address).finish(),
        }
    }
}

#[derive(Debug, Default)]
struct SessionState {
    /// An explicit session's is taken from the pool when it starts; an implicit
    /// session's at its first command, after a connection was checked out (spec,
    /// "Sessions and Connections": "Explicit sessions MAY be changed to allocate a
    /// server session similarly", which anymongo does not, so that `id()` is there
    /// from the start as in the official drivers).
    server_session: Option<ServerSession>,
    cluster_time: Option<Document>,
    operation_time: Option<Timestamp>,
    /// A snapshot session's time: given, or read from its first snapshot read.
    snapshot_time: Option<Timestamp>,
    /// Its transaction (Transactions spec).
    transaction: Transaction,
    /// What its transaction is pinned to.
    pinned: Option<Pin>,
    /// While a convenient transaction (`and_run2`) runs with timeoutMS: the context whose
    /// deadline the operations in the session share.
    transaction_context: Option<OperationContext>,
    /// The span of its open transaction, which the operations in it nest in
    /// (OpenTelemetry spec, "Transactions"), while the client traces.
    transaction_span: Option<tracing::Span>,
    ended: bool,
}

/// Lets an action's `.session(…)` take `&mut ClientSession`, as the official driver's
/// does, and `&ClientSession`, since a session synchronizes its own state.
impl<'a> From<&'a mut ClientSession> for &'a ClientSession {
    fn from(session: &'a mut ClientSession) -> Self {
        // Nothing borrows the handle any more: what it lent can go.
        session.lent = LentClusterTimes::default();
        session
    }
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.inner.state);
        f.debug_struct("ClientSession")
            .field("id", &state.server_session.as_ref().map(|s| &s.id))
            .field("implicit", &self.inner.implicit)
            .field("options", &self.inner.options)
            .field("ended", &state.ended)
            .finish_non_exhaustive()
    }
}

impl ClientSession {
    /// An explicit session, if `options` are consistent.
    pub(crate) fn explicit(
        executor: Arc<Executor>,
        options: SessionOptions,
    ) -> Result<ClientSession> {
        options.validate()?;
        let session = ClientSession::new(executor, options, false);
        session.use_server_session(false)?;
        Ok(session)
    }

    /// The session the driver starts for one operation.
    pub(crate) fn implicit(executor: Arc<Executor>) -> ClientSession {
        ClientSession::new(executor, SessionOptions::default(), true)
    }

    fn new(executor: Arc<Executor>, options: SessionOptions, implicit: bool) -> ClientSession {
        let state = SessionState {
            snapshot_time: options.snapshot_time,
            ..SessionState::default()
        };
        ClientSession::with_state(executor, options, implicit, state)
    }

    fn with_state(
        executor: Arc<Executor>,
        options: SessionOptions,
        implicit: bool,
        state: SessionState,
    ) -> ClientSession {
        ClientSession {
            inner: Arc::new(SessionInner {
                options,
                implicit,
                id: OnceLock::new(),
                state: Mutex::new(state),
                _live: (!implicit).then(|| executor.live_handle()),
                executor,
            }),
            timeout: None,
            lent: LentClusterTimes::default(),
        }
    }

    /// The executor of the client that started the session: its operations run there.
    pub(crate) fn executor(&self) -> &Arc<Executor> {
        &self.inner.executor
    }

    /// The timeoutMS of the session's own operations (commitTransaction,
    /// abortTransaction, convenient transactions (`and_run2`), its end): this handle's
    /// ([`with_timeout`](Self::with_timeout)), else the session's `default_timeout`,
    /// else the client's (Client Side Operations Timeout spec, "Sessions").
    pub fn default_timeout(&self) -> Option<Duration> {
        self.timeout.or(self.inner.options.default_timeout).or(self
            .inner
            .executor
            .options()
            .timeout)
    }

    /// The same session (a clone of the handle) whose commit, abort and
    /// convenient transactions (`and_run2`) run with `timeout` as their timeoutMS: the operation-level
    /// timeoutMS of those operations.
    ///
    /// ```no_run
    /// # async fn example(session: anymongo::session::ClientSession) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// session.with_timeout(Duration::from_secs(2)).abort_transaction().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: Duration) -> ClientSession {
        ClientSession {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// This handle with `timeout`, when given: the operation-level timeoutMS of an
    /// action of the session (`.timeout(…)`).
    pub(crate) fn with_operation_timeout(
        &self,
        timeout: Option<Duration>,
    ) -> std::borrow::Cow<'_, ClientSession> {
        match timeout {
            Some(timeout) => std::borrow::Cow::Owned(self.with_timeout(timeout)),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The context an operation in the session runs in while
    /// a convenient transaction (`and_run2`) bounds the whole transaction:
    /// its deadline, an id of the operation's own.
    pub(crate) fn transaction_context(&self) -> Option<OperationContext> {
        let stored = lock(&self.inner.state).transaction_context?;
        Some(OperationContext {
            id: OperationContext::new().id,
            ..stored
        })
    }

    /// The span of the open transaction, if the client traces.
    pub(crate) fn transaction_span(&self) -> Option<tracing::Span> {
        lock(&self.inner.state).transaction_span.clone()
    }

    /// Sets (or, with `None`, ends) the span of [`Self::transaction_span`].
    pub(crate) fn set_transaction_span(&self, span: Option<tracing::Span>) {
        lock(&self.inner.state).transaction_span = span;
    }

    /// Sets (or, with `None`, clears) the context of [`Self::transaction_context`].
    pub(crate) fn set_transaction_context(&self, context: Option<OperationContext>) {
        lock(&self.inner.state).transaction_context = context;
    }

    /// The options the session was started with.
    pub fn options(&self) -> &SessionOptions {
        &self.inner.options
    }

    /// Whether the driver started this session for one operation.
    pub(crate) fn is_implicit(&self) -> bool {
        self.inner.implicit
    }

    /// Whether the session's reads are causally consistent (explicit sessions, unless
    /// turned off).
    pub(crate) fn is_causally_consistent(&self) -> bool {
        !self.inner.implicit
            && !self.is_snapshot()
            && self.inner.options.causal_consistency != Some(false)
    }

    /// Whether this is a snapshot session.
    pub(crate) fn is_snapshot(&self) -> bool {
        self.inner.options.snapshot == Some(true)
    }

    /// A snapshot session's time: given in its options, or the time its first find,
    /// aggregate or distinct read at; `None` before then and in other sessions (Snapshot
    /// Reads spec, "ClientSession changes": on a session that is not a snapshot session,
    /// drivers "MUST either raise an error when the property is accessed or return an
    /// unset value"; anymongo, as the official crate, returns `None`). Read-only: a
    /// session's snapshot time is set only by its options or its first read.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// let session = client.start_session().snapshot(true).await?;
    /// let coll = client.database("shop").collection::<Document>("orders");
    /// coll.find_one(doc! {}).session(&session).await?;
    /// if let Some(time) = session.snapshot_time() {
    ///     // Another snapshot session that reads the same snapshot.
    ///     let again = client.start_session().snapshot(true).snapshot_time(time).await?;
    ///     # let _ = again;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn snapshot_time(&self) -> Option<Timestamp> {
        lock(&self.inner.state).snapshot_time
    }

    /// The `readConcern` every command of a snapshot session carries, but getMore and
    /// killCursors (which belong to a cursor already opened at the snapshot):
    /// `{ level: "snapshot" }`, with `atClusterTime` once the snapshot's time is known
    /// (Snapshot Reads spec, "Snapshot Read Commands"). `None` outside snapshot
    /// sessions.
    pub(crate) fn snapshot_read_concern(&self) -> Option<Document> {
        if !self.is_snapshot() {
            return None;
        }
        let mut read_concern = bson::doc! { "level": "snapshot" };
        if let Some(time) = self.snapshot_time() {
            read_concern.insert("atClusterTime", time);
        }
        Some(read_concern)
    }

    /// Whether the server session was marked dirty by a network error: it will be
    /// discarded rather than pooled when the session ends (Driver Sessions spec,
    /// "Server Session Pool"). `false` before the session ran a command.
    pub fn is_dirty(&self) -> bool {
        lock(&self.inner.state)
            .server_session
            .as_ref()
            .is_some_and(|session| session.dirty)
    }

    /// The session id (`lsid`, `{ id: UUID }`), the same for the session's life.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::error::Result<()> {
    /// let session = client.start_session().await?;
    /// assert!(session.id().contains_key("id"));
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &Document {
        // Set when the session takes its server session: at the start of an explicit
        // session (the only kind an application holds), so never empty there.
        static NONE_YET: LazyLock<Document> = LazyLock::new(Document::new);
        self.inner.id.get().unwrap_or(&NONE_YET)
    }

    /// The latest cluster time this session has seen.
    ///
    /// A reference, as in the official crate: the value stays as it was while it is
    /// borrowed, though the session's cluster time may advance meanwhile (through
    /// another handle, or an operation given `.session(&session)`). Each new value
    /// lent through a shared borrow is kept until the handle is next borrowed mutably
    /// (`.session(&mut session)`) or dropped.
    pub fn cluster_time(&self) -> Option<&ClusterTime> {
        let current = lock(&self.inner.state).cluster_time.clone()?;
        Some(self.lent.lend(current))
    }

    /// The `operationTime` of the last reply in this session.
    pub fn operation_time(&self) -> Option<Timestamp> {
        lock(&self.inner.state).operation_time
    }

    /// Advances the session's cluster time to `cluster_time` if it is later (spec,
    /// "advanceClusterTime"); the client's is left alone. With
    /// [`advance_operation_time`](Self::advance_operation_time), this makes a session
    /// causally consistent with another's operations:
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// let first = client.start_session().await?;
    /// // … operations in `first` …
    /// let second = client.start_session().await?;
    /// if let (Some(cluster_time), Some(operation_time)) =
    ///     (first.cluster_time(), first.operation_time())
    /// {
    ///     second.advance_cluster_time(&cluster_time);
    ///     second.advance_operation_time(operation_time);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn advance_cluster_time(&self, cluster_time: &ClusterTime) {
        advance(&mut lock(&self.inner.state).cluster_time, &cluster_time.0);
    }

    /// Advances the session's operation time to `operation_time` if it is later.
    pub fn advance_operation_time(&self, operation_time: Timestamp) {
        let mut state = lock(&self.inner.state);
        let later = state.operation_time.is_none_or(|held| {
            (operation_time.time, operation_time.increment) > (held.time, held.increment)
        });
        if later {
            state.operation_time = Some(operation_time);
        }
    }

    /// Ends the session: its server session goes back to the client's pool and any
    /// later operation with it fails. Calling it again does nothing.
    ///
    /// A transaction in progress is aborted (Transactions spec, "endSession changes"),
    /// without waiting: on a runtime that can spawn tasks, in a task of its own;
    /// otherwise before the client's next operation. [`close`](Self::close) waits for
    /// it instead.
    pub fn end_session(&self) {
        if let Some(pending) = self.take_for_end() {
            self.inner.executor.abort_later(pending);
        }
    }

    /// Ends the session like [`end_session`](Self::end_session), but aborts a
    /// transaction in progress first and waits for that (its errors are ignored).
    pub async fn close(&self) {
        if let Some(pending) = self.take_for_end() {
            pending.end(&self.inner.executor).await;
        }
    }

    /// Marks the session ended and takes its server session: released to the pool
    /// here, unless a transaction in progress must be aborted with it first.
    fn take_for_end(&self) -> Option<PendingAbort> {
        let (server_session, transaction, pinned) = {
            let mut state = lock(&self.inner.state);
            state.ended = true;
            (
                state.server_session.take(),
                std::mem::take(&mut state.transaction),
                state.pinned.take(),
            )
        };
        // A pinned connection is released with the session (Transactions spec, "When
        // to unpin", 6), after the abort of a transaction in progress.
        PendingAbort::of(&self.inner.executor, server_session, transaction, pinned)
    }

    /// Whether the session has ended.
    pub fn has_ended(&self) -> bool {
        lock(&self.inner.state).ended
    }

    /// The session id to send with a command, taking a server session from the pool
    /// first if the session has none yet; also advances the transaction number when
    /// `next_txn_number` (a retryable write's first attempt) and returns it.
    pub(crate) fn use_server_session(&self, next_txn_number: bool) -> Result<(Document, i64)> {
        let executor = &self.inner.executor;
        let mut state = lock(&self.inner.state);
        if state.ended {
            return Err(Error::invalid_argument(
                "the session has ended: start a new one",
            ));
        }
        let now = executor.now();
        let session = match &mut state.server_session {
            Some(session) => session,
            empty => {
                let session = empty.insert(executor.acquire_server_session(now)?);
                // The only server session this session takes: `id()` keeps its lsid.
                let _ = self.inner.id.set(session.id.clone());
                session
            }
        };
        session.last_use = now;
        if next_txn_number {
            session.txn_number += 1;
        }
        Ok((session.id.clone(), session.txn_number))
    }

    /// Marks the server session dirty after a network error (spec, "Server Session
    /// Pool"): it is discarded instead of reused.
    pub(crate) fn mark_dirty(&self) {
        if let Some(session) = &mut lock(&self.inner.state).server_session {
            session.dirty = true;
        }
    }

    /// Records what a reply says of time: its `$clusterTime` (for the session and the
    /// client) and `operationTime`.
    pub(crate) fn observe_reply(&self, reply: &RawDocument) {
        let (cluster_time, operation_time) = reply_times(reply);
        if let Some(cluster_time) = cluster_time {
            self.inner.executor.advance_cluster_time(&cluster_time);
            advance(&mut lock(&self.inner.state).cluster_time, &cluster_time);
        }
        if let Some(operation_time) = operation_time {
            self.advance_operation_time(operation_time);
        }
        if self.is_snapshot() {
            // find and aggregate say it in their cursor, distinct at the top level
            // (Snapshot Reads spec, "Server Command Responses"); the first one sets it.
            let at = reply
                .get_document("cursor")
                .and_then(|cursor| cursor.get_timestamp("atClusterTime"))
                .or_else(|_| reply.get_timestamp("atClusterTime"));
            if let Ok(at) = at {
                let mut state = lock(&self.inner.state);
                state.snapshot_time.get_or_insert(at);
            }
        }
    }

    /// The `$clusterTime` to send: the later of the client's and the session's.
    pub(crate) fn cluster_time_to_send(&self) -> Option<Document> {
        let own = lock(&self.inner.state).cluster_time.clone();
        later_cluster_time(self.inner.executor.cluster_time(), own)
    }

    /// The connection the session's transaction is pinned to (load-balanced mode).
    pub(crate) fn pinned(&self) -> Option<PinnedConnection> {
        match &lock(&self.inner.state).pinned {
            Some(Pin::Connection(connection)) => Some(connection.clone()),
            _ => None,
        }
    }

    /// The mongos the session's transaction is pinned to (a sharded cluster).
    pub(crate) fn pinned_mongos(&self) -> Option<Arc<Server>> {
        match &lock(&self.inner.state).pinned {
            Some(Pin::Mongos(server)) => Some(server.clone()),
            _ => None,
        }
    }

    /// The address of the server the session's transaction is pinned to: in a sharded
    /// cluster the mongos of its first command (Transactions spec, "Mongos Pinning"),
    /// in load-balanced mode the load balancer (whose connection it is pinned to).
    /// `None` when it is pinned to nothing: outside transactions, before their first
    /// command, after an error that unpins it ("When to unpin"), and in other
    /// deployments.
    pub fn pinned_server(&self) -> Option<ServerAddress> {
        lock(&self.inner.state)
            .pinned
            .as_ref()
            .map(|pin| pin.address().clone())
    }

    /// Pins the session's transaction to `pin`.
    pub(crate) fn pin(&self, pin: Pin) {
        let previous = lock(&self.inner.state).pinned.replace(pin);
        // Released outside the session's lock: it may check a connection in.
        drop(previous);
    }

    /// Unpins the session (Transactions spec, "When to unpin"): a connection pinned
    /// to goes back to the pool unless a cursor still holds it.
    pub(crate) fn unpin(&self) {
        let pinned = lock(&self.inner.state).pinned.take();
        drop(pinned);
    }

    /// Reads or changes the session's transaction; fails once the session has ended
    /// only if `change` does.
    pub(crate) fn update_transaction<R>(
        &self,
        change: impl FnOnce(&mut Transaction) -> Result<R>,
    ) -> Result<R> {
        change(&mut lock(&self.inner.state).transaction)
    }
}

/// The server session of an ended session whose transaction was in progress, to abort
/// before it goes back to the pool (Transactions spec, "endSession changes"). (No
/// executor here: the executor keeps the pending aborts, and must not keep itself
/// alive.)
pub(crate) struct PendingAbort {
    server_session: ServerSession,
    transaction: Transaction,
    /// What the transaction is pinned to: the abort runs there.
    pinned: Option<Pin>,
}

impl PendingAbort {
    /// What ending a session with `server_session` and `transaction` leaves to do: an
    /// abort when the transaction is in progress; otherwise the server session goes
    /// back to the pool now.
    fn of(
        executor: &Executor,
        server_session: Option<ServerSession>,
        transaction: Transaction,
        pinned: Option<Pin>,
    ) -> Option<PendingAbort> {
        let server_session = server_session?;
        if transaction.state != TransactionState::InProgress {
            executor.release_server_session(server_session);
            return None;
        }
        Some(PendingAbort {
            server_session,
            transaction,
            pinned,
        })
    }

    /// Aborts the transaction (errors are ignored), then the server session goes back
    /// to the pool, through a session of its own that holds them. Boxed: the abort is
    /// an operation, and an operation first runs the pending aborts.
    ///
    /// The session is made when the future first runs: a future dropped before (a
    /// runtime shutting down cancels what is spawned then) drops only the pending
    /// abort, where a session in progress would ask for its abort again as it drops,
    /// without end.
    pub(crate) fn end(self, executor: &Arc<Executor>) -> BoxFuture<'static, ()> {
        let executor = executor.clone();
        crate::rt::boxed(async move {
            let state = SessionState {
                server_session: Some(self.server_session),
                transaction: self.transaction,
                pinned: self.pinned,
                ..SessionState::default()
            };
            let session =
                ClientSession::with_state(executor, SessionOptions::default(), false, state);
            let _ = session.abort_transaction_in().await;
            // Dropping the session releases the server session.
        })
    }
}

impl Drop for SessionInner {
    fn drop(&mut self) {
        // No I/O here: the server session goes back to the pool, after the abort of a
        // transaction in progress (which the client runs later).
        let (server_session, transaction, pinned) = {
            let mut state = lock(&self.state);
            (
                state.server_session.take(),
                std::mem::take(&mut state.transaction),
                state.pinned.take(),
            )
        };
        if let Some(pending) = PendingAbort::of(&self.executor, server_session, transaction, pinned)
        {
            self.executor.abort_later(pending);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_excludes_causal_consistency_and_snapshot_time_needs_snapshot() {
        let both = SessionOptions {
            snapshot: Some(true),
            causal_consistency: Some(true),
            ..SessionOptions::default()
        };
        assert!(both.validate().is_err());
        let time_alone = SessionOptions {
            snapshot_time: Some(Timestamp {
                time: 1,
                increment: 1,
            }),
            ..SessionOptions::default()
        };
        assert!(time_alone.validate().is_err());
        let snapshot = SessionOptions {
            snapshot: Some(true),
            snapshot_time: Some(Timestamp {
                time: 1,
                increment: 1,
            }),
            ..SessionOptions::default()
        };
        assert!(snapshot.validate().is_ok());
        assert!(SessionOptions::default().validate().is_ok());
    }

    fn at(seconds: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(seconds))
    }

    #[test]
    fn generated_ids_are_version_4_uuids() {
        let session = ServerSession::generate(at(0)).unwrap();
        let Ok(Bson::Binary(binary)) = session.id.get("id").cloned().ok_or(()) else {
            panic!("no binary id: {:?}", session.id);
        };
        assert_eq!(binary.subtype, BinarySubtype::Uuid);
        assert_eq!(binary.bytes.len(), 16);
        assert_eq!(binary.bytes[6] >> 4, 4);
        assert_eq!(binary.bytes[8] & 0xc0, 0x80);
        let other = ServerSession::generate(at(0)).unwrap();
        assert_ne!(session.id, other.id);
    }

    #[test]
    fn the_pool_is_lifo() {
        let pool = ServerSessionPool::default();
        let first = pool.acquire(at(0), Some(30), false).unwrap();
        let second = pool.acquire(at(0), Some(30), false).unwrap();
        let (first_id, second_id) = (first.id.clone(), second.id.clone());
        pool.release(first, at(1), Some(30));
        pool.release(second, at(2), Some(30));
        assert_eq!(pool.ids(), vec![second_id.clone(), first_id]);
        assert_eq!(pool.acquire(at(3), Some(30), false).unwrap().id, second_id);
    }

    #[test]
    fn dirty_and_expiring_sessions_are_discarded() {
        let pool = ServerSessionPool::default();
        let mut dirty = pool.acquire(at(0), Some(30), false).unwrap();
        dirty.dirty = true;
        pool.release(dirty, at(1), Some(30));
        assert!(pool.ids().is_empty());
        // Last used at 0; at 29 minutes it has one minute left: discarded on return.
        let old = pool.acquire(at(0), Some(30), false).unwrap();
        pool.release(old, at(29 * 60), Some(30));
        assert!(pool.ids().is_empty());
    }

    #[test]
    fn expiring_sessions_are_pruned_from_the_back_and_skipped_on_acquire() {
        let pool = ServerSessionPool::default();
        let old = pool.acquire(at(0), Some(30), false).unwrap();
        pool.release(old, at(0), Some(30));
        let young = ServerSession::generate(at(28 * 60)).unwrap();
        let young_id = young.id.clone();
        // Returning `young` at 29 minutes prunes the old one at the back.
        pool.release(young, at(29 * 60), Some(30));
        assert_eq!(pool.ids(), vec![young_id.clone()]);
        // Acquiring at 58 minutes finds `young` about to expire: a new session.
        let acquired = pool.acquire(at(58 * 60), Some(30), false).unwrap();
        assert_ne!(acquired.id, young_id);
        assert!(pool.ids().is_empty());
    }

    #[test]
    fn a_session_timeout_of_any_int64_is_read_without_overflow() {
        // issue 41: `minutes * 60` overflowed for a hello's i64::MAX.
        let pool = ServerSessionPool::default();
        let session = pool.acquire(at(0), Some(i64::MAX), false).unwrap();
        let id = session.id.clone();
        pool.release(session, at(1), Some(i64::MAX));
        assert_eq!(pool.acquire(at(2), Some(i64::MAX), false).unwrap().id, id);
        // A negative timeout: every session is about to expire.
        pool.release(
            pool.acquire(at(0), Some(i64::MIN), false).unwrap(),
            at(1),
            Some(-1),
        );
        assert!(pool.ids().is_empty());
    }

    #[test]
    fn load_balanced_mode_reuses_sessions_whatever_their_age() {
        let pool = ServerSessionPool::default();
        let session = pool.acquire(at(0), None, true).unwrap();
        let id = session.id.clone();
        pool.release(session, at(1), None);
        assert_eq!(pool.acquire(at(10_000), Some(30), true).unwrap().id, id);
    }

    #[test]
    fn cluster_time_only_advances() {
        let clock = LatestClusterTime::default();
        let t = |time, increment| doc! { "clusterTime": Timestamp { time, increment }, "signature": {} };
        clock.advance(&t(5, 1));
        clock.advance(&t(4, 9));
        assert_eq!(clock.get(), Some(t(5, 1)));
        clock.advance(&t(5, 2));
        assert_eq!(clock.get(), Some(t(5, 2)));
        clock.advance(&doc! { "no": "timestamp" });
        assert_eq!(clock.get(), Some(t(5, 2)));
        assert_eq!(later_cluster_time(None, Some(t(1, 1))), Some(t(1, 1)));
        assert_eq!(
            later_cluster_time(Some(t(2, 1)), Some(t(1, 1))),
            Some(t(2, 1))
        );
    }
}
