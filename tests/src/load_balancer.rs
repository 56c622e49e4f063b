//! A scripted mock load balancer for live tests of load-balanced mode (Load Balancer
//! spec): one listening address on 127.0.0.1 in front of two backends that report
//! different `serviceId`s, as an L4 balancer in front of two mongos would.
//!
//! Each accepted connection goes to a backend round-robin (backend 0, 1, 0, 1 …) and
//! stays with it. Every backend answers like a mongos: `hello` over OP_MSG (and the
//! legacy `isMaster` over OP_QUERY, recorded as such) with its own `serviceId` and its
//! own `connectionId` counter, `ping` and everything else with `{ok: 1}`, `insert` with
//! `{n, ok: 1}`. The test scripts what a backend does to its next commands — answer
//! with an error reply, close the connection, or hold the reply until released — and
//! reads what each backend received, on which connection.
//!
//! ```no_run
//! # async fn example() {
//! use anymongo::bson::doc;
//! use anymongo_tests::load_balancer::MockLoadBalancer;
//! let lb = MockLoadBalancer::start().await;
//! let uri = lb.uri(""); // mongodb://127.0.0.1:P/?loadBalanced=true
//! lb.fail_next(0, 1, doc! { "ok": 0, "code": 11600, "codeName": "InterruptedAtShutdown" });
//! lb.close_next(1, 1); // backend 1's next command: the connection is closed instead
//! lb.hold_next(0, 1); // backend 0's next command waits for `release(0)` or `close_held(0)`
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Document, RawDocumentBuf};
use anymongo::wire::{op_code, OpMsg, OpReply};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::mock::{query_document, read_frame};

/// The number of backends behind the balancer.
pub const BACKENDS: usize = 2;

/// `maxWireVersion` of the backends (MongoDB 7.0).
pub const MAX_WIRE_VERSION: i32 = 21;

/// One request a backend received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The backend (0 or 1).
    pub backend: usize,
    /// The connection it came on: the balancer-wide accept order, 1, 2, 3 … (a pool
    /// that opens its connections one at a time numbers them the same way).
    pub connection: usize,
    /// The backend's `connectionId` of that connection (its hello reply's).
    pub connection_id: i64,
    /// Whether it came as OP_MSG (otherwise OP_QUERY).
    pub op_msg: bool,
    /// The command document: an OP_MSG's body (with `$db`; document sequences are not
    /// merged in), or an OP_QUERY's query (unwrapped from `$query`).
    pub command: Document,
}

impl Received {
    /// The command's name (its first key).
    pub fn name(&self) -> &str {
        self.command.keys().next().map(String::as_str).unwrap_or("")
    }

    /// Whether it is a hello (`hello`, or legacy `isMaster`/`ismaster`).
    pub fn is_hello(&self) -> bool {
        is_hello(self.name())
    }
}

/// One connection the balancer accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The balancer-wide accept order, 1, 2, 3 …
    pub connection: usize,
    /// The backend it was assigned to.
    pub backend: usize,
    /// The backend's `connectionId` for it.
    pub connection_id: i64,
    /// Whether it is still open (neither side closed it).
    pub open: bool,
}

/// What a backend does with a request instead of answering it normally.
#[derive(Debug, Clone)]
enum Action {
    /// Answer with this document.
    Reply(Document),
    /// Close the connection without answering.
    Close,
    /// Wait until the backend is released, then answer normally.
    Hold,
}

/// A running mock load balancer; the listener, every connection and every task stop
/// when it is dropped.
///
/// Methods take `&self`; [`start`](Self::start) and [`wait_for`](Self::wait_for) must
/// run inside a tokio runtime.
pub struct MockLoadBalancer {
    shared: Arc<Shared>,
    address: String,
    acceptor: JoinHandle<()>,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every change a test may wait for.
    activity: watch::Sender<u64>,
}

struct State {
    /// The backend the next accepted connection goes to.
    next_backend: usize,
    /// Connections accepted so far.
    accepted: usize,
    service_id_reported: bool,
    backends: Vec<Backend>,
    received: Vec<Received>,
    connections: Vec<ConnectionRecord>,
    tasks: JoinSet<()>,
}

