//! The official `mongodb` crate's action types, named as user code names them in type
//! annotations: the session markers (`ImplicitSession`, `ExplicitSession<'_>`) and the
//! mode markers (`ListSpecifications`, `ListNames`, `Single`, `Multiple`) of
//! `anymongo::action`. Written from the official documentation with only `mongodb`
//! replaced by `anymongo`: each annotation must compile, and each action, awaited, give
//! what its mode says.

use std::time::Duration;

use anymongo::action::{
    Aggregate, BulkWrite, CollectionBulkWrite, CountDocuments, CreateIndex, CreateSearchIndex,
    Delete, Distinct, DropCollection, DropIndex, DropSearchIndex, EstimatedDocumentCount,
    ExplicitSession, Find, ImplicitSession, InsertMany, InsertOne, ListCollections, ListDatabases,
    ListIndexes, ListNames, ListSearchIndexes, ListSpecifications, Multiple, ReplaceOne,
    RunCursorCommand, Single, StartTransaction, Update, UpdateSearchIndex, Watch,
};
use anymongo::bson::{doc, Bson, Document};
use anymongo::options::{DeleteOneModel, InsertOneModel, WriteModel};
use anymongo::results::{
    CollectionSpecification, CreateIndexResult, CreateIndexesResult, DeleteResult,
    InsertManyResult, InsertOneResult, SummaryBulkWriteResult, UpdateResult,
    VerboseBulkWriteResult,
};
use anymongo::{Client, ClientSession, Collection, IndexModel, SearchIndexModel};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_listing_modes_name_what_the_listing_returns() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_action_types_lists");
        db.drop().await?;
        let coll: Collection<Document> = db.collection("items");
        coll.insert_one(doc! { "x": 1 }).await?;

        let create: CreateIndex<'_> =
            coll.create_index(IndexModel::builder().keys(doc! { "x": 1 }).build());
        let created: CreateIndexResult = create.await?;
        assert_eq!(created.index_name, "x_1");
        let models = [doc! { "y": 1 }, doc! { "z": -1 }]
            .map(|keys| IndexModel::builder().keys(keys).build());
        let create: CreateIndex<'_, Multiple> = coll.create_indexes(models);
        let created: CreateIndexesResult = create.await?;
        assert_eq!(created.index_names, ["y_1", "z_-1"]);
        let single: CreateIndex<'_, Single> =
            coll.create_index(IndexModel::builder().keys(doc! { "w": 1 }).build());
        assert_eq!(single.await?.index_name, "w_1");

        let indexes: ListIndexes<'_> = coll.list_indexes();
        let indexes: Vec<IndexModel> = indexes.await?.try_collect().await?;
        assert_eq!(indexes.len(), 5);
        let names: ListIndexes<'_, ListNames> = coll.list_index_names();
        let mut names = names.await?;
        names.sort();
        assert_eq!(names, ["_id_", "w_1", "x_1", "y_1", "z_-1"]);

        let collections: ListCollections<'_, ListSpecifications> = db.list_collections();
        let collections: Vec<CollectionSpecification> = collections.await?.try_collect().await?;
        assert_eq!(collections.len(), 1);
        let names: ListCollections<'_, ListNames> = db.list_collection_names();
        assert_eq!(names.await?, ["items"]);

        let databases: ListDatabases<'_> = client.list_databases();
        assert!(databases
            .await?
            .iter()
            .any(|database| database.name == "official_action_types_lists"));
        let names: ListDatabases<'_, ListNames> = client.list_database_names();
        assert!(names
            .await?
            .iter()
            .any(|name| name == "official_action_types_lists"));

        // Built only (Atlas Search indexes need Atlas): the annotations compile.
        let model = SearchIndexModel::builder()
            .definition(doc! { "mappings": { "dynamic": true } })
            .build();
        let _one: CreateSearchIndex<'_, Single> = coll.create_search_index(model.clone());
        let _many: CreateSearchIndex<'_, Multiple> = coll.create_search_indexes([model]);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_session_markers_name_an_action_in_or_out_of_a_session() -> anymongo::error::Result<()>
{
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_action_types_sessions");
        let coll: Collection<Document> = db.collection("session");
        coll.drop().await?;
        coll.insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }])
            .await?;
        let mut session = client.start_session().await?;

        let find: Find<'_, Document, ImplicitSession> = coll.find(doc! {}).sort(doc! { "_id": 1 });
        let found: Vec<Document> = find.await?.try_collect().await?;
        assert_eq!(found.len(), 2);
        let find: Find<'_, Document, ExplicitSession<'_>> =
            coll.find(doc! { "_id": 2 }).session(&mut session);
        let mut cursor = find.await?;
        let found: Vec<Document> = cursor.stream(&mut session).try_collect().await?;
        assert_eq!(found, [doc! { "_id": 2 }]);

        let aggregate: Aggregate<'_, ExplicitSession<'_>> = coll
            .aggregate([doc! { "$count": "n" }])
            .session(&mut session);
        let mut cursor = aggregate.await?;
        let counted: Vec<Document> = cursor.stream(&mut session).try_collect().await?;
        assert_eq!(counted, [doc! { "n": 2 }]);

        let names: ListCollections<'_, ListNames, ExplicitSession<'_>> =
            db.list_collection_names().session(&mut session);
        assert!(names.await?.contains(&"session".to_string()));
        let indexes: ListIndexes<'_, ListSpecifications, ExplicitSession<'_>> =
            coll.list_indexes().session(&mut session);
        let mut cursor = indexes.await?;
        let indexes: Vec<IndexModel> = cursor.stream(&mut session).try_collect().await?;
        assert_eq!(indexes.len(), 1);
        let command: RunCursorCommand<'_, ExplicitSession<'_>> = db
            .run_cursor_command(doc! { "find": "session" })
            .session(&mut session);
        let mut cursor = command.await?;
        let found: Vec<Document> = cursor.stream(&mut session).try_collect().await?;
        assert_eq!(found.len(), 2);

        // A change stream's action, opened and closed at once.
        let watch: Watch<'_, Document, ImplicitSession> = coll.watch();
        drop(watch.await?);
        Ok(())
    })
    .await
}

