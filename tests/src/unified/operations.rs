//! The operations of tests (spec "Entity Test Operations", "Special Test Operations"):
//! the one place where an operation's name is bound to the code that runs it.
//!
//! [`handler`] maps an operation to its [`Handler`]: the CRUD operations ([`crud`],
//! [`bulk_write`]), those on databases and clients ([`commands`]), cursors
//! ([`cursors`]), change streams ([`change_streams`]), GridFS buckets ([`gridfs`]), search
//! indexes ([`search_indexes`]) and
//! sessions ([`sessions`], [`transactions`]), and the special operations. An operation it does not know
//! is unsupported, and a test using one is skipped before any setup ([`unsupported`]),
//! with the reason [`WITHOUT_DRIVER_API`] gives when the driver lacks the API.
//!
//! [`crud`]: super::crud
//! [`bulk_write`]: super::bulk_write
//! [`commands`]: super::commands
//! [`cursors`]: super::cursors
//! [`change_streams`]: super::change_streams
//! [`gridfs`]: super::gridfs
//! [`search_indexes`]: super::search_indexes
//! [`sessions`]: super::sessions
//! [`transactions`]: super::transactions

use std::sync::Arc;

use anymongo::rt::BoxFuture;
use bson::{doc, Bson, Document};

use anymongo::Cursor;

use super::arguments::known_arguments;
use super::collections::NAMESPACE_NOT_FOUND;
use super::crud::{self, Modify};
use super::entities::{self, CursorEntity, Entity, EntityMap, Iterable};
use super::model::{EntityDescription, Operation};
use super::{
    bulk_write, change_streams, client_bulk_write, commands, cursors, events, gridfs, sdam,
    search_indexes, sessions, threads, transactions, Abort, Deployment, OPERATION_TIMEOUT,
};

/// What an entity operation returned: its result (`None` when it returns nothing), or
/// the driver's error, which `expectError` is checked against.
pub type Returned = Result<Option<Bson>, anymongo::Error>;

/// Runs one operation. `Err` means the test cannot go on: the operation is
/// unsupported (the test is skipped) or could not be carried out as written (it
/// fails); a driver error is `Ok(Err(..))`.
pub type Handler =
    for<'a> fn(&'a Operation, &'a mut Context) -> BoxFuture<'a, Result<Returned, Abort>>;

/// What operations work on: the test's entities and the runner's state.
pub struct Context {
    /// The test's entities.
    pub entities: EntityMap,
    /// The test server and the runner's internal client.
    pub deployment: Arc<Deployment>,
    /// The connection string client entities extend with their `uriOptions`.
    pub client_uri: String,
    /// Behind load balancers: the one in front of several mongos, for clients with
    /// `useMultipleMongoses` (spec "entity", `useMultipleMongoses`).
    pub multi_mongos_uri: Option<String>,
    /// The fail points set by `failPoint`, turned off after the test.
    pub fail_points: Vec<String>,
    /// The longest `blockTimeMS` of the `blockConnection` fail points set: how long a
    /// command the server held may still run after the driver gave up on it.
    pub longest_block: std::time::Duration,
    /// What the last operation returned that is not a BSON value (a cursor, a
    /// collection), for its `saveResultAsEntity`.
    pub result_entity: Option<Entity>,
    /// The spans of the test's client entities, when they trace.
    pub spans: Option<super::spans::SpanRecorder>,
}

impl Context {
    /// A context with no entities yet, whose clients start from `client_uri`.
    pub fn new(deployment: Arc<Deployment>, client_uri: String) -> Context {
        Context {
            entities: EntityMap::default(),
            deployment,
            client_uri,
            multi_mongos_uri: None,
            fail_points: Vec::new(),
            longest_block: std::time::Duration::ZERO,
            result_entity: None,
            spans: None,
        }
    }

    /// The connection string a client entity of `description` starts from.
    pub fn client_uri_for(&self, description: &EntityDescription) -> String {
        match (description, &self.multi_mongos_uri) {
            (EntityDescription::Client(client), Some(multi))
                if client.use_multiple_mongoses == Some(true) =>
            {
                multi.clone()
            }
            _ => self.client_uri.clone(),
        }
    }

    /// Keeps a cursor an operation opened as its [`result_entity`](Self::result_entity);
    /// the operation returns nothing else, or the error that kept the cursor from
    /// opening.
    pub fn save_cursor(&mut self, cursor: anymongo::Result<Cursor<Document>>) -> Returned {
        self.save_iterable(Iterable::Cursor(cursor?));
        Ok(None)
    }

