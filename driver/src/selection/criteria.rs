//! [`SelectionCriteria`]: what an application says about the server of an operation,
//! a read preference or a predicate over [`ServerInfo`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use bson::Document;

use super::{read_preference_document, ReadPreference, TagSet};
use crate::error::Error;
use crate::sdam::{ServerDescription, ServerType, TopologyType};
use crate::uri::ServerAddress;

/// Which servers may run an operation: a [`ReadPreference`], or a [`Predicate`] of
/// the application's. Options structs and actions take it as `selection_criteria`;
/// a `ReadPreference` converts into it with `.into()`.
///
/// ```
/// use std::sync::Arc;
/// use anymongo::options::{ReadPreference, SelectionCriteria};
///
/// let secondary: SelectionCriteria = ReadPreference::Secondary { options: None }.into();
/// let ny_only = SelectionCriteria::Predicate(Arc::new(|server| {
///     server.tags().and_then(|tags| tags.get("dc")).map(String::as_str) == Some("ny")
/// }));
/// # let _ = (secondary, ny_only);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum SelectionCriteria {
    /// The read preference decides (Server Selection spec).
    ReadPreference(ReadPreference),
    /// The servers for which the predicate returns `true` are suitable, whatever the
    /// topology type; the latency window still applies. A read sent to a secondary
    /// this way carries `$readPreference: {mode: "primaryPreferred"}`, so that the
    /// secondary answers it.
    Predicate(Predicate),
}

/// A function deciding whether a server is suitable for an operation.
pub type Predicate = Arc<dyn Send + Sync + Fn(&ServerInfo) -> bool>;

impl SelectionCriteria {
    /// The read preference, unless this is a predicate.
    pub(crate) fn as_read_pref(&self) -> Option<&ReadPreference> {
        match self {
            SelectionCriteria::ReadPreference(read_preference) => Some(read_preference),
            SelectionCriteria::Predicate(_) => None,
        }
    }

    /// What selection needs of the server of a read with these criteria.
    pub(crate) fn for_read(&self) -> Criteria<'_> {
        match self {
            SelectionCriteria::ReadPreference(read_preference) => Criteria::Read(read_preference),
            SelectionCriteria::Predicate(predicate) => Criteria::Predicate(predicate),
        }
    }

    /// The `$readPreference` of a read with these criteria sent to a server of
    /// `server_type` ([`read_preference_document`]). A predicate has no read
    /// preference to pass on: the read goes as with `primary`, except that a secondary
    /// the predicate chose gets `primaryPreferred`, which it answers.
    pub(crate) fn command_document(
        &self,
        topology_type: TopologyType,
        server_type: ServerType,
    ) -> Option<Document> {
        let read_preference = match self {
            SelectionCriteria::ReadPreference(read_preference) => read_preference,
            SelectionCriteria::Predicate(_) if server_type == ServerType::RsSecondary => {
                &ReadPreference::PrimaryPreferred { options: None }
            }
            SelectionCriteria::Predicate(_) => &ReadPreference::Primary,
        };
        read_preference_document(topology_type, server_type, read_preference)
    }
}

impl Default for SelectionCriteria {
    /// Read preference `primary`.
    fn default() -> Self {
        SelectionCriteria::ReadPreference(ReadPreference::Primary)
    }
}

impl From<ReadPreference> for SelectionCriteria {
    fn from(read_preference: ReadPreference) -> Self {
        SelectionCriteria::ReadPreference(read_preference)
    }
}

/// Read preferences compare by value; a predicate equals nothing, not even itself,
/// since functions cannot be compared.
impl PartialEq for SelectionCriteria {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SelectionCriteria::ReadPreference(a), SelectionCriteria::ReadPreference(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Debug for SelectionCriteria {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionCriteria::ReadPreference(read_preference) => f
                .debug_tuple("ReadPreference")
                .field(read_preference)
                .finish(),
            SelectionCriteria::Predicate(_) => f.write_str("Predicate(..)"),
        }
    }
}

/// Reads a read preference in its document form (`{ mode: "secondary", ... }`);
/// predicates are code and have no serialized form.
impl<'de> Deserialize<'de> for SelectionCriteria {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ReadPreference::deserialize(deserializer).map(SelectionCriteria::ReadPreference)
    }
}

