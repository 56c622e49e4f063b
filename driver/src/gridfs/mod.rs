//! The GridFS spec: files larger than a document, stored as a `files` document and
//! numbered `chunks` in two collections of a [`GridFsBucket`] (`fs.files` and
//! `fs.chunks` by default), which [`Database::gridfs_bucket`] returns.
//!
//! Files are written through a [`GridFsUploadStream`] (a `futures::io::AsyncWrite`,
//! holding at most one chunk) and read through a [`GridFsDownloadStream`] (a
//! `futures::io::AsyncRead`, reading chunk by chunk), the official driver's shape;
//! `futures::io::AsyncWriteExt::write_all` and `AsyncReadExt::read_to_end` move
//! whole contents. Downloads are reads (each `find` a retryable read); uploads and
//! deletes are writes with the bucket's write concern.
//!
//! ```no_run
//! # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
//! use futures::io::{AsyncReadExt, AsyncWriteExt};
//! let bucket = db.gridfs_bucket(None);
//! let mut upload = bucket.open_upload_stream("report.pdf").await?;
//! upload.write_all(b"%PDF-1.7 ...").await?;
//! upload.close().await?;
//! let mut content = Vec::new();
//! let mut download = bucket.open_download_stream(upload.id().clone()).await?;
//! download.read_to_end(&mut content).await?;
//! assert_eq!(content, b"%PDF-1.7 ...");
//! # Ok(()) }
//! ```

use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Document};
use futures::io::{AsyncRead, AsyncWrite};
use futures::{Stream, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::concern::{ReadConcern, WriteConcern};
use crate::crud::{FindOneOptions, FindOptions};
use crate::cursor::Cursor;
use crate::database::{Concerns, Database};
use crate::error::{Error, ErrorKind, Result};
use crate::index_management::{IndexModel, IndexOptions};
use crate::rt::{boxed, BoxFuture};
use crate::selection::SelectionCriteria;
use crate::signal::TaskGuard;
use crate::Collection;

pub use crate::error::{GridFsErrorKind, GridFsFileIdentifier};

/// The default size of a chunk: 255 KiB (GridFS spec, "chunkSizeBytes"), under the
/// 256 KiB that keeps a chunk document and its overhead in one small allocation.
pub const DEFAULT_CHUNK_SIZE_BYTES: u32 = 255 * 1024;

/// Options of a [`GridFsBucket`] (GridFS spec, "GridFSBucketOptions"); the database's
/// concerns where unset.
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct GridFsBucketOptions {
    /// The prefix of the bucket's collections: `<name>.files`, `<name>.chunks`;
    /// `fs` when unset.
    pub bucket_name: Option<String>,
    /// The size of the chunks of uploaded files; [`DEFAULT_CHUNK_SIZE_BYTES`] when
    /// unset.
    pub chunk_size_bytes: Option<u32>,
    /// How uploads and deletes are acknowledged.
    pub write_concern: Option<WriteConcern>,
    /// How fresh and durable downloads must be.
    pub read_concern: Option<ReadConcern>,
    /// Where downloads go.
    pub selection_criteria: Option<SelectionCriteria>,
}

/// Options of [`GridFsBucket::open_upload_stream`] (GridFS spec,
/// "GridFSUploadOptions").
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct GridFsUploadOptions {
    /// The file's id; a new ObjectId when unset.
    pub id: Option<Bson>,
    /// The chunk size of this file; the bucket's when unset.
    pub chunk_size_bytes: Option<u32>,
    /// Application data stored in the files document.
    pub metadata: Option<Document>,
}

/// Options of [`GridFsBucket::open_download_stream_by_name`].
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct GridFsDownloadByNameOptions {
    /// Which revision of the file: 0 is the first upload, 1 the second...; -1 (the
    /// default) is the latest, -2 the one before... (GridFS spec,
    /// "downloadToStreamByName").
    pub revision: Option<i32>,
}

/// Options of [`GridFsBucket::find`] (GridFS spec, "GridFSFindOptions"): those of a
/// find on the bucket's `files` collection.
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct GridFsFindOptions {
    /// Lets the server write temporary files for large sorts.
    pub allow_disk_use: Option<bool>,
    /// Documents per batch.
    pub batch_size: Option<u32>,
    /// At most this many files.
    pub limit: Option<i64>,
    /// The server-side time limit of the query (`maxTimeMS`).
    pub max_time: Option<Duration>,
    /// The server does not time the cursor out.
    pub no_cursor_timeout: Option<bool>,
    /// Skips this many files.
    pub skip: Option<u64>,
    /// The order of the files.
    pub sort: Option<Document>,
}

impl From<GridFsFindOptions> for FindOptions {
    fn from(options: GridFsFindOptions) -> Self {
        FindOptions {
            allow_disk_use: options.allow_disk_use,
            batch_size: options.batch_size,
            limit: options.limit,
            max_time: options.max_time,
            no_cursor_timeout: options.no_cursor_timeout,
            skip: options.skip,
            sort: options.sort,
            ..FindOptions::default()
        }
    }
}

/// Options of [`GridFsBucket::find_one`]: which of the matching files comes first.
#[derive(Debug, Clone, Default, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct GridFsFindOneOptions {
    /// The server-side time limit of the query (`maxTimeMS`).
    pub max_time: Option<Duration>,
    /// Skips this many files.
    pub skip: Option<u64>,
    /// The order of the files.
    pub sort: Option<Document>,
}

