//! Server Selection (server-selection.md) and Max Staleness (max-staleness.md):
//! which server of a [`crate::sdam::TopologyDescription`] an operation goes to.
//!
//! Everything here is pure: it reads a topology description and returns servers. The
//! client drives it in a loop (select, else wait for a topology change or scan, until
//! serverSelectionTimeoutMS):
//!
//! 1. [`candidates`]: the suitable servers for the operation ([`suitable_servers`]:
//!    per topology type, read preference mode, `maxStalenessSeconds` and tag sets,
//!    avoiding deprioritized servers when others are suitable), narrowed to the
//!    latency window ([`latency_window`]). An error means selection must fail now (an
//!    incompatible server, an invalid read preference); an empty list means "not
//!    yet".
//! 2. [`choose`]: one of them, by operation count, with [`random_index`].
//! 3. [`read_preference_document`]: the `$readPreference` to send with a read.
//!
//! [`RoundTripTime`] keeps the averaged round-trip time the latency window uses.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//! use anymongo::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
//! use anymongo::options::ReadPreference;
//! use anymongo::selection::{candidates, choose, random_index, Criteria};
//! use anymongo::ServerAddress;
//!
//! let member = |host: &str, server_type, millis| ServerDescription {
//!     server_type,
//!     round_trip_time: Some(Duration::from_millis(millis)),
//!     ..ServerDescription::unknown(ServerAddress::tcp(host, 27017))
//! };
//! let servers: BTreeMap<_, _> = [
//!     member("a", ServerType::RsPrimary, 5),
//!     member("b", ServerType::RsSecondary, 8),
//!     member("c", ServerType::RsSecondary, 50),
//! ]
//! .into_iter()
//! .map(|server| (server.address.clone(), server))
//! .collect();
//! let topology = TopologyDescription {
//!     topology_type: TopologyType::ReplicaSetWithPrimary,
//!     set_name: Some("rs".into()),
//!     servers,
//!     heartbeat_frequency: Duration::from_secs(10),
//!     ..TopologyDescription::default()
//! };
//! let secondary = ReadPreference::Secondary { options: None };
//! let threshold = Duration::from_millis(15);
//! let found = candidates(&topology, &Criteria::Read(&secondary), threshold, &[])?;
//! let server = choose(&found, |_| 0, random_index).unwrap();
//! assert_eq!(server.address.host(), "b"); // c is out of the latency window
//! let writable = candidates(&topology, &Criteria::Write, threshold, &[])?;
//! assert_eq!(writable[0].address.host(), "a");
//! # Ok::<(), anymongo::Error>(())
//! ```

mod criteria;
mod max_staleness;
mod read_preference;
mod rtt;
mod window;

use std::time::Duration;

pub use criteria::{Criteria, Predicate, SelectionCriteria, ServerInfo};
pub use max_staleness::{validate_max_staleness, IDLE_WRITE_PERIOD, SMALLEST_MAX_STALENESS};
pub use read_preference::{
    matches_tag_set, read_preference_document, HedgedReadOptions, ReadPreference,
    ReadPreferenceMode, ReadPreferenceOptions, TagSet,
};
pub use rtt::RoundTripTime;
pub use window::{choose, latency_window, random_index};

use crate::error::{Error, ErrorKind, Result};
use crate::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
use crate::uri::ServerAddress;
use max_staleness::StalenessEstimator;
use read_preference::filter_by_tag_sets;

/// The servers an operation may go to now: the [suitable](suitable_servers) servers,
/// narrowed to the [latency window](latency_window) of `local_threshold`
/// (localThresholdMS). Pick one with [`choose`].
///
/// Fails when selection cannot succeed by waiting: the topology's
/// `compatibility_error` ([`ErrorKind::IncompatibleServer`]) or an invalid read
/// preference ([`ErrorKind::InvalidArgument`]: see [`validate_max_staleness`]).
/// `Ok` with no servers means none is suitable right now; the caller should request a
/// topology check and try again until its timeout.
pub fn candidates<'a>(
    topology: &'a TopologyDescription,
    criteria: &Criteria<'_>,
    local_threshold: Duration,
    deprioritized: &[ServerAddress],
) -> Result<Vec<&'a ServerDescription>> {
    let suitable = suitable_servers(topology, criteria, deprioritized)?;
    Ok(latency_window(suitable, local_threshold))
}

