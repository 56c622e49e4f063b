//! The seams between the driver core and the host runtime.
//!
//! The core never opens a socket, reads a clock or spawns a task by itself: it asks a
//! [`Runtime`], which bundles the four small traits below. Each host crate
//! (`anymongo-native`, `anymongo-wasi`, the wasm-bindgen package) implements them once.
//!
//! | seam | what the core asks of it |
//! | --- | --- |
//! | [`Transport`] | a byte stream to `host:port`, with TLS when asked |
//! | [`Resolver`] | SRV and TXT records (and addresses, where a transport needs them) |
//! | [`Clock`] | a monotonic "now" and a sleep, from which [`timeout`] is built |
//! | [`Spawner`] | background work (monitors, pool upkeep) — optional: hosts that cannot keep tasks alive between requests leave it out |
//! | [`KeyDerivation`] | PBKDF2 for SCRAM's salted password — optional: without one the core derives it itself |
//!
//! Natively every seam is `Send + Sync` so a client can be shared across threads; on
//! `wasm32` nothing is, because JavaScript handles are not. That difference lives only
//! in [`MaybeSend`], [`MaybeSync`] and [`BoxFuture`], here and nowhere else.

use std::fmt;
use std::future::Future;
use std::io;
use std::ops::{Add, Sub};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

pub use core::net::IpAddr;

#[cfg(not(target_family = "wasm"))]
mod send_bounds {
    /// `Send` on native targets, no bound at all on `wasm32`.
    pub trait MaybeSend: Send {}
    impl<T: Send + ?Sized> MaybeSend for T {}

    /// `Sync` on native targets, no bound at all on `wasm32`.
    pub trait MaybeSync: Sync {}
    impl<T: Sync + ?Sized> MaybeSync for T {}

    /// A boxed future that is `Send` on native targets.
    pub type BoxFuture<'a, T> = futures::future::BoxFuture<'a, T>;
}

#[cfg(target_family = "wasm")]
mod send_bounds {
    /// `Send` on native targets, no bound at all on `wasm32`.
    pub trait MaybeSend {}
    impl<T: ?Sized> MaybeSend for T {}

    /// `Sync` on native targets, no bound at all on `wasm32`.
    pub trait MaybeSync {}
    impl<T: ?Sized> MaybeSync for T {}

    /// A boxed future that is `Send` on native targets.
    pub type BoxFuture<'a, T> = futures::future::LocalBoxFuture<'a, T>;
}

pub use send_bounds::{BoxFuture, MaybeSend, MaybeSync};

/// Boxes a future as a [`BoxFuture`], whatever the target.
pub fn boxed<'a, F>(future: F) -> BoxFuture<'a, F::Output>
where
    F: Future + MaybeSend + 'a,
{
    Box::pin(future)
}

/// Gives the executor back the task polled with `cx`, to be polled again at once:
/// what a poll loop that made progress without waiting returns instead of looping,
/// so that it never holds its thread (a single-threaded executor's only one).
/// [`yield_now`] is the same for an `async` caller.
pub fn poll_yield<T>(cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
    cx.waker().wake_by_ref();
    std::task::Poll::Pending
}

/// A bidirectional byte stream to a server, as opened by a [`Transport`].
///
/// The driver reads and writes whole wire messages; it never needs half-closes or
/// vectored I/O, so the trait is kept to what it uses. Dropping the stream closes it.
pub trait Stream: MaybeSend {
    /// Reads at least one byte into `buf`, returning how many; `Ok(0)` means the peer
    /// closed the stream.
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>>;

    /// Writes all of `buf` and flushes it to the peer.
    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>>;

    /// Whether the stream, idle between requests, can still carry one, as far as the
    /// host can tell at once, without waiting: `false` when the peer closed or reset
    /// it, or sent bytes that no request asked for. The pool asks this of a connection
    /// that sat available for a while before handing it out (see
    /// the driver's `anymongo::cmap::Poolable::is_open_and_idle`), so that
    /// a connection the server or a middlebox closed while it was idle is replaced
    /// instead of failing the next operation. `true` (cannot tell) by default.
    fn is_open_and_idle(&self) -> bool {
        true
    }

