//! Change streams (Change Streams spec): [`Collection::watch`], [`Database::watch`] and
//! [`Client::watch`] open a [`ChangeStream`], a [`Stream`] of the changes to a
//! collection, a database or the whole deployment, that resumes by itself after a
//! transient error.
//!
//! A change stream is an `aggregate` whose pipeline starts with a `$changeStream`
//! stage, iterated as a tailable cursor (`cursor`): the first aggregate is a retryable
//! read (`retry`), and each later batch comes from a getMore. The stream remembers
//! where it is — its resume token — and when a getMore fails with a resumable error it
//! runs the aggregate again, once, from that token (spec, "Resume Process").
//!
//! Prefer these helpers to running an aggregate with a `$changeStream` stage yourself:
//! only they resume. The server requires a `majority` read concern, or none; any other
//! is refused by the server, not by the driver (spec, "Helper Method").
//!
//! The decisions are pure functions, tested without a server: which errors are
//! resumable (`is_resumable`), which token is cached (`ResumeState`) and from where a
//! resumed stream starts (`ResumeState::resume_point`, `stage`).

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bson::{Bson, Document, RawDocument, RawDocumentBuf, Timestamp};
use futures::Stream;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::client::Client;
use crate::collection::Collection;
use crate::concern::ReadConcern;
use crate::crud::read::Aggregate;
use crate::crud::AggregateOptions;
use crate::cursor::{Cursor, CursorSpec, Step};
use crate::database::{Concerns, Database};
use crate::error::{Error, ErrorKind, Result};
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::retry::Retryability;
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;

/// The label with which a server of 4.4 or later marks a resumable change stream
/// error (spec, "Resumable Error").
pub const RESUMABLE_CHANGE_STREAM_ERROR: &str = "ResumableChangeStreamError";

/// CursorNotFound: resumable whatever the server's version (spec, "Why is
/// `CursorNotFound` special-cased").
const CURSOR_NOT_FOUND: i32 = 43;

/// The first wire version (MongoDB 4.4) whose servers label resumable errors.
const SERVER_LABELS_ERRORS: i32 = 9;

/// The codes resumable on servers before 4.4 (spec, "Resumable Error").
const RESUMABLE_CODES: [i32; 17] = [
    6,     // HostUnreachable
    7,     // HostNotFound
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
    63,    // StaleShardVersion
    150,   // StaleEpoch
    13388, // StaleConfig
    234,   // RetryChangeStream
    133,   // FailedToSatisfyReadPreference
];

/// Options of [`Collection::watch`], [`Database::watch`] and [`Client::watch`] (spec,
/// "ChangeStreamOptions"). They deserialize from the spec's camelCase names. Only
/// those given are sent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct ChangeStreamOptions {
    /// Whether update events carry the whole document (`fullDocument`).
    pub full_document: Option<FullDocumentType>,
    /// Whether events carry the document as it was before the change
    /// (`fullDocumentBeforeChange`).
    pub full_document_before_change: Option<FullDocumentBeforeChangeType>,
    /// Starts after the change this resume token names.
    pub resume_after: Option<ResumeToken>,
    /// Like `resume_after`, but also after an invalidate event (a dropped or renamed
    /// collection).
    pub start_after: Option<ResumeToken>,
    /// Starts with the changes at or after this cluster time.
    pub start_at_operation_time: Option<Timestamp>,
    /// How long each getMore waits for changes on the server (sent as its `maxTimeMS`;
    /// never on the aggregate).
    #[serde(
        rename = "maxAwaitTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_await_time: Option<Duration>,
    /// Events per batch (aggregate and getMore).
    pub batch_size: Option<u32>,
    /// The collation of string comparisons in the pipeline.
    pub collation: Option<crate::crud::Collation>,
    /// A comment for the server's logs, sent with the aggregate and every getMore.
    pub comment: Option<Bson>,
    /// Asks for the expanded events (createIndexes, create, modify...; MongoDB 6.0+).
    pub show_expanded_events: Option<bool>,
    /// The read concern of the stream's aggregate; the handle's when unset. The server
    /// takes `majority` or none.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// The read preference of the stream's aggregate (and so of the server its
    /// getMores go to); the handle's when unset.
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
}

/// A change stream's resume token: the `_id` of an event, or a batch's
/// `postBatchResumeToken`, which [`ChangeStream::resume_token`] returns and
/// [`ChangeStreamOptions::resume_after`] and `start_after` take. Opaque: store it as
/// BSON (it serializes as the server's document) and give it back as it was.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct ResumeToken(Document);

impl<'de> Deserialize<'de> for ResumeToken {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        // As stored: a token is the server's, never extended JSON.
        crate::bson_deserializer::as_stored::document(deserializer).map(ResumeToken)
    }
}

impl From<Document> for ResumeToken {
    fn from(token: Document) -> Self {
        ResumeToken(token)
    }
}

impl From<ResumeToken> for Document {
    fn from(token: ResumeToken) -> Self {
        token.0
    }
}

/// The event types of a change stream, where the official driver has them
/// (`change_stream::event`).
pub mod event {
    pub use super::{
        ChangeNamespace, ChangeNamespaceType, ChangeStreamEvent, OperationType, ResumeToken,
        TruncatedArray, UpdateDescription,
    };
}

/// The `fullDocument` option: what update events carry of the changed document.
/// An unknown value is sent as given, for the server to judge (spec: drivers MUST NOT
/// refuse it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum FullDocumentType {
    /// Only the delta (`updateDescription`): the server's default.
    Default,
    /// The delta and the document as it is some time after the change.
    UpdateLookup,
    /// The document as the change left it, when the collection keeps post-images.
    WhenAvailable,
    /// Like `WhenAvailable`, but an error when there is no post-image.
    Required,
    /// Another value.
    Other(String),
}

