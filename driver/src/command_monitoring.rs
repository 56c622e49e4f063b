//! Command Logging and Monitoring (command-logging-and-monitoring.md): an event when
//! an application command starts, and one when it succeeds or fails, with the
//! request and operation ids, the connection, the duration, and the spec's redaction
//! of commands and replies that carry credentials ("Security").
//!
//! Handshakes, authentication conversations of new connections and monitoring
//! checks are not application commands and produce no events.

use bson::oid::ObjectId;
use bson::{Document, RawDocument};

use crate::error::{CommandError, Error, ErrorKind};
use crate::event::command::{
    CommandEvent, CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, ConnectionInfo,
};
use crate::event::{EventHandler, EventSink};
use crate::rt::{Clock, Instant};

/// What the events of one command share, as the operation that sends it knows them.
#[derive(Debug, Clone)]
pub(crate) struct CommandInfo {
    /// The command's name: the first key of its document, e.g. `"find"`.
    pub command_name: String,
    /// The database it runs against (`$db`).
    pub db: String,
    /// The wire protocol request id.
    pub request_id: i32,
    /// The request id of the operation's first command.
    pub operation_id: i32,
    /// The connection it is sent on.
    pub connection: ConnectionInfo,
    /// Load-balanced mode: the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

/// The commands whose documents and replies are never shown (spec, "Security").
const SENSITIVE_COMMANDS: [&str; 9] = [
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

/// Whether the events of `command` (named `command_name`) must be redacted: a
/// credential command, or a hello carrying `speculativeAuthenticate`.
pub fn is_sensitive(command_name: &str, command: &Document) -> bool {
    let name = command_name.to_ascii_lowercase();
    SENSITIVE_COMMANDS.contains(&name.as_str())
        || (matches!(name.as_str(), "hello" | "ismaster")
            && command.contains_key("speculativeAuthenticate"))
}

/// Publishes the events of a client's commands.
pub(crate) struct CommandMonitor {
    sink: EventSink<CommandEvent>,
}

/// One command in flight, between its started and its finishing event. Dropped
/// unfinished (its operation was abandoned mid-command), it reports the command
/// failed: every started event has its ending (spec, "Guarantees").
pub(crate) struct InFlight<'a> {
    monitor: &'a CommandMonitor,
    clock: &'a dyn Clock,
    started: Instant,
    /// The command's shared fields and whether it is sensitive; `None` once finished.
    command: Option<(CommandInfo, bool)>,
}

impl CommandMonitor {
    pub fn new(handler: Option<EventHandler<CommandEvent>>) -> CommandMonitor {
        CommandMonitor {
            sink: EventSink::new(handler),
        }
    }

    /// Whether anyone listens: a command need not be prepared for display otherwise.
    pub fn is_listened(&self) -> bool {
        self.sink.is_listened()
    }

    /// Announces `command`; `info` is only built when someone listens.
    pub fn started<'a>(
        &'a self,
        command: &Document,
        clock: &'a dyn Clock,
        info: impl FnOnce() -> CommandInfo,
    ) -> InFlight<'a> {
        let command = self.sink.is_listened().then(|| {
            let info = info();
            let sensitive = is_sensitive(&info.command_name, command);
            let shown = match sensitive {
                true => Document::new(),
                false => command.clone(),
            };
            self.sink
                .publish([CommandEvent::Started(CommandStartedEvent {
                    command: shown,
                    db: info.db.clone(),
                    command_name: info.command_name.clone(),
                    request_id: info.request_id,
                    connection: info.connection.clone(),
                    service_id: info.service_id,
                    operation_id: info.operation_id,
                })]);
            (info, sensitive)
        });
        InFlight {
            monitor: self,
            clock,
            started: clock.now(),
            command,
        }
    }
}

impl InFlight<'_> {
    /// Reports how the command ended.
    pub fn finish(mut self, outcome: std::result::Result<&RawDocument, &Error>) {
        let Some((info, sensitive)) = self.command.take() else {
            return;
        };
        let duration = self.clock.now() - self.started;
        let event = match outcome {
            Ok(reply) => CommandEvent::Succeeded(CommandSucceededEvent {
                duration,
                // The reply was validated when it was read; a document that still
                // cannot be shown is shown empty rather than failing the operation.
                reply: match sensitive {
                    true => Document::new(),
                    false => Document::try_from(reply).unwrap_or_default(),
                },
                command_name: info.command_name,
                request_id: info.request_id,
                connection: info.connection,
                service_id: info.service_id,
                db: info.db,
                operation_id: info.operation_id,
            }),
            Err(error) => CommandEvent::Failed(CommandFailedEvent {
                duration,
                command_name: info.command_name,
                failure: match sensitive {
                    true => redact(error),
                    false => error.clone(),
                },
                request_id: info.request_id,
                connection: info.connection,
                service_id: info.service_id,
                db: info.db,
                operation_id: info.operation_id,
            }),
        };
        self.monitor.sink.publish([event]);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.command.is_some() {
            let abandoned = Error::network(
                self.command
                    .as_ref()
                    .map(|(info, _)| info.connection.address.to_string())
                    .unwrap_or_default(),
                std::io::ErrorKind::Interrupted,
                "the operation was abandoned before the reply came; the connection is closed"
                    .to_owned(),
            );
            let in_flight = InFlight {
                monitor: self.monitor,
                clock: self.clock,
                started: self.started,
                command: self.command.take(),
            };
            in_flight.finish(Err(&abandoned));
        }
    }
}

