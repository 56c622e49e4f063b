//! The operations on databases and clients (spec "Database Operations", "Client
//! Operations") and `runCursorCommand`/`createCommandCursor` (Run Command spec).
//!
//! The driver has no helpers for listing databases, collections or indexes nor for
//! creating a collection: those operations send their command through
//! `Database::run_command_with` and `run_cursor_command_with`, which the Run Command
//! spec says are never retried, so their retryable-reads tests cannot pass (see
//! [`super::known_gaps`]).

use anymongo::session::ClientSession;
use anymongo::uri::ReadPreference;
use anymongo::{Cursor, Database};
use bson::{doc, Bson, Document};

use super::arguments::Arguments;
use super::crud::drain;
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
    fn command(&mut self) -> Result<(Document, Option<ReadPreference>), Abort> {
        let command = self.arguments.document("command")?;
        let name = self.arguments.string("commandName")?;
        let preference = self
            .arguments
            .optional("readPreference")
            .map(read_preference)
            .transpose()?;
        Ok((first_key(&command, &name)?, preference))
    }
}

/// A `readPreference` argument, read as the driver reads the option of the same name.
fn read_preference(preference: Bson) -> Result<ReadPreference, Abort> {
    let concerns = entities::concerns(&doc! { "readPreference": preference }, "runCommand")?;
    Ok(concerns.read_preference.unwrap_or_default())
}

/// Spec `runCommand`: the command as given; the result is the reply.
pub async fn run_command(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let mut call = Call::new(operation, &context.entities)?;
    let (command, preference) = call.command()?;
    call.arguments.done()?;
    let reply = call
        .database
        .run_command_with(command, preference, call.session.as_ref())
        .await;
    Ok(reply.map(|reply| Some(Bson::Document(reply))))
}

/// The options of `runCursorCommand` and `createCommandCursor` the driver has no
/// parameter for: they apply to the getMores (Run Command spec, "runCursorCommand"),
/// which `Database::run_cursor_command_with` sends with none.
const GET_MORE_OPTIONS: [&str; 5] = [
    "batchSize",
    "maxTimeMS",
    "comment",
    "cursorType",
    "timeoutMode",
];

/// The cursor of `runCursorCommand` or `createCommandCursor`.
async fn command_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<anymongo::Result<Cursor<Document>>, Abort> {
    if let Some(option) = GET_MORE_OPTIONS
        .iter()
        .find(|option| operation.arguments.contains_key(option))
    {
        return Err(Abort::Unsupported(format!(
            "{}: the option {option}: Database::run_cursor_command_with has no getMore \
             options",
            operation.name
        )));
    }
    let mut call = Call::new(operation, &context.entities)?;
    let (command, preference) = call.command()?;
    call.arguments.done()?;
    Ok(call
        .database
        .run_cursor_command_with(command, preference, call.session.as_ref())
        .await)
}

/// Spec `runCursorCommand`: the result is every document of the cursor.
pub async fn run_cursor_command(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    Ok(drain(command_cursor(operation, context).await?).await)
}

/// Spec `createCommandCursor`: the cursor becomes the result entity.
pub async fn create_command_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let cursor = command_cursor(operation, context).await?;
    Ok(context.save_cursor(cursor))
}

/// Spec `listDatabases` (`names`: `listDatabaseNames`), with the `listDatabases`
/// command on `admin`; the result is the `databases` array, or their names.
pub async fn list_databases(
    operation: &Operation,
    context: &mut Context,
    names: bool,
) -> Result<Returned, Abort> {
    let client = context.entities.client(&operation.object)?.client.clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let mut command = doc! { "listDatabases": 1 };
    if names {
        command.insert("nameOnly", true);
    }
    command.extend(arguments.rest(&["filter", "nameOnly", "authorizedDatabases"])?);
    let reply = client
        .database("admin")
        .run_command_with(command, None, session.as_ref())
        .await;
    Ok(reply.map(|reply| {
        let databases = reply.get_array("databases").cloned().unwrap_or_default();
        Some(Bson::Array(match names {
            true => names_of(databases),
            false => databases,
        }))
    }))
}

/// Spec `listCollections` (`names`: `listCollectionNames`); pymongo's
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
    let mut command = doc! { "listCollections": 1 };
    if names {
        command.insert("nameOnly", true);
    }
    command.extend(arguments.rest(&["filter", "batchSize", "authorizedCollections"])?);
    let cursor = database
        .run_cursor_command_with(command, None, session.as_ref())
        .await;
    listed(cursor, names).await
}

/// Spec `listIndexes` (`names`: `listIndexNames`) on a collection entity.
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
    let mut command = doc! { "listIndexes": collection.name() };
    command.extend(arguments.rest(&["batchSize"])?);
    let cursor = collection
        .database()
        .run_cursor_command_with(command, None, session.as_ref())
        .await;
    listed(cursor, names).await
}

/// Every document of a listing cursor, or (`names`) their `name`s.
async fn listed(
    cursor: anymongo::Result<Cursor<Document>>,
    names: bool,
) -> Result<Returned, Abort> {
    Ok(drain(cursor).await.map(|all| match (all, names) {
        (Some(Bson::Array(all)), true) => Some(Bson::Array(names_of(all))),
        (all, _) => all,
    }))
}

fn names_of(documents: Vec<Bson>) -> Vec<Bson> {
    documents
        .into_iter()
        .filter_map(|document| match document {
            Bson::Document(document) => document.get("name").cloned(),
            _ => None,
        })
        .collect()
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
    Ok(collection.drop(call.session.as_ref()).await.map(|()| None))
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

/// Spec `createCollection`, with the `create` command and the database's write
/// concern; the new collection becomes the result entity.
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
    let mut command = doc! { "create": &name };
    command.extend(arguments.rest(CREATE_OPTIONS)?);
    let concern = database.concerns().write_concern.clone();
    if let Some(concern) = concern.filter(|concern| !concern.is_empty()) {
        command.insert("writeConcern", concern.to_document());
    }
    let created = database
        .run_command_with(command, None, session.as_ref())
        .await;
    let collection = database.collection::<Document>(&name);
    match created {
        Ok(_) => {
            context.result_entity = Some(Entity::Collection(CollectionEntity { collection }));
            Ok(Ok(None))
        }
        Err(error) => Ok(Err(error)),
    }
}
