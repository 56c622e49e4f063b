//! The Collection Management spec's options: what [`Database::create_collection`]
//! sends in the `create` command, and the options of dropping a collection or a
//! database. The operations themselves are actions (`crate::action`).
//!
//! [`Database::create_collection`]: crate::Database::create_collection

use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Serialize};

use crate::concern::WriteConcern;

/// Options of [`Database::create_collection`](crate::Database::create_collection),
/// named as the official driver names them; each is sent as the `create` command's
/// field of the same name in camelCase (`expire_after_seconds` in whole seconds), and
/// unset ones are not sent.
///
/// ```
/// use anymongo::bson::doc;
/// use anymongo::options::{CreateCollectionOptions, ValidationAction, ValidationLevel};
/// let strict = CreateCollectionOptions::builder()
///     .validator(doc! { "email": { "$type": "string" } })
///     .validation_level(ValidationLevel::Strict)
///     .validation_action(ValidationAction::Error)
///     .build();
/// assert_eq!(strict.capped, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct CreateCollectionOptions {
    /// A capped collection: a fixed-size one that overwrites its oldest documents
    /// (needs [`size`](Self::size)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped: Option<bool>,
    /// The largest size of a capped collection, in bytes.
    #[serde(skip_serializing_if = "Option::is_none", with = "u64_as_i64", default)]
    pub size: Option<u64>,
    /// The most documents a capped collection holds (`size` still applies).
    #[serde(skip_serializing_if = "Option::is_none", with = "u64_as_i64", default)]
    pub max: Option<u64>,
    /// The storage engine's options for the collection: `{ <engine>: <options> }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<Document>,
    /// The rules every document must follow: a query filter, or `{ $jsonSchema }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validator: Option<Document>,
    /// Which writes the validator checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_level: Option<ValidationLevel>,
    /// What a write that fails validation does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_action: Option<ValidationAction>,
    /// Makes a view of this collection or view (with [`pipeline`](Self::pipeline)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_on: Option<String>,
    /// The aggregation pipeline of a view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Vec<Document>>,
    /// The default collation of the collection or view (`{ locale, strength, ... }`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<crate::crud::Collation>,
    /// The write concern of the command; the database's when unset.
    #[serde(
        skip_serializing,
        default,
        deserialize_with = "crate::concern::deserialize_write_concern"
    )]
    pub write_concern: Option<WriteConcern>,
    /// The default options of the collection's indexes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_option_defaults: Option<IndexOptionDefaults>,
    /// A time series collection (MongoDB 5.0+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<TimeseriesOptions>,
    /// Removes the documents of a time series or clustered collection this long after
    /// their time (`expireAfterSeconds`, whole seconds).
    #[serde(
        skip_serializing_if = "Option::is_none",
        default,
        with = "crate::bson_util::seconds"
    )]
    pub expire_after_seconds: Option<Duration>,
    /// Whether change streams may show documents as they were before and after a
    /// change (MongoDB 6.0+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_stream_pre_and_post_images: Option<ChangeStreamPreAndPostImages>,
    /// A clustered collection: its documents stored in the order of this index
    /// (MongoDB 5.3+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clustered_index: Option<ClusteredIndex>,
    /// A comment the server logs with the command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
}

/// A `u64` option sent as the int64 the server wants (`size`, `max`), saturating.
mod u64_as_i64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<u64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_i64(i64::try_from(*value).unwrap_or(i64::MAX)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        let value = Option::<bson::Bson>::deserialize(deserializer)?;
        value
            .map(|value| {
                crate::bson_util::as_i64(&value)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| {
                        serde::de::Error::custom(format!(
                            "expected a non-negative integer, not {value}"
                        ))
                    })
            })
            .transpose()
    }
}

/// Which writes a collection's validator checks (`validationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationLevel {
    /// None.
    Off,
    /// Every insert and update (the server's default).
    Strict,
    /// Inserts, and updates of documents that were valid.
    Moderate,
}

/// What a write that fails a collection's validation does (`validationAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationAction {
    /// It fails (DocumentValidationFailure, code 121); the server's default.
    Error,
    /// It succeeds, and the server logs a warning.
    Warn,
}

/// The index of a clustered collection (`clusteredIndex`). The server allows only
/// `key: { _id: 1 }` and `unique: true`, which [`Default`] gives.
///
/// ```
/// use anymongo::options::{ClusteredIndex, CreateCollectionOptions};
/// let clustered = CreateCollectionOptions::builder()
///     .clustered_index(ClusteredIndex::default())
///     .build();
/// # let _ = clustered;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClusteredIndex {
    /// The key: `{ _id: 1 }`.
    pub key: Document,
    /// Whether it is unique: `true`.
    pub unique: bool,
    /// Its name; the server generates one when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its version: `2`, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v: Option<i32>,
}