impl From<GridFsFindOneOptions> for FindOptions {
    fn from(options: GridFsFindOneOptions) -> Self {
        FindOptions {
            max_time: options.max_time,
            skip: options.skip,
            sort: options.sort,
            ..FindOptions::default()
        }
    }
}

/// A file's document in the bucket's `files` collection (GridFS spec, "files
/// collection document"): what [`GridFsBucket::find`] returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesCollectionDocument {
    /// The file's id.
    #[serde(rename = "_id")]
    pub id: Bson,
    /// Its length in bytes.
    pub length: u64,
    /// The size of its chunks (all but the last), in bytes.
    #[serde(rename = "chunkSize")]
    pub chunk_size_bytes: u32,
    /// When its upload was closed.
    pub upload_date: DateTime,
    /// Its name; several files (revisions) may share one.
    pub filename: Option<String>,
    /// The application's data stored with it.
    pub metadata: Option<Document>,
}

impl From<GridFsErrorKind> for Error {
    fn from(error: GridFsErrorKind) -> Error {
        Error::new(ErrorKind::GridFs(error))
    }
}

/// The error of a file that is not there.
fn not_found(identifier: GridFsFileIdentifier) -> Error {
    GridFsErrorKind::FileNotFound { identifier }.into()
}

/// An error of a stream, as the `futures::io` traits return it: the driver's
/// [`Error`] inside (`std::io::Error::get_ref` and `downcast_ref` give it back).
fn io_error(error: Error) -> std::io::Error {
    std::io::Error::other(error)
}

/// The driver's error inside a GridFS stream's `std::io::Error`, so that `?` on a
/// `read_to_end` or `write_all` gives it back in a function returning [`Result`]. An
/// I/O error of another source (a reader copied into an upload) becomes an
/// [`ErrorKind::Io`], as in the official crate.
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Error {
        // An OS error has no inner error to unwrap, and unwrapping would lose its code.
        if error.get_ref().is_none() {
            return Error::new(ErrorKind::Io(std::sync::Arc::new(error)));
        }
        let kind = error.kind();
        match error.into_inner().map(|inner| inner.downcast::<Error>()) {
            Some(Ok(driver)) => *driver,
            Some(Err(other)) => Error::new(ErrorKind::Io(std::sync::Arc::new(
                std::io::Error::new(kind, other),
            ))),
            None => Error::from(kind),
        }
    }
}