    /// The stream as [`Any`](std::any::Any), for a [`Transport::secure`] that must
    /// take its own stream type back to layer TLS over the socket underneath (the npm
    /// package's hosts start TLS on their own socket objects). `None` by default.
    fn into_any(self: Box<Self>) -> Option<Box<dyn std::any::Any>> {
        None
    }
}

/// TLS settings of a client's connections: the `tls`-prefixed options of the URI Options
/// spec, with the fields and builder of the official `mongodb` crate's
/// `options::TlsOptions`, plus what only anymongo has (marked below). Every field is
/// `Option`: `None` means the default, which is the strict one.
///
/// This struct lives in `anymongo-rt`, the bottom crate, because the transports read
/// it when they open a TLS stream; `anymongo::options::TlsOptions` is this type.
///
/// `Debug` never shows the certificate key's password nor in-memory PEM text.
///
/// ```
/// # use anymongo_rt::rt::TlsOptions;
/// let options = TlsOptions::builder()
///     .ca_file_path(std::path::PathBuf::from("/etc/ssl/ca.pem"))
///     .allow_invalid_hostnames(true)
///     .build();
/// assert_eq!(options.allow_invalid_certificates, None);
/// ```
#[derive(Clone, Default, PartialEq, Eq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct TlsOptions {
    /// Accept a server certificate that does not chain to a trusted authority
    /// (`tlsAllowInvalidCertificates`, or `tlsInsecure`). For tests only: it disables
    /// certificate validation, revocation checks included. Default `false`.
    pub allow_invalid_certificates: Option<bool>,
    /// A PEM file of the authorities to trust, replacing the host's default roots
    /// (`tlsCAFile`), read by the host from its file system.
    pub ca_file_path: Option<PathBuf>,
    /// A PEM file holding the client's certificate and private key, for mutual TLS and
    /// MONGODB-X509 (`tlsCertificateKeyFile`).
    pub cert_key_file_path: Option<PathBuf>,
    /// Accept a server certificate issued for another host name
    /// (`tlsAllowInvalidHostnames`, or `tlsInsecure`). For tests only. Default `false`.
    pub allow_invalid_hostnames: Option<bool>,
    /// The password of an encrypted private key in the certificate key PEM
    /// (`tlsCertificateKeyFilePassword`).
    pub tls_certificate_key_file_password: Option<Vec<u8>>,
    /// anymongo addition: PEM text of the authorities to trust, already in memory, for
    /// hosts without a file system (a Worker, a browser-like runtime). Not combined with
    /// `ca_file_path`: a client refuses options that give both.
    pub ca_pem: Option<String>,
    /// anymongo addition: PEM text of the client's certificate and private key, already
    /// in memory. Not combined with `cert_key_file_path`.
    pub cert_key_pem: Option<String>,
    /// anymongo addition: do not contact OCSP responders
    /// (`tlsDisableOCSPEndpointCheck`). Default `false`.
    pub disable_ocsp_endpoint_check: Option<bool>,
    /// anymongo addition: do not check whether the server's certificate was revoked
    /// (`tlsDisableCertificateRevocationCheck`): neither by OCSP nor with
    /// `crl_file_path`'s lists. Default `false`.
    pub disable_certificate_revocation_check: Option<bool>,
    /// anymongo addition: a PEM file of certificate revocation lists (`tlsCRLFile`, as
    /// pymongo has it), read by the host from its file system: a certificate of the
    /// server's chain that one of them lists is refused.
    pub crl_file_path: Option<PathBuf>,
}

/// Where PEM data of a TLS connection (trusted authorities, or the client's certificate
/// and key) comes from, as [`TlsOptions::ca`] and [`TlsOptions::cert_key`] read it.
/// `Debug` shows a file's path but never in-memory PEM text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PemSource<'a> {
    /// A PEM file the host reads (`tlsCAFile`, `tlsCertificateKeyFile`).
    File(&'a Path),
    /// PEM text already in memory (hosts without a file system).
    Pem(&'a str),
}

impl fmt::Debug for PemSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PemSource::File(path) => f.debug_tuple("File").field(path).finish(),
            PemSource::Pem(pem) => write!(f, "Pem(<{} bytes>)", pem.len()),
        }
    }
}

