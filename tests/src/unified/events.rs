//! Recording client entities' events and checking `expectEvents` (spec
//! "expectedEventsForClient", "expectedEvent").

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use anymongo::command_monitoring::is_sensitive;
use anymongo::event::cmap::CmapEvent;
use anymongo::event::command::CommandEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::ClientOptions;
use bson::oid::ObjectId;
use bson::{Bson, Document};

use anymongo::event::cmap::{
    ConnectionCheckoutFailedEvent, ConnectionClosedEvent, PoolClearedEvent,
};
use anymongo::event::sdam::{
    ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent, ServerHeartbeatSucceededEvent,
};
use anymongo::rt::BoxFuture;

use super::arguments::known_arguments;
use super::matching::Matcher;
use super::model::{ExpectedEventsForClient, Operation};
use super::operations::{Context, Returned};
use super::Abort;

/// An event of any of the three monitors.
#[derive(Debug, Clone)]
pub enum Event {
    /// Command monitoring.
    Command(CommandEvent),
    /// Connection pools.
    Cmap(CmapEvent),
    /// Discovery and monitoring.
    Sdam(SdamEvent),
}

impl Event {
    /// The event's type as the test format names it, e.g. `"commandStartedEvent"` or
    /// `"poolClearedEvent"` (the keys of `observeEvents` and of expected events).
    pub fn name(&self) -> String {
        let name = match self {
            Event::Command(CommandEvent::Started(_)) => "CommandStartedEvent",
            Event::Command(CommandEvent::Succeeded(_)) => "CommandSucceededEvent",
            Event::Command(CommandEvent::Failed(_)) => "CommandFailedEvent",
            Event::Command(_) => "CommandEvent",
            Event::Cmap(event) => event.name(),
            Event::Sdam(event) => event.name(),
        };
        let mut chars = name.chars();
        chars
            .next()
            .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }

    /// The `eventType` of `expectEvents` the event belongs to.
    fn event_type(&self) -> &'static str {
        match self {
            Event::Command(_) => "command",
            Event::Cmap(_) => "cmap",
            Event::Sdam(_) => "sdam",
        }
    }
}

/// Which of a client's events count (spec "entity", `client`: `observeEvents`,
/// `ignoreCommandMonitoringEvents`, `observeSensitiveCommands`).
#[derive(Debug, Clone, Default)]
pub struct Observe {
    /// The event types recorded, e.g. `commandStartedEvent`.
    pub events: Vec<String>,
    /// Commands whose events are ignored.
    pub ignored_commands: Vec<String>,
    /// Whether security-sensitive commands' events are kept.
    pub sensitive_commands: bool,
}

/// Every event a client published, in order.
#[derive(Debug, Clone, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<Event>>>,
}

impl EventLog {
    /// `options`, with three event handlers that record into this log.
    pub fn record(&self, mut options: ClientOptions) -> ClientOptions {
        let (command, cmap, sdam) = (self.clone(), self.clone(), self.clone());
        options.command_event_handler = Some(EventHandler::callback(move |event| {
            command.push(Event::Command(event))
        }));
        options.cmap_event_handler = Some(EventHandler::callback(move |event| {
            cmap.push(Event::Cmap(event))
        }));
        options.sdam_event_handler = Some(EventHandler::callback(move |event| {
            sdam.push(Event::Sdam(event))
        }));
        options
    }

    fn push(&self, event: Event) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    /// Forgets everything recorded so far.
    pub fn clear(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// How many connections the client's pools made ready so far.
    pub fn connections_ready(&self) -> usize {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|event| matches!(event, Event::Cmap(CmapEvent::ConnectionReady(_))))
            .count()
    }

