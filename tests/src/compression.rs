//! A mock server that speaks OP_COMPRESSED (OP_COMPRESSED spec), for what SecantusDB
//! cannot play: it names the compressors it supports in its hello replies, and once a
//! connection negotiated one it insists on it: a message that must be compressed and is
//! not, or one of the never-compress list that is, is recorded as a violation and the
//! connection is closed. Its replies go out compressed with the negotiated compressor
//! (the reply to the negotiating hello included, as the spec allows), and it can be told
//! to lie about their uncompressed size.
//!
//! Compression is done here with the codec crates directly and framed by hand, not with
//! the driver's `wire::compression`, so the two check each other.
//!
//! Behind the wire it keeps one collection's worth of documents in memory: `insert`
//! appends, `find` returns every document (filters are ignored) in batches of
//! `batchSize` (default 101) and `getMore` the rest in batches of up to 16 MiB, `drop`
//! empties it, and anything else answers `ok: 1`. It also counts the bytes of every
//! message but the hellos, each way.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anymongo::bson::{doc, Bson, Document, RawDocumentBuf};
use anymongo::wire::{op_code, Message, MessageHeader, OpMsg, OpReply, HEADER_LEN};
use tokio::io::AsyncWriteExt;

use crate::mock::{query_document, read_frame, standalone_hello};

/// The commands whose messages must never be compressed (OP_COMPRESSED spec,
/// "Messages not allowed to be compressed"), restated here independently of the driver.
const NEVER_COMPRESSED: [&str; 11] = [
    "hello",
    "ismaster",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "authenticate",
    "createuser",
    "updateuser",
    "copydbsaslstart",
    "copydbgetnonce",
    "copydb",
];

/// The largest batch `getMore` returns, in bytes of documents (as a server's 16 MiB).
const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// A compressor the server supports, by handshake name, with its `compressorId`.
const COMPRESSORS: [(&str, u8); 3] = [("snappy", 1), ("zlib", 2), ("zstd", 3)];

/// What the server says in its compressed replies' `uncompressedSize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeClaim {
    /// The truth.
    True,
    /// Ten bytes more than the truth.
    Wrong,
    /// `i32::MAX`.
    Huge,
}

/// One message the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The command's name (its first key).
    pub command: String,
    /// The `compressorId` it came compressed with; `None`: it came uncompressed.
    pub compressor_id: Option<u8>,
}

/// A running compressing mock server; stops accepting when dropped.
pub struct CompressingServer {
    address: String,
    state: Arc<State>,
    acceptor: tokio::task::JoinHandle<()>,
}

