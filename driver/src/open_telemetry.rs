//! OpenTelemetry (open-telemetry.md): a span for each operation of the public API and
//! one for each command it sends, with the spec's names, kind and attributes, and a
//! span for each transaction the operations in it nest in.
//!
//! The spec forbids a dependency on an OpenTelemetry SDK; the spans are [`tracing`]
//! spans (target [`TARGET`], level `INFO`) whose fields carry the spec's attribute
//! names, so that `tracing-opentelemetry`'s layer turns them into OpenTelemetry
//! spans: `otel.name` is the span's name, `otel.kind` its kind (`client`, spec,
//! "Operation Span Kind" and "Command Span Kind"), `otel.status_code` its status
//! (`error` when it failed), every other field an attribute. The `tracing` name of
//! every span is [`OPERATION`], [`COMMAND`] or [`TRANSACTION`], whatever its
//! OpenTelemetry name.
//!
//! Tracing is off by default (spec, "Enabling, Disabling, and Configuring
//! OpenTelemetry"): a client traces when its [`OpentelemetryOptions::enabled`] says so
//! or, left unset, when the environment variable [`ENABLED_VAR`] is `1`, `true` or
//! `yes`. Off, nothing is built: the spans are [`Span::none`]. Where a target has no
//! environment (the npm package's hosts), the option is the only switch.

use bson::{Bson, Document, RawDocument};
use tracing::field::Empty;
use tracing::Span;

use crate::error::Error;

/// The `tracing` target of every span of this module.
pub const TARGET: &str = "anymongo::open_telemetry";
/// The `tracing` name of operation spans.
pub const OPERATION: &str = "mongodb.operation";
/// The `tracing` name of command spans.
pub const COMMAND: &str = "mongodb.command";
/// The `tracing` name of transaction spans.
pub const TRANSACTION: &str = "mongodb.transaction";

/// The driver-level switch (spec, "Environment Variables for configuring
/// OpenTelemetry"), read when a client is created: `1`, `true` or `yes` enable
/// tracing for clients whose options leave [`OpentelemetryOptions::enabled`] unset.
pub const ENABLED_VAR: &str = "OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED";
/// The driver-level maximum length of `db.query.text`, for clients whose options
/// leave [`OpentelemetryOptions::query_text_max_length`] unset.
pub const QUERY_TEXT_MAX_LENGTH_VAR: &str =
    "OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH";

/// A client's OpenTelemetry options (spec, "`MongoClient` Options for configuring
/// OpenTelemetry on the client level"): `ClientOptions::tracing`.
#[derive(Clone, Debug, Default, PartialEq, Eq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct OpentelemetryOptions {
    /// Whether this client traces its operations and commands; it overrides
    /// [`ENABLED_VAR`]. Unset: that variable decides (off without it).
    pub enabled: Option<bool>,
    /// The maximum length, in characters, of the `db.query.text` attribute of command
    /// spans; 0 leaves the attribute out. Unset: [`QUERY_TEXT_MAX_LENGTH_VAR`], 0
    /// without it.
    pub query_text_max_length: Option<usize>,
}

/// What a client's spans need of its options, settled when it is created.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tracer {
    enabled: bool,
    query_text_max_length: usize,
}

impl Tracer {
    /// The tracer of a client with `options`, the environment filling what they
    /// leave unset.
    pub fn new(options: Option<&OpentelemetryOptions>) -> Tracer {
        Tracer::with_environment(options, |name| std::env::var(name).ok())
    }

    /// [`Tracer::new`] with `variable` reading the environment.
    fn with_environment(
        options: Option<&OpentelemetryOptions>,
        variable: impl Fn(&str) -> Option<String>,
    ) -> Tracer {
        let enabled = options
            .and_then(|options| options.enabled)
            .unwrap_or_else(|| {
                variable(ENABLED_VAR).is_some_and(|value| {
                    matches!(
                        value.trim().to_ascii_lowercase().as_str(),
                        "1" | "true" | "yes"
                    )
                })
            });
        let query_text_max_length = options
            .and_then(|options| options.query_text_max_length)
            .or_else(|| variable(QUERY_TEXT_MAX_LENGTH_VAR)?.trim().parse().ok())
            .unwrap_or(0);
        Tracer {
            enabled,
            query_text_max_length,
        }
    }

    /// Whether the client traces.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Whether the client traces and the application's subscriber takes the spans:
    /// the attributes are not computed otherwise.
    fn is_listened(&self) -> bool {
        self.enabled
            && tracing::enabled!(kind: tracing::metadata::Kind::SPAN, target: TARGET, tracing::Level::INFO)
    }

    /// The span of the operation `traced` describes (spec, "Instrumenting Driver
    /// Operations"), started before server selection: in `transaction`'s span when it
    /// runs in one, else in the application's current span.
    pub fn operation(&self, traced: &Traced<'_>, transaction: Option<&Span>) -> Span {
        if !self.is_listened() {
            return Span::none();
        }
        let parent = transaction
            .and_then(Span::id)
            .or_else(|| Span::current().id());
        let summary = summary(traced.name, traced.database, traced.collection);
        tracing::info_span!(
            target: TARGET,
            parent: parent,
            OPERATION,
            otel.name = summary.as_str(),
            otel.kind = "client",
            otel.status_code = Empty,
            db.system.name = "mongodb",
            db.namespace = traced.database,
            db.collection.name = traced.collection,
            db.operation.name = traced.name,
            db.operation.summary = summary.as_str(),
            exception.message = Empty,
            "exception.type" = Empty,
            exception.stacktrace = Empty,
        )
    }

