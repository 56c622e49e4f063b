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

with_default_runtime! {
    if {
        /// The built-in runtime of this target: a new one at each call (natively it
        /// takes the tokio runtime it is called in for background monitoring).
        pub(crate) fn default_runtime() -> Option<Runtime> {
            Some(host::runtime())
        }
    } else {
        /// This target has no built-in runtime.
        pub(crate) fn default_runtime() -> Option<Runtime> {
            None
        }
    }
}

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
