//! The read commands behind the CRUD read operations: `find`, `aggregate` (also
//! behind `count_documents`), `count` (behind `estimated_document_count`) and
//! `distinct`.

use bson::{doc, Bson, Document, RawDocumentBuf};

use super::write::WriteReply;
use super::Namespace;
use super::{AggregateOptions, CursorType, FindOptions, TimeoutMode};
use crate::bson_util::{insert_present, millis};
use crate::concern::{ReadConcern, WriteConcern};
use crate::cursor::check_cursor_timeout;
use crate::cursor::{is_change_stream_stage, Batch, Cursor, CursorSpec};
use crate::error::Result;
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::{Command, Operation, ReplyContext, Target};
use crate::retry::Retryability;
use crate::selection::SelectionCriteria;

/// The `readConcern` field, when a read concern is set.
fn read_concern_field(read_concern: Option<&ReadConcern>) -> (&'static str, Option<Bson>) {
    (
        "readConcern",
        read_concern.map(|concern| Bson::Document(concern.to_document())),
    )
}

/// A `find` command.
pub(crate) struct Find<'a> {
    pub namespace: &'a Namespace,
    pub filter: Document,
    pub options: FindOptions,
    pub selection_criteria: SelectionCriteria,
    pub read_concern: Option<ReadConcern>,
}

impl Find<'_> {
    /// Refuses options that contradict timeoutMS (`timeout`).
    pub fn check_timeout(&self, timeout: Option<std::time::Duration>) -> Result<()> {
        let options = &self.options;
        let await_data = options.cursor_type == Some(CursorType::TailableAwait);
        check_cursor_timeout(
            timeout,
            options.timeout_mode,
            self.tailable(),
            options.max_await_time.filter(|_| await_data),
            false,
        )
    }

    fn tailable(&self) -> bool {
        matches!(
            self.options.cursor_type,
            Some(CursorType::Tailable | CursorType::TailableAwait)
        )
    }
}

impl Operation for Find<'_> {
    type Output = Cursor<Document>;

    fn name(&self) -> &str {
        "find"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "find",
            database: &self.namespace.db,
            collection: Some(&self.namespace.coll),
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Read(&self.selection_criteria)
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let options = &self.options;
        let mut body = doc! {
            "find": self.namespace.coll.as_str(),
            "filter": self.filter.clone(),
        };
        // A negative limit asks for one batch of at most that many (CRUD spec, "Find").
        let (limit, single_batch) = match options.limit {
            Some(limit) if limit < 0 => (Some(limit.unsigned_abs()), true),
            Some(limit) if limit > 0 => (Some(limit.unsigned_abs()), false),
            _ => (None, false),
        };
        // A batch size equal to the limit would leave an open cursor behind the one
        // batch that holds every result: limit + 1 closes it (CRUD spec, "Setting
        // limit and batchSize options for find commands").
        let batch_size = options.batch_size.map(i64::from).map(|size| {
            match limit.and_then(|limit| i64::try_from(limit).ok()) {
                Some(limit) if limit == size && !single_batch => size + 1,
                _ => size,
            }
        });
        let (tailable, await_data) = match options.cursor_type {
            Some(CursorType::Tailable) => (true, false),
            Some(CursorType::TailableAwait) => (true, true),
            _ => (false, false),
        };
        let document = |value: &Option<Document>| value.clone().map(Bson::Document);
        let flag = |on: bool| on.then_some(Bson::Boolean(true));
        insert_present(
            &mut body,
            [
                ("sort", document(&options.sort)),
                ("projection", document(&options.projection)),
                ("hint", options.hint.clone().map(Bson::from)),
                (
                    "skip",
                    options
                        .skip
                        .map(|skip| Bson::Int64(skip.try_into().unwrap_or(i64::MAX))),
                ),
                (
                    "limit",
                    limit.map(|limit| Bson::Int64(limit.try_into().unwrap_or(i64::MAX))),
                ),
                ("batchSize", batch_size.map(Bson::Int64)),
                ("singleBatch", flag(single_batch)),
                ("comment", options.comment.clone()),
                ("maxTimeMS", options.max_time.map(millis)),
                read_concern_field(self.read_concern.as_ref()),
                ("max", document(&options.max)),
                (
                    "maxScan",
                    options
                        .max_scan
                        .map(|scan| Bson::Int64(scan.try_into().unwrap_or(i64::MAX))),
                ),
                ("min", document(&options.min)),
                ("returnKey", options.return_key.map(Bson::Boolean)),
                ("showRecordId", options.show_record_id.map(Bson::Boolean)),
                ("tailable", flag(tailable)),
                ("awaitData", flag(await_data)),
                (
                    "noCursorTimeout",
                    options.no_cursor_timeout.map(Bson::Boolean),
                ),
                (
                    "allowPartialResults",
                    options.allow_partial_results.map(Bson::Boolean),
                ),
                ("collation", options.collation.clone().map(Bson::from)),
                ("allowDiskUse", options.allow_disk_use.map(Bson::Boolean)),
                ("let", document(&options.let_vars)),
                hello.raw_data_field(options.raw_data),
            ],
        );
        Ok(Command::new(self.namespace.db.as_str(), body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output> {
        let batch = Batch::from_reply(reply, &context.server.address)?;
        let namespace = self.namespace;
        let mut spec = CursorSpec::new(
            &context,
            &namespace.db,
            &namespace.coll,
            self.options.batch_size,
        );
        if self.options.cursor_type == Some(CursorType::TailableAwait) {
            spec.max_await_time = self.options.max_await_time;
        }
        spec.tailable = self.tailable();
        spec.iteration = spec.tailable || self.options.timeout_mode == Some(TimeoutMode::Iteration);
        spec.comment = self.options.comment.clone();
        Ok(Cursor::new(spec, batch))
    }

    /// A tailable cursor that does not await data, and one iterated with a timeoutMS
    /// for each iteration, send their find without a `maxTimeMS`.
    fn sends_max_time(&self) -> bool {
        let await_data = self.options.cursor_type == Some(CursorType::TailableAwait);
        (await_data || !self.tailable())
            && self.options.timeout_mode != Some(TimeoutMode::Iteration)
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }

    fn supports_read_concern(&self) -> bool {
        true
    }
}

/// An `aggregate` command, on a collection or (`collection: None`) a database.
pub(crate) struct Aggregate<'a> {
    pub database: &'a str,
    pub collection: Option<&'a str>,
    pub pipeline: Vec<Document>,
    pub options: AggregateOptions,
    pub selection_criteria: SelectionCriteria,
    pub read_concern: Option<ReadConcern>,
    pub write_concern: Option<WriteConcern>,
}

impl Aggregate<'_> {
    /// Refuses options that contradict timeoutMS (`timeout`).
    pub fn check_timeout(&self, timeout: Option<std::time::Duration>) -> Result<()> {
        check_cursor_timeout(
            timeout,
            self.options.timeout_mode,
            self.tailable(),
            self.options.max_await_time,
            self.writes(),
        )
    }

    /// Whether it opens a change stream, whose cursor is tailable.
    fn tailable(&self) -> bool {
        self.pipeline.first().is_some_and(is_change_stream_stage)
    }

    /// Whether the pipeline ends in `$out` or `$merge`: it writes.
    fn writes(&self) -> bool {
        self.pipeline
            .last()
            .and_then(|stage| stage.keys().next())
            .is_some_and(|stage| stage == "$out" || stage == "$merge")
    }
}

