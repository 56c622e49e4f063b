//! The collection-level bulk write (CRUD spec, "Insert, Update, Replace, Delete, and
//! Bulk Writes"): how the statements of a list of models are grouped into `insert`,
//! `update` and `delete` commands, and the result assembled from their replies. Its
//! pure parts are apart from the I/O and tested without a server.

use bson::Bson;
use serde::Serialize;

use super::{add_count, BulkWriteOptions, BulkWriteResult, WriteModel};
use crate::concern::WriteConcern;
use crate::crud::write::{Spelling, Statement, WriteBatch, WriteKind, WriteReply};
use crate::crud::Namespace;
use crate::error::{
    BulkWriteFailure, Error, ErrorKind, IndexedWriteError, Result, WriteConcernError, WriteFailure,
};
use crate::operation::Executor;
use crate::session::ClientSession;

/// The writes of a bulk write as they are sent: runs of statements, each with the
/// index of its model, and the `_id` of each insert by index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    runs: Vec<Run>,
    /// `Some` for the inserts.
    ids: Vec<Option<Bson>>,
    ordered: bool,
}

/// Statements of one kind sent together, in as many commands as the server's limits
/// require.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    kind: WriteKind,
    statements: Vec<Statement>,
    /// The index of each statement's model in the caller's list.
    indexes: Vec<usize>,
}

/// The statements of a list of write models, each with the `_id` of its insert if it is
/// one, checked: the models' documents serialized when the bulk write is built (so its
/// future does not hold them), before its options say how to group them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statements {
    statements: Vec<Statement>,
    ids: Vec<Option<Bson>>,
}