impl TlsOptions {
    /// The authorities to trust: in-memory PEM if given, else the CA file; `None` for
    /// the host's default roots.
    pub fn ca(&self) -> Option<PemSource<'_>> {
        pem_source(self.ca_pem.as_deref(), self.ca_file_path.as_deref())
    }

    /// The client's certificate and key: in-memory PEM if given, else the file.
    pub fn cert_key(&self) -> Option<PemSource<'_>> {
        pem_source(
            self.cert_key_pem.as_deref(),
            self.cert_key_file_path.as_deref(),
        )
    }

    /// [`allow_invalid_certificates`](Self::allow_invalid_certificates), `false` when unset.
    pub fn allows_invalid_certificates(&self) -> bool {
        self.allow_invalid_certificates.unwrap_or(false)
    }

    /// Whether the server certificate's revocation is checked: unless
    /// [`disable_certificate_revocation_check`](Self::disable_certificate_revocation_check)
    /// or [`allow_invalid_certificates`](Self::allow_invalid_certificates) (the OCSP
    /// Support spec: `tlsInsecure` and `tlsAllowInvalidCertificates` disable OCSP).
    pub fn checks_revocation(&self) -> bool {
        !self.disable_certificate_revocation_check.unwrap_or(false)
            && !self.allows_invalid_certificates()
    }

    /// [`allow_invalid_hostnames`](Self::allow_invalid_hostnames), `false` when unset.
    pub fn allows_invalid_hostnames(&self) -> bool {
        self.allow_invalid_hostnames.unwrap_or(false)
    }
}

fn pem_source<'a>(pem: Option<&'a str>, file: Option<&'a Path>) -> Option<PemSource<'a>> {
    pem.map(PemSource::Pem).or(file.map(PemSource::File))
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca", &self.ca())
            .field("cert_key", &self.cert_key())
            .field(
                "tls_certificate_key_file_password",
                &self
                    .tls_certificate_key_file_password
                    .as_ref()
                    .map(|_| "<redacted>"),
            )
            .field(
                "allow_invalid_certificates",
                &self.allow_invalid_certificates,
            )
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .field(
                "disable_ocsp_endpoint_check",
                &self.disable_ocsp_endpoint_check,
            )
            .field(
                "disable_certificate_revocation_check",
                &self.disable_certificate_revocation_check,
            )
            .field("crl_file_path", &self.crl_file_path)
            .finish()
    }
}

/// Whether a client's connections use TLS, as in the official `mongodb` crate: the
/// client options' `tls` field is `None` (no TLS, unless a `mongodb+srv` connection
/// string turned it on), or one of these. `anymongo::options::Tls` is this type.
///
/// Defined here, beside [`TlsOptions`], so that `Option<Tls>` can be made from
/// `TlsOptions` (`.tls(options)` on the client options' builder).
///
/// ```
/// # use anymongo_rt::rt::{Tls, TlsOptions};
/// let enabled: Tls = TlsOptions::builder().allow_invalid_hostnames(true).build().into();
/// assert!(matches!(enabled, Tls::Enabled(_)));
/// let field: Option<Tls> = TlsOptions::default().into();
/// assert_eq!(field, Some(Tls::Enabled(TlsOptions::default())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tls {
    /// TLS with these options.
    Enabled(TlsOptions),
    /// No TLS.
    Disabled,
}

impl From<TlsOptions> for Tls {
    fn from(options: TlsOptions) -> Self {
        Tls::Enabled(options)
    }
}

impl From<TlsOptions> for Option<Tls> {
    fn from(options: TlsOptions) -> Self {
        Some(Tls::Enabled(options))
    }
}

