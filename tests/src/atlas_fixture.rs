//! An Atlas-shaped deployment on loopback (issue 44): what an edge client meets when it
//! talks to Atlas — a `mongodb+srv://` name whose SRV records name a three-member
//! replica set and whose TXT record carries `authSource=admin&replicaSet=…`, TLS, and
//! a SCRAM-SHA-256 user — with a network delay on every hop, DNS included, and the
//! flights of all of it on one clock, so that a measurement counts a cold request's
//! round trips from its first DNS query to its result ([`crate::latency`]).
//!
//! # How it is built
//!
//! SecantusDB cannot form a multi-node replica set, so the three members are fronts of
//! one server (as [`crate::mongos_proxy`]'s mongoses are):
//!
//! ```text
//! client ──TLS──▶ latency proxy i (127.0.0.1:pᵢ, 25 ms each way) ──▶ front i ──plain──▶ SecantusDB
//! client ──UDP──▶ DNS relay (delays each way) ──▶ crate::dns::DnsServer
//! ```
//!
//! - Front `i` terminates TLS with the tests' server certificate ([`crate::certs`],
//!   valid for the members' names too)
//!   and relays each request to SecantusDB (auth required, the SCRAM-SHA-256 user
//!   [`USER`]) on a connection of its own, unchanged; the replies of hellos are made
//!   member `i`'s of the replica set [`SET_NAME`]: `hosts` the
//!   three SRV targets, member 0 the primary, 1 and 2 secondaries, `me` its own name.
//!   So data, cursors and users are the one server's, and a read on a secondary reads
//!   the primary's data (what a caught-up secondary has).
//! - The hello replies carry no `topologyVersion`, so that drivers poll rather than
//!   stream their checks: the front relays request by request and would not pass on
//!   a streamed hello's later replies.
//! - DNS: the SRV records of `_mongodb._tcp.`[`SRV_NAME`], its TXT record, and an A
//!   record `127.0.0.1` for each member name — also sent as glue in the SRV answer's
//!   Additional section unless [`AtlasFixture::set_glue`] turns it off — served by the
//!   tests' DNS server behind
//!   a UDP relay that delays each query and each answer (the relay answers UDP only;
//!   the answers fit in a datagram, so resolvers do not retry over TCP).
//! - The members' names resolve to 127.0.0.1 and differ by port; the native runtime
//!   that resolves them through the relay ([`AtlasFixture::runtime`],
//!   [`crate::dns::runtime_with_nameserver`]) connects to the address, so the
//!   certificate is checked against 127.0.0.1; clients that connect by name check it
//!   against the name.
//!
//! Every step of the start is bounded; dropping the fixture stops the proxies, the
//! fronts (their connections closed), the relay, the DNS server and SecantusDB.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use anymongo::bson::{Bson, Document, RawDocumentBuf};
use anymongo::wire::{op_code, MessageHeader, MsgFlags, OpReply, HEADER_LEN};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle as TaskHandle;
use tokio::time::Instant;

use crate::certs::{self, TestCerts};
use crate::dns::{DnsServer, Entry};
use crate::latency::{Connection, Direction, Flight, LatencyProxy};
use crate::mock::{frame, is_hello, op_msg, query_document};
use crate::server::{ServerOptions, TestServer, TestUser};

/// The name of the `mongodb+srv://` connection string (Atlas's `cluster0.xxxxx.mongodb.net`).
pub const SRV_NAME: &str = "cluster0.abcde.mongodb.test";
/// The replica set's name, given by the TXT record.
pub const SET_NAME: &str = "atlas-abcde-shard-0";
/// The user the clients authenticate as (SCRAM-SHA-256 only, defined in `admin`).
pub const USER: &str = "atlas";
/// Its password.
pub const PASSWORD: &str = "atlas-pw";
/// How long the start of any part may take.
const START_BOUND: Duration = Duration::from_secs(60);
/// How long the relay waits for the DNS server's answer to one query.
const DNS_ANSWER_BOUND: Duration = Duration::from_secs(5);

