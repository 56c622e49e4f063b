//! Cursors (Find, getMore and killCursors Commands spec): the results of a `find`,
//! `aggregate` or any cursor command, as a [`futures::Stream`].
//!
//! The first batch comes with the command's reply; later ones from `getMore` on the
//! same server, in the same session. A cursor dropped before its end is killed
//! (`killCursors`): at once on a runtime that can spawn, otherwise (single-threaded
//! mode: a wasi:http handler, a Worker) written just ahead of the client's next
//! command to the cursor's server, whose round trip brings both replies back — it
//! costs that request no round trip; dropping never needs a runtime. A cursor pinned
//! to a connection (load-balanced mode) is killed on that connection before the next
//! operation.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tracing::Instrument;

use bson::raw::RawBsonRef;
use bson::{doc, Bson, Document, RawDocument, RawDocumentBuf};
use futures::Stream;
use serde::de::DeserializeOwned;

use crate::cluster::PinnedConnection;
use crate::cluster::Server;
use crate::cmap::PoolState;
use crate::error::{Error, ErrorKind, Result};
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::{
    Attempt, Command, Executor, Operation, OperationContext, PendingKill, ReplyContext, Target,
    TxnNumber,
};
use crate::rt::{boxed, BoxFuture, Instant};
use crate::session::ClientSession;
use crate::signal::{lock, TaskGuard};
use crate::uri::ServerAddress;

pub mod raw_batch;

/// How many empty batches in a row a cursor that is not tailable accepts before it
/// gives up on its server with an error (and kills the server cursor).
///
/// The spec allows an empty `nextBatch` with a live cursor "in the case of a tailable
/// cursor" (Find, getMore and killCursors Commands spec, "getMore" and "Tailable
/// cursors"): a non-tailable cursor's getMore returns documents or exhausts the
/// cursor, so an empty batch there is at most a rare hiccup. A server that answers
/// only that would keep the caller iterating forever, one getMore per round trip
/// (~7,700 a second on loopback). A hundred in a row leaves any hiccup a wide margin
/// and ends the hostile case within a hundred round trips.
pub const MAX_EMPTY_BATCHES: u32 = 100;

/// Whether `command` opens a tailable cursor: a `find` with `tailable: true`, or an
/// `aggregate` whose pipeline begins with `$changeStream` (a change stream's cursor
/// is tailable and awaitData: Change Streams spec, "Server Specification").
pub(crate) fn opens_tailable_cursor(command: &Document) -> bool {
    command.get_bool("tailable").unwrap_or(false)
        || command
            .get_array("pipeline")
            .ok()
            .and_then(|pipeline| pipeline.first())
            .and_then(Bson::as_document)
            .is_some_and(is_change_stream_stage)
}

/// Whether an aggregation stage is `$changeStream` (which must come first: its
/// pipeline's cursor is tailable).
pub(crate) fn is_change_stream_stage(stage: &Document) -> bool {
    stage.contains_key("$changeStream")
}

/// What a cursor's `timeoutMS` bounds (Client Side Operations Timeout spec,
/// "Cursors").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TimeoutMode {
    /// The command that opens the cursor and every getMore after it, together: the
    /// default of a cursor that is not tailable.
    CursorLifetime,
    /// The command, then each iteration separately: the only mode of a tailable
    /// cursor.
    Iteration,
}

/// Refuses the cursor options that contradict the operation's `timeout` (timeoutMS;
/// Client Side Operations Timeout spec, "Cursors"): a `mode` without timeoutMS, a
/// tailable cursor whose timeout would bound its lifetime, a getMore wait
/// (`max_await`) that is not shorter than timeoutMS, an aggregate that writes
/// (`writes`) iterated in [`TimeoutMode::Iteration`].
pub(crate) fn check_cursor_timeout(
    timeout: Option<std::time::Duration>,
    mode: Option<TimeoutMode>,
    tailable: bool,
    max_await: Option<std::time::Duration>,
    writes: bool,
) -> Result<()> {
    let refuse = |message: &str| Err(Error::invalid_argument(message));
    match (mode, timeout) {
        (Some(_), None) => return refuse("timeoutMode requires timeoutMS"),
        (Some(TimeoutMode::CursorLifetime), _) if tailable => {
            return refuse("a tailable cursor supports only the timeoutMode iteration")
        }
        (Some(TimeoutMode::Iteration), _) if writes => {
            return refuse("an aggregate with $out or $merge cannot use the timeoutMode iteration")
        }
        _ => {}
    }
    if let (Some(wait), Some(timeout)) = (max_await, timeout.filter(|limit| !limit.is_zero())) {
        if wait >= timeout {
            return refuse("maxAwaitTimeMS must be less than timeoutMS");
        }
    }
    Ok(())
}

