//! The connection pool of the CMAP spec, generic over how connections are opened.
//!
//! Everything the pool does happens under one state lock that never spans an
//! `.await`; events are queued under it (so they come out in the order of the changes)
//! and delivered after it is released. Waiting is runtime-free: check-outs wait on a
//! [`Notify`] and on the [`Clock`]'s sleep, nothing else.
//!
//! Establishing a connection runs as a self-contained task that ends by handing the
//! connection to the check-out that asked for it, or, if that check-out gave up, by
//! making it available in the pool. With a [`Spawner`] the task is spawned; without
//! one the check-out drives it, and when the check-out is dropped the unfinished task
//! is kept by the pool and driven by later check-outs (while they wait) and by
//! [`ConnectionPool::populate`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::{poll_fn, Future};
use std::ops::{Deref, DerefMut};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bson::oid::ObjectId;
use futures::channel::oneshot;
use futures::future::{self, Either, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};

use super::options::PoolOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::event::cmap::{
    CmapEvent, ConnectionCheckedInEvent, ConnectionCheckedOutEvent, ConnectionCheckoutFailedEvent,
    ConnectionCheckoutFailedReason, ConnectionCheckoutStartedEvent, ConnectionClosedEvent,
    ConnectionClosedReason, ConnectionCreatedEvent, ConnectionReadyEvent, PoolClearedEvent,
    PoolClosedEvent, PoolCreatedEvent, PoolReadyEvent,
};
use crate::event::{EventHandler, EventSink};
use crate::rt::{self, BoxFuture, Clock, Instant, MaybeSend, MaybeSync, Spawner};
use crate::signal::{lock, Notify};
use crate::uri::ServerAddress;

/// What the pool needs to know about a connection it holds.
pub trait Poolable: MaybeSend + 'static {
    /// Whether the connection failed and must not be used again; such a connection is
    /// closed (reason "error") when it is checked in or found available.
    fn is_broken(&self) -> bool;

    /// Whether a connection that sat available for [`IDLE_CHECK_AFTER`] or longer is
    /// still open, as far as can be told without waiting (the driver's connections ask
    /// their [`Stream`](crate::rt::Stream::is_open_and_idle)). One that is not is
    /// closed (reason "error") rather than handed out. `true` by default.
    fn is_open_and_idle(&self) -> bool {
        true
    }

    /// The `serviceId` of the handshake reply; only looked at in load-balanced mode.
    fn service_id(&self) -> Option<ObjectId> {
        None
    }
}

/// Opens connections for a pool: the seam between the pool and the network. The
/// driver's implementation connects, shakes hands and authenticates; the spec tests
/// use fake connections.
pub trait Establish: MaybeSend + MaybeSync + 'static {
    /// The connections it opens.
    type Connection: Poolable;

    /// Opens and fully establishes (handshake, authentication) the connection the
    /// pool numbered `connection_id`. Bounding the time it takes is up to the
    /// implementation (`connectTimeoutMS`).
    fn establish(&self, connection_id: u32) -> BoxFuture<'_, Result<Self::Connection>>;

    /// Establishing a connection of pool generation `generation` failed — for a
    /// check-out, to populate the pool up to minPoolSize, or for a check-out that gave
    /// up — before the failed connection is closed (its ConnectionClosed, then the
    /// check-out's ConnectionCheckOutFailed, follow). Not called when a clear
    /// interrupted the establishment. The spec hands such errors to SDAM
    /// ("Application Errors", before the handshake completes), which usually clears
    /// the pool. Does nothing by default.
    fn establish_failed(&self, error: &Error, generation: u32) {
        let _ = (error, generation);
    }
}

/// How long a connection sits available before the pool asks whether it is still open
/// ([`Poolable::is_open_and_idle`]) at check-out and in its upkeep. Not a CMAP spec
/// rule: pymongo checks its idle sockets after the same second, so that a connection
/// the server closed while idle (SecantusDB closes them after five minutes; load
/// balancers and firewalls drop them too) is replaced instead of failing an operation
/// that cannot be retried. A connection used more recently is handed out unasked,
/// which keeps the check off the busy path.
pub const IDLE_CHECK_AFTER: Duration = Duration::from_secs(1);

/// The state of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolState {
    /// The initial state, and the state after a clear: check-outs fail at once and no
    /// connection is opened in the background.
    Paused,
    /// Check-outs are served and minPoolSize is maintained.
    Ready,
    /// For good: check-outs fail, checked-in connections are closed.
    Closed,
}

/// A pool of connections to one server (CMAP spec, "Connection Pool").
///
/// Created paused: [`ready`](Self::ready) lets check-outs through. Dropping the pool
/// closes it.
pub struct ConnectionPool<E: Establish> {
    inner: Arc<Inner<E>>,
}

/// A connection checked out of a [`ConnectionPool`]; it dereferences to the
/// connection itself.
///
/// Give it back with [`ConnectionPool::check_in`]. Dropped instead, it is closed
/// (reason "error"), not returned: whoever dropped it may have left it in the middle
/// of a request.
pub struct CheckedOut<E: Establish> {
    pool: Arc<Inner<E>>,
    connection: Option<E::Connection>,
    meta: Meta,
    interrupt: Arc<Interrupt>,
}

struct Inner<E: Establish> {
    address: ServerAddress,
    options: PoolOptions,
    establisher: E,
    clock: Arc<dyn Clock>,
    spawner: Option<Arc<dyn Spawner>>,
    events: EventSink<CmapEvent>,
    state: Mutex<State<E::Connection>>,
    /// Wakes the check-outs in the wait queue: something they wait for changed.
    changed: Notify,
    /// Wakes the background task.
    maintenance: Notify,
    /// Establishments abandoned by check-outs that gave up, in a pool without a
    /// spawner: driven by later check-outs while they wait, and by `populate`.
    orphans: Mutex<Vec<BoxFuture<'static, ()>>>,
}

struct State<C> {
    status: PoolState,
    generation: u32,
    /// Load-balanced mode: generation and connection count per service.
    services: HashMap<ObjectId, Service>,
    next_connection_id: u32,
    next_waiter_id: u64,
    /// Available connections, the most recently checked in last.
    available: Vec<Idle<C>>,
    /// Pending, available and in use.
    total: u32,
    pending: u32,
    /// Check-outs waiting, oldest first.
    wait_queue: VecDeque<u64>,
    /// Waiters a clear took out of the queue; they fail when they next look.
    evicted: HashSet<u64>,
    /// Pending and in-use connections, for interrupting them.
    live: HashMap<u32, Live>,
}

#[derive(Debug, Default)]
struct Service {
    generation: u32,
    connections: u32,
}

struct Idle<C> {
    connection: C,
    meta: Meta,
    since: Instant,
}

