//! The results as Markdown tables (what `docs/BENCHMARKS.md` shows) and as JSON.

use serde_json::{json, Value};

use crate::node_column::NodeRow;
use crate::parallel::ParallelScore;
use crate::tasks::{Score, TaskResult};
use crate::wasi_column::WasiRow;

/// The results of one server (or of the client-side BSON tasks).
pub struct Section {
    /// What it ran against.
    pub title: String,
    /// The spec's tasks.
    pub tasks: Vec<TaskResult>,
    /// The parallel rows: tasks, anymongo, official.
    pub parallel: Vec<(usize, ParallelScore, ParallelScore)>,
    /// The WASI rows (`--wasi`).
    pub wasi: Vec<WasiRow>,
    /// The npm rows (`--node`).
    pub node: Vec<NodeRow>,
}

/// Cold-start medians, in milliseconds.
pub struct ColdStart {
    /// What it ran against.
    pub title: String,
    /// anymongo's median.
    pub anymongo_ms: f64,
    /// The official driver's median.
    pub official_ms: f64,
    /// Runs per driver.
    pub runs: usize,
}

fn ratio(a: f64, o: f64) -> String {
    match o > 0.0 {
        true => format!("{:.2}x", a / o),
        false => "-".into(),
    }
}

/// The Markdown of a section.
pub fn markdown(section: &Section) -> String {
    let mut out = format!("### {}\n\n", section.title);
    if !section.tasks.is_empty() {
        out += "| group | task | anymongo MB/s | official MB/s | ratio | iterations |\n";
        out += "| --- | --- | ---: | ---: | ---: | ---: |\n";
        for r in &section.tasks {
            out += &format!(
                "| {} | {} | {:.2} | {:.2} | {} | {} / {} |\n",
                r.task.group(),
                r.task.name(),
                r.anymongo.mb_per_s,
                r.official.mb_per_s,
                ratio(r.anymongo.mb_per_s, r.official.mb_per_s),
                r.anymongo.iterations,
                r.official.iterations,
            );
        }
        out += "\n";
    }
    if !section.parallel.is_empty() {
        out += "Parallel find one by ID, one shared client (ops/s; latency p50 / p99 in ms; \
                connections in the pool at the end):\n\n";
        out += "| tasks | anymongo ops/s | anymongo p50 / p99 | conns | official ops/s | official p50 / p99 | conns | ratio |\n";
        out += "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (tasks, a, o) in &section.parallel {
            out += &format!(
                "| {tasks} | {:.0} | {:.3} / {:.3} | {} | {:.0} | {:.3} / {:.3} | {} | {} |\n",
                a.ops_per_s,
                a.p50_ms,
                a.p99_ms,
                a.connections,
                o.ops_per_s,
                o.p50_ms,
                o.p99_ms,
                o.connections,
                ratio(a.ops_per_s, o.ops_per_s),
            );
        }
        out += "\n";
    }
    if !section.wasi.is_empty() {
        out += "anymongo's wasip2 build under wasmtime next to native anymongo:\n\n";
        out += "| task | native MB/s | wasip2 MB/s | wasip2 / native |\n";
        out += "| --- | ---: | ---: | ---: |\n";
        for row in &section.wasi {
            let (wasi, ratio) = match &row.wasi {
                Ok(wasi) => (
                    format!("{:.2}", wasi.mb_per_s),
                    ratio(wasi.mb_per_s, row.native.mb_per_s),
                ),
                Err(error) => (format!("failed: {error}"), "-".into()),
            };
            out += &format!(
                "| {} | {:.2} | {wasi} | {ratio} |\n",
                row.task.name(),
                row.native.mb_per_s,
            );
        }
        out += "\n";
    }
    if !section.node.is_empty() {
        out += "Node.js: the npm package `anymongo` next to the official `mongodb` npm driver:\n\n";
        out += "| task | anymongo (npm) MB/s | mongodb (npm) MB/s | ratio | iterations |\n";
        out += "| --- | ---: | ---: | ---: | ---: |\n";
        for row in &section.node {
            let cell = |r: &Result<f64, String>| match r {
                Ok(mb_per_s) => format!("{mb_per_s:.2}"),
                Err(error) => format!("failed: {error}"),
            };
            let ratio = match (&row.anymongo, &row.official) {
                (Ok(a), Ok(o)) => ratio(*a, *o),
                _ => "-".into(),
            };
            out += &format!(
                "| {} | {} | {} | {ratio} | {} / {} |\n",
                row.task,
                cell(&row.anymongo),
                cell(&row.official),
                row.iterations.0,
                row.iterations.1,
            );
        }
        out += "\n";
    }
    out
}

