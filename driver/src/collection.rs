//! [`Collection<T>`]: the CRUD operations of one collection, its documents read and
//! written as `T` (any `Serialize + DeserializeOwned` type; `bson::Document` for the
//! raw path). A `T` that is read is `'static` too: a cursor builds a `Document` without
//! serde, and knows it by its `TypeId`.

use std::marker::PhantomData;
use std::sync::Arc;

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures::TryStreamExt;
use serde::de::DeserializeOwned;

use crate::bson_util::{insert_present, millis};
use crate::client::Client;
use crate::concern::WriteConcern;
use crate::crud::bulk_write::collection_level::{self, Plan, Statements};
/// The change an update applies, which is also a write model's.
pub use crate::crud::bulk_write::UpdateModifications;
use crate::crud::bulk_write::{BulkWriteOptions, BulkWriteResult};
use crate::crud::read::{Find, SimpleRead};
use crate::crud::write::{
    DeleteStatement, FindAndModify, FindAndModifyAction, FindAndModifyResult, Spelling, Statement,
    UpdateStatement, WriteBatch, WriteReply,
};
use crate::crud::{
    AggregateOptions, CountOptions, DeleteResult, DistinctOptions, EstimatedDocumentCountOptions,
    FindAndModifyOptions, FindOptions, InsertManyResult, InsertOneResult, Namespace, UpdateResult,
    WriteOptions,
};
use crate::cursor::Cursor;
use crate::database::{Concerns, Database};
use crate::error::{Error, ErrorKind, Result};
use crate::operation::Timing;
use crate::rt::Instant;
use crate::session::ClientSession;

/// A handle to one collection. Cheap to clone.
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::doc;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, Serialize, Deserialize)]
/// struct Order { item: String, qty: i32 }
///
/// let orders = client.database("shop").collection::<Order>("orders");
/// orders.insert_one(Order { item: "tea".into(), qty: 2 }).await?;
/// let tea = orders.find_one(doc! { "item": "tea" }).await?;
/// orders.update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } }).await?;
/// # Ok(()) }
/// ```
pub struct Collection<T> {
    /// Shared by its clones: an action clones its collection (its type is not the
    /// action's), which is then one reference count, not the names' strings.
    shared: Arc<Shared>,
    /// A deadline its operations share (a GridFS call's), set by the driver.
    deadline: Option<Instant>,
    _documents: PhantomData<fn() -> T>,
}

/// What a collection's clones share.
#[derive(Clone)]
struct Shared {
    database: Database,
    namespace: Namespace,
    concerns: Concerns,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        self.clone_with_type()
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("database", &self.shared.namespace.db)
            .field("name", &self.shared.namespace.coll)
            .field("concerns", &self.shared.concerns)
            .finish()
    }
}

impl<T> Collection<T> {
    pub(crate) fn new(database: Database, name: &str) -> Collection<T> {
        Collection {
            shared: Arc::new(Shared {
                namespace: Namespace::new(database.name(), name),
                concerns: database.concerns().clone(),
                database,
            }),
            deadline: None,
            _documents: PhantomData,
        }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.shared.namespace.coll
    }

    /// The collection's [`Namespace`]: its database's name and its own (`db.coll`
    /// as text).
    pub fn namespace(&self) -> Namespace {
        self.shared.namespace.clone()
    }

    /// The database it belongs to.
    pub fn database(&self) -> &Database {
        &self.shared.database
    }

    /// The concerns its operations use.
    pub fn concerns(&self) -> &Concerns {
        &self.shared.concerns
    }

    /// The read concern of its reads unless an operation says otherwise (its own, else
    /// the level above's); `None`: the server's default.
    pub fn read_concern(&self) -> Option<&crate::concern::ReadConcern> {
        self.shared.concerns.read_concern.as_ref()
    }

    /// The write concern of its writes unless an operation says otherwise (its own,
    /// else the level above's); `None`: the server's default.
    pub fn write_concern(&self) -> Option<&crate::concern::WriteConcern> {
        self.shared.concerns.write_concern.as_ref()
    }

