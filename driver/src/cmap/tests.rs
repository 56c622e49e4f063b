//! Unit tests of the connection pool's trickiest parts, on a single-threaded executor
//! with a manual clock and fake connections whose establishment the test releases.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::oid::ObjectId;
use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use futures::FutureExt;

use super::*;
use crate::error::{Error, ErrorKind, Result};
use crate::event::cmap::{
    CmapEvent, ConnectionCheckoutFailedEvent, ConnectionCheckoutFailedReason,
    ConnectionClosedEvent, ConnectionClosedReason, PoolClearedEvent,
};
use crate::event::EventHandler;
use crate::rt::{self, BoxFuture, Clock, Instant, Spawner};
use crate::signal::Notify;
use crate::uri::ServerAddress;

/// A clock that moves only when told.
#[derive(Clone, Default)]
struct ManualClock(Arc<ClockState>);

#[derive(Default)]
struct ClockState {
    now: Mutex<Duration>,
    tick: Notify,
    /// How many sleeps were asked for.
    sleeps: AtomicUsize,
}

impl ManualClock {
    fn advance(&self, by: Duration) {
        *self.0.now.lock().unwrap() += by;
        self.0.tick.notify_all();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant::from_origin(*self.0.now.lock().unwrap())
    }

    fn unix_time(&self) -> Duration {
        Duration::ZERO
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0.sleeps.fetch_add(1, Ordering::SeqCst);
        let state = self.0.clone();
        let deadline = *state.now.lock().unwrap() + duration;
        rt::boxed(async move {
            loop {
                let tick = state.tick.listen();
                if *state.now.lock().unwrap() >= deadline {
                    return;
                }
                tick.await;
            }
        })
    }
}

/// A spawner whose tasks the test's executor picks up.
#[derive(Default)]
struct QueueSpawner(Mutex<Vec<BoxFuture<'static, ()>>>);

impl Spawner for QueueSpawner {
    fn spawn(&self, task: BoxFuture<'static, ()>) {
        self.0.lock().unwrap().push(task);
    }
}

/// Decides when each fake connection's establishment finishes, and how.
#[derive(Default)]
struct Gate {
    open_all: Mutex<bool>,
    opened: Mutex<HashSet<u32>>,
    failing: Mutex<HashSet<u32>>,
    changed: Notify,
    /// Load-balanced tests: the service of connection `id`.
    services: Option<fn(u32) -> ObjectId>,
    /// The pool's events.
    events: Events,
    /// For each failed establishment reported (`Establish::establish_failed`), how many
    /// events the pool had published then.
    reports: Mutex<Vec<usize>>,
}

impl Gate {
    fn open(&self, id: u32) {
        self.opened.lock().unwrap().insert(id);
        self.changed.notify_all();
    }

    fn open_all(&self) {
        *self.open_all.lock().unwrap() = true;
        self.changed.notify_all();
    }

    fn is_open(&self, id: u32) -> bool {
        *self.open_all.lock().unwrap() || self.opened.lock().unwrap().contains(&id)
    }
}

struct FakeEstablish(Arc<Gate>);

#[derive(Debug)]
struct FakeConnection {
    id: u32,
    service_id: Option<ObjectId>,
    broken: bool,
    /// What the connection says when the pool asks whether it is still open.
    closed_by_peer: bool,
}

impl Poolable for FakeConnection {
    fn is_broken(&self) -> bool {
        self.broken
    }

    fn is_open_and_idle(&self) -> bool {
        !self.closed_by_peer
    }

    fn service_id(&self) -> Option<ObjectId> {
        self.service_id
    }
}

impl Establish for FakeEstablish {
    type Connection = FakeConnection;

    fn establish(&self, connection_id: u32) -> BoxFuture<'_, Result<FakeConnection>> {
        let gate = &self.0;
        rt::boxed(async move {
            loop {
                let changed = gate.changed.listen();
                if gate.is_open(connection_id) {
                    break;
                }
                changed.await;
            }
            if gate.failing.lock().unwrap().contains(&connection_id) {
                return Err(Error::network(
                    "localhost:27017",
                    std::io::ErrorKind::ConnectionRefused,
                    "refused",
                ));
            }
            Ok(FakeConnection {
                id: connection_id,
                service_id: gate.services.map(|service| service(connection_id)),
                broken: false,
                closed_by_peer: false,
            })
        })
    }

    fn establish_failed(&self, _error: &Error, _generation: u32) {
        let published = self.0.events.lock().unwrap().len();
        self.0.reports.lock().unwrap().push(published);
    }
}

