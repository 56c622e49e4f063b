//! A proxy in front of a real server that loses the replies of writes the server did
//! carry out: the case a retryable write exists for (Retryable Writes spec, "Retrying
//! a write": a network error says nothing about whether the write happened). A
//! `failCommand` fail point that closes the connection fires before the command
//! runs, so only a proxy can show the server deduplicating a retried write that did
//! happen.
//!
//! It listens on 127.0.0.1; each accepted connection gets a connection of its own to
//! the server, and every message is forwarded as it is both ways (streaming hellos
//! included: each direction is relayed by itself), except the reply to an `insert`
//! command that [`ReplyLosingProxy::lose_next_insert_reply`] armed: that reply is read
//! from the server, kept for the test, and the client's connection is closed instead
//! of relaying it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anymongo::bson::Document;
use anymongo::wire::MessageHeader;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::mock::{frame, op_msg, read_frame};

/// A running proxy; its listener and connections end when it is dropped.
pub struct ReplyLosingProxy {
    address: String,
    state: Arc<State>,
    acceptor: JoinHandle<()>,
}

/// What the connections share with the test.
#[derive(Default)]
struct State {
    /// How many `insert` replies are still to be lost.
    armed: AtomicUsize,
    /// The replies lost, as the server gave them, in order.
    lost: Mutex<Vec<Document>>,
}

impl ReplyLosingProxy {
    /// Listens on a free port of 127.0.0.1, in front of `server` (`host:port`). Must
    /// run inside a tokio runtime, which runs the proxy's tasks.
    pub async fn start(server: &str) -> std::io::Result<ReplyLosingProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let state = Arc::new(State::default());
        let acceptor = tokio::spawn(accept(listener, server.to_owned(), state.clone()));
        Ok(ReplyLosingProxy {
            address,
            state,
            acceptor,
        })
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Loses the reply to the next `insert` command to reach the proxy (on any
    /// connection): the server runs it, the client's connection is closed.
    pub fn lose_next_insert_reply(&self) {
        self.state.armed.fetch_add(1, Ordering::SeqCst);
    }

    /// How many armed losses no `insert` has taken yet.
    pub fn still_armed(&self) -> usize {
        self.state.armed.load(Ordering::SeqCst)
    }

    /// The replies lost so far, as the server gave them.
    pub fn lost_replies(&self) -> Vec<Document> {
        self.state
            .lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ReplyLosingProxy {
    fn drop(&mut self) {
        // Aborting the acceptor drops its JoinSet, which aborts every connection.
        self.acceptor.abort();
    }
}

async fn accept(listener: TcpListener, server: String, state: Arc<State>) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let server = server.clone();
        let state = state.clone();
        connections.spawn(async move {
            if let Ok(backend) = TcpStream::connect(&server).await {
                let _ = backend.set_nodelay(true);
                let _ = client.set_nodelay(true);
                relay(client, backend, state).await;
            }
        });
        // Forget the connections that ended.
        while connections.try_join_next().is_some() {}
    }
}

/// Relays one client connection until either side closes it, sends something
/// unreadable, or a reply is lost; both connections are then closed.
async fn relay(client: TcpStream, backend: TcpStream, state: Arc<State>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut backend_read, mut backend_write) = backend.into_split();
    // The request ids whose replies are to be lost. An id goes in before its request
    // is forwarded, so before its reply can come back.
    let doomed = Arc::new(Mutex::new(HashSet::new()));
    let upstream = {
        let doomed = doomed.clone();
        let state = state.clone();
        tokio::spawn(async move {
            while let Some((header, body)) = read_frame(&mut client_read).await {
                if command_name(&header, &body).as_deref() == Some("insert") && state.take_one() {
                    lock(&doomed).insert(header.request_id);
                }
                if backend_write
                    .write_all(&frame(&header, &body))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        })
    };
    while let Some((header, body)) = read_frame(&mut backend_read).await {
        if lock(&doomed).remove(&header.response_to) {
            if let Some(reply) = body_of(&header, &body) {
                lock(&state.lost).push(reply);
            }
            break;
        }
        if client_write
            .write_all(&frame(&header, &body))
            .await
            .is_err()
        {
            break;
        }
    }
    // Both halves of each connection gone closes it.
    upstream.abort();
    let _ = upstream.await;
}

impl State {
    /// Takes one armed loss, if any is left.
    fn take_one(&self) -> bool {
        self.armed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The body document of an OP_MSG frame.
fn body_of(header: &MessageHeader, body: &[u8]) -> Option<Document> {
    let message = op_msg(header, body)?;
    Document::try_from(message.body.as_ref()).ok()
}

/// The command an OP_MSG request runs: its body's first key.
fn command_name(header: &MessageHeader, body: &[u8]) -> Option<String> {
    body_of(header, body)?.keys().next().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::bson::{doc, RawDocumentBuf};
    use anymongo::wire::OpMsg;

    fn split(frame: &[u8]) -> (MessageHeader, Vec<u8>) {
        crate::mock::split_frame(frame).unwrap()
    }

    #[test]
    fn commands_are_named_by_their_first_key() {
        let insert =
            OpMsg::new(RawDocumentBuf::try_from(&doc! { "insert": "c", "$db": "d" }).unwrap())
                .encode(7, 0);
        let (header, body) = split(&insert);
        assert_eq!(command_name(&header, &body).as_deref(), Some("insert"));
        let (header, body) = split(&frame(&header, &body));
        assert_eq!(header.request_id, 7);
        assert_eq!(
            body_of(&header, &body),
            Some(doc! { "insert": "c", "$db": "d" })
        );
    }

    #[test]
    fn each_armed_loss_is_taken_once() {
        let state = State::default();
        assert!(!state.take_one());
        state.armed.fetch_add(2, Ordering::SeqCst);
        assert!(state.take_one());
        assert!(state.take_one());
        assert!(!state.take_one());
    }
}
