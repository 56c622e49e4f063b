//! What the write operations did: the single writes' results, and the one result of
//! both bulk writes ([`BulkWriteResult`]), whose verbose results (client bulk write)
//! are made of the single writes'.
//!
//! Data only, on purpose: [`crate::error`] names these types in the failures it
//! carries, so this file imports nothing of the driver.

use std::collections::BTreeMap;

use bson::Bson;

/// The result of `insert_one`.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertOneResult {
    /// The `_id` of the document (generated when it had none).
    pub inserted_id: Bson,
}

/// The result of `insert_many`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InsertManyResult {
    /// The `_id` of each document, by its index in the input.
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// The result of an update or replace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UpdateResult {
    /// How many documents matched the filter.
    pub matched_count: u64,
    /// How many were changed.
    pub modified_count: u64,
    /// The `_id` of the document an upsert inserted.
    pub upserted_id: Option<Bson>,
}

/// The result of a delete.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeleteResult {
    /// How many documents were deleted.
    pub deleted_count: u64,
}

/// What a bulk write did: a [`Collection::bulk_write`](crate::Collection::bulk_write)
/// (CRUD spec, "BulkWriteResult") or a [`Client::bulk_write`](crate::Client::bulk_write)
/// (Bulk Write spec, "BulkWriteResult"). An unacknowledged (`w: 0`) write learns
/// nothing from the server: its counts are those the server's replies carried, if
/// any.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BulkWriteResult {
    /// Whether the server acknowledged the writes (their write concern is not
    /// `w: 0`).
    pub acknowledged: bool,
    /// Documents inserted.
    pub inserted_count: u64,
    /// Documents the updates and replacements matched (upserts excluded).
    pub matched_count: u64,
    /// Documents the updates and replacements changed.
    pub modified_count: u64,
    /// Documents deleted.
    pub deleted_count: u64,
    /// Documents upserted by updates and replacements.
    pub upserted_count: u64,
    /// The `_id` of each inserted document, by the index of its model: every insert
    /// of a collection's bulk write that was done; those a client bulk write's
    /// verbose results confirm.
    pub inserted_ids: BTreeMap<usize, Bson>,
    /// The `_id` of each upserted document, by the index of its model (a client bulk
    /// write's: with verbose results only).
    pub upserted_ids: BTreeMap<usize, Bson>,
    /// Client bulk write: the result of each write that succeeded; `Some` only when
    /// [`BulkWriteOptions::verbose_results`](super::BulkWriteOptions::verbose_results)
    /// asked for them.
    pub verbose_results: Option<VerboseResults>,
}

/// The result of a [`Client::bulk_write`](crate::Client::bulk_write): a
/// [`BulkWriteResult`].
pub type ClientBulkWriteResult = BulkWriteResult;

/// The result of each write of a client bulk write, by its index among the models
/// given (Bulk Write spec, "VerboseResults").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerboseResults {
    /// The inserts that succeeded.
    pub insert_results: BTreeMap<usize, InsertOneResult>,
    /// The updates and replacements that succeeded.
    pub update_results: BTreeMap<usize, UpdateResult>,
    /// The deletes that succeeded.
    pub delete_results: BTreeMap<usize, DeleteResult>,
}
