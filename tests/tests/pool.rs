//! The connection pool under load: 200 concurrent tasks on a pool of maxPoolSize 10.
//!
//! - Through a real [`Client`] against SecantusDB: every task completes, the pool never
//!   holds more than 10 connections nor lends more than 10 at once, every connection
//!   lent is given back, none is closed for an error, and closing the client closes
//!   them all.
//! - On a [`ConnectionPool`] of fake connections, where the order is observable
//!   deterministically: the wait queue is served first in, first out.
//! - On the same fake pool, 200 tasks checking out and in as fast as they can: the
//!   same bounds, and nothing leaks.
//! - Against a mock server that closes each connection after one command: a connection
//!   the server closed while it sat idle is replaced at check-out, not used (a command
//!   such as `ping` is not retried); one still open is handed out again.
//!
//! The pool's events are the record: a pool queues them under its state lock and
//! delivers them one at a time in that order, so the position of an event in the
//! recorded list is its sequence number, and replaying the list replays the pool's
//! counts. Every wait is bounded; nothing sleeps to synchronise.

use anymongo::event::cmap::ConnectionClosedEvent;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Bson, Document};
use anymongo::cmap::{CheckedOut, ConnectionPool, PoolOptions, IDLE_CHECK_AFTER};
use anymongo::event::cmap::{CmapEvent, ConnectionClosedReason};
use anymongo::event::EventHandler;
use anymongo::{Client, ClientOptions, Database, ServerAddress};
use anymongo_tests::clock::AheadClock;
use anymongo_tests::fake::FakeEstablish;
use anymongo_tests::harness::within;
use anymongo_tests::mock::{is_hello, standalone_hello, Answer, MockServer};
use anymongo_tests::pool_events::{closed_connections, created_connections, PoolEvents};
use anymongo_tests::server;
use tokio::sync::{mpsc, watch, Barrier};
use tokio::time::timeout;

/// The pool size under test.
const MAX_POOL_SIZE: u32 = 10;
/// The concurrent tasks.
const TASKS: usize = 200;
/// The bound on a whole test's run: a safety net, not a speed requirement.
const BOUND: Duration = Duration::from_secs(60);
/// The bound on one wait inside a test.
const WAIT: Duration = Duration::from_secs(20);

/// The counts of one pool, replayed from its events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Tally {
    created: usize,
    closed: usize,
    /// Connections closed with reason "error".
    closed_for_error: Vec<u32>,
    /// Whether the pool published PoolClosed.
    pool_closed: bool,
    check_outs_started: usize,
    checked_out: usize,
    check_outs_failed: usize,
    checked_in: usize,
    /// The most connections open (created and not yet closed) at any point.
    peak_open: usize,
    /// The most connections lent (checked out and not yet checked in) at any point.
    peak_in_use: usize,
    /// The most check-outs started and not yet ended at any point.
    peak_waiting: usize,
}

impl Tally {
    fn open(&self) -> usize {
        self.created - self.closed
    }

    fn in_use(&self) -> usize {
        self.checked_out - self.checked_in
    }

    fn waiting(&self) -> usize {
        self.check_outs_started - self.checked_out - self.check_outs_failed
    }
}

/// Replays `events`, pool by pool.
fn tally(events: &[CmapEvent]) -> BTreeMap<String, Tally> {
    let mut pools: BTreeMap<String, Tally> = BTreeMap::new();
    for event in events {
        let pool = pools.entry(event.address().to_string()).or_default();
        match event {
            CmapEvent::ConnectionCreated(_) => pool.created += 1,
            CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                connection_id,
                reason,
                ..
            }) => {
                pool.closed += 1;
                if *reason == ConnectionClosedReason::Error {
                    pool.closed_for_error.push(*connection_id);
                }
            }
            CmapEvent::PoolClosed(_) => pool.pool_closed = true,
            CmapEvent::ConnectionCheckoutStarted(_) => pool.check_outs_started += 1,
            CmapEvent::ConnectionCheckedOut(_) => pool.checked_out += 1,
            CmapEvent::ConnectionCheckoutFailed(_) => pool.check_outs_failed += 1,
            CmapEvent::ConnectionCheckedIn(_) => pool.checked_in += 1,
            _ => {}
        }
        pool.peak_open = pool.peak_open.max(pool.open());
        pool.peak_in_use = pool.peak_in_use.max(pool.in_use());
        pool.peak_waiting = pool.peak_waiting.max(pool.waiting());
    }
    pools
}

