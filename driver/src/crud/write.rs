//! The write commands behind the CRUD write operations: `insert`, `update` and
//! `delete` (statements sent in batches that fit the server's limits, for the single
//! writes, `insert_many` and `bulk_write` alike) and `findAndModify`.

use bson::oid::ObjectId;
use bson::raw::RawBsonRef;
use bson::{doc, Bson, Document, RawDocument, RawDocumentBuf};
use serde::Serialize;

use super::bulk_write::BulkWriteOptions;
use super::{Collation, FindAndModifyOptions, Namespace, ReturnDocument, WriteOptions};
use crate::bson_serializer::{serialize_noting_id, IdElement};
use crate::bson_util::{insert_present, millis};
use crate::concern::WriteConcern;
use crate::error::{Error, ErrorKind, IndexedWriteError, Result, WriteConcernError, WriteFailure};
use crate::handshake::HelloReply;
use crate::open_telemetry::{operation_name, Traced};
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::retry::Retryability;
use crate::wire::DocumentSequence;

/// What a write command's reply says (CRUD spec, "Write results").
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteReply {
    /// `n`: documents inserted, matched or deleted.
    pub n: u64,
    /// `nModified`.
    pub n_modified: u64,
    /// `upserted`: (index of the statement, `_id`).
    pub upserted: Vec<(usize, Bson)>,
    /// `writeErrors`, with indexes counted from the first statement of the operation.
    pub write_errors: Vec<IndexedWriteError>,
    /// The first entry of `writeErrors` as the server sent it: the fields the driver
    /// does not read (a duplicate key's `keyPattern` and `keyValue`) stay available.
    pub first_write_error: Option<Document>,
    /// `writeConcernError`.
    pub write_concern_error: Option<WriteConcernError>,
    /// The reply's `errorLabels`.
    pub labels: Vec<String>,
    /// The server that sent it (empty for a reply read elsewhere than from a write
    /// command): the errors of replies that make no sense name it.
    pub address: String,
}

impl WriteReply {
    /// Reads a write command's reply; statement indexes are shifted by `offset` (the
    /// batch's first statement in the whole operation).
    pub(crate) fn parse(reply: &Document, offset: usize) -> WriteReply {
        let int =
            |document: &Document, key: &str| document.get(key).and_then(crate::bson_util::as_i64);
        let count = |key: &str| {
            int(reply, key)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        };
        // Without an index, the first statement; one that is negative or beyond any
        // batch is usize::MAX, which no batch has (`of_write_command` refuses it): the
        // server's number is never added to unchecked.
        let index = |document: &Document| match int(document, "index") {
            None => offset,
            Some(index) => usize::try_from(index).map_or(usize::MAX, |i| offset.saturating_add(i)),
        };
        let documents = |key: &str| -> Vec<Document> {
            reply
                .get_array(key)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_document().cloned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let upserted = documents("upserted")
            .into_iter()
            .filter_map(|entry| Some((index(&entry), entry.get("_id")?.clone())))
            .collect();
        let write_error_entries = documents("writeErrors");
        let write_errors = write_error_entries
            .iter()
            .map(|entry| IndexedWriteError {
                index: index(entry),
                code: int(entry, "code")
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(0),
                code_name: entry.get_str("codeName").ok().map(str::to_string),
                message: entry.get_str("errmsg").unwrap_or_default().to_string(),
                details: entry.get_document("errInfo").ok().cloned(),
            })
            .collect();
        let write_concern_error =
            reply
                .get_document("writeConcernError")
                .ok()
                .map(|entry| WriteConcernError {
                    code: int(entry, "code")
                        .and_then(|c| i32::try_from(c).ok())
                        .unwrap_or(0),
                    code_name: entry.get_str("codeName").unwrap_or_default().to_string(),
                    message: entry.get_str("errmsg").unwrap_or_default().to_string(),
                    details: entry.get_document("errInfo").ok().cloned(),
                });
        let labels = reply
            .get_array("errorLabels")
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|l| l.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        WriteReply {
            n: count("n"),
            n_modified: count("nModified"),
            upserted,
            write_errors,
            first_write_error: write_error_entries.into_iter().next(),
            write_concern_error,
            labels,
            address: String::new(),
        }
    }

    /// The error of a single write (insert_one, update, delete...), if it failed:
    /// its write error (with the server's entry as its reply), else its write concern
    /// error, with the reply's labels.
    pub fn single_write_error(&self) -> Option<Error> {
        let (failure, entry) = match (self.write_errors.first(), &self.write_concern_error) {
            (Some(error), _) => (
                WriteFailure::WriteError(error.clone().into()),
                self.first_write_error.clone(),
            ),
            (None, Some(concern)) => (WriteFailure::WriteConcernError(concern.clone()), None),
            (None, None) => return None,
        };
        let error = Error::new(ErrorKind::Write(failure))
            .with_labels(self.labels.iter().map(String::as_str));
        Some(match entry {
            Some(entry) => error.with_server_reply(entry),
            None => error,
        })
    }

    /// The reply of an insert, update or delete command from the server at `address`,
    /// which sent it `statements` (indexes among the operation's); a write concern
    /// error the server says may be retried (4.4+ servers label it) is an error
    /// instead, so that the executor retries. A write error or upsert naming a
    /// statement the command did not carry is an [`ErrorKind::MisbehavingServer`]
    /// error.
    fn of_write_command(
        reply: &Document,
        statements: std::ops::Range<usize>,
        address: &str,
    ) -> Result<WriteReply> {
        let mut parsed = WriteReply::parse(reply, statements.start);
        parsed.address = address.to_owned();
        let indexes = (parsed.upserted.iter().map(|(index, _)| *index))
            .chain(parsed.write_errors.iter().map(|error| error.index));
        for index in indexes {
            if !statements.contains(&index) {
                let (first, sent) = (statements.start, statements.len());
                return Err(Error::misbehaving(
                    address,
                    format!(
                        "its reply to a command of {sent} writes (from write {first}) names \
                         a write outside them"
                    ),
                ));
            }
        }
        let retryable = parsed
            .labels
            .iter()
            .any(|label| label == crate::retry::RETRYABLE_WRITE_ERROR);
        if retryable && parsed.write_errors.is_empty() {
            // Without write errors, the single write error is the write concern error.
            if let Some(error) = parsed.single_write_error() {
                return Err(error);
            }
        }
        Ok(parsed)
    }

    /// The write concern error of a command other than insert, update and delete
    /// (`drop`, `createIndexes`...), which the server reports in a reply with `ok: 1`
    /// (Read/Write Concern spec, "Write Concern Error").
    pub fn check_write_concern(reply: &Document) -> Result<()> {
        match WriteReply::parse(reply, 0).single_write_error() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// Which write command a statement belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// `insert`: the statement is the document.
    Insert,
    /// `update`: the statement is `{ q, u, multi, upsert, ... }`.
    Update,
    /// `delete`: the statement is `{ q, limit, ... }`.
    Delete,
}

impl WriteKind {
    /// The command's name, and the first key of its `bulkWrite` entries.
    pub fn command(self) -> &'static str {
        match self {
            WriteKind::Insert => "insert",
            WriteKind::Update => "update",
            WriteKind::Delete => "delete",
        }
    }

    /// The document sequence that carries the statements.
    fn sequence(self) -> &'static str {
        match self {
            WriteKind::Insert => "documents",
            WriteKind::Update => "updates",
            WriteKind::Delete => "deletes",
        }
    }
}