/// What a [`Transport`] is asked to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTarget {
    /// Host name or IP literal (without IPv6 brackets), or the path of a unix domain
    /// socket (see [`ConnectTarget::is_unix_socket`]).
    pub host: String,
    /// TCP port (unused for a unix domain socket).
    pub port: u16,
    /// `Some` to wrap the stream in TLS.
    pub tls: Option<TlsOptions>,
    /// Addresses the client already knows `host` has (an SRV answer's glue, or a
    /// look-up of its own still within its TTL): the transport connects to them, in
    /// order, instead of resolving `host` again, while `host` still names the server
    /// to TLS (SNI, the certificate's check). Empty: the transport resolves `host`. A
    /// transport that can only connect to names (a JavaScript host's) ignores them.
    pub addresses: Vec<IpAddr>,
    /// What is left of the time the connection may take to open (`connectTimeoutMS`,
    /// less what a proxy's tunnel took), `None` when unbounded. The caller bounds the
    /// whole connection by it anyway; a host uses it to give up in time on what the
    /// connection can go without, so that it still opens: asking OCSP responders
    /// ([`tls::ocsp`](crate::tls::ocsp), the OCSP Support spec's soft fail).
    pub time_left: Option<Duration>,
}

impl ConnectTarget {
    /// Whether `host` names a unix domain socket: by the Connection String spec's rule,
    /// a path (it holds a `/`) that ends in `.sock`; `mongodb-27017.sock` alone is a
    /// host name.
    ///
    /// ```
    /// # use anymongo_rt::rt::ConnectTarget;
    /// let target = ConnectTarget {
    ///     host: "/tmp/mongodb-27017.sock".into(),
    ///     port: 0,
    ///     tls: None,
    ///     addresses: Vec::new(),
    ///     time_left: None,
    /// };
    /// assert!(target.is_unix_socket());
    /// ```
    pub fn is_unix_socket(&self) -> bool {
        self.host.contains('/') && self.host.ends_with(".sock")
    }
}

impl fmt::Display for ConnectTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_unix_socket() {
            f.write_str(&self.host)
        } else if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Opens byte streams to servers.
///
/// Implementations should fail with the I/O error kind that describes what happened
/// (`ConnectionRefused`, `TimedOut`, `InvalidData` for certificate failures…) and a
/// message a user can act on; the core adds the address. The core bounds every call
/// with `connectTimeoutMS` through the [`Clock`], so an implementation need not.
pub trait Transport: MaybeSend + MaybeSync {
    /// Opens a stream to `target`, performing the TLS handshake when `target.tls` is set.
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>>;

    /// Runs the TLS handshake that `target.tls` asks for over `stream`, already open to
    /// the server through a SOCKS5 proxy (see `anymongo::socks5`), and returns the
    /// encrypted stream.
    ///
    /// The default refuses: a host whose TLS cannot be layered over a stream it did
    /// not open says so. Hosts that use the `tls` module (native, WASI) call
    /// `tls::secure` here as in [`connect`](Self::connect).
    fn secure<'a>(
        &'a self,
        stream: Box<dyn Stream>,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        drop(stream);
        boxed(async move {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("TLS to {target} through a SOCKS5 proxy is not supported by this host"),
            ))
        })
    }

    /// The transport a new client opens all its connections with, monitoring ones
    /// included; called once per client. A host whose TLS keeps state across
    /// connections returns a transport of the client's own, so that no two clients
    /// share it: the hosts that use the `tls` module keep their rustls configurations
    /// there, and with them the TLS sessions later connections resume (see
    /// `tls::ClientConfigs`). The default, `None`, shares this transport.
    fn for_client(&self) -> Option<Arc<dyn Transport>> {
        None
    }
}

/// One SRV record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrvRecord {
    /// Target host name, without the trailing dot.
    pub target: String,
    /// Target port.
    pub port: u16,
    /// Time to live, in seconds.
    pub ttl_secs: u32,
    /// The target's addresses when the answer carried them: the A and AAAA records of
    /// its Additional section whose owner is the target ("glue", which RFC 2782 asks
    /// servers to send with SRV answers). The client connects to them without asking
    /// for the target's name again. `None`: the answer had none for this target (a
    /// resolver that cannot see the Additional section gives `None` too).
    pub addresses: Option<HostAddresses>,
}

