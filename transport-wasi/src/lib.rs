//! The WASI 0.2 host of anymongo: wasi:sockets TCP (through `wstd`), rustls TLS with
//! the `ring` provider, WASI monotonic clocks, and a DNS client over wasi:sockets UDP
//! and TCP for `mongodb+srv://` (`WasiResolver`).
//!
//! WASI components usually serve one request at a time and cannot keep tasks alive
//! between requests, so this host provides no spawner: the core then works without
//! background tasks. Drive the driver's futures with `block_on` (re-exported from `wstd`):
//!
//! ```no_run
//! # #[cfg(target_os = "wasi")]
//! # fn main() -> anymongo::Result<()> {
//! use anymongo::bson::doc;
//! anymongo_wasi::block_on(async {
//!     let client = anymongo_wasi::client("mongodb://127.0.0.1:27017")?;
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
