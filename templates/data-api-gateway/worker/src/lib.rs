//! The Data API gateway as a Cloudflare Worker: the crate `data-api-gateway`'s core
//! (`Gateway::handle`) compiled for
//! `wasm32-unknown-unknown` with wasm-bindgen, its sockets from the npm package's
//! Workers transport (`cloudflare:sockets`) through `anymongo-wasm`'s seams over
//! JavaScript (`anymongo_wasm::host`). The JavaScript around it (`index.js`) is the
//! Worker's entry: a fetch handler that hands every request to a Durable Object, which
//! owns one `DataApiGateway` and so one client for all its requests (a Worker may not
//! use a socket opened by another request; a Durable Object's requests share theirs).
//!
//! Built by `build.sh` (cargo, then `wasm-bindgen --target web` into `pkg/`); served
//! by `npx wrangler dev`, published by `npx wrangler deploy` (docs/guide/edge.md). On
//! other targets this crate is empty.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod worker;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use worker::DataApiGateway;