impl Operation for Aggregate<'_> {
    type Output = Cursor<Document>;

    fn name(&self) -> &str {
        "aggregate"
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: "aggregate",
            database: self.database,
            collection: self.collection,
        }
    }

    fn target(&self) -> Target<'_> {
        match self.writes() {
            true => Target::WriteStage(&self.selection_criteria),
            false => Target::Read(&self.selection_criteria),
        }
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let options = &self.options;
        let target = match self.collection {
            Some(collection) => Bson::String(collection.to_string()),
            None => Bson::Int32(1),
        };
        let mut cursor = Document::new();
        // A write stage returns no documents: its batch size would be meaningless
        // (CRUD spec, "Aggregate": batchSize is not sent with $out/$merge).
        if let Some(size) = options.batch_size.filter(|_| !self.writes()) {
            cursor.insert("batchSize", i64::from(size));
        }
        let mut body = doc! {
            "aggregate": target,
            "pipeline": self.pipeline.clone(),
            "cursor": cursor,
        };
        let document = |value: &Option<Document>| value.clone().map(Bson::Document);
        let write_concern = self
            .write_concern
            .as_ref()
            .filter(|concern| self.writes() && !concern.is_empty())
            .map(|concern| Bson::Document(concern.to_document()));
        insert_present(
            &mut body,
            [
                ("allowDiskUse", options.allow_disk_use.map(Bson::Boolean)),
                (
                    "bypassDocumentValidation",
                    options.bypass_document_validation.map(Bson::Boolean),
                ),
                ("collation", options.collation.clone().map(Bson::from)),
                ("comment", options.comment.clone()),
                ("hint", options.hint.clone().map(Bson::from)),
                ("maxTimeMS", options.max_time.map(millis)),
                read_concern_field(self.read_concern.as_ref()),
                ("writeConcern", write_concern),
                ("let", document(&options.let_vars)),
                hello.raw_data_field(options.raw_data),
            ],
        );
        Ok(Command::new(self.database, body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: ReplyContext<'_>,
    ) -> Result<Self::Output> {
        // Read and Write Concern spec, "Write Concern Error": a pipeline that writes
        // reports an unsatisfied write concern as write commands do, in a reply with
        // `ok: 1`.
        if self.writes() && matches!(reply.get("writeConcernError"), Ok(Some(_))) {
            WriteReply::check_write_concern(&crate::connection::reply_document(&reply)?)?;
        }
        let batch = Batch::from_reply(reply, &context.server.address)?;
        let mut spec = CursorSpec::new(
            &context,
            self.database,
            self.collection.unwrap_or("$cmd.aggregate"),
            self.options.batch_size,
        );
        spec.max_await_time = self.options.max_await_time;
        spec.comment = self.options.comment.clone();
        spec.tailable = self.tailable();
        // A change stream kills its cursor itself, as it resumes.
        spec.kills_on_error = !spec.tailable;
        spec.iteration = spec.tailable || self.options.timeout_mode == Some(TimeoutMode::Iteration);
        Ok(Cursor::new(spec, batch))
    }

    /// Iterated with a timeoutMS for each iteration, the aggregate is sent without a
    /// `maxTimeMS` (a change stream's is not: spec, "Change Streams").
    fn sends_max_time(&self) -> bool {
        self.options.timeout_mode != Some(TimeoutMode::Iteration)
    }

    fn retryability(&self) -> Retryability {
        match self.writes() {
            // Retryable Writes spec: aggregate with a write stage is not retryable.
            true => Retryability::None,
            false => Retryability::Read,
        }
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref().filter(|_| self.writes())
    }

    /// Its cursor comes from the reply.
    fn needs_reply(&self) -> bool {
        true
    }

    fn supports_read_concern(&self) -> bool {
        true
    }
}

