//! A SOCKS5 proxy on loopback for the proxy tests: `pproxy` (PyPI, installed into the
//! test venv by `tests/setup.sh venv`), with or without username/password
//! authentication, its verbose log recording every tunnel it opens.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::setup;

/// How long the proxy may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `pproxy` SOCKS5 server on 127.0.0.1, killed when dropped.
#[derive(Debug)]
pub struct Socks5Proxy {
    /// The loopback port it listens on.
    pub port: u16,
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Socks5Proxy {
    /// Starts a proxy that requires `credentials` (username, password) when given,
    /// and no authentication otherwise; waits until it listens. Installs pproxy first
    /// if it is not in the cache.
    pub fn start(credentials: Option<(&str, &str)>) -> Result<Socks5Proxy, String> {
        let pproxy = setup::cache_dir().join("venv/bin/pproxy");
        if !pproxy.exists() {
            setup::run("venv")?;
        }
        let dir = tempfile::Builder::new()
            .prefix("anymongo-socks5-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
        let log = dir.path().join("proxy.log");
        let out =
            File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .map_err(|e| format!("cannot find a free port: {e}"))?;
        let mut listen = format!("socks5://127.0.0.1:{port}");
        if let Some((username, password)) = credentials {
            listen = format!("{listen}#{username}:{password}");
        }
        // `--auth 0`: ask every connection for the credentials (pproxy otherwise lets
        // an address that authenticated once in without them for 30 days).
        let child = Command::new(&pproxy)
            .args(["-l", &listen, "--auth", "0", "-v"])
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", pproxy.display()))?;
        let mut proxy = Socks5Proxy {
            port,
            child,
            log,
            _dir: dir,
        };
        proxy.wait_until_ready()?;
        Ok(proxy)
    }

    /// The connection string options that route through this proxy.
    pub fn uri_options(&self) -> String {
        format!("proxyHost=127.0.0.1&proxyPort={}", self.port)
    }

    /// Everything the proxy logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many tunnels the proxy opened to `destination` (`host:port` as the client
    /// named it).
    pub fn tunnels_to(&self, destination: &str) -> usize {
        let arrow = format!("-> {destination}");
        self.log()
            .lines()
            .filter(|line| line.starts_with("socks5 ") && line.ends_with(&arrow))
            .count()
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let serving = format!("127.0.0.1:{} by socks5", self.port);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "pproxy exited while starting on port {} ({status}): {}",
                    self.port,
                    self.log()
                ));
            }
            // Only its own log says that this proxy is the one listening on the port.
            if self.log().contains(&serving)
                && TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "pproxy did not listen on port {} within {START_TIMEOUT:?}: {}",
                    self.port,
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Socks5Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
