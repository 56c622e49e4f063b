use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anymongo_rt::http::HttpClient;
use anymongo_rt::rt::{
    boxed, BoxFuture, Clock, ConnectTarget, HostAddresses, HostInfo, Instant, IpAddr, Resolver,
    Runtime, SrvRecord, Stream, Transport,
};
use anymongo_rt::tls::ClientConfigs;
use hickory_proto::rr::{RData, Record, RecordType};

use crate::dns;
use crate::tcp::TcpConnection;

/// Runs a future to completion on the WASI event loop (`wstd`'s reactor).
pub use wstd::runtime::block_on;

/// The WASI [`Runtime`]: wasi:sockets, rustls, WASI clocks, DNS through the name server
/// of `/etc/resolv.conf` ([`WasiResolver::new`]), and no spawner.
// On wasm32 the seams need not be `Send + Sync` (one thread), and the TLS settings'
// OCSP responder is not: the `Arc`s are merely shared ownership.
#[allow(clippy::arc_with_non_send_sync)]
pub fn runtime() -> Runtime {
    Runtime {
        transport: Arc::new(WasiTransport::default()),
        resolver: Arc::new(WasiResolver::new()),
        clock: Arc::new(WasiClock),
        spawner: None,
        // WASI offers no cryptography; the core derives keys itself.
        key_derivation: None,
        host: HostInfo {
            runtime: "wasi",
            platform: "WASI 0.2 (wstd), rustls".into(),
            os_type: "wasi".into(),
            architecture: Some("wasm32".into()),
            docker: false,
            env: |name| std::env::var(name).ok(),
            // The file system the host grants (preopened directories).
            read_file: |path| std::fs::read_to_string(path),
        },
    }
}

/// Opens TCP connections through wasi:sockets and, when asked, TLS with rustls.
/// `tlsCAFile` is read from the file system the host grants (a preopened directory).
/// Each client gets a transport of its own ([`Transport::for_client`]), whose rustls
/// configurations let the client's later connections resume the TLS sessions of its
/// earlier ones, and which asks OCSP responders (the default one does not).
#[derive(Debug, Clone, Default)]
pub struct WasiTransport {
    tls: ClientConfigs,
}

impl Transport for WasiTransport {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            if target.is_unix_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{}: WASI has no unix domain sockets", target.host),
                ));
            }
            let addresses = match target.addresses.is_empty() {
                true => resolve(&target.host, target.port)?,
                false => target
                    .addresses
                    .iter()
                    .map(|&ip| SocketAddr::new(ip, target.port))
                    .collect(),
            };
            let mut last_error = None;
            let mut tcp = None;
            for address in addresses {
                match TcpConnection::connect(address).await {
                    Ok(connection) => {
                        tcp = Some(connection);
                        break;
                    }
                    Err(error) => last_error = Some(error),
                }
            }
            let tcp = match tcp {
                Some(tcp) => tcp,
                None => {
                    return Err(last_error
                        .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")))
                }
            };
            let stream = Box::new(WasiStream(tcp));
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
            default_roots,
        ))
    }

    /// A transport with no TLS sessions yet (clients share none), asking OCSP
    /// responders with the driver's HTTP client (OCSP Support spec, "Suggested OCSP
    /// Behavior" step 7) over a transport of its own that asks none.
    // Not `Send + Sync` on wasm32 (one thread): the `Arc`s are merely shared ownership.
    #[allow(clippy::arc_with_non_send_sync)]
    fn for_client(&self) -> Option<Arc<dyn Transport>> {
        let http = HttpClient::new(Arc::new(WasiTransport::default()), Arc::new(WasiClock));
        Some(Arc::new(WasiTransport {
            tls: ClientConfigs::default().with_ocsp_responder(Arc::new(http)),
        }))
    }
}

/// The authorities trusted when a connection names no `tlsCAFile`: the Mozilla roots
/// built in. A WASI guest cannot read the host's certificate store (it sees only the
/// directories the host preopens, and no store has a portable path), so a private CA
/// is named with `tlsCAFile` (a file the host preopens). Built once per instance.
fn default_roots() -> &'static anymongo_rt::tls::TrustedRoots {
    static ROOTS: std::sync::OnceLock<anymongo_rt::tls::TrustedRoots> = std::sync::OnceLock::new();
    ROOTS.get_or_init(anymongo_rt::tls::TrustedRoots::webpki)
}

/// Name resolution through wasi:sockets/ip-name-lookup (as wrapped by the standard
/// library). The WASI host resolves before connecting, which `wstd` does not do.
fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let addresses: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    if addresses.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} resolves to no address"),
        ));
    }
    Ok(addresses)
}

/// A connection to a MongoDB server, as the driver reads and writes it.
struct WasiStream(TcpConnection);

impl Stream for WasiStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(self.0.read(buf))
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(self.0.write_all(buf))
    }

    fn is_open_and_idle(&self) -> bool {
        self.0.is_open_and_idle()
    }
}

