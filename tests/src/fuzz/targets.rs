//! The fuzz targets: each feeds bytes to one of the driver's parsers through its public
//! entry point, as the network would hand them over.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use anymongo::auth::{conversation, AuthContext, AuthMechanism, Conversation, Credential, Step};
use anymongo::bson::{
    doc, rawdoc, spec::BinarySubtype, Binary, Bson, Document, RawDocument, RawDocumentBuf,
};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::crud::bulk_write::{
    ClientBulkWriteOptions, DeleteManyModel, InsertOneModel, UpdateOneModel, WriteModel,
};
use anymongo::handshake::HelloReply;
use anymongo::rt::{
    boxed, BoxFuture, Clock, ConnectTarget, HostInfo, Instant, Resolver, Runtime, SrvRecord,
    Stream, Transport,
};
use anymongo::socks5::Handshake;
use anymongo::uri::Compressor;
use anymongo::wire::compression::{decompress_frame, Compression};
use anymongo::wire::{
    op_code, validate_document, DocumentSequence, Message, MessageHeader, MsgFlags, OpMsg, OpReply,
    WireError, HEADER_LEN, MAX_DOCUMENT_DEPTH, MAX_MESSAGE_SIZE,
};
use anymongo::{srv, Client, ClientOptions};
use futures::StreamExt;
use hickory_proto::op::{Message as DnsMessage, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{CNAME, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::Target;

/// Every target, in the order the binary runs them.
pub static TARGETS: [Target; 7] = [
    Target {
        name: "uri",
        corpus: uri_corpus,
        run: uri_run,
        tokens: &[
            b"%",
            b"%2",
            b"%zz",
            b"%25",
            b"%2F",
            b"@",
            b":",
            b"/",
            b"?",
            b"&",
            b"=",
            b",",
            b"[",
            b"]",
            b"[::1]",
            b"mongodb://",
            b"mongodb+srv://",
            b".sock",
            b"\0",
            b"\xc3",
            "é".as_bytes(),
            b"readPreferenceTags=",
            b"authMechanismProperties=",
            b"w=",
        ],
        fix_up: None,
    },
    Target {
        name: "wire",
        corpus: wire_corpus,
        run: wire_run,
        tokens: &[],
        fix_up: Some(wire_fix_up),
    },
    Target {
        name: "bson",
        corpus: bson_corpus,
        run: bson_run,
        tokens: &[
            b"\x03",
            b"\x04",
            b"\x05",
            b"\x07",
            b"\x09",
            b"\x0b",
            b"\x0c",
            b"\x0f",
            b"\x11",
            b"\x13",
            b"\x7f",
            b"\xff",
            b"\0",
            b"$oid",
            b"$date",
            b"$numberLong",
            b"$code",
            b"$scope",
            b"$binary",
            b"\xc3",
        ],
        fix_up: Some(wire_fix_up),
    },
    Target {
        name: "scram",
        corpus: scram_corpus,
        run: scram_run,
        tokens: &[
            b",",
            b"=",
            b"r=",
            b"s=",
            b"i=",
            b"v=",
            b"e=",
            b"m=",
            b"==",
            NONCE.as_bytes(),
            b"\0",
            b"\xff",
        ],
        fix_up: None,
    },
    Target {
        name: "srv",
        corpus: srv_corpus,
        run: srv_run,
        tokens: &[
            b"\xc0\x0c",
            b"\x00\x21",
            b"\x00\x10",
            b"\x00\x05",
            b"\x3f",
            b"\xc0",
        ],
        fix_up: None,
    },
    Target {
        name: "socks5",
        corpus: socks5_corpus,
        run: socks5_run,
        tokens: &[],
        fix_up: None,
    },
    Target {
        name: "replies",
        corpus: replies_corpus,
        run: replies_run,
        tokens: &[],
        fix_up: Some(wire_fix_up),
    },
];

/// Runs `future` to its end: polled again as long as it is pending (its I/O and
/// timers are ready at once, so it only yields), at most 100,000 times, which is a
/// hang, reported as a panic.
fn run_to_end<F: Future>(future: F) -> F::Output {
    let mut context = Context::from_waker(Waker::noop());
    let mut future = pin!(future);
    for _ in 0..100_000 {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
    }
    panic!("a future whose I/O and timers are all ready did not finish");
}

/// Polls `future` once: every target's future is ready at once (its I/O is replaced
/// by fixed answers), so one that is not is a hang, reported as a panic.
fn poll_once<F: Future>(future: F) -> F::Output {
    let mut context = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut context) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a future with nothing to wait for did not finish"),
    }
}

