//! `find_one_and_delete`, `find_one_and_update` and `find_one_and_replace`: the
//! `findAndModify` command, which changes one document and returns it.

use super::{run_blocking, session_setter};
use std::borrow::Borrow;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::setters::{option_setters, timeout_setter};
use crate::collection::UpdateModifications;
use crate::concern::WriteConcern;
use crate::crud::write::{replacement_document, FindAndModifyAction};
use crate::crud::{
    Collation, FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, Hint,
    ReturnDocument,
};
use crate::error::Result;
use crate::results::FindAndModifyResult;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// Deletes the first document matching `filter` (the first in `.sort(…)` order)
    /// and returns it.
    ///
    /// ```no_run
    /// # async fn example(queue: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let oldest = queue.find_one_and_delete(doc! {}).sort(doc! { "at": 1 }).await?;
    /// # let _ = oldest; Ok(()) }
    /// ```
    pub fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T> {
        FindOneAndDelete::new(self, filter, Ok(FindAndModifyAction::Delete))
    }

    /// Applies `update` (a document of update operators, or a pipeline) to the first
    /// document matching `filter` and returns it, as it was before or
    /// (`.return_document(ReturnDocument::After)`) after.
    ///
    /// ```no_run
    /// # async fn example(counters: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::options::ReturnDocument;
    /// let next = counters
    ///     .find_one_and_update(doc! { "_id": "order" }, doc! { "$inc": { "n": 1 } })
    ///     .upsert(true)
    ///     .return_document(ReturnDocument::After)
    ///     .await?;
    /// # let _ = next; Ok(()) }
    /// ```
    pub fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> FindOneAndUpdate<'_, T> {
        let action = update.into().to_bson().map(FindAndModifyAction::Update);
        FindOneAndUpdate::new(self, filter, action)
    }
}

impl<T: Serialize> Collection<T> {
    /// Replaces the first document matching `filter` with `replacement` (a document
    /// without update operators) and returns it, as it was before or
    /// (`.return_document(ReturnDocument::After)`) after.
    ///
    /// ```no_run
    /// # async fn example(stock: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let before = stock
    ///     .find_one_and_replace(doc! { "item": "tea" }, doc! { "item": "tea", "qty": 0 })
    ///     .await?;
    /// # let _ = before; Ok(()) }
    /// ```
    pub fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> FindOneAndReplace<'_, T> {
        // Serialized now, so that the action does not hold a `T`.
        let action = replacement_document(replacement.borrow()).map(FindAndModifyAction::Replace);
        FindOneAndReplace::new(self, filter, action)
    }
}

/// Writes a find-and-modify action: its struct, constructor, `session` and
/// `IntoFuture` (the setters differ, and are the caller's).
macro_rules! find_and_modify_action {
    ($(#[$doc:meta])* $Name:ident($Options:ty)) => {
        $(#[$doc])*
        #[must_use = "an action does nothing until it is awaited"]
        pub struct $Name<'a, T> {
            collection: &'a Collection<T>,
            filter: Document,
            action: Result<FindAndModifyAction>,
            options: Option<$Options>,
            session: Option<&'a ClientSession>,
            timeout: Option<Duration>,
        }

        impl<'a, T> $Name<'a, T> {
            fn new(
                collection: &'a Collection<T>,
                filter: Document,
                action: Result<FindAndModifyAction>,
            ) -> Self {
                $Name {
                    collection,
                    filter,
                    action,
                    options: None,
                    session: None,
                    timeout: None,
                }
            }

            timeout_setter!();

            session_setter!();
        }

        impl<'a, T: DeserializeOwned + 'static> $Name<'a, T> {
            /// Runs it, and returns the document with the server's `lastErrorObject`
            /// (an anymongo addition: the Node driver's `includeResultMetadata`).
            pub fn with_result_metadata(self) -> BoxFuture<'a, Result<FindAndModifyResult<T>>> {
                boxed(async move {
                    let collection = self.collection.with_operation_timeout(self.timeout);
                    collection
                        .find_and_modify(
                            self.filter,
                            self.action?,
                            self.options.map(Into::into),
                            self.session,
                        )
                        .await
                })
            }
        }

        run_blocking!(impl['a, T: DeserializeOwned + 'static] $Name<'a, T> => Option<T>);

        impl<'a, T: DeserializeOwned + 'static> IntoFuture for $Name<'a, T> {
            type Output = Result<Option<T>>;
            type IntoFuture = BoxFuture<'a, Self::Output>;

            fn into_future(self) -> Self::IntoFuture {
                let run = self.with_result_metadata();
                boxed(async move { Ok(run.await?.value) })
            }
        }
    };
}

find_and_modify_action!(
    /// A find-and-delete: what [`Collection::find_one_and_delete`] returns. Awaited, it
    /// runs and returns the deleted document, if one matched.
    FindOneAndDelete(FindOneAndDeleteOptions)
);

find_and_modify_action!(
    /// A find-and-update: what [`Collection::find_one_and_update`] returns. Awaited, it
    /// runs and returns the document (before or after the update), if one matched or
    /// was upserted.
    FindOneAndUpdate(FindOneAndUpdateOptions)
);

find_and_modify_action!(
    /// A find-and-replace: what [`Collection::find_one_and_replace`] returns. Awaited,
    /// it runs and returns the document (before or after the replacement), if one
    /// matched or was upserted.
    FindOneAndReplace(FindOneAndReplaceOptions)
);

impl<T> FindOneAndDelete<'_, T> {
    option_setters!(options: FindOneAndDeleteOptions;
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
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Which fields of the document to return.
        projection: Document,
        /// Which document is deleted when several match: the first in this order.
        sort: Document,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
}

impl<T> FindOneAndUpdate<'_, T> {
    option_setters!(options: FindOneAndUpdateOptions;
        /// Filters that choose the array elements the update changes
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
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Which fields of the document to return.
        projection: Document,
        /// Whether the document is returned as it was before the update (the default)
        /// or after.
        return_document: ReturnDocument,
        /// Which document is updated when several match: the first in this order.
        sort: Document,
        /// Inserts a document when none matches.
        upsert: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
}

impl<T> FindOneAndReplace<'_, T> {
    option_setters!(options: FindOneAndReplaceOptions;
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
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Which fields of the document to return.
        projection: Document,
        /// Whether the document is returned as it was before the replacement (the
        /// default) or after.
        return_document: ReturnDocument,
        /// Which document is replaced when several match: the first in this order.
        sort: Document,
        /// Inserts the replacement when no document matches.
        upsert: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
}
