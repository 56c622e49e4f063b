//! The last steps of selection: the latency window (Server Selection spec, "Filtering
//! suitable servers based on the latency window") and the choice of one server in it
//! by operation count ("power of two random choices"), with a small random source.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::sdam::ServerDescription;
use crate::uri::ServerAddress;

/// The servers of `suitable` whose average round-trip time is at most
/// `local_threshold` (localThresholdMS) above the shortest one, in the given order.
/// A server without an average round-trip time counts as zero.
///
/// ```
/// use std::time::Duration;
/// use anymongo::sdam::ServerDescription;
/// use anymongo::selection::latency_window;
/// use anymongo::ServerAddress;
///
/// let server = |host: &str, millis| ServerDescription {
///     round_trip_time: Some(Duration::from_millis(millis)),
///     ..ServerDescription::unknown(ServerAddress::tcp(host, 27017))
/// };
/// let (a, b, c) = (server("a", 10), server("b", 25), server("c", 26));
/// let window = latency_window(vec![&a, &b, &c], Duration::from_millis(15));
/// let hosts: Vec<_> = window.iter().map(|s| s.address.host()).collect();
/// assert_eq!(hosts, ["a", "b"]);
/// ```
pub fn latency_window(
    suitable: Vec<&ServerDescription>,
    local_threshold: Duration,
) -> Vec<&ServerDescription> {
    let rtt = |server: &ServerDescription| server.round_trip_time.unwrap_or(Duration::ZERO);
    let Some(shortest) = suitable.iter().map(|server| rtt(server)).min() else {
        return suitable;
    };
    let longest = shortest.saturating_add(local_threshold);
    suitable
        .into_iter()
        .filter(|server| rtt(server) <= longest)
        .collect()
}

/// Picks the server for an operation among `candidates` (the servers in the latency
/// window) by "power of two random choices" (Server Selection spec, "Server Selection
/// Algorithm", steps 6 and 7): two distinct candidates at random, and of these the one
/// with the smaller `operation_count` (the operations in progress on it); on a tie, the
/// first one drawn.
///
/// `random(n)` must return an index below `n`; [`random_index`] does, and tests can pass
/// a seeded generator. `None` if there are no candidates; the only candidate without
/// drawing if there is one.
///
/// ```
/// use anymongo::sdam::ServerDescription;
/// use anymongo::selection::{choose, random_index};
/// use anymongo::ServerAddress;
///
/// let a = ServerDescription::unknown(ServerAddress::tcp("a", 27017));
/// let b = ServerDescription::unknown(ServerAddress::tcp("b", 27017));
/// // With two candidates both are always drawn: the idler one wins.
/// let busy = |address: &ServerAddress| if address.host() == "a" { 5 } else { 0 };
/// let chosen = choose(&[&a, &b], busy, random_index).unwrap();
/// assert_eq!(chosen.address.host(), "b");
/// ```
pub fn choose<'a>(
    candidates: &[&'a ServerDescription],
    operation_count: impl Fn(&ServerAddress) -> u32,
    mut random: impl FnMut(usize) -> usize,
) -> Option<&'a ServerDescription> {
    match candidates {
        [] => None,
        [only] => Some(*only),
        _ => {
            let len = candidates.len();
            let first = random(len) % len;
            // A second, distinct index: draw among the other len - 1 and skip `first`.
            let mut second = random(len - 1) % (len - 1);
            if second >= first {
                second += 1;
            }
            let (first, second) = (candidates[first], candidates[second]);
            if operation_count(&second.address) < operation_count(&first.address) {
                Some(second)
            } else {
                Some(first)
            }
        }
    }
}