    /// The span of a transaction (spec, "Transactions"): only `db.system.name`.
    pub fn transaction(&self) -> Span {
        if !self.is_listened() {
            return Span::none();
        }
        tracing::info_span!(
            target: TARGET,
            TRANSACTION,
            otel.name = "transaction",
            otel.kind = "client",
            db.system.name = "mongodb",
        )
    }

    /// The span of `command` (its body, with document sequences as arrays, as command
    /// monitoring shows it) sent to `database` on `connection` (spec, "Instrumenting
    /// Server Commands"), in the current span: its operation's. The caller leaves out
    /// the sensitive commands of command monitoring (spec, "Security Implication").
    pub fn command(
        &self,
        command: &Document,
        database: &str,
        connection: &ConnectionAttributes<'_>,
    ) -> Span {
        if !self.is_listened() {
            return Span::none();
        }
        let name = command.keys().next().map_or("", String::as_str);
        let collection = collection_of(command);
        let summary = summary(name, database, collection);
        let lsid = command.get_document("lsid").ok().map(|lsid| {
            Bson::Document(lsid.clone())
                .into_relaxed_extjson()
                .to_string()
        });
        let txn_number = command.get_i64("txnNumber").ok();
        let cursor_id = match name {
            "getMore" => command.get_i64("getMore").ok(),
            _ => None,
        };
        let query_text = (self.query_text_max_length > 0)
            .then(|| query_text(command, self.query_text_max_length));
        tracing::info_span!(
            target: TARGET,
            COMMAND,
            otel.name = name,
            otel.kind = "client",
            otel.status_code = Empty,
            db.system.name = "mongodb",
            db.namespace = database,
            db.collection.name = collection,
            db.command.name = name,
            db.query.summary = summary,
            db.query.text = query_text,
            server.address = connection.address,
            server.port = connection.port,
            network.transport = connection.transport,
            db.mongodb.server_connection_id = connection.server_connection_id,
            db.mongodb.driver_connection_id = connection.driver_connection_id,
            db.mongodb.cursor_id = cursor_id,
            db.mongodb.lsid = lsid,
            db.mongodb.txn_number = txn_number,
            db.response.status_code = Empty,
            exception.message = Empty,
            "exception.type" = Empty,
            exception.stacktrace = Empty,
        )
    }
}

/// What an operation's span names (spec, "Operation Span Name" and "Operation Span
/// Attributes"), known before its first command is built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Traced<'a> {
    /// `db.operation.name`: the name of the driver operation ([`operation_name`]).
    pub name: &'a str,
    /// `db.namespace`: the database it runs against.
    pub database: &'a str,
    /// `db.collection.name`: the collection, if it targets one.
    pub collection: Option<&'a str>,
}

impl<'a> Traced<'a> {
    /// An operation whose first command is `command`, sent to `database`: its name is
    /// the command's ([`operation_name`]), its collection the one the command names.
    pub fn of_command(database: &'a str, command: &'a Document) -> Traced<'a> {
        Traced {
            name: operation_name(command.keys().next().map_or("", String::as_str)),
            database,
            collection: collection_of(command),
        }
    }
}

/// Where a command goes, for its span.
pub(crate) struct ConnectionAttributes<'a> {
    /// `server.address`: the host name or IP address, or the socket's path.
    pub address: &'a str,
    /// `server.port` (none for a unix domain socket).
    pub port: Option<i64>,
    /// `network.transport`: `tcp` or `unix`.
    pub transport: &'static str,
    /// `db.mongodb.server_connection_id`, the server's id of the connection.
    pub server_connection_id: Option<i64>,
    /// `db.mongodb.driver_connection_id`, the pool's id of the connection.
    pub driver_connection_id: i64,
}

/// Records how a command ended on its span: the cursor its reply opens, or the
/// error with its code (spec, "Command Span Attributes" and "Exceptions").
pub(crate) fn record_reply(span: &Span, outcome: Result<&RawDocument, &Error>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(reply) => {
            let cursor_id = reply
                .get_document("cursor")
                .ok()
                .and_then(|cursor| cursor.get_i64("id").ok())
                .filter(|id| *id != 0);
            if let Some(cursor_id) = cursor_id {
                span.record("db.mongodb.cursor_id", cursor_id);
            }
        }
        Err(error) => {
            if let Some(code) = error.code() {
                span.record("db.response.status_code", code.to_string().as_str());
            }
            record_error(span, error);
        }
    }
}

