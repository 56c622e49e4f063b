//! The operations on databases and clients (spec "Database Operations", "Client
//! Operations"), the index operations of collections, and
//! `runCursorCommand`/`createCommandCursor` (Run Command spec).

use std::time::Duration;

use anymongo::crud::{CursorType, RunCursorCommandOptions, TimeoutMode};
use anymongo::enumerate::{ListCollectionsOptions, ListDatabasesOptions};
use anymongo::handshake::DriverInfo;
use anymongo::index_management::{
    CreateIndexOptions, DropIndexOptions, IndexModel, IndexOptions, ListIndexesOptions,
};
use anymongo::options::{CreateCollectionOptions, SelectionCriteria};
use anymongo::session::ClientSession;
use anymongo::{Cursor, Database};
use bson::{doc, Bson, Document};

use super::arguments::Arguments;
use super::crud::{drain, drain_tailable, opens_tailable_cursor};
use super::entities::{self, CollectionEntity, Entity, EntityMap};
use super::model::Operation;
use super::operations::{first_key, Context, Returned};
use super::Abort;

/// What every database operation starts with: the database entity, the session the
/// `session` argument names, and the arguments left to take.
struct Call<'a> {
    database: Database,
    session: Option<ClientSession>,
    arguments: Arguments<'a>,
}

impl<'a> Call<'a> {
    fn new(operation: &'a Operation, entities: &EntityMap) -> Result<Self, Abort> {
        let database = entities.database(&operation.object)?.database.clone();
        let mut arguments = Arguments::of(operation);
        let session = arguments.session(entities)?;
        Ok(Call {
            database,
            session,
            arguments,
        })
    }

    /// The `command` argument, its first key named by `commandName` (which languages
    /// that lose key order need; here it is honoured by moving that key first), and
    /// the `readPreference` argument.
    fn command(&mut self) -> Result<(Document, Option<SelectionCriteria>), Abort> {
        let command = self.arguments.document("command")?;
        // Optional: the command's first key names it then.
        let name = match self.arguments.optional("commandName") {
            Some(Bson::String(name)) => Some(name),
            Some(other) => return Err(Abort::Failed(format!("commandName {other}"))),
            None => None,
        };
        let preference = self
            .arguments
            .optional("readPreference")
            .map(selection_criteria)
            .transpose()?;
        let command = match name {
            Some(name) => first_key(&command, &name)?,
            None => command,
        };
        Ok((command, preference))
    }
}

/// A `readPreference` argument, read as the driver reads the option of the same name.
fn selection_criteria(preference: Bson) -> Result<SelectionCriteria, Abort> {
    let concerns = entities::concerns(&doc! { "readPreference": preference }, "runCommand")?;
    Ok(concerns.selection_criteria.unwrap_or_default())
}

/// Spec `runCommand`: the command as given; the result is the reply.
pub async fn run_command(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let mut call = Call::new(operation, &context.entities)?;
    let (command, preference) = call.command()?;
    call.arguments.done()?;
    let mut run = call.database.run_command(command);
    if let Some(preference) = preference {
        run = run.selection_criteria(preference);
    }
    let reply = match call.session.as_ref() {
        Some(session) => run.session(session).await,
        None => run.await,
    };
    Ok(reply.map(|reply| Some(Bson::Document(reply))))
}

