//! The Data API gateway (`templates/data-api-gateway`) on both its runtimes, as its
//! README says to run them — a wasi:http component under `wasmtime serve`, and a
//! Cloudflare Worker under workerd (`worker/`) — against SecantusDB: every action
//! with JSON and with EJSON bodies, the error statuses, an Extended JSON round trip of
//! the BSON types read back natively, and Data API clients (curl, fetch) that change
//! only their base URL and key. One matrix, run once per runtime (the modules
//! `wasmtime_serve` and `workerd` at the end); then what only one runtime does: the
//! Worker's Durable Object keeps its connection between requests, a `wasmtime serve`
//! request is a cold one.

use std::process::Command;
use std::time::{Duration, Instant};

use anymongo::bson::{doc, Bson, Document};
use anymongo_tests::latency::LatencyProxy;
use anymongo_tests::wasmtime_serve::{Distant, Served, BOUND};
use anymongo_tests::{harness, server, setup};
use serde_json::{json, Value};

/// The database of these tests.
const DATABASE: &str = "data_api_gateway";
/// A key without an allow-list.
const FULL: &str = "full-key-0123456789";
/// A key that may only read [`DATABASE`]`.readable`.
const READER: &str = "reader-key-0123456789";
/// The base URL's path, as the Data API's was.
const BASE: &str = "/app/data-abcde/endpoint/data/v1";
/// Relaxed Extended JSON.
const JSON: &str = "application/json";
/// Canonical Extended JSON.
const EJSON: &str = "application/ejson";

/// The gateway's two runtimes, around the one core.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Runtime {
    /// The wasi:http component, under `wasmtime serve`.
    Wasmtime,
    /// The Cloudflare Worker, under workerd.
    Workerd,
}

/// The gateway served by `runtime` with `uri` and `timeout_ms`.
fn serve(runtime: Runtime, uri: &str, timeout_ms: u64) -> Served {
    match runtime {
        Runtime::Wasmtime => serve_with_dir(uri, timeout_ms, None),
        Runtime::Workerd => Served::gateway_worker(&[
            ("MONGODB_URI", uri),
            ("DATA_API_CONFIG", &config(timeout_ms)),
        ]),
    }
}

/// [`serve`] by `wasmtime serve`, the gateway given `dir` (where the connection
/// string's `tlsCAFile` is) at the same path.
fn serve_with_dir(uri: &str, timeout_ms: u64, dir: Option<&std::path::Path>) -> Served {
    Served::start(
        "data-api-gateway",
        "data-api-gateway",
        &[
            ("MONGODB_URI", uri),
            ("DATA_API_CONFIG", &config(timeout_ms)),
        ],
        dir,
    )
}

/// The gateway's configuration: the two keys, a small body limit, `timeout_ms`.
fn config(timeout_ms: u64) -> String {
    json!({
        "apiKeys": [
            { "key": FULL },
            { "key": READER, "allow": [
                { "database": DATABASE, "collection": "readable", "actions": ["find", "findOne"] }
            ] }
        ],
        "maxBodyBytes": 4096,
        "timeoutMS": timeout_ms,
    })
    .to_string()
}

/// Posts `fields` (with `dataSource`, `database` and `collection`) to `action` with
/// `key`, in `format` (as `Content-Type` and `Accept`); the status and the JSON body,
/// which must come in `format` on success and in JSON on failure.
async fn call(
    served: &Served,
    key: &str,
    format: &str,
    action: &str,
    collection: &str,
    fields: Value,
) -> (u16, Value) {
    let mut body =
        json!({ "dataSource": "Cluster0", "database": DATABASE, "collection": collection });
    body.as_object_mut()
        .unwrap()
        .extend(fields.as_object().expect("fields are an object").clone());
    let reply = served
        .exchange(
            "POST",
            &format!("{BASE}/action/{action}"),
            &[
                ("Content-Type", format),
                ("Accept", format),
                ("apiKey", key),
            ],
            body.to_string().as_bytes(),
        )
        .await;
    let expected = if reply.status < 300 { format } else { JSON };
    assert_eq!(
        reply.header("content-type"),
        Some(expected),
        "{}",
        reply.body
    );
    let value =
        serde_json::from_str(&reply.body).unwrap_or_else(|_| panic!("not JSON: {:?}", reply.body));
    (reply.status, value)
}