/// What the pool knows of one of its connections.
#[derive(Debug, Clone, Copy)]
struct Meta {
    id: u32,
    generation: u32,
    service_id: Option<ObjectId>,
}

struct Live {
    generation: u32,
    service_id: Option<ObjectId>,
    interrupt: Arc<Interrupt>,
    /// What the connection is pinned to, if anything (load-balanced mode).
    pinned: Option<PinnedTo>,
}

/// What an in-use connection is pinned to in load-balanced mode (Load Balancer spec,
/// "Connection Tracking"): the pool counts them for its wait-queue timeout message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PinnedTo {
    /// A cursor whose first batch did not exhaust it: its getMores and killCursors
    /// run on the same connection.
    Cursor,
    /// A transaction: its commands run on the same connection (a cursor opened in
    /// it shares the connection, which still counts as the transaction's).
    Transaction,
}

/// A connection being established.
struct Pending {
    id: u32,
    generation: u32,
    created: Instant,
    interrupt: Arc<Interrupt>,
}

/// What a pool's change of state leaves to do once the caller holds no lock of its
/// own: deliver the queued events (a listener may call back into the client), fire
/// the interrupts, wake the check-outs and the background task. Dropping it does the
/// same, so that nothing is left undone on an early return.
#[must_use = "finish() it once no lock is held"]
pub(crate) struct Aftermath<'a, E: Establish> {
    /// The pool, when its state changed (nothing is left to do otherwise).
    pool: Option<&'a ConnectionPool<E>>,
    interrupts: Vec<Arc<Interrupt>>,
}

impl<E: Establish> Aftermath<'_, E> {
    /// Does it now.
    pub(crate) fn finish(self) {}
}

impl<E: Establish> Drop for Aftermath<'_, E> {
    fn drop(&mut self) {
        let Some(pool) = self.pool else {
            return;
        };
        let inner = &pool.inner;
        inner.events.flush();
        for interrupt in self.interrupts.drain(..) {
            interrupt.fire();
        }
        inner.changed.notify_all();
        inner.maintenance.notify_all();
    }
}

/// Set when a clear interrupts a pending or in-use connection.
#[derive(Debug, Default)]
struct Interrupt {
    fired: AtomicBool,
    notify: Notify,
}

impl Interrupt {
    fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        self.notify.notify_all();
    }

    fn is_fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        loop {
            let listener = self.notify.listen();
            if self.is_fired() {
                return;
            }
            listener.await;
        }
    }
}

impl<E: Establish> ConnectionPool<E> {
    /// Creates a pool, paused, and publishes its PoolCreated event. With a `spawner`,
    /// a background task closes perished available connections and keeps
    /// `min_pool_size` connections open; without one, call
    /// [`populate`](Self::populate) for that.
    pub fn new(
        address: ServerAddress,
        options: PoolOptions,
        establisher: E,
        clock: Arc<dyn Clock>,
        spawner: Option<Arc<dyn Spawner>>,
        events: Option<EventHandler<CmapEvent>>,
    ) -> Result<Self> {
        options.validate()?;
        let inner = Arc::new(Inner {
            address,
            options,
            establisher,
            clock,
            spawner,
            events: EventSink::new(events),
            state: Mutex::new(State {
                status: PoolState::Paused,
                generation: 0,
                services: HashMap::new(),
                next_connection_id: 1,
                next_waiter_id: 0,
                available: Vec::new(),
                total: 0,
                pending: 0,
                wait_queue: VecDeque::new(),
                evicted: HashSet::new(),
                live: HashMap::new(),
            }),
            changed: Notify::default(),
            maintenance: Notify::default(),
            orphans: Mutex::new(Vec::new()),
        });
        inner.events.queue_with(|| {
            CmapEvent::PoolCreated(PoolCreatedEvent {
                address: inner.address.clone(),
                options: Some((&inner.options).into()),
            })
        });
        inner.events.flush();
        if let Some(spawner) = &inner.spawner {
            spawner.spawn(rt::boxed(maintenance_loop(Arc::downgrade(&inner))));
        }
        Ok(ConnectionPool { inner })
    }

    /// The server the pool connects to.
    pub fn address(&self) -> &ServerAddress {
        &self.inner.address
    }

    /// The pool's options.
    pub fn options(&self) -> &PoolOptions {
        &self.inner.options
    }

    /// What the pool opens its connections with.
    pub fn establisher(&self) -> &E {
        &self.inner.establisher
    }

    /// Paused, ready or closed.
    pub fn state(&self) -> PoolState {
        self.inner.state().status
    }

    /// The pool's generation: how many times it was cleared (outside load-balanced
    /// mode, or for every service at once).
    pub fn generation(&self) -> u32 {
        self.inner.state().generation
    }

    /// Load-balanced mode: the generation of `service_id`, while the pool has
    /// connections to it.
    pub fn service_generation(&self, service_id: ObjectId) -> Option<u32> {
        let state = self.inner.state();
        state.services.get(&service_id).map(|s| s.generation)
    }

    /// Connections pending, available and in use.
    pub fn total_connection_count(&self) -> u32 {
        self.inner.state().total
    }

    /// Connections available for check-out.
    pub fn available_connection_count(&self) -> u32 {
        self.inner.state().available.len() as u32
    }

    /// Connections being established.
    pub fn pending_connection_count(&self) -> u32 {
        self.inner.state().pending
    }

    /// Whether connection `connection_id` is checked out (or being established) now:
    /// not yet checked in, dropped or closed.
    pub fn is_in_use(&self, connection_id: u32) -> bool {
        self.inner.state().live.contains_key(&connection_id)
    }

    /// Marks a paused pool ready (PoolReady), so that check-outs are served and
    /// minPoolSize is maintained. Does nothing to a ready or closed pool.
    pub fn ready(&self) {
        self.ready_then().finish();
    }

