//! The entity map of a test (spec "Entity Map", "entity") and the creation of its
//! entities.

use std::collections::HashMap;
use std::time::Duration;

use anymongo::rt::BoxFuture;

use anymongo::client::ClientConfig;
use anymongo::crud::AggregateOptions;
use anymongo::database::Concerns;
use anymongo::gridfs::GridFsBucket;
use anymongo::options::OpentelemetryOptions;
use anymongo::sdam::description::TopologyDescription;
use anymongo::session::{ClientSession, SessionOptions};
use anymongo::versioned_api::{ServerApi, ServerApiVersion};
use anymongo::{ChangeStream, Client, ClientOptions, Collection, Cursor, Database};
use bson::{Bson, Document};

use super::events::{EventLog, Observe};
use super::logs::{observed_client, LogObserver};
use super::model::{ClientDescription, EntityDescription};
use super::threads::ThreadEntity;
use super::Abort;

/// An entity of a test.
pub enum Entity {
    /// A client and the events it published.
    Client(ClientEntity),
    /// A database of a client entity.
    Database(DatabaseEntity),
    /// A collection of a database entity.
    Collection(CollectionEntity),
    /// An explicit session of a client entity.
    Session(SessionEntity),
    /// A cursor saved by `createFindCursor` or `createCommandCursor`, or a change
    /// stream saved by `createChangeStream`. Boxed: the largest variant by far.
    Cursor(Box<CursorEntity>),
    /// A GridFS bucket of a database entity.
    Bucket(Box<GridFsBucket>),
    /// A value saved by `saveResultAsEntity`.
    Value(Bson),
    /// A test runner thread.
    Thread(ThreadEntity),
    /// A client's topology description, saved by `recordTopologyDescription`.
    TopologyDescription(Box<TopologyDescription>),
}

impl Entity {
    /// The entity's type, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Entity::Client(_) => "client",
            Entity::Database(_) => "database",
            Entity::Collection(_) => "collection",
            Entity::Session(_) => "session",
            Entity::Cursor(_) => "cursor",
            Entity::Bucket(_) => "bucket",
            Entity::Value(_) => "BSON value",
            Entity::Thread(_) => "thread",
            Entity::TopologyDescription(_) => "topology description",
        }
    }

    /// What the entity is, for messages: its type and, for a database or collection,
    /// its namespace.
    pub fn describe(&self) -> String {
        match self {
            Entity::Database(database) => format!("database {:?}", database.database.name()),
            Entity::Collection(collection) => {
                format!("collection {:?}", collection.collection.namespace())
            }
            other => other.kind().to_owned(),
        }
    }
}

/// A handle [`EntityMap::set_timeout`] replaced for one operation.
// One per operation, short-lived: boxing the larger handles would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Saved {
    /// A client entity's client.
    Client(Client),
    /// A database entity's database.
    Database(Database),
    /// A collection entity's collection.
    Collection(Collection<Document>),
    /// A session entity's session.
    Session(ClientSession),
    /// A bucket entity's bucket.
    Bucket(Box<GridFsBucket>),
}

/// A client entity.
pub struct ClientEntity {
    /// The client.
    pub client: Client,
    /// Everything it published.
    pub events: EventLog,
    /// Which events `expectEvents` looks at.
    pub observe: Observe,
    /// Its log messages, when `observeLogMessages` asks for them.
    pub logs: Option<LogObserver>,
    /// Whether it traces (`observeTracingMessages`); the others are created with
    /// tracing off, whatever the environment says.
    pub traces: bool,
}

/// A database entity.
#[derive(Clone)]
pub struct DatabaseEntity {
    /// The database handle.
    pub database: Database,
}

/// A collection entity.
#[derive(Clone)]
pub struct CollectionEntity {
    /// The collection handle, with the entity's concerns.
    pub collection: Collection<Document>,
}

/// A session entity.
pub struct SessionEntity {
    /// The session.
    pub session: ClientSession,
}

/// A cursor entity.
pub struct CursorEntity {
    /// The cursor; `None` once closed.
    pub cursor: Option<Iterable>,
}

/// What a cursor entity iterates (spec "entity", `cursor` and `changeStream`).
pub enum Iterable {
    /// A cursor.
    Cursor(Cursor<Document>),
    /// A change stream, its events as documents.
    ChangeStream(ChangeStream<Document>),
}

