//! The canned-reply server: an in-process server on loopback that answers every command
//! from replies encoded once, at start, so that what a benchmark measures against it is
//! the driver's own cost (plus loopback TCP), not a database's.
//!
//! It plays a standalone server with sessions (`logicalSessionTimeoutMinutes`, so both
//! drivers send `lsid`s as they would to a real server). Replies, by command:
//! - `hello` / `isMaster` (OP_MSG or the legacy OP_QUERY handshake): the hello reply;
//! - `find` with a non-empty filter: one TWEET document, cursor exhausted;
//! - `find` with an empty filter: the first 101 of 10,000 TWEET documents, then `getMore`:
//!   the other 9,899 (as a real server's first batch and one 16 MiB `getMore` would);
//! - `insert`: `{n, ok: 1}`, `n` counted from the document sequence (or the array);
//! - anything else: `{ok: 1}`.
//!
//! It runs on a thread and tokio runtime of its own, so it does not compete with the
//! drivers' tasks for their runtime's workers (only for the machine's cores).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use crate::mock::{query_document, read_frame, standalone_hello};
use anymongo::bson::{doc, Document, RawDocument, RawDocumentBuf};
use anymongo::wire::{op_code, OpMsg, OpReply, HEADER_LEN};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// The benchmark spec's database.
pub const DATABASE: &str = "perftest";
/// The benchmark spec's collection.
pub const COLLECTION: &str = "corpus";
/// The size of the first batch of a `find` without `batchSize` (the server's default).
const FIRST_BATCH: usize = 101;
/// Documents in the collection that find-many reads.
pub const FIND_MANY_DOCUMENTS: usize = 10_000;
/// The `getMore`'s cursor id.
const CURSOR_ID: i64 = 42;

/// The replies, each a whole OP_MSG frame whose header ids are patched when sent.
struct Replies {
    hello: Document,
    hello_frame: Vec<u8>,
    ok: Vec<u8>,
    find_one: Vec<u8>,
    find_first: Vec<u8>,
    get_more: Vec<u8>,
}

fn frame(reply: &Document) -> Result<Vec<u8>, String> {
    let raw = RawDocumentBuf::try_from(reply).map_err(|e| e.to_string())?;
    Ok(OpMsg::new(raw).encode(0, 0))
}

impl Replies {
    fn new(tweet: &Document) -> Result<Replies, String> {
        let ns = format!("{DATABASE}.{COLLECTION}");
        let tweet_with_id = |id: usize| {
            let mut with_id = doc! { "_id": id as i32 };
            with_id.extend(tweet.clone());
            with_id
        };
        let mut hello = standalone_hello();
        hello.insert("logicalSessionTimeoutMinutes", 30);
        let first: Vec<Document> = (1..=FIRST_BATCH).map(tweet_with_id).collect();
        let rest: Vec<Document> = (FIRST_BATCH + 1..=FIND_MANY_DOCUMENTS)
            .map(tweet_with_id)
            .collect();
        Ok(Replies {
            hello_frame: frame(&hello)?,
            hello,
            ok: frame(&doc! { "ok": 1.0 })?,
            find_one: frame(&doc! {
                "cursor": { "id": 0i64, "ns": &ns, "firstBatch": [tweet_with_id(1)] }, "ok": 1.0,
            })?,
            find_first: frame(&doc! {
                "cursor": { "id": CURSOR_ID, "ns": &ns, "firstBatch": first }, "ok": 1.0,
            })?,
            get_more: frame(&doc! {
                "cursor": { "id": 0i64, "ns": &ns, "nextBatch": rest }, "ok": 1.0,
            })?,
        })
    }
}

/// A running canned-reply server; it stops when dropped.
pub struct CannedServer {
    address: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CannedServer {
    /// Starts the server on a free port of 127.0.0.1, its find replies made of `tweet`.
    pub fn start(tweet: &Document) -> Result<CannedServer, String> {
        let replies = Arc::new(Replies::new(tweet)?);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let address = listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .to_string();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("canned-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = accept_all(listener, replies) => {}
                        _ = stopped => {}
                    }
                })
            })
            .map_err(|e| e.to_string())?;
        Ok(CannedServer {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The URI of the server (a direct connection, as to a standalone).
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address)
    }
}

impl Drop for CannedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_all(listener: TcpListener, replies: Arc<Replies>) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        tokio::spawn(serve(socket, replies.clone()));
    }
}

/// What an OP_MSG asks for.
#[derive(Debug, PartialEq)]
enum Request {
    Hello,
    FindOne,
    FindMany,
    GetMore,
    Insert(usize),
    Other,
}

/// Reads the command of an OP_MSG body (flags, then sections) without decoding more
/// than the command's name, `find`'s filter, and the count of inserted documents.
fn classify(body: &[u8]) -> Option<Request> {
    let mut command = None;
    let mut sequence_documents = 0;
    let mut pos = 4;
    while pos < body.len() {
        let kind = body[pos];
        let len = i32::from_le_bytes(body.get(pos + 1..pos + 5)?.try_into().ok()?) as usize;
        let section = body.get(pos + 1..pos + 1 + len)?;
        match kind {
            0 => command = Some(RawDocument::from_bytes(section).ok()?),
            1 => {
                // int32 size, cstring identifier, then documents.
                let name_end = 4 + section.get(4..)?.iter().position(|&b| b == 0)?;
                let mut doc = name_end + 1;
                while doc + 4 <= section.len() {
                    let doc_len = i32::from_le_bytes(section[doc..doc + 4].try_into().ok()?);
                    doc += usize::try_from(doc_len).ok()?.max(5);
                    sequence_documents += 1;
                }
            }
            _ => return None,
        }
        pos += 1 + len;
    }
    let command = command?;
    let (name, _) = command.iter().next()?.ok()?;
    Some(match name.as_str() {
        "hello" | "isMaster" | "ismaster" => Request::Hello,
        "find" => match command.get_document("filter") {
            Ok(filter) if filter.as_bytes().len() > 5 => Request::FindOne,
            _ => Request::FindMany,
        },
        "getMore" => Request::GetMore,
        "insert" => {
            let in_body = command
                .get_array("documents")
                .map(|documents| documents.into_iter().count())
                .unwrap_or(0);
            Request::Insert(sequence_documents + in_body)
        }
        _ => Request::Other,
    })
}