struct State {
    /// The compressors named in hello replies (those of the client's list it knows).
    supported: Vec<&'static str>,
    claim: Mutex<SizeClaim>,
    store: Mutex<Store>,
    received: Mutex<Vec<Received>>,
    violations: Mutex<Vec<String>>,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CompressingServer {
    /// Listens on a free port of 127.0.0.1, supporting the compressors named in
    /// `supported` ("snappy", "zlib", "zstd").
    pub async fn start(supported: &[&str]) -> Self {
        let supported = COMPRESSORS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| supported.contains(name))
            .collect();
        let state = Arc::new(State {
            supported,
            claim: Mutex::new(SizeClaim::True),
            store: Mutex::default(),
            received: Mutex::default(),
            violations: Mutex::default(),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let shared = state.clone();
        let acceptor = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        CompressingServer {
            address,
            state,
            acceptor,
        }
    }

    /// `host:port` it listens on.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// From now on, replies claim `claim` as their uncompressed size (hello replies
    /// always tell the truth).
    pub fn claim_sizes(&self, claim: SizeClaim) {
        *lock(&self.state.claim) = claim;
    }

    /// Every message received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// What was received against the rules, in order; each closed its connection.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.state.violations).clone()
    }

    /// The bytes of every message but the hellos and their replies received and sent
    /// so far.
    pub fn bytes(&self) -> (u64, u64) {
        (
            self.state.bytes_in.load(Ordering::Relaxed),
            self.state.bytes_out.load(Ordering::Relaxed),
        )
    }

    /// Starts counting bytes from zero.
    pub fn reset_bytes(&self) {
        self.state.bytes_in.store(0, Ordering::Relaxed);
        self.state.bytes_out.store(0, Ordering::Relaxed);
    }
}

impl Drop for CompressingServer {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// Serves one connection until the client closes it, sends something unreadable or
/// breaks the compression rules.
async fn serve(mut socket: tokio::net::TcpStream, state: Arc<State>) {
    // The compressor negotiated by this connection's hello, if any.
    let mut negotiated: Option<(&'static str, u8)> = None;
    let mut first = true;
    loop {
        let Some((header, body)) = read_frame(&mut socket).await else {
            return;
        };
        let Some((original_op_code, payload, compressor_id)) = unwrap(&header, &body) else {
            return violation(&state, format!("undecodable OP_COMPRESSED {header:?}"));
        };
        let legacy = original_op_code == op_code::QUERY;
        let Some(command) = decode(&header, original_op_code, payload) else {
            return violation(&state, format!("undecodable opcode {original_op_code}"));
        };
        let name = command.keys().next().cloned().unwrap_or_default();
        let never = NEVER_COMPRESSED.contains(&name.to_ascii_lowercase().as_str());
        lock(&state.received).push(Received {
            command: name.clone(),
            compressor_id,
        });
        if never && compressor_id.is_some() {
            return violation(&state, format!("{name} came compressed"));
        }
        if !never && negotiated.is_some() && compressor_id.is_none() {
            return violation(&state, format!("{name} came uncompressed"));
        }
        let mut reply = lock(&state.store).answer(&command);
        let is_hello = name.eq_ignore_ascii_case("hello") || name.eq_ignore_ascii_case("ismaster");
        // Only the handshake negotiates; later hellos (monitoring) leave it as it is.
        if is_hello && std::mem::take(&mut first) {
            negotiated = negotiate(&state.supported, &command);
            let common: Vec<Bson> = client_compressors(&command)
                .filter(|name| state.supported.contains(name))
                .map(Bson::from)
                .collect();
            if !common.is_empty() {
                reply.insert("compression", common);
            }
        }
        first = false;
        if !is_hello {
            state
                .bytes_in
                .fetch_add(HEADER_LEN as u64 + body.len() as u64, Ordering::Relaxed);
        }
        let raw = RawDocumentBuf::try_from(&reply).unwrap();
        let mut frame = match legacy {
            true => OpReply::command_reply(raw).encode(1, header.request_id),
            false => OpMsg::new(raw).encode(1, header.request_id),
        };
        if let Some((_, id)) = negotiated {
            let claim = match is_hello {
                true => SizeClaim::True,
                false => *lock(&state.claim),
            };
            frame = compress(&frame, id, claim);
        }
        if !is_hello {
            state
                .bytes_out
                .fetch_add(frame.len() as u64, Ordering::Relaxed);
        }
        if socket.write_all(&frame).await.is_err() {
            return;
        }
    }
}

fn violation(state: &State, what: String) {
    lock(&state.violations).push(what);
}

/// The handshake names of the client's `compression` list.
fn client_compressors(hello: &Document) -> impl Iterator<Item = &str> {
    hello
        .get_array("compression")
        .into_iter()
        .flatten()
        .filter_map(Bson::as_str)
}

/// The first of the client's compressors this server supports.
fn negotiate(supported: &[&'static str], hello: &Document) -> Option<(&'static str, u8)> {
    client_compressors(hello).find_map(|name| {
        COMPRESSORS
            .iter()
            .copied()
            .find(|(known, _)| *known == name && supported.contains(known))
    })
}

/// The original opcode, the message without its header (decompressed) and the
/// compressor id it came with; `None` when it cannot be decompressed.
fn unwrap<'a>(
    header: &MessageHeader,
    body: &'a [u8],
) -> Option<(i32, std::borrow::Cow<'a, [u8]>, Option<u8>)> {
    if header.op_code != op_code::COMPRESSED {
        return Some((header.op_code, body.into(), None));
    }
    let int = |at: usize| Some(i32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?));
    let (original, size, id) = (int(0)?, usize::try_from(int(4)?).ok()?, *body.get(8)?);
    let data = &body[9..];
    let out = match id {
        0 => data.to_vec(),
        1 => snap::raw::Decoder::new().decompress_vec(data).ok()?,
        2 => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(data)
                .read_to_end(&mut out)
                .ok()?;
            out
        }
        3 => {
            let mut out = Vec::new();
            ruzstd::decoding::StreamingDecoder::new(data)
                .ok()?
                .read_to_end(&mut out)
                .ok()?;
            out
        }
        _ => return None,
    };
    (out.len() == size).then_some((original, out.into(), Some(id)))
}

/// The command a message carries: an OP_QUERY's query, or an OP_MSG's body with its
/// document sequences as arrays.
fn decode(
    header: &MessageHeader,
    op: i32,
    payload: std::borrow::Cow<'_, [u8]>,
) -> Option<Document> {
    if op == op_code::QUERY {
        return query_document(&payload);
    }
    let original = MessageHeader {
        length: i32::try_from(HEADER_LEN + payload.len()).ok()?,
        op_code: op,
        ..*header
    };
    let Message::Msg(message) = Message::decode(&original, &payload).ok()? else {
        return None;
    };
    let mut command = Document::try_from(message.body.as_ref()).ok()?;
    for sequence in message.sequences {
        let documents = sequence
            .documents
            .iter()
            .map(|raw| Document::try_from(raw.as_ref()).map(Bson::Document))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        command.insert(sequence.identifier, documents);
    }
    Some(command)
}

/// `frame` wrapped in an OP_COMPRESSED with compressor `id`, claiming `claim`.
fn compress(frame: &[u8], id: u8, claim: SizeClaim) -> Vec<u8> {
    let (header, payload) = frame.split_at(HEADER_LEN);
    let data = match id {
        1 => snap::raw::Encoder::new().compress_vec(payload).unwrap(),
        2 => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(payload).unwrap();
            encoder.finish().unwrap()
        }
        _ => {
            ruzstd::encoding::compress_to_vec(payload, ruzstd::encoding::CompressionLevel::Fastest)
        }
    };
    let size = match claim {
        SizeClaim::True => payload.len() as i32,
        SizeClaim::Wrong => payload.len() as i32 + 10,
        SizeClaim::Huge => i32::MAX,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + 9 + data.len());
    out.extend_from_slice(&((HEADER_LEN + 9 + data.len()) as i32).to_le_bytes());
    out.extend_from_slice(&header[4..12]); // requestID and responseTo
    out.extend_from_slice(&op_code::COMPRESSED.to_le_bytes());
    out.extend_from_slice(&header[12..16]); // the original opcode
    out.extend_from_slice(&size.to_le_bytes());
    out.push(id);
    out.extend_from_slice(&data);
    out
}

