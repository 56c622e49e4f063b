//! The unified test format's files as Rust values (spec "Test Format").
//!
//! A file is read as Extended JSON into BSON first (spec "Executing a Test File": "Test
//! files ... MUST be interpreted using an Extended JSON parser"), then deserialized
//! into these structures. Only the fields the runner acts on are modelled; a field
//! this runner cannot honour yet is still read, so that a test using it is skipped
//! with a reason instead of run without it.

use std::path::Path;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer};

/// A test file (spec "Top-level Fields").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestFile {
    /// The version of the format the file complies with, e.g. `"1.4"`.
    pub schema_version: String,
    /// The file is run if one of these is met (all of it is skipped otherwise).
    pub run_on_requirements: Option<Vec<RunOnRequirement>>,
    /// Created afresh before each test.
    #[serde(default)]
    pub create_entities: Vec<EntityDescription>,
    /// The collections' contents before each test.
    #[serde(default)]
    pub initial_data: Vec<CollectionData>,
    /// The tests, run independently of each other.
    pub tests: Vec<Test>,
}

/// A server version, topology or dependency requirement (spec "runOnRequirement").
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOnRequirement {
    /// The lowest server version, inclusive.
    pub min_server_version: Option<String>,
    /// The highest server version, inclusive.
    pub max_server_version: Option<String>,
    /// `single`, `replicaset`, `sharded`, `load-balanced` or `sharded-replicaset`.
    pub topologies: Option<Vec<String>>,
    /// `require`, `forbid` or `allow` (Atlas Serverless; deprecated).
    pub serverless: Option<String>,
    /// Server parameters and the values they must have.
    pub server_parameters: Option<Document>,
    /// Whether authentication must be enabled (true) or disabled (false).
    pub auth: Option<bool>,
    /// A mechanism the server must support.
    pub auth_mechanism: Option<String>,
    /// Client-side field level encryption: `false`, or `true`/an object to require it.
    pub csfle: Option<Bson>,
}

/// An entity to create before each test (spec "entity"): exactly one key naming its
/// type.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EntityDescription {
    /// A MongoClient.
    Client(Box<ClientDescription>),
    /// A database of a client entity.
    Database(DatabaseDescription),
    /// A collection of a database entity.
    Collection(CollectionDescription),
    /// An explicit session of a client entity.
    Session(SessionDescription),
    /// A GridFS bucket.
    Bucket(Document),
    /// A ClientEncryption object.
    ClientEncryption(Document),
    /// A test runner "thread".
    Thread(Document),
}

impl EntityDescription {
    /// The entity's type as the spec spells it, e.g. `"session"`.
    pub fn kind(&self) -> &'static str {
        match self {
            EntityDescription::Client(_) => "client",
            EntityDescription::Database(_) => "database",
            EntityDescription::Collection(_) => "collection",
            EntityDescription::Session(_) => "session",
            EntityDescription::Bucket(_) => "bucket",
            EntityDescription::ClientEncryption(_) => "clientEncryption",
            EntityDescription::Thread(_) => "thread",
        }
    }
}

/// A client entity (spec "entity", `client`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientDescription {
    /// The entity's name.
    pub id: String,
    /// Options added to (or overriding) the test server's connection string.
    pub uri_options: Option<Document>,
    /// Behind load balancers: whether the client connects through the one in front
    /// of several mongos.
    pub use_multiple_mongoses: Option<bool>,
    /// Event types recorded for `expectEvents`, e.g. `commandStartedEvent`.
    #[serde(default)]
    pub observe_events: Vec<String>,
    /// Commands whose command monitoring events are ignored.
    #[serde(default)]
    pub ignore_command_monitoring_events: Vec<String>,
    /// Whether the events of security-sensitive commands are kept.
    #[serde(default)]
    pub observe_sensitive_commands: bool,
    /// Saves events into entities (not supported yet).
    pub store_events_as_entities: Option<Bson>,
    /// The Stable API version to declare: `version`, `strict`, `deprecationErrors`.
    pub server_api: Option<Document>,
    /// Log components to collect, each with its minimum level.
    pub observe_log_messages: Option<Document>,
    /// Tracing spans to collect (the driver has no tracing yet).
    pub observe_tracing_messages: Option<Document>,
    /// Automatic encryption (not supported).
    pub auto_encrypt_opts: Option<Document>,
    /// Wait for minPoolSize connections before the test (not supported yet).
    #[serde(rename = "awaitMinPoolSizeMS")]
    pub await_min_pool_size_ms: Option<Bson>,
}

/// A database entity (spec "entity", `database`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseDescription {
    /// The entity's name.
    pub id: String,
    /// The client entity it belongs to.
    pub client: String,
    /// The database's name.
    pub database_name: String,
    /// Its read concern, write concern and read preference.
    pub database_options: Option<Document>,
}