/// An Int32 as `format` writes it.
fn int(format: &str, value: i32) -> Value {
    if format == EJSON {
        json!({ "$numberInt": value.to_string() })
    } else {
        json!(value)
    }
}

/// The collection `name` of [`DATABASE`], through a native client.
async fn collection(name: &str) -> anymongo::Collection<Document> {
    let client = anymongo::Client::with_uri_str(server::shared().uri())
        .await
        .unwrap();
    client.database(DATABASE).collection(name)
}

/// Every action, its body and its response, in `format`.
async fn every_action(served: &Served, runtime: Runtime, format: &str) {
    // A collection per runtime and format: the runtimes' tests run at once.
    let name = &format!(
        "actions_{}_{runtime:?}",
        if format == EJSON { "ejson" } else { "json" }
    );
    harness::within(BOUND, collection(name).await.drop())
        .await
        .unwrap();
    let n = |value| int(format, value);
    let call = |action, fields| call(served, FULL, format, action, name, fields);

    let inserted = call(
        "insertOne",
        json!({ "document": { "_id": "a", "qty": n(1), "tag": "x" } }),
    )
    .await;
    assert_eq!(inserted, (201, json!({ "insertedId": "a" })));
    let inserted = call(
        "insertMany",
        json!({ "documents": [{ "_id": "b", "qty": n(2), "tag": "x" }, { "_id": "c", "qty": n(3), "tag": "y" }] }),
    )
    .await;
    assert_eq!(inserted, (201, json!({ "insertedIds": ["b", "c"] })));
    let (status, inserted) = call("insertOne", json!({ "document": { "qty": n(4) } })).await;
    assert_eq!(status, 201);
    assert_eq!(
        inserted["insertedId"]["$oid"].as_str().map(str::len),
        Some(24),
        "{inserted}"
    );

    let found = call(
        "findOne",
        json!({ "filter": { "_id": "b" }, "projection": { "_id": n(0) } }),
    )
    .await;
    assert_eq!(
        found,
        (200, json!({ "document": { "qty": n(2), "tag": "x" } }))
    );
    let found = call("findOne", json!({ "filter": { "_id": "none" } })).await;
    assert_eq!(found, (200, json!({ "document": null })));
    let found = call(
        "find",
        json!({
            "filter": { "tag": { "$in": ["x", "y"] } },
            "projection": { "qty": n(1) },
            "sort": { "qty": n(-1) },
            "skip": n(1),
            "limit": n(1),
        }),
    )
    .await;
    assert_eq!(
        found,
        (200, json!({ "documents": [{ "_id": "b", "qty": n(2) }] }))
    );

    let updated = call(
        "updateOne",
        json!({ "filter": { "_id": "a" }, "update": { "$inc": { "qty": n(10) } } }),
    )
    .await;
    assert_eq!(
        updated,
        (200, json!({ "matchedCount": n(1), "modifiedCount": n(1) }))
    );
    let upserted = call(
        "updateOne",
        json!({ "filter": { "_id": "u" }, "update": { "$set": { "qty": n(5) } }, "upsert": true }),
    )
    .await;
    assert_eq!(
        upserted,
        (
            200,
            json!({ "matchedCount": n(0), "modifiedCount": n(0), "upsertedId": "u" })
        )
    );
    let updated = call(
        "updateMany",
        json!({ "filter": { "tag": "x" }, "update": { "$set": { "seen": true } } }),
    )
    .await;
    assert_eq!(
        updated,
        (200, json!({ "matchedCount": n(2), "modifiedCount": n(2) }))
    );
    let replaced = call(
        "replaceOne",
        json!({ "filter": { "_id": "c" }, "replacement": { "qty": n(30) } }),
    )
    .await;
    assert_eq!(
        replaced,
        (200, json!({ "matchedCount": n(1), "modifiedCount": n(1) }))
    );
    let totals = call(
        "aggregate",
        json!({ "pipeline": [
            { "$match": { "seen": true } },
            { "$group": { "_id": null, "total": { "$sum": "$qty" } } }
        ] }),
    )
    .await;
    assert_eq!(
        totals,
        (
            200,
            json!({ "documents": [{ "_id": null, "total": n(13) }] })
        )
    );

    let deleted = call("deleteOne", json!({ "filter": { "_id": "u" } })).await;
    assert_eq!(deleted, (200, json!({ "deletedCount": n(1) })));
    // What is left, read natively: a (11), b, c replaced, and the ObjectId one.
    let stored = harness::within(BOUND, collection(name).await.find_one(doc! { "_id": "c" })).await;
    assert_eq!(stored.unwrap(), Some(doc! { "_id": "c", "qty": 30 }));
    let deleted = call("deleteMany", json!({ "filter": {} })).await;
    assert_eq!(deleted, (200, json!({ "deletedCount": n(4) })));
}

