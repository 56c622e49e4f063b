//! Warm requests at a distance (issue 44, `anymongo_tests::warm_requests`): a client
//! that cannot spawn (single-threaded mode), natively and as a wasip2 program under
//! wasmtime, behind the latency proxy in front of the shared SecantusDB. A warm request
//! takes 1 round trip, and so does the request after one that dropped its cursor
//! before its end: the cursor's killCursors goes ahead of that request's command, in
//! the same round trip (sent and answered first, it made that request take 2). The npm
//! package's children, under Node.js and workerd: `wasm-demo/test/warm_requests.test.js`.

use std::process::Command;

use anymongo_tests::harness::within;
use anymongo_tests::setup;
use anymongo_tests::warm_requests::measure;

const BOUND: std::time::Duration = std::time::Duration::from_secs(180);

/// The shared server's `host:port`.
fn server() -> String {
    let server = anymongo_tests::server::shared();
    format!("{}:{}", server.host, server.port)
}

/// Runs `child` through the steps; asserts that every step after the cold one took
/// 1 round trip.
async fn assert_warm_requests_take_one_round_trip(what: &str, child: impl FnOnce(&str) -> Command) {
    let measured = within(BOUND, measure(&server(), child)).await.unwrap();
    assert_eq!(
        measured.round_trips[1..],
        [1, 1, 1],
        "{what}: the round trips of a warm request, one that abandons its cursor and \
         the one after it; flights:\n{}",
        measured.log
    );
}

#[tokio::test]
async fn natively_single_threaded_every_warm_request_takes_one_round_trip() {
    assert_warm_requests_take_one_round_trip("native", |uri| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warm_requests"));
        command.args(["--child", uri]);
        command
    })
    .await;
}

#[tokio::test]
async fn under_wasi_every_warm_request_takes_one_round_trip() {
    let wasm = setup::wasip2_binary("anymongo-tests", "warm_requests");
    assert_warm_requests_take_one_round_trip("wasip2", |uri| {
        let mut command = Command::new(setup::wasmtime());
        command
            .args(["run", "-S", "inherit-network=y"])
            .arg(&wasm)
            .args(["--child", uri]);
        command
    })
    .await;
}