/// What a cursor needs to ask for more: where it lives and how to ask.
#[derive(Clone)]
pub(crate) struct CursorSpec {
    /// The executor of the client that opened the cursor.
    pub executor: Arc<Executor>,
    /// The server that holds the cursor: every getMore goes there.
    pub server: Arc<Server>,
    /// The cursor's namespace, `database.collection`, as the server named it.
    pub database: String,
    pub collection: String,
    pub id: i64,
    /// `batchSize` of each getMore.
    pub batch_size: Option<u32>,
    /// `maxTimeMS` of each getMore (a tailable awaitData cursor's `maxAwaitTimeMS`).
    pub max_await_time: Option<Duration>,
    /// `comment` of each getMore.
    pub comment: Option<Bson>,
    /// A tailable cursor (a `find` with `tailable`, a change stream): its getMores
    /// may answer empty batches for as long as nothing new arrives, where any other
    /// cursor's empty batch with a live id is a server fault ([`MAX_EMPTY_BATCHES`]).
    pub tailable: bool,
    /// The session the cursor was created in (its getMores run in it too).
    pub session: Option<ClientSession>,
    /// Load-balanced mode: the connection the cursor is pinned to; its getMores and
    /// killCursors run on it, and it goes back to the pool with the last clone of
    /// the cursor's spec (Load Balancer spec, "Behaviour With Cursors").
    pub pinned: Option<PinnedConnection>,
    /// The timeoutMS of the operation that opened the cursor (Client Side Operations
    /// Timeout spec, "Cursors"), if set.
    pub timeout: Option<Duration>,
    /// That operation's deadline, which the getMores share while the cursor's
    /// timeoutMS bounds its lifetime.
    pub lifetime: Option<Instant>,
    /// Whether a getMore that failed with a server error (but CursorNotFound) kills
    /// the server cursor before the error is returned; not a change stream's, whose
    /// resume kills it.
    pub kills_on_error: bool,
    /// Whether timeoutMS bounds each iteration afresh instead (a tailable cursor's,
    /// or with [`TimeoutMode::Iteration`](crate::crud::TimeoutMode::Iteration)).
    pub iteration: bool,
    /// Counts the open server cursor among the client's live handles until the last
    /// clone of the spec is dropped (after its killCursors, when the cursor is dropped
    /// unexhausted): a shutdown waits for it.
    pub _live: Arc<TaskGuard>,
}

impl CursorSpec {
    /// The cursor an operation's reply opens on the server and in the session of
    /// `context`, named `database.collection` until the reply's `ns` says otherwise.
    pub fn new(
        context: &ReplyContext<'_>,
        database: &str,
        collection: &str,
        batch_size: Option<u32>,
    ) -> CursorSpec {
        CursorSpec {
            executor: context.executor.clone(),
            server: context.server.clone(),
            database: database.to_string(),
            collection: collection.to_string(),
            id: 0,
            batch_size,
            max_await_time: None,
            comment: None,
            tailable: false,
            session: context.session.cloned(),
            pinned: context.pinned.cloned(),
            timeout: context.operation.timeout,
            lifetime: context.operation.deadline,
            kills_on_error: true,
            iteration: false,
            _live: Arc::new(context.executor.live_handle()),
        }
    }

    /// The deadline of a getMore starting now: the cursor's lifetime's; or, when
    /// timeoutMS bounds each iteration, that of the call under way (`call`), which
    /// the first getMore of a call sets.
    pub(crate) fn get_more_deadline(&self, call: &mut Option<Instant>) -> Option<Instant> {
        if !self.iteration {
            return self.lifetime;
        }
        let timeout = self.timeout.filter(|limit| !limit.is_zero())?;
        Some(*call.get_or_insert_with(|| self.executor.now() + timeout))
    }

    /// The context of a getMore ending by `deadline`, never with a `maxTimeMS` of
    /// timeoutMS's.
    fn get_more_context(&self, deadline: Option<Instant>) -> OperationContext {
        OperationContext {
            timeout: self.timeout,
            deadline,
            max_time: false,
            ..OperationContext::new()
        }
    }

    /// Kills the server cursor this names (`killCursors`), waiting for the answer: for
    /// a change stream that resumes, and for a cursor whose `getMore` failed (a
    /// [`Cursor`] then forgets it) when the spec asks for the kill anyway (Bulk Write
    /// spec, "Top-Level Errors").
    pub(crate) async fn kill(&self) -> Result<()> {
        kill(&self.executor, PendingKill::of(self)).await
    }
}

/// The context of a killCursors starting now for a cursor opened with `timeout`
/// (timeoutMS): refreshed, whatever the cursor's mode (Client Side Operations Timeout
/// spec, "Cursors": close methods).
fn kill_context(executor: &Executor, timeout: Option<Duration>) -> OperationContext {
    OperationContext::with_timeout(timeout, executor.now())
}

/// One batch of a cursor reply.
pub(crate) struct Batch {
    pub id: i64,
    /// The whole reply, as the server sent it: a [`Cursor`] splits its documents off
    /// only as it reaches them, and a
    /// [`RawBatchCursor`](raw_batch::RawBatchCursor) hands it out whole, so that no
    /// document is copied before it is needed.
    pub reply: RawDocumentBuf,
    /// How many documents the batch holds.
    pub count: usize,
    /// `cursor.ns`, split.
    pub namespace: Option<(String, String)>,
    /// `cursor.postBatchResumeToken`: how far a change stream has scanned (Change
    /// Streams spec, "Response Format").
    pub post_batch_resume_token: Option<Document>,
}

/// `cursor.firstBatch` or `cursor.nextBatch` of a cursor reply.
pub(crate) fn batch_array(reply: &RawDocument) -> Option<&bson::RawArray> {
    let cursor = reply.get_document("cursor").ok()?;
    cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .ok()
}

impl Batch {
    /// Reads `cursor: { id, ns, firstBatch | nextBatch }` of a reply, checking that
    /// every element of the batch is a document.
    pub fn from_reply(reply: RawDocumentBuf, server: &ServerAddress) -> Result<Batch> {
        let malformed = |what: &str| {
            Error::invalid_response(
                server.to_string(),
                crate::wire::WireError::MalformedDocument(format!("cursor reply without {what}")),
            )
        };
        let cursor = reply
            .get_document("cursor")
            .map_err(|_| malformed("cursor"))?;
        let id = match cursor.get("id") {
            Ok(Some(RawBsonRef::Int64(id))) => id,
            Ok(Some(RawBsonRef::Int32(id))) => i64::from(id),
            _ => return Err(malformed("cursor.id")),
        };
        let batch = batch_array(&reply)
            .ok_or_else(|| malformed("cursor.firstBatch or cursor.nextBatch"))?;
        let mut count = 0;
        for document in batch {
            match document {
                Ok(RawBsonRef::Document(_)) => count += 1,
                _ => return Err(malformed("documents in its batch")),
            }
        }
        let namespace = cursor.get_str("ns").ok().and_then(|ns| {
            ns.split_once('.')
                .map(|(db, coll)| (db.to_string(), coll.to_string()))
        });
        let post_batch_resume_token = cursor
            .get_document("postBatchResumeToken")
            .ok()
            .map(Document::try_from)
            .transpose()
            .map_err(|_| malformed("a readable postBatchResumeToken"))?;
        Ok(Batch {
            id,
            reply,
            count,
            namespace,
            post_batch_resume_token,
        })
    }
}