// ---- the connection string ----

fn uri_corpus() -> Vec<Vec<u8>> {
    [
        "mongodb://localhost",
        "mongodb://user:p%40ss@db1.example.com:27017,db2.example.com:27018/shop?replicaSet=rs0\
         &readPreference=secondaryPreferred&maxStalenessSeconds=120&w=majority&wtimeoutMS=1000\
         &journal=true&readConcernLevel=majority&retryWrites=false&appName=app",
        "mongodb+srv://cluster0.example.com/?authSource=admin&srvMaxHosts=2&srvServiceName=db",
        "mongodb://%2Ftmp%2Fmongodb-27017.sock/?tls=true&tlsCAFile=%2Fetc%2Fca.pem\
         &tlsAllowInvalidHostnames=true",
        "mongodb://[::1]:27017/?directConnection=true&compressors=zstd,zlib,snappy\
         &zlibCompressionLevel=9&connectTimeoutMS=1000&socketTimeoutMS=0",
        "mongodb://h/?authMechanism=MONGODB-AWS&authSource=%24external",
        "mongodb://h1,h2/?readPreference=nearest&readPreferenceTags=dc:ny,rack:1\
         &readPreferenceTags=&localThresholdMS=30&proxyHost=localhost&proxyPort=1080\
         &proxyUsername=a&proxyPassword=b",
        "mongodb://CN%3Dclient@h/?authMechanism=MONGODB-X509&tls=true\
         &tlsCertificateKeyFile=%2Fc.pem&tlsCertificateKeyFilePassword=p",
        "mongodb://h/?loadBalanced=true&maxPoolSize=0&minPoolSize=5&maxConnecting=3\
         &waitQueueTimeoutMS=10&serverMonitoringMode=stream&heartbeatFrequencyMS=500\
         &timeoutMS=100&serverSelectionTimeoutMS=30000&maxIdleTimeMS=60000",
    ]
    .iter()
    .map(|uri| uri.as_bytes().to_vec())
    .collect()
}

fn uri_run(input: &[u8]) {
    let uri = String::from_utf8_lossy(input);
    if let Ok(options) = ClientOptions::parse_uri(&uri) {
        let _ = options.validate();
        for name in [
            "readPreferenceTags",
            "authMechanismProperties",
            "w",
            "compressors",
        ] {
            let _ = options.uri_option(name);
        }
    }
}

// ---- wire replies ----

/// A cursor reply, as a find or getMore answers.
fn cursor_reply() -> RawDocumentBuf {
    rawdoc! {
        "cursor": {
            "id": 42_i64,
            "ns": "shop.orders",
            "firstBatch": [{ "_id": 1, "item": "abc", "qty": 2.5, "tags": ["a", "b"] }],
        },
        "ok": 1.0,
    }
}

/// A hello reply of a replica-set primary.
fn hello_reply() -> RawDocumentBuf {
    rawdoc! {
        "isWritablePrimary": true, "helloOk": true, "setName": "rs0", "hosts": ["a:27017", "b:27017"],
        "maxWireVersion": 21, "minWireVersion": 0, "maxBsonObjectSize": 16_777_216,
        "maxMessageSizeBytes": 48_000_000, "maxWriteBatchSize": 100_000,
        "topologyVersion": { "processId": anymongo::bson::oid::ObjectId::from_bytes([7; 12]), "counter": 3_i64 },
        "compression": ["zstd", "zlib", "snappy"], "connectionId": 9, "ok": 1.0,
    }
}

fn wire_corpus() -> Vec<Vec<u8>> {
    let plain = OpMsg::new(cursor_reply()).encode(7, 3);
    let mut checksummed = OpMsg::new(hello_reply());
    checksummed.flags.insert(MsgFlags::CHECKSUM_PRESENT);
    let mut with_sequence = OpMsg::new(rawdoc! { "ok": 1.0, "n": 2 });
    with_sequence.sequences.push(DocumentSequence::new(
        "documents",
        vec![
            rawdoc! { "_id": 1 },
            rawdoc! { "_id": 2, "deep": { "a": [[{}]] } },
        ],
    ));
    let reply = OpReply::command_reply(hello_reply()).encode(8, 4);
    let mut corpus = vec![
        plain.clone(),
        checksummed.encode(9, 5),
        with_sequence.encode(10, 6),
        reply,
    ];
    for compressor in [Compressor::Zlib, Compressor::Zstd, Compressor::Snappy] {
        let compression = Compression {
            compressor,
            zlib_level: None,
        };
        corpus.push(compression.compress_frame(&plain).expect("compresses"));
    }
    corpus
}

