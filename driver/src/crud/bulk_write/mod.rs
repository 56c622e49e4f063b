//! Bulk writes: the collection's (CRUD spec, "Insert, Update, Replace, Delete, and
//! Bulk Writes"), sent as `insert`, `update` and `delete` commands, and the client's
//! (Bulk Write spec, MongoDB 8.0+), sent as `bulkWrite` commands that may write to any
//! collections of the deployment.
//!
//! Both take the same [`WriteModel`]s (a client's each naming its collection), the
//! same [`BulkWriteOptions`]; a collection's returns a [`BulkWriteResult`], a
//! client's a [`SummaryBulkWriteResult`] or a [`VerboseBulkWriteResult`]. Each model becomes
//! its statement in one place (`model`), spelled for the command that carries it;
//! then `collection_level` groups the statements into runs of one kind — consecutive
//! models when ordered, every model of a kind when unordered — each sent in as many
//! commands as the server's limits require, and `client_level` puts them in
//! `bulkWrite` commands with the namespaces they use. The models are checked first:
//! nothing is sent for an invalid list. Write errors and upserts come back with the
//! index of their model in the caller's list.
//!
//! The results (`result`) are data only: the errors of [`crate::error`] carry them.
//!
//! ```no_run
//! # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
//! use anymongo::bson::{doc, Document};
//! use anymongo::crud::bulk_write::{
//!     DeleteOneModel, InsertOneModel, UpdateOneModel, WriteModel,
//! };
//!
//! let orders = client.database("shop").collection::<Document>("orders");
//! let result = orders
//!     .bulk_write([
//!         InsertOneModel::new(doc! { "item": "tea", "qty": 2 }).into(),
//!         WriteModel::UpdateOne(
//!             UpdateOneModel::builder()
//!                 .filter(doc! { "item": "milk" })
//!                 .update(doc! { "$inc": { "qty": 1 } })
//!                 .upsert(true)
//!                 .build(),
//!         ),
//!         DeleteOneModel::new(doc! { "item": "coffee" }).into(),
//!     ])
//!     .await?;
//! println!("{} inserted, {} upserted", result.inserted_count, result.upserted_count);
//! # Ok(()) }
//! ```

/// Adds a reply's `count` to the running `total` of a bulk write. The counts are the
/// server's, batch after batch: a sum beyond `u64::MAX` (issue 41: replies whose `n`
/// add up past it panicked, or wrapped in a release build) is an error of the server
/// at `address`, not a wrapped count.
pub(crate) fn add_count(total: &mut u64, count: u64, address: &str) -> crate::error::Result<()> {
    *total = total.checked_add(count).ok_or_else(|| {
        crate::error::Error::misbehaving(
            address,
            format!(
                "its replies count more than {} writes for one bulk write",
                u64::MAX
            ),
        )
    })?;
    Ok(())
}

pub(crate) mod client_level;
pub(crate) mod collection_level;
mod model;
mod options;
mod result;

pub use model::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateModifications, UpdateOneModel, WriteModel,
};
pub use options::{BulkWriteOptions, ClientBulkWriteOptions};
pub use result::{
    BulkWriteResult, ClientBulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult,
    PartialBulkWriteResult, SummaryBulkWriteResult, UpdateResult, VerboseBulkWriteResult,
    VerboseResults,
};

/// A `writeConcernError` as a server reports it, for the tests of both bulk writes.
#[cfg(test)]
fn write_concern_error(code: i32, message: &str) -> crate::error::WriteConcernError {
    crate::error::WriteConcernError {
        code,
        code_name: String::new(),
        message: message.into(),
        details: None,
    }
}
