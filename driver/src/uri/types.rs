//! The typed values of URI options that are more than a number, a flag or a string:
//! read preference, read and write concern, compressors, the server monitoring mode and
//! the SOCKS5 proxy.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// Defines a closed set of names: the enum, `name()` and `from_name()` (exact spelling).
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The name as a connection string spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value spelled `name` (exact spelling), if any.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|value| value.name() == name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// The read preference mode (Server Selection spec, "mode").
    #[derive(Default)]
    ReadPreferenceMode {
        /// Read from the primary only (the default).
        #[default]
        Primary = "primary",
        /// Read from the primary if there is one, else from a secondary.
        PrimaryPreferred = "primaryPreferred",
        /// Read from a secondary only.
        Secondary = "secondary",
        /// Read from a secondary if there is one, else from the primary.
        SecondaryPreferred = "secondaryPreferred",
        /// Read from any member within the latency window.
        Nearest = "nearest",
    }
}

named_enum! {
    /// A wire protocol compressor (OP_COMPRESSED spec, "compressors").
    Compressor {
        /// Snappy.
        Snappy = "snappy",
        /// zlib, at [`crate::ClientOptions::zlib_compression_level`].
        Zlib = "zlib",
        /// Zstandard.
        Zstd = "zstd",
    }
}

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

/// One tag set of a read preference: the tags a server must all carry.
pub type TagSet = BTreeMap<String, String>;

/// Which servers may serve reads (Server Selection spec, "Read preference").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPreference {
    /// `readPreference`.
    pub mode: ReadPreferenceMode,
    /// `readPreferenceTags`, one tag set per occurrence of the option, tried in order;
    /// empty means every server is eligible. Must be empty (or hold only empty sets)
    /// with mode `primary`.
    pub tag_sets: Vec<TagSet>,
    /// `maxStalenessSeconds`; `None` (or `-1` in a connection string) means no maximum.
    /// Must be `None` with mode `primary` (Max Staleness spec, "API").
    pub max_staleness: Option<Duration>,
}

/// A read concern level (Read and Write Concern spec, "Read Concern").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReadConcernLevel {
    /// `local`.
    Local,
    /// `majority`.
    Majority,
    /// `linearizable`.
    Linearizable,
    /// `available`.
    Available,
    /// `snapshot`.
    Snapshot,
    /// A level this driver does not know, passed to the server as is ("to allow for
    /// forwards compatibility with the server").
    Custom(String),
}

impl ReadConcernLevel {
    const KNOWN: [ReadConcernLevel; 5] = [
        ReadConcernLevel::Local,
        ReadConcernLevel::Majority,
        ReadConcernLevel::Linearizable,
        ReadConcernLevel::Available,
        ReadConcernLevel::Snapshot,
    ];

    /// The level as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            ReadConcernLevel::Local => "local",
            ReadConcernLevel::Majority => "majority",
            ReadConcernLevel::Linearizable => "linearizable",
            ReadConcernLevel::Available => "available",
            ReadConcernLevel::Snapshot => "snapshot",
            ReadConcernLevel::Custom(level) => level,
        }
    }

    /// The level spelled `level`: a known one, else [`ReadConcernLevel::Custom`].
    pub fn from_name(level: &str) -> ReadConcernLevel {
        ReadConcernLevel::KNOWN
            .into_iter()
            .find(|known| known.as_str() == level)
            .unwrap_or_else(|| ReadConcernLevel::Custom(level.to_owned()))
    }
}

/// The `w` of a write concern: how many members must acknowledge a write.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Acknowledgment {
    /// That many members (`0` asks for no acknowledgment at all).
    Nodes(u32),
    /// A majority of the voting members.
    Majority,
    /// A custom write concern name (a tag set defined on the replica set).
    Custom(String),
}

/// The client's default write concern (Read and Write Concern spec, "Write Concern").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteConcern {
    /// `w`; `None` leaves it to the server.
    pub w: Option<Acknowledgment>,
    /// `journal` (sent as `j`): wait for the journal commit. `true` cannot be combined
    /// with `w: 0`.
    pub journal: Option<bool>,
    /// `wTimeoutMS` (sent as `wtimeout`); zero means no limit. (The Client Side
    /// Operations Timeout spec deprecates it in favour of `timeoutMS`, which the driver
    /// does not implement yet.)
    pub w_timeout: Option<Duration>,
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