/// Writes the input's length into its first four bytes: a reply's `messageLength`, a
/// document's own length, as a well-framed (if otherwise hostile) input has it.
fn wire_fix_up(input: &mut [u8]) {
    let Ok(length) = i32::try_from(input.len()) else {
        return;
    };
    if let Some(field) = input.get_mut(..4) {
        field.copy_from_slice(&length.to_le_bytes());
    }
}

/// What the connection does with a frame it read: the header's length check, the
/// OP_COMPRESSED unwrapping, the decoding, the reply document's validation, then the
/// hello and cursor readings of it.
fn wire_run(input: &[u8]) {
    let Some((header, body)) = input.split_first_chunk::<HEADER_LEN>() else {
        return;
    };
    let header = MessageHeader::parse(header);
    if header.body_len(MAX_MESSAGE_SIZE).is_err() {
        return;
    }
    let decoded = match header.op_code {
        op_code::COMPRESSED => decompress_frame(&header, body, MAX_MESSAGE_SIZE)
            .and_then(|(original, body)| Message::decode(&original, &body)),
        _ => Message::decode(&header, body),
    };
    let Ok(document) = decoded.and_then(Message::into_reply_document) else {
        return;
    };
    if validate_document(&document, MAX_DOCUMENT_DEPTH).is_err() {
        return;
    }
    if let Ok(document) = Document::try_from(document.as_ref()) {
        let _ = HelloReply::parse(document);
    }
}

// ---- documents, by the driver's deserializer ----

fn bson_corpus() -> Vec<Vec<u8>> {
    let every_type = doc! {
        "double": 1.5, "string": "text", "document": { "a": { "b": [1, { "c": null }] } },
        "array": [1, "two", [3]], "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2] },
        "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
        "undefined": Bson::Undefined, "oid": anymongo::bson::oid::ObjectId::from_bytes([7; 12]),
        "bool": true, "date": anymongo::bson::DateTime::from_millis(1_700_000_000_000), "null": null,
        "regex": Bson::RegularExpression(anymongo::bson::Regex {
            pattern: "^a".to_string().try_into().expect("no NUL"),
            options: "i".to_string().try_into().expect("no NUL"),
        }),
        "code": Bson::JavaScriptCode("f()".into()),
        "scope": anymongo::bson::JavaScriptCodeWithScope { code: "g()".into(), scope: doc! { "x": 1 } },
        "symbol": Bson::Symbol("s".into()), "int32": 32,
        "timestamp": anymongo::bson::Timestamp { time: 7, increment: 9 }, "int64": 64_i64,
        "decimal": anymongo::bson::Decimal128::from_bytes([3; 16]), "min": Bson::MinKey, "max": Bson::MaxKey,
        "extended": { "$date": { "$numberLong": "12" } },
    };
    [every_type, doc! {}, doc! { "a": [[[[{ "b": [] }]]]] }]
        .iter()
        .map(|document| anymongo::bson::serialize_to_vec(document).expect("serializes"))
        .collect()
}

/// A document as a cursor hands it to a user: `anymongo::bson_deserializer`'s two ways
/// must each give the document as stored, or the bson crate's error, and refuse a
/// document nested deeper than the limit (where the bson crate would recurse) by
/// themselves: `document_from_slice` (a `Document`) as the bson crate's raw conversion
/// (`Document::try_from(&RawDocument)`), serde's `deserialize_from_slice` as
/// `bson::deserialize_from_slice`, except that it refuses a document with a key the bson
/// crate's `Document` visitor reads as extended JSON (where the two then differ).
fn bson_run(input: &[u8]) {
    use anymongo::bson_deserializer::{deserialize_from_slice, document_from_slice};
    let raw = RawDocument::from_bytes(input).ok();
    let validated = raw.map(|document| validate_document(document, MAX_DOCUMENT_DEPTH));
    // What `wire` lets through, the bson crate reads too (monitoring and logging turn a
    // reply into a `Document` that way).
    if let (Some(raw), Some(Ok(()))) = (raw, &validated) {
        if let Err(error) = Document::try_from(raw) {
            panic!("validated, but the bson crate refuses it: {error}");
        }
    }
    let too_deep = matches!(validated, Some(Err(WireError::DocumentTooDeep { .. })));
    // Asked only when needed, and once: the bson crate recurses without a limit.
    let through_serde =
        (!too_deep).then(|| anymongo::bson::deserialize_from_slice::<Document>(input));
    let as_stored =
        (!too_deep).then(|| RawDocument::from_bytes(input).and_then(Document::try_from));
    let bytes = |document: &Document| anymongo::bson::serialize_to_vec(document).ok();
    for (ours, theirs) in [
        (deserialize_from_slice::<Document>(input), through_serde),
        (document_from_slice(input), as_stored),
    ] {
        match (ours, &theirs) {
            (ours, None) => assert!(ours.is_err(), "took a document nested too deep: {ours:?}"),
            (Ok(ours), Some(Ok(theirs))) => {
                assert_eq!(bytes(&ours), bytes(theirs), "documents differ")
            }
            (Err(ours), Some(_)) if ours.to_string().contains("as extended JSON") => {}
            (Err(ours), Some(Err(theirs))) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, Some(theirs)) => {
                panic!("the driver's {ours:?} against the bson crate's {theirs:?}")
            }
        }
    }
}