/// The documents of a batch [`Batch::from_reply`] read, each copied out of the reply.
fn split(reply: &RawDocument) -> VecDeque<RawDocumentBuf> {
    batch_array(reply)
        .into_iter()
        .flatten()
        .filter_map(|document| match document {
            Ok(RawBsonRef::Document(document)) => Some(document.to_owned()),
            // `from_reply` refused any other.
            _ => None,
        })
        .collect()
}

/// The results of a query, one document at a time: a [`Stream`] of `Result<T>`, for any
/// `T: DeserializeOwned + 'static` (a `Document` is built from the batch's bytes without
/// serde, which is decided by `T`'s `TypeId`).
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// use futures::TryStreamExt;
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut cursor = orders.find(doc! { "qty": { "$gt": 1 } }).await?;
/// while let Some(order) = cursor.try_next().await? {
///     println!("{order}");
/// }
/// # Ok(()) }
/// ```
///
/// The [`Stream`] fetches batches until a document comes or the server has no more.
/// A tailable cursor's getMore answers empty batches while nothing new arrives: to get
/// control back after each, iterate with [`next_if_any`](Self::next_if_any) instead.
pub struct Cursor<T> {
    /// `None` once exhausted or after an error. Boxed: a cursor (and a change stream
    /// holding one) stays small to move around.
    spec: Option<Box<CursorSpec>>,
    /// The last batch received, whole, and how many documents it holds, until the
    /// iteration reaches it (then its documents go to `buffer`).
    unsplit: Option<(RawDocumentBuf, usize)>,
    buffer: VecDeque<RawDocumentBuf>,
    /// The `postBatchResumeToken` of the last batch, if it had one.
    post_batch_resume_token: Option<Document>,
    in_flight: Option<BoxFuture<'static, Result<Batch>>>,
    /// How many getMores in a row answered an empty batch with a live cursor id.
    empty_batches: u32,
    /// While a call (a `next`) is under way on a cursor whose timeoutMS bounds each
    /// iteration: that call's deadline, which all its getMores share (Client Side
    /// Operations Timeout spec, "Cursors": "the timeout MUST apply to the totality of
    /// all getMore's").
    call_deadline: Option<Instant>,
    /// The document [`advance`](Cursor::advance) moved to.
    current: Option<RawDocumentBuf>,
    /// Load-balanced mode, after a getMore failed: the server cursor and the
    /// connection pinned to it, which stays with the cursor until it is closed or
    /// dropped (Load Balancer spec, "Behaviour With Cursors"); that kills the server
    /// cursor on the connection, unless a network error broke it, then lets the
    /// connection go.
    failed_pinned: Option<Box<CursorSpec>>,
    _documents: PhantomData<fn() -> T>,
}

/// What a getMore gave ([`Cursor::poll_fetch`]).
enum Fetch {
    /// The next batch, whole, and how many documents it holds; the cursor's id and
    /// `postBatchResumeToken` are updated.
    Batch(RawDocumentBuf, usize),
    /// The server has no more.
    End,
    /// As [`Step::Failed`].
    Failed(Error, Option<Box<CursorSpec>>),
}

/// What one step of a cursor's iteration gave ([`Cursor::poll_step`]).
pub(crate) enum Step {
    /// The next document, as the server sent it.
    Document(RawDocumentBuf),
    /// A getMore answered with an empty batch (its `postBatchResumeToken`, if any, is
    /// now [`Cursor::post_batch_resume_token`]).
    EmptyBatch,
    /// The server has no more.
    End,
    /// A getMore failed; the cursor is closed, and the server cursor it named (which
    /// may still exist) is handed back.
    Failed(Error, Option<Box<CursorSpec>>),
}

impl<T> std::fmt::Debug for Cursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("id", &self.id())
            .field("buffered", &self.buffered())
            .finish_non_exhaustive()
    }
}

impl<T> Cursor<T> {
    /// A cursor from a command's first batch.
    pub(crate) fn new(mut spec: CursorSpec, first: Batch) -> Cursor<T> {
        if let Some((database, collection)) = first.namespace {
            spec.database = database;
            spec.collection = collection;
        }
        spec.id = first.id;
        let spec = (first.id != 0).then(|| Box::new(spec));
        Cursor {
            spec,
            unsplit: Some((first.reply, first.count)),
            buffer: VecDeque::new(),
            post_batch_resume_token: first.post_batch_resume_token,
            in_flight: None,
            empty_batches: 0,
            call_deadline: None,
            current: None,
            failed_pinned: None,
            _documents: PhantomData,
        }
    }

    /// The `postBatchResumeToken` of the last batch (change streams).
    pub(crate) fn post_batch_resume_token(&self) -> Option<&Document> {
        self.post_batch_resume_token.as_ref()
    }

    /// The session the cursor's getMores run in, while the server cursor is open.
    pub(crate) fn session(&self) -> Option<&ClientSession> {
        self.spec.as_ref().and_then(|spec| spec.session.as_ref())
    }

