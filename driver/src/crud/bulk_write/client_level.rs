//! The client-level bulk write (Bulk Write spec, MongoDB 8.0+): a
//! [`Client::bulk_write`] runs inserts, updates, replacements and deletes on any
//! collections of the deployment as `bulkWrite` commands on `admin`, each carrying as
//! many writes as the server's limits allow.
//!
//! The pure parts are apart from the I/O and tested without a server: the models'
//! `ops` entries with their namespaces (`PreparedOp`), splitting them into commands
//! (`next_batch`), and assembling the result or the error from the replies and the
//! results cursor (`Outcome`).

use std::collections::{BTreeMap, HashMap};

use bson::{doc, Bson, Document, RawDocumentBuf};
use futures::TryStreamExt;

use super::{
    add_count, BulkWriteOptions, BulkWriteResult, DeleteResult, InsertOneResult, UpdateResult,
    VerboseResults, WriteModel,
};
use crate::bson_util::as_i64;
use crate::bson_util::insert_present;
use crate::concern::WriteConcern;
use crate::crud::write::{Spelling, Statement, WriteKind, WriteReply};
use crate::cursor::{Batch, Cursor, CursorSpec};
use crate::error::{
    BulkWriteError, Error, ErrorKind, PartialBulkWriteResult, Result, WriteConcernError,
    WriteError, WriteFailure,
};
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::Executor;
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::retry::{Retryability, RETRYABLE_WRITE_ERROR};
use crate::session::ClientSession;
use crate::wire::{DocumentSequence, WireError};

/// Runs `models` in as few `bulkWrite` commands as the server's limits allow, in
/// `session` (an implicit one when `None`), with each write's result when `verbose`:
/// the work of
/// [`Client::bulk_write`](crate::Client::bulk_write), whose documentation says what it
/// returns.
pub(crate) async fn execute(
    executor: &std::sync::Arc<Executor>,
    models: Vec<WriteModel>,
    options: Option<BulkWriteOptions>,
    verbose: bool,
    session: Option<&ClientSession>,
    timing: crate::operation::Timing,
) -> Result<BulkWriteResult> {
    // One timeoutMS for all the batches (Client Side Operations Timeout spec,
    // "Batching").
    let context = executor.context(timing, session);
    let options = options.unwrap_or_default();
    crate::transactions::check_operation_concerns(session, false, options.write_concern.is_some())?;
    let write_concern = options
        .write_concern
        .clone()
        .unwrap_or_else(|| executor.options().write_concern_or_default());
    let plan = Plan::new(models, &options, verbose, write_concern)?;
    let mut outcome = Outcome::new(plan.verbose, plan.acknowledged());
    let mut offset = 0;
    while offset < plan.ops.len() {
        let mut batch = BulkWriteBatch::new(&plan, offset);
        let reply = match executor.execute_with(context, &mut batch, session).await {
            Ok(reply) => reply,
            Err(error) => match (batch.retried_reply.take(), &*error.kind) {
                // A retryable write concern error that was not retried, or came
                // back: the batch's writes were done.
                (Some(reply), ErrorKind::Write(WriteFailure::WriteConcernError(_))) => reply,
                _ => return Err(outcome.stopped_by(error)),
            },
        };
        let len = batch.len();
        if let Err(error) = outcome.add_reply(&reply) {
            return Err(outcome.stopped_by(error));
        }
        if let Some(cursor) = reply.cursor {
            if let Err(error) = outcome.read_results(cursor, &plan.ops, offset, len).await {
                outcome.judge_batch(&reply.summary, offset, len, plan.ordered);
                return Err(outcome.stopped_by(error));
            }
        }
        outcome.judge_batch(&reply.summary, offset, len, plan.ordered);
        if plan.ordered && !outcome.write_errors.is_empty() {
            break;
        }
        offset += len;
    }
    outcome.finish()
}

/// The OP_MSG overhead allowance of a `bulkWrite` batch (Bulk Write spec, "Total
/// Message Size"): room for the message header and the command-agnostic fields
/// (`lsid`, `txnNumber`, `$clusterTime`...).
const MESSAGE_OVERHEAD_BYTES: usize = 1000;

/// One model as the `ops` entry it becomes (Bulk Write spec, "Operations"), with its
/// namespace.
#[derive(Debug, Clone)]
struct PreparedOp {
    /// `database.collection`.
    namespace: String,
    /// The entry, its namespace index 0 until it is put in a batch; whether it may
    /// change many documents (a batch with one is not retryable).
    statement: Statement,
    /// An insert's `_id`, reported once the server confirms the insert.
    inserted_id: Option<Bson>,
}

impl PreparedOp {
    /// The entry of `model`, after the client-side checks of the spec ("Update vs.
    /// replace document validation").
    fn new(index: usize, model: WriteModel) -> Result<PreparedOp> {
        let namespace = model.namespace().map(ToString::to_string).ok_or_else(|| {
            Error::invalid_argument(format!(
                "the write model at index {index} of a client bulk write has no namespace: \
                 set one with .namespace(collection.namespace())"
            ))
        })?;
        check_namespace(&namespace)?;
        let (statement, inserted_id) = model.statement(Spelling::BulkWrite)?;
        Ok(PreparedOp {
            namespace,
            statement,
            inserted_id,
        })
    }

    /// The entry with `index`, the namespace's place in the batch's `nsInfo`, as the
    /// value of its first element: an int32, like the 0 it was built with, so the
    /// entry keeps its size.
    fn with_namespace_index(&self, index: i32) -> Result<RawDocumentBuf> {
        let mut bytes = self.statement.document.as_bytes().to_vec();
        // After the document's length: the element's type (0x10, int32), its key
        // and the key's NUL, then the value.
        let key = self.statement.kind.command().as_bytes();
        let at = 4 + 1 + key.len() + 1;
        let first = (bytes.get(4), bytes.get(5..at - 1), bytes.get(at - 1));
        if first != (Some(&0x10), Some(key), Some(&0)) || bytes.len() < at + 4 {
            return Err(Error::internal(
                "a write's entry does not start with its kind",
            ));
        }
        bytes[at..at + 4].copy_from_slice(&index.to_le_bytes());
        RawDocumentBuf::from_bytes(bytes).map_err(Error::serialization)
    }
}