async fn every_action_answers_with_json_and_with_ejson_bodies(runtime: Runtime) {
    let served = serve(
        runtime,
        &format!("{}{DATABASE}", server::shared().uri()),
        10_000,
    );
    every_action(&served, runtime, JSON).await;
    every_action(&served, runtime, EJSON).await;
}

async fn the_bson_types_round_trip_through_extended_json_as_stored(runtime: Runtime) {
    let served = serve(runtime, &server::shared().uri(), 10_000);
    let name = match runtime {
        Runtime::Wasmtime => "types",
        Runtime::Workerd => "types_worker",
    };
    harness::within(BOUND, collection(name).await.drop())
        .await
        .unwrap();
    let sent = json!({
        "_id": { "$oid": "65a1b2c3d4e5f60718293a4b" },
        "date": { "$date": { "$numberLong": "1700000000123" } },
        "decimal": { "$numberDecimal": "1234.5678" },
        "long": { "$numberLong": "9007199254740993" },
        "int": { "$numberInt": "7" },
        "double": { "$numberDouble": "2.5" },
        "binary": { "$binary": { "base64": "AQID", "subType": "00" } },
        "uuid": { "$binary": { "base64": "ASNFZ4mrze8BI0VniavN7w==", "subType": "04" } },
        "timestamp": { "$timestamp": { "t": 1700000000, "i": 3 } },
        "regex": { "$regularExpression": { "pattern": "^a", "options": "i" } },
        "min": { "$minKey": 1 },
        "max": { "$maxKey": 1 },
        "text": "thé",
        "flag": true,
        "nothing": null,
        "list": [{ "$numberInt": "1" }, { "$numberLong": "2" }],
        "nested": { "at": { "$date": { "$numberLong": "0" } } }
    });
    let inserted = call(
        &served,
        FULL,
        EJSON,
        "insertOne",
        name,
        json!({ "document": sent }),
    )
    .await;
    assert_eq!(inserted, (201, json!({ "insertedId": sent["_id"] })));

    // Stored with the types sent, read natively.
    let id = Bson::try_from(sent["_id"].clone()).unwrap();
    let stored = harness::within(
        BOUND,
        collection(name).await.find_one(doc! { "_id": id.clone() }),
    )
    .await
    .unwrap()
    .expect("stored");
    assert!(matches!(stored.get("_id"), Some(Bson::ObjectId(_))));
    assert!(
        matches!(stored.get("date"), Some(Bson::DateTime(at)) if at.timestamp_millis() == 1_700_000_000_123)
    );
    assert!(matches!(stored.get("decimal"), Some(Bson::Decimal128(_))));
    assert_eq!(
        stored.get("long"),
        Some(&Bson::Int64(9_007_199_254_740_993))
    );
    assert_eq!(stored.get("int"), Some(&Bson::Int32(7)));
    assert!(
        matches!(stored.get("uuid"), Some(Bson::Binary(binary)) if binary.subtype == anymongo::bson::spec::BinarySubtype::Uuid)
    );
    assert!(matches!(stored.get("timestamp"), Some(Bson::Timestamp(_))));
    assert_eq!(
        Bson::Document(stored.clone()).into_canonical_extjson(),
        sent
    );

    // Back through the gateway: canonical as sent; relaxed in the Data API's JSON.
    let found = call(
        &served,
        FULL,
        EJSON,
        "findOne",
        name,
        json!({ "filter": { "_id": sent["_id"] } }),
    )
    .await;
    assert_eq!(found, (200, json!({ "document": sent })));
    let (status, relaxed) = call(
        &served,
        FULL,
        JSON,
        "findOne",
        name,
        json!({ "filter": { "_id": sent["_id"] } }),
    )
    .await;
    assert_eq!(status, 200);
    let relaxed = &relaxed["document"];
    assert_eq!(
        relaxed["date"],
        json!({ "$date": "2023-11-14T22:13:20.123Z" })
    );
    assert_eq!(relaxed["long"], json!(9_007_199_254_740_993_i64));
    assert_eq!(relaxed["int"], json!(7));
    assert_eq!(relaxed["decimal"], json!({ "$numberDecimal": "1234.5678" }));

    // The same document in relaxed JSON is stored the same (but for its _id).
    let mut again = relaxed.clone();
    again["_id"] = json!({ "$oid": "65a1b2c3d4e5f60718293a4c" });
    let inserted = call(
        &served,
        FULL,
        JSON,
        "insertOne",
        name,
        json!({ "document": again }),
    )
    .await;
    assert_eq!(inserted.0, 201, "{}", inserted.1);
    let copy = harness::within(
        BOUND,
        collection(name)
            .await
            .find_one(doc! { "_id": Bson::try_from(again["_id"].clone()).unwrap() }),
    )
    .await
    .unwrap()
    .expect("stored");
    let mut expected = stored;
    expected.insert("_id", copy.get("_id").unwrap().clone());
    // Relaxed JSON writes a small Int64 as a plain number, which reads back as an
    // Int32: the reason for application/ejson.
    expected.insert("list", vec![Bson::Int32(1), Bson::Int32(2)]);
    assert_eq!(copy, expected);
}

