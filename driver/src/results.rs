//! What the operations return, where users of the official driver look for it
//! (`mongodb::results`): re-exports of the types defined with the operations.
//!
//! ```no_run
//! # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
//! use anymongo::bson::doc;
//! use anymongo::results::UpdateResult;
//! let result: UpdateResult = orders
//!     .update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } })
//!     .upsert(true)
//!     .await?;
//! println!("{} matched, {:?} upserted", result.matched_count, result.upserted_id);
//! # Ok(()) }
//! ```

pub use crate::crud::bulk_write::{
    BulkWriteResult, ClientBulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult,
    SummaryBulkWriteResult, UpdateResult, VerboseBulkWriteResult, VerboseResults,
};
pub use crate::crud::write::FindAndModifyResult;
pub use crate::enumerate::{
    CollectionSpecification, CollectionSpecificationInfo, CollectionType, DatabaseSpecification,
};
pub use crate::index_management::{CreateIndexResult, CreateIndexesResult};
