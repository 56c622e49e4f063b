//! Runs the specification tests and prints one line per suite and a total:
//!
//! ```text
//! spec [CORPUS_DIR] [--suite NAME]... [--verbose]
//! ```
//!
//! CORPUS_DIR is laid out like pymongo's `test/` folder; it defaults to
//! `$ANYMONGO_SPEC_DIR`, else the copy cached by `tests/setup.sh corpus`.
//! Without `--suite`, the corpus folders left out are named too, each with its reason
//! (`spec client-side-encryption: not run: ...`).
//! Exits with 1 if a test failed, 2 if the corpus or a suite folder is missing.
//! With `--verbose`, every failure and every skip is listed with its reason, not only
//! the first failures.
//!
//! On Linux the runner asks for the real-time round-robin class at its lowest
//! priority (with `chrt`), or failing that for nice -10 (with `renice`), before it
//! starts any thread (the threads inherit it), as the test server does (see
//! `anymongo_tests::server`, which says why a nice value alone is not enough): timing
//! tests give the driver a few tens of milliseconds between a reply and its deadline,
//! and on a loaded machine (a build on both cores) a runner at the default priority
//! could wait its turn for longer. Without the right to raise it (root or
//! `CAP_SYS_NICE`) it runs as it is.

use std::path::PathBuf;
use std::process::ExitCode;

use anymongo_tests::spec::{self, Suite, NOT_RUN, SUITES};

/// How many failures are shown under a suite's line.
const SHOWN_FAILURES: usize = 5;

fn main() -> ExitCode {
    raise_priority();
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("spec: {message}");
            ExitCode::from(2)
        }
    }
}

/// The real-time round-robin class, else nice -10, for this thread and those it
/// starts, if allowed (see the module docs): `chrt` and `renice` on our process id
/// change the main thread, which has started no other yet. (The crate has no unsafe
/// code, so no direct sched_setscheduler or setpriority.)
#[cfg(target_os = "linux")]
fn raise_priority() {
    use std::process::{Command, Stdio};
    let pid = std::process::id().to_string();
    // A refusal, or no such command, leaves the scheduling as it is; the nice value
    // counts again if the real-time class was refused.
    for (program, args) in [("chrt", ["-r", "-p", "1"]), ("renice", ["-n", "-10", "-p"])] {
        let _ = Command::new(program)
            .args(args)
            .arg(&pid)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_priority() {}

fn run() -> Result<ExitCode, String> {
    let mut corpus = None;
    let mut suites: Vec<&Suite> = Vec::new();
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--suite" => {
                let name = args.next().ok_or("--suite needs a suite name")?;
                let suite = SUITES.iter().find(|suite| suite.name == name);
                suites.push(suite.ok_or_else(|| {
                    let names: Vec<_> = SUITES.iter().map(|suite| suite.name).collect();
                    format!("no suite {name:?}; the suites are: {}", names.join(", "))
                })?);
            }
            "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!("usage: spec [CORPUS_DIR] [--suite NAME]... [--verbose]");
                return Ok(ExitCode::SUCCESS);
            }
            _ if corpus.is_none() && !arg.starts_with('-') => corpus = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?} (see --help)")),
        }
    }
    // A run of every suite also names the corpus folders it leaves out, and why.
    let every_suite = suites.is_empty();
    if every_suite {
        suites = SUITES.iter().collect();
    }
    let corpus = match corpus {
        Some(dir) => dir,
        None => spec::corpus_dir()?,
    };
    if !corpus.is_dir() {
        return Err(format!(
            "the corpus folder {} does not exist",
            corpus.display()
        ));
    }
    let missing: Vec<_> = suites
        .iter()
        .filter(|suite| !suite.dir(&corpus).is_dir())
        .map(|suite| suite.name)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the corpus {} has no folder for the suites: {}",
            corpus.display(),
            missing.join(", ")
        ));
    }

    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for suite in suites {
        let outcome = suite.run(&corpus)?;
        println!(
            "spec {}: {} passed, {} failed, {} skipped",
            suite.name,
            outcome.passed,
            outcome.failed.len(),
            outcome.skipped.len()
        );
        let shown = if verbose {
            outcome.failed.len()
        } else {
            SHOWN_FAILURES
        };
        for (file, why) in outcome.failed.iter().take(shown) {
            println!("    {file}: {why}");
        }
        if verbose {
            for (file, why) in &outcome.skipped {
                println!("    skipped {file}: {why}");
            }
        } else if outcome.failed.len() > SHOWN_FAILURES {
            println!("    ... and {} more", outcome.failed.len() - SHOWN_FAILURES);
        }
        passed += outcome.passed;
        failed += outcome.failed.len();
        skipped += outcome.skipped.len();
    }
    if every_suite {
        for (folder, why) in NOT_RUN {
            println!("spec {folder}: not run: {why}");
        }
    }
    println!("spec total: {passed} passed, {failed} failed, {skipped} skipped");
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
