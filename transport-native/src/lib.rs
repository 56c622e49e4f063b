//! The native host of anymongo: tokio TCP, rustls TLS, the tokio clock and spawner.
//!
//! ```no_run
//! # async fn example() -> anymongo::Result<()> {
//! use anymongo::bson::doc;
//! let client = anymongo_native::client("mongodb://localhost:27017")?;
//! client.database("admin").run_command(doc! { "ping": 1 }).await?;
//! # Ok(()) }
//! ```
//!
//! Must be used inside a tokio runtime (the clock, spawner and sockets are tokio's).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use anymongo::rt::{
    boxed, unsupported_lookup, BoxFuture, Clock, ConnectTarget, HostInfo, Instant, IpAddr,
    Resolver, Runtime, Spawner, SrvRecord, Stream, Transport,
};
use anymongo::{Client, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// TCP keepalive idle time, as the Connection Monitoring and Pooling spec recommends.
const KEEPALIVE: Duration = Duration::from_secs(120);

/// A client for `uri` on the native runtime: shorthand for
/// `Client::with_uri(uri, anymongo_native::runtime())`.
pub fn client(uri: &str) -> Result<Client> {
    Client::with_uri(uri, runtime())
}

/// The native [`Runtime`]: tokio sockets, rustls, tokio time, and the tokio runtime
/// this is called in for background monitoring. Called outside a tokio runtime, it has
/// no spawner, and clients built with it monitor in single-threaded mode (their
/// operations must still run in a tokio runtime).
pub fn runtime() -> Runtime {
    Runtime {
        transport: Arc::new(TokioTransport),
        resolver: Arc::new(TokioResolver),
        clock: Arc::new(TokioClock {
            origin: tokio::time::Instant::now(),
        }),
        spawner: tokio::runtime::Handle::try_current()
            .ok()
            .map(|handle| Arc::new(TokioSpawner(handle)) as Arc<dyn Spawner>),
        host: HostInfo {
            runtime: "native",
            platform: "tokio, rustls".into(),
            os_type: std::env::consts::OS.into(),
            architecture: Some(std::env::consts::ARCH.into()),
            docker: std::path::Path::new("/.dockerenv").exists(),
            env: |name| std::env::var(name).ok(),
        },
    }
}

/// Opens TCP connections (TCP_NODELAY, keepalive) or unix domain sockets with tokio
/// and, when asked, TLS with rustls.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTransport;

impl Transport for TokioTransport {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            let stream = match target.is_unix_socket() {
                true => connect_unix(&target.host).await?,
                false => {
                    let tcp = TcpStream::connect((target.host.as_str(), target.port)).await?;
                    tcp.set_nodelay(true)?;
                    socket2::SockRef::from(&tcp)
                        .set_tcp_keepalive(&socket2::TcpKeepalive::new().with_time(KEEPALIVE))?;
                    Box::new(TokioStream(tcp)) as Box<dyn Stream>
                }
            };
            anymongo::tls::secure(stream, target, |path| std::fs::read(path)).await
        })
    }
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

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for TokioStream<S> {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(self.0.read(buf))
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(self.0.write_all(buf))
    }
}

/// DNS through the system resolver.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioResolver;

impl Resolver for TokioResolver {
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        boxed(async move { Err(unsupported_lookup("SRV", name)) })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        boxed(async move { Err(unsupported_lookup("TXT", name)) })
    }

    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        boxed(async move {
            let addresses = tokio::net::lookup_host((host, 0)).await?;
            Ok(addresses.map(|address| address.ip()).collect())
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