/// The name of member `i` (an SRV target), as Atlas names its shard's members.
pub fn member_name(i: usize) -> String {
    format!("cluster0-shard-00-{i:02}.abcde.mongodb.test")
}

/// A running Atlas-shaped deployment (see the module documentation).
pub struct AtlasFixture {
    certs: TestCerts,
    /// Member `i`'s latency proxy, in front of its front.
    proxies: Vec<LatencyProxy>,
    dns_relay: DnsRelay,
    /// When the fixture's clock starts: every time it gives is since then.
    epoch: Instant,
    // Dropped after the proxies (fields drop in order): the fronts, then what they
    // relay to.
    _fronts: Vec<Front>,
    dns: DnsServer,
    _server: TestServer,
    _dir: tempfile::TempDir,
}

impl AtlasFixture {
    /// Starts it with `one_way` of delay each way on the members' links and `dns_one_way`
    /// on DNS's. Must run inside a tokio runtime (with its time driver), which runs the
    /// proxies' and the relay's tasks; starting SecantusDB blocks the calling thread.
    pub async fn start(one_way: Duration, dns_one_way: Duration) -> Result<AtlasFixture, String> {
        let bounded = |what: &'static str| move |_| format!("{what} did not start in time");
        tokio::time::timeout(START_BOUND, Self::start_unbounded(one_way, dns_one_way))
            .await
            .map_err(bounded("the Atlas-shaped fixture"))?
    }

    async fn start_unbounded(
        one_way: Duration,
        dns_one_way: Duration,
    ) -> Result<AtlasFixture, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let names: Vec<String> = (0..3).map(member_name).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let certs = certs::generate_with_server_names(dir.path(), &names)?;
        let server = TestServer::start(&ServerOptions {
            auth: true,
            users: vec![TestUser::scram(USER, PASSWORD, &["SCRAM-SHA-256"])],
            ..ServerOptions::default()
        })?;
        let tls = Arc::new(server_tls_config(&certs)?);
        let backend = format!("{}:{}", server.host, server.port);

        // The fronts first, then their proxies, whose ports the hosts name.
        let mut fronts = Vec::new();
        let mut proxies = Vec::new();
        for _ in 0..3 {
            let front = Front::bind().map_err(|e| format!("cannot start a front: {e}"))?;
            let proxy = LatencyProxy::start(&front.address.to_string(), one_way)
                .await
                .map_err(|e| format!("cannot start a latency proxy: {e}"))?;
            fronts.push(front);
            proxies.push(proxy);
        }
        let hosts: Vec<String> = proxies
            .iter()
            .enumerate()
            .map(|(i, proxy)| format!("{}:{}", member_name(i), port_of(proxy.address())))
            .collect();
        for (i, front) in fronts.iter_mut().enumerate() {
            front.serve(Member {
                index: i,
                hosts: hosts.clone(),
                backend: backend.clone(),
                tls: tls.clone(),
            })?;
        }

        let dns = DnsServer::start().map_err(|e| format!("cannot start the DNS server: {e}"))?;
        dns.set_glue(true);
        let srv = format!("_mongodb._tcp.{SRV_NAME}");
        for (i, proxy) in proxies.iter().enumerate() {
            dns.add(Entry::srv(&srv, &member_name(i), port_of(proxy.address())));
            dns.add(Entry::address(&member_name(i), [127, 0, 0, 1].into()));
        }
        let txt = format!("authSource=admin&replicaSet={SET_NAME}");
        dns.add(Entry::txt(SRV_NAME, &[&txt]));