type Pool = ConnectionPool<FakeEstablish>;
type Events = Arc<Mutex<Vec<CmapEvent>>>;

/// A pool under test, with its executor, clock, gate and events.
struct Harness {
    executor: LocalPool,
    clock: ManualClock,
    spawner: Option<Arc<QueueSpawner>>,
    gate: Arc<Gate>,
    events: Events,
    pool: Rc<Pool>,
}

struct Setup {
    options: PoolOptions,
    spawner: bool,
    gate: Gate,
}

impl Default for Setup {
    fn default() -> Self {
        let gate = Gate::default();
        *gate.open_all.lock().unwrap() = true;
        Setup {
            options: PoolOptions::default(),
            spawner: false,
            gate,
        }
    }
}

impl Setup {
    /// Establishments wait for the test to open the gate.
    fn gated(mut self) -> Self {
        self.gate = Gate {
            services: self.gate.services,
            ..Gate::default()
        };
        self
    }

    fn options(mut self, change: impl FnOnce(&mut PoolOptions)) -> Self {
        change(&mut self.options);
        self
    }

    fn with_spawner(mut self) -> Self {
        self.spawner = true;
        self
    }

    fn start(self) -> Harness {
        let clock = ManualClock::default();
        let spawner = self.spawner.then(|| Arc::new(QueueSpawner::default()));
        let gate = Arc::new(self.gate);
        let events = gate.events.clone();
        let sink = events.clone();
        let pool = ConnectionPool::new(
            ServerAddress::tcp("localhost", 27017),
            self.options,
            FakeEstablish(gate.clone()),
            Arc::new(clock.clone()),
            spawner.clone().map(|s| s as Arc<dyn Spawner>),
            Some(EventHandler::callback(move |event: CmapEvent| {
                sink.lock().unwrap().push(event)
            })),
        )
        .unwrap();
        pool.ready();
        let mut harness = Harness {
            executor: LocalPool::new(),
            clock,
            spawner,
            gate,
            events,
            pool: Rc::new(pool),
        };
        harness.run();
        harness
    }
}

/// The outcome of a check-out started with [`Harness::start_check_out`].
type Slot = Rc<RefCell<Option<Result<CheckedOut<FakeEstablish>>>>>;

impl Harness {
    /// Runs every task (and every task spawned through the pool's spawner) until none
    /// can make progress.
    fn run(&mut self) {
        loop {
            self.executor.run_until_stalled();
            let tasks = match &self.spawner {
                Some(spawner) => std::mem::take(&mut *spawner.0.lock().unwrap()),
                None => Vec::new(),
            };
            if tasks.is_empty() {
                return;
            }
            for task in tasks {
                self.executor.spawner().spawn_local(task).unwrap();
            }
        }
    }

    fn advance(&mut self, by: Duration) {
        self.clock.advance(by);
        self.run();
    }

    /// Starts a check-out as a task of its own, and runs until it waits or is done.
    fn start_check_out(&mut self, timeout: Option<Duration>) -> Slot {
        let slot: Slot = Rc::default();
        let pool = self.pool.clone();
        let out = slot.clone();
        self.executor
            .spawner()
            .spawn_local(async move {
                let result = pool.check_out(timeout).await;
                *out.borrow_mut() = Some(result);
            })
            .unwrap();
        self.run();
        slot
    }

