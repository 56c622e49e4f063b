//! The core's seams over what a JavaScript host supplies: sockets from a transport
//! object written in JavaScript (one adapter per runtime, in `js/transports/`), time
//! from `performance.now()` and `setTimeout`, background tasks on the host's event
//! loop through `spawn_local`, SCRAM's key derivation from WebCrypto, and the
//! environment and token files authentication reads from the runtime's own APIs.
//!
//! The transport object (see `index.d.ts`, `Transport`):
//!
//! - `connect(host, port, tls)` → `Promise<Duplex>`, where `tls` is `null` or
//!   `{ servername, caFile?, caPem?, certificateKeyFile?, certificateKeyPem?,
//!   certificateKeyPassword?, allowInvalidCertificates, allowInvalidHostnames }`;
//! - a `Duplex` has `read()` → `Promise<Uint8Array | null>` (`null` at end of stream),
//!   `write(bytes)` → `Promise<void>`, and `close()`;
//! - optionally `secure(duplex, host, tls)` → `Promise<Duplex>`: TLS started on the
//!   socket of a duplex from `connect` (open to the server through a SOCKS5 proxy);
//! - optionally `resolveSrv(name)` → `Promise<{ name, port, ttl? }[]>` and
//!   `resolveTxt(name)` → `Promise<string[]>`, for `mongodb+srv://`.
//!
//! A rejection becomes an I/O error: its `code` (`ECONNREFUSED`, `ETIMEDOUT`…) picks the
//! kind, and an error whose `tls` property is true (certificate or handshake failures)
//! is reported as a TLS error. A file read's error is one too: `ENOENT` is not found,
//! `EACCES`, `EPERM` and Deno's `NotCapable` (no `--allow-read`) are permission denied.

use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anymongo::rt::{
    boxed, no_file_access, unsupported_lookup, BoxFuture, Clock, ConnectTarget, HostInfo, Instant,
    IpAddr, KeyDerivation, Pbkdf2, Pbkdf2Hash, PemSource, Resolver, Runtime, Spawner, SrvRecord,
    Stream, TlsError, Transport,
};
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, milliseconds: f64) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);

    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// The runtime of a client whose sockets come from `transport`; background tasks
/// run on the event loop when `background` (Node.js, Deno, Bun), otherwise the core
/// monitors in single-threaded mode (Workers, whose invocations end with the request).
pub fn runtime(transport: JsValue, background: bool, platform: String) -> Runtime {
    let transport = Rc::new(transport);
    Runtime {
        transport: Arc::new(JsTransport(transport.clone())),
        resolver: Arc::new(JsResolver(transport)),
        clock: Arc::new(JsClock),
        spawner: match background {
            true => Some(Arc::new(JsSpawner)),
            false => None,
        },
        key_derivation: Some(Arc::new(WebCrypto)),
        host: HostInfo {
            runtime: "js",
            platform,
            os_type: "unknown".into(),
            architecture: Some("wasm32".into()),
            docker: false,
            env: faas_env,
            read_file,
        },
    }
}

/// The variables the handshake reads for `client.env` (FaaS detection) and those
/// authentication reads (MONGODB-AWS credentials, the cloud endpoints: see
/// `anymongo::auth::cloud`) from the JavaScript runtime: `Deno.env.get` in Deno
/// (`None` without the permission to read it), `process.env` in Node.js and Bun,
/// nothing in Workers, which have no process environment. Any other name is `None`:
/// the rest of the environment stays unread.
fn faas_env(name: &str) -> Option<String> {
    if !anymongo::handshake::ENVIRONMENT_VARIABLES.contains(&name)
        && !anymongo::auth::cloud::ENVIRONMENT_VARIABLES.contains(&name)
    {
        return None;
    }
    let global = js_sys::global().into();
    // Deno first: it has a `process` too, whose reads need the same permission.
    let value = match property(&global, "Deno") {
        Some(deno) => invoke(&property(&deno, "env")?, "get", &[JsValue::from_str(name)]).ok()?,
        None => property(&property(&property(&global, "process")?, "env")?, name)?,
    };
    value.as_string()
}

