//! The CRUD spec: the options and results of the collection operations, and the
//! operations themselves (`write`: insert, update, replace, delete, findAndModify;
//! `read`: find, aggregate, count, distinct; `run_command`), and the bulk writes
//! ([`bulk_write`]): the collection's, and the client-level one of the Bulk Write spec
//! (whose names [`client_bulk_write`] keeps).
//!
//! Options deserialize from the spec's camelCase names (`batchSize`, `maxTimeMS`,
//! `let`...), so a document of options — as the spec tests give them — becomes an
//! options struct with `bson::from_document`.

pub mod bulk_write;
pub mod client_bulk_write;
pub(crate) mod read;
pub(crate) mod run_command;
pub(crate) mod write;

pub use bulk_write::{DeleteResult, InsertManyResult, InsertOneResult, UpdateResult};
pub use run_command::RunCursorCommandOptions;

use std::time::Duration;

use bson::{Bson, Document};
use serde::Deserialize;

use crate::concern::{ReadConcern, WriteConcern};
use crate::selection::SelectionCriteria;

/// Whether a tailable cursor waits for new data. Reads as the spec tests spell it:
/// `nonTailable`, `tailable`, `tailableAwait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CursorType {
    /// An ordinary cursor: it ends after the last result.
    NonTailable,
    /// A tailable cursor on a capped collection: it stays open after the last result.
    Tailable,
    /// A tailable cursor whose getMore waits (up to `maxAwaitTimeMS`) for new data.
    TailableAwait,
}

/// The index an operation uses (its `hint`): the index's key pattern or its name.
///
/// ```
/// use anymongo::bson::{doc, Bson};
/// use anymongo::crud::Hint;
/// assert_eq!(Bson::from(Hint::Name("qty_1".into())), Bson::String("qty_1".into()));
/// assert_eq!(Bson::from(Hint::Keys(doc! { "qty": 1 })), Bson::Document(doc! { "qty": 1 }));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    /// The index with this key pattern.
    Keys(Document),
    /// The index with this name.
    Name(String),
}

impl From<Hint> for Bson {
    fn from(hint: Hint) -> Bson {
        match hint {
            Hint::Keys(keys) => Bson::Document(keys),
            Hint::Name(name) => Bson::String(name),
        }
    }
}

/// What a cursor's `timeoutMS` bounds (defined with the cursors).
pub use crate::cursor::TimeoutMode;

