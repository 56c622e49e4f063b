//! [`Database`]: a handle to one database of a client, with its own read preference,
//! read concern and write concern (defaulting to the client's).

use bson::Document;

use crate::client::Client;
use crate::collection::Collection;
use crate::concern::{ReadConcern, WriteConcern};
use crate::crud::read::Aggregate;
use crate::crud::run_command::{RunCommand, RunCursorCommand};
use crate::crud::write::WriteReply;
use crate::crud::{AggregateOptions, RunCursorCommandOptions};
use crate::cursor::Cursor;
use crate::error::Result;
use crate::operation::Timing;
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;

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
/// `None` inherits from the level above (client, then database). The official crate's
/// [`DatabaseOptions`](crate::options::DatabaseOptions) and
/// [`CollectionOptions`](crate::options::CollectionOptions) are this type.
///
/// ```no_run
/// # fn example(client: anymongo::Client) {
/// use anymongo::options::{DatabaseOptions, WriteConcern};
/// let options = DatabaseOptions::builder().write_concern(WriteConcern::majority()).build();
/// let db = client.database_with_options("shop", options);
/// # let _ = db; }
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq)]
#[builder(field_defaults(default, setter(into)))]
pub struct Concerns {
    /// Where reads go.
    pub selection_criteria: Option<SelectionCriteria>,
    /// How fresh and durable reads must be.
    pub read_concern: Option<ReadConcern>,
    /// How writes are acknowledged.
    pub write_concern: Option<WriteConcern>,
    /// `timeoutMS`: how long each operation may take in all (Client Side Operations
    /// Timeout spec; `Some(ZERO)`: no limit). Once set, a lower level can change it
    /// but not unset it.
    pub timeout: Option<std::time::Duration>,
}

impl Concerns {
    /// `self`, with what it leaves unset taken from `parent`.
    pub(crate) fn inherit(&self, parent: &Concerns) -> Concerns {
        Concerns {
            selection_criteria: self
                .selection_criteria
                .clone()
                .or_else(|| parent.selection_criteria.clone()),
            read_concern: self
                .read_concern
                .clone()
                .or_else(|| parent.read_concern.clone()),
            write_concern: self
                .write_concern
                .clone()
                .or_else(|| parent.write_concern.clone()),
            timeout: self.timeout.or(parent.timeout),
        }
    }

