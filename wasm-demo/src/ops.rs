//! The operations of the JavaScript API, on any target: each takes its arguments as one
//! BSON document (what the JavaScript glue serialized with the `bson` npm package) and
//! answers with one, shaped like the official Node.js driver's results.
//!
//! Keeping this free of wasm-bindgen lets clippy and the unit tests see it natively;
//! `js.rs` only moves bytes across the JavaScript boundary.

use anymongo::bson::raw::{RawBsonRef, RawDocument, RawDocumentBuf};
use anymongo::bson::Timestamp;
use anymongo::bson::{doc, rawdoc, Bson, Document, RawBson};
use anymongo::concern::WriteConcern;
use anymongo::crud::bulk_write::{
    BulkWriteOptions, BulkWriteResult, DeleteManyModel, DeleteOneModel, InsertOneModel,
    ReplaceOneModel, UpdateManyModel, UpdateOneModel, WriteModel,
};
use anymongo::crud::{AggregateOptions, CountOptions, FindOptions, RunCursorCommandOptions};
use anymongo::database::Concerns;
use anymongo::enumerate::{ListCollectionsOptions, ListDatabasesOptions};
use anymongo::error::GridFsErrorKind;
use anymongo::gridfs::{GridFsBucketOptions, GridFsDownloadStream, GridFsUploadOptions};
use anymongo::handshake::DriverInfo;
use anymongo::index_management::{
    CreateIndexOptions, DropIndexOptions, IndexModel, IndexOptions, ListIndexesOptions,
};
use anymongo::options::{
    DeleteOptions, DistinctOptions, EstimatedDocumentCountOptions, FindOneAndDeleteOptions,
    FindOneAndReplaceOptions, FindOneAndUpdateOptions, FindOneOptions, InsertManyOptions,
    InsertOneOptions, OpentelemetryOptions, ReplaceOptions, SelectionCriteria, UpdateOptions,
};
use anymongo::session::{ClientSession, SessionOptions};
use anymongo::transactions::{TransactionOptions, TransactionState};
use anymongo::versioned_api::ServerApi;
use anymongo::{
    ChangeStream, ChangeStreamOptions, Client, ClientOptions, Collection, Cursor, Database, Error,
    ErrorKind, Result,
};
use futures::io::{AsyncReadExt, AsyncWriteExt};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The options of an operation, taken from the options struct of its family
/// (`options => InsertOneOptions { fields }`): the glue parses one struct per family
/// (`InsertManyOptions`, `UpdateOptions`, `FindOptions`, `CountOptions`,
/// `FindOneAndUpdateOptions`), not one per operation, so that the WebAssembly holds
/// fewer deserializers (the package's 1 MB budget). Every field of the narrower struct
/// is named, so a field the official types add is a compile error here, not a silent
/// drop; the fields it lacks are dropped, as the Node driver ignores options that do
/// not apply.
macro_rules! narrow {
    ($from:expr => $To:ident { $($field:ident),* $(,)? }) => {{
        let from = $from;
        $To { $($field: from.$field,)* }
    }};
}

/// Runs the action `$action`, in `session` when there is one; `cursor` first for the
/// actions that return a cursor (in a session, the core's `SessionCursor`, which is
/// turned into the `Cursor` the glue iterates).
macro_rules! in_session {
    (cursor $session:expr, $action:expr) => {
        match $session {
            Some(session) => $action.session(session).await.map(Cursor::from),
            None => $action.await,
        }
    };
    ($session:expr, $action:expr) => {
        match $session {
            Some(session) => $action.session(session).await,
            None => $action.await,
        }
    };
    (metadata $session:expr, $action:expr) => {
        match $session {
            Some(session) => $action.session(session).with_result_metadata().await,
            None => $action.with_result_metadata().await,
        }
    };
}