/// The entities of one test, by name.
#[derive(Default)]
pub struct EntityMap {
    entities: HashMap<String, Entity>,
}

impl EntityMap {
    /// Adds an entity; a name can be used once (spec "Entity Map").
    pub fn insert(&mut self, id: &str, entity: Entity) -> Result<(), String> {
        if self.entities.contains_key(id) {
            return Err(format!("an entity named {id:?} already exists"));
        }
        self.entities.insert(id.to_owned(), entity);
        Ok(())
    }

    /// The entity named `id`.
    pub fn get(&self, id: &str) -> Result<&Entity, String> {
        self.entities
            .get(id)
            .ok_or_else(|| format!("there is no entity named {id:?}"))
    }

    /// The client entity named `id`.
    pub fn client(&self, id: &str) -> Result<&ClientEntity, String> {
        match self.get(id)? {
            Entity::Client(client) => Ok(client),
            other => Err(not_a(id, other, "client")),
        }
    }

    /// The database entity named `id`.
    pub fn database(&self, id: &str) -> Result<&DatabaseEntity, String> {
        match self.get(id)? {
            Entity::Database(database) => Ok(database),
            other => Err(not_a(id, other, "database")),
        }
    }

    /// The collection entity named `id`.
    pub fn collection(&self, id: &str) -> Result<&CollectionEntity, String> {
        match self.get(id)? {
            Entity::Collection(collection) => Ok(collection),
            other => Err(not_a(id, other, "collection")),
        }
    }

    /// The GridFS bucket entity named `id`.
    pub fn bucket(&self, id: &str) -> Result<&GridFsBucket, String> {
        match self.get(id)? {
            Entity::Bucket(bucket) => Ok(bucket),
            other => Err(not_a(id, other, "bucket")),
        }
    }

    /// The session entity named `id`.
    pub fn session(&self, id: &str) -> Result<&SessionEntity, String> {
        match self.get(id)? {
            Entity::Session(session) => Ok(session),
            other => Err(not_a(id, other, "session")),
        }
    }

    /// The session entity named `id`, to change.
    pub fn session_mut(&mut self, id: &str) -> Result<&mut SessionEntity, String> {
        match self.get_mut(id)? {
            Entity::Session(session) => Ok(session),
            other => Err(not_a(id, other, "session")),
        }
    }

    /// The thread entity named `id`.
    pub fn thread(&self, id: &str) -> Result<&ThreadEntity, String> {
        match self.get(id)? {
            Entity::Thread(thread) => Ok(thread),
            other => Err(not_a(id, other, "thread")),
        }
    }

    /// The thread entity named `id`, to wait for.
    pub fn thread_mut(&mut self, id: &str) -> Result<&mut ThreadEntity, String> {
        match self.get_mut(id)? {
            Entity::Thread(thread) => Ok(thread),
            other => Err(not_a(id, other, "thread")),
        }
    }

    /// The topology description entity named `id`.
    pub fn topology_description(&self, id: &str) -> Result<&TopologyDescription, String> {
        match self.get(id)? {
            Entity::TopologyDescription(description) => Ok(description),
            other => Err(not_a(id, other, "topology description")),
        }
    }

    /// The entities an operation on a thread entity can use ([`super::threads`]): a
    /// copy of the clients (without their log observers, which stay with the test),
    /// databases, collections, buckets, values and topology descriptions; the copies
    /// share connections and event logs with the originals. Sessions and cursors are
    /// left out: they "SHOULD NOT be used in operations on multiple different threads
    /// entities" (spec "runOnThread").
    pub fn shared(&self) -> EntityMap {
        let entities = self.entities.iter().filter_map(|(id, entity)| {
            let copy = match entity {
                Entity::Client(client) => Entity::Client(ClientEntity {
                    client: client.client.clone(),
                    events: client.events.clone(),
                    observe: client.observe.clone(),
                    logs: None,
                    traces: client.traces,
                }),
                Entity::Database(database) => Entity::Database(database.clone()),
                Entity::Collection(collection) => Entity::Collection(collection.clone()),
                Entity::Bucket(bucket) => Entity::Bucket(bucket.clone()),
                Entity::Value(value) => Entity::Value(value.clone()),
                Entity::TopologyDescription(description) => {
                    Entity::TopologyDescription(description.clone())
                }
                Entity::Session(_) | Entity::Cursor(_) | Entity::Thread(_) => return None,
            };
            Some((id.clone(), copy))
        });
        EntityMap {
            entities: entities.collect(),
        }
    }

