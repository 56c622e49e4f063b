//! Connection strings (the Connection String and URI Options specs) and the options of
//! a [`crate::Client`].
//!
//! [`ClientOptions::parse`] reads `mongodb://` and `mongodb+srv://` connection strings:
//! user information, hosts (names, IPv4, `[IPv6]` literals and percent-encoded unix
//! domain socket paths ending in `.sock`), the default database and every option of the
//! URI Options spec, typed and validated. Keys are case-insensitive.
//!
//! What is an error and what is a warning follows the specs: a malformed connection
//! string, conflicting options (`tlsInsecure` with `tlsAllowInvalidCertificates`,
//! `directConnection=true` with several hosts, `loadBalanced=true` with a `replicaSet`,
//! ...) and invalid credentials are errors; an unknown option, an invalid value (which
//! is then ignored), a repeated option (the last value wins, except for
//! `readPreferenceTags`, which accumulates) and a deprecated key (`wtimeout`) are
//! warnings, returned in [`ClientOptions::warnings`] and never printed.
//!
//! TLS is enabled by `tls=true` (or its alias `ssl=true`), by any other `tls`-prefixed
//! option, and by the `mongodb+srv` scheme; `tls=false` turns it off and cannot be
//! combined with other `tls` options.
//!
//! A `mongodb+srv://` string is parsed and validated only: [`ClientOptions::srv`] is set
//! and [`ClientOptions::hosts`] holds the one name whose SRV records give the seed list;
//! resolving them is the job of seedlist discovery.
//!
//! # Precedence
//!
//! From lowest to highest: the defaults ([`ClientOptions::default`]), the connection
//! string, then options set in code. Set options in code with
//! [`ClientOptions::parse_with`], or by assigning fields of a parsed value and calling
//! [`ClientOptions::validate`]:
//!
//! ```
//! use std::time::Duration;
//! use anymongo::ClientOptions;
//! let options = ClientOptions::parse_with("mongodb://h/?appName=uri&connectTimeoutMS=500", |o| {
//!     o.app_name = Some("code".into());
//! })
//! .unwrap();
//! assert_eq!(options.app_name.as_deref(), Some("code"));
//! assert_eq!(options.connect_timeout, Some(Duration::from_millis(500)));
//! ```

use std::fmt;
use std::time::Duration;

use bson::Bson;

use crate::auth::Credential;
use crate::cmap::options::{PoolOptions, DEFAULT_MAINTENANCE_INTERVAL};
use crate::concern::ReadConcern;
use crate::default_runtime::ResolverConfig;
use crate::error::{Error, Result};
use crate::event::cmap::CmapEvent;
use crate::event::command::CommandEvent;
use crate::event::sdam::SdamEvent;
use crate::event::EventHandler;
use crate::handshake::DriverInfo;
use crate::rt::TlsOptions;

mod address;
mod connection_string;
mod encoding;
mod options;
mod parser;
mod types;

pub use crate::rt::Tls;
pub use address::{ServerAddress, DEFAULT_PORT};
pub(crate) use connection_string::query_keys;
pub use connection_string::{ConnectionString, HostInfo};
pub use types::{ServerMonitoringMode, Socks5Proxy};
// The option types that belong to other specifications, where users of the connection
// string look for them too.
pub use crate::concern::{Acknowledgment, ReadConcernLevel, WriteConcern};
use crate::selection::SelectionCriteria;
pub use crate::selection::{ReadPreference, ReadPreferenceMode, TagSet};
pub use crate::wire::compression::Compressor;

/// The longest `appName` (Handshake spec, "Limitations").
const MAX_APP_NAME_BYTES: usize = 128;

