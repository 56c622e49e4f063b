//! GridFS against a real SecantusDB server on loopback: files written through upload
//! streams, split into chunks and read back through download streams, revisions by
//! name, and the errors of missing and corrupt files.

use std::time::Duration;

use anymongo::bson::spec::BinarySubtype;
use anymongo::bson::{doc, Binary, Bson, DateTime};
use anymongo::error::{GridFsErrorKind, GridFsFileIdentifier};
use anymongo::gridfs::{
    GridFsBucket, GridFsBucketOptions, GridFsDownloadStream, GridFsUploadOptions,
};
use anymongo::{Client, ErrorKind};
use anymongo_tests::{harness, server};
use futures::io::{AsyncReadExt, AsyncWriteExt};

/// Every test finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(30);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

/// An empty bucket named after the test, with small chunks so files span several.
async fn fresh_bucket(name: &str) -> GridFsBucket {
    let uri = format!("{}?appName=gridfs_{name}", server::shared().uri());
    let client = Client::with_uri_str(&uri).await.unwrap();
    let options = GridFsBucketOptions {
        bucket_name: Some(name.to_owned()),
        chunk_size_bytes: Some(4),
        ..GridFsBucketOptions::default()
    };
    let bucket = client.database("gridfs_tests").gridfs_bucket(options);
    bucket.drop().await.unwrap();
    bucket
}

/// Uploads `content` whole as `filename`; returns the file's id.
async fn upload(
    bucket: &GridFsBucket,
    filename: &str,
    content: &[u8],
    options: impl Into<Option<GridFsUploadOptions>>,
) -> anymongo::Result<Bson> {
    let mut upload = bucket
        .open_upload_stream(filename)
        .with_options(options)
        .await?;
    upload.write_all(content).await?;
    upload.close().await?;
    Ok(upload.id().clone())
}

/// The whole content of the download `opened`.
async fn read_all(
    opened: impl std::future::IntoFuture<Output = anymongo::Result<GridFsDownloadStream>>,
) -> anymongo::Result<Vec<u8>> {
    let mut content = Vec::new();
    opened.await?.read_to_end(&mut content).await?;
    Ok(content)
}

