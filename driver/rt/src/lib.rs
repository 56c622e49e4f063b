//! The seams between anymongo's runtime-agnostic core and its hosts, in a crate of
//! their own so that a host crate (`anymongo-native`, `anymongo-wasi`) implements them
//! without depending on the driver, which depends on the hosts for its built-in
//! transport. Users reach everything here through the driver: `anymongo::rt`,
//! `anymongo::http` and `anymongo::tls`.
//!
//! - [`rt`]: the traits a host implements ([`rt::Transport`], [`rt::Resolver`],
//!   [`rt::Clock`], [`rt::Spawner`]) bundled in a [`rt::Runtime`];
//! - [`http`]: a small HTTP/1.1 client over the [`rt::Transport`] seam, for the cloud
//!   credential endpoints of MONGODB-AWS and MONGODB-OIDC and for OCSP responders;
//! - `tls` (feature `rustls`): TLS with rustls over any [`rt::Stream`], for the hosts
//!   that bring their own TLS;
//! - [`sync`] and [`logging`]: the little both the driver and the hosts use.
#![forbid(unsafe_code)]

pub mod http;
pub mod logging;
pub mod rt;
pub mod sync;
#[cfg(feature = "rustls")]
pub mod tls;
