//! A benchmark of the connection pool (not a test): the throughput and latency of
//! checking an established connection out and back in, with 1, 8 and 64 concurrent
//! tasks.
//!
//! ```text
//! cargo run --release -p anymongo-tests --bin cmap_bench [-- OPTIONS]
//!
//!   --seconds S          how long each row runs (default 2)
//!   --max-pool-size N    the pool's maxPoolSize (default 100; 0: no limit)
//!   --threads N          tokio worker threads (default: the machine's parallelism)
//!   --tasks LIST         the rows' concurrent tasks, comma-separated (default 1,8,64)
//!   --uri URI            also measure a pool of real connections to this server
//! ```
//!
//! It always measures a pool whose connections are fakes, established at once: what is
//! left is the pool's own cost. With `--uri`, it measures a pool of the driver's real
//! connections ([`anymongo::cmap::Connector`]) to the URI's first host, with the URI's
//! pool options except maxPoolSize. Either pool's connections are established before
//! the rows run (as many as the most tasks, within maxPoolSize), so that the rows
//! measure check-out and check-in only; no event handler is attached.
//!
//! Each task loops until the row's time is up: check out, yield to the scheduler once
//! while holding the connection (as a command would while it waits for its reply),
//! check in. The latency of a pair is the time spent in `check_out` (waiting in the
//! queue included) plus the time in `check_in`, not the yield; the throughput is the
//! pairs completed by all the tasks per second of wall-clock time. Latencies go to a
//! histogram whose buckets are about 3 % wide, which is the precision of p50 and p99.
//! The last line gives the cost of reading the clock, four times per pair.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anymongo::cmap::{CheckedOut, ConnectionPool, Connector, Establish, PoolOptions};
use anymongo::{ClientOptions, ServerAddress};
use anymongo_tests::fake::FakeEstablish;
use tokio::sync::Barrier;

/// The rows' concurrent tasks, unless told otherwise.
const TASKS: [usize; 3] = [1, 8, 64];

const USAGE: &str =
    "usage: cmap_bench [--seconds S] [--max-pool-size N] [--threads N] [--tasks LIST] [--uri URI]";

