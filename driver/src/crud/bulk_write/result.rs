//! What the write operations did: the single writes' results, and the one result of
//! both bulk writes ([`BulkWriteResult`]), whose verbose results (client bulk write)
//! are made of the single writes'.
//!
//! Data only, on purpose: [`crate::error`] names these types in the failures it
//! carries, so this file imports nothing of the driver.

use std::collections::{BTreeMap, HashMap};

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
    /// `.verbose_results()` asked for them.
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

/// What a [`Client::bulk_write`](crate::Client::bulk_write) did, in counts (Bulk
/// Write spec, "BulkWriteResult" without verbose results).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SummaryBulkWriteResult {
    /// Documents inserted.
    pub inserted_count: i64,
    /// Documents the updates and replacements matched (upserts excluded).
    pub matched_count: i64,
    /// Documents the updates and replacements changed.
    pub modified_count: i64,
    /// Documents upserted by updates and replacements.
    pub upserted_count: i64,
    /// Documents deleted.
    pub deleted_count: i64,
    /// Whether the server acknowledged the writes (their write concern is not
    /// `w: 0`); an unacknowledged bulk write's counts are those its replies carried.
    /// An anymongo addition (the Bulk Write spec's `acknowledged`).
    pub acknowledged: bool,
}

/// What a [`Client::bulk_write`](crate::Client::bulk_write) with
/// `.verbose_results()` did: the counts and the result of each write that succeeded,
/// by the index of its model (Bulk Write spec, "VerboseResults").
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct VerboseBulkWriteResult {
    /// The counts.
    pub summary: SummaryBulkWriteResult,
    /// The inserts that succeeded.
    pub insert_results: HashMap<usize, InsertOneResult>,
    /// The updates and replacements that succeeded.
    pub update_results: HashMap<usize, UpdateResult>,
    /// The deletes that succeeded.
    pub delete_results: HashMap<usize, DeleteResult>,
}

impl SummaryBulkWriteResult {
    /// The counts of `result`. The official result counts in `i64`: a count past
    /// `i64::MAX` (only a misbehaving server's replies add up to one) saturates.
    pub(crate) fn of(result: &BulkWriteResult) -> SummaryBulkWriteResult {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        SummaryBulkWriteResult {
            inserted_count: count(result.inserted_count),
            matched_count: count(result.matched_count),
            modified_count: count(result.modified_count),
            upserted_count: count(result.upserted_count),
            deleted_count: count(result.deleted_count),
            acknowledged: result.acknowledged,
        }
    }
}

impl VerboseBulkWriteResult {
    /// The counts and each write's result of `result` (none when it has no verbose
    /// results).
    pub(crate) fn of(result: BulkWriteResult) -> VerboseBulkWriteResult {
        let summary = SummaryBulkWriteResult::of(&result);
        let verbose = result.verbose_results.unwrap_or_default();
        VerboseBulkWriteResult {
            summary,
            insert_results: verbose.insert_results.into_iter().collect(),
            update_results: verbose.update_results.into_iter().collect(),
            delete_results: verbose.delete_results.into_iter().collect(),
        }
    }
}

/// What the writes of a failed [`Client::bulk_write`](crate::Client::bulk_write)
/// that succeeded did ([`BulkWriteError::partial_result`](crate::error::BulkWriteError::partial_result)),
/// in the shape its result would have had.
#[derive(Debug, Clone, PartialEq)]
pub enum PartialBulkWriteResult {
    /// The counts: the bulk write did not ask for `.verbose_results()`.
    Summary(SummaryBulkWriteResult),
    /// The counts and each write's result: the bulk write asked for
    /// `.verbose_results()`.
    Verbose(VerboseBulkWriteResult),
}

impl PartialBulkWriteResult {
    /// `result` as the bulk write asked for it: verbose when it has verbose results.
    pub(crate) fn of(result: BulkWriteResult) -> PartialBulkWriteResult {
        match result.verbose_results {
            Some(_) => PartialBulkWriteResult::Verbose(VerboseBulkWriteResult::of(result)),
            None => PartialBulkWriteResult::Summary(SummaryBulkWriteResult::of(&result)),
        }
    }
}

/// The partial result in the one shape of both bulk writes' results, for code that
/// reads both the same way (the npm package, the test runners).
impl From<PartialBulkWriteResult> for BulkWriteResult {
    fn from(partial: PartialBulkWriteResult) -> BulkWriteResult {
        match partial {
            PartialBulkWriteResult::Summary(summary) => summary.into(),
            PartialBulkWriteResult::Verbose(verbose) => verbose.into(),
        }
    }
}

/// The counts in the shape of [`BulkWriteResult`] (`acknowledged`, counts in `u64`).
impl From<SummaryBulkWriteResult> for BulkWriteResult {
    fn from(summary: SummaryBulkWriteResult) -> BulkWriteResult {
        // Counts are never negative: the driver adds up the server's unsigned counts.
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        BulkWriteResult {
            acknowledged: summary.acknowledged,
            inserted_count: count(summary.inserted_count),
            matched_count: count(summary.matched_count),
            modified_count: count(summary.modified_count),
            deleted_count: count(summary.deleted_count),
            upserted_count: count(summary.upserted_count),
            ..BulkWriteResult::default()
        }
    }
}

/// The counts and each write's result in the shape of [`BulkWriteResult`] (the
/// results by index in order).
impl From<VerboseBulkWriteResult> for BulkWriteResult {
    fn from(verbose: VerboseBulkWriteResult) -> BulkWriteResult {
        let upserted_ids = verbose
            .update_results
            .iter()
            .filter_map(|(index, update)| Some((*index, update.upserted_id.clone()?)))
            .collect();
        let inserted_ids = verbose
            .insert_results
            .iter()
            .map(|(index, insert)| (*index, insert.inserted_id.clone()))
            .collect();
        BulkWriteResult {
            inserted_ids,
            upserted_ids,
            verbose_results: Some(VerboseResults {
                insert_results: verbose.insert_results.into_iter().collect(),
                update_results: verbose.update_results.into_iter().collect(),
                delete_results: verbose.delete_results.into_iter().collect(),
            }),
            ..verbose.summary.into()
        }
    }
}