/// A typed collection's document: the write actions do not name it.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
    qty: i32,
}

#[tokio::test]
async fn the_crud_action_types_name_no_document_type() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_action_types_crud");
        let items: Collection<Item> = db.collection("items");
        let drop: DropCollection<'_> = items.drop();
        drop.await?;
        let item = |id, name: &str, qty| Item {
            id,
            name: name.to_owned(),
            qty,
        };

        let insert: InsertOne<'_> = items.insert_one(item(1, "tea", 5));
        let inserted: InsertOneResult = insert.await?;
        assert_eq!(inserted.inserted_id, Bson::Int32(1));
        let insert: InsertMany<'_> =
            items.insert_many([item(2, "milk", 0), item(3, "sugar", 7), item(4, "tea", 1)]);
        let inserted: InsertManyResult = insert.await?;
        assert_eq!(inserted.inserted_ids.len(), 3);

        let update: Update<'_> = items
            .update_one(doc! { "_id": 2 }, doc! { "$inc": { "qty": 3 } })
            .upsert(false);
        let updated: UpdateResult = update.await?;
        assert_eq!((updated.matched_count, updated.modified_count), (1, 1));
        let update: Update<'_> = items.update_many(doc! {}, doc! { "$inc": { "qty": 1 } });
        assert_eq!(update.await?.modified_count, 4);
        let replace: ReplaceOne<'_> = items.replace_one(doc! { "_id": 3 }, item(3, "honey", 2));
        assert_eq!(replace.await?.modified_count, 1);
        let honey = items.find_one(doc! { "_id": 3 }).await?;
        assert_eq!(honey, Some(item(3, "honey", 2)));

        let count: CountDocuments<'_> = items.count_documents(doc! { "name": "tea" });
        assert_eq!(count.await?, 2);
        let estimate: EstimatedDocumentCount<'_> = items.estimated_document_count();
        assert_eq!(estimate.await?, 4);
        let distinct: Distinct<'_> = items.distinct("name", doc! { "qty": { "$gt": 2 } });
        let mut names = distinct.await?;
        names.sort_by_key(|name| name.to_string());
        assert_eq!(names, [Bson::from("milk"), Bson::from("tea")]);

        let delete: Delete<'_> = items.delete_one(doc! { "name": "tea" });
        let deleted: DeleteResult = delete.await?;
        assert_eq!(deleted.deleted_count, 1);
        let delete: Delete<'_> = items.delete_many(doc! {});
        assert_eq!(delete.await?.deleted_count, 3);

        items
            .create_index(IndexModel::builder().keys(doc! { "qty": 1 }).build())
            .await?;
        let drop: DropIndex<'_> = items.drop_index("qty_1");
        drop.await?;
        let names = items.list_index_names().await?;
        assert_eq!(names, ["_id_"]);
        let drop: DropIndex<'_> = items.drop_indexes();
        drop.await?;

        // In a session: the same types, the session's lifetime their own.
        let mut session = client.start_session().await?;
        let insert: InsertOne<'_> = items.insert_one(item(5, "salt", 1)).session(&mut session);
        insert.await?;
        let count: CountDocuments<'_> = items.count_documents(doc! {}).session(&mut session);
        assert_eq!(count.await?, 1);

        // Built only (Atlas Search indexes need Atlas): the annotations compile.
        let _update: UpdateSearchIndex<'_> =
            items.update_search_index("default", doc! { "mappings": { "dynamic": true } });
        let _drop: DropSearchIndex<'_> = items.drop_search_index("default");
        let _list: ListSearchIndexes<'_> = items.list_search_indexes();

        let drop: DropCollection<'_> = items.drop();
        drop.await?;
        assert!(!db
            .list_collection_names()
            .await?
            .contains(&"items".to_owned()));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_bulk_write_types_name_their_result() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let items: Collection<Document> = client
            .database("official_action_types_bulk")
            .collection("items");
        items.drop().await?;
        let insert = |id: i32| -> WriteModel {
            InsertOneModel::builder()
                .namespace(items.namespace())
                .document(doc! { "_id": id })
                .build()
                .into()
        };

        // The client's, as the official crate names it.
        let write: BulkWrite<'_, SummaryBulkWriteResult> = client.bulk_write([insert(1)]);
        let summary: SummaryBulkWriteResult = write.await?;
        assert_eq!(summary.inserted_count, 1);
        let write: BulkWrite<'_, VerboseBulkWriteResult> =
            client.bulk_write([insert(2), insert(3)]).verbose_results();
        let verbose: VerboseBulkWriteResult = write.await?;
        assert_eq!(verbose.summary.inserted_count, 2);
        assert_eq!(verbose.insert_results[&1].inserted_id, Bson::Int32(3));

        // The collection's, an addition, without the collection's type either.
        let write: CollectionBulkWrite<'_> =
            items.bulk_write([DeleteOneModel::new(doc! { "_id": 1 }).into()]);
        assert_eq!(write.await?.deleted_count, 1);
        assert_eq!(items.count_documents(doc! {}).await?, 2);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_start_of_a_transaction_names_its_session() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database("official_action_types_transactions");
        db.drop().await?;
        db.create_collection("items").await?;
        let items: Collection<Document> = db.collection("items");
        let mut session = client.start_session().await?;

        let start: StartTransaction<&mut ClientSession> = session.start_transaction();
        start.await?;
        items
            .insert_one(doc! { "_id": 1 })
            .session(&mut session)
            .await?;
        session.abort_transaction().await?;
        assert_eq!(items.count_documents(doc! {}).await?, 0);

        let start: StartTransaction<&mut ClientSession> = session.start_transaction();
        let inserted = start
            .and_run2(async |session| {
                items.insert_one(doc! { "_id": 2 }).session(session).await?;
                Ok(1)
            })
            .await?;
        assert_eq!(inserted, 1);
        assert_eq!(items.find_one(doc! {}).await?, Some(doc! { "_id": 2 }));
        Ok(())
    })
    .await
}
