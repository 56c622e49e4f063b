//! The blocking cursors and change streams: the async ones, each step run to its end
//! on the calling thread.

use bson::RawDocument;
use futures::StreamExt;
use serde::de::DeserializeOwned;

use crate::change_stream::ResumeToken;
use super::run::block_on;
use crate::session::ClientSession;
use crate::Result;

/// The documents of a query (what a `find`, `aggregate`, `list_indexes`… run with
/// `.run()` returns): an [`Iterator`] of `Result<T>`, fetching batches as it goes.
/// Dropping it kills the server cursor in the background.
///
/// ```no_run
/// # fn example(orders: anymongo::sync::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
/// use anymongo::bson::doc;
/// for order in orders.find(doc! { "qty": { "$gt": 1 } }).run()? {
///     println!("{}", order?);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Cursor<T> {
    cursor: crate::Cursor<T>,
}

impl<T> From<crate::Cursor<T>> for Cursor<T> {
    fn from(cursor: crate::Cursor<T>) -> Self {
        Cursor { cursor }
    }
}

impl<T> Cursor<T> {
    /// Moves to the next document, fetching a batch if needed: `false` once the
    /// cursor is exhausted ([`crate::Cursor::advance`]).
    ///
    /// ```no_run
    /// # fn example(orders: anymongo::sync::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
    /// use anymongo::bson::doc;
    /// let mut cursor = orders.find(doc! {}).run()?;
    /// while cursor.advance()? {
    ///     println!("{:?}", cursor.current().get("item"));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn advance(&mut self) -> Result<bool> {
        block_on(self.cursor.advance())?
    }

    /// The document [`advance`](Self::advance) moved to, as the server sent it; an
    /// empty document before the first `advance` and after the last.
    pub fn current(&self) -> &RawDocument {
        self.cursor.current()
    }

    /// The document [`advance`](Self::advance) moved to, as `T`.
    pub fn deserialize_current(&self) -> Result<T>
    where
        T: DeserializeOwned + 'static,
    {
        self.cursor.deserialize_current()
    }

    /// The same cursor, yielding another type.
    pub fn with_type<U>(self) -> Cursor<U> {
        Cursor {
            cursor: self.cursor.with_type(),
        }
    }

    /// Whether the server may have more ([`crate::Cursor::is_alive`]).
    pub fn is_alive(&self) -> bool {
        self.cursor.is_alive()
    }

    /// Kills the server cursor now, waiting for the answer.
    pub fn close(self) -> Result<()> {
        block_on(self.cursor.close())?
    }
}

impl<T: DeserializeOwned + 'static> Cursor<T> {
    /// The next document if the next batch has one: `None` after a getMore of a
    /// tailable cursor that found none ([`crate::Cursor::next_if_any`]).
    pub fn next_if_any(&mut self) -> Result<Option<T>> {
        block_on(self.cursor.next_if_any())?
    }
}

impl<T: DeserializeOwned + 'static> Iterator for Cursor<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        block_on(self.cursor.next()).unwrap_or_else(|error| Some(Err(error)))
    }
}

/// The cursor of an operation run in an explicit session: its getMores run in that
/// session, which its iteration names.
///
/// ```no_run
/// # fn example(client: anymongo::sync::Client) -> anymongo::Result<()> {
/// use anymongo::bson::{doc, Document};
/// let orders = client.database("shop").collection::<Document>("orders");
/// let mut session = client.start_session().run()?;
/// let mut cursor = orders.find(doc! {}).session(&mut session).run()?;
/// for order in cursor.iter(&mut session) {
///     println!("{}", order?);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SessionCursor<T> {
    cursor: crate::SessionCursor<T>,
}

impl<T> From<crate::SessionCursor<T>> for SessionCursor<T> {
    fn from(cursor: crate::SessionCursor<T>) -> Self {
        SessionCursor { cursor }
    }
}

impl<T> SessionCursor<T> {
    /// Moves to the next document ([`Cursor::advance`]).
    pub fn advance<'s>(&mut self, session: impl Into<&'s ClientSession>) -> Result<bool> {
        block_on(self.cursor.advance(session))?
    }

    /// The document [`advance`](Self::advance) moved to ([`Cursor::current`]).
    pub fn current(&self) -> &RawDocument {
        self.cursor.current()
    }

    /// The document [`advance`](Self::advance) moved to, as `T`.
    pub fn deserialize_current(&self) -> Result<T>
    where
        T: DeserializeOwned + 'static,
    {
        self.cursor.deserialize_current()
    }

    /// The same cursor, yielding another type.
    pub fn with_type<U>(self) -> SessionCursor<U> {
        SessionCursor {
            cursor: self.cursor.with_type(),
        }
    }

    /// Whether the server may have more.
    pub fn is_alive(&self) -> bool {
        self.cursor.is_alive()
    }

    /// Kills the server cursor now, waiting for the answer.
    pub fn close(self) -> Result<()> {
        block_on(self.cursor.close())?
    }
}

