//! Read and write concerns as commands carry them (Read and Write Concern spec).
//!
//! A client's defaults come from its connection string (`readConcernLevel`, `w`,
//! `journal`, `wTimeoutMS`); a [`crate::Database`] or [`crate::Collection`] may
//! override them. The server's default applies when none is given: a concern that is
//! empty is not sent at all (spec, "Using the default").

use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

/// A read concern level (Read and Write Concern spec, "Read Concern").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReadConcernLevel {
    /// `local`.
    Local,
    /// `majority`.
    Majority,
    /// `linearizable`.
    Linearizable,
    /// `available`.
    Available,
    /// `snapshot`.
    Snapshot,
    /// A level this driver does not know, passed to the server as is ("to allow for
    /// forwards compatibility with the server").
    Custom(String),
}

impl ReadConcernLevel {
    const KNOWN: [ReadConcernLevel; 5] = [
        ReadConcernLevel::Local,
        ReadConcernLevel::Majority,
        ReadConcernLevel::Linearizable,
        ReadConcernLevel::Available,
        ReadConcernLevel::Snapshot,
    ];

    /// The level as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            ReadConcernLevel::Local => "local",
            ReadConcernLevel::Majority => "majority",
            ReadConcernLevel::Linearizable => "linearizable",
            ReadConcernLevel::Available => "available",
            ReadConcernLevel::Snapshot => "snapshot",
            ReadConcernLevel::Custom(level) => level,
        }
    }

    /// The level spelled `level`: a known one, else [`ReadConcernLevel::Custom`].
    pub fn from_name(level: &str) -> ReadConcernLevel {
        ReadConcernLevel::KNOWN
            .into_iter()
            .find(|known| known.as_str() == level)
            .unwrap_or_else(|| ReadConcernLevel::Custom(level.to_owned()))
    }
}

/// The `w` of a write concern: how many members must acknowledge a write.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Acknowledgment {
    /// That many members (`0` asks for no acknowledgment at all).
    Nodes(u32),
    /// A majority of the voting members.
    Majority,
    /// A custom write concern name (a tag set defined on the replica set).
    Custom(String),
}

/// The client's default write concern (Read and Write Concern spec, "Write Concern").
#[derive(Debug, Clone, Default, PartialEq, Eq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct WriteConcern {
    /// `w`; `None` leaves it to the server.
    pub w: Option<Acknowledgment>,
    /// `journal` (sent as `j`): wait for the journal commit. `true` cannot be combined
    /// with `w: 0`.
    pub journal: Option<bool>,
    /// `wTimeoutMS` (sent as `wtimeout`); zero means no limit. (The Client Side
    /// Operations Timeout spec deprecates it in favour of `timeoutMS`, which the driver
    /// does not implement yet.)
    pub w_timeout: Option<Duration>,
}

/// How fresh and how durable the data a read returns must be.
///
/// ```
/// use anymongo::concern::{ReadConcern, ReadConcernLevel};
/// let concern = ReadConcern::new(ReadConcernLevel::Majority);
/// assert_eq!(concern.to_document(), anymongo::bson::doc! { "level": "majority" });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadConcern {
    /// The level.
    pub level: ReadConcernLevel,
}

impl ReadConcern {
    /// A read concern of `level`.
    pub fn new(level: ReadConcernLevel) -> ReadConcern {
        ReadConcern { level }
    }

    /// `majority`: data a majority of the replica set has acknowledged.
    pub fn majority() -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::Majority)
    }

    /// `local`: the server's most recent data (the server's default).
    pub fn local() -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::Local)
    }

    /// `linearizable`: reads that reflect every write acknowledged before them.
    pub fn linearizable() -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::Linearizable)
    }

    /// `available`: the lowest latency, on sharded clusters possibly orphaned data.
    pub fn available() -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::Available)
    }

    /// `snapshot`: the reads of a transaction or snapshot session see one point in
    /// time.
    pub fn snapshot() -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::Snapshot)
    }

    /// A level this driver does not name (a `majority`, `local`... spelled out is the
    /// known level), for servers newer than the driver.
    pub fn custom(level: impl AsRef<str>) -> ReadConcern {
        ReadConcern::new(ReadConcernLevel::from_name(level.as_ref()))
    }

    /// The `readConcern` document of a command.
    pub fn to_document(&self) -> Document {
        doc! { "level": self.level.as_str() }
    }
}

