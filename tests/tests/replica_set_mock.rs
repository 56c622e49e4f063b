//! The mock replica set ([`anymongo_tests::replica_set`]) at the wire level, through the
//! driver's own codec over plain tokio sockets, and once through the native client.

use std::time::{Duration, Instant};

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Bson, Document, RawDocumentBuf};
use anymongo::wire::{
    encode_op_query, DocumentSequence, Message, MessageHeader, MsgFlags, OpMsg, HEADER_LEN,
};
use anymongo_tests::replica_set::{MemberRole, MockReplicaSet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// The bound of every wait that is expected to end quickly.
const SOON: Duration = Duration::from_secs(5);

/// A bare wire-protocol connection to one member.
struct Wire {
    stream: TcpStream,
    next_id: i32,
}

/// One decoded reply: its OP_MSG flags (empty for OP_REPLY), `requestID`, `responseTo`
/// and body.
struct Reply {
    flags: MsgFlags,
    request_id: i32,
    response_to: i32,
    body: Document,
}

impl Wire {
    async fn connect(address: &str) -> std::io::Result<Wire> {
        let stream = timeout(SOON, TcpStream::connect(address))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect"))??;
        Ok(Wire { stream, next_id: 0 })
    }

    fn next_id(&mut self) -> i32 {
        self.next_id += 1;
        self.next_id
    }

    /// The first handshake of a connection: legacy hello over OP_QUERY.
    async fn legacy_hello(&mut self) -> Document {
        let query = RawDocumentBuf::try_from(&doc! { "isMaster": 1, "helloOk": true }).unwrap();
        let id = self.next_id();
        let frame = encode_op_query(id, "admin.$cmd", &query);
        self.stream.write_all(&frame).await.unwrap();
        let reply = self.read().await.unwrap();
        assert_eq!(reply.response_to, id);
        reply.body
    }

    /// Sends `command` as an OP_MSG with `flags`; returns its request id.
    async fn send(&mut self, command: Document, flags: MsgFlags) -> i32 {
        let mut message = OpMsg::new(RawDocumentBuf::try_from(&command).unwrap());
        message.flags = flags;
        let id = self.next_id();
        self.stream.write_all(&message.encode(id, 0)).await.unwrap();
        id
    }

    /// Reads the next reply; an error when the connection is closed or broken.
    async fn read(&mut self) -> std::io::Result<Reply> {
        let mut header = [0u8; HEADER_LEN];
        self.stream.read_exact(&mut header).await?;
        let header = MessageHeader::parse(&header);
        let mut body = vec![0u8; header.body_len(48_000_000).unwrap()];
        self.stream.read_exact(&mut body).await?;
        let (flags, raw) = match Message::decode(&header, &body).unwrap() {
            Message::Msg(message) => (message.flags, message.body),
            reply => (MsgFlags::empty(), reply.into_reply_document().unwrap()),
        };
        Ok(Reply {
            flags,
            request_id: header.request_id,
            response_to: header.response_to,
            body: Document::try_from(raw.as_ref()).unwrap(),
        })
    }

    /// Sends `command` and reads its reply, within [`SOON`].
    async fn command(&mut self, command: Document) -> Document {
        let id = self.send(command, MsgFlags::empty()).await;
        let reply = timeout(SOON, self.read()).await.unwrap().unwrap();
        assert_eq!(reply.response_to, id);
        assert!(!reply.flags.contains(MsgFlags::MORE_TO_COME));
        reply.body
    }

    /// A handshaken connection to `address`.
    async fn open(address: &str) -> Wire {
        let mut wire = Wire::connect(address).await.unwrap();
        timeout(SOON, wire.legacy_hello()).await.unwrap();
        wire
    }
}

fn strings(reply: &Document, key: &str) -> Vec<String> {
    reply
        .get_array(key)
        .map(|items| {
            items
                .iter()
                .filter_map(Bson::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn topology_version(reply: &Document) -> (ObjectId, i64) {
    let version = reply.get_document("topologyVersion").unwrap();
    (
        version.get_object_id("processId").unwrap(),
        version.get_i64("counter").unwrap(),
    )
}

fn awaitable_hello(reply: &Document, max_await_ms: i64) -> Document {
    doc! {
        "hello": 1, "$db": "admin",
        "topologyVersion": reply.get_document("topologyVersion").unwrap().clone(),
        "maxAwaitTimeMS": max_await_ms,
    }
}

#[tokio::test]
async fn members_agree_on_one_primary() {
    let set = MockReplicaSet::start().await;
    let addresses = set.addresses();
    let port = set.port();
    assert_eq!(
        addresses,
        [1, 2, 3].map(|k| format!("127.0.0.{k}:{port}")).to_vec()
    );
    assert_eq!(
        set.uri(""),
        format!("mongodb://127.0.0.1:{port}/?replicaSet=rs0")
    );
    assert_eq!(
        set.uri_all("&w=majority"),
        format!(
            "mongodb://{}/?replicaSet=rs0&w=majority",
            addresses.join(",")
        )
    );

    let mut primaries = Vec::new();
    let mut process_ids = Vec::new();
    for (i, address) in addresses.iter().enumerate() {
        let mut wire = Wire::connect(address).await.unwrap();
        let legacy = timeout(SOON, wire.legacy_hello()).await.unwrap();
        assert_eq!(legacy.get_bool("helloOk").ok(), Some(true));
        assert_eq!(legacy.get_bool("ismaster").ok(), Some(i == 0));
        let reply = wire.command(doc! { "hello": 1, "$db": "admin" }).await;
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
        assert_eq!(reply.get_str("setName").ok(), Some("rs0"));
        assert_eq!(reply.get_str("me").ok(), Some(address.as_str()));
        assert_eq!(strings(&reply, "hosts"), addresses);
        assert_eq!(reply.get_str("primary").ok(), Some(addresses[0].as_str()));
        assert_eq!(reply.get_i32("minWireVersion").ok(), Some(8));
        assert_eq!(reply.get_i32("maxWireVersion").ok(), Some(21));
        assert_eq!(reply.get_i32("logicalSessionTimeoutMinutes").ok(), Some(30));
        assert!(reply
            .get_document("lastWrite")
            .unwrap()
            .get_datetime("lastWriteDate")
            .is_ok());
        assert!(reply.get_datetime("localTime").is_ok());
        assert!(reply.get_i64("connectionId").is_ok());
        assert!(reply.get_i32("setVersion").is_ok());
        let writable = reply.get_bool("isWritablePrimary").unwrap();
        assert_eq!(reply.get_bool("secondary").unwrap(), !writable);
        assert_eq!(reply.get_object_id("electionId").is_ok(), writable);
        if writable {
            primaries.push(i);
        }
        process_ids.push(topology_version(&reply).0);
        assert_eq!(set.hello_counts(i).immediate, 2);
        assert_eq!(set.open_connections(i), 1);
    }
    assert_eq!(primaries, [0]);
    process_ids.sort();
    process_ids.dedup();
    assert_eq!(process_ids.len(), 3, "each member has its own processId");
}

#[tokio::test]
async fn an_election_changes_the_replies() {
    let set = MockReplicaSet::start().await;
    let mut wires = Vec::new();
    for address in set.addresses() {
        wires.push(Wire::open(&address).await);
    }
    let hello = doc! { "hello": 1, "$db": "admin" };
    let before = wires[0].command(hello.clone()).await;
    let old_election = before.get_object_id("electionId").unwrap();
    let old_version = topology_version(&before);

    set.set_primary(Some(1));

    let old_primary = wires[0].command(hello.clone()).await;
    assert_eq!(old_primary.get_bool("isWritablePrimary").ok(), Some(false));
    assert_eq!(old_primary.get_bool("secondary").ok(), Some(true));
    assert!(old_primary.get("electionId").is_none());
    assert_eq!(old_primary.get_str("primary").ok(), Some(set.address(1)));
    let new_version = topology_version(&old_primary);
    assert_eq!(new_version.0, old_version.0);
    assert!(new_version.1 > old_version.1);

    let new_primary = wires[1].command(hello.clone()).await;
    assert_eq!(new_primary.get_bool("isWritablePrimary").ok(), Some(true));
    let new_election = new_primary.get_object_id("electionId").unwrap();
    assert!(
        new_election > old_election,
        "{new_election} > {old_election}"
    );
    assert_eq!(Some(new_election), set.election_id());

    let third = wires[2].command(hello.clone()).await;
    assert_eq!(third.get_str("primary").ok(), Some(set.address(1)));

    set.set_primary(None);
    let none = wires[1].command(hello).await;
    assert_eq!(none.get_bool("isWritablePrimary").ok(), Some(false));
    assert!(none.get("primary").is_none());
    assert_eq!(set.election_id(), None);
}

#[tokio::test]
async fn roles_change_the_lists() {
    let set = MockReplicaSet::start().await;
    let addresses = set.addresses();
    let mut wires = Vec::new();
    for address in &addresses {
        wires.push(Wire::open(address).await);
    }
    let hello = doc! { "hello": 1, "$db": "admin" };
    let version = set.set_version();

    set.set_role(1, MemberRole::Hidden);
    set.set_role(2, MemberRole::Arbiter);
    assert_eq!(set.set_version(), version + 2);
    let primary = wires[0].command(hello.clone()).await;
    assert_eq!(strings(&primary, "hosts"), [addresses[0].clone()]);
    assert_eq!(strings(&primary, "arbiters"), [addresses[2].clone()]);
    let hidden = wires[1].command(hello.clone()).await;
    assert_eq!(hidden.get_bool("hidden").ok(), Some(true));
    assert_eq!(hidden.get_bool("secondary").ok(), Some(true));
    let arbiter = wires[2].command(hello.clone()).await;
    assert_eq!(arbiter.get_bool("arbiterOnly").ok(), Some(true));
    assert_eq!(arbiter.get_bool("secondary").ok(), Some(false));

    set.set_role(1, MemberRole::Normal);
    set.set_role(2, MemberRole::Removed);
    let primary = wires[0].command(hello.clone()).await;
    assert_eq!(strings(&primary, "hosts"), addresses[..2].to_vec());
    assert!(primary.get("arbiters").is_none());
    let removed = wires[2].command(hello).await;
    assert_eq!(removed.get_bool("isreplicaset").ok(), Some(true));
    assert!(removed.get("setName").is_none());
    assert!(removed.get("hosts").is_none());
}

#[tokio::test]
async fn awaitable_hello_waits_for_max_await_time_or_a_change() {
    let set = MockReplicaSet::start().await;
    let mut wire = Wire::open(set.address(1)).await;
    let first = wire.command(doc! { "hello": 1, "$db": "admin" }).await;

    // Nothing changes: the reply comes after maxAwaitTimeMS.
    let started = Instant::now();
    let id = wire
        .send(awaitable_hello(&first, 500), MsgFlags::empty())
        .await;
    let reply = timeout(SOON, wire.read()).await.unwrap().unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(450) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
    assert_eq!(reply.response_to, id);
    assert!(!reply.flags.contains(MsgFlags::MORE_TO_COME));
    assert_eq!(topology_version(&reply.body), topology_version(&first));
    assert_eq!(set.hello_counts(1).awaited, 1);

    // An election while waiting: the reply comes at once.
    let waiting = set.hello_counts(1).awaited + 1;
    wire.send(awaitable_hello(&reply.body, 10_000), MsgFlags::empty())
        .await;
    assert!(
        set.wait_for(SOON, |set| set.hello_counts(1).awaited == waiting)
            .await
    );
    let started = Instant::now();
    set.set_primary(Some(1));
    let changed = timeout(Duration::from_millis(400), wire.read())
        .await
        .expect("the awaitable hello must return promptly after a change")
        .unwrap();
    assert!(started.elapsed() < Duration::from_millis(400));
    assert_eq!(changed.body.get_bool("isWritablePrimary").ok(), Some(true));
    assert!(topology_version(&changed.body).1 > topology_version(&first).1);

    // A stale topologyVersion is answered at once.
    let started = Instant::now();
    wire.send(awaitable_hello(&first, 10_000), MsgFlags::empty())
        .await;
    timeout(Duration::from_millis(400), wire.read())
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_millis(400));

    // topologyVersion without maxAwaitTimeMS is an error.
    let mut half = awaitable_hello(&first, 1);
    half.remove("maxAwaitTimeMS");
    let error = wire.command(half).await;
    assert_eq!(error.get_f64("ok").ok(), Some(0.0));
}

#[tokio::test]
async fn exhaust_hello_streams_replies() {
    let set = MockReplicaSet::start().await;
    let mut wire = Wire::open(set.address(2)).await;
    let first = wire.command(doc! { "hello": 1, "$db": "admin" }).await;
    let id = wire
        .send(awaitable_hello(&first, 300), MsgFlags::EXHAUST_ALLOWED)
        .await;

    // Nothing changes: a reply every maxAwaitTimeMS, each answering the one before.
    let mut response_to = id;
    let started = Instant::now();
    for _ in 0..2 {
        let reply = timeout(SOON, wire.read()).await.unwrap().unwrap();
        assert!(reply.flags.contains(MsgFlags::MORE_TO_COME));
        assert_eq!(reply.response_to, response_to);
        assert_eq!(topology_version(&reply.body), topology_version(&first));
        response_to = reply.request_id;
    }
    assert!(started.elapsed() >= Duration::from_millis(550));

    // A change: the next streamed reply shows it, promptly.
    let before = set.hello_counts(2).streamed_replies;
    assert!(before >= 2);
    let started = Instant::now();
    set.set_role(0, MemberRole::Hidden);
    let mut changed = None;
    while started.elapsed() < SOON {
        let reply = timeout(SOON, wire.read()).await.unwrap().unwrap();
        assert!(reply.flags.contains(MsgFlags::MORE_TO_COME));
        if topology_version(&reply.body).1 > topology_version(&first).1 {
            changed = Some(reply);
            break;
        }
    }
    let changed = changed.expect("a streamed reply after the change");
    assert!(started.elapsed() < Duration::from_millis(400));
    assert!(changed.body.get("primary").is_none());
    assert_eq!(strings(&changed.body, "hosts").len(), 2);
    assert_eq!(set.hello_counts(2).awaited, 1, "one request, many replies");

    // Closing the connection ends the stream.
    drop(wire);
    assert!(set.wait_for(SOON, |set| set.open_connections(2) == 0).await);
}

#[tokio::test]
async fn exhaust_replies_chain_response_to() {
    let set = MockReplicaSet::start().await;
    let mut wire = Wire::open(set.address(0)).await;
    let first = wire.command(doc! { "hello": 1, "$db": "admin" }).await;
    let id = wire
        .send(awaitable_hello(&first, 10_000), MsgFlags::EXHAUST_ALLOWED)
        .await;
    set.bump_topology_version(0);
    let one = timeout(SOON, wire.read()).await.unwrap().unwrap();
    assert_eq!(one.response_to, id);
    set.bump_topology_version(0);
    let two = timeout(SOON, wire.read()).await.unwrap().unwrap();
    assert!(one.flags.contains(MsgFlags::MORE_TO_COME));
    assert!(two.flags.contains(MsgFlags::MORE_TO_COME));
    assert_eq!(
        two.response_to, one.request_id,
        "a later reply answers the one before"
    );
    assert!(topology_version(&two.body).1 > topology_version(&one.body).1);
}

#[tokio::test]
async fn down_closes_and_up_restores() {
    let set = MockReplicaSet::start().await;
    let mut idle = Wire::open(set.address(1)).await;
    let mut waiting = Wire::open(set.address(1)).await;
    let first = waiting.command(doc! { "hello": 1, "$db": "admin" }).await;
    waiting
        .send(awaitable_hello(&first, 10_000), MsgFlags::EXHAUST_ALLOWED)
        .await;
    assert!(
        set.wait_for(SOON, |set| set.hello_counts(1).awaited == 1)
            .await
    );
    assert_eq!(set.open_connections(1), 2);

    timeout(SOON, set.down(1)).await.unwrap();
    assert!(set.is_down(1));
    assert_eq!(set.open_connections(1), 0);
    // Open connections are closed: reads end (EOF or reset).
    assert!(timeout(SOON, waiting.read()).await.unwrap().is_err());
    assert!(timeout(SOON, idle.read()).await.unwrap().is_err());
    // And new ones are refused.
    assert!(Wire::connect(set.address(1)).await.is_err());
    // The others are unaffected.
    let mut other = Wire::open(set.address(0)).await;
    other.command(doc! { "ping": 1, "$db": "admin" }).await;

    timeout(SOON, set.up(1)).await.unwrap();
    assert!(!set.is_down(1));
    let mut again = Wire::open(set.address(1)).await;
    let reply = again.command(doc! { "hello": 1, "$db": "admin" }).await;
    let (process_id, counter) = topology_version(&reply);
    assert_ne!(process_id, topology_version(&first).0, "a new process");
    assert_eq!(counter, 0);
    assert_eq!(reply.get_str("me").ok(), Some(set.address(1)));
}

#[tokio::test]
async fn inserts_need_the_primary() {
    let set = MockReplicaSet::start().await;
    let mut secondary = Wire::open(set.address(1)).await;
    let error = secondary
        .command(doc! { "insert": "items", "$db": "app", "documents": [{ "_id": 1 }] })
        .await;
    assert_eq!(error.get_f64("ok").ok(), Some(0.0));
    assert_eq!(error.get_i32("code").ok(), Some(10107));
    assert_eq!(error.get_str("codeName").ok(), Some("NotWritablePrimary"));

    // On the primary, with the documents in a document sequence.
    let mut primary = Wire::open(set.address(0)).await;
    let mut message =
        OpMsg::new(RawDocumentBuf::try_from(&doc! { "insert": "items", "$db": "app" }).unwrap());
    message.sequences.push(DocumentSequence::new(
        "documents",
        vec![
            RawDocumentBuf::try_from(&doc! { "_id": 2 }).unwrap(),
            RawDocumentBuf::try_from(&doc! { "_id": 3 }).unwrap(),
        ],
    ));
    primary
        .stream
        .write_all(&message.encode(99, 0))
        .await
        .unwrap();
    let reply = timeout(SOON, primary.read()).await.unwrap().unwrap();
    assert_eq!(reply.response_to, 99);
    assert_eq!(reply.body.get_f64("ok").ok(), Some(1.0));
    assert_eq!(reply.body.get_i64("n").ok(), Some(2));

    assert_eq!(set.insert_count(0), 1);
    assert_eq!(set.insert_count(1), 1);
    let inserts = set.inserts();
    assert_eq!(inserts.len(), 2);
    assert_eq!((inserts[0].member, inserts[0].accepted), (1, false));
    assert_eq!((inserts[1].member, inserts[1].accepted), (0, true));
    assert_eq!(inserts[1].db, "app");
    assert_eq!(inserts[1].collection, "items");
    assert_eq!(
        inserts[1].documents,
        vec![doc! { "_id": 2 }, doc! { "_id": 3 }]
    );

    let found = primary
        .command(doc! { "find": "items", "$db": "app", "filter": {} })
        .await;
    let cursor = found.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id").ok(), Some(0));
    assert_eq!(cursor.get_str("ns").ok(), Some("app.items"));
    assert!(cursor.get_array("firstBatch").unwrap().is_empty());
    let other = primary
        .command(doc! { "endSessions": [], "$db": "admin" })
        .await;
    assert_eq!(other.get_f64("ok").ok(), Some(1.0));
    assert_eq!(
        set.command_names(0),
        ["isMaster", "insert", "find", "endSessions"]
    );
}

#[tokio::test]
async fn native_client_pings_one_member_directly() {
    let set = MockReplicaSet::start().await;
    let port = set.port();
    let client = anymongo::Client::with_uri_str(&format!(
        "mongodb://127.0.0.1:{port}/?directConnection=true"
    ))
    .await
    .unwrap();
    let reply = timeout(
        SOON,
        client.database("admin").run_command(doc! { "ping": 1 }),
    )
    .await
    .expect("ping within 5 s")
    .unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    assert!(set.command_names(0).iter().any(|name| name == "ping"));
}