/// Runs the operation `op` of the JavaScript API on collection `collection` of
/// database `database` (the database itself for `command`, `dropDatabase`), with the
/// arguments in `args`: `filter`, `update`, `replacement`, `document(s)`, `key`,
/// `keys`, `command` and `options`, as the operation needs.
///
/// The documents of the data paths stay BSON bytes: inserted documents go to the server
/// as the glue serialized them, and found documents come back as the server sent them.
///
/// With `session`, the operation runs in it (the Node driver's `{ session }` option).
pub async fn run(
    client: &Client,
    op: &str,
    database: &str,
    collection: &str,
    args: &RawDocument,
    session: Option<&ClientSession>,
) -> Result<RawDocumentBuf> {
    let db = database_for(client, database, args)?;
    let coll: Collection<Document> = db.collection(collection);
    let filter = document(args, "filter")?;
    let reply = match op {
        "insertOne" => {
            let document = required_raw_document(args, "document")?;
            let raw = db.collection::<&RawDocument>(collection);
            let options = narrow!(options::<InsertManyOptions>(args)? => InsertOneOptions {
                bypass_document_validation, comment, raw_data, write_concern
            });
            let acknowledged = acknowledged(&db, options.write_concern.as_ref());
            let result = in_session!(session, raw.insert_one(document).with_options(options))?;
            doc! { "acknowledged": acknowledged, "insertedId": result.inserted_id }
        }
        "insertMany" => {
            let documents = documents(args, "documents", Ok)?;
            let raw = db.collection::<&RawDocument>(collection);
            let options = options::<InsertManyOptions>(args)?;
            let acknowledged = acknowledged(&db, options.write_concern.as_ref());
            let result = in_session!(session, raw.insert_many(documents).with_options(options))?;
            // Without `insertedIds`: on success every document was inserted, with the
            // `_id` the JavaScript side gave it, which builds the map from its own
            // documents (as the Node driver does) instead of a round trip of every id
            // through BSON.
            doc! {
                "acknowledged": acknowledged,
                "insertedCount": count(result.inserted_ids.len()),
            }
        }
        "updateOne" | "updateMany" => {
            let update = update(args)?;
            let options = options::<UpdateOptions>(args)?;
            let acknowledged = acknowledged(&db, options.write_concern.as_ref());
            let result = match op {
                "updateOne" => in_session!(
                    session,
                    coll.update_one(filter, update).with_options(options)
                )?,
                _ => in_session!(
                    session,
                    coll.update_many(filter, update).with_options(options)
                )?,
            };
            update_result(result, acknowledged)
        }
        "replaceOne" => {
            let replacement = required_document(args, "replacement")?;
            let options = narrow!(options::<UpdateOptions>(args)? => ReplaceOptions {
                bypass_document_validation, collation, comment, raw_data, hint, let_vars, sort, upsert,
                write_concern
            });
            let acknowledged = acknowledged(&db, options.write_concern.as_ref());
            let result = in_session!(
                session,
                coll.replace_one(filter, replacement).with_options(options)
            )?;
            update_result(result, acknowledged)
        }
        "deleteOne" | "deleteMany" => {
            let options = narrow!(options::<UpdateOptions>(args)? => DeleteOptions {
                collation, comment, raw_data, hint, let_vars, write_concern
            });
            let acknowledged = acknowledged(&db, options.write_concern.as_ref());
            let result = match op {
                "deleteOne" => in_session!(session, coll.delete_one(filter).with_options(options))?,
                _ => in_session!(session, coll.delete_many(filter).with_options(options))?,
            };
            doc! { "acknowledged": acknowledged, "deletedCount": count(result.deleted_count) }
        }
        "findOne" => {
            let raw = coll.clone_with_type::<RawDocumentBuf>();
            let options = narrow!(options::<FindOptions>(args)? => FindOneOptions {
                allow_partial_results, collation, comment, raw_data, hint, max, max_scan, max_time, min,
                projection, read_concern, selection_criteria, return_key, show_record_id, skip,
                sort, let_vars
            });
            let found = in_session!(session, raw.find_one(filter).with_options(options))?;
            // Handed back as the server sent it: no `Document` in between.
            return Ok(match found {
                Some(found) => rawdoc! { "value": found },
                None => rawdoc! { "value": RawBson::Null },
            });
        }
        "findOneAndUpdate" | "findOneAndReplace" | "findOneAndDelete" => {
            let options = find_and_modify_options::<FindOneAndUpdateOptions>(args)?;
            let found = match op {
                "findOneAndUpdate" => in_session!(
                    metadata session,
                    coll.find_one_and_update(filter, update(args)?)
                        .with_options(options)
                ),
                "findOneAndReplace" => in_session!(
                    metadata session,
                    coll.find_one_and_replace(filter, required_document(args, "replacement")?)
                        .with_options(narrow!(options => FindOneAndReplaceOptions {
                            bypass_document_validation, collation, comment, raw_data, hint, let_vars,
                            max_time, projection, return_document, sort, upsert, write_concern
                        }))
                ),
                _ => in_session!(
                    metadata session,
                    coll.find_one_and_delete(filter).with_options(
                        narrow!(options => FindOneAndDeleteOptions {
                            collation, comment, raw_data, hint, let_vars, max_time, projection, sort,
                            write_concern
                        })
                    )
                ),
            }?;
            // `lastErrorObject` too: the Node driver's `includeResultMetadata` reply.
            let mut reply = doc! { "value": found.value.map_or(Bson::Null, Bson::Document) };
            if let Some(last_error_object) = found.last_error_object {
                reply.insert("lastErrorObject", last_error_object);
            }
            reply
        }
        "countDocuments" => {
            let options = options::<CountOptions>(args)?;
            let n = in_session!(session, coll.count_documents(filter).with_options(options))?;
            doc! { "n": count(n) }
        }
        // The deprecated `count` command (Node's `collection.count`).
        "count" => {
            let options = options::<CountOptions>(args)?;
            let n = in_session!(session, coll.count(filter).with_options(options))?;
            doc! { "n": count(n) }
        }
        "listDatabases" => {
            let options = options::<ListDatabasesOptions>(args)?;
            let name_only = options_document(args)?
                .and_then(|options| options.get_bool("nameOnly").ok())
                .unwrap_or(false);
            let databases: Vec<Document> = match name_only {
                true => in_session!(session, client.list_database_names().with_options(options))?
                    .into_iter()
                    .map(|name| doc! { "name": name })
                    .collect(),
                false => in_session!(session, client.list_databases().with_options(options))?
                    .iter()
                    .map(anymongo::bson::serialize_to_document)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|error| Error::invalid_argument(format!("listDatabases: {error}")))?,
            };
            let total: i64 = databases
                .iter()
                .filter_map(|database| database.get_i64("sizeOnDisk").ok())
                .sum();
            doc! { "databases": databases, "totalSize": total, "ok": 1.0 }
        }
        "estimatedDocumentCount" => {
            let options = narrow!(options::<CountOptions>(args)? => EstimatedDocumentCountOptions {
                comment, raw_data, max_time, read_concern, selection_criteria
            });
            let n = in_session!(
                session,
                coll.estimated_document_count().with_options(options)
            )?;
            doc! { "n": count(n) }
        }
        "distinct" => {
            let Some(RawBsonRef::String(key)) = args.get("key").map_err(malformed)? else {
                return Err(Error::invalid_argument(
                    "distinct: the key must be a string",
                ));
            };
            let options = narrow!(options::<CountOptions>(args)? => DistinctOptions {
                collation, comment, raw_data, hint, max_time, read_concern, selection_criteria
            });
            let values = in_session!(session, coll.distinct(key, filter).with_options(options))?;
            doc! { "values": values }
        }
        "createIndex" => {
            let keys = required_document(args, "keys")?;
            let (model_options, command_options) = split_index_options(args)?;
            let model = index_model(doc! { "key": keys }, &model_options)?;
            let created = in_session!(
                session,
                coll.create_index(model).with_options(command_options)
            )?;
            doc! { "name": created.index_name }
        }
        "createIndexes" => {
            let (model_options, command_options) = split_index_options(args)?;
            let models = documents(args, "specs", Document::try_from)?
                .into_iter()
                .map(|spec| index_model(spec, &model_options))
                .collect::<Result<Vec<_>>>()?;
            let created = in_session!(
                session,
                coll.create_indexes(models).with_options(command_options)
            )?;
            doc! { "names": created.index_names }
        }
        "dropIndex" => {
            let options = options::<DropIndexOptions>(args)?;
            match field(args, "name")? {
                Some(RawBsonRef::String("*")) => {
                    in_session!(session, coll.drop_indexes().with_options(options))?
                }
                Some(RawBsonRef::String(name)) => {
                    in_session!(session, coll.drop_index(name).with_options(options))?
                }
                _ => return Err(Error::invalid_argument("dropIndex: name must be a string")),
            }
            doc! { "ok": 1 }
        }
        "bulkWrite" => {
            let models = documents(args, "operations", Document::try_from)?
                .into_iter()
                .map(write_model)
                .collect::<Result<Vec<_>>>()?;
            let options = options::<BulkWriteOptions>(args)?;
            let result = in_session!(session, coll.bulk_write(models).with_options(options))?;
            bulk_write_result(&result)
        }
        "clientBulkWrite" => {
            let models = documents(args, "models", Document::try_from)?
                .into_iter()
                .map(client_write_model)
                .collect::<Result<Vec<_>>>()?;
            let verbose = options::<Verbose>(args)?.verbose_results;
            let options = options::<BulkWriteOptions>(args)?;
            let action = client.bulk_write(models).with_options(options);
            let result = match verbose {
                Some(true) => in_session!(session, action.verbose_results())?.into(),
                _ => in_session!(session, action)?.into(),
            };
            client_bulk_write_result(&result)
        }
        "drop" => {
            in_session!(session, coll.drop())?;
            doc! { "value": true }
        }
        "dropDatabase" => {
            in_session!(session, db.drop())?;
            doc! { "value": true }
        }
        "gridfsUpload"
        | "gridfsDownload"
        | "gridfsDownloadByName"
        | "gridfsDelete"
        | "gridfsDeleteByName"
        | "gridfsRename"
        | "gridfsRenameByName"
        | "gridfsDrop" => gridfs(&db, op, args).await?,
        "command" => {
            let command = required_document(args, "command")?;
            let mut run = db.run_command(command);
            if let Some(preference) = selection_criteria(args)? {
                run = run.selection_criteria(preference);
            }
            in_session!(session, run)?
        }
        _ => return Err(unknown(op)),
    };
    RawDocumentBuf::try_from(&reply)
        .map_err(|error| Error::new(ErrorKind::BsonSerialization(error)))
}

/// Opens the cursor of `find` or `aggregate` (on the database when `collection` is
/// empty, for `db.aggregate`); its documents stay the bytes the server sent.
pub async fn open_cursor(
    client: &Client,
    op: &str,
    database: &str,
    collection: &str,
    args: &RawDocument,
    session: Option<&ClientSession>,
) -> Result<Cursor<Document>> {
    let db = database_for(client, database, args)?;
    let coll: Collection<Document> = db.collection(collection);
    match op {
        "find" => {
            let filter = document(args, "filter")?;
            let options = options::<FindOptions>(args)?;
            in_session!(cursor session, coll.find(filter).with_options(options))
        }
        // Retryable reads (the spec's list operations), unlike a command run as given.
        "listCollections" => {
            let options = options::<ListCollectionsOptions>(args)?;
            let listed = in_session!(cursor session, db.list_collections().with_options(options))?;
            Ok(listed.with_type())
        }
        "listIndexes" => {
            let options = options::<ListIndexesOptions>(args)?;
            // The server's descriptions, as the Node driver returns them.
            let listed = in_session!(cursor session, coll.list_indexes().with_options(options))?;
            Ok(listed.with_type())
        }
        // A command that answers with a cursor (`runCursorCommand`), and what its
        // getMores carry (`cursor.setBatchSize()`...: `args.getMore`).
        "command" => {
            let command = required_document(args, "command")?;
            let mut options = RunCursorCommandOptions {
                selection_criteria: selection_criteria(args)?,
                ..RunCursorCommandOptions::default()
            };
            if let Some(RawBsonRef::Document(get_more)) = field(args, "getMore")? {
                if let Some(size) = get_more.get("batchSize").map_err(malformed)? {
                    options.batch_size = Some(positive_size(size, "batchSize")?);
                }
                options.max_time = milliseconds(get_more, "maxTimeMS")?;
                options.comment = get_more
                    .get("comment")
                    .map_err(malformed)?
                    .map(|comment| RawBson::from(comment).try_into())
                    .transpose()
                    .map_err(|error| Error::invalid_argument(format!("comment: {error}")))?;
            }
            in_session!(cursor session, db.run_cursor_command(command).with_options(options))
        }
        "aggregate" => {
            let pipeline = documents(args, "pipeline", Document::try_from)?;
            let options = options::<AggregateOptions>(args)?;
            match collection {
                "" => in_session!(cursor session, db.aggregate(pipeline).with_options(options)),
                _ => in_session!(cursor session, coll.aggregate(pipeline).with_options(options)),
            }
        }
        _ => Err(unknown(op)),
    }
}

