//! The operations of the JavaScript API, on any target: each takes its arguments as one
//! BSON document (what the JavaScript glue serialized with the `bson` npm package) and
//! answers with one, shaped like the official Node.js driver's results.
//!
//! Keeping this free of wasm-bindgen lets clippy and the unit tests see it natively;
//! `js.rs` only moves bytes across the JavaScript boundary.

use anymongo::bson::{doc, Bson, Document};
use anymongo::crud::{
    AggregateOptions, CountOptions, FindOneAndModifyOptions, FindOptions, ReadOptions,
    ReturnDocument, WriteOptions,
};
use anymongo::index_management::{CreateIndexOptions, IndexModel};
use anymongo::{Client, Collection, Cursor, Error, ErrorKind, Result};
use futures::StreamExt;
use serde::de::DeserializeOwned;

/// Runs the operation `op` of the JavaScript API on collection `collection` of
/// database `database` (the database itself for `command`, `dropDatabase`), with the
/// arguments in `args`: `filter`, `update`, `replacement`, `document(s)`, `key`,
/// `keys`, `command` and `options`, as the operation needs.
pub async fn run(
    client: &Client,
    op: &str,
    database: &str,
    collection: &str,
    mut args: Document,
) -> Result<Document> {
    let db = client.database(database);
    let coll: Collection<Document> = db.collection(collection);
    let filter = take_document(&mut args, "filter")?;
    Ok(match op {
        "insertOne" => {
            let document = required_document(&mut args, "document")?;
            let result = coll
                .insert_one(document, options::<WriteOptions>(&args)?)
                .await?;
            doc! { "acknowledged": true, "insertedId": result.inserted_id }
        }
        "insertMany" => {
            let documents = take_documents(&mut args, "documents")?;
            let result = coll
                .insert_many(documents, options::<WriteOptions>(&args)?)
                .await?;
            let ids: Document = result
                .inserted_ids
                .iter()
                .map(|(index, id)| (index.to_string(), id.clone()))
                .collect();
            doc! {
                "acknowledged": true,
                "insertedCount": count(result.inserted_ids.len()),
                "insertedIds": ids,
            }
        }
        "updateOne" | "updateMany" => {
            let update = take_update(&mut args)?;
            let options = options::<WriteOptions>(&args)?;
            let result = match op {
                "updateOne" => coll.update_one(filter, update, options).await?,
                _ => coll.update_many(filter, update, options).await?,
            };
            update_result(result)
        }
        "replaceOne" => {
            let replacement = required_document(&mut args, "replacement")?;
            let result = coll
                .replace_one(filter, replacement, options::<WriteOptions>(&args)?)
                .await?;
            update_result(result)
        }
        "deleteOne" | "deleteMany" => {
            let options = options::<WriteOptions>(&args)?;
            let result = match op {
                "deleteOne" => coll.delete_one(filter, options).await?,
                _ => coll.delete_many(filter, options).await?,
            };
            doc! { "acknowledged": true, "deletedCount": count(result.deleted_count) }
        }
        "findOne" => {
            let found = coll
                .find_one(filter, options::<FindOptions>(&args)?)
                .await?;
            doc! { "value": found.map_or(Bson::Null, Bson::Document) }
        }
        "findOneAndUpdate" | "findOneAndReplace" | "findOneAndDelete" => {
            let options = find_and_modify_options(&args)?;
            let found = match op {
                "findOneAndUpdate" => {
                    let update = take_update(&mut args)?;
                    coll.find_one_and_update(filter, update, options).await?
                }
                "findOneAndReplace" => {
                    let replacement = required_document(&mut args, "replacement")?;
                    coll.find_one_and_replace(filter, replacement, options)
                        .await?
                }
                _ => coll.find_one_and_delete(filter, options).await?,
            };
            doc! { "value": found.map_or(Bson::Null, Bson::Document) }
        }
        "countDocuments" => {
            let n = coll
                .count_documents(filter, options::<CountOptions>(&args)?)
                .await?;
            doc! { "n": count(n) }
        }
        "estimatedDocumentCount" => {
            let n = coll
                .estimated_document_count(options::<ReadOptions>(&args)?)
                .await?;
            doc! { "n": count(n) }
        }
        "distinct" => {
            let key = match args.remove("key") {
                Some(Bson::String(key)) => key,
                _ => {
                    return Err(Error::invalid_argument(
                        "distinct: the key must be a string",
                    ))
                }
            };
            let values = coll
                .distinct(&key, filter, options::<ReadOptions>(&args)?)
                .await?;
            doc! { "values": values }
        }
        "createIndex" => {
            let keys = required_document(&mut args, "keys")?;
            let (model_options, command_options) = split_index_options(&args)?;
            let model = IndexModel::new(keys).with_options(model_options);
            let name = coll.create_index(model, command_options).await?;
            doc! { "name": name }
        }
        "drop" => {
            coll.drop(None).await?;
            doc! { "value": true }
        }
        "dropDatabase" => {
            db.drop(None).await?;
            doc! { "value": true }
        }
        "command" => {
            let command = required_document(&mut args, "command")?;
            db.run_command(command).await?
        }
        _ => return Err(unknown(op)),
    })
}

