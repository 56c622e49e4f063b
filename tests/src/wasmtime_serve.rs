//! A wasi:http component of the workspace served by `wasmtime serve` on loopback, as
//! docs/guide/edge.md says to run the templates, or the Data API gateway's Worker served by
//! workerd; and plain HTTP/1.0 requests to either.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{harness, setup};

/// The bound on starting `wasmtime serve` (it compiles the component first) and on
/// each request.
pub const BOUND: Duration = Duration::from_secs(120);

/// `wasmtime serve` running a component, or workerd a Worker; killed when dropped.
pub struct Served {
    child: Child,
    /// Where it listens.
    pub address: SocketAddr,
    /// The Worker's modules and configuration, for workerd.
    _dir: Option<tempfile::TempDir>,
}

/// A reply: its status, headers (names in lower case) and body.
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

impl Served {
    /// Serves the binary `bin` of the workspace package `package` (built for
    /// wasm32-wasip2 first) on a free loopback port, with the environment `env` and,
    /// given `dir`, that folder at the same path; waits (within [`BOUND`]) until
    /// wasmtime says where it listens.
    pub fn start(package: &str, bin: &str, env: &[(&str, &str)], dir: Option<&Path>) -> Served {
        let component = setup::wasip2_binary(package, bin);
        // One start at a time: the first compiles the component into wasmtime's cache
        // (tens of seconds for a debug build), the others then load it from there
        // instead of each compiling it at once on the same cores.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut child = Command::new(setup::wasmtime())
            .args(["serve", "-S", "cli", "-S", "inherit-network=y"])
            .args(["--addr", "127.0.0.1:0"])
            .args(
                env.iter()
                    .flat_map(|(name, value)| ["--env".to_owned(), format!("{name}={value}")]),
            )
            .args(dir.map(|dir| format!("--dir={0}::{0}", dir.display())))
            .arg(component)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wasmtime runs");
        // wasmtime names the port it bound ("Serving HTTP on http://127.0.0.1:P/") on
        // stderr; the reader then keeps draining it so that wasmtime never blocks.
        let stderr = child.stderr.take().expect("piped");
        let (found, address) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("Serving HTTP on http://") {
                    if let Some(sender) = found.take() {
                        let _ = sender.send(rest.trim_end_matches('/').to_owned());
                    }
                }
                eprintln!("wasmtime serve: {line}");
            }
        });
        let mut served = Served {
            child,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            _dir: None,
        };
        let announced = address
            .recv_timeout(BOUND)
            .unwrap_or_else(|_| panic!("wasmtime serve did not start within {BOUND:?}"));
        served.address = announced
            .parse()
            .unwrap_or_else(|_| panic!("wasmtime serves on {announced:?}"));
        served
    }

    /// Serves the Data API gateway's Worker (`templates/data-api-gateway/worker`, built
    /// by its `build.sh --dev` once per process) under workerd (see [`Served::worker`]),
    /// with the text bindings `env` (its `MONGODB_URI`, `DATA_API_CONFIG`). The modules
    /// are laid out as wrangler bundles them: the Worker's `index.js`, its `pkg/`, and
    /// the npm package's Workers transport as `anymongo/transports/workers` (which
    /// imports `../doh.js`).
    pub fn gateway_worker(env: &[(&str, &str)]) -> Served {
        let root = setup::workspace_root();
        let worker = root.join("templates/data-api-gateway/worker");
        static BUILT: Mutex<bool> = Mutex::new(false);
        build_once(&BUILT, &worker.join("build.sh"));
        let modules = [
            ("worker.js", "esModule", worker.join("index.js")),
            (
                "pkg/data_api_gateway_worker.js",
                "esModule",
                worker.join("pkg/data_api_gateway_worker.js"),
            ),
            (
                "pkg/data_api_gateway_worker_bg.wasm",
                "wasm",
                worker.join("pkg/data_api_gateway_worker_bg.wasm"),
            ),
            (
                "anymongo/transports/workers",
                "esModule",
                root.join("wasm-demo/js/transports/workers.js"),
            ),
            (
                "anymongo/doh.js",
                "esModule",
                root.join("wasm-demo/js/doh.js"),
            ),
        ];
        Served::worker(&modules, env, ("GATEWAY", "Gateway"))
    }

    /// Serves the Rust Worker template (`templates/cloudflare-worker-rust`, built by its
    /// `build.sh --dev` once per process) under workerd (see [`Served::worker`]), with
    /// the text bindings `env` (its `MONGODB_URI`, `DNS_OVER_HTTPS`): its `index.js` and
    /// the `pkg/` of wasm-bindgen, whose inline JavaScript snippets are modules too.
    pub fn rust_worker(env: &[(&str, &str)]) -> Served {
        let template = setup::workspace_root().join("templates/cloudflare-worker-rust");
        static BUILT: Mutex<bool> = Mutex::new(false);
        build_once(&BUILT, &template.join("build.sh"));
        let mut modules = vec![("worker.js", "esModule", template.join("index.js"))];
        let mut names = Vec::new();
        let mut pending = vec![template.join("pkg")];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
                let path = entry.path();
                let kind = match path.extension().and_then(|extension| extension.to_str()) {
                    _ if path.is_dir() => {
                        pending.push(path);
                        continue;
                    }
                    Some("js") => "esModule",
                    Some("wasm") => "wasm",
                    _ => continue,
                };
                let name = path.strip_prefix(&template).unwrap();
                names.push((name.to_string_lossy().into_owned(), kind, path));
            }
        }
        modules.extend(
            names
                .iter()
                .map(|(name, kind, path)| (name.as_str(), *kind, path.clone())),
        );
        Served::worker(&modules, env, ("ITEMS", "Items"))
    }

    /// Serves a Worker under workerd on a free loopback port: its `modules` (name,
    /// workerd's kind, file; the first is the entry), the text bindings `env`, one
    /// Durable Object namespace (binding, class) in memory, and outbound connections to
    /// loopback only; waits (within [`BOUND`]) until workerd accepts connections.
    pub fn worker(
        modules: &[(&str, &str, std::path::PathBuf)],
        env: &[(&str, &str)],
        (binding, class): (&str, &str),
    ) -> Served {
        let dir = tempfile::Builder::new()
            .prefix("anymongo-worker-")
            .tempdir()
            .unwrap();
        let mut listed = Vec::new();
        for (index, (name, kind, file)) in modules.iter().enumerate() {
            let copied = format!("module{index}");
            std::fs::copy(file, dir.path().join(&copied))
                .unwrap_or_else(|error| panic!("copying {}: {error}", file.display()));
            listed.push(format!("(name = {name:?}, {kind} = embed {copied:?})"));
        }
        let bindings: Vec<String> = env
            .iter()
            .map(|(name, text)| format!("(name = {name:?}, text = {text:?})"))
            .chain([format!(
                "(name = {binding:?}, durableObjectNamespace = {class:?})"
            )])
            .collect();
        let config = format!(
            r#"using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "loopback", network = (allow = ["local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [{}],
  bindings = [{}],
  durableObjectNamespaces = [(className = {class:?}, uniqueKey = {class:?})],
  durableObjectStorage = (inMemory = void),
  compatibilityDate = "2025-01-01",
  globalOutbound = "loopback",
);
"#,
            listed.join(", "),
            bindings.join(", ")
        );
        std::fs::write(dir.path().join("config.capnp"), config).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = Command::new(setup::workerd())
            .args(["serve", "config.capnp", "--socket-addr"])
            .arg(format!("http={address}"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("workerd runs");
        let stderr = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("workerd: {line}");
            }
        });
        let served = Served {
            child,
            address,
            _dir: Some(dir),
        };
        // workerd listens once it has read its configuration: poll, bounded.
        let deadline = std::time::Instant::now() + BOUND;
        while std::net::TcpStream::connect(address).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "workerd did not listen on {address} within {BOUND:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        served
    }

    /// Sends one request (HTTP/1.0, so the reply is neither chunked nor kept alive)
    /// with `headers` and a `Content-Length`, within [`BOUND`].
    pub async fn exchange(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        harness::within(BOUND, async {
            let mut stream = tokio::net::TcpStream::connect(self.address).await.unwrap();
            let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {}\r\n", self.address);
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).await.unwrap();
            // A server may answer (a 413, say) and close before reading all of it.
            let _ = stream.write_all(body).await;
            let mut reply = Vec::new();
            stream.read_to_end(&mut reply).await.unwrap();
            let reply = String::from_utf8(reply).expect("a UTF-8 reply");
            let (head, body) = reply.split_once("\r\n\r\n").expect("a head and a body");
            let mut lines = head.lines();
            let status = lines
                .next()
                .and_then(|line| line.split(' ').nth(1))
                .and_then(|status| status.parse().ok())
                .unwrap_or_else(|| panic!("no status in {head:?}"));
            let headers = lines
                .filter_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
                })
                .collect();
            Reply {
                status,
                headers,
                body: body.to_owned(),
            }
        })
        .await
    }
}

