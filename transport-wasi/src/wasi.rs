use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anymongo::rt::{
    boxed, unsupported_lookup, BoxFuture, Clock, ConnectTarget, HostInfo, Instant, IpAddr,
    Resolver, Runtime, SrvRecord, Stream, Transport,
};
use anymongo::{Client, Result};
use wstd::io::{AsyncRead, AsyncWrite};
use wstd::net::TcpStream;

/// Runs a future to completion on the WASI event loop (`wstd`'s reactor).
pub use wstd::runtime::block_on;

/// A client for `uri` on WASI: shorthand for
/// `Client::with_uri(uri, anymongo_wasi::runtime())`.
pub fn client(uri: &str) -> Result<Client> {
    Client::with_uri(uri, runtime())
}

/// The WASI [`Runtime`]: wasi:sockets, rustls, WASI clocks, and no spawner.
pub fn runtime() -> Runtime {
    Runtime {
        transport: Arc::new(WasiTransport),
        resolver: Arc::new(WasiResolver),
        clock: Arc::new(WasiClock),
        spawner: None,
        host: HostInfo {
            runtime: "wasi",
            platform: "WASI 0.2 (wstd), rustls".into(),
            os_type: "wasi".into(),
            architecture: Some("wasm32".into()),
            docker: false,
            env: |name| std::env::var(name).ok(),
        },
    }
}

/// Opens TCP connections through wasi:sockets and, when asked, TLS with rustls.
/// `tlsCAFile` is read from the file system the host grants (a preopened directory).
#[derive(Debug, Clone, Copy, Default)]
pub struct WasiTransport;

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
            let addresses = resolve(&target.host, target.port)?;
            let mut last_error = None;
            let mut tcp = None;
            for address in addresses {
                // wstd cannot connect to IPv6 addresses yet; say so rather than fail oddly.
                if address.is_ipv6() {
                    last_error = Some(io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!("IPv6 address {address}: not supported by the WASI transport yet"),
                    ));
                    continue;
                }
                match TcpStream::connect_addr(address).await {
                    Ok(stream) => {
                        tcp = Some(stream);
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
            anymongo::tls::secure(stream, target, |path| std::fs::read(path)).await
        })
    }
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

struct WasiStream(TcpStream);

impl Stream for WasiStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(self.0.read(buf))
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(async move {
            self.0.write_all(buf).await?;
            self.0.flush().await
        })
    }
}

/// DNS on WASI: addresses through wasi:sockets; SRV and TXT arrive with
/// `mongodb+srv://` support.
#[derive(Debug, Clone, Copy, Default)]
pub struct WasiResolver;

impl Resolver for WasiResolver {
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        boxed(async move { Err(unsupported_lookup("SRV", name)) })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        boxed(async move { Err(unsupported_lookup("TXT", name)) })
    }

    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        boxed(async move { Ok(resolve(host, 0)?.iter().map(SocketAddr::ip).collect()) })
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