/// Reads a token file ([`HostInfo::read_file`]) through the JavaScript runtime (issue
/// 45): `Deno.readTextFileSync` in Deno, `fs.readFileSync` in Node.js (from 20.16) and
/// Bun, from `process.getBuiltinModule`, as a module of `--target web` bindings cannot
/// `import` it. Workers without Node.js compatibility, and older Node.js releases,
/// have no file system to read from.
fn read_file(path: &str) -> io::Result<String> {
    let global = js_sys::global().into();
    let file = JsValue::from_str(path);
    let text = if let Some(deno) = property(&global, "Deno") {
        invoke(&deno, "readTextFileSync", &[file])?
    } else if let Some(fs) = property(&global, "process")
        .and_then(|process| invoke(&process, "getBuiltinModule", &["fs".into()]).ok())
        .filter(JsValue::is_object)
    {
        invoke(&fs, "readFileSync", &[file, "utf8".into()])?
    } else {
        return no_file_access(path);
    };
    text.as_string()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "the file read gave no text"))
}

/// `target[key]`, unless it is missing (`undefined` or `null`).
fn property(target: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
        .ok()
        .filter(|value| !value.is_undefined() && !value.is_null())
}

/// PBKDF2 through WebCrypto (`crypto.subtle.deriveBits`), native code in every
/// JavaScript runtime: SCRAM's key derivation takes about a tenth of the time it
/// takes in WebAssembly. Where it fails (no `crypto.subtle`, or Workers' limit of
/// 100,000 iterations) the core derives the key itself.
struct WebCrypto;

impl KeyDerivation for WebCrypto {
    fn pbkdf2<'a>(&'a self, request: Pbkdf2<'a>) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        boxed(async move {
            // Looked up at each call, not once, so that a test can observe the calls.
            let subtle = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))
                .and_then(|crypto| Reflect::get(&crypto, &JsValue::from_str("subtle")))
                .map_err(io_error)?;
            let usages: Array = [JsValue::from_str("deriveBits")].iter().collect();
            let import = [
                JsValue::from_str("raw"),
                Uint8Array::from(request.password).into(),
                JsValue::from_str("PBKDF2"),
                JsValue::FALSE,
                usages.into(),
            ];
            let key = call(&subtle, "importKey", &import).await?;
            let algorithm = Object::new();
            set(&algorithm, "name", "PBKDF2");
            let hash = match request.hash {
                Pbkdf2Hash::Sha1 => "SHA-1",
                Pbkdf2Hash::Sha256 => "SHA-256",
            };
            set(&algorithm, "hash", hash);
            set(&algorithm, "salt", Uint8Array::from(request.salt));
            set(&algorithm, "iterations", request.iterations);
            let bits = JsValue::from(request.length * 8);
            let derived = call(&subtle, "deriveBits", &[algorithm.into(), key, bits]).await?;
            Ok(Uint8Array::new(&derived).to_vec())
        })
    }
}

/// Calls `target[name](...args)`, which must return a promise (or a value), and waits.
async fn call(target: &JsValue, name: &str, args: &[JsValue]) -> io::Result<JsValue> {
    settled(invoke(target, name, args)?).await
}

/// What a call returned, once settled: the value of a promise, or the value itself.
async fn settled(returned: JsValue) -> io::Result<JsValue> {
    JsFuture::from(Promise::resolve(&returned))
        .await
        .map_err(io_error)
}

/// Calls `target[name](...args)` without waiting.
fn invoke(target: &JsValue, name: &str, args: &[JsValue]) -> io::Result<JsValue> {
    let args: Array = args.iter().collect();
    function(target, name)?
        .apply(target, &args)
        .map_err(io_error)
}

/// The method `name` of `target`.
pub(crate) fn function(target: &JsValue, name: &str) -> io::Result<Function> {
    Reflect::get(target, &JsValue::from_str(name))
        .ok()
        .and_then(|value| value.dyn_into().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the JavaScript host has no {name}() method"),
            )
        })
}

