//! anymongo for JavaScript hosts (Node.js, Deno, Bun, Cloudflare Workers), built with
//! wasm-bindgen for `wasm32-unknown-unknown`: the core of the `anymongo` npm package.
//!
//! The host supplies the socket (a transport object written in JavaScript, see
//! `host`), the core does the rest: SDAM, server selection, pooling, authentication,
//! retries and CRUD. The JavaScript glue in `js/` gives it the shape of the official
//! Node.js driver; [`ops`] is the operation layer between the two, and builds (and is
//! tested) on every target. `host` is public for Rust code that runs in a JavaScript
//! host with a transport of the package's (the Data API gateway's Worker,
//! `templates/data-api-gateway/worker`): such a crate turns off the default feature
//! `npm`, the package's exports, which its WebAssembly then does not carry.
// JavaScript handles are not Send: on wasm32 an Arc is only shared ownership.
#![cfg_attr(target_family = "wasm", allow(clippy::arc_with_non_send_sync))]

pub mod events;
#[cfg(target_arch = "wasm32")]
pub mod host;
#[cfg(all(target_arch = "wasm32", feature = "npm"))]
mod js;
pub mod ops;
#[cfg(all(target_arch = "wasm32", feature = "npm"))]
mod spans;

use anymongo::rt::HostInfo;

/// What this host reports about itself in the handshake.
fn host() -> HostInfo {
    HostInfo {
        runtime: "js",
        platform: "wasm-bindgen".into(),
        os_type: "unknown".into(),
        architecture: Some("wasm32".into()),
        docker: false,
        // Without the environment: clients read their FaaS variables from the
        // JavaScript runtime (host::runtime), which a native build has not.
        env: |_| None,
        read_file: anymongo::rt::no_file_access,
    }
}

/// The handshake's `client` metadata this build would send, as text.
///
/// ```
/// let metadata = anymongo_wasm::client_metadata_text(Some("edge".into()));
/// assert!(metadata.contains("\"anymongo\""));
/// assert!(metadata.contains("\"edge\""));
/// ```
pub fn client_metadata_text(app_name: Option<String>) -> String {
    anymongo::handshake::client_metadata(&host(), app_name.as_deref()).to_string()
}
