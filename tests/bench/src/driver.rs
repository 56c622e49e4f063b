//! The two drivers behind one interface, so that every task runs the same code with
//! either: anymongo (bson 3) and the official `mongodb` crate with its default features
//! (bson 2). Each parses the data sets with its own bson crate. The wasip2 build has
//! anymongo only (futures there are not `Send`: hence `MaybeSend`).

use std::future::Future;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use anymongo::rt::{MaybeSend, MaybeSync};
use futures::TryStreamExt;

/// The spec's database and collection.
pub const DATABASE: &str = "perftest";
/// The spec's collection.
pub const COLLECTION: &str = "corpus";

/// What the tasks ask of a driver. Errors are messages: a benchmark stops at the first.
pub trait Driver: MaybeSend + MaybeSync + Sized + 'static {
    /// The name in the table.
    const NAME: &'static str;
    /// The driver's document type.
    type Doc: Clone + MaybeSend + MaybeSync + 'static;

    /// Connects to `uri` (lazily, as both drivers do; the first operation connects).
    fn connect(uri: &str) -> impl Future<Output = Result<Self, String>> + MaybeSend;
    /// Parses extended JSON text.
    fn parse(json: &str) -> Result<Self::Doc, String>;
    /// `doc` with the integer `_id` given (for the find-one data).
    fn with_id(doc: &Self::Doc, id: i32) -> Self::Doc;
    /// Encodes `doc` the way the driver's insert does.
    fn encode(doc: &Self::Doc) -> Result<Vec<u8>, String>;
    /// Decodes `bytes` the way the driver's cursor hands out a document.
    fn decode(bytes: &[u8]) -> Result<Self::Doc, String>;

    /// Runs `{hello: true}` on `admin`, discarding the reply.
    fn hello(&self) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Drops the `perftest` database.
    fn drop_database(&self) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Drops the `corpus` collection and creates it again, empty.
    fn reset_collection(&self) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Finds the document whose `_id` is `id`; an error when there is none.
    fn find_one_by_id(&self, id: i32) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Inserts one document (the driver adds the `_id`).
    fn insert_one(&self, doc: &Self::Doc) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Inserts all of `docs`, ordered.
    fn insert_many(
        &self,
        docs: &[Self::Doc],
    ) -> impl Future<Output = Result<(), String>> + MaybeSend;
    /// Finds every document of the collection and returns how many came back.
    fn find_all(&self) -> impl Future<Output = Result<usize, String>> + MaybeSend;
    /// Closes the client.
    fn close(self) -> impl Future<Output = ()> + MaybeSend;
    /// The connections the client's pools hold open now (created minus closed, as
    /// their CMAP events count them; monitoring connections are not in pools).
    fn open_connections(&self) -> usize;
}

/// Counts a client's pooled connections from its CMAP events: the parallel rows report
/// it, because how many connections a driver opens for the same tasks changes how a
/// server schedules them.
#[derive(Clone, Default)]
pub struct ConnectionCount(Arc<AtomicIsize>);

impl ConnectionCount {
    fn opened(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn closed(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed).max(0) as usize
    }
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// anymongo on its native runtime.
pub struct Anymongo {
    client: anymongo::Client,
    corpus: anymongo::Collection<anymongo::bson::Document>,
    connections: ConnectionCount,
}

impl Driver for Anymongo {
    const NAME: &'static str = "anymongo";
    type Doc = anymongo::bson::Document;

    async fn connect(uri: &str) -> Result<Self, String> {
        use anymongo::event::cmap::CmapEvent;
        let connections = ConnectionCount::default();
        let count = connections.clone();
        let mut options = anymongo::options::ClientOptions::parse(uri)
            .await
            .map_err(text)?;
        options.cmap_event_handler = Some(anymongo::event::EventHandler::callback(
            move |event: CmapEvent| match event {
                CmapEvent::ConnectionCreated(_) => count.opened(),
                CmapEvent::ConnectionClosed(_) => count.closed(),
                _ => {}
            },
        ));
        let client = anymongo::Client::with_options(options).map_err(text)?;
        let corpus = client.database(DATABASE).collection(COLLECTION);
        Ok(Anymongo {
            client,
            corpus,
            connections,
        })
    }

    fn parse(json: &str) -> Result<Self::Doc, String> {
        use anymongo::bson::Bson;
        let value: serde_json::Value = serde_json::from_str(json).map_err(text)?;
        match Bson::try_from(value).map_err(text)? {
            Bson::Document(doc) => Ok(doc),
            other => Err(format!("not a document: {other}")),
        }
    }

    fn with_id(doc: &Self::Doc, id: i32) -> Self::Doc {
        let mut with_id = anymongo::bson::doc! { "_id": id };
        with_id.extend(doc.clone());
        with_id
    }

    // The serializer of the insert path (`crud::write::with_id`): serde straight to raw
    // bytes, by `anymongo::bson_serializer` (the bson crate's bytes, written without
    // its extended-JSON detours). The insert then finds the `_id` (or puts a new one
    // first): that, like the official driver's own `_id` lookup, is in the insert rows,
    // not here.
    fn encode(doc: &Self::Doc) -> Result<Vec<u8>, String> {
        anymongo::bson_serializer::serialize_to_vec(doc).map_err(text)
    }

    // The cursor path for a `Document` (`cursor::deserialize`): built straight from the
    // raw bytes of the batch by `anymongo::bson_deserializer::document_from_slice` (the
    // bson crate's values, read in one pass with the nesting limit, without serde).
    fn decode(bytes: &[u8]) -> Result<Self::Doc, String> {
        anymongo::bson_deserializer::document_from_slice(bytes).map_err(text)
    }