/// Refuses a namespace that is not `database.collection`.
fn check_namespace(namespace: &str) -> Result<()> {
    match namespace.split_once('.') {
        Some((database, collection)) if !database.is_empty() && !collection.is_empty() => Ok(()),
        _ => Err(Error::invalid_argument(format!(
            "the namespace {namespace:?} of a bulk write is not \"database.collection\""
        ))),
    }
}

/// A bulk write ready to be sent: its writes and the command they go in.
#[derive(Debug)]
struct Plan {
    ops: Vec<PreparedOp>,
    /// `{ bulkWrite: 1, errorsOnly, ordered, ... }`: the command without its
    /// document sequences.
    body: Document,
    write_concern: WriteConcern,
    ordered: bool,
    verbose: bool,
    /// `rawData`, added to the body when the server knows it.
    raw_data: Option<bool>,
}

impl Plan {
    /// The plan of `models`, refused if the spec says so before anything is sent.
    fn new(
        models: Vec<WriteModel>,
        options: &BulkWriteOptions,
        verbose: bool,
        write_concern: WriteConcern,
    ) -> Result<Plan> {
        let ops = models
            .into_iter()
            .enumerate()
            .map(|(index, model)| PreparedOp::new(index, model))
            .collect::<Result<Vec<_>>>()?;
        if ops.is_empty() {
            return Err(Error::invalid_argument(
                "a bulk write needs at least one write model",
            ));
        }
        write_concern.validate()?;
        // The spec's defaults: ordered, summary results ("`errorsOnly` and
        // `verboseResults`", "`ordered`").
        let ordered = options.ordered.unwrap_or(true);
        if !write_concern.is_acknowledged() {
            // The spec's messages, word for word.
            if verbose {
                return Err(Error::invalid_argument(
                    "Cannot request unacknowledged write concern and verbose results",
                ));
            }
            if ordered {
                return Err(Error::invalid_argument(
                    "Cannot request unacknowledged write concern and ordered writes",
                ));
            }
        }
        let mut body = doc! { "bulkWrite": 1, "errorsOnly": !verbose, "ordered": ordered };
        insert_present(
            &mut body,
            [
                (
                    "bypassDocumentValidation",
                    options.bypass_document_validation.map(Bson::Boolean),
                ),
                ("comment", options.comment.clone()),
                ("let", options.let_vars.clone().map(Bson::Document)),
                (
                    "writeConcern",
                    Some(&write_concern)
                        .filter(|concern| !concern.is_empty())
                        .map(|concern| Bson::Document(concern.to_document())),
                ),
            ],
        );
        Ok(Plan {
            ops,
            body,
            write_concern,
            ordered,
            verbose,
            raw_data: options.raw_data,
        })
    }

    fn acknowledged(&self) -> bool {
        self.write_concern.is_acknowledged()
    }
}

/// How much one `bulkWrite` command may carry, from the server's hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// `maxWriteBatchSize`.
    max_ops: usize,
    /// `maxMessageSizeBytes`, less the overhead allowance and the command body: the
    /// room for `ops` and `nsInfo` together.
    max_bytes: usize,
}

impl Limits {
    fn new(hello: &HelloReply, body_len: usize) -> Limits {
        Limits {
            max_ops: hello.write_batch_limit(),
            max_bytes: hello
                .message_size_limit()
                .saturating_sub(MESSAGE_OVERHEAD_BYTES + body_len),
        }
    }
}

/// The writes and namespaces of one command, as sent.
#[derive(Debug, Clone)]
struct BatchPlan {
    ops: Vec<RawDocumentBuf>,
    ns_info: Vec<RawDocumentBuf>,
    /// Whether a write may change many documents: the batch is not retryable.
    multi: bool,
}

/// The next command's batch: as many of `ops` as `limits` allow, and the namespaces
/// they use, each once (Bulk Write spec, "Command Batching"). Refused when not even
/// the first write fits.
fn next_batch(ops: &[PreparedOp], limits: Limits) -> Result<BatchPlan> {
    let mut batch = BatchPlan {
        ops: Vec::new(),
        ns_info: Vec::new(),
        multi: false,
    };
    let mut indexes: HashMap<&str, i32> = HashMap::new();
    let mut bytes = 0;
    for op in ops {
        if batch.ops.len() == limits.max_ops {
            break;
        }
        let index = indexes.get(op.namespace.as_str()).copied();
        let ns_info = match index {
            Some(_) => None,
            None => Some(
                RawDocumentBuf::try_from(&doc! { "ns": op.namespace.as_str() })
                    .map_err(Error::serialization)?,
            ),
        };
        let added = op.statement.document.as_bytes().len()
            + ns_info.as_ref().map_or(0, |ns| ns.as_bytes().len());
        if bytes + added > limits.max_bytes {
            if batch.ops.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "a write on {} of {added} bytes (with its namespace) does not fit in \
                     a bulkWrite command, which has room for {} bytes",
                    op.namespace, limits.max_bytes
                )));
            }
            break;
        }
        let index = match (index, ns_info) {
            (Some(index), _) => index,
            (None, ns_info) => {
                let index = i32::try_from(batch.ns_info.len())
                    .map_err(|_| Error::invalid_argument("too many namespaces"))?;
                batch.ns_info.extend(ns_info);
                indexes.insert(op.namespace.as_str(), index);
                index
            }
        };
        batch.ops.push(op.with_namespace_index(index)?);
        batch.multi |= op.statement.multi;
        bytes += added;
    }
    Ok(batch)
}

/// One `bulkWrite` command: the next batch of a [`Plan`] from `offset`.
struct BulkWriteBatch<'a> {
    plan: &'a Plan,
    offset: usize,
    /// Fixed at the first build, so that a retry resends the same batch.
    built: Option<BatchPlan>,
    /// The reply of an attempt whose retryable write concern error was turned into
    /// an error for the executor to retry: what the batch did, should the retry not
    /// happen or fail the same way.
    retried_reply: Option<BatchReply>,
}

