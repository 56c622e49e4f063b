//! The collection operations of the CRUD spec (spec "Collection Operations"), each
//! bound to the driver's method, in the given session when a `session` argument names
//! one, and its result turned into the document the CRUD spec's tests expect.

use anymongo::crud::{DeleteResult, InsertManyResult, UpdateResult};
use anymongo::options::{
    AggregateOptions, CountOptions, DeleteOptions, DistinctOptions, EstimatedDocumentCountOptions,
    FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, FindOneOptions,
    FindOptions, InsertManyOptions, InsertOneOptions, ReplaceOptions, UpdateModifications,
    UpdateOptions,
};
use anymongo::session::ClientSession;
use anymongo::{Collection, Cursor};
use bson::{doc, Bson, Document};
use futures::TryStreamExt;

use super::arguments::{self, Arguments};
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// What every collection operation starts with: the collection entity, the session
/// the `session` argument names, and the arguments left to take.
struct Call<'a> {
    collection: Collection<Document>,
    session: Option<ClientSession>,
    arguments: Arguments<'a>,
}

impl<'a> Call<'a> {
    fn new(operation: &'a Operation, context: &Context) -> Result<Self, Abort> {
        let collection = context
            .entities
            .collection(&operation.object)?
            .collection
            .clone();
        let mut arguments = Arguments::of(operation);
        let session = arguments.session(&context.entities)?;
        Ok(Call {
            collection,
            session,
            arguments,
        })
    }
}

/// Spec `insertOne`: the result is `{ insertedId }`.
pub async fn insert_one(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let document = arguments.document("document")?;
    let options: InsertOneOptions = arguments.options(arguments::INSERT_ONE)?;
    let result = match &session {
        Some(session) => {
            collection
                .insert_one(document)
                .with_options(options)
                .session(session)
                .await
        }
        None => collection.insert_one(document).with_options(options).await,
    };
    Ok(result.map(|result| Some(Bson::Document(doc! { "insertedId": result.inserted_id }))))
}

/// Spec `insertMany`: the result is `{ insertedIds: { "<index>": id } }`.
pub async fn insert_many(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let documents = arguments.documents("documents")?;
    let options: InsertManyOptions = arguments.options(arguments::INSERT_MANY)?;
    let result = match &session {
        Some(session) => {
            collection
                .insert_many(documents)
                .with_options(options)
                .session(session)
                .await
        }
        None => {
            collection
                .insert_many(documents)
                .with_options(options)
                .await
        }
    };
    Ok(result.map(|result| Some(inserted_ids(&result))))
}

fn inserted_ids(result: &InsertManyResult) -> Bson {
    let ids: Document = result
        .inserted_ids
        .iter()
        .map(|(index, id)| (index.to_string(), id.clone()))
        .collect();
    Bson::Document(doc! { "insertedIds": ids })
}

/// Spec `updateOne` and `updateMany` (`many`): the result is `{ matchedCount,
/// modifiedCount, upsertedCount, upsertedId }`.
pub async fn update(
    operation: &Operation,
    context: &mut Context,
    many: bool,
) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let update = update_modifications(arguments.required("update")?)?;
    let options: UpdateOptions = arguments.options(arguments::UPDATE)?;
    let result = match (&session, many) {
        (Some(session), false) => {
            collection
                .update_one(filter, update)
                .with_options(options)
                .session(session)
                .await
        }
        (Some(session), true) => {
            collection
                .update_many(filter, update)
                .with_options(options)
                .session(session)
                .await
        }
        (None, false) => {
            collection
                .update_one(filter, update)
                .with_options(options)
                .await
        }
        (None, true) => {
            collection
                .update_many(filter, update)
                .with_options(options)
                .await
        }
    };
    Ok(result.map(|result| Some(update_result(&result))))
}

/// Spec `replaceOne`: the result is `{ matchedCount, modifiedCount, upsertedCount,
/// upsertedId }`.
pub async fn replace_one(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let replacement = arguments.document("replacement")?;
    let options: ReplaceOptions = arguments.options(arguments::REPLACE)?;
    let result = match &session {
        Some(session) => {
            collection
                .replace_one(filter, replacement)
                .with_options(options)
                .session(session)
                .await
        }
        None => {
            collection
                .replace_one(filter, replacement)
                .with_options(options)
                .await
        }
    };
    Ok(result.map(|result| Some(update_result(&result))))
}

