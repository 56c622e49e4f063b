//! Cursor entities (spec "entity", `cursor`): `createFindCursor` and the operations on
//! a saved cursor or change stream (spec "Cursor Operations", "ChangeStream
//! Operations").

use bson::Bson;
use futures::TryStreamExt;

use super::crud;
use super::entities::Iterable;
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// Spec `createFindCursor`: the cursor of a find becomes the result entity.
pub async fn create_find_cursor(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let cursor = crud::find_cursor(operation, context).await?;
    Ok(context.save_cursor(cursor))
}

/// Spec `iterateUntilDocumentOrError` and `iterateOnce`: the next document.
/// `iterateUntilDocumentOrError` iterates as the driver's `Stream` does, fetching
/// batches until a document comes; `iterateOnce` asks once (`Cursor::next_if_any`,
/// `ChangeStream::next_if_any`: a buffered document, else one getMore) and returns
/// nothing after an empty batch that leaves the cursor alive, as a tailable cursor's
/// getMore gives while nothing new arrives. A cursor exhausted without a document
/// fails the test.
pub async fn next(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    super::arguments::known_arguments(operation, &[])?;
    let entity = context.entities.cursor_mut(&operation.object)?;
    let iterable = entity
        .cursor
        .as_mut()
        .ok_or_else(|| format!("the cursor {} is closed", operation.object))?;
    let once = operation.name == "iterateOnce";
    let next = match iterable {
        Iterable::Cursor(cursor) if once => match cursor.next_if_any().await {
            Ok(None) if cursor.is_alive() => return Ok(Ok(None)),
            next => next,
        },
        Iterable::Cursor(cursor) => cursor.try_next().await,
        Iterable::ChangeStream(stream) if once => match stream.next_if_any().await {
            Ok(None) if stream.is_alive() => return Ok(Ok(None)),
            next => next,
        },
        Iterable::ChangeStream(stream) => stream.try_next().await,
    };
    match next {
        Ok(Some(document)) => Ok(Ok(Some(Bson::Document(document)))),
        Ok(None) => Err(Abort::Failed(format!(
            "the cursor {} is exhausted",
            operation.object
        ))),
        Err(error) => Ok(Err(error)),
    }
}

/// Spec `close`: kills the server's cursor; the entity stays, closed. On a client
/// entity: closes the client (spec "client", `close`).
pub async fn close(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    super::arguments::known_arguments(operation, &[])?;
    if let Ok(client) = context.entities.client(&operation.object) {
        // At once: the test's sessions and cursors may still be entities.
        client.client.clone().shutdown().immediate(true).await;
        return Ok(Ok(None));
    }
    let entity = context.entities.cursor_mut(&operation.object)?;
    // Spec "close" (cursor): "test runners MUST suppress all errors when closing the
    // cursor"; command monitoring shows whether killCursors succeeded.
    let _suppressed = match entity.cursor.take() {
        Some(Iterable::Cursor(cursor)) => cursor.close().await,
        Some(Iterable::ChangeStream(stream)) => stream.close().await,
        None => Ok(()),
    };
    Ok(Ok(None))
}
