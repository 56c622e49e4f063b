//! Max Staleness (max-staleness.md, and the Server Selection spec's
//! "maxStalenessSeconds"): how stale a secondary is estimated to be, and which values of
//! `maxStalenessSeconds` a replica set accepts.

use std::time::Duration;

use super::ReadPreference;
use crate::error::{Error, Result};
use crate::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};

/// `idleWritePeriodMS`: how often an idle primary writes a no-op to the oplog, so that
/// secondaries' `lastWriteDate` keeps moving (Max Staleness spec): 10 seconds.
pub const IDLE_WRITE_PERIOD: Duration = Duration::from_secs(10);

/// `smallestMaxStalenessSeconds`: the smallest `maxStalenessSeconds` a replica set
/// accepts (Max Staleness spec): 90 seconds.
pub const SMALLEST_MAX_STALENESS: Duration = Duration::from_secs(90);

/// Checks a read preference's `maxStalenessSeconds` for a replica set checked every
/// `heartbeat_frequency` (Server Selection spec, "maxStalenessSeconds"):
///
/// - when given, it must be at least 90 seconds ([`SMALLEST_MAX_STALENESS`]) and at
///   least `heartbeat_frequency` + 10 seconds ([`IDLE_WRITE_PERIOD`]).
///
/// [`candidates`](super::candidates) calls it for reads from replica sets; the other
/// topology types pass `maxStalenessSeconds` to mongos or ignore it.
///
/// ```
/// use std::time::Duration;
/// use anymongo::selection::validate_max_staleness;
/// use anymongo::options::{ReadPreference, ReadPreferenceOptions};
///
/// let secondary = |seconds| ReadPreference::Secondary {
///     options: Some(
///         ReadPreferenceOptions::builder()
///             .max_staleness(Duration::from_secs(seconds))
///             .build(),
///     ),
/// };
/// let heartbeat = Duration::from_secs(10);
/// assert!(validate_max_staleness(&secondary(120), heartbeat).is_ok());
/// assert!(validate_max_staleness(&secondary(60), heartbeat).is_err()); // below 90 s
/// ```
pub fn validate_max_staleness(
    read_preference: &ReadPreference,
    heartbeat_frequency: Duration,
) -> Result<()> {
    let Some(max_staleness) = read_preference.max_staleness() else {
        return Ok(());
    };
    let seconds = max_staleness.as_secs_f64();
    if max_staleness < SMALLEST_MAX_STALENESS {
        return Err(Error::invalid_argument(format!(
            "maxStalenessSeconds is {seconds}, but it must be at least {} seconds",
            SMALLEST_MAX_STALENESS.as_secs()
        )));
    }
    let floor = heartbeat_frequency.saturating_add(IDLE_WRITE_PERIOD);
    if max_staleness < floor {
        return Err(Error::invalid_argument(format!(
            "maxStalenessSeconds is {seconds}, but it must be at least heartbeatFrequencyMS \
             ({} ms) plus the idle write period ({} ms), {} seconds",
            heartbeat_frequency.as_millis(),
            IDLE_WRITE_PERIOD.as_millis(),
            floor.as_secs_f64()
        )));
    }
    Ok(())
}

/// Estimates secondaries' staleness in one topology (Max Staleness spec, "Client").
pub(super) struct StalenessEstimator<'a> {
    heartbeat_frequency: Duration,
    reference: Reference<'a>,
}

/// What a secondary's staleness is measured against.
enum Reference<'a> {
    /// The known primary: `(S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime -
    /// P.lastWriteDate) + heartbeatFrequencyMS`.
    Primary(&'a ServerDescription),
    /// No primary: `SMax.lastWriteDate - S.lastWriteDate + heartbeatFrequencyMS`, with
    /// the greatest `lastWriteDate` of the secondaries (`None` if none has one).
    NewestSecondary(Option<i64>),
}

impl<'a> StalenessEstimator<'a> {
    /// The estimator for `topology` (all its servers, deprioritized ones included).
    pub(super) fn new(topology: &'a TopologyDescription) -> Self {
        let primary = (topology.topology_type == TopologyType::ReplicaSetWithPrimary)
            .then(|| {
                topology
                    .servers
                    .values()
                    .find(|server| server.server_type == ServerType::RsPrimary)
            })
            .flatten();
        let reference = match primary {
            Some(primary) => Reference::Primary(primary),
            None => Reference::NewestSecondary(
                topology
                    .servers
                    .values()
                    .filter(|server| server.server_type == ServerType::RsSecondary)
                    .filter_map(|server| server.last_write_date)
                    .max(),
            ),
        };
        StalenessEstimator {
            heartbeat_frequency: topology.heartbeat_frequency,
            reference,
        }
    }

