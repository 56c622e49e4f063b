//! The Index Management spec: creating, dropping and listing the indexes of a
//! [`Collection`].
//!
//! `createIndexes` and `dropIndexes` are writes that carry the collection's write
//! concern and are not retried; `listIndexes` is a retryable read on the primary.
//!
//! Atlas Search indexes have helpers of their own ([`SearchIndexModel`],
//! [`Collection::create_search_index`] and the rest: spec, "Search Indexes"): their
//! commands carry neither read nor write concern, which Atlas refuses.

use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Serialize};

use crate::bson_util::{insert_present, millis};
use crate::collection::Collection;
use crate::concern::WriteConcern;
use crate::crud::AggregateOptions;
use crate::cursor::Cursor;
use crate::database::Concerns;
use crate::enumerate::{list, Listing};
use crate::error::{Error, Result};
use crate::session::ClientSession;

/// An index: its keys, in order, and its options. What
/// [`Collection::create_index`] takes and [`Collection::list_indexes`] yields (there,
/// read from the server's description of the index: `key`, and the rest as its
/// options).
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::IndexOptions;
/// use anymongo::IndexModel;
/// let by_email = IndexModel::builder()
///     .keys(doc! { "email": 1 })
///     .options(IndexOptions::builder().unique(true).name("by_email".to_string()).build())
///     .build();
/// assert_eq!(by_email.name(), "by_email");
/// let by_name = IndexModel::builder().keys(doc! { "name": 1, "born": -1 }).build();
/// assert_eq!(by_name.name(), "name_1_born_-1");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IndexModel {
    /// The indexed fields and each one's kind: `1`, `-1`, `"text"`, `"2dsphere"`...
    #[serde(rename = "key")]
    pub keys: Document,
    /// The index's options; its name is generated from its keys when they name none.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub options: Option<IndexOptions>,
}

impl IndexModel {
    /// The index's name: its `name` option, else each key and its value joined by
    /// underscores, e.g. `a_1_b_-1` (Index Management spec, "Index Name Generation").
    pub fn name(&self) -> String {
        match self
            .options
            .as_ref()
            .and_then(|options| options.name.as_ref())
        {
            Some(name) => name.clone(),
            None => generated_name(&self.keys),
        }
    }

    /// The index as an element of `createIndexes`' `indexes`: its options as the
    /// command names them, and its name, generated when unset.
    fn to_document(&self) -> Result<Document> {
        let mut index = bson::serialize_to_document(self).map_err(Error::serialization)?;
        index.insert("name", self.name());
        Ok(index)
    }
}

/// `keys` as an index name: `{ a: 1, b: -1 }` is `a_1_b_-1`.
fn generated_name(keys: &Document) -> String {
    let parts: Vec<String> = keys
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Bson::String(kind) => kind.clone(),
                Bson::Int32(n) => n.to_string(),
                Bson::Int64(n) => n.to_string(),
                // An integral double is named as an integer, as the server does.
                Bson::Double(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
                other => other.to_string(),
            };
            format!("{key}_{value}")
        })
        .collect();
    parts.join("_")
}

/// Read from the server's description of an index (a `listIndexes` document): `key`,
/// and every other field as its options.
impl<'de> Deserialize<'de> for IndexModel {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut description = Document::deserialize(deserializer)?;
        let keys = match description.remove("key") {
            Some(Bson::Document(keys)) => keys,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "an index's key must be a document, not {other}"
                )))
            }
            None => return Err(D::Error::missing_field("key")),
        };
        let options = match description.is_empty() {
            true => None,
            false => Some(bson::deserialize_from_document(description).map_err(D::Error::custom)?),
        };
        Ok(IndexModel { keys, options })
    }
}

