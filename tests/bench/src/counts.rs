//! The counts per operation (issue 46, `--counts`): instructions, heap allocations and
//! bytes, system calls and wake-ups (voluntary context switches) of one operation of
//! each server task, for anymongo and the official driver, against each server. These
//! do not move with the machine's load as timings do, so they compare across commits.
//!
//! Each (server, task, driver) is a child process of this program
//! (`--counts-child DRIVER URI TASK N DATA`) that connects, warms up and runs `N`
//! operations on a current-thread runtime (deterministic: the counts repeat run to run);
//! `anymongo_tests::counts` runs it natively (allocations, bytes, wake-ups,
//! counted in the child), under cachegrind and under strace (instructions and system
//! calls: the difference between `N` operations and none). One operation is one call
//! of the task (one `hello`, one find by `_id`, one insertOne); the multi-document
//! rows are counted per document (a find many reads 10,000, a bulk insert writes
//! 10,000 small or 10 large).

#[cfg(not(target_os = "wasi"))]
use std::path::Path;

#[cfg(not(target_os = "wasi"))]
use anymongo_tests::counts::Syscalls;
use anymongo_tests::counts::{self, Counts};

use crate::data::DataSets;
use crate::driver::Driver;
#[cfg(not(target_os = "wasi"))]
use crate::driver::{Anymongo, Official};
use crate::tasks::Task;
#[cfg(not(target_os = "wasi"))]
use crate::tasks::{by_name, Bench};

/// The counts of one task against one server.
pub struct CountsRow {
    /// The task.
    pub task: Task,
    /// anymongo's counts.
    pub anymongo: Counts,
    /// The official driver's counts.
    pub official: Counts,
    /// anymongo's wasip2 build under wasmtime (`--wasi`): the instructions of the
    /// wasmtime process, the allocations of the guest; or why it failed.
    pub wasi: Option<Result<Counts, String>>,
}

/// Operations per child run, and counted units (documents) per operation: enough for
/// the difference to dwarf a stray heartbeat, few enough for cachegrind (about 50
/// times slower than native).
fn operations(task: Task) -> (u64, u64) {
    match task {
        Task::LargeInsertOne => (5, 1),
        Task::FindMany | Task::SmallInsertMany => (2, 10_000),
        Task::LargeInsertMany => (2, 10),
        _ => (200, 1),
    }
}

/// The documents the operations use, parsed by the driver's own bson crate.
struct Documents<D: Driver> {
    small: D::Doc,
    large: D::Doc,
    smalls: Vec<D::Doc>,
    larges: Vec<D::Doc>,
}

/// One operation of `task`.
async fn operation<D: Driver>(driver: &D, task: Task, docs: &Documents<D>) -> Result<(), String> {
    match task {
        Task::RunCommand => driver.hello().await,
        Task::FindOne => driver.find_one_by_id(1).await,
        Task::SmallInsertOne => driver.insert_one(&docs.small).await,
        Task::LargeInsertOne => driver.insert_one(&docs.large).await,
        Task::FindMany => driver.find_all().await.map(drop),
        Task::SmallInsertMany => driver.insert_many(&docs.smalls).await,
        Task::LargeInsertMany => driver.insert_many(&docs.larges).await,
        other => Err(format!("{} is not a server task", other.name())),
    }
}

/// The child's side: `DRIVER URI TASK N DATA`; prints the counts line.
#[cfg(not(target_os = "wasi"))]
pub fn child(args: &[String]) -> Result<(), String> {
    let [driver, uri, task, n, data] = args else {
        return Err("usage: --counts-child DRIVER URI TASK N DATA".into());
    };
    let task = by_name(task).ok_or_else(|| format!("no task {task}"))?;
    let n: u64 = n.parse().map_err(|e| format!("N: {e}"))?;
    let data = DataSets::load(Path::new(data))?;
    // A current-thread runtime, as the CI check's (`anymongo-tests --bin counts`): on a
    // multi-threaded one the instructions depend on timing (a worker that waits busier
    // is counted: run command once read 10.9 k, once 119.5 k); on one thread they
    // repeat, and both drivers run on it (the official driver's background tasks too).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let line = runtime.block_on(async {
        match driver.as_str() {
            Anymongo::NAME => child_of::<Anymongo>(uri, task, n, &data).await,
            Official::NAME => child_of::<Official>(uri, task, n, &data).await,
            other => Err(format!("unknown driver {other}")),
        }
    })?;
    println!("{line}");
    Ok(())
}

