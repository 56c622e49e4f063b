//! Read preference tag sets and the `$readPreference` command argument (Server
//! Selection spec, "tag_sets" and "Passing read preference to mongos and load
//! balancers").

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Deserializer};

use crate::named_enum::named_enum;
use crate::sdam::{ServerDescription, ServerType, TopologyType};

named_enum! {
    /// The read preference mode (Server Selection spec, "mode").
    #[derive(Default)]
    ReadPreferenceMode {
        /// Read from the primary only (the default).
        #[default]
        Primary = "primary",
        /// Read from the primary if there is one, else from a secondary.
        PrimaryPreferred = "primaryPreferred",
        /// Read from a secondary only.
        Secondary = "secondary",
        /// Read from a secondary if there is one, else from the primary.
        SecondaryPreferred = "secondaryPreferred",
        /// Read from any member within the latency window.
        Nearest = "nearest",
    }
}

/// One tag set of a read preference: the tags a server must all carry.
pub type TagSet = BTreeMap<String, String>;

/// Which servers may serve reads (Server Selection spec, "Read preference").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPreference {
    /// `readPreference`.
    pub mode: ReadPreferenceMode,
    /// `readPreferenceTags`, one tag set per occurrence of the option, tried in order;
    /// empty means every server is eligible. Must be empty (or hold only empty sets)
    /// with mode `primary`.
    pub tag_sets: Vec<TagSet>,
    /// `maxStalenessSeconds`; `None` (or `-1` in a connection string) means no maximum.
    /// Must be `None` with mode `primary` (Max Staleness spec, "API").
    pub max_staleness: Option<Duration>,
}

impl ReadPreference {
    /// A read preference from its document form (`{ mode, tagSets, maxStalenessSeconds }`,
    /// as `$readPreference` spells it).
    pub(crate) fn from_document(document: &Document) -> Result<ReadPreference, String> {
        let mode = document
            .get_str("mode")
            .map_err(|_| "a read preference needs a mode")?;
        // Any case, as servers and the official drivers take it ("Secondary" too).
        let mode = ReadPreferenceMode::ALL
            .iter()
            .copied()
            .find(|known| known.name().eq_ignore_ascii_case(mode))
            .ok_or_else(|| format!("unknown read preference mode {mode:?}"))?;
        let mut tag_sets = Vec::new();
        for set in document
            .get_array("tagSets")
            .map(|sets| sets.as_slice())
            .unwrap_or_default()
        {
            let Bson::Document(set) = set else {
                return Err(format!("a tag set must be a document, not {set}"));
            };
            let tags = set
                .iter()
                .map(|(key, value)| match value {
                    Bson::String(value) => Ok((key.clone(), value.clone())),
                    other => Err(format!("tag {key} must be a string, not {other}")),
                })
                .collect::<Result<_, String>>()?;
            tag_sets.push(tags);
        }
        let max_staleness = document
            .get("maxStalenessSeconds")
            .and_then(crate::bson_util::as_i64)
            .filter(|seconds| *seconds >= 0)
            .map(|seconds| Duration::from_secs(seconds.unsigned_abs()));
        Ok(ReadPreference {
            mode,
            tag_sets,
            max_staleness,
        })
    }
}

/// Reads a read preference given as `{ mode: "...", tagSets, maxStalenessSeconds }`.
pub(crate) fn deserialize_read_preference<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ReadPreference>, D::Error> {
    let document = Option::<Document>::deserialize(deserializer)?;
    document
        .map(|document| ReadPreference::from_document(&document).map_err(serde::de::Error::custom))
        .transpose()
}

/// Whether the server carries every tag of `tag_set` (the read preference tag set is
/// a subset of the server's); an empty tag set matches every server.
pub fn matches_tag_set(server: &ServerDescription, tag_set: &TagSet) -> bool {
    tag_set
        .iter()
        .all(|(key, value)| server.tags.get(key) == Some(value))
}