/// Serves one connection until the client closes it or sends something unreadable.
async fn serve(mut socket: TcpStream, replies: Arc<Replies>) {
    static REQUEST_ID: AtomicI32 = AtomicI32::new(1);
    while let Some((header, body)) = read_frame(&mut socket).await {
        let request_id = REQUEST_ID.fetch_add(1, Ordering::Relaxed);
        if header.op_code == op_code::QUERY {
            // The legacy handshake.
            let Some(_) = query_document(&body) else {
                return;
            };
            let Ok(hello) = RawDocumentBuf::try_from(&replies.hello) else {
                return;
            };
            let reply = OpReply::command_reply(hello).encode(request_id, header.request_id);
            if socket.write_all(&reply).await.is_err() {
                return;
            }
            continue;
        }
        if header.op_code != op_code::MSG {
            return;
        }
        let insert_reply;
        let reply: &[u8] = match classify(&body) {
            None => return,
            Some(Request::Hello) => &replies.hello_frame,
            Some(Request::FindOne) => &replies.find_one,
            Some(Request::FindMany) => &replies.find_first,
            Some(Request::GetMore) => &replies.get_more,
            Some(Request::Insert(n)) => {
                let Ok(n) = i32::try_from(n) else { return };
                let Ok(reply) = frame(&doc! { "n": n, "ok": 1.0 }) else {
                    return;
                };
                insert_reply = reply;
                &insert_reply
            }
            Some(Request::Other) => &replies.ok,
        };
        if send(&mut socket, reply, request_id, header.request_id)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Sends a precomputed frame with its header's ids set: small frames in one write,
/// large ones as header then body (no copy of megabytes per reply).
async fn send(
    socket: &mut TcpStream,
    frame: &[u8],
    request_id: i32,
    response_to: i32,
) -> std::io::Result<()> {
    let mut header = [0u8; HEADER_LEN];
    header.copy_from_slice(&frame[..HEADER_LEN]);
    header[4..8].copy_from_slice(&request_id.to_le_bytes());
    header[8..12].copy_from_slice(&response_to.to_le_bytes());
    if frame.len() <= 64 * 1024 {
        let mut whole = frame.to_vec();
        whole[..HEADER_LEN].copy_from_slice(&header);
        socket.write_all(&whole).await
    } else {
        socket.write_all(&header).await?;
        socket.write_all(&frame[HEADER_LEN..]).await
    }
}

/// The header of a frame, for the tests.
#[cfg(test)]
fn parse_header(frame: &[u8]) -> anymongo::wire::MessageHeader {
    anymongo::wire::MessageHeader::parse(frame[..HEADER_LEN].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::wire::DocumentSequence;

    fn body_of(message: OpMsg) -> Vec<u8> {
        message.encode(7, 0)[HEADER_LEN..].to_vec()
    }

    #[test]
    fn classifies_commands_by_name_filter_and_documents() {
        let msg = |command: Document| OpMsg::new(RawDocumentBuf::try_from(&command).unwrap());
        let classify_doc = |command: Document| classify(&body_of(msg(command)));
        assert_eq!(classify_doc(doc! { "hello": true }), Some(Request::Hello));
        assert_eq!(
            classify_doc(doc! { "find": "corpus", "filter": { "_id": 1 } }),
            Some(Request::FindOne)
        );
        assert_eq!(
            classify_doc(doc! { "find": "corpus", "filter": {} }),
            Some(Request::FindMany)
        );
        assert_eq!(
            classify_doc(doc! { "getMore": 42i64 }),
            Some(Request::GetMore)
        );
        assert_eq!(
            classify_doc(doc! { "insert": "corpus", "documents": [{ "a": 1 }, { "a": 2 }] }),
            Some(Request::Insert(2))
        );
        assert_eq!(
            classify_doc(doc! { "drop": "corpus" }),
            Some(Request::Other)
        );
        assert_eq!(classify(&[0, 0, 0, 0, 0, 9]), None);
    }

    #[test]
    fn counts_documents_of_a_sequence() {
        let command = RawDocumentBuf::try_from(&doc! { "insert": "corpus" }).unwrap();
        let documents: Vec<RawDocumentBuf> = (0..3)
            .map(|i| RawDocumentBuf::try_from(&doc! { "i": i }).unwrap())
            .collect();
        let mut message = OpMsg::new(command);
        message
            .sequences
            .push(DocumentSequence::new("documents", documents));
        assert_eq!(classify(&body_of(message)), Some(Request::Insert(3)));
    }

    #[test]
    fn replies_are_whole_frames() {
        let replies = Replies::new(&doc! { "text": "hi" }).unwrap();
        let header = parse_header(&replies.get_more);
        assert_eq!(header.op_code, op_code::MSG);
        assert_eq!(header.length as usize, replies.get_more.len());
    }
}
