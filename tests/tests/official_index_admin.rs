//! Programs written from the official `mongodb` crate's 3.x documentation of indexes
//! (`IndexModel`, `options::IndexOptions`, `Collection::create_index`,
//! `list_indexes`, `list_index_names`, `drop_index`) and of collection management
//! (`Database::create_collection` with its setters and `CreateCollectionOptions`,
//! `ValidationAction`, `TimeseriesOptions`), with only `mongodb` replaced by
//! `anymongo`, run against the tests' SecantusDB. Written here from the
//! documentation, not copied; each program checks what it reads.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::error::{ErrorKind, WriteFailure};
use anymongo::options::{
    CreateCollectionOptions, IndexOptions, TimeseriesGranularity, TimeseriesOptions,
    ValidationAction, ValidationLevel,
};
use anymongo::results::CollectionType;
use anymongo::{Client, Database, IndexModel};
use anymongo_tests::server;
use futures::TryStreamExt;

/// A clean database for one program, on the test server.
async fn fresh_database(name: &str) -> Database {
    let client = Client::with_uri_str(server::shared().uri()).await.unwrap();
    let db = client.database(name);
    db.drop().await.unwrap();
    db
}

#[tokio::test]
async fn a_unique_index_refuses_a_duplicate() -> anymongo::error::Result<()> {
    let db = fresh_database("official_index_unique").await;
    let users = db.collection::<Document>("users");
    let model = IndexModel::builder()
        .keys(doc! { "email": 1 })
        .options(
            IndexOptions::builder()
                .unique(true)
                .name("by_email".to_string())
                .build(),
        )
        .build();
    let created = users.create_index(model).await?;
    assert_eq!(created.index_name, "by_email");

    users
        .insert_one(doc! { "email": "ada@example.com" })
        .await?;
    let error = users
        .insert_one(doc! { "email": "ada@example.com" })
        .await
        .unwrap_err();
    match *error.kind {
        ErrorKind::Write(WriteFailure::WriteError(ref e)) => assert_eq!(e.code, 11000),
        ref other => panic!("expected a duplicate key error, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn a_ttl_index_is_listed_as_a_model_with_its_expiry_and_dropped_by_name(
) -> anymongo::error::Result<()> {
    let db = fresh_database("official_index_ttl").await;
    let sessions = db.collection::<Document>("sessions");
    let ttl = IndexModel::builder()
        .keys(doc! { "last_seen": 1 })
        .options(
            IndexOptions::builder()
                .expire_after(Duration::from_secs(3600))
                .build(),
        )
        .build();
    let by_user = IndexModel::builder()
        .keys(doc! { "user": 1, "at": -1 })
        .build();
    let created = sessions.create_indexes(vec![ttl, by_user]).await?;
    assert_eq!(created.index_names, ["last_seen_1", "user_1_at_-1"]);

    let indexes: Vec<IndexModel> = sessions.list_indexes().await?.try_collect().await?;
    let listed = indexes
        .iter()
        .find(|index| index.keys == doc! { "last_seen": 1 })
        .expect("the TTL index is listed");
    let options = listed.options.as_ref().expect("a listed index has options");
    assert_eq!(options.expire_after, Some(Duration::from_secs(3600)));
    assert_eq!(options.name.as_deref(), Some("last_seen_1"));
    assert!(indexes.iter().any(|index| index.keys == doc! { "_id": 1 }));

    let mut names = sessions.list_index_names().await?;
    names.sort();
    assert_eq!(names, ["_id_", "last_seen_1", "user_1_at_-1"]);

    sessions.drop_index("user_1_at_-1").await?;
    let mut names = sessions.list_index_names().await?;
    names.sort();
    assert_eq!(names, ["_id_", "last_seen_1"]);
    Ok(())
}

#[tokio::test]
async fn collections_are_created_with_setters_or_with_options() -> anymongo::error::Result<()> {
    let db = fresh_database("official_create_collection").await;
    db.create_collection("log")
        .capped(true)
        .size(64 * 1024)
        .await?;

    let options = CreateCollectionOptions::builder()
        .capped(true)
        .size(64 * 1024)
        .max(100)
        .build();
    db.create_collection("events").with_options(options).await?;

    let mut created: Vec<_> = db.list_collections().await?.try_collect().await?;
    created.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = created.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["events", "log"]);
    for spec in &created {
        assert_eq!(spec.options.capped, Some(true), "{spec:?}");
        assert_eq!(spec.collection_type, CollectionType::Collection, "{spec:?}");
    }
    let events = created.iter().find(|c| c.name == "events").unwrap();
    assert_eq!(events.options.max, Some(100), "{events:?}");
    assert_eq!(events.options.size, Some(64 * 1024), "{events:?}");

    // Creating it again is NamespaceExists.
    let again = db.create_collection("log").await.unwrap_err();
    assert_eq!(again.code(), Some(48), "{again:?}");
    Ok(())
}

#[tokio::test]
async fn a_validator_with_the_error_action_refuses_an_invalid_document(
) -> anymongo::error::Result<()> {
    let db = fresh_database("official_create_validated").await;
    db.create_collection("contacts")
        .validator(doc! { "email": { "$type": "string" } })
        .validation_level(ValidationLevel::Strict)
        .validation_action(ValidationAction::Error)
        .await?;
    let contacts = db.collection::<Document>("contacts");
    contacts
        .insert_one(doc! { "email": "ada@example.com" })
        .await?;
    let error = contacts.insert_one(doc! { "email": 42 }).await.unwrap_err();
    // DocumentValidationFailure.
    assert_eq!(error.code(), Some(121), "{error:?}");
    Ok(())
}

#[tokio::test]
async fn a_timeseries_collection_is_created_from_its_options() -> anymongo::error::Result<()> {
    let db = fresh_database("official_create_timeseries").await;
    let timeseries = TimeseriesOptions::builder()
        .time_field("at".to_string())
        .meta_field(Some("sensor".to_string()))
        .granularity(Some(TimeseriesGranularity::Minutes))
        .build();
    db.create_collection("readings")
        .timeseries(timeseries)
        .expire_after_seconds(Duration::from_secs(86_400))
        .await?;
    let readings = db.collection::<Document>("readings");
    readings
        .insert_one(doc! { "at": anymongo::bson::DateTime::now(), "sensor": "a", "t": 21.5 })
        .await?;
    let spec = db
        .list_collections()
        .filter(doc! { "name": "readings" })
        .await?
        .try_next()
        .await?
        .expect("the collection is listed");
    // SecantusDB keeps the options but lists the collection as a plain one (MongoDB
    // says `timeseries`), so the kind is not checked: the options the driver sent are.
    assert_eq!(
        spec.options.expire_after_seconds,
        Some(Duration::from_secs(86_400))
    );
    let timeseries = spec.options.timeseries.as_ref().unwrap();
    assert_eq!(timeseries.time_field, "at", "{spec:?}");
    assert_eq!(
        timeseries.granularity,
        Some(TimeseriesGranularity::Minutes),
        "{spec:?}"
    );
    Ok(())
}