    /// Everything recorded so far.
    pub fn all(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The recorded events of `event_type` (`command`, `cmap` or `sdam`) that `observe`
    /// keeps. Command events are dropped for `configureFailPoint` (set by the runner's
    /// `failPoint`), for the ignored commands and, unless observed, for sensitive
    /// commands (spec "Executing a Test").
    pub fn observed(&self, event_type: &str, observe: &Observe) -> Vec<Event> {
        // Request ids of dropped started events: their replies and failures go too.
        let mut dropped = HashSet::new();
        self.all()
            .into_iter()
            .filter(|event| {
                if event.event_type() != event_type || !observe.events.contains(&event.name()) {
                    return false;
                }
                let Event::Command(command) = event else {
                    return true;
                };
                if dropped.contains(&command.request_id()) {
                    return false;
                }
                let name = command.command_name();
                let ignored = name == "configureFailPoint"
                    || observe
                        .ignored_commands
                        .iter()
                        .any(|ignored| ignored == name)
                    || (!observe.sensitive_commands && is_redacted(command));
                if ignored {
                    dropped.insert(command.request_id());
                }
                !ignored
            })
            .collect()
    }

    /// How many connections are checked out: check-outs minus check-ins (spec
    /// "entity", `client`: runners "MUST track the number of connections checked out").
    pub fn connections_checked_out(&self) -> i64 {
        self.all().iter().fold(0, |count, event| match event {
            Event::Cmap(CmapEvent::ConnectionCheckedOut(_)) => count + 1,
            Event::Cmap(CmapEvent::ConnectionCheckedIn(_)) => count - 1,
            _ => count,
        })
    }
}

/// Whether a command event is of a security-sensitive command. A hello is sensitive
/// only with `speculativeAuthenticate`, which the driver has redacted away: an empty
/// command or reply tells (spec "Executing a Test": "the test runner may need to infer
/// that the events are sensitive based on whether or not the command and reply
/// documents are redacted").
fn is_redacted(event: &CommandEvent) -> bool {
    let name = event.command_name();
    let hello = matches!(name.to_ascii_lowercase().as_str(), "hello" | "ismaster");
    match event {
        CommandEvent::Started(started) => {
            is_sensitive(name, &started.command) || (hello && started.command.is_empty())
        }
        CommandEvent::Succeeded(succeeded) => {
            is_sensitive(name, &Document::new()) || (hello && succeeded.reply.is_empty())
        }
        _ => is_sensitive(name, &Document::new()),
    }
}

/// Checks a client's observed events against the expected ones, in order; `matcher`
/// matches the `command` and `reply` documents.
pub fn check(
    expected: &ExpectedEventsForClient,
    log: &EventLog,
    observe: &Observe,
    matcher: &Matcher<'_>,
) -> Result<(), String> {
    let event_type = expected.event_type.as_deref().unwrap_or("command");
    if !matches!(event_type, "command" | "cmap" | "sdam") {
        return Err(format!("unknown eventType {event_type:?}"));
    }
    let actual = log.observed(event_type, observe);
    let names = || {
        actual
            .iter()
            .map(Event::name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let enough = match expected.ignore_extra_events {
        true => actual.len() >= expected.events.len(),
        false => actual.len() == expected.events.len(),
    };
    if !enough {
        return Err(format!(
            "{} {event_type} events expected for {}, {} seen: {}",
            expected.events.len(),
            expected.client,
            actual.len(),
            names()
        ));
    }
    for (i, (expected, actual)) in expected.events.iter().zip(&actual).enumerate() {
        check_event(expected, actual, matcher)
            .map_err(|why| format!("{event_type} event {i} ({}): {why}", actual.name()))?;
    }
    Ok(())
}

/// Checks one event against its expected one-key document.
fn check_event(expected: &Document, actual: &Event, matcher: &Matcher<'_>) -> Result<(), String> {
    let mut entries = expected.iter();
    let (Some((name, Bson::Document(fields))), None) = (entries.next(), entries.next()) else {
        return Err(format!(
            "an expected event is not one key with a document: {expected}"
        ));
    };
    if *name != actual.name() {
        return Err(format!("expected a {name}"));
    }
    for (field, value) in fields {
        check_field(field, value, actual, matcher).map_err(|why| format!("{field}: {why}"))?;
    }
    Ok(())
}

/// Checks one asserted field of an event (the fields each event type may assert are
/// those of spec "expectedCommandEvent", "expectedCmapEvent", "expectedSdamEvent").
fn check_field(
    field: &str,
    expected: &Bson,
    actual: &Event,
    matcher: &Matcher<'_>,
) -> Result<(), String> {
    match (field, actual) {
        ("command", Event::Command(CommandEvent::Started(started))) => {
            matcher.root(expected, &Bson::Document(started.command.clone()))
        }
        ("reply", Event::Command(CommandEvent::Succeeded(succeeded))) => {
            matcher.root(expected, &Bson::Document(succeeded.reply.clone()))
        }
        ("commandName", Event::Command(event)) => {
            equal(expected, &Bson::String(event.command_name().to_owned()))
        }
        ("databaseName", Event::Command(event)) => {
            equal(expected, &Bson::String(event.db().to_owned()))
        }
        ("hasServiceId", Event::Command(event)) => {
            has(expected, has_service_id(event.service_id()))
        }
        (
            "hasServiceId",
            Event::Cmap(CmapEvent::PoolCleared(PoolClearedEvent { service_id, .. })),
        ) => has(expected, has_service_id(*service_id)),
        ("hasServerConnectionId", Event::Command(event)) => {
            // Spec "hasServerConnectionId": set and a positive int32.
            let id = event.connection().server_id;
            has(expected, id.is_some_and(|id| id > 0))
        }
        (
            "interruptInUseConnections",
            Event::Cmap(CmapEvent::PoolCleared(PoolClearedEvent {
                interrupt_in_use_connections,
                ..
            })),
        ) => equal(expected, &Bson::Boolean(*interrupt_in_use_connections)),
        (
            "reason",
            Event::Cmap(CmapEvent::ConnectionClosed(ConnectionClosedEvent { reason, .. })),
        ) => equal(expected, &Bson::String(reason.as_str().to_owned())),
        (
            "reason",
            Event::Cmap(CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
                reason,
                ..
            })),
        ) => equal(expected, &Bson::String(reason.as_str().to_owned())),
        (
            "awaited",
            Event::Sdam(
                SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent { awaited, .. })
                | SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                    awaited, ..
                })
                | SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent { awaited, .. }),
            ),
        ) => equal(expected, &Bson::Boolean(*awaited)),
        (
            "previousDescription" | "newDescription",
            Event::Sdam(SdamEvent::ServerDescriptionChanged(changed)),
        ) => {
            let description = if field == "newDescription" {
                &changed.new_description
            } else {
                &changed.previous_description
            };
            description_type(expected, description.server_type().name())
        }
        (
            "previousDescription" | "newDescription",
            Event::Sdam(SdamEvent::TopologyDescriptionChanged(changed)),
        ) => {
            let description = if field == "newDescription" {
                &changed.new_description
            } else {
                &changed.previous_description
            };
            description_type(expected, description.topology_type.name())
        }
        _ => Err(format!(
            "the runner cannot check this field of a {}",
            actual.name()
        )),
    }
}

