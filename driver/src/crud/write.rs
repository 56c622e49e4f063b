//! The write commands behind the CRUD write operations: `insert` (in batches that
//! fit the server's limits), `update`, `delete` and `findAndModify`.

use bson::{doc, Bson, Document, RawDocumentBuf};

use super::read::{insert_present, millis};
use super::{FindOneAndModifyOptions, ReturnDocument, WriteOptions};
use crate::concern::WriteConcern;
use crate::error::{Error, ErrorKind, Result, WriteConcernError, WriteError, WriteFailure};
use crate::handshake::HelloReply;
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::retry::Retryability;
use crate::wire::DocumentSequence;

/// `database.collection`.
#[derive(Debug, Clone)]
pub(crate) struct Namespace {
    pub database: String,
    pub collection: String,
}

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
    pub write_errors: Vec<WriteError>,
    /// `writeConcernError`.
    pub write_concern_error: Option<WriteConcernError>,
    /// The reply's `errorLabels`.
    pub labels: Vec<String>,
}

impl WriteReply {
    /// Reads a write command's reply; statement indexes are shifted by `offset` (the
    /// batch's first statement in the whole operation).
    pub(crate) fn parse(reply: &Document, offset: usize) -> WriteReply {
        let int = |document: &Document, key: &str| {
            document.get(key).and_then(crate::handshake::bson_as_i64)
        };
        let count = |key: &str| {
            int(reply, key)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        };
        let index = |document: &Document| {
            offset
                + int(document, "index")
                    .and_then(|i| usize::try_from(i).ok())
                    .unwrap_or(0)
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
        let write_errors = documents("writeErrors")
            .iter()
            .map(|entry| WriteError {
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
                    code_name: entry.get_str("codeName").ok().map(str::to_string),
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
            write_concern_error,
            labels,
        }
    }

    /// The error of a single write (insert_one, update, delete...), if it failed:
    /// its write error, else its write concern error, with the reply's labels.
    pub fn single_write_error(&self) -> Option<Error> {
        let failure = match (self.write_errors.first(), &self.write_concern_error) {
            (Some(error), _) => WriteFailure::WriteError(error.clone()),
            (None, Some(concern)) => WriteFailure::WriteConcernError(concern.clone()),
            (None, None) => return None,
        };
        Some(
            Error::new(ErrorKind::Write(failure))
                .with_labels(self.labels.iter().map(String::as_str)),
        )
    }

    /// The reply of an insert, update or delete command; a write concern error the
    /// server says may be retried (4.4+ servers label it) is an error instead, so that
    /// the executor retries.
    fn of_write_command(reply: &Document, offset: usize) -> Result<WriteReply> {
        let parsed = WriteReply::parse(reply, offset);
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
}

/// Options every write command takes.
fn add_write_options(
    body: &mut Document,
    options: &WriteOptions,
    write_concern: Option<&WriteConcern>,
) {
    let write_concern = write_concern
        .filter(|concern| !concern.is_empty())
        .map(|concern| Bson::Document(concern.to_document()));
    insert_present(
        body,
        [
            ("writeConcern", write_concern),
            (
                "bypassDocumentValidation",
                options.bypass_document_validation.map(Bson::Boolean),
            ),
            ("comment", options.comment.clone()),
            ("let", options.let_vars.clone().map(Bson::Document)),
        ],
    );
}

/// Room in a message for things other than the documents of a batch: the message
/// header, the body's other fields and the sequence framing (OP_MSG spec).
const MESSAGE_OVERHEAD: usize = 16 * 1024;

/// One `insert` command: as many of `documents[offset..]` as fit the server's limits
/// (`maxWriteBatchSize`, `maxMessageSizeBytes`).
pub(crate) struct Insert<'a> {
    pub namespace: &'a Namespace,
    pub documents: &'a [RawDocumentBuf],
    pub offset: usize,
    pub options: &'a WriteOptions,
    pub write_concern: Option<&'a WriteConcern>,
    /// How many documents this command sends; fixed at the first build so a retry
    /// resends the same batch.
    pub batch_len: Option<usize>,
}

impl Insert<'_> {
    fn batch_len(&self, hello: &HelloReply) -> usize {
        let max_count = usize::try_from(hello.max_write_batch_size)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(100_000);
        let max_bytes = usize::try_from(hello.max_message_size_bytes)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(48_000_000)
            .saturating_sub(MESSAGE_OVERHEAD);
        let mut bytes = 0;
        let mut count = 0;
        for document in &self.documents[self.offset..] {
            let size = document.as_bytes().len();
            // Always at least one document: the server judges one that is too big.
            if count > 0 && (count == max_count || bytes + size > max_bytes) {
                break;
            }
            bytes += size;
            count += 1;
        }
        count
    }
}

impl Operation for Insert<'_> {
    type Output = WriteReply;

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let len = match self.batch_len {
            Some(len) => len,
            None => *self.batch_len.insert(self.batch_len(hello)),
        };
        let mut body = doc! {
            "insert": self.namespace.collection.as_str(),
            "ordered": self.options.ordered.unwrap_or(true),
        };
        add_write_options(&mut body, self.options, self.write_concern);
        let batch = self.documents[self.offset..self.offset + len].to_vec();
        Ok(Command {
            database: self.namespace.database.clone(),
            body,
            sequences: vec![DocumentSequence::new("documents", batch)],
        })
    }

    fn handle_reply(&mut self, reply: Document, _context: ReplyContext<'_>) -> Result<WriteReply> {
        WriteReply::of_write_command(&reply, self.offset)
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern
    }
}

