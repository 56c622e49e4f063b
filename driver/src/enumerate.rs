//! The Enumerate Databases and Enumerate Collections specs: [`Client::list_databases`]
//! and [`Database::list_collections`], with their `…_names` variants.
//!
//! Both are retryable reads (Retryable Reads spec, "Supported Read Operations") that
//! always go to the primary: `listDatabases` and `listCollections` take no read
//! preference.

use bson::{doc, Binary, Bson, Document};
use serde::{Deserialize, Deserializer, Serialize};

use crate::bson_util::insert_present;
use crate::client::Client;
use crate::collection_management::CreateCollectionOptions;
use crate::crud::run_command::{RunCommand, RunCursorCommand, RunCursorCommandOptions};
use crate::cursor::Cursor;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::session::ClientSession;

/// Options of [`Client::list_databases`] and [`Client::list_database_names`]
/// (Enumerate Databases spec, "listDatabases"); the names are the command's fields.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct ListDatabasesOptions {
    /// Only the databases matching this filter (on `name`, `sizeOnDisk`, `empty`,
    /// `shards`).
    pub filter: Option<Document>,
    /// Only the databases the user has privileges on, when access control is on.
    pub authorized_databases: Option<bool>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
}

/// One database as `listDatabases` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DatabaseSpecification {
    /// The database's name.
    pub name: String,
    /// Its size on disk in bytes (0 when the server does not say).
    #[serde(default, deserialize_with = "lenient_u64")]
    pub size_on_disk: u64,
    /// Whether it holds no data.
    #[serde(default)]
    pub empty: bool,
    /// On a sharded cluster, each shard's part of it.
    #[serde(default)]
    pub shards: Option<Document>,
}

/// A size the server may send as an int32, an int64 or a double.
fn lenient_u64<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<u64, D::Error> {
    let value = Option::<Bson>::deserialize(deserializer)?;
    let size = value.as_ref().and_then(crate::bson_util::as_i64);
    Ok(size.and_then(|size| u64::try_from(size).ok()).unwrap_or(0))
}

/// Options of [`Database::list_collections`] and [`Database::list_collection_names`]
/// (Enumerate Collections spec); the names are the command's fields.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct ListCollectionsOptions {
    /// Only the collections matching this filter (on `name`, `type`, `options`...).
    pub filter: Option<Document>,
    /// How many collections each batch of the cursor holds.
    pub batch_size: Option<u32>,
    /// Only the collections the user has privileges on, when access control is on.
    pub authorized_collections: Option<bool>,
    /// Only each collection's name and type (`nameOnly`), which the server answers
    /// without taking collection locks; [`Database::list_collection_names`] always asks
    /// for these.
    pub name_only: Option<bool>,
    /// A comment the server logs with the command.
    pub comment: Option<Bson>,
    /// What `timeoutMS` bounds: the listing and its cursor together (the default),
    /// or each iteration (Client Side Operations Timeout spec, "Cursors").
    pub timeout_mode: Option<crate::crud::TimeoutMode>,
}

/// One collection (or view) as `listCollections` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CollectionSpecification {
    /// The collection's name.
    pub name: String,
    /// A collection, a view or a time series collection.
    #[serde(rename = "type", default)]
    pub collection_type: CollectionType,
    /// The options it was created with (capped, validator, viewOn...). Options the
    /// driver cannot read (a server newer than it, say) leave them at their defaults
    /// rather than fail the listing: list with
    /// [`clone_with_type`](crate::Cursor::with_type) to `Document` to see them as sent.
    #[serde(default, deserialize_with = "lenient_options")]
    pub options: CreateCollectionOptions,
    /// Its `readOnly` flag and `uuid`.
    #[serde(default)]
    pub info: CollectionSpecificationInfo,
    /// The specification of its `_id` index, if it has one.
    #[serde(default)]
    pub id_index: Option<Document>,
}

/// What [`CollectionSpecification::collection_type`] says a listed name is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CollectionType {
    /// A view (`viewOn` and `pipeline` in its options).
    View,
    /// A collection.
    #[default]
    Collection,
    /// A time series collection.
    Timeseries,
    /// Another kind, named as the server names it.
    #[serde(untagged)]
    Other(String),
}

/// The `info` of a [`CollectionSpecification`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct CollectionSpecificationInfo {
    /// Whether the collection is read-only (a view is).
    pub read_only: bool,
    /// The collection's UUID; a view has none.
    pub uuid: Option<Binary>,
}

/// A collection's options as listed, or the defaults when they cannot be read.
fn lenient_options<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<CreateCollectionOptions, D::Error> {
    let options = Document::deserialize(deserializer)?;
    Ok(bson::deserialize_from_document(options).unwrap_or_default())
}