/// DNS on WASI: SRV and TXT records for `mongodb+srv://` (Initial DNS Seedlist
/// Discovery), and addresses.
///
/// SRV and TXT questions go to one name server, as DNS messages over wasi:sockets UDP,
/// and again over TCP when an answer is truncated: the server named with
/// [`WasiResolver::with_nameserver`], else the first `nameserver` of
/// `/etc/resolv.conf` when the host lets the program read it (wasmtime:
/// `--dir /etc::/etc`); without either, look-ups fail with an error saying so. The
/// program needs network access (wasmtime: `-S inherit-network=y`).
///
/// Each exchange with the server is bounded (2 s; a UDP question is asked twice before
/// giving up with an error of kind `TimedOut`), and the driver bounds each look-up
/// again with `connectTimeoutMS`. Answers are not cached (SRV polling must see
/// changes). As with the native resolver, a name without records of the asked type (or
/// that does not exist) gives an empty list, not an error; names are asked as fully
/// qualified (no search domains).
///
/// Addresses ([`Resolver::ip`]) come from the named server too, when there is one, and
/// otherwise from the host (wasi:sockets/ip-name-lookup).
///
/// [`runtime`] uses `WasiResolver::new()`; to name a server, replace the runtime's
/// resolver, and give that runtime to the connection string's parsing and the client:
///
/// ```no_run
/// # #[cfg(target_os = "wasi")]
/// # fn main() -> anymongo::Result<()> {
/// use std::sync::Arc;
/// use anymongo::{options::ClientOptions, Client};
/// use anymongo_wasi::WasiResolver;
/// let mut runtime = anymongo_wasi::runtime();
/// runtime.resolver = Arc::new(WasiResolver::with_nameserver("10.0.0.2:53".parse().unwrap()));
/// anymongo_wasi::block_on(async {
///     let options = ClientOptions::parse_uri("mongodb+srv://cluster0.example.com/")
///         .runtime(runtime.clone())
///         .await?;
///     println!("seeds: {:?}", options.hosts);
///     let client = Client::with_runtime(options, runtime)?;
///     Ok(())
/// })
/// # }
/// # #[cfg(not(target_os = "wasi"))] fn main() {}
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WasiResolver {
    /// The one name server to ask; `None` for `/etc/resolv.conf`'s.
    nameserver: Option<SocketAddr>,
}

impl WasiResolver {
    /// A resolver asking the first name server of `/etc/resolv.conf` (read at each
    /// look-up).
    pub fn new() -> Self {
        WasiResolver::default()
    }

    /// A resolver that asks only the name server at `address` (UDP, and TCP when an
    /// answer is truncated).
    pub fn with_nameserver(address: SocketAddr) -> Self {
        WasiResolver {
            nameserver: Some(address),
        }
    }

    /// The name server this resolver asks, if named.
    pub fn nameserver(&self) -> Option<SocketAddr> {
        self.nameserver
    }

    /// The answer for the records of type `kind` of `name`, from the named or the
    /// system's name server.
    async fn lookup(&self, name: &str, kind: RecordType) -> io::Result<dns::Answer> {
        let server = match self.nameserver {
            Some(address) => address,
            None => dns::system_nameserver()?,
        };
        dns::lookup(server, name, kind).await.map_err(|error| {
            io::Error::new(error.kind(), format!("looking up {kind} {name}: {error}"))
        })
    }
}

/// The A and AAAA records among `records`: owner name, address, TTL.
fn address_records(records: &[Record]) -> impl Iterator<Item = (String, IpAddr, u32)> + '_ {
    records.iter().filter_map(|record| {
        let ip = match record.data {
            RData::A(a) => IpAddr::V4(a.0),
            RData::AAAA(aaaa) => IpAddr::V6(aaaa.0),
            _ => return None,
        };
        Some((record.name.to_ascii(), ip, record.ttl))
    })
}

impl Resolver for WasiResolver {
    /// The SRV records, each with its target's glue from the Additional section
    /// ([`SrvRecord::addresses`]).
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        boxed(async move {
            let answer = self.lookup(name, RecordType::SRV).await?;
            let glue: Vec<(String, IpAddr, u32)> = address_records(&answer.additionals).collect();
            Ok(answer
                .records
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
                .collect())
        })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        boxed(async move {
            let records = self.lookup(name, RecordType::TXT).await?.records;
            Ok(records
                .iter()
                .filter_map(|record| match &record.data {
                    // The character strings of one record, joined (the Resolver contract).
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

    /// From the host (wasi:sockets/ip-name-lookup: no TTL, not reused), or from the
    /// named name server, A and AAAA asked at once: one round trip.
    fn addresses<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<HostAddresses>> {
        boxed(async move {
            if self.nameserver.is_none() {
                return Ok(HostAddresses {
                    ips: resolve(host, 0)?.iter().map(SocketAddr::ip).collect(),
                    ttl_secs: 0,
                });
            }
            let (a, aaaa) = futures::future::try_join(
                self.lookup(host, RecordType::A),
                self.lookup(host, RecordType::AAAA),
            )
            .await?;
            // The CNAME records of a chain bound the TTL too.
            let shortest = [a.shortest_ttl, aaaa.shortest_ttl]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(0);
            let records = address_records(&a.records).chain(address_records(&aaaa.records));
            Ok(
                HostAddresses::from_records(records.map(|(_, ip, ttl)| (ip, ttl.min(shortest))))
                    .unwrap_or_default(),
            )
        })
    }
}

/// The WASI monotonic clock (wasi:clocks/monotonic-clock).
#[derive(Debug, Clone, Copy, Default)]
pub struct WasiClock;

impl Clock for WasiClock {
    fn now(&self) -> Instant {
        let origin = wstd::time::Instant::now();
        Instant::from_origin(Duration::from(
            origin.duration_since(*EPOCH.get_or_init(|| origin)),
        ))
    }

    /// wasi:clocks/wall-clock, through the standard library.
    fn unix_time(&self) -> Duration {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let wait = wstd::task::sleep(duration.into());
        boxed(async move {
            wait.await;
        })
    }
}

/// The first reading of the monotonic clock, the origin of [`WasiClock`]'s time line.
static EPOCH: std::sync::OnceLock<wstd::time::Instant> = std::sync::OnceLock::new();
