//! The command monitoring events (Command Logging and Monitoring spec), with the
//! official crate's names and fields: one event when an application command starts,
//! one when it succeeds or fails. They are emitted by the connection layer
//! (`command_monitoring`) to the client's
//! [`command_event_handler`](crate::options::ClientOptions::command_event_handler).

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;

use crate::error::Error;
use crate::event::EventHandler;
use crate::rt::{MaybeSend, MaybeSync};
use crate::uri::ServerAddress;

/// A command monitoring event.
///
/// ```
/// use anymongo::event::command::CommandEvent;
///
/// fn show(event: CommandEvent) {
///     match event {
///         CommandEvent::Started(started) => println!("{} {}", started.command_name, started.command),
///         CommandEvent::Succeeded(done) => println!("{} took {:?}", done.command_name, done.duration),
///         CommandEvent::Failed(failed) => println!("{} failed: {}", failed.command_name, failed.failure),
///         _ => {}
///     }
/// }
/// ```
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CommandEvent {
    /// A command is about to be sent.
    Started(CommandStartedEvent),
    /// The server answered `ok: 1`.
    Succeeded(CommandSucceededEvent),
    /// The server answered `ok: 0`, or sending or reading failed.
    Failed(CommandFailedEvent),
}

/// The fields every event of one command has, whichever event it is.
macro_rules! shared_field {
    ($event:expr, $field:ident) => {
        match $event {
            CommandEvent::Started(event) => &event.$field,
            CommandEvent::Succeeded(event) => &event.$field,
            CommandEvent::Failed(event) => &event.$field,
        }
    };
}

/// anymongo addition: the fields the three events share, whichever this is.
impl CommandEvent {
    /// The command's name, e.g. `"find"`.
    pub fn command_name(&self) -> &str {
        shared_field!(self, command_name)
    }

    /// The database the command ran against (`$db`).
    pub fn db(&self) -> &str {
        shared_field!(self, db)
    }

    /// The wire protocol request id, the same in the started and the finishing event.
    pub fn request_id(&self) -> i32 {
        *shared_field!(self, request_id)
    }

    /// The request id of the operation's first command.
    pub fn operation_id(&self) -> i32 {
        *shared_field!(self, operation_id)
    }

    /// The connection the command was sent on.
    pub fn connection(&self) -> &ConnectionInfo {
        shared_field!(self, connection)
    }

    /// Load-balanced mode: the service behind the load balancer.
    pub fn service_id(&self) -> Option<ObjectId> {
        *shared_field!(self, service_id)
    }
}

/// A connection, as command events name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The connection's id in the driver's pool.
    pub id: u32,
    /// The server's id of the connection (`connectionId` of its hello reply), to find
    /// it in the server's logs.
    pub server_id: Option<i64>,
    /// The server.
    pub address: ServerAddress,
}

/// A command is about to be sent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandStartedEvent {
    /// The command document (empty for a command that carries credentials).
    pub command: Document,
    /// The database it runs against (`$db`).
    pub db: String,
    /// The command's name: the first key of its document, e.g. `"find"`.
    pub command_name: String,
    /// The wire protocol request id; the same in the command's finishing event.
    pub request_id: i32,
    /// The connection it is sent on.
    pub connection: ConnectionInfo,
    /// Load-balanced mode: the service behind the load balancer (Load Balancer spec,
    /// "Events").
    pub service_id: Option<ObjectId>,
    /// anymongo addition: links the commands of one operation (a bulk write's
    /// batches, a cursor's getMores); the request id of the operation's first command.
    pub operation_id: i32,
}

/// The server answered `ok: 1`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandSucceededEvent {
    /// From just before sending to the reply in.
    pub duration: Duration,
    /// The reply (empty for a command that carries credentials).
    pub reply: Document,
    /// The command's name, e.g. `"find"`.
    pub command_name: String,
    /// The request id of the command's started event.
    pub request_id: i32,
    /// The connection it was sent on.
    pub connection: ConnectionInfo,
    /// Load-balanced mode: the service behind the load balancer.
    pub service_id: Option<ObjectId>,
    /// anymongo addition: the database it ran against, as the started event's `db`.
    pub db: String,
    /// anymongo addition: the request id of the operation's first command.
    pub operation_id: i32,
}

/// The command failed: an `ok: 0` reply, or a network error or timeout.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandFailedEvent {
    /// From just before sending to the failure.
    pub duration: Duration,
    /// The command's name, e.g. `"find"`.
    pub command_name: String,
    /// The error; for a command that carries credentials, a server error keeps only
    /// its code, code name and labels.
    #[serde(serialize_with = "super::error_as_message")]
    pub failure: Error,
    /// The request id of the command's started event.
    pub request_id: i32,
    /// The connection it was sent on.
    pub connection: ConnectionInfo,
    /// Load-balanced mode: the service behind the load balancer.
    pub service_id: Option<ObjectId>,
    /// anymongo addition: the database it ran against, as the started event's `db`.
    pub db: String,
    /// anymongo addition: the request id of the operation's first command.
    pub operation_id: i32,
}

/// The official crate's older way to receive command events, deprecated there too: a
/// type with one method per event, passed as an `Arc` where an [`EventHandler`] is
/// expected (`ClientOptions::builder().command_event_handler(Arc::new(handler))`).
/// Use [`EventHandler::callback`].
#[deprecated = "use the EventHandler API"]
pub trait CommandEventHandler: MaybeSend + MaybeSync {
    /// Called when a command is about to be sent.
    fn handle_command_started_event(&self, _event: CommandStartedEvent) {}

    /// Called when a command succeeded.
    fn handle_command_succeeded_event(&self, _event: CommandSucceededEvent) {}

    /// Called when a command failed.
    fn handle_command_failed_event(&self, _event: CommandFailedEvent) {}
}

#[allow(deprecated)]
impl<T: CommandEventHandler + 'static> From<Arc<T>> for EventHandler<CommandEvent> {
    fn from(handler: Arc<T>) -> Self {
        EventHandler::callback(move |event| match event {
            CommandEvent::Started(event) => handler.handle_command_started_event(event),
            CommandEvent::Succeeded(event) => handler.handle_command_succeeded_event(event),
            CommandEvent::Failed(event) => handler.handle_command_failed_event(event),
        })
    }
}
