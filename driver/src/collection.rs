//! [`Collection<T>`]: the CRUD operations of one collection, its documents read and
//! written as `T` (any `Serialize + DeserializeOwned` type; `bson::Document` for the
//! raw path).

use std::borrow::Borrow;
use std::marker::PhantomData;

use bson::oid::ObjectId;
use bson::{doc, Bson, Document, RawDocumentBuf};
use futures::TryStreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::Client;
use crate::concern::WriteConcern;
use crate::crud::read::{insert_present, millis, Aggregate, Find, SimpleRead};
use crate::crud::write::{
    FindAndModify, FindAndModifyAction, Insert, Modify, ModifyStatement, Namespace, WriteReply,
};
use crate::crud::{
    AggregateOptions, CountOptions, DeleteResult, FindOneAndModifyOptions, FindOptions,
    InsertManyResult, InsertOneResult, ReadOptions, UpdateResult, WriteOptions,
};
use crate::cursor::Cursor;
use crate::database::{Concerns, Database};
use crate::error::{BulkWriteFailure, Error, ErrorKind, Result, WriteFailure};
use crate::session::ClientSession;

/// The change an update applies: an update document (`{ "$set": ... }`) or an
/// aggregation pipeline (MongoDB 4.2+).
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateModifications {
    /// Update operators: every top-level key starts with `$`.
    Document(Document),
    /// An aggregation pipeline of `$set`, `$unset`, `$replaceWith`... stages.
    Pipeline(Vec<Document>),
}

impl From<Document> for UpdateModifications {
    fn from(update: Document) -> Self {
        UpdateModifications::Document(update)
    }
}

impl From<Vec<Document>> for UpdateModifications {
    fn from(pipeline: Vec<Document>) -> Self {
        UpdateModifications::Pipeline(pipeline)
    }
}

impl UpdateModifications {
    /// The update as sent; an update document must be non-empty and start with an
    /// operator (CRUD spec, "Update vs. Replace Validation").
    pub(crate) fn to_bson(&self) -> Result<Bson> {
        match self {
            UpdateModifications::Document(update) => {
                match update.keys().next() {
                    Some(first) if first.starts_with('$') => {}
                    Some(_) => {
                        return Err(Error::invalid_argument(
                            "an update document must contain update operators ($set, $inc...): \
                             use replace_one to replace a document",
                        ))
                    }
                    None => {
                        return Err(Error::invalid_argument(
                            "an update document cannot be empty",
                        ))
                    }
                }
                Ok(Bson::Document(update.clone()))
            }
            UpdateModifications::Pipeline(pipeline) => Ok(Bson::Array(
                pipeline.iter().cloned().map(Bson::Document).collect(),
            )),
        }
    }
}

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
/// orders.insert_one(Order { item: "tea".into(), qty: 2 }, None).await?;
/// let tea = orders.find_one(doc! { "item": "tea" }, None).await?;
/// orders.update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } }, None).await?;
/// # Ok(()) }
/// ```
pub struct Collection<T> {
    database: Database,
    namespace: Namespace,
    concerns: Concerns,
    _documents: PhantomData<fn() -> T>,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            database: self.database.clone(),
            namespace: self.namespace.clone(),
            concerns: self.concerns.clone(),
            _documents: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("database", &self.namespace.database)
            .field("name", &self.namespace.collection)
            .field("concerns", &self.concerns)
            .finish()
    }
}

impl<T> Collection<T> {
    pub(crate) fn new(database: Database, name: &str) -> Collection<T> {
        Collection {
            namespace: Namespace {
                database: database.name().to_string(),
                collection: name.to_string(),
            },
            concerns: database.concerns().clone(),
            database,
            _documents: PhantomData,
        }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.namespace.collection
    }

    /// `database.collection`.
    pub fn namespace(&self) -> String {
        format!("{}.{}", self.namespace.database, self.namespace.collection)
    }

    /// The database it belongs to.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The concerns its operations use.
    pub fn concerns(&self) -> &Concerns {
        &self.concerns
    }

    /// This collection with other concerns (those left `None` stay as they are).
    pub fn with_concerns(&self, concerns: Concerns) -> Collection<T> {
        Collection {
            concerns: concerns.inherit(&self.concerns),
            ..self.clone()
        }
    }