/// An update as the spec gives it: an update document or a pipeline.
pub fn update_modifications(update: Bson) -> Result<UpdateModifications, Abort> {
    match update {
        Bson::Document(document) => Ok(document.into()),
        Bson::Array(stages) => stages
            .into_iter()
            .map(|stage| match stage {
                Bson::Document(stage) => Ok(stage),
                other => Err(Abort::Failed(format!("a pipeline stage {other}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(UpdateModifications::from),
        other => Err(Abort::Failed(format!(
            "an update must be a document or a pipeline, not {other}"
        ))),
    }
}

/// An `UpdateResult` as the CRUD spec's tests spell it; `upsertedId` only when a
/// document was upserted.
fn update_result(result: &UpdateResult) -> Bson {
    let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut document = doc! {
        "matchedCount": as_i64(result.matched_count),
        "modifiedCount": as_i64(result.modified_count),
        "upsertedCount": i64::from(result.upserted_id.is_some()),
    };
    if let Some(id) = &result.upserted_id {
        document.insert("upsertedId", id.clone());
    }
    Bson::Document(document)
}

/// Spec `deleteOne` and `deleteMany` (`many`): the result is `{ deletedCount }`.
pub async fn delete(
    operation: &Operation,
    context: &mut Context,
    many: bool,
) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let options: DeleteOptions = arguments.options(arguments::DELETE)?;
    let result = match (&session, many) {
        (Some(session), false) => {
            collection
                .delete_one(filter)
                .with_options(options)
                .session(session)
                .await
        }
        (Some(session), true) => {
            collection
                .delete_many(filter)
                .with_options(options)
                .session(session)
                .await
        }
        (None, false) => collection.delete_one(filter).with_options(options).await,
        (None, true) => collection.delete_many(filter).with_options(options).await,
    };
    Ok(result.map(|result| Some(delete_result(&result))))
}

fn delete_result(result: &DeleteResult) -> Bson {
    let count = i64::try_from(result.deleted_count).unwrap_or(i64::MAX);
    Bson::Document(doc! { "deletedCount": count })
}

/// Which find-and-modify operation: spec `findOneAndUpdate`, `findOneAndReplace`,
/// `findOneAndDelete`.
#[derive(Clone, Copy)]
pub enum Modify {
    /// `findOneAndUpdate`.
    Update,
    /// `findOneAndReplace`.
    Replace,
    /// `findOneAndDelete`.
    Delete,
}

/// The find-and-modify operations: the result is the document, or null.
pub async fn find_one_and(
    operation: &Operation,
    context: &mut Context,
    modify: Modify,
) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    // Each operation is its own action type: each takes the options (the arguments
    // left) and runs in the session, if any, here.
    macro_rules! run {
        ($action:expr, $Options:ty, $known:expr) => {{
            let options: $Options = arguments.options($known)?;
            let action = $action.with_options(options);
            match &session {
                Some(session) => action.session(session).await,
                None => action.await,
            }
        }};
    }
    let result = match modify {
        Modify::Update => {
            let update = update_modifications(arguments.required("update")?)?;
            run!(
                collection.find_one_and_update(filter, update),
                FindOneAndUpdateOptions,
                arguments::FIND_ONE_AND_UPDATE
            )
        }
        Modify::Replace => {
            let replacement = arguments.document("replacement")?;
            run!(
                collection.find_one_and_replace(filter, replacement),
                FindOneAndReplaceOptions,
                arguments::FIND_ONE_AND_REPLACE
            )
        }
        Modify::Delete => run!(
            collection.find_one_and_delete(filter),
            FindOneAndDeleteOptions,
            arguments::FIND_ONE_AND_DELETE
        ),
    };
    Ok(result.map(|found| Some(found.map_or(Bson::Null, Bson::Document))))
}

/// Spec `find` and `createFindCursor`: the cursor of the find the arguments describe.
pub async fn find_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<anymongo::Result<Cursor<Document>>, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let options: FindOptions = arguments.options(arguments::FIND)?;
    Ok(match &session {
        Some(session) => collection
            .find(filter)
            .with_options(options)
            .session(session)
            .await
            .map(Cursor::from),
        None => collection.find(filter).with_options(options).await,
    })
}

/// Spec `find`: the result is every document of the cursor (of a tailable one, up to
/// its first empty batch).
pub async fn find(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let cursor = find_cursor(operation, context).await?;
    Ok(match opens_tailable_cursor(operation) {
        true => drain_tailable(cursor).await,
        false => drain(cursor).await,
    })
}

/// Spec `findOne`: the first document, or null.
pub async fn find_one(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let options: FindOneOptions = arguments.options(arguments::FIND_ONE)?;
    let result = match &session {
        Some(session) => {
            collection
                .find_one(filter)
                .with_options(options)
                .session(session)
                .await
        }
        None => collection.find_one(filter).with_options(options).await,
    };
    Ok(result.map(|found| Some(found.map_or(Bson::Null, Bson::Document))))
}

/// Spec `aggregate` on a collection: the result is every document of the cursor.
/// The driver's `Database` has no `aggregate`, so a database-level one (CRUD spec,
/// "Database.aggregate") is unsupported.
pub async fn aggregate(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    if let Ok(database) = context.entities.database(&operation.object) {
        let database = database.database.clone();
        let mut arguments = Arguments::of(operation);
        let session = arguments.session(&context.entities)?;
        let pipeline = arguments.documents("pipeline")?;
        let options: AggregateOptions = arguments.options(arguments::AGGREGATE)?;
        let cursor = match &session {
            Some(session) => database
                .aggregate(pipeline)
                .with_options(options)
                .session(session)
                .await
                .map(Cursor::from),
            None => database.aggregate(pipeline).with_options(options).await,
        };
        return Ok(drain(cursor).await);
    }
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let pipeline = arguments.documents("pipeline")?;
    let options: AggregateOptions = arguments.options(arguments::AGGREGATE)?;
    let cursor = match &session {
        Some(session) => collection
            .aggregate(pipeline)
            .with_options(options)
            .session(session)
            .await
            .map(Cursor::from),
        None => collection.aggregate(pipeline).with_options(options).await,
    };
    Ok(drain(cursor).await)
}

/// Spec `countDocuments`: the result is the count.
pub async fn count_documents(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let options: CountOptions = arguments.options(arguments::COUNT)?;
    let count = match &session {
        Some(session) => {
            collection
                .count_documents(filter)
                .with_options(options)
                .session(session)
                .await
        }
        None => {
            collection
                .count_documents(filter)
                .with_options(options)
                .await
        }
    };
    Ok(count.map(|count| Some(count_bson(count))))
}

/// Spec `estimatedDocumentCount`: the result is the count.
pub async fn estimated_document_count(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        arguments,
    } = Call::new(operation, context)?;
    let options: EstimatedDocumentCountOptions = arguments.options(arguments::ESTIMATED_COUNT)?;
    let count = match &session {
        Some(session) => {
            collection
                .estimated_document_count()
                .with_options(options)
                .session(session)
                .await
        }
        None => {
            collection
                .estimated_document_count()
                .with_options(options)
                .await
        }
    };
    Ok(count.map(|count| Some(count_bson(count))))
}

/// Spec `count` (deprecated): the result is the count.
pub async fn count(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let filter = arguments.document("filter")?;
    let options: CountOptions = arguments.options(arguments::COUNT)?;
    let count = match &session {
        Some(session) => {
            collection
                .count(filter)
                .with_options(options)
                .session(session)
                .await
        }
        None => collection.count(filter).with_options(options).await,
    };
    Ok(count.map(|count| Some(count_bson(count))))
}

fn count_bson(count: u64) -> Bson {
    Bson::Int64(i64::try_from(count).unwrap_or(i64::MAX))
}

/// Spec `distinct`: the result is the array of values.
pub async fn distinct(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let Call {
        collection,
        session,
        mut arguments,
    } = Call::new(operation, context)?;
    let field = arguments.string("fieldName")?;
    let filter = arguments.document("filter")?;
    let options: DistinctOptions = arguments.options(arguments::DISTINCT)?;
    let values = match &session {
        Some(session) => {
            collection
                .distinct(&field, filter)
                .with_options(options)
                .session(session)
                .await
        }
        None => {
            collection
                .distinct(&field, filter)
                .with_options(options)
                .await
        }
    };
    Ok(values.map(|values| Some(Bson::Array(values))))
}

/// Every document of a cursor, as an array; the error that opened or iterated it
/// otherwise.
pub async fn drain(cursor: anymongo::Result<Cursor<Document>>) -> Returned {
    let documents: Vec<Document> = cursor?.try_collect().await?;
    Ok(Some(Bson::Array(
        documents.into_iter().map(Bson::Document).collect(),
    )))
}

/// [`drain`] for a tailable cursor, which has no end to drain to: its documents up to
/// its first empty batch (where pymongo's `list()` of one stops too), taken with
/// `Cursor::next_if_any`. The cursor is dropped then, and the driver kills it.
pub async fn drain_tailable(cursor: anymongo::Result<Cursor<Document>>) -> Returned {
    let mut cursor = cursor?;
    let mut documents = Vec::new();
    while let Some(document) = cursor.next_if_any().await? {
        documents.push(Bson::Document(document));
    }
    Ok(Some(Bson::Array(documents)))
}

/// Whether `operation` opens a tailable cursor: its `cursorType` argument says so, or
/// its `command` (`runCursorCommand`) is a find with `tailable: true`, which makes
/// the driver's cursor tailable too.
pub fn opens_tailable_cursor(operation: &Operation) -> bool {
    let arguments = &operation.arguments;
    matches!(
        arguments.get_str("cursorType"),
        Ok("tailable" | "tailableAwait")
    ) || arguments
        .get_document("command")
        .is_ok_and(|command| command.get_bool("tailable").unwrap_or(false))
}
