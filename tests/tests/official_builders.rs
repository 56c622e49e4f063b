//! The options builders as the official `mongodb` crate 3.x documents them: every
//! setter of an `Option<T>` field takes a `T`, a `Some(T)` or a `None` (its builders
//! are `setter(into)`), integer literals infer their type, and the option types its
//! documentation builds (`WriteConcern`, `TransactionOptions`, `SessionOptions`,
//! `ChangeStreamOptions`, the GridFS options, ...) have builders. Written here from the
//! documentation, with only `mongodb` replaced by `anymongo`; the programs check what
//! they built or read, so that a test can fail.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::options::{
    Acknowledgment, BulkWriteOptions, ChangeStreamOptions, ChangeStreamPreAndPostImages,
    CollectionOptions, CreateCollectionOptions, CreateIndexOptions, DatabaseOptions, DriverInfo,
    DropCollectionOptions, DropDatabaseOptions, DropIndexOptions, FullDocumentType,
    GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsUploadOptions, HedgedReadOptions,
    IndexOptionDefaults, IndexOptions, IndexVersion, ListCollectionsOptions, ListDatabasesOptions,
    ListIndexesOptions, ReadConcern, ReadConcernLevel, RunCursorCommandOptions, ServerApi,
    ServerApiVersion, SessionOptions, TimeseriesGranularity, TimeseriesOptions, TransactionOptions,
    WriteConcern,
};
use anymongo::{Client, IndexModel};
use anymongo_tests::{harness, server};
use futures::TryStreamExt;

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

#[test]
fn setters_take_a_value_some_or_none() {
    // Plain values, integer literals included.
    let index = IndexOptions::builder()
        .unique(true)
        .expire_after(Duration::from_secs(3600))
        .version(IndexVersion::V2)
        .name("by_day".to_string())
        .build();
    assert_eq!(index.unique, Some(true));
    assert_eq!(index.expire_after, Some(Duration::from_secs(3600)));
    assert_eq!(index.version, Some(IndexVersion::V2));

    let api = ServerApi::builder()
        .version(ServerApiVersion::V1)
        .strict(true)
        .deprecation_errors(None)
        .build();
    assert_eq!(api.strict, Some(true));
    assert_eq!(api.deprecation_errors, None);

    let listing = ListCollectionsOptions::builder()
        .batch_size(5)
        .filter(Some(doc! { "name": "a" }))
        .build();
    assert_eq!(listing.batch_size, Some(5));
    assert_eq!(listing.filter, Some(doc! { "name": "a" }));
    assert_eq!(
        ListIndexesOptions::builder()
            .batch_size(5)
            .build()
            .batch_size,
        Some(5)
    );
    assert_eq!(
        ListDatabasesOptions::builder()
            .authorized_databases(Some(true))
            .build()
            .authorized_databases,
        Some(true)
    );

    // `Some(..)` and `None`, as code written for `setter(into)` passes them.
    let created = CreateCollectionOptions::builder()
        .capped(Some(true))
        .size(1024 * 1024)
        .max(Some(100))
        .validator(None)
        .write_concern(WriteConcern::majority())
        .index_option_defaults(
            IndexOptionDefaults::builder()
                .storage_engine(doc! { "wiredTiger": {} })
                .build(),
        )
        .change_stream_pre_and_post_images(
            ChangeStreamPreAndPostImages::builder()
                .enabled(true)
                .build(),
        )
        .build();
    assert_eq!(created.size, Some(1024 * 1024));
    assert_eq!(created.max, Some(100));
    assert_eq!(created.validator, None);

    let series = TimeseriesOptions::builder()
        .time_field("at")
        .meta_field(None)
        .granularity(TimeseriesGranularity::Minutes)
        .build();
    assert_eq!(series.time_field, "at");
    assert_eq!(series.granularity, Some(TimeseriesGranularity::Minutes));

    let cursor = RunCursorCommandOptions::builder()
        .batch_size(5)
        .max_time(Some(Duration::from_millis(500)))
        .comment(None)
        .build();
    assert_eq!(cursor.batch_size, Some(5));
    assert_eq!(cursor.max_time, Some(Duration::from_millis(500)));

    let bulk = BulkWriteOptions::builder()
        .ordered(false)
        .write_concern(None)
        .build();
    assert_eq!(bulk.ordered, Some(false));

    let concerns = DatabaseOptions::builder()
        .read_concern(ReadConcern::majority())
        .write_concern(Some(WriteConcern::nodes(1)))
        .build();
    assert_eq!(concerns.read_concern, Some(ReadConcern::majority()));
    let concerns = CollectionOptions::builder()
        .selection_criteria(None)
        .build();
    assert_eq!(concerns.selection_criteria, None);

    assert_eq!(
        DropCollectionOptions::builder()
            .write_concern(WriteConcern::majority())
            .build()
            .write_concern,
        Some(WriteConcern::majority())
    );
    assert_eq!(
        DropDatabaseOptions::builder()
            .write_concern(None)
            .build()
            .write_concern,
        None
    );
    assert_eq!(
        DropIndexOptions::builder()
            .max_time(Duration::from_secs(1))
            .build()
            .max_time,
        Some(Duration::from_secs(1))
    );
    assert_eq!(
        CreateIndexOptions::builder()
            .max_time(Some(Duration::from_secs(1)))
            .build()
            .max_time,
        Some(Duration::from_secs(1))
    );
}