/// Checks the bounds every pool must keep under load, and that nothing leaked:
/// every check-out started ended with a connection, and every connection lent came
/// back, none closed for an error.
fn assert_bounded_and_balanced(pool: &str, tally: &Tally) {
    let max = MAX_POOL_SIZE as usize;
    assert!(
        tally.peak_open <= max,
        "{pool}: {} connections open at once (maxPoolSize {max}): {tally:?}",
        tally.peak_open
    );
    assert!(
        tally.peak_in_use <= max,
        "{pool}: {} connections checked out at once (maxPoolSize {max}): {tally:?}",
        tally.peak_in_use
    );
    assert_eq!(tally.check_outs_failed, 0, "{pool}: {tally:?}");
    assert_eq!(
        tally.checked_out, tally.check_outs_started,
        "{pool}: a check-out never ended: {tally:?}"
    );
    assert_eq!(
        tally.checked_in, tally.checked_out,
        "{pool}: a connection checked out was never checked in: {tally:?}"
    );
    assert!(
        tally.closed_for_error.is_empty(),
        "{pool}: connections closed for an error: {:?}",
        tally.closed_for_error
    );
}

// ----------------------------------------------------------------------------------
// Through a client, against SecantusDB.
// ----------------------------------------------------------------------------------

/// What one task does: a few commands, each checking a connection out and in.
async fn commands(db: &Database, task: usize) -> Result<(), String> {
    let id = task as i64;
    let ok = |reply: &Document| reply.get("ok") == Some(&Bson::Double(1.0));
    let ping = db.run_command(doc! { "ping": 1 }).await;
    if !ping.as_ref().is_ok_and(ok) {
        return Err(format!("task {task}: ping: {ping:?}"));
    }
    let insert = db
        .run_command(doc! { "insert": "items", "documents": [{ "_id": id, "task": id }] })
        .await;
    if !insert
        .as_ref()
        .is_ok_and(|reply| reply.get_i32("n").ok() == Some(1))
    {
        return Err(format!("task {task}: insert: {insert:?}"));
    }
    let find = db
        .run_command(doc! { "find": "items", "filter": { "_id": id } })
        .await
        .map_err(|e| format!("task {task}: find: {e}"))?;
    let batch = find
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .map_err(|e| format!("task {task}: find replied {find}: {e}"))?;
    if batch.len() != 1 || batch[0].as_document().and_then(|d| d.get("task")) != Some(&id.into()) {
        return Err(format!("task {task}: find found {batch:?}"));
    }
    let ping = db.run_command(doc! { "ping": 1 }).await;
    if !ping.as_ref().is_ok_and(ok) {
        return Err(format!("task {task}: second ping: {ping:?}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_client_tasks_share_ten_connections() {
    let uri = server::shared().uri();
    let separator = if uri.contains('?') { '&' } else { '?' };
    let options = ClientOptions::parse_uri(&format!("{uri}{separator}maxPoolSize={MAX_POOL_SIZE}"))
        .expect("valid URI");
    assert_eq!(options.max_pool_size, Some(MAX_POOL_SIZE));
    let events = PoolEvents::default();
    let client = Client::with_options(events.record(options)).unwrap();
    let db = client.database("pool_load");
    let _ = db.run_command(doc! { "drop": "items" }).await;

    let started = Instant::now();
    let outcome = timeout(BOUND, async {
        // Released together, so that they queue for the pool rather than trickle in.
        let barrier = Arc::new(Barrier::new(TASKS));
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let db = db.clone();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    commands(&db, task).await
                })
            })
            .collect();
        let mut failures = Vec::new();
        for (task, handle) in tasks.into_iter().enumerate() {
            match handle.await {
                Ok(Ok(())) => {}
                Ok(Err(failure)) => failures.push(failure),
                Err(panic) => failures.push(format!("task {task} panicked: {panic}")),
            }
        }
        failures
    })
    .await;
    let elapsed = started.elapsed();
    let failures =
        outcome.unwrap_or_else(|_| panic!("the {TASKS} tasks did not end within {BOUND:?}"));
    assert!(
        failures.is_empty(),
        "{} of {TASKS} tasks failed, first ones: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    eprintln!("{TASKS} client tasks, 4 commands each, ended in {elapsed:.2?}");

    // Every task has ended: no connection may still be lent, and those open are idle.
    let pools = tally(&events.lock());
    assert!(!pools.is_empty(), "no pool event was recorded");
    for (pool, tally) in &pools {
        assert_bounded_and_balanced(pool, tally);
        assert!(
            tally.open() >= 1 && tally.open() <= MAX_POOL_SIZE as usize,
            "{pool}: {} connections open after the run: {tally:?}",
            tally.open()
        );
        assert!(!tally.pool_closed, "{pool}: closed while the client lives");
        eprintln!(
            "{pool}: {} connections created, at most {} open and {} checked out at once, \
             {} check-outs waiting at the peak",
            tally.created, tally.peak_open, tally.peak_in_use, tally.peak_waiting
        );
    }
    // The test is only worth its name if the tasks actually queued for connections.
    let peak_waiting = pools.values().map(|t| t.peak_waiting).max().unwrap_or(0);
    assert!(
        peak_waiting > MAX_POOL_SIZE as usize,
        "at most {peak_waiting} check-outs waited at once: the pool was never contended"
    );

    // Closing the client closes its pools, and with them every connection they made.
    drop(db);
    drop(client);
    let pools = tally(&events.lock());
    for (pool, tally) in &pools {
        assert!(
            tally.pool_closed,
            "{pool}: no PoolClosed after the client was dropped"
        );
        assert_eq!(
            tally.open(),
            0,
            "{pool}: connections left open after the pool closed: {tally:?}"
        );
        assert_bounded_and_balanced(pool, tally);
    }
}