// ---- SCRAM ----

/// Stands for the client's nonce in a corpus entry: the target writes the
/// conversation's own nonce there, so that the server-first message can be valid.
const NONCE: &str = "@NONCE@";

/// The most iterations the SCRAM target lets through: PBKDF2's cost grows with the
/// count by design, and bounding the count the driver accepts is the auth code's
/// own concern (and test); here a larger count is replaced by 4096 so that each
/// input stays fast and the parsers, not the key derivation, are exercised.
const MAX_FUZZ_ITERATIONS: u64 = 10_000;

fn scram_corpus() -> Vec<Vec<u8>> {
    [
        "r=@NONCE@3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096\0v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
        "r=@NONCE@%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096\0\
         v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
        "m=ext,r=@NONCE@abc,s=c2FsdA==,i=4096,x=extension\0e=invalid-proof",
        "r=@NONCE@abc,s=c2FsdA==,i=4096\0v=AAAA,x=more",
    ]
    .iter()
    .map(|input| input.as_bytes().to_vec())
    .collect()
}

/// One SCRAM conversation (SHA-256 for inputs of even length, SHA-1 for odd) with a
/// server whose server-first and server-final messages are the input's two parts,
/// split at its first NUL.
fn scram_run(input: &[u8]) {
    static CONTEXT: OnceLock<AuthContext> = OnceLock::new();
    // One key cache for every input: a repeated salt and count derive once.
    let context = CONTEXT.get_or_init(AuthContext::default);
    let mechanism = match input.len() % 2 {
        0 => AuthMechanism::ScramSha256,
        _ => AuthMechanism::ScramSha1,
    };
    let credential = Credential {
        username: Some("user".into()),
        password: Some("pencil".into()),
        source: Some("admin".into()),
        mechanism: Some(mechanism),
        ..Credential::default()
    };
    let mut scram = conversation(&credential, mechanism, context).expect("a SCRAM credential");
    let Ok(Step::Send(start)) = scram.start() else {
        panic!("saslStart was not the first step");
    };
    let nonce = client_nonce(&start);
    let (first, last) = match input.iter().position(|byte| *byte == 0) {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (input, &[][..]),
    };
    let first = with_small_iteration_count(&replace(first, NONCE.as_bytes(), nonce.as_bytes()));
    let payload = |bytes: &[u8], done: bool| {
        doc! {
            "conversationId": 1,
            "done": done,
            "payload": Binary { subtype: BinarySubtype::Generic, bytes: bytes.to_vec() },
            "ok": 1.0,
        }
    };
    let step = scram.reply(&payload(&first, false));
    if settled(&mut *scram, step).is_err() {
        return;
    }
    let step = scram.reply(&payload(last, last.len() % 2 == 0));
    if let Ok(Step::Send(_)) = settled(&mut *scram, step) {
        let _ = scram.reply(&payload(b"", true));
    }
}

/// The step after `step` once the key derivation it may announce has run: the
/// rounds an executor would interleave with other work, run back to back.
fn settled(
    scram: &mut dyn Conversation,
    mut step: anymongo::Result<Step>,
) -> anymongo::Result<Step> {
    while let Ok(Step::Compute) = step {
        step = scram.compute();
    }
    step
}