/// The options of an index (MongoDB's `createIndexes` command, "indexes"), named as
/// the official driver names them; each is sent under the command's name
/// (`expire_after` as `expireAfterSeconds`, `version` as `v`...), and unset ones are
/// not sent.
///
/// ```
/// use std::time::Duration;
/// use anymongo::bson::doc;
/// use anymongo::options::IndexOptions;
/// let ttl = IndexOptions::builder()
///     .expire_after(Duration::from_secs(3600))
///     .partial_filter_expression(doc! { "kind": "session" })
///     .build();
/// assert_eq!(ttl.expire_after, Some(Duration::from_secs(3600)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IndexOptions {
    /// Build the index in the background; servers since 4.2 ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// A TTL index: documents are removed this long after the time in the indexed
    /// field (`expireAfterSeconds`, whole seconds).
    #[serde(
        rename = "expireAfterSeconds",
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bson_util::seconds"
    )]
    pub expire_after: Option<Duration>,
    /// The index's name; generated from its keys when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Index only the documents that have the indexed fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sparse: Option<bool>,
    /// The storage engine's options for this index: `{ <engine>: <options> }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<Document>,
    /// Refuse documents whose indexed values another document has (E11000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique: Option<bool>,
    /// The index's version (`v`).
    #[serde(rename = "v", skip_serializing_if = "Option::is_none")]
    pub version: Option<IndexVersion>,
    /// Text indexes: the language of the stop words and stemming rules.
    #[serde(rename = "default_language", skip_serializing_if = "Option::is_none")]
    pub default_language: Option<String>,
    /// Text indexes: the field of each document that names its language.
    #[serde(rename = "language_override", skip_serializing_if = "Option::is_none")]
    pub language_override: Option<String>,
    /// Text indexes: the text index version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_index_version: Option<TextIndexVersion>,
    /// Text indexes: each field's weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Document>,
    /// `2dsphere` indexes: the index version (`2dsphereIndexVersion`).
    #[serde(
        rename = "2dsphereIndexVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub sphere_2d_index_version: Option<Sphere2DIndexVersion>,
    /// `2d` indexes: the precision of the stored geohash, 1 to 32 bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bits: Option<u32>,
    /// `2d` indexes: the upper bound of longitudes and latitudes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// `2d` indexes: the lower bound of longitudes and latitudes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// `geoHaystack` indexes (removed in MongoDB 5.0): the size of a bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<u32>,
    /// A partial index: only the documents matching this filter are indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_filter_expression: Option<Document>,
    /// The index's collation (`{ locale, strength, ... }`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<crate::crud::Collation>,
    /// Wildcard indexes: the field paths included or excluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard_projection: Option<Document>,
    /// Hide the index from the query planner (it is still maintained).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// Whether this is a clustered collection's index, as `listIndexes` reports it: not
    /// an option of `createIndexes` (a clustered index is made with the collection, by
    /// [`CreateCollectionOptions::clustered_index`](crate::options::CreateCollectionOptions::clustered_index)).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[builder(setter(skip))]
    pub clustered: Option<bool>,
    /// The options this type does not name, sent as given and kept when read from
    /// `listIndexes` (so that no option is lost); the official driver has no such
    /// field.
    #[serde(flatten)]
    pub other: Document,
}

impl IndexOptions {
    /// Whether this is a clustered collection's index (see
    /// [`clustered`](Self::clustered), as the official driver reads it).
    pub fn clustered(&self) -> Option<bool> {
        self.clustered
    }
}

