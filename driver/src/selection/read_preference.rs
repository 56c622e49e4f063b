//! Read preferences (Server Selection spec, "Read preference"), their tag sets, and
//! the `$readPreference` command argument ("Passing read preference to mongos and
//! load balancers").

use std::collections::HashMap;
use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};
use crate::named_enum::named_enum;
use crate::sdam::{ServerDescription, ServerType, TopologyType};

named_enum! {
    /// The read preference mode (Server Selection spec, "mode"), as
    /// [`ReadPreference::mode`] gives it.
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
pub type TagSet = HashMap<String, String>;

/// Which members of a replica set may serve a read (Server Selection spec, "Read
/// preference"). Every mode but `Primary` may narrow the members down with
/// [`ReadPreferenceOptions`]. Used as a [`SelectionCriteria`](super::SelectionCriteria).
///
/// ```
/// use std::time::Duration;
/// use anymongo::options::{ReadPreference, ReadPreferenceOptions, SelectionCriteria};
///
/// let nearby: SelectionCriteria = ReadPreference::Nearest {
///     options: Some(
///         ReadPreferenceOptions::builder()
///             .max_staleness(Duration::from_secs(120))
///             .build(),
///     ),
/// }
/// .into();
/// let any_secondary = ReadPreference::SecondaryPreferred { options: None };
/// assert_eq!(any_secondary.max_staleness(), None);
/// # let _ = nearby;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ReadPreference {
    /// Only the primary (the default).
    #[default]
    Primary,
    /// Only a secondary.
    Secondary {
        /// Tag sets and maximum staleness; `None`: any secondary.
        options: Option<ReadPreferenceOptions>,
    },
    /// The primary if there is one, else a secondary.
    PrimaryPreferred {
        /// Tag sets and maximum staleness of the secondaries; `None`: any.
        options: Option<ReadPreferenceOptions>,
    },
    /// A secondary if there is one, else the primary.
    SecondaryPreferred {
        /// Tag sets and maximum staleness of the secondaries; `None`: any.
        options: Option<ReadPreferenceOptions>,
    },
    /// Any member within the latency window, primary or secondary.
    Nearest {
        /// Tag sets and maximum staleness; `None`: any member.
        options: Option<ReadPreferenceOptions>,
    },
}

/// The options of a read preference other than `Primary`.
///
/// ```
/// use std::collections::HashMap;
/// use std::time::Duration;
/// use anymongo::options::ReadPreferenceOptions;
///
/// let options = ReadPreferenceOptions::builder()
///     .tag_sets(vec![HashMap::from([("dc".to_string(), "ny".to_string())])])
///     .max_staleness(Duration::from_secs(90))
///     .build();
/// assert_eq!(options.max_staleness, Some(Duration::from_secs(90)));
/// ```
#[allow(deprecated)] // the derives read `hedge`
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ReadPreferenceOptions {
    /// `readPreferenceTags`: tag sets tried in order, the first that matches some
    /// member wins; an empty tag set matches every member.
    pub tag_sets: Option<Vec<TagSet>>,
    /// `maxStalenessSeconds`: how far behind the primary a secondary may be, at least
    /// 90 seconds (checked by server selection). Sent in whole seconds.
    pub max_staleness: Option<Duration>,
    /// Hedged reads on sharded clusters (MongoDB 4.4 to 7.x), sent to mongos.
    #[deprecated(note = "MongoDB 8.0 deprecates hedged reads")]
    pub hedge: Option<HedgedReadOptions>,
}

/// Hedged reads (`$readPreference.hedge`), deprecated by MongoDB 8.0.
#[derive(Debug, Clone, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct HedgedReadOptions {
    /// Whether mongos may send each read to two members of a shard and answer with
    /// the first reply.
    pub enabled: bool,
}

impl ReadPreferenceOptions {
    /// Whether these options narrow nothing (what mode `Primary` requires): no
    /// non-empty tag set, no positive maximum staleness, no hedge.
    fn is_empty(&self) -> bool {
        #[allow(deprecated)]
        let hedge = self.hedge.is_some();
        !hedge
            && self.max_staleness.is_none_or(|d| d.is_zero())
            && self.tag_sets.iter().flatten().all(|tags| tags.is_empty())
    }
}