/// The two commands a write can go in, which spell its statement each their own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling {
    /// A statement of an `insert`, `update` or `delete` command (CRUD spec): the
    /// document to insert, `{ q, u, multi, ... }` or `{ q, limit, ... }`.
    WriteCommand,
    /// An `ops` entry of a `bulkWrite` command (Bulk Write spec, "Operations"): first
    /// the kind, whose value is the namespace's index in `nsInfo` (an int32 0 until
    /// the entry is put in a batch), then `{ document }`, `{ filter, updateMods,
    /// multi, ... }` or `{ filter, multi, ... }`.
    BulkWrite,
}

impl Spelling {
    /// The first fields of an update or delete statement: the kind (`bulkWrite`) and
    /// the filter.
    fn head(self, kind: WriteKind, filter: Document) -> Document {
        match self {
            Spelling::WriteCommand => doc! { "q": filter },
            Spelling::BulkWrite => doc! { kind.command(): 0, "filter": filter },
        }
    }

    /// The name of the statement's filter field.
    fn filter_key(self) -> &'static str {
        match self {
            Spelling::WriteCommand => "q",
            Spelling::BulkWrite => "filter",
        }
    }
}

/// One write as sent: a statement of an `insert`, `update` or `delete` command, or an
/// `ops` entry of a `bulkWrite` command ([`Spelling`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    /// The command it goes in, or (`bulkWrite`) the kind of its entry.
    pub kind: WriteKind,
    /// The document to insert, or the update or delete statement.
    pub document: RawDocumentBuf,
    /// Whether it may change many documents (`multi: true`, `limit: 0`): a command
    /// with one is not a retryable write (Retryable Writes spec, "Unsupported Write
    /// Operations").
    pub multi: bool,
    /// The size in bytes of the largest document the application gave it: the
    /// document to insert, the filter, or the update or replacement
    /// ([`check_size`](Self::check_size)).
    pub largest_part: usize,
}

impl Statement {
    /// The statement inserting `document`.
    pub fn insert(document: RawDocumentBuf, spelling: Spelling) -> Statement {
        let largest_part = document.as_bytes().len();
        let document = match spelling {
            Spelling::WriteCommand => document,
            // Built raw: the document, perhaps large, is encoded once.
            Spelling::BulkWrite => {
                let mut entry = RawDocumentBuf::new();
                entry.append(bson::raw::cstr!("insert"), 0);
                entry.append(bson::raw::cstr!("document"), &document);
                entry
            }
        };
        Statement {
            kind: WriteKind::Insert,
            document,
            multi: false,
            largest_part,
        }
    }

