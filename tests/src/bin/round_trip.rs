//! A typed document through `insert_one` and `find_one` (see
//! `anymongo_tests::round_trip`): `round_trip URI [COLLECTION]`, natively or as a WASI
//! 0.2 program under wasmtime (`wasmtime run -S inherit-network=y round_trip.wasm URI
//! [COLLECTION]`).
//!
//! Prints `typed round trip from <runtime>: unchanged` and the document as the server
//! stored it, and exits 0; otherwise prints what went wrong and exits 1.

use anymongo::{Client, Result};
use anymongo_tests::round_trip;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(uri) = args.next() else {
        eprintln!("usage: round_trip URI [COLLECTION]");
        std::process::exit(2);
    };
    let collection = args.next().unwrap_or_else(|| RUNTIME.to_string());
    let outcome = block_on(&uri, &collection);
    let problems = match &outcome {
        Ok(outcome) => outcome.problems(),
        Err(error) => vec![error.to_string()],
    };
    if !problems.is_empty() {
        eprintln!(
            "typed round trip from {RUNTIME} failed: {}",
            problems.join("; ")
        );
        std::process::exit(1);
    }
    println!("typed round trip from {RUNTIME}: unchanged");
    if let Ok(round_trip::Outcome {
        stored: Some(stored),
        ..
    }) = outcome
    {
        println!("stored: {stored}");
    }
}

async fn run(client: Result<Client>, collection: &str) -> Result<round_trip::Outcome> {
    round_trip::run(&client?, collection).await
}

#[cfg(target_os = "wasi")]
const RUNTIME: &str = "wasi";

#[cfg(target_os = "wasi")]
fn block_on(uri: &str, collection: &str) -> Result<round_trip::Outcome> {
    anymongo_wasi::block_on(async {
        run(anymongo::Client::with_uri_str(uri).await, collection).await
    })
}

#[cfg(not(target_os = "wasi"))]
const RUNTIME: &str = "native";

#[cfg(not(target_os = "wasi"))]
fn block_on(uri: &str, collection: &str) -> Result<round_trip::Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { run(anymongo::Client::with_uri_str(uri).await, collection).await })
}