    /// [`ready`](Self::ready), leaving the event's delivery and the wake-ups to the
    /// [`Aftermath`], for a caller that holds a lock a listener might want (the
    /// topology's: the pool must be ready in the same step that makes its server
    /// selectable).
    pub(crate) fn ready_then(&self) -> Aftermath<'_, E> {
        let inner = &self.inner;
        let mut state = inner.state();
        let paused = state.status == PoolState::Paused;
        if paused {
            state.status = PoolState::Ready;
            inner.events.queue_with(|| {
                CmapEvent::PoolReady(PoolReadyEvent {
                    address: inner.address.clone(),
                })
            });
        }
        Aftermath {
            pool: paused.then_some(self),
            interrupts: Vec::new(),
        }
    }

    /// Clears the pool: every connection of the current generation becomes stale and
    /// is closed when next seen (checked in, found available, or by the background
    /// task, which runs at once).
    ///
    /// Outside load-balanced mode, the pool is also paused and every check-out waiting
    /// in its queue fails; PoolCleared is published unless it was paused already. In
    /// load-balanced mode `Some(service_id)` clears that service only, without pausing
    /// (`None` clears every service).
    ///
    /// With `interrupt_in_use`, the connections in use and being established are
    /// interrupted as well: establishing ones fail, and in-use ones report it through
    /// [`CheckedOut::is_interrupted`], [`CheckedOut::interrupted`] and
    /// [`CheckedOut::check_interrupted`].
    pub fn clear(&self, service_id: Option<ObjectId>, interrupt_in_use: bool) {
        self.clear_if(service_id, None, interrupt_in_use).finish();
    }

    /// [`clear`](Self::clear), unless the generation (of `service_id`, in
    /// load-balanced mode) is no longer `generation`: errors judged against one
    /// generation clear the pool once, however many there are.
    pub fn clear_generation(
        &self,
        service_id: Option<ObjectId>,
        generation: u32,
        interrupt_in_use: bool,
    ) {
        self.clear_generation_then(service_id, generation, interrupt_in_use)
            .finish();
    }

    /// [`clear_generation`](Self::clear_generation), leaving the events' delivery and
    /// the wake-ups to the [`Aftermath`], as [`ready_then`](Self::ready_then) does: the
    /// topology clears a pool in the same step that marks its server Unknown.
    pub(crate) fn clear_generation_then(
        &self,
        service_id: Option<ObjectId>,
        generation: u32,
        interrupt_in_use: bool,
    ) -> Aftermath<'_, E> {
        self.clear_if(service_id, Some(generation), interrupt_in_use)
    }

    fn clear_if(
        &self,
        service_id: Option<ObjectId>,
        expected_generation: Option<u32>,
        interrupt_in_use: bool,
    ) -> Aftermath<'_, E> {
        let inner = &self.inner;
        let mut interrupts = Vec::new();
        {
            let mut state = inner.state();
            let state = &mut *state;
            if state.status == PoolState::Closed {
                return Aftermath {
                    pool: None,
                    interrupts,
                };
            }
            let service_id = service_id.filter(|_| inner.options.load_balanced);
            if let Some(expected) = expected_generation {
                let current = match service_id {
                    Some(service_id) => state.services.get(&service_id).map(|s| s.generation),
                    None => Some(state.generation),
                };
                if current.is_some_and(|current| current != expected) {
                    return Aftermath {
                        pool: None,
                        interrupts,
                    };
                }
            }
            let emit = match service_id {
                Some(service_id) => {
                    if let Some(service) = state.services.get_mut(&service_id) {
                        let old = service.generation;
                        service.generation += 1;
                        if interrupt_in_use {
                            interrupts.extend(
                                state
                                    .live
                                    .values()
                                    .filter(|live| {
                                        live.service_id == Some(service_id)
                                            && live.generation <= old
                                    })
                                    .map(|live| live.interrupt.clone()),
                            );
                        }
                    }
                    true
                }
                None => {
                    let old = state.generation;
                    state.generation += 1;
                    let emit = if inner.options.load_balanced {
                        for service in state.services.values_mut() {
                            service.generation += 1;
                        }
                        true
                    } else {
                        let was_ready = state.status == PoolState::Ready;
                        state.status = PoolState::Paused;
                        let evicted: Vec<u64> = state.wait_queue.drain(..).collect();
                        state.evicted.extend(evicted);
                        was_ready
                    };
                    if interrupt_in_use {
                        let load_balanced = inner.options.load_balanced;
                        interrupts.extend(
                            state
                                .live
                                .values()
                                .filter(|live| load_balanced || live.generation <= old)
                                .map(|live| live.interrupt.clone()),
                        );
                    }
                    emit
                }
            };
            if emit {
                inner.events.queue_with(|| {
                    CmapEvent::PoolCleared(PoolClearedEvent {
                        address: inner.address.clone(),
                        service_id,
                        interrupt_in_use_connections: interrupt_in_use,
                    })
                });
            }
        }
        Aftermath {
            pool: Some(self),
            interrupts,
        }
    }

    /// Closes the pool for good: its available connections are closed, then
    /// PoolClosed is published; check-outs fail from now on and connections in use
    /// are closed when they come back. Establishments a pool without a spawner was
    /// still keeping are abandoned.
    pub fn close(&self) {
        let inner = &self.inner;
        let mut closed = Vec::new();
        {
            let mut state = inner.state();
            let state = &mut *state;
            if state.status == PoolState::Closed {
                return;
            }
            state.status = PoolState::Closed;
            for idle in std::mem::take(&mut state.available) {
                inner.close_locked(state, idle.meta, ConnectionClosedReason::PoolClosed);
                closed.push(idle.connection);
            }
            inner.events.queue_with(|| {
                CmapEvent::PoolClosed(PoolClosedEvent {
                    address: inner.address.clone(),
                })
            });
        }
        inner.settle(closed);
        inner.maintenance.notify_all();
        // Dropped outside every lock: each closes its connection as it goes.
        let orphans = std::mem::take(&mut *lock(&inner.orphans));
        drop(orphans);
    }

    /// Checks a connection out (CMAP spec, "Checking Out a Connection"): the most
    /// recently used available one that has not perished, or a new one when the pool
    /// has room (maxPoolSize) and fewer than maxConnecting are being established; if
    /// neither, the check-out waits its turn in a first-in, first-out queue.
    ///
    /// `timeout` bounds the wait in the queue (not the establishment of a new
    /// connection, which [`Establish`] bounds); `None` means the pool's
    /// `wait_queue_timeout`, and no limit if that is unset too.
    ///
    /// Errors: the pool is closed ([`ErrorKind::PoolClosed`]), or paused or cleared
    /// while waiting ([`ErrorKind::ConnectionPoolCleared`], retryable); the timeout passed
    /// ([`ErrorKind::WaitQueueTimeout`]); establishing the new connection failed (the
    /// [`Establish`] error).
    pub async fn check_out(&self, timeout: Option<Duration>) -> Result<CheckedOut<E>> {
        self.check_out_inner(timeout, None).await
    }

    /// [`check_out`](Self::check_out) of a connection established beforehand, outside
    /// the pool — or of the error establishing it — when the check-out would establish
    /// one: the pool takes it in as if it had just established it, with the same events
    /// in the same order (ConnectionCheckOutStarted, ConnectionCreated, then
    /// ConnectionReady and ConnectionCheckedOut, or the failure's SDAM report,
    /// ConnectionClosed and ConnectionCheckOutFailed). For a cold client's first
    /// operation, whose connection opens before its server is known (issue 24,
    /// `cluster::first_contact`); a connection available in the pool is taken instead
    /// (and the one given is closed).
    pub async fn check_out_established(
        &self,
        established: Result<E::Connection>,
        timeout: Option<Duration>,
    ) -> Result<CheckedOut<E>> {
        self.check_out_inner(timeout, Some(established)).await
    }

    /// Takes in a connection established beforehand, outside the pool, for nobody in
    /// particular: it becomes available as one the pool opened for itself would
    /// (minPoolSize's), with the same events (ConnectionCreated, ConnectionReady). It
    /// is closed instead, without events, when the pool would not have opened it: the
    /// pool is not ready (its server is not known, or the pool is closed), it is full
    /// (maxPoolSize), or it was cleared since `generation`, the generation the
    /// connection started in. For the connections a cold client's first selection
    /// opened to the seeds it did not pick (`cluster::first_contact`).
    pub fn take_in(&self, connection: E::Connection, generation: u32) {
        let inner = &self.inner;
        let pending = {
            let mut state = inner.state();
            let max = inner.options.max_pool_size;
            let fits = state.status == PoolState::Ready
                && state.generation == generation
                && (max == 0 || state.total < max);
            fits.then(|| inner.create_locked(&mut state, inner.clock.now()))
        };
        match pending {
            Some(pending) => inner.established(pending, connection, Purpose::Populate),
            None => drop(connection),
        }
    }

    async fn check_out_inner(
        &self,
        timeout: Option<Duration>,
        established: Option<Result<E::Connection>>,
    ) -> Result<CheckedOut<E>> {
        let inner = &*self.inner;
        let started = inner.clock.now();
        let timeout = timeout.or(inner.options.wait_queue_timeout);
        let waiter = {
            let mut state = inner.state();
            inner.events.queue_with(|| {
                CmapEvent::ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent {
                    address: inner.address.clone(),
                })
            });
            let waiter = state.next_waiter_id;
            state.next_waiter_id += 1;
            state.wait_queue.push_back(waiter);
            waiter
        };
        inner.events.flush();
        let _queued = Queued { inner, waiter };
        // The deadline's timer is started when the check-out first has to wait: most
        // find a connection at once, and a timer for each (a `setTimeout` and its
        // promise in JavaScript) showed in the npm package's profile.
        let mut deadline = None;
        let mut orphans = OrphanDriver::new(inner);
        let pending = loop {
            let mut closed = Vec::new();
            let (step, listener) = {
                let mut state = inner.state();
                let step = inner.try_acquire(&mut state, waiter, started, &mut closed);
                let listener = matches!(step, Step::Wait).then(|| inner.changed.listen());
                (step, listener)
            };
            // Waking the other waiters when nothing changed would wake this one too,
            // and they would keep waking each other.
            let changed = !matches!(step, Step::Wait) || !closed.is_empty();
            inner.events.flush();
            drop(closed);
            if changed {
                inner.changed.notify_all();
            }
            match step {
                Step::Wait => {}
                Step::Fail(error) => return Err(error),
                Step::Idle(connection, meta, interrupt) => {
                    return Ok(CheckedOut {
                        pool: self.inner.clone(),
                        connection: Some(connection),
                        meta,
                        interrupt,
                    });
                }
                Step::Create(pending) => break pending,
            }
            let Some(listener) = listener else {
                continue;
            };
            if let (None, Some(timeout)) = (&deadline, timeout) {
                let waited = inner.clock.now() - started;
                deadline = Some(inner.clock.sleep(timeout.saturating_sub(waited)));
            }
            let expired = orphans
                .drive(async {
                    match deadline.as_mut() {
                        None => {
                            listener.await;
                            false
                        }
                        Some(sleep) => {
                            matches!(future::select(listener, sleep).await, Either::Right(_))
                        }
                    }
                })
                .await;
            if expired {
                let after = timeout.unwrap_or_default();
                let detail = {
                    let mut state = inner.state();
                    state.leave(waiter);
                    inner.check_out_failed(started, ConnectionCheckoutFailedReason::Timeout, None);
                    inner.wait_queue_timeout_detail(&state)
                };
                inner.settle(Vec::new());
                return Err(Error::new(ErrorKind::WaitQueueTimeout {
                    address: inner.address.to_string(),
                    after,
                    detail,
                }));
            }
        };

        // Out of the queue, with a connection to establish — or established already.
        let (sender, receiver) = oneshot::channel();
        let purpose = Purpose::CheckOut(sender);
        match established {
            Some(Ok(connection)) => self.inner.established(pending, connection, purpose),
            Some(Err(error)) => self.inner.establishment_failed(
                &pending,
                error,
                purpose,
                ConnectionClosedReason::Error,
                true,
            ),
            None => {
                let task = establishment(self.inner.clone(), pending, purpose);
                match &inner.spawner {
                    Some(spawner) => spawner.spawn(rt::boxed(task.map(drop))),
                    None => {
                        let mut own = Owned {
                            inner: self.inner.clone(),
                            task: Some(rt::boxed(task.map(drop))),
                        };
                        orphans.drive(&mut own).await;
                    }
                }
            }
        }
        let outcome = orphans.drive(receiver).await;
        drop(orphans);
        match outcome {
            Ok(Ok(established)) => Ok(established.into_checked_out(started)),
            Ok(Err(error)) => {
                {
                    let _state = inner.state();
                    inner.check_out_failed(
                        started,
                        ConnectionCheckoutFailedReason::ConnectionError,
                        Some(&error),
                    );
                }
                inner.events.flush();
                Err(error)
            }
            Err(oneshot::Canceled) => {
                {
                    let _state = inner.state();
                    inner.check_out_failed(
                        started,
                        ConnectionCheckoutFailedReason::PoolClosed,
                        None,
                    );
                }
                inner.events.flush();
                Err(pool_closed_error(&inner.address))
            }
        }
    }

    /// Checks a connection in (CMAP spec, "Checking In a Connection"): it becomes
    /// available, unless it perished (stale, broken, interrupted) or the pool is
    /// closed, in which case it is closed.
    ///
    /// A connection of another pool is an [`ErrorKind::InvalidArgument`] error (and
    /// is closed by its own pool).
    pub fn check_in(&self, mut connection: CheckedOut<E>) -> Result<()> {
        if !Arc::ptr_eq(&self.inner, &connection.pool) {
            return Err(Error::invalid_argument(format!(
                "connection {} of the pool for {} cannot be checked in to the pool for {}",
                connection.meta.id, connection.pool.address, self.inner.address
            )));
        }
        if let Some(inner_connection) = connection.connection.take() {
            self.inner.check_in_connection(
                inner_connection,
                connection.meta,
                connection.interrupt.is_fired(),
                false,
            );
        }
        Ok(())
    }

    /// Runs the pool's upkeep now and waits for it: closes perished available
    /// connections, opens connections until minPoolSize (when the pool is ready;
    /// stopping at the first failure, which goes to
    /// [`Establish::establish_failed`]), and finishes establishments that check-outs
    /// gave up on. A pool with a spawner does this in the background and need not be
    /// asked; a pool without one relies on its owner calling this, for example between
    /// operations.
    pub async fn populate(&self) {
        let failed = Arc::new(AtomicBool::new(false));
        let mut driver = OrphanDriver::new(&self.inner);
        while let Some(tasks) = self.inner.maintain() {
            let more = !tasks.is_empty();
            for task in tasks {
                let failed = failed.clone();
                // Driven as orphans are: if this call is dropped, they carry on.
                driver.tasks.push(rt::boxed(task.map(move |established| {
                    if !established {
                        failed.store(true, Ordering::SeqCst);
                    }
                })));
            }
            driver.finish().await;
            if !more || failed.load(Ordering::SeqCst) {
                break;
            }
        }
    }
}

