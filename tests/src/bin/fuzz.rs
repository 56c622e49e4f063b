//! `fuzz [--seconds S] [--target NAME] [--seed N] [--slow-ms MS] [--input HEX]` runs the
//! mutation fuzzer of [`anymongo_tests::fuzz`] on each target (or the one named) for
//! `S` seconds (default 2), and prints per target the inputs run and what was found.
//!
//! A finding is a panic or an input that takes longer than `--slow-ms` (default 1000).
//! Each is printed with the target, the seed, the input's index and the input in hex;
//! the exit status is then 1. (Allocations are not watched: that needs a counting
//! global allocator, which is `unsafe` code, forbidden in this workspace; an
//! allocation the system refuses still aborts the run, with Rust's "memory allocation
//! of N bytes failed".) The
//! seed (printed first) defaults to the clock, so each run explores other inputs;
//! `--seed` replays a run, and `--input HEX --target NAME` runs one input with the
//! ordinary panic message and backtrace.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo_tests::fuzz::{self, Current, Target, TARGETS};

const USAGE: &str = "usage: fuzz [--seconds S] [--target NAME] [--seed N] [--slow-ms MS] \
                     [--input HEX]\ntargets: uri, wire, bson, scram, srv, socks5, replies";

/// The command line.
struct Args {
    seconds: f64,
    target: Option<String>,
    seed: Option<u64>,
    slow: Duration,
    input: Option<Vec<u8>>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        seconds: 2.0,
        target: None,
        seed: None,
        slow: Duration::from_secs(1),
        input: None,
    };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let bad = |what: &str| format!("{flag}: not {what}");
        match flag.as_str() {
            "--seconds" => {
                parsed.seconds = value()?
                    .parse()
                    .ok()
                    .filter(|seconds: &f64| seconds.is_finite() && *seconds >= 0.0)
                    .ok_or_else(|| bad("a number of seconds"))?
            }
            "--target" => parsed.target = Some(value()?),
            "--seed" => parsed.seed = Some(value()?.parse().map_err(|_| bad("an integer"))?),
            "--slow-ms" => {
                let millis = value()?.parse().map_err(|_| bad("an integer"))?;
                parsed.slow = Duration::from_millis(millis);
            }
            "--input" => parsed.input = Some(fuzz::unhex(&value()?).ok_or_else(|| bad("hex"))?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("{why}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let targets: Vec<&Target> = TARGETS
        .iter()
        .filter(|target| {
            args.target
                .as_deref()
                .is_none_or(|name| name == target.name)
        })
        .collect();
    if targets.is_empty() {
        eprintln!("no target named {:?}\n{USAGE}", args.target);
        std::process::exit(2);
    }
    if let Some(input) = &args.input {
        // A replay: the ordinary panic message and backtrace, no catching.
        for target in &targets {
            (target.run)(input);
            println!("{}: the input ran without a panic", target.name);
        }
        return;
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64)
    });
    println!(
        "fuzz: seed {seed}, {} s per target (replay: --seed {seed})",
        args.seconds
    );
    let current = Arc::new(Mutex::new(Current::default()));
    watchdog(current.clone(), seed, args.slow);
    fuzz::install_panic_hook();
    let mut found = 0;
    for target in targets {
        let report = fuzz::run_target(
            target,
            seed,
            Duration::from_secs_f64(args.seconds),
            &current,
        );
        println!(
            "{:>7}: {} inputs, {} panics",
            target.name,
            report.inputs,
            report.failures.len(),
        );
        for (index, input, panic) in &report.failures {
            found += 1;
            println!(
                "  FINDING in {} (seed {seed}, input #{index}): panic: {panic}\n  input: {}\n  \
                 replay: cargo run -p anymongo-tests --bin fuzz -- --target {} --input {}",
                target.name,
                fuzz::hex(input),
                target.name,
                fuzz::hex(input),
            );
        }
    }
    if found > 0 {
        std::process::exit(1);
    }
}

/// Watches the input being run: one that takes longer than `slow` is a finding; it is
/// printed and the process exits (the input cannot be interrupted).
fn watchdog(current: Arc<Mutex<Current>>, seed: u64, slow: Duration) {
    std::thread::spawn(move || loop {
        // A check ten times per `slow`: a slow input is caught within 1.1 × `slow`.
        std::thread::sleep(slow / 10);
        let current = current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((target, index, input, started)) = &current.input {
            if started.elapsed() > slow {
                println!(
                    "  FINDING in {target} (seed {seed}, input #{index}): still running after \
                     {slow:?}\n  input: {}\n  replay: cargo run -p anymongo-tests --bin fuzz -- \
                     --target {target} --input {}",
                    fuzz::hex(input),
                    fuzz::hex(input),
                );
                std::process::exit(1);
            }
        }
    });
}