/// One `update` or `delete` command of one statement (`updates` / `deletes`).
pub(crate) struct Modify<'a> {
    pub namespace: &'a Namespace,
    pub statement: ModifyStatement,
    pub options: &'a WriteOptions,
    pub write_concern: Option<&'a WriteConcern>,
}

/// The statement of a [`Modify`].
#[derive(Debug, Clone)]
pub(crate) enum ModifyStatement {
    /// An update (`u` is an update document or pipeline) or replacement (`u` is the
    /// new document).
    Update {
        filter: Document,
        update: Bson,
        multi: bool,
    },
    /// A delete of one (`limit: 1`) or every (`limit: 0`) matching document.
    Delete { filter: Document, multi: bool },
}

impl ModifyStatement {
    fn multi(&self) -> bool {
        match self {
            ModifyStatement::Update { multi, .. } | ModifyStatement::Delete { multi, .. } => *multi,
        }
    }
}

impl Operation for Modify<'_> {
    type Output = WriteReply;

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        let options = self.options;
        let collection = self.namespace.collection.as_str();
        let (mut body, statement) = match &self.statement {
            ModifyStatement::Update {
                filter,
                update,
                multi,
            } => {
                let mut statement = doc! { "q": filter.clone(), "u": update.clone() };
                let array_filters = options.array_filters.as_ref().map(|filters| {
                    Bson::Array(filters.iter().cloned().map(Bson::Document).collect())
                });
                insert_present(
                    &mut statement,
                    [
                        ("multi", multi.then_some(Bson::Boolean(true))),
                        ("upsert", options.upsert.map(Bson::Boolean)),
                        ("arrayFilters", array_filters),
                        ("sort", options.sort.clone().map(Bson::Document)),
                    ],
                );
                (doc! { "update": collection, "ordered": true }, statement)
            }
            ModifyStatement::Delete { filter, multi } => (
                doc! { "delete": collection, "ordered": true },
                doc! { "q": filter.clone(), "limit": if *multi { 0 } else { 1 } },
            ),
        };
        let mut statement = statement;
        if let Some(collation) = &options.collation {
            statement.insert("collation", collation.clone());
        }
        if let Some(hint) = &options.hint {
            statement.insert("hint", hint.clone());
        }
        add_write_options(&mut body, options, self.write_concern);
        let key = match self.statement {
            ModifyStatement::Update { .. } => "updates",
            ModifyStatement::Delete { .. } => "deletes",
        };
        let statement = RawDocumentBuf::try_from(&statement)
            .map_err(|error| Error::bson(format!("the statement cannot be encoded: {error}")))?;
        Ok(Command {
            database: self.namespace.database.clone(),
            body,
            sequences: vec![DocumentSequence::new(key, vec![statement])],
        })
    }

    fn handle_reply(&mut self, reply: Document, _context: ReplyContext<'_>) -> Result<WriteReply> {
        WriteReply::of_write_command(&reply, 0)
    }

    fn retryability(&self) -> Retryability {
        // Retryable Writes spec, "Unsupported Write Operations": multi-document
        // statements are not retryable.
        match self.statement.multi() {
            true => Retryability::None,
            false => Retryability::Write,
        }
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
    pub options: &'a FindOneAndModifyOptions,
    pub write_concern: Option<&'a WriteConcern>,
}

impl Operation for FindAndModify<'_> {
    type Output = Option<Document>;

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        let options = self.options;
        let mut body = doc! {
            "findAndModify": self.namespace.collection.as_str(),
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
                ("collation", options.collation.clone().map(Bson::Document)),
                ("hint", options.hint.clone()),
                ("let", options.let_vars.clone().map(Bson::Document)),
                ("comment", options.comment.clone()),
                ("maxTimeMS", options.max_time.map(millis)),
            ],
        );
        if let Some(concern) = self.write_concern.filter(|concern| !concern.is_empty()) {
            body.insert("writeConcern", concern.to_document());
        }
        Ok(Command::new(self.namespace.database.as_str(), body))
    }

    fn handle_reply(
        &mut self,
        reply: Document,
        _context: ReplyContext<'_>,
    ) -> Result<Option<Document>> {
        let parsed = WriteReply::parse(&reply, 0);
        if let Some(error) = parsed.single_write_error() {
            return Err(error);
        }
        Ok(reply.get_document("value").ok().cloned())
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern
    }
}