impl<E: Establish> Drop for ConnectionPool<E> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<E: Establish> fmt::Debug for ConnectionPool<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state();
        f.debug_struct("ConnectionPool")
            .field("address", &self.inner.address)
            .field("state", &state.status)
            .field("generation", &state.generation)
            .field("total", &state.total)
            .field("available", &state.available.len())
            .field("pending", &state.pending)
            .field("waiting", &state.wait_queue.len())
            .finish_non_exhaustive()
    }
}

impl<E: Establish> CheckedOut<E> {
    /// The connection's id in its pool (1, 2, 3 … in order of creation).
    pub fn id(&self) -> u32 {
        self.meta.id
    }

    /// The generation the connection belongs to (its service's in load-balanced mode).
    pub fn generation(&self) -> u32 {
        self.meta.generation
    }

    /// The connection's `serviceId` (load-balanced mode only).
    pub fn service_id(&self) -> Option<ObjectId> {
        self.meta.service_id
    }

    /// The server of the connection's pool.
    pub fn address(&self) -> &ServerAddress {
        &self.pool.address
    }

    /// Records what the connection is pinned to (load-balanced mode), for the
    /// wait-queue timeout message of its pool (Load Balancer spec, "Connection
    /// Tracking"). It stays so until checked in.
    pub fn mark_pinned(&self, to: PinnedTo) {
        if let Some(live) = self.pool.state().live.get_mut(&self.meta.id) {
            live.pinned = Some(to);
        }
    }

