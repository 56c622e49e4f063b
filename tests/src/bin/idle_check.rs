//! A connection the server closed while it sat idle is replaced at check-out: the
//! wasip2 build's side of the test (`wasi.rs`; `pool.rs` runs the native one in
//! process). `idle_check URI` pings, prints `first: ok`, waits for a line on standard
//! input (the test writes it once the server has closed the connection), puts the
//! driver's clock past the pool's idle check, pings again and prints `second: ok` (or
//! `…: error: <error>`), then the pool's `closed: <id> <reason>` and `created: <n>`
//! lines. Exits 0 when both pings succeeded, 1 otherwise, 2 for a usage error.

use std::io::BufRead;
use std::sync::Arc;

use anymongo::bson::doc;
use anymongo::cmap::IDLE_CHECK_AFTER;
use anymongo::rt::Runtime;
use anymongo::{Client, ClientOptions};
use anymongo_tests::clock::AheadClock;
use anymongo_tests::pool_events::{closed_connections, created_connections, PoolEvents};

fn main() {
    let Some(uri) = std::env::args().nth(1) else {
        eprintln!("usage: idle_check URI");
        std::process::exit(2);
    };
    let succeeded = block_on(|runtime| run(uri, runtime));
    std::process::exit(if succeeded { 0 } else { 1 });
}

// The runtime's clock is an `Arc<dyn Clock>`, which wasm32 does not make Send (one
// thread): neither is a clock wrapping it.
#[cfg_attr(target_os = "wasi", allow(clippy::arc_with_non_send_sync))]
async fn run(uri: String, mut runtime: Runtime) -> bool {
    let clock = Arc::new(AheadClock::new(runtime.clock.clone()));
    runtime.clock = clock.clone();
    let events = PoolEvents::default();
    let client = match ClientOptions::parse_uri(&uri)
        .and_then(|options| Client::with_runtime(events.record(options), runtime))
    {
        Ok(client) => client,
        Err(error) => {
            println!("client: error: {error}");
            return false;
        }
    };
    let db = client.database("admin");
    let first = db.run_command(doc! { "ping": 1 }).await;
    report("first", &first);
    // Blocks the program, as nothing else has to run meanwhile (WASI has no spawner).
    let mut line = String::new();
    if let Err(error) = std::io::stdin().lock().read_line(&mut line) {
        println!("stdin: error: {error}");
        return false;
    }
    clock.put_ahead(IDLE_CHECK_AFTER * 2);
    let second = db.run_command(doc! { "ping": 1 }).await;
    report("second", &second);
    let events = events.lock();
    for (connection_id, reason) in closed_connections(&events) {
        println!("closed: {connection_id} {reason:?}");
    }
    println!("created: {}", created_connections(&events));
    first.is_ok() && second.is_ok()
}

fn report<T>(ping: &str, result: &anymongo::Result<T>) {
    match result {
        Ok(_) => println!("{ping}: ok"),
        Err(error) => println!("{ping}: error: {error}"),
    }
}

#[cfg(target_os = "wasi")]
fn block_on<F: std::future::Future<Output = bool>>(run: impl FnOnce(Runtime) -> F) -> bool {
    anymongo_wasi::block_on(run(anymongo_wasi::runtime()))
}

#[cfg(not(target_os = "wasi"))]
fn block_on<F: std::future::Future<Output = bool>>(run: impl FnOnce(Runtime) -> F) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { run(anymongo_native::runtime()).await })
}
