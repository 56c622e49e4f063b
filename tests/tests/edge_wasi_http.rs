//! The wasi:http edge function template (`templates/wasi-http-handler`) served by
//! `wasmtime serve` on loopback, as docs/guide/edge.md says to run it, against SecantusDB:
//! what it answers over HTTP, and what it wrote, read back natively.

use std::path::Path;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, oid::ObjectId, Document};
use anymongo_tests::wasmtime_serve::{Distant, Served, BOUND};
use anymongo_tests::{harness, server};
use serde_json::{json, Value};

/// The database of these tests (the handler takes the connection string's).
const DATABASE: &str = "edge_wasi_http";

/// The handler served with `MONGODB_URI=uri`, and `dir` (where the connection
/// string's `tlsCAFile` is) at the same path.
fn serve(uri: &str, dir: Option<&Path>) -> Served {
    Served::start(
        "wasi-http-handler",
        "wasi-http-handler",
        &[("MONGODB_URI", uri)],
        dir,
    )
}

/// What [`exchange`] got back: the status, the JSON body and the `Location`.
struct Reply {
    status: u16,
    body: Value,
    location: Option<String>,
}

/// Sends one request with a JSON body; every reply must be JSON.
async fn exchange(served: &Served, method: &str, path: &str, body: &str) -> Reply {
    let reply = served
        .exchange(
            method,
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .await;
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{}",
        reply.body
    );
    Reply {
        status: reply.status,
        body: serde_json::from_str(&reply.body)
            .unwrap_or_else(|_| panic!("not JSON: {:?}", reply.body)),
        location: reply.header("location").map(str::to_owned),
    }
}

/// [`exchange`]'s status and body.
async fn request(served: &Served, method: &str, path: &str, body: &str) -> (u16, Value) {
    let reply = exchange(served, method, path, body).await;
    (reply.status, reply.body)
}

/// The shared server's connection string, naming [`DATABASE`].
fn uri() -> String {
    format!("{}{DATABASE}", server::shared().uri())
}

/// The error message of a failure's body `{"error": "..."}`.
fn error_of(body: &Value) -> &str {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {body}"))
}