impl<T: DeserializeOwned + 'static> SessionCursor<T> {
    /// The next document, `None` once the cursor is exhausted.
    pub fn next<'s>(&mut self, session: impl Into<&'s ClientSession>) -> Option<Result<T>> {
        block_on(self.cursor.next(session)).unwrap_or_else(|error| Some(Err(error)))
    }

    /// The documents as an [`Iterator`], for as long as it borrows the session.
    pub fn iter<'c, 's: 'c>(
        &'c mut self,
        session: impl Into<&'s ClientSession>,
    ) -> SessionCursorIter<'c, T> {
        SessionCursorIter {
            cursor: self,
            session: session.into(),
        }
    }
}

/// A [`SessionCursor`]'s documents as an [`Iterator`] ([`SessionCursor::iter`]).
#[derive(Debug)]
pub struct SessionCursorIter<'c, T> {
    cursor: &'c mut SessionCursor<T>,
    session: &'c ClientSession,
}

impl<T: DeserializeOwned + 'static> Iterator for SessionCursorIter<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.cursor.next(self.session)
    }
}

/// The changes of a `watch` (run with `.run()`): an [`Iterator`] that waits for each
/// change, resuming after a transient error as the async one does.
///
/// ```no_run
/// # fn example(orders: anymongo::sync::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
/// let mut changes = orders.watch().run()?;
/// while changes.is_alive() {
///     if let Some(change) = changes.next_if_any()? {
///         println!("{:?}", change.operation_type);
///     }
///     // Between batches: where to resume from later.
///     let _token = changes.resume_token();
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ChangeStream<T> {
    stream: crate::ChangeStream<T>,
}

impl<T> From<crate::ChangeStream<T>> for ChangeStream<T> {
    fn from(stream: crate::ChangeStream<T>) -> Self {
        ChangeStream { stream }
    }
}

impl<T> ChangeStream<T> {
    /// The resume token the stream would resume from
    /// ([`crate::ChangeStream::resume_token`]).
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.stream.resume_token()
    }

    /// Whether the stream may still return changes.
    pub fn is_alive(&self) -> bool {
        self.stream.is_alive()
    }

    /// The same stream, its events read as `U`.
    pub fn with_type<U>(self) -> ChangeStream<U> {
        ChangeStream {
            stream: self.stream.with_type(),
        }
    }

    /// Closes the stream, killing its server cursor now and waiting for the answer.
    pub fn close(self) -> Result<()> {
        block_on(self.stream.close())?
    }
}

impl<T: DeserializeOwned + 'static> ChangeStream<T> {
    /// The next change if the next batch has one, `None` otherwise (and once the
    /// stream is closed), so that [`resume_token`](Self::resume_token) can be read
    /// between batches ([`crate::ChangeStream::next_if_any`]).
    pub fn next_if_any(&mut self) -> Result<Option<T>> {
        block_on(self.stream.next_if_any())?
    }
}

impl<T: DeserializeOwned + 'static> Iterator for ChangeStream<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        block_on(self.stream.next()).unwrap_or_else(|error| Some(Err(error)))
    }
}

/// The changes of a `watch` run in an explicit session, iterated with the session.
#[derive(Debug)]
pub struct SessionChangeStream<T> {
    stream: crate::SessionChangeStream<T>,
}

impl<T> From<crate::SessionChangeStream<T>> for SessionChangeStream<T> {
    fn from(stream: crate::SessionChangeStream<T>) -> Self {
        SessionChangeStream { stream }
    }
}

impl<T> SessionChangeStream<T> {
    /// The resume token the stream would resume from.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.stream.resume_token()
    }

    /// Whether the stream may still return changes.
    pub fn is_alive(&self) -> bool {
        self.stream.is_alive()
    }

    /// The same stream, its events read as `U`.
    pub fn with_type<U>(self) -> SessionChangeStream<U> {
        SessionChangeStream {
            stream: self.stream.with_type(),
        }
    }

    /// Closes the stream, killing its server cursor now.
    pub fn close(self) -> Result<()> {
        block_on(self.stream.close())?
    }
}

impl<T: DeserializeOwned + 'static> SessionChangeStream<T> {
    /// The next change, waiting for one; `None` once the stream is closed.
    pub fn next<'s>(&mut self, session: impl Into<&'s ClientSession>) -> Result<Option<T>> {
        block_on(self.stream.next(session))?
    }

    /// The next change if the next batch has one ([`ChangeStream::next_if_any`]).
    pub fn next_if_any<'s>(&mut self, session: impl Into<&'s ClientSession>) -> Result<Option<T>> {
        block_on(self.stream.next_if_any(session))?
    }
}
