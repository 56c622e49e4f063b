//! A scripted mock replica set for live SDAM tests: `n` members (three by default) on
//! 127.0.0.1, 127.0.0.2, 127.0.0.3 … sharing one port, each answering hello (legacy
//! OP_QUERY `isMaster` and OP_MSG `hello`, awaitable and exhaust/streaming included),
//! `ping`, `insert`, `find`, `replSetStepDown` (the next normal member is elected at
//! once) and, with `{ok: 1}`, everything else.
//!
//! The test drives the set's state — which member is primary, each member's role
//! (normal, hidden, arbiter, removed from the config), which members are down — and reads
//! what the members received (hello counts, inserts, commands, open connections).
//!
//! ```no_run
//! # async fn example() {
//! use anymongo_tests::replica_set::{MemberRole, MockReplicaSet};
//! let set = MockReplicaSet::start().await; // member 0 is primary
//! let uri = set.uri("heartbeatFrequencyMS=500"); // seeds 127.0.0.1:P only
//! // ... point a client at `uri` ...
//! set.set_primary(Some(1)); // an election: member 1 primary, new electionId
//! set.set_role(2, MemberRole::Hidden);
//! set.down(0).await; // listener and connections of member 0 closed
//! set.up(0).await; // back on the same address, with a new topologyVersion.processId
//! # }
//! ```
//!
//! Member state changes bump the members' `topologyVersion.counter`, which wakes the
//! awaitable hellos waiting on them (a `tokio::sync::watch` channel, never polling).
//!
//! In front of a real server ([`MockReplicaSet::in_front_of`]) the members answer
//! what makes them a replica set — hellos, `replSetStepDown`, `replSetFreeze` — and
//! forward every other message to that server, on a connection of their own per
//! client connection, as it is both ways: the set's data, cursors, sessions and fail
//! points are the server's. That is the three-member set the unified test files of
//! `discovery_and_monitoring` expect (the spec's test deployment), with SecantusDB
//! behind it.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Bson, DateTime, Document, RawDocumentBuf};
use anymongo::wire::{op_code, MessageHeader, MsgFlags, OpMsg, OpReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::mock::{query_document, read_frame};

/// The replica set name every member reports.
pub const SET_NAME: &str = "rs0";

/// `minWireVersion` of every member.
pub const MIN_WIRE_VERSION: i32 = 8;
/// `maxWireVersion` of every member (MongoDB 7.0).
pub const MAX_WIRE_VERSION: i32 = 21;

/// The role of a member in the replica set's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberRole {
    /// A data-bearing member: primary when [`MockReplicaSet::set_primary`] says so,
    /// secondary otherwise. Listed in `hosts`.
    #[default]
    Normal,
    /// A hidden member: answers `secondary: true, hidden: true` (an RSOther to SDAM) and is
    /// listed in no member's `hosts`.
    Hidden,
    /// An arbiter: answers `arbiterOnly: true` and is listed in `arbiters`, not `hosts`.
    Arbiter,
    /// Removed from the configuration: no member lists it any more, and it answers as a
    /// replica set ghost (`isreplicaset: true`, no `setName`), as a real removed member
    /// does. The primary's `hosts` omitting it is what makes a driver drop it (SDAM,
    /// `updateRSFromPrimary`).
    Removed,
}

/// One `insert` command a member received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedInsert {
    /// The index of the member that received it.
    pub member: usize,
    /// `$db`.
    pub db: String,
    /// The collection (the value of `insert`).
    pub collection: String,
    /// The documents, from the body's `documents` array or the `documents` sequence.
    pub documents: Vec<Document>,
    /// Whether the member was primary and accepted it (otherwise it answered
    /// NotWritablePrimary, code 10107).
    pub accepted: bool,
}

/// The hellos one member received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HelloCounts {
    /// Hello requests answered at once (no `topologyVersion`/`maxAwaitTimeMS`): handshakes,
    /// polling monitors, RTT pings.
    pub immediate: usize,
    /// Awaitable hello requests (with `topologyVersion` and `maxAwaitTimeMS`).
    pub awaited: usize,
    /// Replies sent with `moreToCome` (the exhaust stream), not counting requests. Counted
    /// just before each is written.
    pub streamed_replies: usize,
}

impl HelloCounts {
    /// All hello requests: `immediate + awaited`.
    pub fn requests(&self) -> usize {
        self.immediate + self.awaited
    }
}

