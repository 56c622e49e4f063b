//! Collecting client entities' log messages and checking `expectLogMessages` (spec
//! "entity", `client`: `observeLogMessages`; "expectedLogMessagesForClient").
//!
//! The driver logs through `tracing`, whose subscriber is global: the runner installs
//! one `Collector` for the process ([`install`]), which keeps the driver's messages
//! while some client entity observes logs, filed by the `topologyId` every message
//! carries. A client entity claims the messages of its own topology, at the levels its
//! `observeLogMessages` asks for. The same collector hands the driver's OpenTelemetry
//! spans to [`spans`](super::spans).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};

use anymongo::client::ClientConfig;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::sdam::TopologyOpeningEvent;
use anymongo::event::EventHandler;
use anymongo::logging;
use anymongo::{Client, ClientOptions};
use bson::{Bson, Document};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::matching::Matcher;
use super::model::{ExpectedLogMessage, ExpectedLogMessagesForClient};
use super::Abort;

/// One log message of the driver, as the unified format sees it.
#[derive(Debug, Clone)]
pub struct LogMessage {
    /// The tracing level.
    pub level: Level,
    /// The spec's component name, e.g. `"serverSelection"`.
    pub component: &'static str,
    /// The message's fields, `message` included.
    pub data: Document,
}

/// How many client entities observe logs now; nothing is collected (or even
/// formatted by the driver) while there are none.
static OBSERVERS: AtomicUsize = AtomicUsize::new(0);
/// The messages collected, by `topologyId`.
static MESSAGES: Mutex<Option<HashMap<String, Vec<LogMessage>>>> = Mutex::new(None);

/// The spec's component of a driver target.
fn component(target: &str) -> Option<&'static str> {
    match target {
        logging::COMMAND => Some("command"),
        logging::TOPOLOGY => Some("topology"),
        logging::SERVER_SELECTION => Some("serverSelection"),
        logging::CONNECTION => Some("connection"),
        _ => None,
    }
}

/// Installs the process's `tracing` subscriber, once: a registry (which tracks the
/// spans' parents and each thread's current span) with the collector of log messages and spans.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only if another subscriber was installed: then there is nothing
        // to collect, and the tests say so.
        let subscriber = tracing_subscriber::registry().with(Collector);
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// The layer of the process's `tracing` subscriber that collects what the runner
/// checks: log messages here, spans in [`spans`](super::spans).
struct Collector;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Collector {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        match component(metadata.target()).is_some() || super::spans::collects(metadata) {
            // Asked each time: observers come and go.
            true => Interest::sometimes(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _context: Context<'_, S>) -> bool {
        (OBSERVERS.load(Ordering::SeqCst) > 0 && component(metadata.target()).is_some())
            || super::spans::is_observed(metadata)
    }

    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        super::spans::new_span(attributes, id, &context);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, context: Context<'_, S>) {
        super::spans::record(id, values, &context);
    }

    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        let metadata = event.metadata();
        let Some(component) = component(metadata.target()) else {
            return;
        };
        let mut fields = Fields(Document::new());
        event.record(&mut fields);
        let data = fields.0;
        let Ok(topology_id) = data.get_str("topologyId") else {
            return;
        };
        let topology_id = topology_id.to_owned();
        let message = LogMessage {
            level: *metadata.level(),
            component,
            data,
        };
        if let Some(messages) = MESSAGES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            messages.entry(topology_id).or_default().push(message);
        }
    }
}

/// A message's (or span's) fields as a document: numbers as Int64 or Double,
/// `message` and other debug-formatted values as strings.
pub struct Fields(pub Document);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name(), value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0
            .insert(field.name(), i64::try_from(value).unwrap_or(i64::MAX));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name(), value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name(), value);
    }
}

/// The tracing level of a spec level name (logging.md, "Log Severity Levels"; the
/// levels `tracing` lacks map to the closest less severe one it has).
fn level(name: &str) -> Result<Option<Level>, String> {
    Ok(Some(match name.to_ascii_lowercase().as_str() {
        "off" => return Ok(None),
        "emergency" | "alert" | "critical" | "error" => Level::ERROR,
        "warn" | "warning" => Level::WARN,
        "notice" | "info" | "informational" => Level::INFO,
        "debug" => Level::DEBUG,
        "trace" => Level::TRACE,
        other => return Err(format!("unknown log level {other:?}")),
    }))
}

/// A client entity's log observation: from before the client exists (its pools log
/// while it is built) until the entity is dropped.
pub struct LogObserver {
    /// The minimum level per component (`observeLogMessages`).
    levels: Vec<(String, Level)>,
    /// The client's topology, once known.
    topology_id: Option<String>,
}

impl LogObserver {
    /// Starts collecting for a client about to be created with `observe`.
    fn start(observe: &Document) -> Result<LogObserver, Abort> {
        install();
        let mut levels = Vec::new();
        for (component, name) in observe {
            let name = name
                .as_str()
                .ok_or_else(|| format!("observeLogMessages.{component} is not a string"))?;
            if let Some(level) = level(name)? {
                levels.push((component.clone(), level));
            }
        }
        let mut messages = MESSAGES.lock().unwrap_or_else(PoisonError::into_inner);
        messages.get_or_insert_with(HashMap::new);
        OBSERVERS.fetch_add(1, Ordering::SeqCst);
        Ok(LogObserver {
            levels,
            topology_id: None,
        })
    }