/// The options of `startSession`: `causalConsistency`, `snapshot`,
/// `defaultTransactionOptions` and `defaultTimeoutMS`, as the Node driver's, and
/// `snapshotTime` (a Timestamp: the snapshot of a snapshot session, sessions spec,
/// "snapshotTime").
pub fn session_options(options: &RawDocument) -> Result<SessionOptions> {
    let flag = |name| match options.get(name).map_err(malformed)? {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(None),
        Some(RawBsonRef::Boolean(value)) => Ok(Some(value)),
        Some(_) => Err(Error::invalid_argument(format!(
            "startSession: {name} must be a boolean"
        ))),
    };
    let default_transaction_options = match options
        .get("defaultTransactionOptions")
        .map_err(malformed)?
    {
        Some(RawBsonRef::Document(defaults)) => Some(transaction_options(defaults)?),
        _ => None,
    };
    let snapshot_time = match options.get("snapshotTime").map_err(malformed)? {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => None,
        Some(RawBsonRef::Timestamp(time)) => Some(time),
        Some(_) => {
            return Err(Error::invalid_argument(
                "startSession: snapshotTime must be a Timestamp",
            ))
        }
    };
    Ok(SessionOptions {
        causal_consistency: flag("causalConsistency")?,
        snapshot: flag("snapshot")?,
        snapshot_time,
        default_transaction_options,
        default_timeout: milliseconds(options, "defaultTimeoutMS")?,
    })
}

/// The options of `startTransaction` and `withTransaction`: `readConcern`,
/// `writeConcern`, `readPreference`, `maxCommitTimeMS`.
pub fn transaction_options(options: &RawDocument) -> Result<TransactionOptions> {
    anymongo::bson::deserialize_from_slice(options.as_bytes())
        .map_err(|error| Error::invalid_argument(format!("transaction options: {error}")))
}

/// `document` as a [`Document`].
pub fn to_document(document: &RawDocument) -> Result<Document> {
    Document::try_from(document).map_err(malformed)
}

/// The timestamp `document[name]`.
pub fn timestamp(document: &RawDocument, name: &str) -> Result<Timestamp> {
    match document.get(name).map_err(malformed)? {
        Some(RawBsonRef::Timestamp(timestamp)) => Ok(timestamp),
        _ => Err(Error::invalid_argument(format!(
            "{name} must be a Timestamp"
        ))),
    }
}

/// The spec's name of a transaction state (Transactions spec, and the unified test
/// format's `assertSessionTransactionState`).
pub fn transaction_state_name(state: TransactionState) -> &'static str {
    match state {
        TransactionState::None => "none",
        TransactionState::Starting => "starting",
        TransactionState::InProgress => "in_progress",
        TransactionState::Committed | TransactionState::CommittedEmpty => "committed",
        TransactionState::Aborted => "aborted",
    }
}

/// A change stream (`watch`) on the whole deployment (`database` empty), a database
/// (`collection` empty) or a collection, with `args.pipeline` and `args.options`;
/// its events stay the bytes the server sent.
pub async fn watch(
    client: &Client,
    database: &str,
    collection: &str,
    args: &RawDocument,
    session: Option<&ClientSession>,
) -> Result<ChangeStream<RawDocumentBuf>> {
    let pipeline = documents(args, "pipeline", Document::try_from)?;
    let options = options::<ChangeStreamOptions>(args)?;
    // The handles the action borrows: the database and collection, unless watched.
    let db = match database {
        "" => None,
        database => Some(database_for(client, database, args)?),
    };
    let coll = match (&db, collection) {
        (Some(db), collection) if !collection.is_empty() => {
            Some(db.collection::<Document>(collection))
        }
        _ => None,
    };
    let watch = match (&db, &coll) {
        (_, Some(coll)) => coll.watch(),
        (Some(db), None) => db.watch(),
        (None, _) => client.watch(),
    };
    let watch = watch.pipeline(pipeline).with_options(options);
    let stream = match session {
        Some(session) => watch.session(session).await.map(ChangeStream::from)?,
        None => watch.await?,
    };
    Ok(stream.with_type())
}

/// Applies what the client's options given in code set that a connection string
/// cannot (`serverApi: { version, strict, deprecationErrors }`, `driverInfo: { name,
/// version, platform }`); answers whether they ask for command events
/// (`monitorCommands: true`).
pub fn apply_code_options(options: &mut ClientOptions, code: &RawDocument) -> Result<bool> {
    let flag = |document: &RawDocument, name: &str| match document.get(name).map_err(malformed)? {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(None),
        Some(RawBsonRef::Boolean(value)) => Ok(Some(value)),
        Some(_) => Err(Error::invalid_argument(format!("{name} must be a boolean"))),
    };
    let monitor_commands = flag(code, "monitorCommands")?.unwrap_or(false);
    if let Some(RawBsonRef::Document(tracing)) = code.get("tracing").map_err(malformed)? {
        options.tracing = Some(tracing_options(tracing, flag(tracing, "enabled")?)?);
    }
    if let Some(RawBsonRef::Document(info)) = code.get("driverInfo").map_err(malformed)? {
        let text = |name: &str| match info.get(name).map_err(malformed)? {
            None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(None),
            Some(RawBsonRef::String(value)) => Ok(Some(value.to_owned())),
            Some(_) => Err(Error::invalid_argument(format!(
                "driverInfo: {name} must be a string"
            ))),
        };
        let info = DriverInfo {
            name: text("name")?.unwrap_or_default(),
            version: text("version")?,
            platform: text("platform")?,
        };
        info.validate()?;
        options.driver_info = Some(info);
    }
    let Some(RawBsonRef::Document(api)) = code.get("serverApi").map_err(malformed)? else {
        return Ok(monitor_commands);
    };
    let Some(RawBsonRef::String(version)) = api.get("version").map_err(malformed)? else {
        return Err(Error::invalid_argument(
            "serverApi: version must be a string",
        ));
    };
    options.server_api = Some(ServerApi {
        version: version.parse()?,
        strict: flag(api, "strict")?,
        deprecation_errors: flag(api, "deprecationErrors")?,
    });
    Ok(monitor_commands)
}

/// `tracing: { enabled, queryTextMaxLength }` (open-telemetry.md, "`MongoClient`
/// Options for configuring OpenTelemetry on the client level"), the glue having filled
/// what the application left unset from the environment variables
/// `OTEL_NODE_INSTRUMENTATION_MONGODB_…` (a JavaScript host's environment is the
/// glue's to read).
fn tracing_options(tracing: &RawDocument, enabled: Option<bool>) -> Result<OpentelemetryOptions> {
    let max_length = match tracing.get("queryTextMaxLength").map_err(malformed)? {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => None,
        Some(length) => Some(
            match length {
                RawBsonRef::Int32(length) => usize::try_from(length).ok(),
                RawBsonRef::Int64(length) => usize::try_from(length).ok(),
                RawBsonRef::Double(length) if length.fract() == 0.0 && length >= 0.0 => {
                    Some(length as usize)
                }
                _ => None,
            }
            .ok_or_else(|| {
                Error::invalid_argument(
                    "tracing: queryTextMaxLength must be a non-negative integer",
                )
            })?,
        ),
    };
    Ok(OpentelemetryOptions::builder()
        .enabled(enabled)
        .query_text_max_length(max_length)
        .build())
}