    fn check_out(&mut self) -> CheckedOut<FakeEstablish> {
        let slot = self.start_check_out(None);
        let result = slot.borrow_mut().take().expect("the check-out finished");
        result.unwrap()
    }

    fn check_in(&mut self, connection: CheckedOut<FakeEstablish>) {
        self.pool.check_in(connection).unwrap();
        self.run();
    }

    fn events(&self) -> Vec<CmapEvent> {
        self.events.lock().unwrap().clone()
    }

    /// The names of the last `count` events, the latest first.
    fn last_event_names(&self, count: usize) -> Vec<&'static str> {
        let events = self.events();
        events
            .iter()
            .rev()
            .take(count)
            .map(CmapEvent::name)
            .collect()
    }

    /// The events of one type, in order.
    fn named(&self, name: &str) -> Vec<CmapEvent> {
        self.events()
            .into_iter()
            .filter(|event| event.name() == name)
            .collect()
    }

    fn closed(&self) -> Vec<(u32, ConnectionClosedReason)> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                    connection_id,
                    reason,
                    ..
                }) => Some((connection_id, reason)),
                _ => None,
            })
            .collect()
    }
}

fn taken(slot: &Slot) -> Option<Result<CheckedOut<FakeEstablish>>> {
    slot.borrow_mut().take()
}

#[test]
fn waiters_are_served_first_in_first_out() {
    let mut h = Setup::default().options(|o| o.max_pool_size = 1).start();
    let held = h.check_out();
    let order = Rc::new(RefCell::new(Vec::new()));
    for name in ["first", "second", "third"] {
        let pool = h.pool.clone();
        let order = order.clone();
        h.executor
            .spawner()
            .spawn_local(async move {
                let connection = pool.check_out(None).await.unwrap();
                order.borrow_mut().push((name, connection.id()));
                pool.check_in(connection).unwrap();
            })
            .unwrap();
        h.run();
    }
    assert!(
        order.borrow().is_empty(),
        "all wait: the only connection is out"
    );
    // Given back while they wait, a newcomer queues behind them.
    h.pool.check_in(held).unwrap();
    let pool = h.pool.clone();
    let late = order.clone();
    h.executor
        .spawner()
        .spawn_local(async move {
            let connection = pool.check_out(None).await.unwrap();
            late.borrow_mut().push(("late", connection.id()));
        })
        .unwrap();
    h.run();
    assert_eq!(
        *order.borrow(),
        [("first", 1), ("second", 1), ("third", 1), ("late", 1)]
    );
}

#[test]
fn max_connecting_bounds_establishments_in_progress() {
    let mut h = Setup::default()
        .gated()
        .options(|o| {
            o.max_pool_size = 0;
            o.max_connecting = 2;
        })
        .start();
    let slots: Vec<Slot> = (0..4).map(|_| h.start_check_out(None)).collect();
    assert_eq!(h.pool.pending_connection_count(), 2);
    assert_eq!(h.named("ConnectionCreatedEvent").len(), 2);

    // One finishes: the oldest waiter may start the next.
    h.gate.open(2);
    h.run();
    let second = taken(&slots[1]).unwrap().unwrap();
    assert_eq!(second.id(), 2);
    assert_eq!(h.named("ConnectionCreatedEvent").len(), 3);
    assert_eq!(h.pool.pending_connection_count(), 2);
    assert!(slots[3].borrow().is_none());

    h.gate.open_all();
    h.run();
    let connections: Vec<_> = [&slots[0], &slots[2], &slots[3]]
        .into_iter()
        .map(|slot| taken(slot).unwrap().unwrap())
        .collect();
    let ids: Vec<u32> = connections.iter().map(|c| c.id()).collect();
    assert_eq!(ids, [1, 3, 4]);
    assert_eq!(h.pool.total_connection_count(), 4);
}