    /// The cursor entity named `id`, to iterate or close.
    pub fn cursor_mut(&mut self, id: &str) -> Result<&mut CursorEntity, String> {
        match self.get_mut(id)? {
            Entity::Cursor(cursor) => Ok(cursor.as_mut()),
            other => Err(not_a(id, other, "cursor")),
        }
    }

    /// Gives the client, database or collection `id` the timeoutMS `timeout`, for
    /// one operation; [`EntityMap::restore`] puts back what it returns.
    pub fn set_timeout(&mut self, id: &str, timeout: Duration) -> Result<Saved, Abort> {
        Ok(match self.get_mut(id)? {
            Entity::Client(entity) => {
                let saved = Saved::Client(entity.client.clone());
                entity.client = entity.client.with_timeout(timeout);
                saved
            }
            Entity::Database(entity) => {
                let saved = Saved::Database(entity.database.clone());
                entity.database = entity.database.with_timeout(timeout);
                saved
            }
            Entity::Collection(entity) => {
                let saved = Saved::Collection(entity.collection.clone());
                entity.collection = entity.collection.with_timeout(timeout);
                saved
            }
            Entity::Bucket(bucket) => {
                let saved = Saved::Bucket(bucket.clone());
                **bucket = bucket.with_timeout(timeout);
                saved
            }
            Entity::Session(entity) => {
                let saved = Saved::Session(entity.session.clone());
                entity.session = entity.session.with_timeout(timeout);
                saved
            }
            other => {
                return Err(Abort::Unsupported(format!(
                    "timeoutMS on an operation of a {}",
                    other.kind()
                )))
            }
        })
    }

    /// Puts back the handle [`EntityMap::set_timeout`] replaced.
    pub fn restore(&mut self, id: &str, saved: Saved) {
        match (self.entities.get_mut(id), saved) {
            (Some(Entity::Client(entity)), Saved::Client(client)) => entity.client = client,
            (Some(Entity::Database(entity)), Saved::Database(database)) => {
                entity.database = database
            }
            (Some(Entity::Collection(entity)), Saved::Collection(collection)) => {
                entity.collection = collection
            }
            (Some(Entity::Session(entity)), Saved::Session(session)) => entity.session = session,
            (Some(Entity::Bucket(entity)), Saved::Bucket(bucket)) => *entity = bucket,
            _ => {}
        }
    }

    fn get_mut(&mut self, id: &str) -> Result<&mut Entity, String> {
        self.entities
            .get_mut(id)
            .ok_or_else(|| format!("there is no entity named {id:?}"))
    }

    /// The BSON value saved as `id` (spec "$$matchesEntity").
    pub fn value(&self, id: &str) -> Result<&Bson, String> {
        match self.get(id)? {
            Entity::Value(value) => Ok(value),
            other => Err(not_a(id, other, "BSON value")),
        }
    }

    /// The logical session id of the session entity `id` (spec "$$sessionLsid").
    /// The `lsid` of session `id`, which it keeps after it ended.
    pub fn session_lsid(&self, id: &str) -> Result<Document, String> {
        Ok(self.session(id)?.session.id().clone())
    }
}

fn not_a(id: &str, entity: &Entity, wanted: &str) -> String {
    format!(
        "the entity {id:?} is a {}, not a {wanted}",
        entity.describe()
    )
}

