//! The collection's `bulkWrite` (spec "Collection Operations", `bulkWrite`; CRUD spec,
//! "Bulk Write Models"): its `requests` turned into the driver's write models, and its
//! result (or the partial result of its error, `expectError.expectResult`) into the
//! document the tests expect.

use anymongo::crud::bulk_write::{
    BulkWriteOptions, BulkWriteResult, DeleteManyModel, DeleteOneModel, InsertOneModel,
    ReplaceOneModel, UpdateManyModel, UpdateOneModel, WriteModel,
};
use anymongo::{Collection, Error, ErrorKind};
use bson::{doc, Bson, Document};

use super::arguments::Arguments;
use super::crud::update_modifications;
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// The options of `bulkWrite` (`anymongo::crud::bulk_write::BulkWriteOptions`).
pub const OPTIONS: &[&str] = &[
    "bypassDocumentValidation",
    "comment",
    "let",
    "ordered",
    "rawData",
    "writeConcern",
];

/// Spec `bulkWrite`: the result is the `BulkWriteResult` as [`result_document`] spells
/// it.
pub async fn bulk_write(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let collection: Collection<Document> = context
        .entities
        .collection(&operation.object)?
        .collection
        .clone();
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let models = match arguments.required("requests")? {
        Bson::Array(requests) => requests
            .into_iter()
            .map(write_model)
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(Abort::Failed(format!(
                "bulkWrite: requests must be an array, not {other}"
            )))
        }
    };
    let options: BulkWriteOptions = arguments.options(OPTIONS)?;
    let result = match &session {
        Some(session) => {
            collection
                .bulk_write(models)
                .with_options(options)
                .session(session)
                .await
        }
        None => collection.bulk_write(models).with_options(options).await,
    };
    Ok(result.map(|result| Some(result_document(&result))))
}

/// One request, `{ <model name>: { <fields> } }`, as a write model; a field the runner
/// does not know makes the test unsupported.
fn write_model(request: Bson) -> Result<WriteModel, Abort> {
    let Bson::Document(request) = request else {
        return Err(Abort::Failed(format!("a request {request}")));
    };
    let mut entries = request.into_iter();
    let (Some((name, Bson::Document(fields))), None) = (entries.next(), entries.next()) else {
        return Err(Abort::Failed(
            "a request must be one model name and its fields".to_owned(),
        ));
    };
    let mut fields = Fields { name, fields };
    let model = match fields.name.as_str() {
        "insertOne" => InsertOneModel::new(fields.document("document")?).into(),
        "updateOne" => {
            let model = UpdateOneModel::new(fields.document("filter")?, fields.update()?);
            WriteModel::UpdateOne(UpdateOneModel {
                array_filters: fields.array_filters()?,
                collation: fields.collation()?,
                hint: fields.hint()?,
                sort: fields.optional_document("sort")?,
                upsert: fields.upsert()?,
                ..model
            })
        }
        "updateMany" => {
            let model = UpdateManyModel::new(fields.document("filter")?, fields.update()?);
            WriteModel::UpdateMany(UpdateManyModel {
                array_filters: fields.array_filters()?,
                collation: fields.collation()?,
                hint: fields.hint()?,
                upsert: fields.upsert()?,
                ..model
            })
        }
        "replaceOne" => {
            let model =
                ReplaceOneModel::new(fields.document("filter")?, fields.document("replacement")?);
            WriteModel::ReplaceOne(ReplaceOneModel {
                collation: fields.collation()?,
                hint: fields.hint()?,
                sort: fields.optional_document("sort")?,
                upsert: fields.upsert()?,
                ..model
            })
        }
        "deleteOne" => WriteModel::DeleteOne(DeleteOneModel {
            collation: fields.collation()?,
            hint: fields.hint()?,
            ..DeleteOneModel::new(fields.document("filter")?)
        }),
        "deleteMany" => WriteModel::DeleteMany(DeleteManyModel {
            collation: fields.collation()?,
            hint: fields.hint()?,
            ..DeleteManyModel::new(fields.document("filter")?)
        }),
        other => {
            return Err(Abort::Unsupported(format!(
                "bulkWrite: the write model {other} is not supported"
            )))
        }
    };
    match fields.fields.keys().next() {
        Some(key) => Err(Abort::Unsupported(format!(
            "bulkWrite: the field {key} of {} is not supported",
            fields.name
        ))),
        None => Ok(model),
    }
}

/// The fields of one request not taken yet.
struct Fields {
    name: String,
    fields: Document,
}

impl Fields {
    /// The model's `collation`, if given.
    fn collation(&mut self) -> Result<Option<Document>, Abort> {
        self.typed("collation")
    }

    /// The model's `hint` (an index name or key pattern), if given.
    fn hint(&mut self) -> Result<Option<Bson>, Abort> {
        self.typed("hint")
    }

    /// The field `key`, if given, read as a `T`.
    fn typed<T: serde::de::DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, Abort> {
        self.fields
            .remove(key)
            .map(|value| {
                bson::deserialize_from_bson(value.clone()).map_err(|error| {
                    Abort::Failed(format!("{}: {key} {value}: {error}", self.name))
                })
            })
            .transpose()
    }

    fn optional_document(&mut self, key: &str) -> Result<Option<Document>, Abort> {
        match self.fields.remove(key) {
            None => Ok(None),
            Some(Bson::Document(document)) => Ok(Some(document)),
            Some(other) => Err(self.not_a(key, "document", &other)),
        }
    }

