//! The Data API v1 actions: their request bodies, how each runs over anymongo, and
//! what each answers.

use anymongo::bson::{doc, Bson, Document};
use anymongo::{Client, Collection};
use futures::TryStreamExt;
use serde::Deserialize;

use crate::config::Config;
use crate::Failure;

/// One of the Data API v1's actions, named as in its URL (`…/action/findOne`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// `{"document": …}`, or `null` when nothing matches.
    FindOne,
    /// `{"documents": […]}`.
    Find,
    /// `{"insertedId": …}`, status 201.
    InsertOne,
    /// `{"insertedIds": […]}`, status 201.
    InsertMany,
    /// `{"matchedCount", "modifiedCount"}`, and `"upsertedId"` when it inserted.
    UpdateOne,
    /// As [`Action::UpdateOne`].
    UpdateMany,
    /// As [`Action::UpdateOne`].
    ReplaceOne,
    /// `{"deletedCount": …}`.
    DeleteOne,
    /// As [`Action::DeleteOne`].
    DeleteMany,
    /// `{"documents": […]}`.
    Aggregate,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 10] = [
        Action::FindOne,
        Action::Find,
        Action::InsertOne,
        Action::InsertMany,
        Action::UpdateOne,
        Action::UpdateMany,
        Action::ReplaceOne,
        Action::DeleteOne,
        Action::DeleteMany,
        Action::Aggregate,
    ];

    /// The action's name in URLs and configuration.
    pub fn name(self) -> &'static str {
        match self {
            Action::FindOne => "findOne",
            Action::Find => "find",
            Action::InsertOne => "insertOne",
            Action::InsertMany => "insertMany",
            Action::UpdateOne => "updateOne",
            Action::UpdateMany => "updateMany",
            Action::ReplaceOne => "replaceOne",
            Action::DeleteOne => "deleteOne",
            Action::DeleteMany => "deleteMany",
            Action::Aggregate => "aggregate",
        }
    }

    /// The action named `name`, if any.
    pub fn from_name(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|action| action.name() == name)
    }

    /// The body's fields besides `dataSource`, `database` and `collection`.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Action::FindOne => &["filter", "projection"],
            Action::Find => &["filter", "projection", "sort", "limit", "skip"],
            Action::InsertOne => &["document"],
            Action::InsertMany => &["documents"],
            Action::UpdateOne | Action::UpdateMany => &["filter", "update", "upsert"],
            Action::ReplaceOne => &["filter", "replacement", "upsert"],
            Action::DeleteOne | Action::DeleteMany => &["filter"],
            Action::Aggregate => &["pipeline"],
        }
    }
}

/// A request's body, checked against its action.
pub(crate) struct Call {
    pub action: Action,
    pub database: String,
    pub collection: String,
    /// The action's own fields, Extended JSON read as BSON.
    fields: Document,
}

/// The operators that run JavaScript on the server.
const SERVER_JAVASCRIPT: [&str; 3] = ["$where", "$function", "$accumulator"];

impl Call {
    /// Reads a body: a JSON object with `dataSource`, `database`, `collection` and the
    /// action's fields (in Extended JSON, relaxed or canonical), nothing else.
    pub fn parse(action: Action, body: &[u8]) -> Result<Call, Failure> {
        let value: serde_json::Value = serde_json::from_slice(body)
            .map_err(|error| Failure::invalid(format!("the body is not JSON: {error}")))?;
        let serde_json::Value::Object(mut object) = value else {
            return Err(Failure::invalid("the body must be a JSON object"));
        };
        let mut text = |name: &str| match object.remove(name) {
            Some(serde_json::Value::String(text)) if !text.is_empty() => Ok(text),
            Some(_) => Err(Failure::invalid(format!(
                "{name} must be a non-empty string"
            ))),
            None => Err(Failure::invalid(format!("{name} is required"))),
        };
        // The Data API's name of the cluster; a gateway has one deployment, its
        // connection string's, so any name reaches it.
        text("dataSource")?;
        let database = text("database")?;
        let collection = text("collection")?;
        if let Some(unknown) = object
            .keys()
            .find(|key| !action.fields().contains(&key.as_str()))
        {
            return Err(Failure::invalid(format!(
                "{} takes no field {unknown:?}",
                action.name()
            )));
        }
        let fields = Document::try_from(object)
            .map_err(|error| Failure::invalid(format!("the body is not Extended JSON: {error}")))?;
        Ok(Call {
            action,
            database,
            collection,
            fields,
        })
    }