    /// The same collection, its documents read and written as `U`.
    pub fn clone_with_type<U>(&self) -> Collection<U> {
        Collection {
            database: self.database.clone(),
            namespace: self.namespace.clone(),
            concerns: self.concerns.clone(),
            _documents: PhantomData,
        }
    }

    fn client(&self) -> &Client {
        self.database.client()
    }

    fn write_concern<'a>(
        &'a self,
        given: Option<&'a WriteConcern>,
    ) -> Result<Option<&'a WriteConcern>> {
        let concern = given.or(self.concerns.write_concern.as_ref());
        if let Some(concern) = concern {
            concern.validate()?;
        }
        Ok(concern)
    }

    /// The read preference and read concern of a read: the operation's, else the
    /// collection's.
    fn read_concerns(
        &self,
        read_preference: &Option<crate::uri::ReadPreference>,
        read_concern: &Option<crate::concern::ReadConcern>,
    ) -> (
        crate::uri::ReadPreference,
        Option<crate::concern::ReadConcern>,
    ) {
        (
            read_preference
                .clone()
                .or_else(|| self.concerns.read_preference.clone())
                .unwrap_or_default(),
            read_concern
                .clone()
                .or_else(|| self.concerns.read_concern.clone()),
        )
    }

    /// Drops the collection; dropping one that does not exist is not an error.
    pub async fn drop(&self, session: Option<&ClientSession>) -> Result<()> {
        let mut command = doc! { "drop": self.name() };
        if let Some(concern) = self.write_concern(None)?.filter(|c| !c.is_empty()) {
            command.insert("writeConcern", concern.to_document());
        }
        match self.database.run_command_with(command, None, session).await {
            Ok(_) => Ok(()),
            // NamespaceNotFound: nothing to drop.
            Err(error) if error.code() == Some(26) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Deletes the first document matching `filter`.
    pub async fn delete_one(
        &self,
        filter: Document,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<DeleteResult> {
        self.delete(filter, false, options.into(), None).await
    }

    /// [`delete_one`](Self::delete_one) in `session`.
    pub async fn delete_one_with_session(
        &self,
        filter: Document,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<DeleteResult> {
        self.delete(filter, false, options.into(), Some(session))
            .await
    }

    /// Deletes every document matching `filter`.
    pub async fn delete_many(
        &self,
        filter: Document,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<DeleteResult> {
        self.delete(filter, true, options.into(), None).await
    }

    /// [`delete_many`](Self::delete_many) in `session`.
    pub async fn delete_many_with_session(
        &self,
        filter: Document,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<DeleteResult> {
        self.delete(filter, true, options.into(), Some(session))
            .await
    }

    async fn delete(
        &self,
        filter: Document,
        multi: bool,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<DeleteResult> {
        let reply = self
            .modify(ModifyStatement::Delete { filter, multi }, options, session)
            .await?;
        Ok(DeleteResult {
            deleted_count: reply.n,
        })
    }

    /// Applies `update` to the first document matching `filter`.
    pub async fn update_one(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<UpdateResult> {
        self.update(filter, update.into(), false, options.into(), None)
            .await
    }

    /// [`update_one`](Self::update_one) in `session`.
    pub async fn update_one_with_session(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<UpdateResult> {
        self.update(filter, update.into(), false, options.into(), Some(session))
            .await
    }

    /// Applies `update` to every document matching `filter`.
    pub async fn update_many(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<UpdateResult> {
        self.update(filter, update.into(), true, options.into(), None)
            .await
    }

    /// [`update_many`](Self::update_many) in `session`.
    pub async fn update_many_with_session(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<UpdateResult> {
        self.update(filter, update.into(), true, options.into(), Some(session))
            .await
    }

    async fn update(
        &self,
        filter: Document,
        update: UpdateModifications,
        multi: bool,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<UpdateResult> {
        let update = update.to_bson()?;
        let statement = ModifyStatement::Update {
            filter,
            update,
            multi,
        };
        Ok(update_result(
            self.modify(statement, options, session).await?,
        ))
    }

    async fn modify(
        &self,
        statement: ModifyStatement,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<WriteReply> {
        let options = options.unwrap_or_default();
        let operation = Modify {
            namespace: &self.namespace,
            statement,
            options: &options,
            write_concern: self.write_concern(options.write_concern.as_ref())?,
        };
        let reply = self.client().execute(operation, session).await?;
        match reply.single_write_error() {
            Some(error) => Err(error),
            None => Ok(reply),
        }
    }

    /// Runs an aggregation pipeline on the collection.
    pub async fn aggregate(
        &self,
        pipeline: impl IntoIterator<Item = Document>,
        options: impl Into<Option<AggregateOptions>>,
    ) -> Result<Cursor<Document>> {
        self.aggregate_in(pipeline.into_iter().collect(), options.into(), None)
            .await
    }

    /// [`aggregate`](Self::aggregate) in `session`.
    pub async fn aggregate_with_session(
        &self,
        pipeline: impl IntoIterator<Item = Document>,
        options: impl Into<Option<AggregateOptions>>,
        session: &ClientSession,
    ) -> Result<Cursor<Document>> {
        self.aggregate_in(
            pipeline.into_iter().collect(),
            options.into(),
            Some(session),
        )
        .await
    }

    async fn aggregate_in(
        &self,
        pipeline: Vec<Document>,
        options: Option<AggregateOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<Document>> {
        let options = options.unwrap_or_default();
        let write_concern = self.write_concern(options.write_concern.as_ref())?.cloned();
        let (read_preference, read_concern) =
            self.read_concerns(&options.read_preference, &options.read_concern);
        let operation = Aggregate {
            database: &self.namespace.database,
            collection: Some(&self.namespace.collection),
            pipeline,
            read_preference,
            read_concern,
            write_concern,
            options,
        };
        self.client().execute(operation, session).await
    }

    /// Counts the documents matching `filter`, exactly (an aggregation: CRUD spec,
    /// "countDocuments").
    pub async fn count_documents(
        &self,
        filter: Document,
        options: impl Into<Option<CountOptions>>,
    ) -> Result<u64> {
        self.count_documents_in(filter, options.into(), None).await
    }

    /// [`count_documents`](Self::count_documents) in `session`.
    pub async fn count_documents_with_session(
        &self,
        filter: Document,
        options: impl Into<Option<CountOptions>>,
        session: &ClientSession,
    ) -> Result<u64> {
        self.count_documents_in(filter, options.into(), Some(session))
            .await
    }

    async fn count_documents_in(
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
                ("collation", options.collation.map(Bson::Document)),
                ("hint", options.hint),
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let count = self
            .simple_read(
                body,
                options.read_preference,
                options.read_concern,
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

    /// The number of documents in the collection, from its metadata (the `count`
    /// command): fast, but may be off after an unclean shutdown or with orphaned
    /// documents in a sharded cluster.
    pub async fn estimated_document_count(
        &self,
        options: impl Into<Option<ReadOptions>>,
    ) -> Result<u64> {
        let options = options.into().unwrap_or_default();
        let mut body = doc! { "count": self.name() };
        insert_present(
            &mut body,
            [
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let count = self
            .simple_read(
                body,
                options.read_preference,
                options.read_concern,
                |reply| Ok(reply.get("n").cloned().unwrap_or(Bson::Int64(0))),
                None,
            )
            .await?;
        Ok(as_count(&count))
    }

    /// The distinct values of `field` among the documents matching `filter`.
    pub async fn distinct(
        &self,
        field: &str,
        filter: Document,
        options: impl Into<Option<ReadOptions>>,
    ) -> Result<Vec<Bson>> {
        self.distinct_in(field, filter, options.into(), None).await
    }

    /// [`distinct`](Self::distinct) in `session`.
    pub async fn distinct_with_session(
        &self,
        field: &str,
        filter: Document,
        options: impl Into<Option<ReadOptions>>,
        session: &ClientSession,
    ) -> Result<Vec<Bson>> {
        self.distinct_in(field, filter, options.into(), Some(session))
            .await
    }

    async fn distinct_in(
        &self,
        field: &str,
        filter: Document,
        options: Option<ReadOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Vec<Bson>> {
        let options = options.unwrap_or_default();
        let mut body = doc! { "distinct": self.name(), "key": field, "query": filter };
        insert_present(
            &mut body,
            [
                ("collation", options.collation.map(Bson::Document)),
                ("hint", options.hint),
                ("comment", options.comment),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        let values = self
            .simple_read(
                body,
                options.read_preference,
                options.read_concern,
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
        read_preference: Option<crate::uri::ReadPreference>,
        read_concern: Option<crate::concern::ReadConcern>,
        result: fn(&Document) -> Result<Bson>,
        session: Option<&ClientSession>,
    ) -> Result<Bson> {
        let (read_preference, read_concern) = self.read_concerns(&read_preference, &read_concern);
        let operation = SimpleRead {
            database: &self.namespace.database,
            body,
            read_preference,
            read_concern,
            result,
        };
        self.client().execute(operation, session).await
    }

    /// Deletes the first document matching `filter` and returns it.
    pub async fn find_one_and_delete(
        &self,
        filter: Document,
        options: impl Into<Option<FindOneAndModifyOptions>>,
    ) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        self.find_and_modify(filter, FindAndModifyAction::Delete, options.into(), None)
            .await
    }

    /// Applies `update` to the first document matching `filter` and returns it, as it
    /// was before or (`ReturnDocument::After`) after.
    pub async fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
        options: impl Into<Option<FindOneAndModifyOptions>>,
    ) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        let action = FindAndModifyAction::Update(update.into().to_bson()?);
        self.find_and_modify(filter, action, options.into(), None)
            .await
    }

    /// Replaces the first document matching `filter` and returns it, as it was before
    /// or (`ReturnDocument::After`) after.
    pub async fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
        options: impl Into<Option<FindOneAndModifyOptions>>,
    ) -> Result<Option<T>>
    where
        T: Serialize + DeserializeOwned,
    {
        let replacement = replacement_document(replacement.borrow())?;
        self.find_and_modify(
            filter,
            FindAndModifyAction::Replace(replacement),
            options.into(),
            None,
        )
        .await
    }

    /// The find-and-modify operations, in `session` when given.
    pub async fn find_and_modify_with_session(
        &self,
        filter: Document,
        action: FindOneAndModify<T>,
        options: impl Into<Option<FindOneAndModifyOptions>>,
        session: &ClientSession,
    ) -> Result<Option<T>>
    where
        T: Serialize + DeserializeOwned,
    {
        let action = match action {
            FindOneAndModify::Delete => FindAndModifyAction::Delete,
            FindOneAndModify::Update(update) => FindAndModifyAction::Update(update.to_bson()?),
            FindOneAndModify::Replace(replacement) => {
                FindAndModifyAction::Replace(replacement_document(&replacement)?)
            }
        };
        self.find_and_modify(filter, action, options.into(), Some(session))
            .await
    }

    async fn find_and_modify(
        &self,
        filter: Document,
        action: FindAndModifyAction,
        options: Option<FindOneAndModifyOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        let options = options.unwrap_or_default();
        let operation = FindAndModify {
            namespace: &self.namespace,
            filter,
            action,
            options: &options,
            write_concern: self.write_concern(options.write_concern.as_ref())?,
        };
        let value = self.client().execute(operation, session).await?;
        value
            .map(|document| bson::deserialize_from_document(document).map_err(Error::bson))
            .transpose()
    }
}

/// What [`Collection::find_and_modify_with_session`] does.
#[derive(Debug, Clone)]
pub enum FindOneAndModify<T> {
    /// `find_one_and_delete`.
    Delete,
    /// `find_one_and_update`.
    Update(UpdateModifications),
    /// `find_one_and_replace`.
    Replace(T),
}

impl<T: Serialize> Collection<T> {
    /// Inserts `document`; an `_id` is generated when it has none.
    pub async fn insert_one(
        &self,
        document: impl Borrow<T>,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<InsertOneResult> {
        self.insert_one_in(document.borrow(), options.into(), None)
            .await
    }

    /// [`insert_one`](Self::insert_one) in `session`.
    pub async fn insert_one_with_session(
        &self,
        document: impl Borrow<T>,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<InsertOneResult> {
        self.insert_one_in(document.borrow(), options.into(), Some(session))
            .await
    }

    async fn insert_one_in(
        &self,
        document: &T,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<InsertOneResult> {
        let (raw, id) = with_id(document)?;
        let options = options.unwrap_or_default();
        let (reply, _) = self
            .insert_batch(std::slice::from_ref(&raw), 0, &options, session)
            .await?;
        match reply.single_write_error() {
            Some(error) => Err(error),
            None => Ok(InsertOneResult { inserted_id: id }),
        }
    }

    /// Inserts `documents` in as few commands as the server's limits allow; `_id`s are
    /// generated for those without one. Ordered (the default), it stops at the first
    /// failure; unordered, it inserts all it can. A failure is an
    /// [`ErrorKind::BulkWrite`] error listing every failed write by index and the
    /// `_id`s inserted.
    pub async fn insert_many(
        &self,
        documents: impl IntoIterator<Item = impl Borrow<T>>,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<InsertManyResult> {
        self.insert_many_in(documents, options.into(), None).await
    }

    /// [`insert_many`](Self::insert_many) in `session`.
    pub async fn insert_many_with_session(
        &self,
        documents: impl IntoIterator<Item = impl Borrow<T>>,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<InsertManyResult> {
        self.insert_many_in(documents, options.into(), Some(session))
            .await
    }

    async fn insert_many_in(
        &self,
        documents: impl IntoIterator<Item = impl Borrow<T>>,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<InsertManyResult> {
        let options = options.unwrap_or_default();
        let ordered = options.ordered.unwrap_or(true);
        let (raw, ids): (Vec<RawDocumentBuf>, Vec<Bson>) = documents
            .into_iter()
            .map(|document| with_id(document.borrow()))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        if raw.is_empty() {
            return Err(Error::invalid_argument(
                "insert_many needs at least one document",
            ));
        }
        let mut failure = BulkWriteFailure::default();
        let mut offset = 0;
        while offset < raw.len() {
            let sent = match self.insert_batch(&raw, offset, &options, session).await {
                Ok((reply, sent)) => {
                    let failed: Vec<usize> = reply.write_errors.iter().map(|e| e.index).collect();
                    // Ordered, nothing after the first failure was attempted.
                    let end = match (ordered, failed.first()) {
                        (true, Some(first)) => *first,
                        _ => offset + sent,
                    };
                    for (index, id) in ids.iter().enumerate().take(end).skip(offset) {
                        if !failed.contains(&index) {
                            failure.inserted_ids.insert(index, id.clone());
                        }
                    }
                    let stop = ordered && !reply.write_errors.is_empty();
                    failure.write_errors.extend(reply.write_errors);
                    if reply.write_concern_error.is_some() {
                        failure.write_concern_error = reply.write_concern_error;
                    }
                    if stop {
                        break;
                    }
                    sent
                }
                Err(error) => {
                    return Err(match error.kind() {
                        // A write concern error the retry could not cure.
                        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => {
                            failure.write_concern_error = Some(concern.clone());
                            let labels: Vec<String> = error.labels().to_vec();
                            Error::new(ErrorKind::BulkWrite(failure))
                                .with_labels(labels.iter().map(String::as_str))
                        }
                        _ => error,
                    });
                }
            };
            offset += sent;
        }
        if failure.write_errors.is_empty() && failure.write_concern_error.is_none() {
            return Ok(InsertManyResult {
                inserted_ids: failure.inserted_ids,
            });
        }
        Err(Error::new(ErrorKind::BulkWrite(failure)))
    }

    /// Inserts the next batch of `documents` from `offset`: the reply, and how many
    /// documents it carried.
    async fn insert_batch(
        &self,
        documents: &[RawDocumentBuf],
        offset: usize,
        options: &WriteOptions,
        session: Option<&ClientSession>,
    ) -> Result<(WriteReply, usize)> {
        let mut operation = Insert {
            namespace: &self.namespace,
            documents,
            offset,
            options,
            write_concern: self.write_concern(options.write_concern.as_ref())?,
            batch_len: None,
        };
        let client = self.client();
        let reply = client.execute(&mut operation, session).await?;
        Ok((reply, operation.batch_len.unwrap_or(1)))
    }

    /// Replaces the first document matching `filter` with `replacement`.
    pub async fn replace_one(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
        options: impl Into<Option<WriteOptions>>,
    ) -> Result<UpdateResult> {
        self.replace_one_in(filter, replacement.borrow(), options.into(), None)
            .await
    }

    /// [`replace_one`](Self::replace_one) in `session`.
    pub async fn replace_one_with_session(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
        options: impl Into<Option<WriteOptions>>,
        session: &ClientSession,
    ) -> Result<UpdateResult> {
        self.replace_one_in(filter, replacement.borrow(), options.into(), Some(session))
            .await
    }

    async fn replace_one_in(
        &self,
        filter: Document,
        replacement: &T,
        options: Option<WriteOptions>,
        session: Option<&ClientSession>,
    ) -> Result<UpdateResult> {
        let statement = ModifyStatement::Update {
            filter,
            update: Bson::Document(replacement_document(replacement)?),
            multi: false,
        };
        Ok(update_result(
            self.modify(statement, options, session).await?,
        ))
    }
}

impl<T: DeserializeOwned> Collection<T> {
    /// The documents matching `filter`, as a [`Cursor`].
    pub async fn find(
        &self,
        filter: Document,
        options: impl Into<Option<FindOptions>>,
    ) -> Result<Cursor<T>> {
        self.find_in(filter, options.into(), None).await
    }

    /// [`find`](Self::find) in `session`.
    pub async fn find_with_session(
        &self,
        filter: Document,
        options: impl Into<Option<FindOptions>>,
        session: &ClientSession,
    ) -> Result<Cursor<T>> {
        self.find_in(filter, options.into(), Some(session)).await
    }

    /// The first document matching `filter`, if any.
    pub async fn find_one(
        &self,
        filter: Document,
        options: impl Into<Option<FindOptions>>,
    ) -> Result<Option<T>> {
        self.find_one_in(filter, options.into(), None).await
    }

    /// [`find_one`](Self::find_one) in `session`.
    pub async fn find_one_with_session(
        &self,
        filter: Document,
        options: impl Into<Option<FindOptions>>,
        session: &ClientSession,
    ) -> Result<Option<T>> {
        self.find_one_in(filter, options.into(), Some(session))
            .await
    }

    async fn find_one_in(
        &self,
        filter: Document,
        options: Option<FindOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Option<T>> {
        let options = FindOptions {
            limit: Some(-1),
            batch_size: None,
            ..options.unwrap_or_default()
        };
        let mut cursor = self.find_in(filter, Some(options), session).await?;
        cursor.try_next().await
    }

    async fn find_in(
        &self,
        filter: Document,
        options: Option<FindOptions>,
        session: Option<&ClientSession>,
    ) -> Result<Cursor<T>> {
        let options = options.unwrap_or_default();
        let (read_preference, read_concern) =
            self.read_concerns(&options.read_preference, &options.read_concern);
        let operation = Find {
            namespace: &self.namespace,
            filter,
            read_preference,
            read_concern,
            options,
        };
        let cursor = self.client().execute(operation, session).await?;
        Ok(cursor.with_type())
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
    crate::handshake::bson_as_i64(value)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

/// `document` as BSON with its `_id` first, generated (an ObjectId) when missing
/// (CRUD spec, "Insert, Update, Replace, Delete, and Bulk Writes": drivers generate
/// `_id`s), and that `_id`.
pub(crate) fn with_id<T: Serialize>(document: &T) -> Result<(RawDocumentBuf, Bson)> {
    let document = bson::serialize_to_document(document).map_err(Error::bson)?;
    let (document, id) = match document.get("_id") {
        Some(id) => {
            let id = id.clone();
            (document, id)
        }
        None => {
            let id = Bson::ObjectId(ObjectId::new());
            let mut with_id = doc! { "_id": id.clone() };
            with_id.extend(document);
            (with_id, id)
        }
    };
    let raw = RawDocumentBuf::try_from(&document).map_err(Error::bson)?;
    Ok((raw, id))
}

/// A replacement as a document; it must not contain update operators (CRUD spec,
/// "Update vs. Replace Validation").
pub(crate) fn replacement_document<T: Serialize>(replacement: &T) -> Result<Document> {
    let document = bson::serialize_to_document(replacement).map_err(Error::bson)?;
    if document
        .keys()
        .next()
        .is_some_and(|key| key.starts_with('$'))
    {
        return Err(Error::invalid_argument(
            "a replacement document cannot contain update operators: use update_one",
        ));
    }
    Ok(document)
}
