//! anymongo's host for a Cloudflare Worker written in Rust with
//! [workers-rs](https://docs.rs/worker) (the `worker` crate): the seams of
//! `anymongo::rt` over what the Workers runtime gives, without the npm package.
//!
//! | seam | on Workers |
//! | --- | --- |
//! | `Transport` | `worker::Socket` (`connect()` of `cloudflare:sockets`), with Workers' own TLS (`secureTransport: "on"`) when the connection string asks for TLS |
//! | `Resolver` | SRV and TXT look-ups for `mongodb+srv://` over DNS over HTTPS (the JSON API) with `worker::Fetch`; host names are resolved by the runtime when it connects |
//! | `Clock` | `performance.now()`, `Date.now()`, and `worker::Delay` (`setTimeout`) |
//! | `KeyDerivation` | PBKDF2 of WebCrypto (`crypto.subtle.deriveBits`) for SCRAM |
//! | `Spawner` | none: a Worker keeps no task running between requests, so the client monitors in the SDAM spec's single-threaded mode (servers checked on demand, before server selection) |
//!
//! A Worker may not use a socket opened by another request ("Cannot perform I/O on behalf
//! of a different request"); a Durable Object's requests share their sockets. So a
//! client kept across requests lives in a Durable Object: its first request connects, the
//! later ones reuse the pooled connection (templates/cloudflare-worker-rust).
//!
//! `connect(uri, CLOUDFLARE_DNS)` makes a client (resolving a `mongodb+srv://` name
//! first); `runtime(dns)` gives the seams alone, for `Client::with_runtime`.
//!
//! TLS is the runtime's: it verifies the server against the public roots, so the options
//! that change verification (`tlsCAFile` and in-memory CAs, client certificates,
//! `tlsAllowInvalidCertificates`, `tlsAllowInvalidHostnames`) are refused, as is TLS through
//! a SOCKS5 proxy (`Socket::start_tls` verifies the name the socket was opened to, the
//! proxy's). Atlas needs none of them.
//!
//! On targets other than `wasm32-unknown-unknown` the crate holds only its parsers of
//! DNS-over-HTTPS answers.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod workers;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use workers::*;

/// Cloudflare's DNS-over-HTTPS endpoint (JSON API), the usual endpoint of `runtime`'s resolver.
pub const CLOUDFLARE_DNS: &str = "https://cloudflare-dns.com/dns-query";

/// The character strings of a TXT record in the presentation form DNS-over-HTTPS JSON
/// answers carry (`data`): each in double quotes, with `\"`, `\\` and `\DDD` (a decimal
/// byte) escapes (RFC 1035, section 5.1); unquoted data is one string.
///
/// ```
/// use anymongo_workers::txt_strings;
/// assert_eq!(txt_strings(r#""authSource=admin&" "replicaSet=rs0""#), ["authSource=admin&", "replicaSet=rs0"]);
/// assert_eq!(txt_strings(r#""a\"b\\c\061""#), ["a\"b\\c="]);
/// assert_eq!(txt_strings("plain"), ["plain"]);
/// ```
pub fn txt_strings(data: &str) -> Vec<String> {
    let data = data.trim();
    if !data.starts_with('"') {
        return vec![data.to_owned()];
    }
    let mut strings = Vec::new();
    let mut bytes = data.bytes().peekable();
    while let Some(byte) = bytes.next() {
        if byte != b'"' {
            continue;
        }
        let mut text = Vec::new();
        while let Some(byte) = bytes.next() {
            match byte {
                b'"' => break,
                b'\\' => {
                    let digits: Vec<u8> =
                        std::iter::from_fn(|| bytes.next_if(|next| next.is_ascii_digit()))
                            .take(3)
                            .collect();
                    match std::str::from_utf8(&digits).ok().map(str::parse::<u8>) {
                        Some(Ok(value)) if digits.len() == 3 => text.push(value),
                        _ if digits.is_empty() => text.extend(bytes.next()),
                        _ => text.extend(digits),
                    }
                }
                byte => text.push(byte),
            }
        }
        strings.push(String::from_utf8_lossy(&text).into_owned());
    }
    strings
}

/// An SRV record's `data` in presentation form, `priority weight port target.`, as the
/// port and the target without its final dot; `None` when it is not of that form.
///
/// ```
/// use anymongo_workers::srv_target;
/// assert_eq!(srv_target("0 0 27017 a.example.com."), Some((27017, "a.example.com".into())));
/// assert_eq!(srv_target("0 0 x a.example.com."), None);
/// ```
pub fn srv_target(data: &str) -> Option<(u16, String)> {
    let mut fields = data.split_whitespace();
    let (_priority, _weight) = (fields.next()?, fields.next()?);
    let port = fields.next()?.parse().ok()?;
    let target = fields.next()?.trim_end_matches('.');
    (!target.is_empty() && fields.next().is_none()).then(|| (port, target.to_owned()))
}