    /// Whether a clear with `interrupt_in_use` interrupted the connection: it must not
    /// be used any more, and will be closed when checked in.
    pub fn is_interrupted(&self) -> bool {
        self.interrupt.is_fired()
    }

    /// Completes when the connection is interrupted; race an operation against it to
    /// abandon the operation as soon as that happens. The future borrows nothing, so
    /// the operation keeps the connection to itself meanwhile.
    pub fn interrupted(&self) -> impl Future<Output = ()> + MaybeSend + 'static {
        let interrupt = self.interrupt.clone();
        async move { interrupt.wait().await }
    }

    /// An error if the connection was interrupted: see [`interruption`](Self::interruption).
    pub fn check_interrupted(&self) -> Result<()> {
        match self.is_interrupted() {
            true => Err(self.interruption()),
            false => Ok(()),
        }
    }

    /// The error of an operation abandoned because its connection was interrupted: the
    /// retryable error the spec asks for (`"Connection to <address> interrupted due to
    /// server monitor timeout"`).
    pub fn interruption(&self) -> Error {
        Error::pool_cleared(
            self.pool.address.to_string(),
            format!(
                "Connection to {} interrupted due to server monitor timeout",
                self.pool.address
            ),
        )
    }
}

impl<E: Establish> Deref for CheckedOut<E> {
    type Target = E::Connection;

    fn deref(&self) -> &E::Connection {
        self.connection
            .as_ref()
            .expect("a checked-out connection is present until it is checked in or dropped")
    }
}

impl<E: Establish> DerefMut for CheckedOut<E> {
    fn deref_mut(&mut self) -> &mut E::Connection {
        self.connection
            .as_mut()
            .expect("a checked-out connection is present until it is checked in or dropped")
    }
}

impl<E: Establish> Drop for CheckedOut<E> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            self.pool
                .check_in_connection(connection, self.meta, self.interrupt.is_fired(), true);
        }
    }
}

impl<E: Establish> fmt::Debug for CheckedOut<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckedOut")
            .field("address", &self.pool.address)
            .field("id", &self.meta.id)
            .field("generation", &self.meta.generation)
            .field("service_id", &self.meta.service_id)
            .field("interrupted", &self.is_interrupted())
            .finish_non_exhaustive()
    }
}

/// What one look at the pool gives a check-out.
enum Step<C> {
    /// Not its turn, or nothing to take yet.
    Wait,
    /// The check-out failed (its event is queued).
    Fail(Error),
    /// An available connection, now in use (its event is queued).
    Idle(C, Meta, Arc<Interrupt>),
    /// A new connection to establish.
    Create(Pending),
}

impl<C> State<C> {
    /// Takes a waiter out of the queue (and out of the evicted set).
    fn leave(&mut self, waiter: u64) -> bool {
        let evicted = self.evicted.remove(&waiter);
        let queued = match self.wait_queue.iter().position(|&w| w == waiter) {
            Some(index) => self.wait_queue.remove(index).is_some(),
            None => false,
        };
        evicted || queued
    }

    fn is_stale(&self, meta: &Meta) -> bool {
        match meta.service_id {
            Some(service_id) => self
                .services
                .get(&service_id)
                .is_none_or(|service| service.generation != meta.generation),
            None => meta.generation != self.generation,
        }
    }
}