/// Options of [`crate::Collection::find`] (CRUD spec, "FindOptions"). Like every
/// options struct, it has a builder, as the official driver's do; most code sets
/// options on the action instead (`coll.find(filter).limit(5)`).
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::crud::FindOptions;
/// let options = FindOptions::builder().sort(doc! { "qty": -1 }).limit(5).build();
/// assert_eq!(options.limit, Some(5));
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct FindOptions {
    /// Lets the server write temporary files for large sorts.
    pub allow_disk_use: Option<bool>,
    /// Partial results from a sharded cluster when some shards are down.
    pub allow_partial_results: Option<bool>,
    /// Documents per batch (first and getMore).
    pub batch_size: Option<u32>,
    /// The collation of string comparisons.
    pub collation: Option<Document>,
    /// A comment shown in the server's logs and profiler.
    pub comment: Option<Bson>,
    /// Tailable cursors.
    pub cursor_type: Option<CursorType>,
    /// The index to use: its name or its key pattern.
    pub hint: Option<Bson>,
    /// At most this many documents; a negative limit returns one batch only.
    pub limit: Option<i64>,
    /// The exclusive upper bound of an index scan.
    pub max: Option<Document>,
    /// The getMore wait of a tailable awaitData cursor.
    #[serde(
        rename = "maxAwaitTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_await_time: Option<Duration>,
    /// The server-side time limit of the query.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// The inclusive lower bound of an index scan.
    pub min: Option<Document>,
    /// The server does not time the cursor out.
    pub no_cursor_timeout: Option<bool>,
    /// Which fields to return.
    pub projection: Option<Document>,
    /// Overrides the collection's read concern.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// Overrides the collection's read preference.
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
    /// Only the index keys.
    pub return_key: Option<bool>,
    /// Adds `$recordId` to each document.
    pub show_record_id: Option<bool>,
    /// Skips this many documents.
    pub skip: Option<u64>,
    /// The order of the results.
    pub sort: Option<Document>,
    /// Variables for `$expr` and aggregation expressions (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// What `timeoutMS` bounds; needs timeoutMS (Client Side Operations Timeout
    /// spec, "Cursors").
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of `aggregate` (CRUD spec, "AggregateOptions").
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct AggregateOptions {
    /// Lets the server write temporary files.
    pub allow_disk_use: Option<bool>,
    /// Documents per batch (first and getMore).
    pub batch_size: Option<u32>,
    /// Skips document validation for `$out`/`$merge`.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Document>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Bson>,
    /// The getMore wait of a change stream or tailable cursor.
    #[serde(
        rename = "maxAwaitTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_await_time: Option<Duration>,
    /// The server-side time limit.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// Overrides the read concern.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// Overrides the read preference.
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
    /// Overrides the write concern (`$out`/`$merge`).
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
    /// Variables (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// What `timeoutMS` bounds; needs timeoutMS (Client Side Operations Timeout
    /// spec, "Cursors").
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of `count_documents` (CRUD spec, "CountOptions").
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct CountOptions {
    /// The collation of string comparisons.
    pub collation: Option<Document>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Bson>,
    /// Counts at most this many documents.
    pub limit: Option<u64>,
    /// The server-side time limit.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// Skips this many documents first.
    pub skip: Option<u64>,
    /// Overrides the read concern.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// Overrides the read preference.
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
}

/// Options of `estimated_document_count` and `distinct`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct ReadOptions {
    /// The collation of string comparisons (`distinct`).
    pub collation: Option<Document>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use (`distinct`).
    pub hint: Option<Bson>,
    /// The server-side time limit.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// Overrides the read concern.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// Overrides the read preference.
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
}

/// Options of the insert, update, replace and delete operations.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct WriteOptions {
    /// Update filters of array elements (`arrayFilters`; updates only).
    pub array_filters: Option<Vec<Document>>,
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons (updates and deletes).
    pub collation: Option<Document>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use (updates and deletes).
    pub hint: Option<Bson>,
    /// Variables (`let`; updates and deletes).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// `insert_many`: stop at the first error (default `true`).
    pub ordered: Option<bool>,
    /// Updates: the order in which the first matching document is chosen (updateOne,
    /// replaceOne; MongoDB 8.0+).
    pub sort: Option<Document>,
    /// Updates: insert a document when none matches.
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Which version of the document `find_one_and_update`/`_replace` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ReturnDocument {
    /// As it was before the change (the default).
    #[default]
    Before,
    /// As it is after the change.
    After,
}

/// Options of `find_one_and_update`, `_replace` and `_delete`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(strip_option)))]
pub struct FindOneAndModifyOptions {
    /// Update filters of array elements (updates only).
    pub array_filters: Option<Vec<Document>>,
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Document>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Bson>,
    /// Variables (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The server-side time limit.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// Which fields to return.
    pub projection: Option<Document>,
    /// The version returned.
    pub return_document: Option<ReturnDocument>,
    /// Which document is changed when several match.
    pub sort: Option<Document>,
    /// Insert a document when none matches (update and replace).
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn cursor_types_read_as_the_spec_tests_spell_them() {
        for (name, cursor_type) in [
            ("nonTailable", CursorType::NonTailable),
            ("tailable", CursorType::Tailable),
            ("tailableAwait", CursorType::TailableAwait),
        ] {
            let options: FindOptions =
                bson::deserialize_from_document(doc! { "cursorType": name }).unwrap();
            assert_eq!(options.cursor_type, Some(cursor_type));
        }
    }
}
