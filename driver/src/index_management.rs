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
use crate::enumerate::{list, names, Listing};
use crate::error::{Error, Result};
use crate::session::ClientSession;

/// An index to create: its keys, in order, and its options.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::index_management::IndexModel;
/// let by_email = IndexModel::new(doc! { "email": 1 }).with_options(doc! { "unique": true });
/// assert_eq!(by_email.name(), "email_1");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct IndexModel {
    /// The indexed fields and each one's kind: `1`, `-1`, `"text"`, `"2dsphere"`...
    pub keys: Document,
    /// The index's options as the `createIndexes` command names them (`name`, `unique`,
    /// `sparse`, `expireAfterSeconds`, `partialFilterExpression`, `collation`...).
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
    /// Creates one index and returns its name.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::index_management::IndexModel;
    /// let name = orders.create_index(IndexModel::new(doc! { "item": 1, "qty": -1 }), None).await?;
    /// assert_eq!(name, "item_1_qty_-1");
    /// # Ok(()) }
    /// ```
    pub async fn create_index(
        &self,
        index: IndexModel,
        options: impl Into<Option<CreateIndexOptions>>,
    ) -> Result<String> {
        let mut names = self
            .create_indexes_in(vec![index], options.into(), None)
            .await?;
        Ok(names.pop().unwrap_or_default())
    }

    /// [`create_index`](Self::create_index) in `session`.
    pub async fn create_index_with_session(
        &self,
        index: IndexModel,
        options: impl Into<Option<CreateIndexOptions>>,
        session: &ClientSession,
    ) -> Result<String> {
        let mut names = self
            .create_indexes_in(vec![index], options.into(), Some(session))
            .await?;
        Ok(names.pop().unwrap_or_default())
    }

    /// Creates several indexes with one `createIndexes` command and returns their names.
    pub async fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
        options: impl Into<Option<CreateIndexOptions>>,
    ) -> Result<Vec<String>> {
        self.create_indexes_in(indexes.into_iter().collect(), options.into(), None)
            .await
    }

    /// [`create_indexes`](Self::create_indexes) in `session`.
    pub async fn create_indexes_with_session(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
        options: impl Into<Option<CreateIndexOptions>>,
        session: &ClientSession,
    ) -> Result<Vec<String>> {
        self.create_indexes_in(indexes.into_iter().collect(), options.into(), Some(session))
            .await
    }

    async fn create_indexes_in(
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

    /// Drops the index named `name`. `"*"` is refused: use
    /// [`drop_indexes`](Self::drop_indexes) to drop them all.
    pub async fn drop_index(
        &self,
        name: &str,
        options: impl Into<Option<DropIndexOptions>>,
    ) -> Result<()> {
        self.drop_indexes_in(Some(name), options.into(), None).await
    }

    /// [`drop_index`](Self::drop_index) in `session`.
    pub async fn drop_index_with_session(
        &self,
        name: &str,
        options: impl Into<Option<DropIndexOptions>>,
        session: &ClientSession,
    ) -> Result<()> {
        self.drop_indexes_in(Some(name), options.into(), Some(session))
            .await
    }

    /// Drops every index but the one on `_id`.
    pub async fn drop_indexes(&self, options: impl Into<Option<DropIndexOptions>>) -> Result<()> {
        self.drop_indexes_in(None, options.into(), None).await
    }

    /// [`drop_indexes`](Self::drop_indexes) in `session`.
    pub async fn drop_indexes_with_session(
        &self,
        options: impl Into<Option<DropIndexOptions>>,
        session: &ClientSession,
    ) -> Result<()> {
        self.drop_indexes_in(None, options.into(), Some(session))
            .await
    }

    async fn drop_indexes_in(
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

    /// The collection's indexes, as a cursor of their descriptions (`key`, `name`,
    /// `v`, and their options).
    pub async fn list_indexes(
        &self,
        options: impl Into<Option<ListIndexesOptions>>,
    ) -> Result<Cursor<Document>> {
        self.list_indexes_in(options.into(), None).await
    }

    /// [`list_indexes`](Self::list_indexes) in `session`.
    pub async fn list_indexes_with_session(
        &self,
        options: impl Into<Option<ListIndexesOptions>>,
        session: &ClientSession,
    ) -> Result<Cursor<Document>> {
        self.list_indexes_in(options.into(), Some(session)).await
    }

    /// The names of the collection's indexes.
    pub async fn list_index_names(
        &self,
        options: impl Into<Option<ListIndexesOptions>>,
    ) -> Result<Vec<String>> {
        names(self.list_indexes_in(options.into(), None).await?).await
    }

    /// [`list_index_names`](Self::list_index_names) in `session`.
    pub async fn list_index_names_with_session(
        &self,
        options: impl Into<Option<ListIndexesOptions>>,
        session: &ClientSession,
    ) -> Result<Vec<String>> {
        names(self.list_indexes_in(options.into(), Some(session)).await?).await
    }

    async fn list_indexes_in(
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

    /// Creates an Atlas Search index and returns its name (the server's, `default`,
    /// when the model has none). The index is built after the command returns: list it
    /// with [`list_search_indexes`](Self::list_search_indexes) to see when it is ready.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::index_management::SearchIndexModel;
    /// let model = SearchIndexModel {
    ///     definition: doc! { "mappings": { "dynamic": true } },
    ///     ..SearchIndexModel::default()
    /// };
    /// let name = movies.create_search_index(model).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_search_index(&self, model: SearchIndexModel) -> Result<String> {
        let mut names = self.create_search_indexes([model]).await?;
        names
            .pop()
            .ok_or_else(|| Error::bson("the createSearchIndexes reply names no index"))
    }

    /// Creates several Atlas Search indexes with one `createSearchIndexes` command and
    /// returns their names, in order.
    pub async fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> Result<Vec<String>> {
        let indexes = models
            .into_iter()
            .map(|model| bson::serialize_to_bson(&model))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(Error::bson)?;
        let command = doc! { "createSearchIndexes": self.name(), "indexes": indexes };
        let reply = self.run_search_index_command(command).await?;
        created_search_indexes(&reply)
    }

    /// Replaces the definition of the Atlas Search index `name`.
    pub async fn update_search_index(&self, name: &str, definition: Document) -> Result<()> {
        let command =
            doc! { "updateSearchIndex": self.name(), "name": name, "definition": definition };
        self.run_search_index_command(command).await?;
        Ok(())
    }

    /// Drops the Atlas Search index `name`; dropping one that does not exist, or whose
    /// collection does not, is not an error (spec, "NamespaceNotFound Errors").
    pub async fn drop_search_index(&self, name: &str) -> Result<()> {
        let command = doc! { "dropSearchIndex": self.name(), "name": name };
        match self.run_search_index_command(command).await {
            // NamespaceNotFound: nothing to drop.
            Err(error) if error.code() == Some(26) => Ok(()),
            done => done.map(drop),
        }
    }

    /// The collection's Atlas Search indexes (only the one named `name`, if given), as
    /// a cursor of their descriptions: an aggregation of the `$listSearchIndexes`
    /// stage with `options`, whose read and write concerns are not sent.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use futures::TryStreamExt;
    /// let indexes: Vec<_> = movies.list_search_indexes(Some("default"), None).await?.try_collect().await?;
    /// let ready = indexes.iter().any(|index| index.get_bool("queryable").unwrap_or(false));
    /// # Ok(()) }
    /// ```
    pub async fn list_search_indexes(
        &self,
        name: Option<&str>,
        options: impl Into<Option<AggregateOptions>>,
    ) -> Result<Cursor<Document>> {
        let mut stage = Document::new();
        if let Some(name) = name {
            stage.insert("name", name);
        }
        let options = AggregateOptions {
            read_concern: None,
            write_concern: None,
            ..options.into().unwrap_or_default()
        };
        // The collection's read preference and timeout, not its concerns.
        let concerns = Concerns {
            read_preference: self.concerns().read_preference.clone(),
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
