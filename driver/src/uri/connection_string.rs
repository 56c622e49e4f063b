//! [`ConnectionString`]: a parsed connection string with its options as fields, the
//! official crate's `options::ConnectionString`, and [`HostInfo`]. Parsed by this
//! module's one parser ([`ClientOptions::parse_uri`]); the fields are a view of the
//! options that [`ClientOptions::parse`] turns back into [`ClientOptions`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::{ClientOptions, ServerAddress, ServerMonitoringMode, Socks5Proxy, Tls};
use crate::auth::Credential;
use crate::concern::{ReadConcern, WriteConcern};
use crate::error::{Error, Result};
use crate::selection::{ReadPreference, SelectionCriteria};
use crate::wire::compression::Compressor;

/// Where a connection string says the deployment is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum HostInfo {
    /// The seed list of a `mongodb://` string.
    HostIdentifiers(Vec<ServerAddress>),
    /// The host name of a `mongodb+srv://` string, whose SRV and TXT records give the
    /// seed list and some options (Initial DNS Seedlist Discovery spec).
    DnsRecord(String),
}

impl Default for HostInfo {
    fn default() -> Self {
        HostInfo::HostIdentifiers(Vec::new())
    }
}

/// A parsed `mongodb://` or `mongodb+srv://` connection string: its hosts and its
/// options, each `None` when the string does not give it. `ClientOptions::parse` takes
/// it as well as a string (after changes to its fields, if need be); the `mongodb+srv`
/// look-ups happen there, not here.
///
/// ```
/// use anymongo::options::{ConnectionString, HostInfo};
/// let parsed = ConnectionString::parse("mongodb://a:27018,b/?appName=inventory").unwrap();
/// let HostInfo::HostIdentifiers(hosts) = &parsed.host_info else { unreachable!() };
/// assert_eq!(hosts.len(), 2);
/// assert_eq!(parsed.app_name.as_deref(), Some("inventory"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionString {
    /// The seed list, or the `mongodb+srv` host name.
    pub host_info: HostInfo,
    /// `appName`.
    pub app_name: Option<String>,
    /// `tls` and the `tls*` options.
    pub tls: Option<Tls>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Option<Duration>,
    /// `localThresholdMS`.
    pub local_threshold: Option<Duration>,
    /// `readConcernLevel`.
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `w`, `wTimeoutMS` and `journal`.
    pub write_concern: Option<WriteConcern>,
    /// `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Option<Duration>,
    /// `maxPoolSize`.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    pub max_idle_time: Option<Duration>,
    /// `compressors` (and `zlibCompressionLevel`).
    pub compressors: Option<Vec<Compressor>>,
    /// `connectTimeoutMS`.
    pub connect_timeout: Option<Duration>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// The user information and the `auth*` options.
    pub credential: Option<Credential>,
    /// The database in the path.
    pub default_database: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `socketTimeoutMS`.
    pub socket_timeout: Option<Duration>,
    /// `readPreference`, `readPreferenceTags` and `maxStalenessSeconds`.
    pub read_preference: Option<ReadPreference>,
    /// `srvMaxHosts`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    pub srv_service_name: Option<String>,
    /// `proxyHost`, `proxyPort`, `proxyUsername` and `proxyPassword`.
    pub socks5_proxy: Option<Socks5Proxy>,
    /// `maxAdaptiveRetries`.
    pub max_adaptive_retries: Option<u32>,
    /// `enableOverloadRetargeting`.
    pub enable_overload_retargeting: Option<bool>,
    /// Everything parsed, for the options without a field here (`timeoutMS`,
    /// `zlibCompressionLevel`, …); the fields above take precedence over it.
    parsed: ClientOptions,
    /// The options the string names, as spelled: a `mongodb+srv` TXT record may set
    /// only the others (Initial DNS Seedlist Discovery spec). Not the string itself,
    /// which may hold secrets.
    pub(crate) option_names: Vec<String>,
}

