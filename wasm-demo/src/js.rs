//! What the module exports to its JavaScript glue (`js/client.js`): a client and a
//! cursor handle that move BSON bytes across the boundary. Users see the glue's
//! Node-driver-shaped classes, not these.
//!
//! Every failure rejects with a `Uint8Array`: the BSON of [`ops::error_document`],
//! which the glue turns into an error class.

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use anymongo::bson::{Document, RawDocumentBuf};
use anymongo::event::{EventHandler, EventListener};
use anymongo::session::ClientSession;
use anymongo::{srv, ChangeStream, Client, ClientOptions, Cursor, Error, ErrorKind};
use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::events::{self, Family};
use crate::{host, ops};

/// The rejection value of an error.
fn reject(error: &Error) -> JsValue {
    reject_document(ops::error_document(error))
}

/// The rejection value of an error opening a client: a connection string the core
/// refuses (or whose SRV and TXT records it refuses: `DnsResolve`) is the Node
/// driver's MongoParseError, where an invalid argument elsewhere is a
/// MongoInvalidArgumentError.
fn reject_connection_string(error: &Error) -> JsValue {
    let mut document = ops::error_document(error);
    if matches!(
        &*error.kind,
        anymongo::ErrorKind::InvalidArgument { .. } | anymongo::ErrorKind::DnsResolve { .. }
    ) {
        document.insert("name", "MongoParseError");
    }
    reject_document(document)
}

fn reject_document(document: Document) -> JsValue {
    match anymongo::bson::serialize_to_vec(&document) {
        Ok(document) => bytes(&document),
        // Only a document over 2 GiB fails to serialize; say so rather than panic.
        Err(error) => JsValue::from_str(&format!("cannot serialize the reply: {error}")),
    }
}

/// BSON as a `Uint8Array` (a copy out of the module's memory).
fn bytes(bson: &[u8]) -> JsValue {
    Uint8Array::from(bson).into()
}

/// The arguments the glue serialized, kept as BSON: the documents to insert go to the
/// server as these bytes. Owned, as the operation outlives the call.
fn parse(args: Vec<u8>) -> Result<RawDocumentBuf, Error> {
    RawDocumentBuf::from_bytes(args)
        .map_err(|error| Error::invalid_argument(format!("malformed arguments: {error}")))
}

fn closed() -> Error {
    Error::new(anymongo::ErrorKind::PoolClosed {
        address: "the client was closed".into(),
    })
}

/// Where a server-side cursor lives while its JavaScript handle does: taken out by
/// whoever uses it (no borrow lives across an await) and by the client's `close`.
type Cell<T> = RefCell<Option<T>>;
type CursorCell = Cell<Cursor<Document>>;
type StreamCell = Cell<ChangeStream<RawDocumentBuf>>;

/// A new, empty cell, remembered in `cells` (which forgets those dropped since).
fn tracked<T>(cells: &RefCell<Vec<Weak<Cell<T>>>>) -> Rc<Cell<T>> {
    let cell = Rc::new(RefCell::new(None));
    let mut cells = cells.borrow_mut();
    cells.retain(|cell| cell.strong_count() > 0);
    cells.push(Rc::downgrade(&cell));
    cell
}

/// What the cells of `cells` still hold, taken out of them.
fn take_all<T>(cells: &RefCell<Vec<Weak<Cell<T>>>>) -> Vec<T> {
    cells
        .borrow_mut()
        .drain(..)
        .filter_map(|cell| cell.upgrade()?.borrow_mut().take())
        .collect()
}

/// Takes what `cell` holds, if anything, and closes it with `close`: a promise as
/// [`settle`]'s.
fn close_cell<T: 'static, F>(cell: &Cell<T>, close: impl FnOnce(T) -> F + 'static) -> Promise
where
    F: std::future::Future<Output = Result<(), Error>> + 'static,
{
    let held = cell.borrow_mut().take();
    settle(async move {
        match held {
            Some(held) => close(held).await,
            None => Ok(()),
        }
    })
}

/// A promise of `work`: resolves to `undefined`, or rejects with its error.
fn settle(work: impl std::future::Future<Output = Result<(), Error>> + 'static) -> Promise {
    future_to_promise(async move {
        work.await.map_err(|error| reject(&error))?;
        Ok(JsValue::UNDEFINED)
    })
}

