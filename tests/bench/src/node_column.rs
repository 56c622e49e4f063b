//! The npm column: `node/bench.mjs` runs the server tasks with the npm package
//! `anymongo` (wasm-demo/) and the official `mongodb` Node.js driver 7.x, alternating,
//! against the same server; this runs it and reads its JSON lines.

use std::process::Stdio;
use std::time::Duration;

use anymongo_tests::setup;

use crate::data;
use crate::stats::Policy;

/// One row: a task with both Node.js drivers, in MB/s.
pub struct NodeRow {
    /// The spec's task name.
    pub task: String,
    /// The npm package `anymongo` (MB/s, or why it failed).
    pub anymongo: Result<f64, String>,
    /// The official `mongodb` npm driver (MB/s, or why it failed).
    pub official: Result<f64, String>,
    /// Iterations of each.
    pub iterations: (u64, u64),
}

/// Runs `node/bench.mjs` against `uri`, the tasks whose name contains `only` (any case;
/// all of them when it is empty). Needs the npm package built
/// (`wasm-demo/build.sh`, `npm ci` in wasm-demo) and the official driver installed in
/// the cache's `bench-node` folder, as `./run.sh bench` does.
pub async fn run(uri: &str, policy: Policy, only: &str) -> Result<Vec<NodeRow>, String> {
    let quick = policy == Policy::QUICK;
    // Seven tasks, two drivers, the policy's time each, plus setup.
    let limit = Duration::from_secs(if quick { 600 } else { 5_000 });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/node/bench.mjs");
    let child = tokio::process::Command::new("node")
        .arg(script)
        .arg(uri)
        .arg(if quick { "quick" } else { "spec" })
        .arg(data::unpacked_dir())
        .arg(setup::cache_dir().join("bench-node"))
        .arg(only)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run node: {e}"))?;
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| format!("node/bench.mjs took over {limit:?}"))?
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!("node/bench.mjs failed ({})", output.status));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let row: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("node/bench.mjs output: {e}"))?;
            Ok(NodeRow {
                task: row["task"].as_str().unwrap_or_default().to_owned(),
                anymongo: outcome(&row["anymongo"]),
                official: outcome(&row["official"]),
                iterations: (
                    row["anymongo"]["iterations"].as_u64().unwrap_or(0),
                    row["official"]["iterations"].as_u64().unwrap_or(0),
                ),
            })
        })
        .collect()
}

/// A driver's MB/s, or the error it failed the task with.
fn outcome(result: &serde_json::Value) -> Result<f64, String> {
    match result["error"].as_str() {
        Some(error) => Err(error.to_owned()),
        None => Ok(result["mb_per_s"].as_f64().unwrap_or(0.0)),
    }
}
