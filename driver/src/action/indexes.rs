//! The Index Management spec's operations: creating, dropping and listing indexes,
//! and Atlas Search indexes.

use super::{raw_batches, run_blocking};
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};

use super::{option_setters, session_setter, timeout_setter, ExplicitSession, ImplicitSession};
use crate::concern::WriteConcern;
use crate::crud::{AggregateOptions, TimeoutMode};
use crate::cursor::{Cursor, SessionCursor};
use crate::enumerate::names;
use crate::error::Result;
use crate::index_management::{
    CommitQuorum, CreateIndexOptions, CreateIndexResult, CreateIndexesResult,
    CreateSearchIndexOptions, DropIndexOptions, DropSearchIndexOptions, IndexModel,
    ListIndexesOptions, ListSearchIndexOptions, SearchIndexModel, UpdateSearchIndexOptions,
};
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

impl<T> Collection<T> {
    /// Creates one index; the result names it.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::options::IndexOptions;
    /// use anymongo::IndexModel;
    /// let model = IndexModel::builder()
    ///     .keys(doc! { "item": 1, "qty": -1 })
    ///     .options(IndexOptions::builder().unique(true).build())
    ///     .build();
    /// let created = orders.create_index(model).await?;
    /// assert_eq!(created.index_name, "item_1_qty_-1");
    /// # Ok(()) }
    /// ```
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_, T> {
        CreateIndex {
            collection: self,
            indexes: vec![index],
            options: None,
            session: None,
            timeout: None,
            _result: PhantomData,
        }
    }

