//! The Index Management spec's operations: creating, dropping and listing indexes,
//! and Atlas Search indexes.

use super::{raw_batches, run_blocking};
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};

use super::{
    option_setters, session_setter, timeout_setter, ExplicitSession, ImplicitSession, ListNames,
    ListSpecifications, Multiple, Single,
};
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
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_> {
        CreateIndex::new(self, vec![index])
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
    ) -> CreateIndex<'_, Multiple> {
        CreateIndex::new(self, indexes.into_iter().collect())
    }

    /// Drops the index named `name`. `"*"` is refused: use
    /// [`drop_indexes`](Self::drop_indexes) to drop them all.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// orders.drop_index("item_1").await?;
    /// # Ok(()) }
    /// ```
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_> {
        DropIndex {
            collection: self.clone_with_type(),
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
    pub fn drop_indexes(&self) -> DropIndex<'_> {
        DropIndex {
            collection: self.clone_with_type(),
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
    pub fn list_indexes(&self) -> ListIndexes<'_> {
        ListIndexes::new(self)
    }

    /// The names of the collection's indexes.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// let names = orders.list_index_names().await?;
    /// assert!(names.iter().any(|name| name == "_id_"));
    /// # Ok(()) }
    /// ```
    pub fn list_index_names(&self) -> ListIndexes<'_, ListNames> {
        ListIndexes::new(self)
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
    pub fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, Single> {
        CreateSearchIndex::new(self, vec![model])
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
    ) -> CreateSearchIndex<'_, Multiple> {
        CreateSearchIndex::new(self, models.into_iter().collect())
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
    ) -> UpdateSearchIndex<'_> {
        UpdateSearchIndex {
            collection: self.clone_with_type(),
            name: name.as_ref().to_owned(),
            definition,
            timeout: None,
            _borrow: PhantomData,
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
    pub fn drop_search_index(&self, name: impl AsRef<str>) -> DropSearchIndex<'_> {
        DropSearchIndex {
            collection: self.clone_with_type(),
            name: name.as_ref().to_owned(),
            timeout: None,
            _borrow: PhantomData,
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
    pub fn list_search_indexes(&self) -> ListSearchIndexes<'_> {
        ListSearchIndexes {
            collection: self.clone_with_type(),
            name: None,
            options: None,
            timeout: None,
            _borrow: PhantomData,
        }
    }
}

/// A creation of indexes: what [`Collection::create_index`] (`M` [`Single`], its result
/// a [`CreateIndexResult`]) and [`Collection::create_indexes`] (`M` [`Multiple`], a
/// [`CreateIndexesResult`]) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateIndex<'a, M = Single> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    indexes: Vec<IndexModel>,
    options: Option<CreateIndexOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _mode: PhantomData<fn() -> M>,
}