/// Runs `script --dev` once per process (`built` remembers it); panics if it fails.
fn build_once(built: &Mutex<bool>, script: &Path) {
    let mut built = built.lock().unwrap_or_else(PoisonError::into_inner);
    if !*built {
        let status = Command::new("bash")
            .arg(script)
            .arg("--dev")
            .status()
            .expect("bash runs");
        assert!(status.success(), "{} failed", script.display());
        *built = true;
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A deployment far from a served component: SecantusDB with TLS and a SCRAM-SHA-256
/// user, behind the latency proxy (each direction delayed 25 ms, as in
/// `tests/cold_request.rs`: well above the client's own time between two flights on
/// a busy machine), for counting the round trips of a request (issue 24).
pub struct Distant {
    /// The connection string through the proxy: the user, TLS (its CA file in
    /// [`Distant::dir`]), the database given to [`Distant::start`].
    pub uri: String,
    /// The connection string straight to the server (the user, TLS), for seeding.
    pub direct_uri: String,
    /// The folder of the certificates, to give the component at the same path.
    pub dir: std::path::PathBuf,
    proxy: crate::latency::LatencyProxy,
    _server: crate::server::TestServer,
    _certs: tempfile::TempDir,
}

/// What [`Distant::measure`] counted.
pub struct Measured<T> {
    /// What the request gave.
    pub outcome: T,
    /// Its round trips (`latency::round_trips`).
    pub round_trips: usize,
    /// The connections the proxy accepted.
    pub connections: usize,
    /// The flights, for an assertion's message.
    pub log: String,
}

impl Distant {
    /// Starts the server and the proxy; the connection string names `database`.
    pub async fn start(database: &str) -> Distant {
        const USER: &str = "edge";
        const PASSWORD: &str = "edge-pw";
        let certs_dir = tempfile::tempdir().unwrap();
        let certs = crate::certs::generate(certs_dir.path()).unwrap();
        let server =
            crate::server::TestServer::start(&certs.scram_server_options(USER, PASSWORD)).unwrap();
        let credentials = format!("mongodb://{USER}:{PASSWORD}@");
        let direct_uri = server.uri().replacen("mongodb://", &credentials, 1);
        let proxy = crate::latency::LatencyProxy::start(
            &format!("{}:{}", server.host, server.port),
            Duration::from_millis(25),
        )
        .await
        .unwrap();
        let uri = format!(
            "{credentials}{}/{database}?authSource=admin&tls=true&tlsCAFile={}",
            proxy.address(),
            certs.ca_pem.display()
        );
        Distant {
            uri,
            direct_uri,
            dir: certs.dir.clone(),
            proxy,
            _server: server,
            _certs: certs_dir,
        }
    }

    /// Runs `request` and counts its round trips and connections through the proxy.
    pub async fn measure<T>(&self, request: impl std::future::Future<Output = T>) -> Measured<T> {
        let from = self.proxy.elapsed();
        let outcome = request.await;
        let to = self.proxy.elapsed();
        let connections = self.proxy.connections();
        let log = crate::latency::FlightLog {
            connections: &connections,
            from,
            to,
        };
        Measured {
            outcome,
            round_trips: crate::latency::round_trips(&connections, from, to),
            connections: connections.len(),
            log: log.to_string(),
        }
    }
}
