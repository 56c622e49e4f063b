//! `delete_one` and `delete_many`.

use super::{run_blocking, session_setter};
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};

use super::setters::{option_setters, timeout_setter};
use crate::concern::WriteConcern;
use crate::crud::{Collation, DeleteOptions, DeleteResult, Hint};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// Deletes the first document matching `filter`.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let result = orders.delete_one(doc! { "item": "tea" }).await?;
    /// assert!(result.deleted_count <= 1);
    /// # Ok(()) }
    /// ```
    pub fn delete_one(&self, filter: Document) -> Delete<'_> {
        Delete::new(self, filter, false)
    }

    /// Deletes every document matching `filter`.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::options::{Collation, CollationStrength};
    /// let case_insensitive = Collation::builder()
    ///     .locale("en")
    ///     .strength(CollationStrength::Secondary)
    ///     .build();
    /// let result = orders
    ///     .delete_many(doc! { "item": "TEA" })
    ///     .collation(case_insensitive)
    ///     .await?;
    /// println!("{} deleted", result.deleted_count);
    /// # Ok(()) }
    /// ```
    pub fn delete_many(&self, filter: Document) -> Delete<'_> {
        Delete::new(self, filter, true)
    }
}

/// A delete: what [`Collection::delete_one`] and [`Collection::delete_many`] return.
/// Awaited, it runs and returns how many documents it deleted.
#[must_use = "an action does nothing until it is awaited"]
pub struct Delete<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    filter: Document,
    multi: bool,
    options: Option<DeleteOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> Delete<'a> {
    fn new<T>(collection: &'a Collection<T>, filter: Document, multi: bool) -> Self {
        Delete {
            collection: collection.clone_with_type(),
            filter,
            multi,
            options: None,
            session: None,
            timeout: None,
        }
    }

    option_setters!(options: DeleteOptions;
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
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a] Delete<'a> => DeleteResult);

impl<'a> IntoFuture for Delete<'a> {
    type Output = Result<DeleteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .delete(
                    self.filter,
                    self.multi,
                    self.options.map(Into::into),
                    self.session,
                )
                .await
        })
    }
}