#[test]
fn a_dropped_checked_out_connection_is_closed_not_returned() {
    let mut h = Setup::default().start();
    let connection = h.check_out();
    assert_eq!((connection.id(), connection.id), (1, 1));
    drop(connection);
    assert_eq!(
        h.last_event_names(2),
        ["ConnectionClosedEvent", "ConnectionCheckedInEvent"]
    );
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Error)]);
    assert_eq!(h.pool.total_connection_count(), 0);
    assert_eq!(h.check_out().id(), 2);
}

#[test]
fn a_check_out_that_gives_up_leaves_its_connection_to_the_pool_without_spawner() {
    let mut h = Setup::default()
        .gated()
        .options(|o| o.max_connecting = 1)
        .start();
    // The caller's own deadline passes while the connection is being established.
    let clock = h.clock.clone();
    let pool = h.pool.clone();
    let gave_up = Rc::new(RefCell::new(None));
    let out = gave_up.clone();
    h.executor
        .spawner()
        .spawn_local(async move {
            let attempt = rt::timeout(&clock, Duration::from_millis(10), pool.check_out(None));
            *out.borrow_mut() = Some(attempt.await.is_err());
        })
        .unwrap();
    h.run();
    assert_eq!(h.pool.pending_connection_count(), 1);
    h.advance(Duration::from_millis(10));
    assert_eq!(*gave_up.borrow(), Some(true));
    assert_eq!(
        h.pool.pending_connection_count(),
        1,
        "still being established"
    );

    // maxConnecting is 1: the next check-out waits, and meanwhile drives the
    // abandoned establishment, whose connection it then gets.
    let next = h.start_check_out(None);
    assert!(next.borrow().is_none());
    h.gate.open(1);
    h.run();
    let connection = taken(&next).unwrap().unwrap();
    assert_eq!(connection.id(), 1);
    assert_eq!(h.named("ConnectionCreatedEvent").len(), 1);
    assert!(h.closed().is_empty());
}

#[test]
fn populate_finishes_establishments_abandoned_without_spawner() {
    let mut h = Setup::default().gated().start();
    let slot = h.start_check_out(None);
    h.executor = LocalPool::new(); // drops the check-out mid-establishment
    drop(slot);
    assert_eq!(h.pool.pending_connection_count(), 1);
    h.gate.open_all();
    let pool = h.pool.clone();
    h.executor
        .spawner()
        .spawn_local(async move { pool.populate().await })
        .unwrap();
    h.run();
    assert_eq!(h.pool.pending_connection_count(), 0);
    assert_eq!(h.pool.available_connection_count(), 1);
    assert_eq!(h.check_out().id(), 1);
}

#[test]
fn a_dropped_check_out_does_not_lose_a_spawned_establishment() {
    let mut h = Setup::default().gated().with_spawner().start();
    // Start the check-out and let it spawn its establishment, but keep that task
    // out of the executor for now.
    let pool = h.pool.clone();
    let mut check_out = Box::pin(async move { pool.check_out(None).await });
    assert!((&mut check_out).now_or_never().is_none());
    let spawned = std::mem::take(&mut *h.spawner.as_ref().unwrap().0.lock().unwrap());
    assert_eq!(spawned.len(), 1);
    drop(check_out); // the caller gave up
    for task in spawned {
        h.executor.spawner().spawn_local(task).unwrap();
    }
    h.gate.open_all();
    h.run();
    assert_eq!(h.pool.available_connection_count(), 1);
    assert!(h.named("ConnectionCheckedOutEvent").is_empty());
    assert!(h.closed().is_empty());
    assert_eq!(h.check_out().id(), 1);
}

#[test]
fn a_check_out_times_out_in_the_wait_queue() {
    let mut h = Setup::default()
        .options(|o| {
            o.max_pool_size = 1;
            o.wait_queue_timeout = Some(Duration::from_millis(50));
        })
        .start();
    let _held = h.check_out();
    let slot = h.start_check_out(None);
    h.advance(Duration::from_millis(49));
    assert!(slot.borrow().is_none());
    h.advance(Duration::from_millis(2));
    let error = taken(&slot).unwrap().unwrap_err();
    assert!(
        matches!(
            &*error.kind,
            ErrorKind::WaitQueueTimeout { after, .. } if *after == Duration::from_millis(50)
        ),
        "{error:?}"
    );
    assert!(matches!(
        h.events().last(),
        Some(CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
            reason: ConnectionCheckoutFailedReason::Timeout,
            duration,
            ..
        })) if *duration == Duration::from_millis(51)
    ));
    // The caller's own timeout wins over the pool's.
    let slot = h.start_check_out(Some(Duration::from_millis(5)));
    h.advance(Duration::from_millis(5));
    assert!(taken(&slot).unwrap().is_err());
}