/// A running mock replica set; every listener, connection and task stops when it is
/// dropped.
///
/// Methods take `&self` and may be called from any thread; [`down`](Self::down) and
/// [`up`](Self::up) are async (they bind and wait for tasks to finish) and must run inside
/// a tokio runtime, as must [`start`](Self::start).
pub struct MockReplicaSet {
    shared: Arc<Shared>,
    port: u16,
    /// Serializes [`down`](Self::down) and [`up`](Self::up).
    lifecycle: tokio::sync::Mutex<()>,
}

/// What the set's tasks and the test share.
struct Shared {
    state: Mutex<State>,
    addresses: Vec<String>,
    /// The server (`host:port`) commands other than the set's own are forwarded to.
    backend: Option<String>,
    /// Bumped whenever a member's topologyVersion changes: wakes awaitable hellos.
    topology: watch::Sender<u64>,
    /// Bumped on every change a test may wait for (counters included).
    activity: watch::Sender<u64>,
}

struct State {
    /// The member designated primary, if any (it is primary only while its role is normal).
    primary: Option<usize>,
    /// The election term: the low bytes of `electionId`; grows with each new primary.
    term: u32,
    set_version: i32,
    next_connection_id: i64,
    members: Vec<Member>,
    inserts: Vec<RecordedInsert>,
    /// Set by a command that changed the topology (`replSetStepDown`): the member
    /// handling it wakes the awaitable hellos.
    topology_changed: bool,
}

struct Member {
    role: MemberRole,
    down: bool,
    /// Changes on every `down()`: an acceptor of an older epoch accepts nothing more.
    epoch: u64,
    process_id: ObjectId,
    counter: i64,
    last_write_lag: Duration,
    acceptor: Option<JoinHandle<()>>,
    connections: JoinSet<()>,
    hellos: HelloCounts,
    inserts: usize,
    open_connections: usize,
    commands: Vec<Document>,
}

impl Member {
    fn topology_version(&self) -> Document {
        doc! { "processId": self.process_id, "counter": self.counter }
    }
}

impl MockReplicaSet {
    /// Starts three members; member 0 is primary.
    pub async fn start() -> Self {
        Self::start_with(3).await
    }

    /// Starts `members` members (1 to 254) on 127.0.0.1, 127.0.0.2 … sharing one free
    /// port; member 0 is primary.
    pub async fn start_with(members: usize) -> Self {
        Self::start_members(members, None).await
    }

    /// Starts three members in front of `server` (`host:port`): they answer hellos,
    /// `replSetStepDown` and `replSetFreeze`, and forward everything else to it.
    pub async fn in_front_of(server: &str) -> Self {
        Self::start_members(3, Some(server.to_owned())).await
    }

