//! `find`, `find_one` and `aggregate`: the reads that return documents.

use super::{raw_batches, run_blocking, session_setter};
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;

use super::{option_setters, timeout_setter, ExplicitSession, ImplicitSession};
use crate::concern::ReadConcern;
use crate::concern::WriteConcern;
use crate::crud::{
    AggregateOptions, Collation, CursorType, FindOneOptions, FindOptions, Hint, TimeoutMode,
};
use crate::cursor::{Cursor, SessionCursor};
use crate::database::Database;
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// The documents matching `filter`: a [`Cursor`], or a [`SessionCursor`] when run
    /// in a session.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use futures::TryStreamExt;
    /// let mut cursor = orders.find(doc! { "item": "tea" }).sort(doc! { "qty": -1 }).await?;
    /// while let Some(order) = cursor.try_next().await? {
    ///     println!("{order}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn find(&self, filter: Document) -> Find<'_, T> {
        Find {
            collection: self,
            filter,
            options: None,
            session: None,
            timeout: None,
            _session: PhantomData,
        }
    }

    /// The first document matching `filter`, if any.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let tea = orders.find_one(doc! { "item": "tea" }).projection(doc! { "qty": 1 }).await?;
    /// # let _ = tea; Ok(()) }
    /// ```
    pub fn find_one(&self, filter: Document) -> FindOne<'_, T> {
        FindOne {
            collection: self,
            filter,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Runs an aggregation pipeline on the collection; its results are `Document`s
    /// (`.with_type::<U>()` reads them as `U`).
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let pipeline = [doc! { "$group": { "_id": "$item", "total": { "$sum": "$qty" } } }];
    /// let totals = orders.aggregate(pipeline).allow_disk_use(true).await?;
    /// # let _ = totals; Ok(()) }
    /// ```
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(
            AggregateTarget::Collection(self.clone_with_type()),
            pipeline,
        )
    }
}

impl Database {
    /// Runs an aggregation pipeline on the database itself (`aggregate: 1`), for the
    /// stages that start without a collection: `$currentOp`, `$listLocalSessions`,
    /// `$documents`…
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use futures::TryStreamExt;
    /// let pipeline = [doc! { "$documents": [{ "x": 1 }, { "x": 2 }] }];
    /// let documents: Vec<_> = db.aggregate(pipeline).await?.try_collect().await?;
    /// assert_eq!(documents.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(AggregateTarget::Database(self), pipeline)
    }
}

