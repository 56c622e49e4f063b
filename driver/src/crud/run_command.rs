//! The Run Command spec: a command run as the application wrote it.

use bson::{Bson, Document};

use crate::concern::{Acknowledgment, WriteConcern};
use crate::cursor::{Batch, Cursor, CursorSpec};
use crate::error::{Error, Result};
use crate::handshake::HelloReply;
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::uri::ReadPreference;

/// `Database::run_command`: the command as given, plus `$db`, `lsid`, `$clusterTime`
/// and `$readPreference`; never retried, no concern added.
pub(crate) struct RunCommand {
    command: Command,
    read_preference: ReadPreference,
    /// `w: 0` in the command: no session id may go with it.
    write_concern: Option<WriteConcern>,
}

impl RunCommand {
    pub fn new(
        database: &str,
        command: Document,
        read_preference: Option<ReadPreference>,
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
            // A command run as given reads from the primary unless told otherwise
            // (Run Command spec, "ReadPreference").
            read_preference: read_preference.unwrap_or_default(),
            write_concern: unacknowledged.then(|| WriteConcern {
                w: Some(Acknowledgment::Nodes(0)),
                ..WriteConcern::default()
            }),
        })
    }
}

impl Operation for RunCommand {
    type Output = Document;

    fn target(&self) -> Target<'_> {
        Target::Read(&self.read_preference)
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        Ok(self.command.clone())
    }

    fn handle_reply(&mut self, reply: Document, _context: ReplyContext<'_>) -> Result<Document> {
        Ok(reply)
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }

    /// The reply is the result (Run Command spec: the command is sent as given).
    fn needs_reply(&self) -> bool {
        true
    }
}

/// `Database::run_cursor_command`: a command whose reply is a cursor.
pub(crate) struct RunCursorCommand {
    inner: RunCommand,
}

impl RunCursorCommand {
    pub fn new(
        database: &str,
        command: Document,
        read_preference: Option<ReadPreference>,
    ) -> Result<RunCursorCommand> {
        Ok(RunCursorCommand {
            inner: RunCommand::new(database, command, read_preference)?,
        })
    }
}

impl Operation for RunCursorCommand {
    type Output = Cursor<Document>;

    fn target(&self) -> Target<'_> {
        self.inner.target()
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        self.inner.build(hello)
    }

    fn handle_reply(&mut self, reply: Document, context: ReplyContext<'_>) -> Result<Self::Output> {
        let batch = Batch::from_reply(&reply, &context.server.address)?;
        let command = &self.inner.command.body;
        let batch_size = command
            .get_document("cursor")
            .ok()
            .and_then(|cursor| cursor.get("batchSize"))
            .and_then(crate::handshake::bson_as_i64)
            .and_then(|size| u32::try_from(size).ok());
        let spec = CursorSpec::new(&context, &self.inner.command.database, "", batch_size);
        Ok(Cursor::new(spec, batch))
    }
}
