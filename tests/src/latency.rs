//! A latency proxy: a loopback TCP proxy that delays each direction by a fixed
//! one-way time and records, per connection, the *flights* — who waited for whom — so
//! that a measurement can say how many round trips a request spent, not only how long
//! it took.
//!
//! # The network it plays
//!
//! Each accepted connection gets a connection of its own to the server. Bytes are
//! relayed as they are (TLS included: the proxy never parses them), each chunk
//! delivered one one-way time after it left its sender, in order, and without waiting
//! for the chunks before it to be delivered: a pipe with a delay, not stop-and-wait.
//!
//! On loopback the kernel completes the TCP handshake at once, so the proxy plays it:
//! a connection accepted at `opened` is, for its client, connected one round trip
//! (`2 × one_way`) later, and bytes its client wrote sooner are taken as sent then.
//! So a TCP connect costs its round trip, as on a real network, in the client's clock.
//!
//! # Flights
//!
//! A flight is a run of bytes in one direction that starts after bytes went the other
//! way (or, for a connection's first, after the connect). A side's close (its FIN,
//! delayed like its bytes) is a flight of 0 bytes of its own, so that what the other
//! side sends in answer (a TLS close_notify) is not taken for the end of its last
//! reply. Its [`Flight::sent`] is when
//! its first byte left its sender (for client→server bytes, no sooner than the
//! connect completed, as above); its [`Flight::delivered`] when its last byte reached
//! the other end. All times are since the proxy started.
//!
//! # Counting round trips
//!
//! [`round_trips`] counts the round trips on the critical path of what the client did
//! within a window of time, as the depth of a chain of waits:
//!
//! - A connection's open (the SYN, answered by the proxy's accept: the SYN/ACK) is one
//!   round trip. Its depth is 1 more than that of the server→client flight, on any
//!   connection, delivered last before the open (the reply that made the client open
//!   it, e.g. the hello that selected the server), or 1 when there is none in the window.
//! - Each client→server flight (but a close) had to wait for what came before it on its connection
//!   (the SYN/ACK, or a server→client flight): its depth is 1 more than the connection's
//!   previous client→server flight or open. A flight on a connection opened before the
//!   window (a pooled connection) has depth 1 when it is the first in the window.
//! - A server→client flight answers its connection's last client→server flight (or
//!   open) and has its depth.
//!
//! The request's round trips are the depth of the server→client flight (but a close)
//! delivered last within the window: the result, the reply the client waited for
//! before it could say it had one. Flights that started before the window, and replies
//! delivered after it, are left out; so is a concurrent background chain (a monitor's
//! checks, its round-trip-time connection) that the result did not wait for, however
//! deep it went meanwhile.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// Which way bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the server.
    ToServer,
    /// From the server to the client.
    ToClient,
}

/// A run of bytes in one direction (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flight {
    /// Which way it went.
    pub direction: Direction,
    /// How many bytes it carried; 0 for a close (FIN).
    pub bytes: usize,
    /// When its first byte left its sender, since the proxy started.
    pub sent: Duration,
    /// When its last byte reached the other end, since the proxy started.
    pub delivered: Duration,
}

/// One accepted connection and its flights, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Connection {
    /// When the proxy accepted it, since the proxy started.
    pub opened: Duration,
    /// Its flights, in the order they were sent.
    pub flights: Vec<Flight>,
}

/// A running latency proxy; its listener and connections end when it is dropped.
pub struct LatencyProxy {
    address: String,
    started: Instant,
    log: Log,
    acceptor: JoinHandle<()>,
}

/// The connections so far, shared by the proxy's tasks and the measurement.
type Log = Arc<Mutex<Vec<Connection>>>;

