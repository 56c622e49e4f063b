//! Counts per operation that do not move with the machine's load (issue 46): the
//! instructions executed, heap allocations and bytes, system calls and voluntary
//! context switches (wake-ups) of one operation of a driver.
//!
//! A measured program is a child process that runs `n` operations after a warm-up and
//! prints the allocations and wake-ups of those `n` ([`child_side`]); the parent runs it
//! ([`measure`]):
//! - under valgrind's cachegrind with 0 and with `n` operations, for the instructions:
//!   the difference of the two totals is the instructions of the `n` operations alone
//!   (start-up, connection and warm-up are in both); cachegrind counts every thread
//!   and does not depend on the machine's load; the run of `n` also gives the
//!   allocations and bytes, counted in the child (its global allocator must be
//!   [`ALLOCATOR`]) on every thread, the driver's background tasks included;
//! - natively with `n` operations, for the wake-ups;
//! - under `strace -f -c` with 0 and with `n` operations, for the system calls (the
//!   same difference); optional, since strace slows every call down and a count of
//!   `epoll_wait`s and `futex`es depends on timing.

use std::alloc::System;
use std::future::Future;
#[cfg(not(target_os = "wasi"))]
use std::path::Path;
#[cfg(not(target_os = "wasi"))]
use std::process::{Command, Stdio};

use stats_alloc::{Region, StatsAlloc};

/// The allocator a measured child must have as its global allocator: the system's,
/// counting every allocation (two relaxed atomic additions each).
pub static ALLOCATOR: StatsAlloc<System> = StatsAlloc::system();

/// Warm-up operations before anything is counted: pooled connection, grown buffers.
const WARM_UP: u64 = 2;

/// The counts of one operation (averages over the `n` measured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Instructions executed, all threads (cachegrind's `Ir`).
    pub instructions: f64,
    /// Heap allocations and reallocations.
    pub allocations: f64,
    /// Bytes allocated (reallocations' growth included).
    pub bytes: f64,
    /// System calls, all threads (`None` when not measured).
    pub syscalls: Option<f64>,
    /// Voluntary context switches of all threads: a thread that went to sleep waiting
    /// (`None` where the child cannot read them: under WASI).
    pub wake_ups: Option<f64>,
}

/// The voluntary context switches of every thread of this process so far, from
/// `/proc/self/task/*/status` (an error under WASI: no `/proc`).
pub fn voluntary_context_switches() -> Result<u64, String> {
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
            .filter_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
            .filter_map(|value| value.trim().parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(total)
}

/// The child's side: runs two warm-up operations, then `n` counted ones, and returns
/// the line to print (JSON: allocations, bytes, wake-ups of the `n`; wake-ups null
/// where they cannot be read).
pub async fn child_side<F, Fut>(n: u64, mut operation: F) -> Result<String, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    for _ in 0..WARM_UP {
        operation().await?;
    }
    let switches = voluntary_context_switches().ok();
    let region = Region::new(&ALLOCATOR);
    for _ in 0..n {
        operation().await?;
    }
    let change = region.change();
    let wake_ups = switches.and_then(|before| {
        let after = voluntary_context_switches().ok()?;
        Some(after.saturating_sub(before))
    });
    let grown = change.bytes_reallocated.max(0) as u64;
    Ok(serde_json::json!({
        "allocations": change.allocations + change.reallocations,
        "bytes": change.bytes_allocated as u64 + grown,
        "wake_ups": wake_ups,
    })
    .to_string())
}