    /// Creates several indexes with one `createIndexes` command; the result names
    /// them, in order.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::IndexModel;
    /// let models = [doc! { "item": 1 }, doc! { "qty": -1 }]
    ///     .map(|keys| IndexModel::builder().keys(keys).build());
    /// let created = orders.create_indexes(models).await?;
    /// assert_eq!(created.index_names, ["item_1", "qty_-1"]);
    /// # Ok(()) }
    /// ```
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndex<'_, T, CreateIndexesResult> {
        CreateIndex {
            collection: self,
            indexes: indexes.into_iter().collect(),
            options: None,
            session: None,
            timeout: None,
            _result: PhantomData,
        }
    }

    /// Drops the index named `name`. `"*"` is refused: use
    /// [`drop_indexes`](Self::drop_indexes) to drop them all.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// orders.drop_index("item_1").await?;
    /// # Ok(()) }
    /// ```
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_, T> {
        DropIndex {
            collection: self,
            name: Some(name.as_ref().to_owned()),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Drops every index but the one on `_id`.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// orders.drop_indexes().await?;
    /// # Ok(()) }
    /// ```
    pub fn drop_indexes(&self) -> DropIndex<'_, T> {
        DropIndex {
            collection: self,
            name: None,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// The collection's indexes, as a cursor of [`IndexModel`]s read from the
    /// server's descriptions (`key`, and `name`, `v` and the other options in
    /// [`IndexModel::options`]); a [`SessionCursor`] when run in a session. A cursor of
    /// the descriptions themselves is `.with_type::<Document>()` away.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use futures::TryStreamExt;
    /// let indexes: Vec<anymongo::IndexModel> = orders.list_indexes().await?.try_collect().await?;
    /// for index in indexes {
    ///     println!("{}: {:?}", index.name(), index.options.and_then(|o| o.expire_after));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_indexes(&self) -> ListIndexes<'_, T> {
        ListIndexes {
            collection: self,
            options: None,
            session: None,
            timeout: None,
            _session: PhantomData,
        }
    }

    /// The names of the collection's indexes.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// let names = orders.list_index_names().await?;
    /// assert!(names.iter().any(|name| name == "_id_"));
    /// # Ok(()) }
    /// ```
    pub fn list_index_names(&self) -> ListIndexNames<'_, T> {
        ListIndexNames {
            collection: self,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Creates an Atlas Search index and returns its name (the server's, `default`,
    /// when the model has none). The index is built after the command returns: list it
    /// with [`list_search_indexes`](Self::list_search_indexes) to see when it is ready.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::SearchIndexModel;
    /// let model = SearchIndexModel::builder()
    ///     .definition(doc! { "mappings": { "dynamic": true } })
    ///     .build();
    /// let name = movies.create_search_index(model).await?;
    /// # Ok(()) }
    /// ```
    pub fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, T> {
        CreateSearchIndex {
            collection: self,
            models: vec![model],
            timeout: None,
            _result: PhantomData,
        }
    }

    /// Creates several Atlas Search indexes with one `createSearchIndexes` command and
    /// returns their names, in order.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use anymongo::SearchIndexModel;
    /// let model = SearchIndexModel::builder()
    ///     .definition(doc! { "mappings": { "dynamic": true } })
    ///     .build();
    /// let names = movies.create_search_indexes([model]).await?;
    /// # Ok(()) }
    /// ```
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> CreateSearchIndex<'_, T, Vec<String>> {
        CreateSearchIndex {
            collection: self,
            models: models.into_iter().collect(),
            timeout: None,
            _result: PhantomData,
        }
    }

    /// Replaces the definition of the Atlas Search index `name`.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// movies.update_search_index("default", doc! { "mappings": { "dynamic": false } }).await?;
    /// # Ok(()) }
    /// ```
    pub fn update_search_index(
        &self,
        name: impl AsRef<str>,
        definition: Document,
    ) -> UpdateSearchIndex<'_, T> {
        UpdateSearchIndex {
            collection: self,
            name: name.as_ref().to_owned(),
            definition,
            timeout: None,
        }
    }

    /// Drops the Atlas Search index `name`; dropping one that does not exist, or whose
    /// collection does not, is not an error (spec, "NamespaceNotFound Errors").
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// movies.drop_search_index("default").await?;
    /// # Ok(()) }
    /// ```
    pub fn drop_search_index(&self, name: impl AsRef<str>) -> DropSearchIndex<'_, T> {
        DropSearchIndex {
            collection: self,
            name: name.as_ref().to_owned(),
            timeout: None,
        }
    }

    /// The collection's Atlas Search indexes (only the one named by
    /// [`name`](ListSearchIndexes::name), if set), as a cursor of their descriptions:
    /// an aggregation of the `$listSearchIndexes` stage, whose read and write concerns
    /// are not sent.
    ///
    /// ```no_run
    /// # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use futures::TryStreamExt;
    /// let indexes: Vec<_> = movies.list_search_indexes().name("default").await?.try_collect().await?;
    /// let ready = indexes.iter().any(|index| index.get_bool("queryable").unwrap_or(false));
    /// # Ok(()) }
    /// ```
    pub fn list_search_indexes(&self) -> ListSearchIndexes<'_, T> {
        ListSearchIndexes {
            collection: self,
            name: None,
            options: None,
            timeout: None,
        }
    }
}

/// A creation of indexes: what [`Collection::create_index`] (its result a
/// [`CreateIndexResult`]) and [`Collection::create_indexes`] (a
/// [`CreateIndexesResult`]) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateIndex<'a, T, R = CreateIndexResult> {
    collection: &'a Collection<T>,
    indexes: Vec<IndexModel>,
    options: Option<CreateIndexOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _result: PhantomData<fn() -> R>,
}

impl<'a, T, R> CreateIndex<'a, T, R> {
    option_setters!(options: CreateIndexOptions;
        /// How many data-bearing voting members must have built the index before it
        /// is ready (MongoDB 4.4+).
        commit_quorum: CommitQuorum,
        /// The server's time limit for the command (`maxTimeMS`).
        max_time: Duration,
        /// A comment the server logs with the command.
        comment: impl Into<Bson>,
        /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
        /// older servers): not for applications, it may change or go in any release.
        raw_data: bool,
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();
    session_setter!();

    async fn execute(self) -> Result<Vec<String>> {
        let collection = self.collection.with_operation_timeout(self.timeout);
        collection
            .create_indexes_in(self.indexes, self.options, self.session)
            .await
    }
}

run_blocking!(impl['a, T] CreateIndex<'a, T, CreateIndexResult> => CreateIndexResult);

impl<'a, T> IntoFuture for CreateIndex<'a, T, CreateIndexResult> {
    type Output = Result<CreateIndexResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let mut names = self.execute().await?;
            Ok(CreateIndexResult {
                index_name: names.pop().unwrap_or_default(),
            })
        })
    }
}