/// Options of a [`crate::Client`], read from a connection string or built in code,
/// with the fields and the typed builder of the official `mongodb` crate's
/// `ClientOptions`: every option is an `Option`, and `None` means the driver's
/// default (each field's documentation gives it), applied when the client is made.
/// The fields marked "anymongo addition" are options the official crate does not
/// have.
///
/// `Debug` and `Display` never show a password (of the credential, the proxy or the
/// TLS certificate key) nor an `AWS_SESSION_TOKEN`. `Display` writes the options as a
/// connection string, leaving out those at their default.
///
/// Built in code (the builder's setters take the value, or anything `Into` it):
///
/// ```
/// use std::time::Duration;
/// use anymongo::options::{ClientOptions, ServerAddress, Tls, TlsOptions};
/// let mut options = ClientOptions::builder()
///     .hosts(vec![ServerAddress::Tcp { host: "db.example.com".into(), port: Some(27018) }])
///     .app_name("inventory".to_string())
///     .build();
/// options.max_pool_size = Some(20);
/// options.tls = Some(Tls::Enabled(TlsOptions::builder().allow_invalid_hostnames(true).build()));
/// assert_eq!(options.connect_timeout, None); // 10 seconds when connecting
/// ```
///
/// Read from a connection string:
///
/// ```
/// use anymongo::ClientOptions;
/// let options = ClientOptions::parse_uri("mongodb://localhost:27018/app?appName=demo&tls=true").unwrap();
/// assert_eq!(options.hosts[0].port(), Some(27018));
/// assert_eq!(options.app_name.as_deref(), Some("demo"));
/// assert!(options.tls.is_some());
/// assert_eq!(options.to_string(), "mongodb://localhost:27018/app?appName=demo&tls=true");
/// ```
#[derive(Clone, Debug, PartialEq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ClientOptions {
    /// The seed list; for `mongodb+srv`, the one name to resolve. Default
    /// `localhost:27017`.
    #[builder(default = vec![ServerAddress::tcp("localhost", DEFAULT_PORT)])]
    pub hosts: Vec<ServerAddress>,
    /// `appName`, sent in the handshake (at most 128 bytes).
    pub app_name: Option<String>,
    /// `compressors`, in order of preference. `None`: no compression.
    pub compressors: Option<Vec<Compressor>>,
    /// Receives the connection pools' events (CMAP), from their creation on. Not a
    /// connection string option; `Debug` shows only whether it is set, and options
    /// compare equal when they share the same handler (clones of one another).
    #[builder(setter(strip_option))]
    pub cmap_event_handler: Option<EventHandler<CmapEvent>>,
    /// Receives the events of the commands operations send (not those of handshakes
    /// and monitoring checks). Building the events costs a copy of each command and
    /// reply, paid only while a handler is set.
    #[builder(setter(strip_option))]
    pub command_event_handler: Option<EventHandler<CommandEvent>>,
    /// `connectTimeoutMS`: bound on opening a connection (TCP, TLS and handshake).
    /// `None`: 10 s; zero means no limit.
    pub connect_timeout: Option<Duration>,
    /// Who to authenticate as: built from the user information and `authMechanism`,
    /// `authSource` and `authMechanismProperties`, with the Authentication spec's
    /// defaults applied. `None` when the connection string has neither user
    /// information nor `authMechanism`.
    pub credential: Option<Credential>,
    /// `directConnection`; `None` lets SDAM decide from the seed list.
    pub direct_connection: Option<bool>,
    /// What a library wrapping the driver appends to the handshake's metadata (see
    /// [`Client::append_metadata`](crate::Client::append_metadata), which adds more
    /// later).
    pub driver_info: Option<DriverInfo>,
    /// `heartbeatFrequencyMS` (at least 500 ms); `None` uses the SDAM default for the
    /// monitoring mode (10 s with background monitors, 60 s single-threaded).
    pub heartbeat_freq: Option<Duration>,
    /// `loadBalanced`; `None` means false.
    pub load_balanced: Option<bool>,
    /// `localThresholdMS`: the latency window of server selection. `None`: 15 ms.
    pub local_threshold: Option<Duration>,
    /// `maxIdleTimeMS`: how long a connection may stay idle; `None` (or zero) means
    /// forever.
    pub max_idle_time: Option<Duration>,
    /// `maxPoolSize`: connections per server; 0 means no limit. `None`: 100.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`: connections kept open per server. `None`: 0.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`: connections being established at once per server (at least 1).
    /// `None`: 2.
    pub max_connecting: Option<u32>,
    /// `readConcernLevel`; `None` leaves it to the server.
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`: the name of the replica set to connect to.
    pub repl_set_name: Option<String>,
    /// `retryReads`. `None`: `true`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`. `None`: `true`.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`. `None`: `auto`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// Receives SDAM events (topology and server opening, changes, closing,
    /// heartbeats), from the opening of the topology on.
    #[builder(setter(strip_option))]
    pub sdam_event_handler: Option<EventHandler<SdamEvent>>,
    /// Where reads go: from `readPreference`, `readPreferenceTags` and
    /// `maxStalenessSeconds`; `None`: the primary. Databases, collections and
    /// operations inherit it unless they set their own.
    pub selection_criteria: Option<SelectionCriteria>,
    /// The Stable API version the client declares; not a connection string option
    /// (Stable API spec, "MongoClient changes"): set it after parsing.
    pub server_api: Option<crate::versioned_api::ServerApi>,
    /// OpenTelemetry tracing of this client's operations and commands
    /// ([`open_telemetry`](crate::open_telemetry)); not a connection string option
    /// (OpenTelemetry spec, "No URI options"). Unset: the environment decides.
    pub tracing: Option<crate::open_telemetry::OpentelemetryOptions>,
    /// `serverSelectionTimeoutMS`. `None`: 30 s.
    pub server_selection_timeout: Option<Duration>,
    /// The database named in the connection string's path, if any.
    pub default_database: Option<String>,
    /// `srvServiceName` (`mongodb+srv` only); `None` means `mongodb`.
    pub srv_service_name: Option<String>,
    /// `tls` and the `tls`-prefixed options: `Some(Tls::Enabled(..))` when connections
    /// use TLS. `None` means no TLS (a `mongodb+srv` connection string turns it on).
    pub tls: Option<Tls>,
    /// `w`, `journal` and `wTimeoutMS`; `None` leaves them to the server.
    pub write_concern: Option<WriteConcern>,
    /// `srvMaxHosts` (`mongodb+srv` only): how many SRV records to use; `None` or 0
    /// means all.
    pub srv_max_hosts: Option<u32>,

    // What anymongo has beyond the official crate's options.
    /// anymongo addition: whether the connection string used the `mongodb+srv` scheme.
    pub srv: bool,
    /// anymongo addition: `timeoutMS` (Client Side Operations Timeout spec): how long
    /// each operation may take in all, from server selection to its last reply, retries
    /// included. `None` (the default) keeps the other timeouts' behaviour; `Some(0)`
    /// means no limit, with the spec's behaviour otherwise (retries while an operation
    /// runs, [`crate::ErrorKind::OperationTimeout`] errors). Databases, collections,
    /// sessions and transactions inherit it and may override it.
    pub timeout: Option<Duration>,
    /// anymongo addition: `socketTimeoutMS`, the bound on each read of a reply; `None`
    /// (the default) waits as long as the server takes, as the official drivers do
    /// (server-monitoring.md, "Socket timeout for monitoring is connectTimeoutMS":
    /// "Applications should typically set a very long or infinite socketTimeoutMS"). A
    /// server that goes silent is still noticed by its monitor, whose checks
    /// `connect_timeout` bounds: a check that times out interrupts the operations
    /// waiting on that server. What no monitor notices (a server that answers its
    /// monitors but not one operation, or any server in single-threaded mode, where no
    /// monitor runs alongside an operation) only this or `timeout` bounds.
    pub socket_timeout: Option<Duration>,
    /// anymongo addition: `serverSelectionTryOnce`, for single-threaded mode. `None`:
    /// `true`.
    pub server_selection_try_once: Option<bool>,
    /// anymongo addition: `maxAdaptiveRetries`, the retries of an operation the server
    /// reports as overloaded (Client Backpressure spec). `None`: 2.
    pub max_adaptive_retries: Option<u32>,
    /// anymongo addition: `enableOverloadRetargeting` (Client Backpressure spec).
    /// `None`: `false`.
    pub enable_overload_retargeting: Option<bool>,
    /// anymongo addition: `waitQueueTimeoutMS` (deprecated in favour of `timeoutMS`):
    /// how long to wait for a pooled connection.
    pub wait_queue_timeout: Option<Duration>,
    /// anymongo addition: `zlibCompressionLevel`, -1 (the library default) to 9.
    pub zlib_compression_level: Option<i32>,
    /// anymongo addition: `srvAllowedHostsSuffix` (`mongodb+srv` only), the suffix
    /// every host from the SRV records must have.
    pub srv_allowed_hosts_suffix: Option<String>,
    /// The SOCKS5 proxy every connection goes through: `proxyHost`, `proxyPort`,
    /// `proxyUsername` and `proxyPassword` (the official crate has it behind its
    /// feature `socks5-proxy`, which anymongo accepts and always builds in).
    pub socks5_proxy: Option<Socks5Proxy>,
    /// anymongo addition: what in the connection string was ignored or deprecated, one
    /// sentence each.
    #[builder(setter(skip))]
    pub warnings: Vec<String>,
    /// The `mongodb+srv` seed list these options were resolved from, for the client
    /// to poll ([`SeedList::into_options`](crate::srv::SeedList::into_options)).
    #[builder(setter(skip))]
    pub(crate) srv_seed_list: Option<Box<SeedList>>,
    /// The name servers of `ClientOptions::parse(uri).resolver_config(config)`, for
    /// the client's built-in runtime (SRV polling).
    #[builder(setter(skip))]
    pub(crate) resolver_config: Option<ResolverConfig>,
}

/// A resolved `mongodb+srv` seed list: the options to connect with, and what SRV
/// polling needs to rescan the records (the SRV name, `srvServiceName`,
/// `srvMaxHosts`, and the lowest TTL of the records found). Made by
/// `srv::resolve_seed_list` (and by [`ClientOptions::parse`], awaited, which keeps it in
/// the options it gives); a client is built from it with
/// `Client::with_options(seeds.into_options())`.
///
/// Defined here, with the options that carry it, and made in `srv`, which reads the
/// DNS records.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedList {
    /// The options with the hosts found and the TXT record's options applied (what
    /// `srv::resolve` returns).
    pub(crate) resolved: ClientOptions,
    /// The options as given: the one SRV host name that rescans look up.
    pub(crate) given: ClientOptions,
    /// The lowest TTL of the SRV records found.
    pub(crate) min_ttl: Option<Duration>,
    /// The floor of the rescan interval: `srv::MIN_RESCAN_INTERVAL` unless lowered for
    /// tests.
    pub(crate) min_rescan_interval: Duration,
    /// The addresses the SRV answer carried for the hosts found (`srv::SrvHosts::glue`),
    /// for the client's first connections.
    pub(crate) glue: Vec<(String, crate::rt::HostAddresses)>,
}

impl Default for ClientOptions {
    /// `localhost:27017` and every option at its default.
    fn default() -> Self {
        ClientOptions::builder().build()
    }
}

/// The value the driver uses for each option left `None`: the one place the defaults
/// live (the URI Options and the specs they cite).
impl ClientOptions {
    pub(crate) fn connect_timeout_or_default(&self) -> Duration {
        self.connect_timeout.unwrap_or(Duration::from_secs(10))
    }

    pub(crate) fn server_selection_timeout_or_default(&self) -> Duration {
        self.server_selection_timeout
            .unwrap_or(Duration::from_secs(30))
    }

    pub(crate) fn local_threshold_or_default(&self) -> Duration {
        self.local_threshold.unwrap_or(Duration::from_millis(15))
    }

    pub(crate) fn max_pool_size_or_default(&self) -> u32 {
        self.max_pool_size.unwrap_or(100)
    }

    pub(crate) fn min_pool_size_or_default(&self) -> u32 {
        self.min_pool_size.unwrap_or(0)
    }

    pub(crate) fn max_connecting_or_default(&self) -> u32 {
        self.max_connecting.unwrap_or(2)
    }

    /// `None` (or zero): connections never expire for idleness.
    pub(crate) fn max_idle_time_or_default(&self) -> Option<Duration> {
        self.max_idle_time.filter(|d| !d.is_zero())
    }

    pub(crate) fn retry_reads_or_default(&self) -> bool {
        self.retry_reads.unwrap_or(true)
    }

    pub(crate) fn retry_writes_or_default(&self) -> bool {
        self.retry_writes.unwrap_or(true)
    }

    pub(crate) fn server_monitoring_mode_or_default(&self) -> ServerMonitoringMode {
        self.server_monitoring_mode.unwrap_or_default()
    }

    pub(crate) fn server_selection_try_once_or_default(&self) -> bool {
        self.server_selection_try_once.unwrap_or(true)
    }

    pub(crate) fn max_adaptive_retries_or_default(&self) -> u32 {
        self.max_adaptive_retries.unwrap_or(2)
    }

    pub(crate) fn enable_overload_retargeting_or_default(&self) -> bool {
        self.enable_overload_retargeting.unwrap_or(false)
    }

    /// 0: all the SRV records.
    pub(crate) fn srv_max_hosts_or_default(&self) -> u32 {
        self.srv_max_hosts.unwrap_or(0)
    }

    pub(crate) fn compressors_or_default(&self) -> &[Compressor] {
        self.compressors.as_deref().unwrap_or_default()
    }

    /// The write concern, or the server's default (an empty one).
    pub(crate) fn write_concern_or_default(&self) -> WriteConcern {
        self.write_concern.clone().unwrap_or_default()
    }

    /// The TLS options when connections use TLS.
    pub(crate) fn tls_options(&self) -> Option<&TlsOptions> {
        match &self.tls {
            Some(Tls::Enabled(options)) => Some(options),
            Some(Tls::Disabled) | None => None,
        }
    }
}

impl PoolOptions {
    /// The pool options a client's options ask for.
    pub fn from_client_options(options: &ClientOptions) -> Self {
        PoolOptions {
            max_pool_size: options.max_pool_size_or_default(),
            min_pool_size: options.min_pool_size_or_default(),
            max_idle_time: options.max_idle_time_or_default(),
            max_connecting: options.max_connecting_or_default(),
            wait_queue_timeout: options.wait_queue_timeout,
            load_balanced: options.load_balanced == Some(true),
            maintenance_interval: DEFAULT_MAINTENANCE_INTERVAL,
        }
    }
}

impl ClientOptions {
    /// Parses and validates a `mongodb://` or `mongodb+srv://` connection string, at
    /// once and without any DNS look-up: a `mongodb+srv` string gives its one SRV name
    /// as the host. [`ClientOptions::parse`] (awaited) also looks up its seed list.
    pub fn parse_uri(uri: &str) -> Result<Self> {
        ClientOptions::parse_with(uri, |_| {})
    }

    /// Parses a connection string, lets `overrides` change the options (options set in
    /// code take precedence over the connection string), then validates the result.
    pub fn parse_with(uri: &str, overrides: impl FnOnce(&mut ClientOptions)) -> Result<Self> {
        let mut options = parser::parse(uri)?;
        overrides(&mut options);
        options.validate()?;
        Ok(options)
    }

    /// Checks the rules that tie options together; [`parse`](Self::parse) calls it, and
    /// so should code that changes the options.
    ///
    /// - `directConnection=true` needs exactly one host and no `mongodb+srv` (URI
    ///   Options spec);
    /// - `loadBalanced=true` excludes several hosts, `replicaSet` and
    ///   `directConnection=true` (Load Balancer spec, "URI Validation");
    /// - a positive `srvMaxHosts` excludes `replicaSet` and `loadBalanced=true`, and the
    ///   `srv` options need `mongodb+srv` (Initial DNS Seedlist Discovery spec, "URI
    ///   Validation");
    /// - mode `primary` takes no tag sets nor `maxStalenessSeconds` (Server Selection
    ///   and Max Staleness specs);
    /// - `w=0` cannot have `journal=true` (Read and Write Concern spec);
    /// - a SOCKS5 proxy has a host (SOCKS5 Support spec);
    /// - TLS takes each PEM from a file or from memory, not both;
    /// - a [`DriverInfo`] field cannot contain `|` (Handshake spec);
    /// - and the ranges of `appName`, `heartbeatFrequencyMS`, `maxConnecting`,
    ///   `minPoolSize`/`maxPoolSize` and `zlibCompressionLevel`.
    pub fn validate(&self) -> Result<()> {
        let fail = |message: &str| Err(Error::invalid_argument(message));
        if self.hosts.is_empty() {
            return fail("no hosts to connect to");
        }
        if self.srv && (self.hosts.len() != 1 || self.hosts[0].tcp_port().is_none()) {
            return fail("a mongodb+srv connection string names exactly one host name");
        }
        if self
            .app_name
            .as_ref()
            .is_some_and(|name| name.len() > MAX_APP_NAME_BYTES)
        {
            return fail("appName must be at most 128 bytes long");
        }
        if self.direct_connection == Some(true) && (self.hosts.len() > 1 || self.srv) {
            return fail(
                "directConnection=true cannot be used with several hosts or with mongodb+srv",
            );
        }
        if self.load_balanced == Some(true) {
            if self.hosts.len() > 1 {
                return fail("loadBalanced=true cannot be used with several hosts");
            }
            if self.repl_set_name.is_some() {
                return fail("loadBalanced=true cannot be used with replicaSet");
            }
            if self.direct_connection == Some(true) {
                return fail("loadBalanced=true cannot be used with directConnection=true");
            }
        }
        if self.srv_max_hosts_or_default() > 0 {
            if self.repl_set_name.is_some() {
                return fail("a positive srvMaxHosts cannot be used with replicaSet");
            }
            if self.load_balanced == Some(true) {
                return fail("a positive srvMaxHosts cannot be used with loadBalanced=true");
            }
        }
        let srv_option = self.srv_max_hosts_or_default() > 0
            || self.srv_service_name.is_some()
            || self.srv_allowed_hosts_suffix.is_some();
        if srv_option && !self.srv {
            return fail("the srv options are only valid with mongodb+srv");
        }
        if self.write_concern.as_ref().is_some_and(|concern| {
            concern.w == Some(Acknowledgment::Nodes(0)) && concern.journal == Some(true)
        }) {
            return fail("w=0 (no acknowledgment) cannot be combined with journal=true");
        }
        if self
            .socks5_proxy
            .as_ref()
            .is_some_and(|proxy| proxy.host.is_empty())
        {
            return fail("Socks5Proxy: the host is empty");
        }
        if let Some(tls) = self.tls_options() {
            if tls.ca_pem.is_some() && tls.ca_file_path.is_some() {
                return fail("TlsOptions: give ca_pem or ca_file_path, not both");
            }
            if tls.cert_key_pem.is_some() && tls.cert_key_file_path.is_some() {
                return fail("TlsOptions: give cert_key_pem or cert_key_file_path, not both");
            }
        }
        if self
            .heartbeat_freq
            .is_some_and(|d| d < Duration::from_millis(500))
        {
            return fail("heartbeatFrequencyMS must be at least 500");
        }
        if self.max_connecting == Some(0) {
            return fail("maxConnecting must be at least 1");
        }
        let max_pool_size = self.max_pool_size_or_default();
        if max_pool_size > 0 && self.min_pool_size_or_default() > max_pool_size {
            return fail("minPoolSize cannot exceed maxPoolSize");
        }
        if self
            .zlib_compression_level
            .is_some_and(|level| !(-1..=9).contains(&level))
        {
            return fail("zlibCompressionLevel must be from -1 to 9");
        }
        if let Some(info) = &self.driver_info {
            info.validate()?;
        }
        Ok(())
    }

    /// The value of the URI option `name` (matched case-insensitively; aliases such as
    /// `ssl` work) as these options hold it, in the types of a connection string:
    /// booleans, integers (`Int32`, or `Int64` for durations in milliseconds), strings,
    /// documents for `KEY:value` lists and arrays for lists. `None` if the option is
    /// unknown or not set (the `tls` options read `None` while TLS is off).
    ///
    /// ```
    /// use anymongo::{bson::Bson, ClientOptions};
    /// let options = ClientOptions::parse_uri("mongodb://h/?w=majority&ssl=true").unwrap();
    /// assert_eq!(options.uri_option("W"), Some(Bson::String("majority".into())));
    /// assert_eq!(options.uri_option("tls"), Some(Bson::Boolean(true)));
    /// assert_eq!(options.uri_option("maxPoolSize"), Some(Bson::Int32(100)));
    /// ```
    pub fn uri_option(&self, name: &str) -> Option<Bson> {
        options::find(name).and_then(|(option, _)| (option.get)(self))
    }
}