    /// The write concern of a write: the operation's (`given`), else this one;
    /// validated. An operation in a transaction of `session` may not be given one.
    pub(crate) fn write_concern<'a>(
        &'a self,
        given: Option<&'a WriteConcern>,
        session: Option<&ClientSession>,
    ) -> Result<Option<&'a WriteConcern>> {
        crate::transactions::check_operation_concerns(session, false, given.is_some())?;
        let concern = given.or(self.write_concern.as_ref());
        if let Some(concern) = concern {
            concern.validate()?;
        }
        Ok(concern)
    }

    /// The read preference and read concern of a read: the operation's, else these.
    /// An operation in a transaction of `session` may not be given a read concern.
    pub(crate) fn of_read(
        &self,
        selection_criteria: &Option<SelectionCriteria>,
        read_concern: &Option<ReadConcern>,
        session: Option<&ClientSession>,
    ) -> Result<(SelectionCriteria, Option<ReadConcern>)> {
        crate::transactions::check_operation_concerns(session, read_concern.is_some(), false)?;
        Ok((
            selection_criteria
                .clone()
                .or_else(|| self.selection_criteria.clone())
                .unwrap_or_default(),
            read_concern.clone().or_else(|| self.read_concern.clone()),
        ))
    }

    /// The client's defaults, from its connection string.
    pub(crate) fn of_client(client: &Client) -> Concerns {
        let options = client.options();
        Concerns {
            selection_criteria: options.selection_criteria.clone(),
            read_concern: options.read_concern.clone(),
            write_concern: options.write_concern.clone(),
            timeout: client.timeout(),
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

    /// The read concern of its reads unless an operation says otherwise (its own, else
    /// the level above's); `None`: the server's default.
    pub fn read_concern(&self) -> Option<&crate::concern::ReadConcern> {
        self.options.read_concern.as_ref()
    }

    /// The write concern of its writes unless an operation says otherwise (its own,
    /// else the level above's); `None`: the server's default.
    pub fn write_concern(&self) -> Option<&crate::concern::WriteConcern> {
        self.options.write_concern.as_ref()
    }

    /// Where its reads go unless an operation says otherwise (its own, else the
    /// client's); `None`: the primary.
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.options.selection_criteria.as_ref()
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

    /// This database with `timeoutMS` = `timeout` for its operations (and those of
    /// the collections and buckets it hands out): each may take that long in all,
    /// retries included, and fails with [`ErrorKind::OperationTimeout`](crate::ErrorKind::OperationTimeout)
    /// after. `Duration::ZERO` means no limit.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// let db = client.database("shop").with_timeout(Duration::from_millis(500));
    /// db.run_command(anymongo::bson::doc! { "ping": 1 }).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: std::time::Duration) -> Database {
        let mut database = self.clone();
        database.options.timeout = Some(timeout);
        database
    }

    /// The `timeoutMS` of its operations, if one is set.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.options.timeout
    }

    /// A handle to the collection `name`, its documents read and written as `T`.
    pub fn collection<T>(&self, name: &str) -> Collection<T> {
        Collection::new(self.clone(), name)
    }

    /// A handle to the collection `name` with its own read preference, read concern,
    /// write concern or `timeoutMS`; what `options` leaves unset is the database's.
    ///
    /// ```no_run
    /// # fn example(db: anymongo::Database) {
    /// use anymongo::bson::Document;
    /// use anymongo::options::{CollectionOptions, ReadConcern};
    /// let options = CollectionOptions::builder().read_concern(ReadConcern::majority()).build();
    /// let orders = db.collection_with_options::<Document>("orders", options);
    /// # let _ = orders; }
    /// ```
    pub fn collection_with_options<T>(&self, name: &str, options: Concerns) -> Collection<T> {
        self.collection(name).with_concerns(options)
    }

    /// The body of [`run_command`](Self::run_command).
    pub(crate) async fn run_command_in(
        &self,
        command: Document,
        selection_criteria: Option<SelectionCriteria>,
        session: Option<&ClientSession>,
    ) -> Result<Document> {
        let operation = RunCommand::new(&self.name, command, selection_criteria)?;
        self.client
            .executor()
            .execute(operation, session, self.options.timeout)
            .await
    }

    /// The body of [`run_cursor_command`](Self::run_cursor_command).
    pub(crate) async fn run_cursor_command_in(
        &self,
        command: Document,
        options: Option<RunCursorCommandOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let options = options.unwrap_or_default();
        let operation =
            RunCursorCommand::new(&self.name, command, options.selection_criteria.clone())?
                .with_get_more(options);
        operation.check_timeout(self.options.timeout)?;
        self.client
            .executor()
            .execute(operation, session, self.options.timeout)
            .await
    }

    /// An `aggregate` on the database itself (`aggregate: 1`).
    pub(crate) async fn aggregate_in(
        &self,
        pipeline: Vec<Document>,
        options: Option<AggregateOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let on = (&self.options, Timing::from(self.options.timeout));
        self.aggregate_on(None, on, pipeline, options, session)
            .await
    }

    /// This database, or (with an operation's own timeoutMS) a copy with that
    /// timeoutMS.
    pub(crate) fn with_operation_timeout(
        &self,
        timeout: Option<std::time::Duration>,
    ) -> std::borrow::Cow<'_, Database> {
        match timeout {
            Some(timeout) => std::borrow::Cow::Owned(self.with_timeout(timeout)),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// An `aggregate` on `collection` of this database, or on the database itself
    /// (`None`), with the concerns and timing of the one it runs on.
    pub(crate) async fn aggregate_on(
        &self,
        collection: Option<&str>,
        (concerns, timing): (&Concerns, Timing),
        pipeline: Vec<Document>,
        options: Option<AggregateOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let options = options.unwrap_or_default();
        let write_concern = concerns
            .write_concern(options.write_concern.as_ref(), session)?
            .cloned();
        let (selection_criteria, read_concern) =
            concerns.of_read(&options.selection_criteria, &options.read_concern, session)?;
        let operation = Aggregate {
            database: &self.name,
            collection,
            pipeline,
            selection_criteria,
            read_concern,
            write_concern,
            options,
        };
        operation.check_timeout(concerns.timeout)?;
        self.client
            .executor()
            .execute(operation, session, timing)
            .await
    }

    /// Runs a command that writes (`create`, `drop`, `createIndexes`...) with
    /// `write_concern` (already resolved), and turns the write concern error of its
    /// reply into an error; else returns the reply.
    /// `timing` is that of the database or collection it concerns; `raw_data` is the
    /// index helpers' `rawData`.
    pub(crate) async fn run_write_command(
        &self,
        mut command: Document,
        write_concern: Option<&WriteConcern>,
        session: Option<&ClientSession>,
        timing: Timing,
        raw_data: Option<bool>,
    ) -> Result<Document> {
        if let Some(concern) = write_concern.filter(|concern| !concern.is_empty()) {
            command.insert("writeConcern", concern.to_document());
        }
        let operation = RunCommand::new(&self.name, command, None)?
            .write()
            .with_raw_data(raw_data);
        let reply = self
            .client
            .executor()
            .execute(operation, session, timing)
            .await?;
        WriteReply::check_write_concern(&reply)?;
        Ok(reply)
    }
}
