//! The per-operation options structs of the official `mongodb` crate 3.x, used as its
//! documentation uses them — each built with its builder, or as a struct with
//! `..Default::default()`, and given to its action with `.with_options(…)` — with only
//! `mongodb` replaced by `anymongo`, against the tests' SecantusDB. Written here from
//! the documentation, not copied; the programs check what they read, so that a test
//! can fail.

use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::options::{
    AggregateOptions, Collation, CollationStrength, CountOptions, DeleteOptions, DistinctOptions,
    EstimatedDocumentCountOptions, FindOneAndDeleteOptions, FindOneAndReplaceOptions,
    FindOneAndUpdateOptions, FindOneOptions, FindOptions, Hint, InsertManyOptions,
    InsertOneOptions, ReplaceOptions, ReturnDocument, UpdateModifications, UpdateOptions,
};
use anymongo::{Client, Collection};
use anymongo_tests::harness;
use anymongo_tests::server;
use futures::TryStreamExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

/// A fresh, empty collection of documents, named after the test.
async fn fresh(name: &str) -> Collection<Document> {
    let client = Client::with_uri_str(server::shared().uri()).await.unwrap();
    let collection = client
        .database("official_crud_options")
        .collection::<Document>(name);
    collection.drop().await.unwrap();
    collection
}

/// The case-insensitive English collation of the official documentation's examples.
fn case_insensitive() -> Collation {
    Collation::builder()
        .locale("en")
        .strength(CollationStrength::Secondary)
        .build()
}

#[tokio::test]
async fn insert_options_from_builders_and_struct_literals() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("inserts").await;
        let options = InsertOneOptions::builder()
            .bypass_document_validation(true)
            .comment(Bson::from("first"))
            .build();
        coll.insert_one(doc! { "_id": 1 })
            .with_options(options)
            .await
            .unwrap();
        // Unordered: the duplicate `_id: 1` fails, the other two are inserted.
        let options = InsertManyOptions::builder().ordered(false).build();
        let error = coll
            .insert_many([doc! { "_id": 2 }, doc! { "_id": 1 }, doc! { "_id": 3 }])
            .with_options(options)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("E11000") || error.to_string().contains("11000"));
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
        // Struct literals, and `None` for no options, as the official actions take them.
        let options = InsertManyOptions {
            ordered: Some(true),
            ..Default::default()
        };
        coll.insert_many([doc! { "_id": 4 }])
            .with_options(options)
            .await
            .unwrap();
        coll.insert_one(doc! { "_id": 5 })
            .with_options(None)
            .await
            .unwrap();
        assert_eq!(coll.estimated_document_count().await.unwrap(), 5);
    })
    .await;
}

#[tokio::test]
// Field assignment after `default()` is how code for the official crate sets options.
#[allow(clippy::field_reassign_with_default)]
async fn find_and_find_one_options() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("finds").await;
        let documents = (1..=5).map(|x| doc! { "_id": x, "x": x, "name": format!("n{x}") });
        coll.insert_many(documents).await.unwrap();

        let options = FindOneOptions::builder()
            .sort(doc! { "x": -1 })
            .projection(doc! { "_id": 0 })
            .build();
        let top = coll.find_one(doc! {}).with_options(options).await.unwrap();
        assert_eq!(top, Some(doc! { "x": 5, "name": "n5" }));

        let options = FindOneOptions {
            skip: Some(1),
            sort: Some(doc! { "x": 1 }),
            ..Default::default()
        };
        let second = coll.find_one(doc! {}).with_options(options).await.unwrap();
        assert_eq!(second.unwrap().get_i32("x").ok(), Some(2));

        let options = FindOptions::builder()
            .sort(doc! { "x": -1 })
            .limit(2)
            .batch_size(1u32)
            .hint(Hint::Keys(doc! { "_id": 1 }))
            .build();
        let found: Vec<Document> = coll
            .find(doc! {})
            .with_options(options)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let xs: Vec<i32> = found.iter().map(|d| d.get_i32("x").unwrap()).collect();
        assert_eq!(xs, [5, 4]);

        // Field assignment, as code for the official crate must write it (its options
        // structs are `#[non_exhaustive]`, so it cannot use a struct literal).
        let mut options = FindOptions::default();
        options.skip = Some(3);
        options.projection = Some(doc! { "x": 1, "_id": 0 });
        let rest: Vec<Document> = coll
            .find(doc! {})
            .with_options(options)
            .sort(doc! { "x": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(rest, [doc! { "x": 4 }, doc! { "x": 5 }]);
    })
    .await;
}

#[tokio::test]
async fn a_case_insensitive_collation_matches_other_cases() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("collation").await;
        coll.insert_many([
            doc! { "_id": 1, "name": "Tea" },
            doc! { "_id": 2, "name": "tea" },
            doc! { "_id": 3, "name": "milk" },
        ])
        .await
        .unwrap();
        let plain = coll.count_documents(doc! { "name": "TEA" }).await.unwrap();
        assert_eq!(plain, 0);
        let options = FindOptions::builder().collation(case_insensitive()).build();
        let found: Vec<Document> = coll
            .find(doc! { "name": "TEA" })
            .with_options(options)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        let options = CountOptions::builder()
            .collation(case_insensitive())
            .build();
        let counted = coll
            .count_documents(doc! { "name": "TEA" })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(counted, 2);
        let one = coll
            .find_one(doc! { "name": "MILK" })
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(one.and_then(|d| d.get_i32("_id").ok()), Some(3));
        let options = DeleteOptions {
            collation: Some(case_insensitive()),
            ..Default::default()
        };
        let deleted = coll
            .delete_many(doc! { "name": "TEA" })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(deleted.deleted_count, 2);
    })
    .await;
}