async fn the_error_statuses(runtime: Runtime) {
    let served = serve(
        runtime,
        &format!("{}{DATABASE}", server::shared().uri()),
        10_000,
    );
    let error = |(status, body): (u16, Value)| {
        (status, body["error_code"].as_str().unwrap_or("").to_owned())
    };
    let find = json!({ "filter": {} });

    // 401: no key, a wrong one; either header spelling works.
    let no_key = served
        .exchange(
            "POST",
            &format!("{BASE}/action/find"),
            &[("Content-Type", JSON)],
            b"{}",
        )
        .await;
    assert_eq!(no_key.status, 401, "{}", no_key.body);
    assert_eq!(
        error(call(&served, "wrong", JSON, "find", "readable", find.clone()).await),
        (401, "InvalidSession".into())
    );
    let body =
        json!({ "dataSource": "c", "database": DATABASE, "collection": "readable" }).to_string();
    let spelled = served
        .exchange(
            "POST",
            &format!("{BASE}/action/find"),
            &[("api-key", READER)],
            body.as_bytes(),
        )
        .await;
    assert_eq!(spelled.status, 200, "{}", spelled.body);

    // 403: what the reader's allow-list does not grant, and server JavaScript.
    assert_eq!(
        call(&served, READER, JSON, "find", "readable", find.clone())
            .await
            .0,
        200
    );
    assert_eq!(
        error(call(&served, READER, JSON, "find", "other", find.clone()).await),
        (403, "NoMatchingRuleFound".into())
    );
    assert_eq!(
        error(
            call(
                &served,
                READER,
                JSON,
                "deleteMany",
                "readable",
                find.clone()
            )
            .await
        ),
        (403, "NoMatchingRuleFound".into())
    );
    assert_eq!(
        error(
            call(
                &served,
                FULL,
                JSON,
                "find",
                "readable",
                json!({ "filter": { "$where": "true" } })
            )
            .await
        ),
        (403, "ServerJavaScriptRefused".into())
    );

    // 404 and 405.
    assert_eq!(
        error(call(&served, FULL, JSON, "findAll", "readable", find.clone()).await),
        (404, "ActionNotFound".into())
    );
    let get = served
        .exchange(
            "GET",
            &format!("{BASE}/action/find"),
            &[("apiKey", FULL)],
            b"",
        )
        .await;
    assert_eq!(get.status, 405, "{}", get.body);

    // 400: not JSON, a missing field, a mistyped one, bad Extended JSON, a query the
    // server refuses.
    let malformed = served
        .exchange(
            "POST",
            &format!("{BASE}/action/find"),
            &[("apiKey", FULL), ("Content-Type", JSON)],
            b"{oops",
        )
        .await;
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    for (action, fields) in [
        ("insertOne", json!({})),
        ("find", json!({ "limit": "ten" })),
        ("find", json!({ "filter": { "_id": { "$oid": "xyz" } } })),
    ] {
        assert_eq!(
            error(call(&served, FULL, JSON, action, "readable", fields).await),
            (400, "InvalidParameter".into())
        );
    }
    // Input the driver refuses before sending it: an update without operators.
    assert_eq!(
        error(
            call(
                &served,
                FULL,
                JSON,
                "updateOne",
                "readable",
                json!({ "filter": {}, "update": { "qty": 1 } })
            )
            .await
        ),
        (400, "InvalidParameter".into())
    );
    let refused = call(
        &served,
        FULL,
        JSON,
        "find",
        "readable",
        json!({ "filter": { "a": { "$nope": 1 } } }),
    )
    .await;
    assert_eq!(
        error(refused.clone()),
        (400, "MongoDBError".into()),
        "{}",
        refused.1
    );

    // 409: an _id that exists.
    let dups = match runtime {
        Runtime::Wasmtime => "dups",
        Runtime::Workerd => "dups_worker",
    };
    let document = json!({ "document": { "_id": "twice" } });
    call(
        &served,
        FULL,
        JSON,
        "deleteMany",
        dups,
        json!({ "filter": {} }),
    )
    .await;
    assert_eq!(
        call(&served, FULL, JSON, "insertOne", dups, document.clone())
            .await
            .0,
        201
    );
    assert_eq!(
        error(call(&served, FULL, JSON, "insertOne", dups, document).await),
        (409, "DuplicateKey".into())
    );

    // 413: over maxBodyBytes (4096).
    let big = json!({ "document": { "text": "x".repeat(5000) } });
    assert_eq!(
        error(call(&served, FULL, JSON, "insertOne", dups, big).await),
        (413, "PayloadTooLarge".into())
    );
}