#[test]
fn the_option_types_the_documentation_builds_have_builders() {
    let concern = WriteConcern::builder()
        .w(Acknowledgment::Majority)
        .w_timeout(Duration::from_secs(2))
        .journal(Some(true))
        .build();
    assert_eq!(concern.w, Some(Acknowledgment::Majority));
    assert_eq!(concern.w_timeout, Some(Duration::from_secs(2)));
    assert_eq!(concern.journal, Some(true));
    assert_eq!(Acknowledgment::from(2), Acknowledgment::Nodes(2));
    assert_eq!(Acknowledgment::from("majority"), Acknowledgment::Majority);
    assert_eq!(
        WriteConcern::custom("dc").w,
        Some(Acknowledgment::Custom("dc".into()))
    );
    assert_eq!(ReadConcern::custom("snapshot"), ReadConcern::snapshot());
    assert_eq!(
        ReadConcern::from(ReadConcernLevel::Local),
        ReadConcern::local()
    );

    let transaction = TransactionOptions::builder()
        .read_concern(ReadConcern::snapshot())
        .write_concern(WriteConcern::majority())
        .max_commit_time(Some(Duration::from_secs(5)))
        .selection_criteria(None)
        .build();
    let session = SessionOptions::builder()
        .causal_consistency(true)
        .default_transaction_options(transaction.clone())
        .build();
    assert_eq!(session.default_transaction_options, Some(transaction));

    let stream = ChangeStreamOptions::builder()
        .full_document(FullDocumentType::UpdateLookup)
        .batch_size(5)
        .max_await_time(Some(Duration::from_millis(100)))
        .build();
    assert_eq!(stream.batch_size, Some(5));
    assert_eq!(stream.full_document, Some(FullDocumentType::UpdateLookup));

    let info = DriverInfo::builder()
        .name("my-odm")
        .version("1.2.3".to_string())
        .build();
    assert_eq!(info.name, "my-odm");
    assert_eq!(info.platform, None);

    let bucket = GridFsBucketOptions::builder()
        .bucket_name("images".to_string())
        .chunk_size_bytes(1024)
        .write_concern(None)
        .build();
    assert_eq!(bucket.chunk_size_bytes, Some(1024));
    let upload = GridFsUploadOptions::builder()
        .chunk_size_bytes(Some(512))
        .metadata(doc! { "kind": "png" })
        .build();
    assert_eq!(upload.metadata, Some(doc! { "kind": "png" }));
    assert_eq!(
        GridFsDownloadByNameOptions::builder()
            .revision(-1)
            .build()
            .revision,
        Some(-1)
    );
    assert!(HedgedReadOptions::builder().enabled(true).build().enabled);
}

/// The built options, given to their actions, do what they say against the server.
#[tokio::test]
async fn built_options_reach_the_server() -> anymongo::error::Result<()> {
    harness::within(TEST_BOUND, async {
        let client = Client::with_uri_str(server::shared().uri()).await?;
        let db = client.database_with_options(
            "official_builders",
            DatabaseOptions::builder()
                .write_concern(WriteConcern::builder().w(Acknowledgment::Majority).build())
                .build(),
        );
        db.drop().await?;

        db.create_collection("capped")
            .with_options(
                CreateCollectionOptions::builder()
                    .capped(true)
                    .size(Some(64 * 1024))
                    .max(2)
                    .build(),
            )
            .await?;
        let events = db.collection::<Document>("events");
        let index = IndexModel::builder()
            .keys(doc! { "at": 1 })
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(3600))
                    .name(Some("at_ttl".to_string()))
                    .build(),
            )
            .build();
        assert_eq!(events.create_index(index).await?.index_name, "at_ttl");
        let indexes: Vec<IndexModel> = events.list_indexes().await?.try_collect().await?;
        let ttl = indexes
            .iter()
            .filter_map(|index| index.options.as_ref())
            .find(|options| options.name.as_deref() == Some("at_ttl"))
            .expect("the TTL index is listed");
        assert_eq!(ttl.expire_after, Some(Duration::from_secs(3600)));

        // The server kept the options the builder was given.
        let specs: Vec<_> = db
            .list_collections()
            .with_options(
                ListCollectionsOptions::builder()
                    .filter(doc! { "name": "capped" })
                    .batch_size(5)
                    .build(),
            )
            .await?
            .try_collect()
            .await?;
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].options.capped, Some(true));
        assert_eq!(specs[0].options.size, Some(64 * 1024));
        assert_eq!(specs[0].options.max, Some(2));

        let mut session = client
            .start_session()
            .with_options(
                SessionOptions::builder()
                    .default_transaction_options(
                        TransactionOptions::builder()
                            .write_concern(WriteConcern::majority())
                            .read_concern(Some(ReadConcern::majority()))
                            .build(),
                    )
                    .build(),
            )
            .await?;
        session.start_transaction().await?;
        events
            .insert_one(doc! { "at": 1 })
            .session(&mut session)
            .await?;
        session.commit_transaction().await?;
        assert_eq!(events.count_documents(doc! {}).await?, 1);

        let bucket = db.gridfs_bucket(
            GridFsBucketOptions::builder()
                .bucket_name("images".to_string())
                .chunk_size_bytes(4)
                .build(),
        );
        let mut upload = bucket.open_upload_stream("a.png").await?;
        futures::AsyncWriteExt::write_all(&mut upload, b"0123456789").await?;
        futures::AsyncWriteExt::close(&mut upload).await?;
        let chunks = db.collection::<Document>("images.chunks");
        // Ten bytes in chunks of four.
        assert_eq!(chunks.count_documents(doc! {}).await?, 3);
        Ok(())
    })
    .await
}