// ----------------------------------------------------------------------------------
// On a pool of fake connections.
// ----------------------------------------------------------------------------------

type Fake = CheckedOut<FakeEstablish>;

/// A ready pool of fake connections of maxPoolSize [`MAX_POOL_SIZE`] (on the native
/// runtime's clock and spawner) whose events go to `handler`.
fn fake_pool(handler: EventHandler<CmapEvent>) -> ConnectionPool<FakeEstablish> {
    let runtime = anymongo_native::runtime();
    let options = PoolOptions {
        max_pool_size: MAX_POOL_SIZE,
        ..PoolOptions::default()
    };
    let pool = ConnectionPool::new(
        ServerAddress::tcp("fake", 27017),
        options,
        FakeEstablish,
        runtime.clock,
        runtime.spawner,
        Some(handler),
    )
    .unwrap();
    pool.ready();
    pool
}

/// Checks that the pool is at rest: at most maxPoolSize connections, all available.
fn assert_at_rest(pool: &ConnectionPool<FakeEstablish>) {
    let total = pool.total_connection_count();
    assert!(total <= MAX_POOL_SIZE, "{pool:?}");
    assert_eq!(pool.available_connection_count(), total, "{pool:?}");
    assert_eq!(pool.pending_connection_count(), 0, "{pool:?}");
}

fn count(events: &[CmapEvent], name: &str) -> usize {
    events.iter().filter(|event| event.name() == name).count()
}

/// Waits (at most [`WAIT`]) until the recorded events satisfy `done`.
async fn wait_for_events(
    events: &mut watch::Receiver<Vec<CmapEvent>>,
    what: &str,
    done: impl FnMut(&Vec<CmapEvent>) -> bool,
) {
    match timeout(WAIT, events.wait_for(done)).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => panic!("the pool's events stopped before {what}"),
        Err(_) => panic!("no {what} within {WAIT:?}"),
    }
}

/// Events shown in a failure message: `CheckedIn(3)`, `CheckedOut(3)`…
fn brief(event: &CmapEvent) -> String {
    let name = event
        .name()
        .trim_end_matches("Event")
        .trim_start_matches("Connection");
    match event.connection_id() {
        Some(id) => format!("{name}({id})"),
        None => name.to_owned(),
    }
}