struct Backend {
    service_id: ObjectId,
    next_connection_id: i64,
    /// Scripted actions for the next non-hello commands.
    commands: VecDeque<Action>,
    /// Scripted actions for the next hellos.
    hellos: VecDeque<Action>,
    /// Bumped by `release` and `close_held`, with whether held requests are to be
    /// answered (`false`) or their connections closed (`true`): held requests that saw
    /// an older value go on.
    released: watch::Sender<(u64, bool)>,
    /// Requests being held now.
    held: usize,
}

impl MockLoadBalancer {
    /// Listens on a free port of 127.0.0.1, with two backends of distinct serviceIds.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address").to_string();
        let state = State {
            next_backend: 0,
            accepted: 0,
            service_id_reported: true,
            backends: (0..BACKENDS)
                .map(|_| Backend {
                    service_id: ObjectId::new(),
                    next_connection_id: 1,
                    commands: VecDeque::new(),
                    hellos: VecDeque::new(),
                    released: watch::channel((0, false)).0,
                    held: 0,
                })
                .collect(),
            received: Vec::new(),
            connections: Vec::new(),
            tasks: JoinSet::new(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            activity: watch::channel(0).0,
        });
        let acceptor = tokio::spawn(accept(shared.clone(), listener));
        MockLoadBalancer {
            shared,
            address,
            acceptor,
        }
    }

    /// `127.0.0.1:port`, the balancer's address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `mongodb://127.0.0.1:port/?loadBalanced=true`, then `&` and `options` if any.
    pub fn uri(&self, options: &str) -> String {
        let options = options.trim_start_matches(['&', '?']);
        let separator = if options.is_empty() { "" } else { "&" };
        format!(
            "mongodb://{}/?loadBalanced=true{separator}{options}",
            self.address
        )
    }

    /// Backend `backend`'s serviceId.
    pub fn service_id(&self, backend: usize) -> ObjectId {
        self.shared.lock().backends[backend].service_id
    }

    /// The backend whose serviceId is `service_id`, if any.
    pub fn backend_of(&self, service_id: ObjectId) -> Option<usize> {
        self.shared
            .lock()
            .backends
            .iter()
            .position(|backend| backend.service_id == service_id)
    }

    /// Whether hello replies carry `serviceId` (they do unless told otherwise): without
    /// it a driver in load-balanced mode must refuse the connection.
    pub fn set_service_id_reported(&self, reported: bool) {
        self.shared.lock().service_id_reported = reported;
    }

    /// Backend `backend` answers its next `times` non-hello commands with `reply`
    /// (an error document such as `{ok: 0, code: 11600, …}`).
    pub fn fail_next(&self, backend: usize, times: usize, reply: Document) {
        self.script(backend, false, times, Action::Reply(reply));
    }

    /// Backend `backend` closes the connection instead of answering its next `times`
    /// non-hello commands (a network error for the driver).
    pub fn close_next(&self, backend: usize, times: usize) {
        self.script(backend, false, times, Action::Close);
    }

    /// Backend `backend` holds its next `times` non-hello commands, answering each
    /// normally once [`release`](Self::release)d.
    pub fn hold_next(&self, backend: usize, times: usize) {
        self.script(backend, false, times, Action::Hold);
    }

    /// Backend `backend` answers its next `times` hellos with `reply`.
    pub fn fail_next_hello(&self, backend: usize, times: usize, reply: Document) {
        self.script(backend, true, times, Action::Reply(reply));
    }

    /// Backend `backend` closes the connection instead of answering its next `times`
    /// hellos (a network error during the handshake).
    pub fn close_next_hello(&self, backend: usize, times: usize) {
        self.script(backend, true, times, Action::Close);
    }

    /// Lets every request backend `backend` holds now go on: each is answered normally.
    pub fn release(&self, backend: usize) {
        self.let_go(backend, false);
    }

    /// Ends every request backend `backend` holds now by closing its connection
    /// without an answer (a network error for the driver, on each connection at once).
    pub fn close_held(&self, backend: usize) {
        self.let_go(backend, true);
    }

    /// The number of requests backend `backend` holds now.
    pub fn held(&self, backend: usize) -> usize {
        self.shared.lock().backends[backend].held
    }

    /// Every request received so far by either backend, hellos included, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    /// The hellos (handshakes) received so far by either backend, in order.
    pub fn hellos(&self) -> Vec<Received> {
        self.filtered(|received| received.is_hello())
    }

    /// The non-hello commands backend `backend` received so far, in order.
    pub fn commands(&self, backend: usize) -> Vec<Received> {
        self.filtered(|received| received.backend == backend && !received.is_hello())
    }

    /// Every connection accepted so far, in order.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.lock().connections.clone()
    }

    /// The number of connections to backend `backend` open now.
    pub fn open_connections(&self, backend: usize) -> usize {
        self.shared
            .lock()
            .connections
            .iter()
            .filter(|record| record.backend == backend && record.open)
            .count()
    }

    /// The number of connections backend `backend` accepted so far.
    pub fn accepted_connections(&self, backend: usize) -> usize {
        self.shared
            .lock()
            .connections
            .iter()
            .filter(|record| record.backend == backend)
            .count()
    }

    /// Waits until `condition` holds, re-checking it whenever the balancer's records
    /// change (no polling), for at most `timeout`. Returns whether it held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut condition: impl FnMut(&Self) -> bool,
    ) -> bool {
        crate::mock::wait_for_activity(&self.shared.activity, timeout, || condition(self)).await
    }

    fn let_go(&self, backend: usize, close: bool) {
        self.shared.lock().backends[backend]
            .released
            .send_modify(|(generation, closing)| {
                *generation += 1;
                *closing = close;
            });
    }

    fn filtered(&self, keep: impl Fn(&Received) -> bool) -> Vec<Received> {
        self.shared
            .lock()
            .received
            .iter()
            .filter(|received| keep(received))
            .cloned()
            .collect()
    }

    fn script(&self, backend: usize, hello: bool, times: usize, action: Action) {
        assert!(
            backend < BACKENDS,
            "backend {backend} out of range ({BACKENDS})"
        );
        let mut state = self.shared.lock();
        let backend = &mut state.backends[backend];
        let queue = match hello {
            true => &mut backend.hellos,
            false => &mut backend.commands,
        };
        queue.extend(std::iter::repeat_n(action, times));
    }
}