impl Client {
    /// The body of [`list_databases`](Self::list_databases) and
    /// [`list_database_names`](Self::list_database_names) (`name_only`); `timeout`
    /// is the operation's own.
    pub(crate) async fn list_databases_in(
        &self,
        options: Option<ListDatabasesOptions>,
        name_only: bool,
        session: Option<&ClientSession>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Vec<DatabaseSpecification>> {
        let options = options.unwrap_or_default();
        let mut command = doc! { "listDatabases": 1 };
        insert_present(
            &mut command,
            [
                ("filter", options.filter.map(Bson::Document)),
                ("nameOnly", name_only.then_some(Bson::Boolean(true))),
                (
                    "authorizedDatabases",
                    options.authorized_databases.map(Bson::Boolean),
                ),
                ("comment", options.comment),
            ],
        );
        let operation = RunCommand::new("admin", command, None)?.retryable_read();
        let reply = self
            .executor()
            .execute(operation, session, timeout.or(self.timeout()))
            .await?;
        let databases = reply.get_array("databases").map_err(|_| {
            Error::deserialization("a listDatabases reply without a databases array")
        })?;
        databases
            .iter()
            .map(|database| match database {
                Bson::Document(database) => bson::deserialize_from_document(database.clone())
                    .map_err(Error::deserialization),
                _ => Err(Error::deserialization(
                    "a listDatabases reply with a non-document database",
                )),
            })
            .collect()
    }
}

impl Database {
    /// The body of [`list_collections`](Self::list_collections) and
    /// [`list_collection_names`](Self::list_collection_names) (`name_only`).
    pub(crate) async fn list_collections_in(
        &self,
        options: Option<ListCollectionsOptions>,
        name_only: bool,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let options = options.unwrap_or_default();
        let name_only = name_only || options.name_only == Some(true);
        let mut command = doc! { "listCollections": 1 };
        insert_present(
            &mut command,
            [
                ("filter", options.filter.map(Bson::Document)),
                ("nameOnly", name_only.then_some(Bson::Boolean(true))),
                (
                    "authorizedCollections",
                    options.authorized_collections.map(Bson::Boolean),
                ),
                ("comment", options.comment),
            ],
        );
        let listing = Listing {
            batch_size: options.batch_size,
            timing: self.timeout().into(),
            timeout_mode: options.timeout_mode,
            raw_data: None,
        };
        list(self, command, listing, session).await
    }
}

/// How a listing command's cursor is read.
pub(crate) struct Listing {
    /// Goes in the command's `cursor` document and on its getMores.
    pub batch_size: Option<u32>,
    /// The timing of the database or collection listed.
    pub timing: crate::operation::Timing,
    /// What that timeoutMS bounds.
    pub timeout_mode: Option<crate::crud::TimeoutMode>,
    /// `rawData` (`listIndexes`), sent to servers that know it.
    pub raw_data: Option<bool>,
}

/// Runs a listing command (`listCollections`, `listIndexes`) as a retryable read whose
/// reply is a cursor, read as `listing` says.
pub(crate) async fn list(
    database: &Database,
    mut command: Document,
    listing: Listing,
    session: Option<&ClientSession>,
) -> Result<Cursor<Document>> {
    let mut cursor = Document::new();
    if let Some(size) = listing.batch_size {
        cursor.insert("batchSize", i64::from(size));
    }
    command.insert("cursor", cursor);
    let operation = RunCommand::new(database.name(), command, None)?
        .retryable_read()
        .with_raw_data(listing.raw_data);
    let operation = RunCursorCommand::from(operation).with_get_more(RunCursorCommandOptions {
        timeout_mode: listing.timeout_mode,
        ..RunCursorCommandOptions::default()
    });
    operation.check_timeout(listing.timing.timeout)?;
    database
        .client()
        .executor()
        .execute(operation, session, listing.timing)
        .await
}

/// The `name` of every document of a listing cursor.
pub(crate) async fn names(cursor: Cursor<Document>) -> Result<Vec<String>> {
    use futures::TryStreamExt;
    let listed: Vec<Document> = cursor.try_collect().await?;
    listed
        .iter()
        .map(|item| {
            item.get_str("name").map(str::to_owned).map_err(|_| {
                Error::deserialization("a listing reply with an item that has no name")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_collections_are_read_with_their_kind_and_options() {
        let view: CollectionSpecification = bson::deserialize_from_document(doc! {
            "name": "recent", "type": "view",
            "options": { "viewOn": "orders", "pipeline": [{ "$limit": 5 }] },
            "info": { "readOnly": true },
        })
        .unwrap();
        assert_eq!(view.collection_type, CollectionType::View);
        assert_eq!(view.options.view_on.as_deref(), Some("orders"));
        assert!(view.info.read_only && view.info.uuid.is_none());

        // A kind and options this driver does not know are listed all the same.
        let odd: CollectionSpecification = bson::deserialize_from_document(doc! {
            "name": "odd", "type": "someday", "options": { "capped": "not a flag" },
        })
        .unwrap();
        assert_eq!(odd.collection_type, CollectionType::Other("someday".into()));
        assert_eq!(odd.options, CreateCollectionOptions::default());
    }

    #[test]
    fn listed_database_sizes_are_read_from_any_number() {
        let database: DatabaseSpecification = bson::deserialize_from_document(doc! {
            "name": "shop", "sizeOnDisk": 8192.0, "empty": false,
        })
        .unwrap();
        assert_eq!(database.size_on_disk, 8192);
        assert!(!database.empty);
    }
}
