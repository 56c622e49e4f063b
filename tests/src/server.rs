//! The SecantusDB test-server fixture.
//!
//! [`TestServer::start`] runs `secantusd-py` (installed by `tests/setup.sh venv`) on a free
//! loopback port with in-memory storage and test commands enabled, and waits until it
//! accepts connections. [`shared`] gives the one default server of a test binary.
//!
//! A server never outlives the test process: the child reads its stdin, a pipe held by
//! the [`TestServer`], and exits when that pipe closes, which the kernel does however the
//! test process ends (a static never dropped, a panic, a kill). Dropping a [`TestServer`]
//! kills its child at once.
//!
//! The server runs in a session of its own and, where the system allows it (root or
//! `CAP_SYS_NICE`), in the real-time round-robin class at its lowest priority (Linux
//! `SCHED_RR` 1), else at nice -10. Timing tests (the CSOT spec tests above all) give
//! the server a few tens of milliseconds beyond a `blockTimeMS` to answer, which
//! mongod does in well under one; SecantusDB is Python, and on a loaded machine (a
//! build on both cores) it waited its turn for longer than that. A nice value is not
//! enough: where the kernel groups scheduling by session (autogroup), it only ranks
//! tasks within their session, and the server's session still shared the cores
//! evenly with every build's; a real-time task runs as soon as it wakes, ahead of
//! every ordinary one. The server spends its time waiting on sockets, so it takes
//! little CPU from the rest (and the kernel keeps 5% of each second for ordinary
//! tasks whatever real-time ones do). Its lifetime is unchanged: it still ends when
//! the stdin pipe closes.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::setup;

/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How many ports are tried when the server finds its port taken (another process may
/// take it between our probe and the server's bind).
const START_ATTEMPTS: usize = 3;

/// Runs SecantusDB's command line (`sys.argv[1:]`) after starting a thread that waits
/// for stdin to close, then removes the server's private folder and exits at once.
const LAUNCHER: &str = r#"
import os, shutil, sys, threading

def exit_when_stdin_closes():
    while os.read(0, 4096):
        pass
    shutil.rmtree(os.environ["ANYMONGO_SERVER_DIR"], ignore_errors=True)
    os._exit(0)

threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
# Not starved by a busy machine: the server's own session (so its own scheduling
# group where the kernel groups by session) and, where allowed, the real-time
# round-robin class (threads started from here on inherit it), else a higher priority.
try:
    os.setsid()
except OSError:
    pass
try:
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
except (AttributeError, OSError):
    pass
try:
    os.nice(-10)
except OSError:
    pass
from secantus.cli import main
sys.exit(main(sys.argv[1:]))
"#;

/// Creates users with pymongo:
/// `CREATE_USERS PORT (DATABASE NAME PASSWORD MECHANISMS)...`, where an empty password
/// means none.
const CREATE_USERS: &str = r#"
import sys, pymongo
client = pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/?directConnection=true")
args = sys.argv[2:]
for database, name, password, mechanisms in zip(*[iter(args)] * 4):
    extra = {"pwd": password} if password else {}
    client[database].command("createUser", name, roles=[{"role": "root", "db": "admin"}],
                             mechanisms=mechanisms.split(","), **extra)
"#;

/// The certificate files of a TLS server (see [`crate::certs`]).
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The server's certificate (PEM).
    pub cert: PathBuf,
    /// The server's private key (PEM).
    pub key: PathBuf,
    /// The CA (PEM) that the server trusts for client certificates, and that clients
    /// are told to trust by [`TestServer::uri`].
    pub ca: PathBuf,
    /// Refuse clients that present no certificate signed by `ca`.
    pub require_client_cert: bool,
}

/// A user to create (with the `root` role) before the server starts requiring
/// authentication.
#[derive(Clone, Debug)]
pub struct TestUser {
    /// The database the user is defined in: `admin`, or `$external` for X.509 users.
    pub database: String,
    /// The user name (for X.509, the client certificate's subject).
    pub name: String,
    /// The password, as given to `createUser` (the server applies SASLprep); `None`
    /// for `$external` users.
    pub password: Option<String>,
    /// The mechanisms the server keeps credentials for, e.g. `["SCRAM-SHA-1"]`.
    pub mechanisms: Vec<String>,
}

impl TestUser {
    /// An `admin` user with a password and credentials for `mechanisms`.
    pub fn scram(name: &str, password: &str, mechanisms: &[&str]) -> TestUser {
        TestUser {
            database: "admin".to_owned(),
            name: name.to_owned(),
            password: Some(password.to_owned()),
            mechanisms: mechanisms.iter().map(|m| (*m).to_owned()).collect(),
        }
    }

    /// A `$external` user for the client certificate whose subject is `subject`.
    pub fn x509(subject: &str) -> TestUser {
        TestUser {
            database: "$external".to_owned(),
            name: subject.to_owned(),
            password: None,
            // SecantusDB otherwise assumes SCRAM-SHA-256 and asks for a password.
            mechanisms: vec!["MONGODB-X509".to_owned()],
        }
    }
}

