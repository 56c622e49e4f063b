//! The built-in runtime: which host crate gives each target its transport, in this one
//! place. With the feature `default-transport` (on by default), native targets use
//! `anymongo-native` (tokio + rustls) and wasm32-wasip2 uses `anymongo-wasi`
//! (wasi:sockets); wasm32-unknown-unknown has no built-in transport (its host, such as
//! the npm package's JavaScript, brings a [`Runtime`]), and neither does a build
//! without the feature.
//!
//! What needs the built-in runtime ([`Client::with_uri_str`](crate::Client::with_uri_str),
//! [`Client::with_options`](crate::Client::with_options)) is written inside
//! [`with_default_runtime!`], and so does not exist where there is none: a program that
//! calls it does not compile there, rather than fail when it runs.
//!
//! The blocking API ([`crate::sync`], feature `sync`) exists natively only: it blocks
//! the caller's thread while `anymongo-native`'s process-wide tokio runtime drives the
//! I/O. Its one `cfg` is [`with_sync_api!`].

use core::net::{IpAddr, SocketAddr};

use crate::rt::Runtime;

/// Keeps the items given where the target has a built-in runtime (the `if` branch) or
/// has none (the `else` branch): the one `cfg` of that choice.
macro_rules! with_default_runtime {
    (if { $($yes:item)* } else { $($no:item)* }) => {
        $(
            #[cfg(all(
                feature = "default-transport",
                any(not(target_family = "wasm"), target_os = "wasi")
            ))]
            $yes
        )*
        $(
            #[cfg(not(all(
                feature = "default-transport",
                any(not(target_family = "wasm"), target_os = "wasi")
            )))]
            $no
        )*
    };
    ($($yes:item)*) => {
        $crate::default_runtime::with_default_runtime! { if { $($yes)* } else {} }
    };
}
pub(crate) use with_default_runtime;

/// Keeps the items given where the blocking API exists (feature `sync`, native
/// targets): the one `cfg` of that choice.
macro_rules! with_sync_api {
    ($($item:item)*) => {
        $(
            #[cfg(all(feature = "sync", not(target_family = "wasm")))]
            $item
        )*
    };
}
pub(crate) use with_sync_api;

#[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
use anymongo_native as host;
#[cfg(all(feature = "default-transport", target_os = "wasi"))]
use anymongo_wasi as host;

/// What a constructor that needs the built-in runtime says where there is none.
pub(crate) const NO_DEFAULT_RUNTIME: &str = "this target has no built-in transport \
     (wasm32-unknown-unknown, or anymongo built without its feature `default-transport`): \
     give the client a runtime (Client::with_runtime, or ClientConfig::runtime), and \
     ClientOptions::parse(uri).runtime(runtime) for a mongodb+srv connection string";

with_sync_api! {
    /// Runs a future to completion on the calling thread, in the context of the
    /// process-wide tokio runtime of `anymongo-native` (whose workers drive the sockets
    /// and timers, and run the client's monitors); an error if that runtime cannot
    /// start.
    pub(crate) use host::block_on;
}

/// `options::ResolverConfig`: the name servers the built-in runtime's resolver asks for
/// `mongodb+srv` look-ups, instead of the system's configuration
/// (`ClientOptions::parse(uri).resolver_config(config)`, as in the official crate), and
/// for the servers' addresses, which the client then keeps for their TTL (a name they
/// do not know is left to the transport, which asks the system).
///
/// Natively and on wasm32-wasip2 the built-in resolver asks them in order, the next
/// one when a look-up fails; the client keeps them for SRV polling. A client given a
/// runtime of its own (`Client::with_runtime`, and on wasm32-unknown-unknown, which has
/// no built-in runtime) uses that runtime's resolver, and
/// `ClientOptions::parse(uri).runtime(runtime)` refuses a `ResolverConfig` beside it.
///
/// ```
/// use anymongo::options::ResolverConfig;
/// let config = ResolverConfig::with_name_servers(["10.0.0.2:53".parse().unwrap()]);
/// assert_eq!(config.name_servers().len(), 1);
/// assert_eq!(ResolverConfig::cloudflare().name_servers()[0].to_string(), "1.1.1.1:53");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverConfig {
    name_servers: Vec<SocketAddr>,
}

impl ResolverConfig {
    /// Cloudflare's public DNS: 1.1.1.1, 1.0.0.1, 2606:4700:4700::1111 and
    /// 2606:4700:4700::1001.
    pub fn cloudflare() -> Self {
        ResolverConfig::public(
            [[1, 1, 1, 1], [1, 0, 0, 1]],
            [0x2606, 0x4700, 0x4700],
            [0x1111, 0x1001],
        )
    }

