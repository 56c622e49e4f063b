//! A small mutation fuzzer of the parsers that face the network: the connection
//! string, wire replies (OP_MSG, OP_REPLY, OP_COMPRESSED), the SCRAM server messages,
//! DNS answers for SRV/TXT, the SOCKS5 proxy's replies, and the numbers in a server's
//! replies (hello limits, session timeout, write counts and indexes) as a client's
//! operations read them.
//!
//! Coverage-less on purpose: it runs on the stable toolchain (cargo-fuzz needs
//! nightly). Each target has a seed corpus of valid inputs built in code; every run
//! takes one, applies a few structured mutations ([`mutate`]) and feeds the result to
//! the target under [`std::panic::catch_unwind`]. A deterministic PRNG ([`Rng`]) seeded
//! from the command line makes every input reproducible from `(target, seed, index)`.
//!
//! The `fuzz` binary drives it (`cargo run -p anymongo-tests --bin fuzz -- --help`).

mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use targets::TARGETS;

/// A fuzz target: a parser fed one input at a time.
pub struct Target {
    /// The name `--target` selects it by.
    pub name: &'static str,
    /// Valid inputs to start mutating from.
    pub corpus: fn() -> Vec<Vec<u8>>,
    /// Feeds one input to the parser. Errors are expected; a panic is a finding.
    pub run: fn(&[u8]),
    /// Fragments worth inserting into this target's inputs (separators, escapes,
    /// keywords): byte flips alone rarely build them.
    pub tokens: &'static [&'static [u8]],
    /// Repairs a mutated input half of the time so that it gets past the first check
    /// (a wire frame's length field, say) and reaches the deeper parsers.
    pub fix_up: Option<fn(&mut [u8])>,
}

/// xorshift64* seeded through splitmix64: fast, deterministic, good enough to pick
/// mutations (not for anything secret).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed: a zero or small seed still gives a mixed state, and
        // xorshift's state must never be zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 => 0,
            n => (self.next_u64() % n as u64) as usize,
        }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Integers that sit on boundaries: lengths, counts and sizes set to these find the
/// off-by-ones and the unchecked arithmetic.
const INTERESTING: [i64; 18] = [
    0,
    1,
    -1,
    16,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    48_000_000,
    0x7fff_ffff,
    -0x8000_0000,
    0xffff_ffff,
    i64::MAX,
    i64::MIN,
];

/// Decimal numbers for textual inputs (ports, timeouts, iteration counts, sizes).
const INTERESTING_DECIMALS: [&str; 9] = [
    "0",
    "-1",
    "65536",
    "2147483648",
    "4294967296",
    "9223372036854775808",
    "99999999999999999999999",
    "1e400",
    "NaN",
];

/// One mutation of `input`: one to four structured changes, the target's fix-up half
/// of the time. `corpus` supplies the other half of a splice.
pub fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>], target: &Target) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut out, corpus, target.tokens);
    }
    if let Some(fix_up) = target.fix_up {
        if rng.one_in(2) {
            fix_up(&mut out);
        }
    }
    out
}

fn mutate_once(rng: &mut Rng, out: &mut Vec<u8>, corpus: &[Vec<u8>], tokens: &[&[u8]]) {
    let len = out.len();
    match rng.below(11) {
        // A bit flip.
        0 if len > 0 => {
            let at = rng.below(len);
            out[at] ^= 1 << rng.below(8);
        }
        // A random byte.
        1 if len > 0 => {
            let at = rng.below(len);
            out[at] = rng.next_u64() as u8;
        }
        // A boundary integer over 1, 2, 4 or 8 bytes, little- or big-endian (wire
        // lengths are little-endian, DNS and SOCKS5 fields big-endian).
        2 if len > 0 => {
            let value = INTERESTING[rng.below(INTERESTING.len())];
            let width = 1 << rng.below(4);
            // The value's low `width` bytes, in either order.
            let bytes = match rng.one_in(2) {
                true => value.to_le_bytes()[..width].to_vec(),
                false => value.to_be_bytes()[8 - width..].to_vec(),
            };
            let at = rng.below(len);
            let end = (at + width).min(len);
            out[at..end].copy_from_slice(&bytes[..end - at]);
        }
        // Truncation.
        3 => out.truncate(rng.below(len + 1)),
        // Random bytes inserted.
        4 => {
            let at = rng.below(len + 1);
            let count = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..count).map(|_| rng.next_u64() as u8).collect();
            out.splice(at..at, bytes);
        }
        // A chunk duplicated somewhere else.
        5 if len > 0 => {
            let start = rng.below(len);
            let end = start + 1 + rng.below((len - start).min(64));
            let chunk = out[start..end].to_vec();
            let at = rng.below(len + 1);
            out.splice(at..at, chunk);
        }
        // A chunk erased.
        6 if len > 0 => {
            let start = rng.below(len);
            let end = start + 1 + rng.below((len - start).min(64));
            out.drain(start..end);
        }
        // Splice: this input's head, another corpus entry's tail.
        7 if !corpus.is_empty() => {
            let other = &corpus[rng.below(corpus.len())];
            let head = rng.below(len + 1);
            let tail = rng.below(other.len() + 1);
            out.truncate(head);
            out.extend_from_slice(&other[tail..]);
        }
        // One of the target's tokens, inserted or written over.
        8 if !tokens.is_empty() => {
            let token = tokens[rng.below(tokens.len())];
            let at = rng.below(len + 1);
            match rng.one_in(2) {
                true => {
                    out.splice(at..at, token.iter().copied());
                }
                false => {
                    let end = (at + token.len()).min(len);
                    out.splice(at..end, token.iter().copied());
                }
            }
        }
        // A decimal number replaced by a boundary one.
        9 => {
            let digits: Vec<usize> = (0..len).filter(|&i| out[i].is_ascii_digit()).collect();
            if let Some(&start) = digits.get(rng.below(digits.len())) {
                let end = (start..len)
                    .find(|&i| !out[i].is_ascii_digit())
                    .unwrap_or(len);
                let number = INTERESTING_DECIMALS[rng.below(INTERESTING_DECIMALS.len())];
                out.splice(start..end, number.bytes());
            }
        }
        // A byte swapped with another.
        _ if len > 1 => {
            let (a, b) = (rng.below(len), rng.below(len));
            out.swap(a, b);
        }
        _ => {}
    }
}