/// The cursor of `runCursorCommand` or `createCommandCursor`, with the `cursorType`
/// and the getMore options `batchSize`, `maxTimeMS` and `comment`.
async fn command_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<anymongo::Result<Cursor<Document>>, Abort> {
    let mut call = Call::new(operation, &context.entities)?;
    let (command, selection_criteria) = call.command()?;
    let batch_size = match call.arguments.optional("batchSize") {
        None => None,
        Some(size) => Some(
            size.as_i32()
                .and_then(|size| u32::try_from(size).ok())
                .ok_or_else(|| Abort::Failed(format!("batchSize {size}")))?,
        ),
    };
    let max_time = match call.arguments.optional("maxTimeMS") {
        None => None,
        Some(ms) => Some(Duration::from_millis(
            ms.as_i32()
                .and_then(|ms| u64::try_from(ms).ok())
                .ok_or_else(|| Abort::Failed(format!("maxTimeMS {ms}")))?,
        )),
    };
    let cursor_type = match call.arguments.optional("cursorType") {
        None => None,
        Some(name) => Some(
            bson::deserialize_from_bson::<CursorType>(name.clone())
                .map_err(|_| Abort::Failed(format!("cursorType {name}")))?,
        ),
    };
    let timeout_mode = match call.arguments.optional("timeoutMode") {
        None => None,
        Some(mode) => Some(
            bson::deserialize_from_bson::<TimeoutMode>(mode.clone())
                .map_err(|_| Abort::Failed(format!("timeoutMode {mode}")))?,
        ),
    };
    let options = RunCursorCommandOptions {
        selection_criteria,
        cursor_type,
        batch_size,
        max_time,
        comment: call.arguments.optional("comment"),
        timeout_mode,
    };
    call.arguments.done()?;
    let run = call
        .database
        .run_cursor_command(command)
        .with_options(options);
    Ok(match call.session.as_ref() {
        Some(session) => run.session(session).await.map(Cursor::from),
        None => run.await,
    })
}

/// Spec `runCursorCommand`: the result is every document of the cursor (of a tailable
/// one, up to its first empty batch).
pub async fn run_cursor_command(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let cursor = command_cursor(operation, context).await?;
    Ok(match opens_tailable_cursor(operation) {
        true => drain_tailable(cursor).await,
        false => drain(cursor).await,
    })
}

/// Spec `createCommandCursor`: the cursor becomes the result entity.
pub async fn create_command_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let cursor = command_cursor(operation, context).await?;
    Ok(context.save_cursor(cursor))
}

/// Spec `listDatabases` (`names`: `listDatabaseNames`) with the driver's
/// `Client::list_databases` and `list_database_names`; the result is the databases'
/// documents, or their names.
pub async fn list_databases(
    operation: &Operation,
    context: &mut Context,
    names: bool,
) -> Result<Returned, Abort> {
    let client = context.entities.client(&operation.object)?.client.clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let options: ListDatabasesOptions = arguments.options(LIST_DATABASES)?;
    if names {
        let names = match &session {
            Some(session) => {
                client
                    .list_database_names()
                    .with_options(options)
                    .session(session)
                    .await
            }
            None => client.list_database_names().with_options(options).await,
        };
        return Ok(names.map(|names| Some(strings(names))));
    }
    let databases = match &session {
        Some(session) => {
            client
                .list_databases()
                .with_options(options)
                .session(session)
                .await
        }
        None => client.list_databases().with_options(options).await,
    };
    match databases {
        Ok(databases) => {
            let documents = databases
                .iter()
                .map(bson::serialize_to_bson)
                .collect::<Result<_, _>>()
                .map_err(|error| Abort::Failed(format!("listDatabases result: {error}")))?;
            Ok(Ok(Some(Bson::Array(documents))))
        }
        Err(error) => Ok(Err(error)),
    }
}

/// The options of `listDatabases` (`anymongo::enumerate::ListDatabasesOptions`);
/// `nameOnly` is what `listDatabaseNames` sets.
const LIST_DATABASES: &[&str] = &["filter", "authorizedDatabases", "comment"];
/// The options of `listCollections` (`anymongo::enumerate::ListCollectionsOptions`).
const LIST_COLLECTIONS: &[&str] = &[
    "filter",
    "batchSize",
    "authorizedCollections",
    "comment",
    "timeoutMode",
];
/// The options of `listIndexes` (`anymongo::index_management::ListIndexesOptions`).
const LIST_INDEXES: &[&str] = &[
    "maxTimeMS",
    "batchSize",
    "comment",
    "rawData",
    "timeoutMode",
];

/// Spec `listCollections` (`names`: `listCollectionNames`) with the driver's
/// `Database::list_collections` and `list_collection_names`; pymongo's
/// `listCollectionObjects` is the same; the result is the collections' documents, or
/// their names.
pub async fn list_collections(
    operation: &Operation,
    context: &mut Context,
    names: bool,
) -> Result<Returned, Abort> {
    let Call {
        database,
        session,
        arguments,
    } = Call::new(operation, &context.entities)?;
    let options: ListCollectionsOptions = arguments.options(LIST_COLLECTIONS)?;
    if names {
        let names = match &session {
            Some(session) => {
                database
                    .list_collection_names()
                    .with_options(options)
                    .session(session)
                    .await
            }
            None => database.list_collection_names().with_options(options).await,
        };
        return Ok(names.map(|names| Some(strings(names))));
    }
    let cursor = match &session {
        Some(session) => database
            .list_collections()
            .with_options(options)
            .session(session)
            .await
            .map(Cursor::from),
        None => database.list_collections().with_options(options).await,
    };
    Ok(drain(cursor.map(Cursor::with_type)).await)
}