#[test]
fn an_idle_connection_is_closed_at_check_out() {
    let mut h = Setup::default()
        .options(|o| o.max_idle_time = Some(Duration::from_millis(10)))
        .start();
    let connection = h.check_out();
    h.check_in(connection);
    h.clock.advance(Duration::from_millis(11));
    let fresh = h.check_out();
    assert_eq!(fresh.id(), 2);
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Idle)]);
}

#[test]
fn a_connection_idle_for_a_second_is_asked_whether_it_is_open_at_check_out() {
    let mut h = Setup::default().start();
    let mut connection = h.check_out();
    connection.closed_by_peer = true;
    h.check_in(connection);
    // Used less than IDLE_CHECK_AFTER ago: handed out again without asking.
    h.clock.advance(IDLE_CHECK_AFTER - Duration::from_millis(1));
    let again = h.check_out();
    assert_eq!(again.id(), 1);
    assert_eq!(h.closed(), []);
    h.check_in(again);
    h.clock.advance(IDLE_CHECK_AFTER);
    let fresh = h.check_out();
    assert_eq!(fresh.id(), 2);
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Error)]);
}

#[test]
fn an_open_idle_connection_is_handed_out_after_the_check() {
    let mut h = Setup::default().start();
    let connection = h.check_out();
    h.check_in(connection);
    h.clock.advance(IDLE_CHECK_AFTER * 10);
    let again = h.check_out();
    assert_eq!(again.id(), 1);
    assert_eq!(h.closed(), []);
}

#[test]
fn a_broken_connection_is_closed_at_check_in() {
    let mut h = Setup::default().start();
    let mut connection = h.check_out();
    connection.broken = true;
    h.check_in(connection);
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Error)]);
}

#[test]
fn clearing_with_interruption_interrupts_connections_in_use() {
    let mut h = Setup::default().start();
    let old = h.check_out();
    h.pool.clear(None, false);
    assert!(!old.is_interrupted(), "a plain clear leaves it to finish");
    h.pool.ready();
    let interrupted = h.check_out();
    assert_eq!(interrupted.generation(), 1);
    let mut signal = Box::pin(async { interrupted.interrupted().await });
    assert!((&mut signal).now_or_never().is_none());
    h.pool.clear(None, true);
    assert!(signal.now_or_never().is_some());
    assert!(interrupted.is_interrupted());
    assert!(old.is_interrupted());
    assert!(interrupted.check_interrupted().is_err());
    h.check_in(interrupted);
    h.check_in(old);
    assert_eq!(
        h.closed(),
        [
            (2, ConnectionClosedReason::Stale),
            (1, ConnectionClosedReason::Stale)
        ]
    );
    assert!(matches!(
        h.named("PoolClearedEvent").last(),
        Some(CmapEvent::PoolCleared(PoolClearedEvent {
            interrupt_in_use_connections: true,
            service_id: None,
            ..
        }))
    ));
}

#[test]
fn clearing_interrupts_a_connection_being_established() {
    let mut h = Setup::default().gated().start();
    let slot = h.start_check_out(None);
    h.pool.clear(None, true);
    h.run();
    assert!(taken(&slot).unwrap().is_err());
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Stale)]);
    assert_eq!(h.pool.total_connection_count(), 0);
    assert!(matches!(
        h.events().last(),
        Some(CmapEvent::ConnectionCheckoutFailed(
            ConnectionCheckoutFailedEvent {
                reason: ConnectionCheckoutFailedReason::ConnectionError,
                ..
            }
        ))
    ));
}

