//! GridFS bucket entities (spec "entity", `bucket`) and their operations (GridFS spec
//! tests: `download`, `downloadByName`, `upload`, `delete`), with the driver's
//! `anymongo::gridfs::GridFsBucket`.

use anymongo::gridfs::{
    GridFsBucket, GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsDownloadStream,
    GridFsUploadOptions,
};
use anymongo::options::GridFsFindOptions;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document};
use futures::io::{AsyncReadExt, AsyncWriteExt};

use super::arguments::Arguments;
use super::entities::{self, EntityMap};
use super::matching::decode_hex;
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// A `bucket` entity: `id`, `database`, and `bucketOptions` (`bucketName`,
/// `chunkSizeBytes`, and the concerns).
pub fn create_bucket(
    description: &Document,
    entities: &EntityMap,
) -> Result<(String, GridFsBucket), Abort> {
    let text = |key: &str| {
        description
            .get_str(key)
            .map(str::to_owned)
            .map_err(|_| Abort::Failed(format!("bucket entity without {key}: {description}")))
    };
    let id = text("id")?;
    let database = &entities.database(&text("database")?)?.database;
    let mut options = GridFsBucketOptions::default();
    if let Ok(given) = description.get_document("bucketOptions") {
        let mut concerns = Document::new();
        for (key, value) in given {
            match (key.as_str(), value) {
                ("bucketName", Bson::String(name)) => options.bucket_name = Some(name.clone()),
                ("chunkSizeBytes", size) => options.chunk_size_bytes = Some(chunk_size(size)?),
                ("readConcern" | "readPreference" | "writeConcern" | "timeoutMS", _) => {
                    concerns.insert(key, value.clone());
                }
                _ => {
                    return Err(Abort::Unsupported(format!(
                        "bucketOptions.{key} ({value}) is not supported"
                    )))
                }
            }
        }
        let concerns = entities::concerns(&concerns, "bucketOptions")?;
        options.selection_criteria = concerns.selection_criteria;
        options.read_concern = concerns.read_concern;
        options.write_concern = concerns.write_concern;
        if let Some(timeout) = concerns.timeout {
            return Ok((id, database.gridfs_bucket(options).with_timeout(timeout)));
        }
    }
    Ok((id, database.gridfs_bucket(options)))
}

fn chunk_size(size: &Bson) -> Result<u32, Abort> {
    let size = match size {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        other => return Err(Abort::Failed(format!("chunkSizeBytes {other}"))),
    };
    u32::try_from(size).map_err(|_| Abort::Failed(format!("chunkSizeBytes {size}")))
}

/// The bucket an operation is on, and its arguments.
fn call<'a>(
    operation: &'a Operation,
    context: &Context,
) -> Result<(GridFsBucket, Arguments<'a>), Abort> {
    let bucket = context.entities.bucket(&operation.object)?.clone();
    Ok((bucket, Arguments::of(operation)))
}

/// The whole content of a download, as the spec's result: its bytes.
async fn read_all(
    download: anymongo::Result<GridFsDownloadStream>,
) -> anymongo::Result<Option<Bson>> {
    let mut content = Vec::new();
    download?.read_to_end(&mut content).await?;
    Ok(Some(Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: content,
    })))
}

/// Spec `find` on a bucket: the files documents the filter matches.
pub async fn find(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let filter = arguments.document("filter")?;
    let find: anymongo::options::FindOptions = arguments.options(super::arguments::FIND)?;
    // The spec's find options of a bucket (GridFS spec, "GridFSFindOptions"); the
    // collection's others are not the bucket's.
    let options = GridFsFindOptions::builder()
        .allow_disk_use(find.allow_disk_use)
        .batch_size(find.batch_size)
        .limit(find.limit)
        .max_time(find.max_time)
        .no_cursor_timeout(find.no_cursor_timeout)
        .skip(find.skip)
        .sort(find.sort)
        .build();
    let files = bucket.find(filter).with_options(options).await;
    Ok(super::crud::drain(files.map(anymongo::Cursor::with_type)).await)
}

/// Spec `drop` on a bucket: drops its two collections.
pub async fn drop(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let (bucket, arguments) = call(operation, context)?;
    arguments.done()?;
    Ok(bucket.drop().await.map(|()| None))
}