impl From<ReadConcernLevel> for ReadConcern {
    fn from(level: ReadConcernLevel) -> ReadConcern {
        ReadConcern::new(level)
    }
}

impl From<u32> for Acknowledgment {
    fn from(nodes: u32) -> Acknowledgment {
        Acknowledgment::Nodes(nodes)
    }
}

impl From<&str> for Acknowledgment {
    /// `"majority"` is [`Acknowledgment::Majority`]; any other name a custom one.
    fn from(name: &str) -> Acknowledgment {
        Acknowledgment::from(name.to_owned())
    }
}

impl From<String> for Acknowledgment {
    /// `"majority"` is [`Acknowledgment::Majority`]; any other name a custom one.
    fn from(name: String) -> Acknowledgment {
        match name.as_str() {
            "majority" => Acknowledgment::Majority,
            _ => Acknowledgment::Custom(name),
        }
    }
}

impl From<Acknowledgment> for WriteConcern {
    fn from(w: Acknowledgment) -> WriteConcern {
        WriteConcern {
            w: Some(w),
            ..WriteConcern::default()
        }
    }
}

impl WriteConcern {
    /// A write concern from its command form (`{ w, j, wtimeout }`), or as an options
    /// document spells it (`journal`, `wtimeoutMS`). A negative `w` or `wtimeout` is
    /// refused (spec, "WriteConcern": both are non-negative); combinations are left to
    /// [`validate`](WriteConcern::validate).
    ///
    /// ```
    /// use std::time::Duration;
    /// use anymongo::bson::doc;
    /// use anymongo::concern::WriteConcern;
    /// let concern = WriteConcern::from_document(&doc! { "w": "majority", "wtimeoutMS": 500 })?;
    /// assert_eq!(concern.w_timeout, Some(Duration::from_millis(500)));
    /// assert!(WriteConcern::from_document(&doc! { "w": -1 }).is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn from_document(document: &Document) -> std::result::Result<WriteConcern, String> {
        let w = match document.get("w") {
            None => None,
            Some(Bson::String(name)) => Some(Acknowledgment::from(name.as_str())),
            Some(number) => {
                let nodes = crate::bson_util::as_i64(number)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| format!("invalid w: {number}"))?;
                Some(Acknowledgment::Nodes(nodes))
            }
        };
        // The command's spelling, or the option's (`journal`, `wtimeoutMS`: Read and
        // Write Concern spec, "WriteConcern").
        let journal = document
            .get_bool("j")
            .or_else(|_| document.get_bool("journal"))
            .ok();
        let w_timeout = match document
            .get("wtimeout")
            .or_else(|| document.get("wtimeoutMS"))
        {
            None => None,
            Some(value) => {
                let millis = crate::bson_util::as_i64(value)
                    .and_then(|ms| u64::try_from(ms).ok())
                    .ok_or_else(|| format!("invalid wtimeout: {value}"))?;
                Some(Duration::from_millis(millis))
            }
        };
        Ok(WriteConcern {
            w,
            journal,
            w_timeout,
        })
    }

    /// A write concern of `w: majority`.
    pub fn majority() -> WriteConcern {
        Acknowledgment::Majority.into()
    }

    /// A write concern of `w: nodes` (`w: 0` asks for no acknowledgment at all).
    pub fn nodes(nodes: u32) -> WriteConcern {
        Acknowledgment::Nodes(nodes).into()
    }

    /// A write concern of `w: name`: a tag set defined on the replica set
    /// (`"majority"` is [`WriteConcern::majority`]).
    pub fn custom(name: impl AsRef<str>) -> WriteConcern {
        Acknowledgment::from(name.as_ref()).into()
    }

    /// Whether the server acknowledges writes: everything but `w: 0` without
    /// `journal: true` (spec, "Unacknowledged Write Concern").
    ///
    /// ```
    /// use anymongo::concern::WriteConcern;
    /// assert!(WriteConcern::default().is_acknowledged());
    /// assert!(!WriteConcern::nodes(0).is_acknowledged());
    /// ```
    pub fn is_acknowledged(&self) -> bool {
        self.w != Some(Acknowledgment::Nodes(0)) || self.journal == Some(true)
    }

    /// Whether nothing is set: the server's default applies and no `writeConcern` is
    /// sent.
    pub fn is_empty(&self) -> bool {
        self.w.is_none() && self.journal.is_none() && self.w_timeout.is_none()
    }

    /// Refuses the combinations the server would (spec, "Write Concern": `w: 0` with
    /// `journal: true`).
    pub fn validate(&self) -> Result<()> {
        if self.w == Some(Acknowledgment::Nodes(0)) && self.journal == Some(true) {
            return Err(Error::invalid_argument(
                "a write concern cannot combine w: 0 with journal: true",
            ));
        }
        Ok(())
    }

    /// The `writeConcern` document of a command.
    ///
    /// ```
    /// use std::time::Duration;
    /// use anymongo::concern::WriteConcern;
    /// let mut concern = WriteConcern::majority();
    /// concern.w_timeout = Some(Duration::from_millis(500));
    /// assert_eq!(
    ///     concern.to_document(),
    ///     anymongo::bson::doc! { "w": "majority", "wtimeout": 500_i64 }
    /// );
    /// ```
    pub fn to_document(&self) -> Document {
        let mut document = Document::new();
        match &self.w {
            Some(Acknowledgment::Nodes(nodes)) => {
                document.insert("w", i32::try_from(*nodes).unwrap_or(i32::MAX));
            }
            Some(Acknowledgment::Majority) => {
                document.insert("w", "majority");
            }
            Some(Acknowledgment::Custom(name)) => {
                document.insert("w", name.as_str());
            }
            None => {}
        }
        if let Some(journal) = self.journal {
            document.insert("j", journal);
        }
        if let Some(timeout) = self.w_timeout {
            let millis = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
            document.insert("wtimeout", Bson::Int64(millis));
        }
        document
    }
}