/// A connected client (`NativeClient.open`).
#[wasm_bindgen]
pub struct NativeClient {
    client: RefCell<Option<Client>>,
    /// The cursors opened, so that `close` can kill those still open: a live cursor
    /// holds the client, and with it the connections, alive.
    cursors: RefCell<Vec<Weak<CursorCell>>>,
    /// The change streams opened, for the same reason.
    streams: RefCell<Vec<Weak<StreamCell>>>,
}

#[wasm_bindgen]
impl NativeClient {
    /// Opens a client for `uri` whose sockets come from `transport`, and checks that
    /// the deployment answers and accepts the credential within `timeout_ms` when given
    /// (the `timeoutMS` of the operation that connects), else within the client's own
    /// `timeoutMS`, if any: server selection, then a connection checked out, whose
    /// handshake authenticates ([`Client::hello`]). No command is sent (the official
    /// Node.js driver sends a `ping` when there are credentials): the connection serves
    /// the first operation, so connecting costs no round trip of its own. Behind a load
    /// balancer without a credential, nothing is checked (there is no monitor to wait for).
    /// `spans`, given when the client traces (`tracing`), is the sink of its
    /// OpenTelemetry spans ([`crate::spans`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn open(
        uri: String,
        transport: JsValue,
        background: bool,
        platform: String,
        timeout_ms: Option<f64>,
        events: Option<JsValue>,
        code_options: Vec<u8>,
        spans: Option<Function>,
    ) -> Result<NativeClient, JsValue> {
        let runtime = host::runtime(transport, background, platform);
        let mut options =
            ClientOptions::parse_uri(&uri).map_err(|error| reject_connection_string(&error))?;
        let monitor_commands = parse(code_options)
            .and_then(|code| ops::apply_code_options(&mut options, &code))
            .map_err(|error| reject(&error))?;
        // Behind a load balancer there is no monitor to wait for and, without a
        // credential, nothing to check: as the Node driver, connecting then sends
        // nothing (and checks no connection out of the pool).
        let nothing_to_check = options.load_balanced == Some(true) && options.credential.is_none();
        // A mongodb+srv seed list is looked up through the host's resolver, after the
        // options set in code, which win over the TXT record's.
        if options.srv {
            let seeds = srv::resolve_seed_list(
                &options,
                runtime.resolver.as_ref(),
                runtime.clock.as_ref(),
                srv::lookup_timeout(&options),
            )
            .await
            .map_err(|error| reject_connection_string(&error))?;
            options = seeds.into_options();
        }
        if let Some(events) = &events {
            listen(&mut options, events, monitor_commands);
        }
        if let Some(spans) = spans {
            crate::spans::forward_spans(spans);
        }
        let client = Client::with_runtime(options, runtime)
            .map_err(|error| reject_connection_string(&error))?;
        if !nothing_to_check {
            let check =
                match timeout_ms.and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok()) {
                    Some(timeout) => client.with_timeout(timeout),
                    None => client.clone(),
                };
            check.hello().await.map_err(|error| reject(&error))?;
        }
        Ok(NativeClient {
            client: RefCell::new(Some(client)),
            cursors: RefCell::new(Vec::new()),
            streams: RefCell::new(Vec::new()),
        })
    }

    /// The driver's version, the handshake's (the OpenTelemetry tracer's version).
    pub fn version() -> String {
        version()
    }

    fn client(&self) -> Result<Client, Error> {
        self.client.borrow().clone().ok_or_else(closed)
    }

    /// Runs operation `op` ([`ops::run`]), in `session` when given; resolves to the
    /// BSON of its result.
    pub fn run(
        &self,
        op: String,
        database: String,
        collection: String,
        args: Vec<u8>,
        session: Option<NativeSession>,
    ) -> Promise {
        let prepared = self.client().and_then(|client| Ok((client, parse(args)?)));
        let session = session.map(|session| session.session);
        future_to_promise(async move {
            let (client, args) = prepared.map_err(|error| reject(&error))?;
            let result = ops::run(
                &client,
                &op,
                &database,
                &collection,
                &args,
                session.as_ref(),
            )
            .await
            .map_err(|error| reject(&error))?;
            Ok(bytes(result.as_bytes()))
        })
    }

    /// Starts an explicit session with the options in `options` (BSON:
    /// [`ops::session_options`]).
    #[wasm_bindgen(js_name = startSession)]
    pub fn start_session(&self, options: Vec<u8>) -> Result<NativeSession, JsValue> {
        let start = || {
            let options = ops::session_options(&parse(options)?)?;
            ready(self.client()?.start_session().with_options(options))
        };
        let session = start().map_err(|error| reject(&error))?;
        Ok(NativeSession { session })
    }

    /// Opens the cursor of `find` or `aggregate` ([`ops::open_cursor`]); resolves to a
    /// [`NativeCursor`].
    pub fn cursor(
        &self,
        op: String,
        database: String,
        collection: String,
        args: Vec<u8>,
        session: Option<NativeSession>,
    ) -> Promise {
        let prepared = self.client().and_then(|client| Ok((client, parse(args)?)));
        let session = session.map(|session| session.session);
        let cell = tracked(&self.cursors);
        future_to_promise(async move {
            let (client, args) = prepared.map_err(|error| reject(&error))?;
            let cursor = ops::open_cursor(
                &client,
                &op,
                &database,
                &collection,
                &args,
                session.as_ref(),
            )
            .await
            .map_err(|error| reject(&error))?;
            *cell.borrow_mut() = Some(cursor);
            Ok(NativeCursor { cell }.into())
        })
    }

    /// Opens a change stream ([`ops::watch`]); resolves to a [`NativeChangeStream`].
    pub fn watch(
        &self,
        database: String,
        collection: String,
        args: Vec<u8>,
        session: Option<NativeSession>,
    ) -> Promise {
        let prepared = self.client().and_then(|client| Ok((client, parse(args)?)));
        let session = session.map(|session| session.session);
        let cell = tracked(&self.streams);
        future_to_promise(async move {
            let (client, args) = prepared.map_err(|error| reject(&error))?;
            let stream = ops::watch(&client, &database, &collection, &args, session.as_ref())
                .await
                .map_err(|error| reject(&error))?;
            *cell.borrow_mut() = Some(stream);
            Ok(NativeChangeStream { cell }.into())
        })
    }

    /// Closes the client: kills its open cursors, then drops it, which stops the
    /// monitors and closes every connection.
    pub fn close(&self) -> Promise {
        let client = self.client.borrow_mut().take();
        let cursors = take_all(&self.cursors);
        let streams = take_all(&self.streams);
        future_to_promise(async move {
            for cursor in cursors {
                // Best effort, as the server times idle cursors out anyway.
                let _ = cursor.close().await;
            }
            for stream in streams {
                let _ = stream.close().await;
            }
            // Ends the pooled server sessions (endSessions), then closes the topology,
            // without waiting for the sessions JavaScript still holds (as the Node
            // driver's `close`).
            if let Some(client) = client {
                client.shutdown().immediate(true).await;
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// A server cursor, read a batch at a time.
#[wasm_bindgen]
pub struct NativeCursor {
    cell: Rc<CursorCell>,
}

#[wasm_bindgen]
impl NativeCursor {
    /// Resolves to the next documents ([`ops::next_batch`]: their BSON one after the
    /// other), `undefined` when, without `wait`, a getMore found none yet (a tailable
    /// cursor), or `null` once the cursor is exhausted or closed.
    #[wasm_bindgen(js_name = nextBatch)]
    pub fn next_batch(&self, wait: bool) -> Promise {
        let cell = self.cell.clone();
        future_to_promise(async move {
            // Out of the cell while a batch is fetched: no borrow lives across await.
            let Some(mut cursor) = cell.borrow_mut().take() else {
                return Ok(JsValue::NULL);
            };
            let answer = match ops::next_batch(&mut cursor, wait).await {
                Ok(ops::Batch::Documents(batch)) => Ok(bytes(&batch)),
                Ok(ops::Batch::Empty) => Ok(JsValue::UNDEFINED),
                Ok(ops::Batch::End) => return Ok(JsValue::NULL),
                // Back in the cell after a failed getMore too: a load-balanced cursor
                // keeps its server cursor and pinned connection until it is closed
                // (Load Balancer spec, "Behaviour With Cursors"), which `close` (or
                // the next `nextBatch`, which finds it ended) does.
                Err(error) => Err(reject(&error)),
            };
            *cell.borrow_mut() = Some(cursor);
            answer
        })
    }

    /// Kills the server cursor, if still open.
    pub fn close(&self) -> Promise {
        close_cell(&self.cell, Cursor::close)
    }
}

/// A change stream, read a change at a time.
#[wasm_bindgen]
pub struct NativeChangeStream {
    cell: Rc<StreamCell>,
}

#[wasm_bindgen]
impl NativeChangeStream {
    /// Resolves to the BSON of the next change if the next batch has one, else to
    /// `null` (after a getMore that found none, or once the stream is closed).
    #[wasm_bindgen(js_name = tryNext)]
    pub fn try_next(&self) -> Promise {
        let cell = self.cell.clone();
        future_to_promise(async move {
            // Out of the cell while a batch is fetched: no borrow lives across await.
            let Some(mut stream) = cell.borrow_mut().take() else {
                return Ok(JsValue::NULL);
            };
            let change = stream.next_if_any().await;
            let alive = stream.is_alive();
            *cell.borrow_mut() = Some(stream);
            match change.map_err(|error| reject(&error))? {
                Some(change) => Ok(bytes(change.as_bytes())),
                None if alive => Ok(JsValue::NULL),
                None => Ok(JsValue::UNDEFINED),
            }
        })
    }

    /// The resume token the stream would resume from, as BSON.
    #[wasm_bindgen(js_name = resumeToken)]
    pub fn resume_token(&self) -> Option<Vec<u8>> {
        let token = self.cell.borrow().as_ref()?.resume_token()?;
        anymongo::bson::serialize_to_vec(&token).ok()
    }

    /// Whether the stream may still return changes.
    #[wasm_bindgen(js_name = isAlive)]
    pub fn is_alive(&self) -> bool {
        self.cell
            .borrow()
            .as_ref()
            .is_some_and(ChangeStream::is_alive)
    }

    /// Closes the stream, killing its server cursor.
    pub fn close(&self) -> Promise {
        close_cell(&self.cell, ChangeStream::close)
    }
}

/// An explicit session (`NativeClient.startSession`).
#[wasm_bindgen]
pub struct NativeSession {
    session: ClientSession,
}

/// What a `withTransaction` callback's rejection becomes inside the core: an error
/// with the rejection's `errorLabels`, which decide whether the transaction is retried
/// (Convenient API spec). When it is the core's answer, the rejection itself is.
const CALLBACK_FAILED: &str = "the withTransaction callback failed";

#[wasm_bindgen]
impl NativeSession {
    /// A handle on the same session, for an operation to run in (the handle is moved
    /// into the call).
    #[wasm_bindgen(js_name = handle)]
    pub fn handle(&self) -> NativeSession {
        NativeSession {
            session: self.session.clone(),
        }
    }

    /// The session id (`lsid`) as BSON.
    pub fn id(&self) -> Option<Vec<u8>> {
        anymongo::bson::serialize_to_vec(self.session.id()).ok()
    }

    /// `$clusterTime` as BSON, once the session has seen one.
    #[wasm_bindgen(js_name = clusterTime)]
    pub fn cluster_time(&self) -> Option<Vec<u8>> {
        // Read through a handle of its own, which keeps nothing once dropped.
        let time = self.session.clone().cluster_time()?.clone();
        anymongo::bson::serialize_to_vec(&time).ok()
    }

    /// The operation time as BSON (`{ t: Timestamp }`), once the session has one.
    #[wasm_bindgen(js_name = operationTime)]
    pub fn operation_time(&self) -> Option<Vec<u8>> {
        let time = self.session.operation_time()?;
        anymongo::bson::serialize_to_vec(&anymongo::bson::doc! { "t": time }).ok()
    }

    /// A snapshot session's snapshot time as BSON (`{ t: Timestamp }`): the one it was
    /// started with, else the `atClusterTime` of its first read's reply.
    #[wasm_bindgen(js_name = snapshotTime)]
    pub fn snapshot_time(&self) -> Option<Vec<u8>> {
        let time = self.session.snapshot_time()?;
        anymongo::bson::serialize_to_vec(&anymongo::bson::doc! { "t": time }).ok()
    }

    /// Advances the session's `$clusterTime` (BSON).
    #[wasm_bindgen(js_name = advanceClusterTime)]
    pub fn advance_cluster_time(&self, time: Vec<u8>) -> Result<(), JsValue> {
        let time = parse(time).and_then(|time| ops::to_document(&time));
        let time: anymongo::ClusterTime =
            anymongo::bson::deserialize_from_document(time.map_err(|error| reject(&error))?)
                .map_err(|error| reject(&anymongo::Error::from(error)))?;
        self.session.advance_cluster_time(&time);
        Ok(())
    }

    /// Advances the session's operation time (BSON `{ t: Timestamp }`).
    #[wasm_bindgen(js_name = advanceOperationTime)]
    pub fn advance_operation_time(&self, time: Vec<u8>) -> Result<(), JsValue> {
        let time = parse(time).and_then(|time| ops::timestamp(&time, "t"));
        self.session
            .advance_operation_time(time.map_err(|error| reject(&error))?);
        Ok(())
    }

    /// Whether the session's server session was used and then hit a network error.
    #[wasm_bindgen(js_name = isDirty)]
    pub fn is_dirty(&self) -> bool {
        self.session.is_dirty()
    }

    /// Whether `endSession` was called.
    #[wasm_bindgen(js_name = hasEnded)]
    pub fn has_ended(&self) -> bool {
        self.session.has_ended()
    }

    /// Whether a transaction is open.
    #[wasm_bindgen(js_name = inTransaction)]
    pub fn in_transaction(&self) -> bool {
        self.session.in_transaction()
    }

    /// The transaction's state, as the spec names it (`starting`, `in_progress`…).
    #[wasm_bindgen(js_name = transactionState)]
    pub fn transaction_state(&self) -> String {
        ops::transaction_state_name(self.session.transaction_state()).into()
    }

    /// The server the session's transaction is pinned to, if any (`host:port`).
    #[wasm_bindgen(js_name = pinnedServer)]
    pub fn pinned_server(&self) -> Option<String> {
        self.session
            .pinned_server()
            .map(|address| address.to_string())
    }

    /// Starts a transaction with the options in `options` (BSON).
    #[wasm_bindgen(js_name = startTransaction)]
    pub fn start_transaction(&self, options: Vec<u8>) -> Result<(), JsValue> {
        let start = || {
            let options = ops::transaction_options(&parse(options)?)?;
            // A handle of this session: starting a transaction takes it mutably.
            let mut session = self.session.clone();
            ready(session.start_transaction().with_options(options))
        };
        start().map_err(|error| reject(&error))
    }

    /// Commits the transaction.
    #[wasm_bindgen(js_name = commitTransaction)]
    pub fn commit_transaction(&self) -> Promise {
        let session = self.session.clone();
        settle(async move { session.commit_transaction().await })
    }

    /// Aborts the transaction.
    #[wasm_bindgen(js_name = abortTransaction)]
    pub fn abort_transaction(&self) -> Promise {
        let session = self.session.clone();
        settle(async move { session.abort_transaction().await })
    }

    /// Runs `callback()` (which returns a promise) in a transaction, retried and
    /// committed as the Convenient API spec says
    /// ([`StartTransaction::and_run2`](anymongo::action::StartTransaction::and_run2));
    /// resolves to what the callback's promise resolved to. A rejection of the callback
    /// that ends the call rejects with the same value.
    #[wasm_bindgen(js_name = withTransaction)]
    pub fn with_transaction(&self, callback: Function, options: Vec<u8>) -> Promise {
        let mut session = self.session.clone();
        let options = parse(options).and_then(|options| ops::transaction_options(&options));
        future_to_promise(async move {
            let options = options.map_err(|error| reject(&error))?;
            let rejection: Rc<RefCell<Option<JsValue>>> = Rc::default();
            let result = session
                .start_transaction()
                .with_options(options)
                .and_run2(async |_session| {
                    let settled = match callback.call0(&JsValue::UNDEFINED) {
                        Ok(value) => JsFuture::from(Promise::resolve(&value)).await,
                        Err(thrown) => Err(thrown),
                    };
                    settled.map_err(|thrown| {
                        let error = callback_error(&thrown);
                        *rejection.borrow_mut() = Some(thrown);
                        error
                    })
                })
                .await;
            result.map_err(
                |error| match (&*error.kind, rejection.borrow_mut().take()) {
                    (ErrorKind::InvalidArgument { message }, Some(thrown))
                        if message == CALLBACK_FAILED =>
                    {
                        thrown
                    }
                    _ => reject(&error),
                },
            )
        })
    }

    /// Ends the session: its server session goes back to the client's pool (an open
    /// transaction is aborted first).
    #[wasm_bindgen(js_name = endSession)]
    pub fn end_session(&self) -> Promise {
        let session = self.session.clone();
        settle(async move {
            session.close().await;
            Ok(())
        })
    }
}

/// The result of an action that does no I/O (starting a session or a transaction), for
/// the synchronous methods of the JavaScript API (the Node driver's are synchronous):
/// its future is ready when first polled.
fn ready<A: std::future::IntoFuture<Output = anymongo::Result<T>>, T>(
    action: A,
) -> anymongo::Result<T> {
    use futures::FutureExt;
    action.into_future().now_or_never().unwrap_or_else(|| {
        Err(Error::invalid_argument(
            "the action did not complete at once",
        ))
    })
}

/// A `withTransaction` callback's rejection as the core's error: [`CALLBACK_FAILED`],
/// with the labels of the rejection (a driver error thrown on by the callback).
fn callback_error(thrown: &JsValue) -> Error {
    let labels = Reflect::get(thrown, &JsValue::from_str("errorLabels"))
        .ok()
        .filter(|labels| labels.is_array())
        .map(|labels| {
            Array::from(&labels)
                .iter()
                .filter_map(|label| label.as_string())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    labels
        .iter()
        .fold(Error::invalid_argument(CALLBACK_FAILED), |error, label| {
            error.with_label(label)
        })
}

/// Delivers the events of one [`Family`] to the glue's `events` object:
/// `events.emit(bson)` for each one, built only while `events.listening(family)`.
struct JsListener<E> {
    events: JsValue,
    /// `events.emit` and `events.listening`, looked up once, and the family's name as
    /// a JavaScript string made once: `listening` is asked several times per
    /// operation, and a look-up by name passes the name from wasm to JavaScript as
    /// text each time (the npm package's profile of a small insertOne).
    emit: Option<Function>,
    listening: Option<Function>,
    family: JsValue,
    build: fn(&E) -> Document,
}

impl<E> EventListener<E> for JsListener<E> {
    fn handle(&self, event: E) {
        let (Some(emit), Ok(document)) = (
            &self.emit,
            anymongo::bson::serialize_to_vec(&(self.build)(&event)),
        ) else {
            return;
        };
        // A listener's exception is the application's: the glue catches it.
        let _ = emit.call1(&self.events, &bytes(&document));
    }

    fn is_listening(&self) -> bool {
        self.listening.as_ref().is_some_and(|listening| {
            listening
                .call1(&self.events, &self.family)
                .is_ok_and(|listening| listening.is_truthy())
        })
    }
}

/// Sets the client's event handlers, listeners over the glue's `events` object;
/// command events only with `monitorCommands` (as the Node driver).
fn listen(options: &mut ClientOptions, events: &JsValue, monitor_commands: bool) {
    fn listener<E: 'static>(
        events: &JsValue,
        family: Family,
        build: fn(&E) -> Document,
    ) -> EventHandler<E> {
        EventHandler::Listener(Arc::new(JsListener {
            events: events.clone(),
            emit: host::function(events, "emit").ok(),
            listening: host::function(events, "listening").ok(),
            family: JsValue::from_str(family.name()),
            build,
        }))
    }
    options.command_event_handler =
        monitor_commands.then(|| listener(events, Family::Command, events::command_event));
    options.cmap_event_handler = Some(listener(events, Family::Pool, events::pool_event));
    options.sdam_event_handler = Some(listener(events, Family::Topology, events::topology_event));
}

/// `clientMetadata(appName?)`: the handshake metadata as text.
#[wasm_bindgen(js_name = clientMetadata)]
pub fn client_metadata(app_name: Option<String>) -> String {
    crate::client_metadata_text(app_name)
}

/// `version()`: the driver's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