impl Database {
    /// The GridFS bucket of this database that `options` name (`fs` by default).
    ///
    /// ```no_run
    /// # fn example(db: anymongo::Database) {
    /// use anymongo::gridfs::GridFsBucketOptions;
    /// let images = db.gridfs_bucket(GridFsBucketOptions {
    ///     bucket_name: Some("images".to_owned()),
    ///     ..Default::default()
    /// });
    /// # let _ = images; }
    /// ```
    pub fn gridfs_bucket(&self, options: impl Into<Option<GridFsBucketOptions>>) -> GridFsBucket {
        GridFsBucket::new(self, options.into().unwrap_or_default())
    }
}

/// A bucket of GridFS files in one database ([`Database::gridfs_bucket`]). Cheap to
/// clone. Its operations are actions (`crate::action::gridfs`), awaited to run.
#[derive(Debug, Clone)]
pub struct GridFsBucket {
    files: Collection<Document>,
    chunks: Collection<Document>,
    chunk_size_bytes: u32,
}

impl GridFsBucket {
    /// The bucket of `database` that `options` name.
    fn new(database: &Database, options: GridFsBucketOptions) -> GridFsBucket {
        let name = options.bucket_name.as_deref().unwrap_or("fs");
        let concerns = Concerns {
            selection_criteria: options.selection_criteria,
            read_concern: options.read_concern,
            write_concern: options.write_concern,
            timeout: None,
        };
        let collection = |suffix: &str| {
            database
                .collection::<Document>(&format!("{name}.{suffix}"))
                .with_concerns(concerns.clone())
        };
        GridFsBucket {
            files: collection("files"),
            chunks: collection("chunks"),
            chunk_size_bytes: options.chunk_size_bytes.unwrap_or(DEFAULT_CHUNK_SIZE_BYTES),
        }
    }