run_blocking!(impl['a, T] CreateIndex<'a, T, CreateIndexesResult> => CreateIndexesResult);

impl<'a, T> IntoFuture for CreateIndex<'a, T, CreateIndexesResult> {
    type Output = Result<CreateIndexesResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let index_names = self.execute().await?;
            Ok(CreateIndexesResult { index_names })
        })
    }
}

/// A drop of one index or all: what [`Collection::drop_index`] and
/// [`Collection::drop_indexes`] return.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropIndex<'a, T> {
    collection: &'a Collection<T>,
    /// `None`: every index (`"*"`).
    name: Option<String>,
    options: Option<DropIndexOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> DropIndex<'a, T> {
    option_setters!(options: DropIndexOptions;
        /// The server's time limit for the command (`maxTimeMS`).
        max_time: Duration,
        /// A comment the server logs with the command.
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

run_blocking!(impl['a, T] DropIndex<'a, T> => ());

impl<'a, T> IntoFuture for DropIndex<'a, T> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .drop_indexes_in(self.name.as_deref(), self.options, self.session)
                .await
        })
    }
}

/// The setters of [`ListIndexesOptions`].
macro_rules! list_indexes_setters {
    () => {
        option_setters!(options: ListIndexesOptions;
            /// The server's time limit for the command (`maxTimeMS`).
            max_time: Duration,
            /// How many indexes each batch of the cursor holds.
            batch_size: u32,
            /// A comment the server logs with the command.
            comment: impl Into<Bson>,
            /// Internal, for MongoDB's own teams (`rawData`, MongoDB 8.2+; not sent to
            /// older servers): not for applications, it may change or go in any release.
            raw_data: bool,
            /// What `timeoutMS` bounds: the listing and its cursor together (the
            /// default), or each iteration.
            timeout_mode: TimeoutMode,
        );
    };
}

/// A listing of indexes: what [`Collection::list_indexes`] returns. Awaited, it
/// returns a [`Cursor`] of [`IndexModel`]s (a [`SessionCursor`] after `.session(…)`).
#[must_use = "an action does nothing until it is awaited"]
pub struct ListIndexes<'a, T, Session = ImplicitSession> {
    collection: &'a Collection<T>,
    options: Option<ListIndexesOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _session: PhantomData<Session>,
}

impl<'a, T, Session> ListIndexes<'a, T, Session> {
    list_indexes_setters!();
    timeout_setter!();

    /// Lists the indexes in `session`; the listing then returns a [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> ListIndexes<'s, T, ExplicitSession<'s>>
    where
        'a: 's,
    {
        ListIndexes {
            collection: self.collection,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _session: PhantomData,
        }
    }

    async fn execute(self) -> Result<Cursor<IndexModel>> {
        let collection = self.collection.with_operation_timeout(self.timeout);
        let cursor = collection
            .list_indexes_in(self.options, self.session)
            .await?;
        Ok(cursor.with_type())
    }
}

raw_batches!(impl['a, T] ListIndexes<'a, T, ImplicitSession>, ListIndexes<'a, T, ExplicitSession<'a>>);

run_blocking!(impl['a, T] ListIndexes<'a, T, ImplicitSession> => crate::sync::Cursor<IndexModel>);

impl<'a, T> IntoFuture for ListIndexes<'a, T, ImplicitSession> {
    type Output = Result<Cursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a, T] ListIndexes<'a, T, ExplicitSession<'a>> => crate::sync::SessionCursor<IndexModel>);

impl<'a, T> IntoFuture for ListIndexes<'a, T, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}

/// A listing of index names: what [`Collection::list_index_names`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct ListIndexNames<'a, T> {
    collection: &'a Collection<T>,
    options: Option<ListIndexesOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> ListIndexNames<'a, T> {
    list_indexes_setters!();
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a, T] ListIndexNames<'a, T> => Vec<String>);

impl<'a, T> IntoFuture for ListIndexNames<'a, T> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            names(
                collection
                    .list_indexes_in(self.options, self.session)
                    .await?,
            )
            .await
        })
    }
}