/// A read command with a single-valued result: `count`, `distinct`, or the
/// `aggregate` of `count_documents`.
pub(crate) struct SimpleRead<'a> {
    pub database: &'a str,
    pub body: Document,
    pub selection_criteria: SelectionCriteria,
    pub read_concern: Option<ReadConcern>,
    /// `rawData`, added when the server knows it.
    pub raw_data: Option<bool>,
    /// Reads the result from the reply.
    pub result: fn(&Document) -> Result<Bson>,
}

impl Operation for SimpleRead<'_> {
    type Output = Bson;

    fn name(&self) -> &str {
        self.body.keys().next().map_or("", String::as_str)
    }

    fn traced(&self) -> Traced<'_> {
        Traced::of_command(self.database, &self.body)
    }

    fn target(&self) -> Target<'_> {
        Target::Read(&self.selection_criteria)
    }

    fn build(&mut self, hello: &HelloReply) -> Result<Command> {
        let mut body = self.body.clone();
        insert_present(
            &mut body,
            [
                read_concern_field(self.read_concern.as_ref()),
                hello.raw_data_field(self.raw_data),
            ],
        );
        Ok(Command::new(self.database, body))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, _context: ReplyContext<'_>) -> Result<Bson> {
        let reply = crate::connection::reply_document(&reply)?;
        (self.result)(&reply)
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }

    fn supports_read_concern(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRUD spec, `rawData` of find, aggregate, count and distinct: in the command
    /// when set, for MongoDB 8.2+ only.
    #[test]
    fn the_reads_send_raw_data_to_servers_that_know_it() {
        let hello = |max_wire_version| HelloReply {
            max_wire_version,
            ..HelloReply::default()
        };
        let raw_data = |command: Command| command.body.get("rawData").cloned();
        let namespace = Namespace::new("db", "coll");
        let mut find = Find {
            namespace: &namespace,
            filter: doc! {},
            options: FindOptions {
                raw_data: Some(true),
                ..FindOptions::default()
            },
            selection_criteria: SelectionCriteria::default(),
            read_concern: None,
        };
        assert_eq!(raw_data(find.build(&hello(27)).unwrap()), Some(true.into()));
        assert_eq!(raw_data(find.build(&hello(26)).unwrap()), None);
        find.options.raw_data = None;
        assert_eq!(raw_data(find.build(&hello(27)).unwrap()), None);

        let mut aggregate = Aggregate {
            database: "db",
            collection: Some("coll"),
            pipeline: Vec::new(),
            options: AggregateOptions {
                raw_data: Some(false),
                ..AggregateOptions::default()
            },
            selection_criteria: SelectionCriteria::default(),
            read_concern: None,
            write_concern: None,
        };
        let command = aggregate.build(&hello(27)).unwrap();
        assert_eq!(raw_data(command), Some(false.into()));
        assert_eq!(raw_data(aggregate.build(&hello(25)).unwrap()), None);

        let mut distinct = SimpleRead {
            database: "db",
            body: doc! { "distinct": "coll", "key": "k" },
            selection_criteria: SelectionCriteria::default(),
            read_concern: None,
            raw_data: Some(true),
            result: |_| Ok(Bson::Null),
        };
        let command = distinct.build(&hello(27)).unwrap();
        assert_eq!(
            command.body,
            doc! { "distinct": "coll", "key": "k", "rawData": true }
        );
        assert_eq!(raw_data(distinct.build(&hello(21)).unwrap()), None);
    }
}