/// Opens the cursor of `find` or `aggregate` (on the database when `collection` is
/// empty, for `db.aggregate`).
pub async fn open_cursor(
    client: &Client,
    op: &str,
    database: &str,
    collection: &str,
    mut args: Document,
) -> Result<Cursor<Document>> {
    let db = client.database(database);
    match op {
        "find" => {
            let filter = take_document(&mut args, "filter")?;
            db.collection::<Document>(collection)
                .find(filter, options::<FindOptions>(&args)?)
                .await
        }
        "aggregate" => {
            let pipeline = take_documents(&mut args, "pipeline")?;
            let options = options::<AggregateOptions>(&args)?;
            match collection {
                "" => db.aggregate(pipeline, options).await,
                _ => {
                    db.collection::<Document>(collection)
                        .aggregate(pipeline, options)
                        .await
                }
            }
        }
        _ => Err(unknown(op)),
    }
}

/// The next documents of `cursor`: every one it has fetched, fetching a batch first
/// when it has none; `None` once it is exhausted. One call per batch keeps the
/// JavaScript boundary out of the per-document path.
pub async fn next_batch(cursor: &mut Cursor<Document>) -> Result<Option<Document>> {
    let Some(first) = cursor.next().await else {
        return Ok(None);
    };
    let mut batch = vec![Bson::Document(first?)];
    // These are buffered: taking them does no I/O.
    for _ in 0..Cursor::buffered(cursor) {
        match cursor.next().await {
            Some(document) => batch.push(Bson::Document(document?)),
            None => break,
        }
    }
    Ok(Some(doc! { "batch": batch }))
}

