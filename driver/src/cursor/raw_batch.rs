//! Cursors that yield whole batches, as the server sent them (`raw_batch_cursor` at the
//! crate root, as in the official driver): what `.batch()` on a `find`, `aggregate`,
//! `list_collections`, `list_indexes` or `run_cursor_command` returns.
//!
//! Each item is a [`RawBatch`]: one reply (the command's, then each getMore's), whose
//! documents [`doc_slices`](RawBatch::doc_slices) reads in place, without copying or
//! deserializing them. For code that hands documents on as BSON, or reads a few
//! fields of many documents. A raw batch cursor is a [`Cursor`] iterated a batch at a
//! time: the same getMores (in the same session, on the same pinned connection, within
//! the same timeoutMS) and the same `killCursors` when it is dropped before its end.
//!
//! ```no_run
//! # async fn example(orders: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
//! use anymongo::bson::doc;
//! use futures::StreamExt;
//! let mut cursor = orders.find(doc! {}).batch_size(100).batch().await?;
//! while let Some(batch) = cursor.next().await {
//!     for document in batch?.doc_slices()? {
//!         let document = document?;
//!         println!("{:?}", document.as_document().and_then(|order| order.get("qty").ok()));
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! An empty batch is yielded too: a tailable cursor's getMore answers one while nothing
//! new arrives, and the caller gets control back after each.

use std::pin::Pin;
use std::task::{Context, Poll};

use bson::{Document, RawArray, RawDocument, RawDocumentBuf};
use futures::Stream;

use super::{batch_array, Cursor};
use crate::error::{Error, ErrorKind, Result};
use crate::session::ClientSession;
use crate::wire::WireError;

/// One batch of a cursor: the server's reply to the command that opened the cursor or
/// to a getMore, as it came.
#[derive(Clone, Debug)]
pub struct RawBatch {
    reply: RawDocumentBuf,
}

impl RawBatch {
    /// The batch's documents (`cursor.firstBatch` or `cursor.nextBatch`), read in place
    /// in the reply. The cursor checked, when the reply came, that the batch is there
    /// and holds documents only.
    pub fn doc_slices(&self) -> Result<&RawArray> {
        batch_array(&self.reply).ok_or_else(|| {
            let error = WireError::MalformedDocument("cursor reply without its batch".to_string());
            Error::new(ErrorKind::InvalidResponse {
                message: error.to_string(),
                error,
            })
        })
    }

    /// The whole reply: the batch with the cursor's id and namespace, `ok`, the
    /// cluster time…
    pub fn as_raw_document(&self) -> &RawDocument {
        &self.reply
    }
}

/// The batches of a query, as a [`Stream`] of `Result<RawBatch>`: what `.batch()`
/// returns on an action run without a session.
#[derive(Debug)]
pub struct RawBatchCursor {
    cursor: Cursor<Document>,
}

impl RawBatchCursor {
    /// The batches of `cursor`, none of whose documents it has handed out.
    pub(crate) fn new<T>(cursor: Cursor<T>) -> RawBatchCursor {
        RawBatchCursor {
            cursor: cursor.with_type(),
        }
    }
}

impl Stream for RawBatchCursor {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        poll_next(&mut self.get_mut().cursor, cx)
    }
}

/// The next batch of `cursor`.
fn poll_next(
    cursor: &mut Cursor<Document>,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<RawBatch>>> {
    cursor
        .poll_batch(cx)
        .map(|batch| batch.map(|reply| reply.map(|reply| RawBatch { reply })))
}

/// The batches of a query run in an explicit session, iterated with that session (as
/// a [`SessionCursor`](crate::SessionCursor) is): what `.batch()` returns on an action
/// given `.session(…)`.
#[derive(Debug)]
pub struct SessionRawBatchCursor {
    cursor: Cursor<Document>,
}

impl SessionRawBatchCursor {
    /// The batches of `cursor`, opened in an explicit session.
    pub(crate) fn new<T>(cursor: Cursor<T>) -> SessionRawBatchCursor {
        SessionRawBatchCursor {
            cursor: cursor.with_type(),
        }
    }

    /// The batches as a [`Stream`]; `session` is the one the cursor was opened in.
    pub fn stream<'session>(
        &mut self,
        _session: impl Into<&'session ClientSession>,
    ) -> SessionRawBatchCursorStream<'_, 'session> {
        SessionRawBatchCursorStream {
            cursor: &mut self.cursor,
            _session: std::marker::PhantomData,
        }
    }
}

/// A [`SessionRawBatchCursor`]'s batches as a [`Stream`]
/// ([`SessionRawBatchCursor::stream`]).
#[derive(Debug)]
pub struct SessionRawBatchCursorStream<'cursor, 'session> {
    cursor: &'cursor mut Cursor<Document>,
    _session: std::marker::PhantomData<&'session ClientSession>,
}

impl Stream for SessionRawBatchCursorStream<'_, '_> {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        poll_next(self.get_mut().cursor, cx)
    }
}