async fn an_unreachable_database_is_a_503_within_the_timeout_without_its_secrets(runtime: Runtime) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let timeout = Duration::from_millis(1000);
    let served = serve(
        runtime,
        &format!("mongodb://gatekeeper:hunter2@{closed}/?authSource=admin"),
        timeout.as_millis() as u64,
    );
    if runtime == Runtime::Workerd {
        // workerd compiles the Worker on its first request (wasmtime serve, before
        // it listens): a request refused without the database, before the measure.
        let (status, _) = call(&served, "wrong", JSON, "findOne", "any", json!({})).await;
        assert_eq!(status, 401);
    }
    let started = Instant::now();
    let (status, body) = call(&served, FULL, JSON, "findOne", "any", json!({})).await;
    let took = started.elapsed();
    assert_eq!(
        (status, &body),
        (
            503,
            &json!({
                "error": "the database could not be reached within the gateway's timeoutMS",
                "error_code": "ServiceUnavailable"
            })
        )
    );
    // The margin covers instantiating the component for the request.
    assert!(
        took < timeout + Duration::from_secs(2),
        "the 503 took {took:?}"
    );
}

/// A runtime without its connection string, or with a configuration that is not
/// valid, answers every request 500, quoting neither.
async fn a_runtime_without_its_configuration_answers_500(runtime: Runtime) {
    let uri = format!("{}{DATABASE}", server::shared().uri());
    let broken = r#"{"apiKeys": [{"key": "kept-secret"}], "unknown": 1}"#;
    for env in [
        vec![("DATA_API_CONFIG", config(10_000))],
        vec![("MONGODB_URI", uri), ("DATA_API_CONFIG", broken.to_owned())],
    ] {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let served = match runtime {
            Runtime::Wasmtime => Served::start("data-api-gateway", "data-api-gateway", &env, None),
            Runtime::Workerd => Served::gateway_worker(&env),
        };
        let (status, body) = call(&served, FULL, JSON, "findOne", "any", json!({})).await;
        assert_eq!(
            (status, body["error_code"].as_str()),
            (500, Some("InternalServerError")),
            "{body}"
        );
        assert!(!body.to_string().contains("kept-secret"), "{body}");
    }
}