/// Writes a version enum of the index options: its named versions, each the number
/// the server gives it, and `Custom` for any other, sent and read as that number.
macro_rules! index_versions {
    ($(#[$doc:meta])* $Enum:ident { $($(#[$vdoc:meta])* $Variant:ident = $n:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(from = "u32", into = "u32")]
        #[non_exhaustive]
        pub enum $Enum {
            $($(#[$vdoc])* $Variant,)*
            /// Another version, for servers newer than this driver.
            Custom(u32),
        }

        impl From<u32> for $Enum {
            fn from(n: u32) -> Self {
                match n {
                    $($n => $Enum::$Variant,)*
                    n => $Enum::Custom(n),
                }
            }
        }

        impl From<$Enum> for u32 {
            fn from(version: $Enum) -> u32 {
                match version {
                    $($Enum::$Variant => $n,)*
                    $Enum::Custom(n) => n,
                }
            }
        }
    };
}

index_versions!(
    /// An index's version (`v`); servers since 3.2 refuse version 0.
    IndexVersion {
        /// Version 0.
        V0 = 0,
        /// Version 1.
        V1 = 1,
        /// Version 2, the default since MongoDB 3.4.
        V2 = 2,
    }
);

index_versions!(
    /// A text index's version (`textIndexVersion`).
    TextIndexVersion {
        /// Version 1.
        V1 = 1,
        /// Version 2.
        V2 = 2,
        /// Version 3, the default since MongoDB 3.2.
        V3 = 3,
    }
);

index_versions!(
    /// A `2dsphere` index's version (`2dsphereIndexVersion`).
    Sphere2DIndexVersion {
        /// Version 2.
        V2 = 2,
        /// Version 3, the default since MongoDB 3.2.
        V3 = 3,
    }
);

/// How many data-bearing voting members must have built an index before the primary
/// marks it ready (`commitQuorum`, MongoDB 4.4+).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitQuorum {
    /// This many members; `0` turns quorum voting off.
    Nodes(u32),
    /// Every data-bearing voting member (the server's default).
    VotingMembers,
    /// A majority of the voting members.
    Majority,
    /// The members with this replica set tag.
    Custom(String),
}

impl Serialize for CommitQuorum {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            CommitQuorum::Nodes(n) => serializer.serialize_i64(i64::from(*n)),
            CommitQuorum::VotingMembers => serializer.serialize_str("votingMembers"),
            CommitQuorum::Majority => serializer.serialize_str("majority"),
            CommitQuorum::Custom(tag) => serializer.serialize_str(tag),
        }
    }
}

impl<'de> Deserialize<'de> for CommitQuorum {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = Bson::deserialize(deserializer)?;
        if let Bson::String(tag) = value {
            return Ok(match tag.as_str() {
                "votingMembers" => CommitQuorum::VotingMembers,
                "majority" => CommitQuorum::Majority,
                _ => CommitQuorum::Custom(tag),
            });
        }
        crate::bson_util::as_i64(&value)
            .and_then(|n| u32::try_from(n).ok())
            .map(CommitQuorum::Nodes)
            .ok_or_else(|| {
                D::Error::custom(format!(
                    "commitQuorum must be a number of members or a name, not {value}"
                ))
            })
    }
}

/// An Atlas Search index to create (Index Management spec, "SearchIndexModel").
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::{SearchIndexModel, SearchIndexType};
/// let model = SearchIndexModel::builder()
///     .definition(doc! { "mappings": { "dynamic": true } })
///     .name("by_everything".to_string())
///     .index_type(SearchIndexType::Search)
///     .build();
/// assert_eq!(model.name.as_deref(), Some("by_everything"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(default)]
#[non_exhaustive]
pub struct SearchIndexModel {
    /// What the index describes; its syntax depends on the index's type (see MongoDB's
    /// `createSearchIndexes` command).
    pub definition: Document,
    /// The index's name; the server names it `default` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `type`: a standard search index (the server's default when unset) or a vector
    /// search index.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<SearchIndexType>,
}

/// The `type` of a search index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchIndexType {
    /// `search`: an Atlas Search index.
    Search,
    /// `vectorSearch`: an Atlas Vector Search index.
    VectorSearch,
    /// Another type, named as the server names it.
    #[serde(untagged)]
    Other(String),
}

/// Writes the options types of the search index operations, which have no options
/// yet: "placeholders for drivers that cannot add options in a non-breaking manner"
/// (Index Management spec, "Search Index Management Helpers"). `#[non_exhaustive]`
/// keeps adding one non-breaking; their builders and `Default` make them.
macro_rules! search_index_options {
    ($($(#[$doc:meta])* $Name:ident,)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
        #[non_exhaustive]
        pub struct $Name {}
    )*};
}

search_index_options!(
    /// Options of [`Collection::create_search_index`] and
    /// [`Collection::create_search_indexes`]: none yet.
    CreateSearchIndexOptions,
    /// Options of [`Collection::update_search_index`]: none yet.
    UpdateSearchIndexOptions,
    /// Options of [`Collection::list_search_indexes`] beyond its `name` and
    /// `aggregate_options`: none yet.
    ListSearchIndexOptions,
    /// Options of [`Collection::drop_search_index`]: none yet.
    DropSearchIndexOptions,
);

/// What [`Collection::create_index`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateIndexResult {
    /// The index's name.
    pub index_name: String,
}

