//! The Worker's entry point and its Durable Object (see the crate's documentation).

use anymongo::bson::{doc, oid::ObjectId, Bson, Document};
use anymongo::{Client, Collection, ErrorKind};
use futures::lock::Mutex;
use serde_json::{json, Value};
use worker::{
    durable_object, event, Context, DurableObject, Env, Headers, Method, Request, Response, Result,
    State,
};

/// Every request goes to the one Durable Object `items`, which holds the client. One
/// object for the whole Worker: it runs near where it was first used; to keep one per
/// region instead, name it after the request's colo (`request.cf().colo()`).
#[event(fetch)]
async fn fetch(request: Request, env: Env, _context: Context) -> Result<Response> {
    env.durable_object("ITEMS")?
        .get_by_name("items")?
        .fetch_with_request(request)
        .await
}

/// The Durable Object holding the client.
#[durable_object]
pub struct Items {
    env: Env,
    /// The client, made by the first request and shared by the later ones. A lock
    /// rather than a cell: a Durable Object takes a request while another waits on I/O,
    /// and the second must wait for the first one's client, not make (and connect) its
    /// own.
    client: Mutex<Option<Client>>,
}

impl DurableObject for Items {
    fn new(_state: State, env: Env) -> Self {
        Items {
            env,
            client: Mutex::new(None),
        }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        match self.route(request).await {
            Ok(response) => Ok(response),
            Err(Failure(status, message)) => json(status, &json!({ "error": message })),
        }
    }
}

/// A failed request: its status and message.
struct Failure(u16, String);

impl From<worker::Error> for Failure {
    fn from(error: worker::Error) -> Failure {
        Failure(500, error.to_string())
    }
}

/// The driver's errors as statuses: an unreachable deployment is the upstream's 503.
impl From<anymongo::Error> for Failure {
    fn from(error: anymongo::Error) -> Failure {
        let status = match *error.kind {
            ErrorKind::ServerSelection { .. } | ErrorKind::WaitQueueTimeout { .. } => 503,
            _ if error.is_network_error() => 503,
            _ if error.code() == Some(11000) => 409,
            _ => 500,
        };
        Failure(status, error.to_string())
    }
}

impl Items {
    /// The text binding `name` (a secret or a variable), if set.
    fn setting(&self, name: &str) -> Option<String> {
        let value = match self.env.secret(name) {
            Ok(secret) => secret.to_string(),
            Err(_) => self.env.var(name).ok()?.to_string(),
        };
        (!value.is_empty()).then_some(value)
    }

    /// The items collection, through the client (made on first use).
    async fn items(&self) -> std::result::Result<Collection<Document>, Failure> {
        let mut client = self.client.lock().await;
        if client.is_none() {
            let uri = self.setting("MONGODB_URI").ok_or_else(|| {
                Failure(
                    500,
                    "MONGODB_URI is not set: `wrangler secret put MONGODB_URI`, or a [vars] entry"
                        .into(),
                )
            })?;
            let dns = self
                .setting("DNS_OVER_HTTPS")
                .unwrap_or_else(|| anymongo_workers::CLOUDFLARE_DNS.into());
            *client = Some(anymongo_workers::connect(&uri, &dns).await?);
        }
        let client = client.as_ref().expect("made above");
        let database = client
            .default_database()
            .unwrap_or_else(|| client.database("edge"));
        Ok(database.collection("items"))
    }

    async fn route(&self, mut request: Request) -> std::result::Result<Response, Failure> {
        let path = request.path();
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        match (segments.as_slice(), request.method()) {
            (["items"], Method::Post) => {
                let document = read_object(&request.text().await?)?;
                let inserted = self.items().await?.insert_one(document).await?;
                let id = inserted.inserted_id;
                let mut response = json(201, &json!({ "insertedId": extended_json(&id) }))?;
                let location = match &id {
                    Bson::String(text) => Some(text.clone()),
                    Bson::ObjectId(oid) => Some(oid.to_hex()),
                    _ => None,
                };
                if let Some(location) = location {
                    response
                        .headers_mut()
                        .set("location", &format!("/items/{}", encode(&location)))?;
                }
                Ok(response)
            }
            (["items", encoded], Method::Get) => {
                let id = decode(encoded).ok_or_else(|| {
                    Failure(
                        400,
                        format!("the id {encoded} is not percent-encoded correctly"),
                    )
                })?;
                // 24 hex digits are an ObjectId, or a string _id that looks like one.
                let filter = match ObjectId::parse_str(&id) {
                    Ok(oid) => doc! { "_id": { "$in": [oid, id.as_str()] } },
                    Err(_) => doc! { "_id": id.as_str() },
                };
                match self.items().await?.find_one(filter).await? {
                    Some(item) => Ok(json(200, &extended_json(&Bson::Document(item)))?),
                    None => Err(Failure(404, format!("no item with _id {id}"))),
                }
            }
            (["items"], _) => Err(Failure(405, "/items takes POST".into())),
            (["items", _], _) => Err(Failure(405, "/items/:id takes GET".into())),
            _ => Err(Failure(
                404,
                format!("no route {path}: use GET /items/:id or POST /items"),
            )),
        }
    }
}

/// A JSON response.
fn json(status: u16, body: &Value) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::ok(body.to_string())?
        .with_status(status)
        .with_headers(headers))
}

/// `value` as relaxed Extended JSON.
fn extended_json(value: &Bson) -> Value {
    value.clone().into_relaxed_extjson()
}

/// The body as a document: a JSON object, Extended JSON accepted.
fn read_object(body: &str) -> std::result::Result<Document, Failure> {
    let value: Value = serde_json::from_str(body)
        .map_err(|error| Failure(400, format!("the body is not JSON: {error}")))?;
    match Bson::try_from(value) {
        Ok(Bson::Document(document)) => Ok(document),
        Ok(_) => Err(Failure(400, "the body must be a JSON object".into())),
        Err(error) => Err(Failure(
            400,
            format!("the body is not Extended JSON: {error}"),
        )),
    }
}

/// Percent-decodes a path segment; `None` when it is not valid (or not UTF-8).
fn decode(segment: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(segment.len());
    let mut rest = segment.bytes();
    while let Some(byte) = rest.next() {
        bytes.push(match byte {
            b'%' => {
                let high = char::from(rest.next()?).to_digit(16)?;
                let low = char::from(rest.next()?).to_digit(16)?;
                (high * 16 + low) as u8
            }
            byte => byte,
        });
    }
    String::from_utf8(bytes).ok()
}

/// Percent-encodes a path segment (what `encodeURIComponent` leaves is kept).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'!' | b'~' | b'*' => {
                char::from(byte).to_string()
            }
            b'\'' | b'(' | b')' => char::from(byte).to_string(),
            byte => format!("%{byte:02X}"),
        })
        .collect()
}