#[test]
fn load_balanced_clears_only_the_service() {
    fn service(id: u32) -> ObjectId {
        // Odd connections go to service A, even ones to service B.
        let mut bytes = [0u8; 12];
        bytes[11] = (id % 2) as u8;
        ObjectId::from_bytes(bytes)
    }
    let mut h = Setup {
        gate: Gate {
            open_all: Mutex::new(true),
            services: Some(service),
            ..Gate::default()
        },
        ..Setup::default()
    }
    .options(|o| o.load_balanced = true)
    .start();
    let a = h.check_out();
    let b = h.check_out();
    assert_eq!(
        (a.service_id(), b.service_id()),
        (Some(service(1)), Some(service(2)))
    );
    h.check_in(a);
    h.check_in(b);
    h.pool.clear(Some(service(1)), false);
    assert_eq!(h.pool.state(), PoolState::Ready, "not paused");
    assert_eq!(h.pool.service_generation(service(1)), Some(1));
    assert_eq!(h.pool.service_generation(service(2)), Some(0));
    let b = h.check_out();
    assert_eq!(b.id(), 2, "service B's connection is still good");
    let replacement = h.check_out();
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Stale)]);
    assert_eq!(replacement.id(), 3);
    // The last connection of service A went: its generation went with it, and the
    // new connection starts its service's books afresh.
    assert_eq!(replacement.generation(), 0);
    assert!(matches!(
        h.named("PoolClearedEvent").last(),
        Some(CmapEvent::PoolCleared(PoolClearedEvent { service_id: Some(id), .. })) if *id == service(1)
    ));
}

#[test]
fn min_pool_size_is_populated_on_demand_without_spawner() {
    let mut h = Setup::default()
        .options(|o| {
            o.min_pool_size = 3;
            o.max_connecting = 2;
        })
        .start();
    assert_eq!(
        h.pool.total_connection_count(),
        0,
        "nothing in the background"
    );
    let pool = h.pool.clone();
    h.executor
        .spawner()
        .spawn_local(async move { pool.populate().await })
        .unwrap();
    h.run();
    assert_eq!(h.pool.available_connection_count(), 3);
    assert_eq!(h.named("ConnectionReadyEvent").len(), 3);
}

#[test]
fn min_pool_size_is_populated_in_the_background_with_spawner() {
    let mut h = Setup::default()
        .options(|o| {
            o.min_pool_size = 3;
            o.max_connecting = 2;
        })
        .with_spawner()
        .start();
    assert_eq!(h.pool.available_connection_count(), 3);
    // A connection that goes is replaced at the next run.
    let connection = h.check_out();
    drop(connection);
    h.advance(DEFAULT_MAINTENANCE_INTERVAL);
    assert_eq!(h.pool.available_connection_count(), 3);
    assert_eq!(h.named("ConnectionCreatedEvent").len(), 4);
}

#[test]
fn a_paused_pool_does_not_populate() {
    let setup = Setup::default().options(|o| o.min_pool_size = 2);
    let clock = ManualClock::default();
    let spawner = Arc::new(QueueSpawner::default());
    let pool = ConnectionPool::new(
        ServerAddress::tcp("localhost", 27017),
        setup.options,
        FakeEstablish(Arc::new(setup.gate)),
        Arc::new(clock),
        Some(spawner.clone() as Arc<dyn Spawner>),
        None,
    )
    .unwrap();
    let mut executor = LocalPool::new();
    for task in std::mem::take(&mut *spawner.0.lock().unwrap()) {
        executor.spawner().spawn_local(task).unwrap();
    }
    executor.run_until_stalled();
    assert_eq!(pool.total_connection_count(), 0);
    assert!(spawner.0.lock().unwrap().is_empty());
}

