//! The WASI column: each server task run by the wasip2 build of this program under
//! wasmtime (see `wasi_child`), next to native anymongo, against the same server and
//! data; the two alternate which goes first from task to task.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anymongo_tests::setup;

use crate::data;
use crate::driver::{Anymongo, Driver};
use crate::stats::Policy;
use crate::tasks::{run_alone, Bench, Score, Task};

/// One row: a task, natively and under wasmtime.
pub struct WasiRow {
    /// The task.
    pub task: Task,
    /// Native anymongo.
    pub native: Score,
    /// The wasip2 build under wasmtime, or why it failed.
    pub wasi: Result<Score, String>,
}

/// The wasip2 build (`cargo build --release --target wasm32-wasip2`, which
/// `./run.sh bench` does).
pub fn wasm_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target")));
    target.join("wasm32-wasip2/release/anymongo-bench.wasm")
}

/// Runs `tasks` (server tasks: `--only` may leave out some) natively (with `native`,
/// connected to `uri`) and under wasmtime, alternately.
pub async fn run(
    uri: &str,
    native: &Bench<Anymongo>,
    tasks: &[Task],
    policy: Policy,
) -> Result<Vec<WasiRow>, String> {
    let wasmtime = setup::cache_dir().join("venv/bin/wasmtime");
    if !wasmtime.exists() {
        setup::run("venv")?;
    }
    let rules = match policy == Policy::QUICK {
        true => "quick",
        false => "spec",
    };
    let mut rows = Vec::new();
    for (i, &task) in tasks.iter().enumerate() {
        eprintln!("running {} natively and under wasmtime ...", task.name());
        native.setup(task).await?;
        // A failure under wasmtime is reported in its row; the other rows still run.
        let (native_score, wasi) = if i % 2 == 0 {
            let n = run_alone(task, native, policy).await?;
            (n, under_wasmtime(&wasmtime, uri, task, rules).await)
        } else {
            let w = under_wasmtime(&wasmtime, uri, task, rules).await;
            (run_alone(task, native, policy).await?, w)
        };
        rows.push(WasiRow {
            task,
            native: native_score,
            wasi,
        });
    }
    native.driver()?.drop_database().await?;
    Ok(rows)
}

async fn under_wasmtime(
    wasmtime: &std::path::Path,
    uri: &str,
    task: Task,
    rules: &str,
) -> Result<Score, String> {
    // The spec's 5 minutes at most, plus start-up.
    // (--quick still runs one whole iteration, which can take minutes on a slow server).
    let limit = Duration::from_secs(if rules == "quick" { 400 } else { 600 });
    let child = tokio::process::Command::new(wasmtime)
        .args([
            "run",
            "-S",
            "inherit-network=y",
            "-S",
            "allow-ip-name-lookup=y",
        ])
        .arg("--dir")
        .arg(format!("{}::/data", data::unpacked_dir().display()))
        .arg(wasm_path())
        .args([uri, task.name(), rules])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", wasmtime.display()))?;
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| format!("the wasip2 {} took over {limit:?}", task.name()))?
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "the wasip2 {} failed ({})",
            task.name(),
            output.status
        ));
    }
    let line: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("wasip2 output: {e}"))?;
    Ok(Score {
        iterations: line["iterations"].as_u64().unwrap_or(0) as usize,
        mb_per_s: line["mb_per_s"].as_f64().unwrap_or(0.0),
        percentiles: Vec::new(),
    })
}
