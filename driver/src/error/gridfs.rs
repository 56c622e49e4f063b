//! What can go wrong with a GridFS file besides the server's errors, in the official
//! crate's names ([`GridFsErrorKind`], [`GridFsFileIdentifier`]), so that
//! [`crate::error::ErrorKind::GridFs`] can carry it.

use bson::Bson;

use super::Error;

/// Why a GridFS operation failed, besides the server's errors:
/// [`ErrorKind::GridFs`](crate::error::ErrorKind::GridFs).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GridFsErrorKind {
    /// No file has this id, or no file has this name (GridFS spec, "FileNotFound").
    #[non_exhaustive]
    FileNotFound {
        /// The id or the name looked for.
        identifier: GridFsFileIdentifier,
    },
    /// Files have the name looked for, but not that many revisions of it.
    #[non_exhaustive]
    RevisionNotFound {
        /// The revision asked for.
        revision: i32,
    },
    /// The chunk numbered `n` is missing: the chunks skip it, or end before it
    /// (GridFS spec, "Reading from GridFS").
    #[non_exhaustive]
    MissingChunk {
        /// The number of the chunk.
        n: u32,
    },
    /// A write or an abort came after the upload stream was closed or aborted.
    UploadStreamClosed,
    /// The chunk numbered `n` does not hold the bytes the file's `length` and
    /// `chunkSize` say it should.
    #[non_exhaustive]
    WrongSizeChunk {
        /// The bytes it holds.
        actual_size: usize,
        /// The bytes it should hold.
        expected_size: u32,
        /// The number of the chunk.
        n: u32,
    },
    /// The file has more chunks than its `length` and `chunkSize` make.
    #[non_exhaustive]
    WrongNumberOfChunks {
        /// The chunks read, the first extra one included.
        actual_number: u32,
        /// The chunks the file should have.
        expected_number: u32,
    },
    /// Deleting the chunks of an aborted upload failed.
    #[non_exhaustive]
    AbortError {
        /// The error that made the upload abort; `None` when the application aborted
        /// it.
        original_error: Option<Error>,
        /// The error of the deletion of the chunks.
        delete_error: Error,
    },
    /// A close while a write was in progress. Named for code written for the official
    /// crate; anymongo never returns it: a write returns once its chunk is handed
    /// over, and a close waits for the chunk's insert.
    WriteInProgress,
    /// The file's `files` document or one of its chunks is malformed: no valid
    /// `length` or `chunkSize`, or a chunk without binary `data`. An addition: the
    /// official crate reports these as deserialization errors.
    #[non_exhaustive]
    CorruptFile {
        /// The file's id.
        id: Bson,
        /// What is wrong.
        message: String,
    },
}

/// What identifies a GridFS file: its id, or its name (which several revisions
/// share).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GridFsFileIdentifier {
    /// The file's name.
    Filename(String),
    /// The file's id.
    Id(Bson),
}

impl std::fmt::Display for GridFsErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Id(id),
            } => write!(f, "no GridFS file has the id {id}"),
            GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Filename(name),
            } => write!(f, "no GridFS file is named {name:?}"),
            GridFsErrorKind::RevisionNotFound { revision } => {
                write!(f, "no revision {revision} of the GridFS file")
            }
            GridFsErrorKind::MissingChunk { n } => write!(f, "GridFS chunk {n} is missing"),
            GridFsErrorKind::UploadStreamClosed => {
                f.write_str("the GridFS upload stream is closed")
            }
            GridFsErrorKind::WrongSizeChunk {
                actual_size,
                expected_size,
                n,
            } => write!(
                f,
                "GridFS chunk {n} holds {actual_size} bytes, expected {expected_size}"
            ),
            GridFsErrorKind::WrongNumberOfChunks {
                actual_number,
                expected_number,
            } => write!(
                f,
                "the GridFS file has at least {actual_number} chunks, expected {expected_number}"
            ),
            GridFsErrorKind::AbortError {
                original_error,
                delete_error,
            } => {
                write!(
                    f,
                    "deleting the chunks of an aborted GridFS upload failed: {delete_error}"
                )?;
                match original_error {
                    Some(error) => write!(f, " (the upload aborted after: {error})"),
                    None => Ok(()),
                }
            }
            GridFsErrorKind::WriteInProgress => {
                f.write_str("the GridFS upload stream was closed during a write")
            }
            GridFsErrorKind::CorruptFile { id, message } => {
                write!(f, "the GridFS file {id} is corrupt: {message}")
            }
        }
    }
}