/// Runs `command` to its end; its stdout, or why it failed.
#[cfg(not(target_os = "wasi"))]
fn output_of(mut command: Command) -> Result<Vec<u8>, String> {
    let shown = format!("{command:?}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    match output.status.success() {
        true => Ok(output.stdout),
        false => Err(format!(
            "{shown} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// The instructions `program args` executes, all threads, under cachegrind (no cache
/// or branch simulation: only the instruction count is read), and its stdout.
#[cfg(not(target_os = "wasi"))]
pub fn instructions(program: &Path, args: &[String]) -> Result<(u64, Vec<u8>), String> {
    let out = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut command = Command::new("valgrind");
    command
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--branch-sim=no",
            "-q",
            // A program may be a wrapper that execs the real one (the cache's `wasmtime`
            // is a Python script): the file is written by the image that exits.
            "--trace-children=yes",
        ])
        .arg(format!("--cachegrind-out-file={}", out.path().display()))
        .arg(program)
        .args(args);
    let stdout = output_of(command)?;
    let text = std::fs::read_to_string(out.path()).map_err(|e| e.to_string())?;
    let count = summary_instructions(&text)
        .ok_or_else(|| "no summary line in cachegrind's output".to_string())?;
    Ok((count, stdout))
}

/// The total of a cachegrind output file's `summary:` line (its first event, `Ir`).
#[cfg(not(target_os = "wasi"))]
fn summary_instructions(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("summary:"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// The system calls `program args` makes, all threads (`strace -f -c`).
#[cfg(not(target_os = "wasi"))]
pub fn syscalls(program: &Path, args: &[String]) -> Result<u64, String> {
    let out = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut command = Command::new("strace");
    command
        .args(["-f", "-c", "-o"])
        .arg(out.path())
        .arg(program)
        .args(args);
    output_of(command)?;
    let text = std::fs::read_to_string(out.path()).map_err(|e| e.to_string())?;
    strace_total(&text).ok_or_else(|| "no total line in strace's summary".into())
}

/// The calls of the `total` line of an `strace -c` summary (`% time, seconds,
/// usecs/call, calls, [errors,] total`).
#[cfg(not(target_os = "wasi"))]
fn strace_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_end().ends_with("total"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// What [`measure`] measures besides instructions, allocations and wake-ups.
#[cfg(not(target_os = "wasi"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscalls {
    /// Also the system calls, under strace.
    Counted,
    /// No system calls.
    Skipped,
}

/// The counts per operation of the child `program`, run with `args(n)` for `n`
/// operations (`args(0)`: the baseline); each of the `n` operations is `per` of the
/// counted units (e.g. 10,000 documents of a find many). The allocations are those of
/// the run under cachegrind: it runs the child's threads one at a time, so slowly that
/// each reply has arrived before it is read, which makes them exact (natively they
/// varied by 3 % from run to run: an operation that waits for its reply allocates
/// more); the wake-ups are the native run's.
#[cfg(not(target_os = "wasi"))]
pub fn measure(
    program: &Path,
    args: impl Fn(u64) -> Vec<String>,
    n: u64,
    per: u64,
    syscalls_too: Syscalls,
) -> Result<Counts, String> {
    let units = (n * per) as f64;
    let json = |stdout: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(stdout)
            .map_err(|e| format!("{} printed no JSON: {e}", program.display()))
    };
    let native = json(&output_of({
        let mut command = Command::new(program);
        command.args(args(n));
        command
    })?)?;
    let (base, _) = instructions(program, &args(0))?;
    let (with, line) = instructions(program, &args(n))?;
    let line = json(&line)?;
    let number = |name: &str| {
        line[name]
            .as_u64()
            .ok_or_else(|| format!("{} printed no {name}", program.display()))
    };
    let syscalls = match syscalls_too {
        Syscalls::Counted => {
            let base = syscalls(program, &args(0))?;
            Some((syscalls(program, &args(n))? as f64 - base as f64) / units)
        }
        Syscalls::Skipped => None,
    };
    Ok(Counts {
        instructions: (with as f64 - base as f64) / units,
        allocations: number("allocations")? as f64 / units,
        bytes: number("bytes")? as f64 / units,
        syscalls,
        wake_ups: native["wake_ups"].as_u64().map(|n| n as f64 / units),
    })
}

#[cfg(all(test, not(target_os = "wasi")))]
mod tests {
    use super::*;

    #[test]
    fn reads_cachegrind_summary() {
        let text = "desc: I1 cache:\ncmd: x\nevents: Ir\nfl=a\n1 2\nsummary: 123456\n";
        assert_eq!(summary_instructions(text), Some(123_456));
    }

    #[test]
    fn reads_strace_total() {
        let with_errors = "100.00    0.001234           5       234        12 total\n";
        assert_eq!(strace_total(with_errors), Some(234));
        let text = "% time     seconds  usecs/call     calls    errors syscall\n\
                    ------ ----------- ----------- --------- --------- ----------------\n\
                     60.00    0.000600          10        60           read\n\
                    ------ ----------- ----------- --------- --------- ----------------\n\
                    100.00    0.001000           8       120           total\n";
        assert_eq!(strace_total(text), Some(120));
    }
}