fn main() -> ExitCode {
    let settings = match Settings::from_args(std::env::args().skip(1)) {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("cmap_bench: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = settings.threads {
        builder.worker_threads(threads);
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cmap_bench: cannot start tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cmap_bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The command line.
struct Settings {
    seconds: Duration,
    max_pool_size: u32,
    threads: Option<usize>,
    tasks: Vec<usize>,
    uri: Option<String>,
}

impl Settings {
    /// The settings, or `None` when help was asked for.
    fn from_args(mut args: impl Iterator<Item = String>) -> Result<Option<Settings>, String> {
        let mut settings = Settings {
            seconds: Duration::from_secs(2),
            max_pool_size: 100,
            threads: None,
            tasks: TASKS.to_vec(),
            uri: None,
        };
        while let Some(flag) = args.next() {
            if flag == "-h" || flag == "--help" {
                return Ok(None);
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let invalid = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--seconds" => {
                    let seconds: f64 = value.parse().map_err(|e| invalid(&e))?;
                    settings.seconds = Duration::try_from_secs_f64(seconds)
                        .ok()
                        .filter(|seconds| !seconds.is_zero())
                        .ok_or_else(|| invalid(&"not a positive number of seconds"))?;
                }
                "--max-pool-size" => {
                    settings.max_pool_size = value.parse().map_err(|e| invalid(&e))?;
                }
                "--threads" => {
                    let threads: usize = value.parse().map_err(|e| invalid(&e))?;
                    if threads == 0 {
                        return Err(invalid(&"at least one thread"));
                    }
                    settings.threads = Some(threads);
                }
                "--tasks" => {
                    settings.tasks = value
                        .split(',')
                        .map(|tasks| match tasks.trim().parse() {
                            Ok(0) => Err(invalid(&"at least one task per row")),
                            Ok(tasks) => Ok(tasks),
                            Err(e) => Err(invalid(&e)),
                        })
                        .collect::<Result<_, _>>()?;
                }
                "--uri" => settings.uri = Some(value),
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        Ok(Some(settings))
    }
}

async fn run(settings: &Settings) -> Result<(), String> {
    let runtime = anymongo_native::runtime();
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    println!(
        "check-out + check-in of an established connection: maxPoolSize {}, {:?} per row, \
         {threads} worker threads",
        settings.max_pool_size, settings.seconds
    );

    let options = PoolOptions {
        max_pool_size: settings.max_pool_size,
        ..PoolOptions::default()
    };
    let pool = ConnectionPool::new(
        ServerAddress::tcp("fake", 27017),
        options,
        FakeEstablish,
        runtime.clock.clone(),
        runtime.spawner.clone(),
        None,
    )
    .map_err(|e| e.to_string())?;
    bench("fake connections (the pool's own cost)", pool, settings).await?;

    if let Some(uri) = &settings.uri {
        let client_options = ClientOptions::parse_uri(uri).map_err(|e| e.to_string())?;
        let address = client_options
            .hosts
            .first()
            .cloned()
            .ok_or("the URI names no host")?;
        let options = PoolOptions {
            max_pool_size: settings.max_pool_size,
            ..PoolOptions::from_client_options(&client_options)
        };
        let connector = Connector::new(&client_options, &address, runtime.clone());
        let pool = ConnectionPool::new(
            address.clone(),
            options,
            connector,
            runtime.clock.clone(),
            runtime.spawner.clone(),
            None,
        )
        .map_err(|e| e.to_string())?;
        bench(&format!("real connections to {address}"), pool, settings).await?;
    }

    println!("(reading the clock costs {} ns)", clock_cost_ns());
    Ok(())
}

/// Establishes the connections the rows need, then runs and prints them.
async fn bench<E: Establish>(
    title: &str,
    pool: ConnectionPool<E>,
    settings: &Settings,
) -> Result<(), String> {
    pool.ready();
    let most = settings.tasks.iter().copied().max().unwrap_or(1);
    let prefill = match settings.max_pool_size {
        0 => most,
        max => most.min(max as usize),
    };
    let mut held = Vec::with_capacity(prefill);
    for _ in 0..prefill {
        // None is available, so each check-out establishes a new connection.
        held.push(pool.check_out(None).await.map_err(|e| e.to_string())?);
    }
    for connection in held {
        pool.check_in(connection).map_err(|e| e.to_string())?;
    }

    println!(
        "\n{title}: {} connections established",
        pool.total_connection_count()
    );
    println!(
        "{:>6} {:>12} {:>12} {:>10} {:>10}",
        "tasks", "ops/s", "mean ns/op", "p50 ns", "p99 ns"
    );
    let pool = Arc::new(pool);
    for &tasks in &settings.tasks {
        let (latencies, elapsed) = measure(&pool, tasks, settings.seconds).await?;
        let ops = latencies.count();
        println!(
            "{:>6} {:>12.0} {:>12.0} {:>10} {:>10}",
            tasks,
            ops as f64 / elapsed.as_secs_f64(),
            latencies.mean_ns(),
            latencies.quantile_ns(0.50),
            latencies.quantile_ns(0.99),
        );
    }
    pool.close();
    Ok(())
}

/// One row: `tasks` tasks checking out and in for `duration`. Returns their latencies
/// and the wall-clock time they took.
async fn measure<E: Establish>(
    pool: &Arc<ConnectionPool<E>>,
    tasks: usize,
    duration: Duration,
) -> Result<(Histogram, Duration), String> {
    let start = Arc::new(Barrier::new(tasks + 1));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let pool = pool.clone();
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                let deadline = Instant::now() + duration;
                let mut latencies = Histogram::default();
                loop {
                    let before_out = Instant::now();
                    if before_out >= deadline {
                        return Ok(latencies);
                    }
                    let connection: CheckedOut<E> =
                        pool.check_out(None).await.map_err(|e| e.to_string())?;
                    let out = before_out.elapsed();
                    tokio::task::yield_now().await;
                    let before_in = Instant::now();
                    pool.check_in(connection).map_err(|e| e.to_string())?;
                    latencies.record(out + before_in.elapsed());
                }
            })
        })
        .collect();
    start.wait().await;
    let started = Instant::now();
    let mut latencies = Histogram::default();
    for handle in handles {
        let task: Result<Histogram, String> = handle.await.map_err(|e| e.to_string())?;
        latencies.merge(&task?);
    }
    Ok((latencies, started.elapsed()))
}