impl Statements {
    /// The statements of `models`; an invalid model is an error naming its index.
    pub fn of_models<T: Serialize>(
        models: impl IntoIterator<Item = WriteModel<T>>,
        namespace: &crate::crud::Namespace,
    ) -> Result<Statements> {
        let (statements, ids) = models
            .into_iter()
            .enumerate()
            .map(|(index, model)| {
                // A model may name the collection (as a client bulk write's does),
                // but not another one: its write would land elsewhere.
                if let Some(other) = model.namespace().filter(|other| *other != namespace) {
                    return Err(Error::invalid_argument(format!(
                        "write model {index}: its namespace {other} is not the \
                         collection's, {namespace}"
                    )));
                }
                model
                    .statement(Spelling::WriteCommand)
                    .map_err(|error| match &*error.kind {
                        ErrorKind::InvalidArgument { message } => {
                            Error::invalid_argument(format!("write model {index}: {message}"))
                        }
                        _ => error,
                    })
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        Ok(Statements { statements, ids })
    }
}

impl Plan {
    /// The plan of the statements of some models; an empty list is an error, and
    /// nothing is sent (CRUD spec, "bulkWrite": "An error MUST be raised if the
    /// requests parameter is empty").
    pub fn of_models(statements: Statements, ordered: bool) -> Result<Plan> {
        Plan::new(
            statements.statements,
            statements.ids,
            ordered,
            "bulk_write needs at least one write model",
        )
    }

    /// The plan of inserting `documents`, each with its `_id`.
    pub fn of_inserts(documents: Vec<(bson::RawDocumentBuf, Bson)>, ordered: bool) -> Result<Plan> {
        let (statements, ids) = documents
            .into_iter()
            .map(|(document, id)| {
                (
                    Statement::insert(document, Spelling::WriteCommand),
                    Some(id),
                )
            })
            .unzip();
        Plan::new(
            statements,
            ids,
            ordered,
            "insert_many needs at least one document",
        )
    }

    fn new(
        statements: Vec<Statement>,
        ids: Vec<Option<Bson>>,
        ordered: bool,
        empty: &str,
    ) -> Result<Plan> {
        if statements.is_empty() {
            return Err(Error::invalid_argument(empty));
        }
        Ok(Plan {
            runs: runs(statements, ordered),
            ids,
            ordered,
        })
    }
}

/// Groups `statements` into runs: ordered, the consecutive statements of one kind (so
/// that the writes happen in the given order); unordered, every statement of a kind,
/// the kinds in the order they first appear.
fn runs(statements: Vec<Statement>, ordered: bool) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for (index, statement) in statements.into_iter().enumerate() {
        let run = match ordered {
            true => runs.last_mut().filter(|run| run.kind == statement.kind),
            false => runs.iter_mut().find(|run| run.kind == statement.kind),
        };
        match run {
            Some(run) => {
                run.statements.push(statement);
                run.indexes.push(index);
            }
            None => runs.push(Run {
                kind: statement.kind,
                statements: vec![statement],
                indexes: vec![index],
            }),
        }
    }
    runs
}

/// What the commands of a bulk write have said so far.
#[derive(Debug, Default)]
struct Outcome {
    result: BulkWriteResult,
    write_errors: Vec<IndexedWriteError>,
    write_concern_error: Option<WriteConcernError>,
    labels: Vec<String>,
}

impl Outcome {
    /// Records the reply to the command that sent `run.statements[offset..offset +
    /// sent]`, its indexes mapped to those of the models; whether the bulk write goes
    /// on (ordered, it stops at the first write error).
    fn record(
        &mut self,
        plan: &Plan,
        run: &Run,
        offset: usize,
        sent: usize,
        reply: WriteReply,
    ) -> Result<bool> {
        // The reply's indexes count from the run's first statement.
        let model = |index: usize| run.indexes.get(index).copied().unwrap_or(index);
        match run.kind {
            WriteKind::Insert => {
                add_count(&mut self.result.inserted_count, reply.n, &reply.address)?;
                let failed: Vec<usize> = reply.write_errors.iter().map(|e| e.index).collect();
                // Ordered, nothing after the first failure was attempted.
                let end = match (plan.ordered, failed.iter().min()) {
                    (true, Some(first)) => *first,
                    _ => offset + sent,
                };
                for index in (offset..end).filter(|index| !failed.contains(index)) {
                    let model = model(index);
                    if let Some(Some(id)) = plan.ids.get(model) {
                        self.result.inserted_ids.insert(model, id.clone());
                    }
                }
            }
            WriteKind::Update => {
                let upserted = u64::try_from(reply.upserted.len()).unwrap_or(u64::MAX);
                // An upsert matched nothing (CRUD spec, "UpdateResult").
                let (result, address) = (&mut self.result, &reply.address);
                add_count(
                    &mut result.matched_count,
                    reply.n.saturating_sub(upserted),
                    address,
                )?;
                add_count(&mut result.modified_count, reply.n_modified, address)?;
                add_count(&mut result.upserted_count, upserted, address)?;
                for (index, id) in reply.upserted {
                    self.result.upserted_ids.insert(model(index), id);
                }
            }
            WriteKind::Delete => {
                add_count(&mut self.result.deleted_count, reply.n, &reply.address)?
            }
        }
        let stop = plan.ordered && !reply.write_errors.is_empty();
        if !reply.write_errors.is_empty() || reply.write_concern_error.is_some() {
            self.labels.extend(reply.labels);
        }
        self.write_errors.extend(
            reply
                .write_errors
                .into_iter()
                .map(|error| IndexedWriteError {
                    index: model(error.index),
                    ..error
                }),
        );
        if reply.write_concern_error.is_some() {
            self.write_concern_error = reply.write_concern_error;
        }
        Ok(!stop)
    }

    /// The result, or the [`ErrorKind::CollectionBulkWrite`] error that carries it with every
    /// write error and the last write concern error (CRUD spec,
    /// "BulkWriteException").
    fn finish(self) -> Result<BulkWriteResult> {
        match self.write_errors.is_empty() && self.write_concern_error.is_none() {
            true => Ok(self.result),
            false => Err(self.into_error()),
        }
    }