    /// One step of the iteration: the next buffered document, else the next batch
    /// (fetched with a getMore), reported as such when it is empty.
    pub(crate) fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        if let Some(document) = self.next_buffered() {
            return Poll::Ready(Step::Document(document));
        }
        Poll::Ready(match std::task::ready!(self.poll_fetch(cx)) {
            Fetch::Batch(reply, count) => {
                self.unsplit = Some((reply, count));
                match self.next_buffered() {
                    Some(document) => Step::Document(document),
                    None if self.spec.is_none() => Step::End,
                    None => Step::EmptyBatch,
                }
            }
            Fetch::End => Step::End,
            Fetch::Failed(error, spec) => Step::Failed(error, spec),
        })
    }

    /// The next document already received, splitting the last batch's off its reply
    /// when the iteration reaches them.
    fn next_buffered(&mut self) -> Option<RawDocumentBuf> {
        if self.buffer.is_empty() {
            if let Some((reply, _)) = self.unsplit.take() {
                self.buffer = split(&reply);
            }
        }
        self.buffer.pop_front()
    }

    /// The next batch, whole, `None` once the server has no more: the one received
    /// last if the iteration has not reached it, else the next from the server
    /// ([`poll_fetch`](Self::poll_fetch)), empty or not. What a
    /// [`RawBatchCursor`](raw_batch::RawBatchCursor) yields; a cursor iterated so
    /// never splits its batches.
    pub(crate) fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<RawDocumentBuf>>> {
        if let Some((reply, _)) = self.unsplit.take() {
            return Poll::Ready(Some(Ok(reply)));
        }
        let fetch = std::task::ready!(self.poll_fetch(cx));
        self.end_call();
        Poll::Ready(match fetch {
            Fetch::Batch(reply, _) => Some(Ok(reply)),
            Fetch::End => None,
            Fetch::Failed(error, spec) => Some(Err(self.failed(error, spec))),
        })
    }

    /// Fetches the next batch with a getMore, if the server cursor is open. A cursor
    /// that is not tailable fails after [`MAX_EMPTY_BATCHES`] empty batches in a row,
    /// its server cursor killed.
    fn poll_fetch(&mut self, cx: &mut Context<'_>) -> Poll<Fetch> {
        let Some(spec) = &mut self.spec else {
            return Poll::Ready(Fetch::End);
        };
        let call_deadline = &mut self.call_deadline;
        let in_flight = self.in_flight.get_or_insert_with(|| {
            let deadline = spec.get_more_deadline(call_deadline);
            boxed(get_more(CursorSpec::clone(spec), deadline))
        });
        let batch = match in_flight.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(batch) => batch,
        };
        self.in_flight = None;
        match batch {
            Ok(batch) => {
                spec.id = batch.id;
                self.post_batch_resume_token = batch.post_batch_resume_token;
                if batch.id == 0 {
                    // Exhausted: the implicit session goes back to the pool now
                    // (Sessions spec, "Server Session Pool").
                    self.spec = None;
                }
                self.empty_batches = match batch.count == 0 && batch.id != 0 {
                    true => self.empty_batches.saturating_add(1),
                    false => 0,
                };
                if let Some(spec) = self
                    .spec
                    .take_if(|spec| !spec.tailable && self.empty_batches >= MAX_EMPTY_BATCHES)
                {
                    let error = Error::new(ErrorKind::MisbehavingServer {
                        address: spec.server.address.to_string(),
                        message: format!(
                            "the server answered {MAX_EMPTY_BATCHES} getMores in a row on \
                             the cursor {} of {}.{} with an empty batch, though the cursor \
                             is not tailable; the cursor was killed",
                            spec.id, spec.database, spec.collection
                        ),
                    });
                    kill_later(*spec);
                    return Poll::Ready(Fetch::Failed(error, None));
                }
                Poll::Ready(Fetch::Batch(batch.reply, batch.count))
            }
            // A timed-out cursor stays open on the server: `close` kills it.
            Err(error) if error.is_operation_timeout() && spec.kills_on_error => {
                Poll::Ready(Fetch::Failed(error, None))
            }
            Err(error) => Poll::Ready(Fetch::Failed(error, self.spec.take())),
        }
    }

    /// The server-side cursor id; 0 once the server has no more.
    pub fn id(&self) -> i64 {
        self.spec.as_ref().map_or(0, |spec| spec.id)
    }

    /// The documents already fetched and not yet returned.
    pub fn buffered(&self) -> usize {
        self.buffer.len() + self.unsplit.as_ref().map_or(0, |(_, count)| *count)
    }

    /// The same cursor, yielding another type.
    pub fn with_type<U>(mut self) -> Cursor<U> {
        Cursor {
            spec: self.spec.take(),
            unsplit: self.unsplit.take(),
            buffer: std::mem::take(&mut self.buffer),
            post_batch_resume_token: self.post_batch_resume_token.take(),
            in_flight: self.in_flight.take(),
            empty_batches: self.empty_batches,
            call_deadline: self.call_deadline,
            current: self.current.take(),
            failed_pinned: self.failed_pinned.take(),
            _documents: PhantomData,
        }
    }

    /// Kills the server cursor now, waiting for the answer (dropping the cursor does it
    /// in the background).
    pub async fn close(mut self) -> Result<()> {
        self.in_flight = None;
        match self.spec.take().or_else(|| self.failed_pinned.take()) {
            Some(spec) => kill(&spec.executor, PendingKill::of(&spec)).await,
            None => Ok(()),
        }
    }
}

impl<T> Cursor<T> {
    /// The next document as the bytes the server sent, not deserialized (what a
    /// caller that hands documents on as BSON wants); `None` once exhausted.
    pub async fn next_raw(&mut self) -> Option<Result<RawDocumentBuf>> {
        std::future::poll_fn(|cx| self.poll_next_raw(cx)).await
    }

