//! The GridFS spec: files larger than a document, stored as a `files` document and
//! numbered `chunks` in two collections of a [`GridFsBucket`] (`fs.files` and
//! `fs.chunks` by default).
//!
//! Files are uploaded and downloaded whole, from and to memory: on the targets anymongo
//! runs on (WebAssembly among them) there is no file system to stream to.
//! Downloads are reads (each `find` a retryable read); uploads and deletes are writes
//! with the bucket's write concern.

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Document};
use futures::TryStreamExt;

use crate::crud::FindOptions;
use crate::cursor::Cursor;
use crate::database::{Concerns, Database};
use crate::error::{Error, ErrorKind, Result};
use crate::index_management::IndexModel;
use crate::Collection;

mod error;

pub use error::GridFsError;

/// The default size of a chunk: 255 KiB (GridFS spec, "chunkSizeBytes"), under the
/// 256 KiB that keeps a chunk document and its overhead in one small allocation.
pub const DEFAULT_CHUNK_SIZE_BYTES: u32 = 255 * 1024;

/// Options of a [`GridFsBucket`] (GridFS spec, "GridFSBucketOptions").
#[derive(Debug, Clone, PartialEq)]
pub struct GridFsBucketOptions {
    /// The prefix of the bucket's collections: `<name>.files`, `<name>.chunks`.
    pub bucket_name: String,
    /// The size of the chunks of uploaded files.
    pub chunk_size_bytes: u32,
    /// The read preference, read concern and write concern; the database's where
    /// unset.
    pub concerns: Concerns,
}

impl Default for GridFsBucketOptions {
    fn default() -> Self {
        GridFsBucketOptions {
            bucket_name: "fs".to_owned(),
            chunk_size_bytes: DEFAULT_CHUNK_SIZE_BYTES,
            concerns: Concerns::default(),
        }
    }
}

/// Options of [`GridFsBucket::upload_from_bytes`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridFsUploadOptions {
    /// The file's id; a new ObjectId when unset.
    pub id: Option<Bson>,
    /// The chunk size of this file; the bucket's when unset.
    pub chunk_size_bytes: Option<u32>,
    /// Application data stored in the files document.
    pub metadata: Option<Document>,
}

impl From<GridFsError> for Error {
    fn from(error: GridFsError) -> Error {
        Error::new(ErrorKind::GridFs(error))
    }
}

/// A bucket of GridFS files in one database. Cheap to clone.
///
/// ```no_run
/// # async fn example(db: anymongo::Database) -> anymongo::Result<()> {
/// use anymongo::gridfs::GridFsBucket;
/// let bucket = GridFsBucket::new(&db, Default::default());
/// let id = bucket.upload_from_bytes("report.pdf", b"%PDF-1.7 ...", None).await?;
/// let bytes = bucket.download(&id).await?;
/// assert_eq!(bytes, b"%PDF-1.7 ...");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct GridFsBucket {
    files: Collection<Document>,
    chunks: Collection<Document>,
    chunk_size_bytes: u32,
}

impl GridFsBucket {
    /// The bucket of `database` that `options` name.
    pub fn new(database: &Database, options: GridFsBucketOptions) -> GridFsBucket {
        let collection = |suffix: &str| {
            database
                .collection::<Document>(&format!("{}.{suffix}", options.bucket_name))
                .with_concerns(options.concerns.clone())
        };
        GridFsBucket {
            files: collection("files"),
            chunks: collection("chunks"),
            chunk_size_bytes: options.chunk_size_bytes,
        }
    }