impl<'a> BulkWriteBatch<'a> {
    fn new(plan: &'a Plan, offset: usize) -> BulkWriteBatch<'a> {
        BulkWriteBatch {
            plan,
            offset,
            built: None,
            retried_reply: None,
        }
    }

    /// How many writes the batch carried (0 before it is built).
    fn len(&self) -> usize {
        self.built.as_ref().map_or(0, |built| built.ops.len())
    }
}

/// The counts of a `bulkWrite` reply (Bulk Write spec, "Handling the `bulkWrite`
/// Server Response").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Summary {
    n_errors: u64,
    n_inserted: u64,
    n_upserted: u64,
    n_matched: u64,
    n_modified: u64,
    n_deleted: u64,
}

impl Summary {
    fn of(reply: &Document) -> Summary {
        let count = |key| {
            reply
                .get(key)
                .and_then(as_i64)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        };
        Summary {
            n_errors: count("nErrors"),
            n_inserted: count("nInserted"),
            n_upserted: count("nUpserted"),
            n_matched: count("nMatched"),
            n_modified: count("nModified"),
            n_deleted: count("nDeleted"),
        }
    }
}

/// What one command returned.
struct BatchReply {
    summary: Summary,
    write_concern_error: Option<WriteConcernError>,
    /// The results cursor (none for an unacknowledged write).
    cursor: Option<(Cursor<Document>, CursorSpec)>,
    /// The server that sent it.
    address: String,
}

impl Operation for BulkWriteBatch<'_> {
    type Output = BatchReply;

    fn name(&self) -> &str {
        "bulkWrite"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "bulkWrite",
            database: "admin",
            collection: None,
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let mut body = self.plan.body.clone();
        insert_present(&mut body, [hello.raw_data_field(self.plan.raw_data)]);
        let built = match &self.built {
            Some(built) => built,
            None => {
                let body_len = RawDocumentBuf::try_from(&body)
                    .map_err(Error::serialization)?
                    .as_bytes()
                    .len();
                let limits = Limits::new(hello, body_len);
                let ops = self.plan.ops.get(self.offset..).unwrap_or_default();
                self.built.insert(next_batch(ops, limits)?)
            }
        };
        let ops = self.plan.ops.get(self.offset..).unwrap_or_default();
        for (index, op) in ops.iter().take(built.ops.len()).enumerate() {
            op.statement.check_size(self.offset + index, hello)?;
        }
        // Bulk Write spec, "Building a `bulkWrite` Command": on admin, `ops` and
        // `nsInfo` as document sequences.
        Ok(Command {
            database: "admin".to_string(),
            body,
            sequences: vec![
                DocumentSequence::new("ops", built.ops.clone()),
                DocumentSequence::new("nsInfo", built.ns_info.clone()),
            ],
        })
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<BatchReply> {
        if !self.plan.acknowledged() {
            return Ok(BatchReply {
                summary: Summary::default(),
                write_concern_error: None,
                cursor: None,
                address: context.server.address.to_string(),
            });
        }
        // Its writeConcernError and errorLabels, read like a write command's.
        let (reply, first) = (
            crate::connection::reply_document(&reply)?,
            Batch::from_reply(reply, &context.server.address)?,
        );
        let parsed = WriteReply::parse(&reply, 0);
        let mut spec = CursorSpec::new(&context, "admin", "$cmd.bulkWrite", None);
        // The bulk write kills its results cursor itself when reading it fails
        // (`read_results`).
        spec.kills_on_error = false;
        if let Some((database, collection)) = &first.namespace {
            spec.database.clone_from(database);
            spec.collection.clone_from(collection);
        }
        spec.id = first.id;
        let batch_reply = BatchReply {
            summary: Summary::of(&reply),
            write_concern_error: parsed.write_concern_error.clone(),
            cursor: Some((Cursor::new(spec.clone(), first), spec)),
            address: context.server.address.to_string(),
        };
        // A write concern error the server labels retryable is an error, for the
        // executor to retry the batch when it can (Retryable Writes spec).
        if parsed
            .labels
            .iter()
            .any(|label| label == RETRYABLE_WRITE_ERROR)
        {
            if let Some(error) = parsed.single_write_error() {
                self.retried_reply = Some(batch_reply);
                return Err(error);
            }
        }
        Ok(batch_reply)
    }

    fn retryability(&self) -> Retryability {
        // Retryable Writes spec, "Unsupported Write Operations": a batch with a
        // multi-document write is not retryable. Before the batch is built, it may
        // be; the executor asks again after building.
        match &self.built {
            Some(built) if built.multi => Retryability::None,
            _ => Retryability::Write,
        }
    }

    /// A causally consistent session sends `afterClusterTime` with writes too
    /// (Causal Consistency spec, "Causally consistent read and write commands").
    fn supports_read_concern(&self) -> bool {
        true
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        Some(&self.plan.write_concern)
    }
}

/// What a bulk write has learnt, batch after batch: the result, the errors, and
/// whether any write is known to have succeeded (Bulk Write spec, "Handling the
/// `bulkWrite` Server Response", "Handling Errors").
#[derive(Debug)]
struct Outcome {
    result: BulkWriteResult,
    write_errors: BTreeMap<usize, WriteError>,
    write_concern_errors: Vec<WriteConcernError>,
    succeeded: bool,
}

impl Outcome {
    fn new(verbose: bool, acknowledged: bool) -> Outcome {
        Outcome {
            result: BulkWriteResult {
                acknowledged,
                verbose_results: verbose.then(VerboseResults::default),
                ..BulkWriteResult::default()
            },
            write_errors: BTreeMap::new(),
            write_concern_errors: Vec::new(),
            succeeded: false,
        }
    }

    /// Adds a command's counts and write concern error; counts that add up past
    /// `u64::MAX` are an error of the server ([`add_count`]).
    fn add_reply(&mut self, reply: &BatchReply) -> Result<()> {
        let result = &mut self.result;
        let (summary, address) = (&reply.summary, reply.address.as_str());
        add_count(&mut result.inserted_count, summary.n_inserted, address)?;
        add_count(&mut result.upserted_count, summary.n_upserted, address)?;
        add_count(&mut result.matched_count, summary.n_matched, address)?;
        add_count(&mut result.modified_count, summary.n_modified, address)?;
        add_count(&mut result.deleted_count, summary.n_deleted, address)?;
        self.write_concern_errors
            .extend(reply.write_concern_error.clone());
        Ok(())
    }

