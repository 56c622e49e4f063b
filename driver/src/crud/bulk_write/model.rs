//! The write models of both bulk writes: [`WriteModel`], one write on the collection
//! its namespace names; and the statement each becomes.

use bson::{Array, Bson, Document};
use serde::Serialize;

use crate::crud::write::{replacement_document, with_id};
use crate::crud::write::{DeleteStatement, Spelling, Statement, UpdateStatement};
use crate::crud::Namespace;
use crate::error::{Error, Result};

/// One write of a bulk write (CRUD spec, "Bulk Write Models"; Bulk Write spec, "Write
/// Models"): of a [`Collection::bulk_write`](crate::Collection::bulk_write), where `T`
/// is the collection's document type, or of a
/// [`Client::bulk_write`](crate::Client::bulk_write), where each model names its
/// collection (`namespace`). Built with each model's builder
/// (`UpdateOneModel::builder().namespace(coll.namespace()).filter(..).update(..).build()`)
/// and `.into()`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WriteModel<T = Document> {
    /// Inserts a document.
    InsertOne(InsertOneModel<T>),
    /// Updates the first document matching a filter.
    UpdateOne(UpdateOneModel),
    /// Updates every document matching a filter.
    UpdateMany(UpdateManyModel),
    /// Replaces the first document matching a filter.
    ReplaceOne(ReplaceOneModel<T>),
    /// Deletes the first document matching a filter.
    DeleteOne(DeleteOneModel),
    /// Deletes every document matching a filter.
    DeleteMany(DeleteManyModel),
}

/// Inserts `document`; an `_id` is generated when it has none.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct InsertOneModel<T = Document> {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// The document to insert.
    pub document: T,
}

impl<T> InsertOneModel<T> {
    /// Inserts `document`.
    pub fn new(document: T) -> Self {
        InsertOneModel {
            namespace: Namespace::default(),
            document,
        }
    }
}

/// Applies an update to the first document matching `filter`. The options left
/// `None` are not sent.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct UpdateOneModel {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// Which document to update.
    pub filter: Document,
    /// An update document (every key an operator) or a pipeline.
    #[builder(setter(into))]
    pub update: UpdateModifications,
    /// Filters of the array elements to update.
    #[builder(default, setter(into))]
    pub array_filters: Option<Array>,
    /// The collation of string comparisons, as the server's `collation` document.
    #[builder(default, setter(into))]
    pub collation: Option<Document>,
    /// The index to use: its name (a string) or its key pattern (a document).
    #[builder(default, setter(into))]
    pub hint: Option<Bson>,
    /// Which document is updated when several match (MongoDB 8.0+).
    #[builder(default, setter(into))]
    pub sort: Option<Document>,
    /// Inserts a document when none matches.
    #[builder(default, setter(into))]
    pub upsert: Option<bool>,
}

impl UpdateOneModel {
    /// Applies `update` to the first document matching `filter`.
    pub fn new(filter: Document, update: impl Into<UpdateModifications>) -> Self {
        UpdateOneModel {
            namespace: Namespace::default(),
            filter,
            update: update.into(),
            array_filters: None,
            collation: None,
            hint: None,
            sort: None,
            upsert: None,
        }
    }
}

/// Applies an update to every document matching `filter`. The options left `None`
/// are not sent.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct UpdateManyModel {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// Which documents to update.
    pub filter: Document,
    /// An update document (every key an operator) or a pipeline.
    #[builder(setter(into))]
    pub update: UpdateModifications,
    /// Filters of the array elements to update.
    #[builder(default, setter(into))]
    pub array_filters: Option<Array>,
    /// The collation of string comparisons, as the server's `collation` document.
    #[builder(default, setter(into))]
    pub collation: Option<Document>,
    /// The index to use: its name (a string) or its key pattern (a document).
    #[builder(default, setter(into))]
    pub hint: Option<Bson>,
    /// Inserts a document when none matches.
    #[builder(default, setter(into))]
    pub upsert: Option<bool>,
}

