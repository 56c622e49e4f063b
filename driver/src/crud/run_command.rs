//! The Run Command spec: a command run as the application wrote it.

use bson::{Bson, Document, RawDocumentBuf};

use super::{CursorType, TimeoutMode};
use crate::concern::{Acknowledgment, WriteConcern};
use crate::cursor::{opens_tailable_cursor, Batch, Cursor, CursorSpec};
use crate::error::{Error, Result};
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::{Access, Command, Operation, ReplyContext, Target};
use crate::retry::Retryability;
use crate::selection::SelectionCriteria;

/// The commands of the driver's helpers that take `readConcern: { afterClusterTime }`
/// (Read and Write Concern spec, "afterClusterTime").
const AFTER_CLUSTER_TIME_WRITES: [&str; 5] = [
    "create",
    "createIndexes",
    "drop",
    "dropDatabase",
    "dropIndexes",
];

/// `Database::run_command`: the command as given, plus `$db`, `lsid`, `$clusterTime`
/// and `$readPreference`; never retried, no concern added.
///
/// The helpers that list databases, collections and indexes send their commands
/// through it too, made [retryable reads](Self::retryable_read).
pub(crate) struct RunCommand {
    command: Command,
    selection_criteria: SelectionCriteria,
    /// The application gave `selection_criteria`.
    read_preference_given: bool,
    /// `w: 0` in the command: no session id may go with it.
    write_concern: Option<WriteConcern>,
    retryability: Retryability,
    /// What the command does: [`Access::Either`] for a command the application gave.
    access: Access,
    /// `rawData` of a helper's command, added when the server knows it.
    raw_data: Option<bool>,
}

impl RunCommand {
    pub fn new(
        database: &str,
        command: Document,
        selection_criteria: Option<SelectionCriteria>,
    ) -> Result<RunCommand> {
        if command.is_empty() {
            return Err(Error::invalid_argument(
                "a command document cannot be empty",
            ));
        }
        let unacknowledged = command
            .get_document("writeConcern")
            .is_ok_and(|concern| matches!(concern.get("w"), Some(Bson::Int32(0) | Bson::Int64(0))));
        Ok(RunCommand {
            command: Command::new(database, command),
            read_preference_given: selection_criteria.is_some(),
            // A command run as given reads from the primary unless told otherwise
            // (Run Command spec, "ReadPreference").
            selection_criteria: selection_criteria.unwrap_or_default(),
            write_concern: unacknowledged.then(|| WriteConcern {
                w: Some(Acknowledgment::Nodes(0)),
                ..WriteConcern::default()
            }),
            retryability: Retryability::None,
            access: Access::Either,
            raw_data: None,
        })
    }

    /// The same command, a write a helper of the driver builds (`create`, `drop`,
    /// `createIndexes`...).
    pub fn write(mut self) -> RunCommand {
        self.access = Access::Write;
        self
    }

    /// The same command as a retryable read: a command a helper of the driver builds
    /// (`listDatabases`, `listCollections`, `listIndexes`: Retryable Reads spec,
    /// "Supported Read Operations"), not one the application wrote.
    pub fn retryable_read(mut self) -> RunCommand {
        self.retryability = Retryability::Read;
        self.access = Access::Read;
        self
    }

    /// The same command with the `rawData` of the helper's options (the index
    /// helpers: Index Management spec, `rawData`), which [`build`](Operation::build)
    /// sends only to servers that know it.
    pub fn with_raw_data(mut self, raw_data: Option<bool>) -> RunCommand {
        self.raw_data = raw_data;
        self
    }
}

impl Operation for RunCommand {
    type Output = Document;

    fn name(&self) -> &str {
        self.command.name()
    }

    fn traced(&self) -> Traced<'_> {
        // A command the application wrote is a runCommand (OpenTelemetry spec,
        // "Operation Span Name"); the driver's helpers run theirs as operations of
        // their own (`createIndexes`, `dropCollection`...).
        let traced = Traced::of_command(&self.command.database, &self.command.body);
        match self.access {
            Access::Either => Traced {
                name: "runCommand",
                ..traced
            },
            _ => traced,
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Read(&self.selection_criteria)
    }

    fn access(&self) -> Access {
        self.access
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let mut command = self.command.clone();
        crate::bson_util::insert_present(&mut command.body, [hello.raw_data_field(self.raw_data)]);
        Ok(command)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: ReplyContext<'_>,
    ) -> Result<Document> {
        crate::connection::reply_document(&reply)
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }

    fn retryability(&self) -> Retryability {
        self.retryability
    }

    fn read_preference_given(&self) -> bool {
        self.read_preference_given
    }

