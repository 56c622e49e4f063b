//! The Enumerate Databases and Enumerate Collections specs: [`Client::list_databases`]
//! and [`Database::list_collections`], with their `…_names` variants.
//!
//! Both are retryable reads (Retryable Reads spec, "Supported Read Operations") that
//! always go to the primary: `listDatabases` and `listCollections` take no read
//! preference.

use bson::{doc, Bson, Document};
use serde::{Deserialize, Deserializer, Serialize};

use crate::bson_util::insert_present;
use crate::client::Client;
use crate::crud::run_command::{RunCommand, RunCursorCommand, RunCursorCommandOptions};
use crate::cursor::Cursor;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::session::ClientSession;

/// Options of [`Client::list_databases`] and [`Client::list_database_names`]
/// (Enumerate Databases spec, "listDatabases"); the names are the command's fields.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
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
pub struct DatabaseSpecification {
    /// The database's name.
    pub name: String,
    /// Its size on disk in bytes.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub size_on_disk: Option<i64>,
    /// Whether it holds no data.
    #[serde(default)]
    pub empty: Option<bool>,
    /// On a sharded cluster, each shard's part of it.
    #[serde(default)]
    pub shards: Option<Document>,
}

/// A size the server may send as an int32, an int64 or a double.
fn lenient_i64<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<i64>, D::Error> {
    let value = Option::<Bson>::deserialize(deserializer)?;
    Ok(value.as_ref().and_then(crate::bson_util::as_i64))
}

/// Options of [`Database::list_collections`] and [`Database::list_collection_names`]
/// (Enumerate Collections spec); the names are the command's fields.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
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
pub struct CollectionSpecification {
    /// The collection's name.
    pub name: String,
    /// `collection`, `view` or `timeseries`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The options it was created with (capped, validator, viewOn...).
    #[serde(default)]
    pub options: Document,
    /// Its `readOnly` flag and `uuid`.
    #[serde(default)]
    pub info: Document,
    /// The specification of its `_id` index, if it has one.
    #[serde(default)]
    pub id_index: Option<Document>,
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
    let operation = RunCommand::new(database.name(), command, None)?.retryable_read();
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