/// An error as a document the JavaScript glue turns into an error class named like
/// the Node.js driver's (`name`), with `message`, `code`, `codeName`, `errorLabels`,
/// and for server errors the whole reply (`errorResponse`) or the write errors.
pub fn error_document(error: &Error) -> Document {
    use anymongo::error::WriteFailure;
    // The server's own message, as the Node driver's `message`, where there is one.
    let message = match error.kind() {
        ErrorKind::Command(command) => command.message.clone(),
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.message.clone(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => concern.message.clone(),
        ErrorKind::BulkWrite(failure) if !failure.write_errors.is_empty() => {
            failure.write_errors[0].message.clone()
        }
        _ => error.to_string(),
    };
    let mut out = doc! {
        "name": error_class(error),
        "message": message,
        "errorLabels": error.labels().to_vec(),
    };
    if let Some(code) = error.code() {
        out.insert("code", code);
    }
    let code_name = match error.kind() {
        ErrorKind::Command(command) if !command.code_name.is_empty() => {
            Some(command.code_name.clone())
        }
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code_name.clone(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => concern.code_name.clone(),
        _ => None,
    };
    if let Some(code_name) = code_name {
        out.insert("codeName", code_name);
    }
    match error.kind() {
        ErrorKind::Write(WriteFailure::WriteError(write)) => {
            if let Some(details) = &write.details {
                out.insert("errInfo", details.clone());
            }
        }
        ErrorKind::BulkWrite(failure) => {
            let write_errors: Vec<Bson> = failure
                .write_errors
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
            // Like the Node driver, the first write error's code is the error's code.
            if let Some(first) = failure.write_errors.first() {
                out.insert("code", first.code);
            }
            out.insert("writeErrors", write_errors);
            let inserted: Document = failure
                .write_result
                .inserted_ids
                .iter()
                .map(|(index, id)| (index.to_string(), id.clone()))
                .collect();
            out.insert("insertedIds", inserted);
        }
        _ => {}
    }
    if let Some(reply) = error.server_reply() {
        out.insert("errorResponse", reply.clone());
    }
    out
}

/// The Node.js driver's error class for `error`.
fn error_class(error: &Error) -> &'static str {
    use anymongo::error::WriteFailure;
    match error.kind() {
        ErrorKind::Command(_) => "MongoServerError",
        ErrorKind::Write(WriteFailure::WriteError(_)) => "MongoServerError",
        ErrorKind::Write(WriteFailure::WriteConcernError(_)) => "MongoWriteConcernError",
        ErrorKind::BulkWrite(_) | ErrorKind::ClientBulkWrite(_) => "MongoBulkWriteError",
        ErrorKind::Authentication { code: Some(_), .. } => "MongoServerError",
        ErrorKind::Network { .. } | ErrorKind::Tls { .. } | ErrorKind::Protocol { .. } => {
            "MongoNetworkError"
        }
        ErrorKind::Timeout { .. } => "MongoNetworkTimeoutError",
        ErrorKind::ServerSelection { .. } => "MongoServerSelectionError",
        ErrorKind::InvalidArgument { .. } | ErrorKind::Bson { .. } => "MongoInvalidArgumentError",
        ErrorKind::IncompatibleServer { .. } => "MongoCompatibilityError",
        ErrorKind::PoolCleared { .. } => "MongoPoolClearedError",
        ErrorKind::PoolClosed { .. } => "MongoTopologyClosedError",
        ErrorKind::WaitQueueTimeout { .. } => "MongoWaitQueueTimeoutError",
        _ => "MongoError",
    }
}

/// A count as the Node driver reports it: a JavaScript number (a double crosses the
/// boundary as one whatever its size, where an int64 would come back as a `Long`).
fn count<N: TryInto<i64>>(n: N) -> Bson {
    Bson::Double(n.try_into().unwrap_or(i64::MAX) as f64)
}

fn update_result(result: anymongo::crud::UpdateResult) -> Document {
    let upserted = result.upserted_id.is_some();
    doc! {
        "acknowledged": true,
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "upsertedCount": count(u8::from(upserted)),
        "upsertedId": result.upserted_id.unwrap_or(Bson::Null),
    }
}

fn unknown(op: &str) -> Error {
    Error::invalid_argument(format!("{op}: not an operation of the JavaScript API"))
}

/// `args[name]`, a document, or an empty one when absent (an omitted filter).
fn take_document(args: &mut Document, name: &str) -> Result<Document> {
    match args.remove(name) {
        None | Some(Bson::Null) => Ok(Document::new()),
        Some(Bson::Document(document)) => Ok(document),
        Some(other) => Err(Error::invalid_argument(format!(
            "{name} must be an object, not {:?}",
            other.element_type()
        ))),
    }
}

/// `args[name]`, a document that must be there.
fn required_document(args: &mut Document, name: &str) -> Result<Document> {
    match args.get(name) {
        Some(Bson::Document(_)) => take_document(args, name),
        _ => Err(Error::invalid_argument(format!("{name} must be an object"))),
    }
}

/// `args[name]`, an array of documents.
fn take_documents(args: &mut Document, name: &str) -> Result<Vec<Document>> {
    let Some(Bson::Array(values)) = args.remove(name) else {
        return Err(Error::invalid_argument(format!(
            "{name} must be an array of objects"
        )));
    };
    values
        .into_iter()
        .map(|value| match value {
            Bson::Document(document) => Ok(document),
            _ => Err(Error::invalid_argument(format!(
                "{name} must be an array of objects"
            ))),
        })
        .collect()
}

/// `args.update`: update operators, or a pipeline.
fn take_update(args: &mut Document) -> Result<anymongo::collection::UpdateModifications> {
    match args.get("update") {
        Some(Bson::Array(_)) => Ok(take_documents(args, "update")?.into()),
        Some(Bson::Document(_)) => Ok(take_document(args, "update")?.into()),
        _ => Err(Error::invalid_argument(
            "update must be an object of update operators or an array (a pipeline)",
        )),
    }
}

/// `args.options` as the core's options of an operation (unknown names are ignored,
/// as the Node driver ignores what does not apply).
fn options<T: DeserializeOwned + Default>(args: &Document) -> Result<T> {
    match args.get("options") {
        None | Some(Bson::Null) => Ok(T::default()),
        Some(Bson::Document(options)) => anymongo::bson::deserialize_from_document(options.clone())
            .map_err(|error| Error::invalid_argument(format!("invalid options: {error}"))),
        Some(_) => Err(Error::invalid_argument("options must be an object")),
    }
}

/// findOneAndX options; `returnDocument` is the Node driver's `"before"`/`"after"`.
fn find_and_modify_options(args: &Document) -> Result<FindOneAndModifyOptions> {
    let mut parsed = args.clone();
    let mut return_document = None;
    if let Some(Bson::Document(options)) = parsed.get_mut("options") {
        return_document = match options.remove("returnDocument") {
            None | Some(Bson::Null) => None,
            Some(Bson::String(value)) if value == "after" => Some(ReturnDocument::After),
            Some(Bson::String(value)) if value == "before" => Some(ReturnDocument::Before),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "returnDocument must be \"before\" or \"after\", not {other}"
                )))
            }
        };
    }
    let mut options = options::<FindOneAndModifyOptions>(&parsed)?;
    options.return_document = return_document;
    Ok(options)
}

