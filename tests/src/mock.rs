//! A scripted mock server, for what SecantusDB cannot play: it speaks OP_QUERY (the
//! legacy hello) and OP_MSG, records every command it receives, and answers each one
//! from a script — a function from the command to the reply document.

use std::sync::{Arc, Mutex, PoisonError};

use anymongo::bson::{doc, Document, RawDocumentBuf};
use anymongo::wire::{op_code, Message, MessageHeader, OpMsg, OpReply, HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

/// How a hostile or broken mock server answers one command.
pub enum Answer {
    /// This reply document.
    Reply(Document),
    /// These bytes, as they are, except that a 16-byte header's `responseTo` is set to
    /// the request's id: a frame the codec would never encode.
    Raw(Vec<u8>),
    /// Nothing, ever: the connection stays open and is read no more.
    Silence,
    /// This reply document, after which the server closes the connection, as a server
    /// (or a middlebox) does with connections that sat idle too long.
    ReplyAndClose(Document),
}

/// Answers one command of a connection: gets the command document (for OP_MSG, its
/// body with `$db`; for OP_QUERY, the query) and how many commands the connection
/// carried before it (0 for its handshake).
pub type AnswerScript = Arc<dyn Fn(&Document, usize) -> Answer + Send + Sync>;

/// A running mock server; stops accepting when dropped.
pub struct MockServer {
    address: String,
    received: Arc<Mutex<Vec<Document>>>,
    /// How many connections the server closed ([`Answer::ReplyAndClose`]).
    closed: watch::Receiver<usize>,
    acceptor: tokio::task::JoinHandle<()>,
}

/// The hello reply of a writable standalone server with wire version 21.
pub fn standalone_hello() -> Document {
    doc! {
        "isWritablePrimary": true, "helloOk": true, "maxWireVersion": 21, "minWireVersion": 0,
        "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000, "connectionId": 1, "ok": 1.0,
    }
}

/// The hello reply of a mongos (`msg: "isdbgrid"`) with wire version 21, without a
/// `topologyVersion`: the driver polls it rather than stream.
pub fn mongos_hello() -> Document {
    let mut reply = standalone_hello();
    reply.insert("msg", "isdbgrid");
    reply
}

/// Whether `command` is a hello (`hello`, or legacy `isMaster`).
pub fn is_hello(command: &Document) -> bool {
    matches!(
        command.keys().next().map(String::as_str),
        Some("hello" | "isMaster" | "ismaster")
    )
}

/// A listening socket the mock server accepts connections from.
trait Listener: Send + 'static {
    /// An accepted connection.
    type Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Waits for the next connection.
    fn next(&self) -> impl std::future::Future<Output = std::io::Result<Self::Socket>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Socket = tokio::net::TcpStream;
    async fn next(&self) -> std::io::Result<Self::Socket> {
        Ok(self.accept().await?.0)
    }
}

#[cfg(unix)]
impl Listener for tokio::net::UnixListener {
    type Socket = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<Self::Socket> {
        Ok(self.accept().await?.0)
    }
}

impl MockServer {
    /// Listens on a free port of 127.0.0.1.
    pub async fn start(script: impl Fn(&Document) -> Document + Send + Sync + 'static) -> Self {
        Self::answering(move |command, _| Answer::Reply(script(command))).await
    }

    /// Listens on a free port of 127.0.0.1 and answers as `answer` says: for servers
    /// that go silent or send what a server never would.
    pub async fn answering(
        answer: impl Fn(&Document, usize) -> Answer + Send + Sync + 'static,
    ) -> Self {
        Self::answering_at("127.0.0.1:0", answer).await
    }

    /// [`answering`](Self::answering), listening on `address` (`[::1]:0` for IPv6).
    /// [`address`](Self::address) then gives the IPv6 form a URI takes (`[::1]:port`).
    pub async fn answering_at(
        address: &str,
        answer: impl Fn(&Document, usize) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        Self::serve_all(listener, address, Arc::new(answer))
    }

    /// Listens on a unix domain socket at `path`.
    #[cfg(unix)]
    pub async fn start_unix(
        path: &std::path::Path,
        script: impl Fn(&Document) -> Document + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::UnixListener::bind(path).unwrap();
        let address = path.to_string_lossy().into_owned();
        let answer = move |command: &Document, _| Answer::Reply(script(command));
        Self::serve_all(listener, address, Arc::new(answer))
    }