    /// [`next_if_any`](Self::next_if_any) without deserializing: the next document as
    /// the bytes the server sent, or `None` after one getMore that found nothing, or
    /// once the cursor is exhausted ([`is_alive`](Self::is_alive) says which).
    pub async fn next_raw_if_any(&mut self) -> Result<Option<RawDocumentBuf>> {
        let step = std::future::poll_fn(|cx| self.poll_step(cx)).await;
        self.end_call();
        match step {
            Step::Document(document) => Ok(Some(document)),
            Step::EmptyBatch | Step::End => Ok(None),
            Step::Failed(error, spec) => Err(self.failed(error, spec)),
        }
    }

    /// Whether the cursor may still return documents: some are buffered, or its server
    /// cursor is open (it is not exhausted, [closed](Self::close) or failed). A
    /// tailable cursor stays alive across empty batches until the server ends it.
    pub fn is_alive(&self) -> bool {
        self.buffered() > 0 || self.spec.is_some()
    }

    /// The `error` a getMore failed with, once the cursor is closed: a load-balanced
    /// cursor keeps its server cursor `spec` and pinned connection for `close` (or the
    /// drop) to kill and let go ([`get_more`] does not); any other's server cursor is
    /// gone, unreachable or already killed.
    fn failed(&mut self, error: Error, spec: Option<Box<CursorSpec>>) -> Error {
        self.failed_pinned = spec.filter(|spec| spec.pinned.is_some());
        error
    }

    /// Ends the call under way: the next getMore of a cursor whose timeoutMS bounds
    /// each iteration starts a new one.
    pub(crate) fn end_call(&mut self) {
        self.call_deadline = None;
    }

    /// Sets the deadline of the call under way (a change stream's `next`, whose
    /// resume shares it).
    pub(crate) fn set_call_deadline(&mut self, deadline: Option<Instant>) {
        self.call_deadline = deadline;
    }

    fn poll_next_raw(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<RawDocumentBuf>>> {
        let step = std::task::ready!(self.poll_step(cx));
        if !matches!(step, Step::EmptyBatch) {
            self.end_call();
        }
        Poll::Ready(match step {
            // Ask again, from the next poll: a server answering empty batches at once
            // must not hold the task (and a single-threaded executor) in a loop.
            Step::EmptyBatch => return crate::rt::poll_yield(cx),
            Step::Document(document) => Some(Ok(document)),
            Step::End => None,
            Step::Failed(error, spec) => Some(Err(self.failed(error, spec))),
        })
    }
}

impl<T: DeserializeOwned + 'static> Cursor<T> {
    /// The next document if there is one at hand: a buffered one, else the first of the
    /// batch that one getMore fetches. Unlike the [`Stream`], which fetches again until
    /// a document comes, returns `None` when that getMore answers an empty batch with
    /// the cursor still open — what a tailable cursor's getMore does while nothing new
    /// arrives (Find, getMore and killCursors Commands spec, "Tailable cursors") — so
    /// that the caller decides when to ask again. `None` also once the cursor is
    /// exhausted: [`is_alive`](Self::is_alive) says which. (The Node.js driver calls
    /// this `tryNext`.)
    ///
    /// A getMore in flight when the returned future is dropped is not lost: the next
    /// call (or poll of the [`Stream`]) takes its answer.
    ///
    /// ```no_run
    /// # async fn example<F>(client: anymongo::Client, pause: impl Fn() -> F) -> anymongo::Result<()>
    /// # where F: std::future::Future<Output = ()> {
    /// use anymongo::bson::{doc, Document};
    /// use anymongo::crud::{CursorType, FindOptions};
    /// let db = client.database("shop");
    /// db.create_collection("log").capped(true).size(1_048_576).await?;
    /// let log = db.collection::<Document>("log");
    /// let options = FindOptions { cursor_type: Some(CursorType::Tailable), ..Default::default() };
    /// let mut cursor = log.find(doc! {}).with_options(options).await?;
    /// while cursor.is_alive() {
    ///     match cursor.next_if_any().await? {
    ///         Some(entry) => println!("{entry}"),
    ///         // Nothing new yet: ask again after a pause of the application's choosing
    ///         // (with `CursorType::TailableAwait` the server waits for new data instead).
    ///         None => pause().await,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_if_any(&mut self) -> Result<Option<T>> {
        match self.next_raw_if_any().await? {
            Some(document) => deserialize(&document).map(Some),
            None => Ok(None),
        }
    }
}

impl<T> Cursor<T> {
    /// Moves to the next document, fetching a batch if needed: `false` once the
    /// cursor is exhausted. [`current`](Self::current) and
    /// [`deserialize_current`](Self::deserialize_current) then read the document (the
    /// official driver's way of iterating without a `Stream`).
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let mut cursor = orders.find(doc! {}).await?;
    /// while cursor.advance().await? {
    ///     println!("{:?}", cursor.current().get("item"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn advance(&mut self) -> Result<bool> {
        self.current = self.next_raw().await.transpose()?;
        Ok(self.current.is_some())
    }

    /// The document [`advance`](Self::advance) moved to, as the server sent it; an
    /// empty document before the first `advance` and after the last.
    pub fn current(&self) -> &RawDocument {
        match &self.current {
            Some(document) => document,
            None => empty_document(),
        }
    }

    /// The document [`advance`](Self::advance) moved to, as `T`; an
    /// [`ErrorKind::InvalidArgument`] error when there is none.
    pub fn deserialize_current(&self) -> Result<T>
    where
        T: DeserializeOwned + 'static,
    {
        match &self.current {
            Some(document) => deserialize(document),
            None => Err(Error::invalid_argument(
                "the cursor has no current document: call advance first (and only after \
                 it returned true)",
            )),
        }
    }
}

/// An empty BSON document.
fn empty_document() -> &'static RawDocument {
    static EMPTY: std::sync::OnceLock<RawDocumentBuf> = std::sync::OnceLock::new();
    EMPTY.get_or_init(RawDocumentBuf::new)
}