    async fn start_members(members: usize, backend: Option<String>) -> Self {
        assert!(
            (1..=254).contains(&members),
            "a mock replica set has 1 to 254 members"
        );
        let (port, listeners) = bind_all(members).await;
        let addresses = (0..members)
            .map(|i| format!("{}:{port}", member_ip(i)))
            .collect();
        let state = State {
            primary: Some(0),
            term: 1,
            set_version: 1,
            next_connection_id: 1,
            members: (0..members)
                .map(|_| Member {
                    role: MemberRole::Normal,
                    down: false,
                    epoch: 0,
                    process_id: ObjectId::new(),
                    counter: 0,
                    last_write_lag: Duration::ZERO,
                    acceptor: None,
                    connections: JoinSet::new(),
                    hellos: HelloCounts::default(),
                    inserts: 0,
                    open_connections: 0,
                    commands: Vec::new(),
                })
                .collect(),
            inserts: Vec::new(),
            topology_changed: false,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            addresses,
            backend,
            topology: watch::channel(0).0,
            activity: watch::channel(0).0,
        });
        for (i, listener) in listeners.into_iter().enumerate() {
            let acceptor = tokio::spawn(accept(shared.clone(), i, 0, listener));
            shared.lock().members[i].acceptor = Some(acceptor);
        }
        MockReplicaSet {
            shared,
            port,
            lifecycle: tokio::sync::Mutex::new(()),
        }
    }

    /// The port all members share.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.shared.addresses.len()
    }

    /// Never true: a set has at least one member.
    pub fn is_empty(&self) -> bool {
        self.shared.addresses.is_empty()
    }

    /// The replica set name, [`SET_NAME`].
    pub fn set_name(&self) -> &str {
        SET_NAME
    }

    /// `host:port` of every member, in member order ("127.0.0.1:P", "127.0.0.2:P", …).
    pub fn addresses(&self) -> Vec<String> {
        self.shared.addresses.clone()
    }

    /// `host:port` of member `i`.
    pub fn address(&self, i: usize) -> &str {
        &self.shared.addresses[i]
    }

    /// A connection string seeding member 0 only:
    /// `mongodb://127.0.0.1:P/?replicaSet=rs0&<extra_options>` (`extra_options` may be
    /// empty, and may start with `&`).
    pub fn uri(&self, extra_options: &str) -> String {
        with_options(&self.shared.addresses[0], extra_options)
    }

    /// A connection string seeding every member.
    pub fn uri_all(&self, extra_options: &str) -> String {
        with_options(&self.shared.addresses.join(","), extra_options)
    }

    /// A connection string for member `i` alone with `directConnection=true`.
    pub fn direct_uri(&self, i: usize, extra_options: &str) -> String {
        let extra = extra_options.trim_start_matches(['&', '?']);
        let separator = if extra.is_empty() { "" } else { "&" };
        format!(
            "mongodb://{}/?directConnection=true{separator}{extra}",
            self.shared.addresses[i]
        )
    }

    /// Makes member `i` primary (and every other member secondary), or leaves the set
    /// without a primary. A new primary starts a new term: its `electionId` is greater than
    /// any before. A designated primary whose role is not [`MemberRole::Normal`] is not
    /// primary until its role is normal again.
    pub fn set_primary(&self, primary: Option<usize>) {
        if let Some(i) = primary {
            self.check_member(i);
        }
        self.change_all(|state| {
            if state.primary == primary {
                return false;
            }
            if primary.is_some() {
                state.term += 1;
            }
            state.primary = primary;
            true
        });
    }

    /// The member designated primary, as last given to [`set_primary`](Self::set_primary).
    pub fn primary(&self) -> Option<usize> {
        self.shared.lock().primary
    }

    /// The `electionId` the primary reports (none without a primary).
    pub fn election_id(&self) -> Option<ObjectId> {
        let state = self.shared.lock();
        state.effective_primary().map(|_| state.election_id())
    }

    /// The configuration version all members report (`setVersion`); grows with every role
    /// change.
    pub fn set_version(&self) -> i32 {
        self.shared.lock().set_version
    }

    /// Sets member `i`'s role; a change is a new configuration (`setVersion` + 1).
    pub fn set_role(&self, i: usize, role: MemberRole) {
        self.check_member(i);
        self.change_all(|state| {
            if state.members[i].role == role {
                return false;
            }
            state.members[i].role = role;
            state.set_version += 1;
            true
        });
    }

    /// Member `i`'s role.
    pub fn role(&self, i: usize) -> MemberRole {
        self.shared.lock().members[i].role
    }

    /// Makes member `i` report `lastWrite.lastWriteDate` = now − `lag` (default zero), for
    /// max-staleness tests. Bumps its topologyVersion.
    pub fn set_last_write_lag(&self, i: usize, lag: Duration) {
        self.check_member(i);
        {
            let mut state = self.shared.lock();
            let member = &mut state.members[i];
            member.last_write_lag = lag;
            member.counter += 1;
        }
        self.shared.notify_topology();
    }

    /// Increments member `i`'s `topologyVersion.counter` without changing anything else:
    /// wakes the awaitable hellos waiting on it.
    pub fn bump_topology_version(&self, i: usize) {
        self.check_member(i);
        self.shared.lock().members[i].counter += 1;
        self.shared.notify_topology();
    }

    /// Member `i`'s current `topologyVersion` document (`processId`, `counter`).
    pub fn topology_version(&self, i: usize) -> Document {
        self.shared.lock().members[i].topology_version()
    }

    /// The hello reply member `i` would send now (`connectionId` 0).
    pub fn hello_reply(&self, i: usize) -> Document {
        self.shared
            .lock()
            .hello(&self.shared.addresses, i, false, false, 0)
    }

    /// Takes member `i` down: closes its listener (connecting fails) and every open
    /// connection to it (reads and writes on them fail). Returns once all are closed.
    /// Nothing changes for the other members: they still list it and, if it was
    /// primary, still name it `primary` until [`set_primary`](Self::set_primary).
    pub async fn down(&self, i: usize) {
        self.check_member(i);
        let _lifecycle = self.lifecycle.lock().await;
        let (acceptor, connections) = {
            let mut state = self.shared.lock();
            let member = &mut state.members[i];
            if member.down {
                return;
            }
            member.down = true;
            member.epoch += 1;
            (
                member.acceptor.take(),
                std::mem::take(&mut member.connections),
            )
        };
        if let Some(acceptor) = acceptor {
            acceptor.abort();
            let _ = acceptor.await;
        }
        let mut connections = connections;
        connections.shutdown().await;
        self.shared.notify_activity();
    }

    /// Brings member `i` back on the same address, as a restarted process: a new
    /// `topologyVersion.processId` with counter 0.
    pub async fn up(&self, i: usize) {
        self.check_member(i);
        let _lifecycle = self.lifecycle.lock().await;
        if !self.shared.lock().members[i].down {
            return;
        }
        let listener = bind_retrying(&self.shared.addresses[i]).await;
        {
            let mut state = self.shared.lock();
            let member = &mut state.members[i];
            member.down = false;
            member.process_id = ObjectId::new();
            member.counter = 0;
            let epoch = member.epoch;
            member.acceptor = Some(tokio::spawn(accept(
                self.shared.clone(),
                i,
                epoch,
                listener,
            )));
        }
        self.shared.notify_topology();
    }

    /// Whether member `i` is down.
    pub fn is_down(&self, i: usize) -> bool {
        self.shared.lock().members[i].down
    }

    /// The hellos member `i` received so far.
    pub fn hello_counts(&self, i: usize) -> HelloCounts {
        self.shared.lock().members[i].hellos
    }

    /// The number of `insert` commands member `i` received (accepted or not).
    pub fn insert_count(&self, i: usize) -> usize {
        self.shared.lock().members[i].inserts
    }

    /// Every `insert` command received by any member, in order.
    pub fn inserts(&self) -> Vec<RecordedInsert> {
        self.shared.lock().inserts.clone()
    }

    /// The number of connections to member `i` open now.
    pub fn open_connections(&self, i: usize) -> usize {
        self.shared.lock().members[i].open_connections
    }

    /// Every command (request) member `i` received, in order; an OP_MSG's document
    /// sequences appear as arrays in the body.
    pub fn commands(&self, i: usize) -> Vec<Document> {
        self.shared.lock().members[i].commands.clone()
    }

    /// The name (first key) of every command member `i` received, in order.
    pub fn command_names(&self, i: usize) -> Vec<String> {
        self.shared.lock().members[i]
            .commands
            .iter()
            .filter_map(|command| command.keys().next().cloned())
            .collect()
    }

    /// Waits until `condition` holds, re-checking it whenever the set's state or counters
    /// change (no polling), for at most `timeout`. Returns whether it held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut condition: impl FnMut(&Self) -> bool,
    ) -> bool {
        crate::mock::wait_for_activity(&self.shared.activity, timeout, || condition(self)).await
    }

    fn check_member(&self, i: usize) {
        assert!(
            i < self.len(),
            "member {i} out of range (the set has {})",
            self.len()
        );
    }

    /// Applies `change`; when it reports a change, bumps every member's topologyVersion
    /// (every member's hello reflects the configuration and the primary).
    fn change_all(&self, change: impl FnOnce(&mut State) -> bool) {
        let changed = {
            let mut state = self.shared.lock();
            let changed = change(&mut state);
            if changed {
                for member in &mut state.members {
                    member.counter += 1;
                }
            }
            changed
        };
        if changed {
            self.shared.notify_topology();
        }
    }
}

