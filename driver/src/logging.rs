//! Logging (logging.md) through the [`tracing`] crate: the structured log messages
//! of Command Logging and Monitoring, Connection Monitoring and Pooling, Server
//! Discovery and Monitoring and Server Selection, each at the level its
//! specification names, with the exact field names it lists.
//!
//! Each of the spec's components is a `tracing` target, so a subscriber chooses the
//! minimum level per component the way it filters any crate (logging.md,
//! "Per-Component Configuration of Log Levels"; the spec prefers the ecosystem's own
//! configuration to environment variables):
//!
//! | Component         | Target                          |
//! | ----------------- | ------------------------------- |
//! | `command`         | [`COMMAND`]: `anymongo::command` |
//! | `topology`        | [`TOPOLOGY`]: `anymongo::topology` |
//! | `serverSelection` | [`SERVER_SELECTION`]: `anymongo::server_selection` |
//! | `connection`      | [`CONNECTION`]: `anymongo::connection` |
//!
//! For example, with `tracing-subscriber`'s `EnvFilter`,
//! `RUST_LOG=anymongo::command=debug,anymongo::connection=debug` logs commands and
//! connection pools. Nothing is logged, and no message is built, unless a subscriber
//! enables the target.
//!
//! Every message carries the spec's fields plus `topologyId`, the client's topology
//! id (the SDAM messages' common field), so that the messages of several clients in
//! one process can be told apart. Documents are relaxed extended JSON, truncated to
//! [`ClientConfig::log_max_document_length`](crate::client::ClientConfig) bytes
//! (default [`DEFAULT_MAX_DOCUMENT_LENGTH`]) with `...` appended (logging.md,
//! "Configurable Max Document Length").
//!
//! Messages that correspond to events are logged by a listener on those events
//! (`logged`), as the specs allow ("Drivers MAY implement … logging support via an
//! event subscriber"), so the two always agree.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};
use tracing::Level;

use crate::event::cmap::{
    CmapEvent, ConnectionCheckedInEvent, ConnectionCheckedOutEvent, ConnectionCheckoutFailedEvent,
    ConnectionCheckoutFailedReason, ConnectionClosedEvent, ConnectionClosedReason,
    ConnectionCreatedEvent, ConnectionReadyEvent, PoolClearedEvent, PoolCreatedEvent,
};
use crate::event::command::CommandEvent;
use crate::event::sdam::{
    SdamEvent, ServerClosedEvent, ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent, ServerOpeningEvent,
};
use crate::event::{EventHandler, EventListener};
use crate::rt::{MaybeSend, MaybeSync, Spawner};
use crate::uri::ServerAddress;

/// The `tracing` target of the `command` component (command monitoring messages).
pub const COMMAND: &str = "anymongo::command";
/// The `tracing` target of the `topology` component (SDAM messages).
pub const TOPOLOGY: &str = "anymongo::topology";
/// The `tracing` target of the `serverSelection` component.
pub const SERVER_SELECTION: &str = "anymongo::server_selection";
/// The `tracing` target of the `connection` component (connection pool messages), the
/// hosts' too: defined in `anymongo-rt`, which they depend on.
pub use anymongo_rt::logging::CONNECTION;

/// The default maximum length of a document in a log message, in bytes of its
/// extended JSON (logging.md: "The default max length is 1000").
pub const DEFAULT_MAX_DOCUMENT_LENGTH: usize = 1000;

/// What every log message of one client shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogContext {
    /// The client's topology id, sent as `topologyId`.
    pub topology_id: ObjectId,
    /// The longest document text logged, in bytes.
    pub max_document_length: usize,
}

impl LogContext {
    /// `document` as relaxed extended JSON, truncated.
    fn json(&self, document: &Document) -> String {
        let json = Bson::Document(document.clone())
            .into_relaxed_extjson()
            .to_string();
        truncate(json, self.max_document_length)
    }

    fn topology_id(&self) -> String {
        self.topology_id.to_hex()
    }
}

/// `text` cut to at most `max` bytes — on a character boundary, never inside a code
/// point — with `...` appended when anything was cut (logging.md, "Configurable Max
/// Document Length": naive truncation, the ellipsis not counted).
pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("...");
    text
}

/// A duration in milliseconds, as the messages' `durationMS` (a double: the specs
/// allow Int32, Int64 or Double).
fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// An event that is also a log message.
pub(crate) trait LogMessage {
    /// Whether a subscriber wants the component's messages at their level.
    fn enabled() -> bool;
    /// Logs the message.
    fn log(&self, context: &LogContext);
}