    /// This bucket with `timeoutMS` = `timeout` for each of its calls: opening a
    /// stream, a delete... ends by then, all its commands together (Client Side
    /// Operations Timeout spec, "GridFS API"); a stream's reads or writes share the
    /// deadline of its opening. `Duration::ZERO` means no limit.
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// bucket.with_timeout(Duration::from_secs(2)).drop().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: std::time::Duration) -> GridFsBucket {
        GridFsBucket {
            files: self.files.with_timeout(timeout),
            chunks: self.chunks.with_timeout(timeout),
            chunk_size_bytes: self.chunk_size_bytes,
        }
    }

    /// The bucket for one call: with timeoutMS, its two collections share the
    /// deadline of the call (unless a call it is part of set one already); with
    /// `timeout` (an action's), that timeoutMS.
    pub(crate) fn for_one_call(&self, timeout: Option<std::time::Duration>) -> GridFsBucket {
        let this = match timeout {
            Some(timeout) => self.with_timeout(timeout),
            None => self.clone(),
        };
        let timing = this.files.timing();
        let Some(timeout) = timing.timeout.filter(|limit| !limit.is_zero()) else {
            return this;
        };
        if timing.deadline.is_some() {
            return this;
        }
        let now = this.files.database().client().executor().now();
        let deadline = Some(now + timeout);
        GridFsBucket {
            files: this.files.with_deadline(deadline),
            chunks: this.chunks.with_deadline(deadline),
            chunk_size_bytes: this.chunk_size_bytes,
        }
    }

    /// The bucket's `files` collection.
    pub fn files(&self) -> &Collection<Document> {
        &self.files
    }

    /// The bucket's `chunks` collection.
    pub fn chunks(&self) -> &Collection<Document> {
        &self.chunks
    }

    /// Opens the file with this id: what [`open_download_stream`](Self::open_download_stream) runs.
    pub(crate) async fn open_download_in(&self, id: Bson) -> Result<GridFsDownloadStream> {
        let file = self.files.find_one(by_id(&id)).await?;
        let file = file.ok_or_else(|| not_found(GridFsFileIdentifier::Id(id)))?;
        self.download_stream(file).await
    }

    /// Opens a revision of the file named `filename`: what
    /// [`open_download_stream_by_name`](Self::open_download_stream_by_name) runs.
    pub(crate) async fn open_download_by_name_in(
        &self,
        filename: &str,
        options: Option<GridFsDownloadByNameOptions>,
    ) -> Result<GridFsDownloadStream> {
        let revision = options.and_then(|options| options.revision).unwrap_or(-1);
        let (order, skip) = match revision {
            latest_first if latest_first < 0 => (-1, latest_first.unsigned_abs() - 1),
            oldest_first => (1, oldest_first.unsigned_abs()),
        };
        let options = FindOneOptions {
            sort: Some(doc! { "uploadDate": order }),
            skip: Some(u64::from(skip)),
            ..FindOneOptions::default()
        };
        let file = self
            .files
            .find_one(doc! { "filename": filename })
            .with_options(options)
            .await?;
        let file = match file {
            Some(file) => file,
            // No such revision of a file that exists, or no file of that name (GridFS
            // spec, "RevisionNotFound" and "FileNotFound"), as the official crate tells.
            None => {
                let any = self.files.find_one(doc! { "filename": filename }).await?;
                return Err(match any {
                    Some(_) => GridFsErrorKind::RevisionNotFound { revision }.into(),
                    None => not_found(GridFsFileIdentifier::Filename(filename.to_owned())),
                });
            }
        };
        self.download_stream(file).await
    }

    /// The stream of the content of the file `file` describes: its chunks in order,
    /// checked against its `length` and `chunkSize` as they come.
    async fn download_stream(&self, file: Document) -> Result<GridFsDownloadStream> {
        let check = ChunkCheck::of(&file)?;
        let chunks = match check.expected {
            0 => None,
            _ => {
                let options = FindOptions {
                    sort: Some(doc! { "n": 1 }),
                    ..FindOptions::default()
                };
                let filter = doc! { "files_id": { "$eq": check.id.clone() } };
                Some(self.chunks.find(filter).with_options(options).await?)
            }
        };
        Ok(GridFsDownloadStream {
            chunks,
            check,
            buffer: Vec::new(),
            offset: 0,
        })
    }

    /// Opens an upload of a new file named `filename`: what
    /// [`open_upload_stream`](Self::open_upload_stream) runs.
    pub(crate) async fn open_upload_in(
        &self,
        filename: String,
        options: Option<GridFsUploadOptions>,
    ) -> Result<GridFsUploadStream> {
        let options = options.unwrap_or_default();
        let chunk_size = options.chunk_size_bytes.unwrap_or(self.chunk_size_bytes);
        let chunk_size = match usize::try_from(chunk_size) {
            Ok(size) if size > 0 => size,
            _ => return Err(Error::invalid_argument("chunk_size_bytes must be positive")),
        };
        self.ensure_indexes().await?;
        Ok(GridFsUploadStream {
            bucket: self.clone(),
            id: options
                .id
                .unwrap_or_else(|| Bson::ObjectId(ObjectId::new())),
            filename,
            metadata: options.metadata,
            chunk_size,
            buffer: Vec::new(),
            next: 0,
            length: 0,
            pending: None,
            closed: false,
            live: Some(self.chunks.client().executor().live_handle()),
        })
    }

    /// Before the first upload to an empty bucket, the indexes downloads use:
    /// `{ filename: 1, uploadDate: 1 }` on files and the unique `{ files_id: 1, n: 1 }`
    /// on chunks (GridFS spec, "Before write operations"). A bucket with files has
    /// them already.
    async fn ensure_indexes(&self) -> Result<()> {
        let options = FindOneOptions {
            projection: Some(doc! { "_id": 1 }),
            ..FindOneOptions::default()
        };
        if self
            .files
            .find_one(doc! {})
            .with_options(options)
            .await?
            .is_some()
        {
            return Ok(());
        }
        ensure_index(&self.files, doc! { "filename": 1, "uploadDate": 1 }, false).await?;
        ensure_index(&self.chunks, doc! { "files_id": 1, "n": 1 }, true).await
    }

    /// Deletes the file with this id and its chunks: what [`delete`](Self::delete)
    /// runs.
    pub(crate) async fn delete_in(&self, id: Bson) -> Result<()> {
        let deleted = self.files.delete_one(by_id(&id)).await?;
        self.chunks
            .delete_many(doc! { "files_id": { "$eq": id.clone() } })
            .await?;
        match deleted.deleted_count {
            0 => Err(not_found(GridFsFileIdentifier::Id(id))),
            _ => Ok(()),
        }
    }

    /// Deletes every revision of the file named `filename`: what
    /// [`delete_by_name`](Self::delete_by_name) runs.
    pub(crate) async fn delete_by_name_in(&self, filename: &str) -> Result<()> {
        let options = FindOptions {
            projection: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        let files: Vec<Document> = self
            .files
            .find(doc! { "filename": filename })
            .with_options(options)
            .await?
            .try_collect()
            .await?;
        if files.is_empty() {
            return Err(not_found(GridFsFileIdentifier::Filename(
                filename.to_owned(),
            )));
        }
        let ids: Vec<Bson> = files
            .iter()
            .filter_map(|file| file.get("_id").cloned())
            .collect();
        self.files
            .delete_many(doc! { "_id": { "$in": ids.clone() } })
            .await?;
        self.chunks
            .delete_many(doc! { "files_id": { "$in": ids } })
            .await?;
        Ok(())
    }

    /// Renames the file with this id: what [`rename`](Self::rename) runs.
    pub(crate) async fn rename_in(&self, id: Bson, new_filename: &str) -> Result<()> {
        let update = doc! { "$set": { "filename": new_filename } };
        let renamed = self.files.update_one(by_id(&id), update).await?;
        match renamed.matched_count {
            0 => Err(not_found(GridFsFileIdentifier::Id(id))),
            _ => Ok(()),
        }
    }

    /// Renames every revision of the file named `filename`: what
    /// [`rename_by_name`](Self::rename_by_name) runs.
    pub(crate) async fn rename_by_name_in(&self, filename: &str, new_filename: &str) -> Result<()> {
        let update = doc! { "$set": { "filename": new_filename } };
        let renamed = self
            .files
            .update_many(doc! { "filename": filename }, update)
            .await?;
        match renamed.matched_count {
            0 => Err(not_found(GridFsFileIdentifier::Filename(
                filename.to_owned(),
            ))),
            _ => Ok(()),
        }
    }

    /// The files documents matching `filter`: what [`find`](Self::find) runs.
    pub(crate) async fn find_in(
        &self,
        filter: Document,
        options: Option<FindOptions>,
    ) -> Result<Cursor<FilesCollectionDocument>> {
        let cursor = self.files.find(filter).with_options(options).await?;
        Ok(cursor.with_type())
    }

    /// Drops the bucket's two collections: what [`drop`](Self::drop) runs.
    pub(crate) async fn drop_in(&self) -> Result<()> {
        self.files.drop().await?;
        self.chunks.drop().await
    }
}

