//! A small HTTP/1.1 client over the [`Transport`] seam, for the few requests the driver
//! makes to services that are not MongoDB servers: the cloud credential endpoints of
//! MONGODB-AWS (STS, ECS, EC2 instance metadata) and of MONGODB-OIDC's `azure` and
//! `gcp` environments (Authentication spec), and OCSP responders (OCSP Support spec).
//!
//! It opens its connections with the same [`Transport`] as the driver's connections to
//! servers (with TLS for `https` URLs, through the same seam), so it runs wherever the
//! driver runs: natively, under WASI and in the npm package over the JavaScript host's
//! sockets. It is deliberately small and bounded:
//!
//! - one request per connection (`Connection: close`), no keep-alive, no pipelining;
//! - redirects are not followed: a `3xx` answer is returned as it is (none of the
//!   endpoints above redirects, and following one could carry a secret elsewhere);
//! - the response, head and body together, is at most
//!   [`HttpClient::max_response_bytes`] long ([`DEFAULT_MAX_RESPONSE_BYTES`] unless
//!   set): a longer one is an `InvalidData` error, read no further;
//! - every request has a deadline on the client's [`Clock`]: connecting, sending and
//!   reading all end by then, with a `TimedOut` error;
//! - bodies framed by `Content-Length`, by `Transfer-Encoding: chunked` or by the end of
//!   the stream.
//!
//! The parsing is I/O-free ([`encode_request`], [`ResponseParser`]) and tested without
//! sockets; [`HttpClient`] only moves bytes between them and a stream.
//!
//! ```no_run
//! # async fn example(runtime: anymongo_rt::rt::Runtime) -> std::io::Result<()> {
//! use std::time::Duration;
//! use anymongo_rt::http::HttpClient;
//! let http = HttpClient::new(runtime.transport.clone(), runtime.clock.clone());
//! let deadline = runtime.clock.now() + Duration::from_secs(10);
//! let response = http
//!     .get("http://169.254.169.254/latest/meta-data/", &[("Accept", "text/plain")], deadline)
//!     .await?;
//! assert_eq!(response.status, 200);
//! # Ok(()) }
//! ```

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::rt::{self, Clock, ConnectTarget, Instant, TlsOptions, Transport};

/// The default bound of a response, head and body together: 1 MiB, far more than any
/// credential document or OCSP response.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// The most header lines a response may have.
const MAX_HEADERS: usize = 100;

/// How many bytes one read asks for.
const READ_CHUNK: usize = 8 * 1024;

/// An `http` or `https` URL, split into what a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https`: TLS over the connection.
    pub https: bool,
    /// The host name or IP address, without the brackets of an IPv6 literal.
    pub host: String,
    /// The port: the URL's, else 80 (`http`) or 443 (`https`).
    pub port: u16,
    /// The path and query, starting with `/` (the fragment dropped).
    pub path_and_query: String,
}

impl Url {
    /// Parses `text`, an absolute `http://` or `https://` URL. User information
    /// (`user@`) is refused: no credential goes in a URL here.
    ///
    /// ```
    /// # use anymongo_rt::http::Url;
    /// let url = Url::parse("http://[::1]:8080/a?b=c#d").unwrap();
    /// assert_eq!((url.host.as_str(), url.port, url.path_and_query.as_str()), ("::1", 8080, "/a?b=c"));
    /// ```
    pub fn parse(text: &str) -> io::Result<Url> {
        let invalid = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid URL '{text}': {why}"),
            )
        };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| invalid("no scheme"))?;
        let https = if scheme.eq_ignore_ascii_case("https") {
            true
        } else if scheme.eq_ignore_ascii_case("http") {
            false
        } else {
            return Err(invalid("the scheme is neither http nor https"));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(end);
        if authority.contains('@') {
            return Err(invalid("user information is not allowed"));
        }
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| invalid("an unclosed '['"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| invalid("text after ']'"))?,
                ),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty()
            || host
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control() || b == b'/')
        {
            return Err(invalid("no valid host"));
        }
        let port = match port {
            None => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(port) => port.parse().map_err(|_| invalid("an invalid port"))?,
        };
        let path_and_query = rest.split('#').next().unwrap_or_default();
        if path_and_query
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(invalid("white space or a control character in the path"));
        }
        let path_and_query = match path_and_query {
            "" => "/".to_owned(),
            query if query.starts_with('?') => format!("/{query}"),
            path => path.to_owned(),
        };
        Ok(Url {
            https,
            host: host.to_owned(),
            port,
            path_and_query,
        })
    }

    /// The `Host` header's value: the host (bracketed if IPv6) and the port when it is
    /// not the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default_port = if self.https { 443 } else { 80 };
        if self.port == default_port {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(
            f,
            "{scheme}://{}{}",
            self.host_header(),
            self.path_and_query
        )
    }
}