/// Spec `download`: the file's content, by `id`.
pub async fn download(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let id = arguments.required("id")?;
    arguments.done()?;
    Ok(read_all(bucket.open_download_stream(id).await).await)
}

/// Spec `downloadByName`: the content of a revision of the file named `filename`.
pub async fn download_by_name(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let filename = arguments.string("filename")?;
    let revision = match arguments.optional("revision") {
        None => None,
        Some(Bson::Int32(revision)) => Some(revision),
        Some(other) => return Err(Abort::Failed(format!("revision {other}"))),
    };
    arguments.done()?;
    let download = bucket
        .open_download_stream_by_name(&filename)
        .with_options(GridFsDownloadByNameOptions { revision });
    Ok(read_all(download.await).await)
}

/// Spec `upload`: stores `source` (hex bytes) as `filename`; the result is the id.
pub async fn upload(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let filename = arguments.string("filename")?;
    let source = match arguments.required("source")? {
        Bson::Document(hex) => match hex.get_str("$$hexBytes") {
            Ok(hex) => decode_hex(hex)
                .ok_or_else(|| Abort::Failed(format!("{hex:?} is not hexadecimal bytes")))?,
            Err(_) => return Err(Abort::Failed(format!("upload source {hex}"))),
        },
        other => return Err(Abort::Failed(format!("upload source {other}"))),
    };
    let mut options = GridFsUploadOptions::default();
    if let Some(size) = arguments.optional("chunkSizeBytes") {
        options.chunk_size_bytes = Some(chunk_size(&size)?);
    }
    if let Some(metadata) = arguments.optional("metadata") {
        match metadata {
            Bson::Document(metadata) => options.metadata = Some(metadata),
            other => return Err(Abort::Failed(format!("upload metadata {other}"))),
        }
    }
    // The driver never computes the deprecated MD5 (GridFS spec, "disableMD5"), which
    // is what `disableMD5: true` asks for.
    match arguments.optional("disableMD5") {
        None | Some(Bson::Boolean(true)) => {}
        Some(other) => {
            return Err(Abort::Unsupported(format!(
                "upload with disableMD5 {other}"
            )))
        }
    }
    arguments.done()?;
    let upload = async {
        let mut upload = bucket
            .open_upload_stream(&filename)
            .with_options(options)
            .await?;
        upload.write_all(&source).await?;
        upload.close().await?;
        Ok(Some(upload.id().clone()))
    };
    Ok(upload.await)
}

/// Spec `delete`: removes the file with this `id` and its chunks.
pub async fn delete(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let id = arguments.required("id")?;
    arguments.done()?;
    Ok(bucket.delete(id).await.map(|()| None))
}

/// Spec `deleteByName`: removes every revision of the file named `filename`.
pub async fn delete_by_name(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let filename = arguments.string("filename")?;
    arguments.done()?;
    Ok(bucket.delete_by_name(&filename).await.map(|()| None))
}

/// Spec `rename`: gives the file with this `id` the name `newFilename`; on a
/// collection entity, renames the collection `to` another name.
pub async fn rename(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    if let Ok(collection) = context.entities.collection(&operation.object) {
        let collection = collection.collection.clone();
        let mut arguments = Arguments::of(operation);
        let to = arguments.string("to")?;
        let drop_target = match arguments.optional("dropTarget") {
            None => false,
            Some(Bson::Boolean(drop)) => drop,
            Some(other) => return Err(Abort::Failed(format!("dropTarget {other}"))),
        };
        arguments.done()?;
        return Ok(collection
            .rename(&to)
            .drop_target(drop_target)
            .await
            .map(|()| None));
    }
    let (bucket, mut arguments) = call(operation, context)?;
    let id = arguments.required("id")?;
    let new_filename = arguments.string("newFilename")?;
    arguments.done()?;
    Ok(bucket.rename(id, &new_filename).await.map(|()| None))
}

/// Spec `renameByName`: renames every revision of the file named `filename`.
pub async fn rename_by_name(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let (bucket, mut arguments) = call(operation, context)?;
    let filename = arguments.string("filename")?;
    let new_filename = arguments.string("newFilename")?;
    arguments.done()?;
    Ok(bucket
        .rename_by_name(&filename, &new_filename)
        .await
        .map(|()| None))
}