/// A server error reduced to its code, code name and labels (spec, "Security").
fn redact(error: &Error) -> Error {
    match &*error.kind {
        ErrorKind::Command(command) => Error::from(CommandError {
            code: command.code,
            code_name: command.code_name.clone(),
            message: String::new(),
            error_labels: command.error_labels.clone(),
            topology_version: None,
        }),
        _ => error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, rawdoc};

    use std::time::Duration;

    use super::*;
    use crate::uri::ServerAddress;

    #[test]
    fn credential_commands_and_speculative_hellos_are_sensitive() {
        for name in [
            "saslStart",
            "saslContinue",
            "authenticate",
            "createUser",
            "copydb",
        ] {
            assert!(is_sensitive(name, &doc! {}), "{name}");
        }
        assert!(is_sensitive(
            "hello",
            &doc! { "hello": 1, "speculativeAuthenticate": {} }
        ));
        assert!(is_sensitive(
            "isMaster",
            &doc! { "isMaster": 1, "speculativeAuthenticate": {} }
        ));
        assert!(!is_sensitive("hello", &doc! { "hello": 1 }));
        assert!(!is_sensitive("find", &doc! { "find": "c" }));
    }

    #[test]
    fn sensitive_commands_are_redacted_in_every_event() {
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = events.clone();
        let monitor =
            CommandMonitor::new(Some(EventHandler::callback(move |event: CommandEvent| {
                seen.lock().unwrap().push(event)
            })));
        let info = || CommandInfo {
            command_name: "saslStart".into(),
            db: "admin".into(),
            request_id: 7,
            operation_id: 7,
            connection: ConnectionInfo {
                address: ServerAddress::parse("a:27017").unwrap(),
                id: 1,
                server_id: Some(42),
            },
            service_id: None,
        };
        let command = doc! { "saslStart": 1, "payload": "secret" };
        let refusal = Error::from(CommandError {
            code: 18,
            code_name: "AuthenticationFailed".into(),
            message: "secret details".into(),
            error_labels: vec!["Label".into()],
            topology_version: None,
        });
        let clock = StillClock;
        monitor
            .started(&command, &clock, info)
            .finish(Err(&refusal));
        monitor
            .started(&command, &clock, info)
            .finish(Ok(&rawdoc! { "ok": 1, "payload": "secret" }));
        // An operation dropped mid-command still ends its command.
        drop(monitor.started(&doc! { "ping": 1 }, &clock, info));
        let events = events.lock().unwrap();
        assert_eq!(events.len(), 6);
        let CommandEvent::Started(started) = &events[0] else {
            panic!("{events:?}")
        };
        assert!(started.command.is_empty());
        assert_eq!(started.request_id, 7);
        let CommandEvent::Failed(failed) = &events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(failed.failure.code(), Some(18));
        assert_eq!(
            failed.failure.labels(),
            &std::collections::HashSet::from(["Label".to_owned()])
        );
        assert!(
            !failed.failure.to_string().contains("secret"),
            "{}",
            failed.failure
        );
        let CommandEvent::Succeeded(succeeded) = &events[3] else {
            panic!("{events:?}")
        };
        assert!(succeeded.reply.is_empty());
        let CommandEvent::Failed(abandoned) = &events[5] else {
            panic!("{events:?}")
        };
        assert!(
            abandoned.failure.to_string().contains("abandoned"),
            "{}",
            abandoned.failure
        );
    }

    struct StillClock;

    impl Clock for StillClock {
        fn now(&self) -> Instant {
            Instant::from_origin(Duration::ZERO)
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _: Duration) -> crate::rt::BoxFuture<'static, ()> {
            crate::rt::boxed(std::future::pending())
        }
    }

    #[test]
    fn nothing_is_built_when_nobody_listens() {
        let monitor = CommandMonitor::new(None);
        let built = std::cell::Cell::new(false);
        let in_flight = monitor.started(&doc! { "ping": 1 }, &StillClock, || {
            built.set(true);
            unreachable_info()
        });
        in_flight.finish(Ok(&rawdoc! { "ok": 1 }));
        assert!(!built.get());
    }

    fn unreachable_info() -> CommandInfo {
        CommandInfo {
            command_name: String::new(),
            db: String::new(),
            request_id: 0,
            operation_id: 0,
            connection: ConnectionInfo {
                address: ServerAddress::parse("a").unwrap(),
                id: 0,
                server_id: None,
            },
            service_id: None,
        }
    }
}