/// What one operation needs of its server, as server selection reads it.
#[derive(Clone, Copy)]
pub enum Criteria<'a> {
    /// A read, with the read preference that applies to it.
    Read(&'a ReadPreference),
    /// A read (or write) to a server the application's predicate accepts.
    Predicate(&'a Predicate),
    /// A write: only a primary (or mongos, load balancer, standalone) will do.
    Write,
}

impl fmt::Debug for Criteria<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Criteria::Read(read_preference) => {
                f.debug_tuple("Read").field(read_preference).finish()
            }
            Criteria::Predicate(_) => f.write_str("Predicate(..)"),
            Criteria::Write => f.write_str("Write"),
        }
    }
}

/// What the client knows of one server, as a [`Predicate`] sees it (from the Server
/// Discovery and Monitoring spec's server description).
///
/// A predicate sees it borrowed; an SDAM event carries it owned, as
/// [`event::sdam::ServerDescription`](crate::event::sdam::ServerDescription)
/// (`ServerInfo<'static>`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct ServerInfo<'a> {
    description: Cow<'a, ServerDescription>,
}

impl<'a> ServerInfo<'a> {
    pub(crate) fn new(description: &'a ServerDescription) -> Self {
        ServerInfo {
            description: Cow::Borrowed(description),
        }
    }

    pub(crate) fn owned(description: ServerDescription) -> ServerInfo<'static> {
        ServerInfo {
            description: Cow::Owned(description),
        }
    }

    /// The whole description the client keeps of the server (anymongo's: the
    /// official crate exposes only the accessors).
    pub fn description(&self) -> &ServerDescription {
        &self.description
    }

    /// The address the client connects to.
    pub fn address(&self) -> &ServerAddress {
        &self.description.address
    }

    /// The server type from the last check.
    pub fn server_type(&self) -> ServerType {
        self.description.server_type
    }

    /// The averaged round-trip time of the server's checks, which the latency window
    /// of server selection uses; `None` before the first check.
    pub fn average_round_trip_time(&self) -> Option<Duration> {
        self.description.round_trip_time
    }

    /// The replica set member's tags, if it has any.
    pub fn tags(&self) -> Option<&TagSet> {
        Some(&self.description.tags).filter(|tags| !tags.is_empty())
    }

    /// The replica set's name, for a member.
    pub fn replica_set_name(&self) -> Option<&str> {
        self.description.set_name.as_deref()
    }

    /// The replica set's configuration version, for a member.
    pub fn replica_set_version(&self) -> Option<i32> {
        self.description.set_version
    }

    /// The greatest wire version the server speaks, once checked.
    pub fn max_wire_version(&self) -> Option<i32> {
        self.checked().then_some(self.description.max_wire_version)
    }

    /// The least wire version the server speaks, once checked.
    pub fn min_wire_version(&self) -> Option<i32> {
        self.checked().then_some(self.description.min_wire_version)
    }

    /// When the client last updated what it knows of the server (a check, or an error
    /// that marked it Unknown), on the runtime's wall clock; `None` before that.
    pub fn last_update_time(&self) -> Option<bson::DateTime> {
        self.description.last_update_wall_time
    }

    /// Why the last check of the server failed, if it did.
    pub fn error(&self) -> Option<&Error> {
        self.description.error.as_ref()
    }

    fn checked(&self) -> bool {
        self.description.reply.is_some()
    }
}

/// One line for logs: the address and type, the round-trip time once measured, and
/// the last check's error if it failed, e.g. `a:27017 (RSPrimary, 2ms)`.
impl fmt::Display for ServerInfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.address(), self.server_type())?;
        if let Some(rtt) = self.average_round_trip_time() {
            write!(f, ", {rtt:?}")?;
        }
        if let Some(error) = self.error() {
            write!(f, ": {error}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_shows_its_address_type_and_error() {
        let address = ServerAddress::parse("a:27018").unwrap();
        let failed =
            ServerDescription::from_error(address.clone(), Error::internal("refused"), None, None);
        assert_eq!(
            ServerInfo::new(&failed).to_string(),
            "a:27018 (Unknown: internal error: refused)"
        );
        let mut measured = ServerDescription::unknown(address);
        measured.round_trip_time = Some(Duration::from_millis(2));
        assert_eq!(
            ServerInfo::new(&measured).to_string(),
            "a:27018 (Unknown, 2ms)"
        );
    }
}