/// The suitable servers for `criteria`, in address order, before the latency window
/// (Server Selection spec, "Rules for server selection"):
///
/// - Unknown topology: none.
/// - Single: the one server, if available (any type but Unknown and PossiblePrimary),
///   whatever the read preference.
/// - Sharded: every mongos; LoadBalanced: the load balancer. The read preference is
///   not used for selecting but is passed on ([`read_preference_document`]).
/// - Replica set, writes: the primary. Reads: by mode; secondaries are first filtered
///   by `maxStalenessSeconds`, then by tag sets (the first tag set matching any of
///   them wins); `secondaryPreferred` falls back to the primary and
///   `primaryPreferred` to the secondaries.
///
/// Servers whose address is in `deprioritized` (those an earlier attempt of the
/// operation failed on) are left out first; if that leaves no suitable server, the
/// selection is made again with them.
///
/// Errors as for [`candidates`].
pub fn suitable_servers<'a>(
    topology: &'a TopologyDescription,
    criteria: &Criteria<'_>,
    deprioritized: &[ServerAddress],
) -> Result<Vec<&'a ServerDescription>> {
    if let Some(message) = &topology.compatibility_error {
        return Err(Error::new(ErrorKind::IncompatibleServer {
            message: message.clone(),
        }));
    }
    if let Criteria::Read(read_preference) = criteria {
        if is_replica_set(topology.topology_type) {
            validate_max_staleness(read_preference, topology.heartbeat_frequency)?;
        }
    }
    let all: Vec<&ServerDescription> = topology.servers.values().collect();
    if !deprioritized.is_empty() {
        let preferred: Vec<&ServerDescription> = all
            .iter()
            .copied()
            .filter(|server| !deprioritized.contains(&server.address))
            .collect();
        if preferred.len() < all.len() {
            let suitable = suitable_among(topology, preferred, criteria);
            if !suitable.is_empty() {
                return Ok(suitable);
            }
        }
    }
    Ok(suitable_among(topology, all, criteria))
}

fn is_replica_set(topology_type: TopologyType) -> bool {
    matches!(
        topology_type,
        TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary
    )
}