#[test]
fn a_paused_pool_without_connections_is_not_maintained_on_a_timer() {
    let clock = ManualClock::default();
    let spawner = Arc::new(QueueSpawner::default());
    let pool = ConnectionPool::new(
        ServerAddress::tcp("localhost", 27017),
        PoolOptions::default(),
        FakeEstablish(Arc::default()),
        Arc::new(clock.clone()),
        Some(spawner.clone() as Arc<dyn Spawner>),
        None,
    )
    .unwrap();
    let mut executor = LocalPool::new();
    let mut run = || {
        for task in std::mem::take(&mut *spawner.0.lock().unwrap()) {
            executor.spawner().spawn_local(task).unwrap();
        }
        executor.run_until_stalled();
    };
    run();
    // Paused (the server is not known yet), nothing to close or create: the task
    // waits to be woken, it does not tick.
    for _ in 0..3 {
        clock.advance(DEFAULT_MAINTENANCE_INTERVAL);
        run();
    }
    assert_eq!(clock.0.sleeps.load(Ordering::SeqCst), 0);
    // Ready, it is maintained every interval again.
    pool.ready();
    run();
    assert_eq!(clock.0.sleeps.load(Ordering::SeqCst), 1);
    clock.advance(DEFAULT_MAINTENANCE_INTERVAL);
    run();
    assert_eq!(clock.0.sleeps.load(Ordering::SeqCst), 2);
    pool.close();
}

#[test]
fn a_failed_establishment_fails_the_check_out_and_closes_the_connection() {
    let mut h = Setup::default().start();
    h.gate.failing.lock().unwrap().insert(1);
    let slot = h.start_check_out(None);
    let error = taken(&slot).unwrap().unwrap_err();
    assert!(matches!(&*error.kind, ErrorKind::Io(_)));
    assert_eq!(
        h.last_event_names(2),
        ["ConnectionCheckOutFailedEvent", "ConnectionClosedEvent"]
    );
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Error)]);
    assert_eq!(h.pool.total_connection_count(), 0);
}

/// SDAM hears of a failed establishment (its clear publishes PoolCleared) before the
/// connection's ConnectionClosed, for a check-out as for minPoolSize: the order of the
/// current spec tests (DRIVERS-1785).
#[test]
fn a_failed_establishment_is_reported_before_its_connection_closes() {
    let closed_at = |h: &Harness| {
        let events = h.events();
        events
            .iter()
            .position(|event| event.name() == "ConnectionClosedEvent")
            .unwrap()
    };
    let mut h = Setup::default().start();
    h.gate.failing.lock().unwrap().insert(1);
    let slot = h.start_check_out(None);
    assert!(taken(&slot).unwrap().is_err());
    assert_eq!(*h.gate.reports.lock().unwrap(), [closed_at(&h)]);

    let mut h = Setup::default().options(|o| o.min_pool_size = 1).start();
    h.gate.failing.lock().unwrap().insert(1);
    let pool = h.pool.clone();
    h.executor
        .spawner()
        .spawn_local(async move { pool.populate().await })
        .unwrap();
    h.run();
    assert_eq!(*h.gate.reports.lock().unwrap(), [closed_at(&h)]);
}

#[test]
fn a_connection_cannot_be_checked_in_to_another_pool() {
    let mut h = Setup::default().start();
    let other = Setup::default().start();
    let connection = h.check_out();
    assert!(other.pool.check_in(connection).is_err());
    // Its own pool closed it.
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::Error)]);
}

#[test]
fn closing_fails_waiters_and_closes_available_connections() {
    let mut h = Setup::default().options(|o| o.max_pool_size = 1).start();
    let held = h.check_out();
    let waiter = h.start_check_out(None);
    h.pool.close();
    h.run();
    let error = taken(&waiter).unwrap().unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::PoolClosed { .. }),
        "{error}"
    );
    h.check_in(held);
    assert_eq!(h.closed(), [(1, ConnectionClosedReason::PoolClosed)]);
    assert_eq!(h.pool.state(), PoolState::Closed);
}