impl<E: Establish> Inner<E> {
    fn state(&self) -> MutexGuard<'_, State<E::Connection>> {
        lock(&self.state)
    }

    /// After a change made under the lock: delivers the queued events, closes the
    /// connections taken out of the pool, and wakes the waiting check-outs.
    fn settle(&self, closed: Vec<E::Connection>) {
        self.events.flush();
        drop(closed);
        self.changed.notify_all();
    }

    /// Keeps unfinished establishments for later check-outs (and `populate`) to drive,
    /// and wakes the waiting check-outs so that they adopt them; once the pool is
    /// closed they are dropped instead (nobody would drive them).
    fn keep_orphans(&self, tasks: impl IntoIterator<Item = BoxFuture<'static, ()>>) {
        let tasks: Vec<_> = tasks.into_iter().collect();
        {
            // Under the state lock, so that `close` (which marks the pool closed under
            // it, then takes the orphans) cannot miss these.
            let state = self.state();
            if state.status != PoolState::Closed {
                lock(&self.orphans).extend(tasks);
                drop(state);
                self.changed.notify_all();
                return;
            }
        }
        drop(tasks);
    }

    /// Accounts for a connection leaving the pool, and queues its ConnectionClosed.
    fn close_locked(
        &self,
        state: &mut State<E::Connection>,
        meta: Meta,
        reason: ConnectionClosedReason,
    ) {
        state.total -= 1;
        if let Some(service_id) = meta.service_id {
            if let Some(service) = state.services.get_mut(&service_id) {
                service.connections -= 1;
                if service.connections == 0 {
                    state.services.remove(&service_id);
                }
            }
        }
        self.events.queue_with(|| {
            CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                address: self.address.clone(),
                connection_id: meta.id,
                reason,
            })
        });
    }

    /// Queues a ConnectionCheckOutFailed (the caller holds the state lock), with the
    /// error when establishing a connection failed or the pool was cleared.
    fn check_out_failed(
        &self,
        started: Instant,
        reason: ConnectionCheckoutFailedReason,
        error: Option<&Error>,
    ) {
        let duration = self.clock.now() - started;
        self.events.queue_with(|| {
            CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
                address: self.address.clone(),
                reason,
                error: error.cloned(),
                duration,
            })
        });
    }

    /// Why an available connection perished, if it did.
    fn perished(
        &self,
        state: &State<E::Connection>,
        idle: &Idle<E::Connection>,
        now: Instant,
    ) -> Option<ConnectionClosedReason> {
        if state.is_stale(&idle.meta) {
            Some(ConnectionClosedReason::Stale)
        } else if self
            .options
            .max_idle_time
            .is_some_and(|max| now - idle.since > max)
        {
            Some(ConnectionClosedReason::Idle)
        } else if idle.connection.is_broken()
            || (now - idle.since >= IDLE_CHECK_AFTER && !idle.connection.is_open_and_idle())
        {
            Some(ConnectionClosedReason::Error)
        } else {
            None
        }
    }

    /// One look at the pool by the check-out `waiter` (the body of the spec's
    /// check-out loop). Perished connections met on the way go to `closed`.
    fn try_acquire(
        &self,
        state: &mut State<E::Connection>,
        waiter: u64,
        started: Instant,
        closed: &mut Vec<E::Connection>,
    ) -> Step<E::Connection> {
        if state.status == PoolState::Closed {
            state.leave(waiter);
            self.check_out_failed(started, ConnectionCheckoutFailedReason::PoolClosed, None);
            return Step::Fail(pool_closed_error(&self.address));
        }
        if state.evicted.contains(&waiter) || state.status == PoolState::Paused {
            state.leave(waiter);
            let cleared = pool_cleared_error(&self.address);
            self.check_out_failed(
                started,
                ConnectionCheckoutFailedReason::ConnectionError,
                Some(&cleared),
            );
            return Step::Fail(cleared);
        }
        if state.wait_queue.front() != Some(&waiter) {
            return Step::Wait;
        }
        let now = self.clock.now();
        while let Some(idle) = state.available.pop() {
            if let Some(reason) = self.perished(state, &idle, now) {
                self.close_locked(state, idle.meta, reason);
                closed.push(idle.connection);
                continue;
            }
            state.wait_queue.pop_front();
            let interrupt = Arc::new(Interrupt::default());
            state.live.insert(
                idle.meta.id,
                Live {
                    generation: idle.meta.generation,
                    service_id: idle.meta.service_id,
                    interrupt: interrupt.clone(),
                    pinned: None,
                },
            );
            self.events.queue_with(|| {
                CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                    address: self.address.clone(),
                    connection_id: idle.meta.id,
                    duration: now - started,
                })
            });
            return Step::Idle(idle.connection, idle.meta, interrupt);
        }
        if self.has_room(state) {
            state.wait_queue.pop_front();
            return Step::Create(self.create_locked(state, now));
        }
        Step::Wait
    }

    /// What a WaitQueueTimeoutError says of the pool. Load-balanced mode gives the
    /// Load Balancer spec's detailed message ("Connection Tracking"): the connections
    /// in use, by what they are pinned to.
    fn wait_queue_timeout_detail(&self, state: &State<E::Connection>) -> String {
        if !self.options.load_balanced {
            return String::new();
        }
        let in_use = state.total - state.pending - state.available.len() as u32;
        let pinned_to = |to: PinnedTo| {
            state
                .live
                .values()
                .filter(|live| live.pinned == Some(to))
                .count() as u32
        };
        let (cursors, transactions) = (
            pinned_to(PinnedTo::Cursor),
            pinned_to(PinnedTo::Transaction),
        );
        format!(
            "Timeout waiting for connection from the connection pool. maxPoolSize: {}, \
             connections in use by cursors: {cursors}, connections in use by transactions: \
             {transactions}, connections in use by other operations: {}",
            self.options.max_pool_size,
            in_use.saturating_sub(cursors + transactions)
        )
    }

    /// Whether one more connection may be created now (maxPoolSize, maxConnecting).
    fn has_room(&self, state: &State<E::Connection>) -> bool {
        let max = self.options.max_pool_size;
        (max == 0 || state.total < max) && state.pending < self.options.max_connecting
    }

    /// Creates a pending connection (ConnectionCreated).
    fn create_locked(&self, state: &mut State<E::Connection>, now: Instant) -> Pending {
        let id = state.next_connection_id;
        state.next_connection_id += 1;
        state.total += 1;
        state.pending += 1;
        let interrupt = Arc::new(Interrupt::default());
        state.live.insert(
            id,
            Live {
                generation: state.generation,
                service_id: None,
                interrupt: interrupt.clone(),
                pinned: None,
            },
        );
        self.events.queue_with(|| {
            CmapEvent::ConnectionCreated(ConnectionCreatedEvent {
                address: self.address.clone(),
                connection_id: id,
            })
        });
        Pending {
            id,
            generation: state.generation,
            created: now,
            interrupt,
        }
    }

    /// Makes an established connection available, or closes it if it perished or the
    /// pool is closed.
    fn make_available(
        &self,
        state: &mut State<E::Connection>,
        connection: E::Connection,
        meta: Meta,
        closed: &mut Vec<E::Connection>,
    ) {
        // A connection that failed is closed for that error, even when the failure
        // also made its generation stale (SDAM clears the pool after a network error
        // before the connection comes back).
        let reason = if state.status == PoolState::Closed {
            Some(ConnectionClosedReason::PoolClosed)
        } else if connection.is_broken() {
            Some(ConnectionClosedReason::Error)
        } else if state.is_stale(&meta) {
            Some(ConnectionClosedReason::Stale)
        } else {
            None
        };
        match reason {
            Some(reason) => {
                self.close_locked(state, meta, reason);
                closed.push(connection);
            }
            None => state.available.push(Idle {
                connection,
                meta,
                since: self.clock.now(),
            }),
        }
    }

    /// A connection comes back from use: checked in, or dropped by its user.
    fn check_in_connection(
        &self,
        connection: E::Connection,
        meta: Meta,
        interrupted: bool,
        dropped: bool,
    ) {
        let mut closed = Vec::new();
        {
            let mut state = self.state();
            let state = &mut *state;
            state.live.remove(&meta.id);
            self.events.queue_with(|| {
                CmapEvent::ConnectionCheckedIn(ConnectionCheckedInEvent {
                    address: self.address.clone(),
                    connection_id: meta.id,
                })
            });
            if dropped || interrupted {
                let reason = if state.status == PoolState::Closed {
                    ConnectionClosedReason::PoolClosed
                } else if state.is_stale(&meta) {
                    ConnectionClosedReason::Stale
                } else {
                    ConnectionClosedReason::Error
                };
                self.close_locked(state, meta, reason);
                closed.push(connection);
            } else {
                self.make_available(state, connection, meta, &mut closed);
            }
        }
        self.settle(closed);
    }

    /// Whether the pool may have upkeep to do as time passes: not while it is paused
    /// with no available connection. A paused pool creates no connection, and every
    /// connection that becomes available in it is stale and closed at once (it was
    /// paused by a clear); it leaves that state only by [`ConnectionPool::ready`] or
    /// closing, which wake the background task.
    fn has_upkeep(&self) -> bool {
        let state = self.state();
        state.status != PoolState::Paused || !state.available.is_empty()
    }

    /// One run of the background task: closes perished available connections and,
    /// when the pool is ready and below minPoolSize, creates one connection (as
    /// maxPoolSize and maxConnecting allow), returning its establishment (which tells
    /// whether it succeeded). `None` once the pool is closed.
    fn maintain(self: &Arc<Self>) -> Option<Vec<BoxFuture<'static, bool>>> {
        let mut closed = Vec::new();
        let mut tasks = Vec::new();
        {
            let mut state = self.state();
            let state = &mut *state;
            if state.status == PoolState::Closed {
                return None;
            }
            let now = self.clock.now();
            for idle in std::mem::take(&mut state.available) {
                match self.perished(state, &idle, now) {
                    Some(reason) => {
                        self.close_locked(state, idle.meta, reason);
                        closed.push(idle.connection);
                    }
                    None => state.available.push(idle),
                }
            }
            // One at a time (the next run starts once it is established), so that
            // check-outs keep the other maxConnecting slots and are handed the
            // connections the pool opens for itself rather than opening more.
            if state.status == PoolState::Ready
                && state.total < self.options.min_pool_size
                && self.has_room(state)
            {
                let pending = self.create_locked(state, now);
                tasks.push(establishment(self.clone(), pending, Purpose::Populate));
            }
        }
        self.settle(closed);
        Some(tasks)
    }

    /// A pending connection was established.
    fn established(
        self: &Arc<Self>,
        pending: Pending,
        connection: E::Connection,
        purpose: Purpose<E>,
    ) {
        let mut closed = Vec::new();
        let hand_over = {
            let mut state = self.state();
            let state = &mut *state;
            state.pending -= 1;
            let service_id = if self.options.load_balanced {
                connection.service_id()
            } else {
                None
            };
            let generation = match service_id {
                Some(service_id) => {
                    let service = state.services.entry(service_id).or_default();
                    service.connections += 1;
                    service.generation
                }
                None => pending.generation,
            };
            let meta = Meta {
                id: pending.id,
                generation,
                service_id,
            };
            let duration = self.clock.now() - pending.created;
            self.events.queue_with(|| {
                CmapEvent::ConnectionReady(ConnectionReadyEvent {
                    address: self.address.clone(),
                    connection_id: pending.id,
                    duration,
                })
            });
            match purpose {
                Purpose::CheckOut(sender) => {
                    if let Some(live) = state.live.get_mut(&pending.id) {
                        live.generation = generation;
                        live.service_id = service_id;
                    }
                    Some((sender, connection, meta))
                }
                Purpose::Populate => {
                    // Available in the same step as maxConnecting frees up, so that
                    // nobody starts establishing another instead of taking this one.
                    state.live.remove(&pending.id);
                    self.make_available(state, connection, meta, &mut closed);
                    None
                }
            }
        };
        self.settle(closed);
        match hand_over {
            Some((sender, connection, meta)) => {
                let established = Established {
                    pool: self.clone(),
                    connection: Some(connection),
                    meta,
                    interrupt: pending.interrupt,
                };
                // If the check-out gave up, the connection comes back with the error
                // value and is made available as it drops.
                drop(sender.send(Ok(established)));
            }
            None => self.maintenance.notify_all(),
        }
    }

    /// A pending connection failed to establish, or was interrupted (`report` false:
    /// a clear did it, and SDAM already knows).
    ///
    /// The error goes to SDAM first, whose clear (if any) comes before the connection's
    /// ConnectionClosed, which comes before the check-out's ConnectionCheckOutFailed:
    /// the order of the specification's current tests (CMAP `pool-create-min-size-error`
    /// and `connection-logging` "Connection checkout fails due to error establishing
    /// connection", load balancer `sdam-error-handling` "errors during authentication are
    /// processed"; DRIVERS-1785: the pool is cleared before the failed connection is
    /// closed, whether it was opened for a check-out or for minPoolSize).
    fn establishment_failed(
        &self,
        pending: &Pending,
        error: Error,
        purpose: Purpose<E>,
        reason: ConnectionClosedReason,
        report: bool,
    ) {
        if report {
            self.establisher
                .establish_failed(&error, pending.generation);
        }
        {
            let mut state = self.state();
            let state = &mut *state;
            state.pending -= 1;
            state.live.remove(&pending.id);
            let meta = Meta {
                id: pending.id,
                generation: pending.generation,
                service_id: None,
            };
            self.close_locked(state, meta, reason);
        }
        self.settle(Vec::new());
        // A check-out that is still waiting publishes its CheckOutFailed and returns the
        // error.
        if let Purpose::CheckOut(sender) = purpose {
            drop(sender.send(Err(error)));
        }
    }
}