    /// Serves every connection `listener` accepts, each on a task of its own.
    fn serve_all(listener: impl Listener, address: String, script: AnswerScript) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let (closer, closed) = watch::channel(0);
        let closer = Arc::new(closer);
        let acceptor = tokio::spawn(async move {
            while let Ok(socket) = listener.next().await {
                tokio::spawn(serve(socket, script.clone(), log.clone(), closer.clone()));
            }
        });
        MockServer {
            address,
            received,
            closed,
            acceptor,
        }
    }

    /// `host:port` (or the socket path) it listens on.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The name (first key) of every command received so far, in order.
    pub fn command_names(&self) -> Vec<String> {
        self.received()
            .iter()
            .filter_map(|command| command.keys().next().cloned())
            .collect()
    }

    /// Waits until the server has closed `count` connections after replying
    /// ([`Answer::ReplyAndClose`]); unbounded, so callers bound it.
    pub async fn closed_connections(&self, count: usize) {
        let mut closed = self.closed.clone();
        // The sender lives in the acceptor task, which only a drop of `self` ends.
        let _ = closed.wait_for(|closed| *closed >= count).await;
    }

    /// Every command received so far, in order.
    pub fn received(&self) -> Vec<Document> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// Serves one connection until the client closes it or sends something unreadable
/// (or, when the script falls silent, until the runtime ends).
async fn serve(
    mut socket: impl AsyncRead + AsyncWrite + Unpin,
    script: AnswerScript,
    log: Arc<Mutex<Vec<Document>>>,
    closed: Arc<watch::Sender<usize>>,
) {
    for carried in 0.. {
        let Some((header, body)) = read_frame(&mut socket).await else {
            return;
        };
        let (command, legacy) = match header.op_code {
            op_code::QUERY => match query_document(&body) {
                Some(query) => (query, true),
                None => return,
            },
            _ => match Message::decode(&header, &body) {
                Ok(Message::Msg(message)) => match Document::try_from(message.body.as_ref()) {
                    Ok(command) => (command, false),
                    Err(_) => return,
                },
                _ => return,
            },
        };
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(command.clone());
        let answer = script(&command, carried);
        let close = matches!(answer, Answer::ReplyAndClose(_));
        let frame = match (answer, legacy) {
            (Answer::Reply(reply) | Answer::ReplyAndClose(reply), true) => {
                OpReply::command_reply(RawDocumentBuf::try_from(&reply).unwrap())
                    .encode(1, header.request_id)
            }
            (Answer::Reply(reply) | Answer::ReplyAndClose(reply), false) => {
                OpMsg::new(RawDocumentBuf::try_from(&reply).unwrap()).encode(1, header.request_id)
            }
            (Answer::Raw(mut bytes), _) => {
                if let Some(response_to) = bytes.get_mut(8..12) {
                    response_to.copy_from_slice(&header.request_id.to_le_bytes());
                }
                bytes
            }
            // Holds the connection open, unread, until the runtime drops the task.
            (Answer::Silence, _) => return std::future::pending().await,
        };
        if socket.write_all(&frame).await.is_err() {
            return;
        }
        if close {
            drop(socket);
            closed.send_modify(|closed| *closed += 1);
            return;
        }
    }
}

/// Reads one whole frame (header and body) of at most 48 MB; `None` when the peer closed
/// the connection, or sent something unreadable or too large.
pub async fn read_frame(socket: &mut (impl AsyncRead + Unpin)) -> Option<(MessageHeader, Vec<u8>)> {
    let mut header = [0u8; HEADER_LEN];
    socket.read_exact(&mut header).await.ok()?;
    let header = MessageHeader::parse(&header);
    let body_len = header.body_len(48_000_000).ok()?;
    let mut body = vec![0u8; body_len];
    socket.read_exact(&mut body).await.ok()?;
    Some((header, body))
}

/// A frame again from the header and body [`read_frame`] gave.
pub fn frame(header: &MessageHeader, body: &[u8]) -> Vec<u8> {
    let mut frame = header.to_bytes().to_vec();
    frame.extend_from_slice(body);
    frame
}

/// A whole frame as [`read_frame`] gives it: its header and its body.
pub fn split_frame(frame: &[u8]) -> Option<(MessageHeader, Vec<u8>)> {
    let header: [u8; HEADER_LEN] = frame.get(..HEADER_LEN)?.try_into().ok()?;
    Some((MessageHeader::parse(&header), frame[HEADER_LEN..].to_vec()))
}

/// The OP_MSG a frame read by [`read_frame`] carries, if it is a readable one.
pub fn op_msg(header: &MessageHeader, body: &[u8]) -> Option<OpMsg> {
    (header.op_code == op_code::MSG)
        .then(|| OpMsg::decode(header, body).ok())
        .flatten()
}

/// The query of an OP_QUERY body: flags, a cstring, two int32s, the document.
pub fn query_document(body: &[u8]) -> Option<Document> {
    let name_end = 4 + body.get(4..)?.iter().position(|&b| b == 0)?;
    let document = body.get(name_end + 1 + 8..)?;
    Document::from_reader(document).ok()
}

/// Waits until `condition` holds, checking it again whenever `activity` (a mock's
/// change counter) moves — no polling — for at most `timeout`. Returns whether it held.
pub async fn wait_for_activity(
    activity: &tokio::sync::watch::Sender<u64>,
    timeout: std::time::Duration,
    mut condition: impl FnMut() -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut changes = activity.subscribe();
    loop {
        if condition() {
            return true;
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(deadline) => return condition(),
        }
    }
}