/// The GridFS operations of the bucket `args.bucket` (`{ bucketName, chunkSizeBytes }`)
/// of `db`: the file's content crosses as one `Binary` (`args.content`, the result's
/// `content`), which the glue streams.
async fn gridfs(db: &Database, op: &str, args: &RawDocument) -> Result<Document> {
    let mut options = GridFsBucketOptions::default();
    if let Some(RawBsonRef::Document(bucket)) = field(args, "bucket")? {
        if let Some(RawBsonRef::String(name)) = bucket.get("bucketName").map_err(malformed)? {
            options.bucket_name = Some(name.to_owned());
        }
        if let Some(size) = bucket.get("chunkSizeBytes").map_err(malformed)? {
            options.chunk_size_bytes = Some(positive_size(size, "chunkSizeBytes")?);
        }
    }
    let bucket = db.gridfs_bucket(options);
    let id = || match field(args, "id") {
        Ok(Some(id)) => RawBson::from(id)
            .try_into()
            .map_err(|error| Error::invalid_argument(format!("GridFS: invalid id: {error}"))),
        Ok(None) => Err(Error::invalid_argument("GridFS: the file's id is required")),
        Err(error) => Err(error),
    };
    let string = |name: &str| match field(args, name)? {
        Some(RawBsonRef::String(value)) => Ok(value.to_owned()),
        _ => Err(Error::invalid_argument(format!(
            "GridFS: {name} must be a string"
        ))),
    };
    // The glue takes the content whole: read to its end.
    let content = |download: GridFsDownloadStream| async move {
        let mut bytes = Vec::new();
        let mut download = download;
        download.read_to_end(&mut bytes).await?;
        let content = Bson::Binary(anymongo::bson::Binary {
            subtype: anymongo::bson::spec::BinarySubtype::Generic,
            bytes,
        });
        Ok::<_, Error>(doc! { "content": content })
    };
    Ok(match op {
        "gridfsUpload" => {
            let Some(RawBsonRef::Binary(data)) = field(args, "content")? else {
                return Err(Error::invalid_argument("GridFS: the content must be bytes"));
            };
            let mut upload = GridFsUploadOptions::default();
            if let Some(RawBsonRef::Document(given)) = field(args, "options")? {
                upload.id = given
                    .get("id")
                    .map_err(malformed)?
                    .map(|id| RawBson::from(id).try_into())
                    .transpose()
                    .map_err(|error| {
                        Error::invalid_argument(format!("GridFS: invalid id: {error}"))
                    })?;
                if let Some(size) = given.get("chunkSizeBytes").map_err(malformed)? {
                    upload.chunk_size_bytes = Some(positive_size(size, "chunkSizeBytes")?);
                }
                if let Some(RawBsonRef::Document(metadata)) =
                    given.get("metadata").map_err(malformed)?
                {
                    upload.metadata = Some(to_document(metadata)?);
                }
            }
            let mut stream = bucket
                .open_upload_stream(string("filename")?)
                .with_options(upload)
                .await?;
            stream.write_all(data.bytes).await?;
            stream.close().await?;
            doc! { "id": stream.id().clone() }
        }
        "gridfsDownload" => content(bucket.open_download_stream(id()?).await?).await?,
        "gridfsDownloadByName" => {
            let revision = match field(args, "revision")? {
                None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => None,
                Some(RawBsonRef::Int32(revision)) => Some(revision),
                Some(RawBsonRef::Double(revision)) if revision.fract() == 0.0 => {
                    Some(revision as i32)
                }
                Some(_) => {
                    return Err(Error::invalid_argument(
                        "GridFS: revision must be an integer",
                    ))
                }
            };
            let mut download = bucket.open_download_stream_by_name(string("filename")?);
            if let Some(revision) = revision {
                download = download.revision(revision);
            }
            content(download.await?).await?
        }
        "gridfsDelete" => {
            bucket.delete(id()?).await?;
            doc! {}
        }
        "gridfsDeleteByName" => {
            bucket.delete_by_name(&string("filename")?).await?;
            doc! {}
        }
        "gridfsRename" => {
            bucket.rename(id()?, string("newFilename")?).await?;
            doc! {}
        }
        "gridfsRenameByName" => {
            let (filename, new_filename) = (string("filename")?, string("newFilename")?);
            bucket.rename_by_name(&filename, &new_filename).await?;
            doc! {}
        }
        _ => {
            bucket.drop().await?;
            doc! {}
        }
    })
}

/// A positive size in bytes given as a JavaScript number.
fn positive_size(value: RawBsonRef<'_>, name: &str) -> Result<u32> {
    let size = match value {
        RawBsonRef::Int32(size) => i64::from(size),
        RawBsonRef::Int64(size) => size,
        RawBsonRef::Double(size) if size.fract() == 0.0 => size as i64,
        _ => -1,
    };
    u32::try_from(size)
        .ok()
        .filter(|size| *size > 0)
        .ok_or_else(|| {
            Error::invalid_argument(format!("GridFS: {name} must be a positive integer"))
        })
}

/// `args.options.readPreference`, if given.
fn selection_criteria(args: &RawDocument) -> Result<Option<SelectionCriteria>> {
    Ok(options::<FindOptions>(args)?.selection_criteria)
}

/// What [`next_batch`] found.
#[derive(Debug, PartialEq)]
pub enum Batch {
    /// The BSON of the documents, one after the other.
    Documents(Vec<u8>),
    /// None yet: a tailable cursor's getMore found nothing new (without `wait` only).
    Empty,
    /// The cursor is exhausted or closed.
    End,
}

/// The next documents of `cursor`: every one it has fetched, fetching a batch first
/// when it has none — until one comes with `wait`, else once (a tailable cursor's
/// getMore may find nothing new: [`Batch::Empty`]). One call per batch keeps the
/// JavaScript boundary out of the per-document path.
///
/// The documents are the bytes the server sent, one after the other (each BSON
/// document starts with its length): the glue deserializes each one only when it is
/// read, so that what was read can be collected while the rest of the batch waits.
pub async fn next_batch(cursor: &mut Cursor<Document>, wait: bool) -> Result<Batch> {
    let first = match wait {
        true => cursor.next_raw().await.transpose()?,
        false => cursor.next_raw_if_any().await?,
    };
    let Some(first) = first else {
        return Ok(match cursor.is_alive() {
            true if !wait => Batch::Empty,
            _ => Batch::End,
        });
    };
    let mut batch = first.into_bytes();
    // These are buffered: taking them does no I/O.
    for _ in 0..Cursor::buffered(cursor) {
        match cursor.next_raw().await {
            Some(document) => batch.extend_from_slice(document?.as_bytes()),
            None => break,
        }
    }
    Ok(Batch::Documents(batch))
}

/// An error as a document the JavaScript glue turns into an error class named like
/// the Node.js driver's (`name`), with `message`, `code`, `codeName`, `errorLabels`,
/// and for server errors the whole reply (`errorResponse`) or the write errors.
pub fn error_document(error: &Error) -> Document {
    use anymongo::error::WriteFailure;
    // The server's own message, as the Node driver's `message`, where there is one.
    let message = match &*error.kind {
        ErrorKind::Command(command) => command.message.clone(),
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.message.clone(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => concern.message.clone(),
        ErrorKind::CollectionBulkWrite(failure) if !failure.write_errors.is_empty() => {
            failure.write_errors[0].message.clone()
        }
        ErrorKind::InsertMany(failure) => match failure.write_errors.as_deref() {
            Some([first, ..]) => first.message.clone(),
            _ => error.to_string(),
        },
        _ => error.to_string(),
    };
    let mut out = doc! {
        "name": error_class(error),
        "message": message,
        "errorLabels": sorted_labels(error),
    };
    if let Some(code) = error.code() {
        out.insert("code", code);
    }
    let code_name = match &*error.kind {
        ErrorKind::Command(command) if !command.code_name.is_empty() => {
            Some(command.code_name.clone())
        }
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code_name.clone(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern))
            if !concern.code_name.is_empty() =>
        {
            Some(concern.code_name.clone())
        }
        _ => None,
    };
    if let Some(code_name) = code_name {
        out.insert("codeName", code_name);
    }
    match &*error.kind {
        ErrorKind::Write(WriteFailure::WriteError(write)) => {
            if let Some(details) = &write.details {
                out.insert("errInfo", details.clone());
            }
        }
        ErrorKind::BulkWrite(failure) => {
            let write_errors: Document = failure
                .write_errors
                .iter()
                .map(|(index, write)| {
                    let mut entry = doc! { "code": write.code, "message": write.message.clone() };
                    if let Some(details) = &write.details {
                        entry.insert("details", details.clone());
                    }
                    (index.to_string(), Bson::Document(entry))
                })
                .collect();
            out.insert("writeErrors", write_errors);
            let concern_errors: Vec<Bson> = failure
                .write_concern_errors
                .iter()
                .map(|concern| {
                    let mut entry =
                        doc! { "code": concern.code, "message": concern.message.clone() };
                    if let Some(details) = &concern.details {
                        entry.insert("details", details.clone());
                    }
                    Bson::Document(entry)
                })
                .collect();
            out.insert("writeConcernErrors", concern_errors);
            if let Some(partial) = &failure.partial_result {
                let partial = BulkWriteResult::from(partial.clone());
                out.insert("partialResult", client_bulk_write_result(&partial));
            }
            if let Some(cause) = &failure.error {
                out.insert("cause", error_document(cause));
            }
        }
        ErrorKind::CollectionBulkWrite(failure) => {
            write_failures(&mut out, &failure.write_errors, &failure.write_result)
        }
        ErrorKind::InsertMany(failure) => {
            // The Node driver's insertMany error is a bulk write error: its `result`
            // counts the documents inserted.
            let inserted_ids: std::collections::BTreeMap<usize, Bson> = failure
                .inserted_ids
                .iter()
                .map(|(index, id)| (*index, id.clone()))
                .collect();
            let result = BulkWriteResult {
                acknowledged: true,
                inserted_count: u64::try_from(inserted_ids.len()).unwrap_or(u64::MAX),
                inserted_ids,
                ..Default::default()
            };
            let write_errors = failure.write_errors.as_deref().unwrap_or_default();
            write_failures(&mut out, write_errors, &result)
        }
        _ => {}
    }
    if let Some(reply) = error.server_reply() {
        out.insert("errorResponse", reply.clone());
    }
    // What the deadline cut, as the JavaScript error's `cause`.
    if let ErrorKind::OperationTimeout {
        cause: Some(cause), ..
    } = &*error.kind
    {
        out.insert("cause", error_document(cause));
    }
    out
}

