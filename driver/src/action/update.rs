//! `update_one`, `update_many` and `replace_one`.

use super::{run_blocking, session_setter};
use std::borrow::Borrow;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use serde::Serialize;

use super::setters::{option_setters, timeout_setter};
use crate::collection::UpdateModifications;
use crate::concern::WriteConcern;
use crate::crud::write::replacement_document;
use crate::crud::{Collation, Hint, ReplaceOptions, UpdateOptions, UpdateResult};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// Applies `update` (a document of update operators, or a pipeline) to the first
    /// document matching `filter`.
    ///
    /// ```no_run
    /// # async fn example(stock: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let result = stock
    ///     .update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 5 } })
    ///     .upsert(true)
    ///     .await?;
    /// println!("{} modified, upserted {:?}", result.modified_count, result.upserted_id);
    /// # Ok(()) }
    /// ```
    pub fn update_one(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_> {
        Update::new(self, filter, update.into(), false)
    }

    /// Applies `update` (a document of update operators, or a pipeline) to every
    /// document matching `filter`.
    ///
    /// ```no_run
    /// # async fn example(stock: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let result = stock
    ///     .update_many(doc! { "qty": { "$lt": 0 } }, doc! { "$set": { "qty": 0 } })
    ///     .await?;
    /// println!("{} reset", result.modified_count);
    /// # Ok(()) }
    /// ```
    pub fn update_many(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_> {
        Update::new(self, filter, update.into(), true)
    }
}

impl<T: Serialize> Collection<T> {
    /// Replaces the first document matching `filter` with `replacement` (a document
    /// without update operators).
    ///
    /// ```no_run
    /// # async fn example(stock: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// stock
    ///     .replace_one(doc! { "item": "tea" }, doc! { "item": "tea", "qty": 0 })
    ///     .upsert(true)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> ReplaceOne<'_> {
        ReplaceOne {
            collection: self.clone_with_type(),
            filter,
            // Serialized now, so that the action does not hold a `T`.
            replacement: replacement_document(replacement.borrow()),
            options: None,
            session: None,
            timeout: None,
        }
    }
}

/// An update: what [`Collection::update_one`] and [`Collection::update_many`] return.
/// Awaited, it runs and returns what it matched, modified or upserted.
#[must_use = "an action does nothing until it is awaited"]
pub struct Update<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    filter: Document,
    update: UpdateModifications,
    multi: bool,
    options: Option<UpdateOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> Update<'a> {
    fn new<T>(
        collection: &'a Collection<T>,
        filter: Document,
        update: UpdateModifications,
        multi: bool,
    ) -> Self {
        Update {
            collection: collection.clone_with_type(),
            filter,
            update,
            multi,
            options: None,
            session: None,
            timeout: None,
        }
    }

    option_setters!(options: UpdateOptions;
        /// Filters that choose the array elements an update changes
        /// (`arrayFilters`).
        array_filters: Vec<Document>,
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The collation of string comparisons.
        collation: Collation,
        /// A comment shown in the server's logs and profiler.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// The index to use: its name or its key pattern.
        hint: Hint,
        /// Variables for the filter and a pipeline update (`let`).
        let_vars: Document,
        /// `update_one`: which of the matching documents is updated (MongoDB 8.0+);
        /// `update_many` refuses it.
        sort: Document,
        /// Inserts a document when none matches.
        upsert: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a] Update<'a> => UpdateResult);

impl<'a> IntoFuture for Update<'a> {
    type Output = Result<UpdateResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .update(
                    self.filter,
                    self.update,
                    self.multi,
                    self.options.map(Into::into),
                    self.session,
                )
                .await
        })
    }
}

/// A replacement: what [`Collection::replace_one`] returns. Awaited, it runs and
/// returns what it matched, modified or upserted.
#[must_use = "an action does nothing until it is awaited"]
pub struct ReplaceOne<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    filter: Document,
    replacement: Result<Document>,
    options: Option<ReplaceOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> ReplaceOne<'a> {
    option_setters!(options: ReplaceOptions;
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The collation of string comparisons.
        collation: Collation,
        /// A comment shown in the server's logs and profiler.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// The index to use: its name or its key pattern.
        hint: Hint,
        /// Variables for the filter (`let`).
        let_vars: Document,
        /// Which of the matching documents is replaced (MongoDB 8.0+).
        sort: Document,
        /// Inserts the replacement when no document matches.
        upsert: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a] ReplaceOne<'a> => UpdateResult);

impl<'a> IntoFuture for ReplaceOne<'a> {
    type Output = Result<UpdateResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .replace_one_in(
                    self.filter,
                    self.replacement?,
                    self.options.map(Into::into),
                    self.session,
                )
                .await
        })
    }
}