        // One clock for every log: the earliest proxy's start.
        let epoch = proxies
            .iter()
            .map(LatencyProxy::started)
            .min()
            .unwrap_or_else(Instant::now);
        let dns_relay = DnsRelay::start(dns.address(), dns_one_way, epoch)
            .await
            .map_err(|e| format!("cannot start the DNS relay: {e}"))?;
        Ok(AtlasFixture {
            certs,
            proxies,
            dns_relay,
            epoch,
            _fronts: fronts,
            dns,
            _server: server,
            _dir: dir,
        })
    }

    /// The connection string a user copies from Atlas, with the tests' CA:
    /// `mongodb+srv://atlas:atlas-pw@cluster0.abcde.mongodb.test/?tlsCAFile=…` (TLS is on
    /// by default for `mongodb+srv`; `authSource` and `replicaSet` come from TXT).
    pub fn uri(&self) -> String {
        format!(
            "mongodb+srv://{USER}:{PASSWORD}@{SRV_NAME}/?tlsCAFile={}",
            self.certs.ca_pem.display()
        )
    }

    /// Where the DNS relay listens (UDP): the name server to give resolvers.
    pub fn nameserver(&self) -> SocketAddr {
        self.dns_relay.address
    }

    /// The native runtime with the relay as its only name server, for the SRV and TXT
    /// look-ups and the members' names ([`crate::dns::runtime_with_nameserver`]).
    pub fn runtime(&self) -> anymongo::rt::Runtime {
        crate::dns::runtime_with_nameserver(self.nameserver())
    }

    /// The members' addresses as the latency proxies listen, `127.0.0.1:port`, member
    /// 0 (the primary) first.
    pub fn member_addresses(&self) -> Vec<String> {
        self.proxies
            .iter()
            .map(|proxy| proxy.address().to_owned())
            .collect()
    }

    /// The time since the fixture's clock started: the clock of [`connections`](Self::connections).
    pub fn elapsed(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Every connection to a member so far, and every DNS query as a connection of its
    /// own (opened when the query left the client, its one flight the answer), on the
    /// fixture's clock: [`crate::latency::round_trips`] counts a request's round trips,
    /// DNS included, from them. A query counts as one round trip, like a connection's
    /// open, and what the client did after its answer arrived waited for it.
    pub fn connections(&self) -> Vec<Connection> {
        let mut all = Vec::new();
        for proxy in &self.proxies {
            let shift = proxy.started() - self.epoch;
            all.extend(proxy.connections().into_iter().map(|connection| {
                Connection {
                    opened: connection.opened + shift,
                    flights: connection
                        .flights
                        .into_iter()
                        .map(|flight| Flight {
                            sent: flight.sent + shift,
                            delivered: flight.delivered + shift,
                            ..flight
                        })
                        .collect(),
                }
            }));
        }
        all.extend(self.dns_relay.exchanges());
        all
    }

    /// Whether the SRV answer carries the members' A records in its Additional section
    /// (on from the start, as RFC 2782 asks of name servers; [`DnsServer::set_glue`]).
    pub fn set_glue(&self, glue: bool) {
        self.dns.set_glue(glue);
    }

    /// How many DNS queries reached the relay so far.
    pub fn dns_queries(&self) -> usize {
        lock(&self.dns_relay.log).len()
    }

    /// Inserts `document` into `database.collection` through the fixture (a client of
    /// its own, resolving through the relay), within a minute: the data a
    /// measured request finds.
    pub async fn seed(
        &self,
        database: &str,
        collection: &str,
        document: Document,
    ) -> Result<(), String> {
        let seeding = async {
            let options = anymongo::ClientOptions::parse(self.uri())
                .runtime(self.runtime())
                .await?;
            let client = anymongo::Client::with_runtime(options, self.runtime())?;
            let collection = client.database(database).collection::<Document>(collection);
            collection.insert_one(document).await.map(drop)
        };
        tokio::time::timeout(START_BOUND, seeding)
            .await
            .map_err(|_| "seeding timed out".to_owned())?
            .map_err(|e| format!("cannot seed the document: {e}"))
    }
}

/// The port of `127.0.0.1:port`.
fn port_of(address: &str) -> u16 {
    address
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_default()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fronts' TLS: the tests' server certificate, TLS 1.2 and 1.3 (ring).
fn server_tls_config(certs: &TestCerts) -> Result<rustls::ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(&certs.server_cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the server certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(&certs.server_key)
        .map_err(|e| format!("cannot read the server key: {e}"))?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| format!("cannot configure the fronts' TLS: {e}"))
}

