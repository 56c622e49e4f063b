//! Memory (issue 26): the allocations of a find by `_id` and of each document of a find
//! many, and the peak resident memory of the process after its finds, per driver; and
//! the context switches of each single operation (a run command, a find by `_id`, a
//! small insertOne: the wake-ups that decide the single operation rows on a machine
//! whose idle CPUs halt: docs/BENCHMARKS.md).
//!
//! Each driver is measured alone in a child process (`--memory-child DRIVER URI`),
//! against the parent's canned-reply server, so that neither the other driver, nor the
//! server, nor the parent's earlier tasks are in its counts and its peak. Allocations
//! (and reallocations) are counted by the program's global allocator on every thread
//! of the child, the driver's background tasks included, after a warm-up. The peak is
//! the child's `VmHWM` (`/proc/self/status`) after its finds.

use std::process::Command;
use std::time::Duration;

use anymongo_tests::counts::ALLOCATOR;
use stats_alloc::Region;

use crate::driver::{Anymongo, Driver, Official};

/// Finds by `_id` counted (and run commands, and small insertOnes, for their context
/// switches).
const FIND_ONES: u64 = 2_000;
/// The document of the counted insertOnes: small, like the spec's small document.
const SMALL_DOCUMENT: &str =
    r#"{"name": "small", "n": 1, "tags": ["a", "b"], "nested": {"x": 1.5}}"#;
/// Find-manys counted (the canned server answers each with 10,000 documents).
const FIND_MANYS: u64 = 5;
/// The most a child may take.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// The allocations `work` makes, from every thread of the process.
async fn allocations_of<F: std::future::Future<Output = Result<(), String>>>(
    work: F,
) -> Result<u64, String> {
    let region = Region::new(&ALLOCATOR);
    work.await?;
    let change = region.change();
    Ok((change.allocations + change.reallocations) as u64)
}

/// One driver's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub find_one_allocations: f64,
    /// Context switches of all the child's threads (voluntary and not) per find by
    /// `_id`: each is a thread that slept and was woken, or was preempted.
    pub find_one_context_switches: f64,
    /// The same per run command (`hello`) and per small insertOne.
    pub run_command_context_switches: f64,
    pub insert_one_context_switches: f64,
    pub find_many_allocations_per_document: f64,
    pub peak_rss_mb: f64,
}

/// The child's side: measures `driver` against the canned-reply server at `uri` and
/// prints its [`Memory`] as one JSON line.
pub fn child(driver: &str, uri: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (driver, uri) = (driver.to_owned(), uri.to_owned());
    // On a runtime worker, as the benchmark's tasks run (native.rs).
    let on_worker = runtime.spawn(async move {
        let measure = async {
            match driver.as_str() {
                Anymongo::NAME => measure::<Anymongo>(&uri).await,
                Official::NAME => measure::<Official>(&uri).await,
                other => Err(format!("unknown driver {other}")),
            }
        };
        tokio::time::timeout(CHILD_TIMEOUT, measure)
            .await
            .map_err(|_| format!("no measurement within {CHILD_TIMEOUT:?}"))?
    });
    let memory = runtime
        .block_on(on_worker)
        .unwrap_or_else(|e| Err(e.to_string()))?;
    let line = serde_json::json!({
        "find_one_allocations": memory.find_one_allocations,
        "find_one_context_switches": memory.find_one_context_switches,
        "run_command_context_switches": memory.run_command_context_switches,
        "insert_one_context_switches": memory.insert_one_context_switches,
        "find_many_allocations_per_document": memory.find_many_allocations_per_document,
        "peak_rss_mb": memory.peak_rss_mb,
    });
    println!("{line}");
    Ok(())
}

async fn measure<D: Driver>(uri: &str) -> Result<Memory, String> {
    let driver = D::connect(uri).await?;
    // Connected, pooled and warmed up before anything is counted.
    driver.find_one_by_id(1).await?;
    driver.find_all().await?;
    let switches_before = context_switches()?;
    let find_ones = allocations_of(async {
        for _ in 0..FIND_ONES {
            driver.find_one_by_id(1).await?;
        }
        Ok(())
    })
    .await?;
    let switches = context_switches()? - switches_before;
    let per_operation = |switches: i64| switches as f64 / FIND_ONES as f64;
    let before = context_switches()?;
    for _ in 0..FIND_ONES {
        driver.hello().await?;
    }
    let run_command_context_switches = per_operation(context_switches()? - before);
    let small = D::parse(SMALL_DOCUMENT)?;
    driver.insert_one(&small).await?;
    let before = context_switches()?;
    for _ in 0..FIND_ONES {
        driver.insert_one(&small).await?;
    }
    let insert_one_context_switches = per_operation(context_switches()? - before);
    let mut documents = 0;
    let find_manys = allocations_of(async {
        for _ in 0..FIND_MANYS {
            documents += driver.find_all().await?;
        }
        Ok(())
    })
    .await?;
    let peak_rss_mb = peak_rss_kb()? as f64 / 1024.0;
    driver.close().await;
    Ok(Memory {
        find_one_allocations: find_ones as f64 / FIND_ONES as f64,
        find_one_context_switches: per_operation(switches),
        run_command_context_switches,
        insert_one_context_switches,
        find_many_allocations_per_document: find_manys as f64 / documents.max(1) as f64,
        peak_rss_mb,
    })
}