#[tokio::test]
async fn post_then_get_round_trips_an_item_through_mongodb() {
    let served = serve(&uri(), None);
    let created = exchange(
        &served,
        "POST",
        "/items",
        r#"{"name":"tea","qty":2,"tags":["green"]}"#,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["insertedId"]["$oid"]
        .as_str()
        .unwrap_or_else(|| panic!("no ObjectId in {}", created.body))
        .to_owned();
    assert_eq!(created.location, Some(format!("/items/{id}")));

    let (status, item) = request(&served, "GET", &format!("/items/{id}"), "").await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(
        item,
        json!({ "_id": { "$oid": id }, "name": "tea", "qty": 2, "tags": ["green"] })
    );

    // It is really on the server, fields in the order they were sent.
    let client = anymongo::Client::with_uri_str(&uri()).await.unwrap();
    let stored = harness::within(
        BOUND,
        client
            .database(DATABASE)
            .collection::<Document>("items")
            .find_one(doc! { "_id": ObjectId::parse_str(&id).unwrap() }),
    )
    .await
    .unwrap()
    .expect("the item is stored");
    let keys: Vec<&str> = stored.keys().map(String::as_str).collect();
    assert_eq!(keys, ["_id", "name", "qty", "tags"]);

    // A string `_id` of the client's choosing: found by it, and not inserted twice.
    let sku = format!("sku-{}", ObjectId::new());
    let item = format!(r#"{{"_id":"{sku}","name":"cup"}}"#);
    let (status, created) = request(&served, "POST", "/items", &item).await;
    assert_eq!((status, &created["insertedId"]), (201, &json!(sku)));
    let (status, found) = request(&served, "GET", &format!("/items/{sku}"), "").await;
    assert_eq!((status, found), (200, json!({ "_id": sku, "name": "cup" })));
    let (status, duplicate) = request(&served, "POST", "/items", &item).await;
    assert_eq!(status, 409, "{duplicate}");
    assert!(error_of(&duplicate).contains("exists"), "{duplicate}");

    // An `_id` with a space and a slash: its Location is percent-encoded, and leads to it.
    let odd = format!("a b/{}", ObjectId::new());
    let created = exchange(
        &served,
        "POST",
        "/items",
        &json!({ "_id": odd }).to_string(),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let location = created.location.expect("a Location");
    assert!(location.starts_with("/items/a%20b%2F"), "{location}");
    let (status, found) = request(&served, "GET", &location, "").await;
    assert_eq!((status, found), (200, json!({ "_id": odd })));
}

#[tokio::test]
async fn missing_items_unknown_routes_and_bad_input_are_json_errors() {
    let served = serve(&uri(), None);
    let missing = ObjectId::new().to_hex();
    let (status, body) = request(&served, "GET", &format!("/items/{missing}"), "").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(error_of(&body), format!("no item with _id {missing}"));

    let (status, body) = request(&served, "GET", "/elsewhere", "").await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = request(&served, "DELETE", "/items/1", "").await;
    assert_eq!(status, 405, "{body}");
    let (status, body) = request(&served, "GET", "/items/%FF", "").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body), "the id %FF is not percent-encoded UTF-8");

    for (input, says) in [
        ("{not json", "the body is not JSON"),
        ("", "the body is not JSON"),
        ("[1, 2]", "the body must be a JSON object"),
        ("\u{feff}{}", "the body is not JSON"),
        (
            r#"{"_id": {"$oid": "not hex"}}"#,
            "the body is not a document",
        ),
    ] {
        let (status, body) = request(&served, "POST", "/items", input).await;
        assert_eq!(status, 400, "{input:?}: {body}");
        assert!(error_of(&body).starts_with(says), "{input:?}: {body}");
    }
}

#[tokio::test]
async fn a_server_that_is_down_is_a_503_within_server_selection_timeout() {
    // A loopback port nothing listens on any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let timeout = Duration::from_millis(1000);
    let served = serve(
        &format!(
            "mongodb://{closed}/?serverSelectionTimeoutMS={}&connectTimeoutMS=500",
            timeout.as_millis()
        ),
        None,
    );
    let started = Instant::now();
    let (status, body) = request(&served, "GET", "/items/anything", "").await;
    let took = started.elapsed();
    assert_eq!(status, 503, "{body}");
    let message = error_of(&body);
    assert!(
        message.starts_with("no MongoDB server reachable within serverSelectionTimeoutMS"),
        "{message}"
    );
    assert!(message.contains(&closed.to_string()), "{message}");
    // The margin covers instantiating the component for the request.
    assert!(
        took < timeout + Duration::from_secs(2),
        "the 503 took {took:?}"
    );
}

#[tokio::test]
async fn a_handler_without_a_connection_string_says_so() {
    // An empty `--env MONGODB_URI=` counts as not set.
    let served = serve("", None);
    let (status, body) = request(&served, "GET", "/items/anything", "").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        error_of(&body).starts_with("MONGODB_URI is not set"),
        "{body}"
    );
}

/// A request's round trips to a distant server (issue 24): SecantusDB with TLS and a
/// SCRAM-SHA-256 user behind the latency proxy. Every request runs in a fresh instance,
/// so each is a cold client's: its first operation's connection opens at once, instead
/// of a scan's (a handler has no background tasks), and its handshake makes the server
/// known — TCP, TLS 1.3, hello with speculative SCRAM, saslContinue, find: 5 round
/// trips, on the one connection the request opens.
#[tokio::test]
async fn a_request_reaches_a_distant_server_in_five_round_trips() {
    let distant = Distant::start(DATABASE).await;
    let seeded = anymongo::Client::with_uri_str(&distant.direct_uri)
        .await
        .unwrap();
    harness::within(BOUND, async {
        seeded
            .database(DATABASE)
            .collection::<Document>("items")
            .insert_one(doc! { "_id": "far-1", "name": "far" })
            .await
            .unwrap()
    })
    .await;
    let served = serve(&distant.uri, Some(&distant.dir));
    let measured = distant
        .measure(request(&served, "GET", "/items/far-1", ""))
        .await;
    let (status, item) = measured.outcome;
    assert_eq!((status, &item["name"]), (200, &json!("far")), "{item}");
    assert_eq!(measured.round_trips, 5, "flights:\n{}", measured.log);
    assert_eq!(measured.connections, 1, "flights:\n{}", measured.log);
}
