//! Connection-string parsing stays linear in the length of the query (issue 21: 20,000
//! repeats of `tls=true` took 2.2 s when each occurrence was compared with every other).
//!
//! The driver's own unit tests cannot read a clock (`driver/` has no
//! `std::time::Instant`), hence this test here.

use std::time::{Duration, Instant};

use anymongo::ClientOptions;

/// The fastest of five parses of a query repeating `tls=true` `repeats` times; once
/// the fastest is slower than `give_up`, no more are tried (a quadratic parser takes a
/// minute).
fn parse_time(repeats: usize, give_up: Duration) -> Duration {
    let uri = format!("mongodb://h/?{}", vec!["tls=true"; repeats].join("&"));
    let mut fastest = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let options = ClientOptions::parse_uri(&uri).expect("the connection string parses");
        assert!(options.tls.is_some());
        fastest = fastest.min(start.elapsed());
        if fastest > give_up {
            break;
        }
    }
    fastest
}

/// Four times the repeats take about four times as long when parsing is linear
/// (measured: 3.8), and sixteen times as long when it is quadratic. The bound, 8, is
/// a factor of two from either. Below about 5,000 repeats the time grows faster than
/// the count (the query then fits in the CPU's caches), hence the sizes; the fastest
/// of five runs of each keeps a busy machine from inflating one side.
#[test]
fn parsing_time_grows_linearly_with_repeated_options() {
    const BOUND: f64 = 8.0;
    let small = parse_time(5_000, Duration::MAX);
    // One slow run on a busy machine must not end the tries early: give up only far
    // beyond the bound.
    let large = parse_time(20_000, small.mul_f64(4.0 * BOUND));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("5,000 repeats: {small:?}, 20,000 repeats: {large:?}, ratio {ratio:.1}");
    assert!(
        ratio < BOUND,
        "parsing 4x the repeats took {ratio:.1}x as long ({small:?} -> {large:?}): not linear"
    );
}
