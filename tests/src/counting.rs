//! A transport that counts, for each connection the driver opens through it, the
//! messages sent (each a round trip) and whether the driver still holds the socket.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anymongo::rt::{boxed, BoxFuture, ConnectTarget, Runtime, Stream, Transport};

/// What happened on one connection.
#[derive(Debug, Default)]
pub struct ConnectionCounts {
    /// Messages the driver wrote.
    pub sent: AtomicUsize,
    /// Whether the driver still holds the socket (it closes it by dropping it).
    pub open: AtomicBool,
}

/// Every connection opened through a [`counting`] runtime, in order.
#[derive(Debug, Default)]
pub struct Connections(Mutex<Vec<Arc<ConnectionCounts>>>);

impl Connections {
    /// The messages sent on each connection, in the order they were opened.
    pub fn sent(&self) -> Vec<usize> {
        self.all()
            .iter()
            .map(|counts| counts.sent.load(Ordering::SeqCst))
            .collect()
    }

    /// How many connections the driver still holds open.
    pub fn open(&self) -> usize {
        self.all()
            .iter()
            .filter(|counts| counts.open.load(Ordering::SeqCst))
            .count()
    }

    /// How many connections were opened in all.
    pub fn opened(&self) -> usize {
        self.all().len()
    }

    fn all(&self) -> Vec<Arc<ConnectionCounts>> {
        self.0.lock().unwrap().clone()
    }
}

/// `runtime` with its transport wrapped so that every connection is counted.
pub fn counting(mut runtime: Runtime) -> (Runtime, Arc<Connections>) {
    let connections = Arc::new(Connections::default());
    runtime.transport = Arc::new(Counting {
        inner: runtime.transport.clone(),
        connections: connections.clone(),
    });
    (runtime, connections)
}

struct Counting {
    inner: Arc<dyn Transport>,
    connections: Arc<Connections>,
}

struct CountingStream {
    inner: Box<dyn Stream>,
    counts: Arc<ConnectionCounts>,
}

impl Transport for Counting {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            let inner = self.inner.connect(target).await?;
            let counts = Arc::new(ConnectionCounts::default());
            counts.open.store(true, Ordering::SeqCst);
            self.connections.0.lock().unwrap().push(counts.clone());
            let stream: Box<dyn Stream> = Box::new(CountingStream { inner, counts });
            Ok(stream)
        })
    }
}

impl Stream for CountingStream {
    fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
        self.inner.read(buf)
    }

    fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        self.counts.sent.fetch_add(1, Ordering::SeqCst);
        self.inner.write_all(buf)
    }

    fn is_open_and_idle(&self) -> bool {
        self.inner.is_open_and_idle()
    }
}

impl Drop for CountingStream {
    fn drop(&mut self) {
        self.counts.open.store(false, Ordering::SeqCst);
    }
}