    /// Where its reads go unless an operation says otherwise (its own, else its
    /// database's); `None`: the primary.
    pub fn selection_criteria(&self) -> Option<&crate::selection::SelectionCriteria> {
        self.shared.concerns.selection_criteria.as_ref()
    }

    /// This collection with other concerns (those left `None` stay as they are).
    pub fn with_concerns(&self, concerns: Concerns) -> Collection<T> {
        let mut collection = self.clone();
        Arc::make_mut(&mut collection.shared).concerns = concerns.inherit(&self.shared.concerns);
        collection
    }

    /// This collection with `timeoutMS` = `timeout` for its operations: each may take
    /// that long in all, retries included, and fails with
    /// [`ErrorKind::OperationTimeout`] after;
    /// `Duration::ZERO` means no limit. Cheap: use it per operation too.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// use anymongo::bson::{doc, Document};
    /// let orders = client.database("shop").collection::<Document>("orders");
    /// let order = orders
    ///     .with_timeout(Duration::from_millis(200))
    ///     .find_one(doc! { "_id": 7 })
    ///     .await?;
    /// # let _ = order; Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: std::time::Duration) -> Collection<T> {
        let mut collection = self.clone();
        Arc::make_mut(&mut collection.shared).concerns.timeout = Some(timeout);
        collection
    }

    /// The `timeoutMS` of its operations, if one is set.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.shared.concerns.timeout
    }

    /// This collection, its operations all ending by `deadline` (those of one GridFS
    /// call: Client Side Operations Timeout spec, "GridFS API").
    pub(crate) fn with_deadline(&self, deadline: Option<Instant>) -> Collection<T> {
        let mut collection = self.clone();
        collection.deadline = deadline;
        collection
    }

    /// When its operations must end: timeoutMS, and the shared deadline if any.
    pub(crate) fn timing(&self) -> Timing {
        Timing {
            timeout: self.shared.concerns.timeout,
            deadline: self.deadline,
        }
    }

    /// This collection, or (with an operation's own timeoutMS) a copy with that
    /// timeoutMS.
    pub(crate) fn with_operation_timeout(
        &self,
        timeout: Option<std::time::Duration>,
    ) -> std::borrow::Cow<'_, Collection<T>> {
        match timeout {
            Some(timeout) => std::borrow::Cow::Owned(self.with_timeout(timeout)),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The same collection, its documents read and written as `U`.
    pub fn clone_with_type<U>(&self) -> Collection<U> {
        Collection {
            shared: Arc::clone(&self.shared),
            deadline: self.deadline,
            _documents: PhantomData,
        }
    }

    pub(crate) fn client(&self) -> &Client {
        self.shared.database.client()
    }

    /// The write concern of a write: the operation's (`given`), else the collection's.
    fn write_concern_of<'a>(
        &'a self,
        given: Option<&'a WriteConcern>,
        session: Option<&ClientSession>,
    ) -> Result<Option<&'a WriteConcern>> {
        self.shared.concerns.write_concern(given, session)
    }

    /// The read preference and read concern of a read: the operation's, else the
    /// collection's.
    fn read_concerns(
        &self,
        selection_criteria: &Option<crate::selection::SelectionCriteria>,
        read_concern: &Option<crate::concern::ReadConcern>,
        session: Option<&ClientSession>,
    ) -> Result<(
        crate::selection::SelectionCriteria,
        Option<crate::concern::ReadConcern>,
    )> {
        self.shared
            .concerns
            .of_read(selection_criteria, read_concern, session)
    }

    pub(crate) async fn delete(
        &self,
        filter: Document,
        multi: bool,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<DeleteResult> {
        let options = options.unwrap_or_default();
        let statement = DeleteStatement {
            filter,
            multi,
            collation: options
                .collation
                .as_ref()
                .map(crate::crud::Collation::to_document),
            hint: options.hint.clone().map(Bson::from),
        };
        let reply = self
            .write_one(statement.statement()?, &options, session)
            .await?;
        Ok(DeleteResult {
            deleted_count: reply.n,
        })
    }

    pub(crate) async fn update(
        &self,
        filter: Document,
        update: UpdateModifications,
        multi: bool,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<UpdateResult> {
        let options = options.unwrap_or_default();
        let statement = UpdateStatement::with_options(filter, update.to_bson()?, multi, &options);
        let reply = self
            .write_one(statement.statement()?, &options, session)
            .await?;
        Ok(update_result(reply))
    }

    /// Sends the single write `statement`; its write error or write concern error is
    /// the operation's error (CRUD spec, "WriteException").
    async fn write_one(
        &self,
        mut statement: Statement,
        options: &WriteOptions,
        session: Option<&ClientSession>,
    ) -> Result<WriteReply> {
        let command_options = command_options(options);
        let operation = WriteBatch::new(
            &self.shared.namespace,
            statement.kind,
            std::slice::from_mut(&mut statement),
            &command_options,
            self.write_concern_of(options.write_concern.as_ref(), session)?,
        );
        let reply = self
            .client()
            .executor()
            .execute(operation, session, self.timing())
            .await?;
        match reply.single_write_error() {
            // With timeoutMS, a write concern error MaxTimeMSExpired is the timeout
            // error (Client Side Operations Timeout spec, "Error Transformations").
            Some(error) => Err(crate::operation::transform_max_time_expired(
                self.shared.concerns.timeout,
                error,
            )),
            None => Ok(reply),
        }
    }

    pub(crate) async fn aggregate_in(
        &self,
        pipeline: Vec<Document>,
        options: Option<AggregateOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        self.shared
            .database
            .aggregate_on(
                Some(self.name()),
                (&self.shared.concerns, self.timing()),
                pipeline,
                options,
                session,
            )
            .await
    }

    /// The body of [`count_documents`](Self::count_documents).
    pub(crate) async fn count_documents_in(
        &self,
        filter: Document,
        options: Option<CountOptions>,
        session: Option<&ClientSession>,
    ) -> Result<u64> {
        let options = options.unwrap_or_default();
        let mut pipeline = vec![doc! { "$match": filter }];
        if let Some(skip) = options.skip {
            pipeline.push(doc! { "$skip": i64::try_from(skip).unwrap_or(i64::MAX) });
        }
        if let Some(limit) = options.limit {
            pipeline.push(doc! { "$limit": i64::try_from(limit).unwrap_or(i64::MAX) });
        }
        pipeline.push(doc! { "$group": { "_id": 1, "n": { "$sum": 1 } } });
        let mut body = doc! {
            "aggregate": self.name(),
            "pipeline": pipeline,
            "cursor": {},
        };
        insert_present(
            &mut body,
            [
                ("collation", options.collation.map(Bson::from)),
                ("hint", options.hint.map(Bson::from)),
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let count = self
            .simple_read(
                body,
                options.selection_criteria,
                options.read_concern,
                options.raw_data,
                |reply| {
                    let first = reply
                        .get_document("cursor")
                        .ok()
                        .and_then(|cursor| cursor.get_array("firstBatch").ok())
                        .and_then(|batch| batch.first())
                        .and_then(Bson::as_document)
                        .and_then(|group| group.get("n"))
                        .cloned();
                    Ok(first.unwrap_or(Bson::Int64(0)))
                },
                session,
            )
            .await?;
        Ok(as_count(&count))
    }

    /// The body of [`estimated_document_count`](Self::estimated_document_count).
    pub(crate) async fn estimated_document_count_in(
        &self,
        options: Option<EstimatedDocumentCountOptions>,
        session: Option<&ClientSession>,
    ) -> Result<u64> {
        let options = options.unwrap_or_default().into();
        self.count_command(None, options, session).await
    }

    /// The `count` command, with a `query` or (estimated count) without.
    pub(crate) async fn count_command(
        &self,
        query: Option<Document>,
        options: CountOptions,
        session: Option<&ClientSession>,
    ) -> Result<u64> {
        let mut body = doc! { "count": self.name() };
        let number = |n: u64| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX));
        insert_present(
            &mut body,
            [
                ("query", query.map(Bson::Document)),
                ("skip", options.skip.map(number)),
                ("limit", options.limit.map(number)),
                ("collation", options.collation.map(Bson::from)),
                ("hint", options.hint.map(Bson::from)),
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let count = self
            .simple_read(
                body,
                options.selection_criteria,
                options.read_concern,
                options.raw_data,
                |reply| Ok(reply.get("n").cloned().unwrap_or(Bson::Int64(0))),
                session,
            )
            .await?;
        Ok(as_count(&count))
    }

    /// The body of [`distinct`](Self::distinct).
    pub(crate) async fn distinct_in(
        &self,
        field: &str,
        filter: Document,
        options: Option<DistinctOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Vec<Bson>> {
        let options = options.unwrap_or_default();
        let mut body = doc! { "distinct": self.name(), "key": field, "query": filter };
        insert_present(
            &mut body,
            [
                ("collation", options.collation.map(Bson::from)),
                ("hint", options.hint.map(Bson::from)),
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let values = self
            .simple_read(
                body,
                options.selection_criteria,
                options.read_concern,
                options.raw_data,
                |reply| {
                    Ok(reply
                        .get("values")
                        .cloned()
                        .unwrap_or(Bson::Array(Vec::new())))
                },
                session,
            )
            .await?;
        match values {
            Bson::Array(values) => Ok(values),
            other => Ok(vec![other]),
        }
    }

    async fn simple_read(
        &self,
        body: Document,
        selection_criteria: Option<crate::selection::SelectionCriteria>,
        read_concern: Option<crate::concern::ReadConcern>,
        raw_data: Option<bool>,
        result: fn(&Document) -> Result<Bson>,
        session: Option<&ClientSession>,
    ) -> Result<Bson> {
        let (selection_criteria, read_concern) =
            self.read_concerns(&selection_criteria, &read_concern, session)?;
        let operation = SimpleRead {
            database: &self.shared.namespace.db,
            body,
            selection_criteria,
            read_concern,
            raw_data,
            result,
        };
        self.client()
            .executor()
            .execute(operation, session, self.timing())
            .await
    }

    pub(crate) async fn find_and_modify(
        &self,
        filter: Document,
        action: FindAndModifyAction,
        options: Option<FindAndModifyOptions>,
        session: Option<&ClientSession>,
    ) -> Result<FindAndModifyResult<T>>
    where
        T: DeserializeOwned + 'static,
    {
        let options = options.unwrap_or_default();
        let operation = FindAndModify {
            namespace: &self.shared.namespace,
            filter,
            action,
            options: &options,
            write_concern: self.write_concern_of(options.write_concern.as_ref(), session)?,
        };
        let reply = self
            .client()
            .executor()
            .execute(operation, session, self.timing())
            .await?;
        Ok(FindAndModifyResult {
            value: reply
                .value
                .map(|document| crate::cursor::deserialize(&document))
                .transpose()?,
            last_error_object: reply.last_error_object,
        })
    }
}

/// The writes whose documents the actions serialized already (see
/// [`crate::action`]).
impl<T> Collection<T> {
    pub(crate) async fn insert_one_in(
        &self,
        (raw, id): (RawDocumentBuf, Bson),
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<InsertOneResult> {
        let options = options.unwrap_or_default();
        self.write_one(
            Statement::insert(raw, Spelling::WriteCommand),
            &options,
            session,
        )
        .await?;
        Ok(InsertOneResult { inserted_id: id })
    }

    pub(crate) async fn insert_many_in(
        &self,
        documents: Vec<(RawDocumentBuf, Bson)>,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<InsertManyResult> {
        let options = options.unwrap_or_default();
        let plan = Plan::of_inserts(documents, options.ordered.unwrap_or(true))?;
        let result = self
            .execute_plan(plan, &command_options(&options), session)
            .await
            .map_err(insert_many_error)?;
        Ok(InsertManyResult {
            inserted_ids: result.inserted_ids,
        })
    }

    pub(crate) async fn bulk_write_in(
        &self,
        statements: Statements,
        options: Option<BulkWriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<BulkWriteResult> {
        let options = options.unwrap_or_default();
        let plan = Plan::of_models(statements, options.ordered.unwrap_or(true))?;
        self.execute_plan(plan, &options, session).await
    }

    async fn execute_plan(
        &self,
        plan: Plan,
        options: &BulkWriteOptions,
        session: Option<&ClientSession>,
    ) -> Result<BulkWriteResult> {
        let write_concern = self.write_concern_of(options.write_concern.as_ref(), session)?;
        collection_level::execute(
            self.client().executor(),
            &self.shared.namespace,
            plan,
            options,
            write_concern,
            session,
            self.timing(),
        )
        .await
    }

    pub(crate) async fn replace_one_in(
        &self,
        filter: Document,
        replacement: Document,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<UpdateResult> {
        let options = options.unwrap_or_default();
        let replacement = Bson::Document(replacement);
        let statement = UpdateStatement::with_options(filter, replacement, false, &options);
        let reply = self
            .write_one(statement.statement()?, &options, session)
            .await?;
        Ok(update_result(reply))
    }
}

impl<T: DeserializeOwned + 'static> Collection<T> {
    pub(crate) async fn find_one_in(
        &self,
        filter: Document,
        options: Option<FindOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Option<T>> {
        let mut cursor = self.find_one_cursor(filter, options, session).await?;
        cursor.try_next().await
    }

    /// The cursor of a find_one: one batch of at most one document.
    async fn find_one_cursor(
        &self,
        filter: Document,
        options: Option<FindOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<T>> {
        let options = FindOptions {
            limit: Some(-1),
            batch_size: None,
            ..options.unwrap_or_default()
        };
        self.find_in(filter, Some(options), session).await
    }

    pub(crate) async fn find_in(
        &self,
        filter: Document,
        options: Option<FindOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<T>> {
        let options = options.unwrap_or_default();
        let (selection_criteria, read_concern) =
            self.read_concerns(&options.selection_criteria, &options.read_concern, session)?;
        let operation = Find {
            namespace: &self.shared.namespace,
            filter,
            selection_criteria,
            read_concern,
            options,
        };
        operation.check_timeout(self.shared.concerns.timeout)?;
        let cursor = self
            .client()
            .executor()
            .execute(operation, session, self.timing())
            .await?;
        Ok(cursor.with_type())
    }
}

/// The options of the command of a single write or `insert_many`.
/// An `insert_many` runs as a bulk write of inserts: its failure is the official
/// driver's [`ErrorKind::InsertMany`], also inside a timeout error it caused.
fn insert_many_error(mut error: Error) -> Error {
    match &mut *error.kind {
        ErrorKind::CollectionBulkWrite(failure) => {
            let failure = std::mem::take(failure);
            *error.kind = ErrorKind::InsertMany(failure.into());
        }
        ErrorKind::OperationTimeout { cause, .. } => {
            *cause = cause
                .take()
                .map(|cause| Box::new(insert_many_error(*cause)));
        }
        _ => {}
    }
    error
}

fn command_options(options: &WriteOptions) -> BulkWriteOptions {
    BulkWriteOptions {
        ordered: options.ordered,
        bypass_document_validation: options.bypass_document_validation,
        comment: options.comment.clone(),
        raw_data: options.raw_data,
        let_vars: options.let_vars.clone(),
        write_concern: options.write_concern.clone(),
    }
}

/// The update result a write reply describes.
fn update_result(reply: WriteReply) -> UpdateResult {
    let upserted_id = reply.upserted.first().map(|(_, id)| id.clone());
    UpdateResult {
        // An upsert matched nothing (CRUD spec, "UpdateResult").
        matched_count: match upserted_id {
            Some(_) => 0,
            None => reply.n,
        },
        modified_count: reply.n_modified,
        upserted_id,
    }
}

/// A count as the server sent it (int32, int64 or double).
fn as_count(value: &Bson) -> u64 {
    crate::bson_util::as_i64(value)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}
