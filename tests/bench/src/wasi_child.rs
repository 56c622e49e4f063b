//! The wasip2 build: runs one server task with anymongo under wasmtime and prints its
//! score as one JSON line, for the native program's WASI column.
//!
//! `wasmtime run -S inherit-network=y --dir DATA::/data anymongo-bench.wasm URI TASK
//! quick|spec`, where DATA holds the unpacked data sets and TASK is a task's spec name.
//! The native program does the task's setup and teardown; this runs its iterations.
//! With `counts:N` for the rules, it runs `N` operations of the task instead and prints
//! their counts line (counts.rs, `--counts --wasi`).

use std::path::Path;
use std::process::ExitCode;

use crate::data::DataSets;
use crate::driver::Anymongo;
use crate::stats::Policy;
use crate::tasks::{by_name, run_alone, Bench, Score};

/// The entry point of the wasip2 build.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [uri, task, rules] = args.as_slice() else {
        eprintln!("usage: anymongo-bench.wasm URI TASK quick|spec (data in /data)");
        return ExitCode::from(2);
    };
    if let Some(n) = rules.strip_prefix("counts:") {
        return match anymongo_wasi::block_on(count(uri, task, n)) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("anymongo-bench (wasip2): {message}");
                ExitCode::FAILURE
            }
        };
    }
    let policy = match rules.as_str() {
        "quick" => Policy::QUICK,
        _ => Policy::SPEC,
    };
    match anymongo_wasi::block_on(run(uri, task, policy)) {
        Ok(score) => {
            println!(
                "{}",
                serde_json::json!({ "mb_per_s": score.mb_per_s, "iterations": score.iterations })
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("anymongo-bench (wasip2): {message}");
            ExitCode::FAILURE
        }
    }
}

async fn count(uri: &str, task: &str, n: &str) -> Result<String, String> {
    let task = by_name(task).ok_or_else(|| format!("unknown task {task}"))?;
    let n = n.parse().map_err(|e| format!("counts:N: {e}"))?;
    let data = DataSets::read_from(Path::new("/data"))?;
    crate::counts::child_of::<Anymongo>(uri, task, n, &data).await
}

async fn run(uri: &str, task: &str, policy: Policy) -> Result<Score, String> {
    let task = by_name(task).ok_or_else(|| format!("unknown task {task}"))?;
    let data = DataSets::read_from(Path::new("/data"))?;
    let bench = Bench::<Anymongo>::new(&data, Some(uri)).await?;
    let score = run_alone(task, &bench, policy).await?;
    bench.close().await;
    Ok(score)
}