/// The nonce of the `saslStart` command's `n,,n=user,r=NONCE` payload.
fn client_nonce(start: &Document) -> String {
    let payload = match start.get("payload") {
        Some(Bson::Binary(binary)) => String::from_utf8_lossy(&binary.bytes).into_owned(),
        other => panic!("saslStart without a binary payload: {other:?}"),
    };
    payload
        .rsplit_once("r=")
        .map(|(_, nonce)| nonce.to_owned())
        .expect("a client nonce")
}

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while !rest.is_empty() {
        match rest.starts_with(from) {
            true => {
                out.extend_from_slice(to);
                rest = &rest[from.len()..];
            }
            false => {
                out.push(rest[0]);
                rest = &rest[1..];
            }
        }
    }
    out
}

/// The server-first message with an `i=` count above [`MAX_FUZZ_ITERATIONS`]
/// replaced by 4096.
fn with_small_iteration_count(message: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(message) else {
        // The driver refuses a message that is not UTF-8 before it reads the count.
        return message.to_vec();
    };
    let too_many = |count: &str| {
        // The count as an integer parser reads it: a leading `+` allowed.
        let digits = count.strip_prefix('+').unwrap_or(count);
        !digits.is_empty()
            && digits.bytes().all(|byte| byte.is_ascii_digit())
            && digits
                .parse::<u64>()
                .map_or(true, |count| count > MAX_FUZZ_ITERATIONS)
    };
    text.split(',')
        .map(|attribute| match attribute.strip_prefix("i=") {
            Some(count) if too_many(count) => "i=4096",
            _ => attribute,
        })
        .collect::<Vec<_>>()
        .join(",")
        .into_bytes()
}

// ---- SRV and TXT answers ----

/// The SRV host name every answer is for.
const SRV_URI: &str = "mongodb+srv://cluster0.example.com/";

fn dns_answer(records: Vec<Record>, kind: RecordType, code: ResponseCode) -> Vec<u8> {
    let name = Name::from_ascii("_mongodb._tcp.cluster0.example.com.").expect("a DNS name");
    let mut message = DnsMessage::new(0x1234, MessageType::Response, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.metadata.recursion_available = true;
    message.metadata.response_code = code;
    message.add_query(Query::query(name, kind));
    for record in records {
        message.add_answer(record);
    }
    message.to_vec().expect("an encodable DNS message")
}

fn srv_corpus() -> Vec<Vec<u8>> {
    let name = |text: &str| Name::from_ascii(text).expect("a DNS name");
    let srv = |target: &str, port| {
        Record::from_rdata(
            name("_mongodb._tcp.cluster0.example.com."),
            60,
            RData::SRV(SRV::new(0, 5, port, name(target))),
        )
    };
    let txt = |strings: &[&str]| {
        Record::from_rdata(
            name("cluster0.example.com."),
            300,
            RData::TXT(TXT::new(strings.iter().map(|s| s.to_string()).collect())),
        )
    };
    vec![
        dns_answer(
            vec![
                srv("shard-00.example.com.", 27017),
                srv("shard-01.example.com.", 27018),
                srv("shard-02.evil.com.", 27017),
            ],
            RecordType::SRV,
            ResponseCode::NoError,
        ),
        dns_answer(
            vec![
                Record::from_rdata(
                    name("_mongodb._tcp.cluster0.example.com."),
                    60,
                    RData::CNAME(CNAME(name("alias.example.com."))),
                ),
                srv("a.example.com.", 27017),
            ],
            RecordType::SRV,
            ResponseCode::NoError,
        ),
        dns_answer(
            vec![txt(&[
                "replicaSet=rs0&authSource=",
                "admin&loadBalanced=false",
            ])],
            RecordType::TXT,
            ResponseCode::NoError,
        ),
        dns_answer(
            vec![txt(&["authSource=a"]), txt(&["replicaSet=b"])],
            RecordType::TXT,
            ResponseCode::NoError,
        ),
        dns_answer(Vec::new(), RecordType::SRV, ResponseCode::NXDomain),
    ]
}

/// A resolver answering every question from one parsed DNS message, reading its
/// records as `anymongo_wasi::WasiResolver` does.
struct Answered(DnsMessage);

impl Answered {
    fn records(&self) -> impl Iterator<Item = &Record> {
        let found = self.0.metadata.response_code == ResponseCode::NoError;
        self.0.answers.iter().filter(move |_| found)
    }
}

impl Resolver for Answered {
    fn srv<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        let records = self
            .records()
            .filter_map(|record| match &record.data {
                RData::SRV(srv) => Some(SrvRecord {
                    target: srv.target.to_ascii().trim_end_matches('.').to_owned(),
                    port: srv.port,
                    ttl_secs: record.ttl,
                    addresses: None,
                }),
                _ => None,
            })
            .collect();
        boxed(async move { Ok(records) })
    }

    fn txt<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        let records = self
            .records()
            .filter_map(|record| match &record.data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part))
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect();
        boxed(async move { Ok(records) })
    }

    fn ip<'a>(&'a self, _host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        boxed(async { Ok(Vec::new()) })
    }
}

