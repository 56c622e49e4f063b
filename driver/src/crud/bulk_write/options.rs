//! The options of both bulk writes.

use bson::{Bson, Document};
use serde::Deserialize;

use crate::concern::WriteConcern;

/// Options of a bulk write: of a [`Collection::bulk_write`](crate::Collection::bulk_write)
/// (CRUD spec, "BulkWriteOptions"), those of the `insert`, `update` and `delete`
/// commands it sends, and of a [`Client::bulk_write`](crate::Client::bulk_write) (Bulk
/// Write spec, "Options"), those of its `bulkWrite` commands. They deserialize from
/// the specs' camelCase names.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct BulkWriteOptions {
    /// Stop at the first write that fails (the default, `true`), or go on with the
    /// others (`false`, in which case the writes may run in any order).
    pub ordered: Option<bool>,
    /// Skips document validation (inserts, updates and replacements).
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs (any BSON value on MongoDB 4.4+).
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// Variables for the filters and pipelines of the updates and deletes (`let`;
    /// MongoDB 5.0+); a collection's bulk write does not send them with inserts.
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// Overrides the collection's or client's write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// The options of a [`Client::bulk_write`](crate::Client::bulk_write): a
/// [`BulkWriteOptions`].
pub type ClientBulkWriteOptions = BulkWriteOptions;