    /// Refuses JavaScript run by the server anywhere in the fields that the server
    /// reads as queries, updates or pipelines (documents inserted are data).
    pub fn refuse_server_java_script(&self) -> Result<(), Failure> {
        for name in ["filter", "projection", "sort", "update", "pipeline"] {
            if let Some(value) = self.fields.get(name) {
                if let Some(operator) = find_key(value, &SERVER_JAVASCRIPT) {
                    return Err(Failure::new(
                        403,
                        "ServerJavaScriptRefused",
                        format!("{operator} is refused by the gateway's configuration"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The namespaces besides its own that an `aggregate` reads or writes (`$lookup`,
    /// `$graphLookup`, `$unionWith`, `$out`, `$merge`, in nested pipelines too), which
    /// the allow-list must grant as well.
    pub fn other_namespaces(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        if let Some(Bson::Array(stages)) = self.fields.get("pipeline") {
            namespaces_of(stages, &self.database, &mut found);
        }
        found
    }

    /// Runs the call on `client`: the response's status and body.
    pub async fn run(self, client: &Client, config: &Config) -> Result<(u16, Document), Failure> {
        let collection: Collection<Document> =
            client.database(&self.database).collection(&self.collection);
        let filter = self.document("filter")?.unwrap_or_default();
        match self.action {
            Action::FindOne => {
                let mut find = collection.find_one(filter);
                if let Some(projection) = self.document("projection")? {
                    find = find.projection(projection);
                }
                let document = find.await?;
                Ok((
                    200,
                    doc! { "document": document.map_or(Bson::Null, Bson::Document) },
                ))
            }
            Action::Find => {
                let cap = i64::from(config.max_limit);
                let limit = match self.count("limit")? {
                    Some(limit) if limit > 0 => limit.min(cap),
                    _ => cap,
                };
                let mut find = collection.find(filter).limit(limit);
                if let Some(projection) = self.document("projection")? {
                    find = find.projection(projection);
                }
                if let Some(sort) = self.document("sort")? {
                    find = find.sort(sort);
                }
                if let Some(skip) = self.count("skip")? {
                    find = find.skip(skip.unsigned_abs());
                }
                let documents: Vec<Document> = find.await?.try_collect().await?;
                Ok((200, doc! { "documents": documents }))
            }
            Action::InsertOne => {
                let document = self.required_document("document")?;
                let inserted = collection.insert_one(document).await?;
                Ok((201, doc! { "insertedId": inserted.inserted_id }))
            }
            Action::InsertMany => {
                let documents = self
                    .documents("documents")?
                    .ok_or_else(|| Failure::invalid("documents is required"))?;
                if documents.is_empty() {
                    return Err(Failure::invalid("documents must not be empty"));
                }
                let inserted = collection.insert_many(documents).await?;
                let ids: Vec<Bson> = inserted.inserted_ids.into_values().collect();
                Ok((201, doc! { "insertedIds": ids }))
            }
            Action::UpdateOne | Action::UpdateMany | Action::ReplaceOne => {
                let upsert = match self.fields.get("upsert") {
                    None => false,
                    Some(Bson::Boolean(upsert)) => *upsert,
                    Some(_) => return Err(Failure::invalid("upsert must be a boolean")),
                };
                let updated = match self.action {
                    Action::UpdateOne => {
                        let update = self.required_document("update")?;
                        collection.update_one(filter, update).upsert(upsert).await?
                    }
                    Action::UpdateMany => {
                        let update = self.required_document("update")?;
                        collection
                            .update_many(filter, update)
                            .upsert(upsert)
                            .await?
                    }
                    _ => {
                        let replacement = self.required_document("replacement")?;
                        collection
                            .replace_one(filter, replacement)
                            .upsert(upsert)
                            .await?
                    }
                };
                let mut body = doc! {
                    "matchedCount": count(updated.matched_count),
                    "modifiedCount": count(updated.modified_count),
                };
                if let Some(id) = updated.upserted_id {
                    body.insert("upsertedId", id);
                }
                Ok((200, body))
            }
            Action::DeleteOne | Action::DeleteMany => {
                let deleted = if self.action == Action::DeleteOne {
                    collection.delete_one(filter).await?
                } else {
                    collection.delete_many(filter).await?
                };
                Ok((200, doc! { "deletedCount": count(deleted.deleted_count) }))
            }
            Action::Aggregate => {
                let mut pipeline = self
                    .documents("pipeline")?
                    .ok_or_else(|| Failure::invalid("pipeline is required"))?;
                // The cap on what comes back; a pipeline ending in `$out` or `$merge`
                // returns nothing, and those stages must stay last.
                let writes = pipeline.last().is_some_and(|stage| {
                    stage.contains_key("$out") || stage.contains_key("$merge")
                });
                if !writes {
                    pipeline.push(doc! { "$limit": i64::from(config.max_limit) });
                }
                let documents: Vec<Document> =
                    collection.aggregate(pipeline).await?.try_collect().await?;
                Ok((200, doc! { "documents": documents }))
            }
        }
    }

    fn document(&self, name: &str) -> Result<Option<Document>, Failure> {
        match self.fields.get(name) {
            None => Ok(None),
            Some(Bson::Document(document)) => Ok(Some(document.clone())),
            Some(_) => Err(Failure::invalid(format!("{name} must be an object"))),
        }
    }

    fn required_document(&self, name: &str) -> Result<Document, Failure> {
        self.document(name)?
            .ok_or_else(|| Failure::invalid(format!("{name} is required")))
    }

    fn documents(&self, name: &str) -> Result<Option<Vec<Document>>, Failure> {
        let must = || Failure::invalid(format!("{name} must be an array of objects"));
        match self.fields.get(name) {
            None => Ok(None),
            Some(Bson::Array(values)) => values
                .iter()
                .map(|value| value.as_document().cloned().ok_or_else(must))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(must()),
        }
    }

    /// A `limit` or `skip`: a whole number, not negative (JSON numbers, or
    /// `$numberInt`/`$numberLong`/`$numberDouble` in Extended JSON).
    fn count(&self, name: &str) -> Result<Option<i64>, Failure> {
        let must = || Failure::invalid(format!("{name} must be a whole number, not negative"));
        let value = match self.fields.get(name) {
            None => return Ok(None),
            Some(Bson::Int32(value)) => i64::from(*value),
            Some(Bson::Int64(value)) => *value,
            Some(Bson::Double(value)) if value.fract() == 0.0 && value.abs() < 9e15 => {
                *value as i64
            }
            Some(_) => return Err(must()),
        };
        if value < 0 {
            return Err(must());
        }
        Ok(Some(value))
    }
}

/// A count in a response: an Int32 when it fits (a plain JSON number either way in
/// relaxed Extended JSON; `$numberInt` in canonical, as the Data API answered).
fn count(value: u64) -> Bson {
    i32::try_from(value).map_or_else(|_| Bson::Int64(value as i64), Bson::Int32)
}

/// The first key among `names` anywhere in `value`.
fn find_key(value: &Bson, names: &[&str]) -> Option<String> {
    match value {
        Bson::Document(document) => document.iter().find_map(|(key, value)| {
            if names.contains(&key.as_str()) {
                Some(key.clone())
            } else {
                find_key(value, names)
            }
        }),
        Bson::Array(values) => values.iter().find_map(|value| find_key(value, names)),
        _ => None,
    }
}

/// Adds to `found` the namespaces that `stages` name, in `database` unless they say
/// another.
fn namespaces_of(stages: &[Bson], database: &str, found: &mut Vec<(String, String)>) {
    let add = |target: &Bson, found: &mut Vec<(String, String)>| match target {
        Bson::String(collection) => found.push((database.to_owned(), collection.clone())),
        Bson::Document(target) => {
            let database = target.get_str("db").unwrap_or(database);
            if let Ok(collection) = target.get_str("coll") {
                found.push((database.to_owned(), collection.to_owned()));
            }
        }
        _ => {}
    };
    for stage in stages.iter().filter_map(Bson::as_document) {
        for (name, body) in stage {
            match (name.as_str(), body) {
                ("$lookup" | "$graphLookup", Bson::Document(lookup)) => {
                    if let Some(from) = lookup.get("from") {
                        add(from, found);
                    }
                    if let Ok(inner) = lookup.get_array("pipeline") {
                        namespaces_of(inner, database, found);
                    }
                }
                ("$unionWith", Bson::Document(union)) => {
                    if let Some(coll) = union.get("coll") {
                        add(coll, found);
                    }
                    if let Ok(inner) = union.get_array("pipeline") {
                        namespaces_of(inner, database, found);
                    }
                }
                ("$unionWith" | "$out", target) => add(target, found),
                ("$merge", Bson::Document(merge)) => {
                    if let Some(into) = merge.get("into") {
                        add(into, found);
                    }
                }
                ("$merge", into) => add(into, found),
                ("$facet", Bson::Document(facets)) => {
                    for inner in facets.values().filter_map(Bson::as_array) {
                        namespaces_of(inner, database, found);
                    }
                }
                _ => {}
            }
        }
    }
}