impl From<String> for FullDocumentType {
    fn from(name: String) -> Self {
        match name.as_str() {
            "default" => FullDocumentType::Default,
            "updateLookup" => FullDocumentType::UpdateLookup,
            "whenAvailable" => FullDocumentType::WhenAvailable,
            "required" => FullDocumentType::Required,
            _ => FullDocumentType::Other(name),
        }
    }
}

impl FullDocumentType {
    /// The option's value as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            FullDocumentType::Default => "default",
            FullDocumentType::UpdateLookup => "updateLookup",
            FullDocumentType::WhenAvailable => "whenAvailable",
            FullDocumentType::Required => "required",
            FullDocumentType::Other(name) => name,
        }
    }
}

/// The `fullDocumentBeforeChange` option: whether events carry the pre-image. An
/// unknown value is sent as given.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum FullDocumentBeforeChangeType {
    /// The pre-image when the collection keeps it, else null.
    WhenAvailable,
    /// The pre-image, or an error.
    Required,
    /// No pre-image: the server's default.
    Off,
    /// Another value.
    Other(String),
}

impl From<String> for FullDocumentBeforeChangeType {
    fn from(name: String) -> Self {
        match name.as_str() {
            "whenAvailable" => FullDocumentBeforeChangeType::WhenAvailable,
            "required" => FullDocumentBeforeChangeType::Required,
            "off" => FullDocumentBeforeChangeType::Off,
            _ => FullDocumentBeforeChangeType::Other(name),
        }
    }
}

impl FullDocumentBeforeChangeType {
    /// The option's value as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            FullDocumentBeforeChangeType::WhenAvailable => "whenAvailable",
            FullDocumentBeforeChangeType::Required => "required",
            FullDocumentBeforeChangeType::Off => "off",
            FullDocumentBeforeChangeType::Other(name) => name,
        }
    }
}

/// One change (spec, "Response Format": ChangeStreamDocument), its documents read as
/// `T`. Fields the server leaves out for an event type are `None`; fields it may add
/// later are ignored. A pipeline that reshapes events needs another type, e.g.
/// [`ChangeStream::with_type`]`::<Document>()`.
///
/// Its documents (`_id`, `documentKey`, `fullDocument`, …) are read as stored
/// ([`bson_deserializer::as_stored`](crate::bson_deserializer::as_stored)): a field whose
/// name starts with `$` stays a field, never extended JSON.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[serde(bound(deserialize = "T: DeserializeOwned + 'static"))]
pub struct ChangeStreamEvent<T> {
    /// The event's resume token.
    #[serde(rename = "_id")]
    pub id: ResumeToken,
    /// What happened.
    pub operation_type: OperationType,
    /// The database and collection where it happened.
    pub ns: Option<ChangeNamespace>,
    /// `create` events with expanded events (MongoDB 8.1+): what was created.
    pub ns_type: Option<ChangeNamespaceType>,
    /// `rename` events: the new namespace.
    pub to: Option<ChangeNamespace>,
    /// Expanded DDL events: what the operation did.
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub operation_description: Option<Document>,
    /// Document events: the `_id` (and shard key) of the document.
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub document_key: Option<Document>,
    /// `update` events: the delta.
    pub update_description: Option<UpdateDescription>,
    /// The document after the change (inserts, replaces; updates per
    /// [`ChangeStreamOptions::full_document`]).
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub full_document: Option<T>,
    /// The document before the change, per
    /// [`ChangeStreamOptions::full_document_before_change`].
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub full_document_before_change: Option<T>,
    /// The cluster time of the change.
    pub cluster_time: Option<Timestamp>,
    /// The server's wall clock time of the change (MongoDB 6.0+).
    pub wall_time: Option<bson::DateTime>,
    /// The collection's UUID (expanded events).
    #[serde(rename = "collectionUUID")]
    pub collection_uuid: Option<bson::Binary>,
    /// Changes made in a transaction: its session id.
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub lsid: Option<Document>,
    /// Changes made in a transaction: its number.
    pub txn_number: Option<i64>,
}

/// The `nsType` of a `create` event: what kind of collection was created. An unknown
/// kind is kept as [`ChangeNamespaceType::Other`], as an unknown operation type is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeNamespaceType {
    /// `collection`: a collection.
    Collection,
    /// `timeseries`: a time series collection.
    Timeseries,
    /// `view`: a view.
    View,
    /// Another kind, as the server names it.
    #[serde(untagged)]
    Other(String),
}

/// The kind of a change. The server adds kinds over time: an unknown one is kept as
/// [`OperationType::Other`] (spec: drivers MUST NOT err on it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(from = "String", rename_all = "camelCase")]
pub enum OperationType {
    /// `insert`: a document was inserted.
    Insert,
    /// `update`: a document was updated.
    Update,
    /// `replace`: a document was replaced.
    Replace,
    /// `delete`: a document was deleted.
    Delete,
    /// `invalidate`: the stream ends (its collection or database was dropped or
    /// renamed).
    Invalidate,
    /// `drop`: a collection was dropped.
    Drop,
    /// `dropDatabase`: a database was dropped.
    DropDatabase,
    /// `rename`: a collection was renamed.
    Rename,
    /// `createIndexes` (expanded events).
    CreateIndexes,
    /// `dropIndexes` (expanded events).
    DropIndexes,
    /// `modify`: a collection's options changed (expanded events).
    Modify,
    /// `create`: a collection or view was created (expanded events).
    Create,
    /// `shardCollection` (expanded events).
    ShardCollection,
    /// `refineCollectionShardKey` (expanded events).
    RefineCollectionShardKey,
    /// `reshardCollection` (expanded events).
    ReshardCollection,
    /// A kind this driver does not know.
    #[serde(untagged)]
    Other(String),
}

