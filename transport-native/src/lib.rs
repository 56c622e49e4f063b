//! The native host of anymongo: tokio TCP, rustls TLS, the tokio clock and spawner.
//!
//! It is the built-in transport of `anymongo` on native targets (its default feature
//! `default-transport`), so `anymongo::Client::with_uri_str` uses it without naming
//! this crate. Name it for a runtime of your own making, say with another resolver:
//!
//! ```no_run
//! # async fn example() -> anymongo::Result<()> {
//! use std::sync::Arc;
//! use anymongo::{bson::doc, options::ClientOptions, Client};
//! let mut runtime = anymongo_native::runtime();
//! runtime.resolver = Arc::new(anymongo_native::TokioResolver::with_nameserver("10.0.0.2:53".parse().unwrap()));
//! let options = ClientOptions::parse("mongodb+srv://cluster0.example.com/").runtime(runtime.clone()).await?;
//! let client = Client::with_runtime(options, runtime)?;
//! client.database("admin").run_command(doc! { "ping": 1 }).await?;
//! # Ok(()) }
//! ```
//!
//! Must be used inside a tokio runtime (the clock, spawner and sockets are tokio's).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anymongo_rt::http::HttpClient;
use anymongo_rt::rt::{
    boxed, BoxFuture, Clock, ConnectTarget, HostAddresses, HostInfo, Instant, IpAddr, Resolver,
    Runtime, Spawner, SrvRecord, Stream, Transport,
};
use anymongo_rt::tls::ClientConfigs;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// tokio's bounded channel, whose sender the driver's `EventHandler::TokioMpsc` takes
/// (as the official crate's does): named here so that the core names no tokio item,
/// and reaches tokio only through the built-in transport.
pub mod mpsc {
    pub use tokio::sync::mpsc::error::TrySendError;
    pub use tokio::sync::mpsc::Sender;
}

/// TCP keepalive idle time, as the Connection Monitoring and Pooling spec recommends.
const KEEPALIVE: Duration = Duration::from_secs(120);

/// The native [`Runtime`]: tokio sockets, rustls, tokio time, and the tokio runtime
/// this is called in for background monitoring. Called outside a tokio runtime, it has
/// no spawner, and clients built with it monitor in single-threaded mode (their
/// operations must still run in a tokio runtime).
pub fn runtime() -> Runtime {
    Runtime {
        transport: Arc::new(TokioTransport::default()),
        resolver: Arc::new(TokioResolver::new()),
        clock: Arc::new(TokioClock {
            origin: tokio::time::Instant::now(),
        }),
        spawner: tokio::runtime::Handle::try_current()
            .ok()
            .map(|handle| Arc::new(TokioSpawner(handle)) as Arc<dyn Spawner>),
        // The core's own PBKDF2 is as fast as any natively.
        key_derivation: None,
        host: HostInfo {
            runtime: "native",
            platform: "tokio, rustls".into(),
            os_type: std::env::consts::OS.into(),
            architecture: Some(std::env::consts::ARCH.into()),
            docker: std::path::Path::new("/.dockerenv").exists(),
            env: |name| std::env::var(name).ok(),
            read_file: |path| std::fs::read_to_string(path),
        },
    }
}

/// Opens TCP connections (TCP_NODELAY, keepalive) or unix domain sockets with tokio
/// and, when asked, TLS with rustls. Each client gets a transport of its own
/// ([`Transport::for_client`]), whose rustls configurations let the client's later
/// connections resume the TLS sessions of its earlier ones, and which asks OCSP
/// responders (the default one does not).
#[derive(Debug, Clone, Default)]
pub struct TokioTransport {
    tls: ClientConfigs,
}

