//! The blocking handles: each wraps the async one and dereferences to it, so that
//! every operation method of the async handle is the blocking handle's too and returns
//! the same action, which `.run()` runs (where `.await` would). Inherent methods here
//! replace those of the async handle that hand out handles (so a blocking database
//! gives blocking collections) or that are `async fn`.

use std::ops::Deref;
use std::time::Duration;


use crate::database::Concerns;
use super::run::block_on;
use crate::handshake::HelloReply;
use crate::options::ClientOptions;
use crate::Result;

/// A client of the blocking API: the async [`Client`](crate::Client) (to which it
/// dereferences, for its operations, sessions and accessors), its calls run on the
/// calling thread. Cheap to clone; monitors the deployment in the background on the
/// blocking API's runtime.
///
/// ```no_run
/// # fn example() -> anymongo::Result<()> {
/// use anymongo::{bson::doc, sync::Client};
/// let client = Client::with_uri_str("mongodb://localhost:27017")?;
/// client.database("admin").run_command(doc! { "ping": 1 }).run()?;
/// let names = client.list_database_names().run()?;
/// # let _ = names; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    client: crate::Client,
}

impl Client {
    /// A client for the deployment named by a connection string, `mongodb+srv://`
    /// included ([`crate::Client::with_uri_str`]). Connects lazily, on the first
    /// operation.
    pub fn with_uri_str(uri: impl AsRef<str>) -> Result<Client> {
        block_on(crate::Client::with_uri_str(uri))?.map(Client::from_async)
    }

    /// A client with `options` ([`crate::Client::with_options`]); build them with
    /// `ClientOptions::parse(uri).run()`.
    pub fn with_options(options: ClientOptions) -> Result<Client> {
        // Inside the runtime: the client takes it for its background monitoring.
        block_on(async { crate::Client::with_options(options) })?.map(Client::from_async)
    }

    fn from_async(client: crate::Client) -> Client {
        Client { client }
    }

    /// A handle to the database `name`; no I/O happens until a command runs.
    pub fn database(&self, name: &str) -> Database {
        Database::from(self.client.database(name))
    }

    /// A handle to the database `name` with its own concerns
    /// ([`crate::Client::database_with_options`]).
    pub fn database_with_options(&self, name: &str, options: Concerns) -> Database {
        Database::from(self.client.database_with_options(name, options))
    }

    /// The database named in the connection string's path, if any.
    pub fn default_database(&self) -> Option<Database> {
        self.client.default_database().map(Database::from)
    }

    /// This client with `timeoutMS` = `timeout` for its operations
    /// ([`crate::Client::with_timeout`]).
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client::from_async(self.client.with_timeout(timeout))
    }

    /// The handshake reply of a connection to a server selected for a primary read
    /// ([`crate::Client::hello`]).
    pub fn hello(&self) -> Result<HelloReply> {
        block_on(self.client.hello())?
    }

    /// Shuts the client down ([`crate::Client::shutdown`]): its pooled server
    /// sessions are ended, its monitors stopped and its connections closed; every
    /// later operation of any handle of this client fails. `.run()` returns once the
    /// monitors have ended.
    pub fn shutdown(self) -> crate::action::Shutdown {
        self.client.shutdown()
    }
}

impl Deref for Client {
    type Target = crate::Client;

    fn deref(&self) -> &crate::Client {
        &self.client
    }
}

/// A database of the blocking API: the async [`Database`](crate::Database), to which
/// it dereferences for its operations (`run_command`, `list_collection_names`,
/// `create_collection`, `aggregate`, `watch`, `drop`…: each returns the async action,
/// which `.run()` runs).
///
/// ```no_run
/// # fn example(client: anymongo::sync::Client) -> anymongo::Result<()> {
/// use anymongo::bson::doc;
/// let db = client.database("shop");
/// db.create_collection("orders").run()?;
/// let names = db.list_collection_names().run()?;
/// db.run_command(doc! { "ping": 1 }).run()?;
/// # let _ = names; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Database {
    database: crate::Database,
}

impl From<crate::Database> for Database {
    fn from(database: crate::Database) -> Self {
        Database { database }
    }
}

impl Database {
    /// A handle to the collection `name`, its documents read and written as `T`.
    pub fn collection<T>(&self, name: &str) -> Collection<T> {
        Collection::from(self.database.collection(name))
    }

    /// A handle to the collection `name` with its own concerns
    /// ([`crate::Database::collection_with_options`]).
    pub fn collection_with_options<T>(&self, name: &str, options: Concerns) -> Collection<T> {
        Collection::from(self.database.collection_with_options(name, options))
    }

    /// This database with other concerns ([`crate::Database::with_concerns`]).
    pub fn with_concerns(&self, concerns: Concerns) -> Database {
        Database::from(self.database.with_concerns(concerns))
    }

    /// This database with `timeoutMS` = `timeout` for its operations
    /// ([`crate::Database::with_timeout`]).
    pub fn with_timeout(&self, timeout: Duration) -> Database {
        Database::from(self.database.with_timeout(timeout))
    }
}

impl Deref for Database {
    type Target = crate::Database;

    fn deref(&self) -> &crate::Database {
        &self.database
    }
}

/// A collection of the blocking API: the async [`Collection`](crate::Collection), to
/// which it dereferences for every operation (each returns the async action, which
/// `.run()` runs).
///
/// ```no_run
/// # fn example(client: anymongo::sync::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// let orders = client.database("shop").collection::<Document>("orders");
/// orders.insert_one(doc! { "item": "tea", "qty": 2 }).run()?;
/// let cursor = orders.find(doc! { "item": "tea" }).sort(doc! { "qty": -1 }).run()?;
/// for order in cursor {
///     println!("{}", order?);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Collection<T> {
    collection: crate::Collection<T>,
}

// Not derived: `T` (the documents' type) need not be `Clone`.
impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection::from(self.collection.clone())
    }
}

impl<T> From<crate::Collection<T>> for Collection<T> {
    fn from(collection: crate::Collection<T>) -> Self {
        Collection { collection }
    }
}

impl<T> Collection<T> {
    /// This collection with other concerns ([`crate::Collection::with_concerns`]).
    pub fn with_concerns(&self, concerns: Concerns) -> Collection<T> {
        Collection::from(self.collection.with_concerns(concerns))
    }

    /// This collection with `timeoutMS` = `timeout` for its operations
    /// ([`crate::Collection::with_timeout`]).
    pub fn with_timeout(&self, timeout: Duration) -> Collection<T> {
        Collection::from(self.collection.with_timeout(timeout))
    }

    /// The same collection, its documents read and written as `U`.
    pub fn clone_with_type<U>(&self) -> Collection<U> {
        Collection::from(self.collection.clone_with_type())
    }
}

impl<T> Deref for Collection<T> {
    type Target = crate::Collection<T>;

    fn deref(&self) -> &crate::Collection<T> {
        &self.collection
    }
}