    /// Reads the results cursor of the batch of `ops[offset..offset + len]` to its
    /// end (Bulk Write spec: "Drivers MUST attempt to consume the contents of the
    /// cursor"). A failure is a top-level error; the server cursor is killed first.
    async fn read_results(
        &mut self,
        cursor: (Cursor<Document>, CursorSpec),
        ops: &[PreparedOp],
        offset: usize,
        len: usize,
    ) -> Result<()> {
        let (mut cursor, spec) = cursor;
        loop {
            let open = cursor.id() != 0;
            let entry = match cursor.try_next().await {
                Ok(Some(entry)) => entry,
                Ok(None) => return Ok(()),
                Err(error) => {
                    // A failed getMore leaves the server cursor open ("Top-Level
                    // Errors": drivers MUST send killCursors). The kill's reply is
                    // awaited; its failure adds nothing to the error that stopped
                    // the bulk write.
                    if open {
                        // A pinned cursor keeps its server cursor until it is closed
                        // (`Cursor::close` kills it on its connection).
                        let _ = match spec.pinned {
                            Some(_) => cursor.close().await,
                            None => spec.kill().await,
                        };
                    }
                    return Err(error);
                }
            };
            // An unreadable entry drops the cursor, which kills it.
            self.add_result(&entry, ops, offset, len)
                .map_err(|message| {
                    Error::invalid_response(
                        spec.server.address.to_string(),
                        WireError::MalformedDocument(message),
                    )
                })?;
        }
    }

    /// Records one entry of the results cursor: a write's result, or its error.
    fn add_result(
        &mut self,
        entry: &Document,
        ops: &[PreparedOp],
        offset: usize,
        len: usize,
    ) -> std::result::Result<(), String> {
        let number = |key: &str| entry.get(key).and_then(as_i64);
        let index = number("idx")
            .and_then(|idx| usize::try_from(idx).ok())
            .filter(|idx| *idx < len)
            .map(|idx| offset + idx);
        let Some((index, op)) = index.and_then(|index| Some((index, ops.get(index)?))) else {
            return Err(format!(
                "a result that names no write of the batch: {entry}"
            ));
        };
        let ok = matches!(entry.get("ok"), Some(Bson::Boolean(true))) || number("ok") == Some(1);
        if !ok {
            // Read like a write command's writeErrors entry; the index is the
            // model's.
            let parsed = WriteReply::parse(&doc! { "writeErrors": [entry.clone()] }, index);
            if let Some(error) = parsed.write_errors.into_iter().next() {
                self.write_errors.insert(index, error.into());
            }
            return Ok(());
        }
        // A result seen is a write known to have succeeded, whatever the counts say.
        self.succeeded = true;
        let result = &mut self.result;
        let Some(verbose) = &mut result.verbose_results else {
            return Ok(());
        };
        let n = number("n").and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
        match op.statement.kind {
            // Only a confirmed insert reports its _id ("Handling Insert Results").
            WriteKind::Insert if n == 1 => {
                if let Some(id) = &op.inserted_id {
                    result.inserted_ids.insert(index, id.clone());
                    let insert = InsertOneResult {
                        inserted_id: id.clone(),
                    };
                    verbose.insert_results.insert(index, insert);
                }
            }
            WriteKind::Insert => {}
            WriteKind::Update => {
                let update = UpdateResult {
                    matched_count: n,
                    modified_count: number("nModified")
                        .and_then(|n| u64::try_from(n).ok())
                        .unwrap_or(0),
                    upserted_id: entry
                        .get_document("upserted")
                        .ok()
                        .and_then(|upserted| upserted.get("_id").cloned()),
                };
                if let Some(id) = &update.upserted_id {
                    result.upserted_ids.insert(index, id.clone());
                }
                verbose.update_results.insert(index, update);
            }
            WriteKind::Delete => {
                let result = DeleteResult { deleted_count: n };
                verbose.delete_results.insert(index, result);
            }
        }
        Ok(())
    }

    /// Whether a write of the batch of `ops[offset..offset + len]` succeeded, from
    /// its counts and the errors read (Bulk Write spec: ordered, "nErrors is 0 or the
    /// idx of the write error is greater than 0"; unordered, "nErrors is less than
    /// the number of operations").
    fn judge_batch(&mut self, summary: &Summary, offset: usize, len: usize, ordered: bool) {
        let succeeded = match ordered {
            true => {
                summary.n_errors == 0
                    || self
                        .write_errors
                        .range(offset..offset + len)
                        .next()
                        .is_some_and(|(index, _)| *index > offset)
            }
            false => summary.n_errors < u64::try_from(len).unwrap_or(u64::MAX),
        };
        self.succeeded |= succeeded && len > 0;
    }

    /// The error of a bulk write that `error` stopped: as it is when nothing was
    /// observed yet, else a [`BulkWriteError`] with it as the top-level error
    /// ("Top-Level Errors").
    fn stopped_by(self, error: Error) -> Error {
        if self.write_errors.is_empty() && self.write_concern_errors.is_empty() && !self.succeeded {
            return error;
        }
        let labels = error.labels().clone();
        let failure = BulkWriteError {
            error: Some(Box::new(error)),
            write_concern_errors: self.write_concern_errors,
            write_errors: self.write_errors.into_iter().collect(),
            partial_result: self
                .succeeded
                .then(|| PartialBulkWriteResult::of(self.result)),
        };
        Error::new(ErrorKind::BulkWrite(failure)).with_labels(labels.iter().map(String::as_str))
    }

