//! GridFS against a real SecantusDB server on loopback: files split into chunks and
//! read back whole, revisions by name, and the errors of missing and corrupt files.

use std::time::Duration;

use anymongo::bson::spec::BinarySubtype;
use anymongo::bson::{doc, Binary, Bson, DateTime};
use anymongo::gridfs::{GridFsBucket, GridFsBucketOptions, GridFsError, GridFsUploadOptions};
use anymongo::{Client, ErrorKind};
use anymongo_tests::{harness, server};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// An empty bucket named after the test, with small chunks so files span several.
async fn fresh_bucket(name: &str) -> GridFsBucket {
    let uri = format!("{}?appName=gridfs_{name}", server::shared().uri());
    let client = Client::with_uri(&uri, anymongo_native::runtime()).unwrap();
    let options = GridFsBucketOptions {
        bucket_name: name.to_owned(),
        chunk_size_bytes: 4,
        ..GridFsBucketOptions::default()
    };
    let bucket = GridFsBucket::new(&client.database("gridfs_tests"), options);
    bucket.drop().await.unwrap();
    bucket
}

fn gridfs_error(error: anymongo::Error) -> GridFsError {
    match &*error.kind {
        ErrorKind::GridFs(error) => error.clone(),
        other => panic!("expected a GridFS error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_file_spanning_several_chunks_is_read_back_whole() {
    bounded(async {
        let bucket = fresh_bucket("spanning").await;
        let content = b"0123456789";
        let id = bucket
            .upload_from_bytes("digits.txt", content, None)
            .await
            .unwrap();
        assert_eq!(bucket.download(&id).await.unwrap(), content);
        // 10 bytes in chunks of 4: 4 + 4 + 2.
        assert_eq!(
            bucket
                .chunks()
                .count_documents(doc! {}, None)
                .await
                .unwrap(),
            3
        );
        let file = bucket.files().find_one(doc! {}).await.unwrap().unwrap();
        assert_eq!(file.get_i64("length").unwrap(), 10);
        assert_eq!(file.get_str("filename").unwrap(), "digits.txt");
        // The first upload created the indexes downloads use.
        let indexes = bucket.chunks().list_index_names(None).await.unwrap();
        assert!(
            indexes.contains(&"files_id_1_n_1".to_owned()),
            "{indexes:?}"
        );

        let empty = bucket.upload_from_bytes("empty", b"", None).await.unwrap();
        assert!(bucket.download(&empty).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn revisions_are_found_by_name_and_index() {
    bounded(async {
        let bucket = fresh_bucket("revisions").await;
        for (n, content) in [b"first", b"secnd", b"third"].iter().enumerate() {
            let options = GridFsUploadOptions {
                id: Some(Bson::Int32(i32::try_from(n).unwrap())),
                ..GridFsUploadOptions::default()
            };
            let id = bucket
                .upload_from_bytes("notes", *content, options)
                .await
                .unwrap();
            // Upload dates have millisecond precision: set them apart, in upload order.
            let date = DateTime::from_millis(1_000 * (i64::try_from(n).unwrap() + 1));
            bucket
                .files()
                .update_one(
                    doc! { "_id": id },
                    doc! { "$set": { "uploadDate": date } },
                    None,
                )
                .await
                .unwrap();
        }
        let revision = |n: i32| bucket.download_by_name("notes", n);
        assert_eq!(revision(0).await.unwrap(), b"first");
        assert_eq!(revision(1).await.unwrap(), b"secnd");
        assert_eq!(revision(-1).await.unwrap(), b"third");
        assert_eq!(revision(-3).await.unwrap(), b"first");
        let missing = gridfs_error(revision(3).await.unwrap_err());
        assert_eq!(
            missing,
            GridFsError::RevisionNotFound {
                filename: "notes".into(),
                revision: 3
            }
        );

        bucket.rename_by_name("notes", "renamed").await.unwrap();
        assert_eq!(
            bucket.download_by_name("renamed", None).await.unwrap(),
            b"third"
        );
        bucket.delete_by_name("renamed").await.unwrap();
        assert_eq!(
            bucket
                .chunks()
                .count_documents(doc! {}, None)
                .await
                .unwrap(),
            0
        );
    })
    .await;
}

#[tokio::test]
async fn missing_and_corrupt_files_are_errors() {
    bounded(async {
        let bucket = fresh_bucket("corrupt").await;
        let nothing = gridfs_error(bucket.download(&Bson::Int32(404)).await.unwrap_err());
        assert_eq!(nothing, GridFsError::FileNotFound { id: Bson::Int32(404) });

        let id = bucket
            .upload_from_bytes("short", b"abcdefgh", None)
            .await
            .unwrap();
        bucket
            .chunks()
            .delete_one(doc! { "files_id": id.clone(), "n": 1 }, None)
            .await
            .unwrap();
        let corrupt = gridfs_error(bucket.download(&id).await.unwrap_err());
        assert!(
            matches!(&corrupt, GridFsError::CorruptFile { message, .. } if message.contains("chunk 1")),
            "{corrupt:?}"
        );

        bucket.delete(&id).await.unwrap();
        let deleted = gridfs_error(bucket.delete(&id).await.unwrap_err());
        assert_eq!(deleted, GridFsError::FileNotFound { id });
    })
    .await;
}

/// Files documents and chunks written directly, as a broken uploader or a hostile
/// writer could leave them: the download reads the chunks in order and checks each
/// against `length` and `chunkSize` (GridFS spec, "File Download"), and never allocates
/// from the stored `length`.
#[tokio::test]
async fn a_files_document_that_does_not_match_its_chunks_is_a_gridfs_error() {
    bounded(async {
        let bucket = fresh_bucket("forged").await;
        let chunk = |id: i32, n: i32, data: &[u8]| {
            doc! {
                "files_id": id,
                "n": n,
                "data": Binary { subtype: BinarySubtype::Generic, bytes: data.to_vec() },
            }
        };
        let file = |id: i32, length: Bson, chunk_size: Bson| {
            doc! {
                "_id": id, "length": length, "chunkSize": chunk_size,
                "uploadDate": DateTime::from_millis(0), "filename": format!("forged{id}"),
            }
        };
        let two_to_the_40 = Bson::Int64(1 << 40);
        // (files document, its chunks, what the error must say)
        let cases = [
            // A length of 2^40 bytes with no chunk, then with one full chunk.
            (file(1, two_to_the_40.clone(), Bson::Int32(4)), vec![], "chunk 0"),
            (
                file(2, two_to_the_40, Bson::Int32(4)),
                vec![chunk(2, 0, b"abcd")],
                "chunk 1",
            ),
            // A chunk of the wrong size: the first one too short, the last one too long.
            (
                file(3, Bson::Int32(6), Bson::Int32(4)),
                vec![chunk(3, 0, b"abc"), chunk(3, 1, b"de")],
                "chunk 0 holds 3 bytes, expected 4",
            ),
            (
                file(4, Bson::Int32(6), Bson::Int32(4)),
                vec![chunk(4, 0, b"abcd"), chunk(4, 1, b"efg")],
                "chunk 1 holds 3 bytes, expected 2",
            ),
            // A missing chunk in the middle, and an extra chunk after the last.
            (
                file(5, Bson::Int32(12), Bson::Int32(4)),
                vec![chunk(5, 0, b"abcd"), chunk(5, 2, b"ijkl")],
                "chunk 1 is missing",
            ),
            (
                file(6, Bson::Int32(4), Bson::Int32(4)),
                vec![chunk(6, 0, b"abcd"), chunk(6, 1, b"efgh")],
                "more than 1 chunks",
            ),
            // Values no upload writes: a negative length, a chunkSize of 0 or below, a
            // length that is not an integer.
            (file(7, Bson::Int64(-1), Bson::Int32(4)), vec![], "no valid length"),
            (file(8, Bson::Int32(4), Bson::Int32(0)), vec![], "chunkSize is 0"),
            (file(9, Bson::Int32(4), Bson::Int32(-4)), vec![], "no valid chunkSize"),
            (file(10, Bson::Double(2.5), Bson::Int32(4)), vec![], "no valid length"),
        ];
        for (files_document, chunks, expected) in cases {
            let id = files_document.get("_id").unwrap().clone();
            bucket.files().insert_one(files_document, None).await.unwrap();
            if !chunks.is_empty() {
                bucket.chunks().insert_many(chunks, None).await.unwrap();
            }
            let error = gridfs_error(bucket.download(&id).await.unwrap_err());
            assert!(
                matches!(&error, GridFsError::CorruptFile { message, .. } if message.contains(expected)),
                "file {id}: {error:?}, expected {expected:?}"
            );
        }

        // A files document and chunks that agree still download.
        bucket
            .files()
            .insert_one(file(11, Bson::Int64(6), Bson::Int64(4)), None)
            .await
            .unwrap();
        bucket
            .chunks()
            .insert_many(vec![chunk(11, 0, b"abcd"), chunk(11, 1, b"ef")], None)
            .await
            .unwrap();
        assert_eq!(bucket.download(&Bson::Int32(11)).await.unwrap(), b"abcdef");
    })
    .await;
}

/// With timeoutMS, one deadline covers a whole download (its files find and its
/// chunks find and getMores) and the download still reads every chunk.
#[tokio::test]
async fn a_download_with_a_timeout_reads_every_chunk_within_one_deadline() {
    bounded(async {
        let bucket = fresh_bucket("timed").await;
        let content = b"0123456789abcdef";
        let id = bucket
            .upload_from_bytes("hex.txt", content, None)
            .await
            .unwrap();
        let timed = bucket.with_timeout(Duration::from_secs(5));
        assert_eq!(timed.download(&id).await.unwrap(), content);
        let renamed = timed.rename(&id, "renamed.txt").await;
        assert!(renamed.is_ok(), "{renamed:?}");
        // Zero: no limit, the same result.
        let unlimited = bucket.with_timeout(Duration::ZERO);
        assert_eq!(unlimited.download(&id).await.unwrap(), content);
    })
    .await;
}