/// Spec `listIndexes` (`names`: `listIndexNames`) on a collection entity, with the
/// driver's `Collection::list_indexes` and `list_index_names`.
pub async fn list_indexes(
    operation: &Operation,
    context: &mut Context,
    names: bool,
) -> Result<Returned, Abort> {
    let collection = context
        .entities
        .collection(&operation.object)?
        .collection
        .clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let options: ListIndexesOptions = arguments.options(LIST_INDEXES)?;
    if names {
        let names = match &session {
            Some(session) => {
                collection
                    .list_index_names()
                    .with_options(options)
                    .session(session)
                    .await
            }
            None => collection.list_index_names().with_options(options).await,
        };
        return Ok(names.map(|names| Some(strings(names))));
    }
    let cursor = match &session {
        Some(session) => collection
            .list_indexes()
            .with_options(options)
            .session(session)
            .await
            .map(Cursor::from),
        None => collection.list_indexes().with_options(options).await,
    };
    Ok(drain(cursor.map(Cursor::with_type)).await)
}

fn strings(names: Vec<String>) -> Bson {
    Bson::Array(names.into_iter().map(Bson::String).collect())
}

/// Spec `createIndex`, with the driver's `Collection::create_index`: `keys`, and the
/// index's options (`name`, `unique`...); the result is the index's name.
pub async fn create_index(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let collection = context
        .entities
        .collection(&operation.object)?
        .collection
        .clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let keys = arguments.document("keys")?;
    let known: Vec<&str> = CREATE_INDEX.iter().chain(INDEX_OPTIONS).copied().collect();
    let (options, index_options) = split(arguments.rest(&known)?, CREATE_INDEX);
    let options: CreateIndexOptions = bson::deserialize_from_document(options)
        .map_err(|error| Abort::Failed(format!("createIndex options: {error}")))?;
    let index_options: IndexOptions = bson::deserialize_from_document(index_options)
        .map_err(|error| Abort::Failed(format!("createIndex index options: {error}")))?;
    let index = IndexModel::builder()
        .keys(keys)
        .options(index_options)
        .build();
    let name = match &session {
        Some(session) => {
            collection
                .create_index(index)
                .with_options(options)
                .session(session)
                .await
        }
        None => collection.create_index(index).with_options(options).await,
    };
    Ok(name.map(|name| Some(Bson::String(name.index_name))))
}

/// The options of `createIndex` that are the command's (`CreateIndexOptions`); the
/// others are the index's own.
const CREATE_INDEX: &[&str] = &[
    "commitQuorum",
    "maxTimeMS",
    "comment",
    "rawData",
    "writeConcern",
];

/// The options of an index itself (Index Management spec, "IndexOptions").
const INDEX_OPTIONS: &[&str] = &[
    "name",
    "unique",
    "sparse",
    "expireAfterSeconds",
    "partialFilterExpression",
    "collation",
    "hidden",
    "storageEngine",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "wildcardProjection",
    "version",
];

/// `arguments` split into those named in `known` and the others.
fn split(arguments: Document, known: &[&str]) -> (Document, Document) {
    arguments
        .into_iter()
        .partition(|(key, _)| known.contains(&key.as_str()))
}

/// Spec `dropIndex` (`all`: `dropIndexes`), with the driver's `Collection::drop_index`
/// and `drop_indexes`.
pub async fn drop_index(
    operation: &Operation,
    context: &mut Context,
    all: bool,
) -> Result<Returned, Abort> {
    let collection = context
        .entities
        .collection(&operation.object)?
        .collection
        .clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let name = match all {
        true => None,
        false => Some(arguments.string("name")?),
    };
    let options: DropIndexOptions =
        arguments.options(&["maxTimeMS", "comment", "rawData", "writeConcern"])?;
    let dropped = match (&name, &session) {
        (Some(name), Some(session)) => {
            collection
                .drop_index(name)
                .with_options(options)
                .session(session)
                .await
        }
        (Some(name), None) => collection.drop_index(name).with_options(options).await,
        (None, Some(session)) => {
            collection
                .drop_indexes()
                .with_options(options)
                .session(session)
                .await
        }
        (None, None) => collection.drop_indexes().with_options(options).await,
    };
    Ok(dropped.map(|()| None))
}