impl ReadPreference {
    /// The read preference of `mode` with `options`. Fails when `mode` is `primary`
    /// and the options narrow the members (a non-empty tag set, a positive maximum
    /// staleness, a hedge): the primary cannot be narrowed down.
    ///
    /// ```
    /// use anymongo::options::{ReadPreference, ReadPreferenceMode};
    ///
    /// let secondary = ReadPreference::new(ReadPreferenceMode::Secondary, None)?;
    /// assert_eq!(secondary, ReadPreference::Secondary { options: None });
    /// # Ok::<(), anymongo::Error>(())
    /// ```
    pub fn new(
        mode: ReadPreferenceMode,
        options: Option<ReadPreferenceOptions>,
    ) -> Result<ReadPreference> {
        Ok(match mode {
            ReadPreferenceMode::Primary => {
                if let Some(options) = options.filter(|options| !options.is_empty()) {
                    let what = if options.max_staleness.is_some_and(|d| !d.is_zero()) {
                        "maxStalenessSeconds"
                    } else if options
                        .tag_sets
                        .iter()
                        .flatten()
                        .any(|tags| !tags.is_empty())
                    {
                        "tag sets"
                    } else {
                        "hedge"
                    };
                    return Err(Error::invalid_argument(format!(
                        "{what} cannot be used with read preference mode primary"
                    )));
                }
                ReadPreference::Primary
            }
            ReadPreferenceMode::Secondary => ReadPreference::Secondary { options },
            ReadPreferenceMode::PrimaryPreferred => ReadPreference::PrimaryPreferred { options },
            ReadPreferenceMode::SecondaryPreferred => {
                ReadPreference::SecondaryPreferred { options }
            }
            ReadPreferenceMode::Nearest => ReadPreference::Nearest { options },
        })
    }

    /// The mode.
    pub fn mode(&self) -> ReadPreferenceMode {
        match self {
            ReadPreference::Primary => ReadPreferenceMode::Primary,
            ReadPreference::Secondary { .. } => ReadPreferenceMode::Secondary,
            ReadPreference::PrimaryPreferred { .. } => ReadPreferenceMode::PrimaryPreferred,
            ReadPreference::SecondaryPreferred { .. } => ReadPreferenceMode::SecondaryPreferred,
            ReadPreference::Nearest { .. } => ReadPreferenceMode::Nearest,
        }
    }

    /// The options, if any (never for `Primary`).
    pub fn options(&self) -> Option<&ReadPreferenceOptions> {
        match self {
            ReadPreference::Primary => None,
            ReadPreference::Secondary { options }
            | ReadPreference::PrimaryPreferred { options }
            | ReadPreference::SecondaryPreferred { options }
            | ReadPreference::Nearest { options } => options.as_ref(),
        }
    }

    /// The tag sets, in order; empty when none are given (every member is eligible).
    pub fn tag_sets(&self) -> &[TagSet] {
        self.options()
            .and_then(|options| options.tag_sets.as_deref())
            .unwrap_or_default()
    }

    /// The maximum staleness, if given.
    pub fn max_staleness(&self) -> Option<Duration> {
        self.options().and_then(|options| options.max_staleness)
    }

    /// A read preference from its document form (`{ mode, tagSets,
    /// maxStalenessSeconds, hedge }`, as `$readPreference` and the spec tests spell
    /// it; the mode in any case).
    pub(crate) fn from_document(
        document: &Document,
    ) -> std::result::Result<ReadPreference, String> {
        let mode = document
            .get_str("mode")
            .map_err(|_| "a read preference needs a mode")?;
        // Any case, as servers and the official drivers take it ("Secondary" too).
        let mode = ReadPreferenceMode::ALL
            .iter()
            .copied()
            .find(|known| known.name().eq_ignore_ascii_case(mode))
            .ok_or_else(|| format!("unknown read preference mode {mode:?}"))?;
        let mut tag_sets = None;
        if let Some(sets) = document.get("tagSets") {
            let Bson::Array(sets) = sets else {
                return Err(format!("tagSets must be an array, not {sets}"));
            };
            let mut parsed = Vec::with_capacity(sets.len());
            for set in sets {
                let Bson::Document(set) = set else {
                    return Err(format!("a tag set must be a document, not {set}"));
                };
                let tags = set
                    .iter()
                    .map(|(key, value)| match value {
                        Bson::String(value) => Ok((key.clone(), value.clone())),
                        other => Err(format!("tag {key} must be a string, not {other}")),
                    })
                    .collect::<std::result::Result<_, String>>()?;
                parsed.push(tags);
            }
            tag_sets = Some(parsed);
        }
        // -1 (or any negative value) means no maximum.
        let max_staleness = document
            .get("maxStalenessSeconds")
            .and_then(crate::bson_util::as_i64)
            .filter(|seconds| *seconds >= 0)
            .map(|seconds| Duration::from_secs(seconds.unsigned_abs()));
        let hedge = match document.get("hedge") {
            None => None,
            Some(Bson::Document(hedge)) => Some(HedgedReadOptions {
                enabled: hedge
                    .get_bool("enabled")
                    .map_err(|_| "hedge needs a boolean enabled")?,
            }),
            Some(other) => return Err(format!("hedge must be a document, not {other}")),
        };
        #[allow(deprecated)]
        let options = ReadPreferenceOptions {
            tag_sets,
            max_staleness,
            hedge,
        };
        let options = (options != ReadPreferenceOptions::default()).then_some(options);
        ReadPreference::new(mode, options).map_err(|error| error.to_string())
    }