impl<'a, M> CreateIndex<'a, M> {
    fn new<T>(collection: &'a Collection<T>, indexes: Vec<IndexModel>) -> Self {
        CreateIndex {
            collection: collection.clone_with_type(),
            indexes,
            options: None,
            session: None,
            timeout: None,
            _mode: PhantomData,
        }
    }

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

run_blocking!(impl['a] CreateIndex<'a, Single> => CreateIndexResult);

impl<'a> IntoFuture for CreateIndex<'a, Single> {
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

run_blocking!(impl['a] CreateIndex<'a, Multiple> => CreateIndexesResult);

impl<'a> IntoFuture for CreateIndex<'a, Multiple> {
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
pub struct DropIndex<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    /// `None`: every index (`"*"`).
    name: Option<String>,
    options: Option<DropIndexOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> DropIndex<'a> {
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

run_blocking!(impl['a] DropIndex<'a> => ());

impl<'a> IntoFuture for DropIndex<'a> {
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

/// A listing of indexes: what [`Collection::list_indexes`] (`Mode`
/// [`ListSpecifications`]: awaited, a [`Cursor`] of [`IndexModel`]s, a [`SessionCursor`]
/// after `.session(…)`) and [`Collection::list_index_names`] (`Mode` [`ListNames`]: the
/// names) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct ListIndexes<'a, Mode = ListSpecifications, Session = ImplicitSession> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    options: Option<ListIndexesOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _types: PhantomData<fn() -> (Mode, Session)>,
}

impl<'a, Mode> ListIndexes<'a, Mode> {
    fn new<T>(collection: &'a Collection<T>) -> Self {
        ListIndexes {
            collection: collection.clone_with_type(),
            options: None,
            session: None,
            timeout: None,
            _types: PhantomData,
        }
    }
}

impl<'a, Mode, Session> ListIndexes<'a, Mode, Session> {
    list_indexes_setters!();
    timeout_setter!();

    /// Lists the indexes in `session`; a listing of specifications then returns a
    /// [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> ListIndexes<'s, Mode, ExplicitSession<'s>>
    where
        'a: 's,
    {
        ListIndexes {
            collection: self.collection,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    /// The listing's cursor.
    async fn list(self) -> Result<Cursor<Document>> {
        let collection = self.collection.with_operation_timeout(self.timeout);
        collection.list_indexes_in(self.options, self.session).await
    }
}

impl<'a, Session> ListIndexes<'a, ListSpecifications, Session> {
    async fn execute(self) -> Result<Cursor<IndexModel>> {
        Ok(self.list().await?.with_type())
    }
}

raw_batches!(impl['a] ListIndexes<'a, ListSpecifications, ImplicitSession>, ListIndexes<'a, ListSpecifications, ExplicitSession<'a>>);

run_blocking!(impl['a] ListIndexes<'a, ListSpecifications, ImplicitSession> => crate::sync::Cursor<IndexModel>);

impl<'a> IntoFuture for ListIndexes<'a, ListSpecifications, ImplicitSession> {
    type Output = Result<Cursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a] ListIndexes<'a, ListSpecifications, ExplicitSession<'a>> => crate::sync::SessionCursor<IndexModel>);

impl<'a> IntoFuture for ListIndexes<'a, ListSpecifications, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}

run_blocking!(impl['a, Session: 'a] ListIndexes<'a, ListNames, Session> => Vec<String>);

impl<'a, Session: 'a> IntoFuture for ListIndexes<'a, ListNames, Session> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { names(self.list().await?).await })
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

/// A creation of Atlas Search indexes: what [`Collection::create_search_index`] (`Mode`
/// [`Single`], its result the index's name) and [`Collection::create_search_indexes`]
/// (`Mode` [`Multiple`], their names) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateSearchIndex<'a, Mode> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    models: Vec<SearchIndexModel>,
    timeout: Option<Duration>,
    /// The collection's borrow, as the official action's.
    _mode: PhantomData<fn() -> (&'a (), Mode)>,
}

impl<'a, Mode> CreateSearchIndex<'a, Mode> {
    fn new<T>(collection: &'a Collection<T>, models: Vec<SearchIndexModel>) -> Self {
        CreateSearchIndex {
            collection: collection.clone_with_type(),
            models,
            timeout: None,
            _mode: PhantomData,
        }
    }

    placeholder_options!(CreateSearchIndexOptions);
    timeout_setter!();

    async fn execute(self) -> Result<Vec<String>> {
        let collection = self.collection.with_operation_timeout(self.timeout);
        collection.create_search_indexes_in(self.models).await
    }
}

run_blocking!(impl['a] CreateSearchIndex<'a, Single> => String);

impl<'a> IntoFuture for CreateSearchIndex<'a, Single> {
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

run_blocking!(impl['a] CreateSearchIndex<'a, Multiple> => Vec<String>);

impl<'a> IntoFuture for CreateSearchIndex<'a, Multiple> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

/// An update of an Atlas Search index: what [`Collection::update_search_index`]
/// returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct UpdateSearchIndex<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    name: String,
    definition: Document,
    timeout: Option<Duration>,
    /// The official type's lifetime, the borrow of the collection (the action holds a
    /// handle of its own).
    _borrow: PhantomData<&'a ()>,
}

impl<'a> UpdateSearchIndex<'a> {
    placeholder_options!(UpdateSearchIndexOptions);
    timeout_setter!();
}

run_blocking!(impl['a] UpdateSearchIndex<'a> => ());

impl<'a> IntoFuture for UpdateSearchIndex<'a> {
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
pub struct DropSearchIndex<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    name: String,
    timeout: Option<Duration>,
    /// The official type's lifetime, the borrow of the collection (the action holds a
    /// handle of its own).
    _borrow: PhantomData<&'a ()>,
}

impl<'a> DropSearchIndex<'a> {
    placeholder_options!(DropSearchIndexOptions);
    timeout_setter!();
}

run_blocking!(impl['a] DropSearchIndex<'a> => ());

impl<'a> IntoFuture for DropSearchIndex<'a> {
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
pub struct ListSearchIndexes<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    name: Option<String>,
    options: Option<AggregateOptions>,
    timeout: Option<Duration>,
    /// The official type's lifetime, the borrow of the collection (the action holds a
    /// handle of its own).
    _borrow: PhantomData<&'a ()>,
}

impl<'a> ListSearchIndexes<'a> {
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

run_blocking!(impl['a] ListSearchIndexes<'a> => crate::sync::Cursor<Document>);

impl<'a> IntoFuture for ListSearchIndexes<'a> {
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
