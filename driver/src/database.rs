//! [`Database`]: a handle to one database of a client, with its own read preference,
//! read concern and write concern (defaulting to the client's).

use bson::Document;

use crate::client::Client;
use crate::collection::Collection;
use crate::concern::{ReadConcern, WriteConcern};
use crate::crud::run_command::{RunCommand, RunCursorCommand};
use crate::cursor::Cursor;
use crate::error::Result;
use crate::session::ClientSession;
use crate::uri::ReadPreference;

/// A handle to one database of a [`Client`]. Cheap to clone.
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::doc;
/// let db = client.database("shop");
/// db.run_command(doc! { "ping": 1 }).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Database {
    client: Client,
    name: String,
    options: Concerns,
}

/// The read preference, read concern and write concern of a database or collection;
/// `None` inherits from the level above (client, then database).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Concerns {
    /// Where reads go.
    pub read_preference: Option<ReadPreference>,
    /// How fresh and durable reads must be.
    pub read_concern: Option<ReadConcern>,
    /// How writes are acknowledged.
    pub write_concern: Option<WriteConcern>,
}

impl Concerns {
    /// `self`, with what it leaves unset taken from `parent`.
    pub(crate) fn inherit(&self, parent: &Concerns) -> Concerns {
        Concerns {
            read_preference: self
                .read_preference
                .clone()
                .or_else(|| parent.read_preference.clone()),
            read_concern: self
                .read_concern
                .clone()
                .or_else(|| parent.read_concern.clone()),
            write_concern: self
                .write_concern
                .clone()
                .or_else(|| parent.write_concern.clone()),
        }
    }

    /// The client's defaults, from its connection string.
    pub(crate) fn of_client(client: &Client) -> Concerns {
        let options = client.options();
        Concerns {
            read_preference: Some(options.read_preference.clone()),
            read_concern: options.read_concern_level.clone().map(ReadConcern::new),
            write_concern: Some(options.write_concern.clone()),
        }
    }
}

impl Database {
    pub(crate) fn new(client: Client, name: &str) -> Database {
        Database {
            options: Concerns::of_client(&client),
            client,
            name: name.to_string(),
        }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client this database belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The concerns its operations use.
    pub fn concerns(&self) -> &Concerns {
        &self.options
    }

    /// This database with other concerns (those left `None` stay as they are).
    ///
    /// ```no_run
    /// # fn example(client: anymongo::Client) {
    /// use anymongo::concern::WriteConcern;
    /// use anymongo::database::Concerns;
    /// let db = client.database("shop").with_concerns(Concerns {
    ///     write_concern: Some(WriteConcern::majority()),
    ///     ..Concerns::default()
    /// });
    /// # let _ = db; }
    /// ```
    pub fn with_concerns(&self, concerns: Concerns) -> Database {
        Database {
            options: concerns.inherit(&self.options),
            ..self.clone()
        }
    }

    /// A handle to the collection `name`, its documents read and written as `T`.
    pub fn collection<T>(&self, name: &str) -> Collection<T> {
        Collection::new(self.clone(), name)
    }

    /// Runs a database command and returns the server's reply.
    ///
    /// The command's first key names it (`{ "ping": 1 }`, `{ "insert": "coll", ... }`);
    /// the driver adds `$db`, the session id and the cluster time, nothing else: no read
    /// or write concern, and it reads from the primary (Run Command spec). A reply with
    /// `ok: 0` becomes an error of kind [`crate::ErrorKind::Command`] carrying the
    /// server's code, code name, message and error labels. It is never retried.
    pub async fn run_command(&self, command: Document) -> Result<Document> {
        self.run_command_with(command, None, None).await
    }

    /// [`run_command`](Self::run_command) with a read preference and/or in a session.
    pub async fn run_command_with(
        &self,
        command: Document,
        read_preference: Option<ReadPreference>,
        session: Option<&ClientSession>,
    ) -> Result<Document> {
        let operation = RunCommand::new(&self.name, command, read_preference)?;
        self.client.execute(operation, session).await
    }

    /// Runs a command that returns a cursor (`find`, `aggregate`, `listCollections`…)
    /// and iterates it: later batches come from `getMore` (Run Command spec,
    /// "runCursorCommand").
    pub async fn run_cursor_command(&self, command: Document) -> Result<Cursor<Document>> {
        self.run_cursor_command_with(command, None, None).await
    }

    /// [`run_cursor_command`](Self::run_cursor_command) with a read preference and/or in
    /// a session.
    pub async fn run_cursor_command_with(
        &self,
        command: Document,
        read_preference: Option<ReadPreference>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let operation = RunCursorCommand::new(&self.name, command, read_preference)?;
        self.client.execute(operation, session).await
    }
}
