//! What the module exports to its JavaScript glue (`js/client.js`): a client and a
//! cursor handle that move BSON bytes across the boundary. Users see the glue's
//! Node-driver-shaped classes, not these.
//!
//! Every failure rejects with a `Uint8Array`: the BSON of [`ops::error_document`],
//! which the glue turns into an error class.

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::Duration;

use anymongo::bson::{Document, RawDocumentBuf};
use anymongo::{Client, Cursor, Error};
use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::{host, ops};

/// The rejection value of an error.
fn reject(error: &Error) -> JsValue {
    reject_document(ops::error_document(error))
}

/// The rejection value of an error opening a client: a connection string the core
/// refuses (or whose SRV and TXT records it refuses) is the Node driver's
/// MongoParseError, where an invalid argument elsewhere is a MongoInvalidArgumentError.
fn reject_connection_string(error: &Error) -> JsValue {
    let mut document = ops::error_document(error);
    if matches!(error.kind(), anymongo::ErrorKind::InvalidArgument { .. }) {
        document.insert("name", "MongoParseError");
    }
    reject_document(document)
}

fn reject_document(document: Document) -> JsValue {
    match anymongo::bson::serialize_to_vec(&document) {
        Ok(document) => bytes(&document),
        // Only a document over 2 GiB fails to serialize; say so rather than panic.
        Err(error) => JsValue::from_str(&format!("cannot serialize the reply: {error}")),
    }
}

/// BSON as a `Uint8Array` (a copy out of the module's memory).
fn bytes(bson: &[u8]) -> JsValue {
    Uint8Array::from(bson).into()
}

/// The arguments the glue serialized, kept as BSON: the documents to insert go to the
/// server as these bytes. Owned, as the operation outlives the call.
fn parse(args: Vec<u8>) -> Result<RawDocumentBuf, Error> {
    RawDocumentBuf::from_bytes(args)
        .map_err(|error| Error::invalid_argument(format!("malformed arguments: {error}")))
}

fn closed() -> Error {
    Error::new(anymongo::ErrorKind::PoolClosed {
        address: "the client was closed".into(),
    })
}

type CursorCell = RefCell<Option<Cursor<Document>>>;

/// A connected client (`NativeClient.open`).
#[wasm_bindgen]
pub struct NativeClient {
    client: RefCell<Option<Client>>,
    /// The cursors opened, so that `close` can kill those still open: a live cursor
    /// holds the client, and with it the connections, alive.
    cursors: RefCell<Vec<Weak<CursorCell>>>,
}

#[wasm_bindgen]
impl NativeClient {
    /// Opens a client for `uri` whose sockets come from `transport`, and checks that
    /// the deployment answers and accepts the credential within `timeout_ms` when given
    /// (the `timeoutMS` of the operation that connects), else within the client's own
    /// `timeoutMS`, if any: server selection, then a connection checked out, whose
    /// handshake authenticates ([`Client::hello`]). No command is sent (the official
    /// Node.js driver sends a `ping` when there are credentials): the connection serves
    /// the first operation, so connecting costs no round trip of its own.
    pub async fn open(
        uri: String,
        transport: JsValue,
        background: bool,
        platform: String,
        timeout_ms: Option<f64>,
    ) -> Result<NativeClient, JsValue> {
        let runtime = host::runtime(transport, background, platform);
        let client = Client::connect(&uri, runtime)
            .await
            .map_err(|error| reject_connection_string(&error))?;
        let check = match timeout_ms.and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok()) {
            Some(timeout) => client.with_timeout(timeout),
            None => client.clone(),
        };
        check.hello().await.map_err(|error| reject(&error))?;
        Ok(NativeClient {
            client: RefCell::new(Some(client)),
            cursors: RefCell::new(Vec::new()),
        })
    }

    fn client(&self) -> Result<Client, Error> {
        self.client.borrow().clone().ok_or_else(closed)
    }

    /// Runs operation `op` ([`ops::run`]); resolves to the BSON of its result.
    pub fn run(&self, op: String, database: String, collection: String, args: Vec<u8>) -> Promise {
        let prepared = self.client().and_then(|client| Ok((client, parse(args)?)));
        future_to_promise(async move {
            let (client, args) = prepared.map_err(|error| reject(&error))?;
            let result = ops::run(&client, &op, &database, &collection, &args)
                .await
                .map_err(|error| reject(&error))?;
            Ok(bytes(result.as_bytes()))
        })
    }

    /// Opens the cursor of `find` or `aggregate` ([`ops::open_cursor`]); resolves to a
    /// [`NativeCursor`].
    pub fn cursor(
        &self,
        op: String,
        database: String,
        collection: String,
        args: Vec<u8>,
    ) -> Promise {
        let prepared = self.client().and_then(|client| Ok((client, parse(args)?)));
        let cell: Rc<CursorCell> = Rc::new(RefCell::new(None));
        let mut cursors = self.cursors.borrow_mut();
        cursors.retain(|cursor| cursor.strong_count() > 0);
        cursors.push(Rc::downgrade(&cell));
        future_to_promise(async move {
            let (client, args) = prepared.map_err(|error| reject(&error))?;
            let cursor = ops::open_cursor(&client, &op, &database, &collection, &args)
                .await
                .map_err(|error| reject(&error))?;
            *cell.borrow_mut() = Some(cursor);
            Ok(NativeCursor { cell }.into())
        })
    }

    /// Closes the client: kills its open cursors, then drops it, which stops the
    /// monitors and closes every connection.
    pub fn close(&self) -> Promise {
        let client = self.client.borrow_mut().take();
        let cursors: Vec<_> = self
            .cursors
            .borrow_mut()
            .drain(..)
            .filter_map(|cursor| cursor.upgrade()?.borrow_mut().take())
            .collect();
        future_to_promise(async move {
            for cursor in cursors {
                // Best effort, as the server times idle cursors out anyway.
                let _ = cursor.close().await;
            }
            drop(client);
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// A server cursor, read a batch at a time.
#[wasm_bindgen]
pub struct NativeCursor {
    cell: Rc<CursorCell>,
}

#[wasm_bindgen]
impl NativeCursor {
    /// Resolves to the next documents ([`ops::next_batch`]: their BSON one after the
    /// other), or to `null` once the cursor is exhausted or closed.
    #[wasm_bindgen(js_name = nextBatch)]
    pub fn next_batch(&self) -> Promise {
        let cell = self.cell.clone();
        future_to_promise(async move {
            // Out of the cell while a batch is fetched: no borrow lives across await.
            let Some(mut cursor) = cell.borrow_mut().take() else {
                return Ok(JsValue::NULL);
            };
            let batch = ops::next_batch(&mut cursor).await;
            let batch = batch.map_err(|error| reject(&error))?;
            match batch {
                Some(batch) => {
                    *cell.borrow_mut() = Some(cursor);
                    Ok(bytes(&batch))
                }
                None => Ok(JsValue::NULL),
            }
        })
    }

    /// Kills the server cursor, if still open.
    pub fn close(&self) -> Promise {
        let cursor = self.cell.borrow_mut().take();
        future_to_promise(async move {
            if let Some(cursor) = cursor {
                cursor.close().await.map_err(|error| reject(&error))?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// `clientMetadata(appName?)`: the handshake metadata as text.
#[wasm_bindgen(js_name = clientMetadata)]
pub fn client_metadata(app_name: Option<String>) -> String {
    crate::client_metadata_text(app_name)
}

/// `version()`: the driver's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