/// The Node.js driver's error class for `error`.
/// The error's labels in a stable order: the driver keeps them as a set.
fn sorted_labels(error: &Error) -> Vec<String> {
    let mut labels: Vec<String> = error.labels().iter().cloned().collect();
    labels.sort();
    labels
}

/// A failed `insertMany` or `bulkWrite` as the Node driver's MongoBulkWriteError
/// shows it: the write errors, the first one's code as the error's, the `_id`s
/// inserted, and what the writes that succeeded did (`result`).
fn write_failures(
    out: &mut Document,
    errors: &[anymongo::error::IndexedWriteError],
    result: &BulkWriteResult,
) {
    let write_errors: Vec<Bson> = errors
        .iter()
        .map(|write| {
            let mut entry = doc! {
                "index": count(write.index),
                "code": write.code,
                "errmsg": write.message.clone(),
            };
            if let Some(details) = &write.details {
                entry.insert("errInfo", details.clone());
            }
            Bson::Document(entry)
        })
        .collect();
    if let Some(first) = errors.first() {
        out.insert("code", first.code);
    }
    out.insert("writeErrors", write_errors);
    let inserted: Document = result
        .inserted_ids
        .iter()
        .map(|(index, id)| (index.to_string(), id.clone()))
        .collect();
    out.insert("insertedIds", inserted);
    out.insert("result", bulk_write_result(result));
}

fn error_class(error: &Error) -> &'static str {
    use anymongo::error::WriteFailure;
    match &*error.kind {
        ErrorKind::Command(_) => "MongoServerError",
        ErrorKind::Write(WriteFailure::WriteError(_)) => "MongoServerError",
        ErrorKind::Write(WriteFailure::WriteConcernError(_)) => "MongoWriteConcernError",
        ErrorKind::CollectionBulkWrite(_) | ErrorKind::InsertMany(_) => "MongoBulkWriteError",
        ErrorKind::BulkWrite(_) => "MongoClientBulkWriteError",
        ErrorKind::Authentication { code: Some(_), .. } => "MongoServerError",
        // What the driver found wrong in the server's replies (a wrong SCRAM signature).
        ErrorKind::Authentication { code: None, .. } => "MongoRuntimeError",
        // A network timeout is an `Io` error of kind `TimedOut`.
        ErrorKind::Io(_) if error.is_network_timeout() => "MongoNetworkTimeoutError",
        ErrorKind::Io(_) | ErrorKind::InvalidResponse { .. } => "MongoNetworkError",
        ErrorKind::ServerSelection { .. } => "MongoServerSelectionError",
        // Errors that were InvalidArgument before the official kinds: the same class.
        ErrorKind::InvalidArgument { .. }
        | ErrorKind::BsonDeserialization(_)
        | ErrorKind::BsonSerialization(_)
        | ErrorKind::Transaction { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::MissingResumeToken
        | ErrorKind::Shutdown => "MongoInvalidArgumentError",
        ErrorKind::Internal { .. } => "MongoRuntimeError",
        ErrorKind::IncompatibleServer { .. } => "MongoCompatibilityError",
        ErrorKind::ConnectionPoolCleared { .. } => "MongoPoolClearedError",
        ErrorKind::PoolClosed { .. } => "MongoTopologyClosedError",
        ErrorKind::WaitQueueTimeout { .. } => "MongoWaitQueueTimeoutError",
        ErrorKind::OperationTimeout { .. } => "MongoOperationTimeoutError",
        ErrorKind::GridFs(
            GridFsErrorKind::MissingChunk { .. }
            | GridFsErrorKind::WrongSizeChunk { .. }
            | GridFsErrorKind::WrongNumberOfChunks { .. }
            | GridFsErrorKind::CorruptFile { .. },
        ) => "MongoGridFSChunkError",
        ErrorKind::GridFs(_) => "MongoRuntimeError",
        _ => "MongoError",
    }
}

/// A count as the Node driver reports it: a JavaScript number (a double crosses the
/// boundary as one whatever its size, where an int64 would come back as a `Long`).
fn count<N: TryInto<i64>>(n: N) -> Bson {
    Bson::Double(n.try_into().unwrap_or(i64::MAX) as f64)
}

/// Whether a write with `options` on `db` is acknowledged: its write concern, else the
/// database's (which carries the collection's), else the client's, is not `w: 0`.
fn acknowledged(db: &Database, write_concern: Option<&WriteConcern>) -> bool {
    let client = db.client().options();
    write_concern
        .or(db.concerns().write_concern.as_ref())
        .or(client.write_concern.as_ref())
        .is_none_or(|concern| concern.is_acknowledged())
}

fn update_result(result: anymongo::crud::UpdateResult, acknowledged: bool) -> Document {
    let upserted = result.upserted_id.is_some();
    doc! {
        "acknowledged": acknowledged,
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "upsertedCount": count(u8::from(upserted)),
        "upsertedId": result.upserted_id.unwrap_or(Bson::Null),
    }
}

/// `{ index: id }`, as the Node driver's `insertedIds` and `upsertedIds`.
fn ids_by_index(ids: &std::collections::BTreeMap<usize, Bson>) -> Document {
    ids.iter()
        .map(|(index, id)| (index.to_string(), id.clone()))
        .collect()
}

/// The fields of the Node driver's `BulkWriteResult`.
fn bulk_write_result(result: &BulkWriteResult) -> Document {
    doc! {
        "acknowledged": result.acknowledged,
        "insertedCount": count(result.inserted_count),
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "deletedCount": count(result.deleted_count),
        "upsertedCount": count(result.upserted_count),
        "insertedIds": ids_by_index(&result.inserted_ids),
        "upsertedIds": ids_by_index(&result.upserted_ids),
    }
}

/// An index of `createIndexes`, as the Node driver's `IndexDescription`: `key` and
/// the index's options (`name`, `unique`...), over the options given to the call.
fn index_model(mut spec: Document, defaults: &Document) -> Result<IndexModel> {
    let keys = match spec.remove("key") {
        Some(Bson::Document(keys)) => keys,
        _ => {
            return Err(Error::invalid_argument(
                "createIndexes: each index needs a key, an object",
            ))
        }
    };
    let mut options = defaults.clone();
    options.extend(spec);
    let options = parse_options::<IndexOptions>(Some(options))?;
    Ok(IndexModel::builder().keys(keys).options(options).build())
}

/// `model[name]`, a document, if given.
fn take_document(model: &mut Document, name: &str) -> Result<Option<Document>> {
    match model.remove(name) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(document)) => Ok(Some(document)),
        Some(_) => Err(Error::invalid_argument(format!(
            "bulkWrite: {name} must be an object"
        ))),
    }
}

/// One model of the client's `bulkWrite`, as the Node driver's
/// `AnyClientBulkWriteModel`: `{ namespace: "db.coll", name: "insertOne", document }`,
/// `{ namespace, name: "updateOne", filter, update, upsert... }`...
fn client_write_model(mut model: Document) -> Result<WriteModel> {
    let (Some(Bson::String(namespace)), Some(Bson::String(name))) =
        (model.remove("namespace"), model.remove("name"))
    else {
        return Err(Error::invalid_argument(
            "bulkWrite: each model needs a namespace (\"db.collection\") and a name (\"insertOne\", \"updateOne\"...)",
        ));
    };
    Ok(write_model(doc! { name: model })?.with_namespace(namespace.parse()?))
}

/// The `verboseResults` option of the client's `bulkWrite`, which the driver takes as
/// `.verbose_results()`.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Verbose {
    verbose_results: Option<bool>,
}