/// Connects, warms up, runs `n` operations of `task`; the counts line (the native
/// child's and the wasip2 build's).
pub async fn child_of<D: Driver>(
    uri: &str,
    task: Task,
    n: u64,
    data: &DataSets,
) -> Result<String, String> {
    let (small, large) = (D::parse(&data.small)?, D::parse(&data.large)?);
    let docs = Documents::<D> {
        smalls: match task {
            Task::SmallInsertMany => vec![small.clone(); 10_000],
            _ => Vec::new(),
        },
        larges: match task {
            Task::LargeInsertMany => vec![large.clone(); 10],
            _ => Vec::new(),
        },
        small,
        large,
    };
    let driver = D::connect(uri).await?;
    let line = counts::child_side(n, || operation(&driver, task, &docs)).await;
    driver.close().await;
    line
}

/// Counts every task of `tasks` with both drivers against the server at `uri`; the
/// data of the read tasks is written first (by anymongo, as the benchmark does).
#[cfg(not(target_os = "wasi"))]
pub async fn measure(
    uri: &str,
    data: &DataSets,
    data_dir: &Path,
    tasks: &[Task],
    wasi: bool,
) -> Result<Vec<CountsRow>, String> {
    let wasmtime = anymongo_tests::setup::cache_dir().join("venv/bin/wasmtime");
    if wasi && !wasmtime.exists() {
        anymongo_tests::setup::run("venv")?;
    }
    let setup = Bench::<Anymongo>::new(data, Some(uri)).await?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // No heartbeat inside a measured run: one more hello would be in one count only.
    let separator = match (uri.contains('?'), uri.ends_with('/')) {
        (true, _) => "&",
        (false, true) => "?",
        (false, false) => "/?",
    };
    let uri = format!("{uri}{separator}heartbeatFrequencyMS=600000");
    let mut rows = Vec::new();
    for &task in tasks {
        eprintln!("counting {} ...", task.name());
        setup.setup(task).await?;
        let (n, per) = operations(task);
        let (exe, uri, data_dir) = (exe.clone(), uri.clone(), data_dir.to_path_buf());
        let wasmtime = wasmtime.clone();
        let (anymongo, official, wasi) = tokio::task::spawn_blocking(move || {
            let of = |driver: &str| {
                let args = |n: u64| {
                    let data_dir = data_dir.display().to_string();
                    let (task, n) = (task.name().to_string(), n.to_string());
                    vec![
                        "--counts-child".into(),
                        driver.into(),
                        uri.clone(),
                        task,
                        n,
                        data_dir,
                    ]
                };
                counts::measure(&exe, args, n, per, Syscalls::Counted)
            };
            // The wasip2 build: the same operations, the guest's allocator counting.
            let under_wasmtime = || {
                let args = |n: u64| {
                    let mut args: Vec<String> = ["run", "-S", "inherit-network=y", "-S"]
                        .map(String::from)
                        .into();
                    args.push("allow-ip-name-lookup=y".into());
                    args.push("--dir".into());
                    args.push(format!("{}::/data", crate::data::unpacked_dir().display()));
                    args.push(crate::wasi_column::wasm_path().display().to_string());
                    args.extend([uri.clone(), task.name().into(), format!("counts:{n}")]);
                    args
                };
                counts::measure(&wasmtime, args, n, per, Syscalls::Counted)
            };
            let (anymongo, official) = (of(Anymongo::NAME)?, of(Official::NAME)?);
            Ok::<_, String>((anymongo, official, wasi.then(under_wasmtime)))
        })
        .await
        .map_err(|e| e.to_string())??;
        rows.push(CountsRow {
            task,
            anymongo,
            official,
            wasi,
        });
    }
    setup.driver()?.drop_database().await?;
    setup.close().await;
    Ok(rows)
}