    /// The statement `statement`, encoded; `parts` name its fields that hold the
    /// application's documents (the filter, the update).
    fn encoded(
        kind: WriteKind,
        statement: &Document,
        multi: bool,
        parts: &[&str],
    ) -> Result<Statement> {
        let document = RawDocumentBuf::try_from(statement).map_err(|error| {
            Error::serialization(format!("the statement cannot be encoded: {error}"))
        })?;
        let largest_part = parts
            .iter()
            .filter_map(|key| match document.get(key) {
                Ok(Some(RawBsonRef::Document(part))) => Some(part.as_bytes().len()),
                // An update pipeline.
                Ok(Some(RawBsonRef::Array(part))) => Some(part.as_bytes().len()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Ok(Statement {
            kind,
            document,
            multi,
            largest_part,
        })
    }

    /// Refuses the statement, before anything is sent, when a document the application
    /// gave it is larger than the server's `maxBsonObjectSize`: "Documents to be
    /// inserted, query documents for updates and deletes, and update expression
    /// documents must be <= this size" (Server Write Commands spec, "Request Size
    /// Limits"). Sent anyway, a document above `maxMessageSizeBytes` makes the server
    /// drop the connection, and a retry sends it again. `index` is the statement's
    /// among the operation's writes.
    pub fn check_size(&self, index: usize, hello: &HelloReply) -> Result<()> {
        let limit = hello.document_size_limit();
        if self.largest_part <= limit {
            return Ok(());
        }
        let what = match self.kind {
            WriteKind::Insert => "the document to insert",
            WriteKind::Update => "the filter or the update",
            WriteKind::Delete => "the filter",
        };
        Err(Error::invalid_argument(format!(
            "write {index}: {what} is {} bytes, more than the server's maxBsonObjectSize of \
             {limit} bytes",
            self.largest_part
        )))
    }
}

/// An update statement (`updates` of the `update` command, or an `update` entry of
/// `bulkWrite`): an update document or pipeline, or a replacement document, with the
/// options of one statement.
#[derive(Debug, Clone, Default)]
pub(crate) struct UpdateStatement {
    pub filter: Document,
    /// `u`: an update document, a pipeline (array) or a replacement.
    pub update: Bson,
    pub multi: bool,
    pub upsert: Option<bool>,
    /// The options as sent: the bulk write models hold them as BSON, as the official
    /// crate's do, and the single writes' typed options become the same.
    pub array_filters: Option<bson::Array>,
    pub collation: Option<Document>,
    pub hint: Option<Bson>,
    pub sort: Option<Document>,
}

impl UpdateStatement {
    /// An update of a single-write operation, its statement options taken from
    /// `options`.
    pub fn with_options(
        filter: Document,
        update: Bson,
        multi: bool,
        options: &WriteOptions,
    ) -> UpdateStatement {
        UpdateStatement {
            filter,
            update,
            multi,
            upsert: options.upsert,
            array_filters: options
                .array_filters
                .as_ref()
                .map(|filters| filters.iter().cloned().map(Bson::Document).collect()),
            collation: options.collation.as_ref().map(Collation::to_document),
            hint: options.hint.clone().map(Bson::from),
            sort: options.sort.clone(),
        }
    }

    /// The statement of an `update` command.
    pub fn statement(self) -> Result<Statement> {
        self.spelled(Spelling::WriteCommand)
    }

    /// The statement as sent in a command of `spelling`; options left unset are not
    /// sent (CRUD spec: "This option is sent only if the caller explicitly provides a
    /// value"). `bulkWrite` always has `multi`.
    pub fn spelled(self, spelling: Spelling) -> Result<Statement> {
        let mut statement = spelling.head(WriteKind::Update, self.filter);
        let (update, multi) = match spelling {
            Spelling::WriteCommand => ("u", self.multi.then_some(true)),
            Spelling::BulkWrite => ("updateMods", Some(self.multi)),
        };
        statement.insert(update, self.update);
        insert_present(
            &mut statement,
            [
                ("multi", multi.map(Bson::Boolean)),
                ("upsert", self.upsert.map(Bson::Boolean)),
                ("arrayFilters", self.array_filters.map(Bson::Array)),
                ("sort", self.sort.map(Bson::Document)),
                ("collation", self.collation.map(Bson::Document)),
                ("hint", self.hint),
            ],
        );
        Statement::encoded(
            WriteKind::Update,
            &statement,
            self.multi,
            &[spelling.filter_key(), update],
        )
    }
}

/// A delete statement (`deletes` of the `delete` command, or a `delete` entry of
/// `bulkWrite`).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteStatement {
    pub filter: Document,
    /// Every matching document (`limit: 0`) rather than the first (`limit: 1`).
    pub multi: bool,
    /// As sent, like [`UpdateStatement`]'s.
    pub collation: Option<Document>,
    pub hint: Option<Bson>,
}

impl DeleteStatement {
    /// The statement of a `delete` command.
    pub fn statement(self) -> Result<Statement> {
        self.spelled(Spelling::WriteCommand)
    }

    /// The statement as sent in a command of `spelling`.
    pub fn spelled(self, spelling: Spelling) -> Result<Statement> {
        let mut statement = spelling.head(WriteKind::Delete, self.filter);
        match spelling {
            Spelling::WriteCommand => statement.insert("limit", if self.multi { 0 } else { 1 }),
            Spelling::BulkWrite => statement.insert("multi", self.multi),
        };
        insert_present(
            &mut statement,
            [
                ("collation", self.collation.map(Bson::Document)),
                ("hint", self.hint),
            ],
        );
        Statement::encoded(
            WriteKind::Delete,
            &statement,
            self.multi,
            &[spelling.filter_key()],
        )
    }
}

/// Room in a message for things other than the documents of a batch: the message
/// header, the body's other fields and the sequence framing (OP_MSG spec).
const MESSAGE_OVERHEAD: usize = 16 * 1024;

/// How many of `statements` one command carries: as many as fit the server's limits
/// (`maxWriteBatchSize`, `maxMessageSizeBytes`), and always at least one (the server
/// judges one that is too big).
fn batch_len(statements: &[Statement], hello: &HelloReply) -> usize {
    let max_count = hello.write_batch_limit();
    let max_bytes = hello.message_size_limit().saturating_sub(MESSAGE_OVERHEAD);
    let mut bytes = 0;
    let mut count = 0;
    for statement in statements {
        let size = statement.document.as_bytes().len();
        if count > 0 && (count == max_count || bytes + size > max_bytes) {
            break;
        }
        bytes += size;
        count += 1;
    }
    count
}

/// One `insert`, `update` or `delete` command: as many of `statements[offset..]` as
/// fit the server's limits ([`batch_len`]). Every insert, update, replace and delete
/// runs as such batches: the single writes with one statement, `insert_many` and
/// `bulk_write` with as many as they have.
pub(crate) struct WriteBatch<'a> {
    pub namespace: &'a Namespace,
    /// The kind of every statement.
    pub kind: WriteKind,
    /// Mutable: a build moves the batch's documents into the command, and
    /// [`reclaim`](Operation::reclaim) puts them back.
    pub statements: &'a mut [Statement],
    pub offset: usize,
    /// The options of the command (`ordered`, `bypassDocumentValidation`, `comment`,
    /// `let`).
    pub options: &'a BulkWriteOptions,
    pub write_concern: Option<&'a WriteConcern>,
    /// How many statements this command sends; fixed at the first build so a retry
    /// resends the same batch.
    pub batch_len: Option<usize>,
}

impl<'a> WriteBatch<'a> {
    /// The first batch of `statements`, all of the kind `kind`.
    pub fn new(
        namespace: &'a Namespace,
        kind: WriteKind,
        statements: &'a mut [Statement],
        options: &'a BulkWriteOptions,
        write_concern: Option<&'a WriteConcern>,
    ) -> WriteBatch<'a> {
        WriteBatch {
            namespace,
            kind,
            statements,
            offset: 0,
            options,
            write_concern,
            batch_len: None,
        }
    }

    /// The statements this batch sends, or (before its first build) may send.
    fn batch(&self) -> &[Statement] {
        let rest = self.statements.get(self.offset..).unwrap_or_default();
        match self.batch_len {
            Some(len) => rest.get(..len).unwrap_or(rest),
            None => rest,
        }
    }

    /// [`batch`](Self::batch), to move its documents out and back.
    fn batch_mut(&mut self) -> &mut [Statement] {
        let rest = self.statements.get_mut(self.offset..).unwrap_or_default();
        let len = self.batch_len.unwrap_or(rest.len()).min(rest.len());
        &mut rest[..len]
    }
}

