//! Connection strings (the Connection String spec), minimal for now.
//!
//! Understood: the `mongodb://` scheme, one or more `host[:port]` seeds (IPv6 literals
//! in brackets), a default database, and the options `tls` / `ssl`, `tlsCAFile`,
//! `connectTimeoutMS`, `socketTimeoutMS` and `appName`. Keys are case-insensitive.
//! Any other option is kept out and reported in [`ClientOptions::warnings`], never
//! printed. Credentials and `mongodb+srv://` are refused with a clear error until
//! authentication and seedlist discovery land.

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::rt::{CaSource, TlsOptions};

/// The default MongoDB port.
pub const DEFAULT_PORT: u16 = 27017;

/// A server address: host name or IP literal, and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerAddress {
    /// Host name or IP literal (IPv6 without brackets), lower-cased.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl ServerAddress {
    /// Parses `host`, `host:port` or `[v6]:port`.
    ///
    /// ```
    /// use anymongo::ServerAddress;
    /// let address = ServerAddress::parse("[::1]:27018").unwrap();
    /// assert_eq!((address.host.as_str(), address.port), ("::1", 27018));
    /// assert_eq!(ServerAddress::parse("Example.COM").unwrap().to_string(), "example.com:27017");
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid_argument(format!("invalid host '{text}': {why}"));
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("missing ']'"))?;
            match after {
                "" => (host, None),
                _ => (
                    host,
                    Some(
                        after
                            .strip_prefix(':')
                            .ok_or_else(|| bad("expected ':' after ']'"))?,
                    ),
                ),
            }
        } else {
            match text.rsplit_once(':') {
                Some((host, _)) if host.contains(':') => {
                    return Err(bad("IPv6 literals must be enclosed in '[' and ']'"))
                }
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            }
        };
        if host.is_empty() {
            return Err(bad("empty host"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => match port.parse::<u16>() {
                Ok(port) if port > 0 => port,
                _ => return Err(bad("port must be a number from 1 to 65535")),
            },
        };
        Ok(ServerAddress {
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

/// Options of a [`crate::Client`], filled from a connection string or built in code.
///
/// ```
/// use anymongo::ClientOptions;
/// let options = ClientOptions::parse("mongodb://localhost:27018/app?appName=demo&tls=true").unwrap();
/// assert_eq!(options.hosts[0].port, 27018);
/// assert_eq!(options.app_name.as_deref(), Some("demo"));
/// assert!(options.tls.is_some());
/// ```
#[derive(Clone, PartialEq)]
pub struct ClientOptions {
    /// The seed list.
    pub hosts: Vec<ServerAddress>,
    /// The database named in the connection string's path, if any.
    pub default_database: Option<String>,
    /// `appName`, sent in the handshake (at most 128 bytes).
    pub app_name: Option<String>,
    /// `Some` when connections use TLS (`tls=true` / `ssl=true`).
    pub tls: Option<TlsOptions>,
    /// `connectTimeoutMS`: bound on opening a connection (TCP, TLS and handshake). Default 10 s.
    pub connect_timeout: Duration,
    /// `socketTimeoutMS`: bound on each read of a reply; `None` (the default) waits as long as the server takes.
    pub socket_timeout: Option<Duration>,
    /// Things in the connection string that were ignored, one sentence each.
    pub warnings: Vec<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            hosts: vec![ServerAddress {
                host: "localhost".into(),
                port: DEFAULT_PORT,
            }],
            default_database: None,
            app_name: None,
            tls: None,
            connect_timeout: Duration::from_secs(10),
            socket_timeout: None,
            warnings: Vec::new(),
        }
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
        f.debug_struct("ClientOptions")
            .field("hosts", &hosts)
            .field("default_database", &self.default_database)
            .field("app_name", &self.app_name)
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .field("socket_timeout", &self.socket_timeout)
            .finish()
    }
}

impl ClientOptions {
    /// Parses a `mongodb://` connection string.
    pub fn parse(uri: &str) -> Result<Self> {
        if uri.starts_with("mongodb+srv://") {
            return Err(Error::invalid_argument(
                "mongodb+srv:// connection strings are not supported yet",
            ));
        }
        let rest = uri.strip_prefix("mongodb://").ok_or_else(|| {
            Error::invalid_argument("connection string must start with 'mongodb://'")
        })?;
        let (authority, path_and_query) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(Error::invalid_argument(
                "credentials in the connection string are not supported yet (authentication is not implemented)",
            ));
        }
        if authority.is_empty() {
            return Err(Error::invalid_argument("connection string names no host"));
        }
        let mut options = ClientOptions {
            hosts: authority
                .split(',')
                .map(ServerAddress::parse)
                .collect::<Result<_>>()?,
            ..ClientOptions::default()
        };

        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, query),
            None => (path_and_query, ""),
        };
        let database = path.strip_prefix('/').unwrap_or(path);
        if !database.is_empty() {
            options.default_database = Some(percent_decode(database)?);
        }
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                Error::invalid_argument(format!("option '{pair}' has no '=value'"))
            })?;
            options.apply(key, &percent_decode(value)?)?;
        }
        Ok(options)
    }

    fn apply(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = |why: &str| Error::invalid_argument(format!("option {key}={value}: {why}"));
        let millis = || -> Result<Duration> {
            value
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| bad("expected a non-negative integer"))
        };
        match key.to_ascii_lowercase().as_str() {
            "tls" | "ssl" => match value {
                "true" => {
                    self.tls.get_or_insert_with(TlsOptions::default);
                }
                "false" if self.tls.as_ref().is_some_and(|t| t.ca_pem.is_some()) => {
                    return Err(bad("tlsCAFile given with TLS turned off"))
                }
                "false" => self.tls = None,
                _ => return Err(bad("expected true or false")),
            },
            "tlscafile" => {
                self.tls.get_or_insert_with(TlsOptions::default).ca_pem =
                    Some(CaSource::File(value.to_string()))
            }
            "connecttimeoutms" => self.connect_timeout = millis()?,
            "sockettimeoutms" => {
                self.socket_timeout = Some(millis()?).filter(|timeout| !timeout.is_zero())
            }
            "appname" if value.len() > 128 => return Err(bad("appName exceeds 128 bytes")),
            "appname" => self.app_name = Some(value.to_string()),
            _ => self.warnings.push(format!(
                "option '{key}' is not supported yet and was ignored"
            )),
        }
        Ok(())
    }
}