/// The eligible servers by tag sets (Server Selection spec, "tag_sets"): all of them
/// when `tag_sets` is empty; otherwise those matching the first tag set that matches
/// any server; none if no tag set matches.
pub(super) fn filter_by_tag_sets<'a>(
    servers: Vec<&'a ServerDescription>,
    tag_sets: &[TagSet],
) -> Vec<&'a ServerDescription> {
    if tag_sets.is_empty() {
        return servers;
    }
    for tag_set in tag_sets {
        let matching: Vec<_> = servers
            .iter()
            .copied()
            .filter(|server| matches_tag_set(server, tag_set))
            .collect();
        if !matching.is_empty() {
            return matching;
        }
    }
    Vec::new()
}

/// The `$readPreference` document to add to a read command (OP_MSG) sent to a server
/// of `server_type` in a topology of `topology_type`, or `None` when none is sent:
///
/// - a Standalone never gets one;
/// - mode `primary` is never sent, except under topology Single (a direct connection)
///   to a replica set member, which gets `{mode: "primaryPreferred"}` so that it
///   answers whatever its state;
/// - any other mode is sent as `{mode, tags, maxStalenessSeconds}`, to mongos, load
///   balancers and replica set members alike. `tags` is present when some tag set is
///   non-empty, `maxStalenessSeconds` when it is positive.
///
/// Writes carry no read preference; do not call this for them.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::sdam::{ServerType, TopologyType};
/// use anymongo::selection::read_preference_document;
/// use anymongo::uri::{ReadPreference, ReadPreferenceMode};
///
/// let primary = ReadPreference::default();
/// assert_eq!(read_preference_document(TopologyType::Sharded, ServerType::Mongos, &primary), None);
/// assert_eq!(
///     read_preference_document(TopologyType::Single, ServerType::RsSecondary, &primary),
///     Some(doc! { "mode": "primaryPreferred" }),
/// );
/// let nearest = ReadPreference { mode: ReadPreferenceMode::Nearest, ..primary };
/// assert_eq!(
///     read_preference_document(TopologyType::Sharded, ServerType::Mongos, &nearest),
///     Some(doc! { "mode": "nearest" }),
/// );
/// ```
pub fn read_preference_document(
    topology_type: TopologyType,
    server_type: ServerType,
    read_preference: &ReadPreference,
) -> Option<Document> {
    if server_type == ServerType::Standalone {
        return None;
    }
    if read_preference.mode == ReadPreferenceMode::Primary {
        let routed = matches!(server_type, ServerType::Mongos | ServerType::LoadBalancer);
        return (topology_type == TopologyType::Single && !routed)
            .then(|| doc! { "mode": ReadPreferenceMode::PrimaryPreferred.name() });
    }
    let mut document = doc! { "mode": read_preference.mode.name() };
    if read_preference.tag_sets.iter().any(|tags| !tags.is_empty()) {
        let tags: Vec<Bson> = read_preference
            .tag_sets
            .iter()
            .map(|tag_set| {
                Bson::Document(
                    tag_set
                        .iter()
                        .map(|(key, value)| (key.clone(), Bson::String(value.clone())))
                        .collect(),
                )
            })
            .collect();
        document.insert("tags", tags);
    }
    if let Some(max_staleness) = read_preference.max_staleness.filter(|d| !d.is_zero()) {
        let seconds = max_staleness.as_secs();
        let value = match i32::try_from(seconds) {
            Ok(seconds) => Bson::Int32(seconds),
            Err(_) => Bson::Int64(i64::try_from(seconds).unwrap_or(i64::MAX)),
        };
        document.insert("maxStalenessSeconds", value);
    }
    Some(document)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::uri::ServerAddress;

    fn tags(pairs: &[(&str, &str)]) -> TagSet {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    fn tagged(name: &str, pairs: &[(&str, &str)]) -> ServerDescription {
        ServerDescription {
            server_type: ServerType::RsSecondary,
            tags: tags(pairs),
            ..ServerDescription::unknown(ServerAddress::tcp(name, 27017))
        }
    }

    #[test]
    fn a_tag_set_matches_servers_that_carry_all_its_tags() {
        let server = tagged("a", &[("dc", "ny"), ("rack", "2"), ("size", "large")]);
        assert!(matches_tag_set(
            &server,
            &tags(&[("dc", "ny"), ("rack", "2")])
        ));
        assert!(matches_tag_set(&server, &TagSet::new()));
        assert!(!matches_tag_set(&server, &tags(&[("dc", "sf")])));
        assert!(!matches_tag_set(
            &server,
            &tags(&[("dc", "ny"), ("disk", "ssd")])
        ));
    }

    #[test]
    fn tag_sets_are_tried_in_order_until_one_matches() {
        let ny = tagged("a", &[("dc", "ny")]);
        let sf = tagged("b", &[("dc", "sf")]);
        let servers = vec![&ny, &sf];
        let names = |servers: Vec<&ServerDescription>| -> Vec<String> {
            servers.iter().map(|s| s.address.to_string()).collect()
        };
        assert_eq!(names(filter_by_tag_sets(servers.clone(), &[])).len(), 2);
        let sets = [tags(&[("dc", "la")]), tags(&[("dc", "sf")]), TagSet::new()];
        assert_eq!(
            names(filter_by_tag_sets(servers.clone(), &sets)),
            ["b:27017"]
        );
        let sets = [tags(&[("dc", "la")]), TagSet::new()];
        assert_eq!(names(filter_by_tag_sets(servers.clone(), &sets)).len(), 2);
        assert!(filter_by_tag_sets(servers, &[tags(&[("dc", "la")])]).is_empty());
    }

    #[test]
    fn the_document_carries_mode_tags_and_max_staleness() {
        let preference = ReadPreference {
            mode: ReadPreferenceMode::SecondaryPreferred,
            tag_sets: vec![tags(&[("dc", "ny")]), TagSet::new()],
            max_staleness: Some(Duration::from_secs(120)),
        };
        for (topology, server) in [
            (TopologyType::Sharded, ServerType::Mongos),
            (TopologyType::LoadBalanced, ServerType::LoadBalancer),
            (TopologyType::ReplicaSetWithPrimary, ServerType::RsSecondary),
            (TopologyType::Single, ServerType::RsPrimary),
        ] {
            assert_eq!(
                read_preference_document(topology, server, &preference),
                Some(doc! {
                    "mode": "secondaryPreferred",
                    "tags": [{ "dc": "ny" }, {}],
                    "maxStalenessSeconds": 120,
                }),
                "{topology} {server}"
            );
        }
        let untagged = ReadPreference {
            tag_sets: vec![TagSet::new()],
            max_staleness: None,
            ..preference.clone()
        };
        assert_eq!(
            read_preference_document(TopologyType::Sharded, ServerType::Mongos, &untagged),
            Some(doc! { "mode": "secondaryPreferred" })
        );
    }

    #[test]
    fn primary_is_not_sent_except_directly_to_a_replica_set_member() {
        let primary = ReadPreference::default();
        for (topology, server, expected) in [
            (TopologyType::Sharded, ServerType::Mongos, None),
            (TopologyType::LoadBalanced, ServerType::LoadBalancer, None),
            (
                TopologyType::ReplicaSetWithPrimary,
                ServerType::RsPrimary,
                None,
            ),
            (TopologyType::Single, ServerType::Standalone, None),
            (TopologyType::Single, ServerType::Mongos, None),
            (
                TopologyType::Single,
                ServerType::RsSecondary,
                Some(doc! { "mode": "primaryPreferred" }),
            ),
            (
                TopologyType::Single,
                ServerType::RsOther,
                Some(doc! { "mode": "primaryPreferred" }),
            ),
        ] {
            assert_eq!(
                read_preference_document(topology, server, &primary),
                expected,
                "{topology} {server}"
            );
        }
    }

    #[test]
    fn a_standalone_never_gets_a_read_preference() {
        let nearest = ReadPreference {
            mode: ReadPreferenceMode::Nearest,
            ..ReadPreference::default()
        };
        for topology in [TopologyType::Single, TopologyType::Unknown] {
            assert_eq!(
                read_preference_document(topology, ServerType::Standalone, &nearest),
                None
            );
        }
    }
}