#[cfg(not(target_os = "wasi"))]
fn compact(count: f64) -> String {
    match count {
        c if c >= 10_000_000.0 => format!("{:.1} M", c / 1e6),
        c if c >= 10_000.0 => format!("{:.1} k", c / 1e3),
        c if c >= 100.0 => format!("{c:.0}"),
        c => format!("{c:.2}"),
    }
}

/// One count of both drivers: `anymongo / official (ratio)`, the ratio anymongo's over
/// the official driver's (below 1: anymongo does less).
#[cfg(not(target_os = "wasi"))]
fn beside(anymongo: Option<f64>, official: Option<f64>) -> String {
    match (anymongo, official) {
        (Some(a), Some(o)) if o > 0.0 => {
            format!("{} / {} ({:.2})", compact(a), compact(o), a / o)
        }
        (a, o) => {
            let shown = |c: Option<f64>| c.map_or("-".into(), compact);
            format!("{} / {}", shown(a), shown(o))
        }
    }
}

/// The Markdown table of a server's counts: a row per task, each count anymongo's
/// beside the official driver's, with their ratio; the wasip2 build's in a row of its
/// own under its task's.
#[cfg(not(target_os = "wasi"))]
pub fn markdown(title: &str, rows: &[CountsRow]) -> String {
    let mut out = format!(
        "### Counts per operation (multi-document rows: per document), {title}\n\n\
         Each cell: anymongo / official (anymongo's over the official driver's).\n\n\
         | task | instructions | allocations | bytes allocated | system calls | wake-ups |\n\
         | --- | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for row in rows {
        let (a, o) = (&row.anymongo, &row.official);
        out += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            row.task.name(),
            beside(Some(a.instructions), Some(o.instructions)),
            beside(Some(a.allocations), Some(o.allocations)),
            beside(Some(a.bytes), Some(o.bytes)),
            beside(a.syscalls, o.syscalls),
            beside(a.wake_ups, o.wake_ups),
        );
        match &row.wasi {
            Some(Ok(c)) => {
                out += &format!(
                    "| {}, anymongo wasip2 (wasmtime) | {} | {} | {} | {} | {} |\n",
                    row.task.name(),
                    compact(c.instructions),
                    compact(c.allocations),
                    compact(c.bytes),
                    c.syscalls.map_or("-".into(), compact),
                    c.wake_ups.map_or("-".into(), compact),
                );
            }
            Some(Err(error)) => {
                out += &format!(
                    "| {}, anymongo wasip2 | failed: {error} |||||\n",
                    row.task.name()
                );
            }
            None => {}
        }
    }
    out
}

/// The JSON of a server's counts.
#[cfg(not(target_os = "wasi"))]
pub fn json(title: &str, rows: &[CountsRow]) -> serde_json::Value {
    let of = |c: &Counts| {
        serde_json::json!({
            "instructions": c.instructions,
            "allocations": c.allocations,
            "bytes": c.bytes,
            "syscalls": c.syscalls,
            "wake_ups": c.wake_ups,
        })
    };
    serde_json::json!({
        "server": title,
        "rows": rows.iter().map(|row| serde_json::json!({
            "task": row.task.name(),
            "anymongo": of(&row.anymongo),
            "official": of(&row.official),
            "wasip2": match &row.wasi {
                Some(Ok(counts)) => of(counts),
                Some(Err(error)) => serde_json::json!({ "error": error }),
                None => serde_json::Value::Null,
            },
        })).collect::<Vec<_>>(),
    })
}
