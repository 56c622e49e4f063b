//! The official `mongodb` crate's action types, named as user code names them in type
//! annotations: the session markers (`ImplicitSession`, `ExplicitSession<'_>`) and the
//! mode markers (`ListSpecifications`, `ListNames`, `Single`, `Multiple`) of
//! `anymongo::action`. Written from the official documentation with only `mongodb`
//! replaced by `anymongo`: each annotation must compile, and each action, awaited, give
//! what its mode says.

use std::time::Duration;

use anymongo::action::{
    Aggregate, CreateIndex, CreateSearchIndex, ExplicitSession, Find, ImplicitSession,
    ListCollections, ListDatabases, ListIndexes, ListNames, ListSpecifications, Multiple,
    RunCursorCommand, Single, Watch,
};
use anymongo::bson::{doc, Document};
use anymongo::results::{CollectionSpecification, CreateIndexResult, CreateIndexesResult};
use anymongo::{Client, Collection, IndexModel, SearchIndexModel};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;

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