/// A random index below `len` (0 when `len` is 0 or 1), from a fast non-cryptographic
/// generator (SplitMix64) seeded once per process from the operating system's random
/// source; meant for [`choose`]. Where no random source is available (for example on
/// `wasm32-unknown-unknown` without a `getrandom` backend) the seed is fixed, and
/// selection stays correct, only predictable.
pub fn random_index(len: usize) -> usize {
    static SEED: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if len <= 1 {
        return 0;
    }
    let seed = *SEED.get_or_init(|| getrandom::u64().unwrap_or(0x853C_49E6_748F_EA9B));
    let step = COUNTER.fetch_add(1, Ordering::Relaxed);
    let value = splitmix64(seed.wrapping_add(step.wrapping_mul(GOLDEN_GAMMA)));
    index_below(value, len)
}

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function.
fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Maps a uniform 64-bit value to `0..len` by multiplication (bias below 2^-32 for the
/// sizes of a deployment).
fn index_below(value: u64, len: usize) -> usize {
    // The product's high half is below `len`, so it fits in usize.
    ((u128::from(value) * len as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn server(host: &str, millis: Option<u64>) -> ServerDescription {
        ServerDescription {
            round_trip_time: millis.map(Duration::from_millis),
            ..ServerDescription::unknown(ServerAddress::tcp(host, 27017))
        }
    }

    fn hosts(servers: &[&ServerDescription]) -> Vec<String> {
        servers
            .iter()
            .map(|s| s.address.host().to_owned())
            .collect()
    }

    #[test]
    fn the_window_is_anchored_at_the_shortest_rtt_and_inclusive() {
        let (a, b, c, d) = (
            server("a", Some(20)),
            server("b", Some(5)),
            server("c", Some(21)),
            server("d", None),
        );
        let fifteen = Duration::from_millis(15);
        assert_eq!(
            hosts(&latency_window(vec![&a, &b, &c], fifteen)),
            ["a", "b"]
        );
        assert_eq!(
            hosts(&latency_window(vec![&a, &b, &c], Duration::ZERO)),
            ["b"]
        );
        // No RTT counts as zero: it anchors the window.
        assert_eq!(hosts(&latency_window(vec![&a, &d], fifteen)), ["d"]);
        assert!(latency_window(Vec::new(), fifteen).is_empty());
    }

    #[test]
    fn choose_prefers_the_idler_of_two_distinct_draws() {
        let (a, b, c) = (server("a", None), server("b", None), server("c", None));
        let counts = BTreeMap::from([("a", 3u32), ("b", 6), ("c", 20)]);
        let count = |address: &ServerAddress| counts[address.host()];
        assert!(choose(&[], count, |_| 0).is_none());
        let mut calls = 0;
        let only = choose(&[&c], count, |_| {
            calls += 1;
            0
        });
        assert_eq!((only.unwrap().address.host(), calls), ("c", 0));
        // Draws 0 and then 0 among the others: a and b, a is idler.
        let chosen = choose(&[&a, &b, &c], count, |_| 0).unwrap();
        assert_eq!(chosen.address.host(), "a");
        // Draws 2 (c) and then 1 among the others, which skips c's slot: b.
        let mut draws = [2, 1].into_iter();
        let chosen = choose(&[&a, &b, &c], count, |_| draws.next().unwrap()).unwrap();
        assert_eq!(chosen.address.host(), "b");
        // A tie goes to the first draw.
        let tied = |_: &ServerAddress| 1;
        let mut draws = [1, 0].into_iter();
        let chosen = choose(&[&a, &b, &c], tied, |_| draws.next().unwrap()).unwrap();
        assert_eq!(chosen.address.host(), "b");
    }

    #[test]
    fn the_busiest_server_of_three_is_never_chosen() {
        let (a, b, c) = (server("a", None), server("b", None), server("c", None));
        let counts = BTreeMap::from([("a", 3u32), ("b", 6), ("c", 20)]);
        let mut chosen = BTreeMap::new();
        for _ in 0..3000 {
            let server = choose(&[&a, &b, &c], |s| counts[s.host()], random_index).unwrap();
            *chosen.entry(server.address.host().to_owned()).or_insert(0) += 1;
        }
        assert_eq!(chosen.get("c"), None);
        // a wins two pairs of three, b one: about 2000 and 1000.
        assert!((1800..2200).contains(&chosen["a"]), "{chosen:?}");
    }

    #[test]
    fn random_indices_are_in_range_and_spread() {
        assert_eq!(random_index(0), 0);
        assert_eq!(random_index(1), 0);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[random_index(7)] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn index_below_covers_the_whole_range() {
        assert_eq!(index_below(0, 5), 0);
        assert_eq!(index_below(u64::MAX, 5), 4);
        assert_eq!(index_below(u64::MAX / 2, 2), 0);
        assert_eq!(index_below(u64::MAX / 2 + 1, 2), 1);
    }
}