/// A collection entity (spec "entity", `collection`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectionDescription {
    /// The entity's name.
    pub id: String,
    /// The database entity it belongs to.
    pub database: String,
    /// The collection's name.
    pub collection_name: String,
    /// Its read concern, write concern and read preference.
    pub collection_options: Option<Document>,
}

/// A session entity (spec "entity", `session`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDescription {
    /// The entity's name.
    pub id: String,
    /// The client entity that starts it.
    pub client: String,
    /// `causalConsistency`, `defaultTransactionOptions`, `snapshot`.
    pub session_options: Option<Document>,
}

/// The documents of one collection (spec "collectionData"), before a test
/// (`initialData`) or after it (`outcome`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectionData {
    /// The collection's name.
    pub collection_name: String,
    /// Its database's name.
    pub database_name: String,
    /// Options of the `create` command (`initialData` only).
    pub create_options: Option<Document>,
    /// The documents, sorted by `_id`.
    pub documents: Vec<Document>,
}

/// One test (spec "test").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Test {
    /// What the test checks.
    pub description: String,
    /// The test runs only if one of these is met (besides the file's).
    pub run_on_requirements: Option<Vec<RunOnRequirement>>,
    /// If set, the test is skipped for this reason.
    pub skip_reason: Option<String>,
    /// What the test does, in order.
    pub operations: Vec<Operation>,
    /// The events each client must have seen.
    pub expect_events: Option<Vec<ExpectedEventsForClient>>,
    /// The log messages each client must have logged.
    pub expect_log_messages: Option<Vec<ExpectedLogMessagesForClient>>,
    /// The tracing spans of a client (schema 1.27): one entry, or one per client.
    pub expect_tracing_messages: Option<ExpectTracingMessages>,
    /// The collections' contents after the test.
    pub outcome: Option<Vec<CollectionData>>,
}

/// One operation of a test (spec "operation").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// The method or special operation, e.g. `runCommand` or `failPoint`.
    pub name: String,
    /// An entity's name, or `testRunner` for a special operation.
    pub object: String,
    /// The operation's parameters.
    #[serde(default)]
    pub arguments: Document,
    /// The error the operation must raise.
    pub expect_error: Option<ExpectedError>,
    /// The result the operation must return (which may be BSON null).
    #[serde(default, deserialize_with = "present")]
    pub expect_result: Option<Bson>,
    /// Saves the result as an entity of this name.
    pub save_result_as_entity: Option<String>,
    /// Neither the result nor the error is checked.
    #[serde(default)]
    pub ignore_result_and_error: bool,
}

/// What an expected error must look like (spec "expectedError"). `isError` needs no
/// field: the presence of the object already asserts an error.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedError {
    /// Whether the error originates from the client rather than a server reply.
    pub is_client_error: Option<bool>,
    /// Whether the error is a timeoutMS timeout.
    pub is_timeout_error: Option<bool>,
    /// A substring of the message, compared case-insensitively.
    pub error_contains: Option<String>,
    /// The server's error code.
    pub error_code: Option<i32>,
    /// The server's code name, compared case-insensitively.
    pub error_code_name: Option<String>,
    /// Labels the error must carry.
    #[serde(default)]
    pub error_labels_contain: Vec<String>,
    /// Labels the error must not carry.
    #[serde(default)]
    pub error_labels_omit: Vec<String>,
    /// The write errors of a client bulk write, by index.
    pub write_errors: Option<Document>,
    /// The write concern errors of a client bulk write.
    pub write_concern_errors: Option<Vec<Document>>,
    /// The server's error reply, matched as a root-level document.
    pub error_response: Option<Document>,
    /// The partial result the error carries (e.g. a bulk write's).
    #[serde(default, deserialize_with = "present")]
    pub expect_result: Option<Bson>,
}

/// The events one client must have seen (spec "expectedEventsForClient").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedEventsForClient {
    /// The client entity.
    pub client: String,
    /// `command` (the default), `cmap` or `sdam`.
    pub event_type: Option<String>,
    /// The events in order, each a one-key document naming its type.
    pub events: Vec<Document>,
    /// Whether events after the expected ones are allowed.
    #[serde(default)]
    pub ignore_extra_events: bool,
}

/// `expectTracingMessages`: the spec describes one object, the OpenTelemetry tests
/// give an array of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ExpectTracingMessages {
    /// One client's spans.
    One(ExpectedTracingMessagesForClient),
    /// Several clients' spans.
    Each(Vec<ExpectedTracingMessagesForClient>),
}

impl ExpectTracingMessages {
    /// The entries, one per client.
    pub fn entries(&self) -> &[ExpectedTracingMessagesForClient] {
        match self {
            ExpectTracingMessages::One(entry) => std::slice::from_ref(entry),
            ExpectTracingMessages::Each(entries) => entries,
        }
    }
}

