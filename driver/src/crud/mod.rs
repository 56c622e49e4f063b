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
mod collation;
mod namespace;
pub(crate) mod read;
pub(crate) mod run_command;
pub(crate) mod write;

pub use bulk_write::{DeleteResult, InsertManyResult, InsertOneResult, UpdateResult};
pub use collation::{
    Collation, CollationAlternate, CollationCaseFirst, CollationMaxVariable, CollationStrength,
};
pub use namespace::Namespace;
pub use run_command::{RunCommandOptions, RunCursorCommandOptions};

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};

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

/// The index an operation uses (its `hint`): the index's key pattern or its name. Reads
/// as the spec tests give it: a document or a string.
///
/// ```
/// use anymongo::bson::{doc, Bson};
/// use anymongo::options::Hint;
/// assert_eq!(Bson::from(Hint::Name("qty_1".into())), Bson::String("qty_1".into()));
/// assert_eq!(Bson::from(Hint::Keys(doc! { "qty": 1 })), Bson::Document(doc! { "qty": 1 }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
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

/// Writes `From<$Public> for $Internal` for options structs whose fields are among the
/// internal one's: the operations that share a command share its options struct.
macro_rules! into_internal {
    ($Internal:ident: $($Public:ident { $($field:ident),* $(,)? })*) => {
        $(
            impl From<$Public> for $Internal {
                // One of the public structs may have every field of the internal one.
                #[allow(clippy::needless_update)]
                fn from(options: $Public) -> $Internal {
                    $Internal {
                        $($field: options.$field,)*
                        ..$Internal::default()
                    }
                }
            }
        )*
    };
}

/// Options of [`crate::Collection::find`] (CRUD spec, "FindOptions"). Like every
/// options struct, it has a builder, as the official driver's do; most code sets
/// options on the action instead (`coll.find(filter).limit(5)`).
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::FindOptions;
/// let options = FindOptions::builder().sort(doc! { "qty": -1 }).limit(5i64).build();
/// assert_eq!(options.limit, Some(5));
/// let options = FindOptions { skip: Some(10), ..Default::default() };
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct FindOptions {
    /// Lets the server write temporary files for large sorts.
    pub allow_disk_use: Option<bool>,
    /// Partial results from a sharded cluster when some shards are down.
    pub allow_partial_results: Option<bool>,
    /// Documents per batch (first and getMore).
    pub batch_size: Option<u32>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment shown in the server's logs and profiler.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// Tailable cursors.
    pub cursor_type: Option<CursorType>,
    /// The index to use: its name or its key pattern.
    pub hint: Option<Hint>,
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
    /// The most documents or index keys to scan (`maxScan`); servers before 4.2 only,
    /// as in the official driver, which deprecates it for `max_time`.
    pub max_scan: Option<u64>,
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
    /// spec, "Cursors"). An anymongo addition: the official driver has no timeoutMS.
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of [`crate::Collection::find_one`]: those of a find that make sense for one
/// document (no limit, batch size or cursor type).
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::FindOneOptions;
/// let newest = FindOneOptions::builder()
///     .sort(doc! { "at": -1 })
///     .projection(doc! { "_id": 0 })
///     .build();
/// # let _ = newest;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct FindOneOptions {
    /// Partial results from a sharded cluster when some shards are down.
    pub allow_partial_results: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment shown in the server's logs and profiler.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use: its name or its key pattern.
    pub hint: Option<Hint>,
    /// The exclusive upper bound of an index scan.
    pub max: Option<Document>,
    /// The most documents or index keys to scan (`maxScan`; servers before 4.2).
    pub max_scan: Option<u64>,
    /// The server-side time limit of the query.
    #[serde(
        rename = "maxTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_time: Option<Duration>,
    /// The inclusive lower bound of an index scan.
    pub min: Option<Document>,
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
    /// Adds `$recordId` to the document.
    pub show_record_id: Option<bool>,
    /// Skips this many documents.
    pub skip: Option<u64>,
    /// Which document is returned when several match: the first in this order.
    pub sort: Option<Document>,
    /// Variables for `$expr` and aggregation expressions (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
}

into_internal!(FindOptions:
    FindOneOptions {
        allow_partial_results, collation, comment, raw_data, hint, max, max_scan, max_time, min,
        projection, read_concern, selection_criteria, return_key, show_record_id, skip, sort,
        let_vars,
    }
);