/// Spec "hasServiceId": set and not all zero bytes.
fn has_service_id(service_id: Option<ObjectId>) -> bool {
    service_id.is_some_and(|id| id.bytes() != [0; 12])
}

/// An expected `{ type: ... }` server or topology description: only `type` is
/// asserted (spec "expectedSdamEvent").
fn description_type(expected: &Bson, actual_type: &str) -> Result<(), String> {
    let Bson::Document(expected) = expected else {
        return Err(format!("expected a description document, not {expected}"));
    };
    for (key, value) in expected {
        match key.as_str() {
            "type" => equal(value, &Bson::String(actual_type.to_owned()))?,
            other => return Err(format!("the runner cannot check the description's {other}")),
        }
    }
    Ok(())
}

fn has(expected: &Bson, actual: bool) -> Result<(), String> {
    equal(expected, &Bson::Boolean(actual))
}

fn equal(expected: &Bson, actual: &Bson) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("expected {expected}, got {actual}"))
    }
}

/// How long `waitForEvent` waits at most.
const WAIT_FOR_EVENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The arguments of `waitForEvent` and `assertEventCount`: the client entity, the
/// expected event and the count.
fn event_count_arguments(operation: &Operation) -> Result<(&str, &Document, usize), Abort> {
    known_arguments(operation, &["client", "event", "count"])?;
    let arguments = &operation.arguments;
    let name = &operation.name;
    let client = arguments
        .get_str("client")
        .map_err(|_| format!("{name} needs a client"))?;
    let event = arguments
        .get_document("event")
        .map_err(|_| format!("{name} needs an event"))?;
    let count = match arguments.get("count") {
        Some(Bson::Int32(n)) => usize::try_from(*n).ok(),
        Some(Bson::Int64(n)) => usize::try_from(*n).ok(),
        _ => None,
    };
    let count = count.ok_or_else(|| format!("{name}: count must be a non-negative integer"))?;
    Ok((client, event, count))
}

/// How many of the events `client` published so far match `event` (spec
/// "expectedEvent"), whether or not the client observes them for `expectEvents`.
fn matching_events(context: &Context, client: &str, event: &Document) -> Result<usize, Abort> {
    let matcher = Matcher::new(&context.entities);
    let log = &context.entities.client(client)?.events;
    Ok(log
        .all()
        .iter()
        .filter(|actual| check_event(event, actual, &matcher).is_ok())
        .count())
}