    /// Keeps a cursor or change stream as the [`result_entity`](Self::result_entity).
    pub fn save_iterable(&mut self, iterable: Iterable) {
        self.result_entity = Some(Entity::Cursor(Box::new(CursorEntity {
            cursor: Some(iterable),
        })));
    }
}

/// The handler of `operation`, if the runner supports it. Special operations are
/// those on the object `testRunner`.
pub fn handler(operation: &Operation) -> Option<Handler> {
    let special = operation.object == "testRunner";
    let handler: Handler = match (special, operation.name.as_str()) {
        (false, "insertOne") => |op, cx| Box::pin(crud::insert_one(op, cx)),
        (false, "insertMany") => |op, cx| Box::pin(crud::insert_many(op, cx)),
        (false, "updateOne") => |op, cx| Box::pin(crud::update(op, cx, false)),
        (false, "updateMany") => |op, cx| Box::pin(crud::update(op, cx, true)),
        (false, "replaceOne") => |op, cx| Box::pin(crud::replace_one(op, cx)),
        (false, "deleteOne") => |op, cx| Box::pin(crud::delete(op, cx, false)),
        (false, "deleteMany") => |op, cx| Box::pin(crud::delete(op, cx, true)),
        (false, "findOneAndUpdate") => {
            |op, cx| Box::pin(crud::find_one_and(op, cx, Modify::Update))
        }
        (false, "findOneAndReplace") => {
            |op, cx| Box::pin(crud::find_one_and(op, cx, Modify::Replace))
        }
        (false, "findOneAndDelete") => {
            |op, cx| Box::pin(crud::find_one_and(op, cx, Modify::Delete))
        }
        (false, "bulkWrite") => |op, cx| Box::pin(bulk_write::bulk_write(op, cx)),
        (false, "find") => |op, cx| Box::pin(find(op, cx)),
        (false, "findOne") => |op, cx| Box::pin(crud::find_one(op, cx)),
        (false, "aggregate") => |op, cx| Box::pin(crud::aggregate(op, cx)),
        (false, "countDocuments") => |op, cx| Box::pin(crud::count_documents(op, cx)),
        (false, "count") => |op, cx| Box::pin(crud::count(op, cx)),
        (false, "estimatedDocumentCount") => {
            |op, cx| Box::pin(crud::estimated_document_count(op, cx))
        }
        (false, "distinct") => |op, cx| Box::pin(crud::distinct(op, cx)),
        (false, "createFindCursor") => |op, cx| Box::pin(cursors::create_find_cursor(op, cx)),
        (false, "createChangeStream") => {
            |op, cx| Box::pin(change_streams::create_change_stream(op, cx))
        }
        (false, "iterateUntilDocumentOrError" | "iterateOnce") => {
            |op, cx| Box::pin(cursors::next(op, cx))
        }
        (false, "close") => |op, cx| Box::pin(cursors::close(op, cx)),
        (false, "runCommand") => |op, cx| Box::pin(commands::run_command(op, cx)),
        (false, "runCursorCommand") => |op, cx| Box::pin(commands::run_cursor_command(op, cx)),
        (false, "createCommandCursor") => {
            |op, cx| Box::pin(commands::create_command_cursor(op, cx))
        }
        (false, "listDatabases" | "listDatabaseObjects") => {
            |op, cx| Box::pin(commands::list_databases(op, cx, false))
        }
        (false, "listDatabaseNames") => |op, cx| Box::pin(commands::list_databases(op, cx, true)),
        (false, "clientBulkWrite") => {
            |op, cx| Box::pin(client_bulk_write::client_bulk_write(op, cx))
        }
        // pymongo's listCollectionObjects and listDatabaseObjects are the same listings.
        (false, "listCollections" | "listCollectionObjects") => {
            |op, cx| Box::pin(commands::list_collections(op, cx, false))
        }
        (false, "listCollectionNames") => {
            |op, cx| Box::pin(commands::list_collections(op, cx, true))
        }
        (false, "listIndexes") => |op, cx| Box::pin(commands::list_indexes(op, cx, false)),
        (false, "listIndexNames") => |op, cx| Box::pin(commands::list_indexes(op, cx, true)),
        (false, "createIndex") => |op, cx| Box::pin(commands::create_index(op, cx)),
        (false, "dropIndex") => |op, cx| Box::pin(commands::drop_index(op, cx, false)),
        (false, "dropIndexes") => |op, cx| Box::pin(commands::drop_index(op, cx, true)),
        (false, "dropCollection") => |op, cx| Box::pin(commands::drop_collection(op, cx)),
        (false, "createSearchIndex") => {
            |op, cx| Box::pin(search_indexes::create_search_index(op, cx))
        }
        (false, "createSearchIndexes") => {
            |op, cx| Box::pin(search_indexes::create_search_indexes(op, cx))
        }
        (false, "updateSearchIndex") => {
            |op, cx| Box::pin(search_indexes::update_search_index(op, cx))
        }
        (false, "dropSearchIndex") => |op, cx| Box::pin(search_indexes::drop_search_index(op, cx)),
        (false, "listSearchIndexes") => {
            |op, cx| Box::pin(search_indexes::list_search_indexes(op, cx))
        }
        (false, "appendMetadata") => |op, cx| Box::pin(commands::append_metadata(op, cx)),
        (false, "dropDatabase") => |op, cx| Box::pin(commands::drop_database(op, cx)),
        (false, "modifyCollection") => |op, cx| Box::pin(commands::modify_collection(op, cx)),
        (false, "createCollection") => |op, cx| Box::pin(commands::create_collection(op, cx)),
        (false, "download") => |op, cx| Box::pin(gridfs::download(op, cx)),
        (false, "drop") => |op, cx| Box::pin(gridfs::drop(op, cx)),
        (false, "downloadByName") => |op, cx| Box::pin(gridfs::download_by_name(op, cx)),
        (false, "upload") => |op, cx| Box::pin(gridfs::upload(op, cx)),
        (false, "delete") => |op, cx| Box::pin(gridfs::delete(op, cx)),
        (false, "deleteByName") => |op, cx| Box::pin(gridfs::delete_by_name(op, cx)),
        (false, "rename") => |op, cx| Box::pin(gridfs::rename(op, cx)),
        (false, "renameByName") => |op, cx| Box::pin(gridfs::rename_by_name(op, cx)),
        (false, "endSession") => |op, cx| Box::pin(sessions::end_session(op, cx)),
        (false, "getSnapshotTime") => |op, cx| Box::pin(sessions::get_snapshot_time(op, cx)),
        (false, "startTransaction") => |op, cx| Box::pin(transactions::start_transaction(op, cx)),
        (false, "commitTransaction") => |op, cx| Box::pin(transactions::commit_transaction(op, cx)),
        (false, "abortTransaction") => |op, cx| Box::pin(transactions::abort_transaction(op, cx)),
        (false, "withTransaction") => |op, cx| Box::pin(transactions::with_transaction(op, cx)),
        (true, "assertSessionTransactionState") => {
            |op, cx| Box::pin(transactions::assert_session_transaction_state(op, cx))
        }
        (true, "failPoint") => fail_point,
        (true, "targetedFailPoint") => |op, cx| Box::pin(sessions::targeted_fail_point(op, cx)),
        (true, "assertSessionPinned") => {
            |op, cx| Box::pin(sessions::assert_session_pinned(op, cx, true))
        }
        (true, "assertSessionUnpinned") => {
            |op, cx| Box::pin(sessions::assert_session_pinned(op, cx, false))
        }
        (true, "createEntities") => create_entities,
        (true, "assertNumberConnectionsCheckedOut") => assert_connections_checked_out,
        (true, "waitForEvent") => events::wait_for_event,
        (true, "assertEventCount") => events::assert_event_count,
        (true, "runOnThread") => threads::run_on_thread,
        (true, "waitForThread") => threads::wait_for_thread,
        (true, "recordTopologyDescription") => sdam::record_topology_description,
        (true, "assertTopologyType") => sdam::assert_topology_type,
        (true, "waitForPrimaryChange") => sdam::wait_for_primary_change,
        (true, "wait") => wait,
        (true, "assertCollectionExists") => |op, cx| collection_exists(op, cx, true),
        (true, "assertCollectionNotExists") => |op, cx| collection_exists(op, cx, false),
        (true, "assertIndexExists") => |op, cx| index_exists(op, cx, true),
        (true, "assertIndexNotExists") => |op, cx| index_exists(op, cx, false),
        (true, "assertSameLsidOnLastTwoCommands") => {
            |op, cx| Box::pin(sessions::assert_lsids_on_last_two_commands(op, cx, true))
        }
        (true, "assertDifferentLsidOnLastTwoCommands") => {
            |op, cx| Box::pin(sessions::assert_lsids_on_last_two_commands(op, cx, false))
        }
        (true, "assertSessionDirty") => {
            |op, cx| Box::pin(sessions::assert_session_dirty(op, cx, true))
        }
        (true, "assertSessionNotDirty") => {
            |op, cx| Box::pin(sessions::assert_session_dirty(op, cx, false))
        }
        _ => return None,
    };
    Some(handler)
}