fn gridfs_error(error: anymongo::Error) -> GridFsErrorKind {
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
        let id = upload(&bucket, "digits.txt", content, None).await.unwrap();
        assert_eq!(
            read_all(bucket.open_download_stream(id.clone()))
                .await
                .unwrap(),
            content
        );
        // 10 bytes in chunks of 4: 4 + 4 + 2.
        assert_eq!(bucket.chunks().count_documents(doc! {}).await.unwrap(), 3);
        let file = bucket.files().find_one(doc! {}).await.unwrap().unwrap();
        assert_eq!(file.get_i64("length").unwrap(), 10);
        assert_eq!(file.get_str("filename").unwrap(), "digits.txt");
        // The first upload created the indexes downloads use.
        let indexes = bucket.chunks().list_index_names().await.unwrap();
        assert!(
            indexes.contains(&"files_id_1_n_1".to_owned()),
            "{indexes:?}"
        );

        let empty = upload(&bucket, "empty", b"", None).await.unwrap();
        assert!(read_all(bucket.open_download_stream(empty.clone()))
            .await
            .unwrap()
            .is_empty());
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
            let id = upload(&bucket, "notes", *content, options).await.unwrap();
            // Upload dates have millisecond precision: set them apart, in upload order.
            let date = DateTime::from_millis(1_000 * (i64::try_from(n).unwrap() + 1));
            bucket
                .files()
                .update_one(doc! { "_id": id }, doc! { "$set": { "uploadDate": date } })
                .await
                .unwrap();
        }
        let revision = |n: i32| read_all(bucket.open_download_stream_by_name("notes").revision(n));
        assert_eq!(revision(0).await.unwrap(), b"first");
        assert_eq!(revision(1).await.unwrap(), b"secnd");
        assert_eq!(revision(-1).await.unwrap(), b"third");
        assert_eq!(revision(-3).await.unwrap(), b"first");
        let missing = gridfs_error(revision(3).await.unwrap_err());
        assert!(
            matches!(
                missing,
                GridFsErrorKind::RevisionNotFound { revision: 3, .. }
            ),
            "{missing:?}"
        );
        // No file of the name at all: the file is not found (as the official crate).
        let unknown = read_all(bucket.open_download_stream_by_name("nothing"));
        let unknown = gridfs_error(unknown.await.unwrap_err());
        assert!(
            matches!(&unknown, GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Filename(name), ..
            } if name == "nothing"),
            "{unknown:?}"
        );

        bucket.rename_by_name("notes", "renamed").await.unwrap();
        assert_eq!(
            read_all(bucket.open_download_stream_by_name("renamed"))
                .await
                .unwrap(),
            b"third"
        );
        bucket.delete_by_name("renamed").await.unwrap();
        assert_eq!(bucket.chunks().count_documents(doc! {}).await.unwrap(), 0);
        for error in [
            bucket.delete_by_name("renamed").await.unwrap_err(),
            bucket.rename_by_name("renamed", "x").await.unwrap_err(),
        ] {
            let error = gridfs_error(error);
            assert!(
                matches!(&error, GridFsErrorKind::FileNotFound {
                    identifier: GridFsFileIdentifier::Filename(name), ..
                } if name == "renamed"),
                "{error:?}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn missing_and_corrupt_files_are_errors() {
    bounded(async {
        let bucket = fresh_bucket("corrupt").await;
        let nothing = gridfs_error(
            read_all(bucket.open_download_stream(Bson::Int32(404)))
                .await
                .unwrap_err(),
        );
        assert!(
            matches!(
                &nothing,
                GridFsErrorKind::FileNotFound {
                    identifier: GridFsFileIdentifier::Id(Bson::Int32(404)),
                    ..
                }
            ),
            "{nothing:?}"
        );

        let id = upload(&bucket, "short", b"abcdefgh", None).await.unwrap();
        bucket
            .chunks()
            .delete_one(doc! { "files_id": id.clone(), "n": 1 })
            .await
            .unwrap();
        let corrupt = gridfs_error(
            read_all(bucket.open_download_stream(id.clone()))
                .await
                .unwrap_err(),
        );
        assert!(
            matches!(corrupt, GridFsErrorKind::MissingChunk { n: 1, .. }),
            "{corrupt:?}"
        );

        bucket.delete(id.clone()).await.unwrap();
        let deleted = gridfs_error(bucket.delete(id.clone()).await.unwrap_err());
        assert!(
            matches!(&deleted, GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Id(deleted_id), ..
            } if *deleted_id == id),
            "{deleted:?}"
        );
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
            (
                file(1, two_to_the_40.clone(), Bson::Int32(4)),
                vec![],
                "chunk 0",
            ),
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
                "at least 2 chunks, expected 1",
            ),
            // Values no upload writes: a negative length, a chunkSize of 0 or below, a
            // length that is not an integer.
            (
                file(7, Bson::Int64(-1), Bson::Int32(4)),
                vec![],
                "no valid length",
            ),
            (
                file(8, Bson::Int32(4), Bson::Int32(0)),
                vec![],
                "chunkSize is 0",
            ),
            (
                file(9, Bson::Int32(4), Bson::Int32(-4)),
                vec![],
                "no valid chunkSize",
            ),
            (
                file(10, Bson::Double(2.5), Bson::Int32(4)),
                vec![],
                "no valid length",
            ),
        ];
        for (files_document, chunks, expected) in cases {
            let id = files_document.get("_id").unwrap().clone();
            bucket.files().insert_one(files_document).await.unwrap();
            if !chunks.is_empty() {
                bucket.chunks().insert_many(chunks).await.unwrap();
            }
            let error = gridfs_error(
                read_all(bucket.open_download_stream(id.clone()))
                    .await
                    .unwrap_err(),
            );
            // Each fault of the chunks has its official kind; the message says which.
            let chunk_kind = matches!(
                error,
                GridFsErrorKind::MissingChunk { .. }
                    | GridFsErrorKind::WrongSizeChunk { .. }
                    | GridFsErrorKind::WrongNumberOfChunks { .. }
            );
            let malformed = matches!(error, GridFsErrorKind::CorruptFile { .. });
            assert!(
                (chunk_kind || malformed) && error.to_string().contains(expected),
                "file {id}: {error:?}, expected {expected:?}"
            );
            assert_eq!(
                malformed,
                expected.starts_with("no valid") || expected.contains("chunkSize is 0"),
                "file {id}: {error:?}"
            );
        }

        // A files document and chunks that agree still download.
        bucket
            .files()
            .insert_one(file(11, Bson::Int64(6), Bson::Int64(4)))
            .await
            .unwrap();
        bucket
            .chunks()
            .insert_many(vec![chunk(11, 0, b"abcd"), chunk(11, 1, b"ef")])
            .await
            .unwrap();
        assert_eq!(
            read_all(bucket.open_download_stream(Bson::Int32(11)))
                .await
                .unwrap(),
            b"abcdef"
        );
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
        let id = upload(&bucket, "hex.txt", content, None).await.unwrap();
        let timed = bucket.with_timeout(Duration::from_secs(5));
        assert_eq!(
            read_all(timed.open_download_stream(id.clone()))
                .await
                .unwrap(),
            content
        );
        let renamed = timed.rename(id.clone(), "renamed.txt").await;
        assert!(renamed.is_ok(), "{renamed:?}");
        // Zero: no limit, the same result.
        let unlimited = bucket.with_timeout(Duration::ZERO);
        assert_eq!(
            read_all(unlimited.open_download_stream(id.clone()))
                .await
                .unwrap(),
            content
        );
    })
    .await;
}