impl From<String> for OperationType {
    fn from(name: String) -> Self {
        match name.as_str() {
            "insert" => OperationType::Insert,
            "update" => OperationType::Update,
            "replace" => OperationType::Replace,
            "delete" => OperationType::Delete,
            "invalidate" => OperationType::Invalidate,
            "drop" => OperationType::Drop,
            "dropDatabase" => OperationType::DropDatabase,
            "rename" => OperationType::Rename,
            "createIndexes" => OperationType::CreateIndexes,
            "dropIndexes" => OperationType::DropIndexes,
            "modify" => OperationType::Modify,
            "create" => OperationType::Create,
            "shardCollection" => OperationType::ShardCollection,
            "refineCollectionShardKey" => OperationType::RefineCollectionShardKey,
            "reshardCollection" => OperationType::ReshardCollection,
            _ => OperationType::Other(name),
        }
    }
}

/// Where a change happened: `ns` and `to` of an event. Fields the server may add
/// (e.g. `viewOn`) are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct ChangeNamespace {
    /// The database.
    pub db: String,
    /// The collection; absent for database-wide events (`dropDatabase`).
    pub coll: Option<String>,
}

/// The delta of an `update` event.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateDescription {
    /// The fields set, by dotted path, with their new values.
    #[serde(deserialize_with = "crate::bson_deserializer::as_stored::document")]
    pub updated_fields: Document,
    /// The fields removed.
    pub removed_fields: Vec<String>,
    /// Arrays shortened (MongoDB 4.7+).
    pub truncated_arrays: Option<Vec<TruncatedArray>>,
    /// The path components of ambiguous paths (expanded events, MongoDB 6.1+).
    #[serde(
        default,
        deserialize_with = "crate::bson_deserializer::as_stored::optional"
    )]
    pub disambiguated_paths: Option<Document>,
}

/// An array an update shortened.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TruncatedArray {
    /// The array's dotted path.
    pub field: String,
    /// Its new length.
    pub new_size: i32,
}

/// Whether a getMore's `error` lets a change stream resume (spec, "Resumable Error"),
/// `max_wire_version` being that of the connection the stream's cursor was opened on
/// (every getMore goes to that server). An error of the aggregate never is: the
/// stream only asks this of getMore errors.
pub(crate) fn is_resumable(error: &Error, max_wire_version: Option<i32>) -> bool {
    match &*error.kind {
        ErrorKind::Command(command) => {
            command.code == CURSOR_NOT_FOUND
                || match max_wire_version {
                    Some(wire) if wire >= SERVER_LABELS_ERRORS => {
                        error.contains_label(RESUMABLE_CHANGE_STREAM_ERROR)
                    }
                    _ => RESUMABLE_CODES.contains(&command.code),
                }
        }
        // "Any error encountered which is not a server error": the network, a
        // timeout, a cleared pool, a malformed reply... but not the errors that
        // resuming would only meet again: a refused argument (an ended session), a
        // failed authentication, a server too old, a reply that does not fit.
        ErrorKind::InvalidArgument { .. }
        | ErrorKind::Authentication { .. }
        | ErrorKind::IncompatibleServer { .. }
        | ErrorKind::BsonDeserialization(_)
        | ErrorKind::BsonSerialization(_)
        | ErrorKind::Write(_)
        | ErrorKind::InsertMany(_)
        | ErrorKind::CollectionBulkWrite(_) => false,
        _ => true,
    }
}

/// Where the `$changeStream` stage starts the stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StartAt {
    /// As the options say (the first aggregate, or a resume with nothing to resume
    /// from).
    Original,
    /// `resumeAfter` this token, and neither `startAfter` nor `startAtOperationTime`.
    ResumeAfter(Document),
    /// `startAfter` this token, and neither `resumeAfter` nor `startAtOperationTime`.
    StartAfter(Document),
    /// `startAtOperationTime`, and neither `resumeAfter` nor `startAfter`.
    OperationTime(Timestamp),
}

/// The `$changeStream` stage (spec, "Helper Method"): the options that belong to the
/// stage, starting where `start` says, with `allChangesForCluster` for
/// [`Client::watch`].
pub(crate) fn stage(options: &ChangeStreamOptions, cluster: bool, start: &StartAt) -> Document {
    let mut stage = Document::new();
    if cluster {
        stage.insert("allChangesForCluster", true);
    }
    if let Some(full_document) = &options.full_document {
        stage.insert("fullDocument", full_document.as_str());
    }
    if let Some(before) = &options.full_document_before_change {
        stage.insert("fullDocumentBeforeChange", before.as_str());
    }
    let (resume_after, start_after, operation_time) = match start {
        StartAt::Original => (
            options.resume_after.clone().map(Document::from),
            options.start_after.clone().map(Document::from),
            options.start_at_operation_time,
        ),
        StartAt::ResumeAfter(token) => (Some(token.clone()), None, None),
        StartAt::StartAfter(token) => (None, Some(token.clone()), None),
        StartAt::OperationTime(time) => (None, None, Some(*time)),
    };
    if let Some(token) = resume_after {
        stage.insert("resumeAfter", token);
    }
    if let Some(token) = start_after {
        stage.insert("startAfter", token);
    }
    if let Some(time) = operation_time {
        stage.insert("startAtOperationTime", time);
    }
    if let Some(expanded) = options.show_expanded_events {
        stage.insert("showExpandedEvents", expanded);
    }
    stage
}

/// What a change stream knows of where it is (spec, "Updating the Cached Resume
/// Token", "startAtOperationTime"), and so where it would resume.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResumeState {
    /// The cached resume token.
    token: Option<Document>,
    /// Whether the stream was started with `startAfter`.
    started_after: bool,
    /// Whether a document was returned.
    returned_document: bool,
    /// `startAtOperationTime` as given, or the `operationTime` saved from the first
    /// aggregate.
    operation_time: Option<Timestamp>,
}

impl ResumeState {
    /// The state of a stream started with `options`: their `startAfter`, else their
    /// `resumeAfter`, is the first token.
    pub fn new(options: &ChangeStreamOptions) -> ResumeState {
        ResumeState {
            token: options
                .start_after
                .clone()
                .or_else(|| options.resume_after.clone())
                .map(Document::from),
            started_after: options.start_after.is_some(),
            returned_document: false,
            operation_time: options.start_at_operation_time,
        }
    }