/// A JavaScript exception as an I/O error (see the module's documentation).
fn io_error(error: JsValue) -> io::Error {
    let text = |name: &str| {
        Reflect::get(&error, &JsValue::from_str(name))
            .ok()
            .and_then(|value| value.as_string())
    };
    let message = text("message")
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "the JavaScript transport failed".into());
    // Node.js errors have a `code`; Deno's permission refusal only a `name`.
    let kind = match text("code").or_else(|| text("name")).as_deref() {
        Some("ECONNREFUSED") => io::ErrorKind::ConnectionRefused,
        Some("ECONNRESET") => io::ErrorKind::ConnectionReset,
        Some("ETIMEDOUT") => io::ErrorKind::TimedOut,
        Some("EPIPE") => io::ErrorKind::BrokenPipe,
        Some("ENOTFOUND" | "EAI_AGAIN" | "ENOENT") => io::ErrorKind::NotFound,
        Some("EACCES" | "EPERM" | "NotCapable") => io::ErrorKind::PermissionDenied,
        Some("EADDRNOTAVAIL") => io::ErrorKind::AddrNotAvailable,
        _ => io::ErrorKind::Other,
    };
    let is_tls = Reflect::get(&error, &JsValue::from_str("tls"))
        .map(|value| value.is_truthy())
        .unwrap_or(false);
    match is_tls {
        true => io::Error::new(io::ErrorKind::InvalidData, TlsError(message)),
        false => io::Error::new(kind, message),
    }
}

fn set(object: &Object, name: &str, value: impl Into<JsValue>) {
    // Setting a property of a fresh plain object cannot fail.
    let _ = Reflect::set(object, &JsValue::from_str(name), &value.into());
}

/// The `tls` argument of `connect`.
fn tls_request(target: &ConnectTarget) -> JsValue {
    let Some(tls) = &target.tls else {
        return JsValue::NULL;
    };
    let request = Object::new();
    set(&request, "servername", target.host.as_str());
    let pem = |request: &Object, source: Option<PemSource>, file: &str, pem: &str| match source {
        Some(PemSource::File(path)) => set(request, file, path.to_string_lossy().as_ref()),
        Some(PemSource::Pem(text)) => set(request, pem, text),
        None => {}
    };
    pem(&request, tls.ca(), "caFile", "caPem");
    pem(
        &request,
        tls.cert_key(),
        "certificateKeyFile",
        "certificateKeyPem",
    );
    if let Some(password) = &tls.tls_certificate_key_file_password {
        set(
            &request,
            "certificateKeyPassword",
            String::from_utf8_lossy(password).as_ref(),
        );
    }
    set(
        &request,
        "allowInvalidCertificates",
        tls.allows_invalid_certificates(),
    );
    set(
        &request,
        "allowInvalidHostnames",
        tls.allows_invalid_hostnames(),
    );
    request.into()
}

/// Opens streams through the JavaScript transport's `connect`.
struct JsTransport(Rc<JsValue>);

impl Transport for JsTransport {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            if target.is_unix_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "{}: unix domain sockets are not supported from JavaScript",
                        target.host
                    ),
                ));
            }
            let args = [
                JsValue::from_str(&target.host),
                JsValue::from(target.port),
                tls_request(target),
            ];
            let duplex = call(&self.0, "connect", &args).await?;
            JsStream::open(duplex, "connect")
        })
    }

    /// TLS over a SOCKS5 tunnel: the duplex goes back to the transport's
    /// `secure(duplex, host, tls)`, which starts TLS on the socket underneath it.
    fn secure<'a>(
        &'a self,
        stream: Box<dyn Stream>,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            let mut stream = stream
                .into_any()
                .and_then(|any| any.downcast::<JsStream>().ok())
                .ok_or_else(|| {
                    io::Error::other("secure() got a stream this transport did not open")
                })?;
            if stream.reading.is_some() || stream.unread() > 0 {
                // The proxy's reply was read exactly: anything more came from the
                // server before the client's TLS hello, which TLS cannot take.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes arrived through the SOCKS5 tunnel before the TLS handshake",
                ));
            }
            // The duplex now belongs to `secure`; dropping `stream` must not close it.
            let duplex = std::mem::replace(&mut stream.duplex, JsValue::UNDEFINED);
            let args = [duplex, JsValue::from_str(&target.host), tls_request(target)];
            let secured = call(&self.0, "secure", &args).await?;
            JsStream::open(secured, "secure")
        })
    }
}

