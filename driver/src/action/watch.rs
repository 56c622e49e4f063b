//! `watch`: the change streams of a collection, a database or the deployment.

use super::run_blocking;
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document, Timestamp};
use serde::de::DeserializeOwned;

use super::{option_setters, timeout_setter, ExplicitSession, ImplicitSession};
use crate::change_stream::{
    ChangeStream, ChangeStreamEvent, ChangeStreamOptions, FullDocumentBeforeChangeType,
    FullDocumentType, ResumeToken, SessionChangeStream,
};
use crate::client::Client;
use crate::concern::ReadConcern;
use crate::database::Database;
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// The changes to this collection (Change Streams spec, "Collection.watch"): a
    /// [`ChangeStream`] of [`ChangeStreamEvent<T>`], or a [`SessionChangeStream`]
    /// when run in a session. `.pipeline(…)` appends stages to the `$changeStream`
    /// stage (`$match`, `$project`, `$addFields`, `$replaceRoot`, `$redact`; a stage
    /// that removes `_id` makes the stream fail, as it could not resume).
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::change_stream::FullDocumentType;
    /// use futures::TryStreamExt;
    /// let mut changes = orders
    ///     .watch()
    ///     .pipeline([doc! { "$match": { "operationType": "update" } }])
    ///     .full_document(FullDocumentType::UpdateLookup)
    ///     .await?;
    /// while let Some(change) = changes.try_next().await? {
    ///     println!("{:?}", change.full_document);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn watch(&self) -> Watch<'_, T> {
        Watch::new(WatchTarget::Collection(self.clone_with_type()))
    }
}

impl Database {
    /// The changes to every collection of this database but its system collections
    /// (Change Streams spec, "Database.watch"; MongoDB 4.0+). See
    /// [`Collection::watch`].
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// let mut changes = db.watch().batch_size(10).await?;
    /// # let _ = changes.next_if_any().await?; Ok(()) }
    /// ```
    pub fn watch(&self) -> Watch<'_> {
        Watch::new(WatchTarget::Database(self))
    }
}

impl Client {
    /// The changes to every database of the deployment but `admin`, `local` and
    /// `config` (Change Streams spec, "MongoClient.watch"; MongoDB 4.0+): an
    /// `allChangesForCluster` stream on `admin`. See [`Collection::watch`].
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// let mut changes = client.watch().show_expanded_events(true).await?;
    /// # let _ = changes.next_if_any().await?; Ok(()) }
    /// ```
    pub fn watch(&self) -> Watch<'_> {
        Watch::new(WatchTarget::Client(self))
    }
}

/// What a change stream watches.
enum WatchTarget<'a> {
    Client(&'a Client),
    Database(&'a Database),
    /// A clone of the collection (a reference count), the others references.
    Collection(Collection<Document>),
}

/// A change stream about to open: what [`Collection::watch`], [`Database::watch`] and
/// [`Client::watch`] return. Awaited, it opens a [`ChangeStream`] of
/// [`ChangeStreamEvent<T>`] (a [`SessionChangeStream`] after `.session(…)`).
#[must_use = "an action does nothing until it is awaited"]
pub struct Watch<'a, T = Document, Session = ImplicitSession> {
    target: WatchTarget<'a>,
    pipeline: Vec<Document>,
    options: Option<ChangeStreamOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _types: PhantomData<(Session, fn() -> T)>,
}

impl<'a, T> Watch<'a, T> {
    fn new(target: WatchTarget<'a>) -> Self {
        Watch {
            target,
            pipeline: Vec::new(),
            options: None,
            session: None,
            timeout: None,
            _types: PhantomData,
        }
    }
}

impl<'a, T, Session> Watch<'a, T, Session> {
    /// Starts after the change this resume token names; `None` (what
    /// `resume_token()` gives before the first event) starts now.
    pub fn resume_after(mut self, token: impl Into<Option<ResumeToken>>) -> Self {
        self.options
            .get_or_insert_with(Default::default)
            .resume_after = token.into();
        self
    }

    /// Like [`resume_after`](Self::resume_after), but also after an invalidate event.
    pub fn start_after(mut self, token: impl Into<Option<ResumeToken>>) -> Self {
        self.options
            .get_or_insert_with(Default::default)
            .start_after = token.into();
        self
    }

    option_setters!(options: ChangeStreamOptions;
        /// Whether update events carry the whole document (`fullDocument`).
        full_document: FullDocumentType,
        /// Whether events carry the document as it was before the change
        /// (`fullDocumentBeforeChange`).
        full_document_before_change: FullDocumentBeforeChangeType,
        /// Starts with the changes at or after this cluster time.
        start_at_operation_time: Timestamp,
        /// How long each getMore waits for changes on the server (`maxTimeMS` of the
        /// getMores).
        max_await_time: Duration,
        /// Events per batch (aggregate and getMore).
        batch_size: u32,
        /// The collation of string comparisons in the pipeline.
        collation: crate::crud::Collation,
        /// A comment for the server's logs, sent with the aggregate and every getMore.
        comment: impl Into<Bson>,
        /// Asks for the expanded events (createIndexes, create, modify...; MongoDB
        /// 6.0+).
        show_expanded_events: bool,
        /// Overrides the handle's read concern (the server takes `majority` or none).
        read_concern: ReadConcern,
        /// Overrides the handle's read preference.
        selection_criteria: SelectionCriteria,
    );
    timeout_setter!();

    /// The stages appended to the `$changeStream` stage.
    pub fn pipeline(mut self, pipeline: impl IntoIterator<Item = Document>) -> Self {
        self.pipeline = pipeline.into_iter().collect();
        self
    }

    /// Reads the events' documents (`fullDocument`…) as `U`.
    pub fn with_type<U>(self) -> Watch<'a, U, Session> {
        Watch {
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            session: self.session,
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    /// Runs the stream's aggregates and getMores in `session`; it then opens a
    /// [`SessionChangeStream`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> Watch<'s, T, ExplicitSession<'s>>
    where
        'a: 's,
    {
        Watch {
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    async fn execute(self) -> Result<ChangeStream<ChangeStreamEvent<T>>> {
        let (pipeline, options, session) = (self.pipeline, self.options, self.session);
        let stream = match self.target {
            WatchTarget::Client(client) => {
                let admin = client.database("admin");
                let admin = admin.with_operation_timeout(self.timeout);
                admin.watch_in(pipeline, options, session, true).await
            }
            WatchTarget::Database(database) => {
                let database = database.with_operation_timeout(self.timeout);
                database.watch_in(pipeline, options, session, false).await
            }
            WatchTarget::Collection(collection) => {
                let collection = collection.with_operation_timeout(self.timeout);
                collection.watch_in(pipeline, options, session).await
            }
        };
        stream.map(ChangeStream::with_type)
    }
}

run_blocking!(impl['a, T: DeserializeOwned + 'static] Watch<'a, T, ImplicitSession> => crate::sync::ChangeStream<ChangeStreamEvent<T>>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Watch<'a, T, ImplicitSession> {
    type Output = Result<ChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a, T: DeserializeOwned + 'static] Watch<'a, T, ExplicitSession<'a>> => crate::sync::SessionChangeStream<ChangeStreamEvent<T>>);

impl<'a, T: DeserializeOwned + 'static> IntoFuture for Watch<'a, T, ExplicitSession<'a>> {
    type Output = Result<SessionChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionChangeStream::new) })
    }
}