    /// The document form: `{ mode, tagSets, maxStalenessSeconds, hedge }`, each option
    /// when set.
    fn to_document(&self) -> Document {
        let mut document = doc! { "mode": self.mode().name() };
        if let Some(sets) = self.options().and_then(|o| o.tag_sets.as_ref()) {
            document.insert("tagSets", tag_sets_bson(sets));
        }
        if let Some(max_staleness) = self.max_staleness() {
            document.insert("maxStalenessSeconds", seconds_bson(max_staleness));
        }
        #[allow(deprecated)]
        if let Some(hedge) = self.options().and_then(|o| o.hedge.as_ref()) {
            document.insert("hedge", doc! { "enabled": hedge.enabled });
        }
        document
    }
}

/// Reads the document form (`{ mode: "secondary", tagSets: [...],
/// maxStalenessSeconds: 120 }`), as the spec tests and `$readPreference` give it.
impl<'de> Deserialize<'de> for ReadPreference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let document = Document::deserialize(deserializer)?;
        ReadPreference::from_document(&document).map_err(serde::de::Error::custom)
    }
}

/// Writes the document form that [`Deserialize`] reads.
impl Serialize for ReadPreference {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_document().serialize(serializer)
    }
}

fn tag_sets_bson(sets: &[TagSet]) -> Vec<Bson> {
    sets.iter()
        .map(|tag_set| {
            // Sorted, so that the command (and its monitoring events) is the same
            // from one run to the next.
            let mut tags: Vec<_> = tag_set.iter().collect();
            tags.sort();
            Bson::Document(
                tags.into_iter()
                    .map(|(key, value)| (key.clone(), Bson::String(value.clone())))
                    .collect(),
            )
        })
        .collect()
}

fn seconds_bson(duration: Duration) -> Bson {
    let seconds = duration.as_secs();
    match i32::try_from(seconds) {
        Ok(seconds) => Bson::Int32(seconds),
        Err(_) => Bson::Int64(i64::try_from(seconds).unwrap_or(i64::MAX)),
    }
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
/// - any other mode is sent as `{mode, tags, maxStalenessSeconds, hedge}`, to mongos,
///   load balancers and replica set members alike. `tags` is present when some tag
///   set is non-empty, `maxStalenessSeconds` when it is positive.
///
/// Writes carry no read preference; do not call this for them.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::ReadPreference;
/// use anymongo::sdam::{ServerType, TopologyType};
/// use anymongo::selection::read_preference_document;
///
/// let primary = ReadPreference::Primary;
/// assert_eq!(read_preference_document(TopologyType::Sharded, ServerType::Mongos, &primary), None);
/// assert_eq!(
///     read_preference_document(TopologyType::Single, ServerType::RsSecondary, &primary),
///     Some(doc! { "mode": "primaryPreferred" }),
/// );
/// let nearest = ReadPreference::Nearest { options: None };
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
    if read_preference.mode() == ReadPreferenceMode::Primary {
        let routed = matches!(server_type, ServerType::Mongos | ServerType::LoadBalancer);
        return (topology_type == TopologyType::Single && !routed)
            .then(|| doc! { "mode": ReadPreferenceMode::PrimaryPreferred.name() });
    }
    let mut document = doc! { "mode": read_preference.mode().name() };
    let tag_sets = read_preference.tag_sets();
    if tag_sets.iter().any(|tags| !tags.is_empty()) {
        document.insert("tags", tag_sets_bson(tag_sets));
    }
    if let Some(max_staleness) = read_preference.max_staleness().filter(|d| !d.is_zero()) {
        document.insert("maxStalenessSeconds", seconds_bson(max_staleness));
    }
    #[allow(deprecated)]
    if let Some(hedge) = read_preference.options().and_then(|o| o.hedge.as_ref()) {
        document.insert("hedge", doc! { "enabled": hedge.enabled });
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
        let options = ReadPreferenceOptions::builder()
            .tag_sets(vec![tags(&[("dc", "ny")]), TagSet::new()])
            .max_staleness(Duration::from_secs(120))
            .build();
        let preference = ReadPreference::SecondaryPreferred {
            options: Some(options),
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
        let untagged = ReadPreference::SecondaryPreferred {
            options: Some(
                ReadPreferenceOptions::builder()
                    .tag_sets(vec![TagSet::new()])
                    .build(),
            ),
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
        let nearest = ReadPreference::Nearest { options: None };
        for topology in [TopologyType::Single, TopologyType::Unknown] {
            assert_eq!(
                read_preference_document(topology, ServerType::Standalone, &nearest),
                None
            );
        }
    }
}