impl Operation for WriteBatch<'_> {
    type Output = WriteReply;

    fn reported_failure(reply: &WriteReply) -> Option<Error> {
        reply.single_write_error()
    }

    fn name(&self) -> &str {
        self.kind.command()
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: operation_name(self.name()),
            database: &self.namespace.db,
            collection: Some(&self.namespace.coll),
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        if self.batch_len.is_none() {
            self.batch_len = Some(batch_len(self.batch(), hello));
        }
        for (index, statement) in self.batch().iter().enumerate() {
            statement.check_size(self.offset + index, hello)?;
        }
        let kind = self.kind;
        let options = self.options;
        let mut body = doc! {
            kind.command(): self.namespace.coll.as_str(),
            "ordered": options.ordered.unwrap_or(true),
        };
        let write_concern = self
            .write_concern
            .filter(|concern| !concern.is_empty())
            .map(|concern| Bson::Document(concern.to_document()));
        // CRUD spec, "BulkWriteOptions": `let` goes to updates and deletes, not
        // inserts; document validation concerns inserts and updates only.
        let bypass = match kind {
            WriteKind::Delete => None,
            _ => options.bypass_document_validation.map(Bson::Boolean),
        };
        let let_vars = match kind {
            WriteKind::Insert => None,
            _ => options.let_vars.clone().map(Bson::Document),
        };
        insert_present(
            &mut body,
            [
                ("writeConcern", write_concern),
                ("bypassDocumentValidation", bypass),
                ("comment", options.comment.clone()),
                ("let", let_vars),
                hello.raw_data_field(options.raw_data),
            ],
        );
        // The documents move into the command rather than being copied (a large insert's
        // copy was a tenth of its cost in the profile of the benchmark's large-document
        // inserts): `reclaim` puts them back after the attempt, for a retry.
        let batch = self
            .batch_mut()
            .iter_mut()
            .map(|statement| std::mem::take(&mut statement.document))
            .collect();
        Ok(Command {
            database: self.namespace.db.clone(),
            body,
            sequences: vec![DocumentSequence::new(kind.sequence(), batch)],
        })
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<WriteReply> {
        let reply = crate::connection::reply_document(&reply)?;
        let statements = self.offset..self.offset + self.batch().len();
        WriteReply::of_write_command(&reply, statements, &context.server.address.to_string())
    }

    fn reclaim(&mut self, sequences: Vec<DocumentSequence>) {
        let documents = sequences
            .into_iter()
            .flat_map(|sequence| sequence.documents);
        for (statement, document) in self.batch_mut().iter_mut().zip(documents) {
            statement.document = document;
        }
    }

    fn retryability(&self) -> Retryability {
        // Retryable Writes spec, "Unsupported Write Operations": a command with a
        // multi-document statement is not retryable. The executor asks before the
        // first build, when the batch may still be any part of what is left: a rare
        // batch without one, split from a long run of statements that has one, is
        // then not retried either.
        match self.batch().iter().any(|statement| statement.multi) {
            true => Retryability::None,
            false => Retryability::Write,
        }
    }

    /// A causally consistent session sends `afterClusterTime` with writes too
    /// (Causal Consistency spec, "Causally consistent read and write commands").
    fn supports_read_concern(&self) -> bool {
        true
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern
    }
}

/// What `findAndModify` does.
#[derive(Debug, Clone)]
pub(crate) enum FindAndModifyAction {
    /// Applies an update document or pipeline.
    Update(Bson),
    /// Replaces the document.
    Replace(Document),
    /// Deletes the document.
    Delete,
}

/// A `findAndModify` command.
pub(crate) struct FindAndModify<'a> {
    pub namespace: &'a Namespace,
    pub filter: Document,
    pub action: FindAndModifyAction,
    pub options: &'a FindAndModifyOptions,
    pub write_concern: Option<&'a WriteConcern>,
}

/// What a find-and-modify returned with
/// [`with_result_metadata`](crate::action::FindOneAndUpdate::with_result_metadata): the
/// document, and the server's `lastErrorObject` (`n`, `updatedExisting`, `upserted`).
/// An anymongo addition, for the Node driver's `includeResultMetadata`.
///
/// ```no_run
/// # async fn example(counters: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
/// use anymongo::bson::doc;
/// let result = counters
///     .find_one_and_update(doc! { "_id": "order" }, doc! { "$inc": { "n": 1 } })
///     .upsert(true)
///     .with_result_metadata()
///     .await?;
/// let upserted = result.last_error_object.as_ref().and_then(|it| it.get("upserted"));
/// # let _ = upserted; Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FindAndModifyResult<T> {
    /// The document before or after the write, if one matched or was upserted.
    pub value: Option<T>,
    /// The server's account of the write, as it sent it.
    pub last_error_object: Option<Document>,
}

/// What a `findAndModify` replied: the document's bytes (read as `T` by the collection)
/// and the server's account of the write.
pub(crate) struct FindAndModifyReply {
    pub value: Option<RawDocumentBuf>,
    pub last_error_object: Option<Document>,
}