impl Drop for MockLoadBalancer {
    fn drop(&mut self) {
        self.acceptor.abort();
        // Dropping the JoinSet aborts the connection tasks; done outside the lock their
        // guards take.
        let tasks = std::mem::take(&mut self.shared.lock().tasks);
        drop(tasks);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn notify(&self) {
        self.activity.send_modify(|generation| *generation += 1);
    }
}

fn is_hello(name: &str) -> bool {
    matches!(name, "hello" | "isMaster" | "ismaster")
}

/// Marks its connection closed when the connection's task ends or is aborted.
struct OpenConnection {
    shared: Arc<Shared>,
    /// Index into `State::connections`.
    index: usize,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.shared.lock().connections[self.index].open = false;
        self.shared.notify();
    }
}

/// Accepts connections and hands them to the backends round-robin.
async fn accept(shared: Arc<Shared>, listener: TcpListener) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        let mut state = shared.lock();
        let backend = state.next_backend;
        state.next_backend = (backend + 1) % BACKENDS;
        state.accepted += 1;
        let connection = state.accepted;
        let connection_id = state.backends[backend].next_connection_id;
        state.backends[backend].next_connection_id += 1;
        let index = state.connections.len();
        state.connections.push(ConnectionRecord {
            connection,
            backend,
            connection_id,
            open: true,
        });
        while state.tasks.try_join_next().is_some() {}
        let guard = OpenConnection {
            shared: shared.clone(),
            index,
        };
        let peer = Peer {
            backend,
            connection,
            connection_id,
        };
        state
            .tasks
            .spawn(serve(shared.clone(), socket, peer, guard));
        drop(state);
        shared.notify();
    }
}