/// A cursor of an operation run in an explicit session (what a `find`, `aggregate`,
/// `list_indexes`… given `.session(…)` returns): its getMores run in that session,
/// which its iteration names, as the official driver's `SessionCursor` does.
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// use futures::TryStreamExt;
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut session = client.start_session().await?;
/// let mut cursor = orders.find(doc! {}).session(&mut session).await?;
/// while let Some(order) = cursor.next(&mut session).await.transpose()? {
///     println!("{order}");
/// }
/// let mut cursor = orders.find(doc! {}).session(&mut session).await?;
/// let all: Vec<Document> = cursor.stream(&mut session).try_collect().await?;
/// # let _ = all; Ok(()) }
/// ```
#[derive(Debug)]
pub struct SessionCursor<T> {
    cursor: Cursor<T>,
}

impl<T> SessionCursor<T> {
    /// The cursor `cursor` of an operation run in an explicit session.
    pub(crate) fn new(cursor: Cursor<T>) -> SessionCursor<T> {
        SessionCursor { cursor }
    }

    /// The next document, `None` once the cursor is exhausted.
    pub async fn next<'s>(&mut self, _session: impl Into<&'s ClientSession>) -> Option<Result<T>>
    where
        T: DeserializeOwned + 'static,
    {
        futures::StreamExt::next(&mut self.cursor).await
    }

    /// The documents as a [`Stream`], for `futures`' `StreamExt`/`TryStreamExt`.
    pub fn stream<'s>(
        &'s mut self,
        _session: impl Into<&'s ClientSession>,
    ) -> SessionCursorStream<'s, T> {
        SessionCursorStream {
            cursor: &mut self.cursor,
        }
    }

    /// Moves to the next document ([`Cursor::advance`]).
    pub async fn advance<'s>(&mut self, _session: impl Into<&'s ClientSession>) -> Result<bool> {
        self.cursor.advance().await
    }

    /// The document [`advance`](Self::advance) moved to ([`Cursor::current`]).
    pub fn current(&self) -> &RawDocument {
        self.cursor.current()
    }

    /// The document [`advance`](Self::advance) moved to, as `T`
    /// ([`Cursor::deserialize_current`]).
    pub fn deserialize_current(&self) -> Result<T>
    where
        T: DeserializeOwned + 'static,
    {
        self.cursor.deserialize_current()
    }

    /// The same cursor, yielding another type.
    pub fn with_type<U>(self) -> SessionCursor<U> {
        SessionCursor {
            cursor: self.cursor.with_type(),
        }
    }

    /// Whether the server may have more ([`Cursor::is_alive`]).
    pub fn is_alive(&self) -> bool {
        self.cursor.is_alive()
    }

    /// Kills the server cursor now, waiting for the answer ([`Cursor::close`]).
    pub async fn close(self) -> Result<()> {
        self.cursor.close().await
    }
}

/// An anymongo cursor carries its session: a [`SessionCursor`] can become a plain
/// [`Cursor`], iterated without naming the session (for code that handles the cursors
/// of operations with and without sessions alike).
impl<T> From<SessionCursor<T>> for Cursor<T> {
    fn from(cursor: SessionCursor<T>) -> Cursor<T> {
        cursor.cursor
    }
}

/// A [`SessionCursor`]'s documents as a [`Stream`] ([`SessionCursor::stream`]).
#[derive(Debug)]
pub struct SessionCursorStream<'c, T> {
    cursor: &'c mut Cursor<T>,
}

impl<T: DeserializeOwned + 'static> Stream for SessionCursorStream<'_, T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut *self.get_mut().cursor).poll_next(cx)
    }
}

impl<T: DeserializeOwned + 'static> Stream for Cursor<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .poll_next_raw(cx)
            .map(|item| item.map(|document| document.and_then(|document| deserialize(&document))))
    }
}

/// A document of a cursor's batch as `T`, straight from its bytes
/// ([`from_slice`](crate::bson_deserializer::from_slice): a `Document` as stored). This
/// is why a cursor's `T` is `'static`: it needs `T`'s `TypeId`.
pub(crate) fn deserialize<T: DeserializeOwned + 'static>(document: &RawDocument) -> Result<T> {
    crate::bson_deserializer::from_slice(document.as_bytes()).map_err(Error::deserialization)
}

impl<T> Drop for Cursor<T> {
    fn drop(&mut self) {
        if let Some(spec) = self.spec.take().or_else(|| self.failed_pinned.take()) {
            kill_later(*spec);
        }
    }
}

/// Kills the server cursor `spec` names without waiting: at once on a runtime that
/// can spawn, otherwise with the client's next command to its server
/// ([`Executor::send_pending_kills`]).
pub(crate) fn kill_later(spec: CursorSpec) {
    let pending = PendingKill::of(&spec);
    match spec.executor.runtime().spawner.clone() {
        Some(spawner) => spawner.spawn(boxed(async move {
            // Best effort: the server times idle cursors out anyway.
            let _ = kill(&spec.executor, pending).await;
        })),
        None => lock(spec.executor.pending_kills()).push(pending),
    }
}

/// The server's CursorNotFound error code.
const CURSOR_NOT_FOUND: i32 = 43;

/// Fetches the next batch of the cursor `spec` describes, by `deadline` if any.
async fn get_more(spec: CursorSpec, deadline: Option<Instant>) -> Result<Batch> {
    let mut operation = GetMore { spec: spec.clone() };
    let result = run_on_server(
        &spec.get_more_context(deadline),
        &spec.executor,
        &spec.server,
        &mut operation,
        spec.session.as_ref(),
        spec.pinned.as_ref(),
    )
    .await;
    if let Err(error) = &result {
        // A cursor that is not pinned is killed after a server error, so that it does
        // not linger on the server until it times out; one that timed out stays, for
        // `close` (or the drop) to kill with a timeoutMS of its own (Client Side
        // Operations Timeout spec, "Cursors"). A pinned cursor keeps its connection
        // until it is closed, which kills it there (Load Balancer spec, "Behaviour With
        // Cursors"): whoever holds the spec does (`Cursor::failed`, a change stream).
        let kills = spec.pinned.is_none()
            && spec.kills_on_error
            && !error.is_network_error()
            && !error.is_operation_timeout()
            && error.code() != Some(CURSOR_NOT_FOUND);
        if kills {
            // Best effort: the server times idle cursors out anyway.
            let _ = spec.kill().await;
        }
    }
    result
}

