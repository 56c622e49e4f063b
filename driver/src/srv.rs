//! Initial DNS Seedlist Discovery: turning a `mongodb+srv://` connection string into a
//! seed list, through the [`Resolver`] seam.
//!
//! For `mongodb+srv://{hostname}/…` the driver
//!
//! 1. looks up the SRV records of `_{srvServiceName}._tcp.{hostname}` (the service name
//!    defaults to `mongodb`) and the TXT records of `{hostname}`, both at once, each
//!    bounded by a timeout on the runtime's [`Clock`];
//! 2. checks every SRV target against the parent domain of `{hostname}` (see
//!    [`verify_target`]): a target outside it is an error, and no host is contacted;
//! 3. keeps all targets, or `srvMaxHosts` of them picked at random (a Fisher–Yates
//!    shuffle, [`select_hosts`]);
//! 4. reads default options from the TXT record ([`parse_txt`]): at most one record,
//!    holding only `authSource`, `replicaSet` and `loadBalanced`; options given in the
//!    connection string or in code win over them;
//! 5. checks the result as if the equivalent `mongodb://` connection string had been
//!    given (for example `loadBalanced=true` with several SRV records is an error).
//!
//! TLS is on by default for `mongodb+srv` already when the connection string is parsed
//! ([`ClientOptions::parse`]), and a TXT record cannot turn it off.
//!
//! [`ClientOptions::parse`] does all this when awaited (and so does
//! [`Client::with_uri_str`](crate::Client::with_uri_str)); for options built in code,
//! use [`resolve_seed_list`] and [`SeedList::into_options`]. A client built with the
//! options either gives then polls the SRV records.
//!
//! What SRV polling (the "Polling SRV Records for mongos Discovery" spec) reuses:
//! [`SeedList`] (the SRV name and the records' lowest TTL), [`lookup_hosts`] (one
//! rescan: verified hosts, rejected targets and the lowest TTL), [`rescanned_hosts`]
//! (the new host list from the current one) and [`rescan_interval`].
//!
//! # Timeouts
//!
//! Each look-up is bounded by the `timeout` the caller passes; [`lookup_timeout`] gives
//! the one the driver uses: `connectTimeoutMS` (default 10 s), since resolving the
//! seed list is the first step of connecting, or `serverSelectionTimeoutMS` when
//! `connectTimeoutMS=0` (no limit) — a look-up is never left unbounded by the driver.
//! The two look-ups run concurrently, so `timeout` also bounds the whole discovery.

use std::collections::BTreeSet;
use std::io;
use std::time::Duration;

use std::future::IntoFuture;

use crate::default_runtime::{default_runtime_with, ResolverConfig, NO_DEFAULT_RUNTIME};
use crate::error::{Error, ErrorKind, Result};
use crate::rt::{
    boxed, timeout as with_timeout, BoxFuture, Clock, HostAddresses, Resolver, Runtime, SrvRecord,
};
pub use crate::uri::SeedList;
use crate::uri::{query_keys, ClientOptions, ConnectionString, ServerAddress};

/// The SRV service name when `srvServiceName` is not given.
pub const DEFAULT_SERVICE_NAME: &str = "mongodb";

/// The shortest interval between two SRV rescans (Polling SRV Records spec).
pub const MIN_RESCAN_INTERVAL: Duration = Duration::from_secs(60);

/// The options a TXT record may set (Initial DNS Seedlist Discovery spec, "Default
/// Connection String Options").
const TXT_OPTIONS: [&str; 3] = ["authSource", "replicaSet", "loadBalanced"];

/// The bound the driver puts on each DNS look-up for `options`: `connectTimeoutMS`, or
/// `serverSelectionTimeoutMS` when `connectTimeoutMS` is 0 (no limit).
///
/// ```
/// use std::time::Duration;
/// use anymongo::{srv, ClientOptions};
/// let options = ClientOptions::parse_uri("mongodb+srv://cluster0.example.com/?connectTimeoutMS=2500").unwrap();
/// assert_eq!(srv::lookup_timeout(&options), Duration::from_millis(2500));
/// ```
pub fn lookup_timeout(options: &ClientOptions) -> Duration {
    match options.connect_timeout_or_default() {
        Duration::ZERO => options.server_selection_timeout_or_default(),
        bound => bound,
    }
}