/// An upload written in pieces that straddle chunk boundaries holds at most one chunk:
/// each full chunk is inserted as it fills, before the file exists; a download reads
/// them back in order.
#[tokio::test]
async fn an_upload_stream_written_in_pieces_reads_back_through_a_download_stream() {
    bounded(async {
        let bucket = fresh_bucket("streams").await;
        let mut upload = bucket
            .open_upload_stream("pieces.txt")
            .chunk_size_bytes(5)
            .metadata(doc! { "kind": "pieces" })
            .await
            .unwrap();
        // 3 + 4 + 6 + 1 bytes in chunks of 5: 5 + 5 + 4.
        for piece in [&b"abc"[..], b"defg", b"hijklm", b"n"] {
            upload.write_all(piece).await.unwrap();
        }
        upload.flush().await.unwrap();
        let written = bucket.chunks().count_documents(doc! {}).await.unwrap();
        assert_eq!(written, 2, "the full chunks are in before close");
        assert!(bucket.files().find_one(doc! {}).await.unwrap().is_none());
        upload.close().await.unwrap();
        let id = upload.id().clone();
        // Writing after close is an error, the driver's inside the io::Error.
        let late = upload.write_all(b"late").await.unwrap_err();
        assert!(matches!(
            *anymongo::Error::from(late).kind,
            ErrorKind::GridFs(GridFsErrorKind::UploadStreamClosed)
        ));

        let mut content = Vec::new();
        let mut download = bucket.open_download_stream(id.clone()).await.unwrap();
        // Small reads cross chunk boundaries too.
        let mut piece = [0_u8; 3];
        loop {
            let n = download.read(&mut piece).await.unwrap();
            if n == 0 {
                break;
            }
            content.extend_from_slice(&piece[..n]);
        }
        assert_eq!(content, b"abcdefghijklmn");
        let file = bucket.find_one(doc! { "_id": id }).await.unwrap().unwrap();
        assert_eq!((file.length, file.chunk_size_bytes), (14, 5));
        assert_eq!(file.filename.as_deref(), Some("pieces.txt"));
        assert_eq!(file.metadata, Some(doc! { "kind": "pieces" }));

        // An aborted upload leaves neither a file nor chunks.
        let mut aborted = bucket.open_upload_stream("aborted").await.unwrap();
        aborted.write_all(b"0123456789").await.unwrap();
        aborted.abort().await.unwrap();
        let chunks = bucket
            .chunks()
            .count_documents(doc! { "files_id": aborted.id().clone() })
            .await
            .unwrap();
        assert_eq!(chunks, 0);
        assert!(
            aborted.close().await.is_ok(),
            "closing an aborted stream is a no-op"
        );
        // Writing to it, or aborting it again, is the official UploadStreamClosed.
        let written = aborted
            .write_all(b"more")
            .await
            .map_err(anymongo::Error::from);
        let aborted_again = aborted.abort().await;
        for error in [written.unwrap_err(), aborted_again.unwrap_err()] {
            let error = gridfs_error(error);
            assert!(
                matches!(error, GridFsErrorKind::UploadStreamClosed),
                "{error:?}"
            );
        }
    })
    .await;
}