    /// This bucket with `timeoutMS` = `timeout` for each of its calls: a download,
    /// an upload, a delete... ends by then, all its commands together (Client Side
    /// Operations Timeout spec, "GridFS API"). `Duration::ZERO` means no limit.
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// let bytes = bucket
    ///     .with_timeout(Duration::from_secs(2))
    ///     .download(&anymongo::bson::Bson::Int32(1))
    ///     .await?;
    /// # let _ = bytes; Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: std::time::Duration) -> GridFsBucket {
        GridFsBucket {
            files: self.files.with_timeout(timeout),
            chunks: self.chunks.with_timeout(timeout),
            chunk_size_bytes: self.chunk_size_bytes,
        }
    }

    /// The bucket for one call: with timeoutMS, its two collections share the
    /// deadline of the call (unless a call it is part of set one already).
    fn for_one_call(&self) -> GridFsBucket {
        let timing = self.files.timing();
        let Some(timeout) = timing.timeout.filter(|limit| !limit.is_zero()) else {
            return self.clone();
        };
        if timing.deadline.is_some() {
            return self.clone();
        }
        let now = self.files.database().client().executor().now();
        let deadline = Some(now + timeout);
        GridFsBucket {
            files: self.files.with_deadline(deadline),
            chunks: self.chunks.with_deadline(deadline),
            chunk_size_bytes: self.chunk_size_bytes,
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

    /// The whole content of the file with this id.
    pub async fn download(&self, id: &Bson) -> Result<Vec<u8>> {
        let this = self.for_one_call();
        let file = this.files.find_one(by_id(id)).await?;
        let file = file.ok_or_else(|| GridFsError::FileNotFound { id: id.clone() })?;
        this.content(&file).await
    }

    /// The whole content of a revision of the file named `filename`: 0 is the first
    /// upload, 1 the second...; -1 is the latest, -2 the one before... (GridFS spec,
    /// "downloadToStreamByName"). `None` is -1.
    pub async fn download_by_name(
        &self,
        filename: &str,
        revision: impl Into<Option<i32>>,
    ) -> Result<Vec<u8>> {
        let this = self.for_one_call();
        let revision = revision.into().unwrap_or(-1);
        let (order, skip) = match revision {
            latest_first if latest_first < 0 => (-1, latest_first.unsigned_abs() - 1),
            oldest_first => (1, oldest_first.unsigned_abs()),
        };
        let options = FindOptions {
            sort: Some(doc! { "uploadDate": order }),
            skip: Some(u64::from(skip)),
            limit: Some(1),
            ..FindOptions::default()
        };
        let file = this
            .files
            .find_one(doc! { "filename": filename })
            .with_options(options)
            .await?;
        let file = file.ok_or_else(|| GridFsError::RevisionNotFound {
            filename: filename.to_owned(),
            revision,
        })?;
        this.content(&file).await
    }

    /// The content of the file `file` describes, read from its chunks in order and
    /// checked against its `length` and `chunkSize`.
    async fn content(&self, file: &Document) -> Result<Vec<u8>> {
        let id = file.get("_id").cloned().unwrap_or(Bson::Null);
        let corrupt = |message: String| -> Error {
            GridFsError::CorruptFile {
                id: id.clone(),
                message,
            }
            .into()
        };
        let number = |key: &str| {
            file.get(key)
                .and_then(crate::bson_util::as_i64)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| corrupt(format!("its files document has no valid {key}")))
        };
        let length = number("length")?;
        if length == 0 {
            return Ok(Vec::new());
        }
        // A length no memory of this target can hold (above 2 GiB on wasm32, where a
        // vector holds at most isize::MAX bytes) is refused before any chunk is read.
        if usize::try_from(length).map_or(true, |length| length > isize::MAX as usize) {
            return Err(GridFsError::TooLarge {
                id: id.clone(),
                length,
            }
            .into());
        }
        let chunk_size = number("chunkSize")?;
        if chunk_size == 0 {
            return Err(corrupt("its chunkSize is 0".to_owned()));
        }
        let expected_chunks = length.div_ceil(chunk_size);
        let options = FindOptions {
            sort: Some(doc! { "n": 1 }),
            ..FindOptions::default()
        };
        let mut chunks = self
            .chunks
            .find(doc! { "files_id": { "$eq": id.clone() } })
            .with_options(options)
            .await?;
        // The content grows as its chunks arrive, never from the stored `length`: a
        // files document may claim any length (2^40 bytes, say), and allocating it up
        // front would abort the process rather than fail the download.
        let mut content = Vec::new();
        let mut next = 0_u64;
        while let Some(chunk) = chunks.try_next().await? {
            let n = chunk.get("n").and_then(crate::bson_util::as_i64);
            if n != i64::try_from(next).ok() {
                return Err(corrupt(format!("chunk {next} is missing (found n: {n:?})")));
            }
            if next >= expected_chunks {
                return Err(corrupt(format!(
                    "it has more than {expected_chunks} chunks"
                )));
            }
            let data = match chunk.get("data") {
                Some(Bson::Binary(binary)) => &binary.bytes,
                _ => return Err(corrupt(format!("chunk {next} has no binary data"))),
            };
            let wanted = match next + 1 == expected_chunks {
                true => length - chunk_size * next,
                false => chunk_size,
            };
            if data.len() as u64 != wanted {
                return Err(corrupt(format!(
                    "chunk {next} holds {} bytes, expected {wanted}",
                    data.len()
                )));
            }
            content.extend_from_slice(data);
            next += 1;
        }
        if next != expected_chunks {
            return Err(corrupt(format!(
                "chunk {next} of {expected_chunks} is missing"
            )));
        }
        Ok(content)
    }

    /// Stores `content` as a new file named `filename` and returns its id.
    pub async fn upload_from_bytes(
        &self,
        filename: &str,
        content: &[u8],
        options: impl Into<Option<GridFsUploadOptions>>,
    ) -> Result<Bson> {
        let this = self.for_one_call();
        let options = options.into().unwrap_or_default();
        let chunk_size = options.chunk_size_bytes.unwrap_or(this.chunk_size_bytes);
        if chunk_size == 0 {
            return Err(Error::invalid_argument("chunk_size_bytes must be positive"));
        }
        this.ensure_indexes().await?;
        let id = options
            .id
            .unwrap_or_else(|| Bson::ObjectId(ObjectId::new()));
        let chunks: Vec<Document> = content
            .chunks(usize::try_from(chunk_size).unwrap_or(usize::MAX))
            .enumerate()
            .map(|(n, data)| {
                doc! {
                    "_id": ObjectId::new(),
                    "files_id": id.clone(),
                    "n": i32::try_from(n).unwrap_or(i32::MAX),
                    "data": Binary { subtype: BinarySubtype::Generic, bytes: data.to_vec() },
                }
            })
            .collect();
        if !chunks.is_empty() {
            this.chunks.insert_many(chunks).await?;
        }
        let mut file = doc! {
            "_id": id.clone(),
            "length": i64::try_from(content.len()).unwrap_or(i64::MAX),
            "chunkSize": i64::from(chunk_size),
            // The runtime's wall clock: `DateTime::now` reads the system's, which
            // wasm32-unknown-unknown has not.
            "uploadDate": DateTime::from_millis(i64::try_from(this.files.client().executor().runtime().clock.unix_time().as_millis()).unwrap_or(i64::MAX)),
            "filename": filename,
        };
        if let Some(metadata) = options.metadata {
            file.insert("metadata", metadata);
        }
        this.files.insert_one(file).await?;
        Ok(id)
    }

    /// Before the first upload to an empty bucket, the indexes downloads use:
    /// `{ filename: 1, uploadDate: 1 }` on files and the unique `{ files_id: 1, n: 1 }`
    /// on chunks (GridFS spec, "Before write operations"). A bucket with files has
    /// them already.
    async fn ensure_indexes(&self) -> Result<()> {
        let options = FindOptions {
            projection: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
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

    /// Deletes the file with this id and its chunks; a file that does not exist is a
    /// [`GridFsError::FileNotFound`] (after its stray chunks, if any, are deleted).
    pub async fn delete(&self, id: &Bson) -> Result<()> {
        let this = self.for_one_call();
        let deleted = this.files.delete_one(by_id(id)).await?;
        this.chunks
            .delete_many(doc! { "files_id": { "$eq": id.clone() } })
            .await?;
        match deleted.deleted_count {
            0 => Err(GridFsError::FileNotFound { id: id.clone() }.into()),
            _ => Ok(()),
        }
    }

    /// Deletes every revision of the file named `filename` and their chunks; no file
    /// of that name is a [`GridFsError::RevisionNotFound`] (revision -1).
    pub async fn delete_by_name(&self, filename: &str) -> Result<()> {
        let this = self.for_one_call();
        let options = FindOptions {
            projection: Some(doc! { "_id": 1 }),
            ..FindOptions::default()
        };
        let files: Vec<Document> = this
            .files
            .find(doc! { "filename": filename })
            .with_options(options)
            .await?
            .try_collect()
            .await?;
        if files.is_empty() {
            return Err(GridFsError::RevisionNotFound {
                filename: filename.to_owned(),
                revision: -1,
            }
            .into());
        }
        let ids: Vec<Bson> = files
            .iter()
            .filter_map(|file| file.get("_id").cloned())
            .collect();
        this.files
            .delete_many(doc! { "_id": { "$in": ids.clone() } })
            .await?;
        this.chunks
            .delete_many(doc! { "files_id": { "$in": ids } })
            .await?;
        Ok(())
    }

    /// Renames the file with this id; a file that does not exist is a
    /// [`GridFsError::FileNotFound`].
    pub async fn rename(&self, id: &Bson, new_filename: &str) -> Result<()> {
        let this = self.for_one_call();
        let update = doc! { "$set": { "filename": new_filename } };
        let renamed = this.files.update_one(by_id(id), update).await?;
        match renamed.matched_count {
            0 => Err(GridFsError::FileNotFound { id: id.clone() }.into()),
            _ => Ok(()),
        }
    }

    /// Renames every revision of the file named `filename`; no file of that name is a
    /// [`GridFsError::RevisionNotFound`] (revision -1).
    pub async fn rename_by_name(&self, filename: &str, new_filename: &str) -> Result<()> {
        let this = self.for_one_call();
        let update = doc! { "$set": { "filename": new_filename } };
        let renamed = this
            .files
            .update_many(doc! { "filename": filename }, update)
            .await?;
        match renamed.matched_count {
            0 => Err(GridFsError::RevisionNotFound {
                filename: filename.to_owned(),
                revision: -1,
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// The files documents matching `filter`.
    pub async fn find(
        &self,
        filter: Document,
        options: impl Into<Option<FindOptions>>,
    ) -> Result<Cursor<Document>> {
        let this = self.for_one_call();
        this.files.find(filter).with_options(options).await
    }

    /// Drops the bucket's two collections.
    pub async fn drop(&self) -> Result<()> {
        let this = self.for_one_call();
        this.files.drop().await?;
        this.chunks.drop().await
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
        Ok(cursor) => cursor.try_collect().await?,
        // NamespaceNotFound: no collection, so no index yet.
        Err(error) if error.code() == Some(26) => Vec::new(),
        Err(error) => return Err(error),
    };
    if existing.iter().any(same_keys) {
        return Ok(());
    }
    let mut model = IndexModel::new(keys);
    if unique {
        model = model.with_options(doc! { "unique": true });
    }
    collection.create_index(model).await.map(|_| ())
}
