//! `insert_one` and `insert_many`.

use super::{run_blocking, session_setter};
use std::borrow::Borrow;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use serde::Serialize;

use super::setters::{option_setters, timeout_setter};
use crate::concern::WriteConcern;
use crate::crud::write::with_id;
use crate::crud::{InsertManyOptions, InsertManyResult, InsertOneOptions, InsertOneResult};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T: Serialize> Collection<T> {
    /// Inserts `document`; an `_id` is generated (as its first field) when it has
    /// none.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let result = orders.insert_one(doc! { "item": "tea", "qty": 2 }).await?;
    /// println!("inserted {}", result.inserted_id);
    /// # Ok(()) }
    /// ```
    pub fn insert_one(&self, document: impl Borrow<T>) -> InsertOne<'_> {
        InsertOne {
            collection: self.clone_with_type(),
            // Serialized now, so that the action does not hold a `T`.
            document: with_id(document.borrow()),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Inserts `documents` in as few commands as the server's limits allow; `_id`s are
    /// generated for those without one. Ordered (the default), it stops at the first
    /// failure; unordered (`.ordered(false)`), it inserts all it can. A failure is an
    /// [`ErrorKind::CollectionBulkWrite`](crate::ErrorKind) error listing every failed write by
    /// index, with the `_id`s inserted in its `write_result`; no documents is an
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind) error.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let orders_of_the_day = [doc! { "item": "tea" }, doc! { "item": "milk" }];
    /// let result = orders.insert_many(&orders_of_the_day).ordered(false).await?;
    /// assert_eq!(result.inserted_ids.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn insert_many(
        &self,
        documents: impl IntoIterator<Item = impl Borrow<T>>,
    ) -> InsertMany<'_> {
        InsertMany {
            collection: self.clone_with_type(),
            documents: documents
                .into_iter()
                .map(|document| with_id(document.borrow()))
                .collect(),
            options: None,
            session: None,
            timeout: None,
        }
    }
}

/// An insert of one document: what [`Collection::insert_one`] returns. Awaited, it
/// runs and returns the document's `_id`.
#[must_use = "an action does nothing until it is awaited"]
pub struct InsertOne<'a> {
    /// The collection's type is not part of the action's (as in the official crate):
    /// the documents are serialized when it is built, the collection cloned (a
    /// reference count).
    collection: Collection<Document>,
    document: Result<(RawDocumentBuf, Bson)>,
    options: Option<InsertOneOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> InsertOne<'a> {
    option_setters!(options: InsertOneOptions;
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// A comment shown in the server's logs and profiler.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a] InsertOne<'a> => InsertOneResult);

impl<'a> IntoFuture for InsertOne<'a> {
    type Output = Result<InsertOneResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .insert_one_in(self.document?, self.options.map(Into::into), self.session)
                .await
        })
    }
}

/// An insert of several documents: what [`Collection::insert_many`] returns.
/// Awaited, it runs and returns their `_id`s.
#[must_use = "an action does nothing until it is awaited"]
pub struct InsertMany<'a> {
    /// The collection's type is not part of the action's (as in the official crate):
    /// the documents are serialized when it is built, the collection cloned (a
    /// reference count).
    collection: Collection<Document>,
    documents: Result<Vec<(RawDocumentBuf, Bson)>>,
    options: Option<InsertManyOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> InsertMany<'a> {
    option_setters!(options: InsertManyOptions;
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// A comment shown in the server's logs and profiler.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// Stop at the first failed insert (the default, `true`), or go on with the
        /// others (`false`).
        ordered: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a] InsertMany<'a> => InsertManyResult);

impl<'a> IntoFuture for InsertMany<'a> {
    type Output = Result<InsertManyResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .insert_many_in(self.documents?, self.options.map(Into::into), self.session)
                .await
        })
    }
}