/// Shown instead of a secret.
const REDACTED: &str = "<redacted>";

/// Mechanism properties that hold secrets.
const SECRET_PROPERTIES: [&str; 1] = ["AWS_SESSION_TOKEN"];

impl fmt::Display for ClientOptions {
    /// The options as a connection string: options at their default value are left
    /// out, and secrets are replaced by `<redacted>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use encoding::percent_encode as encode;
        f.write_str(if self.srv {
            "mongodb+srv://"
        } else {
            "mongodb://"
        })?;
        let credential = self.credential.as_ref();
        if let Some(username) = credential.and_then(|c| c.username.as_deref()) {
            f.write_str(&encode(username))?;
            if credential.is_some_and(|c| c.password.is_some()) {
                write!(f, ":{REDACTED}")?;
            }
            f.write_str("@")?;
        }
        let hosts: Vec<String> = self
            .hosts
            .iter()
            .map(|host| match host {
                // The port of a mongodb+srv host is not part of the connection string.
                ServerAddress::Tcp { host, .. } if self.srv => encode(host),
                _ => host.to_uri_text(),
            })
            .collect();
        f.write_str(&hosts.join(","))?;
        // Each option is compared with the value it has when a connection string does
        // not give it: the default, with TLS in place for its sub-options.
        let neutral = ClientOptions {
            tls: Some(Tls::Enabled(TlsOptions::default())),
            ..ClientOptions::default()
        };
        let mut pairs = Vec::new();
        for option in options::all().iter().filter(|option| !option.shorthand) {
            let Some(value) = (option.get)(self) else {
                continue;
            };
            let default = match option.name {
                // TLS is on by default with mongodb+srv only.
                "tls" => Some(Bson::Boolean(self.srv)),
                _ => (option.get)(&neutral),
            };
            if Some(&value) == default.as_ref() {
                continue;
            }
            let values = match value {
                // A list of tag sets is one option per set.
                Bson::Array(items)
                    if items.iter().all(|item| matches!(item, Bson::Document(_))) =>
                {
                    items
                }
                value => vec![value],
            };
            for value in values {
                let text = match option.secret {
                    true => REDACTED.to_owned(),
                    false => uri_text(&value),
                };
                pairs.push(format!("{}={text}", option.name));
            }
        }
        if self.default_database.is_some() || !pairs.is_empty() {
            f.write_str("/")?;
        }
        if let Some(database) = &self.default_database {
            f.write_str(&encode(database))?;
        }
        if !pairs.is_empty() {
            write!(f, "?{}", pairs.join("&"))?;
        }
        Ok(())
    }
}

/// A value as a connection string writes it.
fn uri_text(value: &Bson) -> String {
    use encoding::percent_encode as encode;
    match value {
        Bson::String(text) => encode(text),
        Bson::Array(items) => items.iter().map(uri_text).collect::<Vec<_>>().join(","),
        Bson::Document(pairs) => pairs
            .iter()
            .map(
                |(key, value)| match SECRET_PROPERTIES.contains(&key.as_str()) {
                    true => format!("{}:{REDACTED}", encode(key)),
                    false => format!("{}:{}", encode(key), uri_text(value)),
                },
            )
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