    /// The token a resume would use.
    pub fn token(&self) -> Option<&Document> {
        self.token.as_ref()
    }

    /// The first aggregate answered: its `operationTime` is saved when the options
    /// named no starting point and the reply had neither results nor a
    /// `postBatchResumeToken`.
    pub fn opened(
        &mut self,
        options: &ChangeStreamOptions,
        empty: bool,
        post_batch_resume_token: Option<&Document>,
        operation_time: Option<Timestamp>,
    ) {
        let no_start = options.start_at_operation_time.is_none()
            && options.resume_after.is_none()
            && options.start_after.is_none();
        if no_start && empty && post_batch_resume_token.is_none() {
            self.operation_time = operation_time;
        }
    }

    /// An aggregate or getMore answered with a batch: an empty one moves the token to
    /// its `postBatchResumeToken`.
    pub fn batch(&mut self, empty: bool, post_batch_resume_token: Option<&Document>) {
        if let (true, Some(token)) = (empty, post_batch_resume_token) {
            self.token = Some(token.clone());
        }
    }

    /// `document` is returned to the user: the token becomes the batch's
    /// `postBatchResumeToken` if it was the batch's last document, else its `_id`. A
    /// document without an `_id` cannot be resumed from: an error.
    pub fn returned(
        &mut self,
        document: &RawDocument,
        last_of_batch: bool,
        post_batch_resume_token: Option<&Document>,
    ) -> Result<()> {
        let id = match document.get_document("_id").map(Document::try_from) {
            Ok(Ok(id)) => id,
            _ => return Err(Error::new(crate::error::ErrorKind::MissingResumeToken)),
        };
        self.token = match (last_of_batch, post_batch_resume_token) {
            (true, Some(token)) => Some(token.clone()),
            _ => Some(id),
        };
        self.returned_document = true;
        Ok(())
    }

    /// Where a resumed stream starts (spec, "Resume Process").
    pub fn resume_point(&self) -> StartAt {
        match (&self.token, self.operation_time) {
            (Some(token), _) if self.started_after && !self.returned_document => {
                StartAt::StartAfter(token.clone())
            }
            (Some(token), _) => StartAt::ResumeAfter(token.clone()),
            (None, Some(time)) => StartAt::OperationTime(time),
            (None, None) => StartAt::Original,
        }
    }
}

/// What (re)opening a change stream needs: its aggregate's target, pipeline, options,
/// concerns and session.
#[derive(Clone)]
struct Spec {
    client: Client,
    database: String,
    /// `None`: a database or cluster stream (`aggregate: 1`).
    collection: Option<String>,
    /// A [`Client::watch`] stream (`allChangesForCluster`).
    cluster: bool,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    selection_criteria: SelectionCriteria,
    read_concern: Option<ReadConcern>,
    /// The `timeoutMS` of the aggregate, and of each iteration (Client Side
    /// Operations Timeout spec, "Change Streams").
    timeout: Option<std::time::Duration>,
    /// The session of every aggregate and getMore: the user's, or the implicit one
    /// of the first aggregate (spec: a resume "MUST use the same session").
    session: Option<ClientSession>,
}

/// A change stream's cursor, as an aggregate opened it.
struct Opened {
    cursor: Cursor<Document>,
    /// The reply's `operationTime`.
    operation_time: Option<Timestamp>,
    /// The wire version of the connection the aggregate ran on.
    max_wire_version: Option<i32>,
}

impl Spec {
    /// Runs the aggregate (a retryable read), starting at `start`, after killing the
    /// cursor `stale` of a failed getMore, if any (spec, "Resume Process": errors
    /// killing it are suppressed).
    /// With `deadline` (a `next` call's), the aggregate ends by then; else it gets
    /// the stream's timeoutMS afresh.
    async fn open(
        self: Arc<Self>,
        start: StartAt,
        stale: Option<CursorSpec>,
        deadline: Option<crate::rt::Instant>,
    ) -> Result<Opened> {
        if let Some(stale) = stale {
            let _ = stale.kill().await;
        }
        let mut pipeline =
            vec![bson::doc! { "$changeStream": stage(&self.options, self.cluster, &start) }];
        pipeline.extend(self.pipeline.iter().cloned());
        let options = &self.options;
        let mut operation = Open {
            aggregate: Aggregate {
                database: &self.database,
                collection: self.collection.as_deref(),
                pipeline,
                options: AggregateOptions {
                    batch_size: options.batch_size,
                    collation: options.collation.clone(),
                    comment: options.comment.clone(),
                    max_await_time: options.max_await_time,
                    ..AggregateOptions::default()
                },
                selection_criteria: self.selection_criteria.clone(),
                read_concern: self.read_concern.clone(),
                write_concern: None,
            },
            operation_time: None,
            max_wire_version: None,
        };
        operation.aggregate.check_timeout(self.timeout)?;
        let cursor = self
            .client
            .executor()
            .execute(
                &mut operation,
                self.session.as_ref(),
                crate::operation::Timing {
                    timeout: self.timeout,
                    deadline,
                },
            )
            .await?;
        Ok(Opened {
            cursor,
            operation_time: operation.operation_time,
            max_wire_version: operation.max_wire_version,
        })
    }
}

/// A change stream's aggregate: an [`Aggregate`] that also keeps the reply's
/// `operationTime` and the connection's wire version.
struct Open<'a> {
    aggregate: Aggregate<'a>,
    operation_time: Option<Timestamp>,
    max_wire_version: Option<i32>,
}

impl Operation for Open<'_> {
    type Output = Cursor<Document>;

    fn name(&self) -> &str {
        self.aggregate.name()
    }

    fn traced(&self) -> Traced<'_> {
        self.aggregate.traced()
    }

    fn target(&self) -> Target<'_> {
        self.aggregate.target()
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        self.max_wire_version = Some(hello.max_wire_version);
        self.aggregate.build(hello)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output> {
        self.operation_time = reply.get_timestamp("operationTime").ok();
        self.aggregate.handle_reply(reply, context)
    }

    fn retryability(&self) -> Retryability {
        self.aggregate.retryability()
    }

    fn supports_read_concern(&self) -> bool {
        self.aggregate.supports_read_concern()
    }
}