/// How to start a [`TestServer`]. The default is a single-node replica set `secantus`
/// without auth or TLS.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Require authentication (`--auth`).
    pub auth: bool,
    /// Users to create first. SecantusDB has no localhost exception, so they are
    /// created on a server without `--auth` that shares the storage folder of the real
    /// one, started next.
    pub users: Vec<TestUser>,
    /// Advertise a standalone server instead of a single-node replica set.
    pub standalone: bool,
    /// Serve TLS only, with these files.
    pub tls: Option<TlsFiles>,
    /// The WiredTiger cache (`--cache-size`, e.g. `"8G"`); SecantusDB's default is 1 GB.
    /// Even in memory the server keeps its data in WiredTiger, and a write that would
    /// overflow the cache fails (`WT_CACHE_FULL`, an `InternalError` to the client).
    pub cache_size: Option<String>,
    /// Keep the data on disk (in a temporary folder) and flush every commit before
    /// acknowledging it (`--sync-on-commit`), so that what the server acknowledged
    /// survives [`TestServer::kill`] and [`TestServer::restart`].
    pub durable: bool,
}

/// A running SecantusDB server, killed when dropped.
#[derive(Debug)]
pub struct TestServer {
    /// The loopback port it listens on.
    pub port: u16,
    /// The address it listens on: `127.0.0.1`.
    pub host: String,
    tls_ca: Option<PathBuf>,
    child: Child,
    log: PathBuf,
    /// Holds the log and the server's temporary files; removed after the child is gone.
    _dir: TempDir,
    /// The storage folder, when the server does not keep its data in memory.
    _data: Option<TempDir>,
    /// How it was started, for [`TestServer::restart`].
    relaunch: Relaunch,
}

#[derive(Debug, Clone)]
struct Relaunch {
    python: PathBuf,
    options: ServerOptions,
    storage: String,
}

/// The default server of this test binary, started on first use and stopped when the
/// process exits.
///
/// # Panics
/// If the server cannot be started.
pub fn shared() -> &'static TestServer {
    static SHARED: OnceLock<TestServer> = OnceLock::new();
    SHARED.get_or_init(|| {
        TestServer::start(&ServerOptions::default())
            .unwrap_or_else(|e| panic!("cannot start the shared test server: {e}"))
    })
}