/// A host name's addresses, from its A and AAAA records, and how long they may be
/// reused.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostAddresses {
    /// The addresses, IPv4 ones (A) first.
    pub ips: Vec<IpAddr>,
    /// How long they may be reused, in seconds: the smallest TTL of their records; 0
    /// when unknown (a system resolver's answer), which the client does not reuse.
    pub ttl_secs: u32,
}

impl HostAddresses {
    /// The addresses of `host` among `records` (owner name, address, TTL): the
    /// Additional section of an SRV answer. Owner names match without regard to case
    /// or a trailing dot; `None` when there is none.
    ///
    /// ```
    /// # use anymongo_rt::rt::HostAddresses;
    /// let records = [
    ///     ("db0.example.com.", "10.0.0.1".parse().unwrap(), 60),
    ///     ("DB0.example.com", "::1".parse().unwrap(), 30),
    ///     ("db1.example.com.", "10.0.0.2".parse().unwrap(), 60),
    /// ];
    /// let db0 = HostAddresses::of("db0.example.com", records.iter().cloned()).unwrap();
    /// assert_eq!(db0.ips.len(), 2);
    /// assert_eq!(db0.ttl_secs, 30);
    /// assert!(HostAddresses::of("db2.example.com", records.iter().cloned()).is_none());
    /// ```
    pub fn of<'a>(
        host: &str,
        records: impl IntoIterator<Item = (&'a str, IpAddr, u32)>,
    ) -> Option<HostAddresses> {
        let host = host.trim_end_matches('.');
        HostAddresses::from_records(records.into_iter().filter_map(|(owner, ip, ttl)| {
            owner
                .trim_end_matches('.')
                .eq_ignore_ascii_case(host)
                .then_some((ip, ttl))
        }))
    }

    /// Addresses and their TTLs (an answer's A and AAAA records, whatever CNAME chain
    /// led to them), made one: IPv4 first, each family in the answer's order, without
    /// repeats, valid for the smallest TTL. `None` when there is none.
    pub fn from_records(records: impl IntoIterator<Item = (IpAddr, u32)>) -> Option<Self> {
        let mut found: Option<HostAddresses> = None;
        for (ip, ttl_secs) in records {
            let addresses = found.get_or_insert(HostAddresses {
                ips: Vec::new(),
                ttl_secs,
            });
            addresses.ttl_secs = addresses.ttl_secs.min(ttl_secs);
            if !addresses.ips.contains(&ip) {
                addresses.ips.push(ip);
            }
        }
        if let Some(addresses) = &mut found {
            addresses.ips.sort_by_key(IpAddr::is_ipv6);
        }
        found
    }
}

/// DNS look-ups the core needs (the Initial DNS Seedlist Discovery spec), and the
/// addresses of the hosts it connects to.
pub trait Resolver: MaybeSend + MaybeSync {
    /// SRV records of `name` (for example `_mongodb._tcp.cluster0.example.com`).
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>>;
    /// TXT records of `name`, each one's strings concatenated.
    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>>;
    /// A and AAAA records of `host`, for transports that connect to addresses.
    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
    /// The addresses of `host` and how long they may be reused: the client asks this
    /// before it connects to a host name it has no fresh addresses of, gives them to
    /// the transport ([`ConnectTarget::addresses`]) and reuses them for the next
    /// connections to that host within their TTL. A resolver that asks a name server
    /// itself asks A and AAAA at once (one round trip) and gives their TTL. The
    /// default gives [`ip`](Self::ip)'s addresses with no TTL (not reused).
    fn addresses<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<HostAddresses>> {
        boxed(async move {
            Ok(HostAddresses {
                ips: self.ip(host).await?,
                ttl_secs: 0,
            })
        })
    }
}

/// The error a host's [`Resolver`] gives for a kind of look-up it cannot make yet.
pub fn unsupported_lookup(kind: &str, name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{kind} look-up of {name}: not supported by this host yet"),
    )
}

