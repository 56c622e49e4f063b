//! A server that accepts TCP connections on 127.0.0.1, reads whatever comes and never
//! writes a byte: the server of the Client Side Operations Timeout tests, where only
//! `timeoutMS` can end an operation.
//!
//! It runs on a thread of its own (with a one-thread tokio runtime), so that it serves
//! whatever the test does meanwhile: await on any runtime, or block on a child process
//! (wasmtime, Node). It keeps counts of the connections it accepted and of those still
//! open, which tests can wait on: the connections a dropped client leaves open are
//! resources it leaked. Dropping it stops the thread and closes every connection.

use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// A running silent server; its thread ends and its connections close when dropped.
pub struct SilentServer {
    address: String,
    counts: watch::Sender<Connections>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What the server saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// Connections accepted so far.
    pub accepted: usize,
    /// Connections the client has not closed yet.
    pub open: usize,
    /// Bytes read, over every connection.
    pub bytes_read: usize,
}

impl SilentServer {
    /// Listens on a free port of 127.0.0.1. Needs no runtime of the caller's.
    pub fn start() -> std::io::Result<SilentServer> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?.to_string();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let counts = watch::Sender::new(Connections::default());
        let (stop, stopped) = oneshot::channel();
        let thread = {
            let counts = counts.clone();
            std::thread::Builder::new()
                .name("silent-server".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        let Ok(listener) = TcpListener::from_std(listener) else {
                            return;
                        };
                        tokio::select! {
                            _ = stopped => {}
                            _ = accept(listener, counts) => {}
                        }
                    });
                    // Dropping the runtime drops every connection's task: the sockets
                    // close.
                    drop(runtime);
                })?
        };
        Ok(SilentServer {
            address,
            counts,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The counts now.
    pub fn connections(&self) -> Connections {
        *self.counts.borrow()
    }

    /// Waits until `condition` holds of the counts, for at most `bound` (woken by each
    /// change, no polling); returns the counts then, and whether it held. Needs a
    /// tokio runtime with time enabled.
    pub async fn wait_for(
        &self,
        bound: Duration,
        condition: impl FnMut(&Connections) -> bool,
    ) -> (Connections, bool) {
        let mut changes = self.counts.subscribe();
        let held = matches!(
            tokio::time::timeout(bound, changes.wait_for(condition)).await,
            Ok(Ok(_))
        );
        (self.connections(), held)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: TcpListener, counts: watch::Sender<Connections>) {
    while let Ok((socket, _)) = listener.accept().await {
        counts.send_modify(|state| {
            state.accepted += 1;
            state.open += 1;
        });
        tokio::spawn(read_until_closed(socket, counts.clone()));
    }
}

/// Reads and drops what the client sends until it closes the connection.
async fn read_until_closed(mut socket: TcpStream, counts: watch::Sender<Connections>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read @ 1..) = socket.read(&mut buffer).await {
        counts.send_modify(|state| state.bytes_read += read);
    }
    counts.send_modify(|state| state.open -= 1);
}
