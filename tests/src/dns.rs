//! A small authoritative DNS server for tests: SRV, TXT and A records from a table
//! that tests may change while it runs (SRV polling), on `127.0.0.1:<free port>` over
//! UDP and TCP. An answer too long for UDP is sent truncated, so clients ask again over
//! TCP. A "silent" switch makes it read queries and never answer (timeout tests).
//!
//! [`spec_records`] are the records of the Initial DNS Seedlist Discovery spec's tests
//! README (`test1` … `test24` under `test.build.10gen.cc`).
//!
//! ```no_run
//! use anymongo_tests::dns::{spec_records, DnsServer};
//! let server = DnsServer::start().unwrap();
//! server.load(spec_records("127.0.0.1".parse().unwrap()));
//! let resolver = anymongo_native::TokioResolver::with_nameserver(server.address());
//! ```
//!
//! [`DnsServer::runtime`] is the native runtime with every name — SRV, TXT and the
//! hosts the driver connects to — resolved by this server, so that SRV records can point
//! at mock servers under names of the spec's test domain.
//!
//! Messages are encoded and decoded with `hickory-proto`; the server runs on a thread
//! of its own (with its own tokio runtime), so it serves whatever runtime the test
//! uses, and stops when the [`DnsServer`] is dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use hickory_proto::op::{Edns, Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::watch;

/// The TTL of records added without one, as in the spec's README.
pub const DEFAULT_TTL: u32 = 86400;

/// The largest UDP answer to a query without EDNS (RFC 1035).
const CLASSIC_UDP_LIMIT: usize = 512;

/// One record of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The owner name, without the trailing dot (matched case-insensitively).
    pub name: String,
    /// Time to live, in seconds.
    pub ttl: u32,
    /// The record's data.
    pub data: Data,
}

/// The data of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// An SRV record (priority 0, weight 5).
    Srv {
        /// The target host name, without the trailing dot.
        target: String,
        /// The target port.
        port: u16,
    },
    /// A TXT record: its character strings, each at most 255 bytes.
    Txt(Vec<String>),
    /// An A or AAAA record.
    Address(IpAddr),
}

impl Entry {
    /// An SRV record of `name` with the default TTL.
    pub fn srv(name: &str, target: &str, port: u16) -> Entry {
        Entry::new(
            name,
            Data::Srv {
                target: target.trim_end_matches('.').to_owned(),
                port,
            },
        )
    }

    /// A TXT record of `name` made of `strings`, with the default TTL.
    pub fn txt(name: &str, strings: &[&str]) -> Entry {
        Entry::new(
            name,
            Data::Txt(strings.iter().map(|s| s.to_string()).collect()),
        )
    }

    /// An A (or AAAA) record of `name`, with the default TTL.
    pub fn address(name: &str, address: IpAddr) -> Entry {
        Entry::new(name, Data::Address(address))
    }

    /// The record with another TTL.
    pub fn with_ttl(mut self, ttl: u32) -> Entry {
        self.ttl = ttl;
        self
    }

    fn new(name: &str, data: Data) -> Entry {
        Entry {
            name: normalize(name),
            ttl: DEFAULT_TTL,
            data,
        }
    }

    fn record_type(&self) -> RecordType {
        match &self.data {
            Data::Srv { .. } => RecordType::SRV,
            Data::Txt(_) => RecordType::TXT,
            Data::Address(IpAddr::V4(_)) => RecordType::A,
            Data::Address(IpAddr::V6(_)) => RecordType::AAAA,
        }
    }

    fn to_record(&self) -> io::Result<Record> {
        let data = match &self.data {
            Data::Srv { target, port } => RData::SRV(SRV::new(0, 5, *port, fqdn(target)?)),
            Data::Txt(strings) => RData::TXT(TXT::new(strings.clone())),
            Data::Address(IpAddr::V4(ip)) => RData::A(A(*ip)),
            Data::Address(IpAddr::V6(ip)) => RData::AAAA(AAAA(*ip)),
        };
        Ok(Record::from_rdata(fqdn(&self.name)?, self.ttl, data))
    }
}

fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn fqdn(name: &str) -> io::Result<Name> {
    Name::from_ascii(format!("{}.", normalize(name)))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: {e}")))
}

/// What the server thread shares with the [`DnsServer`] handle.
#[derive(Default)]
struct Shared {
    records: Mutex<Vec<Entry>>,
    silent: AtomicBool,
    /// SRV answers carry their targets' address records in the Additional section.
    glue: AtomicBool,
    queries: AtomicUsize,
    tcp_queries: AtomicUsize,
    /// How many questions arrived per (normalized) name.
    asked: Mutex<BTreeMap<String, usize>>,
    /// Notified when a query arrives.
    arrived: tokio::sync::Notify,
}

impl Shared {
    /// Counts one query on arrival (answered or not).
    fn count(&self, query: &[u8]) {
        self.queries.fetch_add(1, Ordering::SeqCst);
        let Ok(request) = Message::from_vec(query) else {
            return;
        };
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        for question in &request.queries {
            *asked
                .entry(normalize(&question.name().to_ascii()))
                .or_default() += 1;
        }
        drop(asked);
        self.arrived.notify_waiters();
    }
}

/// A running test DNS server; dropping it stops the server.
pub struct DnsServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DnsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl DnsServer {
    /// Starts a server with no records on `127.0.0.1`, UDP and TCP on the same free port.
    pub fn start() -> io::Result<DnsServer> {
        let (udp, tcp) = bind_pair()?;
        let address = udp.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("test-dns".into())
            .spawn(move || runtime.block_on(serve(udp, tcp, serving, stopped)))?;
        Ok(DnsServer {
            address,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// Where the server listens (UDP and TCP).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Adds records.
    pub fn load(&self, entries: impl IntoIterator<Item = Entry>) {
        self.records().extend(entries);
    }

    /// Adds one record.
    pub fn add(&self, entry: Entry) {
        self.records().push(entry);
    }

    /// Removes every record of `name` of the type of `kind` (`"SRV"`, `"TXT"`, `"A"`,
    /// `"AAAA"`), or of all types for `None`.
    pub fn remove(&self, name: &str, kind: Option<&str>) {
        let name = normalize(name);
        self.records().retain(|entry| {
            entry.name != name || kind.is_some_and(|kind| entry.record_type().to_string() != kind)
        });
    }

    /// Replaces the SRV records of `name` by `targets` (host, port), each with `ttl`.
    pub fn set_srv(&self, name: &str, targets: &[(&str, u16)], ttl: u32) {
        self.remove(name, Some("SRV"));
        self.load(
            targets
                .iter()
                .map(|(target, port)| Entry::srv(name, target, *port).with_ttl(ttl)),
        );
    }

    /// Removes every record.
    pub fn clear(&self) {
        self.records().clear();
    }

    /// A copy of the table.
    pub fn entries(&self) -> Vec<Entry> {
        self.records().clone()
    }

    /// While `silent`, queries are read and never answered.
    pub fn set_silent(&self, silent: bool) {
        self.shared.silent.store(silent, Ordering::SeqCst);
    }

    /// While `glue`, an SRV answer carries the A and AAAA records of its targets in its
    /// Additional section, as RFC 2782 asks of servers ("glue"), so that clients need
    /// not ask for the targets' names; off by default, as before.
    pub fn set_glue(&self, glue: bool) {
        self.shared.glue.store(glue, Ordering::SeqCst);
    }

    /// How many queries arrived (UDP and TCP, answered or not).
    pub fn queries(&self) -> usize {
        self.shared.queries.load(Ordering::SeqCst)
    }

    /// How many of them arrived over TCP.
    pub fn tcp_queries(&self) -> usize {
        self.shared.tcp_queries.load(Ordering::SeqCst)
    }

    /// How many queries for `name` (any type; case and a trailing dot do not matter)
    /// arrived, answered or not.
    pub fn queries_for(&self, name: &str) -> usize {
        let asked = self
            .shared
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        asked.get(&normalize(name)).copied().unwrap_or(0)
    }

    /// Resolves once a query for each of `names` has arrived (answered or not); while
    /// the server is silent, that is with all of them awaiting their answers at once.
    /// Unbounded: bound it.
    pub async fn asked_all(&self, names: &[&str]) {
        loop {
            // Registered before the check, so that an arrival in between wakes it.
            let mut arrived = std::pin::pin!(self.shared.arrived.notified());
            arrived.as_mut().enable();
            if names.iter().all(|name| self.queries_for(name) > 0) {
                return;
            }
            arrived.await;
        }
    }

    /// The native runtime ([`anymongo_native::runtime`]) with this server as its only
    /// name server — for the SRV and TXT look-ups and for the host names the driver
    /// connects to, so SRV targets such as `localhost.test.build.10gen.cc` reach
    /// whatever their A records name. TLS certificates are checked against the address
    /// then, so use it with plain TCP.
    pub fn runtime(&self) -> anymongo::rt::Runtime {
        runtime_with_nameserver(self.address)
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.shared
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The native runtime with `nameserver` as its only name server, as
/// [`DnsServer::runtime`] says; for a relay in front of a [`DnsServer`] (the Atlas-shaped
/// fixture's, which delays its answers).
pub fn runtime_with_nameserver(nameserver: SocketAddr) -> anymongo::rt::Runtime {
    let resolver = Arc::new(anymongo_native::TokioResolver::with_nameserver(nameserver));
    anymongo::rt::Runtime {
        transport: Arc::new(ResolvingTransport {
            resolver: resolver.clone(),
        }),
        resolver,
        ..anymongo_native::runtime()
    }
}

/// [`anymongo_native::TokioTransport`] to the address a host name's A (or AAAA) record
/// names: the first of the addresses the client gives ([`ConnectTarget::addresses`],
/// its glue or its own look-up through the same resolver), else as resolved by the
/// test DNS server. The target's host becomes that address, so TLS checks the
/// certificate against it.
///
/// [`ConnectTarget::addresses`]: anymongo::rt::ConnectTarget::addresses
struct ResolvingTransport {
    resolver: Arc<anymongo_native::TokioResolver>,
}

impl anymongo::rt::Transport for ResolvingTransport {
    fn connect<'a>(
        &'a self,
        target: &'a anymongo::rt::ConnectTarget,
    ) -> anymongo::rt::BoxFuture<'a, io::Result<Box<dyn anymongo::rt::Stream>>> {
        use anymongo::rt::Resolver;
        anymongo::rt::boxed(async move {
            let mut target = target.clone();
            if !target.is_unix_socket() && target.host.parse::<IpAddr>().is_err() {
                let ips = match target.addresses.is_empty() {
                    true => self.resolver.ip(&target.host).await?,
                    false => std::mem::take(&mut target.addresses),
                };
                let ip = ips.first().ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("{}: no address record", target.host),
                    )
                })?;
                target.host = ip.to_string();
            }
            anymongo_native::TokioTransport::default()
                .connect(&target)
                .await
        })
    }
}

