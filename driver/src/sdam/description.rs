//! The data of Server Discovery and Monitoring: what the client believes about each
//! server ([`ServerDescription`]) and about the deployment ([`TopologyDescription`]).
//! Spec: server-discovery-and-monitoring.md, "Data structures".
//!
//! Everything here is plain data built from hello replies and errors; no I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};

use crate::bson_util::as_i64;
use crate::error::{CommandError, Error, ErrorKind};
use crate::handshake::{DRIVER_NAME, MAX_WIRE_VERSION, MIN_WIRE_VERSION};
use crate::rt::{Clock, Instant};
use crate::uri::ServerAddress;

pub use super::topology_version::TopologyVersion;

/// What kind of server a [`ServerDescription`] describes (spec "ServerType").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum ServerType {
    /// Not checked yet, or the last check failed.
    #[default]
    Unknown,
    /// A server that is not part of a replica set or sharded cluster.
    Standalone,
    /// A mongos router.
    Mongos,
    /// The primary of a replica set, as far as a secondary believes: never from a
    /// hello reply of the server itself (spec: only drivers that check servers one by
    /// one use it).
    PossiblePrimary,
    /// The primary of a replica set.
    RsPrimary,
    /// A secondary of a replica set.
    RsSecondary,
    /// An arbiter.
    RsArbiter,
    /// A hidden, starting-up or recovering member.
    RsOther,
    /// A member that is not yet configured (no setName, `isreplicaset: true`).
    RsGhost,
    /// A load balancer in front of mongos routers (load-balanced mode).
    LoadBalancer,
}

impl ServerType {
    /// The spec's name for the type, as in the JSON tests: "RSPrimary", "Mongos", ….
    pub fn name(self) -> &'static str {
        match self {
            ServerType::Unknown => "Unknown",
            ServerType::Standalone => "Standalone",
            ServerType::Mongos => "Mongos",
            ServerType::PossiblePrimary => "PossiblePrimary",
            ServerType::RsPrimary => "RSPrimary",
            ServerType::RsSecondary => "RSSecondary",
            ServerType::RsArbiter => "RSArbiter",
            ServerType::RsOther => "RSOther",
            ServerType::RsGhost => "RSGhost",
            ServerType::LoadBalancer => "LoadBalancer",
        }
    }

    /// A member of a replica set that carries data or votes: primary, secondary,
    /// arbiter or other (not a ghost).
    pub fn is_replica_set_member(self) -> bool {
        matches!(
            self,
            ServerType::RsPrimary
                | ServerType::RsSecondary
                | ServerType::RsArbiter
                | ServerType::RsOther
        )
    }

    /// A server that can hold data and answer operations (spec "data-bearing").
    pub fn is_data_bearing(self) -> bool {
        matches!(
            self,
            ServerType::Standalone
                | ServerType::Mongos
                | ServerType::RsPrimary
                | ServerType::RsSecondary
                | ServerType::LoadBalancer
        )
    }
}