/// What one `Instant::now()` costs, in nanoseconds (the best of a few runs).
fn clock_cost_ns() -> u128 {
    const CALLS: u32 = 100_000;
    (0..5)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(Instant::now());
            }
            started.elapsed().as_nanos() / u128::from(CALLS)
        })
        .min()
        .unwrap_or(0)
}

/// Bits of the sub-buckets: each power of two is cut into 2^SUB_BITS buckets of equal
/// width, so a bucket is at most 1/32 (about 3 %) of its values wide.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets enough for any u64.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// Latencies in nanoseconds, counted in log-linear buckets.
struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum_ns: 0,
        }
    }
}

impl Histogram {
    fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.counts[bucket(ns)] += 1;
        self.total += 1;
        self.sum_ns += u128::from(ns);
    }

    fn merge(&mut self, other: &Histogram) {
        for (count, other) in self.counts.iter_mut().zip(&other.counts) {
            *count += other;
        }
        self.total += other.total;
        self.sum_ns += other.sum_ns;
    }

    fn count(&self) -> u64 {
        self.total
    }

    fn mean_ns(&self) -> f64 {
        match self.total {
            0 => 0.0,
            total => self.sum_ns as f64 / total as f64,
        }
    }

    /// The `q` quantile (0 < q ≤ 1): the middle of the bucket holding it.
    fn quantile_ns(&self, q: f64) -> u64 {
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let low = bucket_start(index);
                let high = bucket_start(index + 1).max(low + 1);
                return low + (high - low - 1) / 2;
            }
        }
        0
    }
}

/// The bucket of a value: values below [`SUB`] have one each; above, the power of two
/// the value is in, then which of its [`SUB`] equal parts.
fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let shift = (63 - ns.leading_zeros()) - SUB_BITS;
    let part = (ns >> shift) - SUB;
    ((u64::from(shift) + 1) * SUB + part) as usize
}

/// The smallest value of a bucket.
fn bucket_start(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB {
        return index;
    }
    let shift = index / SUB - 1;
    let part = index % SUB;
    1u64.checked_shl(shift as u32)
        .and_then(|scale| (SUB + part).checked_mul(scale))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_within_three_percent() {
        for ns in (0..5_000).chain([1 << 20, 123_456_789, u64::MAX / 3, u64::MAX]) {
            let index = bucket(ns);
            assert!(index < BUCKETS, "{ns}");
            let (low, high) = (bucket_start(index), bucket_start(index + 1));
            assert!(low <= ns, "{ns} below its bucket [{low}, {high})");
            assert!(ns < high || high == u64::MAX, "{ns} above [{low}, {high})");
            assert!(high - low <= low / 32 + 1, "[{low}, {high}) too wide");
        }
    }

    #[test]
    fn quantiles_and_mean() {
        let mut histogram = Histogram::default();
        for ns in 1..=1000 {
            histogram.record(Duration::from_nanos(ns));
        }
        assert_eq!(histogram.count(), 1000);
        assert_eq!(histogram.mean_ns(), 500.5);
        let p50 = histogram.quantile_ns(0.5) as f64;
        let p99 = histogram.quantile_ns(0.99) as f64;
        assert!((p50 - 500.0).abs() <= 500.0 * 0.04, "{p50}");
        assert!((p99 - 990.0).abs() <= 990.0 * 0.04, "{p99}");
    }
}