/// A listener that logs each event, then hands it to `handler` (an async callback's
/// future going to `spawner`). Events are built when either wants them.
pub(crate) fn logged<E: LogMessage + MaybeSend + MaybeSync + 'static>(
    handler: Option<EventHandler<E>>,
    spawner: Option<Arc<dyn Spawner>>,
    context: LogContext,
) -> EventHandler<E> {
    EventHandler::Listener(Arc::new(Logged {
        handler,
        spawner,
        context,
        events: PhantomData,
    }))
}

struct Logged<E> {
    handler: Option<EventHandler<E>>,
    spawner: Option<Arc<dyn Spawner>>,
    context: LogContext,
    events: PhantomData<fn(&E)>,
}

impl<E: LogMessage + MaybeSend + MaybeSync + 'static> EventListener<E> for Logged<E> {
    fn handle(&self, event: E) {
        if E::enabled() {
            event.log(&self.context);
        }
        if let Some(handler) = &self.handler {
            handler.handle(event, self.spawner.as_ref());
        }
    }

    fn is_listening(&self) -> bool {
        self.handler
            .as_ref()
            .is_some_and(EventHandler::is_listening)
            || E::enabled()
    }
}

/// Command Logging and Monitoring, "Log Messages": debug level, `command` component.
impl LogMessage for CommandEvent {
    fn enabled() -> bool {
        tracing::enabled!(target: COMMAND, Level::DEBUG)
    }

    fn log(&self, context: &LogContext) {
        let topology_id = context.topology_id();
        let connection = self.connection();
        let address = &connection.address;
        let service_id = self.service_id().map(|id| id.to_hex());
        // The common fields (spec "Common Fields"), then each message's own.
        macro_rules! command_message {
            ($message:literal, $($field:ident = $value:expr),*) => {
                tracing::debug!(
                    target: COMMAND,
                    topologyId = topology_id.as_str(),
                    commandName = self.command_name(),
                    databaseName = self.db(),
                    requestId = self.request_id(),
                    operationId = self.operation_id(),
                    driverConnectionId = connection.id,
                    serverConnectionId = connection.server_id,
                    serverHost = address.host(),
                    serverPort = address.tcp_port(),
                    serviceId = service_id.as_deref(),
                    $($field = $value,)*
                    $message
                )
            };
        }
        match self {
            CommandEvent::Started(event) => command_message!(
                "Command started",
                command = context.json(&event.command).as_str()
            ),
            CommandEvent::Succeeded(event) => command_message!(
                "Command succeeded",
                durationMS = millis(event.duration),
                reply = context.json(&event.reply).as_str()
            ),
            CommandEvent::Failed(event) => command_message!(
                "Command failed",
                durationMS = millis(event.duration),
                failure = truncate(event.failure.to_string(), context.max_document_length).as_str()
            ),
        }
    }
}

/// The spec's text for why a connection was closed (CMAP, "Connection Closed
/// Message").
fn closed_reason(reason: ConnectionClosedReason) -> &'static str {
    match reason {
        ConnectionClosedReason::Stale => "Connection became stale because the pool was cleared",
        ConnectionClosedReason::Idle => {
            "Connection has been available but unused for longer than the configured max idle time"
        }
        ConnectionClosedReason::Error | ConnectionClosedReason::Dropped => {
            "An error occurred while using the connection"
        }
        ConnectionClosedReason::PoolClosed => "Connection pool was closed",
    }
}

/// The spec's text for why a check-out failed (CMAP, "Connection Checkout Failed
/// Message").
fn check_out_failed_reason(reason: ConnectionCheckoutFailedReason) -> &'static str {
    match reason {
        ConnectionCheckoutFailedReason::Timeout => {
            "Wait queue timeout elapsed without a connection becoming available"
        }
        ConnectionCheckoutFailedReason::ConnectionError => {
            "An error occurred while trying to establish a new connection"
        }
        ConnectionCheckoutFailedReason::PoolClosed => "Connection pool was closed",
    }
}

/// Connection Monitoring and Pooling, "Connection Pool Logging": debug level,
/// `connection` component.
impl LogMessage for CmapEvent {
    fn enabled() -> bool {
        tracing::enabled!(target: CONNECTION, Level::DEBUG)
    }

