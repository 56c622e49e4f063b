//! `bulk_write`: the collection's (CRUD spec) and the client's (Bulk Write spec).

use super::{run_blocking, session_setter};
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use serde::Serialize;

use super::setters::{option_setters, timeout_setter};
use crate::client::Client;
use crate::concern::WriteConcern;
use crate::crud::bulk_write::collection_level::Statements;
use crate::crud::bulk_write::{
    client_level, BulkWriteOptions, BulkWriteResult, ClientWriteModel, WriteModel,
};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T: Serialize> Collection<T> {
    /// Runs `models` in as few `insert`, `update` and `delete` commands as their order
    /// and the server's limits allow (CRUD spec, "bulkWrite"). Ordered (the default),
    /// the writes happen in the given order and stop at the first failure; unordered
    /// (`.ordered(false)`), the server may run them in any order and the bulk write
    /// goes on after failures.
    ///
    /// An empty list or an invalid model (an update without operators, a replacement
    /// with them) is an [`ErrorKind::InvalidArgument`](crate::ErrorKind) error, and
    /// nothing is sent. Failed writes make an
    /// [`ErrorKind::CollectionBulkWrite`](crate::ErrorKind) error, listing each by the index of
    /// its model, with what the other writes did. See [`crate::crud::bulk_write`] for
    /// the models.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::crud::bulk_write::{DeleteOneModel, InsertOneModel};
    /// let result = orders
    ///     .bulk_write([
    ///         InsertOneModel::new(doc! { "item": "tea" }).into(),
    ///         DeleteOneModel::new(doc! { "item": "coffee" }).into(),
    ///     ])
    ///     .ordered(false)
    ///     .await?;
    /// println!("{} inserted, {} deleted", result.inserted_count, result.deleted_count);
    /// # Ok(()) }
    /// ```
    pub fn bulk_write(&self, models: impl IntoIterator<Item = WriteModel<T>>) -> BulkWrite<'_, T> {
        BulkWrite {
            collection: self,
            // Serialized and checked now, so that the action does not hold a `T`.
            statements: Statements::of_models(models),
            options: None,
            session: None,
            timeout: None,
        }
    }
}

impl Client {
    /// Runs `models`, writes on any collections of the deployment, as few `bulkWrite`
    /// commands as the server's limits allow (Bulk Write spec; MongoDB 8.0+). Ordered
    /// (the default), it stops at the first failed write; unordered
    /// (`.ordered(false)`), it does all it can. With `.verbose_results(true)`, the
    /// result has each write's result too.
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) before
    /// anything is sent (no models, an update without operators, a replacement with
    /// some, a namespace that is not `database.collection`, `w: 0` with ordered writes
    /// or verbose results, a write too large for a message);
    /// [`ErrorKind::BulkWrite`](crate::ErrorKind::BulkWrite) when writes
    /// failed, write concerns were not satisfied, or an error stopped the bulk write
    /// after some writes were done, with what succeeded; any other error as it is when
    /// nothing is known to have been written. A batch without `updateMany` or
    /// `deleteMany` is retried once after a retryable error (Retryable Writes spec).
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::crud::bulk_write::{
    ///     ClientWriteModel, DeleteManyModel, InsertOneModel, UpdateOneModel,
    /// };
    /// let models = [
    ///     ClientWriteModel::new("shop.orders", InsertOneModel::new(doc! { "item": "tea", "qty": 2 })),
    ///     ClientWriteModel::new(
    ///         "shop.stock",
    ///         UpdateOneModel::new(doc! { "item": "tea" }, doc! { "$inc": { "qty": -2 } }),
    ///     ),
    ///     ClientWriteModel::new("shop.carts", DeleteManyModel::new(doc! { "user": "ann" })),
    /// ];
    /// let result = client.bulk_write(models).verbose_results(true).await?;
    /// assert_eq!(result.inserted_count, 1);
    /// println!("the order's _id: {}", result.inserted_ids[&0]);
    /// # Ok(()) }
    /// ```
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<ClientWriteModel>>,
    ) -> ClientBulkWrite<'_> {
        ClientBulkWrite {
            client: self,
            models: models.into_iter().map(Into::into).collect(),
            options: None,
            session: None,
            timeout: None,
        }
    }
}

/// The option setters both bulk writes have.
macro_rules! bulk_write_setters {
    ($($(#[$doc:meta])* $name:ident: $type:ty,)*) => {
        option_setters!(options: BulkWriteOptions;
            /// Skips document validation (inserts, updates and replacements).
            bypass_document_validation: bool,
            /// A comment shown in the server's logs and profiler.
            comment: impl Into<Bson>,
            /// Variables for the filters and pipelines of the updates and deletes
            /// (`let`; MongoDB 5.0+).
            let_vars: Document,
            /// Stop at the first write that fails (the default, `true`), or go on with
            /// the others (`false`, in which case the writes may run in any order).
            ordered: bool,
            /// Overrides the write concern.
            write_concern: WriteConcern,
            $($(#[$doc])* $name: $type,)*
        );
        timeout_setter!();

        session_setter!();
    };
}

/// A collection's bulk write: what [`Collection::bulk_write`] returns. Awaited, it
/// runs and returns what the writes did.
#[must_use = "an action does nothing until it is awaited"]
pub struct BulkWrite<'a, T> {
    collection: &'a Collection<T>,
    statements: Result<Statements>,
    options: Option<BulkWriteOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> BulkWrite<'a, T> {
    bulk_write_setters!();
}

run_blocking!(impl['a, T] BulkWrite<'a, T> => BulkWriteResult);

impl<'a, T> IntoFuture for BulkWrite<'a, T> {
    type Output = Result<BulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .bulk_write_in(self.statements?, self.options, self.session)
                .await
        })
    }
}

/// A client's bulk write: what [`Client::bulk_write`] returns. Awaited, it runs and
/// returns what the writes did.
#[must_use = "an action does nothing until it is awaited"]
pub struct ClientBulkWrite<'a> {
    client: &'a Client,
    models: Vec<ClientWriteModel>,
    options: Option<BulkWriteOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> ClientBulkWrite<'a> {
    bulk_write_setters!(
        /// The result of each write, not only the counts
        /// ([`BulkWriteResult::verbose_results`]); off by default, which is faster.
        verbose_results: bool,
    );
}

run_blocking!(impl['a] ClientBulkWrite<'a> => BulkWriteResult);

impl<'a> IntoFuture for ClientBulkWrite<'a> {
    type Output = Result<BulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        // The operation's own timeoutMS, else the client's.
        let timing = self.timeout.or(self.client.timeout()).into();
        boxed(client_level::execute(
            self.client.executor(),
            self.models,
            self.options,
            self.session,
            timing,
        ))
    }
}