/// What a download checks of a file's chunks as they come (GridFS spec, "Reading
/// from GridFS"): numbered in order from 0, each `chunkSize` bytes but the last, which
/// holds the rest of `length`, and no more.
#[derive(Debug)]
struct ChunkCheck {
    id: Bson,
    length: u64,
    chunk_size: u64,
    expected: u64,
    /// The number of the next chunk.
    next: u64,
}

impl ChunkCheck {
    /// The check of the file `file` describes.
    fn of(file: &Document) -> Result<ChunkCheck> {
        let id = file.get("_id").cloned().unwrap_or(Bson::Null);
        let number = |key: &str| {
            file.get(key)
                .and_then(crate::bson_util::as_i64)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| corrupt(&id, format!("its files document has no valid {key}")))
        };
        let length = number("length")?;
        let chunk_size = number("chunkSize")?;
        if chunk_size == 0 && length > 0 {
            return Err(corrupt(&id, "its chunkSize is 0".to_owned()));
        }
        Ok(ChunkCheck {
            expected: match chunk_size {
                0 => 0,
                size => length.div_ceil(size),
            },
            id,
            length,
            chunk_size,
            next: 0,
        })
    }

    /// The data of `chunk`, the next chunk of the file.
    fn chunk(&mut self, mut chunk: Document) -> Result<Vec<u8>> {
        let next = self.next;
        let n = chunk.get("n").and_then(crate::bson_util::as_i64);
        if n != i64::try_from(next).ok() {
            return Err(GridFsErrorKind::MissingChunk { n: narrow(next) }.into());
        }
        if next >= self.expected {
            return Err(GridFsErrorKind::WrongNumberOfChunks {
                actual_number: narrow(next + 1),
                expected_number: narrow(self.expected),
            }
            .into());
        }
        let data = match chunk.remove("data") {
            Some(Bson::Binary(binary)) => binary.bytes,
            _ => return Err(self.corrupt(format!("chunk {next} has no binary data"))),
        };
        let wanted = match next + 1 == self.expected {
            true => self.length - self.chunk_size * next,
            false => self.chunk_size,
        };
        if data.len() as u64 != wanted {
            return Err(GridFsErrorKind::WrongSizeChunk {
                actual_size: data.len(),
                expected_size: narrow(wanted),
                n: narrow(next),
            }
            .into());
        }
        self.next += 1;
        Ok(data)
    }

    /// The chunks ended: all of them must have come.
    fn finish(&self) -> Result<()> {
        match self.next == self.expected {
            true => Ok(()),
            false => Err(GridFsErrorKind::MissingChunk {
                n: narrow(self.next),
            }
            .into()),
        }
    }

    fn corrupt(&self, message: String) -> Error {
        corrupt(&self.id, message)
    }
}

