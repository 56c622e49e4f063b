//! What can go wrong with a GridFS file besides the server's errors: plain data that
//! depends on BSON only, so that [`crate::error::ErrorKind`] can carry it.

use bson::Bson;

/// Why a GridFS operation failed, besides the server's errors: [`ErrorKind::GridFs`](crate::error::ErrorKind::GridFs).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GridFsError {
    /// No file has this id (GridFS spec, "FileNotFound").
    FileNotFound {
        /// The id looked for.
        id: Bson,
    },
    /// No file has this name, or not that many revisions of it.
    RevisionNotFound {
        /// The name looked for.
        filename: String,
        /// The revision asked for.
        revision: i32,
    },
    /// The file's chunks do not add up to its length: a chunk is missing, too short or
    /// too long, or there are extra chunks (GridFS spec, "Reading from GridFS").
    CorruptFile {
        /// The file's id.
        id: Bson,
        /// What is wrong.
        message: String,
    },
}

impl std::fmt::Display for GridFsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsError::FileNotFound { id } => write!(f, "no GridFS file has the id {id}"),
            GridFsError::RevisionNotFound { filename, revision } => write!(
                f,
                "no revision {revision} of the GridFS file named {filename:?}"
            ),
            GridFsError::CorruptFile { id, message } => {
                write!(f, "the GridFS file {id} is corrupt: {message}")
            }
        }
    }
}
