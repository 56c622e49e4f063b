//! The seams over workers-rs (see the crate's documentation).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use anymongo::options::ClientOptions;
use anymongo::rt::{
    boxed, no_file_access, unsupported_lookup, BoxFuture, Clock, ConnectTarget, HostInfo, Instant,
    IpAddr, KeyDerivation, Pbkdf2, Pbkdf2Hash, Resolver, Runtime, SrvRecord, Stream, TlsOptions,
    Transport,
};
use anymongo::{srv, Client};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use worker::{
    ConnectionBuilder, Fetch, Headers, Request, RequestInit, SecureTransport, Socket, Url,
};

use crate::{srv_target, txt_strings};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// The runtime of a client in a Worker: sockets from `connect()`, SRV and TXT records
/// from the DNS-over-HTTPS endpoint `dns` (its JSON API, as
/// [`CLOUDFLARE_DNS`](crate::CLOUDFLARE_DNS) serves it), no spawner (single-threaded
/// monitoring), SCRAM's key derivation from WebCrypto.
pub fn runtime(dns: &str) -> Runtime {
    Runtime {
        transport: Arc::new(Sockets),
        resolver: Arc::new(DnsOverHttps {
            endpoint: dns.to_owned(),
        }),
        clock: Arc::new(WorkersClock),
        spawner: None,
        key_derivation: Some(Arc::new(WebCrypto)),
        host: HostInfo {
            runtime: "js",
            platform: "Cloudflare Workers (workers-rs)".into(),
            os_type: "unknown".into(),
            architecture: Some("wasm32".into()),
            docker: false,
            // Workers have no process environment, nor a file system.
            env: |_| None,
            read_file: no_file_access,
        },
    }
}

/// A client for the connection string `uri` on [`runtime`]`(dns)`: a `mongodb+srv://`
/// name is resolved first (Initial DNS Seedlist Discovery spec), and its SRV records are
/// polled later in single-threaded mode while the deployment is sharded. Nothing is
/// sent yet: the first operation connects.
pub async fn connect(uri: &str, dns: &str) -> anymongo::Result<Client> {
    let runtime = runtime(dns);
    let mut options = ClientOptions::parse_uri(uri)?;
    if options.srv {
        options = srv::resolve_seed_list(
            &options,
            runtime.resolver.as_ref(),
            runtime.clock.as_ref(),
            srv::lookup_timeout(&options),
        )
        .await?
        .into_options();
    }
    Client::with_runtime(options, runtime)
}

/// A workers-rs error as an I/O error.
fn io_error(error: worker::Error) -> io::Error {
    io::Error::other(error.to_string())
}

/// Opens [`Socket`]s.
struct Sockets;

impl Transport for Sockets {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            if target.is_unix_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{target}: a Worker has no unix domain sockets"),
                ));
            }
            let secure = match &target.tls {
                None => SecureTransport::Off,
                Some(tls) => {
                    refuse_custom_verification(tls, target)?;
                    SecureTransport::On
                }
            };
            let socket = ConnectionBuilder::new()
                .secure_transport(secure)
                .connect(target.host.as_str(), target.port)
                .map_err(io_error)?;
            // A refused or unreachable address rejects `opened`: waited for here so that
            // it is a connection error, not the first write's.
            socket.opened().await.map_err(io_error)?;
            Ok(Box::new(SocketStream(Some(socket))) as Box<dyn Stream>)
        })
    }
}

/// Workers' TLS verifies the server against the public roots and cannot be told
/// otherwise: the options that would change what is trusted are refused rather than
/// ignored (the URI Options spec's TLS options; a driver must not silently weaken or
/// replace verification).
fn refuse_custom_verification(tls: &TlsOptions, target: &ConnectTarget) -> io::Result<()> {
    let option = if tls.ca().is_some() {
        Some("tlsCAFile (or an in-memory CA)")
    } else if tls.cert_key().is_some() {
        Some("tlsCertificateKeyFile (or an in-memory client certificate)")
    } else if tls.allows_invalid_certificates() {
        Some("tlsAllowInvalidCertificates")
    } else if tls.allows_invalid_hostnames() {
        Some("tlsAllowInvalidHostnames")
    } else {
        None
    };
    match option {
        Some(option) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "TLS to {target}: {option} is not supported on Cloudflare Workers, whose TLS \
                 verifies servers against the public roots only"
            ),
        )),
        None => Ok(()),
    }
}