impl Transport for TokioTransport {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            let stream = match target.is_unix_socket() {
                true => connect_unix(&target.host).await?,
                false => {
                    let tcp = match target.addresses.is_empty() {
                        true => TcpStream::connect((target.host.as_str(), target.port)).await?,
                        false => {
                            let addresses: Vec<SocketAddr> = target
                                .addresses
                                .iter()
                                .map(|&ip| SocketAddr::new(ip, target.port))
                                .collect();
                            TcpStream::connect(addresses.as_slice()).await?
                        }
                    };
                    tcp.set_nodelay(true)?;
                    socket2::SockRef::from(&tcp)
                        .set_tcp_keepalive(&socket2::TcpKeepalive::new().with_time(KEEPALIVE))?;
                    Box::new(TokioStream(tcp)) as Box<dyn Stream>
                }
            };
            self.secure(stream, target).await
        })
    }

    /// TLS with rustls, when the target asks for it, over a stream already open to the
    /// server: `connect`'s own, or a tunnel a SOCKS5 proxy opened.
    fn secure<'a>(
        &'a self,
        stream: Box<dyn Stream>,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(anymongo_rt::tls::secure(
            stream,
            target,
            &self.tls,
            |path| std::fs::read(path),
            system_roots,
        ))
    }

    /// A transport with no TLS sessions yet (clients share none), asking OCSP
    /// responders with the driver's HTTP client (OCSP Support spec, "Suggested OCSP
    /// Behavior" step 7) over a transport of its own that asks none.
    fn for_client(&self) -> Option<Arc<dyn Transport>> {
        let clock = Arc::new(TokioClock {
            origin: tokio::time::Instant::now(),
        });
        let http = HttpClient::new(Arc::new(TokioTransport::default()), clock);
        Some(Arc::new(TokioTransport {
            tls: ClientConfigs::default().with_ocsp_responder(Arc::new(http)),
        }))
    }
}

/// The authorities trusted when a connection names no `tlsCAFile`: the operating
/// system's certificate store, as `rustls-native-certs` finds it (on Linux the
/// distribution's bundle, or the files `SSL_CERT_FILE` / `SSL_CERT_DIR` name; the
/// Keychain on macOS; the Windows store), loaded on the first TLS connection and kept
/// for the process. Certificates that cannot be read or used are skipped with a
/// warning; a store without any usable one gives the Mozilla roots built in
/// ([`anymongo_rt::tls::TrustedRoots::system`]).
pub fn system_roots() -> &'static anymongo_rt::tls::TrustedRoots {
    static ROOTS: OnceLock<anymongo_rt::tls::TrustedRoots> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        for error in &loaded.errors {
            tracing::warn!(
                target: anymongo_rt::logging::CONNECTION,
                "the system certificate store: {error} (skipped)"
            );
        }
        let (roots, skipped) = anymongo_rt::tls::TrustedRoots::system(loaded.certs);
        if skipped > 0 {
            tracing::warn!(
                target: anymongo_rt::logging::CONNECTION,
                "the system certificate store: {skipped} certificates are not usable as trust anchors (skipped)"
            );
        }
        if !roots.is_system() {
            tracing::warn!(
                target: anymongo_rt::logging::CONNECTION,
                "the system certificate store has no usable certificate: trusting the Mozilla roots built in"
            );
        }
        roots
    })
}

#[cfg(unix)]
async fn connect_unix(path: &str) -> io::Result<Box<dyn Stream>> {
    Ok(Box::new(TokioStream(
        tokio::net::UnixStream::connect(path).await?,
    )))
}

#[cfg(not(unix))]
async fn connect_unix(path: &str) -> io::Result<Box<dyn Stream>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{path}: unix domain sockets are not available on this platform"),
    ))
}

/// A tokio byte stream: TCP, or a unix domain socket.
struct TokioStream<S>(S);

/// The tokio sockets the driver opens, seen as sockets of the operating system.
trait Socket: AsyncRead + AsyncWrite + Unpin + Send {
    fn sock_ref(&self) -> socket2::SockRef<'_>;
}

impl Socket for TcpStream {
    fn sock_ref(&self) -> socket2::SockRef<'_> {
        socket2::SockRef::from(self)
    }
}

#[cfg(unix)]
impl Socket for tokio::net::UnixStream {
    fn sock_ref(&self) -> socket2::SockRef<'_> {
        socket2::SockRef::from(self)
    }
}

impl<S: Socket> Stream for TokioStream<S> {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(self.0.read(buf))
    }

    /// Peeks at the socket (`MSG_PEEK` on a non-blocking socket: one system call, no
    /// byte consumed). tokio's own readiness is not asked: it is only as fresh as the
    /// reactor's last turn, while the kernel already holds the peer's FIN or RST.
    fn is_open_and_idle(&self) -> bool {
        let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
        match self.0.sock_ref().peek(&mut byte) {
            Err(error) => matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
            // 0: the peer closed the stream; more: bytes no request asked for.
            Ok(_) => false,
        }
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(self.0.write_all(buf))
    }
}