/// The changes to a collection, a database or a deployment: a [`Stream`] of
/// `Result<T>` that never ends on its own (unless the server invalidates it: the
/// collection was dropped or renamed), and resumes once after each resumable error.
///
/// `T` is [`ChangeStreamEvent`] of the collection's document type by default;
/// [`with_type`](Self::with_type) reads events as another type (`bson::Document` for
/// the raw path).
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// use futures::TryStreamExt;
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut changes = orders
///     .watch()
///     .pipeline([doc! { "$match": { "operationType": "insert" } }])
///     .await?;
/// while let Some(change) = changes.try_next().await? {
///     println!("{:?}: {:?}", change.operation_type, change.full_document);
/// }
/// # Ok(()) }
/// ```
///
/// To store where the stream is, read [`resume_token`](Self::resume_token) after each
/// call of [`next_if_any`](Self::next_if_any): it returns after every batch, empty or
/// not, so the token is the most recent one even while no change comes (spec,
/// "Exposing All Resume Tokens"); a stream opened later with
/// `.resume_after(token)` goes on from there.
///
/// ```no_run
/// # async fn example(client: anymongo::Client, mut store: impl FnMut(anymongo::change_stream::ResumeToken)) -> anymongo::Result<()> {
/// use anymongo::bson::Document;
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut changes = orders.watch().await?;
/// while changes.is_alive() {
///     let change = changes.next_if_any().await?;
///     if let Some(token) = changes.resume_token() {
///         store(token);
///     }
///     if let Some(change) = change {
///         println!("{change:?}");
///     }
/// }
/// # Ok(()) }
/// ```
pub struct ChangeStream<T> {
    /// Shared with a resume in flight.
    watch: Arc<Spec>,
    /// `None` while resuming, and once closed.
    cursor: Option<Cursor<Document>>,
    resuming: Option<BoxFuture<'static, Result<Opened>>>,
    /// A getMore timed out: the next call resumes (Client Side Operations Timeout
    /// spec, "Change Streams": the stream is not invalidated), killing this cursor.
    resume_next: Option<Option<Box<CursorSpec>>>,
    /// The deadline of the call (a `next`) under way, with timeoutMS: its getMores
    /// and any resume share it.
    call_deadline: Option<crate::rt::Instant>,
    resume: ResumeState,
    /// The wire version of the connection of the last aggregate.
    max_wire_version: Option<i32>,
    _events: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeStream")
            .field("database", &self.watch.database)
            .field("collection", &self.watch.collection)
            .field("resume_token", &self.resume.token())
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

/// What one step of a change stream gave.
enum Advance<T> {
    /// A change, or an error.
    Event(Result<T>),
    /// An empty batch: no change yet.
    Empty,
    /// The stream is closed.
    End,
}

impl<T> ChangeStream<T> {
    /// Opens the stream `watch` describes.
    async fn open(watch: Spec) -> Result<ChangeStream<T>> {
        let mut watch = Arc::new(watch);
        let opened = watch.clone().open(StartAt::Original, None, None).await?;
        if let (None, Some(session)) = (&watch.session, opened.cursor.session()) {
            // The only reference now: the open is over.
            Arc::make_mut(&mut watch).session = Some(session.clone());
        }
        let mut resume = ResumeState::new(&watch.options);
        resume.opened(
            &watch.options,
            opened.cursor.buffered() == 0,
            opened.cursor.post_batch_resume_token(),
            opened.operation_time,
        );
        let mut stream = ChangeStream {
            watch,
            cursor: None,
            resuming: None,
            resume_next: None,
            call_deadline: None,
            resume,
            max_wire_version: None,
            _events: PhantomData,
        };
        stream.started(opened);
        Ok(stream)
    }

    /// An aggregate answered: its batch is iterated next.
    fn started(&mut self, opened: Opened) {
        let cursor = opened.cursor;
        self.resume
            .batch(cursor.buffered() == 0, cursor.post_batch_resume_token());
        self.max_wire_version = opened.max_wire_version;
        self.cursor = Some(cursor);
    }

    /// The resume token the stream would resume from: the `_id` of the last change
    /// returned, or a more recent `postBatchResumeToken` (spec, "Updating the Cached
    /// Resume Token"). Pass it as [`ChangeStreamOptions::resume_after`] to go on from
    /// here later.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.resume.token().cloned().map(ResumeToken)
    }

    /// Whether the stream may still return changes: it is not closed, by an error, by
    /// [`close`](Self::close) or by the server (an invalidate event ends it).
    pub fn is_alive(&self) -> bool {
        self.cursor.is_some() || self.resuming.is_some() || self.resume_next.is_some()
    }

    /// The same stream, its events read as `U` (e.g. `bson::Document`, for a pipeline
    /// that reshapes them).
    pub fn with_type<U>(self) -> ChangeStream<U> {
        ChangeStream {
            watch: self.watch,
            cursor: self.cursor,
            resuming: self.resuming,
            resume_next: self.resume_next,
            call_deadline: self.call_deadline,
            resume: self.resume,
            max_wire_version: self.max_wire_version,
            _events: PhantomData,
        }
    }

    /// Closes the stream, killing its server cursor now and waiting for the answer
    /// (dropping the stream does it in the background).
    pub async fn close(mut self) -> Result<()> {
        self.resuming = None;
        if let Some(Some(stale)) = self.resume_next.take() {
            return stale.kill().await;
        }
        match self.cursor.take() {
            Some(cursor) => cursor.close().await,
            None => Ok(()),
        }
    }
}