/// A [`Socket`] as the core's stream; closed when dropped.
struct SocketStream(Option<Socket>);

impl SocketStream {
    fn socket(&mut self) -> Pin<&mut Socket> {
        // `Some` until dropped.
        Pin::new(self.0.as_mut().expect("the socket is open"))
    }
}

impl Stream for SocketStream {
    /// A read abandoned by a timeout loses no bytes: the socket keeps its pending read
    /// and any bytes left over, for the next one.
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(poll_fn(move |cx| {
            let mut filled = ReadBuf::new(buf);
            match self.socket().poll_read(cx, &mut filled) {
                Poll::Ready(Ok(())) => Poll::Ready(Ok(filled.filled().len())),
                Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                Poll::Pending => Poll::Pending,
            }
        }))
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(async move {
            let mut written = 0;
            while written < buf.len() {
                let n = poll_fn(|cx| self.socket().poll_write(cx, &buf[written..])).await?;
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                written += n;
            }
            poll_fn(|cx| self.socket().poll_flush(cx)).await
        })
    }
}

impl Drop for SocketStream {
    fn drop(&mut self) {
        if let Some(mut socket) = self.0.take() {
            // Nothing to report to: the connection is being discarded.
            wasm_bindgen_futures::spawn_local(async move {
                let _ = socket.close().await;
            });
        }
    }
}

/// SRV and TXT look-ups over DNS over HTTPS: `GET endpoint?name=…&type=…` with
/// `accept: application/dns-json`.
struct DnsOverHttps {
    endpoint: String,
}

/// A DNS-over-HTTPS JSON reply: the DNS status, and the answers.
#[derive(Deserialize)]
struct Reply {
    #[serde(rename = "Status")]
    status: u32,
    #[serde(rename = "Answer", default)]
    answer: Vec<Answer>,
}

/// One answer of a [`Reply`]: its record type's number, TTL and data in presentation
/// form.
#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "type")]
    kind: u16,
    #[serde(rename = "TTL", default)]
    ttl: Option<u32>,
    data: String,
}

/// The reply status of "no such name" (RCODE 3): no records.
const NXDOMAIN: u32 = 3;

impl DnsOverHttps {
    /// The answers of type `kind` (`SRV`, number 33, or `TXT`, 16: RFC 2782, RFC 1035)
    /// for `name`.
    async fn answers(&self, name: &str, kind: &str, number: u16) -> io::Result<Vec<Answer>> {
        let mut url = Url::parse(&self.endpoint).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("DNS over HTTPS endpoint {}: {error}", self.endpoint),
            )
        })?;
        url.query_pairs_mut()
            .append_pair("name", name)
            .append_pair("type", kind);
        let headers = Headers::new();
        headers
            .set("accept", "application/dns-json")
            .map_err(io_error)?;
        let mut init = RequestInit::new();
        init.with_headers(headers);
        let request = Request::new_with_init(url.as_str(), &init).map_err(io_error)?;
        let mut response = Fetch::Request(request).send().await.map_err(io_error)?;
        let origin = url.origin().ascii_serialization();
        if response.status_code() != 200 {
            return Err(io::Error::other(format!(
                "DNS over HTTPS: {origin} answered HTTP {} to the {kind} query for {name}",
                response.status_code()
            )));
        }
        let reply: Reply = response.json().await.map_err(io_error)?;
        match reply.status {
            0 => Ok(reply
                .answer
                .into_iter()
                .filter(|answer| answer.kind == number)
                .collect()),
            NXDOMAIN => Ok(Vec::new()),
            status => Err(io::Error::other(format!(
                "DNS over HTTPS: {origin} answered DNS status {status} to the {kind} query for {name}"
            ))),
        }
    }
}