/// Runs `operation` on `server` (the server holding a cursor), an operation of its
/// own with no server selection, retried only after overload errors: on the cursor's
/// `pinned` connection if it has one.
async fn run_on_server<O: Operation>(
    context: &OperationContext,
    executor: &Arc<Executor>,
    server: &Arc<Server>,
    operation: &mut O,
    session: Option<&ClientSession>,
    pinned: Option<&PinnedConnection>,
) -> Result<O::Output> {
    let now = executor.now();
    if context.has_expired(now) {
        return Err(context.timeout_error("a getMore", None));
    }
    // A getMore or killCursors is an operation of its own (OpenTelemetry spec,
    // "Instrumenting Driver Operations").
    let span = executor.operation_span(operation, session);
    let run = async {
        // A getMore is retried after an overload error, on the cursor's server
        // (Client Backpressure spec: every command but the monitors' and the
        // handshake's).
        let options = executor.options();
        let mut retries = 0;
        loop {
            // Boxed: the command's state lives on the heap, so that polling the
            // cursor needs a shallow stack in debug builds.
            let result = Box::pin(run_on_server_now(
                context, executor, server, operation, session, pinned,
            ))
            .await;
            let error = match result {
                Err(error)
                    if crate::retry::is_overload_retryable(&error)
                        && options.retry_reads_or_default()
                        && retries < options.max_adaptive_retries_or_default() =>
                {
                    error
                }
                result => return result,
            };
            retries += 1;
            if !executor.back_off(context, retries, &error).await {
                return Err(error);
            }
        }
    };
    let result = run
        .instrument(span.clone())
        .await
        .map_err(|error| context.report(error, executor.now()));
    if let Err(error) = &result {
        crate::open_telemetry::record_error(&span, error);
    }
    result
}

async fn run_on_server_now<O: Operation>(
    context: &OperationContext,
    executor: &Arc<Executor>,
    server: &Arc<Server>,
    operation: &mut O,
    session: Option<&ClientSession>,
    pinned: Option<&PinnedConnection>,
) -> Result<O::Output> {
    let context = *context;
    if let Some(pinned) = pinned {
        let mut connection = pinned.take()?;
        let result = executor
            .run_on(
                &context,
                operation,
                &mut connection,
                on_server(server, session),
            )
            .await;
        pinned.place(connection);
        return result;
    }
    let mut pooled = executor.check_out_from(&context, server).await?;
    let result = executor
        .run_on(&context, operation, &mut pooled, on_server(server, session))
        .await;
    server.check_in(pooled);
    result
}

/// A cursor's command: on its server, in its session, without `$readPreference` or
/// a transaction number.
fn on_server<'a>(server: &'a Arc<Server>, session: Option<&'a ClientSession>) -> Attempt<'a> {
    Attempt {
        server,
        read_preference: None,
        session,
        txn_number: TxnNumber::None,
        pinned: None,
        min_rtt: Duration::ZERO,
    }
}

struct GetMore {
    spec: CursorSpec,
}

impl Operation for GetMore {
    type Output = Batch;

    fn name(&self) -> &str {
        "getMore"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "getMore",
            database: &self.spec.database,
            collection: Some(&self.spec.collection),
        }
    }

    fn target(&self) -> Target<'_> {
        // Never used: a getMore goes to the cursor's server without selection.
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        let spec = &self.spec;
        let mut body = doc! { "getMore": spec.id, "collection": spec.collection.as_str() };
        if let Some(size) = spec.batch_size.filter(|size| *size > 0) {
            body.insert("batchSize", i64::from(size));
        }
        if let Some(wait) = spec.max_await_time {
            body.insert("maxTimeMS", crate::bson_util::millis(wait));
        }
        if let Some(comment) = &spec.comment {
            body.insert("comment", comment.clone());
        }
        Ok(Command::new(spec.database.as_str(), body))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, context: ReplyContext<'_>) -> Result<Batch> {
        Batch::from_reply(reply, &context.server.address)
    }
}

impl PendingKill {
    fn of(spec: &CursorSpec) -> PendingKill {
        PendingKill {
            server: spec.server.clone(),
            database: spec.database.clone(),
            collection: spec.collection.clone(),
            id: spec.id,
            pinned: spec.pinned.clone(),
            timeout: spec.timeout,
        }
    }
}

/// Sends `killCursors` for `pending` (without a session id: Sessions spec, "When
/// sending a killCursors command"); nothing on a pinned connection that broke (Load
/// Balancer spec, "Behaviour With Cursors").
async fn kill(executor: &Arc<Executor>, pending: PendingKill) -> Result<()> {
    if pending
        .pinned
        .as_ref()
        .is_some_and(PinnedConnection::is_broken)
    {
        return Ok(());
    }
    let mut operation = KillCursors { pending: &pending };
    let pinned = pending.pinned.as_ref();
    let context = kill_context(executor, pending.timeout);
    run_on_server(
        &context,
        executor,
        &pending.server,
        &mut operation,
        None,
        pinned,
    )
    .await
}

struct KillCursors<'a> {
    pending: &'a PendingKill,
}

