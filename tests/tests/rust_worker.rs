//! The Rust Worker template (`templates/cloudflare-worker-rust`: workers-rs and
//! `anymongo-workers`, no npm package) under workerd against SecantusDB: its routes, and
//! its Durable Object's client connecting on the first request and reusing the
//! connection for the later ones; a `mongodb+srv://` name looked up over DNS over HTTPS
//! at a local endpoint.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anymongo::bson::{doc, oid::ObjectId};
use anymongo_tests::latency::LatencyProxy;
use anymongo_tests::server::{ServerOptions, TestServer, TestUser};
use anymongo_tests::wasmtime_serve::{Reply, Served};
use anymongo_tests::{harness, server};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The database of these tests.
const DATABASE: &str = "rust_worker";

/// One JSON request to the Worker: its reply, the body parsed.
async fn call(served: &Served, method: &str, path: &str, body: Option<Value>) -> (Reply, Value) {
    let body = body.map(|body| body.to_string()).unwrap_or_default();
    let headers: &[(&str, &str)] = match body.is_empty() {
        true => &[],
        false => &[("content-type", "application/json")],
    };
    let reply = served
        .exchange(method, path, headers, body.as_bytes())
        .await;
    let parsed = serde_json::from_str(&reply.body)
        .unwrap_or_else(|_| panic!("{method} {path}: not JSON: {:?}", reply.body));
    (reply, parsed)
}

/// The Durable Object's client: the first request connects (and writes, and the item
/// reads back), the later ones (a read, a duplicate insert, refused routes) reuse its
/// connection. Counted by a proxy without delay in front of the server; the items are
/// read back natively too.
#[tokio::test]
async fn the_worker_connects_on_its_first_request_and_reuses_the_connection() {
    let server = server::shared();
    let proxy = LatencyProxy::start(&format!("{}:{}", server.host, server.port), Duration::ZERO)
        .await
        .unwrap();
    let uri = format!(
        "mongodb://{}/{DATABASE}?serverSelectionTimeoutMS=10000",
        proxy.address()
    );
    let served = Served::rust_worker(&[("MONGODB_URI", &uri)]);
    assert_eq!(proxy.connections().len(), 0, "nothing connects before");

    let (reply, body) = call(&served, "POST", "/items", Some(json!({ "name": "first" }))).await;
    assert_eq!(reply.status, 201, "{body}");
    let id = body["insertedId"]["$oid"]
        .as_str()
        .unwrap_or_else(|| panic!("an ObjectId: {body}"))
        .to_owned();
    assert_eq!(
        reply.header("location"),
        Some(format!("/items/{id}").as_str())
    );
    let first = proxy.connections().len();
    assert!(first >= 1, "the first request connected");

    let (reply, body) = call(&served, "GET", &format!("/items/{id}"), None).await;
    assert_eq!(reply.status, 200, "{body}");
    assert_eq!(body, json!({ "_id": { "$oid": id }, "name": "first" }));

    // A string _id that needs percent-encoding, inserted twice: the second is a 409.
    let named = format!("a b/{}", ObjectId::new());
    let item = json!({ "_id": named, "n": 1 });
    let (reply, body) = call(&served, "POST", "/items", Some(item.clone())).await;
    assert_eq!(reply.status, 201, "{body}");
    let location = reply.header("location").unwrap().to_owned();
    let (reply, body) = call(&served, "POST", "/items", Some(item)).await;
    assert_eq!(reply.status, 409, "{body}");
    let (reply, body) = call(&served, "GET", &location, None).await;
    assert_eq!((reply.status, body), (200, json!({ "_id": named, "n": 1 })));

    let missing = format!("/items/{}", ObjectId::new());
    let (reply, body) = call(&served, "GET", &missing, None).await;
    assert_eq!(reply.status, 404, "{body}");
    let (reply, body) = call(&served, "POST", "/items", Some(json!([1]))).await;
    assert_eq!(reply.status, 400, "{body}");
    let (reply, body) = call(&served, "PUT", "/items", None).await;
    assert_eq!(reply.status, 405, "{body}");
    let (reply, body) = call(&served, "GET", "/elsewhere", None).await;
    assert_eq!(reply.status, 404, "{body}");

    assert_eq!(
        proxy.connections().len(),
        first,
        "later requests opened no connection"
    );
    let native = anymongo::Client::with_uri_str(server.uri()).await.unwrap();
    let stored = native
        .database(DATABASE)
        .collection::<anymongo::bson::Document>("items")
        .find_one(doc! { "_id": ObjectId::parse_str(&id).unwrap() })
        .await
        .unwrap();
    assert_eq!(
        stored.and_then(|item| item.get_str("name").ok().map(str::to_owned)),
        Some("first".into())
    );
}

/// The queries a [`DnsOverHttps`] endpoint answered: name, type and `accept` header.
type Queries = Arc<Mutex<Vec<(String, String, String)>>>;

/// A DNS-over-HTTPS endpoint (the JSON API) on loopback answering for
/// `cluster0.example.test`: an SRV record naming `db0.example.test:PORT` and a TXT
/// record with `authSource`, as Atlas has them.
struct DnsOverHttps {
    address: std::net::SocketAddr,
    queries: Queries,
    _server: tokio::task::JoinHandle<()>,
}