impl fmt::Display for ServerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The client's view of one server, from its most recent hello reply or error. It
/// serializes (for logs) without its update time, a monotonic instant.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDescription {
    /// The address the client connects to (not the server's `me`).
    pub address: ServerAddress,
    /// Why the last check failed, or the application error that marked the server
    /// Unknown; `None` after a success. It serializes as its message.
    #[serde(serialize_with = "error_message")]
    pub error: Option<Error>,
    /// The averaged round-trip time of hello calls (exponentially weighted).
    pub round_trip_time: Option<Duration>,
    /// The smallest of the recent round-trip times.
    pub min_round_trip_time: Option<Duration>,
    /// `lastWrite.lastWriteDate` in milliseconds since the Unix epoch.
    pub last_write_date: Option<i64>,
    /// The server type from the last reply.
    pub server_type: ServerType,
    /// `minWireVersion` (default 0).
    pub min_wire_version: i32,
    /// `maxWireVersion` (default 0).
    pub max_wire_version: i32,
    /// `me`, lower-cased.
    pub me: Option<String>,
    /// `hosts`, lower-cased.
    pub hosts: Vec<String>,
    /// `passives`, lower-cased.
    pub passives: Vec<String>,
    /// `arbiters`, lower-cased.
    pub arbiters: Vec<String>,
    /// `tags`.
    pub tags: std::collections::HashMap<String, String>,
    /// `setName`.
    pub set_name: Option<String>,
    /// `setVersion`.
    pub set_version: Option<i32>,
    /// `electionId`.
    pub election_id: Option<ObjectId>,
    /// `primary`, lower-cased.
    pub primary: Option<String>,
    /// When this description was made (for Unknown, when the check failed), on the
    /// runtime's monotonic clock: what the driver's logic (max staleness) reads.
    #[serde(skip)]
    pub last_update_time: Option<Instant>,
    /// The same moment on the runtime's wall clock, for
    /// [`ServerInfo::last_update_time`](crate::selection::ServerInfo::last_update_time).
    #[serde(skip)]
    pub last_update_wall_time: Option<bson::DateTime>,
    /// `logicalSessionTimeoutMinutes`.
    pub logical_session_timeout_minutes: Option<i64>,
    /// `topologyVersion`.
    pub topology_version: Option<TopologyVersion>,
    /// `serviceId`, behind a load balancer.
    pub service_id: Option<ObjectId>,
    /// `iscryptd`.
    pub is_cryptd: bool,
    /// `maxBsonObjectSize`, `maxMessageSizeBytes`, `maxWriteBatchSize` and the other
    /// fields operations read: the whole successful reply.
    pub reply: Option<Document>,
}

/// When a [`ServerDescription`] is made, read from the runtime's [`Clock`] once: the
/// monotonic reading for the driver's logic, and the wall-clock one for applications
/// (the wall clock may jump, and is not `SystemTime` on every target: the runtime's
/// clock gives it, `Date.now()` in the npm package).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp {
    /// The monotonic reading.
    pub monotonic: Instant,
    /// The wall-clock reading.
    pub wall: bson::DateTime,
}

impl Stamp {
    /// Now, on `clock`.
    pub fn now(clock: &dyn Clock) -> Stamp {
        let since_epoch = clock.unix_time().as_millis();
        Stamp {
            monotonic: clock.now(),
            wall: bson::DateTime::from_millis(i64::try_from(since_epoch).unwrap_or(i64::MAX)),
        }
    }
}

impl ServerDescription {
    /// The description of a server not checked yet: type Unknown, no error.
    pub fn unknown(address: ServerAddress) -> ServerDescription {
        ServerDescription {
            address,
            error: None,
            round_trip_time: None,
            min_round_trip_time: None,
            last_write_date: None,
            server_type: ServerType::Unknown,
            min_wire_version: 0,
            max_wire_version: 0,
            me: None,
            hosts: Vec::new(),
            passives: Vec::new(),
            arbiters: Vec::new(),
            tags: Default::default(),
            set_name: None,
            set_version: None,
            election_id: None,
            primary: None,
            last_update_time: None,
            last_update_wall_time: None,
            logical_session_timeout_minutes: None,
            topology_version: None,
            service_id: None,
            is_cryptd: false,
            reply: None,
        }
    }

    /// The description after a failed check or an application error: Unknown, with the
    /// error, keeping a `topologyVersion` when the error carried one.
    pub fn from_error(
        address: ServerAddress,
        error: Error,
        topology_version: Option<TopologyVersion>,
        now: Option<Stamp>,
    ) -> ServerDescription {
        ServerDescription {
            error: Some(error),
            topology_version,
            last_update_time: now.map(|now| now.monotonic),
            last_update_wall_time: now.map(|now| now.wall),
            ..ServerDescription::unknown(address)
        }
    }