/// Whether `operation` returns the documents of a cursor, each of which its
/// `expectResult` matches as a root-level document (spec "Examples of Root-level
/// Documents").
pub fn returns_documents(operation: &Operation) -> bool {
    matches!(
        operation.name.as_str(),
        "find"
            | "aggregate"
            | "runCursorCommand"
            | "listCollections"
            | "listCollectionObjects"
            | "listDatabases"
            | "listDatabaseObjects"
            | "listIndexes"
    )
}

/// The operations of the test files whose API the driver does not have, and what is
/// missing.
pub const WITHOUT_DRIVER_API: &[(&str, &str)] = &[("mapReduce", "Collection has no map_reduce")];

/// Why `operation` cannot run, if the runner does not support it.
pub fn unsupported(operation: &Operation) -> Option<String> {
    if handler(operation).is_some() {
        // A withTransaction is as supported as the operations of its callback.
        return transactions::callback_operations(operation)
            .iter()
            .find_map(unsupported);
    }
    if let Some((_, missing)) = WITHOUT_DRIVER_API
        .iter()
        .find(|(name, _)| *name == operation.name)
    {
        return Some(format!(
            "operation {}: the driver lacks the API: {missing}",
            operation.name
        ));
    }
    Some(match operation.object.as_str() {
        "testRunner" => format!(
            "special operation {} is not implemented by the runner yet",
            operation.name
        ),
        object => format!(
            "operation {} (on {object}) is not implemented by the runner",
            operation.name
        ),
    })
}