/// Writes the `with_options` of a search index action, whose options type has no
/// options yet (see [`CreateSearchIndexOptions`]): it takes one, as the official
/// driver's does, and nothing changes.
macro_rules! placeholder_options {
    ($Options:ty) => {
        /// Sets all the options at once; there are none yet.
        pub fn with_options(self, options: impl Into<Option<$Options>>) -> Self {
            let _: Option<$Options> = options.into();
            self
        }
    };
}

/// A creation of Atlas Search indexes: what [`Collection::create_search_index`] (its
/// result the index's name) and [`Collection::create_search_indexes`] (their names)
/// return.
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateSearchIndex<'a, T, R = String> {
    collection: &'a Collection<T>,
    models: Vec<SearchIndexModel>,
    timeout: Option<Duration>,
    _result: PhantomData<fn() -> R>,
}

impl<'a, T, R> CreateSearchIndex<'a, T, R> {
    placeholder_options!(CreateSearchIndexOptions);
    timeout_setter!();

    async fn execute(self) -> Result<Vec<String>> {
        let collection = self.collection.with_operation_timeout(self.timeout);
        collection.create_search_indexes_in(self.models).await
    }
}

run_blocking!(impl['a, T] CreateSearchIndex<'a, T, String> => String);

impl<'a, T> IntoFuture for CreateSearchIndex<'a, T, String> {
    type Output = Result<String>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            self.execute().await?.pop().ok_or_else(|| {
                crate::error::Error::deserialization("the createSearchIndexes reply names no index")
            })
        })
    }
}

run_blocking!(impl['a, T] CreateSearchIndex<'a, T, Vec<String>> => Vec<String>);

impl<'a, T> IntoFuture for CreateSearchIndex<'a, T, Vec<String>> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

/// An update of an Atlas Search index: what [`Collection::update_search_index`]
/// returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct UpdateSearchIndex<'a, T> {
    collection: &'a Collection<T>,
    name: String,
    definition: Document,
    timeout: Option<Duration>,
}

impl<'a, T> UpdateSearchIndex<'a, T> {
    placeholder_options!(UpdateSearchIndexOptions);
    timeout_setter!();
}

run_blocking!(impl['a, T] UpdateSearchIndex<'a, T> => ());

impl<'a, T> IntoFuture for UpdateSearchIndex<'a, T> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .update_search_index_in(&self.name, self.definition)
                .await
        })
    }
}

/// A drop of an Atlas Search index: what [`Collection::drop_search_index`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropSearchIndex<'a, T> {
    collection: &'a Collection<T>,
    name: String,
    timeout: Option<Duration>,
}

impl<'a, T> DropSearchIndex<'a, T> {
    placeholder_options!(DropSearchIndexOptions);
    timeout_setter!();
}

run_blocking!(impl['a, T] DropSearchIndex<'a, T> => ());

impl<'a, T> IntoFuture for DropSearchIndex<'a, T> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection.drop_search_index_in(&self.name).await
        })
    }
}

/// A listing of Atlas Search indexes: what [`Collection::list_search_indexes`]
/// returns. Awaited, it returns a [`Cursor`] of their descriptions.
#[must_use = "an action does nothing until it is awaited"]
pub struct ListSearchIndexes<'a, T> {
    collection: &'a Collection<T>,
    name: Option<String>,
    options: Option<AggregateOptions>,
    timeout: Option<Duration>,
}

impl<'a, T> ListSearchIndexes<'a, T> {
    /// Lists only the index named `name`.
    pub fn name(mut self, name: impl AsRef<str>) -> Self {
        self.name = Some(name.as_ref().to_owned());
        self
    }

    /// The options of the aggregation that lists them (its read and write concerns
    /// are not sent).
    pub fn aggregate_options(mut self, options: AggregateOptions) -> Self {
        self.options = Some(options);
        self
    }
    placeholder_options!(ListSearchIndexOptions);
    timeout_setter!();
}

run_blocking!(impl['a, T] ListSearchIndexes<'a, T> => crate::sync::Cursor<Document>);

impl<'a, T> IntoFuture for ListSearchIndexes<'a, T> {
    type Output = Result<Cursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            collection
                .list_search_indexes_in(self.name.as_deref(), self.options)
                .await
        })
    }
}