/// Decodes `%XX` escapes.
fn percent_decode(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| {
                    Error::invalid_argument(format!("invalid percent-encoding in '{text}'"))
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| Error::invalid_argument(format!("'{text}' does not decode to UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_database_and_options() {
        let options = ClientOptions::parse(
            "mongodb://a.example:1,[::1]:2,b/db%20x?TLS=true&tlsCAFile=%2Ftmp%2Fca.pem&connectTimeoutMS=250&appName=x",
        )
        .unwrap();
        let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
        assert_eq!(hosts, ["a.example:1", "[::1]:2", "b:27017"]);
        assert_eq!(options.default_database.as_deref(), Some("db x"));
        assert_eq!(
            options.tls.unwrap().ca_pem,
            Some(CaSource::File("/tmp/ca.pem".into()))
        );
        assert_eq!(options.connect_timeout, Duration::from_millis(250));
        assert_eq!(options.app_name.as_deref(), Some("x"));
    }

    #[test]
    fn unknown_options_become_warnings() {
        let options = ClientOptions::parse("mongodb://h/?w=majority").unwrap();
        assert_eq!(options.warnings.len(), 1);
        assert!(options.warnings[0].contains("'w'"));
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        for (uri, needle) in [
            ("http://h", "must start with"),
            ("mongodb://", "no host"),
            ("mongodb://h:0", "port"),
            ("mongodb://h:99999", "port"),
            ("mongodb://::1", "IPv6"),
            ("mongodb://[::1", "']'"),
            ("mongodb://u:p@h", "credentials"),
            ("mongodb://h/?tls=maybe", "true or false"),
            ("mongodb://h/?connectTimeoutMS=-1", "non-negative"),
            ("mongodb://h/?appName=%zz", "percent"),
            ("mongodb://h/?tls", "no '=value'"),
        ] {
            let error = ClientOptions::parse(uri).unwrap_err().to_string();
            assert!(error.contains(needle), "{uri}: {error}");
        }
    }
}