/// What front `index` plays.
#[derive(Clone)]
struct Member {
    index: usize,
    /// Every member's `name:port`, member 0 first.
    hosts: Vec<String>,
    /// SecantusDB's `host:port`.
    backend: String,
    tls: Arc<rustls::ServerConfig>,
}

/// A member's front: a TLS listener on 127.0.0.1 whose connections are each relayed,
/// on a thread of their own, to a connection of their own to SecantusDB. Blocking
/// threads: a request and its reply at a time, as drivers send them.
struct Front {
    address: SocketAddr,
    listener: Option<TcpListener>,
    stop: Arc<AtomicBool>,
    /// The sockets of the connections, closed on drop so that their threads end.
    open: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Front {
    fn bind() -> io::Result<Front> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        Ok(Front {
            address: listener.local_addr()?,
            listener: Some(listener),
            stop: Arc::default(),
            open: Arc::default(),
            acceptor: None,
        })
    }

    /// Starts accepting, as `member`.
    fn serve(&mut self, member: Member) -> Result<(), String> {
        let listener = self.listener.take().ok_or("the front already serves")?;
        let stop = self.stop.clone();
        let open = self.open.clone();
        let acceptor = std::thread::Builder::new()
            .name(format!("atlas-front-{}", member.index))
            .spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    if let Ok(clone) = client.try_clone() {
                        lock(&open).push(clone);
                    }
                    let member = member.clone();
                    let open = open.clone();
                    let _ = std::thread::Builder::new()
                        .name(format!("atlas-member-{}", member.index))
                        .spawn(move || {
                            let backend = TcpStream::connect(&member.backend);
                            if let Ok(backend) = backend {
                                if let Ok(clone) = backend.try_clone() {
                                    lock(&open).push(clone);
                                }
                                relay(client, backend, &member);
                            }
                        });
                }
            })
            .map_err(|e| e.to_string())?;
        self.acceptor = Some(acceptor);
        Ok(())
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for socket in lock(&self.open).drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// Relays one client connection (TLS) to `backend` (plain), request by request, until
/// either side closes it or sends something unreadable. Hello replies become
/// `member`'s ([`member_hello`]).
fn relay(client: TcpStream, mut backend: TcpStream, member: &Member) {
    let _ = client.set_nodelay(true);
    let _ = backend.set_nodelay(true);
    let Ok(connection) = rustls::ServerConnection::new(member.tls.clone()) else {
        return;
    };
    let mut client = rustls::StreamOwned::new(connection, client);
    loop {
        let Some((header, body)) = read_frame(&mut client) else {
            return;
        };
        let hello = asks_hello(&header, &body);
        if backend.write_all(&frame(&header, &body)).is_err() {
            return;
        }
        let unacknowledged = op_msg(&header, &body)
            .is_some_and(|message| message.flags.contains(MsgFlags::MORE_TO_COME));
        if unacknowledged {
            continue;
        }
        let Some((reply_header, reply_body)) = read_frame(&mut backend) else {
            return;
        };
        let reply = match hello {
            true => member_hello(&reply_header, &reply_body, member.index, &member.hosts),
            false => Some(frame(&reply_header, &reply_body)),
        };
        let Some(reply) = reply else { return };
        if client
            .write_all(&reply)
            .and_then(|()| client.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Reads one frame (at most 48 MB), blocking.
fn read_frame(stream: &mut impl Read) -> Option<(MessageHeader, Vec<u8>)> {
    let mut header = [0u8; HEADER_LEN];
    stream.read_exact(&mut header).ok()?;
    let header = MessageHeader::parse(&header);
    let mut body = vec![0u8; header.body_len(48_000_000).ok()?];
    stream.read_exact(&mut body).ok()?;
    Some((header, body))
}

/// Whether a request is a hello: OP_MSG `hello`/`isMaster`, or the legacy OP_QUERY
/// `isMaster` of a handshake.
fn asks_hello(header: &MessageHeader, body: &[u8]) -> bool {
    match op_msg(header, body) {
        Some(message) => {
            Document::try_from(message.body.as_ref()).is_ok_and(|command| is_hello(&command))
        }
        None => {
            header.op_code == op_code::QUERY
                && query_document(body).is_some_and(|query| is_hello(&query))
        }
    }
}

/// SecantusDB's hello reply (an OP_MSG, or the OP_REPLY of a legacy hello) as member
/// `index` of [`SET_NAME`] gives it: `hosts`, `primary` (member 0), `me`, its role, and
/// no `topologyVersion` (see the module documentation). A reply that is not `ok` is
/// passed on as it is.
fn member_hello(
    header: &MessageHeader,
    body: &[u8],
    index: usize,
    hosts: &[String],
) -> Option<Vec<u8>> {
    let as_member = |reply: &mut Document| {
        if reply.get("ok").and_then(Bson::as_f64) == Some(1.0)
            || reply.get("ok").and_then(Bson::as_i32) == Some(1)
        {
            let primary = index == 0;
            // SecantusDB answers a legacy hello with both fields: each one there says
            // the member's role (a driver reads `isWritablePrimary` first).
            let mut said = false;
            for field in ["isWritablePrimary", "ismaster"] {
                if reply.contains_key(field) {
                    reply.insert(field, primary);
                    said = true;
                }
            }
            if !said {
                reply.insert("isWritablePrimary", primary);
            }
            reply.insert("secondary", !primary);
            reply.insert("setName", SET_NAME);
            reply.insert("hosts", hosts.to_vec());
            reply.insert("primary", hosts[0].clone());
            reply.insert("me", hosts[index].clone());
            for field in ["topologyVersion", "passives", "arbiters", "arbiterOnly"] {
                reply.remove(field);
            }
            if !primary {
                reply.remove("electionId");
            }
        }
        RawDocumentBuf::try_from(&*reply).ok()
    };
    if header.op_code == op_code::REPLY {
        let legacy = OpReply::decode(header, body).ok()?;
        let mut reply = Document::try_from(legacy.documents.first()?.as_ref()).ok()?;
        let reply = OpReply::command_reply(as_member(&mut reply)?);
        return Some(reply.encode(header.request_id, header.response_to));
    }
    let mut message = op_msg(header, body)?;
    let mut reply = Document::try_from(message.body.as_ref()).ok()?;
    message.body = as_member(&mut reply)?;
    Some(message.encode(header.request_id, header.response_to))
}

/// A UDP relay in front of the DNS server that delays each query and each answer by
/// `one_way`, and logs each exchange.
struct DnsRelay {
    address: SocketAddr,
    log: Arc<Mutex<Vec<Connection>>>,
    task: TaskHandle<()>,
}

impl DnsRelay {
    async fn start(upstream: SocketAddr, one_way: Duration, epoch: Instant) -> io::Result<Self> {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await?);
        let address = socket.local_addr()?;
        let log: Arc<Mutex<Vec<Connection>>> = Arc::default();
        let task = tokio::spawn(relay_dns(socket, upstream, one_way, epoch, log.clone()));
        Ok(DnsRelay { address, log, task })
    }

    /// Each query as a connection opened when it left its client, whose one flight is
    /// the answer (none when the DNS server did not answer).
    fn exchanges(&self) -> Vec<Connection> {
        lock(&self.log).clone()
    }
}

impl Drop for DnsRelay {
    fn drop(&mut self) {
        // Its queries in flight are tasks of their own, each bounded.
        self.task.abort();
    }
}

async fn relay_dns(
    socket: Arc<UdpSocket>,
    upstream: SocketAddr,
    one_way: Duration,
    epoch: Instant,
    log: Arc<Mutex<Vec<Connection>>>,
) {
    let mut buffer = vec![0u8; 65535];
    while let Ok((len, client)) = socket.recv_from(&mut buffer).await {
        let sent = Instant::now();
        let index = {
            let mut log = lock(&log);
            log.push(Connection {
                opened: sent - epoch,
                flights: Vec::new(),
            });
            log.len() - 1
        };
        let query = buffer[..len].to_vec();
        let socket = socket.clone();
        let log = log.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(sent + one_way).await;
            let Some(answer) = ask(upstream, &query).await else {
                return;
            };
            let answered = Instant::now();
            tokio::time::sleep_until(answered + one_way).await;
            let _ = socket.send_to(&answer, client).await;
            lock(&log)[index].flights.push(Flight {
                direction: Direction::ToClient,
                bytes: answer.len(),
                sent: answered - epoch,
                delivered: Instant::now() - epoch,
            });
        });
    }
}