impl<T: DeserializeOwned + 'static> ChangeStream<T> {
    /// The next change if the next batch has one: unlike the [`Stream`], returns
    /// `None` after a getMore that found no change, so that
    /// [`resume_token`](Self::resume_token) can be read between batches. `None` also
    /// once the stream is closed ([`is_alive`](Self::is_alive) says which).
    pub async fn next_if_any(&mut self) -> Result<Option<T>> {
        let advance = futures::future::poll_fn(|cx| self.poll_advance(cx)).await;
        self.call_deadline = None;
        match advance {
            Advance::Event(event) => event.map(Some),
            Advance::Empty | Advance::End => Ok(None),
        }
    }

    fn poll_advance(&mut self, cx: &mut Context<'_>) -> Poll<Advance<T>> {
        if self.call_deadline.is_none() {
            if let Some(timeout) = self.watch.timeout.filter(|limit| !limit.is_zero()) {
                self.call_deadline = Some(self.watch.client.executor().now() + timeout);
            }
        }
        if let Some(stale) = self.resume_next.take() {
            let start = self.resume.resume_point();
            let open = self
                .watch
                .clone()
                .open(start, stale.map(|spec| *spec), self.call_deadline);
            self.resuming = Some(boxed(open));
        }
        loop {
            if let Some(resuming) = &mut self.resuming {
                let opened = ready!(resuming.as_mut().poll(cx));
                self.resuming = None;
                match opened {
                    Ok(opened) => self.started(opened),
                    // The resume failed: the stream is closed.
                    Err(error) => return Poll::Ready(Advance::Event(Err(error))),
                }
            }
            let Some(cursor) = &mut self.cursor else {
                return Poll::Ready(Advance::End);
            };
            cursor.set_call_deadline(self.call_deadline);
            match ready!(cursor.poll_step(cx)) {
                Step::Document(document) => {
                    let last = cursor.buffered() == 0;
                    let token = cursor.post_batch_resume_token();
                    if let Err(error) = self.resume.returned(&document, last, token) {
                        // Closed (its server cursor killed on drop).
                        self.cursor = None;
                        return Poll::Ready(Advance::Event(Err(error)));
                    }
                    let event = crate::cursor::deserialize(&document);
                    return Poll::Ready(Advance::Event(event));
                }
                Step::EmptyBatch => {
                    self.resume.batch(true, cursor.post_batch_resume_token());
                    return Poll::Ready(Advance::Empty);
                }
                Step::End => {
                    self.cursor = None;
                    return Poll::Ready(Advance::End);
                }
                Step::Failed(error, stale) => {
                    self.cursor = None;
                    // A cursor the server does not know needs no killing.
                    let stale = stale.filter(|_| error.code() != Some(CURSOR_NOT_FOUND));
                    if error.is_operation_timeout() {
                        // Not invalidated: the next call resumes.
                        self.resume_next = Some(stale);
                        return Poll::Ready(Advance::Event(Err(error)));
                    }
                    let stale = stale.map(|spec| *spec);
                    if !is_resumable(&error, self.max_wire_version) {
                        // The stream is closed: a pinned server cursor is killed on its
                        // connection, which then goes (Load Balancer spec, "Behaviour
                        // With Cursors").
                        if let Some(stale) = stale.filter(|spec| spec.pinned.is_some()) {
                            crate::cursor::kill_later(stale);
                        }
                        return Poll::Ready(Advance::Event(Err(error)));
                    }
                    let start = self.resume.resume_point();
                    let open = self.watch.clone().open(start, stale, self.call_deadline);
                    self.resuming = Some(boxed(open));
                }
            }
        }
    }
}

impl<T: DeserializeOwned + 'static> Stream for ChangeStream<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let stream = self.get_mut();
        let advance = ready!(stream.poll_advance(cx));
        if !matches!(advance, Advance::Empty) {
            stream.call_deadline = None;
        }
        Poll::Ready(match advance {
            Advance::Event(event) => Some(event),
            // A getMore found nothing: ask again, from the next poll, so that a server
            // answering at once never holds the task in a loop.
            Advance::Empty => return crate::rt::poll_yield(cx),
            Advance::End => None,
        })
    }
}

/// A change stream opened in an explicit session: what a `watch` run with
/// `.session(…)` returns. Its getMores and resumes run in that session, which its
/// iteration names, as the official driver's `SessionChangeStream` does.
///
/// ```no_run
/// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
/// use anymongo::bson::Document;
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut session = client.start_session().await?;
/// let mut changes = orders.watch().session(&mut session).await?;
/// while let Some(change) = changes.next(&mut session).await? {
///     println!("{:?}", change.operation_type);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SessionChangeStream<T> {
    stream: ChangeStream<T>,
}

impl<T> SessionChangeStream<T> {
    /// The stream `stream` of a `watch` run in an explicit session.
    pub(crate) fn new(stream: ChangeStream<T>) -> SessionChangeStream<T> {
        SessionChangeStream { stream }
    }

    /// The resume token the stream would resume from ([`ChangeStream::resume_token`]).
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.stream.resume_token()
    }

    /// Whether the stream may still return changes ([`ChangeStream::is_alive`]).
    pub fn is_alive(&self) -> bool {
        self.stream.is_alive()
    }

    /// The same stream, its events read as `U` ([`ChangeStream::with_type`]).
    pub fn with_type<U>(self) -> SessionChangeStream<U> {
        SessionChangeStream {
            stream: self.stream.with_type(),
        }
    }

    /// Closes the stream, killing its server cursor now ([`ChangeStream::close`]).
    pub async fn close(self) -> Result<()> {
        self.stream.close().await
    }
}

impl<T: DeserializeOwned + 'static> SessionChangeStream<T> {
    /// The next change, waiting for one; `None` once the stream is closed.
    pub async fn next<'s>(&mut self, _session: impl Into<&'s ClientSession>) -> Result<Option<T>> {
        futures::StreamExt::next(&mut self.stream).await.transpose()
    }

    /// The next change if the next batch has one ([`ChangeStream::next_if_any`]).
    pub async fn next_if_any<'s>(
        &mut self,
        _session: impl Into<&'s ClientSession>,
    ) -> Result<Option<T>> {
        self.stream.next_if_any().await
    }
}