/// Options of `aggregate` (CRUD spec, "AggregateOptions").
///
/// ```
/// use anymongo::options::AggregateOptions;
/// let options = AggregateOptions::builder().allow_disk_use(true).batch_size(100u32).build();
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct AggregateOptions {
    /// Lets the server write temporary files.
    pub allow_disk_use: Option<bool>,
    /// Documents per batch (first and getMore).
    pub batch_size: Option<u32>,
    /// Skips document validation for `$out`/`$merge`.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
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
    /// spec, "Cursors"). An anymongo addition: the official driver has no timeoutMS.
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of `count_documents` (CRUD spec, "CountOptions"), and of the legacy `count`.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::{CountOptions, Hint};
/// let options = CountOptions::builder().hint(Hint::Keys(doc! { "item": 1 })).build();
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct CountOptions {
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
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

/// Options of `estimated_document_count` (CRUD spec, "EstimatedDocumentCountOptions").
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct EstimatedDocumentCountOptions {
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
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

// The estimate is the `count` command without a query.
into_internal!(CountOptions:
    EstimatedDocumentCountOptions { comment, raw_data, max_time, read_concern, selection_criteria }
);

/// Options of `distinct` (CRUD spec, "DistinctOptions").
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct DistinctOptions {
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
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

/// Options of `insert_one`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct InsertOneOptions {
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `insert_many`.
///
/// ```
/// use anymongo::options::InsertManyOptions;
/// // Insert all that can be, rather than stop at the first failure.
/// let options = InsertManyOptions::builder().ordered(false).build();
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct InsertManyOptions {
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// Stop at the first error (the default, `true`), or go on with the others.
    pub ordered: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `update_one` and `update_many`.
///
/// ```
/// use anymongo::options::UpdateOptions;
/// let options = UpdateOptions::builder().upsert(true).build();
/// assert_eq!(options.upsert, Some(true));
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct UpdateOptions {
    /// Filters that choose the array elements the update changes (`arrayFilters`).
    pub array_filters: Option<Vec<Document>>,
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter and a pipeline update (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// `update_one`: which of the matching documents is updated (MongoDB 8.0+);
    /// `update_many` refuses it.
    pub sort: Option<Document>,
    /// Inserts a document when none matches.
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `replace_one`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct ReplaceOptions {
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// Which of the matching documents is replaced (MongoDB 8.0+).
    pub sort: Option<Document>,
    /// Inserts the replacement when no document matches.
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `delete_one` and `delete_many`.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::{DeleteOptions, Hint};
/// let options = DeleteOptions::builder().hint(Hint::Keys(doc! { "at": 1 })).build();
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct DeleteOptions {
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// The options of the `insert`, `update` and `delete` commands of the single writes and
/// `insert_many`: each operation's public options struct becomes this one, so that one
/// code path sends them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WriteOptions {
    pub array_filters: Option<Vec<Document>>,
    pub bypass_document_validation: Option<bool>,
    pub collation: Option<Collation>,
    pub comment: Option<Bson>,
    pub raw_data: Option<bool>,
    pub hint: Option<Hint>,
    pub let_vars: Option<Document>,
    pub ordered: Option<bool>,
    pub sort: Option<Document>,
    pub upsert: Option<bool>,
    pub write_concern: Option<WriteConcern>,
}

into_internal!(WriteOptions:
    InsertOneOptions { bypass_document_validation, comment, raw_data, write_concern }
    InsertManyOptions { bypass_document_validation, comment, raw_data, ordered, write_concern }
    UpdateOptions {
        array_filters, bypass_document_validation, collation, comment, raw_data, hint, let_vars, sort,
        upsert, write_concern,
    }
    ReplaceOptions {
        bypass_document_validation, collation, comment, raw_data, hint, let_vars, sort, upsert,
        write_concern,
    }
    DeleteOptions { collation, comment, raw_data, hint, let_vars, write_concern }
);

/// Which version of the document `find_one_and_update`/`_replace` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ReturnDocument {
    /// As it was before the change (the default).
    #[default]
    Before,
    /// As it is after the change.
    After,
}

/// Options of `find_one_and_delete`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct FindOneAndDeleteOptions {
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter (`let`).
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
    /// Which document is deleted when several match: the first in this order.
    pub sort: Option<Document>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `find_one_and_replace`.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct FindOneAndReplaceOptions {
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter (`let`).
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
    /// The version returned: before the replacement (the default) or after.
    pub return_document: Option<ReturnDocument>,
    /// Which document is replaced when several match: the first in this order.
    pub sort: Option<Document>,
    /// Inserts the replacement when no document matches.
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `find_one_and_update`.
///
/// ```
/// use anymongo::options::{FindOneAndUpdateOptions, ReturnDocument};
/// let options = FindOneAndUpdateOptions::builder()
///     .return_document(ReturnDocument::After)
///     .upsert(true)
///     .build();
/// # let _ = options;
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct FindOneAndUpdateOptions {
    /// Filters that choose the array elements the update changes (`arrayFilters`).
    pub array_filters: Option<Vec<Document>>,
    /// Skips document validation.
    pub bypass_document_validation: Option<bool>,
    /// The collation of string comparisons.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+): works on the
    /// underlying namespaces of time-series collections. Not for applications; it may
    /// change or go in any release (CRUD spec, `rawData`). Not sent to older servers.
    pub raw_data: Option<bool>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables for the filter and a pipeline update (`let`).
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
    /// The version returned: before the update (the default) or after.
    pub return_document: Option<ReturnDocument>,
    /// Which document is updated when several match: the first in this order.
    pub sort: Option<Document>,
    /// Inserts a document when none matches.
    pub upsert: Option<bool>,
    /// Overrides the write concern.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
}

/// The options of the `findAndModify` command: each find-and-modify operation's public
/// options struct becomes this one.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FindAndModifyOptions {
    pub array_filters: Option<Vec<Document>>,
    pub bypass_document_validation: Option<bool>,
    pub collation: Option<Collation>,
    pub comment: Option<Bson>,
    pub raw_data: Option<bool>,
    pub hint: Option<Hint>,
    pub let_vars: Option<Document>,
    pub max_time: Option<Duration>,
    pub projection: Option<Document>,
    pub return_document: Option<ReturnDocument>,
    pub sort: Option<Document>,
    pub upsert: Option<bool>,
    pub write_concern: Option<WriteConcern>,
}

into_internal!(FindAndModifyOptions:
    FindOneAndDeleteOptions {
        collation, comment, raw_data, hint, let_vars, max_time, projection, sort, write_concern,
    }
    FindOneAndReplaceOptions {
        bypass_document_validation, collation, comment, raw_data, hint, let_vars, max_time, projection,
        return_document, sort, upsert, write_concern,
    }
    FindOneAndUpdateOptions {
        array_filters, bypass_document_validation, collation, comment, raw_data, hint, let_vars,
        max_time, projection, return_document, sort, upsert, write_concern,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    /// Every CRUD options struct reads `rawData` (the name the specs give it) and
    /// hands it to the options of the command it becomes.
    #[test]
    fn raw_data_reads_as_the_specs_spell_it_and_reaches_the_command_options() {
        fn read<T: serde::de::DeserializeOwned>() -> T {
            bson::deserialize_from_document(doc! { "rawData": true }).unwrap()
        }
        let set = Some(true);
        assert_eq!(read::<FindOptions>().raw_data, set);
        assert_eq!(FindOptions::from(read::<FindOneOptions>()).raw_data, set);
        assert_eq!(read::<AggregateOptions>().raw_data, set);
        assert_eq!(read::<CountOptions>().raw_data, set);
        let estimated = read::<EstimatedDocumentCountOptions>();
        assert_eq!(CountOptions::from(estimated).raw_data, set);
        assert_eq!(read::<DistinctOptions>().raw_data, set);
        assert_eq!(WriteOptions::from(read::<InsertOneOptions>()).raw_data, set);
        assert_eq!(
            WriteOptions::from(read::<InsertManyOptions>()).raw_data,
            set
        );
        assert_eq!(WriteOptions::from(read::<UpdateOptions>()).raw_data, set);
        assert_eq!(WriteOptions::from(read::<ReplaceOptions>()).raw_data, set);
        assert_eq!(WriteOptions::from(read::<DeleteOptions>()).raw_data, set);
        let delete = read::<FindOneAndDeleteOptions>();
        assert_eq!(FindAndModifyOptions::from(delete).raw_data, set);
        let replace = read::<FindOneAndReplaceOptions>();
        assert_eq!(FindAndModifyOptions::from(replace).raw_data, set);
        let update = read::<FindOneAndUpdateOptions>();
        assert_eq!(FindAndModifyOptions::from(update).raw_data, set);
        assert_eq!(read::<bulk_write::BulkWriteOptions>().raw_data, set);
    }

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
