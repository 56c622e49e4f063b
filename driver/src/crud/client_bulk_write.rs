//! The names of the client-level bulk write (Bulk Write spec, MongoDB 8.0+), whose
//! models, options and result are those of [`super::bulk_write`]: a
//! [`ClientWriteModel`] is a [`WriteModel`] with its namespace.

pub use super::bulk_write::{
    ClientBulkWriteOptions, ClientBulkWriteResult, ClientWriteModel, DeleteManyModel,
    DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel, UpdateOneModel,
    VerboseResults, WriteModel,
};
