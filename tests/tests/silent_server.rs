//! `timeoutMS` against a server that accepts connections and never answers (issue 22),
//! natively: each operation fails with [`ErrorKind::OperationTimeout`] once its 200 ms
//! have passed, in both monitoring modes, whether or not server selection or the
//! connection's handshake alone would have given up much later; and the client, once
//! dropped, leaves no connection open. The same case runs as wasip2 under wasmtime
//! (`wasi.rs`) and from the npm package (`wasm-demo/test/timeout.test.js`).
//!
//! The bound checked is generous (200 ms + 1 s) for loaded CI machines; each case
//! prints what it measured (`cargo test --test silent_server -- --nocapture`).

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Document};
use anymongo::client::MonitoringThreads;
use anymongo::{Client, Error, ErrorKind};
use anymongo_tests::harness::within;
use anymongo_tests::silent::SilentServer;
use futures::{FutureExt, TryFutureExt};

/// The operations' `timeoutMS`.
const TIMEOUT: Duration = Duration::from_millis(200);

/// How much earlier than `TIMEOUT` an error may come: the slack between the driver's
/// clock and the test's.
const CLOCK_SLACK: Duration = Duration::from_millis(10);

/// How much later than `TIMEOUT` an error may come on a loaded CI machine (the aim is
/// 50 ms: the figures printed show it).
const MARGIN: Duration = Duration::from_secs(1);

/// Every test ends within this, whatever the driver does.
const BOUND: Duration = Duration::from_secs(20);

fn client(server: &SilentServer, options: &str, monitoring: MonitoringThreads) -> Client {
    anymongo_tests::harness::client_at(server.address(), options, monitoring)
}

/// Which operation to run.
#[derive(Debug, Clone, Copy)]
enum Op {
    FindOne,
    InsertOne,
}

/// Runs `op` on `app.items` of `client` (`timeout` set on the collection, if given);
/// returns its error and how long it took.
async fn failed(client: &Client, op: Op, timeout: Option<Duration>) -> (Error, Duration) {
    let mut items = client.database("app").collection::<Document>("items");
    if let Some(timeout) = timeout {
        items = items.with_timeout(timeout);
    }
    // Boxed: an operation's future is large in debug builds, and a test thread's stack
    // is 2 MiB.
    let operation = match op {
        Op::FindOne => items
            .find_one(doc! { "_id": 1 })
            .into_future()
            .map_ok(drop)
            .boxed(),
        Op::InsertOne => items
            .insert_one(doc! { "_id": 1 })
            .into_future()
            .map_ok(drop)
            .boxed(),
    };
    let started = Instant::now();
    let error = within(BOUND, operation)
        .await
        .expect_err("a silent server cannot answer");
    (error, started.elapsed())
}

/// Checks that `error` is the operation's timeout and came within the bound, and
/// prints what was measured.
fn check(case: &str, error: &Error, took: Duration) {
    println!(
        "silent server, {case}: {:.1} ms: {error}",
        took.as_secs_f64() * 1000.0
    );
    assert!(error.is_operation_timeout(), "{case}: {error:?}");
    let ErrorKind::OperationTimeout { timeout, .. } = &*error.kind else {
        unreachable!()
    };
    assert_eq!(*timeout, TIMEOUT, "{case}: {error}");
    assert!(took >= TIMEOUT - CLOCK_SLACK, "{case}: too soon: {took:?}");
    assert!(took < TIMEOUT + MARGIN, "{case}: too late: {took:?}");
}

/// Runs `op` against a fresh silent server with `options`, checks the error and its
/// timing, then that the server was reached, and that dropping the client closes
/// every connection it opened.
async fn times_out(
    options: &str,
    monitoring: MonitoringThreads,
    op: Op,
    timeout: Option<Duration>,
) {
    let case = format!("{op:?} {monitoring:?} ?{options}");
    let server = SilentServer::start().unwrap();
    let client = client(&server, options, monitoring);
    let (error, took) = failed(&client, op, timeout).await;
    check(&case, &error, took);
    // The client did reach the server: what ran out was the wait for its answer.
    let (seen, reached) = server
        .wait_for(BOUND, |seen| seen.accepted > 0 && seen.bytes_read > 0)
        .await;
    assert!(reached, "{case}: the server saw nothing: {seen:?}");
    drop(client);
    // Nothing the client started goes on holding a connection to the server.
    let (seen, closed) = server.wait_for(BOUND, |seen| seen.open == 0).await;
    assert!(closed, "{case}: connections left open: {seen:?}");
}

const MODES: [MonitoringThreads; 2] = [
    MonitoringThreads::Background,
    MonitoringThreads::SingleThreaded,
];

#[tokio::test]
async fn find_one_against_a_direct_connection_times_out_at_timeout_ms() {
    for mode in MODES {
        times_out(
            "timeoutMS=200&directConnection=true",
            mode,
            Op::FindOne,
            None,
        )
        .await;
    }
}

#[tokio::test]
async fn insert_one_times_out_at_timeout_ms_before_a_long_server_selection_timeout() {
    // serverSelectionTimeoutMS and connectTimeoutMS far beyond timeoutMS: only
    // timeoutMS can end the operation this soon.
    for mode in MODES {
        times_out(
            "timeoutMS=200&serverSelectionTimeoutMS=30000&connectTimeoutMS=30000",
            mode,
            Op::InsertOne,
            None,
        )
        .await;
    }
}

#[tokio::test]
async fn a_timeout_set_on_the_collection_bounds_its_operations() {
    for mode in MODES {
        times_out(
            "serverSelectionTimeoutMS=30000&directConnection=true",
            mode,
            Op::FindOne,
            Some(TIMEOUT),
        )
        .await;
    }
}