/// The spans a client must have produced (spec "expectTracingMessages").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedTracingMessagesForClient {
    /// The client entity.
    pub client: String,
    /// Whether spans besides the expected ones are allowed (at every level).
    #[serde(default)]
    pub ignore_extra_spans: bool,
    /// The spans with no parent among the client's, in the order they started.
    pub spans: Vec<ExpectedSpan>,
}

/// One expected span (spec "expectTracingMessages", span object).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedSpan {
    /// Its name.
    pub name: String,
    /// Its attributes, matched as a root document.
    pub attributes: Document,
    /// The spans nested in it, in the order they started.
    #[serde(default)]
    pub nested: Vec<ExpectedSpan>,
}

/// The log messages one client must have logged (spec
/// "expectedLogMessagesForClient").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedLogMessagesForClient {
    /// The client entity.
    pub client: String,
    /// The messages in order.
    pub messages: Vec<ExpectedLogMessage>,
    /// Messages left out before matching.
    #[serde(default)]
    pub ignore_messages: Vec<ExpectedLogMessage>,
    /// Whether messages after the expected ones are allowed.
    #[serde(default)]
    pub ignore_extra_messages: bool,
}

/// One expected log message (spec "expectedLogMessage").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedLogMessage {
    /// The level's name, e.g. `"debug"`.
    pub level: String,
    /// The component, e.g. `"command"`.
    pub component: String,
    /// Whether the `failure` must be (or must not be) redacted.
    pub failure_is_redacted: Option<bool>,
    /// The fields, matched as a root-level document.
    pub data: Document,
}

/// A field that is `Some` whenever the key is present, even when its value is null
/// (serde's `Option` would read null as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Bson>, D::Error> {
    Bson::deserialize(deserializer).map(Some)
}

/// Reads Extended JSON text (canonical or relaxed) as a BSON value.
pub fn parse_extended_json(text: &str) -> Result<Bson, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    Bson::try_from(json).map_err(|e| format!("not Extended JSON: {e}"))
}

/// Reads a test file.
pub fn read_file(path: &Path) -> Result<TestFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let Bson::Document(document) = parse_extended_json(&text)? else {
        return Err("the file is not a JSON object".to_owned());
    };
    bson::deserialize_from_document(document).map_err(|e| format!("not a unified test file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::oid::ObjectId;

    fn parse(text: &str) -> TestFile {
        let Bson::Document(document) = parse_extended_json(text).unwrap() else {
            panic!("not a document");
        };
        bson::deserialize_from_document(document).unwrap()
    }

    #[test]
    fn a_file_is_read_with_its_extended_json_values_and_key_order() {
        let file = parse(
            r#"{
              "description": "d", "schemaVersion": "1.4",
              "runOnRequirements": [{ "minServerVersion": "4.4", "topologies": ["single"] }],
              "createEntities": [
                { "client": { "id": "client0", "observeEvents": ["commandStartedEvent"] } },
                { "database": { "id": "db0", "client": "client0", "databaseName": "d" } },
                { "session": { "id": "session0", "client": "client0" } }
              ],
              "initialData": [{ "collectionName": "c", "databaseName": "d",
                                "documents": [{ "_id": { "$oid": "000000000000000000000001" } }] }],
              "tests": [{
                "description": "t",
                "operations": [
                  { "name": "runCommand", "object": "db0",
                    "arguments": { "command": { "ping": 1, "comment": { "$numberLong": "5" } } },
                    "expectResult": null },
                  { "name": "runCommand", "object": "db0", "expectError": { "errorCode": 2 } }
                ]
              }]
            }"#,
        );
        assert_eq!(file.schema_version, "1.4");
        let requirement = &file.run_on_requirements.as_ref().unwrap()[0];
        assert_eq!(requirement.min_server_version.as_deref(), Some("4.4"));
        let kinds: Vec<_> = file.create_entities.iter().map(|e| e.kind()).collect();
        assert_eq!(kinds, ["client", "database", "session"]);
        let id = ObjectId::parse_str("000000000000000000000001").unwrap();
        assert_eq!(
            file.initial_data[0].documents[0].get_object_id("_id").ok(),
            Some(id)
        );
        let operations = &file.tests[0].operations;
        let command = operations[0].arguments.get_document("command").unwrap();
        assert_eq!(command.keys().collect::<Vec<_>>(), ["ping", "comment"]);
        assert_eq!(command.get("comment"), Some(&Bson::Int64(5)));
        // A null expectResult is an expectation, unlike an absent one.
        assert_eq!(operations[0].expect_result, Some(Bson::Null));
        assert_eq!(operations[1].expect_result, None);
        assert_eq!(
            operations[1].expect_error.as_ref().unwrap().error_code,
            Some(2)
        );
    }
}
