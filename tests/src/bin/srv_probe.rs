//! `srv_probe [--bound-ms N] NAMESERVER URI...` resolves each `mongodb+srv://` URI with
//! [`anymongo::srv::resolve_uri`] through the host's own resolver asking `NAMESERVER`
//! (`ip:port`, or `system` for the resolver's default configuration), and prints one
//! JSON line per URI:
//!
//! ```text
//! {"uri": …, "lookup": …, "resolved": …, "elapsed_ms": …}
//! ```
//!
//! - `lookup`: the SRV look-up alone ([`anymongo::srv::lookup_hosts`]): the verified
//!   hosts in the order of the records, the rejected targets and the lowest TTL; or
//!   `{"error": …}`; `null` when the URI does not parse as `mongodb+srv`;
//! - `resolved`: the seed list (in order) and the options a TXT record may set or the
//!   spec tests check, each as its BSON text or `null`; or `{"error": …}`;
//! - `elapsed_ms`: how long `resolve_uri` took on the runtime's clock.
//!
//! Each look-up is bounded by `--bound-ms` (default 5000; 0 means the driver sets no
//! bound and only the resolver's own timeouts end it).
//!
//! Natively the resolver is `anymongo_native::TokioResolver` (hickory); as a WASI 0.2
//! program under wasmtime (`-S inherit-network=y`) it is `anymongo_wasi::WasiResolver`
//! (DNS messages over wasi:sockets), so the two builds can be compared line by line.

use std::net::SocketAddr;
use std::time::Duration;

use anymongo::rt::{Clock, Resolver};
use anymongo::{srv, ClientOptions, ServerAddress};
use serde_json::{json, Value};

/// The options reported for each resolved URI.
const OPTIONS: [&str; 6] = [
    "authSource",
    "replicaSet",
    "loadBalanced",
    "tls",
    "srvMaxHosts",
    "srvServiceName",
];

const USAGE: &str = "usage: srv_probe [--bound-ms N] NAMESERVER|system URI...";

fn main() {
    match parse_args(std::env::args().skip(1).collect()) {
        Ok((nameserver, bound, uris)) => {
            for line in run(nameserver, bound, &uris) {
                println!("{line}");
            }
        }
        Err(why) => {
            eprintln!("{why}\n{USAGE}");
            std::process::exit(2);
        }
    }
}

/// The name server (`None` for `system`), the bound and the URIs.
fn parse_args(
    mut args: Vec<String>,
) -> Result<(Option<SocketAddr>, Duration, Vec<String>), String> {
    let mut bound = Duration::from_secs(5);
    if args.first().map(String::as_str) == Some("--bound-ms") {
        let millis = args.get(1).ok_or("--bound-ms needs a value")?;
        let millis: u64 = millis
            .parse()
            .map_err(|e| format!("--bound-ms {millis}: {e}"))?;
        bound = Duration::from_millis(millis);
        args.drain(..2);
    }
    let mut args = args.into_iter();
    let nameserver = match args.next().ok_or("no NAMESERVER")?.as_str() {
        "system" => None,
        address => Some(
            address
                .parse()
                .map_err(|e| format!("NAMESERVER {address}: {e}"))?,
        ),
    };
    Ok((nameserver, bound, args.collect()))
}

#[cfg(target_os = "wasi")]
fn run(nameserver: Option<SocketAddr>, bound: Duration, uris: &[String]) -> Vec<Value> {
    use anymongo_wasi::{WasiClock, WasiResolver};
    let resolver = nameserver.map_or_else(WasiResolver::new, WasiResolver::with_nameserver);
    anymongo_wasi::block_on(report_all(uris, &resolver, &WasiClock, bound))
}

#[cfg(not(target_os = "wasi"))]
fn run(nameserver: Option<SocketAddr>, bound: Duration, uris: &[String]) -> Vec<Value> {
    use anymongo_native::TokioResolver;
    let resolver = nameserver.map_or_else(TokioResolver::new, TokioResolver::with_nameserver);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio starts");
    runtime.block_on(async {
        let clock = anymongo_native::runtime().clock;
        report_all(uris, &resolver, clock.as_ref(), bound).await
    })
}

async fn report_all(
    uris: &[String],
    resolver: &dyn Resolver,
    clock: &dyn Clock,
    bound: Duration,
) -> Vec<Value> {
    let mut lines = Vec::with_capacity(uris.len());
    for uri in uris {
        lines.push(report(uri, resolver, clock, bound).await);
    }
    lines
}

/// The JSON line of one URI.
async fn report(uri: &str, resolver: &dyn Resolver, clock: &dyn Clock, bound: Duration) -> Value {
    let lookup = match ClientOptions::parse_uri(uri) {
        Ok(options) if options.srv => {
            match srv::lookup_hosts(&options, resolver, clock, bound).await {
                Ok(found) => json!({
                    "hosts": host_strings(&found.hosts),
                    "rejected": found.rejected,
                    "min_ttl": found.min_ttl.map(|ttl| ttl.as_secs()),
                }),
                Err(error) => json!({ "error": error.to_string() }),
            }
        }
        _ => Value::Null,
    };
    let started = clock.now();
    let resolved = match srv::resolve_uri(uri, resolver, clock, bound).await {
        Ok(options) => {
            let values: serde_json::Map<String, Value> = OPTIONS
                .iter()
                .map(|name| {
                    let value = options.uri_option(name).map(|value| value.to_string());
                    (name.to_string(), json!(value))
                })
                .collect();
            json!({ "hosts": host_strings(&options.hosts), "options": values })
        }
        Err(error) => json!({ "error": error.to_string() }),
    };
    let elapsed = clock.now().saturating_duration_since(started);
    json!({
        "uri": uri,
        "lookup": lookup,
        "resolved": resolved,
        "elapsed_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    })
}

fn host_strings(hosts: &[ServerAddress]) -> Vec<String> {
    hosts.iter().map(ToString::to_string).collect()
}