    fn document(&mut self, key: &str) -> Result<Document, Abort> {
        self.optional_document(key)?
            .ok_or_else(|| Abort::Failed(format!("{} needs {key}", self.name)))
    }

    fn update(&mut self) -> Result<anymongo::collection::UpdateModifications, Abort> {
        let update = self
            .fields
            .remove("update")
            .ok_or_else(|| Abort::Failed(format!("{} needs update", self.name)))?;
        update_modifications(update)
    }

    fn upsert(&mut self) -> Result<Option<bool>, Abort> {
        match self.fields.remove("upsert") {
            None => Ok(None),
            Some(Bson::Boolean(upsert)) => Ok(Some(upsert)),
            Some(other) => Err(self.not_a("upsert", "boolean", &other)),
        }
    }

    fn array_filters(&mut self) -> Result<Option<Vec<Bson>>, Abort> {
        match self.fields.remove("arrayFilters") {
            None => Ok(None),
            Some(Bson::Array(filters)) => filters
                .into_iter()
                .map(|filter| match filter {
                    Bson::Document(filter) => Ok(Bson::Document(filter)),
                    other => Err(self.not_a("arrayFilters", "array of documents", &other)),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(self.not_a("arrayFilters", "array of documents", &other)),
        }
    }

    fn not_a(&self, key: &str, what: &str, value: &Bson) -> Abort {
        Abort::Failed(format!(
            "{}: {key} must be a {what}, not {value}",
            self.name
        ))
    }
}

/// A `BulkWriteResult` as the CRUD spec's tests spell it: the counts, and the
/// `insertedIds` and `upsertedIds` maps keyed by the index of the model.
pub fn result_document(result: &BulkWriteResult) -> Bson {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let by_index = |ids: &std::collections::BTreeMap<usize, Bson>| -> Document {
        ids.iter()
            .map(|(index, id)| (index.to_string(), id.clone()))
            .collect()
    };
    Bson::Document(doc! {
        "insertedCount": count(result.inserted_count),
        "matchedCount": count(result.matched_count),
        "modifiedCount": count(result.modified_count),
        "deletedCount": count(result.deleted_count),
        "upsertedCount": count(result.upserted_count),
        "insertedIds": by_index(&result.inserted_ids),
        "upsertedIds": by_index(&result.upserted_ids),
    })
}

/// The partial result a bulk write's error carries (spec "expectedError",
/// `expectResult`), if it carries one.
pub fn partial_result(error: &Error) -> Option<Bson> {
    match &*error.kind {
        ErrorKind::CollectionBulkWrite(failure) => Some(result_document(&failure.write_result)),
        // An insertMany's error has the `_id`s of the documents inserted: the result
        // of the bulk write of inserts it ran.
        ErrorKind::InsertMany(failure) => Some(result_document(&BulkWriteResult {
            inserted_count: u64::try_from(failure.inserted_ids.len()).unwrap_or(u64::MAX),
            inserted_ids: failure
                .inserted_ids
                .iter()
                .map(|(index, id)| (*index, id.clone()))
                .collect(),
            ..Default::default()
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::collection::UpdateModifications;

    #[test]
    fn requests_become_write_models() {
        let update = write_model(Bson::Document(doc! {
            "updateOne": {
                "filter": { "_id": 1 }, "update": [{ "$set": { "x": 1 } }],
                "upsert": true, "hint": "_id_", "sort": { "x": -1 },
            }
        }))
        .unwrap();
        let WriteModel::UpdateOne(update) = update else {
            panic!("expected updateOne, got {update:?}");
        };
        assert_eq!(update.filter, doc! { "_id": 1 });
        assert_eq!(
            update.update,
            UpdateModifications::Pipeline(vec![doc! { "$set": { "x": 1 } }])
        );
        assert_eq!(update.upsert, Some(true));
        assert_eq!(update.hint, Some(Bson::String("_id_".into())));
        assert_eq!(update.sort, Some(doc! { "x": -1 }));
        let delete = write_model(Bson::Document(
            doc! { "deleteMany": { "filter": {}, "collation": { "locale": "fr" } } },
        ))
        .unwrap();
        assert!(matches!(delete, WriteModel::DeleteMany(model) if model.collation.is_some()));
    }

    #[test]
    fn unknown_models_and_fields_are_unsupported() {
        let unknown = write_model(Bson::Document(doc! { "upsertOne": { "filter": {} } }));
        assert!(matches!(unknown, Err(Abort::Unsupported(why)) if why.contains("upsertOne")));
        let field = write_model(Bson::Document(
            doc! { "deleteOne": { "filter": {}, "limit": 1 } },
        ));
        assert!(matches!(field, Err(Abort::Unsupported(why)) if why.contains("limit")));
        let missing = write_model(Bson::Document(doc! { "insertOne": {} }));
        assert!(matches!(missing, Err(Abort::Failed(why)) if why.contains("document")));
    }

    #[test]
    fn results_are_keyed_by_index() {
        let result = BulkWriteResult {
            inserted_count: 1,
            upserted_count: 1,
            inserted_ids: [(0, Bson::Int32(3))].into(),
            upserted_ids: [(2, Bson::Int32(4))].into(),
            ..BulkWriteResult::default()
        };
        assert_eq!(
            result_document(&result),
            Bson::Document(doc! {
                "insertedCount": 1_i64, "matchedCount": 0_i64, "modifiedCount": 0_i64,
                "deletedCount": 0_i64, "upsertedCount": 1_i64,
                "insertedIds": { "0": 3 }, "upsertedIds": { "2": 4 },
            })
        );
        assert_eq!(partial_result(&Error::invalid_argument("x")), None);
    }
}