/// A chunk number or size in the official error's `u32`: the chunks of a file whose
/// `length` and `chunkSize` make more than `u32::MAX` (a corrupt file) saturate.
fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The error of a file whose `files` document or a chunk is malformed.
fn corrupt(id: &Bson, message: String) -> Error {
    GridFsErrorKind::CorruptFile {
        id: id.clone(),
        message,
    }
    .into()
}

/// The content of a GridFS file, read chunk by chunk: a `futures::io::AsyncRead`
/// ([`GridFsBucket::open_download_stream`]). It holds one chunk at a time (and the
/// batch of its cursor); a corrupt file is an error when the read reaches the fault,
/// the driver's [`Error`] inside the `std::io::Error`.
pub struct GridFsDownloadStream {
    /// `None` for an empty file, and once the chunks ended or failed.
    chunks: Option<Cursor<Document>>,
    check: ChunkCheck,
    /// The chunk being read, from `offset`.
    buffer: Vec<u8>,
    offset: usize,
}

impl std::fmt::Debug for GridFsDownloadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridFsDownloadStream")
            .field("id", &self.check.id)
            .field("length", &self.check.length)
            .field("next_chunk", &self.check.next)
            .finish_non_exhaustive()
    }
}

impl AsyncRead for GridFsDownloadStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        loop {
            if this.offset < this.buffer.len() || buf.is_empty() {
                let rest = &this.buffer[this.offset..];
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                this.offset += n;
                return Poll::Ready(Ok(n));
            }
            let Some(chunks) = &mut this.chunks else {
                return Poll::Ready(Ok(0));
            };
            let read = match ready!(Pin::new(chunks).poll_next(cx)) {
                Some(Ok(chunk)) => this.check.chunk(chunk),
                Some(Err(error)) => Err(error),
                None => this.check.finish().map(|()| Vec::new()),
            };
            match read {
                Ok(data) if !data.is_empty() => {
                    this.buffer = data;
                    this.offset = 0;
                }
                // The end (a chunk is never empty: its size is checked).
                Ok(_) => this.chunks = None,
                Err(error) => {
                    this.chunks = None;
                    return Poll::Ready(Err(io_error(error)));
                }
            }
        }
    }
}

