//! Pings a server with a client whose credentials come from the cloud: `cloud_ping URI`,
//! where the URI names MONGODB-AWS or MONGODB-OIDC with `ENVIRONMENT:azure|gcp`, and the
//! endpoints are reached through the process's environment (the variables of
//! `anymongo::auth::cloud`). Token files (`AWS_WEB_IDENTITY_TOKEN_FILE`) are read from
//! the file system. For `tests/tests/cloud_auth.rs`, natively and as a WASI 0.2 program
//! (`wasmtime run -S inherit-network=y --env NAME=VALUE cloud_ping.wasm URI`).
//!
//! Prints `outcome: ok`, or `outcome: error` and `error: …`; exits 0 on success.

use std::sync::Arc;

use anymongo::auth::oidc::OidcHost;
use anymongo::bson::doc;
use anymongo::rt::Runtime;
use anymongo::{Client, ClientOptions, Result};

/// The process's environment and file system.
struct Host;

impl OidcHost for Host {
    fn env_var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read_file(&self, path: &str) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

fn main() {
    let Some(uri) = std::env::args().nth(1) else {
        eprintln!("usage: cloud_ping URI");
        std::process::exit(2);
    };
    match block_on(|runtime| ping(uri, runtime)) {
        Ok(()) => println!("outcome: ok"),
        Err(error) => {
            println!("outcome: error");
            println!("error: {error}");
            std::process::exit(1);
        }
    }
}

async fn ping(uri: String, runtime: Runtime) -> Result<()> {
    let mut options = ClientOptions::parse_uri(&uri)?;
    if let Some(credential) = options.credential.as_mut() {
        credential.oidc_host = Some(Arc::new(Host));
    }
    let client = Client::with_runtime(options, runtime)?;
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await?;
    client.shutdown().await;
    Ok(())
}

#[cfg(target_os = "wasi")]
fn block_on<F: std::future::Future<Output = Result<()>>>(
    run: impl FnOnce(Runtime) -> F,
) -> Result<()> {
    anymongo_wasi::block_on(run(anymongo_wasi::runtime()))
}

#[cfg(not(target_os = "wasi"))]
fn block_on<F: std::future::Future<Output = Result<()>>>(
    run: impl FnOnce(Runtime) -> F,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { run(anymongo_native::runtime()).await })
}
