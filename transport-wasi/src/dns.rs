//! A stub DNS client over wasi:sockets: one question to one name server, over UDP, and
//! over TCP when the UDP answer is truncated. Messages are encoded and decoded with
//! `hickory-proto`; the sockets are wasi:sockets' own (UDP here, TCP through
//! [`TcpConnection`]), driven by wstd's reactor.
//!
//! Every exchange is bounded by [`ATTEMPT_TIMEOUT`] on the WASI monotonic clock, so a
//! look-up ends after at most `UDP_ATTEMPTS` UDP exchanges and one TCP exchange
//! whatever the name server does.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::network::ErrorCode;
use wasip2::sockets::udp::OutgoingDatagram;
use wasip2::sockets::udp_create_socket::create_udp_socket;
use wstd::future::FutureExt;
use wstd::runtime::AsyncPollable;

use crate::tcp::{family, socket_error, wasi_address, TcpConnection};

/// How long one exchange may take: a UDP query and its answer, or a TCP connection,
/// query and answer.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// UDP exchanges before giving up: a datagram lost either way is asked again once.
const UDP_ATTEMPTS: u32 = 2;

/// The UDP payload size offered with EDNS(0) (RFC 6891 §6.2.3, §6.2.5): 1232 bytes
/// avoids IP fragmentation on any path (1280-byte IPv6 minimum MTU less the IPv6 and
/// UDP headers). Without EDNS a UDP answer is limited to 512 bytes (RFC 1035 §4.2.1);
/// anything larger comes back truncated either way and is asked again over TCP.
const EDNS_PAYLOAD: u16 = 1232;

/// How many datagrams one receive may take from the socket.
const RECEIVE_BATCH: u64 = 16;

/// The name servers of `/etc/resolv.conf`, when the host grants read access to it
/// (wasmtime: `--dir /etc::/etc`).
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The port of every `nameserver` of resolv.conf (RFC 1035 §4.2).
const DNS_PORT: u16 = 53;

/// The first `nameserver` of `/etc/resolv.conf`, or an error saying how to name one.
pub(crate) fn system_nameserver() -> io::Result<SocketAddr> {
    let how = "name one with WasiResolver::with_nameserver, or let the program read \
               /etc/resolv.conf (wasmtime: --dir /etc::/etc)";
    let text = std::fs::read_to_string(RESOLV_CONF).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!("no DNS name server: cannot read {RESOLV_CONF} ({error}); {how}"),
        )
    })?;
    first_nameserver(&text)
        .map(|ip| SocketAddr::new(ip, DNS_PORT))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no DNS name server: {RESOLV_CONF} has no usable nameserver line; {how}"),
            )
        })
}

/// The first `nameserver ADDRESS` line of a resolv.conf whose address this client can
/// use (an IPv6 address with a `%zone` cannot be named through wasi:sockets).
fn first_nameserver(text: &str) -> Option<IpAddr> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("nameserver"), Some(address)) => address.parse().ok(),
            _ => None,
        }
    })
}

/// The records of one answer that the resolver reads.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    /// The records of the type asked.
    pub(crate) records: Vec<Record>,
    /// The smallest TTL of the answer section, the CNAME chain's included; `None`
    /// when it is empty.
    pub(crate) shortest_ttl: Option<u32>,
    /// The Additional section (an SRV answer's glue).
    pub(crate) additionals: Vec<Record>,
}

/// Asks `server` for the records of type `kind` of `name` (made fully qualified: no
/// search domains). A name that does not exist (NXDOMAIN) or has no such records gives
/// an empty answer, as the native resolver does; other response codes, a malformed
/// answer or no answer in time are errors (the last one of kind `TimedOut`).
pub(crate) async fn lookup(server: SocketAddr, name: &str, kind: RecordType) -> io::Result<Answer> {
    let fqdn = match name.ends_with('.') {
        true => name.to_owned(),
        false => format!("{name}."),
    };
    let question = Query::query(
        Name::from_ascii(&fqdn).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name} is not a DNS name: {error}"),
            )
        })?,
        kind,
    );
    let reply = exchange(server, &question).await?;
    match reply.metadata.response_code {
        ResponseCode::NoError => Ok(Answer {
            shortest_ttl: reply.answers.iter().map(|record| record.ttl).min(),
            records: reply
                .answers
                .into_iter()
                // A CNAME chain leading to the records comes with them: keep the records.
                .filter(|record| record.record_type() == kind)
                .collect(),
            additionals: reply.additionals,
        }),
        ResponseCode::NXDomain => Ok(Answer::default()),
        code => Err(io::Error::other(format!(
            "the name server {server} answered {code} to {kind} {name}"
        ))),
    }
}

/// The answer to `question`: over UDP, retried when an exchange times out, then over
/// TCP when the UDP answer is truncated.
async fn exchange(server: SocketAddr, question: &Query) -> io::Result<Message> {
    let mut attempt = 1;
    let answer = loop {
        // Each attempt has an id and a source port of its own, so a late answer to an
        // earlier one is never taken for this one's.
        let query = Outgoing::new(question)?;
        match bounded(server, "UDP", udp_exchange(server, &query)).await {
            // A datagram lost either way: ask again.
            Err(error) if error.kind() == io::ErrorKind::TimedOut && attempt < UDP_ATTEMPTS => {
                attempt += 1
            }
            answer => break answer?,
        }
    };
    // A truncated answer (TC, RFC 1035 §4.1.1, §4.2.1) is set aside and the question
    // asked again over TCP, where the whole answer fits (RFC 2181 §9, RFC 7766 §5).
    if !answer.metadata.truncation {
        return Ok(answer);
    }
    let query = Outgoing::new(question)?;
    let bytes = bounded(server, "TCP", tcp_exchange(server, &query.bytes)).await?;
    query.answer(&bytes)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the name server {server} answered another question over TCP"),
        )
    })
}

