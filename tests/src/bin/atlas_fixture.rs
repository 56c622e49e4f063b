//! `atlas_fixture` runs [`anymongo_tests::atlas_fixture`] (the Atlas-shaped deployment:
//! `mongodb+srv://`, three TLS members, SCRAM-SHA-256, delays on every hop, DNS
//! included) for tests outside Rust: the npm package's node:test suite counts the round
//! trips of its cold requests under Node.js and workerd against it
//! (`wasm-demo/test/atlas.test.js`).
//!
//! ```text
//! atlas_fixture [--one-way-ms N] [--dns-one-way-ms N]   (both 25 by default)
//! ```
//!
//! Once it serves, with `{_id: 1}` in the `cold_request` measurement's collection, it
//! prints one JSON line, `{"uri", "nameserver", "database", "collection"}` (the
//! `mongodb+srv` string with the test CA's file, and the DNS relay's `ip:port`), then
//! answers each line of its standard input with one JSON line:
//!
//! - `now`: `{"now": µs}`, the time on the fixture's clock;
//! - `count FROM TO` (µs on that clock): `{"roundTrips": n, "deepest": n, "log": "…"}`,
//!   the round trips between the two times, DNS queries included
//!   ([`anymongo_tests::latency::round_trips`]), the longest chain of them
//!   ([`anymongo_tests::latency::deepest_round_trips`]: the same, unless a client's
//!   background checks answered after its request), and the flights they count.
//!
//! It stops when its standard input ends, so that it ends with the process that started
//! it, whichever way that one ends.

use std::io::{BufRead, Write};
use std::time::Duration;

use anymongo::bson::doc;
use anymongo_tests::atlas_fixture::AtlasFixture;
use anymongo_tests::cold_request::{COLLECTION, DATABASE};
use anymongo_tests::latency::{deepest_round_trips, round_trips, FlightLog};
use serde_json::json;

fn main() {
    if let Err(message) = run() {
        eprintln!("atlas_fixture: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut one_way = Duration::from_millis(25);
    let mut dns_one_way = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let ms: u64 = args
            .next()
            .and_then(|value| value.parse().ok())
            .ok_or(format!("{arg} needs a number of milliseconds"))?;
        match arg.as_str() {
            "--one-way-ms" => one_way = Duration::from_millis(ms),
            "--dns-one-way-ms" => dns_one_way = Some(Duration::from_millis(ms)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    // The proxies and the relay are tasks of this runtime; the main thread reads stdin.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let fixture = runtime.block_on(async {
        let fixture = AtlasFixture::start(one_way, dns_one_way.unwrap_or(one_way)).await?;
        let document = doc! { "_id": 1, "text": "cold" };
        fixture.seed(DATABASE, COLLECTION, document).await?;
        Ok::<_, String>(fixture)
    })?;
    let ready = json!({
        "uri": fixture.uri(),
        "nameserver": fixture.nameserver().to_string(),
        "database": DATABASE,
        "collection": COLLECTION,
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{ready}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let micros = |word: &str| word.parse().map(Duration::from_micros).ok();
        let answer = match words.as_slice() {
            ["now"] => json!({ "now": fixture.elapsed().as_micros() as u64 }),
            ["count", from, to] => match (micros(from), micros(to)) {
                (Some(from), Some(to)) => {
                    let connections = fixture.connections();
                    let log = FlightLog {
                        connections: &connections,
                        from,
                        to,
                    };
                    json!({
                        "roundTrips": round_trips(&connections, from, to),
                        "deepest": deepest_round_trips(&connections, from, to),
                        "log": log.to_string(),
                    })
                }
                _ => json!({ "error": format!("count FROM TO, in µs: {line}") }),
            },
            _ => json!({ "error": format!("unknown command: {line}") }),
        };
        writeln!(out, "{answer}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    drop(fixture);
    Ok(())
}