impl Drop for MockReplicaSet {
    fn drop(&mut self) {
        let mut stopped = Vec::new();
        {
            let mut state = self.shared.lock();
            for member in &mut state.members {
                member.epoch += 1;
                if let Some(acceptor) = member.acceptor.take() {
                    acceptor.abort();
                }
                stopped.push(std::mem::take(&mut member.connections));
            }
        }
        // Dropping a JoinSet aborts its tasks; done outside the lock their guards take.
        drop(stopped);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Member `i` runs a command other than an awaitable hello: recorded, answered,
    /// and announced to whoever waits on the set.
    fn command(&self, i: usize, command: &Document, legacy: bool, connection_id: i64) -> Document {
        let (reply, topology_changed) = {
            let mut state = self.lock();
            state.members[i].commands.push(command.clone());
            let reply = state.command(&self.addresses, i, command, legacy, connection_id);
            (reply, std::mem::take(&mut state.topology_changed))
        };
        if topology_changed {
            self.notify_topology();
        } else {
            self.notify_activity();
        }
        reply
    }

    fn notify_topology(&self) {
        self.topology.send_modify(|generation| *generation += 1);
        self.notify_activity();
    }

    fn notify_activity(&self) {
        self.activity.send_modify(|generation| *generation += 1);
    }
}

impl State {
    fn effective_primary(&self) -> Option<usize> {
        self.primary
            .filter(|&i| self.members[i].role == MemberRole::Normal)
    }

