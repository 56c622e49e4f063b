//! Host identifiers (Connection String spec, "Host Information").

// `core::net`: address values only (the core does no I/O of its own).
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::str::FromStr;

use super::encoding::{percent_decode, percent_encode};
use crate::error::{Error, Result};

/// The default MongoDB port.
pub const DEFAULT_PORT: u16 = 27017;

/// The address of a server: a host and port, or a unix domain socket, as in the
/// official `mongodb` crate.
///
/// A TCP address without a port means [`DEFAULT_PORT`]: `Tcp { host, port: None }`
/// and `Tcp { host, port: Some(27017) }` are equal, hash alike and display alike.
///
/// ```
/// use anymongo::options::ServerAddress;
/// let seed = ServerAddress::Tcp { host: "localhost".into(), port: None };
/// assert_eq!(seed, ServerAddress::parse("localhost:27017").unwrap());
/// assert_eq!(seed.to_string(), "localhost:27017");
/// ```
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub enum ServerAddress {
    /// A TCP address.
    Tcp {
        /// Host name (ASCII letters lower-cased), IPv4 address or IPv6 literal (without
        /// brackets).
        host: String,
        /// TCP port; `None` means [`DEFAULT_PORT`].
        port: Option<u16>,
    },
    /// A unix domain socket. The official crate has this variant on unix targets
    /// only; here it exists on every target, and a transport without unix domain
    /// sockets (WASI, the npm package's hosts, Windows) fails to connect to it.
    Unix {
        /// The socket's path, absolute or relative; it ends in `.sock`.
        path: PathBuf,
    },
}

impl ServerAddress {
    /// A TCP address with an explicit port (anymongo addition); `host` is taken as
    /// given.
    pub fn tcp(host: impl Into<String>, port: u16) -> Self {
        ServerAddress::Tcp {
            host: host.into(),
            port: Some(port),
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
    /// let name = ServerAddress::parse("Example.COM").unwrap();
    /// assert_eq!((name.host(), name.port()), ("example.com", None));
    /// assert_eq!(name.to_string(), "example.com:27017");
    /// let socket = ServerAddress::parse("%2Ftmp%2Fmongodb-27017.sock").unwrap();
    /// assert_eq!(socket, ServerAddress::Unix { path: "/tmp/mongodb-27017.sock".into() });
    /// ```
    pub fn parse(text: impl AsRef<str>) -> Result<Self> {
        let text = text.as_ref();
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
                Ok(ServerAddress::Unix {
                    path: decoded.into(),
                })
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
            None => None,
            Some(port) => {
                Some(parse_port(port).ok_or_else(|| bad("port must be a number from 1 to 65535"))?)
            }
        };
        Ok(ServerAddress::Tcp { host, port })
    }

    /// The host name or IP literal, or the socket path (an anymongo addition: the
    /// official crate has no public accessor). A socket path that is not UTF-8, which
    /// only a hand-built address can hold, reads as empty.
    pub fn host(&self) -> &str {
        match self {
            ServerAddress::Tcp { host, .. } => host,
            ServerAddress::Unix { path } => path.to_str().unwrap_or_default(),
        }
    }

    /// The TCP port as given: `None` when the address left it to the default, and
    /// for a unix domain socket.
    pub fn port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => *port,
            ServerAddress::Unix { .. } => None,
        }
    }

    /// The TCP port connected to ([`DEFAULT_PORT`] when not given); `None` for a unix
    /// domain socket.
    pub(crate) fn tcp_port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => Some(port.unwrap_or(DEFAULT_PORT)),
            ServerAddress::Unix { .. } => None,
        }
    }

    /// What equality, hashing and ordering compare: the default port filled in.
    fn key(&self) -> (u8, &OsStr, u16) {
        match self {
            ServerAddress::Tcp { host, port } => {
                (0, OsStr::new(host), port.unwrap_or(DEFAULT_PORT))
            }
            ServerAddress::Unix { path } => (1, path.as_os_str(), 0),
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
            ServerAddress::Unix { path } => percent_encode(&path.to_string_lossy()),
            ServerAddress::Tcp { host, port } if host.contains(':') => match port {
                Some(port) => format!("[{host}]:{port}"),
                None => format!("[{host}]"),
            },
            ServerAddress::Tcp { host, port } => match port {
                Some(port) => format!("{}:{port}", percent_encode(host)),
                None => percent_encode(host),
            },
        }
    }
}

impl PartialEq for ServerAddress {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ServerAddress {}

impl Hash for ServerAddress {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialOrd for ServerAddress {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ServerAddress {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl Default for ServerAddress {
    /// `localhost`, on the default port.
    fn default() -> Self {
        ServerAddress::Tcp {
            host: "localhost".into(),
            port: None,
        }
    }
}

impl From<SocketAddr> for ServerAddress {
    /// The TCP address of an IP address and port.
    fn from(address: SocketAddr) -> Self {
        ServerAddress::tcp(address.ip().to_string(), address.port())
    }
}

impl FromStr for ServerAddress {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        ServerAddress::parse(text)
    }
}

/// Reads an address as the official crate does: `"host:port"` (as
/// [`ServerAddress::parse`] reads it) or `{ host, port }`; and as `Serialize` writes it
/// (`{ "Tcp": { host, port } }`, `{ "Unix": { path } }`), so that logged events read
/// back.
impl<'de> serde::Deserialize<'de> for ServerAddress {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Parts { host: String, port: Option<u16> },
            Serialized(Serialized),
        }
        #[derive(serde::Deserialize)]
        enum Serialized {
            Tcp { host: String, port: Option<u16> },
            Unix { path: PathBuf },
        }
        match Written::deserialize(deserializer)? {
            Written::Serialized(Serialized::Tcp { host, port }) => {
                Ok(ServerAddress::Tcp { host, port })
            }
            Written::Serialized(Serialized::Unix { path }) => Ok(ServerAddress::Unix { path }),
            Written::Text(text) => ServerAddress::parse(text).map_err(serde::de::Error::custom),
            Written::Parts { host, port } => Ok(ServerAddress::Tcp {
                host: host.to_ascii_lowercase(),
                port,
            }),
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddress::Tcp { host, port } if host.contains(':') => {
                write!(f, "[{host}]:{}", port.unwrap_or(DEFAULT_PORT))
            }
            ServerAddress::Tcp { host, port } => {
                write!(f, "{host}:{}", port.unwrap_or(DEFAULT_PORT))
            }
            ServerAddress::Unix { path } => write!(f, "{}", path.display()),
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