    /// A causally consistent session sends `afterClusterTime` with the writes of the
    /// driver's helpers that take a read concern of only that (Read and Write Concern
    /// spec, "afterClusterTime"), never with a command the application wrote.
    fn supports_read_concern(&self) -> bool {
        self.access == Access::Write && AFTER_CLUSTER_TIME_WRITES.contains(&self.name())
    }

    /// The reply is the result (Run Command spec: the command is sent as given).
    fn needs_reply(&self) -> bool {
        true
    }
}

/// `Database::run_cursor_command`: a command whose reply is a cursor.
pub(crate) struct RunCursorCommand {
    inner: RunCommand,
    get_more: RunCursorCommandOptions,
}

/// Options of [`crate::Database::run_command`] (Run Command spec, "runCommand"):
/// where the command goes, which the command itself cannot say.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq)]
#[builder(field_defaults(default, setter(into)))]
pub struct RunCommandOptions {
    /// Where the command goes; the primary when unset.
    pub selection_criteria: Option<SelectionCriteria>,
}

/// Options of [`crate::Database::run_cursor_command`] (Run Command spec,
/// "runCursorCommand"): where the command goes, what kind of cursor it opens, and what
/// its cursor's getMores carry, which the command itself cannot say. None of them
/// changes the command, which is sent as given.
#[derive(typed_builder::TypedBuilder, Debug, Clone, Default, PartialEq)]
#[builder(field_defaults(default, setter(into)))]
pub struct RunCursorCommandOptions {
    /// Where the command goes; the primary when unset.
    pub selection_criteria: Option<SelectionCriteria>,
    /// The kind of cursor the command opens: `Tailable` or `TailableAwait` when it is a
    /// `find` with `tailable: true` (and `awaitData: true`), which the command must say
    /// itself. A tailable cursor's getMores may answer empty batches while nothing new
    /// arrives: iterate it with [`Cursor::next_if_any`] to see each. A type the
    /// command's fields do not match is undefined behaviour (Run Command spec,
    /// "Tailable and TailableAwait"). Unset, a `find` with `tailable: true` is
    /// tailable all the same.
    pub cursor_type: Option<CursorType>,
    /// `batchSize` of each getMore; the server's default when unset.
    pub batch_size: Option<u32>,
    /// `maxTimeMS` of each getMore, whatever the cursor type: for a `TailableAwait`
    /// cursor, how long each getMore waits for new data. MongoDB refuses it on the
    /// getMore of a cursor opened without `awaitData` (Find, getMore and killCursors
    /// Commands spec, "Tailable cursors"). A `maxTimeMS` in the command itself bounds
    /// that command only.
    pub max_time: Option<std::time::Duration>,
    /// `comment` of each getMore (MongoDB 4.4+).
    pub comment: Option<Bson>,
    /// What `timeoutMS` bounds; needs timeoutMS (Client Side Operations Timeout
    /// spec, "Cursors").
    pub timeout_mode: Option<TimeoutMode>,
}

impl RunCursorCommand {
    pub fn new(
        database: &str,
        command: Document,
        selection_criteria: Option<SelectionCriteria>,
    ) -> Result<RunCursorCommand> {
        Ok(RunCursorCommand::from(RunCommand::new(
            database,
            command,
            selection_criteria,
        )?))
    }

    /// Whether the cursor is tailable: the command says so (a `find` with `tailable:
    /// true`) or the options' cursor type does.
    fn opens_tailable_cursor(&self) -> bool {
        opens_tailable_cursor(&self.inner.command.body)
            || matches!(
                self.get_more.cursor_type,
                Some(CursorType::Tailable | CursorType::TailableAwait)
            )
    }

    /// Refuses options that contradict timeoutMS (`timeout`).
    pub fn check_timeout(&self, timeout: Option<std::time::Duration>) -> Result<()> {
        crate::cursor::check_cursor_timeout(
            timeout,
            self.get_more.timeout_mode,
            self.opens_tailable_cursor(),
            None,
            false,
        )
    }

    /// This command, its getMores carrying what `options` say of them.
    pub fn with_get_more(mut self, options: RunCursorCommandOptions) -> RunCursorCommand {
        self.get_more = options;
        self
    }
}

impl From<RunCommand> for RunCursorCommand {
    fn from(inner: RunCommand) -> RunCursorCommand {
        RunCursorCommand {
            inner,
            get_more: RunCursorCommandOptions::default(),
        }
    }
}