/// A new GridFS file being written: a `futures::io::AsyncWrite`
/// ([`GridFsBucket::open_upload_stream`]). Each full chunk is inserted as it fills
/// (a write waits for the previous chunk's insert), so that it holds at most one
/// chunk; `close` inserts the last chunk and the files document, after which the file
/// exists. A stream dropped unclosed deletes the chunks it wrote, in the background
/// where the runtime can spawn (call [`abort`](Self::abort) to wait for it).
pub struct GridFsUploadStream {
    bucket: GridFsBucket,
    id: Bson,
    filename: String,
    metadata: Option<Document>,
    chunk_size: usize,
    /// The chunk being filled.
    buffer: Vec<u8>,
    /// The number of the next chunk.
    next: i32,
    /// The bytes sent in chunks.
    length: u64,
    /// The insert under way (a chunk, or at close the files document).
    pending: Option<BoxFuture<'static, Result<()>>>,
    /// Closed, aborted or failed: no more writes.
    closed: bool,
    /// Counts the stream among the client's live handles until it is dropped (and its
    /// orphan chunks deleted, when it was dropped unclosed): a shutdown waits for it.
    live: Option<TaskGuard>,
}

impl std::fmt::Debug for GridFsUploadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridFsUploadStream")
            .field("id", &self.id)
            .field("filename", &self.filename)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl GridFsUploadStream {
    /// The id of the file.
    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// Stops the upload and deletes the chunks written; the file never exists. An
    /// error if the stream is closed already.
    pub async fn abort(&mut self) -> Result<()> {
        if self.closed {
            return Err(GridFsErrorKind::UploadStreamClosed.into());
        }
        self.closed = true;
        if let Some(pending) = self.pending.take() {
            // The chunk being inserted is deleted with the others, whatever became of it.
            let _ = pending.await;
        }
        self.buffer = Vec::new();
        match self
            .bucket
            .chunks
            .delete_many(doc! { "files_id": { "$eq": self.id.clone() } })
            .await
        {
            Ok(_) => Ok(()),
            Err(delete_error) => Err(GridFsErrorKind::AbortError {
                original_error: None,
                delete_error,
            }
            .into()),
        }
    }

    /// Waits for the insert under way; its failure closes the stream.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(pending) = &mut self.pending {
            let inserted = ready!(pending.as_mut().poll(cx));
            self.pending = None;
            if let Err(error) = inserted {
                self.closed = true;
                return Poll::Ready(Err(io_error(error)));
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Starts inserting the chunk filled so far.
    fn send_chunk(&mut self) -> std::io::Result<()> {
        let data = std::mem::take(&mut self.buffer);
        let n = self.next;
        self.next = n.checked_add(1).ok_or_else(|| {
            io_error(Error::invalid_argument(
                "a GridFS file has at most 2^31 chunks",
            ))
        })?;
        self.length += data.len() as u64;
        let chunk = doc! {
            "_id": ObjectId::new(),
            "files_id": self.id.clone(),
            "n": n,
            "data": Binary { subtype: BinarySubtype::Generic, bytes: data },
        };
        let chunks = self.bucket.chunks.clone();
        self.pending = Some(boxed(
            async move { chunks.insert_one(chunk).await.map(|_| ()) },
        ));
        Ok(())
    }

    /// Starts inserting the files document: the file then exists.
    fn send_file(&mut self) {
        let files = self.bucket.files.clone();
        // The runtime's wall clock: `DateTime::now` reads the system's, which
        // wasm32-unknown-unknown has not.
        let now = files
            .client()
            .executor()
            .runtime()
            .clock
            .unix_time()
            .as_millis();
        let mut file = doc! {
            "_id": self.id.clone(),
            "length": i64::try_from(self.length).unwrap_or(i64::MAX),
            "chunkSize": i64::try_from(self.chunk_size).unwrap_or(i64::MAX),
            "uploadDate": DateTime::from_millis(i64::try_from(now).unwrap_or(i64::MAX)),
            "filename": self.filename.clone(),
        };
        if let Some(metadata) = self.metadata.take() {
            file.insert("metadata", metadata);
        }
        self.pending = Some(boxed(
            async move { files.insert_one(file).await.map(|_| ()) },
        ));
    }
}

impl AsyncWrite for GridFsUploadStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if this.closed {
            let error = GridFsErrorKind::UploadStreamClosed.into();
            return Poll::Ready(Err(io_error(error)));
        }
        let n = (this.chunk_size - this.buffer.len()).min(buf.len());
        this.buffer.extend_from_slice(&buf[..n]);
        if this.buffer.len() == this.chunk_size {
            this.send_chunk()?;
        }
        Poll::Ready(Ok(n))
    }

    /// Waits for the chunk being inserted; a partly filled chunk waits for more
    /// (every chunk but the last is full).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().poll_pending(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.poll_pending(cx))?;
            if this.closed {
                return Poll::Ready(Ok(()));
            }
            if !this.buffer.is_empty() {
                this.send_chunk()?;
                continue;
            }
            this.send_file();
            // Closed once the files document is in (or its insert failed).
            this.closed = true;
        }
    }
}

