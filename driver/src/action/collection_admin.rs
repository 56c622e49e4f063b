//! Creating, changing, renaming and dropping collections, and dropping databases.

use super::run_blocking;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::{option_setters, session_setter, timeout_setter};
use crate::collection_management::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, DropCollectionOptions,
    DropDatabaseOptions, IndexOptionDefaults, TimeseriesOptions, ValidationAction, ValidationLevel,
};
use crate::concern::WriteConcern;
use crate::crud::Namespace;
use crate::database::Database;
use crate::error::Error;
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::ClientSession;
use crate::Collection;

/// NamespaceNotFound: what the server answers a drop of what does not exist.
const NAMESPACE_NOT_FOUND: i32 = 26;

impl<T> Collection<T> {
    /// Drops the collection; dropping one that does not exist is not an error.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// orders.drop().await?;
    /// # Ok(()) }
    /// ```
    pub fn drop(&self) -> DropCollection<'_> {
        DropCollection {
            collection: self.clone_with_type(),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Renames the collection to `to` in the same database (the `renameCollection`
    /// command, on `admin`). A collection named `to` is an error (NamespaceExists,
    /// code 48) unless [`drop_target`](RenameCollection::drop_target) says to drop it
    /// first. The official driver has no such method; it is `renameCollection` run
    /// with the collection's write concern.
    ///
    /// ```no_run
    /// # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// orders.rename("orders_2024").drop_target(true).await?;
    /// # Ok(()) }
    /// ```
    pub fn rename(&self, to: impl AsRef<str>) -> RenameCollection<'_> {
        RenameCollection {
            collection: self.clone_with_type(),
            to: to.as_ref().to_owned(),
            drop_target: false,
            session: None,
            timeout: None,
        }
    }
}

/// A drop of a collection: what [`Collection::drop`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropCollection<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    options: Option<DropCollectionOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> DropCollection<'a> {
    option_setters!(options: DropCollectionOptions;
        /// Overrides the collection's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] DropCollection<'a> => ());

impl<'a> IntoFuture for DropCollection<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            let options = self.options.unwrap_or_default();
            let write_concern = collection
                .concerns()
                .write_concern(options.write_concern.as_ref(), self.session)?;
            let command = doc! { "drop": collection.name() };
            match collection
                .database()
                .run_write_command(
                    command,
                    write_concern,
                    self.session,
                    collection.timing(),
                    None,
                )
                .await
            {
                Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => Ok(()),
                done => done.map(drop),
            }
        })
    }
}

/// A rename of a collection: what [`Collection::rename`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct RenameCollection<'a> {
    /// A clone of the collection (a reference count): the action has no document type.
    collection: Collection<Document>,
    to: String,
    drop_target: bool,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> RenameCollection<'a> {
    /// Drops a collection named as the new name first (`dropTarget`), rather than
    /// failing.
    pub fn drop_target(mut self, drop_target: bool) -> Self {
        self.drop_target = drop_target;
        self
    }
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] RenameCollection<'a> => ());

impl<'a> IntoFuture for RenameCollection<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            let write_concern = collection.concerns().write_concern(None, self.session)?;
            let database = collection.database();
            let mut command = doc! {
                "renameCollection": collection.namespace().to_string(),
                "to": Namespace::new(database.name(), &self.to).to_string(),
            };
            if self.drop_target {
                command.insert("dropTarget", true);
            }
            database
                .client()
                .database("admin")
                .run_write_command(
                    command,
                    write_concern,
                    self.session,
                    collection.timing(),
                    None,
                )
                .await?;
            Ok(())
        })
    }
}

