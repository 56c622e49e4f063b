//! `run_command` and `run_cursor_command`: a command run as given (Run Command spec).

use super::{raw_batches, run_blocking};
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};

use super::{option_setters, session_setter, timeout_setter, ExplicitSession, ImplicitSession};
use crate::crud::{CursorType, RunCommandOptions, RunCursorCommandOptions, TimeoutMode};
use crate::cursor::{Cursor, SessionCursor};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;

impl Database {
    /// Runs a database command and returns the server's reply.
    ///
    /// The command's first key names it (`{ "ping": 1 }`, `{ "insert": "coll", ... }`);
    /// the driver adds `$db`, the session id and the cluster time, nothing else: no read
    /// or write concern, and it reads from the primary unless
    /// [`selection_criteria`](RunCommand::selection_criteria) says otherwise (Run Command
    /// spec). A reply with `ok: 0` becomes an error of kind
    /// [`crate::ErrorKind::Command`] carrying the server's code, code name, message and
    /// error labels. It is retried only after an error the server labels a retryable
    /// overload, when both retryReads and retryWrites allow (Client Backpressure spec).
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let reply = db.run_command(doc! { "ping": 1 }).await?;
    /// assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    /// # Ok(()) }
    /// ```
    pub fn run_command(&self, command: Document) -> RunCommand<'_> {
        RunCommand {
            database: self,
            command: Ok(command),
            options: None,
            session: None,
            timeout: None,
        }
    }

    /// Runs a command that returns a cursor (`find`, `aggregate`, `listCollections`…)
    /// and iterates it: later batches come from `getMore` (Run Command spec,
    /// "runCursorCommand"). Its setters say what the command cannot: where it goes,
    /// the kind of cursor it opens, and what its getMores carry.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let cursor = db
    ///     .run_cursor_command(doc! { "find": "orders", "batchSize": 10 })
    ///     .batch_size(100)
    ///     .await?;
    /// # let _ = cursor; Ok(()) }
    /// ```
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        RunCursorCommand {
            database: self,
            command: Ok(command),
            options: None,
            session: None,
            timeout: None,
            _session: PhantomData,
        }
    }

    /// [`Database::run_command`] with the command as raw BSON (for instance bytes
    /// read from elsewhere); the reply is a [`Document`]. A command that is not a
    /// valid BSON document fails when awaited, before anything is sent.
    ///
    /// ```no_run
    /// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
    /// use anymongo::bson::rawdoc;
    /// let reply = db.run_raw_command(rawdoc! { "ping": 1 }).await?;
    /// # let _ = reply; Ok(()) }
    /// ```
    pub fn run_raw_command(&self, command: RawDocumentBuf) -> RunCommand<'_> {
        RunCommand {
            command: raw_command(command),
            ..self.run_command(Document::new())
        }
    }

    /// [`Database::run_cursor_command`] with the command as raw BSON.
    pub fn run_raw_cursor_command(&self, command: RawDocumentBuf) -> RunCursorCommand<'_> {
        RunCursorCommand {
            command: raw_command(command),
            ..self.run_cursor_command(Document::new())
        }
    }
}

/// The document of a raw command, or why it is not one.
fn raw_command(command: RawDocumentBuf) -> Result<Document> {
    Document::try_from(command.as_ref()).map_err(|error| {
        Error::invalid_argument(format!("the command is not a valid BSON document: {error}"))
    })
}

/// A command run as given: what [`Database::run_command`] returns. Awaited, it
/// returns the server's reply.
#[must_use = "an action does nothing until it is awaited"]
pub struct RunCommand<'a> {
    database: &'a Database,
    command: Result<Document>,
    options: Option<RunCommandOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
}

impl<'a> RunCommand<'a> {
    option_setters!(options: RunCommandOptions;
        /// Where the command goes; the primary when unset.
        selection_criteria: SelectionCriteria,
    );
    timeout_setter!();
    session_setter!();
}

run_blocking!(impl['a] RunCommand<'a> => Document);

impl<'a> IntoFuture for RunCommand<'a> {
    type Output = Result<Document>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let database = self.database.with_operation_timeout(self.timeout);
            database
                .run_command_in(
                    self.command?,
                    self.options.and_then(|options| options.selection_criteria),
                    self.session,
                )
                .await
        })
    }
}

/// A command that opens a cursor: what [`Database::run_cursor_command`] returns.
/// Awaited, it returns a [`Cursor`] (a [`SessionCursor`] after `.session(…)`).
#[must_use = "an action does nothing until it is awaited"]
pub struct RunCursorCommand<'a, Session = ImplicitSession> {
    database: &'a Database,
    command: Result<Document>,
    options: Option<RunCursorCommandOptions>,
    session: Option<&'a ClientSession>,
    timeout: Option<Duration>,
    _session: PhantomData<Session>,
}

impl<'a, Session> RunCursorCommand<'a, Session> {
    option_setters!(options: RunCursorCommandOptions;
        /// Where the command goes; the primary when unset.
        selection_criteria: SelectionCriteria,
        /// The kind of cursor the command opens (a tailable `find` must say so
        /// itself too).
        cursor_type: CursorType,
        /// `batchSize` of each getMore.
        batch_size: u32,
        /// `maxTimeMS` of each getMore (for a `TailableAwait` cursor, how long each
        /// waits for new data).
        max_time: Duration,
        /// `comment` of each getMore (MongoDB 4.4+).
        comment: impl Into<Bson>,
        /// What `timeoutMS` bounds: each iteration or the cursor's whole life.
        timeout_mode: TimeoutMode,
    );
    timeout_setter!();

    /// Runs the command in `session`; it then returns a [`SessionCursor`].
    pub fn session<'s>(
        self,
        session: impl Into<&'s ClientSession>,
    ) -> RunCursorCommand<'s, ExplicitSession<'s>>
    where
        'a: 's,
    {
        RunCursorCommand {
            database: self.database,
            command: self.command,
            options: self.options,
            session: Some(session.into()),
            timeout: self.timeout,
            _session: PhantomData,
        }
    }

    async fn execute(self) -> Result<Cursor<Document>> {
        let database = self.database.with_operation_timeout(self.timeout);
        database
            .run_cursor_command_in(self.command?, self.options, self.session)
            .await
    }
}

raw_batches!(impl['a] RunCursorCommand<'a, ImplicitSession>, RunCursorCommand<'a, ExplicitSession<'a>>);

run_blocking!(impl['a] RunCursorCommand<'a, ImplicitSession> => crate::sync::Cursor<Document>);

impl<'a> IntoFuture for RunCursorCommand<'a, ImplicitSession> {
    type Output = Result<Cursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(self.execute())
    }
}

run_blocking!(impl['a] RunCursorCommand<'a, ExplicitSession<'a>> => crate::sync::SessionCursor<Document>);

impl<'a> IntoFuture for RunCursorCommand<'a, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.execute().await.map(SessionCursor::new) })
    }
}