/// All 10 connections are lent; 200 check-outs arrive one after another (each seen in
/// the queue before the next starts); then connections are given back one at a time.
/// Each one must go to the oldest waiter: the waiters are served in arrival order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_wait_queue_is_served_in_arrival_order() {
    let (sender, mut events) = watch::channel(Vec::<CmapEvent>::new());
    let pool = Arc::new(fake_pool(EventHandler::callback(
        move |event: CmapEvent| {
            sender.send_modify(|events| events.push(event));
        },
    )));
    let max = MAX_POOL_SIZE as usize;

    let run = async {
        let mut lent: VecDeque<Fake> = VecDeque::new();
        for _ in 0..max {
            lent.push_back(pool.check_out(Some(WAIT)).await.unwrap());
        }
        assert_eq!(pool.total_connection_count(), MAX_POOL_SIZE);
        assert_eq!(pool.available_connection_count(), 0);

        // The waiters, in a known order: the next starts once the pool has queued the
        // previous one (ConnectionCheckOutStarted is published as it joins the queue).
        let (served, mut served_to) = mpsc::unbounded_channel::<(usize, Fake)>();
        let mut waiters = Vec::new();
        for arrival in 0..TASKS {
            let pool = pool.clone();
            let served = served.clone();
            waiters.push(tokio::spawn(async move {
                let connection = pool
                    .check_out(Some(BOUND))
                    .await
                    .map_err(|e| format!("waiter {arrival}: {e}"))?;
                served
                    .send((arrival, connection))
                    .map_err(|_| format!("waiter {arrival}: the test has gone"))
            }));
            let queued = max + arrival + 1;
            wait_for_events(
                &mut events,
                &format!("check-out {arrival} started"),
                |events| count(events, "ConnectionCheckOutStartedEvent") == queued,
            )
            .await;
        }
        let queue_formed = events.borrow().len();
        assert_eq!(
            count(&events.borrow(), "ConnectionCheckedOutEvent"),
            max,
            "a waiter was served while every connection was lent"
        );

        // One connection back at a time: only the oldest waiter may take it.
        let mut handed = Vec::new();
        for expected in 0..TASKS {
            let connection = lent.pop_front().unwrap();
            let id = connection.id();
            pool.check_in(connection).unwrap();
            let (arrival, connection) = match timeout(WAIT, served_to.recv()).await {
                Ok(Some(served)) => served,
                Ok(None) => panic!("every waiter ended, {expected} of them served"),
                Err(_) => panic!("no waiter was served within {WAIT:?} of a check-in"),
            };
            assert_eq!(
                arrival, expected,
                "connection {id} went to waiter {arrival}, but waiter {expected} came first"
            );
            assert_eq!(connection.id(), id, "the waiter got another connection");
            assert_eq!(
                count(&events.borrow(), "ConnectionCheckedOutEvent"),
                max + expected + 1,
                "one check-in must serve exactly one waiter"
            );
            handed.push(id);
            lent.push_back(connection);
        }
        // The events agree: each check-in was followed by the check-out of the same
        // connection, waiter after waiter, and nothing else happened.
        let recorded = events.borrow()[queue_formed..].to_vec();
        let expected: Vec<String> = handed
            .iter()
            .flat_map(|id| [format!("CheckedIn({id})"), format!("CheckedOut({id})")])
            .collect();
        let recorded: Vec<String> = recorded.iter().map(brief).collect();
        assert_eq!(recorded, expected);

        for waiter in waiters {
            waiter.await.unwrap().unwrap();
        }
        for connection in lent {
            pool.check_in(connection).unwrap();
        }
    };
    timeout(BOUND, run)
        .await
        .unwrap_or_else(|_| panic!("the test did not end within {BOUND:?}"));

    assert_at_rest(&pool);
    assert_eq!(pool.total_connection_count(), MAX_POOL_SIZE);
    let recorded = events.borrow().clone();
    let counts = &tally(&recorded)["fake:27017"];
    assert_bounded_and_balanced("fake pool", counts);
    assert_eq!(counts.created, max);
    assert_eq!(counts.checked_out, max + TASKS);
    assert_eq!(counts.peak_waiting, TASKS);

    pool.close();
    assert_eq!(pool.total_connection_count(), 0);
    let counts = &tally(&events.borrow())["fake:27017"];
    assert!(counts.pool_closed);
    assert_eq!(counts.open(), 0, "{counts:?}");
}