impl Database {
    /// Drops the database and every collection in it.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// db.drop().await?;
    /// # Ok(()) }
    /// ```
    pub fn drop(&self) -> DropDatabase<'_> {
        DropDatabase {
            database: self,
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Creates the collection `name` with the `create` command. Creating a collection
    /// that exists is an error (NamespaceExists, code 48).
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::options::TimeseriesOptions;
    /// db.create_collection("log").capped(true).size(1_048_576).await?;
    /// let readings = TimeseriesOptions::builder()
    ///     .time_field("at".to_string())
    ///     .meta_field(Some("sensor".to_string()))
    ///     .build();
    /// db.create_collection("readings").timeseries(readings).await?;
    /// # Ok(()) }
    /// ```
    pub fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_> {
        CreateCollection {
            database: self,
            name: name.as_ref().to_owned(),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Changes the options of the collection (or view) `name` with the `collMod`
    /// command; `changes` are that command's fields (`validator`, `validationLevel`,
    /// `validationAction`, `index`, `viewOn`, `pipeline`, `expireAfterSeconds`…).
    /// Modifying a collection that does not exist is an error (NamespaceNotFound,
    /// code 26). The official driver has no such method; it is `collMod` run with the
    /// database's write concern.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let strings_only = doc! { "validator": { "x": { "$type": "string" } } };
    /// db.modify_collection("log", strings_only).await?;
    /// # Ok(()) }
    /// ```
    pub fn modify_collection(
        &self,
        name: impl AsRef<str>,
        changes: Document,
    ) -> ModifyCollection<'_> {
        let mut command = doc! { "collMod": name.as_ref() };
        command.extend(changes);
        ModifyCollection {
            database: self,
            command,
            session: None,
            timeout: None,
        }
    }

    /// Runs `command`, a write on this database, with `write_concern` (else the
    /// database's).
    async fn run_admin_write(
        &self,
        command: Document,
        write_concern: Option<&WriteConcern>,
        session: Option<&ClientSession>,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let database = self.with_operation_timeout(timeout);
        let write_concern = database.concerns().write_concern(write_concern, session)?;
        database
            .run_write_command(
                command,
                write_concern,
                session,
                database.timeout().into(),
                None,
            )
            .await?;
        Ok(())
    }
}

/// A drop of a database: what [`Database::drop`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropDatabase<'a> {
    database: &'a Database,
    options: Option<DropDatabaseOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> DropDatabase<'a> {
    option_setters!(options: DropDatabaseOptions;
        /// Overrides the database's write concern.
        write_concern: WriteConcern,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] DropDatabase<'a> => ());

impl<'a> IntoFuture for DropDatabase<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let options = self.options.unwrap_or_default();
            self.database
                .run_admin_write(
                    doc! { "dropDatabase": 1 },
                    options.write_concern.as_ref(),
                    self.session,
                    self.timeout,
                )
                .await
        })
    }
}

/// A creation of a collection: what [`Database::create_collection`] returns. Its
/// setters are the fields of [`CreateCollectionOptions`].
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateCollection<'a> {
    database: &'a Database,
    name: String,
    options: Option<CreateCollectionOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> CreateCollection<'a> {
    option_setters!(options: CreateCollectionOptions;
        /// A capped collection: a fixed-size one that overwrites its oldest documents
        /// (needs [`size`](Self::size)).
        capped: bool,
        /// The largest size of a capped collection, in bytes.
        size: u64,
        /// The most documents a capped collection holds.
        max: u64,
        /// The storage engine's options for the collection.
        storage_engine: Document,
        /// The rules every document must follow (`validator`).
        validator: Document,
        /// Which writes the validator checks.
        validation_level: ValidationLevel,
        /// What a write that fails validation does.
        validation_action: ValidationAction,
        /// Makes a view of this collection or view (with [`pipeline`](Self::pipeline)).
        view_on: String,
        /// The aggregation pipeline of a view.
        pipeline: Vec<Document>,
        /// The default collation of the collection's string comparisons.
        collation: crate::crud::Collation,
        /// Overrides the database's write concern.
        write_concern: WriteConcern,
        /// The default options of the collection's indexes.
        index_option_defaults: IndexOptionDefaults,
        /// A time series collection.
        timeseries: TimeseriesOptions,
        /// Removes the documents of a time series or clustered collection this long
        /// after their time (`expireAfterSeconds`).
        expire_after_seconds: Duration,
        /// Whether change streams may show documents before and after a change.
        change_stream_pre_and_post_images: ChangeStreamPreAndPostImages,
        /// A clustered collection.
        clustered_index: ClusteredIndex,
        /// A comment the server logs with the command.
        comment: impl Into<Bson>,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] CreateCollection<'a> => ());

impl<'a> IntoFuture for CreateCollection<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let options = self.options.unwrap_or_default();
            let mut command = doc! { "create": self.name };
            command.extend(bson::serialize_to_document(&options).map_err(Error::serialization)?);
            self.database
                .run_admin_write(
                    command,
                    options.write_concern.as_ref(),
                    self.session,
                    self.timeout,
                )
                .await
        })
    }
}

/// A `collMod`: what [`Database::modify_collection`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct ModifyCollection<'a> {
    database: &'a Database,
    command: Document,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> ModifyCollection<'a> {
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] ModifyCollection<'a> => ());

impl<'a> IntoFuture for ModifyCollection<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            self.database
                .run_admin_write(self.command, None, self.session, self.timeout)
                .await
        })
    }
}