/// The message and location of the last panic, kept by the hook [`install_panic_hook`]
/// sets (the default hook would print every expected panic's backtrace).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the panic hook with one that records the panic (message and location)
/// for [`run_one`] instead of printing it.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        *LAST_PANIC.lock().unwrap_or_else(PoisonError::into_inner) = Some(info.to_string());
    }));
}

/// Runs `target` on `input`: `Ok` when it returned (whatever the parser said), else
/// the panic's message and location.
pub fn run_one(target: &Target, input: &[u8]) -> Result<(), String> {
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| (target.run)(input))) else {
        return Ok(());
    };
    // The hook's record has the location; without the hook, the payload's text.
    let recorded = LAST_PANIC
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    Err(recorded
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .or_else(|| payload.downcast_ref::<&str>().map(|text| text.to_string()))
        .unwrap_or_else(|| "a panic without a message".to_owned()))
}

/// The input a target is working on, and since when: what the watchdog reports when
/// one takes too long.
#[derive(Debug, Default)]
pub struct Current {
    /// The target's name, the input's index in its run, the input, and its start.
    pub input: Option<(&'static str, u64, Vec<u8>, Instant)>,
}

/// What one target's run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Inputs run, the corpus included.
    pub inputs: u64,
    /// Every panic: the input's index, the input, the panic's message and location.
    pub failures: Vec<(u64, Vec<u8>, String)>,
}

/// Runs `target` for `duration`: first its corpus as is, then mutations of it, input
/// `i` drawn from `Rng::new(seed_for(seed, name))`. Failures are collected (the same
/// failure once), not fatal; `current` is kept up to date for the watchdog.
pub fn run_target(
    target: &Target,
    seed: u64,
    duration: Duration,
    current: &Mutex<Current>,
) -> Report {
    let corpus = (target.corpus)();
    let mut rng = Rng::new(seed_for(seed, target.name));
    let mut report = Report::default();
    let start = Instant::now();
    // At least the whole corpus, then until the time is up.
    while report.inputs < corpus.len() as u64 || start.elapsed() < duration {
        let index = report.inputs;
        let input = match corpus.get(index as usize) {
            Some(input) => input.clone(),
            None => {
                let base = &corpus[rng.below(corpus.len())];
                mutate(&mut rng, base, &corpus, target)
            }
        };
        set_current(
            current,
            Some((target.name, index, input.clone(), Instant::now())),
        );
        let outcome = run_one(target, &input);
        set_current(current, None);
        report.inputs += 1;
        if let Err(panic) = outcome {
            if !report.failures.iter().any(|(_, _, seen)| *seen == panic) {
                report.failures.push((index, input, panic));
            }
        }
    }
    report
}

fn set_current(current: &Mutex<Current>, input: Option<(&'static str, u64, Vec<u8>, Instant)>) {
    current.lock().unwrap_or_else(PoisonError::into_inner).input = input;
}

/// The seed of one target's generator: the run's seed mixed with the target's name,
/// so that `--target NAME --seed S` replays exactly what the full run did for it.
pub fn seed_for(seed: u64, target: &str) -> u64 {
    // FNV-1a of the name.
    let name = target
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    seed ^ name
}

/// `bytes` as lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Hexadecimal back to bytes; `None` when it is not an even run of hex digits.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_deterministic_and_seed_dependent() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert_ne!(draw(0), vec![0; 4]);
    }

    #[test]
    fn mutations_are_reproducible_from_the_seed() {
        let target = &TARGETS[0];
        let corpus = (target.corpus)();
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100)
                .map(|_| mutate(&mut rng, &corpus[0], &corpus, target))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert!(run(42).iter().any(|input| input != &corpus[0]));
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&bytes), "0001abff");
        assert_eq!(unhex("0001ABff").as_deref(), Some(&bytes[..]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn every_corpus_entry_runs_clean() {
        for target in &TARGETS {
            for input in (target.corpus)() {
                assert_eq!(
                    run_one(target, &input),
                    Ok(()),
                    "{}: {}",
                    target.name,
                    hex(&input)
                );
            }
        }
    }

    #[test]
    fn a_panicking_target_is_reported_with_its_message() {
        let target = Target {
            name: "panics",
            corpus: || vec![b"x".to_vec()],
            run: |input| assert!(input.is_empty(), "not empty: {input:?}"),
            tokens: &[],
            fix_up: None,
        };
        let Err(message) = run_one(&target, b"x") else {
            panic!("the panic was not caught");
        };
        assert!(message.contains("not empty"), "{message}");
    }
}
