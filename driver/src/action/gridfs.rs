//! The operations of a [`GridFsBucket`], as the official driver's
//! `action::gridfs` has them.

use super::run_blocking;
use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};

use super::{option_setters, timeout_setter};
use crate::crud::FindOptions;
use crate::cursor::Cursor;
use crate::error::Result;
use crate::gridfs::{
    FilesCollectionDocument, GridFsBucket, GridFsDownloadByNameOptions, GridFsDownloadStream,
    GridFsFindOneOptions, GridFsFindOptions, GridFsUploadOptions, GridFsUploadStream,
};
use crate::rt::{boxed, BoxFuture};

impl GridFsBucket {
    /// Opens an upload of a new file named `filename`: a [`GridFsUploadStream`] to
    /// write its content to and close.
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use futures::io::AsyncWriteExt;
    /// let mut upload = bucket
    ///     .open_upload_stream("notes.txt")
    ///     .metadata(doc! { "owner": "ada" })
    ///     .await?;
    /// upload.write_all(b"first line\n").await?;
    /// upload.close().await?;
    /// # Ok(()) }
    /// ```
    pub fn open_upload_stream(&self, filename: impl AsRef<str>) -> OpenUploadStream<'_> {
        OpenUploadStream {
            bucket: self,
            filename: filename.as_ref().to_owned(),
            options: None,
            timeout: None,
        }
    }

    /// Opens the file with this id: a [`GridFsDownloadStream`] of its content. No such
    /// file is a [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound).
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket, id: anymongo::bson::Bson) -> anymongo::Result<()> {
    /// use futures::io::AsyncReadExt;
    /// let mut content = Vec::new();
    /// bucket.open_download_stream(id).await?.read_to_end(&mut content).await?;
    /// # Ok(()) }
    /// ```
    pub fn open_download_stream(&self, id: Bson) -> OpenDownloadStream<'_> {
        OpenDownloadStream {
            bucket: self,
            id,
            timeout: None,
        }
    }

    /// Opens a revision of the file named `filename` (the latest unless
    /// `.revision(…)` says otherwise). No such revision is a
    /// [`GridFsErrorKind::RevisionNotFound`](crate::error::GridFsErrorKind::RevisionNotFound),
    /// no file of that name a
    /// [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound).
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// let first = bucket.open_download_stream_by_name("notes.txt").revision(0).await?;
    /// # let _ = first; Ok(()) }
    /// ```
    pub fn open_download_stream_by_name(
        &self,
        filename: impl AsRef<str>,
    ) -> OpenDownloadStreamByName<'_> {
        OpenDownloadStreamByName {
            bucket: self,
            filename: filename.as_ref().to_owned(),
            options: None,
            timeout: None,
        }
    }

    /// Deletes the file with this id and its chunks; no such file is a
    /// [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound) (after
    /// its stray chunks, if any, are deleted).
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// bucket.delete(anymongo::bson::Bson::Int32(1)).await?;
    /// # Ok(()) }
    /// ```
    pub fn delete(&self, id: Bson) -> Delete<'_> {
        Delete {
            bucket: self,
            id,
            timeout: None,
        }
    }

    /// Deletes every revision of the file named `filename` and their chunks; no file
    /// of that name is a
    /// [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound).
    pub fn delete_by_name(&self, filename: impl AsRef<str>) -> DeleteByName<'_> {
        DeleteByName {
            bucket: self,
            filename: filename.as_ref().to_owned(),
            timeout: None,
        }
    }

    /// The files documents matching `filter`.
    ///
    /// ```no_run
    /// # async fn example(bucket: anymongo::gridfs::GridFsBucket) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// use futures::TryStreamExt;
    /// let mut files = bucket.find(doc! {}).sort(doc! { "uploadDate": -1 }).await?;
    /// while let Some(file) = files.try_next().await? {
    ///     println!("{:?}: {} bytes", file.filename, file.length);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn find(&self, filter: Document) -> Find<'_> {
        Find {
            bucket: self,
            filter,
            options: None,
            timeout: None,
        }
    }

    /// The first files document matching `filter`, if any.
    pub fn find_one(&self, filter: Document) -> FindOne<'_> {
        FindOne {
            bucket: self,
            filter,
            options: None,
            timeout: None,
        }
    }

    /// Renames the file with this id; no such file is a
    /// [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound).
    pub fn rename(&self, id: Bson, new_filename: impl AsRef<str>) -> Rename<'_> {
        Rename {
            bucket: self,
            id,
            new_filename: new_filename.as_ref().to_owned(),
            timeout: None,
        }
    }

    /// Renames every revision of the file named `filename`; no file of that name is a
    /// [`GridFsErrorKind::FileNotFound`](crate::error::GridFsErrorKind::FileNotFound).
    pub fn rename_by_name(
        &self,
        filename: impl AsRef<str>,
        new_filename: impl AsRef<str>,
    ) -> RenameByName<'_> {
        RenameByName {
            bucket: self,
            filename: filename.as_ref().to_owned(),
            new_filename: new_filename.as_ref().to_owned(),
            timeout: None,
        }
    }

    /// Drops the bucket's two collections.
    pub fn drop(&self) -> Drop<'_> {
        Drop {
            bucket: self,
            timeout: None,
        }
    }
}