impl Resolver for DnsOverHttps {
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        boxed(async move {
            self.answers(name, "SRV", 33)
                .await?
                .into_iter()
                .map(|answer| {
                    let (port, target) = srv_target(&answer.data).ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "DNS over HTTPS: an SRV answer for {name} is not \
                                 \"priority weight port target\": {}",
                                answer.data
                            ),
                        )
                    })?;
                    Ok(SrvRecord {
                        target,
                        port,
                        ttl_secs: answer.ttl.unwrap_or(60),
                        // Workers' `connect()` takes names only: glue would go unused.
                        addresses: None,
                    })
                })
                .collect()
        })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        boxed(async move {
            Ok(self
                .answers(name, "TXT", 16)
                .await?
                .iter()
                .map(|answer| txt_strings(&answer.data).concat())
                .collect())
        })
    }

    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        // `connect()` takes names; the runtime resolves them.
        boxed(async move { Err(unsupported_lookup("A/AAAA", host)) })
    }
}

/// Time from `performance.now()` and `Date.now()`, timers from [`worker::Delay`].
struct WorkersClock;

/// setTimeout's longest delay (2^31 - 1 ms); longer sleeps are several timers.
const LONGEST_TIMER: Duration = Duration::from_millis(i32::MAX as u64);

impl Clock for WorkersClock {
    fn now(&self) -> Instant {
        Instant::from_origin(Duration::from_secs_f64(performance_now().max(0.0) / 1000.0))
    }

    fn unix_time(&self) -> Duration {
        Duration::from_secs_f64(js_sys::Date::now().max(0.0) / 1000.0)
    }

    /// The timer starts when the sleep is first polled, which the core does at once
    /// (`rt::timeout` polls its sleep with the work it bounds); a Worker's clock only
    /// moves across I/O anyway (Workers' Spectre mitigations).
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        boxed(async move {
            let mut left = duration;
            loop {
                let step = left.min(LONGEST_TIMER);
                worker::Delay::from(step).await;
                left -= step;
                if left.is_zero() {
                    break;
                }
            }
        })
    }
}

/// PBKDF2 through WebCrypto (`crypto.subtle.deriveBits`), native code in the Workers
/// runtime: SCRAM's salted password (RFC 5802, section 3) at a fraction of the CPU time
/// it takes in WebAssembly, which counts against a Worker's CPU limit. Where it fails
/// (Workers refuse more than 100,000 iterations) the core derives the key itself.
struct WebCrypto;

impl KeyDerivation for WebCrypto {
    fn pbkdf2<'a>(&'a self, request: Pbkdf2<'a>) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        boxed(async move {
            let failed = |error: JsValue| io::Error::other(format!("WebCrypto: {error:?}"));
            let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            let subtle = global.crypto().map_err(failed)?.subtle();
            let usages = js_sys::Array::of1(&JsValue::from_str("deriveBits"));
            let password = js_sys::Uint8Array::from(request.password);
            let imported = subtle
                .import_key_with_str("raw", &password, "PBKDF2", false, &usages)
                .map_err(failed)?;
            let key: web_sys::CryptoKey = JsFuture::from(imported)
                .await
                .map_err(failed)?
                .unchecked_into();
            let hash = match request.hash {
                Pbkdf2Hash::Sha1 => "SHA-1",
                Pbkdf2Hash::Sha256 => "SHA-256",
            };
            let salt = js_sys::Uint8Array::from(request.salt);
            let algorithm = web_sys::Pbkdf2Params::new(
                "PBKDF2",
                &JsValue::from_str(hash),
                request.iterations,
                &salt,
            );
            let bits = u32::try_from(request.length * 8)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too long a key"))?;
            let derived = subtle
                .derive_bits_with_object(&algorithm, &key, bits)
                .map_err(failed)?;
            let derived = JsFuture::from(derived).await.map_err(failed)?;
            Ok(js_sys::Uint8Array::new(&derived).to_vec())
        })
    }
}