/// Creates the entity `description` and adds it to `entities`; `uri` is the test
/// server's connection string, which client entities extend with their `uriOptions`.
pub async fn create(
    description: &EntityDescription,
    entities: &mut EntityMap,
    uri: &str,
) -> Result<(), Abort> {
    match description {
        EntityDescription::Client(client) => {
            let entity = create_client(client, uri)?;
            entities.insert(&client.id, Entity::Client(entity))?;
        }
        EntityDescription::Database(database) => {
            let handle = entities
                .client(&database.client)?
                .client
                .database(&database.database_name);
            let handle = match &database.database_options {
                Some(options) => handle.with_concerns(concerns(options, "databaseOptions")?),
                None => handle,
            };
            let entity = DatabaseEntity { database: handle };
            entities.insert(&database.id, Entity::Database(entity))?;
        }
        EntityDescription::Collection(collection) => {
            let handle = entities
                .database(&collection.database)?
                .database
                .collection(&collection.collection_name);
            let handle = match &collection.collection_options {
                Some(options) => handle.with_concerns(concerns(options, "collectionOptions")?),
                None => handle,
            };
            let entity = CollectionEntity { collection: handle };
            entities.insert(&collection.id, Entity::Collection(entity))?;
        }
        EntityDescription::Session(session) => {
            let options = session_options(session.session_options.as_ref(), entities)?;
            let client = &entities.client(&session.client)?.client;
            let entity = SessionEntity {
                session: client
                    .start_session()
                    .with_options(options)
                    .await
                    .map_err(|e| Abort::Failed(format!("cannot start the session: {e}")))?,
            };
            entities.insert(&session.id, Entity::Session(entity))?;
        }
        EntityDescription::Bucket(bucket) => {
            let (id, bucket) = super::gridfs::create_bucket(bucket, entities)?;
            entities.insert(&id, Entity::Bucket(Box::new(bucket)))?;
        }
        EntityDescription::Thread(thread) => {
            let id = thread
                .get_str("id")
                .map_err(|_| format!("a thread without an id: {thread}"))?;
            entities.insert(id, Entity::Thread(ThreadEntity::start(id)))?;
        }
        other => {
            return Err(Abort::Unsupported(format!(
                "{} entities are not supported",
                other.kind()
            )))
        }
    }
    Ok(())
}

/// The concerns of `databaseOptions` or `collectionOptions` (spec "entity":
/// `readConcern`, `readPreference`, `writeConcern`, `timeoutMS`). The concerns are
/// read as the driver reads the same options of an aggregate, the one options type
/// that carries all three.
pub fn concerns(options: &Document, what: &str) -> Result<Concerns, Abort> {
    const KNOWN: [&str; 4] = ["readConcern", "readPreference", "writeConcern", "timeoutMS"];
    if let Some(key) = options.keys().find(|key| !KNOWN.contains(&key.as_str())) {
        return Err(Abort::Unsupported(format!("{what}.{key} is not supported")));
    }
    let mut options = options.clone();
    let timeout = match options.remove("timeoutMS") {
        None => None,
        Some(millis) => Some(timeout_ms(&millis, what)?),
    };
    let parsed: AggregateOptions = bson::deserialize_from_document(options.clone())
        .map_err(|e| format!("{what} {options}: {e}"))?;
    Ok(Concerns {
        selection_criteria: parsed.selection_criteria,
        read_concern: parsed.read_concern,
        write_concern: parsed.write_concern,
        timeout,
    })
}

/// A `timeoutMS` (or `defaultTimeoutMS`) of the test, as a duration.
pub fn timeout_ms(millis: &Bson, what: &str) -> Result<std::time::Duration, Abort> {
    let millis = match millis {
        Bson::Int32(millis) => i64::from(*millis),
        Bson::Int64(millis) => *millis,
        other => return Err(Abort::Failed(format!("{what}: timeoutMS {other}"))),
    };
    u64::try_from(millis)
        .map(std::time::Duration::from_millis)
        .map_err(|_| Abort::Failed(format!("{what}: timeoutMS {millis}")))
}

/// A session entity's `sessionOptions` (spec "entity", `session`): `causalConsistency`,
/// `snapshot`, `defaultTransactionOptions`, `defaultTimeoutMS`, and `snapshotTime`,
/// the name of the entity that holds the timestamp (Sessions spec tests, "Specific
/// operations and behaviour for unified tests").
fn session_options(
    options: Option<&Document>,
    entities: &EntityMap,
) -> Result<SessionOptions, Abort> {
    let mut parsed = SessionOptions::default();
    for (key, value) in options.into_iter().flatten() {
        match (key.as_str(), value) {
            ("causalConsistency", Bson::Boolean(causal)) => {
                parsed.causal_consistency = Some(*causal)
            }
            ("defaultTransactionOptions", options) => {
                parsed.default_transaction_options = Some(
                    bson::deserialize_from_bson(options.clone())
                        .map_err(|e| format!("defaultTransactionOptions {options}: {e}"))?,
                )
            }
            ("snapshot", Bson::Boolean(snapshot)) => parsed.snapshot = Some(*snapshot),
            ("snapshotTime", Bson::String(id)) => match entities.value(id)? {
                Bson::Timestamp(time) => parsed.snapshot_time = Some(*time),
                other => {
                    return Err(Abort::Failed(format!(
                        "sessionOptions.snapshotTime: the entity {id:?} is {other}, not a timestamp"
                    )))
                }
            },
            ("defaultTimeoutMS", millis) => {
                parsed.default_timeout = Some(timeout_ms(millis, "sessionOptions")?)
            }
            (key, value) => {
                return Err(Abort::Unsupported(format!(
                    "sessionOptions.{key} ({value}) is not supported"
                )))
            }
        }
    }
    Ok(parsed)
}

