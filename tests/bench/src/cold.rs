//! Cold start: the time from starting a process to its first find result, connecting,
//! the handshake and authentication (SCRAM, when the URI has credentials) included.
//!
//! The benchmark runs itself again as a child (`--cold-start-child DRIVER URI`), which
//! builds a tokio runtime and a client, finds the TWEET with `_id` 1 and prints one
//! line; the parent times from spawning the child to reading that line. The drivers
//! alternate; the median of the runs is reported.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::driver::{Anymongo, Driver, Official};
use crate::stats::{percentile, Timings};

/// The line the child prints after its first find.
const FOUND: &str = "found";
/// The most a child may take (its client's own timeouts end it sooner).
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// The child's side: one find by a fresh client, then the line. Exits non-zero on
/// failure.
pub fn child(driver: &str, uri: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let find = async {
            match driver {
                Anymongo::NAME => first_find::<Anymongo>(uri).await,
                Official::NAME => first_find::<Official>(uri).await,
                other => Err(format!("unknown driver {other}")),
            }
        };
        tokio::time::timeout(CHILD_TIMEOUT, find)
            .await
            .map_err(|_| format!("no find result within {CHILD_TIMEOUT:?}"))?
    })?;
    println!("{FOUND}");
    Ok(())
}

/// The child of the cold request at a distance (`--cold-request-child DRIVER URI`, run
/// by `anymongo-tests`' `cold_request` binary behind its latency proxy): a fresh
/// client finds the TWEET with `_id` 1 and prints `cold MS` (from creating the client
/// to the result); after a line on stdin, finds it again and prints `warm MS`
/// (`anymongo_tests::cold_request::cold_then_warm`).
pub fn request_child(driver: &str, uri: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let requests = async {
            match driver {
                Anymongo::NAME => cold_then_warm::<Anymongo>(uri).await,
                Official::NAME => cold_then_warm::<Official>(uri).await,
                other => Err(format!("unknown driver {other}")),
            }
        };
        tokio::time::timeout(CHILD_TIMEOUT, requests)
            .await
            .map_err(|_| format!("no warm result within {CHILD_TIMEOUT:?}"))?
    })
}

async fn cold_then_warm<D: Driver>(uri: &str) -> Result<(), String> {
    let cold = async {
        let driver = D::connect(uri).await?;
        driver.find_one_by_id(1).await?;
        Ok(driver)
    };
    anymongo_tests::cold_request::cold_then_warm(cold, |driver: D| async move {
        driver.find_one_by_id(1).await
    })
    .await
}

async fn first_find<D: Driver>(uri: &str) -> Result<(), String> {
    let driver = D::connect(uri).await?;
    driver.find_one_by_id(1).await
}

/// Median cold-start times in milliseconds of (anymongo, official) over `runs` runs each.
pub fn measure(uri: &str, runs: usize) -> Result<(f64, f64), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let (mut a, mut o) = (Timings::default(), Timings::default());
    for round in 0..runs {
        let order = match round % 2 {
            0 => [Anymongo::NAME, Official::NAME],
            _ => [Official::NAME, Anymongo::NAME],
        };
        for driver in order {
            let took = once(&exe, driver, uri)?;
            match driver {
                Anymongo::NAME => a.push(took),
                _ => o.push(took),
            }
        }
    }
    let median = |t: &Timings| percentile(&t.sorted(), 50).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    Ok((median(&a), median(&o)))
}

fn once(exe: &std::path::Path, driver: &str, uri: &str) -> Result<Duration, String> {
    let start = Instant::now();
    let mut child = Command::new(exe)
        .args(["--cold-start-child", driver, uri])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
    }
    let took = start.elapsed();
    let status = child.wait().map_err(|e| e.to_string())?;
    match line.trim() == FOUND && status.success() {
        true => Ok(took),
        false => Err(format!("cold start of {driver} failed ({status})")),
    }
}