impl DnsOverHttps {
    async fn start() -> DnsOverHttps {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let queries = Queries::default();
        let seen = queries.clone();
        let server = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let target = head.split(' ').nth(1).unwrap_or_default();
                    // Names and types need no percent-decoding.
                    let query = |key: &str| {
                        target
                            .split_once('?')
                            .map_or("", |(_, query)| query)
                            .split('&')
                            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let accept = head
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("accept")
                                .then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default();
                    let (name, kind) = (query("name"), query("type"));
                    let answer = match (name.as_str(), kind.as_str()) {
                        ("_mongodb._tcp.cluster0.example.test", "SRV") => json!([{
                            "name": name, "type": 33, "TTL": 60,
                            "data": "0 0 27999 db0.example.test.",
                        }]),
                        ("cluster0.example.test", "TXT") => json!([{
                            "name": name, "type": 16, "TTL": 60,
                            "data": "\"authSource=admin\"",
                        }]),
                        _ => json!([]),
                    };
                    seen.lock().unwrap().push((name, kind, accept));
                    let body = json!({ "Status": 0, "Answer": answer }).to_string();
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/dns-json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        DnsOverHttps {
            address,
            queries,
            _server: server,
        }
    }
}

/// `mongodb+srv://` in the Worker: the SRV and TXT records come from the endpoint named
/// by `DNS_OVER_HTTPS` (asked for JSON), and the client then looks for the host the SRV
/// record named — which does not resolve here, so the request is a 503 naming it.
#[tokio::test]
async fn a_mongodb_srv_name_is_looked_up_over_dns_over_https() {
    let dns = DnsOverHttps::start().await;
    let endpoint = format!("http://{}/dns-query", dns.address);
    let served = Served::rust_worker(&[
        (
            "MONGODB_URI",
            "mongodb+srv://cluster0.example.test/?tls=false&serverSelectionTimeoutMS=1000",
        ),
        ("DNS_OVER_HTTPS", &endpoint),
    ]);
    let (reply, body) = harness::within(
        Duration::from_secs(120),
        call(&served, "GET", &format!("/items/{}", ObjectId::new()), None),
    )
    .await;
    assert_eq!(reply.status, 503, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("db0.example.test:27999"), "{error}");
    let mut queries = dns.queries.lock().unwrap().clone();
    queries.sort();
    let json = "application/dns-json".to_owned();
    assert_eq!(
        queries,
        [
            (
                "_mongodb._tcp.cluster0.example.test".into(),
                "SRV".into(),
                json.clone()
            ),
            ("cluster0.example.test".into(), "TXT".into(), json),
        ]
    );
}

/// Workers' TLS verifies servers against the public roots only: a connection string
/// that asks for other verification is refused with a message saying why (a 503, as no
/// server can be reached), not silently connected with the runtime's verification.
#[tokio::test]
async fn tls_options_the_runtime_cannot_honour_are_refused() {
    let server = server::shared();
    let uri = format!(
        "mongodb://{}:{}/{DATABASE}?tls=true&tlsAllowInvalidCertificates=true\
         &serverSelectionTimeoutMS=1000",
        server.host, server.port
    );
    let served = Served::rust_worker(&[("MONGODB_URI", &uri)]);
    let (reply, body) = call(&served, "GET", &format!("/items/{}", ObjectId::new()), None).await;
    assert_eq!(reply.status, 503, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("tlsAllowInvalidCertificates is not supported on Cloudflare Workers"),
        "{error}"
    );
}

/// SCRAM-SHA-256 and SCRAM-SHA-1 from the Worker (the salted password from WebCrypto's
/// PBKDF2, which a wrong derivation would fail): a user's first request authenticates
/// and writes; a wrong password is refused with the server's authentication error.
#[tokio::test]
async fn the_worker_authenticates_with_scram() {
    let server = TestServer::start(&ServerOptions {
        auth: true,
        users: vec![
            TestUser::scram("sha256", "sha256-pw", &["SCRAM-SHA-256"]),
            TestUser::scram("sha1", "sha1-pw", &["SCRAM-SHA-1"]),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let address = format!("{}:{}", server.host, server.port);
    for (credentials, mechanism) in [
        ("sha256:sha256-pw", "SCRAM-SHA-256"),
        ("sha1:sha1-pw", "SCRAM-SHA-1"),
    ] {
        let uri = format!(
            "mongodb://{credentials}@{address}/{DATABASE}?authSource=admin\
             &authMechanism={mechanism}&serverSelectionTimeoutMS=10000"
        );
        let served = Served::rust_worker(&[("MONGODB_URI", &uri)]);
        let (reply, body) = call(&served, "POST", "/items", Some(json!({ "by": mechanism }))).await;
        assert_eq!(reply.status, 201, "{mechanism}: {body}");
    }
    let uri = format!(
        "mongodb://sha256:wrong@{address}/{DATABASE}?authSource=admin\
         &serverSelectionTimeoutMS=10000"
    );
    let served = Served::rust_worker(&[("MONGODB_URI", &uri)]);
    let (reply, body) = call(&served, "POST", "/items", Some(json!({}))).await;
    assert_ne!(reply.status, 201, "{body}");
    let error = body["error"].as_str().unwrap().to_ascii_lowercase();
    assert!(error.contains("authentication failed"), "{error}");
}
