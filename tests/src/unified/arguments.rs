//! An operation's arguments (spec "operation", `arguments`), taken one by one by the
//! handlers: the required ones, the `session`, and what is left as the options of the
//! driver's method.

use anymongo::session::ClientSession;
use bson::{Bson, Document};
use serde::de::DeserializeOwned;

use super::entities::EntityMap;
use super::model::Operation;
use super::Abort;

/// The options of `find` and `createFindCursor`, as `anymongo::options::FindOptions`
/// reads them.
pub const FIND: &[&str] = &[
    "allowDiskUse",
    "allowPartialResults",
    "batchSize",
    "collation",
    "comment",
    "cursorType",
    "hint",
    "let",
    "limit",
    "max",
    "maxAwaitTimeMS",
    "maxScan",
    "maxTimeMS",
    "min",
    "noCursorTimeout",
    "projection",
    "rawData",
    "readConcern",
    "readPreference",
    "returnKey",
    "showRecordId",
    "skip",
    "sort",
    "timeoutMode",
];
/// The options of `findOne` (`anymongo::options::FindOneOptions`).
pub const FIND_ONE: &[&str] = &[
    "allowPartialResults",
    "collation",
    "comment",
    "hint",
    "let",
    "max",
    "maxScan",
    "maxTimeMS",
    "min",
    "projection",
    "rawData",
    "readConcern",
    "readPreference",
    "returnKey",
    "showRecordId",
    "skip",
    "sort",
];
/// The options of `aggregate` (`anymongo::options::AggregateOptions`).
pub const AGGREGATE: &[&str] = &[
    "allowDiskUse",
    "batchSize",
    "bypassDocumentValidation",
    "collation",
    "comment",
    "hint",
    "let",
    "maxAwaitTimeMS",
    "maxTimeMS",
    "rawData",
    "readConcern",
    "readPreference",
    "timeoutMode",
    "writeConcern",
];
/// The options of `countDocuments` and `count` (`anymongo::options::CountOptions`).
pub const COUNT: &[&str] = &[
    "collation",
    "comment",
    "hint",
    "limit",
    "maxTimeMS",
    "rawData",
    "readConcern",
    "readPreference",
    "skip",
];
/// The options of `distinct` (`anymongo::options::DistinctOptions`).
pub const DISTINCT: &[&str] = &[
    "collation",
    "comment",
    "hint",
    "maxTimeMS",
    "rawData",
    "readConcern",
    "readPreference",
];
/// The options of `estimatedDocumentCount`
/// (`anymongo::options::EstimatedDocumentCountOptions`).
pub const ESTIMATED_COUNT: &[&str] = &[
    "comment",
    "maxTimeMS",
    "rawData",
    "readConcern",
    "readPreference",
];
/// The options of `insertOne` (`anymongo::options::InsertOneOptions`).
pub const INSERT_ONE: &[&str] = &[
    "bypassDocumentValidation",
    "comment",
    "rawData",
    "writeConcern",
];
/// The options of `insertMany` (`anymongo::options::InsertManyOptions`).
pub const INSERT_MANY: &[&str] = &[
    "bypassDocumentValidation",
    "comment",
    "ordered",
    "rawData",
    "writeConcern",
];
/// The options of `updateOne` and `updateMany` (`anymongo::options::UpdateOptions`).
pub const UPDATE: &[&str] = &[
    "arrayFilters",
    "bypassDocumentValidation",
    "collation",
    "comment",
    "hint",
    "let",
    "rawData",
    "sort",
    "upsert",
    "writeConcern",
];
/// The options of `replaceOne` (`anymongo::options::ReplaceOptions`).
pub const REPLACE: &[&str] = &[
    "bypassDocumentValidation",
    "collation",
    "comment",
    "hint",
    "let",
    "rawData",
    "sort",
    "upsert",
    "writeConcern",
];
/// The options of the deletes (`anymongo::options::DeleteOptions`).
pub const DELETE: &[&str] = &[
    "collation",
    "comment",
    "hint",
    "let",
    "rawData",
    "writeConcern",
];
/// The options of `findOneAndDelete` (`anymongo::options::FindOneAndDeleteOptions`).
pub const FIND_ONE_AND_DELETE: &[&str] = &[
    "collation",
    "comment",
    "hint",
    "let",
    "maxTimeMS",
    "projection",
    "rawData",
    "sort",
    "writeConcern",
];
/// The options of `findOneAndReplace` (`anymongo::options::FindOneAndReplaceOptions`).
pub const FIND_ONE_AND_REPLACE: &[&str] = &[
    "bypassDocumentValidation",
    "collation",
    "comment",
    "hint",
    "let",
    "maxTimeMS",
    "projection",
    "rawData",
    "returnDocument",
    "sort",
    "upsert",
    "writeConcern",
];
/// The options of `findOneAndUpdate` (`anymongo::options::FindOneAndUpdateOptions`).
pub const FIND_ONE_AND_UPDATE: &[&str] = &[
    "arrayFilters",
    "bypassDocumentValidation",
    "collation",
    "comment",
    "hint",
    "let",
    "maxTimeMS",
    "projection",
    "rawData",
    "returnDocument",
    "sort",
    "upsert",
    "writeConcern",
];

/// The arguments of one operation not taken yet.
pub struct Arguments<'a> {
    operation: &'a Operation,
    left: Document,
}

impl<'a> Arguments<'a> {
    /// All of `operation`'s arguments.
    pub fn of(operation: &'a Operation) -> Self {
        Arguments {
            operation,
            left: operation.arguments.clone(),
        }
    }

    /// The argument `key`, if given.
    pub fn optional(&mut self, key: &str) -> Option<Bson> {
        self.left.remove(key)
    }