/// Resolves the seed list of a parsed `mongodb+srv://` connection string (or of options
/// built in code with [`ClientOptions::srv`] set): returns the options with
/// [`ClientOptions::hosts`] replaced by the hosts of the SRV records (all, or
/// `srvMaxHosts` at random) and the TXT record's options applied, checked again.
///
/// The result keeps `srv == true` (it records the scheme), so it may hold several hosts
/// where [`ClientOptions::validate`] expects the one SRV name, and a client cannot be
/// built from it: the SRV name that polling looks up again is gone. To build a client,
/// use [`resolve_seed_list`] (or [`ClientOptions::parse`]).
///
/// A TXT option applies only where `options` leave it unset: `replicaSet` and
/// `loadBalanced` when `None`; `authSource` when there is a credential whose `source`
/// is its mechanism's default (an `authSource` without a credential means nothing, by
/// the Authentication spec). A connection string that names `authSource` with the
/// default value cannot be told from one that does not: [`resolve_uri`] can, and is
/// exact.
///
/// Each look-up is bounded by `timeout` on `clock` (zero means no bound); see
/// [`lookup_timeout`]. Errors: [`ErrorKind::DnsResolve`] for a look-up that did not
/// finish (its message says it timed out, and after how long), for a failed one, no SRV records, a target
/// outside the parent domain, several TXT records or a TXT option that is not allowed
/// or malformed (as the official crate); [`ErrorKind::InvalidArgument`] for options
/// that are not `mongodb+srv` and for options that conflict once resolved.
///
/// ```no_run
/// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use anymongo::{srv, ClientOptions};
/// let options = ClientOptions::parse_uri("mongodb+srv://user:pass@cluster0.example.com/app")?;
/// let bound = srv::lookup_timeout(&options);
/// let resolved =
///     srv::resolve(&options, runtime.resolver.as_ref(), runtime.clock.as_ref(), bound).await?;
/// for host in &resolved.hosts {
///     println!("seed: {host}");
/// }
/// # Ok(()) }
/// ```
pub async fn resolve(
    options: &ClientOptions,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<ClientOptions> {
    let given = Given {
        auth_source: auth_source_given(options)?,
        replica_set: options.repl_set_name.is_some(),
        load_balanced: options.load_balanced.is_some(),
    };
    Ok(discover(options, given, resolver, clock, timeout)
        .await?
        .resolved)
}

/// Resolves the seed list of `options` like [`resolve`], keeping what the client needs
/// to poll the SRV records afterwards (Polling SRV Records for mongos Discovery spec):
/// build the client with the options of [`SeedList::into_options`].
///
/// ```no_run
/// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use anymongo::{options::ClientOptions, srv, Client};
/// let mut options = ClientOptions::parse_uri("mongodb+srv://cluster0.example.com/")?;
/// options.app_name = Some("inventory".into());
/// let bound = srv::lookup_timeout(&options);
/// let seeds =
///     srv::resolve_seed_list(&options, runtime.resolver.as_ref(), runtime.clock.as_ref(), bound)
///         .await?;
/// // Later, without awaiting:
/// let client = Client::with_runtime(seeds.into_options(), runtime)?;
/// # Ok(()) }
/// ```
pub async fn resolve_seed_list(
    options: &ClientOptions,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<SeedList> {
    let given = Given {
        auth_source: auth_source_given(options)?,
        replica_set: options.repl_set_name.is_some(),
        load_balanced: options.load_balanced.is_some(),
    };
    discover(options, given, resolver, clock, timeout).await
}

/// Parses `uri` (a `mongodb+srv://` connection string) and resolves its seed list like
/// [`resolve`], with the connection string's options winning over the TXT record's
/// exactly (by the keys it names).
///
/// Parse errors (a port, several hosts, `directConnection=true`…) come before any DNS
/// look-up. A `mongodb://` string is returned as parsed, without look-ups.
///
/// ```no_run
/// # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
/// use std::time::Duration;
/// use anymongo::srv;
/// let options = srv::resolve_uri(
///     "mongodb+srv://cluster0.example.com/?authSource=admin",
///     runtime.resolver.as_ref(),
///     runtime.clock.as_ref(),
///     Duration::from_secs(10),
/// )
/// .await?;
/// # Ok(()) }
/// ```
pub async fn resolve_uri(
    uri: &str,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<ClientOptions> {
    let options = ClientOptions::parse_uri(uri)?;
    if !options.srv {
        return Ok(options);
    }
    Ok(
        resolve_parsed_uri(&query_keys(uri), &options, resolver, clock, timeout)
            .await?
            .resolved,
    )
}

/// [`resolve_uri`] for `options`, a `mongodb+srv` string as parsed, which gave the
/// options named `keys`; keeps what SRV polling needs.
pub(crate) async fn resolve_parsed_uri(
    keys: &[impl AsRef<str>],
    options: &ClientOptions,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<SeedList> {
    let named = |name: &str| {
        keys.iter()
            .any(|key| key.as_ref().eq_ignore_ascii_case(name))
    };
    let given = Given {
        auth_source: named("authSource"),
        replica_set: named("replicaSet"),
        load_balanced: named("loadBalanced"),
    };
    discover(options, given, resolver, clock, timeout).await
}

impl SeedList {
    /// The resolved options: the hosts found (all, or `srvMaxHosts` at random) and the
    /// TXT record's options, `srv` still set.
    pub fn options(&self) -> &ClientOptions {
        &self.resolved
    }

    /// The options as given, before resolution: the SRV host name rescans look up.
    pub fn srv_options(&self) -> &ClientOptions {
        &self.given
    }

    /// The lowest TTL of the SRV records found, if there were any.
    pub fn min_ttl(&self) -> Option<Duration> {
        self.min_ttl
    }

    /// The addresses the SRV answer carried for the hosts found ([`SrvHosts::glue`]).
    pub fn glue(&self) -> &[(String, HostAddresses)] {
        &self.glue
    }

    /// For tests: lowers the 60-second floor of the interval between SRV rescans
    /// ([`MIN_RESCAN_INTERVAL`]), so that a test DNS server's changes are seen within a
    /// test. The interval is still the records' lowest TTL when that is longer, and
    /// heartbeatFrequencyMS after a rescan that found no verified host (Polling SRV
    /// Records spec). Real deployments should keep the spec's floor.
    ///
    /// ```
    /// # fn example(seeds: anymongo::srv::SeedList) {
    /// use std::time::Duration;
    /// let seeds = seeds.with_min_rescan_interval(Duration::from_millis(100));
    /// assert_eq!(seeds.rescan_interval(Some(Duration::ZERO)), Duration::from_millis(100));
    /// # }
    /// ```
    pub fn with_min_rescan_interval(mut self, floor: Duration) -> SeedList {
        self.min_rescan_interval = floor;
        self
    }

    /// The interval until the next rescan after one whose records' lowest TTL was
    /// `min_ttl`: that TTL, but at least the floor (60 s unless
    /// [lowered](Self::with_min_rescan_interval)); the floor when TTLs are not known.
    pub fn rescan_interval(&self, min_ttl: Option<Duration>) -> Duration {
        interval_at_least(min_ttl, self.min_rescan_interval)
    }

    /// The options of the equivalent `mongodb://` connection string: the Initial DNS
    /// Seedlist Discovery spec's "the driver MUST treat the host information as if the
    /// following URI was used instead".
    fn equivalent_options(&self) -> ClientOptions {
        ClientOptions {
            srv: false,
            srv_max_hosts: None,
            srv_service_name: None,
            srv_allowed_hosts_suffix: None,
            ..self.resolved.clone()
        }
    }

    /// The options of the equivalent `mongodb://` connection string (the spec's "as if
    /// the following URI was used instead"), carrying this seed list: a client built
    /// with them ([`Client::with_options`](crate::Client::with_options) and the other
    /// constructors) polls the SRV records while the deployment is sharded. What
    /// [`ClientOptions::parse`] gives for a `mongodb+srv` connection string; see
    /// [`resolve_seed_list`] for an example.
    pub fn into_options(self) -> ClientOptions {
        ClientOptions {
            srv_seed_list: Some(Box::new(self.clone())),
            ..self.equivalent_options()
        }
    }
}

impl ClientOptions {
    /// Parses and validates a `mongodb://` or `mongodb+srv://` connection string, and
    /// for `mongodb+srv` looks up its seed list: an action to await, as in the official
    /// driver. The look-ups (Initial DNS Seedlist Discovery spec, see [`crate::srv`])
    /// go through the target's built-in runtime's resolver, or that of the runtime
    /// given with [`ParseConnectionString::runtime`]; each is bounded by
    /// `connectTimeoutMS` ([`lookup_timeout`]). The options given for a `mongodb+srv`
    /// string are those of the equivalent `mongodb://` one, carrying the seed list
    /// ([`SeedList::into_options`]): the client built with them polls the SRV
    /// records while the deployment is sharded.
    ///
    /// [`ClientOptions::parse_uri`] parses without any look-up, and without awaiting.
    ///
    /// Errors: those of [`ClientOptions::parse_uri`], then of the resolution:
    /// [`ErrorKind::DnsResolve`] when the DNS server does not answer within the bound
    /// (as in the official crate), when a look-up fails or for records the spec refuses,
    /// [`ErrorKind::InvalidArgument`] for `mongodb+srv` on a target without a built-in
    /// runtime (wasm32-unknown-unknown) when no runtime was given.
    ///
    /// ```no_run
    /// # async fn example() -> anymongo::Result<()> {
    /// use anymongo::{options::ClientOptions, Client};
    /// let mut options = ClientOptions::parse("mongodb+srv://user:pass@cluster0.example.com/").await?;
    /// options.app_name = Some("inventory".into());
    /// let client = Client::with_options(options)?;
    /// # Ok(()) }
    /// ```
    ///
    /// It takes a string or a [`ConnectionString`] (parsed beforehand, its fields
    /// changed if need be), as the official crate's does.
    pub fn parse<C, E>(conn_str: C) -> ParseConnectionString
    where
        C: TryInto<ConnectionString, Error = E>,
        E: Into<Error>,
    {
        ParseConnectionString {
            conn_str: conn_str.try_into().map_err(Into::into),
            runtime: None,
            resolver_config: None,
        }
    }
}

/// The action of [`ClientOptions::parse`]: await it (it is [`IntoFuture`]) for the
/// options, after setting another runtime to resolve `mongodb+srv` with if need be.
#[must_use = "an action does nothing until it is awaited"]
#[derive(Debug, Clone)]
pub struct ParseConnectionString {
    conn_str: Result<ConnectionString>,
    runtime: Option<Runtime>,
    resolver_config: Option<ResolverConfig>,
}

impl ParseConnectionString {
    /// Looks up the seed list of a `mongodb+srv` connection string with this runtime's
    /// resolver (and its clock for the bound) instead of the built-in runtime's: a
    /// name server of your own, or the host's DNS on a target without a built-in
    /// runtime (wasm32-unknown-unknown).
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Looks up the seed list of a `mongodb+srv` connection string with the built-in
    /// resolver asking `config`'s name servers, as the official crate's
    /// `resolver_config`; the client built from the options keeps asking them (SRV
    /// polling). Refused beside [`runtime`](Self::runtime), whose resolver decides;
    /// on a target without a built-in runtime (wasm32-unknown-unknown), a
    /// `mongodb+srv` string then fails as it does without one.
    pub fn resolver_config(mut self, config: ResolverConfig) -> Self {
        self.resolver_config = Some(config);
        self
    }
}

impl IntoFuture for ParseConnectionString {
    type Output = Result<ClientOptions>;
    type IntoFuture = BoxFuture<'static, Result<ClientOptions>>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let conn_str = self.conn_str?;
            let keys = conn_str.option_names.clone();
            let mut options = conn_str.into_options()?;
            if self.runtime.is_some() && self.resolver_config.is_some() {
                return Err(Error::invalid_argument(
                    "ClientOptions::parse: give a runtime (whose resolver is used) or a \
                     ResolverConfig (for the built-in runtime's resolver), not both",
                ));
            }
            options.resolver_config = self.resolver_config;
            if !options.srv {
                return Ok(options);
            }
            let resolver_config = options.resolver_config.clone();
            let Some(runtime) = self
                .runtime
                .or_else(|| default_runtime_with(resolver_config.as_ref()))
            else {
                return Err(Error::invalid_argument(NO_DEFAULT_RUNTIME));
            };
            let seeds = resolve_parsed_uri(
                &keys,
                &options,
                &*runtime.resolver,
                &*runtime.clock,
                lookup_timeout(&options),
            )
            .await?;
            let mut options = seeds.into_options();
            options.resolver_config = resolver_config;
            Ok(options)
        })
    }
}

/// Which TXT-settable options the user gave (and so the TXT record must not change).
#[derive(Debug, Clone, Copy)]
struct Given {
    auth_source: bool,
    replica_set: bool,
    load_balanced: bool,
}

/// Whether the credential's `authSource` differs from its mechanism's default (so was
/// set by the user).
fn auth_source_given(options: &ClientOptions) -> Result<bool> {
    let Some(credential) = &options.credential else {
        return Ok(false);
    };
    let Some(source) = &credential.source else {
        return Ok(false);
    };
    let mut unset = credential.clone();
    unset.source = None;
    let default = unset
        .resolve_from_uri(options.default_database.as_deref())
        .ok()
        .and_then(|credential| credential.source);
    Ok(default.as_ref() != Some(source))
}

/// The SRV and TXT look-ups and everything after them.
async fn discover(
    options: &ClientOptions,
    given: Given,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<SeedList> {
    let hostname = srv_hostname(options)?;
    let txt_name = hostname.to_owned();
    // Both at once (the spec orders neither before the other): discovery then costs one
    // DNS round trip, not two. Their results are judged in the order of the spec's
    // steps — the SRV answer first, then the TXT one — so that a failure of either
    // gives the error that order of steps gives.
    let (found, txt) = futures::future::join(
        lookup_hosts(options, resolver, clock, timeout),
        bounded(
            clock,
            timeout,
            &txt_name,
            "DNS TXT look-up",
            resolver.txt(&txt_name),
        ),
    )
    .await;
    let found = found?;
    if let Some((target, why)) = found.rejected.first() {
        return Err(Error::dns_resolve(format!(
            "mongodb+srv://{hostname}: the SRV record's host {target} is not allowed: {why}; no host was contacted"
        )));
    }
    if found.hosts.is_empty() {
        return Err(Error::dns_resolve(format!(
            "mongodb+srv://{hostname}: no SRV records found for {}; the connection string's host name could not be used to find hosts",
            srv_name(options, hostname)
        )));
    }
    let txt = parse_txt(&txt?).map_err(|error| match &*error.kind {
        ErrorKind::DnsResolve { message } => {
            Error::dns_resolve(format!("mongodb+srv://{hostname}: {message}"))
        }
        _ => error,
    })?;

    let mut resolved = options.clone();
    apply_txt(&mut resolved, &txt, given)?;
    // The options as a mongodb+srv string: srvMaxHosts with a replicaSet or
    // loadBalanced=true from the TXT record, loadBalanced with replicaSet...
    resolved.validate().map_err(|error| match &*error.kind {
        ErrorKind::InvalidArgument { message } if txt != TxtOptions::default() => {
            Error::invalid_argument(format!(
                "mongodb+srv://{hostname} with the options of its TXT record: {message}"
            ))
        }
        _ => error,
    })?;
    resolved.hosts = select_hosts(
        &found.hosts,
        options.srv_max_hosts_or_default(),
        crate::selection::random_index,
    );
    let seeds = SeedList {
        resolved,
        given: options.clone(),
        min_ttl: found.min_ttl,
        min_rescan_interval: MIN_RESCAN_INTERVAL,
        glue: found.glue,
    };
    // "The driver MUST treat the host information as if the following URI was used
    // instead": the equivalent mongodb:// string (loadBalanced=true with several hosts).
    seeds
        .equivalent_options()
        .validate()
        .map_err(|error| match &*error.kind {
            ErrorKind::InvalidArgument { message } => Error::invalid_argument(format!(
                "mongodb+srv://{hostname} resolved to {}: {message}",
                host_list(&seeds.resolved.hosts)
            )),
            _ => error,
        })?;
    Ok(seeds)
}

fn host_list(hosts: &[ServerAddress]) -> String {
    hosts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The SRV host name of `options`, lower-cased, without a trailing dot. A malformed
/// `srvAllowedHostsSuffix` is refused here, before anything is looked up (initial
/// look-ups and rescans alike).
fn srv_hostname(options: &ClientOptions) -> Result<&str> {
    if let Some(suffix) = &options.srv_allowed_hosts_suffix {
        normalized_suffix(suffix)?;
    }
    match options.hosts.as_slice() {
        [ServerAddress::Tcp { host, .. }] if options.srv => Ok(host.trim_end_matches('.')),
        _ if !options.srv => Err(Error::invalid_argument(
            "seedlist discovery needs a mongodb+srv connection string",
        )),
        _ => Err(Error::invalid_argument(
            "a mongodb+srv connection string names exactly one host name",
        )),
    }
}

/// `_{srvServiceName}._tcp.{hostname}`.
fn srv_name(options: &ClientOptions, hostname: &str) -> String {
    let service = options
        .srv_service_name
        .as_deref()
        .unwrap_or(DEFAULT_SERVICE_NAME);
    format!("_{service}._tcp.{hostname}")
}

/// Runs one look-up of `name` under the bound, turning its failures into driver errors.
async fn bounded<T>(
    clock: &dyn Clock,
    timeout: Duration,
    name: &str,
    during: &'static str,
    lookup: impl std::future::Future<Output = io::Result<T>>,
) -> Result<T> {
    let outcome = match timeout {
        Duration::ZERO => Ok(lookup.await),
        bound => with_timeout(clock, bound, lookup).await,
    };
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(Error::dns_resolve(format!(
            "{during} of {name} failed: {error}"
        ))),
        // As the official crate reports a resolver's timeout: a DNS error.
        Err(_) => Err(Error::dns_resolve(format!(
            "{during} of {name} timed out after {timeout:?}"
        ))),
    }
}

/// The hosts of one SRV look-up: what [`resolve`] and SRV polling start from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SrvHosts {
    /// The targets that passed [`verify_target`], in the order of the records, without
    /// duplicates.
    pub hosts: Vec<ServerAddress>,
    /// The targets that did not, with why.
    pub rejected: Vec<(String, String)>,
    /// The lowest TTL of the records, if there were any.
    pub min_ttl: Option<Duration>,
    /// The addresses the answer carried for verified hosts (its glue,
    /// [`SrvRecord::addresses`]), host name first: the client connects to them without
    /// looking the names up.
    pub glue: Vec<(String, HostAddresses)>,
}

/// Looks up the SRV records of `options` (a `mongodb+srv` string's options, before
/// [`resolve`] replaced their hosts) and verifies each target (see [`SrvHosts`]).
///
/// An answer without records is not an error here (SRV polling keeps its hosts then);
/// a failed or timed-out look-up is.
pub async fn lookup_hosts(
    options: &ClientOptions,
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<SrvHosts> {
    let hostname = srv_hostname(options)?;
    let name = srv_name(options, hostname);
    let records = bounded(
        clock,
        timeout,
        &name,
        "DNS SRV look-up",
        resolver.srv(&name),
    )
    .await?;
    Ok(verify_records(
        hostname,
        options.srv_allowed_hosts_suffix.as_deref(),
        &records,
    ))
}

/// Sorts SRV records into verified hosts and rejected targets.
fn verify_records(hostname: &str, suffix: Option<&str>, records: &[SrvRecord]) -> SrvHosts {
    let mut found = SrvHosts {
        min_ttl: records
            .iter()
            .map(|record| Duration::from_secs(record.ttl_secs.into()))
            .min(),
        ..SrvHosts::default()
    };
    for record in records {
        let target = record.target.trim_end_matches('.').to_ascii_lowercase();
        match verify_target(hostname, &target, suffix) {
            Ok(()) => {
                if let Some(addresses) = &record.addresses {
                    found.glue.push((target.clone(), addresses.clone()));
                }
                let host = ServerAddress::tcp(target, record.port);
                if !found.hosts.contains(&host) {
                    found.hosts.push(host);
                }
            }
            Err(why) => found.rejected.push((target, why)),
        }
    }
    found
}

/// Checks an SRV record's target against the SRV host name (Initial DNS Seedlist
/// Discovery spec, "Querying DNS"): with three or more labels, the host name's
/// `{domainname}` is all but its first label; with one or two, the whole host name.
/// The target must end with `.{domainname}`, so it has at least one more label.
///
/// With `srvAllowedHostsSuffix`, the target must instead end with that suffix (at a
/// label boundary; case and leading or trailing dots do not matter). A suffix of a
/// single label (a top-level domain) is refused.
///
/// ```
/// use anymongo::srv::verify_target;
/// assert!(verify_target("cluster0.example.com", "shard-00.example.com", None).is_ok());
/// assert!(verify_target("cluster0.example.com", "shard-00.evil.com", None).is_err());
/// // Fewer than three labels: the target needs one more label than the host name.
/// assert!(verify_target("localhost", "localhost", None).is_err());
/// assert!(verify_target("mongo.local", "test_1.mongo.local", None).is_ok());
/// ```
pub fn verify_target(
    hostname: &str,
    target: &str,
    allowed_suffix: Option<&str>,
) -> std::result::Result<(), String> {
    let hostname = hostname.trim_end_matches('.').to_ascii_lowercase();
    let target = target.trim_end_matches('.').to_ascii_lowercase();
    let (domain, rule) = match allowed_suffix {
        Some(suffix) => (
            normalized_suffix(suffix).map_err(|error| error.to_string())?,
            "srvAllowedHostsSuffix",
        ),
        None => {
            let labels = hostname.split('.').count();
            let domain = match labels {
                0..=2 => hostname.as_str(),
                _ => hostname.split_once('.').map_or("", |(_, domain)| domain),
            };
            (domain.to_owned(), "the parent domain")
        }
    };
    match target.strip_suffix(domain.as_str()) {
        Some(prefix) if prefix.len() > 1 && prefix.ends_with('.') => Ok(()),
        _ => Err(format!("it is not a host under {domain} ({rule})")),
    }
}

/// Normalizes `srvAllowedHostsSuffix`: lower case, without leading or trailing dots; at
/// least two labels.
fn normalized_suffix(suffix: &str) -> Result<String> {
    let normalized = suffix.trim_matches('.').to_ascii_lowercase();
    if normalized.is_empty() || !normalized.contains('.') || normalized.contains("..") {
        return Err(Error::invalid_argument(format!(
            "srvAllowedHostsSuffix '{suffix}' must name a domain of at least two labels, not a top-level domain"
        )));
    }
    Ok(normalized)
}

/// The seed list from verified SRV hosts: all of them when `srv_max_hosts` is 0 or at
/// least their number, else `srv_max_hosts` of them picked by a Fisher–Yates shuffle.
/// `random(n)` must return an index below `n` ([`crate::selection::random_index`]
/// does; tests pass their own).
///
/// ```
/// use anymongo::{srv::select_hosts, ServerAddress};
/// let hosts: Vec<_> = (1..=3).map(|i| ServerAddress::tcp(format!("h{i}.example.com"), 27017)).collect();
/// assert_eq!(select_hosts(&hosts, 0, |_| 0), hosts);
/// assert_eq!(select_hosts(&hosts, 2, anymongo::selection::random_index).len(), 2);
/// ```
pub fn select_hosts(
    hosts: &[ServerAddress],
    srv_max_hosts: u32,
    mut random: impl FnMut(usize) -> usize,
) -> Vec<ServerAddress> {
    let max = srv_max_hosts as usize;
    if max == 0 || max >= hosts.len() {
        return hosts.to_vec();
    }
    // The first `max` steps of the modern Fisher–Yates shuffle, from the front.
    let mut pool = hosts.to_vec();
    for i in 0..max {
        let j = i + random(pool.len() - i).min(pool.len() - i - 1);
        pool.swap(i, j);
    }
    pool.truncate(max);
    pool
}

/// The host list after an SRV rescan (Polling SRV Records spec): the current hosts
/// still in `found` stay (in their order), those no longer there go, and new ones from
/// `found` are added — all of them when `srv_max_hosts` is 0 or at least
/// `found.len()`, else picked at random until the list has `srv_max_hosts` hosts.
/// An empty `found` keeps `current` (a rescan without verified hosts changes nothing).
///
/// ```
/// use anymongo::{srv::rescanned_hosts, ServerAddress};
/// let host = |name: &str| ServerAddress::tcp(name, 27017);
/// let current = [host("a.example.com"), host("b.example.com")];
/// let found = [host("b.example.com"), host("c.example.com")];
/// assert_eq!(
///     rescanned_hosts(&current, &found, 0, |_| 0),
///     [host("b.example.com"), host("c.example.com")]
/// );
/// ```
pub fn rescanned_hosts(
    current: &[ServerAddress],
    found: &[ServerAddress],
    srv_max_hosts: u32,
    random: impl FnMut(usize) -> usize,
) -> Vec<ServerAddress> {
    if found.is_empty() {
        return current.to_vec();
    }
    let found_set: BTreeSet<&ServerAddress> = found.iter().collect();
    let mut hosts: Vec<ServerAddress> = current
        .iter()
        .filter(|host| found_set.contains(host))
        .cloned()
        .collect();
    let new: Vec<ServerAddress> = found
        .iter()
        .filter(|host| !hosts.contains(host))
        .cloned()
        .collect();
    let room = match srv_max_hosts as usize {
        0 => new.len(),
        max => max.saturating_sub(hosts.len()),
    };
    hosts.extend(
        select_hosts(&new, room as u32, random)
            .into_iter()
            .take(room),
    );
    hosts
}

/// How long to wait before the next SRV rescan: the lowest TTL of the last records, but
/// at least [`MIN_RESCAN_INTERVAL`]; 60 s when the TTLs are not known.
pub fn rescan_interval(min_ttl: Option<Duration>) -> Duration {
    interval_at_least(min_ttl, MIN_RESCAN_INTERVAL)
}

/// `min_ttl`, but at least `floor`; `floor` when the TTLs are not known.
fn interval_at_least(min_ttl: Option<Duration>, floor: Duration) -> Duration {
    min_ttl.map_or(floor, |ttl| ttl.max(floor))
}

/// The default options of a TXT record (see [`parse_txt`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxtOptions {
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// Values that were ignored, as the Connection String spec ignores invalid values.
    pub warnings: Vec<String>,
}

/// Reads the TXT records of an SRV host name (each one's strings already joined): none
/// gives no options; more than one is an error; the one record is a query string of
/// `authSource`, `replicaSet` and `loadBalanced` (case-insensitive keys, percent-encoded
/// values). Any other option (`ssl` included) and a pair without `=` are errors; an
/// invalid value is ignored with a warning, as in a connection string.
///
/// ```
/// use anymongo::srv::parse_txt;
/// let options = parse_txt(&["replicaSet=repl0&authSource=thisDB".into()]).unwrap();
/// assert_eq!(options.replica_set.as_deref(), Some("repl0"));
/// assert_eq!(options.auth_source.as_deref(), Some("thisDB"));
/// assert!(parse_txt(&["ssl=false".into()]).is_err());
/// assert!(parse_txt(&["replicaSet=a".into(), "authSource=b".into()]).is_err());
/// ```
pub fn parse_txt(records: &[String]) -> Result<TxtOptions> {
    let record = match records {
        [] => return Ok(TxtOptions::default()),
        [record] => record,
        _ => {
            return Err(Error::dns_resolve(format!(
                "{} TXT records found where at most one is allowed",
                records.len()
            )))
        }
    };
    let mut options = TxtOptions::default();
    for pair in record.split('&').filter(|pair| !pair.is_empty()) {
        let Some((key, _)) = pair.split_once('=') else {
            return Err(Error::dns_resolve(format!(
                "the TXT record's option '{pair}' is malformed: expected key=value"
            )));
        };
        let Some(name) = TXT_OPTIONS
            .iter()
            .find(|name| name.eq_ignore_ascii_case(key))
        else {
            return Err(Error::dns_resolve(format!(
                "the TXT record sets '{key}', but only authSource, replicaSet and loadBalanced are allowed there"
            )));
        };
        // The connection string parser types the value (percent-decoding, booleans);
        // the user information makes it keep authSource.
        let parsed = ClientOptions::parse_uri(&format!("mongodb://txt:txt@txt/?{pair}")).map_err(
            |error| match &*error.kind {
                ErrorKind::InvalidArgument { message } => Error::dns_resolve(format!(
                    "the TXT record's option '{pair}' is invalid: {message}"
                )),
                _ => error,
            },
        )?;
        options.warnings.extend(
            parsed
                .warnings
                .iter()
                .map(|warning| format!("TXT record: {warning}")),
        );
        match *name {
            "authSource" => {
                if let Some(source) = parsed.credential.and_then(|c| c.source) {
                    options.auth_source = Some(source);
                }
            }
            "replicaSet" => {
                if parsed.repl_set_name.is_some() {
                    options.replica_set = parsed.repl_set_name;
                }
            }
            _ => {
                if parsed.load_balanced.is_some() {
                    options.load_balanced = parsed.load_balanced;
                }
            }
        }
    }
    Ok(options)
}

/// Applies the TXT options the user did not give.
fn apply_txt(options: &mut ClientOptions, txt: &TxtOptions, given: Given) -> Result<()> {
    if !given.replica_set && options.repl_set_name.is_none() {
        options.repl_set_name.clone_from(&txt.replica_set);
    }
    if !given.load_balanced && options.load_balanced.is_none() {
        options.load_balanced = txt.load_balanced;
    }
    if let (false, Some(source)) = (given.auth_source, &txt.auth_source) {
        if let Some(credential) = &options.credential {
            let mut credential = credential.clone();
            credential.source = Some(source.clone());
            let checked = credential.resolve_from_uri(options.default_database.as_deref())?;
            options.credential = Some(checked);
        }
    }
    options.warnings.extend(txt.warnings.iter().cloned());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use futures::executor::block_on;

    use super::*;
    use crate::rt::{boxed, BoxFuture, Instant, IpAddr};

    /// A resolver answering from tables; names absent from them have no records.
    #[derive(Default)]
    struct FakeResolver {
        srv: HashMap<String, Vec<SrvRecord>>,
        txt: HashMap<String, Vec<String>>,
        /// Never answers.
        silent: bool,
        /// Fails every look-up.
        failing: bool,
        asked: Mutex<Vec<String>>,
    }

    impl FakeResolver {
        fn with_srv(mut self, name: &str, targets: &[(&str, u16)]) -> Self {
            self.srv.insert(
                name.to_owned(),
                targets
                    .iter()
                    .map(|(target, port)| SrvRecord {
                        target: format!("{target}."),
                        port: *port,
                        ttl_secs: 300,
                        addresses: None,
                    })
                    .collect(),
            );
            self
        }

        fn with_txt(mut self, name: &str, records: &[&str]) -> Self {
            self.txt.insert(
                name.to_owned(),
                records.iter().map(|r| r.to_string()).collect(),
            );
            self
        }

        fn answer<T: Clone + Send + 'static>(
            &self,
            name: &str,
            table: &HashMap<String, Vec<T>>,
        ) -> BoxFuture<'static, io::Result<Vec<T>>> {
            self.asked.lock().unwrap().push(name.to_owned());
            if self.silent {
                return boxed(futures::future::pending());
            }
            let answer = match self.failing {
                true => Err(io::Error::other("SERVFAIL")),
                false => Ok(table.get(name).cloned().unwrap_or_default()),
            };
            boxed(async move { answer })
        }
    }

    impl Resolver for FakeResolver {
        fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
            self.answer(name, &self.srv)
        }
        fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
            self.answer(name, &self.txt)
        }
        fn ip<'a>(&'a self, _host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
            boxed(async { Ok(Vec::new()) })
        }
    }

    /// A clock whose sleeps end at once: a bounded look-up that does not answer
    /// immediately times out.
    struct InstantClock;

    impl Clock for InstantClock {
        fn now(&self) -> Instant {
            Instant::from_origin(Duration::ZERO)
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
            boxed(async {})
        }
    }

    const BOUND: Duration = Duration::from_secs(1);
    const TEST1: &str = "_mongodb._tcp.test1.test.build.10gen.cc";

    fn test1() -> FakeResolver {
        FakeResolver::default().with_srv(
            TEST1,
            &[
                ("localhost.test.build.10gen.cc", 27017),
                ("localhost.test.build.10gen.cc", 27018),
            ],
        )
    }

    fn run(uri: &str, resolver: &FakeResolver) -> Result<ClientOptions> {
        block_on(resolve_uri(uri, resolver, &InstantClock, BOUND))
    }

    fn hosts(options: &ClientOptions) -> Vec<String> {
        options.hosts.iter().map(ToString::to_string).collect()
    }

    fn message(error: Error) -> String {
        error.to_string()
    }

    #[test]
    fn srv_records_become_the_seed_list_and_tls_is_on() {
        let options = run("mongodb+srv://test1.test.build.10gen.cc/", &test1()).unwrap();
        assert_eq!(
            hosts(&options),
            [
                "localhost.test.build.10gen.cc:27017",
                "localhost.test.build.10gen.cc:27018"
            ]
        );
        assert!(options.tls.is_some());
        assert!(options.srv);
    }

    #[test]
    fn the_service_name_prefixes_the_query() {
        let resolver = FakeResolver::default().with_srv(
            "_customname._tcp.test22.test.build.10gen.cc",
            &[("localhost.test.build.10gen.cc", 27017)],
        );
        let options = run(
            "mongodb+srv://test22.test.build.10gen.cc/?srvServiceName=customname",
            &resolver,
        )
        .unwrap();
        assert_eq!(hosts(&options), ["localhost.test.build.10gen.cc:27017"]);
        let asked = resolver.asked.lock().unwrap();
        assert!(asked.contains(&"_customname._tcp.test22.test.build.10gen.cc".to_owned()));
        assert!(asked.contains(&"test22.test.build.10gen.cc".to_owned()));
    }

    #[test]
    fn no_records_is_an_error_that_names_the_query() {
        let error = run("mongodb+srv://test4.test.build.10gen.cc/", &test1()).unwrap_err();
        let text = message(error);
        assert!(text.contains("no SRV records"), "{text}");
        assert!(
            text.contains("_mongodb._tcp.test4.test.build.10gen.cc"),
            "{text}"
        );
    }

    #[test]
    fn a_failed_lookup_is_a_dns_error_naming_the_query() {
        let resolver = FakeResolver {
            failing: true,
            ..FakeResolver::default()
        };
        let error = run("mongodb+srv://test1.test.build.10gen.cc/", &resolver).unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::DnsResolve { message } if message.contains(TEST1))
        );
        assert!(error.to_string().contains("SERVFAIL"));
    }

    #[test]
    fn a_silent_resolver_times_out_with_the_bound() {
        let resolver = FakeResolver {
            silent: true,
            ..FakeResolver::default()
        };
        let error = run("mongodb+srv://test1.test.build.10gen.cc/", &resolver).unwrap_err();
        match &*error.kind {
            ErrorKind::DnsResolve { message } => {
                assert!(
                    message.contains(&format!("timed out after {BOUND:?}")),
                    "{message}"
                );
                assert!(message.contains("DNS"), "{message}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[test]
    fn parent_domain_rule_with_three_or_more_labels() {
        let ok = |target| verify_target("blogs.mongodb.com", target, None);
        assert!(ok("a.mongodb.com").is_ok());
        assert!(ok("a.b.mongodb.com").is_ok());
        assert!(ok("blogs.evil.com").is_err());
        assert!(ok("cluster.testmongodb.com").is_err());
        assert!(ok("mongodb.com").is_err());
        assert!(ok("a.mongodb.com.evil").is_err());
    }

    #[test]
    fn parent_domain_rule_with_fewer_than_three_labels() {
        // The spec's prose tests 2, 3 and 4.
        assert!(verify_target("localhost", "localhost.mongodb", None).is_err());
        assert!(verify_target("mongo.local", "test_1.evil.local", None).is_err());
        assert!(verify_target("localhost", "localhost", None).is_err());
        assert!(verify_target("mongo.local", "mongo.local", None).is_err());
        assert!(verify_target("localhost", "test_1.cluster_1localhost", None).is_err());
        assert!(verify_target("mongo.local", "test_1.my_hostmongo.local", None).is_err());
        assert!(verify_target("localhost", "test_1.localhost", None).is_ok());
        assert!(verify_target("mongo.local", "test_1.mongo.local", None).is_ok());
        assert!(verify_target("Mongo.Local.", "TEST_1.mongo.local.", None).is_ok());
    }

    #[test]
    fn prose_1_hosts_with_fewer_than_three_labels_are_resolved() {
        for (uri, name, target) in [
            (
                "mongodb+srv://localhost",
                "_mongodb._tcp.localhost",
                "a.localhost",
            ),
            (
                "mongodb+srv://mongo.local",
                "_mongodb._tcp.mongo.local",
                "a.mongo.local",
            ),
        ] {
            let resolver = FakeResolver::default().with_srv(name, &[(target, 27017)]);
            assert_eq!(
                hosts(&run(uri, &resolver).unwrap()),
                [format!("{target}:27017")]
            );
        }
    }

    #[test]
    fn a_target_outside_the_domain_fails_the_whole_discovery() {
        let resolver = FakeResolver::default().with_srv(
            "_mongodb._tcp.test19.test.build.10gen.cc",
            &[
                ("localhost.evil.build.10gen.cc", 27017),
                ("localhost.test.build.10gen.cc", 27017),
            ],
        );
        let text =
            message(run("mongodb+srv://test19.test.build.10gen.cc/", &resolver).unwrap_err());
        assert!(text.contains("localhost.evil.build.10gen.cc"), "{text}");
        assert!(text.contains("test.build.10gen.cc"), "{text}");
    }

    #[test]
    fn allowed_hosts_suffix_replaces_the_parent_domain_rule() {
        let check = |suffix| {
            verify_target(
                "test12.test.build.10gen.cc",
                "localhost.build.10gen.cc",
                Some(suffix),
            )
        };
        assert!(check("build.10gen.cc").is_ok());
        assert!(check(".BUILD.10GEN.CC.").is_ok());
        assert!(check("10gen.cc").is_ok());
        assert!(check("uild.10gen.cc").is_err());
        assert!(check("test.build.10gen.cc").is_err());
        assert!(check("cc").is_err());
        assert!(check(".cc").is_err());
        assert!(check(".").is_err());
    }

    #[test]
    fn an_invalid_suffix_fails_before_any_lookup() {
        const URI: &str = "mongodb+srv://test1.test.build.10gen.cc/?srvAllowedHostsSuffix=.";
        let resolver = test1();
        assert!(run(URI, &resolver).is_err());
        // The SRV look-up alone, as SRV polling's rescans make it.
        let options = ClientOptions::parse_uri(URI).unwrap();
        let rescan = lookup_hosts(&options, &resolver, &InstantClock, BOUND);
        assert!(block_on(rescan).is_err());
        assert!(resolver.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn srv_max_hosts_picks_a_random_subset() {
        let all: Vec<_> = (0..5)
            .map(|i| ServerAddress::tcp(format!("h{i}.x.y"), 27017))
            .collect();
        assert_eq!(select_hosts(&all, 0, |_| 0), all);
        assert_eq!(select_hosts(&all, 5, |_| 0), all);
        assert_eq!(select_hosts(&all, 9, |_| 0), all);
        // Always taking the last remaining: h4, then h0 moved... a deterministic shuffle.
        let picked = select_hosts(&all, 2, |n| n - 1);
        assert_eq!(picked, [all[4].clone(), all[0].clone()]);
        // An out-of-range random value is clamped rather than panicking.
        assert_eq!(select_hosts(&all, 1, |_| 99), [all[4].clone()]);
        let picked = select_hosts(&all, 3, crate::selection::random_index);
        let distinct: BTreeSet<_> = picked.iter().collect();
        assert_eq!(distinct.len(), 3);
    }

    #[test]
    fn srv_max_hosts_applies_to_resolution() {
        let options = run(
            "mongodb+srv://test1.test.build.10gen.cc/?srvMaxHosts=1",
            &test1(),
        )
        .unwrap();
        assert_eq!(options.hosts.len(), 1);
    }

    #[test]
    fn txt_options_apply_unless_the_uri_gives_them() {
        let resolver = FakeResolver::default()
            .with_srv(
                "_mongodb._tcp.test5.test.build.10gen.cc",
                &[("localhost.test.build.10gen.cc", 27017)],
            )
            .with_txt(
                "test5.test.build.10gen.cc",
                &["replicaSet=repl0&authSource=thisDB"],
            );
        let options = run("mongodb+srv://u:p@test5.test.build.10gen.cc/db", &resolver).unwrap();
        assert_eq!(options.repl_set_name.as_deref(), Some("repl0"));
        let source = |o: &ClientOptions| o.credential.as_ref().unwrap().source.clone();
        assert_eq!(source(&options).as_deref(), Some("thisDB"));

        let options = run(
            "mongodb+srv://u:p@test5.test.build.10gen.cc/?authSource=otherDB&replicaSet=r",
            &resolver,
        )
        .unwrap();
        assert_eq!(source(&options).as_deref(), Some("otherDB"));
        assert_eq!(options.repl_set_name.as_deref(), Some("r"));

        // Given "admin" explicitly: resolve_uri keeps it, where resolve cannot tell.
        let options = run(
            "mongodb+srv://u:p@test5.test.build.10gen.cc/?authSource=admin",
            &resolver,
        )
        .unwrap();
        assert_eq!(source(&options).as_deref(), Some("admin"));

        // From parsed options: a defaulted source takes the TXT one, a set one stays.
        let parsed =
            ClientOptions::parse_uri("mongodb+srv://u:p@test5.test.build.10gen.cc/").unwrap();
        let options = block_on(resolve(&parsed, &resolver, &InstantClock, BOUND)).unwrap();
        assert_eq!(source(&options).as_deref(), Some("thisDB"));
        let parsed =
            ClientOptions::parse_uri("mongodb+srv://u:p@test5.test.build.10gen.cc/?authSource=x")
                .unwrap();
        let options = block_on(resolve(&parsed, &resolver, &InstantClock, BOUND)).unwrap();
        assert_eq!(source(&options).as_deref(), Some("x"));
    }

    #[test]
    fn txt_strings_of_one_record_are_joined_by_the_resolver() {
        let options = parse_txt(&["replicaSet=repl0".into()]).unwrap();
        assert_eq!(options.replica_set.as_deref(), Some("repl0"));
        assert_eq!(parse_txt(&[]).unwrap(), TxtOptions::default());
        let options = parse_txt(&["loadBalanced=TRUE".into()]).unwrap();
        assert_eq!(options.load_balanced, None);
        assert_eq!(options.warnings.len(), 1);
    }

    #[test]
    fn txt_errors_are_clear() {
        let text = |records: &[&str]| {
            let records: Vec<String> = records.iter().map(|r| r.to_string()).collect();
            message(parse_txt(&records).unwrap_err())
        };
        assert!(text(&["replicaSet=repl0", "authSource=otherDB"]).contains("2 TXT records"));
        assert!(text(&["ssl=false"]).contains("'ssl'"));
        assert!(text(&["socketTimeoutMS=500"]).contains("only authSource"));
        assert!(text(&["authSource"]).contains("malformed"));
        assert!(text(&["authSource="]).contains("invalid"));
    }

    #[test]
    fn options_that_conflict_once_resolved_are_errors() {
        // loadBalanced=true from the TXT record with several hosts.
        let resolver = test1().with_txt("test1.test.build.10gen.cc", &["loadBalanced=true"]);
        let text = message(run("mongodb+srv://test1.test.build.10gen.cc/", &resolver).unwrap_err());
        assert!(text.contains("loadBalanced=true"), "{text}");
        // srvMaxHosts with a replicaSet from the TXT record.
        let resolver = test1().with_txt("test1.test.build.10gen.cc", &["replicaSet=repl0"]);
        let text = message(
            run(
                "mongodb+srv://test1.test.build.10gen.cc/?srvMaxHosts=1",
                &resolver,
            )
            .unwrap_err(),
        );
        assert!(text.contains("srvMaxHosts"), "{text}");
        // The URI's loadBalanced=false wins over the TXT record's true.
        let options = run(
            "mongodb+srv://test1.test.build.10gen.cc/?loadBalanced=false",
            &test1().with_txt("test1.test.build.10gen.cc", &["loadBalanced=true"]),
        )
        .unwrap();
        assert_eq!(options.load_balanced, Some(false));
    }

    #[test]
    fn parse_errors_come_before_any_lookup() {
        let resolver = test1();
        for uri in [
            "mongodb+srv://test1.test.build.10gen.cc:27018/",
            "mongodb+srv://a.b.c,d.e.f/",
            "mongodb+srv://test1.test.build.10gen.cc/?directConnection=true",
        ] {
            assert!(run(uri, &resolver).is_err(), "{uri}");
        }
        assert!(resolver.asked.lock().unwrap().is_empty());
        let plain = ClientOptions::parse_uri("mongodb://localhost/").unwrap();
        assert!(block_on(resolve(&plain, &resolver, &InstantClock, BOUND)).is_err());
    }

    #[test]
    fn rescans_keep_remove_and_add_hosts() {
        let host = |name: &str| ServerAddress::tcp(name, 27017);
        let current = [host("a.x.y"), host("b.x.y")];
        // Removed, kept and added.
        assert_eq!(
            rescanned_hosts(&current, &[host("b.x.y"), host("c.x.y")], 0, |_| 0),
            [host("b.x.y"), host("c.x.y")]
        );
        // Nothing verified: no change.
        assert_eq!(rescanned_hosts(&current, &[], 0, |_| 0), current);
        // srvMaxHosts: only as many new hosts as there is room for.
        let found = [host("a.x.y"), host("c.x.y"), host("d.x.y")];
        let hosts = rescanned_hosts(&current, &found, 2, |_| 0);
        assert_eq!(hosts, [host("a.x.y"), host("c.x.y")]);
        let hosts = rescanned_hosts(&current, &found, 3, |_| 0);
        assert_eq!(hosts.len(), 3);
    }

    #[test]
    fn lookups_report_rejected_targets_and_the_lowest_ttl() {
        let found = verify_records(
            "test1.test.build.10gen.cc",
            None,
            &[
                SrvRecord {
                    target: "a.test.build.10gen.cc.".into(),
                    port: 27017,
                    ttl_secs: 90,
                    addresses: None,
                },
                SrvRecord {
                    target: "a.evil.cc.".into(),
                    port: 27017,
                    ttl_secs: 30,
                    addresses: None,
                },
            ],
        );
        assert_eq!(
            found.hosts,
            [ServerAddress::tcp("a.test.build.10gen.cc", 27017)]
        );
        assert_eq!(found.rejected.len(), 1);
        assert_eq!(found.min_ttl, Some(Duration::from_secs(30)));
        assert_eq!(rescan_interval(found.min_ttl), MIN_RESCAN_INTERVAL);
        assert_eq!(
            rescan_interval(Some(Duration::from_secs(300))),
            Duration::from_secs(300)
        );
        assert_eq!(rescan_interval(None), MIN_RESCAN_INTERVAL);
    }

    #[test]
    fn a_seed_list_keeps_what_polling_needs() {
        let options =
            ClientOptions::parse_uri("mongodb+srv://test1.test.build.10gen.cc/?srvMaxHosts=1")
                .unwrap();
        let seeds = block_on(resolve_seed_list(&options, &test1(), &InstantClock, BOUND)).unwrap();
        assert_eq!(seeds.options().hosts.len(), 1);
        assert_eq!(seeds.srv_options(), &options);
        let ttl = Duration::from_secs(300);
        assert_eq!(seeds.min_ttl(), Some(ttl));
        assert_eq!(seeds.rescan_interval(Some(ttl)), ttl);
        assert_eq!(
            seeds.rescan_interval(Some(Duration::from_secs(5))),
            MIN_RESCAN_INTERVAL
        );
        // The test hook lowers the floor only.
        let floor = Duration::from_millis(100);
        let lowered = seeds.clone().with_min_rescan_interval(floor);
        assert_eq!(lowered.rescan_interval(Some(Duration::ZERO)), floor);
        assert_eq!(lowered.rescan_interval(None), floor);
        assert_eq!(lowered.rescan_interval(Some(ttl)), ttl);
        // What the client is built with: the equivalent mongodb:// options.
        let equivalent = seeds.equivalent_options();
        assert!(!equivalent.srv);
        assert_eq!(equivalent.srv_max_hosts, None);
        assert_eq!(equivalent.hosts, seeds.options().hosts);
        assert!(equivalent.tls.is_some());
        assert!(equivalent.validate().is_ok());
    }

    #[test]
    fn lookup_timeout_is_connect_timeout_or_server_selection_timeout() {
        let mut options = ClientOptions::parse_uri("mongodb+srv://a.b.c/").unwrap();
        assert_eq!(lookup_timeout(&options), Duration::from_secs(10));
        options.connect_timeout = Some(Duration::ZERO);
        assert_eq!(lookup_timeout(&options), Duration::from_secs(30));
    }
}
