//! The client-level bulk write (spec "clientBulkWrite"): the models, each nested in a
//! single-key object that names its kind, become the driver's write models; the
//! result, and the parts of a `BulkWriteError` that `expectError` names
//! (`writeErrors`, `writeConcernErrors`, `expectResult`), become the documents the
//! tests expect.

use anymongo::crud::client_bulk_write::{
    ClientBulkWriteOptions, ClientBulkWriteResult, DeleteManyModel, DeleteOneModel, InsertOneModel,
    ReplaceOneModel, UpdateManyModel, UpdateOneModel, WriteModel,
};
use anymongo::error::{BulkWriteError, WriteConcernError, WriteError};
use anymongo::{Error, ErrorKind};
use bson::{doc, Bson, Document};
use serde::Deserialize;

use super::arguments::Arguments;
use super::crud::update_modifications;
use super::matching::Matcher;
use super::model::{ExpectedError, Operation};
use super::operations::{Context, Returned};
use super::Abort;

/// The options of `clientBulkWrite` (`anymongo::crud::client_bulk_write::ClientBulkWriteOptions`).
const OPTIONS: &[&str] = &[
    "bypassDocumentValidation",
    "comment",
    "let",
    "ordered",
    "rawData",
    "verboseResults",
    "writeConcern",
];

/// Spec `clientBulkWrite` on a client entity: the result is the `BulkWriteResult`.
pub async fn client_bulk_write(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let client = context.entities.client(&operation.object)?.client.clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let models = arguments
        .documents("models")?
        .into_iter()
        .map(|model| write_model(operation, model))
        .collect::<Result<Vec<_>, _>>()?;
    let options: ClientBulkWriteOptions = arguments.options(OPTIONS)?;
    // The driver asks for verbose results with `.verbose_results()`, not an option.
    let verbose = operation
        .arguments
        .get_bool("verboseResults")
        .unwrap_or(false);
    let mut action = client.bulk_write(models).with_options(options);
    if let Some(session) = &session {
        action = action.session(session);
    }
    let result: Result<ClientBulkWriteResult, Error> = match verbose {
        true => action.verbose_results().await.map(Into::into),
        false => action.await.map(Into::into),
    };
    Ok(result.map(|result| Some(result_document(&result))))
}

/// The options of one write model, each sent only when given.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ModelOptions {
    array_filters: Option<Vec<Bson>>,
    collation: Option<Document>,
    hint: Option<Bson>,
    upsert: Option<bool>,
    sort: Option<Document>,
}

/// A model as the tests spell it, `{ <kind>: { namespace, ... } }` (spec
/// "clientBulkWrite").
fn write_model(operation: &Operation, model: Document) -> Result<WriteModel, Abort> {
    let mut entries = model.into_iter();
    let (kind, fields) = match (entries.next(), entries.next()) {
        (Some((kind, Bson::Document(fields))), None) => (kind, fields),
        _ => {
            return Err(Abort::Failed(
                "a clientBulkWrite model must be one key naming its kind".to_owned(),
            ))
        }
    };
    // The model's fields, read like an operation's arguments.
    let fields = Operation {
        name: format!("{}: {kind}", operation.name),
        object: operation.object.clone(),
        arguments: fields,
        expect_error: None,
        expect_result: None,
        save_result_as_entity: None,
        ignore_result_and_error: false,
    };
    let mut arguments = Arguments::of(&fields);
    let namespace = arguments.string("namespace")?;
    let model: WriteModel = match kind.as_str() {
        "insertOne" => {
            let document = arguments.document("document")?;
            arguments.done()?;
            InsertOneModel::new(document).into()
        }
        "updateOne" | "updateMany" => {
            let filter = arguments.document("filter")?;
            let update = update_modifications(arguments.required("update")?)?;
            if kind == "updateOne" {
                let options: ModelOptions =
                    arguments.options(&["arrayFilters", "collation", "hint", "upsert", "sort"])?;
                let mut model = UpdateOneModel::new(filter, update);
                model.array_filters = options.array_filters;
                model.collation = options.collation;
                model.hint = options.hint;
                model.upsert = options.upsert;
                model.sort = options.sort;
                model.into()
            } else {
                let options: ModelOptions =
                    arguments.options(&["arrayFilters", "collation", "hint", "upsert"])?;
                let mut model = UpdateManyModel::new(filter, update);
                model.array_filters = options.array_filters;
                model.collation = options.collation;
                model.hint = options.hint;
                model.upsert = options.upsert;
                model.into()
            }
        }
        "replaceOne" => {
            let filter = arguments.document("filter")?;
            let replacement = arguments.document("replacement")?;
            let options: ModelOptions =
                arguments.options(&["collation", "hint", "upsert", "sort"])?;
            let mut model = ReplaceOneModel::new(filter, replacement);
            model.collation = options.collation;
            model.hint = options.hint;
            model.upsert = options.upsert;
            model.sort = options.sort;
            model.into()
        }
        "deleteOne" | "deleteMany" => {
            let filter = arguments.document("filter")?;
            let options: ModelOptions = arguments.options(&["collation", "hint"])?;
            if kind == "deleteOne" {
                let mut model = DeleteOneModel::new(filter);
                model.collation = options.collation;
                model.hint = options.hint;
                model.into()
            } else {
                let mut model = DeleteManyModel::new(filter);
                model.collation = options.collation;
                model.hint = options.hint;
                model.into()
            }
        }
        other => {
            return Err(Abort::Unsupported(format!(
                "clientBulkWrite: the write model {other} is not supported"
            )))
        }
    };
    let namespace = namespace
        .parse()
        .map_err(|error| Abort::Failed(format!("{}: {error}", operation.name)))?;
    Ok(model.with_namespace(namespace))
}

