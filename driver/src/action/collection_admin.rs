//! Creating, changing, renaming and dropping collections, and dropping databases.

use super::run_blocking;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::{session_setter, timeout_setter};
use crate::concern::WriteConcern;
use crate::database::Database;
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
    pub fn drop(&self) -> DropCollection<'_, T> {
        DropCollection {
            collection: self,
            write_concern: None,
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
    pub fn rename(&self, to: impl AsRef<str>) -> RenameCollection<'_, T> {
        RenameCollection {
            collection: self,
            to: to.as_ref().to_owned(),
            drop_target: false,
            session: None,
            timeout: None,
        }
    }
}

/// A drop of a collection: what [`Collection::drop`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropCollection<'a, T> {
    collection: &'a Collection<T>,
    write_concern: Option<WriteConcern>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> DropCollection<'a, T> {
    /// Overrides the collection's write concern.
    pub fn write_concern(mut self, write_concern: WriteConcern) -> Self {
        self.write_concern = Some(write_concern);
        self
    }
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a, T] DropCollection<'a, T> => ());

impl<'a, T> IntoFuture for DropCollection<'a, T> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            let write_concern = collection
                .concerns()
                .write_concern(self.write_concern.as_ref(), self.session)?;
            let command = doc! { "drop": collection.name() };
            match collection
                .database()
                .run_write_command(command, write_concern, self.session, collection.timing())
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
pub struct RenameCollection<'a, T> {
    collection: &'a Collection<T>,
    to: String,
    drop_target: bool,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a, T> RenameCollection<'a, T> {
    /// Drops a collection named as the new name first (`dropTarget`), rather than
    /// failing.
    pub fn drop_target(mut self, drop_target: bool) -> Self {
        self.drop_target = drop_target;
        self
    }
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a, T] RenameCollection<'a, T> => ());

impl<'a, T> IntoFuture for RenameCollection<'a, T> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let collection = self.collection.with_operation_timeout(self.timeout);
            let write_concern = collection.concerns().write_concern(None, self.session)?;
            let database = collection.database();
            let mut command = doc! {
                "renameCollection": collection.namespace(),
                "to": format!("{}.{}", database.name(), self.to),
            };
            if self.drop_target {
                command.insert("dropTarget", true);
            }
            database
                .client()
                .database("admin")
                .run_write_command(command, write_concern, self.session, collection.timing())
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
            write_concern: None,
            session: None,
            timeout: None,
        }
    }

    /// Creates the collection `name` with the `create` command. Creating a collection
    /// that exists is an error (NamespaceExists, code 48).
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// db.create_collection("log").capped(true).size(1_048_576).await?;
    /// db.create_collection("readings")
    ///     .timeseries(doc! { "timeField": "at", "metaField": "sensor" })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_> {
        CreateCollection {
            database: self,
            command: doc! { "create": name.as_ref() },
            write_concern: None,
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
            .run_write_command(command, write_concern, session, database.timeout().into())
            .await?;
        Ok(())
    }
}

/// A drop of a database: what [`Database::drop`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct DropDatabase<'a> {
    database: &'a Database,
    write_concern: Option<WriteConcern>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> DropDatabase<'a> {
    /// Overrides the database's write concern.
    pub fn write_concern(mut self, write_concern: WriteConcern) -> Self {
        self.write_concern = Some(write_concern);
        self
    }
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] DropDatabase<'a> => ());

impl<'a> IntoFuture for DropDatabase<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            self.database
                .run_admin_write(
                    doc! { "dropDatabase": 1 },
                    self.write_concern.as_ref(),
                    self.session,
                    self.timeout,
                )
                .await
        })
    }
}

/// Writes setters that each add one field to the `create` command.
macro_rules! create_setters {
    ($($(#[$doc:meta])* $name:ident: $type:ty => $field:literal,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $type) -> Self {
                self.command.insert($field, value);
                self
            }
        )*
    };
}

/// A creation of a collection: what [`Database::create_collection`] returns. Its
/// setters are the `create` command's fields; [`with_options`](Self::with_options)
/// takes any of them as a document.
#[must_use = "an action does nothing until it is awaited"]
pub struct CreateCollection<'a> {
    database: &'a Database,
    command: Document,
    write_concern: Option<WriteConcern>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> CreateCollection<'a> {
    /// Adds the `create` command's fields in `options` (`capped`, `size`,
    /// `validator`, `timeseries`, `viewOn`, `pipeline`, `collation`…), replacing
    /// those set before under the same names.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// db.create_collection("log").with_options(doc! { "capped": true, "size": 4096 }).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_options(mut self, options: impl Into<Option<Document>>) -> Self {
        self.command.extend(options.into().unwrap_or_default());
        self
    }

    create_setters!(
        /// A capped collection (needs [`size`](Self::size)).
        capped: bool => "capped",
        /// The largest size of a capped collection, in bytes.
        size: i64 => "size",
        /// The most documents a capped collection holds.
        max: i64 => "max",
        /// The validation rules of its documents (`validator`).
        validator: Document => "validator",
        /// How strictly the validator applies: `"off"`, `"strict"` or `"moderate"`.
        validation_level: &str => "validationLevel",
        /// What an invalid document does: `"error"` or `"warn"`.
        validation_action: &str => "validationAction",
        /// Makes a view of this source collection (with [`pipeline`](Self::pipeline)).
        view_on: &str => "viewOn",
        /// The aggregation pipeline of a view.
        pipeline: Vec<Document> => "pipeline",
        /// The default collation of the collection.
        collation: Document => "collation",
        /// A time series collection: `{ timeField, metaField, granularity }`.
        timeseries: Document => "timeseries",
        /// A clustered collection: `{ key: { _id: 1 }, unique: true }`.
        clustered_index: Document => "clusteredIndex",
        /// Whether change streams may show documents before and after a change:
        /// `{ enabled: true }`.
        change_stream_pre_and_post_images: Document => "changeStreamPreAndPostImages",
        /// The storage engine's options.
        storage_engine: Document => "storageEngine",
        /// The default options of its indexes.
        index_option_defaults: Document => "indexOptionDefaults",
        /// A comment for the server's logs.
        comment: Bson => "comment",
    );

    /// Removes documents of a time series or clustered collection this long after
    /// their time (`expireAfterSeconds`).
    pub fn expire_after_seconds(mut self, expire_after: Duration) -> Self {
        let seconds = i64::try_from(expire_after.as_secs()).unwrap_or(i64::MAX);
        self.command.insert("expireAfterSeconds", seconds);
        self
    }

    /// Overrides the database's write concern.
    pub fn write_concern(mut self, write_concern: WriteConcern) -> Self {
        self.write_concern = Some(write_concern);
        self
    }
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] CreateCollection<'a> => ());

impl<'a> IntoFuture for CreateCollection<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            self.database
                .run_admin_write(
                    self.command,
                    self.write_concern.as_ref(),
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
