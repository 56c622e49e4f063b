//! Connection-string parsing stays linear in the length of the query (issue 21: 20,000
//! repeats of `tls=true` took 2.2 s when each occurrence was compared with every other).
//!
//! The driver's own unit tests cannot read a clock (`driver/` has no
//! `std::time::Instant`), hence this test here.

use std::time::{Duration, Instant};

use anymongo::ClientOptions;

/// The fastest of three parses of a query repeating `tls=true` `repeats` times.
fn parse_time(repeats: usize) -> Duration {
    let uri = format!("mongodb://h/?{}", vec!["tls=true"; repeats].join("&"));
    (0..3)
        .map(|_| {
            let start = Instant::now();
            let options = ClientOptions::parse(&uri).expect("the connection string parses");
            assert!(options.tls.is_some());
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Eight times the repeats take about eight times as long when parsing is linear, and
/// 64 times as long when it is quadratic. The bound, 24, leaves a factor of three for
/// noise either way; the fastest of three runs of each size keeps a busy machine from
/// inflating one side.
#[test]
fn parsing_time_grows_linearly_with_repeated_options() {
    let small = parse_time(5_000);
    let large = parse_time(40_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("5,000 repeats: {small:?}, 40,000 repeats: {large:?}, ratio {ratio:.1}");
    assert!(
        ratio < 24.0,
        "parsing 8x the repeats took {ratio:.1}x as long ({small:?} -> {large:?}): not linear"
    );
}