/// A clock that never moves: the look-ups run without a bound, so it is never asked
/// to wait.
struct Frozen;

impl Clock for Frozen {
    fn now(&self) -> Instant {
        Instant::from_origin(Duration::ZERO)
    }

    fn unix_time(&self) -> Duration {
        Duration::ZERO
    }

    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        boxed(std::future::pending())
    }
}

/// A DNS answer parsed as both resolvers' DNS library parses it (`hickory-proto`;
/// natively inside hickory's resolver, under WASI by `anymongo-wasi` itself), then
/// its SRV and TXT records through the driver's seed-list discovery.
fn srv_run(input: &[u8]) {
    let Ok(message) = DnsMessage::from_vec(input) else {
        return;
    };
    let resolver = Answered(message);
    let options = ClientOptions::parse_uri(SRV_URI).expect("a valid SRV URI");
    let _ = poll_once(srv::resolve(&options, &resolver, &Frozen, Duration::ZERO));
    let txt = poll_once(resolver.txt("cluster0.example.com")).unwrap_or_default();
    let _ = srv::parse_txt(&txt);
}

// ---- SOCKS5 ----

fn socks5_corpus() -> Vec<Vec<u8>> {
    vec![
        // No authentication; bound to an IPv4 address.
        vec![5, 0, 5, 0, 0, 1, 127, 0, 0, 1, 0x69, 0x89],
        // Username/password; bound to a domain name.
        [
            &[5, 2, 1, 0, 5, 0, 0, 3, 9][..],
            b"localhost",
            &[0x69, 0x89],
        ]
        .concat(),
        // Bound to an IPv6 address.
        [&[5, 0, 5, 0, 0, 4][..], &[0; 15], &[1, 0x69, 0x89]].concat(),
        // Refused: "host unreachable".
        vec![5, 0, 5, 4, 0, 1, 0, 0, 0, 0, 0, 0],
    ]
}

/// The proxy's side of a handshake (with credentials for inputs of even length): the
/// input is what the proxy sends, taken `wants()` bytes at a time.
fn socks5_run(input: &[u8]) {
    let credentials = input.len().is_multiple_of(2).then_some(("user", "secret"));
    let (mut handshake, _greeting) =
        Handshake::new("db.example.com", 27017, credentials).expect("a valid destination");
    let mut rest = input;
    while !handshake.is_done() {
        let wants = handshake.wants();
        assert!(wants > 0, "the handshake wants nothing but is not done");
        let Some((chunk, tail)) = rest.split_at_checked(wants) else {
            let _ = handshake.closed_early();
            return;
        };
        rest = tail;
        if handshake.receive(chunk).is_err() {
            return;
        }
    }
}

// ---- the numbers in a server's replies ----

/// A hello of a standalone 8.0 server (wire version 25, for `bulkWrite`) that takes
/// `batch` writes per command; its numbers as int64, for the boundary integers.
fn fuzz_hello(batch: i64) -> Document {
    doc! {
        "isWritablePrimary": true, "maxWireVersion": 25_i64, "minWireVersion": 0_i64,
        "maxBsonObjectSize": 16_777_216_i64, "maxMessageSizeBytes": 48_000_000_i64,
        "maxWriteBatchSize": batch, "logicalSessionTimeoutMinutes": 30_i64,
        "connectionId": 7_i64, "ok": 1.0,
    }
}

/// A `bulkWrite` reply whose results cursor holds `results`.
fn bulk_write_reply(inserted: i64, results: Vec<Document>) -> Document {
    doc! {
        "ok": 1.0, "nErrors": 0_i64, "nInserted": inserted, "nUpserted": 0_i64,
        "nMatched": 0_i64, "nModified": 0_i64, "nDeleted": 0_i64,
        "cursor": { "id": 0_i64, "firstBatch": results, "ns": "admin.$cmd.bulkWrite" },
    }
}