    /// `7fffffff` + 4 zero bytes + the term, big-endian: grows with the term, the shape
    /// real servers use.
    fn election_id(&self) -> ObjectId {
        let mut bytes = [0u8; 12];
        bytes[..4].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        bytes[8..].copy_from_slice(&self.term.to_be_bytes());
        ObjectId::from_bytes(bytes)
    }

    /// Member `i`'s hello reply. `legacy`: answer a legacy hello (`ismaster` instead of
    /// `isWritablePrimary`).
    fn hello(
        &self,
        addresses: &[String],
        i: usize,
        legacy: bool,
        hello_ok: bool,
        connection_id: i64,
    ) -> Document {
        let member = &self.members[i];
        let writable_key = if legacy {
            "ismaster"
        } else {
            "isWritablePrimary"
        };
        let primary = self.effective_primary();
        let is_primary = primary == Some(i);
        let listed = |role: MemberRole| -> Vec<Bson> {
            self.members
                .iter()
                .zip(addresses)
                .filter(|(member, _)| member.role == role)
                .map(|(_, address)| Bson::String(address.clone()))
                .collect()
        };
        let mut reply = Document::new();
        if member.role == MemberRole::Removed {
            reply.insert(writable_key, false);
            reply.insert("secondary", false);
            reply.insert("isreplicaset", true);
            reply.insert("info", "Does not have a valid replica set config");
        } else {
            reply.insert(writable_key, is_primary);
            reply.insert(
                "secondary",
                !is_primary && matches!(member.role, MemberRole::Normal | MemberRole::Hidden),
            );
            match member.role {
                MemberRole::Hidden => {
                    reply.insert("hidden", true);
                    reply.insert("passive", true);
                }
                MemberRole::Arbiter => {
                    reply.insert("arbiterOnly", true);
                }
                MemberRole::Normal | MemberRole::Removed => {}
            }
            reply.insert("setName", SET_NAME);
            reply.insert("setVersion", self.set_version);
            if is_primary {
                reply.insert("electionId", self.election_id());
            }
            reply.insert("hosts", listed(MemberRole::Normal));
            let arbiters = listed(MemberRole::Arbiter);
            if !arbiters.is_empty() {
                reply.insert("arbiters", arbiters);
            }
            if let Some(primary) = primary {
                reply.insert("primary", addresses[primary].clone());
            }
            reply.insert("me", addresses[i].clone());
        }
        if hello_ok {
            reply.insert("helloOk", true);
        }
        let now = DateTime::now();
        reply.insert("topologyVersion", member.topology_version());
        reply.insert("minWireVersion", MIN_WIRE_VERSION);
        reply.insert("maxWireVersion", MAX_WIRE_VERSION);
        reply.insert("maxBsonObjectSize", 16 * 1024 * 1024);
        reply.insert("maxMessageSizeBytes", 48_000_000);
        reply.insert("maxWriteBatchSize", 100_000);
        reply.insert("localTime", now);
        reply.insert("logicalSessionTimeoutMinutes", 30);
        if matches!(member.role, MemberRole::Normal | MemberRole::Hidden) {
            let lag = i64::try_from(member.last_write_lag.as_millis()).unwrap_or(i64::MAX);
            let last_write = DateTime::from_millis(now.timestamp_millis().saturating_sub(lag));
            reply.insert("lastWrite", doc! { "lastWriteDate": last_write });
        }
        reply.insert("connectionId", connection_id);
        reply.insert("readOnly", false);
        reply.insert("ok", 1.0);
        reply
    }