impl Operation for FindAndModify<'_> {
    type Output = FindAndModifyReply;

    fn name(&self) -> &str {
        "findAndModify"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "findAndModify",
            database: &self.namespace.db,
            collection: Some(&self.namespace.coll),
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let options = self.options;
        let mut body = doc! {
            "findAndModify": self.namespace.coll.as_str(),
            "query": self.filter.clone(),
        };
        match &self.action {
            FindAndModifyAction::Update(update) => {
                body.insert("update", update.clone());
            }
            FindAndModifyAction::Replace(replacement) => {
                body.insert("update", replacement.clone());
            }
            FindAndModifyAction::Delete => {
                body.insert("remove", true);
            }
        }
        if !matches!(self.action, FindAndModifyAction::Delete) {
            if options.return_document == Some(ReturnDocument::After) {
                body.insert("new", true);
            }
            if let Some(upsert) = options.upsert {
                body.insert("upsert", upsert);
            }
            if let Some(filters) = &options.array_filters {
                body.insert("arrayFilters", filters.clone());
            }
            if let Some(bypass) = options.bypass_document_validation {
                body.insert("bypassDocumentValidation", bypass);
            }
        }
        insert_present(
            &mut body,
            [
                ("sort", options.sort.clone().map(Bson::Document)),
                ("fields", options.projection.clone().map(Bson::Document)),
                ("collation", options.collation.clone().map(Bson::from)),
                ("hint", options.hint.clone().map(Bson::from)),
                ("let", options.let_vars.clone().map(Bson::Document)),
                ("comment", options.comment.clone()),
                ("maxTimeMS", options.max_time.map(millis)),
                hello.raw_data_field(options.raw_data),
            ],
        );
        if let Some(concern) = self.write_concern.filter(|concern| !concern.is_empty()) {
            body.insert("writeConcern", concern.to_document());
        }
        Ok(Command::new(self.namespace.db.as_str(), body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: ReplyContext<'_>,
    ) -> Result<FindAndModifyReply> {
        let document = crate::connection::reply_document(&reply)?;
        let parsed = WriteReply::parse(&document, 0);
        if let Some(error) = parsed.single_write_error() {
            return Err(error);
        }
        // The document's bytes, not the reply's `Document`: the user's type reads them as
        // stored (`bson_deserializer::from_slice`).
        let value = match reply.get("value") {
            Ok(Some(bson::RawBsonRef::Document(value))) => Some(value.to_owned()),
            _ => None,
        };
        let last_error_object = document.get_document("lastErrorObject").ok().cloned();
        Ok(FindAndModifyReply {
            value,
            last_error_object,
        })
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    /// A causally consistent session sends `afterClusterTime` with writes too
    /// (Causal Consistency spec, "Causally consistent read and write commands").
    fn supports_read_concern(&self) -> bool {
        true
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern
    }
}

/// `document` as BSON with its `_id` first, generated (an ObjectId) when missing
/// (CRUD spec, "Insert, Update, Replace, Delete, and Bulk Writes": drivers generate
/// `_id`s), and that `_id`.
pub(crate) fn with_id<T: Serialize>(document: &T) -> Result<(RawDocumentBuf, Bson)> {
    // BSON spec: `document ::= int32 e_list "\x00"`, and an ObjectId element is
    // `"\x07" e_name (byte*12)`. The document is serialized straight to bytes behind
    // room for that element, so that an `_id` goes in front (where the server puts it
    // too) without copying the document.
    const ID_ELEMENT: [u8; 5] = [0x07, b'_', b'i', b'd', 0];
    const ROOM: usize = ID_ELEMENT.len() + 12;
    let mut bytes = vec![0; ROOM];
    let noted = serialize_noting_id(document, &mut bytes).map_err(Error::serialization)?;
    let serialized = RawDocument::from_bytes(&bytes[ROOM..]).map_err(Error::serialization)?;
    let element = match noted {
        IdElement::Unknown => find_id(serialized.as_bytes()),
        noted => noted,
    };
    let found = match element {
        IdElement::Absent => None,
        IdElement::At(element) => {
            let alone = alone(&serialized.as_bytes()[element])?;
            alone
                .get("_id")
                .map_err(Error::serialization)?
                .map(Bson::try_from)
        }
        IdElement::Unknown => serialized
            .get("_id")
            .map_err(Error::serialization)?
            .map(Bson::try_from),
    };
    if let Some(id) = found {
        let id = id.map_err(Error::serialization)?;
        bytes.drain(..ROOM);
        return Ok((
            RawDocumentBuf::from_bytes(bytes).map_err(Error::serialization)?,
            id,
        ));
    }
    // The new length covers the room; the element overwrites the old length field.
    let length = i32::try_from(bytes.len())
        .map_err(|_| Error::invalid_argument("the document is too large to insert"))?;
    let id = ObjectId::new();
    bytes[..4].copy_from_slice(&length.to_le_bytes());
    bytes[4..4 + ID_ELEMENT.len()].copy_from_slice(&ID_ELEMENT);
    bytes[4 + ID_ELEMENT.len()..4 + ROOM].copy_from_slice(&id.bytes());
    let raw = RawDocumentBuf::from_bytes(bytes).map_err(Error::serialization)?;
    Ok((raw, Bson::ObjectId(id)))
}

/// The top-level `_id` element of `document`, BSON the serializer has just written
/// without noting its `_id` (raw bytes, or the bson crate's serializer).
///
/// `RawDocument::get` walks the top level too, but checks each key is UTF-8 and each
/// value's bytes as it goes: the profile of the benchmark's flat document (145 fields,
/// its `_id` last) put that walk at once more the cost of serializing the document,
/// and most inserted documents have no `_id`, which takes the whole walk. Here a key
/// is compared with `_id` byte for byte and a value skipped by its size (BSON spec,
/// `element`); anything unexpected (an unknown type, a length out of bounds) is
/// [`IdElement::Unknown`].
fn find_id(document: &[u8]) -> IdElement {
    let int32 = |at: usize| -> Option<usize> {
        let bytes = document.get(at..at.checked_add(4)?)?;
        usize::try_from(i32::from_le_bytes(bytes.try_into().ok()?)).ok()
    };
    let cstring_end = |at: usize| -> Option<usize> {
        Some(at + document.get(at..)?.iter().position(|&byte| byte == 0)? + 1)
    };
    // The end of the value of `kind` that starts at `at`.
    let value_end = |kind: u8, at: usize| -> Option<usize> {
        let size = match kind {
            // Undefined, null, min key, max key.
            0x06 | 0x0A | 0x7F | 0xFF => 0,
            // Boolean.
            0x08 => 1,
            // int32.
            0x10 => 4,
            // Double, datetime, timestamp, int64.
            0x01 | 0x09 | 0x11 | 0x12 => 8,
            // ObjectId.
            0x07 => 12,
            // Decimal128.
            0x13 => 16,
            // String, JavaScript code, symbol: an int32 length, then that many bytes.
            0x02 | 0x0D | 0x0E => 4 + int32(at)?,
            // Document, array, code with scope: an int32 length that counts itself.
            0x03 | 0x04 | 0x0F => int32(at)?,
            // Binary: an int32 length, the subtype, then the bytes.
            0x05 => 5 + int32(at)?,
            // DBPointer: a string, then an ObjectId.
            0x0C => 4 + int32(at)? + 12,
            // Regular expression: two C strings.
            0x0B => return cstring_end(cstring_end(at)?),
            _ => return None,
        };
        at.checked_add(size)
    };
    let mut at = 4;
    loop {
        let Some(&kind) = document.get(at) else {
            return IdElement::Unknown;
        };
        if kind == 0 {
            return IdElement::Absent;
        }
        let key = at + 1;
        let Some(end) = cstring_end(key).and_then(|value| value_end(kind, value)) else {
            return IdElement::Unknown;
        };
        if document.get(key..key + 4) == Some(b"_id\0") {
            return match end <= document.len() {
                true => IdElement::At(at..end),
                false => IdElement::Unknown,
            };
        }
        at = end;
    }
}

/// `element` (type, name and value) as a document of its own, to read its value with
/// the bson crate.
fn alone(element: &[u8]) -> Result<RawDocumentBuf> {
    // BSON spec: `document ::= int32 e_list "\x00"`; the length counts itself.
    let length = element.len() + 5;
    let mut bytes = Vec::with_capacity(length);
    bytes.extend_from_slice(&(length as i32).to_le_bytes());
    bytes.extend_from_slice(element);
    bytes.push(0);
    RawDocumentBuf::from_bytes(bytes).map_err(Error::serialization)
}

/// `value` as a document, serialized as inserted documents are.
pub(crate) fn to_document<T: Serialize>(value: &T) -> Result<Document> {
    // Through BSON bytes: `bson::serialize_to_document` would take a field such as
    // `{"$numberLong": "12"}` for extended JSON and send an Int64.
    let bytes = crate::bson_serializer::serialize_to_vec(value).map_err(Error::serialization)?;
    crate::bson_deserializer::document_from_slice(&bytes).map_err(Error::serialization)
}

/// A replacement as a document; it must not contain update operators (CRUD spec,
/// "Update vs. Replace Validation").
pub(crate) fn replacement_document<T: Serialize>(replacement: &T) -> Result<Document> {
    let document = to_document(replacement)?;
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

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    #[test]
    fn a_single_write_error_keeps_the_servers_entry_as_its_reply() {
        let entry = doc! {
            "index": 0, "code": 11000, "errmsg": "E11000 duplicate key",
            "keyPattern": { "k": 1 }, "keyValue": { "k": 1 },
        };
        let reply = doc! { "n": 0, "writeErrors": [entry.clone()], "ok": 1 };
        let error = WriteReply::parse(&reply, 0).single_write_error().unwrap();
        assert_eq!(error.code(), Some(11000));
        assert_eq!(error.server_reply(), Some(&entry));
        // A write concern error has no entry of its own.
        let reply =
            doc! { "n": 1, "writeConcernError": { "code": 64, "errmsg": "timeout" }, "ok": 1 };
        let error = WriteReply::parse(&reply, 0).single_write_error().unwrap();
        assert_eq!(error.server_reply(), None);
    }

    #[test]
    fn a_replacement_keeps_dollar_fields_as_given() {
        let replacement =
            doc! { "_id": 1, "n": { "a": 1, "$numberLong": "12" }, "m": [{ "$oid": "x" }] };
        assert_eq!(replacement_document(&replacement).unwrap(), replacement);
        let operator = doc! { "$set": { "a": 1 } };
        assert!(replacement_document(&operator).is_err());
    }

    fn namespace() -> Namespace {
        Namespace::new("db", "coll")
    }

    fn inserts(sizes: &[usize]) -> Vec<Statement> {
        sizes
            .iter()
            .map(|size| {
                let document = doc! { "x": "a".repeat(*size) };
                Statement::insert(
                    RawDocumentBuf::try_from(&document).unwrap(),
                    Spelling::WriteCommand,
                )
            })
            .collect()
    }

    #[test]
    fn batches_stop_at_the_count_and_size_limits_but_hold_at_least_one() {
        let hello = HelloReply {
            max_write_batch_size: 3,
            max_message_size_bytes: i32::try_from(MESSAGE_OVERHEAD + 1_000).unwrap(),
            ..HelloReply::default()
        };
        assert_eq!(batch_len(&inserts(&[10; 5]), &hello), 3);
        // 400 + 400 fit in 1,000 bytes, a third does not.
        assert_eq!(batch_len(&inserts(&[400; 3]), &hello), 2);
        // One document bigger than the limit goes alone: the server judges it.
        assert_eq!(batch_len(&inserts(&[5_000, 10]), &hello), 1);
        // No limits in the hello: the defaults.
        assert_eq!(batch_len(&inserts(&[10; 4]), &HelloReply::default()), 4);
        // A hostile hello's limits are capped at the protocol's: 49 documents of 1 MB
        // are more than one 48 MB message holds.
        let hostile = HelloReply {
            max_write_batch_size: i32::MAX,
            max_message_size_bytes: i32::MAX,
            ..HelloReply::default()
        };
        assert_eq!(batch_len(&inserts(&[1_000_000; 49]), &hostile), 47);
    }

    #[test]
    fn a_statement_with_a_document_above_max_bson_object_size_is_refused() {
        let hello = HelloReply {
            max_bson_object_size: 1_000,
            ..HelloReply::default()
        };
        // `{ x: "a" * n }` is n + 13 bytes.
        let [at_limit, above] = [987, 988].map(|size| inserts(&[size]).remove(0));
        assert_eq!(at_limit.largest_part, 1_000);
        at_limit.check_size(0, &hello).unwrap();
        let error = above.check_size(7, &hello).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid argument: write 7: the document to insert is 1001 bytes, more than the \
             server's maxBsonObjectSize of 1000 bytes"
        );
        // Updates and deletes: the filter and the update are measured, not the whole
        // statement, in either spelling.
        let big = doc! { "x": "a".repeat(988) };
        for spelling in [Spelling::WriteCommand, Spelling::BulkWrite] {
            let update = |filter: Document, update: Document| UpdateStatement {
                filter,
                update: Bson::Document(update),
                ..UpdateStatement::default()
            };
            let at_limit = doc! { "x": "a".repeat(987) };
            let both = update(at_limit.clone(), at_limit.clone());
            both.spelled(spelling)
                .unwrap()
                .check_size(0, &hello)
                .unwrap();
            for statement in [update(big.clone(), doc! {}), update(doc! {}, big.clone())] {
                let refused = statement.spelled(spelling).unwrap().check_size(0, &hello);
                let message = refused.unwrap_err().to_string();
                assert!(
                    message.contains("the filter or the update is 1001 bytes"),
                    "{spelling:?}: {message}"
                );
            }
            let delete = DeleteStatement {
                filter: big.clone(),
                ..DeleteStatement::default()
            };
            let error = delete.spelled(spelling).unwrap().check_size(0, &hello);
            assert!(error
                .unwrap_err()
                .to_string()
                .contains("the filter is 1001 bytes"));
        }
        // No limit in the hello: 16 MiB.
        let default = HelloReply::default();
        assert_eq!(default.document_size_limit(), 16 * 1024 * 1024);
        above.check_size(0, &default).unwrap();
        // A hostile limit: never more than a message holds.
        let hostile = HelloReply {
            max_bson_object_size: i32::MAX,
            ..HelloReply::default()
        };
        assert_eq!(hostile.document_size_limit(), 48_000_000);
    }

    #[test]
    fn statements_send_only_the_options_given() {
        let update = UpdateStatement {
            filter: doc! { "_id": 1 },
            update: Bson::Document(doc! { "$set": { "x": 1 } }),
            upsert: Some(false),
            hint: Some(Bson::String("_id_".into())),
            ..UpdateStatement::default()
        }
        .statement()
        .unwrap();
        assert_eq!(update.kind, WriteKind::Update);
        assert!(!update.multi);
        assert_eq!(
            Document::try_from(update.document.as_ref()).unwrap(),
            doc! { "q": { "_id": 1 }, "u": { "$set": { "x": 1 } }, "upsert": false, "hint": "_id_" }
        );
        let delete = DeleteStatement {
            filter: doc! {},
            multi: true,
            collation: Some(doc! { "locale": "fr" }),
            hint: None,
        }
        .statement()
        .unwrap();
        assert!(delete.multi);
        assert_eq!(
            Document::try_from(delete.document.as_ref()).unwrap(),
            doc! { "q": {}, "limit": 0, "collation": { "locale": "fr" } }
        );
    }

    #[test]
    fn a_batch_builds_its_command_and_is_retryable_without_multi_statements() {
        let namespace = namespace();
        let options = BulkWriteOptions {
            ordered: Some(false),
            bypass_document_validation: Some(true),
            comment: Some(Bson::String("why".into())),
            let_vars: Some(doc! { "v": 1 }),
            ..BulkWriteOptions::default()
        };
        let mut statements = inserts(&[1, 2, 3]);
        let mut batch = WriteBatch {
            offset: 1,
            ..WriteBatch::new(
                &namespace,
                WriteKind::Insert,
                &mut statements,
                &options,
                None,
            )
        };
        assert_eq!(batch.retryability(), Retryability::Write);
        let command = batch.build(&HelloReply::default()).unwrap();
        assert_eq!(batch.batch_len, Some(2));
        // `let` is for updates and deletes only.
        assert_eq!(
            command.body,
            doc! {
                "insert": "coll", "ordered": false, "bypassDocumentValidation": true,
                "comment": "why",
            }
        );
        assert_eq!(command.sequences[0].identifier, "documents");
        assert_eq!(command.sequences[0].documents.len(), 2);
        // The documents were moved into the command; a retry builds the same batch
        // once they are back.
        let sent = command.sequences.clone();
        batch.reclaim(command.sequences);
        let again = batch.build(&HelloReply::default()).unwrap();
        assert_eq!(again.sequences, sent);
        batch.reclaim(again.sequences);
        assert_eq!(statements, inserts(&[1, 2, 3]));

        let one = DeleteStatement {
            filter: doc! {},
            ..DeleteStatement::default()
        };
        let many = DeleteStatement {
            multi: true,
            ..one.clone()
        };
        let mut deletes = vec![one.statement().unwrap(), many.statement().unwrap()];
        let mut batch =
            WriteBatch::new(&namespace, WriteKind::Delete, &mut deletes, &options, None);
        assert_eq!(batch.retryability(), Retryability::None);
        let command = batch.build(&HelloReply::default()).unwrap();
        // Document validation does not concern deletes.
        assert_eq!(
            command.body,
            doc! { "delete": "coll", "ordered": false, "comment": "why", "let": { "v": 1 } }
        );
        assert_eq!(command.sequences[0].identifier, "deletes");
        // Once the batch is fixed, only its own statements count.
        let mut first =
            WriteBatch::new(&namespace, WriteKind::Delete, &mut deletes, &options, None);
        first.batch_len = Some(1);
        assert_eq!(first.retryability(), Retryability::Write);
    }

    /// CRUD spec, `rawData` of the writes, their bulk write and the find-and-modify
    /// operations: in the command when set, for MongoDB 8.2+ only.
    #[test]
    fn the_writes_send_raw_data_to_servers_that_know_it() {
        let hello = |max_wire_version| HelloReply {
            max_wire_version,
            ..HelloReply::default()
        };
        let namespace = namespace();
        let options = BulkWriteOptions {
            raw_data: Some(true),
            ..BulkWriteOptions::default()
        };
        for kind in [WriteKind::Insert, WriteKind::Update, WriteKind::Delete] {
            let mut statements = inserts(&[1]);
            let mut batch = WriteBatch::new(&namespace, kind, &mut statements, &options, None);
            let command = batch.build(&hello(27)).unwrap();
            assert_eq!(command.body.get("rawData"), Some(&Bson::Boolean(true)));
            batch.reclaim(command.sequences);
            let command = batch.build(&hello(25)).unwrap();
            assert_eq!(command.body.get("rawData"), None, "{kind:?}");
        }
        let options = FindAndModifyOptions {
            raw_data: Some(true),
            ..FindAndModifyOptions::default()
        };
        let mut find_and_modify = FindAndModify {
            namespace: &namespace,
            filter: doc! {},
            action: FindAndModifyAction::Delete,
            options: &options,
            write_concern: None,
        };
        let command = find_and_modify.build(&hello(27)).unwrap();
        assert_eq!(
            command.body,
            doc! { "findAndModify": "coll", "query": {}, "remove": true, "rawData": true }
        );
        let command = find_and_modify.build(&hello(25)).unwrap();
        assert_eq!(command.body.get("rawData"), None);
    }

    #[test]
    fn replies_shift_their_indexes_by_the_batch_offset() {
        let reply = doc! {
            "ok": 1, "n": 1, "nModified": 1,
            "upserted": [{ "index": 1, "_id": 7 }],
            "writeErrors": [{ "index": 0, "code": 11000, "errmsg": "dup" }],
        };
        let parsed = WriteReply::of_write_command(&reply, 10..12, "db:27017").unwrap();
        assert_eq!(parsed.upserted, vec![(11, Bson::Int32(7))]);
        assert_eq!(parsed.write_errors[0].index, 10);
        assert_eq!(parsed.write_errors[0].code, 11000);
        assert_eq!(parsed.address, "db:27017");
    }

    #[test]
    fn a_reply_naming_a_write_the_command_did_not_carry_is_a_misbehaving_server() {
        // issue 41: `offset + index` overflowed (on wasm32, an index up to u32::MAX).
        for index in [Bson::Int32(2), Bson::Int32(-1), Bson::Int64(i64::MAX)] {
            for key in ["writeErrors", "upserted"] {
                let reply = doc! {
                    "ok": 1, "n": 1, key: [{ "index": index.clone(), "code": 1, "_id": 1 }],
                };
                let error = WriteReply::of_write_command(&reply, 10..12, "db:27017").unwrap_err();
                assert!(
                    matches!(&*error.kind, ErrorKind::MisbehavingServer { address, .. }
                        if address == "db:27017"),
                    "{key} {index}: {error}"
                );
            }
        }
        let offset = usize::MAX - 1;
        let reply = doc! { "ok": 1, "writeErrors": [{ "index": i64::MAX, "code": 1 }] };
        let error = WriteReply::of_write_command(&reply, offset..offset + 1, "db:27017");
        assert!(error.is_err());
    }

    #[test]
    fn with_id_puts_a_new_object_id_first() {
        let (raw, id) = with_id(&doc! { "a": 1, "b": { "c": [1, 2] } }).unwrap();
        let Bson::ObjectId(oid) = id else {
            panic!("not an ObjectId: {id:?}");
        };
        assert_eq!(raw, rawdoc! { "_id": oid, "a": 1, "b": { "c": [1, 2] } });
        // The bytes are a document the bson crate reads back whole.
        let read = Document::try_from(raw.as_ref()).unwrap();
        assert_eq!(read, doc! { "_id": oid, "a": 1, "b": { "c": [1, 2] } });
    }

    #[test]
    fn with_id_keeps_the_id_given_where_it_is() {
        let (raw, id) = with_id(&doc! { "a": 1, "_id": "mine" }).unwrap();
        assert_eq!(id, Bson::String("mine".into()));
        assert_eq!(raw, rawdoc! { "a": 1, "_id": "mine" });
        let (empty, id) = with_id(&Document::new()).unwrap();
        assert_eq!(empty, rawdoc! { "_id": id.as_object_id().unwrap() });
    }

    /// Serializes `value` noting its `_id`: the bytes are `serialize_to_vec`'s, and the
    /// `_id` noted is the one `find_id` finds, or unknown.
    #[track_caller]
    fn noted<T: Serialize>(value: &T) -> IdElement {
        let mut bytes = vec![0xEE; 3];
        let noted = serialize_noting_id(value, &mut bytes).unwrap();
        assert_eq!(
            bytes[3..],
            crate::bson_serializer::serialize_to_vec(value).unwrap()
        );
        if noted != IdElement::Unknown {
            assert_eq!(noted, find_id(&bytes[3..]));
        }
        noted
    }

    #[test]
    fn the_serializer_notes_the_top_level_id_as_find_id_finds_it() {
        use std::collections::BTreeMap;

        use bson::spec::BinarySubtype;
        use bson::{Binary, Decimal128};

        // A document: `_id` first, in the middle, last, absent, or only nested.
        #[track_caller]
        fn at<T: Serialize>(value: &T) -> std::ops::Range<usize> {
            match noted(value) {
                IdElement::At(range) => range,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(at(&doc! { "_id": 1, "a": "x" }).start, 4);
        at(&doc! { "a": [1, { "_id": 2 }], "_id": "mine", "b": 3 });
        at(&doc! { "a": 1, "_id": { "nested": { "_id": 0 } } });
        assert_eq!(noted(&doc! {}), IdElement::Absent);
        assert_eq!(
            noted(&doc! { "a": { "_id": 1 }, "_ids": 2, "_i": 3, "b": [{ "_id": 4 }] }),
            IdElement::Absent
        );
        // An `_id` whose value the bson crate writes (Decimal128, a UUID binary).
        at(&doc! { "a": 1, "_id": Decimal128::from_bytes([3; 16]) });
        at(&doc! { "_id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] } });
        // A struct and a map.
        #[derive(Serialize)]
        struct Cat {
            name: &'static str,
            #[serde(rename = "_id")]
            id: i32,
        }
        at(&Cat { name: "Tom", id: 3 });
        #[derive(Serialize)]
        struct NoId {
            name: &'static str,
            nested: Cat,
        }
        assert_eq!(
            noted(&NoId {
                name: "Tom",
                nested: Cat { name: "Kit", id: 1 }
            }),
            IdElement::Absent
        );
        let map = BTreeMap::from([("_id", 1), ("a", 2), ("b", 3)]);
        at(&map);
        // An enum: a newtype variant is a map of one entry; the others are not noted.
        #[derive(Serialize)]
        #[allow(non_camel_case_types)]
        enum Shape {
            _id(i32),
            Pair(i32, i32),
            Named { _id: i32 },
        }
        at(&Shape::_id(1));
        assert_eq!(noted(&Shape::Pair(1, 2)), IdElement::Unknown);
        assert_eq!(noted(&Shape::Named { _id: 1 }), IdElement::Unknown);
        // Two `_id`s in a map (serde allows it): the first, as `find_id`.
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("_id", &1)?;
                map.serialize_entry("_id", &2)?;
                map.end()
            }
        }
        assert_eq!(at(&Twice), 4..13);
        // Raw bytes are copied, not written element by element.
        assert_eq!(noted(&rawdoc! { "_id": 1 }), IdElement::Unknown);
    }

    #[test]
    fn find_id_skips_every_type_of_value() {
        use bson::spec::BinarySubtype;
        use bson::{Binary, Decimal128, JavaScriptCodeWithScope, Regex, Timestamp};
        let every = doc! {
            "double": 1.5, "string": "s", "document": { "_id": 1 }, "array": [{ "_id": 1 }],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 2] },
            "old binary": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![0, 1] },
            "undefined": Bson::Undefined, "oid": ObjectId::new(), "bool": true,
            "date": bson::DateTime::now(), "null": Bson::Null,
            "regex": Regex { pattern: "^_id".to_string().try_into().unwrap(), options: "i".to_string().try_into().unwrap() },
            "code": Bson::JavaScriptCode("f()".into()), "symbol": Bson::Symbol("_id".into()),
            "code with scope": JavaScriptCodeWithScope { code: "f()".into(), scope: doc! { "_id": 1 } },
            "int32": 1, "timestamp": Timestamp { time: 1, increment: 2 }, "int64": 1_i64,
            "decimal": Decimal128::from_bytes([0; 16]), "min": Bson::MinKey, "max": Bson::MaxKey,
        };
        // BSON spec: a DBPointer (0x0C) is a string and an ObjectId; the bson crate has
        // no public constructor for it.
        let mut bytes = bson::serialize_to_vec(&every).unwrap();
        bytes.pop();
        bytes.extend_from_slice(b"\x0cdbpointer\0\x02\0\0\0n\0");
        bytes.extend_from_slice(&ObjectId::new().bytes());
        let id_at = bytes.len();
        bytes.extend_from_slice(b"\x10_id\0\x07\0\0\0");
        let id_end = bytes.len();
        bytes.push(0);
        let length = bytes.len() as i32;
        bytes[..4].copy_from_slice(&length.to_le_bytes());
        assert!(matches!(find_id(&bytes), IdElement::At(at) if at == (id_at..id_end)));
        // Without the `_id`, the whole top level is walked.
        let without = [&bytes[..id_at], b"\0"].concat();
        let mut without = without;
        let length = without.len() as i32;
        without[..4].copy_from_slice(&length.to_le_bytes());
        assert!(matches!(find_id(&without), IdElement::Absent));
        // What the walk does not expect is left to the bson crate.
        let mut unknown = rawdoc! { "a": 1 }.into_bytes();
        unknown[4] = 0x42;
        assert!(matches!(find_id(&unknown), IdElement::Unknown));
        assert!(matches!(find_id(&bytes[..id_end - 2]), IdElement::Unknown));
    }

    #[test]
    fn with_id_reads_an_id_of_any_type_where_it_is() {
        let ids = [
            Bson::Int32(7),
            Bson::String("x".into()),
            Bson::Document(doc! { "a": [1] }),
        ];
        for id in ids {
            let (raw, found) =
                with_id(&doc! { "a": 1, "b": { "_id": 2 }, "_id": id.clone() }).unwrap();
            assert_eq!(found, id);
            assert_eq!(
                raw,
                RawDocumentBuf::try_from(&doc! { "a": 1, "b": { "_id": 2 }, "_id": id }).unwrap()
            );
        }
    }

    #[test]
    fn with_id_refuses_what_is_not_a_document() {
        assert!(with_id(&42).is_err());
        assert!(with_id(&vec![1, 2]).is_err());
    }
}