/// Inputs: `{ hello, replies }`, the server's hello and its replies to the commands
/// of [`replies_run`]'s operations, in order: one write per command, then every
/// write in one command, then write errors and write concern errors.
fn replies_corpus() -> Vec<Vec<u8>> {
    let written = |n: i64| doc! { "ok": 1.0, "n": n, "nModified": n };
    let find = doc! {
        "ok": 1.0, "cursor": { "id": 42_i64, "ns": "db.c", "firstBatch": [{ "_id": 1_i64 }] },
    };
    let get_more = doc! {
        "ok": 1.0, "cursor": { "id": 0_i64, "ns": "db.c", "nextBatch": [{ "_id": 2_i64 }] },
    };
    let result = |idx: i64| doc! { "ok": 1.0, "idx": idx, "n": 1_i64 };
    let upserted = doc! {
        "ok": 1.0, "n": 1_i64, "nModified": 0_i64, "upserted": [{ "index": 0_i64, "_id": 5_i64 }],
    };
    // insert_many, update_many, the collection's bulk write (an insert, an update and a
    // delete command), the client's, the find and its getMore.
    let one_each = [
        vec![written(1), written(1), written(1), written(2)],
        vec![written(1), upserted.clone(), written(4)],
        vec![bulk_write_reply(1, vec![result(0)]); 3],
        vec![find.clone(), get_more.clone()],
    ]
    .concat();
    let all_at_once = vec![
        written(3),
        written(5),
        written(1),
        upserted,
        written(4),
        bulk_write_reply(3, vec![result(0), result(1), result(2)]),
        find,
        get_more,
    ];
    let failures = vec![
        doc! { "ok": 1.0, "n": 2_i64,
        "writeErrors": [{ "index": 1_i64, "code": 11000_i64, "errmsg": "dup" }] },
        doc! { "ok": 1.0, "n": 3_i64, "nModified": 3_i64,
        "writeConcernError": { "code": 64_i64, "errmsg": "timed out" } },
        doc! { "ok": 1.0, "nErrors": 1_i64, "nInserted": 1_i64, "nUpserted": 0_i64,
        "nMatched": 0_i64, "nModified": 0_i64, "nDeleted": 0_i64,
        "cursor": { "id": 0_i64, "ns": "admin.$cmd.bulkWrite", "firstBatch": [
            { "ok": 0.0, "idx": 1_i64, "code": 11000_i64, "errmsg": "dup" }] } },
        doc! { "ok": 0.0, "code": 91_i64, "errmsg": "shutting down",
        "errorLabels": ["RetryableWriteError"] },
    ];
    [
        (fuzz_hello(1), one_each),
        (fuzz_hello(100_000), all_at_once),
        (fuzz_hello(100_000), failures),
    ]
    .into_iter()
    .map(|(hello, replies)| {
        let input = doc! { "hello": hello, "replies": replies };
        anymongo::bson::serialize_to_vec(&input).expect("serializes")
    })
    .collect()
}

/// A clock whose time passes only when the driver waits: a sleep ends when first
/// polled, and moves the clock on by its duration. Waits for the server cost
/// nothing, and every bound (server selection, retries) is still reached.
#[derive(Clone, Default)]
struct Virtual(Arc<Mutex<Duration>>);

impl Clock for Virtual {
    fn now(&self) -> Instant {
        Instant::from_origin(*self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn unix_time(&self) -> Duration {
        Duration::from_secs(1_700_000_000) + *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let elapsed = self.0.clone();
        boxed(async move {
            *elapsed.lock().unwrap_or_else(PoisonError::into_inner) += duration;
        })
    }
}

/// A server played from a script: every hello is answered with `hello`, every other
/// command with the next of `replies`; once they are used up, connections close.
struct Scripted {
    hello: RawDocumentBuf,
    replies: Vec<RawDocumentBuf>,
    next: AtomicUsize,
}

impl Scripted {
    /// The frame answering `frame`, if any: none to a request flagged `moreToCome`
    /// or once the replies are used up.
    fn answer(&self, frame: &[u8]) -> Option<Vec<u8>> {
        let (header, body) = frame.split_first_chunk::<HEADER_LEN>()?;
        let header = MessageHeader::parse(header);
        if header.op_code == op_code::QUERY {
            let reply = OpReply::command_reply(self.hello.clone());
            return Some(reply.encode(1, header.request_id));
        }
        let request = OpMsg::decode(&header, body).ok()?;
        if request.flags.contains(MsgFlags::MORE_TO_COME) {
            return None;
        }
        let name = request.body.iter().next()?.ok()?.0;
        let reply = match name.as_str() {
            "hello" | "isMaster" | "ismaster" => self.hello.clone(),
            _ => self
                .replies
                .get(self.next.fetch_add(1, Ordering::Relaxed))?
                .clone(),
        };
        Some(OpMsg::new(reply).encode(1, header.request_id))
    }
}

/// Opens connections to a [`Scripted`] server.
struct ScriptedTransport(Arc<Scripted>);

impl Transport for ScriptedTransport {
    fn connect<'a>(&'a self, _: &'a ConnectTarget) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        let stream = ScriptedStream {
            server: self.0.clone(),
            pending: Vec::new(),
        };
        boxed(async move { Ok(Box::new(stream) as Box<dyn Stream>) })
    }
}

