//! TCP connections over wasi:sockets, IPv4 and IPv6: the MongoDB transport's, and DNS
//! over TCP's.
//!
//! Written on the wasi:sockets and wasi:io resources directly, with `wstd`'s reactor
//! for waiting, rather than through `wstd::net::TcpStream`, for three reasons: that
//! stream cannot connect to IPv6 addresses; it asks the stream's pollable before every
//! read, where a read that finds bytes needs no wait (one host call, not two); and it
//! hides the input stream, which [`TcpConnection::is_open_and_idle`] reads without
//! waiting.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use wasip2::io::streams::{InputStream, OutputStream, StreamError};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::network::{
    ErrorCode, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress,
};
use wasip2::sockets::tcp::TcpSocket;
use wasip2::sockets::tcp_create_socket::create_tcp_socket;
use wstd::runtime::AsyncPollable;

/// TCP keepalive idle time, as the Connection Monitoring and Pooling spec recommends
/// (the native transport's too).
const KEEPALIVE: Duration = Duration::from_secs(120);

/// An open TCP connection.
pub(crate) struct TcpConnection {
    // Fields drop in their order: each pollable before the stream it watches, the
    // streams before their socket (wasi:sockets requires it).
    readable: AsyncPollable,
    writable: AsyncPollable,
    input: InputStream,
    output: OutputStream,
    /// Kept for the connection's life: the streams are its children.
    _socket: TcpSocket,
}

impl TcpConnection {
    /// Connects to `peer`; errors name it and the step that failed.
    pub(crate) async fn connect(peer: SocketAddr) -> io::Result<TcpConnection> {
        let failed = |doing| move |code| socket_error(&peer.to_string(), doing, code);
        let socket = create_tcp_socket(family(peer)).map_err(failed("creating a TCP socket"))?;
        // Best effort: a host may not offer keepalive, and the connection works without.
        if socket.set_keep_alive_enabled(true).is_ok() {
            let _ = socket.set_keep_alive_idle_time(KEEPALIVE.as_nanos() as u64);
        }
        socket
            .start_connect(&instance_network(), wasi_address(peer))
            .map_err(failed("connecting over TCP"))?;
        let (input, output) = {
            let connected = AsyncPollable::new(socket.subscribe());
            loop {
                match socket.finish_connect() {
                    Err(ErrorCode::WouldBlock) => connected.wait_for().await,
                    done => break done.map_err(failed("connecting over TCP"))?,
                }
            }
        };
        Ok(TcpConnection {
            readable: AsyncPollable::new(input.subscribe()),
            writable: AsyncPollable::new(output.subscribe()),
            input,
            output,
            _socket: socket,
        })
    }

    /// Reads at least one byte into `buf`, returning how many; `Ok(0)` when the peer
    /// closed the connection (or `buf` is empty). Reads first and waits only when
    /// nothing has arrived. Cancel-safe: bytes are only taken by a read that returns
    /// them.
    pub(crate) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.input.read(buf.len() as u64) {
                Ok(bytes) if bytes.is_empty() => self.readable.wait_for().await,
                Ok(bytes) => {
                    // The host never gives more than asked.
                    let n = bytes.len().min(buf.len());
                    buf[..n].copy_from_slice(&bytes[..n]);
                    return Ok(n);
                }
                Err(StreamError::Closed) => return Ok(0),
                Err(StreamError::LastOperationFailed(error)) => {
                    return Err(io::Error::other(error.to_debug_string()))
                }
            }
        }
    }

    /// Writes all of `buf`, as fast as the host accepts it, then asks the host to flush.
    /// The flush is not waited for: the host sends what it holds on its own, and the
    /// stream accepts no further write until the flush is done, so the next
    /// [`write_all`](Self::write_all) waits if it must.
    pub(crate) async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let permitted = self.output.check_write().map_err(write_error)?;
            if permitted == 0 {
                self.writable.wait_for().await;
                continue;
            }
            let n = usize::try_from(permitted)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            self.output.write(&buf[..n]).map_err(write_error)?;
            buf = &buf[n..];
        }
        self.output.flush().map_err(write_error)
    }

    /// Whether the connection, idle between requests, is still open: a read that does
    /// not wait finds nothing (wasi:io has no peek; a byte it did find was one no
    /// request asked for, and the caller discards the connection then anyway).
    pub(crate) fn is_open_and_idle(&self) -> bool {
        matches!(self.input.read(1), Ok(bytes) if bytes.is_empty())
    }
}

fn write_error(error: StreamError) -> io::Error {
    match error {
        StreamError::Closed => {
            io::Error::new(io::ErrorKind::BrokenPipe, "the peer closed the connection")
        }
        StreamError::LastOperationFailed(error) => io::Error::other(error.to_debug_string()),
    }
}

pub(crate) fn family(address: SocketAddr) -> IpAddressFamily {
    match address {
        SocketAddr::V4(_) => IpAddressFamily::Ipv4,
        SocketAddr::V6(_) => IpAddressFamily::Ipv6,
    }
}

pub(crate) fn wasi_address(address: SocketAddr) -> IpSocketAddress {
    match address {
        SocketAddr::V4(v4) => {
            let [a, b, c, d] = v4.ip().octets();
            IpSocketAddress::Ipv4(Ipv4SocketAddress {
                port: v4.port(),
                address: (a, b, c, d),
            })
        }
        SocketAddr::V6(v6) => {
            let [a, b, c, d, e, f, g, h] = v6.ip().segments();
            IpSocketAddress::Ipv6(Ipv6SocketAddress {
                port: v6.port(),
                flow_info: v6.flowinfo(),
                address: (a, b, c, d, e, f, g, h),
                scope_id: v6.scope_id(),
            })
        }
    }
}

/// A wasi:sockets error as an `io::Error` naming the peer and the step.
pub(crate) fn socket_error(peer: &str, doing: &str, code: ErrorCode) -> io::Error {
    let kind = match code {
        ErrorCode::AccessDenied => io::ErrorKind::PermissionDenied,
        ErrorCode::NotSupported => io::ErrorKind::Unsupported,
        ErrorCode::InvalidArgument => io::ErrorKind::InvalidInput,
        ErrorCode::Timeout => io::ErrorKind::TimedOut,
        ErrorCode::ConnectionRefused => io::ErrorKind::ConnectionRefused,
        ErrorCode::ConnectionReset => io::ErrorKind::ConnectionReset,
        ErrorCode::RemoteUnreachable => io::ErrorKind::HostUnreachable,
        _ => io::ErrorKind::Other,
    };
    let hint = match code {
        // The host did not grant network access.
        ErrorCode::AccessDenied => " (wasmtime: -S inherit-network=y)",
        _ => "",
    };
    io::Error::new(
        kind,
        format!("{peer}: {doing} failed: {}{hint}", code.name()),
    )
}