/// A command's `batchSize`, of whichever integer type.
fn batch_size(command: &Document) -> Option<usize> {
    match command.get("batchSize")? {
        Bson::Int32(size) => usize::try_from(*size).ok(),
        Bson::Int64(size) => usize::try_from(*size).ok(),
        _ => None,
    }
}

/// The documents behind the wire, and the one open cursor.
#[derive(Default)]
struct Store {
    documents: Vec<Document>,
    cursor: VecDeque<Document>,
}

impl Store {
    fn answer(&mut self, command: &Document) -> Document {
        let name = command
            .keys()
            .next()
            .map(String::as_str)
            .unwrap_or_default();
        let collection = command.get_str(name).unwrap_or_default();
        let ns = format!(
            "{}.{collection}",
            command.get_str("$db").unwrap_or_default()
        );
        match name {
            "hello" | "isMaster" | "ismaster" => standalone_hello(),
            "insert" => {
                let documents = command.get_array("documents").cloned().unwrap_or_default();
                let n = documents.len() as i32;
                self.documents.extend(
                    documents
                        .into_iter()
                        .filter_map(|d| d.as_document().cloned()),
                );
                doc! { "n": n, "ok": 1.0 }
            }
            "find" => {
                let batch_size = batch_size(command).unwrap_or(101);
                self.cursor = self.documents.iter().cloned().collect();
                let first: Vec<Bson> = self.take(batch_size, usize::MAX);
                let id = if self.cursor.is_empty() { 0i64 } else { 1 };
                doc! { "cursor": { "id": id, "ns": ns, "firstBatch": first }, "ok": 1.0 }
            }
            "getMore" => {
                let batch_size = batch_size(command).unwrap_or(usize::MAX);
                let ns = format!(
                    "{}.{}",
                    command.get_str("$db").unwrap_or_default(),
                    command.get_str("collection").unwrap_or_default()
                );
                let next = self.take(batch_size, MAX_BATCH_BYTES);
                let id = if self.cursor.is_empty() { 0i64 } else { 1 };
                doc! { "cursor": { "id": id, "ns": ns, "nextBatch": next }, "ok": 1.0 }
            }
            "drop" => {
                self.documents.clear();
                doc! { "ok": 1.0 }
            }
            _ => doc! { "ok": 1.0 },
        }
    }

    /// The next documents of the cursor: at most `count`, and no more bytes than `bytes`
    /// (but at least one).
    fn take(&mut self, count: usize, bytes: usize) -> Vec<Bson> {
        let mut batch = Vec::new();
        let mut size = 0;
        while batch.len() < count {
            let Some(next) = self.cursor.front() else {
                break;
            };
            let len = next.to_vec().map_or(0, |bytes| bytes.len());
            if !batch.is_empty() && size + len > bytes {
                break;
            }
            size += len;
            batch.extend(self.cursor.pop_front().map(Bson::Document));
        }
        batch
    }
}
