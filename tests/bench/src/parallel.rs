//! The parallel task of issue 10 (the spec's own parallel tasks are file imports and
//! exports): N concurrent tokio tasks sharing one client, each finding TWEET documents
//! by `_id` in a loop, for a fixed time. Reported: operations per second (and MB/s at
//! the TWEET's 1,622 bytes each) over the wall-clock time, and the p50 and p99 latency
//! of one find, and how many connections the client's pool held by the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::driver::Driver;
use crate::stats::percentile;

/// The TWEET's size for the score, as in the find-one task.
const TWEET_BYTES: f64 = 1_622.0;
/// The most finds one task does in a row, whatever the time left.
const MAX_OPS_PER_TASK: usize = 1_000_000;
/// The most one find may take.
const OP_TIMEOUT: Duration = Duration::from_secs(60);
/// `_id`s cycled through (the find-one data).
const IDS: usize = 10_000;

/// One driver's row of the parallel table.
#[derive(Clone, Debug)]
pub struct ParallelScore {
    /// Finds completed by all tasks.
    pub operations: usize,
    /// Finds per second of wall-clock time.
    pub ops_per_s: f64,
    /// MB/s (finds per second times the TWEET's size).
    pub mb_per_s: f64,
    /// The median latency of one find, in milliseconds.
    pub p50_ms: f64,
    /// The 99th percentile latency of one find, in milliseconds.
    pub p99_ms: f64,
    /// The connections the client's pool held at the end of the row.
    pub connections: usize,
}

/// Runs `tasks` concurrent finders on `driver` for `duration` (bounded also by
/// [`MAX_OPS_PER_TASK`] each).
pub async fn run<D: Driver>(
    driver: &Arc<D>,
    tasks: usize,
    duration: Duration,
) -> Result<ParallelScore, String> {
    let start = Instant::now();
    let deadline = start + duration;
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let driver = driver.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut id = task * IDS / tasks.max(1);
                while latencies.len() < MAX_OPS_PER_TASK && Instant::now() < deadline {
                    let began = Instant::now();
                    let find = driver.find_one_by_id((id % IDS) as i32 + 1);
                    tokio::time::timeout(OP_TIMEOUT, find)
                        .await
                        .map_err(|_| format!("a find took over {OP_TIMEOUT:?}"))??;
                    latencies.push(began.elapsed());
                    id += 1;
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for handle in handles {
        latencies.extend(handle.await.map_err(|e| e.to_string())??);
    }
    let wall = start.elapsed().as_secs_f64();
    latencies.sort();
    let ms = |p| percentile(&latencies, p).map_or(0.0, |t| t.as_secs_f64() * 1e3);
    let ops_per_s = latencies.len() as f64 / wall;
    Ok(ParallelScore {
        operations: latencies.len(),
        ops_per_s,
        mb_per_s: ops_per_s * TWEET_BYTES / 1e6,
        p50_ms: ms(50),
        p99_ms: ms(99),
        connections: driver.open_connections(),
    })
}