impl Drop for GridFsUploadStream {
    fn drop(&mut self) {
        // Unclosed: the chunks written would be orphans. Best effort, where the
        // runtime can spawn.
        if self.closed || (self.next == 0 && self.pending.is_none()) {
            return;
        }
        let chunks = self.bucket.chunks.clone();
        let spawner = chunks.client().executor().runtime().spawner.clone();
        if let Some(spawner) = spawner {
            let filter = doc! { "files_id": { "$eq": self.id.clone() } };
            let pending = self.pending.take();
            let live = self.live.take();
            spawner.spawn(boxed(async move {
                let _live = live;
                if let Some(pending) = pending {
                    let _ = pending.await;
                }
                let _ = chunks.delete_many(filter).await;
            }));
        }
    }
}

/// The filter of the file with this id: `$eq` makes an id that looks like a query
/// operator (`{ $ne: null }`) match only itself (GridFS spec, "Querying by id").
fn by_id(id: &Bson) -> Document {
    doc! { "_id": { "$eq": id.clone() } }
}

/// Creates the index on `keys` unless `collection` has an index on the same keys
/// (numbers compared by value: `1` and `1.0` are the same key).
async fn ensure_index(
    collection: &Collection<Document>,
    keys: Document,
    unique: bool,
) -> Result<()> {
    let same_keys = |index: &Document| {
        index.get_document("key").is_ok_and(|existing| {
            existing.len() == keys.len()
                && existing.iter().zip(keys.iter()).all(|((a, x), (b, y))| {
                    a == b && crate::bson_util::as_i64(x) == crate::bson_util::as_i64(y)
                })
        })
    };
    let existing: Vec<Document> = match collection.list_indexes().await {
        Ok(cursor) => cursor.with_type().try_collect().await?,
        // NamespaceNotFound: no collection, so no index yet.
        Err(error) if error.code() == Some(26) => Vec::new(),
        Err(error) => return Err(error),
    };
    if existing.iter().any(same_keys) {
        return Ok(());
    }
    let options = unique.then(|| IndexOptions::builder().unique(true).build());
    let model = IndexModel::builder().keys(keys).options(options).build();
    collection.create_index(model).await.map(|_| ())
}