    fn into_error(self) -> Error {
        let failure = BulkWriteFailure {
            write_errors: self.write_errors,
            write_concern_error: self.write_concern_error,
            write_result: self.result,
        };
        Error::new(ErrorKind::CollectionBulkWrite(failure))
            .with_labels(self.labels.iter().map(String::as_str))
    }

    /// The error that ended the bulk write: a write concern error the retry could
    /// not cure joins the others in an [`ErrorKind::CollectionBulkWrite`] error; any other stands
    /// as it is.
    fn fail(mut self, error: Error) -> Error {
        match &*error.kind {
            ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => {
                self.write_concern_error = Some(concern.clone());
                self.labels.extend(error.labels().iter().cloned());
                self.into_error()
            }
            _ => error,
        }
    }
}

/// Runs `plan`: each run in as many commands as the server's limits require, in
/// `session` (an implicit one when `None`), each command retried as its retryability
/// allows.
pub(crate) async fn execute(
    executor: &std::sync::Arc<Executor>,
    namespace: &Namespace,
    plan: Plan,
    options: &BulkWriteOptions,
    write_concern: Option<&WriteConcern>,
    session: Option<&ClientSession>,
    timing: crate::operation::Timing,
) -> Result<BulkWriteResult> {
    // One timeoutMS for all the batches (Client Side Operations Timeout spec,
    // "Batching").
    let context = executor.context(timing, session);
    let mut outcome = Outcome::default();
    outcome.result.acknowledged = write_concern.is_none_or(WriteConcern::is_acknowledged);
    let mut plan = plan;
    for index in 0..plan.runs.len() {
        // The batches lend their documents to their commands (`WriteBatch::build`).
        let mut statements = std::mem::take(&mut plan.runs[index].statements);
        let run = &plan.runs[index];
        let mut offset = 0;
        while offset < statements.len() {
            let mut batch = WriteBatch {
                offset,
                ..WriteBatch::new(namespace, run.kind, &mut statements, options, write_concern)
            };
            let reply = match executor.execute_with(context, &mut batch, session).await {
                Ok(reply) => reply,
                Err(error) => return Err(outcome.fail(error)),
            };
            let sent = batch.batch_len.unwrap_or(1);
            if !outcome.record(&plan, run, offset, sent, reply)? {
                return outcome.finish();
            }
            offset += sent;
        }
    }
    outcome.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crud::bulk_write::{
        DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
        UpdateOneModel,
    };

    /// The collection the models are written to.
    fn ns() -> crate::crud::Namespace {
        crate::crud::Namespace::new("db", "coll")
    }

    #[test]
    fn a_model_naming_another_collection_is_refused() {
        let model = DeleteOneModel::builder()
            .namespace(crate::crud::Namespace::new("db", "other"))
            .filter(bson::doc! {})
            .build();
        let error = Statements::of_models([WriteModel::<bson::Document>::from(model)], &ns())
            .err()
            .unwrap();
        assert!(error
            .to_string()
            .contains("write model 0: its namespace db.other"));
        let same = DeleteOneModel::builder()
            .namespace(ns())
            .filter(bson::doc! {})
            .build();
        assert!(Statements::of_models([WriteModel::<bson::Document>::from(same)], &ns()).is_ok());
    }

    fn models() -> Vec<WriteModel> {
        vec![
            InsertOneModel::new(bson::doc! { "_id": 1 }).into(),
            InsertOneModel::new(bson::doc! { "_id": 2 }).into(),
            DeleteOneModel::new(bson::doc! { "_id": 3 }).into(),
            UpdateOneModel::new(bson::doc! {}, bson::doc! { "$set": { "x": 1 } }).into(),
            InsertOneModel::new(bson::doc! { "_id": 4 }).into(),
            DeleteManyModel::new(bson::doc! {}).into(),
        ]
    }

    fn shape(plan: &Plan) -> Vec<(WriteKind, Vec<usize>)> {
        plan.runs
            .iter()
            .map(|run| (run.kind, run.indexes.clone()))
            .collect()
    }

    #[test]
    fn ordered_runs_are_consecutive_models_of_a_kind() {
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), true).unwrap();
        assert_eq!(
            shape(&plan),
            vec![
                (WriteKind::Insert, vec![0, 1]),
                (WriteKind::Delete, vec![2]),
                (WriteKind::Update, vec![3]),
                (WriteKind::Insert, vec![4]),
                (WriteKind::Delete, vec![5]),
            ]
        );
        assert_eq!(plan.ids[1], Some(Bson::Int32(2)));
        assert_eq!(plan.ids[2], None);
        assert!(plan.runs[4].statements[0].multi);
    }

    #[test]
    fn unordered_runs_hold_every_model_of_a_kind() {
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), false).unwrap();
        assert_eq!(
            shape(&plan),
            vec![
                (WriteKind::Insert, vec![0, 1, 4]),
                (WriteKind::Delete, vec![2, 5]),
                (WriteKind::Update, vec![3]),
            ]
        );
    }

    fn plan(model: WriteModel) -> Result<Plan> {
        Statements::of_models([model], &ns())
            .and_then(|statements| Plan::of_models(statements, true))
    }

    #[test]
    fn invalid_lists_are_refused_before_anything_is_sent() {
        let empty = Plan::of_models(
            Statements::of_models(Vec::<WriteModel>::new(), &ns()).unwrap(),
            true,
        )
        .unwrap_err();
        assert!(empty.to_string().contains("at least one"), "{empty}");
        let mut list = models();
        list.push(UpdateManyModel::new(bson::doc! {}, bson::doc! { "x": 1 }).into());
        let update = Statements::of_models(list, &ns())
            .and_then(|statements| Plan::of_models(statements, true))
            .unwrap_err();
        assert!(matches!(&*update.kind, ErrorKind::InvalidArgument { .. }));
        assert!(update.to_string().contains("write model 6"), "{update}");
        let replace = ReplaceOneModel::new(bson::doc! {}, bson::doc! { "$set": { "x": 1 } });
        let replace = plan(replace.into()).unwrap_err();
        assert!(replace.to_string().contains("write model 0"), "{replace}");
        let empty_update = UpdateOneModel::new(bson::doc! {}, bson::doc! {});
        assert!(plan(empty_update.into()).is_err());
        // A pipeline is an update.
        let pipeline = UpdateOneModel::new(bson::doc! {}, vec![bson::doc! { "$set": { "x": 1 } }]);
        assert!(plan(pipeline.into()).is_ok());
    }

    fn write_error(index: usize) -> IndexedWriteError {
        IndexedWriteError {
            index,
            code: 11000,
            code_name: None,
            message: "duplicate key".into(),
            details: None,
        }
    }

    #[test]
    fn replies_are_recorded_by_the_index_of_each_model() {
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), false).unwrap();
        let mut outcome = Outcome::default();
        // The insert run (models 0, 1, 4) in two commands; the second statement of the
        // run (model 1) fails.
        let first = WriteReply {
            n: 1,
            write_errors: vec![write_error(1)],
            ..WriteReply::default()
        };
        assert!(outcome.record(&plan, &plan.runs[0], 0, 2, first).unwrap());
        let second = WriteReply {
            n: 1,
            ..WriteReply::default()
        };
        assert!(outcome.record(&plan, &plan.runs[0], 2, 1, second).unwrap());
        // The delete run (models 2, 5).
        let deletes = WriteReply {
            n: 3,
            ..WriteReply::default()
        };
        assert!(outcome.record(&plan, &plan.runs[1], 0, 2, deletes).unwrap());
        // The update run (model 3) upserted.
        let updates = WriteReply {
            n: 1,
            upserted: vec![(0, Bson::Int32(9))],
            ..WriteReply::default()
        };
        assert!(outcome.record(&plan, &plan.runs[2], 0, 1, updates).unwrap());
        let ErrorKind::CollectionBulkWrite(failure) = *outcome.finish().unwrap_err().kind else {
            panic!("expected a bulk write error");
        };
        assert_eq!(failure.write_errors[0].index, 1);
        let result = failure.write_result;
        assert_eq!(
            result.inserted_ids.keys().copied().collect::<Vec<_>>(),
            vec![0, 4]
        );
        assert_eq!(result.inserted_count, 2);
        assert_eq!(result.deleted_count, 3);
        assert_eq!((result.matched_count, result.upserted_count), (0, 1));
        assert_eq!(result.upserted_ids.get(&3), Some(&Bson::Int32(9)));
    }

    #[test]
    fn counts_adding_up_past_u64_max_are_a_misbehaving_server() {
        // issue 41: the sums panicked (or wrapped, in a release build).
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), false).unwrap();
        let mut outcome = Outcome::default();
        let reply = || WriteReply {
            n: u64::try_from(i64::MAX).unwrap(),
            address: "db:27017".into(),
            ..WriteReply::default()
        };
        let run = &plan.runs[1];
        assert!(outcome.record(&plan, run, 0, 1, reply()).unwrap());
        assert!(outcome.record(&plan, run, 1, 1, reply()).unwrap());
        let error = outcome.record(&plan, run, 2, 1, reply()).unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::MisbehavingServer { address, .. }
                if address == "db:27017"),
            "{error}"
        );
    }

    #[test]
    fn ordered_writes_stop_at_the_first_write_error() {
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), true).unwrap();
        let mut outcome = Outcome::default();
        let reply = WriteReply {
            n: 0,
            write_errors: vec![write_error(0)],
            labels: vec!["SomeLabel".into()],
            ..WriteReply::default()
        };
        assert!(!outcome.record(&plan, &plan.runs[0], 0, 2, reply).unwrap());
        let error = outcome.finish().unwrap_err();
        assert!(error.contains_label("SomeLabel"));
        let ErrorKind::CollectionBulkWrite(failure) = &*error.kind else {
            panic!("expected a bulk write error, got {error}");
        };
        // Model 1 came after the failure: it was not inserted.
        assert!(failure.write_result.inserted_ids.is_empty());
    }

    #[test]
    fn a_write_concern_error_fails_the_bulk_write_with_what_was_done() {
        let plan = Plan::of_models(Statements::of_models(models(), &ns()).unwrap(), true).unwrap();
        let mut outcome = Outcome::default();
        let concern = super::super::write_concern_error(64, "waiting for replication timed out");
        let reply = WriteReply {
            n: 2,
            write_concern_error: Some(concern.clone()),
            ..WriteReply::default()
        };
        // A write concern error does not stop an ordered bulk write.
        assert!(outcome.record(&plan, &plan.runs[0], 0, 2, reply).unwrap());
        let error = outcome.finish().unwrap_err();
        let ErrorKind::CollectionBulkWrite(failure) = &*error.kind else {
            panic!("expected a bulk write error, got {error}");
        };
        assert_eq!(failure.write_concern_error, Some(concern.clone()));
        assert_eq!(failure.write_result.inserted_count, 2);
        // One the retry could not cure ends it, with what was done before.
        let error = Error::new(ErrorKind::Write(WriteFailure::WriteConcernError(concern)))
            .with_label("RetryableWriteError");
        let failed = Outcome::default().fail(error);
        assert!(failed.contains_label("RetryableWriteError"));
        assert!(
            matches!(&*failed.kind, ErrorKind::CollectionBulkWrite(failure)
            if failure.write_concern_error.is_some())
        );
        let other = Outcome::default().fail(Error::invalid_argument("x"));
        assert!(matches!(&*other.kind, ErrorKind::InvalidArgument { .. }));
    }
}
