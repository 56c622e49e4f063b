//! GridFS in the blocking API: the async API's bucket and actions (`.run()` where it
//! has `.await`), with the streams of an upload and a download as
//! [`std::io::Write`] and [`std::io::Read`].
//!
//! ```no_run
//! # fn example(db: anymongo::sync::Database) -> anymongo::Result<()> {
//! use std::io::{Read, Write};
//! let bucket = db.gridfs_bucket(None);
//! let mut upload_stream = bucket.open_upload_stream("notes.txt").run()?;
//! upload_stream.write_all(b"hello")?;
//! upload_stream.close()?;
//!
//! let mut contents = Vec::new();
//! let mut download_stream = bucket.open_download_stream(upload_stream.id().clone()).run()?;
//! download_stream.read_to_end(&mut contents)?;
//! assert_eq!(contents, b"hello");
//! # Ok(()) }
//! ```

use std::io::{Read, Write};

use bson::Bson;
use futures::io::{AsyncReadExt, AsyncWriteExt};

use super::run::block_on;
use crate::Result;

pub use crate::gridfs::{FilesCollectionDocument, GridFsBucket};

/// Runs an I/O step of a stream on the calling thread; a runtime that cannot start is
/// an I/O error, as the traits need.
fn block_on_io<T>(step: impl std::future::Future<Output = std::io::Result<T>>) -> std::io::Result<T> {
    block_on(step).map_err(std::io::Error::other)?
}

/// A new GridFS file being written, as [`std::io::Write`]: what
/// `bucket.open_upload_stream(filename).run()` returns. Call
/// [`close`](Self::close) to finish the file; dropped unclosed, its chunks are deleted
/// (see [`crate::gridfs::GridFsUploadStream`]).
#[derive(Debug)]
pub struct GridFsUploadStream {
    stream: crate::gridfs::GridFsUploadStream,
}

impl From<crate::gridfs::GridFsUploadStream> for GridFsUploadStream {
    fn from(stream: crate::gridfs::GridFsUploadStream) -> Self {
        GridFsUploadStream { stream }
    }
}

impl GridFsUploadStream {
    /// The id of the file.
    pub fn id(&self) -> &Bson {
        self.stream.id()
    }

    /// Writes what is buffered and the files document: the file exists once this
    /// returns `Ok`. An error if the stream is closed or aborted already.
    pub fn close(&mut self) -> std::io::Result<()> {
        block_on_io(self.stream.close())
    }

    /// Stops the upload and deletes the chunks written; the file never exists.
    pub fn abort(&mut self) -> Result<()> {
        block_on(self.stream.abort())?
    }
}

impl Write for GridFsUploadStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        block_on_io(self.stream.write(buf))
    }

    /// Waits for the chunk being inserted; a chunk not yet full stays buffered until
    /// it fills or the stream is closed (every chunk but the last has the chunk size).
    fn flush(&mut self) -> std::io::Result<()> {
        block_on_io(self.stream.flush())
    }
}

/// The content of a GridFS file, as [`std::io::Read`]: what
/// `bucket.open_download_stream(id).run()` returns.
#[derive(Debug)]
pub struct GridFsDownloadStream {
    stream: crate::gridfs::GridFsDownloadStream,
}

impl From<crate::gridfs::GridFsDownloadStream> for GridFsDownloadStream {
    fn from(stream: crate::gridfs::GridFsDownloadStream) -> Self {
        GridFsDownloadStream { stream }
    }
}

impl Read for GridFsDownloadStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        block_on_io(self.stream.read(buf))
    }
}