impl LatencyProxy {
    /// Listens on a free port of 127.0.0.1 in front of `server` (`host:port`),
    /// delaying each direction by `one_way`. Must run inside a tokio runtime (with
    /// its time driver), which runs the proxy's tasks.
    pub async fn start(server: &str, one_way: Duration) -> std::io::Result<LatencyProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let started = Instant::now();
        let log = Log::default();
        let acceptor = tokio::spawn(accept(
            listener,
            server.to_owned(),
            one_way,
            started,
            log.clone(),
        ));
        Ok(LatencyProxy {
            address,
            started,
            log,
            acceptor,
        })
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// When the proxy started: its [`Connection`]s' times are since then (so that the
    /// logs of several proxies can be put on one clock).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The time since the proxy started: the clock of its [`Connection`]s.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The connections accepted so far, with their flights so far.
    pub fn connections(&self) -> Vec<Connection> {
        lock(&self.log).clone()
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        // Aborting the acceptor drops its JoinSet, which aborts every connection.
        self.acceptor.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept(
    listener: TcpListener,
    server: String,
    one_way: Duration,
    started: Instant,
    log: Log,
) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let opened = Instant::now();
        let index = {
            let mut log = lock(&log);
            log.push(Connection {
                opened: opened - started,
                flights: Vec::new(),
            });
            log.len() - 1
        };
        let recorder = Recorder {
            log: log.clone(),
            index,
            started,
        };
        let server = server.clone();
        connections.spawn(async move {
            if let Ok(backend) = TcpStream::connect(&server).await {
                let _ = backend.set_nodelay(true);
                let _ = client.set_nodelay(true);
                let (client_read, client_write) = client.into_split();
                let (backend_read, backend_write) = backend.into_split();
                // The client's bytes leave it no sooner than its connect completes.
                let connected = opened + 2 * one_way;
                let link = |read, write, direction, earliest| {
                    pipe(read, write, direction, one_way, earliest, recorder.clone())
                };
                // Each direction ends by itself (a half-close is passed on); the
                // connection is done when both are.
                tokio::join!(
                    link(client_read, backend_write, Direction::ToServer, connected),
                    link(backend_read, client_write, Direction::ToClient, opened),
                );
            }
        });
        // Forget the connections that ended.
        while connections.try_join_next().is_some() {}
    }
}

/// Writes one connection's flights into the log.
#[derive(Clone)]
struct Recorder {
    log: Log,
    index: usize,
    started: Instant,
}

impl Recorder {
    /// Records a chunk of `bytes` going `direction`, sent at `sent` and delivered at
    /// `delivered`: a new flight when the last one went the other way.
    /// A close (`bytes` 0) is always a flight of its own.
    fn record(&self, direction: Direction, bytes: usize, sent: Instant, delivered: Instant) {
        let mut log = lock(&self.log);
        let flights = &mut log[self.index].flights;
        let delivered = delivered - self.started;
        match flights.last_mut() {
            Some(last) if last.direction == direction && last.bytes > 0 && bytes > 0 => {
                last.bytes += bytes;
                last.delivered = delivered;
            }
            _ => flights.push(Flight {
                direction,
                bytes,
                sent: sent - self.started,
                delivered,
            }),
        }
    }
}

/// Relays `read` to `write`, each chunk delivered `one_way` after it was sent (read,
/// or `earliest` if later), until `read` ends (then shuts `write` down, as late) or
/// either side fails. Reading goes on while earlier chunks wait for their time.
async fn pipe(
    mut read: OwnedReadHalf,
    mut write: OwnedWriteHalf,
    direction: Direction,
    one_way: Duration,
    earliest: Instant,
    recorder: Recorder,
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buffer = vec![0; 64 * 1024];
        loop {
            // An error ends the connection like a close.
            let n = read.read(&mut buffer).await.unwrap_or(0);
            let sent = Instant::now().max(earliest);
            recorder.record(direction, n, sent, sent + one_way);
            // An empty chunk is the close.
            if chunks.send((sent + one_way, buffer[..n].to_vec())).is_err() || n == 0 {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if bytes.is_empty() {
                let _ = write.shutdown().await;
                return;
            }
            if write.write_all(&bytes).await.is_err() {
                // The receiving side is gone: stop reading too (dropping `due`).
                return;
            }
        }
    };
    tokio::join!(reader, writer);
}

/// The round trips on the critical path of what happened within `from..=to` (times
/// since the proxy started), counted as the module documentation says.
pub fn round_trips(connections: &[Connection], from: Duration, to: Duration) -> usize {
    replies(connections, from, to)
        .into_iter()
        .max_by_key(|(depth, flight)| (flight.delivered, *depth))
        .map_or(0, |(depth, _)| depth)
}

/// The longest chain of round trips within `from..=to`: what [`round_trips`] counts
/// when the request's own reply is the deepest, for a window in which background work
/// that began with the request may answer after it (a client's monitors re-checking
/// while its first operation runs, whose replies are not deeper).
pub fn deepest_round_trips(connections: &[Connection], from: Duration, to: Duration) -> usize {
    replies(connections, from, to)
        .into_iter()
        .map(|(depth, _)| depth)
        .max()
        .unwrap_or(0)
}