/// A `BulkWriteResult` as the tests spell it: the counts, and the verbose results by
/// index (as strings) when there are some; an unacknowledged one is only
/// `{ acknowledged: false }`.
fn result_document(result: &ClientBulkWriteResult) -> Bson {
    if !result.acknowledged {
        return Bson::Document(doc! { "acknowledged": false });
    }
    let mut document = doc! {
        "insertedCount": count(result.inserted_count),
        "upsertedCount": count(result.upserted_count),
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "deletedCount": count(result.deleted_count),
    };
    if let Some(verbose) = &result.verbose_results {
        let by_index = |results: Vec<(usize, Document)>| -> Document {
            results
                .into_iter()
                .map(|(index, result)| (index.to_string(), Bson::Document(result)))
                .collect()
        };
        let inserts = verbose
            .insert_results
            .iter()
            .map(|(i, result)| (*i, doc! { "insertedId": result.inserted_id.clone() }))
            .collect();
        let updates = verbose
            .update_results
            .iter()
            .map(|(i, result)| {
                let mut update = doc! {
                    "matchedCount": count(result.matched_count),
                    "modifiedCount": count(result.modified_count),
                };
                if let Some(id) = &result.upserted_id {
                    update.insert("upsertedId", id.clone());
                }
                (*i, update)
            })
            .collect();
        let deletes = verbose
            .delete_results
            .iter()
            .map(|(i, result)| (*i, doc! { "deletedCount": count(result.deleted_count) }))
            .collect();
        document.insert("insertResults", by_index(inserts));
        document.insert("updateResults", by_index(updates));
        document.insert("deleteResults", by_index(deletes));
    }
    Bson::Document(document)
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The client bulk write failure `error` is, if it is one.
fn failure(error: &Error) -> Option<&BulkWriteError> {
    match &*error.kind {
        ErrorKind::BulkWrite(failure) => Some(failure),
        _ => None,
    }
}

/// The partial result a client bulk write's error carries, as the tests spell it
/// (`None`: it has none). Another error carries no result the runner can show: the
/// test is unsupported.
pub fn partial_result(error: &Error) -> Result<Option<Bson>, Abort> {
    let failure = failure(error).ok_or_else(|| {
        Abort::Unsupported(format!(
            "expectError.expectResult: only a client bulk write's error carries a result \
             the runner reads; the error: {error}"
        ))
    })?;
    let partial = failure
        .partial_result
        .clone()
        .map(ClientBulkWriteResult::from);
    Ok(partial.as_ref().map(result_document))
}

/// Checks `expectError.writeErrors` (each by its index, and no others) and
/// `expectError.writeConcernErrors` (in order, and no others), each matched as a
/// root-level document (spec "expectedError").
pub fn check_errors(
    expected: &ExpectedError,
    error: &Error,
    matcher: &Matcher<'_>,
) -> Result<(), Abort> {
    let failure = failure(error);
    if let Some(expected) = &expected.write_errors {
        let actual: Document = failure
            .map(|failure| {
                failure
                    .write_errors
                    .iter()
                    .map(|(index, error)| (index.to_string(), write_error(error)))
                    .collect()
            })
            .unwrap_or_default();
        // The same indexes, in whatever order: the error keeps them in a map.
        let indexes = |document: &Document| {
            let mut indexes = document.keys().cloned().collect::<Vec<_>>();
            indexes.sort();
            indexes
        };
        if indexes(expected) != indexes(&actual) {
            return Err(Abort::Failed(format!(
                "expected write errors at {:?}, got {actual}; the error: {error}",
                indexes(expected)
            )));
        }
        for (index, expected) in expected {
            let actual = actual.get(index).unwrap_or(&Bson::Null);
            matcher
                .root(expected, actual)
                .map_err(|why| format!("writeErrors.{index}: {why}"))?;
        }
    }
    if let Some(expected) = &expected.write_concern_errors {
        let actual: Vec<Bson> = failure
            .map(|failure| {
                failure
                    .write_concern_errors
                    .iter()
                    .map(write_concern_error)
                    .collect()
            })
            .unwrap_or_default();
        if expected.len() != actual.len() {
            return Err(Abort::Failed(format!(
                "expected {} write concern errors, got {actual:?}; the error: {error}",
                expected.len()
            )));
        }
        for (i, (expected, actual)) in expected.iter().zip(&actual).enumerate() {
            matcher
                .root(&Bson::Document(expected.clone()), actual)
                .map_err(|why| format!("writeConcernErrors.{i}: {why}"))?;
        }
    }
    Ok(())
}

/// A write error as the tests spell it.
fn write_error(error: &WriteError) -> Bson {
    error_document(
        error.code,
        error.code_name.as_deref(),
        &error.message,
        error.details.as_ref(),
    )
}

/// A write concern error as the tests spell it.
fn write_concern_error(error: &WriteConcernError) -> Bson {
    error_document(
        error.code,
        Some(error.code_name.as_str()).filter(|name| !name.is_empty()),
        &error.message,
        error.details.as_ref(),
    )
}

fn error_document(
    code: i32,
    code_name: Option<&str>,
    message: &str,
    details: Option<&Document>,
) -> Bson {
    let mut document = doc! { "code": code, "message": message };
    if let Some(name) = code_name {
        document.insert("codeName", name);
    }
    if let Some(details) = details {
        document.insert("details", details.clone());
    }
    Bson::Document(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::crud::client_bulk_write::{SummaryBulkWriteResult, VerboseResults};
    use anymongo::crud::{InsertOneResult, UpdateResult};
    use anymongo::error::PartialBulkWriteResult;

    fn operation(arguments: Document) -> Operation {
        bson::deserialize_from_document(
            doc! { "name": "clientBulkWrite", "object": "client0", "arguments": arguments },
        )
        .unwrap()
    }

    #[test]
    fn models_are_read_with_their_options() {
        let op = operation(doc! {});
        let model = write_model(
            &op,
            doc! { "updateOne": {
                "namespace": "db.coll", "filter": { "_id": 1 }, "update": [{ "$set": { "x": 1 } }],
                "upsert": true, "sort": { "_id": -1 }, "hint": "_id_",
            } },
        )
        .unwrap();
        let WriteModel::UpdateOne(model) = model else {
            panic!("{model:?}");
        };
        assert_eq!(model.namespace, anymongo::Namespace::new("db", "coll"));
        assert_eq!(model.upsert, Some(true));
        assert_eq!(model.sort, Some(doc! { "_id": -1 }));
        assert_eq!(model.hint, Some(Bson::String("_id_".into())));
        // updateMany has no sort: the test would need what the driver lacks.
        let many = doc! { "updateMany": {
            "namespace": "db.coll", "filter": {}, "update": { "$set": { "x": 1 } }, "sort": {},
        } };
        assert!(matches!(write_model(&op, many), Err(Abort::Unsupported(_))));
        let two_kinds = doc! { "deleteOne": { "namespace": "db.c", "filter": {} }, "x": {} };
        assert!(matches!(write_model(&op, two_kinds), Err(Abort::Failed(_))));
        let unknown = doc! { "upsertOne": { "namespace": "db.c" } };
        assert!(matches!(
            write_model(&op, unknown),
            Err(Abort::Unsupported(_))
        ));
    }

    fn expected(document: Document) -> ExpectedError {
        bson::deserialize_from_document(document).unwrap()
    }

    fn failed_bulk_write() -> Error {
        let mut failure = BulkWriteError::default();
        let write_error = WriteError {
            code: 17276,
            code_name: None,
            message: "Use of undefined variable: id2".into(),
            details: None,
        };
        failure.write_errors.insert(1, write_error);
        failure.write_concern_errors.push(WriteConcernError {
            code: 91,
            code_name: "ShutdownInProgress".into(),
            message: "Replication is being shut down".into(),
            details: None,
        });
        Error::new(ErrorKind::BulkWrite(failure))
    }

    #[test]
    fn write_errors_and_write_concern_errors_must_match_all_and_only_those() {
        let entities = super::super::entities::EntityMap::default();
        let matcher = Matcher::new(&entities);
        let error = failed_bulk_write();
        let check = |expectation: Document| check_errors(&expected(expectation), &error, &matcher);
        check(doc! {
            "writeErrors": { "1": { "code": 17276 } },
            "writeConcernErrors": [{ "code": 91, "message": "Replication is being shut down" }],
        })
        .unwrap();
        for (expectation, because) in [
            (
                doc! { "writeErrors": { "0": { "code": 17276 } } },
                "write errors at",
            ),
            (doc! { "writeErrors": {} }, "write errors at"),
            (
                doc! { "writeErrors": { "1": { "code": 2 } } },
                "writeErrors.1",
            ),
            (
                doc! { "writeConcernErrors": [] },
                "expected 0 write concern errors",
            ),
            (
                doc! { "writeConcernErrors": [{ "code": 64 }] },
                "writeConcernErrors.0",
            ),
        ] {
            match check(expectation.clone()) {
                Err(Abort::Failed(why)) => assert!(why.contains(because), "{why}"),
                other => panic!("{expectation}: {other:?}"),
            }
        }
        // Another error has no write errors.
        let other = Error::invalid_argument("x");
        let checked = check_errors(
            &expected(doc! { "writeErrors": { "0": {} } }),
            &other,
            &matcher,
        );
        assert!(matches!(checked, Err(Abort::Failed(_))));
    }

    #[test]
    fn only_a_client_bulk_write_error_has_a_partial_result() {
        assert_eq!(partial_result(&failed_bulk_write()).unwrap(), None);
        let mut summary = SummaryBulkWriteResult::default();
        summary.acknowledged = true;
        summary.deleted_count = 1;
        let failure = BulkWriteError {
            partial_result: Some(PartialBulkWriteResult::Summary(summary)),
            ..BulkWriteError::default()
        };
        let error = Error::new(ErrorKind::BulkWrite(failure));
        let partial = partial_result(&error).unwrap().unwrap();
        assert_eq!(
            partial.as_document().unwrap().get_i64("deletedCount").ok(),
            Some(1)
        );
        assert!(matches!(
            partial_result(&Error::invalid_argument("x")),
            Err(Abort::Unsupported(_))
        ));
    }

    #[test]
    fn results_are_spelled_as_the_tests_expect() {
        let mut result = ClientBulkWriteResult {
            acknowledged: true,
            inserted_count: 1,
            upserted_count: 1,
            ..ClientBulkWriteResult::default()
        };
        let summary = result_document(&result);
        assert_eq!(
            summary,
            Bson::Document(doc! {
                "insertedCount": 1_i64, "upsertedCount": 1_i64, "matchedCount": 0_i64,
                "modifiedCount": 0_i64, "deletedCount": 0_i64,
            })
        );
        let mut verbose = VerboseResults::default();
        verbose.insert_results.insert(
            0,
            InsertOneResult {
                inserted_id: Bson::Int32(8),
            },
        );
        verbose.update_results.insert(
            3,
            UpdateResult {
                matched_count: 1,
                modified_count: 0,
                upserted_id: Some(Bson::Int32(4)),
            },
        );
        result.verbose_results = Some(verbose);
        let Bson::Document(verbose) = result_document(&result) else {
            panic!();
        };
        assert_eq!(
            verbose.get_document("insertResults").unwrap(),
            &doc! { "0": { "insertedId": 8 } }
        );
        assert_eq!(
            verbose.get_document("updateResults").unwrap(),
            &doc! { "3": { "matchedCount": 1_i64, "modifiedCount": 0_i64, "upsertedId": 4 } }
        );
        assert_eq!(verbose.get_document("deleteResults").unwrap(), &doc! {});
        let unacknowledged = ClientBulkWriteResult::default();
        assert_eq!(
            result_document(&unacknowledged),
            Bson::Document(doc! { "acknowledged": false })
        );
    }
}