/// Percent-encodes `text` for a URL query component or an
/// `application/x-www-form-urlencoded` body: every byte but the unreserved ones of
/// RFC 3986 (`A-Z a-z 0-9 - . _ ~`) becomes `%XX`.
///
/// ```
/// assert_eq!(anymongo_rt::http::percent_encode("a b/c=d"), "a%20b%2Fc%3Dd");
/// ```
pub fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// An HTTP response: status, headers (names as sent) and the whole body.
#[derive(Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code, e.g. 200.
    pub status: u16,
    /// The header fields in the order received.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of the first header named `name` (case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as text (invalid UTF-8 replaced), for error messages and text bodies.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl fmt::Debug for Response {
    /// Shows the status and the body's length, never the body: it may be a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("headers", &self.headers.len())
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn invalid_data(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// The bytes of a request: the request line, `Host`, `Connection: close`, a
/// `Content-Length` when there is a body (or the method sends one), `headers`, then
/// `body`. A method, header name or value that could smuggle a line break or another
/// header is refused (`InvalidInput`).
pub fn encode_request(
    method: &str,
    url: &Url,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<Vec<u8>> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(invalid_input(format!("invalid HTTP method '{method}'")));
    }
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        url.path_and_query,
        url.host_header()
    );
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) {
            return Err(invalid_input(format!("invalid HTTP header name '{name}'")));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(invalid_input(format!(
                "the value of HTTP header '{name}' has a line break"
            )));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    Ok(bytes)
}

/// How a response's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body (`HEAD`, 1xx, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the stream.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug)]
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
    framing: Framing,
}

/// The I/O-free reader of one response: give it the bytes as they arrive with
/// [`push`](Self::push), and the end of the stream as an empty slice; it answers with
/// the response once complete. It holds at most its limit of bytes: past it, an
/// `InvalidData` error.
///
/// ```
/// # use anymongo_rt::http::ResponseParser;
/// let mut parser = ResponseParser::new(1024, false);
/// assert!(parser.push(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap().is_none());
/// let response = parser.push(b"ngth: 2\r\n\r\nhi").unwrap().unwrap();
/// assert_eq!((response.status, response.body.as_slice()), (200, &b"hi"[..]));
/// ```
#[derive(Debug)]
pub struct ResponseParser {
    buffer: Vec<u8>,
    limit: usize,
    head_request: bool,
    /// The head, once read, and where the body starts in `buffer`.
    head: Option<(Head, usize)>,
}

impl ResponseParser {
    /// A reader of a response of at most `limit` bytes (head and body) to a request
    /// whose method was `HEAD` (no body) or not.
    pub fn new(limit: usize, head_request: bool) -> Self {
        ResponseParser {
            buffer: Vec::new(),
            limit,
            head_request,
            head: None,
        }
    }