    /// The description from a successful hello (or legacy hello) reply, per the spec's
    /// "Parsing a hello or legacy hello response". A reply with `ok` other than 1 is an
    /// error description.
    pub fn from_hello(
        address: ServerAddress,
        reply: Document,
        round_trip_time: Option<Duration>,
        now: Option<Stamp>,
    ) -> ServerDescription {
        let ok = reply.get("ok").is_none_or(|ok| match ok {
            Bson::Boolean(ok) => *ok,
            other => as_i64(other) == Some(1) || matches!(other, Bson::Double(v) if *v == 1.0),
        });
        if !ok {
            let error = Error::new(ErrorKind::Command(CommandError {
                code: reply
                    .get("code")
                    .and_then(as_i64)
                    .and_then(|code| i32::try_from(code).ok())
                    .unwrap_or(0),
                code_name: reply.get_str("codeName").unwrap_or_default().to_owned(),
                message: reply.get_str("errmsg").unwrap_or("hello failed").to_owned(),
                error_labels: Vec::new(),
                topology_version: None,
            }));
            return ServerDescription::from_error(address, error, None, now);
        }
        let flag = |key: &str| reply.get_bool(key).unwrap_or(false);
        let int = |key: &str| reply.get(key).and_then(as_i64);
        let string = |key: &str| reply.get_str(key).ok().map(str::to_owned);
        let lower = |key: &str| reply.get_str(key).ok().map(str::to_ascii_lowercase);
        let list = |key: &str| {
            reply
                .get_array(key)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Bson::as_str)
                        .map(str::to_ascii_lowercase)
                        .collect()
                })
                .unwrap_or_default()
        };
        let set_name = string("setName");
        let server_type = if flag("isreplicaset") {
            ServerType::RsGhost
        } else if reply.get_str("msg").ok() == Some("isdbgrid") {
            ServerType::Mongos
        } else if set_name.is_some() {
            if flag("isWritablePrimary") || flag("ismaster") {
                ServerType::RsPrimary
            } else if flag("hidden") {
                ServerType::RsOther
            } else if flag("secondary") {
                ServerType::RsSecondary
            } else if flag("arbiterOnly") {
                ServerType::RsArbiter
            } else {
                ServerType::RsOther
            }
        } else {
            ServerType::Standalone
        };
        let tags = reply
            .get_document("tags")
            .map(|tags| {
                tags.iter()
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let last_write_date = reply.get_document("lastWrite").ok().and_then(|last_write| {
            match last_write.get("lastWriteDate")? {
                Bson::DateTime(date) => Some(date.timestamp_millis()),
                other => as_i64(other),
            }
        });
        ServerDescription {
            address,
            error: None,
            round_trip_time,
            min_round_trip_time: round_trip_time,
            last_write_date,
            server_type,
            min_wire_version: int("minWireVersion")
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0),
            max_wire_version: int("maxWireVersion")
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0),
            me: lower("me"),
            hosts: list("hosts"),
            passives: list("passives"),
            arbiters: list("arbiters"),
            tags,
            set_name,
            set_version: int("setVersion").and_then(|v| i32::try_from(v).ok()),
            election_id: reply.get_object_id("electionId").ok(),
            primary: lower("primary"),
            last_update_time: now.map(|now| now.monotonic),
            last_update_wall_time: now.map(|now| now.wall),
            logical_session_timeout_minutes: int("logicalSessionTimeoutMinutes"),
            topology_version: TopologyVersion::from_reply(&reply),
            service_id: reply.get_object_id("serviceId").ok(),
            is_cryptd: flag("iscryptd"),
            reply: Some(reply),
        }
    }

    /// When this description was made, if it was stamped.
    pub fn stamp(&self) -> Option<Stamp> {
        Some(Stamp {
            monotonic: self.last_update_time?,
            wall: self.last_update_wall_time?,
        })
    }

    /// Whether the server can be selected at all (known, not Unknown/Ghost/PossiblePrimary).
    pub fn is_available(&self) -> bool {
        self.server_type.is_data_bearing()
    }

    /// Why the driver cannot talk to this server, if its wire version range does not
    /// overlap the driver's (spec "Checking wire protocol compatibility"); `None` when
    /// it does, and for servers not checked yet (Unknown, PossiblePrimary) and load
    /// balancers, whose versions are not known.
    pub fn compatibility_error(&self) -> Option<String> {
        if matches!(
            self.server_type,
            ServerType::Unknown | ServerType::PossiblePrimary | ServerType::LoadBalancer
        ) {
            return None;
        }
        if self.min_wire_version > MAX_WIRE_VERSION {
            Some(format!(
                "Server at {} requires wire version {}, but this version of {DRIVER_NAME} only supports up to {MAX_WIRE_VERSION}.",
                self.address, self.min_wire_version
            ))
        } else if self.max_wire_version < MIN_WIRE_VERSION {
            Some(format!(
                "Server at {} reports wire version {}, but this version of {DRIVER_NAME} requires at least {MIN_WIRE_VERSION} (MongoDB 4.2).",
                self.address, self.max_wire_version
            ))
        } else {
            None
        }
    }

    /// All members this server reports: hosts, passives and arbiters.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        self.hosts
            .iter()
            .chain(&self.passives)
            .chain(&self.arbiters)
            .map(String::as_str)
    }
}

