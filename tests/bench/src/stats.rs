//! The benchmarking spec's measurement rules ("Benchmark execution phases and
//! measurement"), without I/O: when to stop iterating, the nearest-rank percentiles, and
//! the score (task size in MB over the median iteration time).

use std::time::Duration;

/// How many iterations a task runs, per driver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// Keep iterating until this much time was spent in "do task" phases...
    pub min_time: Duration,
    /// ...but stop after this many iterations...
    pub max_iterations: usize,
    /// ...or this much time, whichever comes first.
    pub max_time: Duration,
}

impl Policy {
    /// The spec's rule: at least 1 minute of cumulative execution time, at most 100
    /// iterations or 5 minutes.
    pub const SPEC: Policy = Policy {
        min_time: Duration::from_secs(60),
        max_iterations: 100,
        max_time: Duration::from_secs(300),
    };

    /// `--quick`: at most 10 iterations or 5 seconds (at least one iteration). Not the
    /// spec's rule, and the output says so.
    pub const QUICK: Policy = Policy {
        min_time: Duration::ZERO,
        max_iterations: 10,
        max_time: Duration::from_secs(5),
    };

    /// Whether another iteration should run after `done` iterations that took `spent`
    /// in all: until both 100 iterations and 1 minute are reached (the spec's "at least
    /// 1 minute", then "stop after 100 iterations"), but never past 5 minutes; always at
    /// least one.
    pub fn wants_more(&self, done: usize, spent: Duration) -> bool {
        done == 0
            || ((done < self.max_iterations || spent < self.min_time) && spent < self.max_time)
    }
}

/// The spec's percentile: sort ascending, take index `int(N * p / 100) - 1` (nearest
/// rank), clamped to the first element for small `N`. `None` when there are no samples.
pub fn percentile(sorted: &[Duration], p: u32) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let index = (sorted.len() * p as usize / 100).saturating_sub(1);
    Some(sorted[index.min(sorted.len() - 1)])
}

/// The timings of one driver on one task.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    samples: Vec<Duration>,
    spent: Duration,
}

impl Timings {
    /// Records one iteration.
    pub fn push(&mut self, took: Duration) {
        self.samples.push(took);
        self.spent += took;
    }

    /// Iterations recorded.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Time recorded in all.
    pub fn spent(&self) -> Duration {
        self.spent
    }

    /// The timings sorted ascending.
    pub fn sorted(&self) -> Vec<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted
    }

    /// The score: `megabytes` over the median time, in MB/s (`None` without samples or
    /// with a zero median).
    pub fn score(&self, megabytes: f64) -> Option<f64> {
        let median = percentile(&self.sorted(), 50)?.as_secs_f64();
        (median > 0.0).then(|| megabytes / median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let sorted = ms(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&sorted, 50), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&sorted, 99), Some(Duration::from_millis(99)));
        assert_eq!(percentile(&sorted, 10), Some(Duration::from_millis(10)));
        // int(3 * 50 / 100) - 1 = -1: clamped to the first.
        assert_eq!(
            percentile(&ms(&[1, 2, 3]), 50),
            Some(Duration::from_millis(1))
        );
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn spec_policy_runs_a_minute_within_100_iterations_and_5_minutes() {
        let policy = Policy::SPEC;
        assert!(policy.wants_more(0, Duration::ZERO));
        assert!(policy.wants_more(99, Duration::from_secs(70)));
        assert!(policy.wants_more(100, Duration::from_secs(30)));
        assert!(!policy.wants_more(100, Duration::from_secs(60)));
        assert!(!policy.wants_more(5, Duration::from_secs(300)));
    }

    #[test]
    fn quick_policy_stops_at_ten_or_five_seconds() {
        let policy = Policy::QUICK;
        assert!(policy.wants_more(0, Duration::from_secs(100)));
        assert!(policy.wants_more(9, Duration::from_secs(1)));
        assert!(!policy.wants_more(10, Duration::from_secs(1)));
        assert!(!policy.wants_more(2, Duration::from_secs(5)));
    }

    #[test]
    fn score_is_size_over_median() {
        let mut timings = Timings::default();
        for took in ms(&[500, 250, 1000]) {
            timings.push(took);
        }
        // Sorted 250, 500, 1000: nearest rank int(3 * 0.5) - 1 = 0 → 250 ms.
        assert_eq!(timings.score(10.0), Some(40.0));
        assert_eq!(timings.len(), 3);
        assert_eq!(timings.spent(), Duration::from_millis(1750));
        assert_eq!(Timings::default().score(1.0), None);
    }
}