    /// The argument `key`, which the operation needs.
    pub fn required(&mut self, key: &str) -> Result<Bson, Abort> {
        self.optional(key).ok_or_else(|| {
            Abort::Failed(format!("{} needs the argument {key}", self.operation.name))
        })
    }

    /// The document argument `key`, which the operation needs.
    pub fn document(&mut self, key: &str) -> Result<Document, Abort> {
        match self.required(key)? {
            Bson::Document(document) => Ok(document),
            other => Err(self.not_a(key, "document", &other)),
        }
    }

    /// The string argument `key`, which the operation needs.
    pub fn string(&mut self, key: &str) -> Result<String, Abort> {
        match self.required(key)? {
            Bson::String(text) => Ok(text),
            other => Err(self.not_a(key, "string", &other)),
        }
    }

    /// The array-of-documents argument `key` (a pipeline, documents to insert).
    pub fn documents(&mut self, key: &str) -> Result<Vec<Document>, Abort> {
        match self.required(key)? {
            Bson::Array(values) => values
                .into_iter()
                .map(|value| match value {
                    Bson::Document(document) => Ok(document),
                    other => Err(self.not_a(key, "array of documents", &other)),
                })
                .collect(),
            other => Err(self.not_a(key, "array of documents", &other)),
        }
    }

    /// The session entity the `session` argument names, if given (spec "Entity Test
    /// Operations": "session ... the operation MUST use this session").
    pub fn session(&mut self, entities: &EntityMap) -> Result<Option<ClientSession>, Abort> {
        match self.optional("session") {
            None => Ok(None),
            Some(Bson::String(name)) => Ok(Some(entities.session(&name)?.session.clone())),
            Some(other) => Err(self.not_a("session", "session entity name", &other)),
        }
    }

    /// What is left, read as the options `T` of the driver's method; each must be one
    /// of `known`, the options `T` reads (see [`known_arguments`] for why another
    /// makes the test unsupported).
    pub fn options<T: DeserializeOwned>(self, known: &[&str]) -> Result<T, Abort> {
        check_known(&self.operation.name, &self.left, known)?;
        bson::deserialize_from_document(self.left.clone()).map_err(|e| {
            Abort::Failed(format!(
                "{}: the options {} do not fit: {e}",
                self.operation.name, self.left
            ))
        })
    }

    /// Checks that nothing is left.
    pub fn done(self) -> Result<(), Abort> {
        check_known(&self.operation.name, &self.left, &[])
    }

    /// What is left, checked against `known`, as a document (the fields of a command
    /// the runner builds).
    pub fn rest(self, known: &[&str]) -> Result<Document, Abort> {
        check_known(&self.operation.name, &self.left, known)?;
        Ok(self.left)
    }

    fn not_a(&self, key: &str, what: &str, value: &Bson) -> Abort {
        Abort::Failed(format!(
            "{}: the argument {key} must be a {what}, not {value}",
            self.operation.name
        ))
    }
}

/// Spec "Executing an Operation": "If a key in operation.arguments does not correspond
/// to a known parameter/option for the operation, the test runner MUST raise an
/// error". One the runner does not know may be one the driver lacks, so the test is
/// skipped as unsupported rather than failed.
pub fn known_arguments(operation: &Operation, known: &[&str]) -> Result<(), Abort> {
    check_known(&operation.name, &operation.arguments, known)
}

/// The string argument `key` a special operation (one read without [`Arguments`])
/// requires.
pub fn required_str<'a>(operation: &'a Operation, key: &str) -> Result<&'a str, Abort> {
    operation
        .arguments
        .get_str(key)
        .map_err(|_| Abort::Failed(format!("{} needs a string {key}", operation.name)))
}

fn check_known(name: &str, arguments: &Document, known: &[&str]) -> Result<(), Abort> {
    match arguments.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(Abort::Unsupported(format!(
            "{name}: the argument {key} is not supported"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::crud::FindOptions;
    use bson::doc;

    fn operation(document: Document) -> Operation {
        bson::deserialize_from_document(document).unwrap()
    }

    #[test]
    fn unknown_arguments_are_unsupported() {
        let op = operation(
            doc! { "name": "runCommand", "object": "d", "arguments": { "command": {}, "timeoutMS": 5 } },
        );
        let unknown = known_arguments(&op, &["command"]);
        assert!(matches!(unknown, Err(Abort::Unsupported(why)) if why.contains("timeoutMS")));
        assert!(known_arguments(&op, &["command", "timeoutMS"]).is_ok());
    }

    #[test]
    fn arguments_are_taken_and_the_rest_are_options() {
        let op = operation(doc! {
            "name": "find", "object": "c",
            "arguments": { "filter": { "x": 1 }, "sort": { "_id": 1 }, "limit": 2 },
        });
        let mut arguments = Arguments::of(&op);
        assert_eq!(arguments.document("filter").unwrap(), doc! { "x": 1 });
        assert!(matches!(
            arguments.required("filter"),
            Err(Abort::Failed(_))
        ));
        let options: FindOptions = arguments.options(FIND).unwrap();
        assert_eq!(options.sort, Some(doc! { "_id": 1 }));
        assert_eq!(options.limit, Some(2));
        let mut arguments = Arguments::of(&op);
        arguments.document("filter").unwrap();
        let unknown = arguments.options::<FindOptions>(&["sort"]);
        assert!(matches!(unknown, Err(Abort::Unsupported(why)) if why.contains("limit")));
        let mut arguments = Arguments::of(&op);
        assert!(
            matches!(arguments.string("filter"), Err(Abort::Failed(why)) if why.contains("string"))
        );
    }
}