/// Spec `find`: on a collection, or on a GridFS bucket (its files documents).
async fn find(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    match context.entities.bucket(&operation.object) {
        Ok(_) => gridfs::find(operation, context).await,
        Err(_) => crud::find(operation, context).await,
    }
}

/// How long `operation` may take: [`OPERATION_TIMEOUT`], or longer for a special
/// operation that waits as long as its `timeoutMS` says (`waitForPrimaryChange`),
/// which bounds it itself.
pub fn time_allowed(operation: &Operation) -> std::time::Duration {
    let own = match operation.object.as_str() {
        "testRunner" => operation.arguments.get("timeoutMS"),
        _ => None,
    };
    let own = own.and_then(|millis| entities::timeout_ms(millis, &operation.name).ok());
    // A second more, for the operation to report its own timeout first.
    own.map_or(OPERATION_TIMEOUT, |own| {
        OPERATION_TIMEOUT.max(own + std::time::Duration::from_secs(1))
    })
}

/// Runs `operation`. An entity operation given `timeoutMS` runs on its object with
/// that timeoutMS ([`anymongo::Client::with_timeout`] and its database and collection
/// counterparts, the driver's operation-level timeoutMS); a special operation's
/// `timeoutMS` is its own argument.
pub async fn execute(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Some(handler) = handler(operation) else {
        return Err(Abort::Unsupported(
            unsupported(operation).unwrap_or_default(),
        ));
    };
    let entity_timeout = match operation.object.as_str() {
        "testRunner" => None,
        _ => operation.arguments.get("timeoutMS"),
    };
    let Some(millis) = entity_timeout else {
        return handler(operation, context).await;
    };
    let timeout = entities::timeout_ms(millis, &operation.name)?;
    let mut arguments = operation.arguments.clone();
    arguments.remove("timeoutMS");
    let without = Operation {
        name: operation.name.clone(),
        object: operation.object.clone(),
        arguments,
        expect_error: None,
        expect_result: None,
        save_result_as_entity: operation.save_result_as_entity.clone(),
        ignore_result_and_error: operation.ignore_result_and_error,
    };
    let saved = context.entities.set_timeout(&operation.object, timeout)?;
    let returned = handler(&without, context).await;
    context.entities.restore(&operation.object, saved);
    returned
}