/// The replies sent and delivered within `from..=to`, with their depths.
fn replies(connections: &[Connection], from: Duration, to: Duration) -> Vec<(usize, &Flight)> {
    depths(connections, from)
        .into_iter()
        .zip(connections)
        .flat_map(|(depths, connection)| depths.into_iter().zip(&connection.flights))
        .filter(|(_, flight)| flight.direction == Direction::ToClient && flight.bytes > 0)
        .filter(|(_, flight)| flight.sent >= from && flight.delivered <= to)
        .collect()
}

/// The depth of each flight of each connection (0 for flights before `from`), and of
/// each open.
fn depths(connections: &[Connection], from: Duration) -> Vec<Vec<usize>> {
    // Every event in the order it happened: opens, then flights by when they were sent.
    // An open depends only on replies delivered before it, hence sent before it; a
    // flight only on the events before it on its connection.
    enum Event {
        Open(usize),
        Flight(usize, usize),
    }
    let mut events: Vec<(Duration, Event)> = Vec::new();
    for (c, connection) in connections.iter().enumerate() {
        events.push((connection.opened, Event::Open(c)));
        for (f, flight) in connection.flights.iter().enumerate() {
            events.push((flight.sent, Event::Flight(c, f)));
        }
    }
    // Stable: an open comes before its connection's first flight at the same time.
    events.sort_by_key(|(at, _)| *at);

    let mut depths: Vec<Vec<usize>> = connections
        .iter()
        .map(|connection| vec![0; connection.flights.len()])
        .collect();
    // Per connection: the depth of its last client event (open or client→server
    // flight); 0 while nothing of it happened in the window.
    let mut last_client = vec![0; connections.len()];
    // The replies seen so far: (delivered, depth).
    let mut replies: Vec<(Duration, usize)> = Vec::new();
    for (at, event) in events {
        if at < from {
            continue;
        }
        match event {
            Event::Open(c) => {
                let trigger = replies
                    .iter()
                    .filter(|(delivered, _)| *delivered <= at)
                    .max_by_key(|(delivered, _)| *delivered)
                    .map_or(0, |(_, depth)| *depth);
                last_client[c] = trigger + 1;
            }
            Event::Flight(c, f) => {
                let flight = &connections[c].flights[f];
                depths[c][f] = match flight.direction {
                    // A close waits for nothing and starts no round trip.
                    Direction::ToServer if flight.bytes == 0 => last_client[c],
                    Direction::ToServer => {
                        last_client[c] += 1;
                        last_client[c]
                    }
                    Direction::ToClient => {
                        replies.push((flight.delivered, last_client[c]));
                        last_client[c]
                    }
                };
            }
        }
    }
    depths
}

/// The flight log of `connections` within `from..=to`, for people: one line per
/// connection opened or used in the window, its open time and its flights (direction,
/// bytes, time sent, and in brackets the round trip it belongs to), times in ms since
/// `from`.
pub struct FlightLog<'a> {
    /// The connections, as [`LatencyProxy::connections`] gave them.
    pub connections: &'a [Connection],
    /// The window's start, since the proxy started.
    pub from: Duration,
    /// The window's end, since the proxy started.
    pub to: Duration,
}