/// DNS with [hickory-resolver](https://docs.rs/hickory-resolver): SRV and TXT records
/// for `mongodb+srv://` (Initial DNS Seedlist Discovery), and addresses.
///
/// [`TokioResolver::new`] (the default, used by [`runtime`]) reads the system
/// configuration (`/etc/resolv.conf` on Unix, the registry on Windows);
/// [`TokioResolver::with_nameserver`] asks one name server, over UDP with TCP for
/// truncated answers. Answers are not cached (SRV polling must see changes), each query
/// is bounded by hickory's per-request timeout ([`QUERY_TIMEOUT`], [`QUERY_ATTEMPTS`]
/// tries), and the driver bounds each look-up again with `connectTimeoutMS`.
///
/// A name without records of the asked type (or that does not exist) gives an empty
/// list, not an error; names are asked as fully qualified (no search domains).
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use anymongo::rt::Resolver;
/// let resolver = anymongo_native::TokioResolver::with_nameserver("127.0.0.1:5353".parse().unwrap());
/// for record in resolver.srv("_mongodb._tcp.cluster0.example.com").await? {
///     println!("{}:{}", record.target, record.port);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct TokioResolver {
    /// The one name server to ask; `None` for the system configuration.
    nameserver: Option<SocketAddr>,
    /// Built on first use (reading the system configuration may fail; the error is
    /// then the look-up's).
    inner: Arc<OnceLock<std::result::Result<HickoryResolver, String>>>,
}

type HickoryResolver = hickory_resolver::TokioResolver;

/// How long hickory waits for one answer from a name server.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times hickory asks before giving up.
pub const QUERY_ATTEMPTS: usize = 2;

impl std::fmt::Debug for TokioResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioResolver")
            .field("nameserver", &self.nameserver)
            .finish_non_exhaustive()
    }
}

impl TokioResolver {
    /// A resolver with the system configuration.
    pub fn new() -> Self {
        TokioResolver::default()
    }

    /// A resolver that asks only the name server at `address` (UDP, and TCP when an
    /// answer is truncated): for tests, and hosts whose system configuration is not
    /// the one to use.
    pub fn with_nameserver(address: SocketAddr) -> Self {
        TokioResolver {
            nameserver: Some(address),
            inner: Arc::default(),
        }
    }

    /// The name server this resolver asks, if named.
    pub fn nameserver(&self) -> Option<SocketAddr> {
        self.nameserver
    }

    fn resolver(&self) -> io::Result<&HickoryResolver> {
        let built = self.inner.get_or_init(|| {
            use hickory_resolver::config::{NameServerConfig, ResolverConfig};
            use hickory_resolver::net::runtime::TokioRuntimeProvider;
            let provider = TokioRuntimeProvider::default();
            let mut builder = match self.nameserver {
                Some(address) => {
                    let mut server = NameServerConfig::udp_and_tcp(address.ip());
                    for connection in &mut server.connections {
                        connection.port = address.port();
                    }
                    let config = ResolverConfig::from_name_servers(vec![server]);
                    HickoryResolver::builder_with_config(config, provider)
                }
                None => HickoryResolver::builder(provider).map_err(|error| {
                    format!("cannot read the system's DNS configuration: {error}")
                })?,
            };
            let options = builder.options_mut();
            options.timeout = QUERY_TIMEOUT;
            options.attempts = QUERY_ATTEMPTS;
            options.cache_size = 0;
            options.try_tcp_on_error = true;
            builder
                .build()
                .map_err(|error| format!("cannot set up the DNS resolver: {error}"))
        });
        built
            .as_ref()
            .map_err(|message| io::Error::other(message.clone()))
    }

