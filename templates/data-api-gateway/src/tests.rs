//! The core without I/O: every refusal answers before the database is asked (the
//! client factory panics if called), and an unreachable database is a 503 within the
//! timeout that names neither host nor credentials.

use std::time::{Duration, Instant};

use anymongo::bson::{doc, oid::ObjectId, Binary, DateTime};
use serde_json::{json, Value};

use super::*;

const FULL: &str = "full-access-key";
const READER: &str = "orders-reader-key";

fn gateway() -> Gateway {
    let config = json!({
        "apiKeys": [
            { "key": FULL },
            { "key": READER, "allow": [
                { "database": "shop", "collection": "orders", "actions": ["find", "findOne", "aggregate"] },
                { "database": "shop", "collection": "prices", "actions": ["aggregate"] }
            ] }
        ],
        "maxBodyBytes": 256,
        "timeoutMS": 500
    });
    Gateway::new(Config::from_json(&config.to_string()).unwrap())
}

/// The client factory of requests that must not reach the database.
async fn no_database() -> anymongo::Result<Client> {
    panic!("the request reached the database")
}

fn request(key: Option<&str>, action: &str, body: &str) -> Request {
    let mut headers = vec![("Content-Type".to_owned(), JSON.to_owned())];
    if let Some(key) = key {
        headers.push(("apiKey".to_owned(), key.to_owned()));
    }
    Request {
        method: "POST".into(),
        path: format!("/app/data-abcde/endpoint/data/v1/action/{action}"),
        headers,
        body: body.as_bytes().to_vec(),
    }
}

fn on_orders(fields: Value) -> String {
    let mut body = json!({ "dataSource": "Cluster0", "database": "shop", "collection": "orders" });
    body.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    body.to_string()
}

