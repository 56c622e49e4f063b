//! Warm requests at a distance (`anymongo_tests::warm_requests`, issue 44).
//!
//! ```text
//! warm_requests --child URI        the Rust child: natively, a client on a runtime
//!                                  that cannot spawn (single-threaded mode); as a
//!                                  wasip2 program under wasmtime, the WASI client
//! warm_requests SERVER CHILD...    the parent: seeds the server at SERVER (host:port),
//!                                  puts the latency proxy in front of it, runs CHILD
//!                                  (its `{uri}` arguments replaced by the proxy's
//!                                  connection string) through the steps, and prints
//!                                  `round trips: N N N N` (one per step), then the
//!                                  flights
//! ```
//!
//! The npm package's tests run the parent over their Node.js and workerd children
//! (`wasm-demo/test/warm_requests.test.js`); `tests/warm_requests.rs` runs it over
//! this binary's children.

use std::io::BufRead;
use std::process::ExitCode;

use anymongo_tests::warm_requests;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--child") => child(args.get(1).map_or("", String::as_str)),
        #[cfg(not(target_os = "wasi"))]
        Some(server) => parent(server, &args[1..]),
        _ => Err("usage: warm_requests --child URI | warm_requests SERVER CHILD...".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("warm_requests: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Answers the steps read on stdin, on one client (see the protocol in
/// `anymongo_tests::warm_requests`). Reading stdin blocks the one thread, which is
/// fine: a client that cannot spawn does nothing between its operations.
async fn answer_steps(client: anymongo::Client) -> Result<(), String> {
    for line in std::io::stdin().lock().lines() {
        let step = line.map_err(|error| format!("cannot read stdin: {error}"))?;
        match warm_requests::step(&client, &step).await {
            Ok(()) => println!("done {step}"),
            Err(error) => println!("failed {step}: {error}"),
        }
    }
    Ok(())
}

/// The native child: a current-thread runtime, and a client that cannot spawn.
#[cfg(not(target_os = "wasi"))]
fn child(uri: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async {
        let options = anymongo::ClientOptions::parse_uri(uri).map_err(|e| e.to_string())?;
        let mut client_runtime = anymongo_native::runtime();
        client_runtime.spawner = None;
        let client =
            anymongo::Client::with_runtime(options, client_runtime).map_err(|e| e.to_string())?;
        answer_steps(client).await
    })
}

/// The wasip2 child.
#[cfg(target_os = "wasi")]
fn child(uri: &str) -> Result<(), String> {
    anymongo_wasi::block_on(async {
        let client = anymongo::Client::with_uri_str(uri)
            .await
            .map_err(|error| error.to_string())?;
        answer_steps(client).await
    })
}

/// The parent, for a child given on the command line.
#[cfg(not(target_os = "wasi"))]
fn parent(server: &str, child: &[String]) -> Result<(), String> {
    let (program, arguments) = child.split_first().ok_or("no child given")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let measured = runtime.block_on(warm_requests::measure(server, |uri| {
        let mut command = std::process::Command::new(program);
        command.args(
            arguments
                .iter()
                .map(|argument| argument.replace("{uri}", uri)),
        );
        command
    }))?;
    let counts: Vec<String> = measured.round_trips.iter().map(usize::to_string).collect();
    println!("round trips: {}", counts.join(" "));
    print!("{}", measured.log);
    Ok(())
}