/// A stream over a JavaScript duplex; closed when dropped.
struct JsStream {
    duplex: JsValue,
    /// The duplex's `read` and `write`, looked up once: a look-up by name passes the
    /// name from wasm to JavaScript as text, and was a tenth of the npm package's own
    /// time per small operation (a CPU profile of the insertOne benchmark).
    read: Function,
    write: Function,
    /// The duplex's optional `isOpenAndIdle()`.
    is_open_and_idle: Option<Function>,
    /// A `read()` in flight. Kept here, not in the read future, so that a read
    /// abandoned by a timeout loses no bytes: the next read picks its chunk up.
    reading: Option<JsFuture>,
    /// The last chunk read, of which the bytes from `offset` on are not consumed yet.
    /// Kept in JavaScript's memory, and copied once, into the buffer of each read.
    chunk: Option<Uint8Array>,
    offset: u32,
}

impl JsStream {
    /// The stream over what the transport's `method` gave, which must be a duplex.
    fn open(duplex: JsValue, method: &str) -> io::Result<Box<dyn Stream>> {
        if !duplex.is_object() {
            return Err(io::Error::other(format!(
                "the JavaScript transport's {method}() gave no duplex object"
            )));
        }
        Ok(Box::new(JsStream {
            read: function(&duplex, "read")?,
            write: function(&duplex, "write")?,
            is_open_and_idle: function(&duplex, "isOpenAndIdle").ok(),
            duplex,
            reading: None,
            chunk: None,
            offset: 0,
        }))
    }

    /// The bytes of the last chunk not read yet.
    fn unread(&self) -> u32 {
        self.chunk
            .as_ref()
            .map_or(0, |chunk| chunk.length() - self.offset)
    }
}

impl Stream for JsStream {
    fn into_any(self: Box<Self>) -> Option<Box<dyn std::any::Any>> {
        Some(self)
    }

    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        boxed(async move {
            while self.unread() == 0 {
                let reading = match self.reading.as_mut() {
                    Some(reading) => reading,
                    None => {
                        let promise = self.read.call0(&self.duplex).map_err(io_error)?;
                        self.reading
                            .insert(JsFuture::from(Promise::resolve(&promise)))
                    }
                };
                let result = reading.await;
                self.reading = None;
                let value = result.map_err(io_error)?;
                if value.is_null() || value.is_undefined() {
                    return Ok(0);
                }
                let bytes: Uint8Array = value.dyn_into().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the JavaScript duplex's read() gave no Uint8Array",
                    )
                })?;
                self.chunk = Some(bytes);
                self.offset = 0;
            }
            let Some(chunk) = &self.chunk else {
                return Ok(0);
            };
            // wasm32: a buffer's length fits a u32.
            let n = u32::try_from(buf.len())
                .unwrap_or(u32::MAX)
                .min(self.unread());
            let into = &mut buf[..n as usize];
            match self.offset == 0 && n == chunk.length() {
                true => chunk.copy_to(into),
                false => chunk.subarray(self.offset, self.offset + n).copy_to(into),
            }
            self.offset += n;
            Ok(n as usize)
        })
    }

    /// Bytes read and not consumed are bytes no request asked for; otherwise the duplex
    /// tells, when it has `isOpenAndIdle()` (the Node.js transport's does), and a duplex
    /// without one cannot tell.
    fn is_open_and_idle(&self) -> bool {
        if self.unread() > 0 {
            return false;
        }
        self.is_open_and_idle.as_ref().is_none_or(|method| {
            method
                .call0(&self.duplex)
                .is_ok_and(|open| open.as_bool() != Some(false))
        })
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        boxed(async move {
            let bytes = Uint8Array::from(buf);
            settled(self.write.call1(&self.duplex, &bytes).map_err(io_error)?).await?;
            Ok(())
        })
    }
}

impl Drop for JsStream {
    fn drop(&mut self) {
        // Nothing to report to: the connection is being discarded. A duplex handed
        // over to `secure` is undefined here and stays open.
        if self.duplex.is_object() {
            let _ = invoke(&self.duplex, "close", &[]);
        }
    }
}