/// Answers `request` without a database: its status and `error_code`.
async fn refused(request: &Request) -> (u16, String) {
    let response = gateway().handle(request, no_database).await;
    assert_eq!(response.content_type, JSON);
    let body = response.json();
    assert!(body["error"].is_string(), "{body}");
    (
        response.status,
        body["error_code"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_request_without_an_accepted_key_is_401() {
    let body = on_orders(json!({}));
    for key in [
        None,
        Some(""),
        Some("full-access-ke"),
        Some("full-access-keyy"),
        Some("FULL-ACCESS-KEY"),
    ] {
        assert_eq!(
            refused(&request(key, "findOne", &body)).await,
            (401, "InvalidSession".to_owned()),
            "{key:?}"
        );
    }
    // Before anything else is looked at.
    assert_eq!(refused(&request(None, "nothing", "{")).await.0, 401);
    // The spelling of the Data API's curl examples is accepted too: past the key, to
    // the unknown action.
    let mut spelled = request(None, "nothing", &body);
    spelled.headers.push(("api-key".into(), FULL.into()));
    assert_eq!(refused(&spelled).await.0, 404);
}

#[tokio::test]
async fn an_unknown_action_or_path_is_404_and_a_get_405() {
    let body = on_orders(json!({}));
    for path in [
        "/action/findAll",
        "/action/",
        "/v1/findOne",
        "/",
        "/action/findOne/x",
    ] {
        let mut request = request(Some(FULL), "findOne", &body);
        request.path = path.into();
        assert_eq!(
            refused(&request).await,
            (404, "ActionNotFound".to_owned()),
            "{path}"
        );
    }
    let mut get = request(Some(FULL), "findOne", &body);
    get.method = "GET".into();
    assert_eq!(refused(&get).await, (405, "MethodNotAllowed".to_owned()));
    // A base URL of any shape, with or without a trailing slash.
    let mut short = request(Some(FULL), "insertOne", r#"{"dataSource": "x"}"#);
    short.path = "/action/insertOne/".into();
    assert_eq!(refused(&short).await.0, 400);
}

#[tokio::test]
async fn a_malformed_request_is_400() {
    for (action, body) in [
        ("findOne", "{not json".to_owned()),
        ("findOne", String::new()),
        ("findOne", "[1]".to_owned()),
        (
            "findOne",
            json!({ "database": "shop", "collection": "orders" }).to_string(),
        ),
        (
            "findOne",
            json!({ "dataSource": "c", "collection": "orders" }).to_string(),
        ),
        (
            "findOne",
            json!({ "dataSource": "c", "database": 5, "collection": "orders" }).to_string(),
        ),
        ("findOne", on_orders(json!({ "limit": 1 }))),
        (
            "find",
            on_orders(json!({ "filter": { "_id": { "$oid": "not hex" } } })),
        ),
        ("insertOne", on_orders(json!({ "documents": [] }))),
    ] {
        assert_eq!(
            refused(&request(Some(FULL), action, &body)).await,
            (400, "InvalidParameter".to_owned()),
            "{action} {body}"
        );
    }
    let mut text = request(Some(FULL), "findOne", &on_orders(json!({})));
    text.headers[0].1 = "text/plain".into();
    assert_eq!(refused(&text).await, (400, "InvalidParameter".to_owned()));
}

#[tokio::test]
async fn what_the_allow_list_does_not_grant_is_403() {
    for (action, fields) in [
        ("deleteOne", json!({})),
        ("insertOne", json!({ "document": {} })),
        (
            "aggregate",
            json!({ "pipeline": [{ "$lookup": { "from": "users", "as": "u", "localField": "a", "foreignField": "b" } }] }),
        ),
        (
            "aggregate",
            json!({ "pipeline": [{ "$facet": { "x": [{ "$unionWith": "users" }] } }] }),
        ),
        (
            "aggregate",
            json!({ "pipeline": [{ "$out": { "db": "other", "coll": "orders" } }] }),
        ),
        (
            "aggregate",
            json!({ "pipeline": [{ "$merge": { "into": { "db": "shop", "coll": "users" } } }] }),
        ),
    ] {
        assert_eq!(
            refused(&request(Some(READER), action, &on_orders(fields.clone()))).await,
            (403, "NoMatchingRuleFound".to_owned()),
            "{action} {fields}"
        );
    }
    let elsewhere = json!({ "dataSource": "c", "database": "shop", "collection": "users" });
    assert_eq!(
        refused(&request(Some(READER), "find", &elsewhere.to_string()))
            .await
            .0,
        403
    );
    // Server-side JavaScript, refused by default, wherever it hides.
    for (action, fields) in [
        ("find", json!({ "filter": { "$where": "true" } })),
        (
            "find",
            json!({ "filter": { "a": { "$elemMatch": { "$where": "1" } } } }),
        ),
        (
            "findOne",
            json!({ "projection": { "x": { "$function": { "body": "f", "args": [], "lang": "js" } } } }),
        ),
        (
            "aggregate",
            json!({ "pipeline": [{ "$group": { "_id": 1, "a": { "$accumulator": {} } } }] }),
        ),
    ] {
        assert_eq!(
            refused(&request(Some(FULL), action, &on_orders(fields.clone()))).await,
            (403, "ServerJavaScriptRefused".to_owned()),
            "{action} {fields}"
        );
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let big = on_orders(json!({ "filter": { "name": "x".repeat(300) } }));
    assert_eq!(
        refused(&request(Some(FULL), "findOne", &big)).await,
        (413, "PayloadTooLarge".to_owned())
    );
    assert_eq!(gateway().body_too_large().status, 413);
}

#[tokio::test]
async fn an_unreachable_database_is_503_within_the_timeout_and_names_no_secret() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let uri = format!("mongodb://gatekeeper:hunter2@{closed}/?authSource=admin");
    let gateway = gateway();
    let started = Instant::now();
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        gateway.handle(
            &request(Some(FULL), "findOne", &on_orders(json!({}))),
            || gateway.connect(&uri),
        ),
    )
    .await
    .expect("an answer within the bound");
    let took = started.elapsed();
    assert_eq!(response.status, 503, "{}", response.body);
    assert_eq!(response.json()["error_code"], "ServiceUnavailable");
    for secret in ["gatekeeper", "hunter2", &closed.port().to_string()] {
        assert!(!response.body.contains(secret), "{}", response.body);
    }
    // timeoutMS is 500; the margin is for a loaded machine.
    assert!(took < Duration::from_secs(5), "the 503 took {took:?}");
}

#[tokio::test]
async fn input_the_driver_refuses_is_400_and_a_bad_connection_string_500() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let uri = format!("mongodb://{closed}/");
    let gateway = gateway();
    // Refused before any server is selected: the closed port is never reached.
    for (action, fields) in [
        ("updateOne", json!({ "filter": {}, "update": { "qty": 1 } })),
        (
            "replaceOne",
            json!({ "filter": {}, "replacement": { "$set": { "qty": 1 } } }),
        ),
    ] {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            gateway.handle(&request(Some(FULL), action, &on_orders(fields)), || {
                gateway.connect(&uri)
            }),
        )
        .await
        .expect("an answer within the bound");
        assert_eq!(response.status, 400, "{action}: {}", response.body);
        assert_eq!(response.json()["error_code"], "InvalidParameter");
    }
    let secret = "mongodb://gatekeeper:hunter2@/?authSource=admin";
    let response = gateway
        .handle(
            &request(Some(FULL), "findOne", &on_orders(json!({}))),
            || gateway.connect(secret),
        )
        .await;
    assert_eq!(response.status, 500, "{}", response.body);
    assert!(!response.body.contains("hunter2"), "{}", response.body);
}

#[test]
fn responses_are_relaxed_or_canonical_extended_json_by_accept_or_content_type() {
    let id = ObjectId::new();
    let body = doc! {
        "document": {
            "_id": id, "n": 5_i64, "small": 3, "x": 1.5,
            "at": DateTime::from_millis(0),
            "bin": Binary { subtype: anymongo::bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
        }
    };
    let relaxed = render(200, body.clone(), JSON);
    assert_eq!(relaxed.content_type, JSON);
    assert_eq!(
        relaxed.json()["document"],
        json!({
            "_id": { "$oid": id.to_hex() }, "n": 5, "small": 3, "x": 1.5,
            "at": { "$date": "1970-01-01T00:00:00Z" },
            "bin": { "$binary": { "base64": "AQI=", "subType": "00" } },
        })
    );
    let canonical = render(200, body, EJSON);
    assert_eq!(canonical.content_type, EJSON);
    assert_eq!(
        canonical.json()["document"]["n"],
        json!({ "$numberLong": "5" })
    );
    assert_eq!(
        canonical.json()["document"]["small"],
        json!({ "$numberInt": "3" })
    );
    assert_eq!(
        canonical.json()["document"]["at"],
        json!({ "$date": { "$numberLong": "0" } })
    );

    let with = |content_type: Option<&str>, accept: Option<&str>| {
        let mut request = Request::default();
        request
            .headers
            .extend(content_type.map(|value| ("content-type".to_owned(), value.to_owned())));
        request
            .headers
            .extend(accept.map(|value| ("Accept".to_owned(), value.to_owned())));
        response_format(&request).ok()
    };
    assert_eq!(with(None, None), Some(JSON));
    assert_eq!(with(Some("application/ejson"), None), Some(EJSON));
    assert_eq!(
        with(
            Some("application/json; charset=utf-8"),
            Some("application/ejson")
        ),
        Some(EJSON)
    );
    assert_eq!(with(Some("application/ejson"), Some("*/*")), Some(EJSON));
    assert_eq!(
        with(
            Some("application/ejson"),
            Some("text/html, application/json")
        ),
        Some(JSON)
    );
    assert_eq!(with(Some("text/plain"), None), None);
}