    /// Looks up `name` (made fully qualified) and returns the answers and the
    /// Additional section; no records is two empty lists.
    async fn lookup(
        &self,
        name: &str,
        kind: hickory_resolver::proto::rr::RecordType,
    ) -> io::Result<Answer> {
        let resolver = self.resolver()?;
        let fqdn = match name.ends_with('.') {
            true => name.to_owned(),
            false => format!("{name}."),
        };
        match resolver.lookup(fqdn.as_str(), kind).await {
            Ok(lookup) => Ok(Answer {
                answers: lookup.answers().to_vec(),
                additionals: lookup.additionals().to_vec(),
            }),
            Err(error) if error.is_no_records_found() || error.is_nx_domain() => {
                Ok(Answer::default())
            }
            Err(error) => {
                let kind = match error {
                    hickory_resolver::net::NetError::Timeout => io::ErrorKind::TimedOut,
                    _ => io::ErrorKind::Other,
                };
                Err(io::Error::new(kind, format!("looking up {name}: {error}")))
            }
        }
    }
}

/// The records of one DNS answer the resolver reads.
#[derive(Default)]
struct Answer {
    answers: Vec<hickory_resolver::proto::rr::Record>,
    additionals: Vec<hickory_resolver::proto::rr::Record>,
}

/// The SRV records among `answer`'s answers, each with its target's glue from the
/// Additional section ([`SrvRecord::addresses`]).
fn srv_records(answer: &Answer) -> Vec<SrvRecord> {
    use hickory_resolver::proto::rr::RData;
    let glue: Vec<(String, IpAddr, u32)> = address_records(&answer.additionals).collect();
    answer
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::SRV(srv) => {
                let target = srv.target.to_ascii().trim_end_matches('.').to_owned();
                let addresses = HostAddresses::of(
                    &target,
                    glue.iter()
                        .map(|(owner, ip, ttl)| (owner.as_str(), *ip, *ttl)),
                );
                Some(SrvRecord {
                    target,
                    port: srv.port,
                    ttl_secs: record.ttl,
                    addresses,
                })
            }
            _ => None,
        })
        .collect()
}

/// The A and AAAA records among `records`: owner name, address, TTL.
fn address_records(
    records: &[hickory_resolver::proto::rr::Record],
) -> impl Iterator<Item = (String, IpAddr, u32)> + '_ {
    use hickory_resolver::proto::rr::RData;
    records.iter().filter_map(|record| {
        let ip = match record.data {
            RData::A(a) => IpAddr::V4(a.0),
            RData::AAAA(aaaa) => IpAddr::V6(aaaa.0),
            _ => return None,
        };
        Some((record.name.to_ascii(), ip, record.ttl))
    })
}

impl Resolver for TokioResolver {
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        use hickory_resolver::proto::rr::RecordType;
        boxed(async move { Ok(srv_records(&self.lookup(name, RecordType::SRV).await?)) })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        use hickory_resolver::proto::rr::{RData, RecordType};
        boxed(async move {
            let records = self.lookup(name, RecordType::TXT).await?.answers;
            Ok(records
                .iter()
                .filter_map(|record| match &record.data {
                    RData::TXT(txt) => Some(
                        txt.txt_data
                            .iter()
                            .map(|part| String::from_utf8_lossy(part))
                            .collect::<String>(),
                    ),
                    _ => None,
                })
                .collect())
        })
    }

    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        boxed(async move { Ok(self.addresses(host).await?.ips) })
    }

    /// From the system's resolver (no TTL: not reused), or from the named name server,
    /// A and AAAA asked at once: one round trip.
    fn addresses<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<HostAddresses>> {
        use hickory_resolver::proto::rr::RecordType;
        boxed(async move {
            if self.nameserver.is_none() {
                // The system's resolver, with /etc/hosts and the search domains.
                let addresses = tokio::net::lookup_host((host, 0)).await?;
                return Ok(HostAddresses {
                    ips: addresses.map(|address| address.ip()).collect(),
                    ttl_secs: 0,
                });
            }
            let (a, aaaa) = futures::future::try_join(
                self.lookup(host, RecordType::A),
                self.lookup(host, RecordType::AAAA),
            )
            .await?;
            // The CNAME records of a chain (Atlas's names are CNAMEs) bound the TTL too.
            let chain = a.answers.iter().chain(&aaaa.answers);
            let shortest = chain.map(|record| record.ttl).min().unwrap_or(0);
            let records = address_records(&a.answers).chain(address_records(&aaaa.answers));
            Ok(
                HostAddresses::from_records(records.map(|(_, ip, ttl)| (ip, ttl.min(shortest))))
                    .unwrap_or_default(),
            )
        })
    }
}