    /// Claims the messages of the topology `topology_id` (the client's).
    fn claim(&mut self, topology_id: String) {
        self.topology_id = Some(topology_id);
    }

    /// The client's messages so far that `observeLogMessages` asks for.
    pub fn messages(&self) -> Vec<LogMessage> {
        let Some(topology_id) = &self.topology_id else {
            return Vec::new();
        };
        let messages = MESSAGES.lock().unwrap_or_else(PoisonError::into_inner);
        messages
            .as_ref()
            .and_then(|messages| messages.get(topology_id))
            .into_iter()
            .flatten()
            .filter(|message| {
                self.levels.iter().any(|(component, level)| {
                    component == message.component && message.level <= *level
                })
            })
            .cloned()
            .collect()
    }
}

impl Drop for LogObserver {
    fn drop(&mut self) {
        let mut messages = MESSAGES.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(messages), Some(topology_id)) = (messages.as_mut(), &self.topology_id) {
            messages.remove(topology_id);
        }
        if OBSERVERS.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last observer: whatever other clients logged meanwhile goes too.
            *messages = None;
        }
    }
}

/// A client with `options` and `config` on the native runtime, whose log messages
/// `observe` (components and their minimum levels, as `observeLogMessages`) collects
/// from before the client exists (its pools log as it is built): for client entities
/// and for tests of the driver's logging outside the unified format.
pub fn observed_client(
    options: ClientOptions,
    observe: &Document,
    config: ClientConfig,
) -> Result<(Client, LogObserver), Abort> {
    let mut observer = LogObserver::start(observe)?;
    let opened = Arc::new(Mutex::new(None));
    let recorder = opened.clone();
    let application = options.sdam_event_handler.clone();
    let mut options = options;
    options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
        if let SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id, .. }) = &event {
            *recorder.lock().unwrap_or_else(PoisonError::into_inner) = Some(*topology_id);
        }
        // The runner's own handlers are callbacks: called in place, in order.
        if let Some(EventHandler::Callback(application)) = &application {
            application(event);
        }
    }));
    let client =
        Client::with_config(options, config).map_err(|e| format!("cannot create a client: {e}"))?;
    let topology_id = opened
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .ok_or_else(|| "the client published no TopologyOpening".to_owned())?;
    observer.claim(topology_id.to_hex());
    Ok((client, observer))
}

/// Checks one `expectLogMessages` entry against the client's messages.
pub fn check(
    expected: &ExpectedLogMessagesForClient,
    observer: &LogObserver,
    matcher: &Matcher<'_>,
) -> Result<(), Abort> {
    let client = &expected.client;
    let ignored = |message: &LogMessage| {
        expected
            .ignore_messages
            .iter()
            .any(|ignore| matches(ignore, message, matcher).is_ok())
    };
    let actual: Vec<LogMessage> = observer
        .messages()
        .into_iter()
        .filter(|message| !ignored(message))
        .collect();
    let listing = || {
        actual
            .iter()
            .map(|message| {
                format!(
                    "  {:?} {}: {}",
                    message.level, message.component, message.data
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let enough = match expected.ignore_extra_messages {
        true => actual.len() >= expected.messages.len(),
        false => actual.len() == expected.messages.len(),
    };
    if !enough {
        return Err(Abort::Failed(format!(
            "client {client}: expected {} log messages, got {}:\n{}",
            expected.messages.len(),
            actual.len(),
            listing()
        )));
    }
    for (index, (want, got)) in expected.messages.iter().zip(&actual).enumerate() {
        matches(want, got, matcher).map_err(|why| {
            Abort::Failed(format!(
                "client {client}: log message {index}: {why}\nmessages:\n{}",
                listing()
            ))
        })?;
    }
    Ok(())
}

/// Whether `actual` is the message `expected` describes (spec "expectedLogMessage").
fn matches(
    expected: &ExpectedLogMessage,
    actual: &LogMessage,
    matcher: &Matcher<'_>,
) -> Result<(), String> {
    let want_level = level(&expected.level)?;
    if want_level != Some(actual.level) {
        return Err(format!(
            "level {:?} expected, {:?} logged",
            expected.level, actual.level
        ));
    }
    if expected.component != actual.component {
        return Err(format!(
            "component {:?} expected, {:?} logged",
            expected.component, actual.component
        ));
    }
    matcher.root(
        &Bson::Document(expected.data.clone()),
        &Bson::Document(actual.data.clone()),
    )?;
    if let Some(redacted) = expected.failure_is_redacted {
        let failure = actual
            .data
            .get_str("failure")
            .map_err(|_| "the message has no failure".to_owned())?;
        // The driver redacts a server error of a sensitive command to its code, name
        // and labels (Command Logging and Monitoring, "Security"): its text then
        // carries no message from the server.
        if is_redacted(failure) != redacted {
            return Err(format!(
                "failure {failure:?} should {}be redacted",
                if redacted { "" } else { "not " }
            ));
        }
    }
    Ok(())
}

/// Whether a logged failure is a redacted command error: "command failed (…)", with
/// no server message after "command failed:".
fn is_redacted(failure: &str) -> bool {
    failure.starts_with("command failed (")
}