impl TestServer {
    /// Starts a server and waits (60 s at most) until it accepts connections.
    ///
    /// Installs SecantusDB first (`tests/setup.sh venv`) if it is not in the cache.
    pub fn start(opts: &ServerOptions) -> Result<TestServer, String> {
        let venv = setup::cache_dir().join("venv");
        if !venv.join("bin/secantusd-py").exists() {
            setup::run("venv")?;
        }
        let python = venv.join("bin/python");
        let data = match (opts.users.is_empty(), opts.durable) {
            (false, _) => Some(Self::provision(&python, &opts.users)?),
            (true, true) => Some(storage_folder()?),
            (true, false) => None,
        };
        let storage = data.as_ref().map_or_else(
            || ":memory:".into(),
            |dir| dir.path().to_string_lossy().into_owned(),
        );
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            let mut server = Self::spawn(&python, free_port()?, opts, &storage)?;
            match server.wait_until_ready(started + START_TIMEOUT) {
                Ok(()) => {
                    static ANNOUNCE: Once = Once::new();
                    ANNOUNCE.call_once(|| {
                        eprintln!(
                            "anymongo-tests: SecantusDB started in {:.1?}",
                            started.elapsed()
                        )
                    });
                    server._data = data;
                    return Ok(server);
                }
                Err(why) if why.contains("Address already in use") && attempt < START_ATTEMPTS => {
                    attempt += 1;
                }
                Err(why) => return Err(why),
            }
        }
    }

    /// Kills the server (SIGKILL: no goodbye on open connections) and waits for it
    /// to exit. Its port stays reserved for [`TestServer::restart`].
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port (and storage) after
    /// [`TestServer::kill`], waiting (60 s at most) until it accepts connections.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let relaunch = self.relaunch.clone();
        let started = Instant::now();
        let mut fresh = Self::spawn(
            &relaunch.python,
            self.port,
            &relaunch.options,
            &relaunch.storage,
        )?;
        fresh.wait_until_ready(started + START_TIMEOUT)?;
        // The new process takes over; the old one's folder goes with `fresh`.
        std::mem::swap(&mut self.child, &mut fresh.child);
        std::mem::swap(&mut self.log, &mut fresh.log);
        std::mem::swap(&mut self._dir, &mut fresh._dir);
        Ok(())
    }

    /// The connection string of this server: `mongodb://127.0.0.1:PORT/`, with
    /// `?tls=true&tlsCAFile=...` for a TLS server.
    pub fn uri(&self) -> String {
        let mut uri = format!("mongodb://{}:{}/", self.host, self.port);
        if let Some(ca) = &self.tls_ca {
            write!(uri, "?tls=true&tlsCAFile={}", percent_encode(ca)).unwrap();
        }
        uri
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        const TAIL: u64 = 4000;
        let mut bytes = Vec::new();
        if let Ok(mut file) = File::open(&self.log) {
            let len = file.metadata().map_or(0, |meta| meta.len());
            let _ = file
                .seek(SeekFrom::Start(len.saturating_sub(TAIL)))
                .and_then(|_| file.read_to_end(&mut bytes));
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Creates `users` in a fresh storage folder, through a server without `--auth`
    /// (and pymongo, from the same venv: an oracle independent of the driver).
    fn provision(python: &Path, users: &[TestUser]) -> Result<TempDir, String> {
        let data = storage_folder()?;
        let storage = data.path().to_string_lossy().into_owned();
        let mut server = Self::spawn(python, free_port()?, &ServerOptions::default(), &storage)?;
        server.wait_until_ready(Instant::now() + START_TIMEOUT)?;
        // Users travel as arguments (database, name, password, comma-separated
        // mechanisms), so no quoting is needed whatever characters the password has.
        let mut command = Command::new(python);
        command.args(["-c", CREATE_USERS, &server.port.to_string()]);
        for user in users {
            let password = user.password.as_deref().unwrap_or_default();
            command.args([
                &user.database,
                &user.name,
                password,
                &user.mechanisms.join(","),
            ]);
        }
        let output = command
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !output.status.success() {
            return Err(format!(
                "creating test users failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        // Dropping the server kills it and waits, releasing the storage folder.
        drop(server);
        Ok(data)
    }

    fn spawn(
        python: &Path,
        port: u16,
        opts: &ServerOptions,
        storage: &str,
    ) -> Result<TestServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("anymongo-secantus-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
        let log = dir.path().join("server.log");
        let out =
            File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;

        let mut cmd = Command::new(python);
        cmd.args(["-c", LAUNCHER, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--storage-path", storage, "--enable-test-commands"]);
        if opts.auth {
            cmd.arg("--auth");
        }
        if opts.standalone {
            cmd.arg("--standalone");
        }
        if opts.durable {
            cmd.arg("--sync-on-commit");
        }
        if let Some(size) = &opts.cache_size {
            cmd.args(["--cache-size", size]);
        }
        if let Some(tls) = &opts.tls {
            cmd.arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                .arg("--tls-ca-file")
                .arg(&tls.ca);
            if tls.require_client_cert {
                cmd.arg("--tls-require-client-cert");
            }
        }
        // The working folder is private so that no stray ./secantusd.toml is picked up.
        let child = cmd
            .current_dir(dir.path())
            .env("ANYMONGO_SERVER_DIR", dir.path())
            .env("TMPDIR", dir.path())
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        Ok(TestServer {
            port,
            host: "127.0.0.1".to_owned(),
            tls_ca: opts.tls.as_ref().map(|tls| tls.ca.clone()),
            child,
            log,
            _dir: dir,
            _data: None,
            relaunch: Relaunch {
                python: python.to_owned(),
                options: opts.clone(),
                storage: storage.to_owned(),
            },
        })
    }

    fn wait_until_ready(&mut self, deadline: Instant) -> Result<(), String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "SecantusDB exited while starting on port {} ({status}); its log ends with:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            // Accepting on the port is not enough: another server may hold it (the
            // port was free a moment ago, and this one then fails to bind). Only this
            // server's own log says that it is the one listening.
            let listening = format!("listening on {}:{}", Ipv4Addr::LOCALHOST, self.port);
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains(&listening)
                && TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "SecantusDB did not accept connections on port {} within {START_TIMEOUT:?}; \
                     its log ends with:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh folder for a server's data, removed when dropped.
fn storage_folder() -> Result<TempDir, String> {
    tempfile::Builder::new()
        .prefix("anymongo-secantus-data-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary folder: {e}"))
}

/// A port that was free on 127.0.0.1 a moment ago.
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

/// Percent-encodes a path for a URI option value.
fn percent_encode(path: &Path) -> String {
    let mut out = String::new();
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            write!(out, "%{byte:02X}").unwrap();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_and_stops() {
        let server = TestServer::start(&ServerOptions::default()).unwrap();
        assert_eq!(
            server.uri(),
            format!("mongodb://127.0.0.1:{}/", server.port)
        );
        TcpStream::connect((server.host.as_str(), server.port)).unwrap();
        let proc_entry = PathBuf::from(format!("/proc/{}", server.child.id()));
        let dir = server._dir.path().to_owned();
        assert!(proc_entry.exists());
        drop(server);
        assert!(!proc_entry.exists(), "the server outlived its TestServer");
        assert!(!dir.exists(), "the server's folder outlived its TestServer");
    }

    #[test]
    fn percent_encodes_ca_paths() {
        let ca = Path::new("/tmp/a b/ca.pem");
        assert_eq!(percent_encode(ca), "/tmp/a%20b/ca.pem");
    }
}