/// A UDP socket and a TCP listener on the same free loopback port.
fn bind_pair() -> io::Result<(std::net::UdpSocket, std::net::TcpListener)> {
    let mut last = None;
    for _ in 0..20 {
        let udp = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        match std::net::TcpListener::bind(udp.local_addr()?) {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free port")))
}

async fn serve(
    udp: std::net::UdpSocket,
    tcp: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let prepared = (|| -> io::Result<(UdpSocket, TcpListener)> {
        udp.set_nonblocking(true)?;
        tcp.set_nonblocking(true)?;
        Ok((UdpSocket::from_std(udp)?, TcpListener::from_std(tcp)?))
    })();
    let Ok((udp, tcp)) = prepared else {
        return;
    };
    let mut buf = vec![0u8; 65535];
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            received = udp.recv_from(&mut buf) => {
                let Ok((len, peer)) = received else { continue };
                shared.count(&buf[..len]);
                if shared.silent.load(Ordering::SeqCst) {
                    continue;
                }
                if let Some(reply) = answer(&shared, &buf[..len], true) {
                    let _ = udp.send_to(&reply, peer).await;
                }
            }
            accepted = tcp.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = Arc::clone(&shared);
                let mut stopped = stopped.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = stopped.changed() => {}
                        _ = serve_tcp(stream, &shared) => {}
                    }
                });
            }
        }
    }
}

