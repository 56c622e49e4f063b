//! `count_documents`, `estimated_document_count`, `distinct` and the legacy `count`:
//! the reads that return a number or values rather than documents.

use super::run_blocking;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};

use super::{option_setters, session_setter, timeout_setter};
use crate::concern::ReadConcern;
use crate::crud::{Collation, CountOptions, DistinctOptions, EstimatedDocumentCountOptions, Hint};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// Counts the documents matching `filter`, exactly: an aggregation (CRUD spec,
    /// "countDocuments").
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let teas = orders.count_documents(doc! { "item": "tea" }).limit(100).await?;
    /// # let _ = teas; Ok(()) }
    /// ```
    pub fn count_documents(&self, filter: Document) -> CountDocuments<'_> {
        CountDocuments {
            collection: self.clone_with_type(),
            filter,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// The number of documents in the collection, from its metadata (the `count`
    /// command): fast, but it may be off after an unclean shutdown or with orphaned
    /// documents in a sharded cluster.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// let about = orders.estimated_document_count().await?;
    /// # let _ = about; Ok(()) }
    /// ```
    pub fn estimated_document_count(&self) -> EstimatedDocumentCount<'_> {
        EstimatedDocumentCount {
            collection: self.clone_with_type(),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// The distinct values of the field `field_name` among the documents matching
    /// `filter`.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let items = orders.distinct("item", doc! { "qty": { "$gt": 0 } }).await?;
    /// # let _ = items; Ok(()) }
    /// ```
    pub fn distinct(&self, field_name: impl AsRef<str>, filter: Document) -> Distinct<'_> {
        Distinct {
            collection: self.clone_with_type(),
            field_name: field_name.as_ref().to_owned(),
            filter,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Counts the documents matching `filter` with the `count` command, which the CRUD
    /// spec deprecates and the official driver no longer has: it may be inaccurate on
    /// a sharded cluster and does not work in transactions. Prefer
    /// [`count_documents`](Self::count_documents) (exact) or
    /// [`estimated_document_count`](Self::estimated_document_count) (fast).
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let teas = orders.count(doc! { "item": "tea" }).await?;
    /// # let _ = teas; Ok(()) }
    /// ```
    pub fn count(&self, filter: Document) -> Count<'_> {
        Count {
            collection: self.clone_with_type(),
            filter,
            options: None,
            session: None,
            timeout: None,
        }
    }
}

/// The setters of [`CountOptions`], shared by `count_documents` and `count`.
macro_rules! count_setters {
    () => {
        option_setters!(options: CountOptions;
            /// The collation of string comparisons.
            collation: Collation,
            /// A comment for the server's logs.
            comment: impl Into<Bson>,
            /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
            /// older servers): not for applications, it may change or go in any release.
            raw_data: bool,
            /// The index to use.
            hint: Hint,
            /// Counts at most this many documents.
            limit: u64,
            /// The server-side time limit (`maxTimeMS`).
            max_time: Duration,
            /// Skips this many documents first.
            skip: u64,
            /// Overrides the collection's read concern.
            read_concern: ReadConcern,
            /// Overrides the collection's read preference.
            selection_criteria: SelectionCriteria,
        );
    };
}

/// A count of the documents matching a filter: what [`Collection::count_documents`]
/// returns. Awaited, it runs and returns the count.
#[must_use = "an action does nothing until it is awaited"]
pub struct CountDocuments<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    filter: Document,
    options: Option<CountOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> CountDocuments<'a> {
    count_setters!();
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] CountDocuments<'a> => u64);

impl<'a> IntoFuture for CountDocuments<'a> {
    type Output = Result<u64>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .count_documents_in(self.filter, self.options, self.session)
                .await
        })
    }
}

/// An estimated count of a collection's documents: what
/// [`Collection::estimated_document_count`] returns. Awaited, it runs and returns the
/// count.
#[must_use = "an action does nothing until it is awaited"]
pub struct EstimatedDocumentCount<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    options: Option<EstimatedDocumentCountOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> EstimatedDocumentCount<'a> {
    option_setters!(options: EstimatedDocumentCountOptions;
        /// A comment for the server's logs.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Overrides the collection's read concern.
        read_concern: ReadConcern,
        /// Overrides the collection's read preference.
        selection_criteria: SelectionCriteria,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] EstimatedDocumentCount<'a> => u64);

impl<'a> IntoFuture for EstimatedDocumentCount<'a> {
    type Output = Result<u64>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .estimated_document_count_in(self.options, self.session)
                .await
        })
    }
}

/// The distinct values of a field: what [`Collection::distinct`] returns. Awaited, it
/// runs and returns the values.
#[must_use = "an action does nothing until it is awaited"]
pub struct Distinct<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    field_name: String,
    filter: Document,
    options: Option<DistinctOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> Distinct<'a> {
    option_setters!(options: DistinctOptions;
        /// The collation of string comparisons.
        collation: Collation,
        /// A comment for the server's logs.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// The index to use.
        hint: Hint,
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Overrides the collection's read concern.
        read_concern: ReadConcern,
        /// Overrides the collection's read preference.
        selection_criteria: SelectionCriteria,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] Distinct<'a> => Vec<Bson>);

impl<'a> IntoFuture for Distinct<'a> {
    type Output = Result<Vec<Bson>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .distinct_in(&self.field_name, self.filter, self.options, self.session)
                .await
        })
    }
}

/// A count with the legacy `count` command: what [`Collection::count`] returns.
/// Awaited, it runs and returns the count.
#[must_use = "an action does nothing until it is awaited"]
pub struct Count<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    filter: Document,
    options: Option<CountOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> Count<'a> {
    count_setters!();
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] Count<'a> => u64);

impl<'a> IntoFuture for Count<'a> {
    type Output = Result<u64>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            let options = self.options.unwrap_or_default();
            collection
                .count_command(Some(self.filter), options, self.session)
                .await
        })
    }
}