impl Operation for RunCursorCommand {
    type Output = Cursor<Document>;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn traced(&self) -> Traced<'_> {
        // The helpers' cursor commands (listCollections, listIndexes) keep their names.
        let traced = self.inner.traced();
        match traced.name {
            "runCommand" => Traced {
                name: "runCursorCommand",
                ..traced
            },
            _ => traced,
        }
    }

    fn target(&self) -> Target<'_> {
        self.inner.target()
    }

    fn access(&self) -> Access {
        self.inner.access()
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        self.inner.build(hello)
    }

    fn retryability(&self) -> Retryability {
        self.inner.retryability()
    }

    fn read_preference_given(&self) -> bool {
        self.inner.read_preference_given()
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output> {
        let batch = Batch::from_reply(reply, &context.server.address)?;
        let command = &self.inner.command.body;
        // Without a getMore batch size, a listing helper's getMores keep the size its
        // command asked for in `cursor.batchSize`.
        let batch_size = self.get_more.batch_size.or_else(|| {
            command
                .get_document("cursor")
                .ok()
                .and_then(|cursor| cursor.get("batchSize"))
                .and_then(crate::bson_util::as_i64)
                .and_then(|size| u32::try_from(size).ok())
        });
        let mut spec = CursorSpec::new(&context, &self.inner.command.database, "", batch_size);
        spec.max_await_time = self.get_more.max_time;
        spec.comment = self.get_more.comment.clone();
        spec.tailable = self.opens_tailable_cursor();
        spec.iteration =
            spec.tailable || self.get_more.timeout_mode == Some(TimeoutMode::Iteration);
        Ok(Cursor::new(spec, batch))
    }

    /// Iterated with a timeoutMS for each iteration, or tailable without awaiting
    /// data, the command goes without a `maxTimeMS` (Client Side Operations Timeout
    /// spec, "Cursors").
    fn sends_max_time(&self) -> bool {
        let tailable_only = self.get_more.cursor_type == Some(CursorType::Tailable)
            || (self.opens_tailable_cursor()
                && !self
                    .inner
                    .command
                    .body
                    .get_bool("awaitData")
                    .unwrap_or(false)
                && self.get_more.cursor_type != Some(CursorType::TailableAwait));
        self.get_more.timeout_mode != Some(TimeoutMode::Iteration) && !tailable_only
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn cursor_command(command: Document, cursor_type: Option<CursorType>) -> RunCursorCommand {
        let options = RunCursorCommandOptions {
            cursor_type,
            ..RunCursorCommandOptions::default()
        };
        RunCursorCommand::new("db", command, None)
            .unwrap()
            .with_get_more(options)
    }

    /// Index Management spec, `rawData` of createIndexes, dropIndexes and
    /// listIndexes, which the index helpers send through a `RunCommand`: added when
    /// set, for MongoDB 8.2+ only.
    #[test]
    fn a_helpers_raw_data_goes_to_servers_that_know_it() {
        let hello = |max_wire_version| HelloReply {
            max_wire_version,
            ..HelloReply::default()
        };
        let command = doc! { "dropIndexes": "coll", "index": "*" };
        let mut run = RunCommand::new("db", command.clone(), None)
            .unwrap()
            .write()
            .with_raw_data(Some(true));
        let mut sent = command.clone();
        sent.insert("rawData", true);
        assert_eq!(run.build(&hello(27)).unwrap().body, sent);
        assert_eq!(run.build(&hello(25)).unwrap().body, command);
        let mut listing = RunCursorCommand::from(
            RunCommand::new("db", doc! { "listIndexes": "coll" }, None)
                .unwrap()
                .retryable_read()
                .with_raw_data(Some(false)),
        );
        let body = listing.build(&hello(27)).unwrap().body;
        assert_eq!(body.get("rawData"), Some(&Bson::Boolean(false)));
        // A command the application wrote is sent as given.
        let mut given = RunCommand::new("db", command.clone(), None).unwrap();
        assert_eq!(given.build(&hello(27)).unwrap().body, command);
    }

    #[test]
    fn the_command_or_the_cursor_type_makes_the_cursor_tailable() {
        let tailable_find = doc! { "find": "capped", "tailable": true };
        let find = doc! { "find": "capped" };
        assert!(cursor_command(tailable_find.clone(), None).opens_tailable_cursor());
        assert!(
            cursor_command(tailable_find, Some(CursorType::NonTailable)).opens_tailable_cursor()
        );
        assert!(cursor_command(find.clone(), Some(CursorType::Tailable)).opens_tailable_cursor());
        assert!(
            cursor_command(find.clone(), Some(CursorType::TailableAwait)).opens_tailable_cursor()
        );
        assert!(!cursor_command(find.clone(), None).opens_tailable_cursor());
        assert!(!cursor_command(find, Some(CursorType::NonTailable)).opens_tailable_cursor());
    }

    #[test]
    fn the_cursor_type_leaves_the_command_as_given() {
        let command = doc! { "find": "capped", "tailable": true, "awaitData": true };
        let mut operation = cursor_command(command.clone(), Some(CursorType::TailableAwait));
        let sent = operation.build(&HelloReply::default()).unwrap();
        assert_eq!(sent.body, command);
    }
}