/// Writes an action of a bucket: its struct (the bucket, `fields`, `timeout`), its
/// `timeout` setter and its `IntoFuture`, which runs `run` on the bucket of the call.
/// Its blocking `.run()` is written beside it: streams and cursors become the `sync`
/// API's.
macro_rules! bucket_action {
    (
        $(#[$doc:meta])* $Name:ident { $($field:ident: $type:ty,)* } -> $Output:ty,
        |$this:ident, $bucket:ident| $run:expr
    ) => {
        $(#[$doc])*
        #[must_use = "an action does nothing until it is awaited"]
        pub struct $Name<'a> {
            bucket: &'a GridFsBucket,
            $($field: $type,)*
            timeout: Option<Duration>,
        }

        impl $Name<'_> {
            timeout_setter!();
        }

        impl<'a> IntoFuture for $Name<'a> {
            type Output = Result<$Output>;
            type IntoFuture = BoxFuture<'a, Self::Output>;

            fn into_future(self) -> Self::IntoFuture {
                let $this = self;
                boxed(async move {
                    let $bucket = $this.bucket.for_one_call($this.timeout);
                    $run.await
                })
            }
        }
    };
}

bucket_action!(
    /// An upload about to open: what [`GridFsBucket::open_upload_stream`] returns.
    /// Awaited (after creating the bucket's indexes if it is empty), it returns the
    /// [`GridFsUploadStream`].
    OpenUploadStream {
        filename: String,
        options: Option<GridFsUploadOptions>,
    } -> GridFsUploadStream,
    |this, bucket| bucket.open_upload_in(this.filename, this.options)
);
run_blocking!(impl['a] OpenUploadStream<'a> => crate::sync::gridfs::GridFsUploadStream);

impl OpenUploadStream<'_> {
    option_setters!(options: GridFsUploadOptions;
        /// The file's id; a new ObjectId when unset.
        id: Bson,
        /// The chunk size of this file; the bucket's when unset.
        chunk_size_bytes: u32,
        /// Application data stored in the files document.
        metadata: Document,
    );
}

