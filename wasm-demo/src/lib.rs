//! anymongo for JavaScript hosts (Node.js, Deno, Bun, Cloudflare Workers), built with
//! wasm-bindgen for `wasm32-unknown-unknown`.
//!
//! A thin start: it proves that the core builds and runs in a JavaScript host. The
//! JavaScript-supplied transport and the Node-driver-shaped API come with the npm
//! package's own issue.

use anymongo::rt::HostInfo;

/// What this host reports about itself in the handshake.
fn host() -> HostInfo {
    HostInfo {
        runtime: "js",
        platform: "wasm-bindgen".into(),
        os_type: "unknown".into(),
        architecture: Some("wasm32".into()),
        docker: false,
        // A JavaScript host has no process environment the module can read.
        env: |_| None,
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

#[cfg(target_arch = "wasm32")]
mod js {
    use wasm_bindgen::prelude::wasm_bindgen;

    /// `clientMetadata(appName?)`: the handshake metadata as text.
    #[wasm_bindgen(js_name = clientMetadata)]
    pub fn client_metadata(app_name: Option<String>) -> String {
        super::client_metadata_text(app_name)
    }

    /// `version()`: the driver's version.
    #[wasm_bindgen]
    pub fn version() -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }
}
