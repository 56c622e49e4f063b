//! The typed values of URI options that are more than a number, a flag or a string and
//! belong to no other specification's module: the server monitoring mode and the SOCKS5
//! proxy. (Read preference lives in [`crate::selection`], read and write concern in
//! [`crate::concern`], compressors in [`crate::wire::compression`].)

use std::fmt;

use crate::named_enum::named_enum;

named_enum! {
    /// How servers are monitored (Server Monitoring spec, "serverMonitoringMode").
    #[derive(Default)]
    ServerMonitoringMode {
        /// The streaming protocol, except on FaaS platforms, where polling is used (the default).
        #[default]
        Auto = "auto",
        /// The streaming protocol whenever the server supports it.
        Stream = "stream",
        /// Periodic polling.
        Poll = "poll",
    }
}

/// The SOCKS5 proxy every connection goes through (SOCKS5 Support spec, "MongoClient
/// Configuration"). `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyOptions {
    /// `proxyHost`: the proxy's host name or IP address.
    pub host: String,
    /// `proxyPort`, 1080 by default.
    pub port: u16,
    /// `proxyUsername`; set together with `password` or not at all.
    pub username: Option<String>,
    /// `proxyPassword`; set together with `username` or not at all.
    pub password: Option<String>,
}

impl ProxyOptions {
    /// The SOCKS5 default port.
    pub const DEFAULT_PORT: u16 = 1080;

    /// A proxy at `host` on the default port, without authentication.
    pub fn new(host: impl Into<String>) -> Self {
        ProxyOptions {
            host: host.into(),
            port: ProxyOptions::DEFAULT_PORT,
            username: None,
            password: None,
        }
    }
}

impl fmt::Debug for ProxyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyOptions")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}