/// Who is at the other end of a connection, from the backend's side.
#[derive(Debug, Clone, Copy)]
struct Peer {
    backend: usize,
    connection: usize,
    connection_id: i64,
}

/// Serves one connection until the client closes it, sends something unreadable, or a
/// scripted action closes it.
async fn serve(shared: Arc<Shared>, mut socket: TcpStream, peer: Peer, _open: OpenConnection) {
    let mut next_request_id = 0i32;
    while let Some((header, body)) = read_frame(&mut socket).await {
        let (command, op_msg) = match header.op_code {
            op_code::QUERY => {
                let Some(mut query) = query_document(&body) else {
                    return;
                };
                if let Ok(inner) = query.get_document("$query") {
                    query = inner.clone();
                }
                (query, false)
            }
            op_code::MSG => {
                let Ok(message) = OpMsg::decode(&header, &body) else {
                    return;
                };
                let Ok(command) = Document::try_from(message.body.as_ref()) else {
                    return;
                };
                (command, true)
            }
            _ => return,
        };
        let (action, mut released) = {
            let mut state = shared.lock();
            let name = command.keys().next().map(String::as_str).unwrap_or("");
            let hello = is_hello(name);
            let backend = &mut state.backends[peer.backend];
            let action = match hello {
                true => backend.hellos.pop_front(),
                false => backend.commands.pop_front(),
            };
            let released = backend.released.subscribe();
            if matches!(action, Some(Action::Hold)) {
                backend.held += 1;
            }
            state.received.push(Received {
                backend: peer.backend,
                connection: peer.connection,
                connection_id: peer.connection_id,
                op_msg,
                command: command.clone(),
            });
            (action, released)
        };
        shared.notify();
        let reply = match action {
            Some(Action::Close) => return,
            Some(Action::Reply(reply)) => reply,
            Some(Action::Hold) => {
                // Held until the next `release` or `close_held` (or until the balancer
                // is dropped).
                let _ = released.changed().await;
                let close = released.borrow_and_update().1;
                shared.lock().backends[peer.backend].held -= 1;
                shared.notify();
                if close {
                    return;
                }
                answer(&shared, peer, &command, op_msg)
            }
            None => answer(&shared, peer, &command, op_msg),
        };
        let Ok(reply) = RawDocumentBuf::try_from(&reply) else {
            return;
        };
        next_request_id = next_request_id.wrapping_add(1);
        let frame = match op_msg {
            true => OpMsg::new(reply).encode(next_request_id, header.request_id),
            false => OpReply::command_reply(reply).encode(next_request_id, header.request_id),
        };
        if socket.write_all(&frame).await.is_err() {
            return;
        }
    }
}

/// A backend's normal answer to `command`.
fn answer(shared: &Shared, peer: Peer, command: &Document, op_msg: bool) -> Document {
    let name = command.keys().next().map(String::as_str).unwrap_or("");
    match name {
        "hello" | "isMaster" | "ismaster" => {
            let state = shared.lock();
            let writable_key = match op_msg && name == "hello" {
                true => "isWritablePrimary",
                false => "ismaster",
            };
            let mut reply = doc! {
                writable_key: true,
                "msg": "isdbgrid",
                "maxWireVersion": MAX_WIRE_VERSION,
                "minWireVersion": 0,
                "maxBsonObjectSize": 16 * 1024 * 1024,
                "maxMessageSizeBytes": 48_000_000,
                "maxWriteBatchSize": 100_000,
                "connectionId": peer.connection_id,
            };
            if command.get_bool("helloOk").unwrap_or(false) {
                reply.insert("helloOk", true);
            }
            if state.service_id_reported {
                reply.insert("serviceId", state.backends[peer.backend].service_id);
            }
            reply.insert("ok", 1.0);
            reply
        }
        "insert" => {
            let n = command
                .get_array("documents")
                .map_or(0, |documents| documents.len() as i64);
            doc! { "n": n, "ok": 1.0 }
        }
        _ => doc! { "ok": 1.0 },
    }
}