impl Default for ClusteredIndex {
    fn default() -> Self {
        ClusteredIndex {
            key: doc! { "_id": 1 },
            unique: true,
            name: None,
            v: None,
        }
    }
}

/// The default options of a collection's indexes (`indexOptionDefaults`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IndexOptionDefaults {
    /// The storage engine's options for each index: `{ <engine>: <options> }`.
    pub storage_engine: Document,
}

/// A time series collection (`timeseries`, MongoDB 5.0+).
///
/// ```
/// use anymongo::options::{TimeseriesGranularity, TimeseriesOptions};
/// let readings = TimeseriesOptions::builder()
///     .time_field("at")
///     .meta_field("sensor".to_string())
///     .granularity(TimeseriesGranularity::Minutes)
///     .build();
/// # let _ = readings;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct TimeseriesOptions {
    /// The top-level field of each document that holds its time (a BSON date).
    pub time_field: String,
    /// The top-level field that names each document's series (not an array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_field: Option<String>,
    /// The usual interval between a series' measurements; the server's default is
    /// seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granularity: Option<TimeseriesGranularity>,
    /// The longest time between the timestamps of one bucket
    /// (`bucketMaxSpanSeconds`, MongoDB 6.3+; with
    /// [`bucket_rounding`](Self::bucket_rounding), instead of a granularity).
    #[serde(
        rename = "bucketMaxSpanSeconds",
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bson_util::seconds"
    )]
    pub bucket_max_span: Option<Duration>,
    /// The interval a new bucket's first timestamp is rounded down to
    /// (`bucketRoundingSeconds`, MongoDB 6.3+).
    #[serde(
        rename = "bucketRoundingSeconds",
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bson_util::seconds"
    )]
    pub bucket_rounding: Option<Duration>,
}

/// The usual interval between the measurements of a time series (`granularity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TimeseriesGranularity {
    /// Seconds.
    Seconds,
    /// Minutes.
    Minutes,
    /// Hours.
    Hours,
}

/// Whether change streams may show a collection's documents as they were before and
/// after each change (`changeStreamPreAndPostImages`, MongoDB 6.0+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ChangeStreamPreAndPostImages {
    /// Whether they may.
    pub enabled: bool,
}

/// Options of [`Collection::drop`](crate::Collection::drop).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct DropCollectionOptions {
    /// The write concern of the command; the collection's when unset.
    #[serde(
        default,
        deserialize_with = "crate::concern::deserialize_write_concern"
    )]
    pub write_concern: Option<WriteConcern>,
}

/// Options of [`Database::drop`](crate::Database::drop).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct DropDatabaseOptions {
    /// The write concern of the command; the database's when unset.
    #[serde(
        default,
        deserialize_with = "crate::concern::deserialize_write_concern"
    )]
    pub write_concern: Option<WriteConcern>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_options_are_sent_as_the_command_names_them() {
        let options = CreateCollectionOptions::builder()
            .capped(true)
            .size(4096)
            .validation_action(ValidationAction::Error)
            .validation_level(ValidationLevel::Moderate)
            .expire_after_seconds(Duration::from_secs(60))
            .timeseries(
                TimeseriesOptions::builder()
                    .time_field("at".to_string())
                    .granularity(Some(TimeseriesGranularity::Hours))
                    .bucket_max_span(Some(Duration::from_secs(7200)))
                    .build(),
            )
            .change_stream_pre_and_post_images(ChangeStreamPreAndPostImages { enabled: true })
            .clustered_index(ClusteredIndex::default())
            .write_concern(WriteConcern::majority())
            .build();
        assert_eq!(
            bson::serialize_to_document(&options).unwrap(),
            doc! {
                "capped": true,
                "size": 4096_i64,
                "validationLevel": "moderate",
                "validationAction": "error",
                "timeseries": { "timeField": "at", "granularity": "hours", "bucketMaxSpanSeconds": 7200_i64 },
                "expireAfterSeconds": 60_i64,
                "changeStreamPreAndPostImages": { "enabled": true },
                "clusteredIndex": { "key": { "_id": 1 }, "unique": true },
            }
        );
    }

    #[test]
    fn create_options_are_read_from_the_spec_names() {
        let options: CreateCollectionOptions = bson::deserialize_from_document(doc! {
            "timeseries": { "timeField": "time", "metaField": "meta" },
            "expireAfterSeconds": 1,
            "max": 3,
            "writeConcern": { "w": "majority" },
        })
        .unwrap();
        assert_eq!(options.expire_after_seconds, Some(Duration::from_secs(1)));
        assert_eq!(options.max, Some(3));
        assert_eq!(options.write_concern, Some(WriteConcern::majority()));
        assert_eq!(
            options.timeseries.unwrap().meta_field.as_deref(),
            Some("meta")
        );
        let negative: Result<CreateCollectionOptions, _> =
            bson::deserialize_from_document(doc! { "size": -1 });
        assert!(negative.is_err());
    }
}