impl ConnectionString {
    /// Parses and validates a connection string, without any DNS look-up.
    pub fn parse(uri: impl AsRef<str>) -> Result<ConnectionString> {
        let uri = uri.as_ref();
        let parsed = ClientOptions::parse_uri(uri)?;
        let o = parsed.clone();
        let host_info = match (o.srv, o.hosts.first()) {
            (true, Some(host)) => HostInfo::DnsRecord(host.host().to_owned()),
            _ => HostInfo::HostIdentifiers(o.hosts),
        };
        let read_preference = match o.selection_criteria {
            Some(SelectionCriteria::ReadPreference(read_preference)) => Some(read_preference),
            _ => None,
        };
        Ok(ConnectionString {
            host_info,
            app_name: o.app_name,
            tls: o.tls,
            heartbeat_frequency: o.heartbeat_freq,
            local_threshold: o.local_threshold,
            read_concern: o.read_concern,
            replica_set: o.repl_set_name,
            write_concern: o.write_concern,
            server_selection_timeout: o.server_selection_timeout,
            max_pool_size: o.max_pool_size,
            min_pool_size: o.min_pool_size,
            max_connecting: o.max_connecting,
            max_idle_time: o.max_idle_time,
            compressors: o.compressors,
            connect_timeout: o.connect_timeout,
            retry_reads: o.retry_reads,
            retry_writes: o.retry_writes,
            server_monitoring_mode: o.server_monitoring_mode,
            direct_connection: o.direct_connection,
            credential: o.credential,
            default_database: o.default_database,
            load_balanced: o.load_balanced,
            socket_timeout: o.socket_timeout,
            read_preference,
            srv_max_hosts: o.srv_max_hosts,
            srv_service_name: o.srv_service_name,
            socks5_proxy: o.socks5_proxy,
            max_adaptive_retries: o.max_adaptive_retries,
            enable_overload_retargeting: o.enable_overload_retargeting,
            parsed,
            option_names: query_keys(uri).into_iter().map(str::to_owned).collect(),
        })
    }

    /// Whether this is a `mongodb+srv` connection string.
    pub fn is_srv(&self) -> bool {
        matches!(self.host_info, HostInfo::DnsRecord(_))
    }

    /// The options the fields say, not validated.
    fn to_options(&self) -> ClientOptions {
        let (hosts, srv) = match &self.host_info {
            HostInfo::HostIdentifiers(hosts) => (hosts.clone(), false),
            HostInfo::DnsRecord(name) => {
                let host = ServerAddress::Tcp {
                    host: name.clone(),
                    port: None,
                };
                (vec![host], true)
            }
        };
        let c = self.clone();
        ClientOptions {
            hosts,
            srv,
            app_name: c.app_name,
            tls: c.tls,
            heartbeat_freq: c.heartbeat_frequency,
            local_threshold: c.local_threshold,
            read_concern: c.read_concern,
            repl_set_name: c.replica_set,
            write_concern: c.write_concern,
            server_selection_timeout: c.server_selection_timeout,
            max_pool_size: c.max_pool_size,
            min_pool_size: c.min_pool_size,
            max_connecting: c.max_connecting,
            max_idle_time: c.max_idle_time,
            compressors: c.compressors,
            connect_timeout: c.connect_timeout,
            retry_reads: c.retry_reads,
            retry_writes: c.retry_writes,
            server_monitoring_mode: c.server_monitoring_mode,
            direct_connection: c.direct_connection,
            credential: c.credential,
            default_database: c.default_database,
            load_balanced: c.load_balanced,
            socket_timeout: c.socket_timeout,
            selection_criteria: c.read_preference.map(SelectionCriteria::ReadPreference),
            srv_max_hosts: c.srv_max_hosts,
            srv_service_name: c.srv_service_name,
            socks5_proxy: c.socks5_proxy,
            max_adaptive_retries: c.max_adaptive_retries,
            enable_overload_retargeting: c.enable_overload_retargeting,
            ..c.parsed
        }
    }

    /// The options the fields say, validated ([`ClientOptions::validate`]); a
    /// `mongodb+srv` string's hosts are not looked up yet.
    pub(crate) fn into_options(self) -> Result<ClientOptions> {
        let options = self.to_options();
        options.validate()?;
        Ok(options)
    }
}

impl TryFrom<&str> for ConnectionString {
    type Error = Error;
    fn try_from(uri: &str) -> Result<Self> {
        ConnectionString::parse(uri)
    }
}

impl TryFrom<&String> for ConnectionString {
    type Error = Error;
    fn try_from(uri: &String) -> Result<Self> {
        ConnectionString::parse(uri)
    }
}

impl TryFrom<String> for ConnectionString {
    type Error = Error;
    fn try_from(uri: String) -> Result<Self> {
        ConnectionString::parse(uri)
    }
}

impl FromStr for ConnectionString {
    type Err = Error;
    fn from_str(uri: &str) -> Result<Self> {
        ConnectionString::parse(uri)
    }
}

/// As [`ClientOptions`]' `Display`: a connection string without the options at their
/// default, secrets redacted.
impl fmt::Display for ConnectionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_options().fmt(f)
    }
}

/// From a string, parsed (configuration files).
impl<'de> serde::Deserialize<'de> for ConnectionString {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let uri = String::deserialize(deserializer)?;
        ConnectionString::parse(uri).map_err(serde::de::Error::custom)
    }
}

/// The keys of a connection string's query part.
pub(crate) fn query_keys(uri: &str) -> Vec<&str> {
    let Some((_, query)) = uri.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .map(|pair| pair.split_once('=').map_or(pair, |(key, _)| key))
        .collect()
}
