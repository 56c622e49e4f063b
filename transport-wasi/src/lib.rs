//! The WASI 0.2 host of anymongo: wasi:sockets TCP (through `wstd`), rustls TLS with
//! the `ring` provider, WASI monotonic clocks, and a DNS client over wasi:sockets UDP
//! and TCP for `mongodb+srv://` (`WasiResolver`).
//!
//! WASI components usually serve one request at a time and cannot keep tasks alive
//! between requests, so this host provides no spawner: the core then works without
//! background tasks. It is the built-in transport of `anymongo` on wasm32-wasip2 (its
//! default feature `default-transport`), so `anymongo::Client::with_uri_str` uses it
//! without naming this crate. Drive the driver's futures with `block_on` (re-exported
//! from `wstd`):
//!
//! ```no_run
//! # #[cfg(target_os = "wasi")]
//! # fn main() -> anymongo::Result<()> {
//! use anymongo::bson::doc;
//! anymongo_wasi::block_on(async {
//!     let client = anymongo::Client::with_uri_str("mongodb://127.0.0.1:27017").await?;
//!     client.database("admin").run_command(doc! { "ping": 1 }).await?;
//!     Ok(())
//! })
//! # }
//! # #[cfg(not(target_os = "wasi"))] fn main() {}
//! ```
//!
//! The crate is empty on other targets.

#[cfg(target_os = "wasi")]
mod dns;
#[cfg(target_os = "wasi")]
mod tcp;
#[cfg(target_os = "wasi")]
mod wasi;
#[cfg(target_os = "wasi")]
pub use wasi::*;
