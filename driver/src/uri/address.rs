//! Host identifiers (Connection String spec, "Host Information").

use core::net::{Ipv4Addr, Ipv6Addr};
use std::fmt;

use super::encoding::{percent_decode, percent_encode};
use crate::error::{Error, Result};

/// The default MongoDB port.
pub const DEFAULT_PORT: u16 = 27017;

/// The address of a server: a host and port, or a unix domain socket.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerAddress {
    /// A TCP address.
    Tcp {
        /// Host name (ASCII letters lower-cased), IPv4 address or IPv6 literal (without
        /// brackets).
        host: String,
        /// TCP port.
        port: u16,
    },
    /// A unix domain socket.
    Unix {
        /// The socket's path, absolute or relative; it ends in `.sock`.
        path: String,
    },
}

impl ServerAddress {
    /// A TCP address; `host` is taken as given.
    pub fn tcp(host: impl Into<String>, port: u16) -> Self {
        ServerAddress::Tcp {
            host: host.into(),
            port,
        }
    }

    /// Parses one host identifier as a connection string spells it: `host`,
    /// `host:port`, `[v6]`, `[v6]:port`, or a percent-encoded unix domain socket path
    /// ending in `.sock` (Connection String spec, "Host"). Host names are
    /// percent-decoded, and their ASCII letters lower-cased.
    ///
    /// ```
    /// use anymongo::ServerAddress;
    /// let address = ServerAddress::parse("[::1]:27018").unwrap();
    /// assert_eq!((address.host(), address.port()), ("::1", Some(27018)));
    /// assert_eq!(ServerAddress::parse("Example.COM").unwrap().to_string(), "example.com:27017");
    /// let socket = ServerAddress::parse("%2Ftmp%2Fmongodb-27017.sock").unwrap();
    /// assert_eq!(socket, ServerAddress::Unix { path: "/tmp/mongodb-27017.sock".into() });
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid_argument(format!("invalid host '{text}': {why}"));
        if text.contains('/') {
            return Err(bad(
                "unix domain socket paths must be URL encoded (%2F for '/')",
            ));
        }
        let decoded = percent_decode(text, &format!("host '{text}'"))?;
        if decoded.contains('/') {
            // "UNIX domain sockets MUST end in '.sock' and MUST be URL encoded."
            return if decoded.ends_with(".sock") {
                Ok(ServerAddress::Unix { path: decoded })
            } else {
                Err(bad("a unix domain socket path must end in '.sock'"))
            };
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (literal, after) = rest.split_once(']').ok_or_else(|| bad("missing ']'"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("expected ':' after ']'"))?,
                ),
            };
            if literal.parse::<Ipv6Addr>().is_err() {
                return Err(bad("not an IPv6 address"));
            }
            (literal.to_ascii_lowercase(), port)
        } else {
            let (host, port) = match text.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            };
            let host = percent_decode(host, &format!("host '{text}'"))?;
            if host.contains(':') {
                return Err(bad("IPv6 literals must be enclosed in '[' and ']'"));
            }
            if host.is_empty() {
                return Err(bad("empty host"));
            }
            if let Some(c) = host
                .chars()
                .find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || "-._".contains(*c)))
            {
                return Err(bad(&format!("'{c}' is not allowed in a host name")));
            }
            (host.to_ascii_lowercase(), port)
        };
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => {
                parse_port(port).ok_or_else(|| bad("port must be a number from 1 to 65535"))?
            }
        };
        Ok(ServerAddress::Tcp { host, port })
    }

    /// The host name or IP literal, or the socket path.
    pub fn host(&self) -> &str {
        match self {
            ServerAddress::Tcp { host, .. } => host,
            ServerAddress::Unix { path } => path,
        }
    }

    /// The TCP port; `None` for a unix domain socket.
    pub fn port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => Some(*port),
            ServerAddress::Unix { .. } => None,
        }
    }

    /// Whether this is an IPv4 address or an IPv6 literal rather than a name.
    pub fn is_ip_literal(&self) -> bool {
        matches!(self, ServerAddress::Tcp { host, .. }
            if host.parse::<Ipv4Addr>().is_ok() || host.parse::<Ipv6Addr>().is_ok())
    }

    /// The address as a connection string spells it (the inverse of [`parse`](Self::parse)).
    pub(super) fn to_uri_text(&self) -> String {
        match self {
            ServerAddress::Unix { path } => percent_encode(path),
            ServerAddress::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            ServerAddress::Tcp { host, port } => format!("{}:{port}", percent_encode(host)),
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddress::Tcp { host, port } if host.contains(':') => {
                write!(f, "[{host}]:{port}")
            }
            ServerAddress::Tcp { host, port } => write!(f, "{host}:{port}"),
            ServerAddress::Unix { path } => f.write_str(path),
        }
    }
}

/// A port: 1 to 65535, decimal digits only (Connection String spec, "Port").
fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|port| *port > 0)
}