    /// Member `i`'s reply to a command other than an awaitable hello; records it.
    fn command(
        &mut self,
        addresses: &[String],
        i: usize,
        command: &Document,
        legacy: bool,
        connection_id: i64,
    ) -> Document {
        let name = command.keys().next().map(String::as_str).unwrap_or("");
        match name {
            "hello" | "isMaster" | "ismaster" => {
                self.members[i].hellos.immediate += 1;
                let hello_ok = command.get_bool("helloOk").unwrap_or(false);
                let legacy = legacy || name != "hello";
                self.hello(addresses, i, legacy, hello_ok, connection_id)
            }
            "insert" => {
                let accepted = self.effective_primary() == Some(i);
                let documents: Vec<Document> = command
                    .get_array("documents")
                    .map(|documents| {
                        documents
                            .iter()
                            .filter_map(|d| d.as_document().cloned())
                            .collect()
                    })
                    .unwrap_or_default();
                let n = documents.len() as i64;
                self.members[i].inserts += 1;
                self.inserts.push(RecordedInsert {
                    member: i,
                    db: command.get_str("$db").unwrap_or("").to_owned(),
                    collection: command.get_str("insert").unwrap_or("").to_owned(),
                    documents,
                    accepted,
                });
                if accepted {
                    doc! { "n": n, "ok": 1.0 }
                } else {
                    not_writable_primary()
                }
            }
            "replSetStepDown" => {
                // The primary steps down and the next normal member is elected at once
                // (a real election takes longer; the driver sees the same sequence).
                if self.effective_primary() != Some(i) {
                    return not_writable_primary();
                }
                let count = self.members.len();
                let successor = (1..count)
                    .map(|offset| (i + offset) % count)
                    .find(|&j| self.members[j].role == MemberRole::Normal && !self.members[j].down);
                self.primary = successor;
                self.term += 1;
                for member in &mut self.members {
                    member.counter += 1;
                }
                self.topology_changed = true;
                doc! { "ok": 1.0 }
            }
            "find" => {
                let ns = format!(
                    "{}.{}",
                    command.get_str("$db").unwrap_or("test"),
                    command.get_str("find").unwrap_or("")
                );
                doc! { "cursor": { "id": 0_i64, "ns": ns, "firstBatch": [] }, "ok": 1.0 }
            }
            _ => doc! { "ok": 1.0 },
        }
    }
}

/// The NotWritablePrimary error a secondary answers a write with.
fn not_writable_primary() -> Document {
    doc! { "ok": 0.0, "errmsg": "not primary", "code": 10107, "codeName": "NotWritablePrimary" }
}

fn member_ip(i: usize) -> Ipv4Addr {
    let last = u8::try_from(i + 1).expect("at most 254 members");
    Ipv4Addr::new(127, 0, 0, last)
}

fn with_options(hosts: &str, extra_options: &str) -> String {
    let extra = extra_options.trim_start_matches(['&', '?']);
    let separator = if extra.is_empty() { "" } else { "&" };
    format!("mongodb://{hosts}/?replicaSet={SET_NAME}{separator}{extra}")
}

/// Binds 127.0.0.1:0, then 127.0.0.2 … on the same port; tries other ports when one of
/// them is taken.
async fn bind_all(members: usize) -> (u16, Vec<TcpListener>) {
    let mut last_error = None;
    'attempt: for _ in 0..20 {
        let first = TcpListener::bind((member_ip(0), 0))
            .await
            .expect("bind 127.0.0.1:0");
        let port = first.local_addr().expect("local address").port();
        let mut listeners = vec![first];
        for i in 1..members {
            match TcpListener::bind((member_ip(i), port)).await {
                Ok(listener) => listeners.push(listener),
                Err(e) => {
                    last_error = Some(format!("{}:{port}: {e}", member_ip(i)));
                    continue 'attempt;
                }
            }
        }
        return (port, listeners);
    }
    panic!(
        "cannot bind {members} loopback addresses on one port; last error: {}",
        last_error.unwrap_or_default()
    );
}

/// Binds `address` again for [`MockReplicaSet::up`], retrying for a while if it is still
/// taken (SO_REUSEADDR, which tokio sets, covers the TIME_WAIT sockets of the old process).
async fn bind_retrying(address: &str) -> TcpListener {
    let mut attempts = 0;
    loop {
        match TcpListener::bind(address).await {
            Ok(listener) => return listener,
            Err(_) if attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot bind {address} again: {e}"),
        }
    }
}

/// Decrements the member's open connection count when its connection task ends or is
/// aborted.
struct OpenConnection {
    shared: Arc<Shared>,
    member: usize,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.shared.lock().members[self.member].open_connections -= 1;
        self.shared.notify_activity();
    }
}

/// Accepts member `i`'s connections while its epoch is `epoch`, each served by a task in
/// the member's `connections` set.
async fn accept(shared: Arc<Shared>, i: usize, epoch: u64, listener: TcpListener) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        let mut state = shared.lock();
        let connection_id = state.next_connection_id;
        state.next_connection_id += 1;
        let member = &mut state.members[i];
        if member.epoch != epoch {
            return;
        }
        member.open_connections += 1;
        while member.connections.try_join_next().is_some() {}
        let guard = OpenConnection {
            shared: shared.clone(),
            member: i,
        };
        member
            .connections
            .spawn(serve(shared.clone(), i, socket, connection_id, guard));
        drop(state);
        shared.notify_activity();
    }
}

/// The state of one connection's writing side.
struct Writer {
    socket: OwnedWriteHalf,
    next_request_id: i32,
}