/// What [`Collection::create_indexes`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateIndexesResult {
    /// The indexes' names, in the order of their models.
    pub index_names: Vec<String>,
}

/// Options of [`Collection::create_indexes`] and [`Collection::create_index`].
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct CreateIndexOptions {
    /// How many data-bearing voting members must have built the index before it is
    /// ready (MongoDB 4.4+).
    pub commit_quorum: Option<CommitQuorum>,
    /// The server's time limit for the command.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The write concern; the collection's when unset.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of [`Collection::drop_index`] and [`Collection::drop_indexes`].
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct DropIndexOptions {
    /// The server's time limit for the command.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The write concern; the collection's when unset.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of [`Collection::list_indexes`] and [`Collection::list_index_names`].
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct ListIndexesOptions {
    /// The server's time limit for the command (`maxTimeMS`).
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// How many indexes each batch of the cursor holds.
    pub batch_size: Option<u32>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// What `timeoutMS` bounds: the listing and its cursor together (the default),
    /// or each iteration (Client Side Operations Timeout spec, "Cursors").
    pub timeout_mode: Option<crate::crud::TimeoutMode>,
}

impl<T> Collection<T> {
    /// The body of [`create_indexes`](Self::create_indexes).
    pub(crate) async fn create_indexes_in(
        &self,
        indexes: Vec<IndexModel>,
        options: Option<CreateIndexOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Vec<String>> {
        if indexes.is_empty() {
            return Err(Error::invalid_argument(
                "create_indexes needs at least one index",
            ));
        }
        let options = options.unwrap_or_default();
        let indexes_sent = indexes
            .iter()
            .map(IndexModel::to_document)
            .collect::<Result<Vec<_>>>()?;
        let mut command = doc! { "createIndexes": self.name(), "indexes": indexes_sent };
        let commit_quorum = options
            .commit_quorum
            .map(|quorum| bson::serialize_to_bson(&quorum).map_err(Error::serialization))
            .transpose()?;
        insert_present(
            &mut command,
            [
                ("commitQuorum", commit_quorum),
                ("maxTimeMS", options.max_time.map(millis)),
                ("comment", options.comment),
            ],
        );
        let write_concern = options.write_concern.as_ref();
        self.run_index_write(command, write_concern, options.raw_data, session)
            .await?;
        Ok(indexes.iter().map(IndexModel::name).collect())
    }

    /// The body of [`drop_index`](Self::drop_index) (`name`) and
    /// [`drop_indexes`](Self::drop_indexes).
    pub(crate) async fn drop_indexes_in(
        &self,
        name: Option<&str>,
        options: Option<DropIndexOptions>,
        session: Option<&ClientSession>,
    ) -> Result<()> {
        // Index Management spec, "dropIndex": "*" would drop every index, which only
        // dropIndexes may do.
        if name == Some("*") {
            return Err(Error::invalid_argument(
                "drop_index cannot drop \"*\": use drop_indexes to drop every index",
            ));
        }
        let options = options.unwrap_or_default();
        let mut command = doc! { "dropIndexes": self.name(), "index": name.unwrap_or("*") };
        insert_present(
            &mut command,
            [
                ("maxTimeMS", options.max_time.map(millis)),
                ("comment", options.comment),
            ],
        );
        let write_concern = options.write_concern.as_ref();
        self.run_index_write(command, write_concern, options.raw_data, session)
            .await
    }

    /// Runs `createIndexes` or `dropIndexes` with the write concern given, else the
    /// collection's, and the `rawData` given.
    async fn run_index_write(
        &self,
        command: Document,
        write_concern: Option<&WriteConcern>,
        raw_data: Option<bool>,
        session: Option<&ClientSession>,
    ) -> Result<()> {
        let write_concern = self.concerns().write_concern(write_concern, session)?;
        self.database()
            .run_write_command(command, write_concern, session, self.timing(), raw_data)
            .await?;
        Ok(())
    }

    /// The body of [`list_indexes`](Self::list_indexes).
    pub(crate) async fn list_indexes_in(
        &self,
        options: Option<ListIndexesOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let options = options.unwrap_or_default();
        let mut command = doc! { "listIndexes": self.name() };
        insert_present(
            &mut command,
            [
                ("maxTimeMS", options.max_time.map(millis)),
                ("comment", options.comment),
            ],
        );
        let listing = Listing {
            batch_size: options.batch_size,
            timing: self.timing(),
            timeout_mode: options.timeout_mode,
            raw_data: options.raw_data,
        };
        list(self.database(), command, listing, session).await
    }

    /// The body of [`create_search_indexes`](Self::create_search_indexes).
    pub(crate) async fn create_search_indexes_in(
        &self,
        models: Vec<SearchIndexModel>,
    ) -> Result<Vec<String>> {
        let indexes = models
            .iter()
            .map(bson::serialize_to_bson)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Error::serialization)?;
        let command = doc! { "createSearchIndexes": self.name(), "indexes": indexes };
        let reply = self.run_search_index_command(command).await?;
        created_search_indexes(&reply)
    }

    /// The body of [`update_search_index`](Self::update_search_index).
    pub(crate) async fn update_search_index_in(
        &self,
        name: &str,
        definition: Document,
    ) -> Result<()> {
        let command =
            doc! { "updateSearchIndex": self.name(), "name": name, "definition": definition };
        self.run_search_index_command(command).await?;
        Ok(())
    }

    /// The body of [`drop_search_index`](Self::drop_search_index).
    pub(crate) async fn drop_search_index_in(&self, name: &str) -> Result<()> {
        let command = doc! { "dropSearchIndex": self.name(), "name": name };
        match self.run_search_index_command(command).await {
            // NamespaceNotFound: nothing to drop.
            Err(error) if error.code() == Some(26) => Ok(()),
            done => done.map(drop),
        }
    }

    /// The body of [`list_search_indexes`](Self::list_search_indexes).
    pub(crate) async fn list_search_indexes_in(
        &self,
        name: Option<&str>,
        options: Option<AggregateOptions>,
    ) -> Result<Cursor<Document>> {
        let mut stage = Document::new();
        if let Some(name) = name {
            stage.insert("name", name);
        }
        let options = AggregateOptions {
            read_concern: None,
            write_concern: None,
            ..options.unwrap_or_default()
        };
        // The collection's read preference and timeout, not its concerns.
        let concerns = Concerns {
            selection_criteria: self.concerns().selection_criteria.clone(),
            timeout: self.concerns().timeout,
            ..Concerns::default()
        };
        self.database()
            .aggregate_on(
                Some(self.name()),
                (&concerns, self.timing()),
                vec![doc! { "$listSearchIndexes": stage }],
                Some(options),
                None,
            )
            .await
    }

    /// Runs a search index command: no write concern (spec, "Where are read concern
    /// and write concern?").
    async fn run_search_index_command(&self, command: Document) -> Result<Document> {
        self.database()
            .run_write_command(command, None, None, self.timing(), None)
            .await
    }
}

/// The names in a `createSearchIndexes` reply: `indexesCreated: [{ id, name }]`.
fn created_search_indexes(reply: &Document) -> Result<Vec<String>> {
    let malformed =
        || Error::deserialization(format!("malformed createSearchIndexes reply: {reply}"));
    reply
        .get_array("indexesCreated")
        .map_err(|_| malformed())?
        .iter()
        .map(|created| {
            created
                .as_document()
                .and_then(|created| created.get_str("name").ok())
                .map(str::to_owned)
                .ok_or_else(malformed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_generated_from_keys_in_order() {
        assert_eq!(generated_name(&doc! { "a": 1, "b": -1 }), "a_1_b_-1");
        assert_eq!(generated_name(&doc! { "x": 1.0 }), "x_1");
        assert_eq!(generated_name(&doc! { "loc": "2dsphere" }), "loc_2dsphere");
        assert_eq!(
            generated_name(&doc! { "n": 2_i64, "t": "text" }),
            "n_2_t_text"
        );
    }

    #[test]
    fn a_search_index_model_sends_only_what_is_set() {
        let model = SearchIndexModel::builder()
            .definition(doc! { "mappings": { "dynamic": true } })
            .build();
        assert_eq!(
            bson::serialize_to_document(&model).unwrap(),
            doc! { "definition": { "mappings": { "dynamic": true } } }
        );
        let vector = SearchIndexModel {
            name: Some("v".into()),
            index_type: Some(SearchIndexType::VectorSearch),
            ..model
        };
        assert_eq!(
            bson::serialize_to_document(&vector).unwrap(),
            doc! { "definition": { "mappings": { "dynamic": true } }, "name": "v", "type": "vectorSearch" }
        );
    }

    #[test]
    fn created_search_index_names_are_read_in_order() {
        let reply = doc! {
            "ok": 1,
            "indexesCreated": [{ "id": "1", "name": "a" }, { "id": "2", "name": "default" }],
        };
        assert_eq!(created_search_indexes(&reply).unwrap(), ["a", "default"]);
        assert!(created_search_indexes(&doc! { "ok": 1 }).is_err());
        assert!(created_search_indexes(&doc! { "indexesCreated": [{ "id": "1" }] }).is_err());
    }

    #[test]
    fn a_name_option_wins_and_is_sent_once() {
        let index = IndexModel::builder()
            .keys(doc! { "a": 1 })
            .options(
                IndexOptions::builder()
                    .name("by_a".to_string())
                    .unique(true)
                    .build(),
            )
            .build();
        assert_eq!(index.name(), "by_a");
        assert_eq!(
            index.to_document().unwrap(),
            doc! { "key": { "a": 1 }, "unique": true, "name": "by_a" }
        );
        let unnamed = IndexModel::builder().keys(doc! { "b": -1 }).build();
        assert_eq!(
            unnamed.to_document().unwrap(),
            doc! { "key": { "b": -1 }, "name": "b_-1" }
        );
    }

    #[test]
    fn options_are_sent_under_the_command_names() {
        let options = IndexOptions::builder()
            .expire_after(Duration::from_secs(3600))
            .version(IndexVersion::V2)
            .sphere_2d_index_version(Sphere2DIndexVersion::V3)
            .default_language("french".to_string())
            .other(doc! { "prepareUnique": true })
            .build();
        assert_eq!(
            bson::serialize_to_document(&options).unwrap(),
            doc! {
                "expireAfterSeconds": 3600_i64,
                "v": 2_i64,
                "default_language": "french",
                "2dsphereIndexVersion": 3_i64,
                "prepareUnique": true,
            }
        );
    }

    #[test]
    fn a_list_indexes_document_is_read_as_a_model() {
        let description = doc! {
            "v": 2,
            "key": { "at": 1 },
            "name": "at_1",
            "expireAfterSeconds": 3600,
            "clustered": false,
            "textIndexVersion": 7,
            "somethingNew": { "x": 1 },
        };
        let model: IndexModel = bson::deserialize_from_document(description).unwrap();
        assert_eq!(model.keys, doc! { "at": 1 });
        let options = model.options.unwrap();
        assert_eq!(options.version, Some(IndexVersion::V2));
        assert_eq!(options.name.as_deref(), Some("at_1"));
        assert_eq!(options.expire_after, Some(Duration::from_secs(3600)));
        assert_eq!(options.clustered(), Some(false));
        assert_eq!(
            options.text_index_version,
            Some(TextIndexVersion::Custom(7))
        );
        assert_eq!(options.other, doc! { "somethingNew": { "x": 1 } });
        let keyless: std::result::Result<IndexModel, _> =
            bson::deserialize_from_document(doc! { "name": "x" });
        assert!(keyless.is_err());
    }

    #[test]
    fn commit_quorum_is_a_number_or_a_name() {
        for (quorum, sent) in [
            (CommitQuorum::Nodes(2), Bson::Int64(2)),
            (CommitQuorum::Majority, Bson::from("majority")),
            (CommitQuorum::VotingMembers, Bson::from("votingMembers")),
            (CommitQuorum::Custom("dc".into()), Bson::from("dc")),
        ] {
            assert_eq!(bson::serialize_to_bson(&quorum).unwrap(), sent);
            let read: CommitQuorum = bson::deserialize_from_bson(sent).unwrap();
            assert_eq!(read, quorum);
        }
        assert!(bson::deserialize_from_bson::<CommitQuorum>(Bson::Int32(-1)).is_err());
    }
}