/// The Node driver's `ClientBulkWriteResult`: the counts, and with verbose results
/// `insertResults`, `updateResults` and `deleteResults` by index of the model (the glue
/// makes Maps of them).
fn client_bulk_write_result(result: &BulkWriteResult) -> Document {
    let mut out = doc! {
        "acknowledged": result.acknowledged,
        "insertedCount": count(result.inserted_count),
        "upsertedCount": count(result.upserted_count),
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "deletedCount": count(result.deleted_count),
    };
    if let Some(verbose) = &result.verbose_results {
        let by_index = |entries: Vec<(usize, Document)>| -> Document {
            entries
                .into_iter()
                .map(|(index, entry)| (index.to_string(), Bson::Document(entry)))
                .collect()
        };
        let inserts = verbose
            .insert_results
            .iter()
            .map(|(index, insert)| (*index, doc! { "insertedId": insert.inserted_id.clone() }));
        let updates = verbose.update_results.iter().map(|(index, update)| {
            let mut entry = doc! {
                "matchedCount": count(update.matched_count),
                "modifiedCount": count(update.modified_count),
                "didUpsert": update.upserted_id.is_some(),
            };
            if let Some(id) = &update.upserted_id {
                entry.insert("upsertedId", id.clone());
            }
            (*index, entry)
        });
        let deletes = verbose
            .delete_results
            .iter()
            .map(|(index, delete)| (*index, doc! { "deletedCount": count(delete.deleted_count) }));
        out.insert("insertResults", by_index(inserts.collect()));
        out.insert("updateResults", by_index(updates.collect()));
        out.insert("deleteResults", by_index(deletes.collect()));
    }
    out
}

/// One operation of `bulkWrite`, as the Node driver's `AnyBulkWriteOperation`:
/// `{ insertOne: { document } }`, `{ updateOne: { filter, update, upsert... } }`...
fn write_model(operation: Document) -> Result<WriteModel> {
    let shapes = "bulkWrite: each operation is one of { insertOne: { document } }, \
                  { updateOne | updateMany: { filter, update } }, \
                  { replaceOne: { filter, replacement } }, { deleteOne | deleteMany: { filter } }";
    let mut entries = operation.into_iter();
    let (Some((kind, Bson::Document(mut model))), None) = (entries.next(), entries.next()) else {
        return Err(Error::invalid_argument(shapes));
    };
    if kind == "insertOne" {
        let document = take_document(&mut model, "document")?
            .ok_or_else(|| Error::invalid_argument("bulkWrite: insertOne needs a document"))?;
        return Ok(WriteModel::InsertOne(InsertOneModel::new(document)));
    }
    let filter = take_document(&mut model, "filter")?
        .ok_or_else(|| Error::invalid_argument(format!("bulkWrite: {kind} needs a filter")))?;
    // As the models hold them: BSON, checked by the server.
    let collation = take_document(&mut model, "collation")?;
    let hint = model.remove("hint").filter(|hint| *hint != Bson::Null);
    let sort = take_document(&mut model, "sort")?;
    let upsert = match model.remove("upsert") {
        None | Some(Bson::Null) => None,
        Some(Bson::Boolean(upsert)) => Some(upsert),
        Some(_) => {
            return Err(Error::invalid_argument(
                "bulkWrite: upsert must be a boolean",
            ))
        }
    };
    let array_filters = match model.remove("arrayFilters") {
        None | Some(Bson::Null) => None,
        Some(Bson::Array(filters)) => Some(
            filters
                .into_iter()
                .map(|filter| match filter {
                    Bson::Document(_) => Ok(filter),
                    _ => Err(Error::invalid_argument(
                        "bulkWrite: arrayFilters must be an array of objects",
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        Some(_) => {
            return Err(Error::invalid_argument(
                "bulkWrite: arrayFilters must be an array",
            ))
        }
    };
    let modifications = || {
        let raw = RawDocumentBuf::try_from(&model).map_err(malformed)?;
        update(&raw)
    };
    Ok(match kind.as_str() {
        "updateOne" => {
            let mut model = UpdateOneModel::builder()
                .filter(filter)
                .update(modifications()?)
                .build();
            (model.array_filters, model.collation) = (array_filters, collation);
            (model.hint, model.sort, model.upsert) = (hint, sort, upsert);
            model.into()
        }
        "updateMany" => {
            let mut model = UpdateManyModel::builder()
                .filter(filter)
                .update(modifications()?)
                .build();
            (model.array_filters, model.collation) = (array_filters, collation);
            (model.hint, model.upsert) = (hint, upsert);
            model.into()
        }
        "replaceOne" => {
            let replacement = take_document(&mut model, "replacement")?.ok_or_else(|| {
                Error::invalid_argument("bulkWrite: replaceOne needs a replacement")
            })?;
            let mut model = ReplaceOneModel::builder()
                .filter(filter)
                .replacement(replacement)
                .build();
            (model.collation, model.hint) = (collation, hint);
            (model.sort, model.upsert) = (sort, upsert);
            model.into()
        }
        "deleteOne" => {
            let mut model = DeleteOneModel::builder().filter(filter).build();
            (model.collation, model.hint) = (collation, hint);
            model.into()
        }
        "deleteMany" => {
            let mut model = DeleteManyModel::builder().filter(filter).build();
            (model.collation, model.hint) = (collation, hint);
            model.into()
        }
        _ => return Err(Error::invalid_argument(shapes)),
    })
}

fn unknown(op: &str) -> Error {
    Error::invalid_argument(format!("{op}: not an operation of the JavaScript API"))
}

/// The arguments (what the glue serialized) are not BSON.
fn malformed(error: anymongo::bson::error::Error) -> Error {
    Error::invalid_argument(format!("malformed arguments: {error}"))
}

/// `args[name]`, `None` when absent or null.
fn field<'a>(args: &'a RawDocument, name: &str) -> Result<Option<RawBsonRef<'a>>> {
    match args.get(name).map_err(malformed)? {
        None | Some(RawBsonRef::Null) => Ok(None),
        value => Ok(value),
    }
}

/// `args[name]`, a document, or an empty one when absent (an omitted filter).
fn document(args: &RawDocument, name: &str) -> Result<Document> {
    match field(args, name)? {
        None => Ok(Document::new()),
        Some(RawBsonRef::Document(document)) => Document::try_from(document).map_err(malformed),
        Some(other) => Err(Error::invalid_argument(format!(
            "{name} must be an object, not {:?}",
            other.element_type()
        ))),
    }
}

/// `args[name]`, a document that must be there, as its bytes.
fn required_raw_document<'a>(args: &'a RawDocument, name: &str) -> Result<&'a RawDocument> {
    match field(args, name)? {
        Some(RawBsonRef::Document(document)) => Ok(document),
        _ => Err(Error::invalid_argument(format!("{name} must be an object"))),
    }
}

/// `args[name]`, a document that must be there.
fn required_document(args: &RawDocument, name: &str) -> Result<Document> {
    Document::try_from(required_raw_document(args, name)?).map_err(malformed)
}

/// `args[name]`, an array of documents, each read by `read` (as a `Document`, or
/// kept as its bytes).
fn documents<'a, D>(
    args: &'a RawDocument,
    name: &str,
    read: impl Fn(&'a RawDocument) -> std::result::Result<D, anymongo::bson::error::Error>,
) -> Result<Vec<D>> {
    let not_documents = || Error::invalid_argument(format!("{name} must be an array of objects"));
    let Some(RawBsonRef::Array(values)) = args.get(name).map_err(malformed)? else {
        return Err(not_documents());
    };
    values
        .into_iter()
        .map(|value| match value.map_err(malformed)? {
            RawBsonRef::Document(document) => read(document).map_err(malformed),
            _ => Err(not_documents()),
        })
        .collect()
}

/// `args.update`: update operators, or a pipeline.
fn update(args: &RawDocument) -> Result<anymongo::collection::UpdateModifications> {
    match args.get("update").map_err(malformed)? {
        Some(RawBsonRef::Array(_)) => Ok(documents(args, "update", Document::try_from)?.into()),
        Some(RawBsonRef::Document(_)) => Ok(document(args, "update")?.into()),
        _ => Err(Error::invalid_argument(
            "update must be an object of update operators or an array (a pipeline)",
        )),
    }
}

/// `args.options`, if given.
fn options_document(args: &RawDocument) -> Result<Option<Document>> {
    match field(args, "options")? {
        None => Ok(None),
        Some(RawBsonRef::Document(options)) => {
            Ok(Some(Document::try_from(options).map_err(malformed)?))
        }
        Some(_) => Err(Error::invalid_argument("options must be an object")),
    }
}

/// The database `name`, with the operation's `timeoutMS` (`args.options.timeoutMS`,
/// as the Node driver takes it on every operation) for it and its collections.
fn database_for(client: &Client, name: &str, args: &RawDocument) -> Result<Database> {
    let mut db = client.database(name);
    // The concerns of the Db or Collection the operation runs on (the collection's over
    // its database's, merged by the glue).
    if let Some(RawBsonRef::Document(given)) = field(args, "concerns")? {
        let concerns = Document::try_from(given).map_err(malformed)?;
        // The options of an aggregate have the three concerns.
        let concerns: AggregateOptions = parse_options(Some(concerns))?;
        db = db.with_concerns(Concerns {
            selection_criteria: concerns.selection_criteria,
            read_concern: concerns.read_concern,
            write_concern: concerns.write_concern,
            timeout: None,
        });
        if let Some(timeout) = milliseconds(given, "timeoutMS")? {
            db = db.with_timeout(timeout);
        }
    }
    Ok(match operation_timeout(args)? {
        Some(timeout) => db.with_timeout(timeout),
        None => db,
    })
}

/// `args.options.timeoutMS`: a number of milliseconds, 0 for no limit.
fn operation_timeout(args: &RawDocument) -> Result<Option<Duration>> {
    match field(args, "options")? {
        Some(RawBsonRef::Document(options)) => milliseconds(options, "timeoutMS"),
        _ => Ok(None),
    }
}

/// `document[name]`, a number of milliseconds, if given.
fn milliseconds(document: &RawDocument, name: &str) -> Result<Option<Duration>> {
    let milliseconds = match document.get(name).map_err(malformed)? {
        None | Some(RawBsonRef::Null) | Some(RawBsonRef::Undefined) => return Ok(None),
        Some(RawBsonRef::Int32(value)) => f64::from(value),
        Some(RawBsonRef::Int64(value)) => value as f64,
        Some(RawBsonRef::Double(value)) => value,
        Some(_) => return Err(Error::invalid_argument(format!("{name} must be a number"))),
    };
    match Duration::try_from_secs_f64(milliseconds / 1000.0) {
        Ok(duration) => Ok(Some(duration)),
        Err(_) => Err(Error::invalid_argument(format!(
            "{name} must be a non-negative number of milliseconds, not {milliseconds}"
        ))),
    }
}

/// `args.options` as the core's options of an operation (unknown names are ignored,
/// as the Node driver ignores what does not apply).
fn options<T: DeserializeOwned + Default>(args: &RawDocument) -> Result<T> {
    parse_options(options_document(args)?)
}

fn parse_options<T: DeserializeOwned + Default>(options: Option<Document>) -> Result<T> {
    match options {
        None => Ok(T::default()),
        Some(options) => anymongo::bson::deserialize_from_document(options)
            .map_err(|error| Error::invalid_argument(format!("invalid options: {error}"))),
    }
}

/// The options of findOneAndUpdate or findOneAndReplace; `returnDocument` is the Node
/// driver's `"before"`/`"after"`, which the core's `ReturnDocument` reads as
/// `"Before"`/`"After"`.
fn find_and_modify_options<T: DeserializeOwned + Default>(args: &RawDocument) -> Result<T> {
    let mut parsed = options_document(args)?;
    if let Some(options) = &mut parsed {
        let variant = match options.remove("returnDocument") {
            None | Some(Bson::Null) => None,
            Some(Bson::String(value)) if value == "after" => Some("After"),
            Some(Bson::String(value)) if value == "before" => Some("Before"),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "returnDocument must be \"before\" or \"after\", not {other}"
                )))
            }
        };
        if let Some(variant) = variant {
            options.insert("returnDocument", variant);
        }
    }
    parse_options(parsed)
}