/// Spec `dropCollection`, with the driver's `Collection::drop`.
pub async fn drop_collection(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let mut call = Call::new(operation, &context.entities)?;
    let name = call.arguments.string("collection")?;
    call.arguments.done()?;
    let collection = call.database.collection::<Document>(&name);
    let dropped = match call.session.as_ref() {
        Some(session) => collection.drop().session(session).await,
        None => collection.drop().await,
    };
    Ok(dropped.map(|()| None))
}

/// The options of `createCollection` the runner passes on to the `create` command,
/// whose fields they are (CRUD spec, "createCollection"; `encryptedFields` needs
/// Queryable Encryption's extra collections, which the driver does not create).
const CREATE_OPTIONS: &[&str] = &[
    "capped",
    "changeStreamPreAndPostImages",
    "clusteredIndex",
    "collation",
    "comment",
    "expireAfterSeconds",
    "indexOptionDefaults",
    "max",
    "pipeline",
    "size",
    "storageEngine",
    "timeseries",
    "validationAction",
    "validationLevel",
    "validator",
    "viewOn",
];

/// Spec `appendMetadata` on a client, with the driver's `Client::append_metadata`:
/// `driverInfoOptions` (`name`, `version`, `platform`).
pub async fn append_metadata(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let client = context.entities.client(&operation.object)?.client.clone();
    let mut arguments = Arguments::of(operation);
    let info = arguments.document("driverInfoOptions")?;
    arguments.done()?;
    let field = |name: &str| info.get_str(name).ok().map(str::to_owned);
    let info = DriverInfo {
        name: field("name").unwrap_or_default(),
        version: field("version"),
        platform: field("platform"),
    };
    Ok(client.append_metadata(info).map(|()| None))
}

/// Spec `dropDatabase` on a client, with the driver's `Database::drop`: the database
/// named by `database` is dropped.
pub async fn drop_database(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let client = context.entities.client(&operation.object)?.client.clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let name = arguments.string("database")?;
    arguments.done()?;
    let database = client.database(&name);
    let dropped = match &session {
        Some(session) => database.drop().session(session).await,
        None => database.drop().await,
    };
    Ok(dropped.map(|()| None))
}

/// Spec `modifyCollection`, with the driver's `Database::modify_collection`: `collection`,
/// and the `collMod` command's fields.
pub async fn modify_collection(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let Call {
        database,
        session,
        mut arguments,
    } = Call::new(operation, &context.entities)?;
    let name = arguments.string("collection")?;
    let options = arguments.rest(MODIFY_OPTIONS)?;
    let modify = database.modify_collection(&name, options);
    let modified = match &session {
        Some(session) => modify.session(session).await,
        None => modify.await,
    };
    Ok(modified.map(|()| None))
}

/// The fields of `collMod` a test may give.
const MODIFY_OPTIONS: &[&str] = &[
    "validator",
    "validationLevel",
    "validationAction",
    "index",
    "viewOn",
    "pipeline",
    "expireAfterSeconds",
    "changeStreamPreAndPostImages",
    "timeseries",
];

/// Spec `createCollection`, with the driver's `Database::create_collection`; the new
/// collection becomes the result entity.
pub async fn create_collection(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let Call {
        database,
        session,
        mut arguments,
    } = Call::new(operation, &context.entities)?;
    let name = arguments.string("collection")?;
    let options: CreateCollectionOptions = arguments.options(CREATE_OPTIONS)?;
    let create = database.create_collection(&name).with_options(options);
    let created = match &session {
        Some(session) => create.session(session).await,
        None => create.await,
    };
    let collection = database.collection::<Document>(&name);
    match created {
        Ok(()) => {
            context.result_entity = Some(Entity::Collection(CollectionEntity { collection }));
            Ok(Ok(None))
        }
        Err(error) => Ok(Err(error)),
    }
}