impl UpdateManyModel {
    /// Applies `update` to every document matching `filter`.
    pub fn new(filter: Document, update: impl Into<UpdateModifications>) -> Self {
        UpdateManyModel {
            namespace: Namespace::default(),
            filter,
            update: update.into(),
            array_filters: None,
            collation: None,
            hint: None,
            upsert: None,
        }
    }
}

/// Replaces the first document matching `filter` with `replacement`. The options left
/// `None` are not sent.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct ReplaceOneModel<T = Document> {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// Which document to replace.
    pub filter: Document,
    /// The new document; it cannot contain update operators.
    pub replacement: T,
    /// The collation of string comparisons, as the server's `collation` document.
    #[builder(default, setter(into))]
    pub collation: Option<Document>,
    /// The index to use: its name (a string) or its key pattern (a document).
    #[builder(default, setter(into))]
    pub hint: Option<Bson>,
    /// Which document is replaced when several match (MongoDB 8.0+).
    #[builder(default, setter(into))]
    pub sort: Option<Document>,
    /// Inserts the replacement when no document matches.
    #[builder(default, setter(into))]
    pub upsert: Option<bool>,
}

impl<T> ReplaceOneModel<T> {
    /// Replaces the first document matching `filter` with `replacement`.
    pub fn new(filter: Document, replacement: T) -> Self {
        ReplaceOneModel {
            namespace: Namespace::default(),
            filter,
            replacement,
            collation: None,
            hint: None,
            sort: None,
            upsert: None,
        }
    }
}

/// Deletes the first document matching `filter`. The options left `None` are not
/// sent.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct DeleteOneModel {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// Which document to delete.
    pub filter: Document,
    /// The collation of string comparisons, as the server's `collation` document.
    #[builder(default, setter(into))]
    pub collation: Option<Document>,
    /// The index to use: its name (a string) or its key pattern (a document).
    #[builder(default, setter(into))]
    pub hint: Option<Bson>,
}

impl DeleteOneModel {
    /// Deletes the first document matching `filter`.
    pub fn new(filter: Document) -> Self {
        DeleteOneModel {
            namespace: Namespace::default(),
            filter,
            collation: None,
            hint: None,
        }
    }
}

/// Deletes every document matching `filter`. The options left `None` are not sent.
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq)]
pub struct DeleteManyModel {
    /// The collection written: required by [`Client::bulk_write`](crate::Client::bulk_write).
    /// Left empty (the builder's default, an anymongo addition), the model writes the
    /// collection of a [`Collection::bulk_write`](crate::Collection::bulk_write), which
    /// refuses another.
    #[builder(default, setter(into))]
    pub namespace: Namespace,
    /// Which documents to delete.
    pub filter: Document,
    /// The collation of string comparisons, as the server's `collation` document.
    #[builder(default, setter(into))]
    pub collation: Option<Document>,
    /// The index to use: its name (a string) or its key pattern (a document).
    #[builder(default, setter(into))]
    pub hint: Option<Bson>,
}

impl DeleteManyModel {
    /// Deletes every document matching `filter`.
    pub fn new(filter: Document) -> Self {
        DeleteManyModel {
            namespace: Namespace::default(),
            filter,
            collation: None,
            hint: None,
        }
    }
}

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

impl<T> From<InsertOneModel<T>> for WriteModel<T> {
    fn from(model: InsertOneModel<T>) -> Self {
        WriteModel::InsertOne(model)
    }
}

impl<T> From<UpdateOneModel> for WriteModel<T> {
    fn from(model: UpdateOneModel) -> Self {
        WriteModel::UpdateOne(model)
    }
}

impl<T> From<UpdateManyModel> for WriteModel<T> {
    fn from(model: UpdateManyModel) -> Self {
        WriteModel::UpdateMany(model)
    }
}