/// Server Description Equality (spec): two descriptions are equal when the fields
/// marked (=) are; round-trip times, update times and the raw reply do not count.
/// Errors compare by message.
impl PartialEq for ServerDescription {
    fn eq(&self, other: &Self) -> bool {
        self.address == other.address
            && self.error.as_ref().map(ToString::to_string)
                == other.error.as_ref().map(ToString::to_string)
            && self.server_type == other.server_type
            && self.min_wire_version == other.min_wire_version
            && self.max_wire_version == other.max_wire_version
            && self.me == other.me
            && sorted(&self.hosts) == sorted(&other.hosts)
            && sorted(&self.passives) == sorted(&other.passives)
            && sorted(&self.arbiters) == sorted(&other.arbiters)
            && self.tags == other.tags
            && self.set_name == other.set_name
            && self.election_id == other.election_id
            && self.set_version == other.set_version
            && self.primary == other.primary
            && self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            && self.topology_version == other.topology_version
            && self.is_cryptd == other.is_cryptd
    }
}

fn sorted(items: &[String]) -> Vec<&str> {
    let mut items: Vec<&str> = items.iter().map(String::as_str).collect();
    items.sort_unstable();
    items
}

/// The kind of deployment (spec "TopologyType").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum TopologyType {
    /// Not known yet (several seeds, no replicaSet option).
    #[default]
    Unknown,
    /// One server, used directly whatever it is (directConnection=true).
    Single,
    /// A replica set whose primary is not known.
    ReplicaSetNoPrimary,
    /// A replica set with a known primary.
    ReplicaSetWithPrimary,
    /// mongos routers.
    Sharded,
    /// A load balancer (loadBalanced=true).
    LoadBalanced,
}

impl TopologyType {
    /// The spec's name, as in the JSON tests.
    pub fn name(self) -> &'static str {
        match self {
            TopologyType::Unknown => "Unknown",
            TopologyType::Single => "Single",
            TopologyType::ReplicaSetNoPrimary => "ReplicaSetNoPrimary",
            TopologyType::ReplicaSetWithPrimary => "ReplicaSetWithPrimary",
            TopologyType::Sharded => "Sharded",
            TopologyType::LoadBalanced => "LoadBalanced",
        }
    }
}