impl Writer {
    /// Sends `reply` as an OP_MSG answering `response_to`; returns its request id.
    async fn send_msg(
        &mut self,
        reply: &Document,
        flags: MsgFlags,
        response_to: i32,
    ) -> Option<i32> {
        let mut message = OpMsg::new(RawDocumentBuf::try_from(reply).ok()?);
        message.flags = flags;
        let request_id = self.next_id();
        let frame = message.encode(request_id, response_to);
        self.socket.write_all(&frame).await.ok()?;
        Some(request_id)
    }

    async fn send_reply(&mut self, reply: &Document, response_to: i32) -> Option<()> {
        let frame = OpReply::command_reply(RawDocumentBuf::try_from(reply).ok()?)
            .encode(self.next_id(), response_to);
        self.socket.write_all(&frame).await.ok()
    }

    fn next_id(&mut self) -> i32 {
        self.next_request_id = self.next_request_id.wrapping_add(1);
        self.next_request_id
    }
}

/// Serves one connection to member `i` until the client closes it, sends something
/// unreadable, or the member goes down (the task is aborted).
async fn serve(
    shared: Arc<Shared>,
    i: usize,
    socket: TcpStream,
    connection_id: i64,
    _open: OpenConnection,
) {
    let (mut reader, writer) = socket.into_split();
    let mut writer = Writer {
        socket: writer,
        next_request_id: 0,
    };
    // The connection to the real server, once a message is forwarded.
    let mut backend: Option<TcpStream> = None;
    while let Some((header, body)) = read_frame(&mut reader).await {
        let done = match header.op_code {
            op_code::QUERY => {
                let Some(mut command) = query_document(&body) else {
                    return;
                };
                if let Ok(query) = command.get_document("$query") {
                    command = query.clone();
                }
                let reply = shared.command(i, &command, true, connection_id);
                writer.send_reply(&reply, header.request_id).await
            }
            op_code::MSG => {
                let Ok(message) = OpMsg::decode(&header, &body) else {
                    return;
                };
                let Some(command) = command_of(&message) else {
                    return;
                };
                if let Some(server) = forwarded_to(&shared, &command) {
                    let expects_reply = !message.flags.contains(MsgFlags::MORE_TO_COME);
                    let forwarded = forward(
                        server,
                        &mut backend,
                        &header,
                        &body,
                        expects_reply,
                        &mut writer,
                    );
                    if forwarded.await.is_none() {
                        return;
                    }
                    continue;
                }
                serve_msg(
                    &shared,
                    i,
                    &header,
                    message.flags,
                    command,
                    connection_id,
                    &mut reader,
                    &mut writer,
                )
                .await
            }
            _ => None,
        };
        if done.is_none() {
            return;
        }
    }
}

/// The server `command` is forwarded to: the set's backend, unless the command is one
/// of the set's own (hellos, `replSetStepDown`, `replSetFreeze`).
fn forwarded_to<'a>(shared: &'a Shared, command: &Document) -> Option<&'a str> {
    let name = command.keys().next().map(String::as_str).unwrap_or("");
    let own = matches!(
        name,
        "hello" | "isMaster" | "ismaster" | "replSetStepDown" | "replSetFreeze"
    );
    shared.backend.as_deref().filter(|_| !own)
}

/// Forwards one message (`header`, `body`) to `server` on the connection's `backend`
/// connection (opened at the first), and its reply, if `expects_reply`, to the client:
/// both as they are, so the reply answers the client's request. `None` when either
/// side closed its connection (a fail point's `closeConnection` closes the client's).
async fn forward(
    server: &str,
    backend: &mut Option<TcpStream>,
    header: &MessageHeader,
    body: &[u8],
    expects_reply: bool,
    writer: &mut Writer,
) -> Option<()> {
    if backend.is_none() {
        let connection = TcpStream::connect(server).await.ok()?;
        let _ = connection.set_nodelay(true);
        *backend = Some(connection);
    }
    let connection = backend.as_mut()?;
    connection
        .write_all(&crate::mock::frame(header, body))
        .await
        .ok()?;
    if expects_reply {
        let (reply_header, reply_body) = read_frame(connection).await?;
        let reply = crate::mock::frame(&reply_header, &reply_body);
        writer.socket.write_all(&reply).await.ok()?;
    }
    Some(())
}

/// The command document of an OP_MSG: its body, with each document sequence added as an
/// array named by its identifier.
fn command_of(message: &OpMsg) -> Option<Document> {
    let mut command = Document::try_from(message.body.as_ref()).ok()?;
    for sequence in &message.sequences {
        let documents = sequence
            .documents
            .iter()
            .map(|d| Document::try_from(d.as_ref()).map(Bson::Document))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        command.insert(sequence.identifier.clone(), documents);
    }
    Some(command)
}