/// The setters of the options of a find (CRUD spec, "FindOptions") and of a find_one.
macro_rules! find_setters {
    ($Options:ty; $($(#[$doc:meta])* $name:ident: $type:ty,)*) => {
        option_setters!(options: $Options;
            /// Partial results from a sharded cluster when some shards are down.
            allow_partial_results: bool,
            /// The collation of string comparisons.
            collation: Collation,
            /// A comment shown in the server's logs and profiler.
            comment: impl Into<Bson>,
            /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
            /// older servers): not for applications, it may change or go in any release.
            raw_data: bool,
            /// The index to use: its name or its key pattern.
            hint: Hint,
            /// Variables for `$expr` and aggregation expressions (`let`).
            let_vars: Document,
            /// The exclusive upper bound of an index scan.
            max: Document,
            /// The most documents or index keys to scan (`maxScan`; servers before 4.2).
            max_scan: u64,
            /// The server-side time limit of the query (`maxTimeMS`).
            max_time: Duration,
            /// The inclusive lower bound of an index scan.
            min: Document,
            /// Which fields to return.
            projection: Document,
            /// Overrides the collection's read concern.
            read_concern: ReadConcern,
            /// Overrides the collection's read preference.
            selection_criteria: SelectionCriteria,
            /// Only the index keys.
            return_key: bool,
            /// Adds `$recordId` to each document.
            show_record_id: bool,
            /// Skips this many documents.
            skip: u64,
            /// The order of the results.
            sort: Document,
            $($(#[$doc])* $name: $type,)*
        );
    };
}

/// A find: what [`Collection::find`] returns. Awaited, it runs and returns a
/// [`Cursor`] (a [`SessionCursor`] after `.session(…)`).
#[must_use = "an action does nothing until it is awaited"]
pub struct Find<'a, T, Session = ImplicitSession> {
    collection: &'a Collection<T>,
    filter: Document,
    options: Option<FindOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _session: PhantomData<Session>,
}

impl<'a, T, Session> Find<'a, T, Session> {
    find_setters!(FindOptions;
        /// Lets the server write temporary files for large sorts.
        allow_disk_use: bool,
        /// Documents per batch (the first and each getMore).
        batch_size: u32,
        /// Tailable cursors.
        cursor_type: CursorType,
        /// At most this many documents; a negative limit returns one batch only.
        limit: i64,
        /// The getMore wait of a tailable awaitData cursor (`maxAwaitTimeMS`).
        max_await_time: Duration,
        /// The server does not time the cursor out.
        no_cursor_timeout: bool,
        /// What `timeoutMS` bounds: each iteration or the cursor's whole life (Client
        /// Side Operations Timeout spec, "Cursors").
        timeout_mode: TimeoutMode,
    );
    timeout_setter!();

    /// Runs the find in `session`; it then returns a [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> Find<'s, T, ExplicitSession<'s>>
    where
        'a: 's,
    {
        Find {
            collection: self.collection,
            filter: self.filter,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _session: PhantomData,
        }
    }

    async fn execute(self) -> Result<Cursor<T>>
    where
        T: DeserializeOwned + 'static,
    {
        let collection = self.collection.with_operation_timeout(self.timeout);
        collection
            .find_in(self.filter, self.options, self.session)
            .await
    }
}

raw_batches!(impl['a, T: DeserializeOwned + 'static] Find<'a, T, ImplicitSession>, Find<'a, T, ExplicitSession<'a>>);

run_blocking!(impl['a, T: DeserializeOwned + 'static] Find<'a, T, ImplicitSession> => crate::sync::Cursor<T>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Find<'a, T, ImplicitSession> {
    type Output = Result<Cursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a, T: DeserializeOwned + 'static] Find<'a, T, ExplicitSession<'a>> => crate::sync::SessionCursor<T>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Find<'a, T, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}

/// A find of one document: what [`Collection::find_one`] returns. Awaited, it runs
/// and returns the document, if one matched.
#[must_use = "an action does nothing until it is awaited"]
pub struct FindOne<'a, T> {
    collection: &'a Collection<T>,
    filter: Document,
    options: Option<FindOneOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> FindOne<'a, T> {
    find_setters!(FindOneOptions;);
    timeout_setter!();

    session_setter!();
}

run_blocking!(impl['a, T: DeserializeOwned + 'static] FindOne<'a, T> => Option<T>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for FindOne<'a, T> {
    type Output = Result<Option<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .find_one_in(self.filter, self.options.map(Into::into), self.session)
                .await
        })
    }
}

/// What an aggregate runs on.
enum AggregateTarget<'a> {
    Database(&'a Database),
    /// A clone of the collection (a reference count), the database a reference.
    Collection(Collection<Document>),
}

/// An aggregate: what [`Collection::aggregate`] and [`Database::aggregate`] return.
/// Awaited, it runs and returns a [`Cursor`] of `T` (`Document` unless
/// [`with_type`](Self::with_type) says otherwise); a [`SessionCursor`] after
/// `.session(…)`.
#[must_use = "an action does nothing until it is awaited"]
pub struct Aggregate<'a, Session = ImplicitSession, T = Document> {
    target: AggregateTarget<'a>,
    pipeline: Vec<Document>,
    options: Option<AggregateOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _types: PhantomData<(Session, fn() -> T)>,
}

impl<'a> Aggregate<'a> {
    fn new(target: AggregateTarget<'a>, pipeline: impl IntoIterator<Item = Document>) -> Self {
        Aggregate {
            target,
            pipeline: pipeline.into_iter().collect(),
            options: None,
            session: None,
            timeout: None,
            _types: PhantomData,
        }
    }
}

impl<'a, Session, T> Aggregate<'a, Session, T> {
    option_setters!(options: AggregateOptions;
        /// Lets the server write temporary files.
        allow_disk_use: bool,
        /// Documents per batch (the first and each getMore).
        batch_size: u32,
        /// Skips document validation for `$out`/`$merge`.
        bypass_document_validation: bool,
        /// The collation of string comparisons.
        collation: Collation,
        /// A comment for the server's logs.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// The index to use.
        hint: Hint,
        /// Variables (`let`).
        let_vars: Document,
        /// The getMore wait of a tailable cursor (`maxAwaitTimeMS`).
        max_await_time: Duration,
        /// The server-side time limit (`maxTimeMS`).
        max_time: Duration,
        /// Overrides the read concern.
        read_concern: ReadConcern,
        /// Overrides the read preference.
        selection_criteria: SelectionCriteria,
        /// What `timeoutMS` bounds: each iteration or the cursor's whole life.
        timeout_mode: TimeoutMode,
        /// Overrides the write concern (`$out`/`$merge`).
        write_concern: WriteConcern,
    );
    timeout_setter!();

    /// Reads the results as `U` instead.
    pub fn with_type<U>(self) -> Aggregate<'a, Session, U> {
        Aggregate {
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            session: self.session,
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    /// Runs the aggregate in `session`; it then returns a [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> Aggregate<'s, ExplicitSession<'s>, T>
    where
        'a: 's,
    {
        Aggregate {
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    async fn execute(self) -> Result<Cursor<T>> {
        let cursor = match self.target {
            AggregateTarget::Database(database) => {
                let database = database.with_operation_timeout(self.timeout);
                database
                    .aggregate_in(self.pipeline, self.options, self.session)
                    .await
            }
            AggregateTarget::Collection(collection) => {
                let collection = collection.with_operation_timeout(self.timeout);
                collection
                    .aggregate_in(self.pipeline, self.options, self.session)
                    .await
            }
        };
        cursor.map(Cursor::with_type)
    }
}

raw_batches!(impl['a, T] Aggregate<'a, ImplicitSession, T>, Aggregate<'a, ExplicitSession<'a>, T>);

run_blocking!(impl['a, T: DeserializeOwned + 'static] Aggregate<'a, ImplicitSession, T> => crate::sync::Cursor<T>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Aggregate<'a, ImplicitSession, T> {
    type Output = Result<Cursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a, T: DeserializeOwned + 'static] Aggregate<'a, ExplicitSession<'a>, T> => crate::sync::SessionCursor<T>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Aggregate<'a, ExplicitSession<'a>, T> {
    type Output = Result<SessionCursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}