/// The command options among createIndex's options (`commitQuorum`, `maxTimeMS`,
/// `comment`, `writeConcern`, as the Node driver's `CreateIndexesOptions`); the rest
/// (`unique`, `name`, `expireAfterSeconds`...) describe the index.
fn split_index_options(args: &RawDocument) -> Result<(Document, CreateIndexOptions)> {
    const COMMAND_OPTIONS: [&str; 5] = [
        "commitQuorum",
        "maxTimeMS",
        "comment",
        "writeConcern",
        "rawData",
    ];
    let (mut model, mut command) = (Document::new(), Document::new());
    if let Some(RawBsonRef::Document(options)) = field(args, "options")? {
        for (name, value) in Document::try_from(options).map_err(malformed)? {
            match name.as_str() {
                // The operation's, not the index's: `database_for` took it.
                "timeoutMS" => None,
                name if COMMAND_OPTIONS.contains(&name) => command.insert(name, value),
                _ => model.insert(name, value),
            };
        }
    }
    let command = parse_options::<CreateIndexOptions>(Some(command))?;
    Ok((model, command))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::options::ReturnDocument;

    #[test]
    fn session_and_transaction_options_take_the_node_driver_names() {
        let options = session_options(&rawdoc! {
            "causalConsistency": false,
            "defaultTimeoutMS": 250,
            "defaultTransactionOptions": { "readConcern": { "level": "snapshot" }, "maxCommitTimeMS": 40 },
        })
        .unwrap();
        assert_eq!(options.causal_consistency, Some(false));
        assert_eq!(options.default_timeout, Some(Duration::from_millis(250)));
        let defaults = options.default_transaction_options.unwrap();
        assert_eq!(defaults.max_commit_time, Some(Duration::from_millis(40)));
        assert!(defaults.read_concern.is_some());
        assert!(session_options(&rawdoc! { "snapshot": "yes" }).is_err());
        assert!(transaction_options(&rawdoc! { "maxCommitTimeMS": "soon" }).is_err());
    }

    #[test]
    fn code_options_declare_the_api_and_ask_for_command_events() {
        let mut options = ClientOptions::parse_uri("mongodb://localhost").unwrap();
        let code =
            rawdoc! { "monitorCommands": true, "serverApi": { "version": "1", "strict": true } };
        assert!(apply_code_options(&mut options, &code).unwrap());
        let api = options.server_api.clone().unwrap();
        assert_eq!((api.strict, api.deprecation_errors), (Some(true), None));
        let unknown = rawdoc! { "serverApi": { "version": "2" } };
        assert!(apply_code_options(&mut options, &unknown).is_err());
        assert!(!apply_code_options(&mut options, &rawdoc! {}).unwrap());
    }

    #[test]
    fn code_options_set_tracing() {
        let mut options = ClientOptions::parse_uri("mongodb://localhost").unwrap();
        let code = rawdoc! { "tracing": { "enabled": true, "queryTextMaxLength": 100.0 } };
        apply_code_options(&mut options, &code).unwrap();
        let tracing = options.tracing.clone().unwrap();
        assert_eq!(tracing.enabled, Some(true));
        assert_eq!(tracing.query_text_max_length, Some(100));
        for bad in [
            rawdoc! { "tracing": { "queryTextMaxLength": -1 } },
            rawdoc! { "tracing": { "queryTextMaxLength": 1.5 } },
            rawdoc! { "tracing": { "enabled": "yes" } },
        ] {
            assert!(apply_code_options(&mut options, &bad).is_err());
        }
    }

    #[test]
    fn a_snapshot_session_takes_a_snapshot_time() {
        let time = Timestamp {
            time: 5,
            increment: 1,
        };
        let options = session_options(&rawdoc! { "snapshot": true, "snapshotTime": time }).unwrap();
        assert_eq!(options.snapshot_time, Some(time));
        assert!(session_options(&rawdoc! { "snapshotTime": 5 }).is_err());
    }

    #[test]
    fn code_options_name_the_wrapping_library() {
        let mut options = ClientOptions::parse_uri("mongodb://localhost").unwrap();
        let code = rawdoc! { "driverInfo": { "name": "Mongoose", "version": "9.0.0" } };
        apply_code_options(&mut options, &code).unwrap();
        let info = options.driver_info.clone().unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_deref()),
            ("Mongoose", Some("9.0.0"))
        );
        let piped = rawdoc! { "driverInfo": { "name": "a|b" } };
        assert!(apply_code_options(&mut options, &piped).is_err());
        let numeric = rawdoc! { "driverInfo": { "version": 9 } };
        assert!(apply_code_options(&mut options, &numeric).is_err());
    }

    #[test]
    fn client_bulk_write_models_name_their_namespace_and_kind() {
        let model = doc! { "namespace": "db.c", "name": "updateOne", "filter": {}, "update": { "$set": { "a": 1 } } };
        assert!(client_write_model(model).is_ok());
        assert!(client_write_model(doc! { "name": "insertOne", "document": {} }).is_err());
        let unknown = doc! { "namespace": "db.c", "name": "upsertOne", "filter": {} };
        assert!(client_write_model(unknown).is_err());
    }

    #[test]
    fn create_index_options_split_into_index_and_command() {
        let args = rawdoc! { "options": { "unique": true, "name": "a_1", "maxTimeMS": 500 } };
        let (model, command) = split_index_options(&args).unwrap();
        assert_eq!(model, doc! { "unique": true, "name": "a_1" });
        assert_eq!(
            command.max_time,
            Some(std::time::Duration::from_millis(500))
        );
    }

    #[test]
    fn return_document_takes_the_node_driver_spelling() {
        let args = rawdoc! { "options": { "returnDocument": "after", "upsert": true } };
        let options: FindOneAndUpdateOptions = find_and_modify_options(&args).unwrap();
        assert_eq!(options.return_document, Some(ReturnDocument::After));
        assert_eq!(options.upsert, Some(true));
        let args = rawdoc! { "options": { "returnDocument": "later" } };
        assert!(find_and_modify_options::<FindOneAndReplaceOptions>(&args).is_err());
    }

    #[test]
    fn arguments_of_the_wrong_type_are_clear_errors() {
        let args = rawdoc! { "filter": 1, "documents": [1], "document": null };
        assert!(document(&args, "filter").is_err());
        assert!(documents(&args, "documents", Ok).is_err());
        assert!(required_raw_document(&args, "document").is_err());
        assert!(options::<FindOptions>(&rawdoc! { "options": "x" }).is_err());
        assert!(update(&rawdoc! { "update": "x" }).is_err());
    }

    #[test]
    fn documents_to_insert_are_the_bytes_of_the_arguments() {
        let args = rawdoc! { "documents": [{ "_id": 1, "a": "x" }, { "_id": 2 }] };
        let read = documents(&args, "documents", Ok).unwrap();
        let (first, second) = (rawdoc! { "_id": 1, "a": "x" }, rawdoc! { "_id": 2 });
        assert_eq!(read, [first.as_ref(), second.as_ref()]);
        let args = rawdoc! { "document": { "_id": 1 }, "filter": null };
        assert_eq!(
            required_raw_document(&args, "document").unwrap(),
            rawdoc! { "_id": 1 }.as_ref()
        );
        // An omitted or null filter matches everything.
        assert_eq!(document(&args, "filter").unwrap(), Document::new());
        assert_eq!(document(&args, "none").unwrap(), Document::new());
    }

    #[test]
    fn malformed_arguments_are_clear_errors() {
        // A document whose declared length is right but whose element is cut short.
        let bytes = vec![9, 0, 0, 0, 0x10, b'a', 0, 1, 0];
        let args = RawDocument::from_bytes(&bytes).unwrap();
        let error = document(args, "filter").unwrap_err();
        assert!(error.to_string().contains("malformed arguments"), "{error}");
    }

    #[test]
    fn a_server_error_keeps_code_code_name_and_labels() {
        let error = Error::new(ErrorKind::Command(anymongo::CommandError {
            code: 11600,
            code_name: "InterruptedAtShutdown".into(),
            message: "shutting down".into(),
            error_labels: vec!["RetryableWriteError".into()],
            topology_version: None,
        }));
        let document = error_document(&error);
        assert_eq!(document.get_str("name").unwrap(), "MongoServerError");
        assert_eq!(document.get_i32("code").unwrap(), 11600);
        assert_eq!(
            document.get_str("codeName").unwrap(),
            "InterruptedAtShutdown"
        );
        assert_eq!(
            document.get_array("errorLabels").unwrap(),
            &vec![Bson::String("RetryableWriteError".into())]
        );
    }

    #[test]
    fn other_errors_name_the_node_driver_class() {
        let error = Error::invalid_argument("bad");
        assert_eq!(
            error_document(&error).get_str("name").unwrap(),
            "MongoInvalidArgumentError"
        );
        assert!(error_document(&error).get("code").is_none());
    }

    #[test]
    fn an_authentication_failure_is_the_servers_or_the_drivers() {
        let refused = |code| {
            Error::new(ErrorKind::Authentication {
                mechanism: "SCRAM-SHA-256",
                source: "admin".into(),
                message: "bad".into(),
                code,
            })
        };
        let name = |error: &Error| error_document(error).get_str("name").unwrap().to_owned();
        assert_eq!(name(&refused(Some(18))), "MongoServerError");
        assert_eq!(name(&refused(None)), "MongoRuntimeError");
    }

    #[test]
    fn an_operation_timeout_names_its_class_and_keeps_its_cause() {
        let cause = Error::new(ErrorKind::ServerSelection {
            message: "no server".into(),
        });
        let error = Error::new(ErrorKind::OperationTimeout {
            timeout: std::time::Duration::from_millis(200),
            during: "server selection",
            cause: Some(Box::new(cause)),
        });
        let document = error_document(&error);
        assert_eq!(
            document.get_str("name").unwrap(),
            "MongoOperationTimeoutError"
        );
        assert!(
            document
                .get_str("message")
                .unwrap()
                .contains("timeoutMS 200 ms"),
            "{document}"
        );
        let cause = document.get_document("cause").unwrap();
        assert_eq!(cause.get_str("name").unwrap(), "MongoServerSelectionError");
        let without_cause = Error::new(ErrorKind::OperationTimeout {
            timeout: std::time::Duration::from_millis(200),
            during: "the operation",
            cause: None,
        });
        assert!(error_document(&without_cause).get("cause").is_none());
    }

    #[test]
    fn an_operations_timeout_ms_is_read_and_kept_out_of_index_options() {
        let args = rawdoc! { "options": { "timeoutMS": 200, "unique": true } };
        assert_eq!(
            operation_timeout(&args).unwrap(),
            Some(Duration::from_millis(200))
        );
        let (model, _) = split_index_options(&args).unwrap();
        assert_eq!(model, doc! { "unique": true });
        let args = rawdoc! { "options": { "timeoutMS": 0.5 } };
        assert_eq!(
            operation_timeout(&args).unwrap(),
            Some(Duration::from_micros(500))
        );
        assert_eq!(operation_timeout(&rawdoc! { "options": {} }).unwrap(), None);
        assert_eq!(operation_timeout(&rawdoc! {}).unwrap(), None);
        for bad in [
            rawdoc! { "options": { "timeoutMS": -1 } },
            rawdoc! { "options": { "timeoutMS": "1" } },
        ] {
            let error = operation_timeout(&bad).unwrap_err();
            assert!(
                matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
                "{error}"
            );
        }
    }

    #[test]
    fn bulk_write_operations_take_the_node_driver_shapes() {
        let model = write_model(doc! { "updateOne": {
            "filter": { "a": 1 }, "update": { "$set": { "b": 2 } }, "upsert": true,
        } })
        .unwrap();
        let WriteModel::UpdateOne(update) = model else {
            panic!("{model:?}")
        };
        assert_eq!(update.filter, doc! { "a": 1 });
        assert_eq!(update.upsert, Some(true));
        let model = write_model(doc! { "insertOne": { "document": { "_id": 1 } } }).unwrap();
        assert!(matches!(model, WriteModel::InsertOne(_)), "{model:?}");
        for bad in [
            doc! { "insertOne": { "_id": 1 } },
            doc! { "deleteOne": {} },
            doc! { "upsertOne": { "filter": {} } },
            doc! { "deleteOne": { "filter": {} }, "deleteMany": { "filter": {} } },
            doc! { "updateOne": { "filter": {}, "update": { "$set": {} }, "upsert": 1 } },
        ] {
            assert!(write_model(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_index_description_is_key_and_options() {
        let model = index_model(
            doc! { "key": { "a": 1 }, "unique": true },
            &doc! { "sparse": true },
        )
        .unwrap();
        assert_eq!(model.name(), "a_1");
        assert!(index_model(doc! { "name": "x" }, &Document::new()).is_err());
    }

    #[test]
    fn counts_cross_as_numbers() {
        assert_eq!(count(3u64), Bson::Double(3.0));
        assert_eq!(count(u64::MAX), Bson::Double(i64::MAX as f64));
    }
}