/// A point on a [`Clock`]'s monotonic time line.
///
/// The core's replacement for `std::time::Instant`, which panics on
/// `wasm32-unknown-unknown`: it only means something relative to other readings of
/// the same clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    since_origin: Duration,
}

impl Instant {
    /// The reading `since_origin` after the clock's (arbitrary, fixed) origin.
    pub const fn from_origin(since_origin: Duration) -> Self {
        Instant { since_origin }
    }

    /// Time since the clock's origin.
    pub const fn since_origin(self) -> Duration {
        self.since_origin
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.since_origin.saturating_sub(earlier.since_origin)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant::from_origin(self.since_origin.saturating_add(rhs))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

/// Monotonic time and timers, and the wall clock.
pub trait Clock: MaybeSend + MaybeSync {
    /// Now, on a monotonic time line.
    fn now(&self) -> Instant;
    /// The wall-clock time since the Unix epoch (it may jump); used only where a
    /// protocol needs a date, such as MONGODB-AWS request signing.
    fn unix_time(&self) -> Duration;
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Runs background work. Hosts that cannot keep tasks alive between requests
/// (a WASI request handler, a Cloudflare Worker invocation) do not provide one, and
/// the core then works without background tasks.
pub trait Spawner: MaybeSend + MaybeSync {
    /// Starts `task`; it runs until it completes or the host shuts down.
    fn spawn(&self, task: BoxFuture<'static, ()>);
}

/// The pseudo-random function of a PBKDF2 derivation: HMAC with this hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pbkdf2Hash {
    /// HMAC-SHA-1 (SCRAM-SHA-1).
    Sha1,
    /// HMAC-SHA-256 (SCRAM-SHA-256).
    Sha256,
}

/// One PBKDF2 derivation (RFC 8018, section 5.2) the core asks of a [`KeyDerivation`]:
/// SCRAM's `Hi(password, salt, iterations)` (RFC 5802, section 2.2) is PBKDF2 with
/// `length` equal to the hash's output size. `Debug` never shows the password.
#[derive(Clone, Copy)]
pub struct Pbkdf2<'a> {
    /// The pseudo-random function.
    pub hash: Pbkdf2Hash,
    /// The (prepared) password, the HMAC key.
    pub password: &'a [u8],
    /// The salt.
    pub salt: &'a [u8],
    /// The iteration count, already checked against the core's bounds.
    pub iterations: u32,
    /// Bytes of output wanted.
    pub length: usize,
}

impl fmt::Debug for Pbkdf2<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pbkdf2")
            .field("hash", &self.hash)
            .field("iterations", &self.iterations)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

/// Derives keys with the host's own cryptography, where it is faster than the core's:
/// in WebAssembly PBKDF2 runs several times slower than natively, while every
/// JavaScript runtime has a native one (WebCrypto's `deriveBits`).
///
/// Optional: without one (the default) the core derives keys itself, in rounds that
/// yield to the executor. When the host's derivation fails or gives a key of the wrong
/// length, the core falls back to its own, so a host may refuse what it cannot do (an
/// iteration count above its limit, say). The future is dropped when the connection
/// attempt times out.
pub trait KeyDerivation: MaybeSend + MaybeSync {
    /// The `request.length` bytes of PBKDF2 output.
    fn pbkdf2<'a>(&'a self, request: Pbkdf2<'a>) -> BoxFuture<'a, io::Result<Vec<u8>>>;
}

/// Which kind of host the core runs in; reported in the handshake's client metadata.
#[derive(Debug, Clone)]
pub struct HostInfo {
    /// `"native"`, `"wasi"` or `"js"`.
    pub runtime: &'static str,
    /// Free text about the host placed in `client.platform` after the driver's own
    /// part, for example `"tokio"` or `"wasmtime"`.
    pub platform: String,
    /// Operating system type (`client.os.type`), e.g. `"linux"`; `"unknown"` if not known.
    pub os_type: String,
    /// CPU architecture (`client.os.architecture`), if known.
    pub architecture: Option<String>,
    /// Whether the host runs in a Docker container (`/.dockerenv` exists); the
    /// core cannot look at files itself.
    pub docker: bool,
    /// Looks up an environment variable for FaaS detection; hosts without an
    /// environment return `None` for everything.
    pub env: fn(&str) -> Option<String>,
    /// Reads a text file: the token files of MONGODB-OIDC's `test` and `k8s`
    /// environments and MONGODB-AWS's `AWS_WEB_IDENTITY_TOKEN_FILE`, which the official
    /// drivers read themselves. Hosts without a file system give [`no_file_access`].
    pub read_file: fn(&str) -> io::Result<String>,
}

/// [`HostInfo::read_file`] of a host without a file system: every read fails with
/// [`io::ErrorKind::Unsupported`].
///
/// ```
/// let error = anymongo_rt::rt::no_file_access("/var/run/token").unwrap_err();
/// assert_eq!(error.kind(), std::io::ErrorKind::Unsupported);
/// ```
pub fn no_file_access(path: &str) -> io::Result<String> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("this host has no file system to read '{path}' from"),
    ))
}