/// Answers one OP_MSG command: awaitable hellos wait (and, with exhaustAllowed, stream);
/// everything else is answered at once. `None` when the connection must close.
#[allow(clippy::too_many_arguments)]
async fn serve_msg(
    shared: &Shared,
    i: usize,
    header: &MessageHeader,
    flags: MsgFlags,
    command: Document,
    connection_id: i64,
    reader: &mut OwnedReadHalf,
    writer: &mut Writer,
) -> Option<()> {
    let name = command.keys().next().map(String::as_str).unwrap_or("");
    let is_hello = matches!(name, "hello" | "isMaster" | "ismaster");
    let topology_version = command.get("topologyVersion");
    let max_await = command.get("maxAwaitTimeMS");
    let awaitable = is_hello && (topology_version.is_some() || max_await.is_some());
    if !awaitable {
        let reply = shared.command(i, &command, false, connection_id);
        writer
            .send_msg(&reply, MsgFlags::empty(), header.request_id)
            .await?;
        return Some(());
    }

    {
        let mut state = shared.lock();
        let member = &mut state.members[i];
        member.commands.push(command.clone());
        member.hellos.awaited += 1;
    }
    shared.notify_activity();
    let parsed = topology_version
        .and_then(Bson::as_document)
        .and_then(parse_topology_version)
        .zip(max_await.and_then(as_millis));
    let Some((mut known, max_await)) = parsed else {
        let reply = doc! {
            "ok": 0.0, "code": 9, "codeName": "FailedToParse",
            "errmsg": "topologyVersion and maxAwaitTimeMS must be given together",
        };
        writer
            .send_msg(&reply, MsgFlags::empty(), header.request_id)
            .await?;
        return Some(());
    };
    let exhaust = flags.contains(MsgFlags::EXHAUST_ALLOWED);
    let hello_ok = command.get_bool("helloOk").unwrap_or(false);
    let legacy = name != "hello";
    let reply_flags = if exhaust {
        MsgFlags::MORE_TO_COME
    } else {
        MsgFlags::empty()
    };
    let mut response_to = header.request_id;
    loop {
        let (reply, version) = wait_for_change(
            shared,
            i,
            known,
            max_await,
            reader,
            legacy,
            hello_ok,
            connection_id,
        )
        .await?;
        known = version;
        if exhaust {
            // Counted before it is sent: a client that has read it sees it counted.
            shared.lock().members[i].hellos.streamed_replies += 1;
            shared.notify_activity();
        }
        response_to = writer.send_msg(&reply, reply_flags, response_to).await?;
        if !exhaust {
            return Some(());
        }
    }
}

/// Waits until member `i`'s topologyVersion differs from `known` (another processId, or a
/// greater counter) or `max_await` elapses, then returns its hello reply and the
/// topologyVersion it carries. `None` when the client closed the connection (or sent
/// something, which it may not while awaiting).
#[allow(clippy::too_many_arguments)]
async fn wait_for_change(
    shared: &Shared,
    i: usize,
    known: (ObjectId, i64),
    max_await: Duration,
    reader: &mut OwnedReadHalf,
    legacy: bool,
    hello_ok: bool,
    connection_id: i64,
) -> Option<(Document, (ObjectId, i64))> {
    let deadline = Instant::now() + max_await;
    let mut changes = shared.topology.subscribe();
    let mut probe = [0u8; 1];
    loop {
        {
            let state = shared.lock();
            let member = &state.members[i];
            let timed_out = Instant::now() >= deadline;
            if timed_out || member.process_id != known.0 || member.counter > known.1 {
                let reply = state.hello(&shared.addresses, i, legacy, hello_ok, connection_id);
                return Some((reply, (member.process_id, member.counter)));
            }
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = reader.read(&mut probe) => return None,
        }
    }
}

fn parse_topology_version(version: &Document) -> Option<(ObjectId, i64)> {
    let process_id = version.get_object_id("processId").ok()?;
    let counter = match version.get("counter")? {
        Bson::Int64(counter) => *counter,
        Bson::Int32(counter) => i64::from(*counter),
        _ => return None,
    };
    Some((process_id, counter))
}

fn as_millis(value: &Bson) -> Option<Duration> {
    let millis = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(v) if v.is_finite() => *v as i64,
        _ => return None,
    };
    Some(Duration::from_millis(u64::try_from(millis).ok()?))
}