    /// Takes the next `bytes` of the stream (empty: the stream ended). `Ok(None)`:
    /// more bytes are needed.
    pub fn push(&mut self, bytes: &[u8]) -> io::Result<Option<Response>> {
        let eof = bytes.is_empty();
        if self.buffer.len() + bytes.len() > self.limit {
            return Err(invalid_data(format!(
                "the HTTP response is longer than {} bytes",
                self.limit
            )));
        }
        self.buffer.extend_from_slice(bytes);
        loop {
            if self.head.is_none() {
                let Some(end) = find(&self.buffer, b"\r\n\r\n") else {
                    return match eof {
                        true => Err(invalid_data(
                            "the HTTP response ended before its header did",
                        )),
                        false => Ok(None),
                    };
                };
                let head = parse_head(&self.buffer[..end], self.head_request)?;
                if (100..200).contains(&head.status) {
                    // An interim response (100 Continue): the real one follows.
                    self.buffer.drain(..end + 4);
                    continue;
                }
                if let Framing::Length(length) = head.framing {
                    // Refused at once rather than read up to the bound.
                    if length.saturating_add(end + 4) > self.limit {
                        return Err(invalid_data(format!(
                            "the HTTP response announces {length} body bytes, more than its \
                             bound of {} bytes",
                            self.limit
                        )));
                    }
                }
                self.head = Some((head, end + 4));
            }
            let Some((head, start)) = &self.head else {
                unreachable!("the head was just read")
            };
            let available = &self.buffer[*start..];
            let body = match head.framing {
                Framing::Empty => Some(Vec::new()),
                Framing::Length(length) if available.len() >= length => {
                    Some(available[..length].to_vec())
                }
                Framing::Length(length) if eof => {
                    return Err(invalid_data(format!(
                        "the HTTP response ended after {} of its {length} body bytes",
                        available.len()
                    )))
                }
                Framing::Length(_) => None,
                Framing::Chunked => match dechunk(available)? {
                    Some(body) => Some(body),
                    None if eof => {
                        return Err(invalid_data(
                            "the HTTP response ended inside its chunked body",
                        ))
                    }
                    None => None,
                },
                Framing::UntilClose => eof.then(|| available.to_vec()),
            };
            return Ok(body.map(|body| {
                let (head, _) = self.head.take().expect("the head was just read");
                Response {
                    status: head.status,
                    headers: head.headers,
                    body,
                }
            }));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Parses a status line and header fields (without the blank line that ends them).
fn parse_head(head: &[u8], head_request: bool) -> io::Result<Head> {
    let head = std::str::from_utf8(head)
        .map_err(|_| invalid_data("the HTTP response header is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(invalid_data(format!(
            "not an HTTP/1.x response: '{}'",
            status_line.chars().take(40).collect::<String>()
        )));
    }
    let status = parts
        .next()
        .filter(|code| code.len() == 3)
        .and_then(|code| code.parse::<u16>().ok())
        .filter(|code| (100..600).contains(code))
        .ok_or_else(|| invalid_data("the HTTP status line has no valid status code"))?;
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() == MAX_HEADERS {
            return Err(invalid_data(format!(
                "the HTTP response has more than {MAX_HEADERS} header fields"
            )));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid_data("an HTTP header line without ':'"))?;
        if name.is_empty() || name.ends_with([' ', '\t']) {
            return Err(invalid_data("an invalid HTTP header name"));
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    fn header<'a>(
        headers: &'a [(String, String)],
        wanted: &'a str,
    ) -> impl Iterator<Item = &'a str> {
        headers
            .iter()
            .filter(move |(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| value.as_str())
    }
    let chunked = header(&headers, "transfer-encoding").any(|value| {
        value
            .rsplit(',')
            .next()
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
    });
    let lengths: Vec<&str> = header(&headers, "content-length").collect();
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if chunked {
        // RFC 9112, section 6.3: chunked wins over a Content-Length.
        Framing::Chunked
    } else if let Some(first) = lengths.first() {
        if lengths.iter().any(|length| length != first) {
            return Err(invalid_data(
                "the HTTP response has conflicting Content-Length",
            ));
        }
        let length = first
            .parse::<usize>()
            .ok()
            .filter(|_| first.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| invalid_data("the HTTP response has an invalid Content-Length"))?;
        Framing::Length(length)
    } else {
        Framing::UntilClose
    };
    Ok(Head {
        status,
        headers,
        framing,
    })
}

/// The body of a complete chunked encoding at the start of `bytes`, `None` if it is
/// not complete yet (RFC 9112, section 7.1; chunk extensions and trailers ignored).
fn dechunk(bytes: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line_end) = find(&bytes[at..], b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&bytes[at..at + line_end])
            .map_err(|_| invalid_data("an invalid HTTP chunk size"))?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .ok()
            .filter(|_| !size.is_empty() && size.len() <= 16)
            .ok_or_else(|| invalid_data("an invalid HTTP chunk size"))?;
        at += line_end + 2;
        if size == 0 {
            // Trailer fields, then the blank line that ends the message.
            loop {
                let Some(end) = find(&bytes[at..], b"\r\n") else {
                    return Ok(None);
                };
                at += end + 2;
                if end == 0 {
                    return Ok(Some(body));
                }
            }
        }
        let Some(chunk_end) = at.checked_add(size).filter(|end| *end <= bytes.len()) else {
            return Ok(None);
        };
        body.extend_from_slice(&bytes[at..chunk_end]);
        at = chunk_end;
        match bytes.get(at..at + 2) {
            None | Some([b'\r']) => return Ok(None),
            Some(b"\r\n") => at += 2,
            Some(_) => return Err(invalid_data("an HTTP chunk not followed by CRLF")),
        }
    }
}

/// Sends HTTP/1.1 requests over a [`Transport`], each bounded by a deadline on a
/// [`Clock`] and by a response size; see the [module docs](self).
///
/// Cheap to clone; share it.
#[derive(Clone)]
pub struct HttpClient {
    transport: Arc<dyn Transport>,
    clock: Arc<dyn Clock>,
    max_response_bytes: usize,
    tls: TlsOptions,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("max_response_bytes", &self.max_response_bytes)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client that connects with `transport` and keeps time with `clock`, with the
    /// default response bound and, for `https`, the host's default trusted roots.
    pub fn new(transport: Arc<dyn Transport>, clock: Arc<dyn Clock>) -> Self {
        HttpClient {
            transport,
            clock,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            tls: TlsOptions::default(),
        }
    }