/// Everything the core needs from its host.
///
/// ```
/// # use std::sync::Arc;
/// # use anymongo_rt::rt::*;
/// fn describe(runtime: &Runtime) -> &'static str {
///     if runtime.spawner.is_some() { "background monitoring" } else { "on-demand monitoring" }
/// }
/// ```
#[derive(Clone)]
pub struct Runtime {
    /// Opens streams.
    pub transport: Arc<dyn Transport>,
    /// DNS.
    pub resolver: Arc<dyn Resolver>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Background tasks, when the host can run them.
    pub spawner: Option<Arc<dyn Spawner>>,
    /// The host's key derivation, when it has a faster one than the core's.
    pub key_derivation: Option<Arc<dyn KeyDerivation>>,
    /// What the host is, for the handshake.
    pub host: HostInfo,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("host", &self.host)
            .field("spawner", &self.spawner.is_some())
            .field("key_derivation", &self.key_derivation.is_some())
            .finish_non_exhaustive()
    }
}

/// The error of [`timeout`]: the deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// Runs `future` until it completes or `duration` passes on `clock`, whichever is first;
/// the time counts from this call.
///
/// A future of its own rather than an `async fn`: an `async fn` would hold `future`
/// twice (its argument, and the pinned copy it polls), and this wraps whole steps of
/// an operation (server selection, a check-out), whose futures the caller then moves
/// and boxes with each operation.
pub fn timeout<F: Future>(clock: &dyn Clock, duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: clock.sleep(duration),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`timeout`]: `Err(Elapsed)` when the time passed first.
    #[must_use = "futures do nothing unless awaited"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: BoxFuture<'static, ()>,
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The future first: one that is ready when the time passes still counts.
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        this.sleep.as_mut().poll(cx).map(|()| Err(Elapsed))
    }
}

/// Lets the executor run its other tasks (and check its timers) before the caller goes
/// on: the future is pending once, and wakes itself at once. It needs nothing of the
/// host, so it works on every executor; a task that does long CPU-bound work in
/// rounds awaits it between rounds (SCRAM's key derivation, see
/// `anymongo::auth::next_command`). On a JavaScript event loop the wake-up is a
/// microtask: the driver's other futures run in between, the host's timers and I/O
/// callbacks only once the work is done.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        poll_yield(cx)
    })
    .await
}

/// Marks an `io::Error` from a [`Transport`] as a TLS failure (an untrusted
/// certificate, a failed handshake), which the core reports as an
/// `anymongo::ErrorKind::Io` error, as the official crate does, that
/// `anymongo::Error::is_tls_error` tells apart.
///
/// ```
/// use anymongo_rt::rt::TlsError;
/// let error = std::io::Error::new(
///     std::io::ErrorKind::InvalidData,
///     TlsError("invalid peer certificate: UnknownIssuer".into()),
/// );
/// assert!(error.get_ref().unwrap().is::<TlsError>());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(pub String);

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `yield_now` is pending once, having woken its task so that the executor polls
    /// it again, then ready.
    #[test]
    fn yield_now_is_pending_once_and_wakes_itself() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(super::yield_now());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(()));
    }
}