/// Answers length-prefixed queries on one TCP connection until the client closes it.
async fn serve_tcp(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    loop {
        let len = stream.read_u16().await?;
        let mut query = vec![0u8; usize::from(len)];
        stream.read_exact(&mut query).await?;
        shared.count(&query);
        shared.tcp_queries.fetch_add(1, Ordering::SeqCst);
        if shared.silent.load(Ordering::SeqCst) {
            continue;
        }
        if let Some(reply) = answer(shared, &query, false) {
            let Ok(len) = u16::try_from(reply.len()) else {
                continue;
            };
            stream.write_u16(len).await?;
            stream.write_all(&reply).await?;
        }
    }
}

/// The encoded answer to one query; `None` for what is not a query.
fn answer(shared: &Shared, query: &[u8], udp: bool) -> Option<Vec<u8>> {
    let request = Message::from_vec(query).ok()?;
    if request.metadata.message_type != MessageType::Query {
        return None;
    }
    let mut response = Message::response(request.metadata.id, request.metadata.op_code);
    response.metadata.authoritative = true;
    response.metadata.recursion_desired = request.metadata.recursion_desired;
    response.add_queries(request.queries.iter().cloned());
    let limit = match &request.edns {
        Some(edns) => {
            let mut reply_edns = Edns::new();
            reply_edns.set_max_payload(edns.max_payload().max(512));
            response.set_edns(reply_edns);
            usize::from(edns.max_payload().max(512))
        }
        None => CLASSIC_UDP_LIMIT,
    };
    let records = shared
        .records
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let names: BTreeSet<&str> = records.iter().map(|entry| entry.name.as_str()).collect();
    let mut code = ResponseCode::NoError;
    for question in &request.queries {
        let name = normalize(&question.name().to_ascii());
        if !names.contains(name.as_str()) {
            code = ResponseCode::NXDomain;
            continue;
        }
        for entry in records.iter().filter(|entry| {
            entry.name == name
                && (question.query_type() == RecordType::ANY
                    || entry.record_type() == question.query_type())
        }) {
            response.add_answer(entry.to_record().ok()?);
            if let Data::Srv { target, .. } = &entry.data {
                if shared.glue.load(Ordering::SeqCst) {
                    for glue in glue_of(&records, target) {
                        response.add_additional(glue.to_record().ok()?);
                    }
                }
            }
        }
    }
    response.metadata.response_code = code;
    let encoded = response.to_vec().ok()?;
    if udp && encoded.len() > limit {
        return response.truncate().to_vec().ok();
    }
    Some(encoded)
}

/// The A and AAAA records of `target` in the table: an SRV answer's glue.
fn glue_of<'a>(records: &'a [Entry], target: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
    let target = normalize(target);
    records
        .iter()
        .filter(move |entry| entry.name == target && matches!(entry.data, Data::Address(_)))
}

/// The SRV owner name of a spec test host: `_mongodb._tcp.{host}.test.build.10gen.cc`.
fn srv_of(host: &str) -> String {
    format!("_mongodb._tcp.{host}.test.build.10gen.cc")
}