    /// The estimated staleness of `server` in nanoseconds (negative values are
    /// possible with a primary); zero for anything but a secondary; `None` when the
    /// descriptions lack the `lastWriteDate` or `lastUpdateTime` the formula needs.
    pub(super) fn staleness_nanos(&self, server: &ServerDescription) -> Option<i128> {
        if server.server_type != ServerType::RsSecondary {
            return Some(0);
        }
        let heartbeat = i128::try_from(self.heartbeat_frequency.as_nanos()).ok()?;
        let write = millis_to_nanos(server.last_write_date?);
        match self.reference {
            Reference::Primary(primary) => {
                let lag = |s: &ServerDescription| -> Option<i128> {
                    let updated = i128::try_from(s.last_update_time?.since_origin().as_nanos());
                    Some(updated.ok()? - millis_to_nanos(s.last_write_date?))
                };
                Some(lag(server)? - lag(primary)? + heartbeat)
            }
            Reference::NewestSecondary(newest) => {
                Some(millis_to_nanos(newest?) - write + heartbeat)
            }
        }
    }

    /// Whether `server` is fresh enough for `max_staleness`; a server whose staleness
    /// cannot be estimated is not.
    pub(super) fn is_fresh(&self, server: &ServerDescription, max_staleness: Duration) -> bool {
        let limit = i128::try_from(max_staleness.as_nanos()).unwrap_or(i128::MAX);
        self.staleness_nanos(server)
            .is_some_and(|staleness| staleness <= limit)
    }
}

fn millis_to_nanos(millis: i64) -> i128 {
    i128::from(millis) * 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Instant;
    use crate::selection::{ReadPreferenceMode, ReadPreferenceOptions};
    use crate::uri::ServerAddress;

    fn preference(mode: ReadPreferenceMode, seconds: Option<u64>) -> ReadPreference {
        let options = ReadPreferenceOptions {
            max_staleness: seconds.map(Duration::from_secs),
            ..ReadPreferenceOptions::default()
        };
        ReadPreference::new(mode, Some(options)).unwrap()
    }

    #[test]
    fn max_staleness_must_be_at_least_90_seconds_and_a_heartbeat_plus_10() {
        let ten = Duration::from_secs(10);
        let check = |seconds, heartbeat| {
            validate_max_staleness(&preference(ReadPreferenceMode::Nearest, seconds), heartbeat)
        };
        assert!(check(None, ten).is_ok());
        assert!(check(Some(90), ten).is_ok());
        assert!(check(Some(89), ten).is_err());
        assert!(check(Some(0), ten).is_err());
        let long = Duration::from_secs(120);
        assert!(check(Some(130), long).is_ok());
        let error = check(Some(129), long).unwrap_err();
        assert!(
            error.to_string().contains("heartbeatFrequencyMS"),
            "{error}"
        );
    }

    fn member(
        name: &str,
        server_type: ServerType,
        updated: u64,
        written: i64,
    ) -> ServerDescription {
        ServerDescription {
            server_type,
            last_update_time: Some(Instant::from_origin(Duration::from_millis(updated))),
            last_write_date: Some(written),
            ..ServerDescription::unknown(ServerAddress::tcp(name, 27017))
        }
    }

    fn topology(
        topology_type: TopologyType,
        servers: Vec<ServerDescription>,
    ) -> TopologyDescription {
        TopologyDescription {
            topology_type,
            servers: servers
                .into_iter()
                .map(|server| (server.address.clone(), server))
                .collect(),
            heartbeat_frequency: Duration::from_secs(10),
            ..TopologyDescription::default()
        }
    }

    #[test]
    fn staleness_with_a_primary_follows_the_spec_example() {
        // The spec's example: checked at 60 s, P wrote at 10 s, S at 0 s: 20 s stale.
        let topology = topology(
            TopologyType::ReplicaSetWithPrimary,
            vec![
                member("p", ServerType::RsPrimary, 60_000, 10_000),
                member("s", ServerType::RsSecondary, 60_000, 0),
            ],
        );
        let estimator = StalenessEstimator::new(&topology);
        let secondary = &topology.servers[&ServerAddress::tcp("s", 27017)];
        assert_eq!(estimator.staleness_nanos(secondary), Some(20_000_000_000));
        assert!(estimator.is_fresh(secondary, Duration::from_secs(20)));
        assert!(!estimator.is_fresh(secondary, Duration::from_secs(19)));
        let primary = &topology.servers[&ServerAddress::tcp("p", 27017)];
        assert_eq!(estimator.staleness_nanos(primary), Some(0));
    }

    #[test]
    fn staleness_without_a_primary_is_measured_against_the_newest_secondary() {
        let topology = topology(
            TopologyType::ReplicaSetNoPrimary,
            vec![
                member("a", ServerType::RsSecondary, 0, 100_000),
                member("b", ServerType::RsSecondary, 0, 40_000),
            ],
        );
        let estimator = StalenessEstimator::new(&topology);
        let staleness =
            |name| estimator.staleness_nanos(&topology.servers[&ServerAddress::tcp(name, 27017)]);
        assert_eq!(staleness("a"), Some(10_000_000_000));
        assert_eq!(staleness("b"), Some(70_000_000_000));
    }

    #[test]
    fn a_secondary_without_a_last_write_date_is_never_fresh() {
        let mut secondary = member("s", ServerType::RsSecondary, 0, 0);
        secondary.last_write_date = None;
        let topology = topology(TopologyType::ReplicaSetNoPrimary, vec![secondary]);
        let estimator = StalenessEstimator::new(&topology);
        let secondary = topology.servers.values().next().unwrap();
        assert!(!estimator.is_fresh(secondary, Duration::from_secs(1000)));
    }
}
