//! The typed values of URI options that are more than a number, a flag or a string and
//! belong to no other specification's module: the server monitoring mode and the SOCKS5
//! proxy. (Read preference lives in [`crate::selection`], read and write concern in
//! [`crate::concern`], compressors in [`crate::wire::compression`].)

use std::fmt;

use typed_builder::TypedBuilder;

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

/// `ClientOptions::socks5_proxy`: the SOCKS5 proxy every connection goes through
/// (SOCKS5 Support spec, "MongoClient Configuration"), the official crate's
/// `options::Socks5Proxy`. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq, serde::Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct Socks5Proxy {
    /// `proxyHost`: the proxy's host name or IP address.
    #[builder(!default)]
    pub host: String,
    /// `proxyPort`; `None`: 1080 ([`Socks5Proxy::DEFAULT_PORT`]).
    pub port: Option<u16>,
    /// `proxyUsername` and `proxyPassword`, which the spec has given together or not at
    /// all; an empty one means no authentication ("Drivers MUST ignore this option if it
    /// specifies a zero-length string").
    pub authentication: Option<(String, String)>,
}

impl Socks5Proxy {
    /// The SOCKS5 default port.
    pub const DEFAULT_PORT: u16 = 1080;

    /// The port connections go to: `port`, or 1080.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(Self::DEFAULT_PORT)
    }
}

impl fmt::Debug for Socks5Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let authentication = self
            .authentication
            .as_ref()
            .map(|(username, _)| (username, "<redacted>"));
        f.debug_struct("Socks5Proxy")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("authentication", &authentication)
            .finish()
    }
}