/// 200 tasks check connections out and in as fast as they can.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_tasks_churning_stay_within_ten_connections() {
    const ROUNDS: usize = 20;
    let events = PoolEvents::default();
    let pool = Arc::new(fake_pool(events.handler()));

    let barrier = Arc::new(Barrier::new(TASKS));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let pool = pool.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                for round in 0..ROUNDS {
                    let connection = pool
                        .check_out(Some(BOUND))
                        .await
                        .map_err(|e| format!("task {task}, round {round}: {e}"))?;
                    // Hold it across a turn of the scheduler, as a command would.
                    tokio::task::yield_now().await;
                    pool.check_in(connection)
                        .map_err(|e| format!("task {task}, round {round}: {e}"))?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    let outcome = timeout(BOUND, async {
        let mut failures = Vec::new();
        for (task, handle) in tasks.into_iter().enumerate() {
            match handle.await {
                Ok(Ok(())) => {}
                Ok(Err(failure)) => failures.push(failure),
                Err(panic) => failures.push(format!("task {task} panicked: {panic}")),
            }
        }
        failures
    })
    .await;
    let failures = outcome.unwrap_or_else(|_| panic!("the tasks did not end within {BOUND:?}"));
    assert!(failures.is_empty(), "{failures:#?}");

    assert_at_rest(&pool);
    let counts = &tally(&events.lock())["fake:27017"];
    assert_bounded_and_balanced("fake pool", counts);
    assert_eq!(counts.checked_out, TASKS * ROUNDS);
    assert_eq!(counts.open(), pool.total_connection_count() as usize);
}

// ----------------------------------------------------------------------------------
// Connections the server closes while they sit idle, on real sockets.
// ----------------------------------------------------------------------------------

/// A client of the mock `server` on a clock the test moves, recording the pool's events.
fn idle_check_client(server: &MockServer) -> (Client, Arc<AheadClock>, PoolEvents) {
    let mut runtime = anymongo_native::runtime();
    // The pool asks a connection whether it is still open once it has sat idle for
    // IDLE_CHECK_AFTER: the test puts the clock ahead rather than wait that long.
    let clock = Arc::new(AheadClock::new(runtime.clock.clone()));
    runtime.clock = clock.clone();
    let events = PoolEvents::default();
    let uri = format!("mongodb://{}/?directConnection=true", server.address());
    let options = ClientOptions::parse_uri(&uri).unwrap();
    (
        Client::with_runtime(events.record(options), runtime).unwrap(),
        clock,
        events,
    )
}

/// Pings `server` with [`idle_check_client`]; when `server_closes`, waits until the
/// server has closed that connection; puts the clock past the pool's idle check and
/// pings again (`ping` is not retried: on a closed connection it would fail). Returns
/// (id, reason) of every ConnectionClosed, and how many connections were created.
async fn ping_idle_ping(
    server: &MockServer,
    server_closes: bool,
) -> (Vec<(u32, ConnectionClosedReason)>, usize) {
    let (client, clock, events) = idle_check_client(server);
    let db = client.database("admin");
    within(WAIT, db.run_command(doc! { "ping": 1 }))
        .await
        .expect("the first ping");
    if server_closes {
        within(WAIT, server.closed_connections(1)).await;
    }
    clock.put_ahead(IDLE_CHECK_AFTER * 2);
    within(WAIT, db.run_command(doc! { "ping": 1 }))
        .await
        .expect("the ping after the connection sat idle");
    let seen = {
        let events = events.lock();
        (closed_connections(&events), created_connections(&events))
    };
    client.shutdown().await;
    seen
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_replaced_at_check_out() {
    // Each pool connection: its handshake, one command, then the server closes it.
    let server = MockServer::answering(|command, _| match is_hello(command) {
        true => Answer::Reply(standalone_hello()),
        false => Answer::ReplyAndClose(doc! { "ok": 1 }),
    })
    .await;
    let (closed, created) = ping_idle_ping(&server, true).await;
    assert_eq!(closed, [(1, ConnectionClosedReason::Error)]);
    assert_eq!(created, 2);
}

#[tokio::test]
async fn a_connection_still_open_after_sitting_idle_is_used_again() {
    let server = MockServer::start(|command| match is_hello(command) {
        true => standalone_hello(),
        false => doc! { "ok": 1 },
    })
    .await;
    assert_eq!(ping_idle_ping(&server, false).await, (vec![], 1));
}