/// Spec "waitForEvent": waits until the client entity has published `count` events
/// matching `event`. The driver's events come from its background tasks, so the log
/// is polled, within `WAIT_FOR_EVENT_TIMEOUT` (10 s).
pub fn wait_for_event<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        let (client, event, count) = event_count_arguments(operation)?;
        let deadline = tokio::time::Instant::now() + WAIT_FOR_EVENT_TIMEOUT;
        loop {
            let seen = matching_events(context, client, event)?;
            if seen >= count {
                return Ok(Ok(None));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Abort::Failed(format!(
                    "{client} published {seen} of {count} {event} within {WAIT_FOR_EVENT_TIMEOUT:?}"
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
}

/// Spec "assertEventCount": the client entity has published exactly `count` events
/// matching `event` so far in the test.
pub fn assert_event_count<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        let (client, event, count) = event_count_arguments(operation)?;
        let seen = matching_events(context, client, event)?;
        if seen != count {
            return Err(Abort::Failed(format!(
                "{client} published {seen} {event}, expected {count}"
            )));
        }
        Ok(Ok(None))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::event::cmap::{ConnectionCheckedOutEvent, ConnectionClosedReason};
    use anymongo::ServerAddress;
    use bson::doc;

    use super::super::entities::EntityMap;

    fn address() -> ServerAddress {
        ServerAddress::tcp("localhost", 27017)
    }

    fn log() -> EventLog {
        let log = EventLog::default();
        for event in [
            Event::Cmap(CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                address: address(),
                connection_id: 1,
                duration: Default::default(),
            })),
            Event::Sdam(SdamEvent::ServerHeartbeatStarted(
                ServerHeartbeatStartedEvent {
                    server_address: address(),
                    driver_connection_id: 1,
                    server_connection_id: None,
                    awaited: true,
                },
            )),
            Event::Cmap(CmapEvent::PoolCleared(PoolClearedEvent {
                address: address(),
                service_id: None,
                interrupt_in_use_connections: true,
            })),
            Event::Cmap(CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                address: address(),
                connection_id: 1,
                reason: ConnectionClosedReason::Stale,
            })),
        ] {
            log.push(event);
        }
        log
    }

    fn expected(
        event_type: &str,
        events: Vec<Document>,
        ignore_extra_events: bool,
    ) -> ExpectedEventsForClient {
        ExpectedEventsForClient {
            client: "client0".to_owned(),
            event_type: Some(event_type.to_owned()),
            events,
            ignore_extra_events,
        }
    }

    fn observe(events: &[&str]) -> Observe {
        Observe {
            events: events.iter().map(|name| (*name).to_owned()).collect(),
            ..Observe::default()
        }
    }

    #[test]
    fn events_are_named_as_the_test_format_names_them() {
        let names: Vec<String> = log().all().iter().map(Event::name).collect();
        assert_eq!(
            names,
            [
                "connectionCheckedOutEvent",
                "serverHeartbeatStartedEvent",
                "poolClearedEvent",
                "connectionClosedEvent"
            ]
        );
        assert_eq!(log().connections_checked_out(), 1);
    }

    #[test]
    fn only_observed_events_of_the_expected_type_are_compared() {
        let entities = EntityMap::default();
        let matcher = Matcher::new(&entities);
        let observe = observe(&[
            "poolClearedEvent",
            "connectionClosedEvent",
            "serverHeartbeatStartedEvent",
        ]);
        let cmap = expected(
            "cmap",
            vec![
                doc! { "poolClearedEvent": { "hasServiceId": false, "interruptInUseConnections": true } },
                doc! { "connectionClosedEvent": { "reason": "stale" } },
            ],
            false,
        );
        check(&cmap, &log(), &observe, &matcher).unwrap();
        let sdam = expected(
            "sdam",
            vec![doc! { "serverHeartbeatStartedEvent": { "awaited": true } }],
            false,
        );
        check(&sdam, &log(), &observe, &matcher).unwrap();
    }

    #[test]
    fn mismatches_are_reported() {
        let entities = EntityMap::default();
        let matcher = Matcher::new(&entities);
        let observe = observe(&["poolClearedEvent", "connectionClosedEvent"]);
        let failure = |events: Vec<Document>, ignore_extra_events: bool| {
            check(
                &expected("cmap", events, ignore_extra_events),
                &log(),
                &observe,
                &matcher,
            )
            .unwrap_err()
        };
        let cleared = doc! { "poolClearedEvent": {} };
        let too_few = failure(vec![cleared.clone()], false);
        assert!(
            too_few.contains("1 cmap events expected for client0, 2 seen"),
            "{too_few}"
        );
        let wrong_reason = failure(
            vec![
                cleared.clone(),
                doc! { "connectionClosedEvent": { "reason": "idle" } },
            ],
            false,
        );
        assert!(
            wrong_reason.contains("expected \"idle\", got \"stale\""),
            "{wrong_reason}"
        );
        let wrong_type = failure(vec![doc! { "connectionClosedEvent": {} }], true);
        assert!(
            wrong_type.contains("expected a connectionClosedEvent"),
            "{wrong_type}"
        );
        let unknown = failure(vec![doc! { "poolClearedEvent": { "address": "x" } }], true);
        assert!(unknown.contains("cannot check this field"), "{unknown}");
        let kind = check(&expected("log", vec![], true), &log(), &observe, &matcher).unwrap_err();
        assert!(kind.contains("unknown eventType"), "{kind}");
        // With ignoreExtraEvents the first expected events must still match.
        check(
            &expected("cmap", vec![cleared], true),
            &log(),
            &observe,
            &matcher,
        )
        .unwrap();
    }
}