    fn log(&self, context: &LogContext) {
        let topology_id = context.topology_id();
        let address = self.address();
        macro_rules! connection_message {
            ($message:literal $(, $field:ident = $value:expr)*) => {
                tracing::debug!(
                    target: CONNECTION,
                    topologyId = topology_id.as_str(),
                    serverHost = address.host(),
                    serverPort = address.tcp_port(),
                    $($field = $value,)*
                    $message
                )
            };
        }
        match self {
            CmapEvent::PoolCreated(PoolCreatedEvent { options, .. }) => {
                // A pool always reports its options; a missing field logs as absent.
                let options = options.clone().unwrap_or_default();
                connection_message!(
                    "Connection pool created",
                    maxIdleTimeMS = options.max_idle_time.map(|idle| idle.as_millis() as u64),
                    minPoolSize = options.min_pool_size,
                    maxPoolSize = options.max_pool_size,
                    maxConnecting = options.max_connecting,
                    waitQueueTimeoutMS = options
                        .wait_queue_timeout
                        .map(|timeout| timeout.as_millis() as u64)
                )
            }
            CmapEvent::PoolReady(_) => connection_message!("Connection pool ready"),
            CmapEvent::PoolCleared(PoolClearedEvent { service_id, .. }) => connection_message!(
                "Connection pool cleared",
                serviceId = service_id.map(|id| id.to_hex()).as_deref()
            ),
            CmapEvent::PoolClosed(_) => connection_message!("Connection pool closed"),
            CmapEvent::ConnectionCreated(ConnectionCreatedEvent { connection_id, .. }) => {
                connection_message!("Connection created", driverConnectionId = connection_id)
            }
            CmapEvent::ConnectionReady(ConnectionReadyEvent {
                connection_id,
                duration,
                ..
            }) => connection_message!(
                "Connection ready",
                driverConnectionId = connection_id,
                durationMS = millis(*duration)
            ),
            CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                connection_id,
                reason,
                ..
            }) => connection_message!(
                "Connection closed",
                driverConnectionId = connection_id,
                reason = closed_reason(*reason),
                // The pool learns that a connection failed, not how: its user
                // reports the error itself (command failed, heartbeat failed).
                error = (*reason == ConnectionClosedReason::Error)
                    .then_some("the connection failed while in use")
            ),
            CmapEvent::ConnectionCheckoutStarted(_) => {
                connection_message!("Connection checkout started")
            }
            CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
                reason,
                duration,
                error,
                ..
            }) => connection_message!(
                "Connection checkout failed",
                reason = check_out_failed_reason(*reason),
                error = error.as_ref().map(ToString::to_string).as_deref(),
                durationMS = millis(*duration)
            ),
            CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                connection_id,
                duration,
                ..
            }) => connection_message!(
                "Connection checked out",
                driverConnectionId = connection_id,
                durationMS = millis(*duration)
            ),
            CmapEvent::ConnectionCheckedIn(ConnectionCheckedInEvent { connection_id, .. }) => {
                connection_message!("Connection checked in", driverConnectionId = connection_id)
            }
        }
    }
}

/// Server Discovery and Monitoring, "Log Messages": debug level, `topology`
/// component. ServerDescriptionChanged has no message (the spec: it is redundant
/// with "Topology description changed").
impl LogMessage for SdamEvent {
    fn enabled() -> bool {
        tracing::enabled!(target: TOPOLOGY, Level::DEBUG)
    }

    fn log(&self, context: &LogContext) {
        let topology_id = context.topology_id();
        macro_rules! topology_message {
            ($message:literal $(, $field:ident = $value:expr)*) => {
                tracing::debug!(
                    target: TOPOLOGY,
                    topologyId = topology_id.as_str(),
                    $($field = $value,)*
                    $message
                )
            };
        }
        match self {
            SdamEvent::TopologyOpening(_) => topology_message!("Starting topology monitoring"),
            SdamEvent::TopologyClosed(_) => topology_message!("Stopped topology monitoring"),
            SdamEvent::TopologyDescriptionChanged(changed) => topology_message!(
                "Topology description changed",
                previousDescription = changed.previous_description.to_string().as_str(),
                newDescription = changed.new_description.to_string().as_str()
            ),
            SdamEvent::ServerOpening(ServerOpeningEvent { address, .. }) => topology_message!(
                "Starting server monitoring",
                serverHost = address.host(),
                serverPort = address.tcp_port()
            ),
            SdamEvent::ServerClosed(ServerClosedEvent { address, .. }) => topology_message!(
                "Stopped server monitoring",
                serverHost = address.host(),
                serverPort = address.tcp_port()
            ),
            SdamEvent::ServerDescriptionChanged(_) => {}
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                server_address: address,
                driver_connection_id,
                server_connection_id,
                awaited,
            }) => topology_message!(
                "Server heartbeat started",
                serverHost = address.host(),
                serverPort = address.tcp_port(),
                driverConnectionId = *driver_connection_id,
                serverConnectionId = *server_connection_id,
                awaited = *awaited
            ),
            SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                server_address: address,
                driver_connection_id,
                server_connection_id,
                duration,
                reply,
                awaited,
            }) => topology_message!(
                "Server heartbeat succeeded",
                serverHost = address.host(),
                serverPort = address.tcp_port(),
                driverConnectionId = *driver_connection_id,
                serverConnectionId = *server_connection_id,
                awaited = *awaited,
                durationMS = millis(*duration),
                reply = context.json(reply).as_str()
            ),
            SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                server_address: address,
                driver_connection_id,
                server_connection_id,
                duration,
                failure,
                awaited,
            }) => topology_message!(
                "Server heartbeat failed",
                serverHost = address.host(),
                serverPort = address.tcp_port(),
                driverConnectionId = *driver_connection_id,
                serverConnectionId = *server_connection_id,
                awaited = *awaited,
                durationMS = millis(*duration),
                failure = failure.to_string().as_str()
            ),
        }
    }
}