/// Runs `program` with `args`, `BASE_URL` (the gateway's, with the Data API's path)
/// and `API_KEY`, on a thread of its own, within [`BOUND`]: its standard output's
/// lines, each JSON.
async fn run_client(program: &'static str, args: Vec<String>, served: &Served) -> Vec<Value> {
    let base_url = format!("http://{}{BASE}", served.address);
    let run = move || {
        let output = Command::new(program)
            .args(&args)
            .env("BASE_URL", base_url)
            .env("API_KEY", FULL)
            .output()
            .unwrap_or_else(|error| panic!("{program} runs: {error}"));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    };
    let stdout = harness::within(BOUND, tokio::task::spawn_blocking(run))
        .await
        .unwrap();
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}")))
        .collect()
}

/// The clients (whose database is the Data API documentation's `todo`) against both
/// runtimes, one after the other: they share the collection.
#[tokio::test]
async fn a_data_api_client_changes_only_its_base_url_and_key() {
    for runtime in [Runtime::Wasmtime, Runtime::Workerd] {
        clients_against(runtime).await;
    }
}

async fn clients_against(runtime: Runtime) {
    let served = serve(runtime, &server::shared().uri(), 10_000);
    let client = anymongo::Client::with_uri_str(server::shared().uri())
        .await
        .unwrap();
    let tasks = client.database("todo").collection::<Document>("tasks");
    harness::within(BOUND, tasks.drop()).await.unwrap();
    let clients = setup::workspace_root().join("templates/data-api-gateway/clients");
    let path = |name: &str| clients.join(name).to_string_lossy().into_owned();

    let lines = run_client("sh", vec![path("curl.sh")], &served).await;
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(lines[0]["insertedId"]["$oid"].is_string(), "{}", lines[0]);
    assert_eq!(
        lines[1],
        json!({ "document": { "status": "open", "text": "Do the dishes" } })
    );
    assert_eq!(lines[2], json!({ "matchedCount": 1, "modifiedCount": 1 }));
    assert_eq!(
        lines[3],
        json!({ "documents": [{ "text": "Do the dishes" }] })
    );
    assert_eq!(lines[4], json!({ "deletedCount": 1 }));

    let lines = run_client("node", vec![path("fetch.mjs")], &served).await;
    let [line] = lines.as_slice() else {
        panic!("{lines:?}")
    };
    let id = &line["insertedId"];
    assert!(id["$oid"].is_string(), "{line}");
    assert_eq!(
        line["document"],
        json!({
            "_id": id,
            "title": "from fetch",
            "at": { "$date": { "$numberLong": "1700000000000" } },
            "views": { "$numberLong": "9007199254740993" }
        })
    );
    assert_eq!(
        line["updated"],
        json!({ "matchedCount": { "$numberInt": "1" }, "modifiedCount": { "$numberInt": "1" } })
    );
    assert_eq!(
        line["deleted"],
        json!({ "deletedCount": { "$numberInt": "1" } })
    );
}