/// Who a connection is established for.
enum Purpose<E: Establish> {
    /// A check-out, waiting on the other end (or gone).
    CheckOut(oneshot::Sender<Result<Established<E>>>),
    /// The pool itself (minPoolSize).
    Populate,
}

/// Establishes a pending connection and hands it over; resolves to whether it was
/// established. Self-contained: it may be spawned, driven by a check-out, or kept by
/// the pool when its check-out gives up.
fn establishment<E: Establish>(
    inner: Arc<Inner<E>>,
    pending: Pending,
    purpose: Purpose<E>,
) -> BoxFuture<'static, bool> {
    rt::boxed(async move {
        let mut guard = PendingGuard {
            inner: &inner,
            pending: &pending,
            armed: true,
        };
        let outcome = {
            let establish = guard.inner.establisher.establish(pending.id);
            let interrupted = pin!(pending.interrupt.wait());
            match future::select(establish, interrupted).await {
                Either::Left((result, _)) => Some(result),
                Either::Right(_) => None,
            }
        };
        guard.armed = false;
        drop(guard);
        match outcome {
            Some(Ok(connection)) => {
                inner.established(pending, connection, purpose);
                true
            }
            Some(Err(error)) => {
                inner.establishment_failed(
                    &pending,
                    error,
                    purpose,
                    ConnectionClosedReason::Error,
                    true,
                );
                false
            }
            None => {
                let error = Error::pool_cleared(
                    inner.address.to_string(),
                    format!(
                        "connection {} was interrupted while being established",
                        pending.id
                    ),
                );
                inner.establishment_failed(
                    &pending,
                    error,
                    purpose,
                    ConnectionClosedReason::Stale,
                    false,
                );
                false
            }
        }
    })
}