#[tokio::test]
async fn update_replace_and_delete_options() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("writes").await;
        let options = UpdateOptions::builder().upsert(true).build();
        let upserted = coll
            .update_one(doc! { "_id": 1 }, doc! { "$set": { "qty": 1 } })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(upserted.upserted_id, Some(Bson::Int32(1)));

        // An update given as a pipeline, through `UpdateModifications`.
        let pipeline = vec![doc! { "$set": { "double": { "$multiply": ["$qty", 2] } } }];
        let updated = coll
            .update_many(doc! {}, pipeline)
            .with_options(UpdateOptions::default())
            .await
            .unwrap();
        assert_eq!(updated.modified_count, 1);
        let update = UpdateModifications::Document(doc! { "$inc": { "qty": 1 } });
        coll.update_one(doc! { "_id": 1 }, update).await.unwrap();
        let read = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
        assert_eq!(
            (read.get_i32("qty").ok(), read.get_i32("double").ok()),
            (Some(2), Some(2))
        );

        let options = UpdateOptions::builder()
            .array_filters(vec![doc! { "e": { "$gt": 1 } }])
            .build();
        coll.insert_one(doc! { "_id": 2, "a": [1, 2, 3] })
            .await
            .unwrap();
        coll.update_one(doc! { "_id": 2 }, doc! { "$set": { "a.$[e]": 0 } })
            .with_options(options)
            .await
            .unwrap();
        let read = coll.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
        assert_eq!(
            read.get_array("a").unwrap(),
            &vec![Bson::Int32(1), Bson::Int32(0), Bson::Int32(0)]
        );

        let options = ReplaceOptions::builder()
            .upsert(true)
            .hint(Hint::Name("_id_".to_string()))
            .build();
        let replaced = coll
            .replace_one(doc! { "_id": 3 }, doc! { "_id": 3, "new": true })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(replaced.upserted_id, Some(Bson::Int32(3)));

        let options = DeleteOptions::builder()
            .hint(Hint::Keys(doc! { "_id": 1 }))
            .comment(Bson::from("cleanup"))
            .build();
        let deleted = coll
            .delete_one(doc! { "_id": 3 })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(deleted.deleted_count, 1);
    })
    .await;
}

#[tokio::test]
async fn find_one_and_modify_options() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("find_and_modify").await;
        coll.insert_many([doc! { "_id": 1, "n": 1 }, doc! { "_id": 2, "n": 2 }])
            .await
            .unwrap();
        let options = FindOneAndUpdateOptions::builder()
            .return_document(ReturnDocument::After)
            .sort(doc! { "n": -1 })
            .build();
        let after = coll
            .find_one_and_update(doc! {}, doc! { "$inc": { "n": 10 } })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(after, Some(doc! { "_id": 2, "n": 12 }));

        let options = FindOneAndUpdateOptions {
            upsert: Some(true),
            return_document: Some(ReturnDocument::After),
            projection: Some(doc! { "_id": 0 }),
            ..Default::default()
        };
        let pipeline = vec![doc! { "$set": { "n": 7 } }];
        let upserted = coll
            .find_one_and_update(doc! { "_id": 3 }, pipeline)
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(upserted, Some(doc! { "n": 7 }));

        let options = FindOneAndReplaceOptions::builder()
            .return_document(ReturnDocument::Before)
            .build();
        let before = coll
            .find_one_and_replace(doc! { "_id": 1 }, doc! { "_id": 1, "n": 100 })
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(before, Some(doc! { "_id": 1, "n": 1 }));

        let options = FindOneAndDeleteOptions::builder()
            .sort(doc! { "n": 1 })
            .max_time(Duration::from_secs(5))
            .build();
        let deleted = coll
            .find_one_and_delete(doc! {})
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(deleted, Some(doc! { "_id": 3, "n": 7 }));
    })
    .await;
}

#[tokio::test]
async fn count_distinct_and_aggregate_options() {
    harness::within(TEST_BOUND, async {
        let coll = fresh("reads").await;
        let documents = (1..=6).map(|x| doc! { "_id": x, "parity": x % 2 });
        coll.insert_many(documents).await.unwrap();

        let options = CountOptions::builder().skip(1u64).limit(3u64).build();
        let counted = coll
            .count_documents(doc! {})
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(counted, 3);

        let options = EstimatedDocumentCountOptions::builder()
            .max_time(Duration::from_secs(5))
            .build();
        let estimated = coll
            .estimated_document_count()
            .with_options(options)
            .await
            .unwrap();
        assert_eq!(estimated, 6);

        let options = DistinctOptions::builder()
            .comment(Bson::from("parities"))
            .build();
        let mut parities = coll
            .distinct("parity", doc! {})
            .with_options(options)
            .await
            .unwrap();
        parities.sort_by_key(|value| value.as_i32());
        assert_eq!(parities, [Bson::Int32(0), Bson::Int32(1)]);

        let options = AggregateOptions::builder()
            .allow_disk_use(true)
            .batch_size(2u32)
            .build();
        let groups: Vec<Document> = coll
            .aggregate([
                doc! { "$group": { "_id": "$parity", "n": { "$sum": 1 } } },
                doc! { "$sort": { "_id": 1 } },
            ])
            .with_options(options)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            groups,
            [doc! { "_id": 0, "n": 3 }, doc! { "_id": 1, "n": 3 }]
        );
    })
    .await;
}
