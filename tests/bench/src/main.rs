//! anymongo's benchmarks (issue 10): the driver benchmarking spec's tasks
//! (`specs/benchmarking/benchmarking.md`), each run with anymongo and with the official
//! `mongodb` crate in the same process, against the same server and data, alternating
//! iteration by iteration, so that the ratio means something on a noisy machine.
//!
//! ```text
//! ./run.sh bench [-- OPTIONS]      (or: cargo run --release -- OPTIONS in tests/bench)
//!
//!   --quick               at most 10 iterations or 5 s per task and driver (not the
//!                         spec's 1 to 5 minutes; the output says so)
//!   --server LIST         canned, secantus and/or uri (comma-separated; default
//!                         canned,secantus; uri needs --uri)
//!   --uri URI             a server of your own (loopback, please: it is written to)
//!   --parallel-seconds S  how long each parallel row runs (default 5; 1 with --quick)
//!   --cold-runs N         cold starts per driver (default 11; 3 with --quick; 0: none)
//!   --wasi                also run the server tasks from this program's wasip2 build
//!                         under wasmtime, next to native anymongo
//!   --node                also run them with the npm package and the official
//!                         `mongodb` npm driver 7.x in Node.js (node/bench.mjs)
//!   --counts              instead of timing the tasks, count per operation of each
//!                         server task the instructions (cachegrind), allocations
//!                         and bytes, system calls (strace) and wake-ups, both
//!                         drivers (counts.rs; needs valgrind and strace); with
//!                         --wasi, the wasip2 build under wasmtime too
//!   --awake               keep every CPU out of idle with SCHED_IDLE spinners, so
//!                         that CPU wake-up latency is not measured (see awake.rs)
//!   --only TEXT           only the tasks whose name contains TEXT (any case; the
//!                         parallel rows are "parallel", the cold start "cold start",
//!                         the allocation counts and peak RSS "memory"; the wasip2
//!                         and Node.js columns too)
//!   --data DIR            the folder of the spec's *.tgz data sets
//!   --json PATH           also write the results as JSON
//! ```
//!
//! Servers: `canned` is an in-process server answering from precomputed replies (the
//! drivers' own cost); `secantus` is SecantusDB started by the test harness. Cold
//! start runs against a SecantusDB started with `--auth` (SCRAM-SHA-256).
//!
//! `./run.sh bench` builds everything (the wasip2 build, the npm package, the official
//! Node.js driver into the cache) and runs this with `--wasi --node`.

// The wasip2 build runs the server tasks' iterations only; the rest of the shared
// modules (setup, teardown, the official driver's side) is the native program's.
#![cfg_attr(target_os = "wasi", allow(dead_code))]

mod data;
mod driver;
mod stats;
mod tasks;

#[cfg(not(target_os = "wasi"))]
mod awake;
#[cfg(not(target_os = "wasi"))]
mod cold;
mod counts;
#[cfg(not(target_os = "wasi"))]
mod memory;
#[cfg(not(target_os = "wasi"))]
mod native;
#[cfg(not(target_os = "wasi"))]
mod node_column;
#[cfg(not(target_os = "wasi"))]
mod parallel;
#[cfg(not(target_os = "wasi"))]
mod report;
#[cfg(target_os = "wasi")]
mod wasi_child;
#[cfg(not(target_os = "wasi"))]
mod wasi_column;

/// Counts allocations for the memory rows (memory.rs) and the counts (counts.rs), in
/// the wasip2 build too.
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &anymongo_tests::counts::ALLOCATOR;

#[cfg(not(target_os = "wasi"))]
fn main() -> std::process::ExitCode {
    native::main()
}

#[cfg(target_os = "wasi")]
fn main() -> std::process::ExitCode {
    wasi_child::main()
}