bucket_action!(
    /// A download about to open: what [`GridFsBucket::open_download_stream`] returns.
    /// Awaited, it finds the file and returns its [`GridFsDownloadStream`].
    OpenDownloadStream {
        id: Bson,
    } -> GridFsDownloadStream,
    |this, bucket| bucket.open_download_in(this.id)
);
run_blocking!(impl['a] OpenDownloadStream<'a> => crate::sync::gridfs::GridFsDownloadStream);

bucket_action!(
    /// A download by name about to open: what
    /// [`GridFsBucket::open_download_stream_by_name`] returns.
    OpenDownloadStreamByName {
        filename: String,
        options: Option<GridFsDownloadByNameOptions>,
    } -> GridFsDownloadStream,
    |this, bucket| bucket.open_download_by_name_in(&this.filename, this.options)
);
run_blocking!(impl['a] OpenDownloadStreamByName<'a> => crate::sync::gridfs::GridFsDownloadStream);

impl OpenDownloadStreamByName<'_> {
    option_setters!(options: GridFsDownloadByNameOptions;
        /// Which revision: 0 is the first upload, 1 the second...; -1 (the default)
        /// the latest, -2 the one before...
        revision: i32,
    );
}

bucket_action!(
    /// A delete of a file: what [`GridFsBucket::delete`] returns.
    Delete {
        id: Bson,
    } -> (),
    |this, bucket| bucket.delete_in(this.id)
);
run_blocking!(impl['a] Delete<'a> => ());

bucket_action!(
    /// A delete of a file's revisions: what [`GridFsBucket::delete_by_name`] returns.
    DeleteByName {
        filename: String,
    } -> (),
    |this, bucket| bucket.delete_by_name_in(&this.filename)
);
run_blocking!(impl['a] DeleteByName<'a> => ());

bucket_action!(
    /// A find of files documents: what [`GridFsBucket::find`] returns. Awaited, it
    /// returns a [`Cursor`] of [`FilesCollectionDocument`].
    Find {
        filter: Document,
        options: Option<GridFsFindOptions>,
    } -> Cursor<FilesCollectionDocument>,
    |this, bucket| bucket.find_in(this.filter, this.options.map(Into::into))
);
run_blocking!(impl['a] Find<'a> => crate::sync::Cursor<FilesCollectionDocument>);

impl Find<'_> {
    option_setters!(options: GridFsFindOptions;
        /// Lets the server write temporary files for large sorts.
        allow_disk_use: bool,
        /// Documents per batch.
        batch_size: u32,
        /// At most this many files.
        limit: i64,
        /// The server-side time limit of the query (`maxTimeMS`).
        max_time: Duration,
        /// The server does not time the cursor out.
        no_cursor_timeout: bool,
        /// Skips this many files.
        skip: u64,
        /// The order of the files.
        sort: Document,
    );
}

bucket_action!(
    /// A find of one files document: what [`GridFsBucket::find_one`] returns.
    FindOne {
        filter: Document,
        options: Option<GridFsFindOneOptions>,
    } -> Option<FilesCollectionDocument>,
    |this, bucket| async move {
        let options = FindOptions {
            limit: Some(-1),
            ..this.options.map(Into::into).unwrap_or_default()
        };
        let mut files = bucket.find_in(this.filter, Some(options)).await?;
        futures::TryStreamExt::try_next(&mut files).await
    }
);
run_blocking!(impl['a] FindOne<'a> => Option<FilesCollectionDocument>);

impl FindOne<'_> {
    option_setters!(options: GridFsFindOneOptions;
        /// The server-side time limit of the query (`maxTimeMS`).
        max_time: Duration,
        /// Skips this many files before the one returned.
        skip: u64,
        /// The order of the files, the first of which is returned.
        sort: Document,
    );
}

bucket_action!(
    /// A rename of a file: what [`GridFsBucket::rename`] returns.
    Rename {
        id: Bson,
        new_filename: String,
    } -> (),
    |this, bucket| bucket.rename_in(this.id, &this.new_filename)
);
run_blocking!(impl['a] Rename<'a> => ());

bucket_action!(
    /// A rename of a file's revisions: what [`GridFsBucket::rename_by_name`] returns.
    RenameByName {
        filename: String,
        new_filename: String,
    } -> (),
    |this, bucket| bucket.rename_by_name_in(&this.filename, &this.new_filename)
);
run_blocking!(impl['a] RenameByName<'a> => ());

bucket_action!(
    /// A drop of the bucket: what [`GridFsBucket::drop`] returns.
    Drop {} -> (),
    |_this, bucket| bucket.drop_in()
);
run_blocking!(impl['a] Drop<'a> => ());