    /// The result, or the error that reports the failed writes and unsatisfied write
    /// concerns ("Write Concern Errors", "Individual Write Errors").
    fn finish(self) -> Result<BulkWriteResult> {
        if self.write_errors.is_empty() && self.write_concern_errors.is_empty() {
            return Ok(self.result);
        }
        let failure = BulkWriteError {
            error: None,
            write_concern_errors: self.write_concern_errors,
            write_errors: self.write_errors.into_iter().collect(),
            partial_result: self
                .succeeded
                .then(|| PartialBulkWriteResult::of(self.result)),
        };
        Err(Error::new(ErrorKind::BulkWrite(failure)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concern::Acknowledgment;
    use crate::crud::bulk_write::{
        ClientBulkWriteOptions, DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel,
        UpdateManyModel, UpdateOneModel,
    };

    /// `model` on `namespace` ("db.coll").
    fn on(namespace: &str, model: impl Into<WriteModel>) -> WriteModel {
        model.into().with_namespace(namespace.parse().unwrap())
    }

    fn insert(namespace: &str, document: Document) -> PreparedOp {
        PreparedOp::new(0, on(namespace, InsertOneModel::new(document))).unwrap()
    }

    fn client_error(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(error) if matches!(&*error.kind, ErrorKind::InvalidArgument { .. }) => {
                error.to_string()
            }
            other => panic!("expected an invalid argument error, got {other:?}"),
        }
    }

    fn entry(op: &PreparedOp) -> Document {
        Document::try_from(op.statement.document.as_ref()).unwrap()
    }

    #[test]
    fn models_become_ops_entries_with_only_the_options_given() {
        let op = insert("db.coll", doc! { "a": 1 });
        let document = entry(&op).get_document("document").unwrap().clone();
        // CRUD prose test 16: a generated _id is the document's first field.
        assert_eq!(document.keys().next().unwrap(), "_id");
        assert_eq!(op.inserted_id.as_ref(), document.get("_id"));
        assert_eq!(entry(&op).keys().next().unwrap(), "insert");
        // An _id given, even null, is kept.
        let op = insert("db.coll", doc! { "a": 1, "_id": Bson::Null });
        assert_eq!(op.inserted_id, Some(Bson::Null));

        let mut update = UpdateOneModel::new(doc! { "x": 1 }, doc! { "$set": { "y": 2 } });
        update.upsert = Some(false);
        update.sort = Some(doc! { "_id": -1 });
        let op = PreparedOp::new(0, on("db.coll", update)).unwrap();
        assert_eq!(
            entry(&op),
            doc! {
                "update": 0, "filter": { "x": 1 }, "updateMods": { "$set": { "y": 2 } },
                "multi": false, "upsert": false, "sort": { "_id": -1 },
            }
        );
        assert!(!op.statement.multi);

        let pipeline = vec![doc! { "$set": { "y": 2 } }];
        let op =
            PreparedOp::new(0, on("db.coll", UpdateManyModel::new(doc! {}, pipeline))).unwrap();
        assert_eq!(entry(&op).get_array("updateMods").unwrap().len(), 1);
        assert_eq!(entry(&op).get_bool("multi").ok(), Some(true));
        assert!(op.statement.multi);

        let mut delete = DeleteManyModel::new(doc! { "x": 1 });
        delete.hint = Some(Bson::String("x_1".into()));
        let op = PreparedOp::new(0, on("db.coll", delete)).unwrap();
        assert_eq!(
            entry(&op),
            doc! { "delete": 0, "filter": { "x": 1 }, "multi": true, "hint": "x_1" }
        );
        let op = PreparedOp::new(0, on("db.coll", DeleteOneModel::new(doc! {}))).unwrap();
        assert_eq!(
            entry(&op),
            doc! { "delete": 0, "filter": {}, "multi": false }
        );
    }

    #[test]
    fn updates_need_operators_and_replacements_refuse_them() {
        let update = |update: Document| {
            PreparedOp::new(0, on("db.coll", UpdateOneModel::new(doc! {}, update)))
        };
        assert!(client_error(update(doc! {})).contains("cannot be empty"));
        assert!(client_error(update(doc! { "x": 1 })).contains("update operators"));
        let many = on("db.coll", UpdateManyModel::new(doc! {}, doc! { "x": 1 }));
        assert!(client_error(PreparedOp::new(0, many)).contains("update operators"));
        let replace = on(
            "db.coll",
            ReplaceOneModel::new(doc! {}, doc! { "$set": { "x": 1 } }),
        );
        assert!(client_error(PreparedOp::new(0, replace)).contains("replacement"));
        // An empty replacement is allowed.
        let replace = on("db.coll", ReplaceOneModel::new(doc! {}, doc! {}));
        assert!(PreparedOp::new(0, replace).is_ok());
    }

    #[test]
    fn namespaces_must_name_a_database_and_a_collection() {
        // Both names empty is the namespace left unset, below.
        for (db, coll) in [("", "coll"), ("db", "")] {
            let model = DeleteOneModel::builder()
                .namespace(crate::Namespace::new(db, coll))
                .filter(doc! {})
                .build();
            assert!(client_error(PreparedOp::new(0, model.into())).contains("database.collection"));
        }
        // A model without a namespace is refused, by its index.
        let model = DeleteOneModel::builder().filter(doc! {}).build();
        assert!(client_error(PreparedOp::new(3, model.into())).contains("index 3 "));
        let model = DeleteOneModel::builder()
            .namespace(crate::Namespace::new("", ""))
            .filter(doc! {})
            .build();
        assert!(client_error(PreparedOp::new(3, model.into())).contains("no namespace"));
        assert!(PreparedOp::new(0, on("db.a.b", DeleteOneModel::new(doc! {}))).is_ok());
    }

    #[test]
    fn the_namespace_index_is_written_in_place() {
        let ops = [
            insert("db.coll", doc! { "_id": 1 }),
            PreparedOp::new(
                0,
                on(
                    "db.c",
                    UpdateOneModel::new(doc! {}, doc! { "$inc": { "x": 1 } }),
                ),
            )
            .unwrap(),
            PreparedOp::new(0, on("db.c", DeleteOneModel::new(doc! {}))).unwrap(),
        ];
        for op in &ops {
            let patched = op.with_namespace_index(7).unwrap();
            assert_eq!(
                patched.as_bytes().len(),
                op.statement.document.as_bytes().len()
            );
            let patched = Document::try_from(patched.as_ref()).unwrap();
            assert_eq!(patched.get_i32(op.statement.kind.command()).ok(), Some(7));
            let mut expected = entry(op);
            expected.insert(op.statement.kind.command(), 7);
            assert_eq!(patched, expected);
        }
    }

    fn limits(max_ops: usize, max_bytes: usize) -> Limits {
        Limits { max_ops, max_bytes }
    }

    fn namespaces(batch: &BatchPlan) -> Vec<String> {
        batch
            .ns_info
            .iter()
            .map(|ns| ns.get_str("ns").unwrap().to_string())
            .collect()
    }

    fn ns_indexes(batch: &BatchPlan) -> Vec<i32> {
        batch
            .ops
            .iter()
            .map(|op| {
                let (_, value) = op.iter().next().unwrap().unwrap();
                value.as_i32().unwrap()
            })
            .collect()
    }

    #[test]
    fn batches_hold_at_most_max_write_batch_size_writes() {
        let ops: Vec<_> = (0..5)
            .map(|i| insert("db.coll", doc! { "_id": i }))
            .collect();
        let batch = next_batch(&ops, limits(2, usize::MAX)).unwrap();
        assert_eq!(batch.ops.len(), 2);
        assert_eq!(namespaces(&batch), ["db.coll"]);
        let batch = next_batch(&ops[4..], limits(2, usize::MAX)).unwrap();
        assert_eq!(batch.ops.len(), 1);
    }

    #[test]
    fn namespaces_are_listed_once_in_order_of_first_use() {
        let ops = [
            insert("db0.coll0", doc! { "_id": 1 }),
            insert("db0.coll1", doc! { "_id": 2 }),
            insert("db0.coll0", doc! { "_id": 3 }),
            insert("db1.coll2", doc! { "_id": 4 }),
            PreparedOp::new(0, on("db0.coll1", DeleteManyModel::new(doc! {}))).unwrap(),
        ];
        let batch = next_batch(&ops, limits(100, usize::MAX)).unwrap();
        assert_eq!(namespaces(&batch), ["db0.coll0", "db0.coll1", "db1.coll2"]);
        assert_eq!(ns_indexes(&batch), [0, 1, 0, 2, 1]);
        assert!(batch.multi);
        assert!(
            !next_batch(&ops[..4], limits(100, usize::MAX))
                .unwrap()
                .multi
        );
    }

    #[test]
    fn batches_split_where_the_bytes_run_out_counting_new_namespaces() {
        let op = insert("db.coll", doc! { "_id": 1, "a": "b" });
        let op_len = op.statement.document.as_bytes().len();
        // `{ ns: "db.coll" }`: 21 bytes (CRUD prose test 11).
        let ns_len = 21;
        let ops = vec![op.clone(), op.clone(), op];
        let batch = next_batch(&ops, limits(100, ns_len + 2 * op_len)).unwrap();
        assert_eq!(batch.ops.len(), 2);
        let batch = next_batch(&ops, limits(100, ns_len + 3 * op_len)).unwrap();
        assert_eq!(batch.ops.len(), 3);

        // A write that fits, but not with its new namespace, goes in the next batch
        // (CRUD prose test 11, case 2).
        let other = insert("db.other", doc! { "_id": 1, "a": "b" });
        let ops = vec![ops[0].clone(), other];
        let batch = next_batch(&ops, limits(100, ns_len + 2 * op_len + 1)).unwrap();
        assert_eq!(batch.ops.len(), 1);
        assert_eq!(namespaces(&batch), ["db.coll"]);
        let batch = next_batch(&ops, limits(100, 2 * ns_len + 2 * op_len + 1)).unwrap();
        assert_eq!(namespaces(&batch), ["db.coll", "db.other"]);
    }

    #[test]
    fn a_write_that_fits_no_batch_is_a_client_error() {
        // CRUD prose test 12: the document, or the namespace, too large.
        let ops = [insert("db.coll", doc! { "a": "b".repeat(100) })];
        assert!(client_error(next_batch(&ops, limits(100, 100))).contains("does not fit"));
        let ops = [insert(&format!("db.{}", "c".repeat(100)), doc! {})];
        assert!(client_error(next_batch(&ops, limits(100, 100))).contains("does not fit"));
    }

    #[test]
    fn the_limits_come_from_the_hello_less_the_overhead_and_the_body() {
        let hello = HelloReply {
            max_write_batch_size: 10,
            max_message_size_bytes: 5000,
            ..HelloReply::default()
        };
        assert_eq!(Limits::new(&hello, 43), limits(10, 5000 - 1000 - 43));
        let unknown = HelloReply::default();
        assert_eq!(
            Limits::new(&unknown, 43),
            limits(100_000, 48_000_000 - 1043)
        );
        // A hostile hello's limits are capped at the protocol's.
        let hostile = HelloReply {
            max_write_batch_size: i32::MAX,
            max_message_size_bytes: i32::MAX,
            ..HelloReply::default()
        };
        assert_eq!(
            Limits::new(&hostile, 43),
            limits(100_000, 48_000_000 - 1043)
        );
    }

    fn plan(options: ClientBulkWriteOptions, verbose: bool, concern: WriteConcern) -> Result<Plan> {
        let models = vec![on("db.coll", InsertOneModel::new(doc! {}))];
        Plan::new(models, &options, verbose, concern)
    }

    #[test]
    fn the_command_carries_the_options_given_and_the_spec_defaults() {
        let body = plan(
            ClientBulkWriteOptions::default(),
            false,
            WriteConcern::default(),
        )
        .unwrap()
        .body;
        // CRUD prose test 11: this body is 43 bytes.
        assert_eq!(
            body,
            doc! { "bulkWrite": 1, "errorsOnly": true, "ordered": true }
        );
        assert_eq!(
            RawDocumentBuf::try_from(&body).unwrap().as_bytes().len(),
            43
        );
        let options = ClientBulkWriteOptions {
            ordered: Some(false),
            bypass_document_validation: Some(false),
            comment: Some(Bson::String("c".into())),
            let_vars: Some(doc! { "id": 1 }),
            ..ClientBulkWriteOptions::default()
        };
        let body = plan(options, true, WriteConcern::majority()).unwrap().body;
        assert_eq!(
            body,
            doc! {
                "bulkWrite": 1, "errorsOnly": false, "ordered": false,
                "bypassDocumentValidation": false, "comment": "c", "let": { "id": 1 },
                "writeConcern": { "w": "majority" },
            }
        );
    }

    /// Bulk Write spec, "BulkWriteOptions": `rawData` goes in the command, to MongoDB
    /// 8.2+ only.
    #[test]
    fn raw_data_is_sent_to_servers_that_know_it() {
        let options = ClientBulkWriteOptions {
            raw_data: Some(true),
            ..ClientBulkWriteOptions::default()
        };
        let plan = plan(options, false, WriteConcern::default()).unwrap();
        let built = |max_wire_version| {
            let hello = HelloReply {
                max_wire_version,
                ..HelloReply::default()
            };
            BulkWriteBatch::new(&plan, 0).build(&hello).unwrap().body
        };
        assert_eq!(built(27).get("rawData"), Some(&Bson::Boolean(true)));
        assert_eq!(built(25).get("rawData"), None);
    }

    #[test]
    fn the_client_side_errors_of_the_spec() {
        let empty = Plan::new(
            Vec::new(),
            &ClientBulkWriteOptions::default(),
            false,
            WriteConcern::default(),
        );
        assert!(client_error(empty).contains("at least one"));
        let unacknowledged = WriteConcern::nodes(0);
        let verbose = ClientBulkWriteOptions {
            ordered: Some(false),
            ..Default::default()
        };
        assert!(client_error(plan(verbose, true, unacknowledged.clone()))
            .contains("Cannot request unacknowledged write concern and verbose results"));
        assert!(client_error(plan(
            ClientBulkWriteOptions::default(),
            false,
            unacknowledged.clone()
        ))
        .contains("Cannot request unacknowledged write concern and ordered writes"));
        let unordered = ClientBulkWriteOptions {
            ordered: Some(false),
            ..Default::default()
        };
        let plan = plan(unordered, false, unacknowledged).unwrap();
        assert!(!plan.acknowledged());
        assert_eq!(
            plan.body.get_document("writeConcern").unwrap(),
            &doc! { "w": 0 }
        );
        // A write concern that is not valid is refused too.
        let invalid = WriteConcern {
            w: Some(Acknowledgment::Nodes(0)),
            journal: Some(true),
            ..WriteConcern::default()
        };
        assert!(invalid.validate().is_err());
        assert!(Plan::new(
            vec![on("db.coll", InsertOneModel::new(doc! {}))],
            &ClientBulkWriteOptions::default(),
            false,
            invalid
        )
        .is_err());
    }

    /// The prepared ops of an insert, an update and a delete on "db.coll".
    fn mixed() -> Vec<PreparedOp> {
        vec![
            insert("db.coll", doc! { "_id": 8 }),
            PreparedOp::new(
                0,
                on(
                    "db.coll",
                    UpdateOneModel::new(doc! {}, doc! { "$inc": { "x": 1 } }),
                ),
            )
            .unwrap(),
            PreparedOp::new(0, on("db.coll", DeleteManyModel::new(doc! {}))).unwrap(),
        ]
    }

    fn summary(n_errors: u64) -> Summary {
        Summary {
            n_errors,
            ..Summary::default()
        }
    }

    #[test]
    fn verbose_results_are_recorded_by_the_model_index_and_kind() {
        let ops = mixed();
        let mut outcome = Outcome::new(true, true);
        // The second batch, from index 1: idx counts from its first write.
        outcome
            .add_result(
                &doc! { "ok": 1.0, "idx": 0, "n": 1, "nModified": 0, "upserted": { "_id": 4 } },
                &ops,
                1,
                2,
            )
            .unwrap();
        outcome
            .add_result(&doc! { "ok": 1, "idx": 1, "n": 2 }, &ops, 1, 2)
            .unwrap();
        outcome
            .add_result(&doc! { "ok": 1.0, "idx": 0, "n": 1 }, &ops, 0, 1)
            .unwrap();
        let verbose = outcome.result.verbose_results.clone().unwrap();
        assert_eq!(verbose.insert_results[&0].inserted_id, Bson::Int32(8));
        assert_eq!(
            verbose.update_results[&1],
            UpdateResult {
                matched_count: 1,
                modified_count: 0,
                upserted_id: Some(Bson::Int32(4)),
            }
        );
        assert_eq!(
            verbose.delete_results[&2],
            DeleteResult { deleted_count: 2 }
        );
        assert!(outcome.succeeded);
        // An insert the server does not confirm reports no _id.
        let mut outcome = Outcome::new(true, true);
        outcome
            .add_result(&doc! { "ok": 1, "idx": 0, "n": 0 }, &ops, 0, 1)
            .unwrap();
        assert!(outcome
            .result
            .verbose_results
            .unwrap()
            .insert_results
            .is_empty());
        // Summary results record nothing but errors.
        let mut outcome = Outcome::new(false, true);
        outcome
            .add_result(&doc! { "ok": 1, "idx": 0, "n": 1 }, &ops, 0, 1)
            .unwrap();
        assert_eq!(outcome.result.verbose_results, None);
    }

    #[test]
    fn results_that_name_no_write_of_the_batch_are_refused() {
        let ops = mixed();
        let mut outcome = Outcome::new(true, true);
        for entry in [
            doc! { "ok": 1, "idx": 2, "n": 1 },
            doc! { "ok": 1, "idx": -1, "n": 1 },
            doc! { "ok": 1, "n": 1 },
        ] {
            let error = outcome.add_result(&entry, &ops, 1, 2).unwrap_err();
            assert!(error.contains("names no write"), "{error}");
        }
    }

    #[test]
    fn write_errors_make_the_error_and_successes_the_partial_result() {
        let ops = mixed();
        // Ordered, the first write failed: no partial result.
        let mut outcome = Outcome::new(true, true);
        let failed = doc! { "ok": 0, "idx": 0, "code": 11000, "codeName": "DuplicateKey", "errmsg": "dup", "errInfo": { "x": 1 } };
        outcome.add_result(&failed, &ops, 0, 3).unwrap();
        assert!(!outcome.succeeded);
        outcome.judge_batch(&summary(1), 0, 3, true);
        let error = outcome.finish().unwrap_err();
        let ErrorKind::BulkWrite(failure) = &*error.kind else {
            panic!("{error:?}");
        };
        assert_eq!(failure.partial_result, None);
        assert_eq!(failure.error, None);
        let write_error = &failure.write_errors[&0];
        assert_eq!(
            (write_error.code, write_error.message.as_str()),
            (11000, "dup")
        );
        assert_eq!(write_error.code_name.as_deref(), Some("DuplicateKey"));
        assert_eq!(write_error.details, Some(doc! { "x": 1 }));
        assert_eq!(error.code(), None);

        // Ordered, the second failed: the first succeeded.
        let mut outcome = Outcome::new(false, true);
        outcome.result.deleted_count = 1;
        outcome
            .add_result(&doc! { "ok": 0, "idx": 1, "code": 2 }, &ops, 0, 3)
            .unwrap();
        outcome.judge_batch(&summary(1), 0, 3, true);
        let error = outcome.finish().unwrap_err();
        let ErrorKind::BulkWrite(failure) = &*error.kind else {
            panic!("{error:?}");
        };
        // Summary results asked for: a summary partial result.
        assert!(
            matches!(&failure.partial_result, Some(PartialBulkWriteResult::Summary(summary))
                if summary.deleted_count == 1),
            "{failure:?}"
        );

        // Unordered: a success unless every write failed.
        let mut outcome = Outcome::new(false, true);
        outcome.judge_batch(&summary(3), 0, 3, false);
        assert!(!outcome.succeeded);
        outcome.judge_batch(&summary(2), 0, 3, false);
        assert!(outcome.succeeded);
    }

    #[test]
    fn write_concern_errors_are_collected_and_reported_at_the_end() {
        let mut outcome = Outcome::new(false, true);
        let concern = super::super::write_concern_error(91, "Replication is being shut down");
        let reply = BatchReply {
            summary: Summary {
                n_inserted: 2,
                ..Summary::default()
            },
            write_concern_error: Some(concern.clone()),
            cursor: None,
            address: "db:27017".into(),
        };
        outcome.add_reply(&reply).unwrap();
        outcome.judge_batch(&reply.summary, 0, 2, true);
        outcome.add_reply(&reply).unwrap();
        outcome.judge_batch(&reply.summary, 2, 2, true);
        let error = outcome.finish().unwrap_err();
        let ErrorKind::BulkWrite(failure) = &*error.kind else {
            panic!("{error:?}");
        };
        assert_eq!(failure.write_concern_errors, [concern.clone(), concern]);
        assert!(
            matches!(&failure.partial_result, Some(PartialBulkWriteResult::Summary(summary))
                if summary.inserted_count == 4),
            "{failure:?}"
        );
        assert!(error.to_string().contains("Replication is being shut down"));
    }

    #[test]
    fn a_top_level_error_is_wrapped_only_once_something_was_observed() {
        let top = Error::from(crate::error::CommandError {
            code: 8,
            code_name: "UnknownError".into(),
            message: "failed".into(),
            error_labels: vec![RETRYABLE_WRITE_ERROR.into()],
            topology_version: None,
        });
        let outcome = Outcome::new(false, true);
        assert_eq!(outcome.stopped_by(top.clone()), top);

        let mut outcome = Outcome::new(true, true);
        outcome.result.inserted_count = 1;
        outcome.judge_batch(&summary(0), 0, 1, true);
        let error = outcome.stopped_by(top.clone());
        let ErrorKind::BulkWrite(failure) = &*error.kind else {
            panic!("{error:?}");
        };
        assert_eq!(failure.error.as_deref(), Some(&top));
        // Verbose results asked for: a verbose partial result.
        assert!(
            matches!(&failure.partial_result, Some(PartialBulkWriteResult::Verbose(verbose))
                if verbose.summary.inserted_count == 1),
            "{failure:?}"
        );
        // The top-level error's code and labels are the whole error's.
        assert_eq!(error.code(), Some(8));
        assert!(error.contains_label(RETRYABLE_WRITE_ERROR));
        assert!(error.to_string().contains("failed"), "{error}");
    }

    #[test]
    fn counts_adding_up_past_u64_max_are_a_misbehaving_server() {
        // issue 41: the sums panicked (or wrapped, in a release build).
        let mut outcome = Outcome::new(false, true);
        let reply = BatchReply {
            summary: Summary::of(&doc! { "nErrors": 0, "nDeleted": i64::MAX }),
            write_concern_error: None,
            cursor: None,
            address: "db:27017".into(),
        };
        outcome.add_reply(&reply).unwrap();
        outcome.add_reply(&reply).unwrap();
        let error = outcome.add_reply(&reply).unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::MisbehavingServer { address, .. }
                if address == "db:27017"),
            "{error}"
        );
    }