    async fn hello(&self) -> Result<(), String> {
        let command = anymongo::bson::doc! { "hello": true };
        self.client
            .database("admin")
            .run_command(command)
            .await
            .map(drop)
            .map_err(text)
    }

    async fn drop_database(&self) -> Result<(), String> {
        self.client.database(DATABASE).drop().await.map_err(text)
    }

    async fn reset_collection(&self) -> Result<(), String> {
        self.corpus.drop().await.map_err(text)?;
        let db = self.client.database(DATABASE);
        db.create_collection(COLLECTION).await.map_err(text)
    }

    async fn find_one_by_id(&self, id: i32) -> Result<(), String> {
        let filter = anymongo::bson::doc! { "_id": id };
        match self.corpus.find_one(filter).await.map_err(text)? {
            Some(_) => Ok(()),
            None => Err(format!("no document with _id {id}")),
        }
    }

    async fn insert_one(&self, doc: &Self::Doc) -> Result<(), String> {
        self.corpus.insert_one(doc).await.map(drop).map_err(text)
    }

    async fn insert_many(&self, docs: &[Self::Doc]) -> Result<(), String> {
        self.corpus.insert_many(docs).await.map(drop).map_err(text)
    }

    async fn find_all(&self) -> Result<usize, String> {
        let filter = anymongo::bson::Document::new();
        let mut cursor = self.corpus.find(filter).await.map_err(text)?;
        let mut count = 0;
        while cursor.try_next().await.map_err(text)?.is_some() {
            count += 1;
        }
        Ok(count)
    }

    async fn close(self) {
        self.client.shutdown().await;
    }

    fn open_connections(&self) -> usize {
        self.connections.get()
    }
}

/// The official driver, default features.
#[cfg(not(target_os = "wasi"))]
pub struct Official {
    client: mongodb::Client,
    corpus: mongodb::Collection<mongodb::bson::Document>,
    connections: ConnectionCount,
}

#[cfg(not(target_os = "wasi"))]
impl Driver for Official {
    const NAME: &'static str = "official";
    type Doc = mongodb::bson::Document;

    async fn connect(uri: &str) -> Result<Self, String> {
        use mongodb::event::cmap::CmapEvent;
        let connections = ConnectionCount::default();
        let count = connections.clone();
        let mut options = mongodb::options::ClientOptions::parse(uri)
            .await
            .map_err(text)?;
        options.cmap_event_handler = Some(mongodb::event::EventHandler::callback(
            move |event: CmapEvent| match event {
                CmapEvent::ConnectionCreated(_) => count.opened(),
                CmapEvent::ConnectionClosed(_) => count.closed(),
                _ => {}
            },
        ));
        let client = mongodb::Client::with_options(options).map_err(text)?;
        let corpus = client.database(DATABASE).collection(COLLECTION);
        Ok(Official {
            client,
            corpus,
            connections,
        })
    }

    fn parse(json: &str) -> Result<Self::Doc, String> {
        use mongodb::bson::Bson;
        let value: serde_json::Value = serde_json::from_str(json).map_err(text)?;
        match Bson::try_from(value).map_err(text)? {
            Bson::Document(doc) => Ok(doc),
            other => Err(format!("not a document: {other}")),
        }
    }

    fn with_id(doc: &Self::Doc, id: i32) -> Self::Doc {
        let mut with_id = mongodb::bson::doc! { "_id": id };
        with_id.extend(doc.clone());
        with_id
    }

    // The insert path (`insert_one`, `insert_many`): serde straight to raw bytes.
    fn encode(doc: &Self::Doc) -> Result<Vec<u8>, String> {
        let raw = mongodb::bson::to_raw_document_buf(doc).map_err(text)?;
        Ok(raw.into_bytes())
    }

    // The cursor path (`deserialize_current`): serde straight from the raw bytes.
    fn decode(bytes: &[u8]) -> Result<Self::Doc, String> {
        mongodb::bson::from_slice(bytes).map_err(text)
    }

    async fn hello(&self) -> Result<(), String> {
        let command = mongodb::bson::doc! { "hello": true };
        self.client
            .database("admin")
            .run_command(command)
            .await
            .map(drop)
            .map_err(text)
    }

    async fn drop_database(&self) -> Result<(), String> {
        self.client.database(DATABASE).drop().await.map_err(text)
    }

    async fn reset_collection(&self) -> Result<(), String> {
        self.corpus.drop().await.map_err(text)?;
        let db = self.client.database(DATABASE);
        db.create_collection(COLLECTION).await.map_err(text)
    }

    async fn find_one_by_id(&self, id: i32) -> Result<(), String> {
        let filter = mongodb::bson::doc! { "_id": id };
        match self.corpus.find_one(filter).await.map_err(text)? {
            Some(_) => Ok(()),
            None => Err(format!("no document with _id {id}")),
        }
    }

    async fn insert_one(&self, doc: &Self::Doc) -> Result<(), String> {
        self.corpus.insert_one(doc).await.map(drop).map_err(text)
    }

    async fn insert_many(&self, docs: &[Self::Doc]) -> Result<(), String> {
        self.corpus.insert_many(docs).await.map(drop).map_err(text)
    }

    async fn find_all(&self) -> Result<usize, String> {
        let filter = mongodb::bson::Document::new();
        let mut cursor = self.corpus.find(filter).await.map_err(text)?;
        let mut count = 0;
        while cursor.try_next().await.map_err(text)?.is_some() {
            count += 1;
        }
        Ok(count)
    }

    async fn close(self) {
        self.client.shutdown().await;
    }

    fn open_connections(&self) -> usize {
        self.connections.get()
    }
}