/// A connection to a [`Scripted`] server: what it answered waits to be read; with
/// nothing left to read, the server has closed the connection.
struct ScriptedStream {
    server: Arc<Scripted>,
    pending: Vec<u8>,
}

impl Stream for ScriptedStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        boxed(async move { Ok(n) })
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        self.pending
            .extend(self.server.answer(buf).unwrap_or_default());
        boxed(async { Ok(()) })
    }
}

/// A client, single-threaded and on a virtual clock, runs writes and a read against
/// a server whose hello and replies are the input: `insert_many`, `update_many`, a
/// collection's and the client's bulk writes (their counts and indexes summed and
/// mapped batch after batch), and a find read to its end, each with an implicit
/// session (`logicalSessionTimeoutMinutes`).
fn replies_run(input: &[u8]) {
    let Ok(input) = RawDocument::from_bytes(input) else {
        return;
    };
    let Ok(Some(hello)) = input.get_document("hello").map(Some) else {
        return;
    };
    let Ok(replies) = input.get_array("replies") else {
        return;
    };
    let replies = replies
        .into_iter()
        .filter_map(|reply| Some(reply.ok()?.as_document()?.to_owned()))
        .collect();
    let server = Arc::new(Scripted {
        hello: hello.to_owned(),
        replies,
        next: AtomicUsize::new(0),
    });
    let runtime = Runtime {
        transport: Arc::new(ScriptedTransport(server)),
        resolver: Arc::new(Answered(DnsMessage::new(
            0,
            MessageType::Response,
            OpCode::Query,
        ))),
        clock: Arc::new(Virtual::default()),
        spawner: None,
        key_derivation: None,
        host: HostInfo {
            runtime: "fuzz",
            platform: "fuzz".into(),
            os_type: "fuzz".into(),
            architecture: None,
            docker: false,
            env: |_| None,
            read_file: anymongo::rt::no_file_access,
        },
    };
    let options = ClientOptions::parse_uri(
        "mongodb://fuzz.invalid/?directConnection=true&serverSelectionTimeoutMS=100",
    )
    .expect("a valid URI");
    let config = ClientConfig {
        monitoring: MonitoringThreads::SingleThreaded,
        runtime: Some(runtime),
        ..ClientConfig::default()
    };
    let Ok(client) = Client::with_config(options, config) else {
        return;
    };
    run_to_end(async {
        let collection = client.database("db").collection::<Document>("c");
        let documents = [doc! { "_id": 1 }, doc! { "_id": 2 }, doc! { "_id": 3 }];
        let _ = collection.insert_many(&documents).await;
        let _ = collection
            .update_many(doc! {}, doc! { "$set": { "x": 1 } })
            .await;
        let models = [
            WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 4 })),
            WriteModel::UpdateOne(UpdateOneModel {
                upsert: Some(true),
                ..UpdateOneModel::new(doc! { "_id": 5 }, doc! { "$set": { "x": 1 } })
            }),
            WriteModel::DeleteMany(DeleteManyModel::new(doc! {})),
        ];
        let _ = collection.bulk_write(models).await;
        let models = documents.iter().map(|document| {
            WriteModel::from(InsertOneModel::new(document.clone()))
                .with_namespace(anymongo::Namespace::new("db", "c"))
        });
        let options = ClientBulkWriteOptions::default();
        let _ = client
            .bulk_write(models)
            .with_options(options)
            .verbose_results()
            .await;
        if let Ok(cursor) = collection.find(doc! {}).await {
            let _ = cursor.take(1_000).collect::<Vec<_>>().await;
        }
    });
}