    #[test]
    fn a_successful_outcome_is_the_result() {
        let mut outcome = Outcome::new(false, true);
        outcome.add_reply(&BatchReply {
            summary: Summary::of(&doc! { "nErrors": 0, "nInserted": 1, "nUpserted": 2, "nMatched": 3, "nModified": 4, "nDeleted": 5 }),
            write_concern_error: None,
            cursor: None,
            address: "db:27017".into(),
        })
        .unwrap();
        let result = outcome.finish().unwrap();
        assert_eq!(
            result,
            BulkWriteResult {
                acknowledged: true,
                inserted_count: 1,
                upserted_count: 2,
                matched_count: 3,
                modified_count: 4,
                deleted_count: 5,
                ..BulkWriteResult::default()
            }
        );
        let unacknowledged = Outcome::new(false, false).finish().unwrap();
        assert!(!unacknowledged.acknowledged);
    }

    #[test]
    fn options_deserialize_from_the_spec_names() {
        let options: ClientBulkWriteOptions = bson::deserialize_from_document(doc! {
            "ordered": false, "bypassDocumentValidation": true, "comment": "c",
            "let": { "a": 1 }, "writeConcern": { "w": 0 },
        })
        .unwrap();
        assert_eq!(options.ordered, Some(false));
        assert_eq!(options.let_vars, Some(doc! { "a": 1 }));
        assert_eq!(options.write_concern, Some(WriteConcern::nodes(0)));
    }
}