impl fmt::Display for TopologyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The client's view of the whole deployment. It serializes (for logs) with its
/// servers by their addresses as strings.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDescription {
    /// The kind of deployment.
    pub topology_type: TopologyType,
    /// The replica set name, from the replicaSet option or the first member seen.
    pub set_name: Option<String>,
    /// The greatest `setVersion` seen from a primary.
    pub max_set_version: Option<i32>,
    /// The greatest `electionId` seen from a primary.
    pub max_election_id: Option<ObjectId>,
    /// Every server the client monitors, by address.
    #[serde(serialize_with = "servers_by_name")]
    pub servers: BTreeMap<ServerAddress, ServerDescription>,
    /// Why the client cannot talk to this deployment (a wire version out of range).
    pub compatibility_error: Option<String>,
    /// The smallest `logicalSessionTimeoutMinutes` of the data-bearing servers, or
    /// `None` if one of them does not support sessions.
    pub logical_session_timeout_minutes: Option<i64>,
    /// How often servers are checked (heartbeatFrequencyMS), used by max staleness.
    pub heartbeat_frequency: Duration,
}

/// The default heartbeatFrequencyMS of clients that monitor in the background
/// (spec "heartbeatFrequencyMS"): 10 seconds.
pub const DEFAULT_HEARTBEAT_FREQUENCY: Duration = Duration::from_secs(10);

/// An empty description: TopologyType Unknown, no servers, the default heartbeat
/// frequency. It is the "previous description" of the first
/// TopologyDescriptionChangedEvent and what a closed topology becomes.
impl Default for TopologyDescription {
    fn default() -> Self {
        TopologyDescription {
            topology_type: TopologyType::Unknown,
            set_name: None,
            max_set_version: None,
            max_election_id: None,
            servers: BTreeMap::new(),
            compatibility_error: None,
            logical_session_timeout_minutes: None,
            heartbeat_frequency: DEFAULT_HEARTBEAT_FREQUENCY,
        }
    }
}

impl TopologyDescription {
    /// The description of the server at `address`, if it is part of the topology.
    pub fn server(&self, address: &ServerAddress) -> Option<&ServerDescription> {
        self.servers.get(address)
    }

    /// The spec's `compatible`: false when a server's wire version range does not
    /// overlap the driver's; [`compatibility_error`](Self::compatibility_error) then
    /// says which and why.
    pub fn compatible(&self) -> bool {
        self.compatibility_error.is_none()
    }

    /// The primary of a replica set, if one is known.
    pub fn primary(&self) -> Option<&ServerDescription> {
        self.servers
            .values()
            .find(|server| server.server_type == ServerType::RsPrimary)
    }
}

/// A one-line summary for error messages: the type, the set name, then each server
/// with its type and, for an Unknown server, the last error, e.g.
/// `ReplicaSetNoPrimary (setName "rs"): a:27017 (Unknown: connection refused), b:27017 (RSSecondary)`.
impl fmt::Display for TopologyDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.topology_type)?;
        if let Some(set_name) = &self.set_name {
            write!(f, " (setName {set_name:?})")?;
        }
        f.write_str(": ")?;
        if self.servers.is_empty() {
            f.write_str("no servers")?;
        }
        for (i, server) in self.servers.values().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} ({}", server.address, server.server_type)?;
            if let Some(error) = &server.error {
                write!(f, ": {error}")?;
            }
            f.write_str(")")?;
        }
        if let Some(error) = &self.compatibility_error {
            write!(f, "; {error}")?;
        }
        Ok(())
    }
}

/// Serializes the servers of a [`TopologyDescription`] as a map by `host:port`: map
/// keys must be strings in most formats.
fn servers_by_name<S: serde::Serializer>(
    servers: &BTreeMap<ServerAddress, ServerDescription>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(
        servers
            .iter()
            .map(|(address, server)| (address.to_string(), server)),
    )
}

/// Serializes a [`ServerDescription`]'s error as its message.
fn error_message<S: serde::Serializer>(
    error: &Option<Error>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match error {
        Some(error) => serializer.collect_str(error),
        None => serializer.serialize_none(),
    }
}
