//! The routes, and how their outcomes and failures become HTTP responses.

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Bson, Document};
use anymongo::error::WriteFailure;
use anymongo::{Client, Collection, ErrorKind};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use wstd::http::{Body, HeaderName, HeaderValue, Method, Request, Response, StatusCode};

/// The environment variable holding the connection string.
const URI_VARIABLE: &str = "MONGODB_URI";

/// The database used when the connection string names none.
const DEFAULT_DATABASE: &str = "edge";

/// The collection of the items.
const COLLECTION: &str = "items";

/// The server's error code for a duplicate key.
const DUPLICATE_KEY: i32 = 11000;

/// What a string `_id` escapes in a path segment: all but RFC 3986's unreserved
/// characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Answers one request; never fails, never panics: every failure is a JSON response.
pub async fn handle(mut request: Request<Body>) -> Response<Body> {
    match route(&mut request).await {
        Ok(response) => response,
        Err(failure) => json_response(failure.status, &json!({ "error": failure.message })),
    }
}

/// A request that could not be answered: its status and what the body says.
struct Failure {
    status: StatusCode,
    message: String,
}

impl Failure {
    fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }
}

/// The statuses of the driver's errors: a deployment that cannot be reached is the
/// upstream's unavailability (503), not a fault of the handler (500).
impl From<anymongo::Error> for Failure {
    fn from(error: anymongo::Error) -> Failure {
        match &*error.kind {
            ErrorKind::ServerSelection { .. } => Failure::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no MongoDB server reachable within serverSelectionTimeoutMS: {error}"),
            ),
            ErrorKind::Io(_)
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::WaitQueueTimeout { .. } => Failure::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("MongoDB is unavailable: {error}"),
            ),
            ErrorKind::OperationTimeout { .. } => Failure::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!("MongoDB did not answer in time: {error}"),
            ),
            ErrorKind::Write(WriteFailure::WriteError(write)) if write.code == DUPLICATE_KEY => {
                Failure::new(
                    StatusCode::CONFLICT,
                    format!("an item with this _id exists: {}", write.message),
                )
            }
            _ => Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("MongoDB failed: {error}"),
            ),
        }
    }
}

async fn route(request: &mut Request<Body>) -> Result<Response<Body>, Failure> {
    let path = request.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match (request.method(), segments.as_slice()) {
        (&Method::GET, ["items", id]) if !id.is_empty() => {
            let id = percent_decode_str(id).decode_utf8().map_err(|_| {
                Failure::bad_request(format!("the id {id} is not percent-encoded UTF-8"))
            })?;
            get_item(&id).await
        }
        (&Method::POST, ["items"]) => {
            let item = read_object(request).await?;
            insert_item(item).await
        }
        (_, ["items"]) => Err(Failure::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "/items takes POST",
        )),
        (_, ["items", _]) => Err(Failure::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "/items/:id takes GET",
        )),
        _ => Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!("no route {path}: use GET /items/:id or POST /items"),
        )),
    }
}

async fn get_item(id: &str) -> Result<Response<Body>, Failure> {
    let item = items().await?.find_one(id_filter(id)).await?;
    match item {
        Some(item) => Ok(json_response(
            StatusCode::OK,
            &Bson::Document(item).into_relaxed_extjson(),
        )),
        None => Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!("no item with _id {id}"),
        )),
    }
}

async fn insert_item(item: Document) -> Result<Response<Body>, Failure> {
    let inserted = items().await?.insert_one(&item).await?;
    let location = match &inserted.inserted_id {
        Bson::ObjectId(id) => Some(format!("/items/{id}")),
        Bson::String(id) => Some(format!("/items/{}", utf8_percent_encode(id, SEGMENT))),
        _ => None,
    };
    let mut response = json_response(
        StatusCode::CREATED,
        &json!({ "insertedId": inserted.inserted_id.into_relaxed_extjson() }),
    );
    if let Some(Ok(location)) = location.map(HeaderValue::try_from) {
        response
            .headers_mut()
            .insert(HeaderName::from_static("location"), location);
    }
    Ok(response)
}

/// The items' collection, through a client made for this request: `wasmtime serve`
/// (like most wasi:http hosts) runs each request in a fresh instance, and even in a
/// reused one a socket waits through the wstd reactor that opened it, which lives only
/// as long as its request's `block_on`.
async fn items() -> Result<Collection<Document>, Failure> {
    let uri = std::env::var(URI_VARIABLE)
        .ok()
        .filter(|uri| !uri.is_empty())
        .ok_or_else(|| {
            Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{URI_VARIABLE} is not set: serve with `--env {URI_VARIABLE}=mongodb://…`"),
            )
        })?;
    // Async: `mongodb+srv://` needs its DNS look-ups (through the built-in wasi:sockets
    // transport, as the connections).
    let client = Client::with_uri_str(&uri)
        .await
        .map_err(|error| match &*error.kind {
            ErrorKind::InvalidArgument { .. } => Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{URI_VARIABLE} is not a valid connection string: {error}"),
            ),
            _ => Failure::from(error),
        })?;
    let database = client
        .default_database()
        .unwrap_or_else(|| client.database(DEFAULT_DATABASE));
    Ok(database.collection(COLLECTION))
}

/// The `_id` of `GET /items/:id`: 24 hex digits are an ObjectId, or a string `_id`
/// that happens to look like one.
fn id_filter(id: &str) -> Document {
    match ObjectId::parse_str(id) {
        Ok(object_id) => doc! { "_id": { "$in": [object_id, id] } },
        Err(_) => doc! { "_id": id },
    }
}

/// The request's body as a document: a JSON object, in Extended JSON if it likes.
async fn read_object(request: &mut Request<Body>) -> Result<Document, Failure> {
    let bytes = request
        .body_mut()
        .contents()
        .await
        .map_err(|error| Failure::bad_request(format!("cannot read the body: {error}")))?;
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|error| Failure::bad_request(format!("the body is not JSON: {error}")))?;
    let Value::Object(object) = value else {
        return Err(Failure::bad_request("the body must be a JSON object"));
    };
    Document::try_from(object)
        .map_err(|error| Failure::bad_request(format!("the body is not a document: {error}")))
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        HeaderName::from_static("content-type"),
        HeaderValue::from_static("application/json"),
    );
    response
}