impl<T> From<ReplaceOneModel<T>> for WriteModel<T> {
    fn from(model: ReplaceOneModel<T>) -> Self {
        WriteModel::ReplaceOne(model)
    }
}

impl<T> From<DeleteOneModel> for WriteModel<T> {
    fn from(model: DeleteOneModel) -> Self {
        WriteModel::DeleteOne(model)
    }
}

impl<T> From<DeleteManyModel> for WriteModel<T> {
    fn from(model: DeleteManyModel) -> Self {
        WriteModel::DeleteMany(model)
    }
}

impl<T> WriteModel<T> {
    /// The model on `namespace`, whatever collection it named before: for code that
    /// builds models before knowing their collection (an anymongo addition).
    pub fn with_namespace(mut self, namespace: Namespace) -> WriteModel<T> {
        match &mut self {
            WriteModel::InsertOne(model) => model.namespace = namespace,
            WriteModel::UpdateOne(model) => model.namespace = namespace,
            WriteModel::UpdateMany(model) => model.namespace = namespace,
            WriteModel::ReplaceOne(model) => model.namespace = namespace,
            WriteModel::DeleteOne(model) => model.namespace = namespace,
            WriteModel::DeleteMany(model) => model.namespace = namespace,
        }
        self
    }

    /// The collection the model names, if it names one (an empty namespace names
    /// none).
    pub(crate) fn namespace(&self) -> Option<&Namespace> {
        let namespace = match self {
            WriteModel::InsertOne(model) => &model.namespace,
            WriteModel::UpdateOne(model) => &model.namespace,
            WriteModel::UpdateMany(model) => &model.namespace,
            WriteModel::ReplaceOne(model) => &model.namespace,
            WriteModel::DeleteOne(model) => &model.namespace,
            WriteModel::DeleteMany(model) => &model.namespace,
        };
        Some(namespace).filter(|namespace| **namespace != Namespace::default())
    }
}

impl<T: Serialize> WriteModel<T> {
    /// The statement of the write as a command of `spelling` carries it, checked (CRUD
    /// spec, "Update vs. Replace Validation"; Bulk Write spec, "Update vs. replace document
    /// validation"), and for an insert the `_id` of its document (generated, as its first
    /// field, when missing). Both bulk writes, and so both commands, take their statements
    /// from here.
    pub(crate) fn statement(self, spelling: Spelling) -> Result<(Statement, Option<Bson>)> {
        let statement = match self {
            WriteModel::InsertOne(model) => {
                let (document, id) = with_id(&model.document)?;
                return Ok((Statement::insert(document, spelling), Some(id)));
            }
            WriteModel::UpdateOne(model) => UpdateStatement {
                update: model.update.to_bson()?,
                filter: model.filter,
                multi: false,
                upsert: model.upsert,
                array_filters: model.array_filters,
                collation: model.collation,
                hint: model.hint,
                sort: model.sort,
            }
            .spelled(spelling)?,
            WriteModel::UpdateMany(model) => UpdateStatement {
                update: model.update.to_bson()?,
                filter: model.filter,
                multi: true,
                upsert: model.upsert,
                array_filters: model.array_filters,
                collation: model.collation,
                hint: model.hint,
                sort: None,
            }
            .spelled(spelling)?,
            WriteModel::ReplaceOne(model) => UpdateStatement {
                update: Bson::Document(replacement_document(&model.replacement)?),
                filter: model.filter,
                multi: false,
                upsert: model.upsert,
                array_filters: None,
                collation: model.collation,
                hint: model.hint,
                sort: model.sort,
            }
            .spelled(spelling)?,
            WriteModel::DeleteOne(model) => DeleteStatement {
                filter: model.filter,
                multi: false,
                collation: model.collation,
                hint: model.hint,
            }
            .spelled(spelling)?,
            WriteModel::DeleteMany(model) => DeleteStatement {
                filter: model.filter,
                multi: true,
                collation: model.collation,
                hint: model.hint,
            }
            .spelled(spelling)?,
        };
        Ok((statement, None))
    }
}
