//! `list_databases`, `list_database_names`, `list_collections` and
//! `list_collection_names` (Enumerate Databases and Enumerate Collections specs).

use super::{raw_batches, run_blocking};
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};

use super::{
    option_setters, session_setter, timeout_setter, ExplicitSession, ImplicitSession, ListNames,
    ListSpecifications,
};
use crate::client::Client;
use crate::crud::TimeoutMode;
use crate::cursor::{Cursor, SessionCursor};
use crate::database::Database;
use crate::enumerate::{
    names, CollectionSpecification, DatabaseSpecification, ListCollectionsOptions,
    ListDatabasesOptions,
};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;

impl Client {
    /// The databases of the deployment.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// for database in client.list_databases().await? {
    ///     println!("{} ({} bytes)", database.name, database.size_on_disk);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_databases(&self) -> ListDatabases<'_> {
        ListDatabases::new(self)
    }

    /// The names of the deployment's databases (`listDatabases` with `nameOnly`,
    /// which needs fewer locks on the server).
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let names = client.list_database_names().filter(doc! { "empty": false }).await?;
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn list_database_names(&self) -> ListDatabases<'_, ListNames> {
        ListDatabases::new(self)
    }
}

/// A listing of databases: what [`Client::list_databases`] (its result a
/// [`DatabaseSpecification`] each, `M` [`ListSpecifications`]) and
/// [`Client::list_database_names`] (a name each, `M` [`ListNames`]) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct ListDatabases<'a, M = ListSpecifications> {
    client: &'a Client,
    options: Option<ListDatabasesOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _mode: PhantomData<M>,
}

impl<'a, M> ListDatabases<'a, M> {
    fn new(client: &'a Client) -> Self {
        ListDatabases {
            client,
            options: None,
            session: None,
            timeout: None,
            _mode: PhantomData,
        }
    }

    option_setters!(options: ListDatabasesOptions;
        /// Only the databases matching this filter (on `name`, `sizeOnDisk`, `empty`,
        /// `shards`).
        filter: Document,
        /// Only the databases the user has privileges on, when access control is on.
        authorized_databases: bool,
        /// A comment the server logs with the command.
        comment: impl Into<Bson>,
    );
    timeout_setter!();
    session_setter!();

    async fn execute(self, name_only: bool) -> Result<Vec<DatabaseSpecification>> {
        self.client
            .list_databases_in(self.options, name_only, self.session, self.timeout)
            .await
    }
}

run_blocking!(impl['a] ListDatabases<'a, ListSpecifications> => Vec<DatabaseSpecification>);

impl<'a> IntoFuture for ListDatabases<'a, ListSpecifications> {
    type Output = Result<Vec<DatabaseSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute(false))
    }
}

run_blocking!(impl['a] ListDatabases<'a, ListNames> => Vec<String>);

impl<'a> IntoFuture for ListDatabases<'a, ListNames> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let databases = self.execute(true).await?;
            Ok(databases
                .into_iter()
                .map(|database| database.name)
                .collect())
        })
    }
}

impl Database {
    /// The collections and views of the database, as a cursor; a [`SessionCursor`]
    /// when run in a session.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use futures::TryStreamExt;
    /// let mut collections = db.list_collections().await?;
    /// while let Some(collection) = collections.try_next().await? {
    ///     println!("{} ({:?})", collection.name, collection.collection_type);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_collections(&self) -> ListCollections<'_> {
        ListCollections::new(self)
    }

    /// The names of the database's collections and views (`listCollections` with
    /// `nameOnly`).
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let views = db.list_collection_names().filter(doc! { "type": "view" }).await?;
    /// # let _ = views; Ok(()) }
    /// ```
    pub fn list_collection_names(&self) -> ListCollections<'_, ListNames> {
        ListCollections::new(self)
    }
}

/// The setters of [`ListCollectionsOptions`].
macro_rules! list_collections_setters {
    () => {
        option_setters!(options: ListCollectionsOptions;
            /// Only the collections matching this filter (on `name`, `type`,
            /// `options`…).
            filter: Document,
            /// How many collections each batch of the cursor holds.
            batch_size: u32,
            /// Only the collections the user has privileges on, when access control is
            /// on.
            authorized_collections: bool,
            /// A comment the server logs with the command.
            comment: impl Into<Bson>,
            /// What `timeoutMS` bounds: the listing and its cursor together (the
            /// default), or each iteration.
            timeout_mode: TimeoutMode,
        );
    };
}

/// A listing of collections: what [`Database::list_collections`] (`M`
/// [`ListSpecifications`]: awaited, a [`Cursor`] of [`CollectionSpecification`]s, a
/// [`SessionCursor`] after `.session(…)`) and [`Database::list_collection_names`] (`M`
/// [`ListNames`]: the names) return.
#[must_use = "an action does nothing until it is awaited"]
pub struct ListCollections<'a, M = ListSpecifications, Session = ImplicitSession> {
    database: &'a Database,
    options: Option<ListCollectionsOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _types: PhantomData<fn() -> (M, Session)>,
}

impl<'a, M> ListCollections<'a, M> {
    fn new(database: &'a Database) -> Self {
        ListCollections {
            database,
            options: None,
            session: None,
            timeout: None,
            _types: PhantomData,
        }
    }
}

impl<'a, M, Session> ListCollections<'a, M, Session> {
    list_collections_setters!();
    timeout_setter!();

    /// Lists the collections in `session`; a listing of specifications then returns
    /// a [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> ListCollections<'s, M, ExplicitSession<'s>>
    where
        'a: 's,
    {
        ListCollections {
            database: self.database,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _types: PhantomData,
        }
    }

    /// The listing's cursor, of names only (`nameOnly`) when `name_only`.
    async fn list(self, name_only: bool) -> Result<Cursor<Document>> {
        let database = self.database.with_operation_timeout(self.timeout);
        database
            .list_collections_in(self.options, name_only, self.session)
            .await
    }
}

impl<'a, Session> ListCollections<'a, ListSpecifications, Session> {
    async fn execute(self) -> Result<Cursor<CollectionSpecification>> {
        Ok(self.list(false).await?.with_type())
    }
}

raw_batches!(impl['a] ListCollections<'a, ListSpecifications, ImplicitSession>, ListCollections<'a, ListSpecifications, ExplicitSession<'a>>);

run_blocking!(impl['a] ListCollections<'a, ListSpecifications, ImplicitSession> => crate::sync::Cursor<CollectionSpecification>);

impl<'a> IntoFuture for ListCollections<'a, ListSpecifications, ImplicitSession> {
    type Output = Result<Cursor<CollectionSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a] ListCollections<'a, ListSpecifications, ExplicitSession<'a>> => crate::sync::SessionCursor<CollectionSpecification>);

impl<'a> IntoFuture for ListCollections<'a, ListSpecifications, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<CollectionSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}

run_blocking!(impl['a, Session: 'a] ListCollections<'a, ListNames, Session> => Vec<String>);

impl<'a, Session: 'a> IntoFuture for ListCollections<'a, ListNames, Session> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { names(self.list(true).await?).await })
    }
}