/// An anymongo change stream carries its session: a [`SessionChangeStream`] can
/// become a plain [`ChangeStream`], iterated without naming the session (for code that
/// handles the streams of `watch` with and without sessions alike).
impl<T> From<SessionChangeStream<T>> for ChangeStream<T> {
    fn from(stream: SessionChangeStream<T>) -> ChangeStream<T> {
        stream.stream
    }
}

/// [`SessionChangeStream`], where the official driver has it
/// (`change_stream::session`).
pub mod session {
    pub use super::SessionChangeStream;
}

/// The read preference and read concern of a stream on a handle with `concerns`.
fn read_concerns(concerns: &Concerns) -> (SelectionCriteria, Option<ReadConcern>) {
    (
        concerns.selection_criteria.clone().unwrap_or_default(),
        concerns.read_concern.clone(),
    )
}

impl<T> Collection<T> {
    /// Opens a change stream on this collection: what [`Collection::watch`] runs.
    pub(crate) async fn watch_in(
        &self,
        pipeline: Vec<Document>,
        options: Option<ChangeStreamOptions>,
        session: Option<&ClientSession>,
    ) -> Result<ChangeStream<ChangeStreamEvent<T>>> {
        let database = self.database();
        open(
            database,
            Watched::Collection(self.name()),
            self.concerns(),
            self.timeout(),
            pipeline,
            options,
            session,
        )
        .await
    }
}

impl Database {
    /// Opens a change stream on this database, or with `cluster` on the deployment
    /// (this database being `admin`): what [`Database::watch`] and [`Client::watch`]
    /// run.
    pub(crate) async fn watch_in(
        &self,
        pipeline: Vec<Document>,
        options: Option<ChangeStreamOptions>,
        session: Option<&ClientSession>,
        cluster: bool,
    ) -> Result<ChangeStream<ChangeStreamEvent<Document>>> {
        open(
            self,
            Watched::Database { cluster },
            self.concerns(),
            self.timeout(),
            pipeline,
            options,
            session,
        )
        .await
    }
}

/// What a stream watches, in its database.
enum Watched<'a> {
    /// This collection.
    Collection(&'a str),
    /// The database, or with `cluster` the deployment (`allChangesForCluster`).
    Database { cluster: bool },
}

