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

/// An index to create: its keys, in order, and its options.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::index_management::IndexModel;
/// let by_email = IndexModel::new(doc! { "email": 1 }).with_options(doc! { "unique": true });
/// assert_eq!(by_email.name(), "email_1");
/// // Or with its builder, as the official driver's:
/// let by_name = IndexModel::builder().keys(doc! { "name": 1 }).build();
/// assert_eq!(by_name.name(), "name_1");
/// ```
#[derive(Debug, Clone, PartialEq, typed_builder::TypedBuilder)]
pub struct IndexModel {
    /// The indexed fields and each one's kind: `1`, `-1`, `"text"`, `"2dsphere"`...
    pub keys: Document,
    /// The index's options as the `createIndexes` command names them (`name`, `unique`,
    /// `sparse`, `expireAfterSeconds`, `partialFilterExpression`, `collation`...).
    #[builder(default)]
    pub options: Document,
}

impl IndexModel {
    /// An index on `keys` with no options: its name is generated from its keys.
    pub fn new(keys: Document) -> IndexModel {
        IndexModel {
            keys,
            options: Document::new(),
        }
    }

    /// This index with `options`.
    pub fn with_options(mut self, options: Document) -> IndexModel {
        self.options = options;
        self
    }

    /// The index's name: its `name` option, else each key and its value joined by
    /// underscores, e.g. `a_1_b_-1` (Index Management spec, "Index Name Generation").
    pub fn name(&self) -> String {
        if let Ok(name) = self.options.get_str("name") {
            return name.to_owned();
        }
        generated_name(&self.keys)
    }

    /// The index as an element of `createIndexes`' `indexes`.
    fn to_document(&self) -> Document {
        let mut index = doc! { "key": self.keys.clone(), "name": self.name() };
        for (option, value) in &self.options {
            if option != "name" {
                index.insert(option, value.clone());
            }
        }
        index
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

/// An Atlas Search index to create (Index Management spec, "SearchIndexModel").
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::index_management::SearchIndexModel;
/// let model = SearchIndexModel {
///     definition: doc! { "mappings": { "dynamic": true } },
///     name: Some("by_everything".into()),
///     ..SearchIndexModel::default()
/// };
/// assert_eq!(model.index_type, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchIndexModel {
    /// What the index describes; its syntax depends on the index's type (see MongoDB's
    /// `createSearchIndexes` command).
    pub definition: Document,
    /// The index's name; the server names it `default` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `type`: `"search"` for a standard search index (the server's default when
    /// unset), `"vectorSearch"` for a vector search index.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<String>,
}

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
#[builder(field_defaults(default, setter(strip_option)))]
pub struct CreateIndexOptions {
    /// How many data-bearing members must be ready before the index is committed
    /// (MongoDB 4.4+): a number, `"majority"` or `"votingMembers"`.
    pub commit_quorum: Option<Bson>,
    /// The server's time limit for the command.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// The write concern; the collection's when unset.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of [`Collection::drop_index`] and [`Collection::drop_indexes`].
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct DropIndexOptions {
    /// The server's time limit for the command.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// The write concern; the collection's when unset.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of [`Collection::list_indexes`] and [`Collection::list_index_names`].
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct ListIndexesOptions {
    /// How many indexes each batch of the cursor holds.
    pub batch_size: Option<u32>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
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
        let mut command = doc! {
            "createIndexes": self.name(),
            "indexes": indexes.iter().map(IndexModel::to_document).collect::<Vec<_>>(),
        };
        insert_present(
            &mut command,
            [
                ("commitQuorum", options.commit_quorum),
                ("maxTimeMS", options.max_time.map(millis)),
                ("comment", options.comment),
            ],
        );
        self.run_index_write(command, options.write_concern.as_ref(), session)
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
        self.run_index_write(command, options.write_concern.as_ref(), session)
            .await
    }

    /// Runs `createIndexes` or `dropIndexes` with the write concern given, else the
    /// collection's.
    async fn run_index_write(
        &self,
        command: Document,
        write_concern: Option<&WriteConcern>,
        session: Option<&ClientSession>,
    ) -> Result<()> {
        let write_concern = self.concerns().write_concern(write_concern, session)?;
        self.database()
            .run_write_command(command, write_concern, session, self.timing())
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
        insert_present(&mut command, [("comment", options.comment)]);
        let listing = Listing {
            batch_size: options.batch_size,
            timing: self.timing(),
            timeout_mode: options.timeout_mode,
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
            .map_err(Error::bson)?;
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
            .run_write_command(command, None, None, self.timing())
            .await
    }
}

/// The names in a `createSearchIndexes` reply: `indexesCreated: [{ id, name }]`.
fn created_search_indexes(reply: &Document) -> Result<Vec<String>> {
    let malformed = || Error::bson(format!("malformed createSearchIndexes reply: {reply}"));
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
        let model = SearchIndexModel {
            definition: doc! { "mappings": { "dynamic": true } },
            ..SearchIndexModel::default()
        };
        assert_eq!(
            bson::serialize_to_document(&model).unwrap(),
            doc! { "definition": { "mappings": { "dynamic": true } } }
        );
        let vector = SearchIndexModel {
            name: Some("v".into()),
            index_type: Some("vectorSearch".into()),
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
        let index =
            IndexModel::new(doc! { "a": 1 }).with_options(doc! { "name": "by_a", "unique": true });
        assert_eq!(index.name(), "by_a");
        assert_eq!(
            index.to_document(),
            doc! { "key": { "a": 1 }, "name": "by_a", "unique": true }
        );
    }
}
