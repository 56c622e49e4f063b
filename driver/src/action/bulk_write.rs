//! `bulk_write`: the collection's (CRUD spec) and the client's (Bulk Write spec).

use super::{run_blocking, session_setter};
use std::borrow::Borrow;
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::Serialize;

use super::setters::{option_setters, timeout_setter};
use crate::client::Client;
use crate::concern::WriteConcern;
use crate::crud::bulk_write::collection_level::Statements;
use crate::crud::bulk_write::{
    client_level, BulkWriteOptions, BulkWriteResult, InsertOneModel, ReplaceOneModel,
    SummaryBulkWriteResult, VerboseBulkWriteResult, WriteModel,
};
use crate::crud::write::to_document;
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
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = WriteModel<T>>,
    ) -> CollectionBulkWrite<'_> {
        CollectionBulkWrite {
            collection: self.clone_with_type(),
            // Serialized and checked now, so that the action does not hold a `T`.
            statements: Statements::of_models(models, &self.namespace()),
            options: None,
            session: None,
            timeout: None,
        }
    }
}

impl<T: Serialize> Collection<T> {
    /// An [`InsertOneModel`] of `document` on this collection, for a
    /// [`Client::bulk_write`](crate::Client::bulk_write); an error when `document`
    /// does not serialize to a BSON document.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// let orders = client.database("shop").collection::<Document>("orders");
    /// let model = orders.insert_one_model(doc! { "item": "tea" })?;
    /// client.bulk_write([model]).await?;
    /// # Ok(()) }
    /// ```
    pub fn insert_one_model(&self, document: impl Borrow<T>) -> Result<InsertOneModel> {
        Ok(InsertOneModel::builder()
            .namespace(self.namespace())
            .document(to_document(document.borrow())?)
            .build())
    }

    /// A [`ReplaceOneModel`] on this collection replacing the first document matching
    /// `filter` with `replacement`, for a [`Client::bulk_write`](crate::Client::bulk_write);
    /// an error when `replacement` does not serialize to a BSON document.
    pub fn replace_one_model(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> Result<ReplaceOneModel> {
        Ok(ReplaceOneModel::builder()
            .namespace(self.namespace())
            .filter(filter)
            .replacement(to_document(replacement.borrow())?)
            .build())
    }
}

impl Client {
    /// Runs `models`, writes on any collections of the deployment (each model names
    /// its own with `.namespace(..)`), in as few `bulkWrite` commands as the server's
    /// limits allow (Bulk Write spec; MongoDB 8.0+). Ordered (the default), it stops
    /// at the first failed write; unordered (`.ordered(false)`), it does all it can.
    /// Awaited, it returns the counts ([`SummaryBulkWriteResult`]); after
    /// `.verbose_results()`, each write's result too ([`VerboseBulkWriteResult`]).
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) before
    /// anything is sent (no models, a model without a namespace, an update without
    /// operators, a replacement with some, `w: 0` with ordered writes or verbose
    /// results, a write too large for a message);
    /// [`ErrorKind::BulkWrite`](crate::ErrorKind::BulkWrite) when writes
    /// failed, write concerns were not satisfied, or an error stopped the bulk write
    /// after some writes were done, with what succeeded; any other error as it is when
    /// nothing is known to have been written. A batch without `updateMany` or
    /// `deleteMany` is retried once after a retryable error (Retryable Writes spec).
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// use anymongo::options::{DeleteManyModel, UpdateOneModel, WriteModel};
    /// let orders = client.database("shop").collection::<Document>("orders");
    /// let stock = client.database("shop").collection::<Document>("stock");
    /// let models: Vec<WriteModel> = vec![
    ///     orders.insert_one_model(doc! { "item": "tea", "qty": 2 })?.into(),
    ///     UpdateOneModel::builder()
    ///         .namespace(stock.namespace())
    ///         .filter(doc! { "item": "tea" })
    ///         .update(doc! { "$inc": { "qty": -2 } })
    ///         .build()
    ///         .into(),
    ///     DeleteManyModel::builder()
    ///         .namespace(client.database("shop").collection::<Document>("carts").namespace())
    ///         .filter(doc! { "user": "ann" })
    ///         .build()
    ///         .into(),
    /// ];
    /// let result = client.bulk_write(models).verbose_results().await?;
    /// assert_eq!(result.summary.inserted_count, 1);
    /// println!("the order's _id: {}", result.insert_results[&0].inserted_id);
    /// # Ok(()) }
    /// ```
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<WriteModel>>,
    ) -> BulkWrite<'_, SummaryBulkWriteResult> {
        BulkWrite {
            client: self,
            models: models.into_iter().map(Into::into).collect(),
            options: None,
            session: None,
            timeout: None,
            _result: PhantomData,
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
            /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
            /// older servers): not for applications, it may change or go in any release.
            raw_data: bool,
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
pub struct CollectionBulkWrite<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    statements: Result<Statements>,
    options: Option<BulkWriteOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> CollectionBulkWrite<'a> {
    bulk_write_setters!();
}

run_blocking!(impl['a] CollectionBulkWrite<'a> => BulkWriteResult);

impl<'a> IntoFuture for CollectionBulkWrite<'a> {
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
/// returns what the writes did: an `R`, [`SummaryBulkWriteResult`] unless
/// `.verbose_results()` asked for a [`VerboseBulkWriteResult`].
#[must_use = "an action does nothing until it is awaited"]
pub struct BulkWrite<'a, R> {
    client: &'a Client,
    models: Vec<WriteModel>,
    options: Option<BulkWriteOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _result: PhantomData<R>,
}

impl<'a, R> BulkWrite<'a, R> {
    bulk_write_setters!();

    /// Runs the writes, with each write's result when `verbose` (`errorsOnly: false`).
    fn execute(self, verbose: bool) -> BoxFuture<'a, Result<BulkWriteResult>> {
        // The operation's own timeoutMS, else the client's.
        let timing = self.timeout.or(self.client.timeout()).into();
        boxed(client_level::execute(
            self.client.executor(),
            self.models,
            self.options,
            verbose,
            self.session,
            timing,
        ))
    }
}

impl<'a> BulkWrite<'a, SummaryBulkWriteResult> {
    /// The result of each write too, not only the counts: the bulk write then returns
    /// a [`VerboseBulkWriteResult`]. Off by default, which is faster.
    pub fn verbose_results(self) -> BulkWrite<'a, VerboseBulkWriteResult> {
        BulkWrite {
            client: self.client,
            models: self.models,
            options: self.options,
            session: self.session,
            timeout: self.timeout,
            _result: PhantomData,
        }
    }
}

run_blocking!(impl['a] BulkWrite<'a, SummaryBulkWriteResult> => SummaryBulkWriteResult);

impl<'a> IntoFuture for BulkWrite<'a, SummaryBulkWriteResult> {
    type Output = Result<SummaryBulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        let run = self.execute(false);
        boxed(async move { Ok(SummaryBulkWriteResult::of(&run.await?)) })
    }
}

run_blocking!(impl['a] BulkWrite<'a, VerboseBulkWriteResult> => VerboseBulkWriteResult);

impl<'a> IntoFuture for BulkWrite<'a, VerboseBulkWriteResult> {
    type Output = Result<VerboseBulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        let run = self.execute(true);
        boxed(async move { Ok(VerboseBulkWriteResult::of(run.await?)) })
    }
}