/// The suitable servers of `servers` (a subset of `topology`'s).
fn suitable_among<'a>(
    topology: &'a TopologyDescription,
    servers: Vec<&'a ServerDescription>,
    criteria: &Criteria<'_>,
) -> Vec<&'a ServerDescription> {
    let of_type = |wanted: ServerType| -> Vec<&'a ServerDescription> {
        servers
            .iter()
            .copied()
            .filter(|server| server.server_type == wanted)
            .collect()
    };
    if let Criteria::Predicate(predicate) = criteria {
        // Any available server the predicate accepts; under Single, the one server
        // whatever its type (as for read preferences).
        return servers
            .iter()
            .copied()
            .filter(|server| {
                let available = match topology.topology_type {
                    TopologyType::Unknown => false,
                    TopologyType::Single => !matches!(
                        server.server_type,
                        ServerType::Unknown | ServerType::PossiblePrimary
                    ),
                    _ => server.server_type.is_data_bearing(),
                };
                available && predicate(&ServerInfo::new(server))
            })
            .collect();
    }
    match topology.topology_type {
        TopologyType::Unknown => Vec::new(),
        // Spec "Available": every type but Unknown and PossiblePrimary. A direct
        // connection may go to an arbiter, a hidden member or a ghost.
        TopologyType::Single => servers
            .iter()
            .copied()
            .filter(|server| {
                !matches!(
                    server.server_type,
                    ServerType::Unknown | ServerType::PossiblePrimary
                )
            })
            .collect(),
        TopologyType::Sharded => of_type(ServerType::Mongos),
        TopologyType::LoadBalanced => of_type(ServerType::LoadBalancer),
        TopologyType::ReplicaSetNoPrimary | TopologyType::ReplicaSetWithPrimary => {
            let primary = of_type(ServerType::RsPrimary);
            let read_preference = match criteria {
                Criteria::Write | Criteria::Predicate(_) => return primary,
                Criteria::Read(read_preference) => read_preference,
            };
            let eligible = |mut candidates: Vec<&'a ServerDescription>| {
                if let Some(max_staleness) =
                    read_preference.max_staleness().filter(|d| !d.is_zero())
                {
                    let estimator = StalenessEstimator::new(topology);
                    candidates.retain(|server| estimator.is_fresh(server, max_staleness));
                }
                filter_by_tag_sets(candidates, read_preference.tag_sets())
            };
            let secondaries = || eligible(of_type(ServerType::RsSecondary));
            match read_preference.mode() {
                ReadPreferenceMode::Primary => primary,
                ReadPreferenceMode::Secondary => secondaries(),
                ReadPreferenceMode::PrimaryPreferred if !primary.is_empty() => primary,
                ReadPreferenceMode::PrimaryPreferred => secondaries(),
                ReadPreferenceMode::SecondaryPreferred => {
                    let secondaries = secondaries();
                    if secondaries.is_empty() {
                        primary
                    } else {
                        secondaries
                    }
                }
                ReadPreferenceMode::Nearest => eligible(
                    servers
                        .iter()
                        .copied()
                        .filter(|server| {
                            matches!(
                                server.server_type,
                                ServerType::RsPrimary | ServerType::RsSecondary
                            )
                        })
                        .collect(),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::TagSet;
    use super::*;
    use crate::rt::Instant;

    fn server(host: &str, server_type: ServerType, millis: u64) -> ServerDescription {
        ServerDescription {
            server_type,
            round_trip_time: Some(Duration::from_millis(millis)),
            ..ServerDescription::unknown(ServerAddress::tcp(host, 27017))
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

    fn replica_set() -> TopologyDescription {
        let mut b = server("b", ServerType::RsSecondary, 5);
        b.tags = [("dc".to_owned(), "ny".to_owned())].into();
        let mut c = server("c", ServerType::RsSecondary, 10);
        c.tags = [("dc".to_owned(), "sf".to_owned())].into();
        topology(
            TopologyType::ReplicaSetWithPrimary,
            vec![
                server("a", ServerType::RsPrimary, 20),
                b,
                c,
                server("d", ServerType::RsArbiter, 1),
                server("e", ServerType::Unknown, 1),
            ],
        )
    }

    fn preference(mode: ReadPreferenceMode, tag_sets: &[&[(&str, &str)]]) -> ReadPreference {
        let tag_sets: Vec<TagSet> = tag_sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect();
        let options = ReadPreferenceOptions::builder().tag_sets(tag_sets).build();
        ReadPreference::new(mode, Some(options)).unwrap()
    }

    fn hosts(servers: &[&ServerDescription]) -> Vec<String> {
        servers
            .iter()
            .map(|s| s.address.host().to_owned())
            .collect()
    }

    fn suitable(
        topology: &TopologyDescription,
        criteria: Criteria<'_>,
        deprioritized: &[&str],
    ) -> Vec<String> {
        let deprioritized: Vec<_> = deprioritized
            .iter()
            .map(|host| ServerAddress::tcp(*host, 27017))
            .collect();
        hosts(&suitable_servers(topology, &criteria, &deprioritized).unwrap())
    }

    #[test]
    fn replica_set_reads_follow_the_mode() {
        use ReadPreferenceMode::*;
        let rs = replica_set();
        let read = |mode, tags: &[&[(&str, &str)]]| {
            suitable(&rs, Criteria::Read(&preference(mode, tags)), &[])
        };
        assert_eq!(read(Primary, &[]), ["a"]);
        assert_eq!(read(PrimaryPreferred, &[]), ["a"]);
        assert_eq!(read(Secondary, &[]), ["b", "c"]);
        assert_eq!(read(Secondary, &[&[("dc", "sf")]]), ["c"]);
        assert_eq!(read(Secondary, &[&[("dc", "la")]]), Vec::<String>::new());
        assert_eq!(read(SecondaryPreferred, &[&[("dc", "la")]]), ["a"]);
        assert_eq!(
            read(SecondaryPreferred, &[&[("dc", "la")], &[]]),
            ["b", "c"]
        );
        assert_eq!(read(Nearest, &[]), ["a", "b", "c"]);
        assert_eq!(read(Nearest, &[&[("dc", "ny")]]), ["b"]);
        assert_eq!(suitable(&rs, Criteria::Write, &[]), ["a"]);
    }

    #[test]
    fn without_a_primary_writes_find_nothing_and_primary_preferred_reads_secondaries() {
        let mut rs = replica_set();
        rs.topology_type = TopologyType::ReplicaSetNoPrimary;
        rs.servers.remove(&ServerAddress::tcp("a", 27017));
        assert!(suitable(&rs, Criteria::Write, &[]).is_empty());
        let preferred = preference(ReadPreferenceMode::PrimaryPreferred, &[]);
        assert_eq!(suitable(&rs, Criteria::Read(&preferred), &[]), ["b", "c"]);
        let primary = preference(ReadPreferenceMode::Primary, &[]);
        assert!(suitable(&rs, Criteria::Read(&primary), &[]).is_empty());
    }

    #[test]
    fn deprioritized_servers_are_avoided_only_while_others_are_suitable() {
        let rs = replica_set();
        let nearest = preference(ReadPreferenceMode::Nearest, &[]);
        assert_eq!(suitable(&rs, Criteria::Read(&nearest), &["b"]), ["a", "c"]);
        assert_eq!(suitable(&rs, Criteria::Write, &["a"]), ["a"]);
        // All secondaries deprioritized: secondaryPreferred goes to the primary.
        let secondary_preferred = preference(ReadPreferenceMode::SecondaryPreferred, &[]);
        assert_eq!(
            suitable(&rs, Criteria::Read(&secondary_preferred), &["b", "c"]),
            ["a"]
        );
        // The primary deprioritized: primaryPreferred goes to the secondaries.
        let primary_preferred = preference(ReadPreferenceMode::PrimaryPreferred, &[]);
        assert_eq!(
            suitable(&rs, Criteria::Read(&primary_preferred), &["a"]),
            ["b", "c"]
        );
        let sharded = topology(
            TopologyType::Sharded,
            vec![
                server("m", ServerType::Mongos, 1),
                server("n", ServerType::Mongos, 1),
            ],
        );
        assert_eq!(suitable(&sharded, Criteria::Write, &["m"]), ["n"]);
        assert_eq!(suitable(&sharded, Criteria::Write, &["m", "n"]), ["m", "n"]);
    }

    #[test]
    fn other_topologies_ignore_the_read_preference() {
        let secondary = preference(ReadPreferenceMode::Secondary, &[&[("dc", "ny")]]);
        let read = Criteria::Read(&secondary);
        let unknown = topology(
            TopologyType::Unknown,
            vec![server("a", ServerType::RsSecondary, 1)],
        );
        assert!(suitable(&unknown, read, &[]).is_empty());
        for server_type in [
            ServerType::RsOther,
            ServerType::Standalone,
            ServerType::RsArbiter,
        ] {
            let single = topology(TopologyType::Single, vec![server("a", server_type, 1)]);
            assert_eq!(suitable(&single, read, &[]), ["a"]);
            assert_eq!(suitable(&single, Criteria::Write, &[]), ["a"]);
        }
        let single = topology(
            TopologyType::Single,
            vec![server("a", ServerType::Unknown, 1)],
        );
        assert!(suitable(&single, read, &[]).is_empty());
        let sharded = topology(
            TopologyType::Sharded,
            vec![
                server("m", ServerType::Mongos, 1),
                server("u", ServerType::Unknown, 1),
            ],
        );
        assert_eq!(suitable(&sharded, read, &[]), ["m"]);
        let balanced = topology(
            TopologyType::LoadBalanced,
            vec![server("lb", ServerType::LoadBalancer, 0)],
        );
        assert_eq!(suitable(&balanced, read, &[]), ["lb"]);
        assert_eq!(suitable(&balanced, Criteria::Write, &[]), ["lb"]);
    }

    #[test]
    fn candidates_apply_the_latency_window() {
        let rs = replica_set();
        let nearest = preference(ReadPreferenceMode::Nearest, &[]);
        let found = candidates(
            &rs,
            &Criteria::Read(&nearest),
            Duration::from_millis(15),
            &[],
        )
        .unwrap();
        assert_eq!(hosts(&found), ["a", "b", "c"]);
        let found = candidates(
            &rs,
            &Criteria::Read(&nearest),
            Duration::from_millis(5),
            &[],
        )
        .unwrap();
        assert_eq!(hosts(&found), ["b", "c"]);
    }

    #[test]
    fn an_incompatible_topology_fails_selection() {
        let mut rs = replica_set();
        rs.compatibility_error = Some("server too old".into());
        let error = candidates(&rs, &Criteria::Write, Duration::ZERO, &[]).unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::IncompatibleServer { message } if message == "server too old")
        );
    }

    #[test]
    fn an_invalid_read_preference_fails_selection() {
        let rs = replica_set();
        let nearest = ReadPreference::Nearest {
            options: Some(
                ReadPreferenceOptions::builder()
                    .max_staleness(Duration::from_secs(89))
                    .build(),
            ),
        };
        let read = Criteria::Read(&nearest);
        assert!(candidates(&rs, &read, Duration::ZERO, &[]).is_err());
        // Outside replica sets maxStalenessSeconds goes to mongos unchecked.
        let sharded = topology(
            TopologyType::Sharded,
            vec![server("m", ServerType::Mongos, 1)],
        );
        assert_eq!(
            hosts(&candidates(&sharded, &read, Duration::ZERO, &[]).unwrap()),
            ["m"]
        );
        // Mode primary with tags cannot even be made.
        let tags = ReadPreferenceOptions::builder()
            .tag_sets(vec![[("dc".to_owned(), "ny".to_owned())].into()])
            .build();
        assert!(ReadPreference::new(ReadPreferenceMode::Primary, Some(tags)).is_err());
        // Writes do not look at read preferences.
        assert!(candidates(&rs, &Criteria::Write, Duration::ZERO, &[]).is_ok());
    }

    #[test]
    fn stale_secondaries_are_not_eligible() {
        let at = |millis| Some(Instant::from_origin(Duration::from_millis(millis)));
        let mut rs = replica_set();
        let servers: &mut BTreeMap<_, _> = &mut rs.servers;
        for (host, written) in [
            ("a", 1_000_000),
            ("b", 1_000_000),
            ("c", 1_000_000 - 100_000),
        ] {
            let server = servers.get_mut(&ServerAddress::tcp(host, 27017)).unwrap();
            server.last_update_time = at(5_000);
            server.last_write_date = Some(written);
        }
        let secondary = |seconds, tag_sets: Vec<TagSet>| ReadPreference::Secondary {
            options: Some(
                ReadPreferenceOptions::builder()
                    .max_staleness(Duration::from_secs(seconds))
                    .tag_sets(tag_sets)
                    .build(),
            ),
        };
        // c is 100 s behind, plus a heartbeat of 10 s.
        assert_eq!(
            suitable(&rs, Criteria::Read(&secondary(100, vec![])), &[]),
            ["b"]
        );
        assert_eq!(
            suitable(&rs, Criteria::Read(&secondary(110, vec![])), &[]),
            ["b", "c"]
        );
        // maxStalenessSeconds comes before tag sets: c's tag cannot bring it back.
        let sf = vec![[("dc".to_owned(), "sf".to_owned())].into(), TagSet::new()];
        assert_eq!(
            suitable(&rs, Criteria::Read(&secondary(100, sf)), &[]),
            ["b"]
        );
    }

    #[test]
    fn a_predicate_picks_among_the_available_data_bearing_servers() {
        let rs = replica_set();
        let in_sf: Predicate = std::sync::Arc::new(|server: &ServerInfo| {
            server
                .tags()
                .and_then(|tags| tags.get("dc"))
                .map(String::as_str)
                == Some("sf")
        });
        assert_eq!(suitable(&rs, Criteria::Predicate(&in_sf), &[]), ["c"]);
        let any: Predicate = std::sync::Arc::new(|_: &ServerInfo| true);
        // Neither the arbiter nor the unknown server.
        assert_eq!(
            suitable(&rs, Criteria::Predicate(&any), &[]),
            ["a", "b", "c"]
        );
    }
}