/// Reads a read concern given as `{ level: "..." }`.
pub(crate) fn deserialize_read_concern<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<ReadConcern>, D::Error> {
    #[derive(Deserialize)]
    struct Spelled {
        level: Option<String>,
    }
    let spelled = Option::<Spelled>::deserialize(deserializer)?;
    Ok(spelled
        .and_then(|spelled| spelled.level)
        .map(|level| ReadConcern::new(ReadConcernLevel::from_name(&level))))
}

/// Reads a write concern given as `{ w, j, wtimeout }`.
pub(crate) fn deserialize_write_concern<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<WriteConcern>, D::Error> {
    let document = Option::<Document>::deserialize(deserializer)?;
    document
        .map(|document| WriteConcern::from_document(&document).map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_write_concern_is_acknowledged_and_sends_nothing() {
        let concern = WriteConcern::default();
        assert!(concern.is_acknowledged());
        assert!(concern.is_empty());
        assert!(concern.to_document().is_empty());
    }

    #[test]
    fn w_zero_is_unacknowledged_unless_journaled() {
        let mut concern = WriteConcern::nodes(0);
        assert!(!concern.is_acknowledged());
        assert_eq!(concern.to_document(), doc! { "w": 0 });
        concern.journal = Some(true);
        assert!(concern.is_acknowledged());
        assert!(concern.validate().is_err());
    }

    #[test]
    fn custom_write_concerns_are_sent_by_name() {
        let concern = WriteConcern {
            w: Some(Acknowledgment::Custom("dc".into())),
            journal: Some(false),
            w_timeout: None,
        };
        assert_eq!(concern.to_document(), doc! { "w": "dc", "j": false });
    }
}