#[test]
fn invalid_options_are_refused() {
    let pool = |options: PoolOptions| {
        ConnectionPool::new(
            ServerAddress::tcp("localhost", 27017),
            options,
            FakeEstablish(Arc::default()),
            Arc::new(ManualClock::default()),
            None,
            None,
        )
    };
    let zero = PoolOptions {
        max_connecting: 0,
        ..PoolOptions::default()
    };
    assert!(pool(zero).is_err());
    let inverted = PoolOptions {
        min_pool_size: 5,
        max_pool_size: 2,
        ..PoolOptions::default()
    };
    assert!(pool(inverted).is_err());
}

#[test]
fn errors_of_one_generation_clear_the_pool_once() {
    let h = Setup::default().start();
    h.pool.clear_generation(None, 0, false);
    h.pool.clear_generation(None, 0, false);
    assert_eq!(h.pool.generation(), 1);
    assert_eq!(h.named("PoolClearedEvent").len(), 1);
    h.pool.ready();
    h.pool.clear_generation(None, 1, false);
    assert_eq!(h.pool.generation(), 2);
    assert_eq!(h.named("PoolClearedEvent").len(), 2);
}

#[test]
fn load_balanced_wait_queue_timeouts_count_connections_by_what_they_are_pinned_to() {
    fn service(_connection_id: u32) -> ObjectId {
        ObjectId::from_bytes([7; 12])
    }
    let mut h = Setup {
        gate: Gate {
            open_all: Mutex::new(true),
            services: Some(service),
            ..Gate::default()
        },
        ..Setup::default()
    }
    .options(|o| {
        o.load_balanced = true;
        o.max_pool_size = 4;
        o.wait_queue_timeout = Some(Duration::from_millis(10));
    })
    .start();
    let cursor = h.check_out();
    let transaction = h.check_out();
    let other = h.check_out();
    let shared = h.check_out();
    cursor.mark_pinned(PinnedTo::Cursor);
    transaction.mark_pinned(PinnedTo::Transaction);
    shared.mark_pinned(PinnedTo::Transaction);
    let slot = h.start_check_out(None);
    h.advance(Duration::from_millis(11));
    let error = taken(&slot).unwrap().unwrap_err();
    assert!(
        error.to_string().contains(
            "maxPoolSize: 4, connections in use by cursors: 1, connections in use by \
             transactions: 2, connections in use by other operations: 1"
        ),
        "{error}"
    );
    // Checked in, a connection is no longer pinned to anything.
    h.check_in(cursor);
    let again = h.check_out();
    let slot = h.start_check_out(None);
    h.advance(Duration::from_millis(11));
    let error = taken(&slot).unwrap().unwrap_err();
    assert!(
        error.to_string().contains("cursors: 0, connections in use by transactions: 2, connections in use by other operations: 2"),
        "{error}"
    );
    drop((again, transaction, other, shared));
}

#[test]
fn a_connection_taken_in_is_available_as_one_the_pool_opened() {
    let mut h = Setup::default().start();
    let fresh = |id| FakeConnection {
        id,
        service_id: None,
        broken: false,
        closed_by_peer: false,
    };
    let generation = h.pool.generation();
    h.pool.take_in(fresh(100), generation);
    assert_eq!(h.pool.available_connection_count(), 1);
    assert_eq!(
        h.last_event_names(2),
        ["ConnectionReadyEvent", "ConnectionCreatedEvent"]
    );
    // A check-out takes it rather than open another.
    let connection = h.check_out();
    assert_eq!(h.named("ConnectionCreatedEvent").len(), 1);
    h.check_in(connection);

    // Opened before a clear: closed, and the pool says nothing of it.
    h.pool.clear(None, false);
    h.run();
    let (events, total) = (h.events().len(), h.pool.total_connection_count());
    h.pool.take_in(fresh(101), generation);
    // Paused: its server is not known.
    h.pool.take_in(fresh(102), h.pool.generation());
    assert_eq!(h.events().len(), events);
    assert_eq!(h.pool.total_connection_count(), total);
}
