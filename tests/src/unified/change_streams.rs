//! Change streams (spec "Client Operations", "Database Operations", "Collection
//! Operations": `createChangeStream`): the stream of a client, database or collection
//! entity becomes a cursor entity, which `iterateUntilDocumentOrError`, `iterateOnce`
//! and `close` work on ([`super::cursors`]).

use anymongo::action::Watch;
use anymongo::change_stream::{ChangeStreamEvent, ChangeStreamOptions};
use anymongo::session::ClientSession;
use anymongo::{ChangeStream, Client, Collection, Database};
use bson::Document;

use super::arguments::Arguments;
use super::entities::{Entity, Iterable};
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// The options of `createChangeStream`, as `anymongo::change_stream::ChangeStreamOptions`
/// reads them.
const OPTIONS: &[&str] = &[
    "batchSize",
    "collation",
    "comment",
    "fullDocument",
    "fullDocumentBeforeChange",
    "maxAwaitTimeMS",
    "resumeAfter",
    "showExpandedEvents",
    "startAfter",
    "startAtOperationTime",
];

/// What a change stream watches.
// One per operation, short-lived: boxing the larger handles would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Watched {
    Client(Client),
    Database(Database),
    Collection(Collection<Document>),
}

/// Opens the stream of `watch`, in `session` if given.
async fn open(
    watch: Watch<'_>,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    session: &Option<ClientSession>,
) -> anymongo::Result<ChangeStream<ChangeStreamEvent<Document>>> {
    let watch = watch.pipeline(pipeline).with_options(options);
    match session {
        Some(session) => watch.session(session).await.map(ChangeStream::from),
        None => watch.await,
    }
}

/// Spec `createChangeStream`: the stream, its events read as documents, becomes the
/// result entity.
pub async fn create_change_stream(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let watched = match context.entities.get(&operation.object)? {
        Entity::Client(client) => Watched::Client(client.client.clone()),
        Entity::Database(database) => Watched::Database(database.database.clone()),
        Entity::Collection(collection) => Watched::Collection(collection.collection.clone()),
        other => {
            return Err(Abort::Failed(format!(
                "createChangeStream on a {}",
                other.describe()
            )))
        }
    };
    let mut arguments = Arguments::of(operation);
    let session = arguments.session(&context.entities)?;
    let pipeline = arguments.documents("pipeline")?;
    let options: ChangeStreamOptions = arguments.options(OPTIONS)?;
    let stream = match watched {
        Watched::Client(client) => open(client.watch(), pipeline, options, &session).await,
        Watched::Database(database) => open(database.watch(), pipeline, options, &session).await,
        Watched::Collection(collection) => {
            open(collection.watch(), pipeline, options, &session).await
        }
    };
    match stream {
        Ok(stream) => {
            let stream: ChangeStream<Document> = stream.with_type();
            context.save_iterable(Iterable::ChangeStream(stream));
            Ok(Ok(None))
        }
        Err(error) => Ok(Err(error)),
    }
}
