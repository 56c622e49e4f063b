//! A scripted HTTP/1.1 server on loopback: the cloud endpoints the driver asks for
//! credentials (STS, ECS, EC2 instance metadata, Azure IMDS, the GCP metadata server)
//! in the tests. It records every request, answers each as its script says, and can
//! also stay silent or flood the client, for the bounds of `anymongo::http`.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `PUT`, `POST`…
    pub method: String,
    /// The request target: path and query.
    pub target: String,
    /// The header fields in order.
    pub headers: Vec<(String, String)>,
    /// The body (by `Content-Length`).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The value of header `name` (case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What the server does with a request.
pub enum HttpReply {
    /// Answers with this status and body (with a `Content-Length`), then closes.
    Respond(u16, Vec<u8>),
    /// The same body in chunks (`Transfer-Encoding: chunked`), then closes.
    Chunked(u16, Vec<u8>),
    /// Never answers, and keeps the connection open.
    Silent,
    /// Answers a head, then body bytes without end, until the client goes away.
    Flood,
}

impl HttpReply {
    /// `200` with `body`.
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        HttpReply::Respond(200, body.into())
    }
}

type Script = dyn Fn(&HttpRequest) -> HttpReply + Send + Sync;

/// The server; it stops when dropped.
pub struct MockHttp {
    address: String,
    requests: Arc<Mutex<Vec<HttpRequest>>>,
    flooded: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockHttp {
    fn drop(&mut self) {
        // Its connections' tasks are in the accept task's set, aborted with it.
        self.task.abort();
    }
}

impl MockHttp {
    /// Starts a server on 127.0.0.1 answering as `script` says.
    pub async fn start(script: impl Fn(&HttpRequest) -> HttpReply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let flooded = Arc::new(Mutex::new(0));
        let script: Arc<Script> = Arc::new(script);
        let (log, flood_count) = (requests.clone(), flooded.clone());
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                let (script, log, flood_count) = (script.clone(), log.clone(), flood_count.clone());
                connections.spawn(serve(socket, script, log, flood_count));
            }
        });
        MockHttp {
            address,
            requests,
            flooded,
            task,
        }
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many body bytes [`HttpReply::Flood`] answers have written so far.
    pub fn flooded_bytes(&self) -> usize {
        *self.flooded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn serve(
    mut socket: TcpStream,
    script: Arc<Script>,
    log: Arc<Mutex<Vec<HttpRequest>>>,
    flooded: Arc<Mutex<usize>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let reply = script(&request);
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    match reply {
        HttpReply::Respond(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(&[head.as_bytes(), &body].concat()).await;
        }
        HttpReply::Chunked(status, body) => {
            let mut bytes =
                format!("HTTP/1.1 {status} X\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
            for chunk in body.chunks(7) {
                bytes.extend(format!("{:x}\r\n", chunk.len()).as_bytes());
                bytes.extend(chunk);
                bytes.extend(b"\r\n");
            }
            bytes.extend(b"0\r\n\r\n");
            let _ = socket.write_all(&bytes).await;
        }
        HttpReply::Silent => std::future::pending().await,
        HttpReply::Flood => {
            if socket.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.is_err() {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            while socket.write_all(&chunk).await.is_ok() {
                *flooded.lock().unwrap_or_else(PoisonError::into_inner) += chunk.len();
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads one request: head, then a `Content-Length` body.
async fn read_request(socket: &mut TcpStream) -> Option<HttpRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 || buffer.len() > 64 * 1024 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_owned(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    body.truncate(length);
    Some(HttpRequest {
        method,
        target,
        headers,
        body,
    })
}
