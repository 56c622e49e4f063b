//! Round-trip times of server checks (Server Selection spec, "Calculation of Average
//! Round Trip Times"; Server Monitoring spec, "Measuring RTT").

use std::collections::VecDeque;
use std::time::Duration;

/// How many recent samples the minimum round-trip time is taken over.
const MIN_RTT_SAMPLES: usize = 10;

/// The round-trip time statistics of one server: an exponentially weighted moving
/// average (alpha 0.2) for the latency window, and the minimum of the last 10 samples.
///
/// The average starts at the first sample; the minimum is reported as zero until two
/// samples have been taken (Server Monitoring spec). When a server becomes unavailable
/// its statistics must be cleared with [`RoundTripTime::reset`].
///
/// ```
/// use std::time::Duration;
/// use anymongo::selection::RoundTripTime;
///
/// let mut rtt = RoundTripTime::new();
/// assert_eq!(rtt.average(), None);
/// rtt.add_sample(Duration::from_millis(10));
/// assert_eq!(rtt.average(), Some(Duration::from_millis(10)));
/// assert_eq!(rtt.minimum(), Some(Duration::ZERO)); // only one sample so far
/// rtt.add_sample(Duration::from_millis(20));
/// assert_eq!(rtt.average(), Some(Duration::from_millis(12))); // 0.2 * 20 + 0.8 * 10
/// assert_eq!(rtt.minimum(), Some(Duration::from_millis(10)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundTripTime {
    average: Option<Duration>,
    recent: VecDeque<Duration>,
}

impl RoundTripTime {
    /// No samples yet: no average, no minimum.
    pub fn new() -> Self {
        RoundTripTime::default()
    }

    /// Statistics resumed from a known average (e.g. the `roundTripTime` of the
    /// server's previous description), without recent samples for the minimum.
    pub fn with_average(average: Duration) -> Self {
        RoundTripTime {
            average: Some(average),
            recent: VecDeque::new(),
        }
    }

    /// Records the duration of one check: the first sample becomes the average, later
    /// ones are folded in as `0.2 * sample + 0.8 * average`.
    pub fn add_sample(&mut self, sample: Duration) {
        self.average = Some(match self.average {
            None => sample,
            // 0.2 x + 0.8 old = (x + 4 old) / 5, exactly, in nanoseconds.
            Some(old) => {
                let nanos = (sample.as_nanos() + 4 * old.as_nanos()) / 5;
                duration_from_nanos(nanos)
            }
        });
        if self.recent.len() == MIN_RTT_SAMPLES {
            self.recent.pop_front();
        }
        self.recent.push_back(sample);
    }

    /// The weighted average, `None` before the first sample.
    pub fn average(&self) -> Option<Duration> {
        self.average
    }

    /// The smallest of the last 10 samples: `None` before any sample, zero while fewer
    /// than two samples have been taken.
    pub fn minimum(&self) -> Option<Duration> {
        match self.recent.len() {
            0 if self.average.is_none() => None,
            0 | 1 => Some(Duration::ZERO),
            _ => self.recent.iter().min().copied(),
        }
    }

    /// Forgets every sample, as when the server becomes unavailable.
    pub fn reset(&mut self) {
        *self = RoundTripTime::new();
    }
}

fn duration_from_nanos(nanos: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder is below 10^9 and fits.
    Duration::new(secs, (nanos % NANOS_PER_SEC) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: f64) -> Duration {
        Duration::from_secs_f64(value / 1000.0)
    }

    #[test]
    fn the_first_sample_is_the_average() {
        let mut rtt = RoundTripTime::new();
        rtt.add_sample(Duration::ZERO);
        assert_eq!(rtt.average(), Some(Duration::ZERO));
    }

    #[test]
    fn later_samples_are_weighted_by_one_fifth() {
        for (old, sample, new) in [
            (0.0, 5.0, 1.0),
            (3.1, 36.0, 9.68),
            (9.12, 9.12, 9.12),
            (1.0, 1000.0, 200.8),
            (0.0, 0.25, 0.05),
        ] {
            let mut rtt = RoundTripTime::with_average(ms(old));
            rtt.add_sample(ms(sample));
            let average = rtt.average().unwrap().as_secs_f64() * 1000.0;
            assert!((average - new).abs() < 1e-6, "{old} {sample}: {average}");
        }
    }

    #[test]
    fn the_minimum_covers_the_last_ten_samples_and_needs_two() {
        let mut rtt = RoundTripTime::new();
        assert_eq!(rtt.minimum(), None);
        rtt.add_sample(Duration::from_millis(1));
        assert_eq!(rtt.minimum(), Some(Duration::ZERO));
        for millis in 2..=11 {
            rtt.add_sample(Duration::from_millis(millis));
        }
        // The sample of 1 ms is no longer among the last ten.
        assert_eq!(rtt.minimum(), Some(Duration::from_millis(2)));
        rtt.reset();
        assert_eq!((rtt.average(), rtt.minimum()), (None, None));
    }

    #[test]
    fn a_resumed_average_reports_a_zero_minimum() {
        let rtt = RoundTripTime::with_average(Duration::from_millis(7));
        assert_eq!(rtt.minimum(), Some(Duration::ZERO));
    }
}
