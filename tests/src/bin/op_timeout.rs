//! Runs one operation and reports how it ended and how long it took, measured on the
//! driver's clock seam (WASI monotonic clock under wasmtime, tokio's natively):
//! `op_timeout URI [find_one | insert_one]` (default `find_one`, on `app.items`). For
//! the `timeoutMS` tests against a server that never answers (`wasi.rs`); as a WASI
//! 0.2 program: `wasmtime run -S inherit-network=y op_timeout.wasm URI`.
//!
//! Prints `outcome: timeout` (an [`ErrorKind::OperationTimeout`]), `outcome: error`
//! or `outcome: ok`, then `elapsed_us: N` and `error: …` (the error as displayed),
//! and exits 0 on a timeout, 1 otherwise (2 for a usage error).

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::rt::Runtime;
use anymongo::{Client, ClientOptions, ErrorKind, Result};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(uri), op) = (args.next(), args.next()) else {
        eprintln!("usage: op_timeout URI [find_one | insert_one]");
        std::process::exit(2);
    };
    let op = op.unwrap_or_else(|| "find_one".into());
    if !matches!(op.as_str(), "find_one" | "insert_one") {
        eprintln!("op_timeout: unknown operation {op} (find_one, insert_one)");
        std::process::exit(2);
    }
    let (result, elapsed) = block_on(|runtime| run(uri, op, runtime));
    let outcome = match &result {
        Ok(()) => "ok",
        Err(error) if matches!(&*error.kind, ErrorKind::OperationTimeout { .. }) => "timeout",
        Err(_) => "error",
    };
    println!("outcome: {outcome}");
    println!("elapsed_us: {}", elapsed.as_micros());
    if let Err(error) = &result {
        println!("error: {error}");
    }
    std::process::exit(if outcome == "timeout" { 0 } else { 1 });
}

/// Runs `op` with a client for `uri` on `runtime`; returns its result and how long the
/// operation took (building the client, which does no I/O, left out).
async fn run(uri: String, op: String, runtime: Runtime) -> (Result<()>, Duration) {
    let clock = runtime.clock.clone();
    let client = match ClientOptions::parse_uri(&uri).and_then(|o| Client::with_runtime(o, runtime))
    {
        Ok(client) => client,
        Err(error) => return (Err(error), Duration::ZERO),
    };
    let items = client.database("app").collection::<Document>("items");
    let started = clock.now();
    let result = match op.as_str() {
        "insert_one" => items.insert_one(doc! { "_id": 1 }).await.map(drop),
        _ => items.find_one(doc! { "_id": 1 }).await.map(drop),
    };
    let elapsed = clock.now().saturating_duration_since(started);
    (result, elapsed)
}

#[cfg(target_os = "wasi")]
fn block_on<F: std::future::Future<Output = (Result<()>, Duration)>>(
    run: impl FnOnce(Runtime) -> F,
) -> (Result<()>, Duration) {
    anymongo_wasi::block_on(run(anymongo_wasi::runtime()))
}

#[cfg(not(target_os = "wasi"))]
fn block_on<F: std::future::Future<Output = (Result<()>, Duration)>>(
    run: impl FnOnce(Runtime) -> F,
) -> (Result<()>, Duration) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { run(anymongo_native::runtime()).await })
}