    /// Google's public DNS: 8.8.8.8, 8.8.4.4, 2001:4860:4860::8888 and
    /// 2001:4860:4860::8844.
    pub fn google() -> Self {
        ResolverConfig::public(
            [[8, 8, 8, 8], [8, 8, 4, 4]],
            [0x2001, 0x4860, 0x4860],
            [0x8888, 0x8844],
        )
    }

    /// Quad9's public DNS: 9.9.9.9, 149.112.112.112, 2620:fe::fe and 2620:fe::9.
    pub fn quad9() -> Self {
        ResolverConfig::public(
            [[9, 9, 9, 9], [149, 112, 112, 112]],
            [0x2620, 0x00fe, 0],
            [0x00fe, 0x0009],
        )
    }

    /// anymongo addition: the name servers given, asked in order (a name server of
    /// your own, a test's).
    pub fn with_name_servers(name_servers: impl IntoIterator<Item = SocketAddr>) -> Self {
        ResolverConfig {
            name_servers: name_servers.into_iter().collect(),
        }
    }

    /// The name servers, in the order they are asked.
    pub fn name_servers(&self) -> &[SocketAddr] {
        &self.name_servers
    }

    /// Two IPv4 and two IPv6 servers on port 53, the IPv6 ones `prefix::last`.
    fn public(v4: [[u8; 4]; 2], prefix: [u16; 3], last: [u16; 2]) -> Self {
        let v6 = last.map(|last| {
            let [a, b, c] = prefix;
            IpAddr::from([a, b, c, 0, 0, 0, 0, last])
        });
        let v4 = v4.map(IpAddr::from);
        ResolverConfig::with_name_servers(
            v4.into_iter()
                .chain(v6)
                .map(|ip| SocketAddr::new(ip, DNS_PORT)),
        )
    }
}

/// The port name servers listen on.
const DNS_PORT: u16 = 53;

with_default_runtime! {
    if {
        use std::sync::Arc;

        use crate::rt::{boxed, BoxFuture, HostAddresses, Resolver, SrvRecord};

        /// The built-in runtime of this target, its resolver asking `config`'s name
        /// servers if given: a new one at each call (natively it takes the tokio
        /// runtime it is called in for background monitoring).
        pub(crate) fn default_runtime_with(config: Option<&ResolverConfig>) -> Option<Runtime> {
            let mut runtime = host::runtime();
            if let Some(config) = config {
                let servers = config.name_servers.iter().map(|&address| {
                    #[cfg(not(target_family = "wasm"))]
                    let resolver = host::TokioResolver::with_nameserver(address);
                    #[cfg(target_os = "wasi")]
                    let resolver = host::WasiResolver::with_nameserver(address);
                    Arc::new(resolver) as Arc<dyn Resolver>
                });
                runtime.resolver = Arc::new(NameServers(servers.collect()));
            }
            Some(runtime)
        }

        /// Resolvers asked in order: the first answer, or the last error.
        struct NameServers(Vec<Arc<dyn Resolver>>);

        impl NameServers {
            async fn first<'a, T, F>(&'a self, ask: F) -> std::io::Result<T>
            where
                F: Fn(&'a dyn Resolver) -> BoxFuture<'a, std::io::Result<T>>,
            {
                let mut last = std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the ResolverConfig names no name server",
                );
                for resolver in &self.0 {
                    match ask(&**resolver).await {
                        Ok(answer) => return Ok(answer),
                        Err(error) => last = error,
                    }
                }
                Err(last)
            }
        }

        impl Resolver for NameServers {
            fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, std::io::Result<Vec<SrvRecord>>> {
                boxed(self.first(move |resolver| resolver.srv(name)))
            }

            fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, std::io::Result<Vec<String>>> {
                boxed(self.first(move |resolver| resolver.txt(name)))
            }

            fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
                boxed(self.first(move |resolver| resolver.ip(host)))
            }

            fn addresses<'a>(&'a self, host: &'a str) -> BoxFuture<'a, std::io::Result<HostAddresses>> {
                boxed(self.first(move |resolver| resolver.addresses(host)))
            }
        }
    } else {
        /// This target has no built-in runtime (a `ResolverConfig` has no resolver to
        /// configure).
        pub(crate) fn default_runtime_with(_: Option<&ResolverConfig>) -> Option<Runtime> {
            None
        }
    }
}