/// Monotonic time from tokio (so paused test time works too).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::from_origin(self.origin.elapsed())
    }

    fn unix_time(&self) -> Duration {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        boxed(tokio::time::sleep(duration))
    }
}

/// Runs background work on a tokio runtime.
#[derive(Debug, Clone)]
pub struct TokioSpawner(pub tokio::runtime::Handle);

impl Spawner for TokioSpawner {
    fn spawn(&self, task: BoxFuture<'static, ()>) {
        self.0.spawn(task);
    }
}

/// The process-wide tokio runtime of [`block_on`], built at its first call; the error
/// of that build, if it failed, is kept and told to every caller.
fn blocking_runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("anymongo-sync")
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|message| {
            io::Error::other(format!("the tokio runtime could not start: {message}"))
        })
}

/// Runs `future` to completion on the calling thread, blocking it: the blocking API of
/// `anymongo` (its feature `sync`) runs every operation so.
///
/// The future runs inside the context of one process-wide multi-thread tokio runtime,
/// built at the first call, whose worker threads drive the sockets and timers the
/// future waits on; tasks it spawns run there too, so a client built inside it
/// ([`runtime`] takes the runtime it is called in) monitors in the background between
/// the calls. Fails, rather than panics, if that runtime cannot be built.
///
/// ```
/// let answer = anymongo_native::block_on(async {
///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///     42
/// })?;
/// assert_eq!(answer, 42);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn block_on<F: std::future::Future>(future: F) -> io::Result<F::Output> {
    let runtime = blocking_runtime()?;
    // Entered, not `Runtime::block_on`: that one panics when called from inside a
    // runtime, and the caller's thread need not be a worker for the reactor to run.
    let _context = runtime.enter();
    Ok(futures::executor::block_on(future))
}

#[cfg(test)]
mod tests {
    use hickory_resolver::proto::op::{Message, MessageType, OpCode};
    use hickory_resolver::proto::rr::rdata::{A, AAAA, SRV};
    use hickory_resolver::proto::rr::{Name, RData, Record};

    use super::*;

    fn name(text: &str) -> Name {
        Name::from_ascii(text).unwrap()
    }

    /// An SRV answer as it comes off the wire (encoded, then decoded): two targets,
    /// glue in the Additional section for the first (A and AAAA) and for a name no
    /// record targets.
    fn srv_answer() -> Answer {
        let mut message = Message::new(7, MessageType::Response, OpCode::Query);
        let srv = name("_mongodb._tcp.cluster0.example.com.");
        for (target, port) in [("db0.example.com.", 27017), ("db1.example.com.", 27018)] {
            let data = RData::SRV(SRV::new(0, 5, port, name(target)));
            message.add_answer(Record::from_rdata(srv.clone(), 300, data));
        }
        let glue = [
            ("db0.example.com.", RData::A(A::new(10, 0, 0, 1)), 60),
            (
                "DB0.example.com.",
                RData::AAAA(AAAA::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
                30,
            ),
            ("other.example.com.", RData::A(A::new(10, 0, 0, 9)), 60),
        ];
        for (owner, data, ttl) in glue {
            message.add_additional(Record::from_rdata(name(owner), ttl, data));
        }
        let decoded = Message::from_vec(&message.to_vec().unwrap()).unwrap();
        Answer {
            answers: decoded.answers,
            additionals: decoded.additionals,
        }
    }

    #[test]
    fn srv_records_carry_the_glue_of_the_additional_section() {
        let records = srv_records(&srv_answer());
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].target, "db0.example.com");
        assert_eq!(records[0].port, 27017);
        assert_eq!(records[0].ttl_secs, 300);
        let glue = records[0].addresses.clone().unwrap();
        assert_eq!(
            glue.ips,
            vec![
                IpAddr::from([10, 0, 0, 1]),
                IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1])
            ]
        );
        assert_eq!(
            glue.ttl_secs, 30,
            "the smallest TTL of the target's records"
        );
        assert_eq!(records[1].target, "db1.example.com");
        assert_eq!(records[1].addresses, None, "no glue for this target");
    }
}