/// The DNS server's answer to `query`, within [`DNS_ANSWER_BOUND`].
async fn ask(upstream: SocketAddr, query: &[u8]) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0").await.ok()?;
    socket.send_to(query, upstream).await.ok()?;
    let mut answer = vec![0u8; 65535];
    let len = tokio::time::timeout(DNS_ANSWER_BOUND, socket.recv(&mut answer))
        .await
        .ok()?
        .ok()?;
    answer.truncate(len);
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::bson::doc;
    use anymongo::wire::OpMsg;

    fn hosts() -> Vec<String> {
        (0..3)
            .map(|i| format!("{}:{}", member_name(i), 1000 + i))
            .collect()
    }

    fn rewritten(reply: Document, index: usize) -> Document {
        let frame = OpMsg::new(RawDocumentBuf::try_from(&reply).unwrap()).encode(9, 4);
        let (header, body) = crate::mock::split_frame(&frame).unwrap();
        let frame = member_hello(&header, &body, index, &hosts()).unwrap();
        let (header, body) = crate::mock::split_frame(&frame).unwrap();
        assert_eq!(header.response_to, 4);
        Document::try_from(op_msg(&header, &body).unwrap().body.as_ref()).unwrap()
    }

    #[test]
    fn hello_replies_become_the_members_of_a_three_member_set() {
        let server = doc! {
            "isWritablePrimary": true, "secondary": false, "setName": "secantus",
            "hosts": ["127.0.0.1:27017"], "me": "127.0.0.1:27017",
            "primary": "127.0.0.1:27017", "topologyVersion": { "counter": 0_i64 },
            "electionId": anymongo::bson::oid::ObjectId::new(), "maxWireVersion": 25,
            "ok": 1.0,
        };
        let primary = rewritten(server.clone(), 0);
        assert_eq!(primary.get_bool("isWritablePrimary").ok(), Some(true));
        assert_eq!(primary.get_bool("secondary").ok(), Some(false));
        assert_eq!(primary.get_str("setName").ok(), Some(SET_NAME));
        assert_eq!(primary.get_str("me").ok(), Some(hosts()[0].as_str()));
        assert_eq!(primary.get_array("hosts").unwrap().len(), 3);
        assert!(!primary.contains_key("topologyVersion"));
        assert!(primary.contains_key("electionId"));
        let secondary = rewritten(server.clone(), 2);
        assert_eq!(secondary.get_bool("isWritablePrimary").ok(), Some(false));
        assert_eq!(secondary.get_bool("secondary").ok(), Some(true));
        assert_eq!(secondary.get_str("me").ok(), Some(hosts()[2].as_str()));
        assert_eq!(secondary.get_str("primary").ok(), Some(hosts()[0].as_str()));
        assert!(!secondary.contains_key("electionId"));
        // A legacy hello's reply says the role in both fields.
        let mut legacy = server.clone();
        legacy.insert("ismaster", true);
        let legacy = rewritten(legacy, 1);
        assert_eq!(legacy.get_bool("isWritablePrimary").ok(), Some(false));
        assert_eq!(legacy.get_bool("ismaster").ok(), Some(false));
        // An error reply passes unchanged.
        let error = doc! { "ok": 0.0, "code": 18, "errmsg": "auth failed" };
        assert_eq!(rewritten(error.clone(), 1), error);
    }
}