/// Runs one exchange with `server` over `transport` for at most [`ATTEMPT_TIMEOUT`].
async fn bounded<T>(
    server: SocketAddr,
    transport: &str,
    exchange: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    exchange
        .timeout(wstd::task::sleep(ATTEMPT_TIMEOUT.into()))
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the name server {server} did not answer over {transport} within {ATTEMPT_TIMEOUT:?}"
                ),
            ))
        })
}

/// One encoded query and what its answer must match.
struct Outgoing<'a> {
    id: u16,
    question: &'a Query,
    bytes: Vec<u8>,
}

impl<'a> Outgoing<'a> {
    /// Encodes `question` with a fresh random id (RFC 5452 §9.2: ids an off-path
    /// attacker cannot guess).
    fn new(question: &'a Query) -> io::Result<Self> {
        let [.., high, low] = wasip2::random::random::get_random_u64().to_be_bytes();
        let id = u16::from_be_bytes([high, low]);
        let mut message = Message::new(id, MessageType::Query, OpCode::Query);
        // A stub resolver asks for recursion (RFC 1035 §4.1.1, RD).
        message.metadata.recursion_desired = true;
        message.add_query(question.clone());
        let mut edns = Edns::new();
        edns.set_max_payload(EDNS_PAYLOAD);
        message.set_edns(edns);
        let bytes = message.to_vec().map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot encode the DNS query {question}: {error}"),
            )
        })?;
        Ok(Outgoing {
            id,
            question,
            bytes,
        })
    }

    /// Decodes a reply: `None` when it is not the answer to this query (another id or
    /// question, RFC 5452 §3), an error when it is not a DNS message at all.
    fn answer(&self, reply: &[u8]) -> io::Result<Option<Message>> {
        let message = Message::from_vec(reply).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("malformed DNS answer to {}: {error}", self.question),
            )
        })?;
        let matches = message.metadata.id == self.id
            && message.metadata.message_type == MessageType::Response
            && message.queries.as_slice() == std::slice::from_ref(self.question);
        Ok(matches.then_some(message))
    }
}

/// Sends `query` in one datagram from a fresh socket (a new ephemeral source port each
/// time, RFC 5452 §9.2) and waits for its answer, passing over datagrams that answer
/// something else.
async fn udp_exchange(server: SocketAddr, query: &Outgoing<'_>) -> io::Result<Message> {
    let failed = |doing| move |code| socket_error(&format!("DNS to {server}"), doing, code);
    // Declared in this order so they drop in the reverse one: each pollable before the
    // resource it watches, the streams before their socket (wasi:sockets requires it).
    let socket = create_udp_socket(family(server)).map_err(failed("creating a UDP socket"))?;
    let unspecified = match server {
        SocketAddr::V4(_) => SocketAddr::from(([0u8; 4], 0)),
        SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
    };
    socket
        .start_bind(&instance_network(), wasi_address(unspecified))
        .map_err(failed("binding a UDP socket"))?;
    let bound = AsyncPollable::new(socket.subscribe());
    loop {
        match socket.finish_bind() {
            Err(ErrorCode::WouldBlock) => bound.wait_for().await,
            done => break done.map_err(failed("binding a UDP socket"))?,
        }
    }
    let (incoming, outgoing) = socket
        .stream(Some(wasi_address(server)))
        .map_err(failed("connecting a UDP socket"))?;
    let writable = AsyncPollable::new(outgoing.subscribe());
    while outgoing.check_send().map_err(failed("sending"))? == 0 {
        writable.wait_for().await;
    }
    let datagram = OutgoingDatagram {
        data: query.bytes.clone(),
        remote_address: None,
    };
    if outgoing.send(&[datagram]).map_err(failed("sending"))? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("the query to the name server {server} was not sent"),
        ));
    }
    let readable = AsyncPollable::new(incoming.subscribe());
    loop {
        // The stream is connected: every datagram comes from `server`.
        for datagram in incoming
            .receive(RECEIVE_BATCH)
            .map_err(failed("receiving"))?
        {
            if let Some(answer) = query.answer(&datagram.data)? {
                return Ok(answer);
            }
        }
        readable.wait_for().await;
    }
}

/// Sends `query` over a new TCP connection and reads one answer: each message is
/// preceded by its length in two bytes, most significant first (RFC 1035 §4.2.2,
/// RFC 7766 §8).
async fn tcp_exchange(server: SocketAddr, query: &[u8]) -> io::Result<Vec<u8>> {
    let length = u16::try_from(query.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a DNS query longer than 65535 bytes",
        )
    })?;
    let mut connection = TcpConnection::connect(server)
        .await
        .map_err(|error| io::Error::new(error.kind(), format!("DNS to {error}")))?;
    let mut framed = Vec::with_capacity(2 + query.len());
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(query);
    connection.write_all(&framed).await?;
    let mut length = [0; 2];
    read_exact(&mut connection, &mut length, server).await?;
    let mut answer = vec![0; usize::from(u16::from_be_bytes(length))];
    read_exact(&mut connection, &mut answer, server).await?;
    Ok(answer)
}

async fn read_exact(
    connection: &mut TcpConnection,
    buf: &mut [u8],
    server: SocketAddr,
) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match connection.read(&mut buf[filled..]).await? {
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the name server {server} closed the TCP connection mid-answer"),
                ))
            }
            read => filled += read,
        }
    }
    Ok(())
}