/// The command options among createIndex's options (`commitQuorum`, `maxTimeMS`,
/// `comment`, `writeConcern`, as the Node driver's `CreateIndexesOptions`); the rest
/// (`unique`, `name`, `expireAfterSeconds`...) describe the index.
fn split_index_options(args: &Document) -> Result<(Document, CreateIndexOptions)> {
    const COMMAND_OPTIONS: [&str; 4] = ["commitQuorum", "maxTimeMS", "comment", "writeConcern"];
    let (mut model, mut command) = (Document::new(), Document::new());
    if let Some(Bson::Document(options)) = args.get("options") {
        for (name, value) in options {
            match COMMAND_OPTIONS.contains(&name.as_str()) {
                true => command.insert(name, value.clone()),
                false => model.insert(name, value.clone()),
            };
        }
    }
    let command = options::<CreateIndexOptions>(&doc! { "options": command })?;
    Ok((model, command))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_index_options_split_into_index_and_command() {
        let args = doc! { "options": { "unique": true, "name": "a_1", "maxTimeMS": 500 } };
        let (model, command) = split_index_options(&args).unwrap();
        assert_eq!(model, doc! { "unique": true, "name": "a_1" });
        assert_eq!(
            command.max_time,
            Some(std::time::Duration::from_millis(500))
        );
    }

    #[test]
    fn return_document_takes_the_node_driver_spelling() {
        let args = doc! { "options": { "returnDocument": "after", "upsert": true } };
        let options = find_and_modify_options(&args).unwrap();
        assert_eq!(options.return_document, Some(ReturnDocument::After));
        assert_eq!(options.upsert, Some(true));
        let args = doc! { "options": { "returnDocument": "later" } };
        assert!(find_and_modify_options(&args).is_err());
    }

    #[test]
    fn arguments_of_the_wrong_type_are_clear_errors() {
        let mut args = doc! { "filter": 1, "documents": [1] };
        assert!(take_document(&mut args, "filter").is_err());
        assert!(take_documents(&mut args, "documents").is_err());
        assert!(options::<FindOptions>(&doc! { "options": "x" }).is_err());
        let mut args = doc! { "update": "x" };
        assert!(take_update(&mut args).is_err());
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
    fn counts_cross_as_numbers() {
        assert_eq!(count(3u64), Bson::Double(3.0));
        assert_eq!(count(u64::MAX), Bson::Double(i64::MAX as f64));
    }
}