/// A client entity's `serverApi`: `version`, and `strict` and `deprecationErrors`
/// when given.
fn server_api(description: &Document) -> Result<ServerApi, Abort> {
    let version = description
        .get_str("version")
        .map_err(|_| Abort::Failed(format!("serverApi without a version: {description}")))?;
    let version: ServerApiVersion = version.parse().map_err(|e| Abort::Failed(format!("{e}")))?;
    let mut api = ServerApi::builder().version(version).build();
    for (key, value) in description {
        match (key.as_str(), value) {
            ("version", _) => {}
            ("strict", Bson::Boolean(strict)) => api.strict = Some(*strict),
            ("deprecationErrors", Bson::Boolean(errors)) => api.deprecation_errors = Some(*errors),
            _ => {
                return Err(Abort::Failed(format!(
                    "serverApi.{key} ({value}) is not known"
                )))
            }
        }
    }
    Ok(api)
}

/// Spec "entity", `awaitMinPoolSizeMS`: after a client entity of `description` was
/// created, waits (at most that long) until its pool holds `minPoolSize` ready
/// connections — the test server is its one data-bearing member — then forgets the
/// events published meanwhile. The pool fills in the background, so its events are
/// polled.
pub fn await_min_pool_size(
    description: &EntityDescription,
    entities: &EntityMap,
) -> Result<BoxFuture<'static, Result<(), Abort>>, Abort> {
    let EntityDescription::Client(client) = description else {
        return Ok(Box::pin(async { Ok(()) }));
    };
    let Some(within) = &client.await_min_pool_size_ms else {
        return Ok(Box::pin(async { Ok(()) }));
    };
    let within = timeout_ms(within, "awaitMinPoolSizeMS")?;
    let min_pool_size = client
        .uri_options
        .iter()
        .flatten()
        .find(|(key, _)| key.eq_ignore_ascii_case("minPoolSize"))
        .and_then(|(_, value)| match value {
            Bson::Int32(n) => usize::try_from(*n).ok(),
            Bson::Int64(n) => usize::try_from(*n).ok(),
            _ => None,
        })
        .unwrap_or(0);
    let events = entities.client(&client.id)?.events.clone();
    let id = client.id.clone();
    Ok(Box::pin(async move {
        let deadline = tokio::time::Instant::now() + within;
        while events.connections_ready() < min_pool_size {
            if tokio::time::Instant::now() >= deadline {
                return Err(Abort::Failed(format!(
                    "the pool of {id} did not reach minPoolSize {min_pool_size} within {within:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        events.clear();
        Ok(())
    }))
}

/// Creates a client entity on the native runtime, recording its events.
fn create_client(description: &ClientDescription, uri: &str) -> Result<ClientEntity, Abort> {
    let unsupported = [
        (
            "storeEventsAsEntities",
            description.store_events_as_entities.is_some(),
        ),
        ("autoEncryptOpts", description.auto_encrypt_opts.is_some()),
    ];
    if let Some((what, _)) = unsupported.iter().find(|(_, used)| *used) {
        return Err(Abort::Unsupported(format!(
            "client entities with {what} are not supported"
        )));
    }
    // `useMultipleMongoses` chose `uri` (Context::client_uri_for): it only matters
    // behind load balancers here, the test server being no sharded cluster.
    let uri = with_uri_options(uri, description.uri_options.as_ref())?;
    let mut options =
        ClientOptions::parse_uri(&uri).map_err(|e| format!("cannot parse {uri}: {e}"))?;
    options.server_api = description
        .server_api
        .as_ref()
        .map(server_api)
        .transpose()?;
    if !options.warnings.is_empty() {
        return Err(Abort::Unsupported(format!(
            "uriOptions the driver does not support: {}",
            options.warnings.join(" ")
        )));
    }
    options.tracing = Some(tracing_options(
        description.observe_tracing_messages.as_ref(),
    )?);
    let events = EventLog::default();
    let options = events.record(options);
    let config = ClientConfig {
        // The command logging tests README: "Drivers MUST run the logging tests with
        // their max document length setting … set to a large value e.g. 10,000".
        log_max_document_length: Some(10_000),
        ..ClientConfig::default()
    };
    let (client, logs) = match &description.observe_log_messages {
        Some(observe) => {
            let (client, logs) = observed_client(options, observe, config)?;
            (client, Some(logs))
        }
        None => {
            let client = Client::with_config(options, config)
                .map_err(|e| format!("cannot create a client for {uri}: {e}"))?;
            (client, None)
        }
    };
    let observe = Observe {
        events: description.observe_events.clone(),
        ignored_commands: description.ignore_command_monitoring_events.clone(),
        sensitive_commands: description.observe_sensitive_commands,
    };
    Ok(ClientEntity {
        client,
        events,
        observe,
        logs,
        traces: description.observe_tracing_messages.is_some(),
    })
}

/// The OpenTelemetry options of a client entity with `observe`
/// (`observeTracingMessages`): tracing on with it, off without;
/// `enableCommandPayload` turns `db.query.text` on, long enough for any test's
/// command.
fn tracing_options(observe: Option<&Document>) -> Result<OpentelemetryOptions, String> {
    let payload = match observe.map(|observe| observe.get("enableCommandPayload")) {
        None | Some(None) => false,
        Some(Some(Bson::Boolean(payload))) => *payload,
        Some(Some(other)) => {
            return Err(format!(
                "observeTracingMessages.enableCommandPayload is not a boolean: {other}"
            ))
        }
    };
    Ok(OpentelemetryOptions::builder()
        .enabled(observe.is_some())
        .query_text_max_length(if payload { 1 << 20 } else { 0 })
        .build())
}

/// `uri` with `options` added to its query: an option given there replaces the same
/// option of `uri` (spec "entity", `uriOptions`: "Any keys in this object MUST override
/// conflicting keys in the connection string").
pub fn with_uri_options(uri: &str, options: Option<&Document>) -> Result<String, String> {
    let (base, query) = uri.split_once('?').unwrap_or((uri, ""));
    let options = options.cloned().unwrap_or_default();
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            !pair.is_empty() && !options.keys().any(|given| given.eq_ignore_ascii_case(key))
        })
        .map(str::to_owned)
        .collect();
    for (key, value) in &options {
        match (key.as_str(), value) {
            // Spec: readPreferenceTags maps to an array, one tag set per element.
            ("readPreferenceTags", Bson::Array(tag_sets)) => {
                for tags in tag_sets {
                    pairs.push(format!("{key}={}", uri_value(key, tags)?));
                }
            }
            _ => pairs.push(format!("{key}={}", uri_value(key, value)?)),
        }
    }
    // A query needs the `/` that ends the host list.
    let hosts = base.split_once("://").map_or(base, |(_, rest)| rest);
    let base = match hosts.contains('/') {
        true => base.to_owned(),
        false => format!("{base}/"),
    };
    Ok(match pairs.is_empty() {
        true => base,
        false => format!("{base}?{}", pairs.join("&")),
    })
}

/// A URI option's value as connection string text: `authMechanismProperties` as
/// `KEY:value,...`.
fn uri_value(key: &str, value: &Bson) -> Result<String, String> {
    Ok(match value {
        Bson::String(text) => percent_encode(text),
        Bson::Boolean(flag) => flag.to_string(),
        Bson::Int32(n) => n.to_string(),
        Bson::Int64(n) => n.to_string(),
        Bson::Double(n) if n.fract() == 0.0 => format!("{n:.0}"),
        Bson::Double(n) => n.to_string(),
        Bson::Document(properties) => properties
            .iter()
            .map(|(name, value)| Ok(format!("{name}:{}", uri_value(key, value)?)))
            .collect::<Result<Vec<_>, String>>()?
            .join(","),
        other => return Err(format!("uriOptions.{key}: cannot put {other} in a URI")),
    })
}

/// Percent-encodes the characters that would end or split a query value.
fn percent_encode(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '%' | '&' | '=' | '?' | '#' | '/' | ',' | ':' | ' ' | '+' => {
                let mut bytes = [0; 4];
                c.encode_utf8(&mut bytes)
                    .bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect()
            }
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn uri_options_are_added_and_override_the_uri_s_own() {
        let uri = "mongodb://127.0.0.1:27017/?tls=false&appName=old";
        let options = doc! {
            "appname": "new app",
            "retryWrites": false,
            "heartbeatFrequencyMS": 500,
            "w": "majority",
            "readPreferenceTags": ["dc:ny,rack:1", ""],
            "authMechanismProperties": { "SERVICE_NAME": "other" },
        };
        assert_eq!(
            with_uri_options(uri, Some(&options)).unwrap(),
            "mongodb://127.0.0.1:27017/?tls=false&appname=new%20app&retryWrites=false\
             &heartbeatFrequencyMS=500&w=majority&readPreferenceTags=dc%3Any%2Crack%3A1\
             &readPreferenceTags=&authMechanismProperties=SERVICE_NAME:other"
        );
        assert_eq!(
            with_uri_options("mongodb://127.0.0.1:27017", None).unwrap(),
            "mongodb://127.0.0.1:27017/"
        );
        let bad = with_uri_options(uri, Some(&doc! { "x": [1] })).unwrap_err();
        assert!(bad.contains("uriOptions.x"), "{bad}");
    }

    #[test]
    fn entities_are_found_by_name_and_type() {
        let mut entities = EntityMap::default();
        entities.insert("v", Entity::Value(Bson::Int32(1))).unwrap();
        let again = entities.insert("v", Entity::Value(Bson::Null)).unwrap_err();
        assert!(again.contains("already exists"), "{again}");
        assert_eq!(entities.value("v"), Ok(&Bson::Int32(1)));
        let wrong = entities.client("v").err().unwrap();
        assert_eq!(wrong, "the entity \"v\" is a BSON value, not a client");
        assert!(entities
            .database("nope")
            .err()
            .unwrap()
            .contains("no entity"));
        let lsid = entities.session_lsid("v").unwrap_err();
        assert!(lsid.contains("not a session"), "{lsid}");
    }

    #[test]
    fn a_snapshot_time_is_read_from_the_entity_it_names() {
        let mut entities = EntityMap::default();
        let time = bson::Timestamp {
            time: 7,
            increment: 1,
        };
        entities
            .insert("t", Entity::Value(Bson::Timestamp(time)))
            .unwrap();
        entities.insert("n", Entity::Value(Bson::Int32(1))).unwrap();
        let options = doc! { "snapshot": true, "snapshotTime": "t" };
        let parsed = session_options(Some(&options), &entities).unwrap();
        assert_eq!(parsed.snapshot_time, Some(time));
        for (name, why) in [("n", "not a timestamp"), ("none", "no entity")] {
            let options = doc! { "snapshot": true, "snapshotTime": name };
            assert!(matches!(
                session_options(Some(&options), &entities),
                Err(Abort::Failed(error)) if error.contains(why)
            ));
        }
        assert!(matches!(
            session_options(Some(&doc! { "x": 1 }), &entities),
            Err(Abort::Unsupported(why)) if why.contains("sessionOptions.x")
        ));
    }

    #[tokio::test]
    async fn unsupported_entities_and_client_options_are_reported_as_such() {
        let mut entities = EntityMap::default();
        let options = doc! { "readConcern": { "level": "majority" }, "timeoutMS": 1 };
        let parsed = concerns(&options, "collectionOptions").unwrap();
        assert_eq!(parsed.timeout, Some(std::time::Duration::from_millis(1)));
        let options = doc! { "readConcern": { "level": "majority" }, "batchSize": 1 };
        assert!(matches!(
            concerns(&options, "collectionOptions"),
            Err(Abort::Unsupported(why)) if why.contains("collectionOptions.batchSize")
        ));
        let client: ClientDescription =
            bson::deserialize_from_document(doc! { "id": "c", "storeEventsAsEntities": [] })
                .unwrap();
        let created = create(
            &EntityDescription::Client(Box::new(client)),
            &mut entities,
            "mongodb://127.0.0.1/",
        )
        .await;
        assert!(
            matches!(created, Err(Abort::Unsupported(why)) if why.contains("storeEventsAsEntities"))
        );
        let database: EntityDescription = bson::deserialize_from_document(
            doc! { "database": { "id": "d", "client": "c", "databaseName": "x" } },
        )
        .unwrap();
        let missing = create(&database, &mut entities, "mongodb://127.0.0.1/").await;
        assert!(
            matches!(missing, Err(Abort::Failed(why)) if why.contains("no entity named \"c\""))
        );
    }
}
