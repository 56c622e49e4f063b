//! The search index operations of collections (Index Management spec, "Search
//! Indexes"; the `index_management` tests): `createSearchIndex`,
//! `createSearchIndexes`, `updateSearchIndex`, `dropSearchIndex` and
//! `listSearchIndexes`, with the driver's helpers of the same names.

use anymongo::crud::AggregateOptions;
use anymongo::index_management::SearchIndexModel;
use anymongo::Collection;
use bson::{Bson, Document};

use super::arguments::Arguments;
use super::crud::drain;
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// The collection entity the operation is on, and its arguments.
fn call<'a>(
    operation: &'a Operation,
    context: &Context,
) -> Result<(Collection<Document>, Arguments<'a>), Abort> {
    let collection = context.entities.collection(&operation.object)?;
    Ok((collection.collection.clone(), Arguments::of(operation)))
}

/// A `model` argument (`definition`, `name`, `type`).
fn model(value: Bson) -> Result<SearchIndexModel, Abort> {
    bson::deserialize_from_bson(value)
        .map_err(|error| Abort::Failed(format!("a search index model: {error}")))
}

/// Spec `createSearchIndex`: the result is the index's name.
pub async fn create_search_index(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (collection, mut arguments) = call(operation, context)?;
    let model = model(arguments.required("model")?)?;
    arguments.done()?;
    let name = collection.create_search_index(model).await;
    Ok(name.map(|name| Some(Bson::String(name))))
}

/// Spec `createSearchIndexes`: the result is the indexes' names.
pub async fn create_search_indexes(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (collection, mut arguments) = call(operation, context)?;
    let models = match arguments.required("models")? {
        Bson::Array(models) => models
            .into_iter()
            .map(model)
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(Abort::Failed(format!(
                "models must be an array, not {other}"
            )))
        }
    };
    arguments.done()?;
    let names = collection.create_search_indexes(models).await;
    Ok(names.map(|names| Some(Bson::Array(names.into_iter().map(Bson::String).collect()))))
}

/// Spec `updateSearchIndex`.
pub async fn update_search_index(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (collection, mut arguments) = call(operation, context)?;
    let name = arguments.string("name")?;
    let definition = arguments.document("definition")?;
    arguments.done()?;
    let updated = collection.update_search_index(&name, definition).await;
    Ok(updated.map(|()| None))
}

/// Spec `dropSearchIndex`.
pub async fn drop_search_index(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (collection, mut arguments) = call(operation, context)?;
    let name = arguments.string("name")?;
    arguments.done()?;
    Ok(collection.drop_search_index(&name).await.map(|()| None))
}

/// Spec `listSearchIndexes`: `name` and `aggregationOptions`; the result is the
/// indexes' descriptions.
pub async fn list_search_indexes(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (collection, mut arguments) = call(operation, context)?;
    let name = match arguments.optional("name") {
        None => None,
        Some(Bson::String(name)) => Some(name),
        Some(other) => return Err(Abort::Failed(format!("name must be a string, not {other}"))),
    };
    let options: Option<AggregateOptions> = match arguments.optional("aggregationOptions") {
        None => None,
        Some(Bson::Document(options)) => Some(
            bson::deserialize_from_document(options)
                .map_err(|error| Abort::Failed(format!("aggregationOptions: {error}")))?,
        ),
        Some(other) => {
            return Err(Abort::Failed(format!(
                "aggregationOptions must be a document, not {other}"
            )))
        }
    };
    arguments.done()?;
    Ok(drain({
        let list = collection.list_search_indexes();
        let list = match name {
            Some(name) => list.name(name),
            None => list,
        };
        match options {
            Some(options) => list.aggregate_options(options),
            None => list,
        }
        .await
    })
    .await)
}