impl Operation for KillCursors<'_> {
    type Output = ();

    fn name(&self) -> &str {
        "killCursors"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "killCursors",
            database: &self.pending.database,
            collection: Some(&self.pending.collection),
        }
    }

    fn target(&self) -> Target<'_> {
        // Never used: a killCursors goes to the cursor's server without selection.
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        Ok(self.pending.command())
    }

    fn handle_reply(&mut self, _reply: RawDocumentBuf, _context: ReplyContext<'_>) -> Result<()> {
        Ok(())
    }
}

impl Executor {
    /// Kills the cursors dropped with no runtime to do it then that are pinned to a
    /// connection (load-balanced mode), each on its own connection, which goes back
    /// to the pool after it (Load Balancer spec, "Behaviour With Cursors"). The kills
    /// of the others go ahead of the next command sent to their server, in its round
    /// trip (`Executor::send_message`); those of a server that left the topology are
    /// dropped (its cursors went with it, or time out there).
    pub(crate) async fn send_pending_kills(self: &Arc<Self>) {
        let pinned = {
            let mut pending = lock(self.pending_kills());
            if pending.is_empty() {
                return;
            }
            pending.retain(|kill| {
                kill.pinned.is_some() || kill.server.pool.state() != PoolState::Closed
            });
            pending
                .extract_if(.., |kill| kill.pinned.is_some())
                .collect::<Vec<_>>()
        };
        for cursor in pinned {
            // Best effort: the server times idle cursors out anyway.
            let _ = kill(self, cursor).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_options_that_contradict_timeout_ms_are_refused() {
        let ms = Duration::from_millis;
        let lifetime = Some(TimeoutMode::CursorLifetime);
        let iteration = Some(TimeoutMode::Iteration);
        assert!(check_cursor_timeout(None, None, false, None, false).is_ok());
        assert!(check_cursor_timeout(Some(ms(5)), lifetime, false, None, false).is_ok());
        // A mode without timeoutMS.
        assert!(check_cursor_timeout(None, iteration, false, None, false).is_err());
        // A tailable cursor's lifetime.
        assert!(check_cursor_timeout(Some(ms(5)), lifetime, true, None, false).is_err());
        assert!(check_cursor_timeout(Some(ms(5)), iteration, true, None, false).is_ok());
        // $out or $merge iterated.
        assert!(check_cursor_timeout(Some(ms(5)), iteration, false, None, true).is_err());
        // maxAwaitTimeMS must be shorter than a non-zero timeoutMS.
        assert!(check_cursor_timeout(Some(ms(5)), None, true, Some(ms(5)), false).is_err());
        assert!(check_cursor_timeout(Some(ms(5)), None, true, Some(ms(10)), false).is_err());
        assert!(check_cursor_timeout(Some(ms(10)), None, true, Some(ms(5)), false).is_ok());
        assert!(check_cursor_timeout(Some(ms(0)), None, true, Some(ms(5)), false).is_ok());
    }
    use bson::rawdoc;
    use futures::executor::block_on;

    /// A cursor whose server cursor is gone (id 0), `documents` still buffered: what
    /// [`Cursor::new`] makes of a last batch, without a server behind it.
    fn last_batch(documents: impl IntoIterator<Item = RawDocumentBuf>) -> Cursor<Document> {
        Cursor {
            spec: None,
            unsplit: None,
            buffer: documents.into_iter().collect(),
            post_batch_resume_token: None,
            in_flight: None,
            empty_batches: 0,
            call_deadline: None,
            current: None,
            failed_pinned: None,
            _documents: PhantomData,
        }
    }

    #[test]
    fn next_if_any_returns_the_buffered_documents_then_none_once_exhausted() {
        let mut cursor = last_batch([rawdoc! { "_id": 1 }, rawdoc! { "_id": 2 }]);
        assert!(cursor.is_alive(), "documents are buffered");
        assert_eq!(cursor.id(), 0);
        assert_eq!(
            block_on(cursor.next_if_any()).unwrap(),
            Some(doc! { "_id": 1 })
        );
        assert!(cursor.is_alive());
        let raw = block_on(cursor.next_raw_if_any()).unwrap();
        assert_eq!(raw, Some(rawdoc! { "_id": 2 }));
        assert!(!cursor.is_alive(), "the last document is returned");
        assert_eq!(block_on(cursor.next_if_any()).unwrap(), None);
        assert_eq!(block_on(cursor.next_if_any()).unwrap(), None);
    }

    #[test]
    fn next_if_any_reports_a_document_of_the_wrong_shape_and_goes_on() {
        let mut cursor =
            last_batch([rawdoc! { "_id": "a" }, rawdoc! { "_id": 2 }]).with_type::<Id>();
        assert!(block_on(cursor.next_if_any()).is_err());
        assert_eq!(block_on(cursor.next_if_any()).unwrap(), Some(Id { _id: 2 }));
        assert!(!cursor.is_alive());
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Id {
        _id: i32,
    }

    #[test]
    fn tailable_finds_and_change_stream_aggregates_open_tailable_cursors() {
        assert!(opens_tailable_cursor(
            &doc! { "find": "capped", "tailable": true, "awaitData": true }
        ));
        assert!(opens_tailable_cursor(&doc! {
            "aggregate": 1,
            "pipeline": [{ "$changeStream": {} }, { "$match": {} }],
            "cursor": {},
        }));
        assert!(!opens_tailable_cursor(&doc! { "find": "orders" }));
        assert!(!opens_tailable_cursor(
            &doc! { "find": "orders", "tailable": false }
        ));
        // `$changeStream` counts only as the first stage, where the server allows it.
        assert!(!opens_tailable_cursor(&doc! {
            "aggregate": "orders",
            "pipeline": [{ "$match": {} }, { "$changeStream": {} }],
        }));
        assert!(!opens_tailable_cursor(
            &doc! { "aggregate": "orders", "pipeline": [] }
        ));
    }
}