/// The Markdown of the cold-start table.
pub fn cold_markdown(cold: &[ColdStart]) -> String {
    if cold.is_empty() {
        return String::new();
    }
    let mut out =
        "### Cold start: process start to the first find result (median ms)\n\n".to_string();
    out += "| server | anymongo ms | official ms | official / anymongo | runs |\n";
    out += "| --- | ---: | ---: | ---: | ---: |\n";
    for c in cold {
        out += &format!(
            "| {} | {:.1} | {:.1} | {} | {} |\n",
            c.title,
            c.anymongo_ms,
            c.official_ms,
            ratio(c.official_ms, c.anymongo_ms),
            c.runs
        );
    }
    out + "\n"
}

fn score_json(score: &Score) -> Value {
    json!({
        "mb_per_s": score.mb_per_s,
        "iterations": score.iterations,
        "percentiles_s": score.percentiles.iter()
            .map(|(p, s)| (p.to_string(), json!(s)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

fn parallel_json(score: &ParallelScore) -> Value {
    json!({
        "operations": score.operations,
        "ops_per_s": score.ops_per_s,
        "mb_per_s": score.mb_per_s,
        "p50_ms": score.p50_ms,
        "p99_ms": score.p99_ms,
        "connections": score.connections,
    })
}

/// All results as one JSON document.
pub fn json(quick: bool, awake: bool, sections: &[Section], cold: &[ColdStart]) -> Value {
    json!({
        "spec_iteration_rules": !quick,
        "cpus_held_awake": awake,
        "sections": sections.iter().map(|s| json!({
            "title": s.title,
            "tasks": s.tasks.iter().map(|r| json!({
                "group": r.task.group(),
                "task": r.task.name(),
                "megabytes": r.task.megabytes(),
                "anymongo": score_json(&r.anymongo),
                "official": score_json(&r.official),
                "ratio": r.anymongo.mb_per_s / r.official.mb_per_s,
            })).collect::<Vec<_>>(),
            "parallel": s.parallel.iter().map(|(tasks, a, o)| json!({
                "tasks": tasks,
                "anymongo": parallel_json(a),
                "official": parallel_json(o),
                "ratio": a.ops_per_s / o.ops_per_s,
            })).collect::<Vec<_>>(),
            "wasi": s.wasi.iter().map(|row| json!({
                "task": row.task.name(),
                "native_mb_per_s": row.native.mb_per_s,
                "wasip2_mb_per_s": row.wasi.as_ref().ok().map(|w| w.mb_per_s),
                "wasip2_iterations": row.wasi.as_ref().ok().map(|w| w.iterations),
                "wasip2_error": row.wasi.as_ref().err(),
            })).collect::<Vec<_>>(),
            "node": s.node.iter().map(|row| json!({
                "task": row.task,
                "anymongo_npm_mb_per_s": row.anymongo.as_ref().ok(),
                "anymongo_npm_error": row.anymongo.as_ref().err(),
                "mongodb_npm_mb_per_s": row.official.as_ref().ok(),
                "mongodb_npm_error": row.official.as_ref().err(),
                "iterations": [row.iterations.0, row.iterations.1],
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "cold_start": cold.iter().map(|c| json!({
            "server": c.title,
            "anymongo_ms": c.anymongo_ms,
            "official_ms": c.official_ms,
            "runs": c.runs,
        })).collect::<Vec<_>>(),
    })
}