impl fmt::Display for FlightLog<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |at: Duration| at.saturating_sub(self.from).as_secs_f64() * 1e3;
        let depths = depths(self.connections, self.from);
        for (c, connection) in self.connections.iter().enumerate() {
            let in_window = |at: Duration| at >= self.from && at <= self.to;
            let flights: Vec<String> = connection
                .flights
                .iter()
                .zip(&depths[c])
                .filter(|(flight, _)| in_window(flight.sent))
                .map(|(flight, depth)| {
                    let arrow = match flight.direction {
                        Direction::ToServer => "c>s",
                        Direction::ToClient => "s>c",
                    };
                    match flight.bytes {
                        0 => format!("{arrow} FIN @{:.0}", ms(flight.sent)),
                        bytes => format!("{arrow} {bytes} B @{:.0} [{depth}]", ms(flight.sent)),
                    }
                })
                .collect();
            if flights.is_empty() && !in_window(connection.opened) {
                continue;
            }
            let opened = match in_window(connection.opened) {
                true => format!("opened @{:.0}", ms(connection.opened)),
                false => "opened before".to_owned(),
            };
            writeln!(out, "conn {c} {opened}: {}", flights.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{ToClient, ToServer};

    const MS: Duration = Duration::from_millis(1);

    /// A connection opened at `opened` ms whose flights alternate, starting with the
    /// client's, each taking 25 ms to arrive and answered at once: flight `i` is sent
    /// at `opened + 50 + 25 × i` ms (the connect taking the first 50).
    fn ping_pong(opened: u32, flights: &[usize]) -> Connection {
        let opened = opened * MS;
        Connection {
            opened,
            flights: flights
                .iter()
                .enumerate()
                .map(|(i, &bytes)| {
                    let sent = opened + 50 * MS + 25 * MS * i as u32;
                    Flight {
                        direction: [ToServer, ToClient][i % 2],
                        bytes,
                        sent,
                        delivered: sent + 25 * MS,
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn a_connection_costs_the_connect_and_one_per_client_flight() {
        // TCP, TLS 1.3 (ClientHello / ServerHello…Finished), hello, find.
        let one = [ping_pong(0, &[300, 2000, 400, 500, 100, 200])];
        let end = 500 * MS;
        assert_eq!(round_trips(&one, Duration::ZERO, end), 4);
        // The window ends before the find's reply: three.
        assert_eq!(round_trips(&one, Duration::ZERO, 174 * MS), 3);
        assert_eq!(round_trips(&[], Duration::ZERO, end), 0);
    }

    #[test]
    fn a_connection_opened_after_a_reply_waited_for_it() {
        // A monitor's TCP, TLS and hello (its reply delivered at 150 ms), then the
        // pool's connection: TCP, TLS, hello with saslStart, saslContinue, find.
        let monitor = ping_pong(0, &[300, 2000, 400, 500]);
        assert_eq!(monitor.flights[3].delivered, 150 * MS);
        let pool = ping_pong(151, &[300, 2000, 400, 500, 100, 200, 100, 200]);
        let log = [monitor, pool];
        assert_eq!(round_trips(&log, Duration::ZERO, Duration::MAX), 3 + 5);
        let text = FlightLog {
            connections: &log,
            from: Duration::ZERO,
            to: Duration::MAX,
        }
        .to_string();
        assert!(text.starts_with("conn 0 opened @0: c>s 300 B @50 [2], s>c 2000 B @75 [2]"));
        assert!(text.contains("conn 1 opened @151: c>s 300 B @201 [5]"));
        assert!(text.trim_end().ends_with("s>c 200 B @376 [8]"), "{text}");
    }

    #[test]
    fn connections_opened_together_do_not_add_up() {
        // The monitor's connection and the pool's opened at once: the pool's chain
        // (5) is the critical path, not 3 + 5.
        let monitor = ping_pong(0, &[300, 2000, 400, 500]);
        let pool = ping_pong(1, &[300, 2000, 400, 500, 100, 200, 100, 200]);
        assert_eq!(
            round_trips(&[monitor, pool], Duration::ZERO, Duration::MAX),
            5
        );
    }

    #[test]
    fn a_deeper_background_chain_the_result_did_not_wait_for_does_not_count() {
        // The first check's reply (delivered at 150 ms) opens a round-trip-time
        // connection (TCP, TLS, hello: depth 6) whose last reply arrives before the
        // result, which came on the operation's connection, opened at about the same
        // time as the monitor's (and slower: 60 ms later): 5.
        let monitor = ping_pong(0, &[300, 2000, 400, 500]);
        let pool = ping_pong(60, &[300, 2000, 400, 500, 100, 200, 100, 200]);
        let rtt = ping_pong(151, &[300, 2000, 400, 500]);
        assert!(rtt.flights[3].delivered < pool.flights[7].delivered);
        assert_eq!(
            round_trips(&[monitor, pool, rtt], Duration::ZERO, Duration::MAX),
            5
        );
    }

    #[test]
    fn a_warm_request_on_a_pooled_connection_is_one() {
        let mut pooled = ping_pong(0, &[300, 2000, 400, 500, 100, 200]);
        let warm_from = 1000 * MS;
        for (i, direction) in [ToServer, ToClient].into_iter().enumerate() {
            pooled.flights.push(Flight {
                direction,
                bytes: 100,
                sent: warm_from + 25 * MS * i as u32,
                delivered: warm_from + 25 * MS * (i as u32 + 1),
            });
        }
        let monitor = ping_pong(0, &[300, 2000, 400, 500]);
        let log = [monitor, pooled];
        assert_eq!(round_trips(&log, warm_from, warm_from + 50 * MS), 1);
        // The client closing and the server answering with a close_notify: not a
        // round trip, and not part of the reply before.
        let mut closed = log[1].clone();
        for (direction, bytes, sent) in [(ToServer, 0, 1051), (ToClient, 24, 1077)] {
            closed.flights.push(Flight {
                direction,
                bytes,
                sent: sent * MS,
                delivered: (sent + 25) * MS,
            });
        }
        let closing = [log[0].clone(), closed];
        assert_eq!(round_trips(&closing, warm_from, Duration::MAX), 1);
        let text = FlightLog {
            connections: &closing,
            from: warm_from,
            to: Duration::MAX,
        }
        .to_string();
        assert!(
            text.contains("[1], c>s FIN @51, s>c 24 B @77 [1]"),
            "{text}"
        );
        // A warm request that must open a connection: 4 (TCP, TLS, hello, find).
        let fresh = ping_pong(1000, &[300, 2000, 400, 500, 100, 200]);
        let log = [log[0].clone(), log[1].clone(), fresh];
        assert_eq!(round_trips(&log, warm_from, Duration::MAX), 4);
        let text = FlightLog {
            connections: &log,
            from: warm_from,
            to: Duration::MAX,
        }
        .to_string();
        assert!(
            text.starts_with("conn 1 opened before: c>s 100 B @0 [1]"),
            "{text}"
        );
    }

    #[test]
    fn the_proxy_delays_each_way_and_records_the_flights() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), echo_through_the_proxy())
                .await
                .expect("the echo through the proxy did not finish within 30 s")
        });
    }

    /// An echo server behind a proxy of 20 ms each way: two exchanges on one
    /// connection take the connect and two round trips, at least 120 ms, and show as
    /// four flights and three round trips.
    async fn echo_through_the_proxy() {
        let one_way = 20 * MS;
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_address = echo.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut socket, _) = echo.accept().await.unwrap();
            let mut buffer = [0; 1024];
            while let Ok(n @ 1..) = socket.read(&mut buffer).await {
                socket.write_all(&buffer[..n]).await.unwrap();
            }
        });
        let proxy = LatencyProxy::start(&echo_address, one_way).await.unwrap();
        let from = proxy.elapsed();
        let mut client = TcpStream::connect(proxy.address()).await.unwrap();
        for message in [&b"hello"[..], &b"find, and more"[..]] {
            client.write_all(message).await.unwrap();
            let mut back = vec![0; message.len()];
            client.read_exact(&mut back).await.unwrap();
            assert_eq!(back, message);
        }
        let to = proxy.elapsed();
        assert!(to - from >= 6 * one_way, "took only {:?}", to - from);
        let log = proxy.connections();
        assert_eq!(log.len(), 1);
        let flights: Vec<(Direction, usize)> = log[0]
            .flights
            .iter()
            .map(|flight| (flight.direction, flight.bytes))
            .collect();
        assert_eq!(
            flights,
            [(ToServer, 5), (ToClient, 5), (ToServer, 14), (ToClient, 14)]
        );
        for flight in &log[0].flights {
            assert!(flight.delivered - flight.sent >= one_way, "{flight:?}");
        }
        assert!(log[0].flights[0].sent >= log[0].opened + 2 * one_way);
        assert_eq!(round_trips(&log, from, to), 3);

        // The client's close reaches the echo a one-way time later, and the echo's
        // close comes back another later; each is a flight of its own.
        client.shutdown().await.unwrap();
        let closed = proxy.elapsed();
        assert_eq!(client.read(&mut [0; 16]).await.unwrap(), 0);
        assert!(proxy.elapsed() - closed >= 2 * one_way);
        let flights: Vec<(Direction, usize)> = proxy.connections()[0]
            .flights
            .iter()
            .map(|flight| (flight.direction, flight.bytes))
            .collect();
        assert_eq!(flights[4..], [(ToServer, 0), (ToClient, 0)]);
    }
}