/// Opens a change stream on what `watched` names in `database`, with the concerns of
/// the handle it was opened from unless `options` override them.
async fn open<T>(
    database: &Database,
    watched: Watched<'_>,
    concerns: &Concerns,
    timeout: Option<Duration>,
    pipeline: Vec<Document>,
    options: Option<ChangeStreamOptions>,
    session: Option<&ClientSession>,
) -> Result<ChangeStream<T>> {
    let mut options = options.unwrap_or_default();
    let (selection_criteria, read_concern) = read_concerns(concerns);
    let selection_criteria = options
        .selection_criteria
        .take()
        .unwrap_or(selection_criteria);
    let read_concern = options.read_concern.take().or(read_concern);
    ChangeStream::open(Spec {
        client: database.client().clone(),
        database: database.name().to_string(),
        collection: match watched {
            Watched::Collection(name) => Some(name.to_string()),
            Watched::Database { .. } => None,
        },
        timeout,
        cluster: matches!(watched, Watched::Database { cluster: true }),
        pipeline,
        options,
        selection_criteria,
        read_concern,
        session: session.cloned(),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CommandError;
    use bson::{doc, rawdoc};

    fn server_error(code: i32, labels: &[&str]) -> Error {
        Error::new(ErrorKind::Command(CommandError {
            code,
            code_name: String::new(),
            message: "failed".into(),
            error_labels: labels.iter().map(|label| label.to_string()).collect(),
            topology_version: None,
        }))
    }

    #[test]
    fn resumable_errors_follow_the_label_from_4_4_and_the_codes_before() {
        let labelled = server_error(6, &[RESUMABLE_CHANGE_STREAM_ERROR]);
        assert!(is_resumable(&labelled, Some(17)));
        // 4.4+: the label decides, not the code.
        assert!(!is_resumable(&server_error(6, &[]), Some(9)));
        assert!(is_resumable(
            &server_error(50, &[RESUMABLE_CHANGE_STREAM_ERROR]),
            Some(9)
        ));
        // Before 4.4: the code list.
        assert!(is_resumable(&server_error(6, &[]), Some(8)));
        assert!(is_resumable(&server_error(13388, &[]), Some(8)));
        assert!(!is_resumable(&server_error(50, &[]), Some(8)));
        // CursorNotFound always.
        assert!(is_resumable(&server_error(43, &[]), Some(21)));
        assert!(is_resumable(&server_error(43, &[]), Some(6)));
        // Not a server error: yes, unless resuming would meet it again.
        let network = Error::network("a:1", std::io::ErrorKind::ConnectionReset, "reset");
        assert!(is_resumable(&network, Some(21)));
        assert!(!is_resumable(&Error::invalid_argument("ended"), Some(21)));
        assert!(!is_resumable(&Error::deserialization("no fit"), Some(21)));
    }

    fn options(document: Document) -> ChangeStreamOptions {
        bson::deserialize_from_document(document).unwrap()
    }

    #[test]
    fn options_read_from_the_spec_names_and_the_stage_takes_its_own() {
        let time = Timestamp {
            time: 10,
            increment: 2,
        };
        let options = options(doc! {
            "fullDocument": "updateLookup",
            "fullDocumentBeforeChange": "someFutureValue",
            "startAtOperationTime": time,
            "showExpandedEvents": true,
            "maxAwaitTimeMS": 250,
            "batchSize": 3,
            "comment": "c",
        });
        assert_eq!(options.full_document, Some(FullDocumentType::UpdateLookup));
        assert_eq!(options.max_await_time, Some(Duration::from_millis(250)));
        assert_eq!(
            stage(&options, true, &StartAt::Original),
            doc! {
                "allChangesForCluster": true,
                "fullDocument": "updateLookup",
                "fullDocumentBeforeChange": "someFutureValue",
                "startAtOperationTime": time,
                "showExpandedEvents": true,
            }
        );
        // Aggregate options stay out of the stage; an empty stage for no options.
        assert_eq!(
            stage(&ChangeStreamOptions::default(), false, &StartAt::Original),
            doc! {}
        );
    }

    #[test]
    fn a_resume_replaces_every_starting_point_with_one() {
        let original = options(doc! {
            "resumeAfter": { "_data": "a" },
            "startAtOperationTime": Timestamp { time: 1, increment: 1 },
        });
        let token = doc! { "_data": "b" };
        let resumed = stage(&original, false, &StartAt::ResumeAfter(token.clone()));
        assert_eq!(resumed, doc! { "resumeAfter": token.clone() });
        let started = stage(&original, false, &StartAt::StartAfter(token.clone()));
        assert_eq!(started, doc! { "startAfter": token });
        let time = Timestamp {
            time: 5,
            increment: 0,
        };
        let at = stage(&original, false, &StartAt::OperationTime(time));
        assert_eq!(at, doc! { "startAtOperationTime": time });
    }

    #[test]
    fn the_token_is_the_last_id_or_the_post_batch_token() {
        let mut state = ResumeState::new(&ChangeStreamOptions::default());
        assert_eq!(state.token(), None);
        let pbrt = doc! { "_data": "pbrt" };
        // An empty batch with a postBatchResumeToken moves the token; one without
        // leaves it.
        state.batch(true, Some(&pbrt));
        assert_eq!(state.token(), Some(&pbrt));
        state.batch(true, None);
        assert_eq!(state.token(), Some(&pbrt));
        // A non-empty batch does not move it until its documents are returned.
        let later = doc! { "_data": "later" };
        state.batch(false, Some(&later));
        assert_eq!(state.token(), Some(&pbrt));
        let first = rawdoc! { "_id": { "_data": "1" }, "operationType": "insert" };
        state.returned(&first, false, Some(&later)).unwrap();
        assert_eq!(state.token(), Some(&doc! { "_data": "1" }));
        let last = rawdoc! { "_id": { "_data": "2" } };
        state.returned(&last, true, Some(&later)).unwrap();
        assert_eq!(state.token(), Some(&later));
        // The last document of a batch without a postBatchResumeToken: its _id.
        state.returned(&last, true, None).unwrap();
        assert_eq!(state.token(), Some(&doc! { "_data": "2" }));
        let missing = state
            .returned(&rawdoc! { "x": 1 }, false, None)
            .unwrap_err();
        assert!(missing.to_string().contains("resume token is missing"));
    }

    #[test]
    fn resume_points_follow_the_resume_process() {
        let token = doc! { "_data": "t" };
        let event = rawdoc! { "_id": { "_data": "e" } };
        // startAfter, no document returned yet: startAfter the cached token.
        let mut state = ResumeState::new(&options(doc! { "startAfter": token.clone() }));
        assert_eq!(state.resume_point(), StartAt::StartAfter(token.clone()));
        // After a document: resumeAfter.
        state.returned(&event, false, None).unwrap();
        assert_eq!(
            state.resume_point(),
            StartAt::ResumeAfter(doc! { "_data": "e" })
        );
        let state = ResumeState::new(&options(doc! { "resumeAfter": token.clone() }));
        assert_eq!(state.resume_point(), StartAt::ResumeAfter(token));
        // No token: the operation time given, or saved from the first aggregate.
        let time = Timestamp {
            time: 7,
            increment: 1,
        };
        let given = options(doc! { "startAtOperationTime": time });
        let state = ResumeState::new(&given);
        assert_eq!(state.resume_point(), StartAt::OperationTime(time));
        let none = ChangeStreamOptions::default();
        let mut state = ResumeState::new(&none);
        assert_eq!(state.resume_point(), StartAt::Original);
        state.opened(&none, true, None, Some(time));
        assert_eq!(state.resume_point(), StartAt::OperationTime(time));
        // Not saved when the reply had a postBatchResumeToken or results.
        let mut state = ResumeState::new(&none);
        state.opened(&none, true, Some(&doc! { "_data": "p" }), Some(time));
        state.opened(&none, false, None, Some(time));
        assert_eq!(state.resume_point(), StartAt::Original);
    }

    #[test]
    fn events_read_every_spec_field_and_tolerate_unknown_ones() {
        let event = doc! {
            "_id": { "_data": "x" },
            "operationType": "update",
            "ns": { "db": "d", "coll": "c", "viewOn": "v" },
            "documentKey": { "_id": 1 },
            "updateDescription": {
                "updatedFields": { "a": 2 },
                "removedFields": ["b"],
                "truncatedArrays": [{ "field": "arr", "newSize": 1 }],
            },
            "fullDocument": null,
            "clusterTime": Timestamp { time: 3, increment: 4 },
            "someFutureField": true,
        };
        let event: ChangeStreamEvent<Document> = bson::deserialize_from_document(event).unwrap();
        assert_eq!(event.operation_type, OperationType::Update);
        assert_eq!(event.ns.unwrap().coll.as_deref(), Some("c"));
        assert_eq!(event.full_document, None);
        let update = event.update_description.unwrap();
        assert_eq!(update.removed_fields, ["b"]);
        assert_eq!(update.truncated_arrays.unwrap()[0].new_size, 1);
        let unknown = doc! { "_id": { "_data": "y" }, "operationType": "reshape" };
        let unknown: ChangeStreamEvent<Document> =
            bson::deserialize_from_document(unknown).unwrap();
        assert_eq!(
            unknown.operation_type,
            OperationType::Other("reshape".into())
        );
    }
}