/// Spec "failPoint": sets the fail point through the test's client entity, and
/// records it to turn it off after the test.
fn fail_point<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["client", "failPoint"])?;
        let client = operation
            .arguments
            .get_str("client")
            .map_err(|_| "failPoint needs a client".to_owned())?;
        let command = operation
            .arguments
            .get_document("failPoint")
            .map_err(|_| "failPoint needs a failPoint document".to_owned())?;
        let admin = context.entities.client(client)?.client.database("admin");
        configure_fail_point(&admin, command, context).await?;
        Ok(Ok(None))
    })
}

/// Sets the fail point of `command` (a `configureFailPoint` command) through `admin`
/// (the admin database of a client), and records it to turn it off after the test.
pub async fn configure_fail_point(
    admin: &anymongo::Database,
    command: &Document,
    context: &mut Context,
) -> Result<(), Abort> {
    let command = first_key(command, "configureFailPoint")?;
    let name = command
        .get_str("configureFailPoint")
        .unwrap_or_default()
        .to_owned();
    admin
        .run_command(command.clone())
        .await
        .map_err(|e| format!("{command} failed: {e}"))?;
    context.fail_points.push(name);
    let data = command.get_document("data").ok();
    if data.is_some_and(|data| data.get_bool("blockConnection").unwrap_or(false)) {
        let block = data
            .and_then(|data| data.get("blockTimeMS"))
            .and_then(|ms| ms.as_i64().or_else(|| ms.as_i32().map(i64::from)))
            .and_then(|ms| u64::try_from(ms).ok())
            .map(std::time::Duration::from_millis)
            .unwrap_or_default();
        context.longest_block = context.longest_block.max(block);
    }
    Ok(())
}

/// Spec "wait": sleeps for `ms` milliseconds (the operation is the sleep; tests use it
/// to let time pass, e.g. for a connection to go idle).
fn wait<'a>(
    operation: &'a Operation,
    _context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["ms"])?;
        let ms = entities::timeout_ms(
            operation
                .arguments
                .get("ms")
                .ok_or_else(|| "wait needs ms".to_owned())?,
            "wait",
        )?;
        tokio::time::sleep(ms).await;
        Ok(Ok(None))
    })
}

/// Spec "createEntities": creates entities in the middle of a test.
fn create_entities<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["entities"])?;
        let descriptions = operation
            .arguments
            .get_array("entities")
            .map_err(|_| "createEntities needs an array of entities".to_owned())?;
        for description in descriptions {
            let description: EntityDescription =
                bson::deserialize_from_bson(description.clone())
                    .map_err(|e| format!("not an entity: {description}: {e}"))?;
            let uri = context.client_uri_for(&description);
            entities::create(&description, &mut context.entities, &uri).await?;
            entities::await_min_pool_size(&description, &context.entities)?.await?;
        }
        Ok(Ok(None))
    })
}

/// Spec "assertNumberConnectionsCheckedOut".
fn assert_connections_checked_out<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["client", "connections"])?;
        let arguments = &operation.arguments;
        let client = arguments
            .get_str("client")
            .map_err(|_| "assertNumberConnectionsCheckedOut needs a client".to_owned())?;
        let expected = match arguments.get("connections") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => return Err(Abort::Failed("connections must be an integer".to_owned())),
        };
        let actual = context
            .entities
            .client(client)?
            .events
            .connections_checked_out();
        if actual != expected {
            return Err(Abort::Failed(format!(
                "{client} has {actual} connections checked out, expected {expected}"
            )));
        }
        Ok(Ok(None))
    })
}

/// Spec "assertCollectionExists" and "assertCollectionNotExists", asked of the
/// internal client with `listCollections`.
fn collection_exists<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
    expected: bool,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        let (database, collection) = namespace(operation, &[])?;
        let command = doc! { "listCollections": 1, "filter": { "name": collection } };
        let reply = internal_command(&context.deployment, database, command).await;
        let exists = !first_batch(&reply.map_err(failed)?)?.is_empty();
        check_exists(
            exists,
            expected,
            &format!("the collection {database}.{collection}"),
        )
    })
}

/// Spec "assertIndexExists" and "assertIndexNotExists", asked of the internal client
/// with `listIndexes` (a collection that does not exist has no index).
fn index_exists<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
    expected: bool,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        let (database, collection) = namespace(operation, &["indexName"])?;
        let index = operation
            .arguments
            .get_str("indexName")
            .map_err(|_| "an indexName is needed".to_owned())?;
        // All of the indexes in the first batch: a collection has 64 at most.
        let command = doc! { "listIndexes": collection, "cursor": { "batchSize": 100 } };
        let exists = match internal_command(&context.deployment, database, command).await {
            Ok(reply) => first_batch(&reply)?.iter().any(|spec| {
                spec.as_document()
                    .and_then(|spec| spec.get_str("name").ok())
                    == Some(index)
            }),
            Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => false,
            Err(error) => return Err(failed(error)),
        };
        check_exists(
            exists,
            expected,
            &format!("the index {index} of {database}.{collection}"),
        )
    })
}