/// The records of the Initial DNS Seedlist Discovery spec's tests README, with the two
/// `localhost…` names pointing at `address` (the README uses 127.0.0.1). The SRV
/// records point at ports 27017–27019 (and 8000 for the load-balanced `test23` and
/// `test24`), as the README says, plus the few records the JSON tests need that the
/// README does not list (see the comments).
pub fn spec_records(address: IpAddr) -> Vec<Entry> {
    const LOCAL: &str = "localhost.test.build.10gen.cc";
    let mut entries = vec![
        Entry::address(LOCAL, address),
        Entry::address("localhost.sub.test.build.10gen.cc", address),
    ];
    let srv: &[(&str, &str, u16)] = &[
        ("test1", LOCAL, 27017),
        ("test1", LOCAL, 27018),
        ("test2", LOCAL, 27018),
        ("test2", LOCAL, 27019),
        ("test3", LOCAL, 27017),
        ("test5", LOCAL, 27017),
        ("test6", LOCAL, 27017),
        ("test7", LOCAL, 27017),
        ("test8", LOCAL, 27017),
        ("test10", LOCAL, 27017),
        ("test11", LOCAL, 27017),
        ("test12", "localhost.build.10gen.cc", 27017),
        ("test13", "test.build.10gen.cc", 27017),
        ("test14", "localhost.not-test.build.10gen.cc", 27017),
        ("test15", "localhost.test.not-build.10gen.cc", 27017),
        ("test16", "localhost.test.build.not-10gen.cc", 27017),
        ("test17", "localhost.test.build.10gen.not-cc", 27017),
        ("test18", "localhost.sub.test.build.10gen.cc", 27017),
        ("test19", "localhost.evil.build.10gen.cc", 27017),
        ("test19", LOCAL, 27017),
        ("test20", LOCAL, 27017),
        ("test21", LOCAL, 27017),
        ("test23", LOCAL, 8000),
        ("test24", LOCAL, 8000),
    ];
    entries.extend(
        srv.iter()
            .map(|(host, target, port)| Entry::srv(&srv_of(host), target, *port)),
    );
    // The README lists one record for test22, but `srv-service-name.json` expects two
    // seeds (as the live test.build.10gen.cc zone has them).
    for port in [27017, 27018] {
        entries.push(Entry::srv(
            "_customname._tcp.test22.test.build.10gen.cc",
            LOCAL,
            port,
        ));
    }
    // Not in the README, needed by `identical-hostnames-valid-{three,four}-parts.json`:
    // a host name with three or more labels whose SRV record names itself.
    for host in ["test.build.10gen.cc", "build.10gen.cc"] {
        entries.push(Entry::srv(&format!("_mongodb._tcp.{host}"), host, 27017));
    }
    let txt: &[(&str, &[&str])] = &[
        ("test5", &["replicaSet=repl0&authSource=thisDB"]),
        ("test6", &["replicaSet=repl0"]),
        ("test6", &["authSource=otherDB"]),
        ("test7", &["ssl=false"]),
        ("test8", &["authSource"]),
        ("test10", &["socketTimeoutMS=500"]),
        ("test11", &["replicaS", "et=rep", "l0"]),
        ("test20", &["loadBalanced=true"]),
        ("test21", &["loadBalanced=false"]),
        ("test24", &["loadBalanced=true"]),
    ];
    entries.extend(
        txt.iter()
            .map(|(host, strings)| Entry::txt(&format!("{host}.test.build.10gen.cc"), strings)),
    );
    entries
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::Query;

    use super::*;

    /// The server's answer to an SRV question about a table with one target and its A
    /// record, with glue on or off.
    fn srv_answer(glue: bool) -> Message {
        let shared = Shared::default();
        shared.glue.store(glue, Ordering::SeqCst);
        let srv = "_mongodb._tcp.cluster0.example.test";
        shared.records.lock().unwrap().extend([
            Entry::srv(srv, "db0.example.test", 27017),
            Entry::address("db0.example.test", [10, 0, 0, 1].into()),
            Entry::address("other.example.test", [10, 0, 0, 2].into()),
        ]);
        let mut query = Message::new(1, MessageType::Query, hickory_proto::op::OpCode::Query);
        query.add_query(Query::query(fqdn(srv).unwrap(), RecordType::SRV));
        let reply = answer(&shared, &query.to_vec().unwrap(), true).unwrap();
        Message::from_vec(&reply).unwrap()
    }

    #[test]
    fn srv_answers_carry_their_targets_addresses_when_glue_is_on() {
        let with = srv_answer(true);
        assert_eq!(with.answers.len(), 1);
        let glue: Vec<(String, RData)> = with
            .additionals
            .iter()
            .map(|record| (record.name.to_ascii(), record.data.clone()))
            .collect();
        assert_eq!(
            glue,
            [(
                "db0.example.test.".to_owned(),
                RData::A(A::new(10, 0, 0, 1))
            )]
        );
        assert!(srv_answer(false).additionals.is_empty());
    }
}