    /// The same client with responses bounded to `bytes` (head and body).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The same client with these TLS settings for `https` URLs.
    pub fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = tls;
        self
    }

    /// The bound of a response, head and body together.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// The client's clock, on which deadlines are read.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// `GET url` with `headers`, done by `deadline`.
    pub async fn get(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        deadline: Instant,
    ) -> io::Result<Response> {
        self.request("GET", url, headers, &[], deadline).await
    }

    /// `POST url` with `headers` and `body`, done by `deadline`.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        deadline: Instant,
    ) -> io::Result<Response> {
        self.request("POST", url, headers, body, deadline).await
    }

    /// A request of any `method` (upper case: `PUT`, `HEAD`…), done by `deadline`: a
    /// `TimedOut` error if it is not, and the stream dropped (closed). Any status is a
    /// response, not an error; a malformed or too long response is `InvalidData`.
    pub async fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        deadline: Instant,
    ) -> io::Result<Response> {
        let url = Url::parse(url)?;
        let bytes = encode_request(method, &url, headers, body)?;
        let timed_out = || {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{method} {url} did not complete by its deadline"),
            )
        };
        let left = deadline.saturating_duration_since(self.clock.now());
        if left.is_zero() {
            return Err(timed_out());
        }
        let exchange = self.exchange(&url, &bytes, method == "HEAD", left);
        rt::timeout(&*self.clock, left, exchange)
            .await
            .map_err(|rt::Elapsed| timed_out())?
            .map_err(|error| io::Error::new(error.kind(), format!("{method} {url}: {error}")))
    }

    async fn exchange(
        &self,
        url: &Url,
        request: &[u8],
        head: bool,
        left: Duration,
    ) -> io::Result<Response> {
        let target = ConnectTarget {
            host: url.host.clone(),
            port: url.port,
            tls: url.https.then(|| self.tls.clone()),
            addresses: Vec::new(),
            time_left: Some(left),
        };
        let mut stream = self.transport.connect(&target).await?;
        stream.write_all(request).await?;
        let mut parser = ResponseParser::new(self.max_response_bytes, head);
        let mut chunk = vec![0; READ_CHUNK];
        loop {
            let read = stream.read(&mut chunk).await?;
            if let Some(response) = parser.push(&chunk[..read])? {
                return Ok(response);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8], limit: usize) -> io::Result<Option<Response>> {
        let mut parser = ResponseParser::new(limit, false);
        // Byte by byte, then the end of the stream: every split point is exercised.
        for byte in bytes {
            if let Some(response) = parser.push(std::slice::from_ref(byte))? {
                return Ok(Some(response));
            }
        }
        parser.push(&[])
    }

    #[test]
    fn urls() {
        let url = Url::parse("http://169.254.169.254/latest/api/token").unwrap();
        assert_eq!(
            url,
            Url {
                https: false,
                host: "169.254.169.254".into(),
                port: 80,
                path_and_query: "/latest/api/token".into(),
            }
        );
        assert_eq!(url.host_header(), "169.254.169.254");
        let url = Url::parse("HTTPS://sts.amazonaws.com").unwrap();
        assert_eq!(
            (url.https, url.port, url.path_and_query.as_str()),
            (true, 443, "/")
        );
        let url = Url::parse("http://localhost:8000?x=1").unwrap();
        assert_eq!((url.port, url.path_and_query.as_str()), (8000, "/?x=1"));
        assert_eq!(url.host_header(), "localhost:8000");
        assert_eq!(url.to_string(), "http://localhost:8000/?x=1");
        let url = Url::parse("https://[::1]/p").unwrap();
        assert_eq!(
            (url.host.as_str(), url.host_header()),
            ("::1", "[::1]".into())
        );
        for bad in [
            "169.254.169.254/x",
            "ftp://host/",
            "http://",
            "http://user:pw@host/",
            "http://host:99999/",
            "http://host:port/",
            "http://[::1/",
            "http://[::1]x/",
            "http://ho st/",
            "http://host/a b",
            "http://host/a\r\nX: y",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percent_encoding() {
        assert_eq!(percent_encode("AZaz09-._~"), "AZaz09-._~");
        assert_eq!(
            percent_encode("api://x y+z/é"),
            "api%3A%2F%2Fx%20y%2Bz%2F%C3%A9"
        );
    }

    #[test]
    fn requests() {
        let url = Url::parse("http://127.0.0.1:9/latest/api/token").unwrap();
        let bytes = encode_request(
            "PUT",
            &url,
            &[("X-aws-ec2-metadata-token-ttl-seconds", "30")],
            b"",
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "PUT /latest/api/token HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\n\
             Content-Length: 0\r\nX-aws-ec2-metadata-token-ttl-seconds: 30\r\n\r\n"
        );
        let bytes = encode_request("GET", &url, &[("Accept", "application/json")], b"").unwrap();
        assert!(!String::from_utf8(bytes).unwrap().contains("Content-Length"));
        let bytes = encode_request("POST", &url, &[], b"a=b").unwrap();
        assert!(bytes.ends_with(b"Content-Length: 3\r\n\r\na=b"));
        for (method, name, value) in [
            ("get", "A", "b"),
            ("GET X", "A", "b"),
            ("GET", "A B", "b"),
            ("GET", "", "b"),
            ("GET", "A:", "b"),
            ("GET", "A", "b\r\nInjected: yes"),
            ("GET", "A", "b\n"),
        ] {
            assert!(
                encode_request(method, &url, &[(name, value)], b"").is_err(),
                "{method:?} {name:?} {value:?}"
            );
        }
    }

    #[test]
    fn content_length_bodies() {
        let response = parse_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 5\r\n\r\nhelloEXTRA",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"hello");
        assert_eq!(response.header("CONTENT-TYPE"), Some("text/plain"));
        assert_eq!(response.text(), "hello");
        // Shorter than announced.
        assert!(parse_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", 1024).is_err());
        // Conflicting or invalid lengths.
        for head in [
            "Content-Length: 5\r\nContent-Length: 6",
            "Content-Length: -5",
            "Content-Length: +5",
            "Content-Length: 5x",
        ] {
            let bytes = format!("HTTP/1.1 200 OK\r\n{head}\r\n\r\nhello!");
            assert!(parse_all(bytes.as_bytes(), 1024).is_err(), "{head}");
        }
    }

    #[test]
    fn chunked_bodies() {
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n\
                      5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
        let response = parse_all(bytes, 1024).unwrap().unwrap();
        assert_eq!(response.body, b"hello 0123456789");
        // Ends inside the body; a bad size; data not followed by CRLF.
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n",
        ] {
            assert!(parse_all(bad, 1024).is_err());
        }
    }

    #[test]
    fn bodies_until_close_and_empty_ones() {
        let response = parse_all(b"HTTP/1.0 200 OK\r\n\r\nall of it", 1024)
            .unwrap()
            .unwrap();
        assert_eq!(response.body, b"all of it");
        let response = parse_all(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!((response.status, response.body.len()), (204, 0));
        let mut parser = ResponseParser::new(1024, true);
        let response = parser
            .push(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(response.body.is_empty());
    }

    #[test]
    fn malformed_heads() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 0"[..],
            b"SSH-2.0-OpenSSH\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 099 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nName : x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\xff: x\r\n\r\n",
            b"",
        ] {
            assert!(
                parse_all(bad, 1024).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("H{i}: v\r\n")).collect();
        let bytes = format!("HTTP/1.1 200 OK\r\n{many}Content-Length: 0\r\n\r\n");
        assert!(parse_all(bytes.as_bytes(), 1 << 16).is_err());
    }

    #[test]
    fn the_limit_holds() {
        let body = "x".repeat(100);
        let bytes = format!("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{body}");
        assert!(parse_all(bytes.as_bytes(), bytes.len()).unwrap().is_some());
        let error = parse_all(bytes.as_bytes(), bytes.len() - 1).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        // An announced length past the bound is refused with the head.
        let mut parser = ResponseParser::new(1024, false);
        let error = parser
            .push(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n")
            .unwrap_err();
        assert!(error.to_string().contains("announces"), "{error}");
        // A head that never ends, and a body until close that never ends, stop at the
        // limit too.
        let mut parser = ResponseParser::new(64, false);
        assert!((0..10).any(|_| parser.push(b"HTTP/1.1 200 OK\r\nX: ").is_err()));
        let mut parser = ResponseParser::new(64, false);
        assert!(parser.push(b"HTTP/1.1 200 OK\r\n\r\n").unwrap().is_none());
        assert!((0..10).any(|_| parser.push(b"0123456789").is_err()));
    }

    #[test]
    fn debug_hides_the_body() {
        let response = Response {
            status: 200,
            headers: Vec::new(),
            body: b"secret-token".to_vec(),
        };
        let shown = format!("{response:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