/// `wasmtime serve` runs each request in a fresh instance, so every request is a cold
/// one: to a distant deployment with TLS 1.3 and SCRAM-SHA-256, TCP, TLS, hello with
/// speculative authentication, saslContinue and the command — 5 round trips on the
/// one connection it opens (docs/guide/edge.md, on the cold request).
#[tokio::test]
async fn a_cold_request_reaches_a_distant_database_in_five_round_trips() {
    let distant = Distant::start(DATABASE).await;
    let served = serve_with_dir(&distant.uri, 10_000, Some(&distant.dir));
    let measured = distant
        .measure(call(
            &served,
            FULL,
            JSON,
            "findOne",
            "far",
            json!({ "filter": { "_id": 1 } }),
        ))
        .await;
    assert_eq!(measured.outcome, (200, json!({ "document": null })));
    assert_eq!(measured.round_trips, 5, "flights:\n{}", measured.log);
    assert_eq!(measured.connections, 1, "flights:\n{}", measured.log);
}

/// The Worker's Durable Object owns the gateway's client: the first request connects,
/// the later ones (every kind of action, a refused one too) reuse its connection.
/// Counted by a proxy without delay in front of the server.
#[tokio::test]
async fn the_worker_connects_on_its_first_request_and_reuses_the_connection() {
    let server = server::shared();
    let proxy = LatencyProxy::start(&format!("{}:{}", server.host, server.port), Duration::ZERO)
        .await
        .unwrap();
    let served = serve(
        Runtime::Workerd,
        &format!("mongodb://{}/{DATABASE}", proxy.address()),
        10_000,
    );
    let name = "reused";
    let call = |action, fields| call(&served, FULL, JSON, action, name, fields);
    assert_eq!(proxy.connections().len(), 0, "nothing connects before");
    let (status, body) = call("deleteMany", json!({ "filter": {} })).await;
    assert_eq!(status, 200, "{body}");
    let first = proxy.connections().len();
    assert!(first >= 1, "the first request connected");
    let inserted = call("insertOne", json!({ "document": { "_id": 1 } })).await;
    assert_eq!(inserted, (201, json!({ "insertedId": 1 })));
    let found = call("find", json!({ "filter": {} })).await;
    assert_eq!(found, (200, json!({ "documents": [{ "_id": 1 }] })));
    let duplicate = call("insertOne", json!({ "document": { "_id": 1 } })).await;
    assert_eq!(duplicate.0, 409, "{}", duplicate.1);
    let updated = call(
        "updateOne",
        json!({ "filter": { "_id": 1 }, "update": { "$set": { "a": 1 } } }),
    )
    .await;
    assert_eq!(updated.0, 200, "{}", updated.1);
    assert_eq!(
        proxy.connections().len(),
        first,
        "later requests opened no connection"
    );
}

/// The matrix under each runtime.
macro_rules! on_each_runtime {
    ($($test:ident),* $(,)?) => {
        /// The matrix served by `wasmtime serve`.
        mod wasmtime_serve {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::Runtime::Wasmtime).await;
                }
            )*
        }
        /// The matrix served by workerd.
        mod workerd {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::Runtime::Workerd).await;
                }
            )*
        }
    };
}

on_each_runtime!(
    every_action_answers_with_json_and_with_ejson_bodies,
    the_bson_types_round_trip_through_extended_json_as_stored,
    the_error_statuses,
    an_unreachable_database_is_a_503_within_the_timeout_without_its_secrets,
    a_runtime_without_its_configuration_answers_500,
);
