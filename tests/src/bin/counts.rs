//! The counts check (issue 46): instructions and allocations per operation of a few
//! operations of anymongo against the canned-reply server, natively, compared with a
//! baseline in the repository (`tests/counts-baseline.json`). These counts do not move
//! with the machine's load (instructions under cachegrind; allocations by the
//! program's allocator), so a change beyond the tolerance is the code's.
//!
//! ```text
//! cargo run -q --release -p anymongo-tests --bin counts            (CI: ./run.sh test)
//! cargo run -q --release -p anymongo-tests --bin counts -- --write (a change that
//!                            moves the counts on purpose rewrites the baseline)
//! ```
//!
//! Release profile only: a debug build's counts say nothing of what users run. Needs
//! valgrind. Each operation runs in a child process (`--child OPERATION N URI`) on a
//! current-thread runtime, so that no idle worker's parking is in the counts.

use std::path::PathBuf;
use std::process::ExitCode;

use anymongo::bson::{doc, Document};
use anymongo_tests::canned::{CannedServer, COLLECTION, DATABASE};
use anymongo_tests::counts::{self, Counts, Syscalls};
use futures::TryStreamExt;

/// Counts allocations for the child (`counts::ALLOCATOR`).
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &counts::ALLOCATOR;

/// How far a count may rise over the baseline before the check fails. Instructions
/// under cachegrind varied by up to 1.5 % between runs, allocations by up to 1.5 % (a
/// few background allocations depend on timing; docs/BENCHMARKS.md, "Counts"); a 10 %
/// rise on the hot path fails.
const TOLERANCE: f64 = 0.05;

/// The operations checked: name, operations per child run, counted units per operation.
const OPERATIONS: [(&str, u64, u64); 4] = [
    ("run command", 300, 1),
    ("find one", 300, 1),
    ("small insertOne", 300, 1),
    // Per document: each find reads the canned server's 10,000 documents.
    (
        "find many",
        3,
        anymongo_tests::canned::FIND_MANY_DOCUMENTS as u64,
    ),
];

/// The tweet-shaped document of the canned server's find replies (the benchmark's data
/// sets are not in the repository; any fixed document makes a fixed count).
fn tweet() -> Document {
    doc! {
        "text": "@jsonbench the quick brown fox jumps over the lazy dog, again and again",
        "in_reply_to_status_id": 22_773_233_453i64,
        "retweet_count": 0,
        "favorited": false,
        "created_at": "Thu Sep 02 19:38:18 +0000 2010",
        "user": {
            "id": 27_823_544,
            "screen_name": "bench",
            "followers_count": 1_024,
            "verified": false,
            "location": "loopback",
            "lang": "en",
        },
        "entities": { "hashtags": ["a", "b"], "urls": [], "user_mentions": [{ "id": 1, "indices": [0, 10] }] },
        "geo": null,
        "score": 0.75,
    }
}

/// The small document of the insertOnes.
fn small() -> Document {
    doc! { "name": "small", "n": 1, "tags": ["a", "b"], "nested": { "x": 1.5 } }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("--child") => child(&args[1..]),
        Some("--write") => check(true),
        None => check(false),
        Some(other) => Err(format!("unknown argument {other}; usage: counts [--write]")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("counts: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The baseline file.
fn baseline_path() -> PathBuf {
    anymongo_tests::setup::workspace_root().join("tests/counts-baseline.json")
}

/// Measures every operation; compares with the baseline, or writes it.
fn check(write: bool) -> Result<(), String> {
    let server = CannedServer::start(&tweet())?;
    // No heartbeat inside a measured run: one more hello would be in one count only.
    let uri = format!("{}&heartbeatFrequencyMS=600000", server.uri());
    let program = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut measured = serde_json::Map::new();
    for (name, n, per) in OPERATIONS {
        let args = |n: u64| vec!["--child".into(), name.into(), n.to_string(), uri.clone()];
        let counts = counts::measure(&program, args, n, per, Syscalls::Skipped)?;
        println!(
            "{name}: {:.0} instructions, {:.2} allocations, {:.0} bytes per {}",
            counts.instructions,
            counts.allocations,
            counts.bytes,
            if per > 1 { "document" } else { "operation" }
        );
        measured.insert(name.into(), to_json(&counts));
    }
    let path = baseline_path();
    if write {
        let text = serde_json::to_string_pretty(&measured).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let baseline: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut over = Vec::new();
    for (name, counts) in &measured {
        for what in ["instructions", "allocations"] {
            let now = counts[what].as_f64().unwrap_or_default();
            let Some(base) = baseline[name][what].as_f64() else {
                return Err(format!("{} has no {name} {what}", path.display()));
            };
            if now > base * (1.0 + TOLERANCE) {
                over.push(format!(
                    "{name}: {what} {now:.1} per operation, baseline {base:.1} (+{:.1} %)",
                    (now / base - 1.0) * 100.0
                ));
            }
        }
    }
    match over.is_empty() {
        true => {
            println!(
                "counts within {:.0} % of {}",
                TOLERANCE * 100.0,
                path.display()
            );
            Ok(())
        }
        false => Err(format!(
            "over the baseline by more than {:.0} % (a change that means it rewrites the \
             baseline: cargo run --release -p anymongo-tests --bin counts -- --write):\n{}",
            TOLERANCE * 100.0,
            over.join("\n")
        )),
    }
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

fn to_json(counts: &Counts) -> serde_json::Value {
    // Rounded: the file changes only when a count does.
    serde_json::json!({
        "instructions": counts.instructions.round(),
        "allocations": (counts.allocations * 100.0).round() / 100.0,
        "bytes": counts.bytes.round(),
    })
}

/// The child: `OPERATION N URI`.
fn child(args: &[String]) -> Result<(), String> {
    let [name, n, uri] = args else {
        return Err("usage: counts --child OPERATION N URI".into());
    };
    let n: u64 = n.parse().map_err(|e| format!("N: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let line = runtime.block_on(async {
        let client = anymongo::Client::with_uri_str(uri).await.map_err(text)?;
        let corpus = client.database(DATABASE).collection::<Document>(COLLECTION);
        let (admin, small) = (client.database("admin"), small());
        let line = match name.as_str() {
            "run command" => {
                counts::child_side(n, || async {
                    admin
                        .run_command(doc! { "hello": true })
                        .await
                        .map(drop)
                        .map_err(text)
                })
                .await
            }
            "find one" => {
                counts::child_side(n, || async {
                    match corpus.find_one(doc! { "_id": 1 }).await.map_err(text)? {
                        Some(_) => Ok(()),
                        None => Err("no document".to_string()),
                    }
                })
                .await
            }
            "small insertOne" => {
                counts::child_side(n, || async {
                    corpus.insert_one(&small).await.map(drop).map_err(text)
                })
                .await
            }
            "find many" => {
                counts::child_side(n, || async {
                    let mut cursor = corpus.find(doc! {}).await.map_err(text)?;
                    while cursor.try_next().await.map_err(text)?.is_some() {}
                    Ok(())
                })
                .await
            }
            other => return Err(format!("unknown operation {other}")),
        };
        client.shutdown().await;
        line
    })?;
    println!("{line}");
    Ok(())
}