/// Records `error` on `span` (spec, "Exceptions"): its message, its kind and the
/// backtrace of where it was recorded (captured when `RUST_BACKTRACE` or
/// `RUST_LIB_BACKTRACE` asks for one, as Rust's backtraces are).
pub(crate) fn record_error(span: &Span, error: &Error) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "error");
    span.record("exception.message", error.to_string().as_str());
    span.record("exception.type", error_type(error).as_str());
    span.record(
        "exception.stacktrace",
        std::backtrace::Backtrace::capture().to_string().as_str(),
    );
}

/// The error's kind as its type: `ErrorKind::` and the variant's name.
fn error_type(error: &Error) -> String {
    let shown = format!("{:?}", error.kind);
    let variant: String = shown
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    format!("anymongo::error::ErrorKind::{variant}")
}

/// The collection a command works on, if it names one: the value of its first key
/// when a string, or a getMore's `collection`. Commands on a whole database
/// (`listCollections: 1`, `aggregate: 1`) and on the deployment name none.
pub(crate) fn collection_of(command: &Document) -> Option<&str> {
    match command.iter().next() {
        Some((name, _)) if name == "getMore" => command.get_str("collection").ok(),
        Some((_, Bson::String(collection))) => Some(collection),
        _ => None,
    }
}

/// `name db.collection`, or `name db` without a collection (spec, "Operation Span
/// Name" and "db.query.summary").
fn summary(name: &str, database: &str, collection: Option<&str>) -> String {
    match collection {
        Some(collection) => format!("{name} {database}.{collection}"),
        None => format!("{name} {database}"),
    }
}

/// `db.query.text`: the command as Relaxed Extended JSON without the fields the spec
/// leaves out (`lsid`, `$db`, `$clusterTime`, `signature`), cut to `max_length`
/// characters (spec, "db.query.text").
fn query_text(command: &Document, max_length: usize) -> String {
    let mut shown = command.clone();
    for field in ["lsid", "$db", "$clusterTime", "signature"] {
        shown.remove(field);
    }
    let mut text = String::new();
    relaxed_extjson(&Bson::Document(shown), &mut text);
    match text.char_indices().nth(max_length) {
        Some((end, _)) => text[..end].to_owned(),
        None => text,
    }
}

/// Writes `value` as Relaxed Extended JSON to `text`, documents keeping the order of
/// their fields (the command's name first), which `serde_json`'s maps keep only
/// with its `preserve_order` feature.
fn relaxed_extjson(value: &Bson, text: &mut String) {
    match value {
        Bson::Document(document) => {
            text.push('{');
            for (i, (key, value)) in document.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                relaxed_extjson(&Bson::String(key.clone()), text);
                text.push(':');
                relaxed_extjson(value, text);
            }
            text.push('}');
        }
        Bson::Array(items) => {
            text.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                relaxed_extjson(item, text);
            }
            text.push(']');
        }
        scalar => text.push_str(&scalar.clone().into_relaxed_extjson().to_string()),
    }
}

/// The name the spec gives the operation whose first command is `command_name`
/// (spec, "Covered operations"): the command's name, but `dropCollection` for
/// `drop` and `createCollection` for `create`.
pub(crate) fn operation_name(command_name: &str) -> &str {
    match command_name {
        "drop" => "dropCollection",
        "create" => "createCollection",
        name => name,
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn the_client_option_overrides_the_environment() {
        let environment = |name: &str| match name {
            ENABLED_VAR => Some("Yes".to_owned()),
            QUERY_TEXT_MAX_LENGTH_VAR => Some("42".to_owned()),
            _ => None,
        };
        let tracer = Tracer::with_environment(None, environment);
        assert!(tracer.enabled);
        assert_eq!(tracer.query_text_max_length, 42);
        let options = OpentelemetryOptions::builder()
            .enabled(false)
            .query_text_max_length(7)
            .build();
        let tracer = Tracer::with_environment(Some(&options), environment);
        assert!(!tracer.enabled);
        assert_eq!(tracer.query_text_max_length, 7);
        let tracer = Tracer::with_environment(None, |_| None);
        assert!(!tracer.enabled);
        assert_eq!(tracer.query_text_max_length, 0);
    }

    #[test]
    fn query_text_leaves_out_the_session_and_cluster_time_and_is_cut() {
        let command = doc! {
            "find": "c", "filter": { "x": 1 }, "lsid": { "id": 1 }, "$db": "d",
            "$clusterTime": { "clusterTime": 1, "signature": {} },
        };
        assert_eq!(
            query_text(&command, 1000),
            r#"{"find":"c","filter":{"x":1}}"#
        );
        assert_eq!(query_text(&command, 8), r#"{"find":"#);
    }

    #[test]
    fn summaries_name_the_collection_when_the_command_does() {
        let find = doc! { "find": "c" };
        assert_eq!(summary("find", "d", collection_of(&find)), "find d.c");
        let get_more = doc! { "getMore": 5_i64, "collection": "c" };
        assert_eq!(collection_of(&get_more), Some("c"));
        let list = doc! { "listCollections": 1 };
        assert_eq!(
            summary("listCollections", "d", collection_of(&list)),
            "listCollections d"
        );
        assert_eq!(operation_name("drop"), "dropCollection");
        assert_eq!(operation_name("find"), "find");
    }
}