/// The context switches of every thread of the process so far, from
/// `/proc/self/task/*/status` (the threads of a tokio runtime live as long as it).
fn context_switches() -> Result<i64, String> {
    let mut total = 0;
    let tasks = std::fs::read_dir("/proc/self/task").map_err(|e| e.to_string())?;
    for task in tasks {
        let path = task.map_err(|e| e.to_string())?.path().join("status");
        // A thread may end between listing and reading.
        let Ok(status) = std::fs::read_to_string(path) else {
            continue;
        };
        total += status
            .lines()
            .filter_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.ends_with("ctxt_switches")
                    .then(|| value.trim().parse::<i64>().ok())?
            })
            .sum::<i64>();
    }
    Ok(total)
}

/// The process's peak resident set (`VmHWM`), in kB.
fn peak_rss_kb() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmHWM in /proc/self/status".into())
}

/// Both drivers' measurements (anymongo, official), each from a child process, against
/// the canned-reply server at `uri`.
pub fn measure_both(uri: &str) -> Result<(Memory, Memory), String> {
    Ok((
        run_child(Anymongo::NAME, uri)?,
        run_child(Official::NAME, uri)?,
    ))
}

fn run_child(driver: &str, uri: &str) -> Result<Memory, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = Command::new(&exe)
        .args(["--memory-child", driver, uri])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !output.status.success() {
        return Err(format!(
            "the memory child of {driver} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let line: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("the memory child of {driver} printed no JSON: {e}"))?;
    let number = |name: &str| {
        line[name]
            .as_f64()
            .ok_or_else(|| format!("the memory child of {driver} printed no {name}"))
    };
    Ok(Memory {
        find_one_allocations: number("find_one_allocations")?,
        find_one_context_switches: number("find_one_context_switches")?,
        run_command_context_switches: number("run_command_context_switches")?,
        insert_one_context_switches: number("insert_one_context_switches")?,
        find_many_allocations_per_document: number("find_many_allocations_per_document")?,
        peak_rss_mb: number("peak_rss_mb")?,
    })
}

/// The table of both drivers' measurements.
pub fn markdown(anymongo: &Memory, official: &Memory) -> String {
    let mut out = String::from(
        "Memory and wake-ups, each driver alone in a child process, against the canned-reply server \
         (allocations and reallocations counted by the program's allocator, on every thread \
         of the child; peak RSS of the child):\n\n\
         | driver | allocations per find one | context switches per run command / find one / \
         insertOne | allocations per find-many document | peak RSS MB |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    for (name, memory) in [(Anymongo::NAME, anymongo), (Official::NAME, official)] {
        out.push_str(&format!(
            "| {name} | {:.1} | {:.2} / {:.2} / {:.2} | {:.1} | {:.1} |\n",
            memory.find_one_allocations,
            memory.run_command_context_switches,
            memory.find_one_context_switches,
            memory.insert_one_context_switches,
            memory.find_many_allocations_per_document,
            memory.peak_rss_mb
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_allocation_is_counted() {
        let counted = allocations_of(async {
            std::hint::black_box(vec![1u8; 100]);
            Ok(())
        })
        .await
        .unwrap();
        assert!(counted >= 1, "{counted}");
    }

    #[test]
    fn the_peak_is_read_from_proc() {
        let before = peak_rss_kb().unwrap();
        assert!(before > 0);
        // Touch 64 MB: the peak grows past it.
        let touched = std::hint::black_box(vec![1u8; 64 << 20]);
        assert!(
            peak_rss_kb().unwrap() >= before.max(64 << 10),
            "{}",
            touched.len()
        );
    }

    #[test]
    fn context_switches_are_counted() {
        let before = context_switches().unwrap();
        // A thread that sleeps is switched out at least once.
        std::thread::spawn(|| std::thread::sleep(Duration::from_millis(5)))
            .join()
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(context_switches().unwrap() > before);
    }

    #[test]
    fn the_table_has_a_row_per_driver() {
        let memory = Memory {
            find_one_allocations: 224.0,
            find_one_context_switches: 2.0,
            run_command_context_switches: 1.0,
            insert_one_context_switches: 3.25,
            find_many_allocations_per_document: 162.5,
            peak_rss_mb: 38.6,
        };
        let table = markdown(&memory, &memory);
        assert!(
            table.contains("| anymongo | 224.0 | 1.00 / 2.00 / 3.25 | 162.5 | 38.6 |"),
            "{table}"
        );
        assert!(
            table.contains("| official | 224.0 | 1.00 / 2.00 / 3.25 | 162.5 | 38.6 |"),
            "{table}"
        );
    }
}