/// The `databaseName` and `collectionName` arguments, checking that nothing but
/// them and `others` is given.
fn namespace<'a>(operation: &'a Operation, others: &[&str]) -> Result<(&'a str, &'a str), Abort> {
    let mut known = vec!["databaseName", "collectionName"];
    known.extend_from_slice(others);
    known_arguments(operation, &known)?;
    let get = |key| {
        operation
            .arguments
            .get_str(key)
            .map_err(|_| Abort::Failed(format!("{} needs a {key}", operation.name)))
    };
    Ok((get("databaseName")?, get("collectionName")?))
}

/// Runs a command through the internal client.
async fn internal_command(
    deployment: &Deployment,
    database: &str,
    command: Document,
) -> anymongo::Result<Document> {
    deployment
        .internal
        .database(database)
        .run_command(command)
        .await
}

/// A special operation's command failed: the test fails.
fn failed(error: anymongo::Error) -> Abort {
    Abort::Failed(format!("the runner's command failed: {error}"))
}

fn first_batch(reply: &Document) -> Result<&Vec<Bson>, Abort> {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .map_err(|_| Abort::Failed(format!("a reply without a cursor: {reply}")))
}

fn check_exists(exists: bool, expected: bool, what: &str) -> Result<Returned, Abort> {
    match (exists, expected) {
        (true, true) | (false, false) => Ok(Ok(None)),
        (false, true) => Err(Abort::Failed(format!("{what} does not exist"))),
        (true, false) => Err(Abort::Failed(format!("{what} exists"))),
    }
}

/// `document` with `key` moved to the front: a command's first key names it.
pub fn first_key(document: &Document, key: &str) -> Result<Document, String> {
    let value = document
        .get(key)
        .ok_or_else(|| format!("the command {document} has no key {key}"))?;
    let mut reordered = doc! { key: value.clone() };
    reordered.extend(
        document
            .iter()
            .filter(|(k, _)| *k != key)
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    Ok(reordered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation(document: Document) -> Operation {
        bson::deserialize_from_document(document).unwrap()
    }

    #[test]
    fn operations_are_known_by_object_kind_and_name() {
        let run_command = operation(doc! { "name": "runCommand", "object": "database0" });
        assert!(handler(&run_command).is_some());
        assert_eq!(unsupported(&run_command), None);
        let insert = operation(doc! { "name": "insertOne", "object": "collection0" });
        assert_eq!(unsupported(&insert), None);
        let bulk = operation(doc! { "name": "mapReduce", "object": "collection0" });
        assert_eq!(
            unsupported(&bulk).unwrap(),
            "operation mapReduce: the driver lacks the API: Collection has no map_reduce"
        );
        let special = operation(doc! { "name": "loop", "object": "testRunner" });
        assert!(unsupported(&special)
            .unwrap()
            .contains("special operation loop"));
        // Special operations are only special on the test runner.
        let misplaced = operation(doc! { "name": "failPoint", "object": "client0" });
        assert!(handler(&misplaced).is_none());
    }

    #[test]
    fn special_operations_may_take_as_long_as_their_timeout_ms() {
        let wait = operation(doc! {
            "name": "waitForPrimaryChange", "object": "testRunner", "arguments": { "timeoutMS": 15000 },
        });
        assert_eq!(time_allowed(&wait), std::time::Duration::from_secs(16));
        let find = operation(doc! {
            "name": "find", "object": "collection0", "arguments": { "timeoutMS": 15000 },
        });
        assert_eq!(time_allowed(&find), OPERATION_TIMEOUT);
    }

    #[test]
    fn the_named_key_is_moved_first() {
        let command = doc! { "a": 1, "ping": 1, "b": 2 };
        let reordered = first_key(&command, "ping").unwrap();
        assert_eq!(reordered.keys().collect::<Vec<_>>(), ["ping", "a", "b"]);
        assert!(first_key(&command, "hello")
            .unwrap_err()
            .contains("no key hello"));
    }
}