/// SRV and TXT look-ups through the transport's optional `resolveSrv`/`resolveTxt`.
struct JsResolver(Rc<JsValue>);

impl Resolver for JsResolver {
    fn srv<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<SrvRecord>>> {
        boxed(async move {
            let records = self.lookup("resolveSrv", "SRV", name).await?;
            records
                .iter()
                .map(|record| {
                    let field = |key: &str| Reflect::get(&record, &JsValue::from_str(key)).ok();
                    let target = field("name").and_then(|value| value.as_string());
                    let port = field("port").and_then(|value| value.as_f64());
                    let ttl = field("ttl").and_then(|value| value.as_f64());
                    match (target, port) {
                        (Some(target), Some(port)) if (0.0..=65535.0).contains(&port) => {
                            Ok(SrvRecord {
                                target: target.trim_end_matches('.').to_owned(),
                                port: port as u16,
                                ttl_secs: ttl.unwrap_or(60.0) as u32,
                                addresses: None,
                            })
                        }
                        _ => Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("resolveSrv({name}) gave a record without name and port"),
                        )),
                    }
                })
                .collect()
        })
    }

    fn txt<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<String>>> {
        boxed(async move {
            let records = self.lookup("resolveTxt", "TXT", name).await?;
            Ok(records.iter().filter_map(|text| text.as_string()).collect())
        })
    }

    fn ip<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        // JavaScript transports connect to names; the host resolves them.
        boxed(async move { Err(unsupported_lookup("A/AAAA", host)) })
    }
}

impl JsResolver {
    async fn lookup(&self, method: &str, kind: &str, name: &str) -> io::Result<Array> {
        let has_method = Reflect::get(&self.0, &JsValue::from_str(method))
            .map(|value| value.is_function())
            .unwrap_or(false);
        if !has_method {
            return Err(unsupported_lookup(kind, name));
        }
        let records = call(&self.0, method, &[JsValue::from_str(name)]).await?;
        records.dyn_into().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{method}({name}) gave no array"),
            )
        })
    }
}

/// Time from `performance.now()` and `Date.now()`, timers from `setTimeout`.
struct JsClock;

/// setTimeout's longest delay (2^31 - 1 ms); longer ones fire at once.
const LONGEST_TIMER: Duration = Duration::from_millis(i32::MAX as u64);

impl Clock for JsClock {
    fn now(&self) -> Instant {
        Instant::from_origin(Duration::from_secs_f64(performance_now().max(0.0) / 1000.0))
    }

    fn unix_time(&self) -> Duration {
        Duration::from_secs_f64(js_sys::Date::now().max(0.0) / 1000.0)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        // The first timer starts now, as a sleep's time runs from its creation.
        let first = Timer::start(duration.min(LONGEST_TIMER));
        let mut left = duration.saturating_sub(LONGEST_TIMER);
        boxed(async move {
            first.await;
            while !left.is_zero() {
                let step = left.min(LONGEST_TIMER);
                Timer::start(step).await;
                left -= step;
            }
        })
    }
}

/// One `setTimeout`; cleared when dropped first, so that an abandoned sleep keeps no
/// timer (and no Node.js process) alive.
struct Timer {
    fired: JsFuture,
    id: JsValue,
}

impl Timer {
    fn start(duration: Duration) -> Timer {
        let mut id = JsValue::UNDEFINED;
        let promise = Promise::new(&mut |resolve, _| {
            id = set_timeout(&resolve, duration.as_secs_f64() * 1000.0);
        });
        Timer {
            fired: JsFuture::from(promise),
            id,
        }
    }
}

impl std::future::Future for Timer {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.fired).poll(cx).map(|_| ())
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // Clearing a timer that already fired does nothing.
        clear_timeout(&self.id);
    }
}

/// Background tasks on the host's event loop.
struct JsSpawner;

impl Spawner for JsSpawner {
    fn spawn(&self, task: BoxFuture<'static, ()>) {
        wasm_bindgen_futures::spawn_local(task);
    }
}