/// Server selection's log messages (server-selection.md, "Logging"), which have no
/// events: one [`SelectionLog`] per selection.
pub(crate) struct SelectionLog<'a> {
    /// The command the server is selected for, as the `operation` field.
    pub operation: &'a str,
    /// The operation's id, as `operationId`.
    pub operation_id: i32,
    /// The read preference or other criteria, as `selector`.
    pub selector: String,
    pub context: LogContext,
    /// Whether "Waiting for suitable server to become available" was logged (the
    /// spec: once per operation).
    waited: bool,
}

impl<'a> SelectionLog<'a> {
    /// The log of one selection; `None` when no subscriber wants its messages (at
    /// info, the level of its least verbose one), so that nothing is formatted for
    /// nobody.
    pub fn new(
        operation: &'a str,
        operation_id: i32,
        selector: impl FnOnce() -> String,
        context: LogContext,
    ) -> Option<SelectionLog<'a>> {
        tracing::enabled!(target: SERVER_SELECTION, Level::INFO).then(|| SelectionLog {
            operation,
            operation_id,
            selector: selector(),
            context,
            waited: false,
        })
    }
}

/// Logs one of the selection messages at `level` with the common fields (spec
/// "Common Fields"): `topology` is the description at the time.
macro_rules! selection_message {
    ($level:expr, $log:expr, $topology:expr, $message:literal $(, $field:ident = $value:expr)*) => {
        tracing::event!(
            target: SERVER_SELECTION,
            $level,
            topologyId = $log.context.topology_id().as_str(),
            selector = $log.selector.as_str(),
            operationId = $log.operation_id,
            operation = $log.operation,
            topologyDescription = $topology,
            $($field = $value,)*
            $message
        )
    };
}

impl SelectionLog<'_> {
    /// "Server selection started".
    pub fn started(&self, topology: &dyn std::fmt::Display) {
        selection_message!(
            Level::DEBUG,
            self,
            topology.to_string().as_str(),
            "Server selection started"
        );
    }

    /// "Waiting for suitable server to become available", the first time only, at
    /// info (server-selection.md, "Waiting for suitable server to become available"
    /// message; pymongo's copy of the replica-set logging test, which expects debug,
    /// is older: the runners read the current one, `tests/data/specs/current`).
    pub fn waiting(&mut self, topology: &dyn std::fmt::Display, remaining: Duration) {
        if std::mem::replace(&mut self.waited, true) {
            return;
        }
        selection_message!(
            Level::INFO,
            self,
            topology.to_string().as_str(),
            "Waiting for suitable server to become available",
            remainingTimeMS = remaining.as_millis() as u64
        );
    }

    /// "Server selection succeeded".
    pub fn succeeded(&self, topology: &dyn std::fmt::Display, address: &ServerAddress) {
        selection_message!(
            Level::DEBUG,
            self,
            topology.to_string().as_str(),
            "Server selection succeeded",
            serverHost = address.host(),
            serverPort = address.tcp_port()
        );
    }

    /// "Server selection failed".
    pub fn failed(&self, topology: &dyn std::fmt::Display, failure: &crate::Error) {
        selection_message!(
            Level::DEBUG,
            self,
            topology.to_string().as_str(),
            "Server selection failed",
            failure = failure.to_string().as_str()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_cuts_on_a_character_boundary_and_marks_the_cut() {
        assert_eq!(truncate("short".into(), 10), "short");
        assert_eq!(truncate("exactly10!".into(), 10), "exactly10!");
        assert_eq!(truncate("a longer text".into(), 8), "a longer...");
        // "é" is two bytes: a cut inside it rounds down.
        assert_eq!(truncate("abcé".into(), 4), "abc...");
        assert_eq!(truncate("abcé".into(), 5), "abcé");
    }

    #[test]
    fn documents_are_relaxed_extended_json() {
        let context = LogContext {
            topology_id: ObjectId::new(),
            max_document_length: DEFAULT_MAX_DOCUMENT_LENGTH,
        };
        let json = context.json(&bson::doc! { "find": "c", "limit": 1_i64, "x": 1.5 });
        assert_eq!(json, r#"{"find":"c","limit":1,"x":1.5}"#);
        let short = LogContext {
            max_document_length: 5,
            ..context
        };
        assert_eq!(short.json(&bson::doc! { "find": "c" }), r#"{"fin..."#);
    }
}
