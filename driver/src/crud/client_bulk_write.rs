//! The names of the client-level bulk write (Bulk Write spec, MongoDB 8.0+), whose
//! models and options are those of [`super::bulk_write`], each model naming its
//! collection (`namespace`).

pub use super::bulk_write::{
    ClientBulkWriteOptions, ClientBulkWriteResult, DeleteManyModel, DeleteOneModel, InsertOneModel,
    ReplaceOneModel, SummaryBulkWriteResult, UpdateManyModel, UpdateOneModel,
    VerboseBulkWriteResult, VerboseResults, WriteModel,
};