/// Releases a pending connection whose establishment was dropped before it finished
/// (the host stopped the task, or the pool was closed with it unfinished).
struct PendingGuard<'a, E: Establish> {
    inner: &'a Inner<E>,
    pending: &'a Pending,
    armed: bool,
}

impl<E: Establish> Drop for PendingGuard<'_, E> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let inner = self.inner;
        {
            let mut state = inner.state();
            let state = &mut *state;
            state.pending -= 1;
            state.live.remove(&self.pending.id);
            let reason = if state.status == PoolState::Closed {
                ConnectionClosedReason::PoolClosed
            } else {
                ConnectionClosedReason::Error
            };
            let meta = Meta {
                id: self.pending.id,
                generation: self.pending.generation,
                service_id: None,
            };
            inner.close_locked(state, meta, reason);
        }
        inner.settle(Vec::new());
    }
}

/// An established connection on its way to the check-out that asked for it; if it
/// never gets there, it is made available as it drops.
struct Established<E: Establish> {
    pool: Arc<Inner<E>>,
    connection: Option<E::Connection>,
    meta: Meta,
    interrupt: Arc<Interrupt>,
}

impl<E: Establish> Established<E> {
    fn into_checked_out(mut self, started: Instant) -> CheckedOut<E> {
        let pool = self.pool.clone();
        {
            let _state = pool.state();
            let duration = pool.clock.now() - started;
            pool.events.queue_with(|| {
                CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                    address: pool.address.clone(),
                    connection_id: self.meta.id,
                    duration,
                })
            });
        }
        pool.events.flush();
        CheckedOut {
            pool,
            connection: self.connection.take(),
            meta: self.meta,
            interrupt: self.interrupt.clone(),
        }
    }
}

impl<E: Establish> Drop for Established<E> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let pool = &self.pool;
        let mut closed = Vec::new();
        {
            let mut state = pool.state();
            state.live.remove(&self.meta.id);
            pool.make_available(&mut state, connection, self.meta, &mut closed);
        }
        pool.settle(closed);
    }
}

/// A check-out's place in the wait queue, left when the check-out ends, however it
/// ends (the future may be dropped while it waits).
struct Queued<'a, E: Establish> {
    inner: &'a Inner<E>,
    waiter: u64,
}

impl<E: Establish> Drop for Queued<'_, E> {
    fn drop(&mut self) {
        let left = self.inner.state().leave(self.waiter);
        if left {
            // The next waiter may be first now.
            self.inner.changed.notify_all();
        }
    }
}

/// A check-out's own establishment, driven by the check-out (no spawner); handed to
/// the pool's orphans if the check-out is dropped before it finishes.
struct Owned<E: Establish> {
    inner: Arc<Inner<E>>,
    task: Option<BoxFuture<'static, ()>>,
}

impl<E: Establish> Future for Owned<E> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(task) = self.task.as_mut() {
            if task.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.task = None;
        }
        Poll::Ready(())
    }
}

impl<E: Establish> Drop for Owned<E> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            self.inner.keep_orphans([task]);
        }
    }
}

/// Drives the pool's orphaned establishments alongside what a check-out awaits, and
/// gives back the unfinished ones when it is dropped.
struct OrphanDriver<'a, E: Establish> {
    inner: &'a Inner<E>,
    tasks: FuturesUnordered<BoxFuture<'static, ()>>,
}

impl<'a, E: Establish> OrphanDriver<'a, E> {
    fn new(inner: &'a Inner<E>) -> Self {
        OrphanDriver {
            inner,
            tasks: FuturesUnordered::new(),
        }
    }

    fn adopt(&mut self) {
        let orphans = std::mem::take(&mut *lock(&self.inner.orphans));
        self.tasks.extend(orphans);
    }

    /// Awaits `future`, driving the orphans meanwhile.
    async fn drive<F: Future>(&mut self, future: F) -> F::Output {
        self.adopt();
        let mut future = pin!(future);
        let tasks = &mut self.tasks;
        poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(output);
            }
            while let Poll::Ready(Some(())) = tasks.poll_next_unpin(cx) {}
            Poll::Pending
        })
        .await
    }

    /// Drives every orphan to its end.
    async fn finish(&mut self) {
        self.adopt();
        while self.tasks.next().await.is_some() {}
    }
}

impl<E: Establish> Drop for OrphanDriver<'_, E> {
    fn drop(&mut self) {
        if self.tasks.is_empty() {
            return;
        }
        let tasks = std::mem::take(&mut self.tasks);
        self.inner.keep_orphans(tasks);
    }
}

/// The background task of a pool with a spawner: a maintenance run whenever woken or
/// every `maintenance_interval`, until the pool is closed or dropped. A pool with
/// nothing to maintain waits to be woken only: a client of a large deployment keeps a
/// paused pool per unreachable server, and 10,000 of them ticking every second cost
/// more than all the servers' checks.
async fn maintenance_loop<E: Establish>(pool: Weak<Inner<E>>) {
    loop {
        let (wake, sleep) = {
            let Some(inner) = pool.upgrade() else {
                return;
            };
            let wake = inner.maintenance.listen();
            let Some(tasks) = inner.maintain() else {
                return;
            };
            if let Some(spawner) = &inner.spawner {
                for task in tasks {
                    spawner.spawn(rt::boxed(task.map(drop)));
                }
            }
            let sleep = match inner.has_upkeep() {
                true => Either::Left(inner.clock.sleep(inner.options.maintenance_interval)),
                false => Either::Right(future::pending()),
            };
            (wake, sleep)
        };
        future::select(wake, sleep).await;
    }
}

fn pool_closed_error(address: &ServerAddress) -> Error {
    Error::new(ErrorKind::PoolClosed {
        address: address.to_string(),
    })
}

fn pool_cleared_error(address: &ServerAddress) -> Error {
    Error::pool_cleared(
        address.to_string(),
        "it is paused until its server is checked again".to_owned(),
    )
}
