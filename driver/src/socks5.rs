//! SOCKS5 (SOCKS5 Support spec; RFC 1928, with RFC 1929 username/password
//! authentication): the client side of the proxy handshake, run on the byte stream to
//! the proxy before TLS and the MongoDB handshake, so that it works over every
//! [`Transport`](crate::rt::Transport) — tokio, wasi:sockets or a JavaScript socket.
//!
//! [`Handshake`] is the pure state machine: it says what to send and how many bytes to
//! read next, and checks what the proxy answers, without doing any I/O. It asks for
//! exactly the bytes of each reply, never more, so nothing that follows the proxy's
//! last reply (the server's own bytes) is consumed. [`tunnel`] drives it over a
//! [`Stream`].
//!
//! The destination is sent as the proxy should see it: an IP literal as an address, any
//! other host as a domain name that the proxy resolves (the spec: "Drivers MUST NOT
//! attempt to perform DNS A or AAAA record resolution of the destination hostname").

use core::net::IpAddr;
use std::io;

use crate::rt::Stream;
use crate::uri::Socks5Proxy;

/// The protocol version byte of every SOCKS5 message.
const VERSION: u8 = 5;
/// Authentication methods (RFC 1928 §3).
const NO_AUTHENTICATION: u8 = 0x00;
const USERNAME_PASSWORD: u8 = 0x02;
const NO_ACCEPTABLE_METHOD: u8 = 0xFF;
/// The version of the username/password sub-negotiation (RFC 1929 §2).
const AUTH_VERSION: u8 = 1;
/// The CONNECT command (RFC 1928 §4).
const CONNECT: u8 = 1;
/// Address types (RFC 1928 §5).
const ATYP_IPV4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_IPV6: u8 = 4;

/// What the handshake waits for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The proxy's choice of authentication method: VER METHOD.
    MethodChoice,
    /// The status of the username/password sub-negotiation: VER STATUS.
    AuthStatus,
    /// The head of the reply to CONNECT: VER REP RSV ATYP.
    ReplyHead,
    /// The length byte of a domain name in the reply's bound address.
    ReplyDomainLength,
    /// The rest of the reply: the bound address (of this many bytes) and port.
    ReplyAddress(usize),
    /// The tunnel is open.
    Done,
}

/// The client side of one SOCKS5 handshake, without I/O.
///
/// ```
/// # use anymongo::socks5::Handshake;
/// let (mut handshake, greeting) = Handshake::new("db.example.com", 27017, None).unwrap();
/// assert_eq!(greeting, [5, 1, 0]); // version 5, one method: no authentication
/// assert_eq!(handshake.wants(), 2);
/// let request = handshake.receive(&[5, 0]).unwrap().unwrap(); // the CONNECT request
/// assert_eq!(request[..5], [5, 1, 0, 3, 14]); // CONNECT to a domain name of 14 bytes
/// assert_eq!(handshake.wants(), 4);
/// assert_eq!(handshake.receive(&[5, 0, 0, 1]).unwrap(), None);
/// assert_eq!(handshake.receive(&[127, 0, 0, 1, 4, 56]).unwrap(), None);
/// assert!(handshake.is_done());
/// ```
#[derive(Clone)]
pub struct Handshake {
    expect: Expect,
    /// The username/password request, when credentials were given.
    auth_request: Option<Vec<u8>>,
    /// The CONNECT request, sent once authentication is through.
    connect_request: Vec<u8>,
    /// `host:port` of the destination, for messages.
    destination: String,
}

impl std::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The requests hold the proxy password: never shown.
        f.debug_struct("Handshake")
            .field("expect", &self.expect)
            .field("destination", &self.destination)
            .finish_non_exhaustive()
    }
}

fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn invalid_reply(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl Handshake {
    /// A handshake asking the proxy to connect to `host:port`, authenticating with
    /// `credentials` (username, password) when the proxy asks for them; returns it
    /// with the greeting to send first. The greeting offers "no authentication", and
    /// "username/password" too when credentials are given (the spec's
    /// "Connection Establishment", step 2).
    ///
    /// Fails when `host` or a credential does not fit the protocol (1 to 255 bytes).
    pub fn new(
        host: &str,
        port: u16,
        credentials: Option<(&str, &str)>,
    ) -> io::Result<(Handshake, Vec<u8>)> {
        let mut connect_request = vec![VERSION, CONNECT, 0];
        match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => {
                connect_request.push(ATYP_IPV4);
                connect_request.extend(ip.octets());
            }
            Ok(IpAddr::V6(ip)) => {
                connect_request.push(ATYP_IPV6);
                connect_request.extend(ip.octets());
            }
            Err(_) => {
                let length = u8::try_from(host.len())
                    .ok()
                    .filter(|length| *length > 0)
                    .ok_or_else(|| {
                        invalid_input(format!(
                            "host name '{host}' cannot be sent to a SOCKS5 proxy: 1 to 255 bytes"
                        ))
                    })?;
                connect_request.extend([ATYP_DOMAIN, length]);
                connect_request.extend(host.as_bytes());
            }
        }
        connect_request.extend(port.to_be_bytes());

        let auth_request = credentials
            .map(|(username, password)| {
                let field = |name: &str, value: &str| {
                    u8::try_from(value.len())
                        .ok()
                        .filter(|length| *length > 0)
                        .ok_or_else(|| invalid_input(format!("{name} must be 1 to 255 bytes")))
                };
                let mut request = vec![AUTH_VERSION, field("proxyUsername", username)?];
                request.extend(username.as_bytes());
                request.push(field("proxyPassword", password)?);
                request.extend(password.as_bytes());
                Ok::<_, io::Error>(request)
            })
            .transpose()?;
        let greeting = match auth_request {
            Some(_) => vec![VERSION, 2, NO_AUTHENTICATION, USERNAME_PASSWORD],
            None => vec![VERSION, 1, NO_AUTHENTICATION],
        };
        let destination = match host.contains(':') {
            true => format!("[{host}]:{port}"),
            false => format!("{host}:{port}"),
        };
        let handshake = Handshake {
            expect: Expect::MethodChoice,
            auth_request,
            connect_request,
            destination,
        };
        Ok((handshake, greeting))
    }

    /// How many bytes to read from the proxy and pass to [`receive`](Self::receive)
    /// next; 0 once the tunnel is open.
    pub fn wants(&self) -> usize {
        match self.expect {
            Expect::MethodChoice | Expect::AuthStatus => 2,
            Expect::ReplyHead => 4,
            Expect::ReplyDomainLength => 1,
            Expect::ReplyAddress(length) => length,
            Expect::Done => 0,
        }
    }

    /// Whether the proxy has connected to the destination: the stream is now a tunnel.
    pub fn is_done(&self) -> bool {
        self.expect == Expect::Done
    }

    /// Takes the `wants()` bytes the proxy sent; returns what to send back, if
    /// anything. A refusal or a malformed reply is an error saying why.
    pub fn receive(&mut self, reply: &[u8]) -> io::Result<Option<Vec<u8>>> {
        if reply.len() != self.wants() {
            return Err(invalid_reply(format!(
                "expected {} bytes of the SOCKS5 handshake, got {}",
                self.wants(),
                reply.len()
            )));
        }
        match self.expect {
            Expect::MethodChoice => self.method_chosen(reply),
            Expect::AuthStatus => {
                if reply[0] != AUTH_VERSION {
                    return Err(invalid_reply(format!(
                        "the proxy answered username/password authentication with version {} (not a SOCKS5 proxy?)",
                        reply[0]
                    )));
                }
                if reply[1] != 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "the proxy rejected proxyUsername/proxyPassword",
                    ));
                }
                self.expect = Expect::ReplyHead;
                Ok(Some(self.connect_request.clone()))
            }
            Expect::ReplyHead => {
                check_version(reply[0])?;
                if reply[1] != 0 {
                    return Err(refusal(reply[1], &self.destination));
                }
                self.expect = match reply[3] {
                    ATYP_IPV4 => Expect::ReplyAddress(4 + 2),
                    ATYP_IPV6 => Expect::ReplyAddress(16 + 2),
                    ATYP_DOMAIN => Expect::ReplyDomainLength,
                    other => {
                        return Err(invalid_reply(format!(
                            "the proxy's reply has an unknown address type {other}"
                        )))
                    }
                };
                Ok(None)
            }
            Expect::ReplyDomainLength => {
                self.expect = Expect::ReplyAddress(usize::from(reply[0]) + 2);
                Ok(None)
            }
            Expect::ReplyAddress(_) => {
                // The address the proxy bound for the tunnel: nothing the driver needs.
                self.expect = Expect::Done;
                Ok(None)
            }
            Expect::Done => Err(invalid_reply(
                "the SOCKS5 handshake is already complete".into(),
            )),
        }
    }

    fn method_chosen(&mut self, reply: &[u8]) -> io::Result<Option<Vec<u8>>> {
        check_version(reply[0])?;
        match (reply[1], &self.auth_request) {
            (NO_AUTHENTICATION, _) => {
                self.expect = Expect::ReplyHead;
                Ok(Some(self.connect_request.clone()))
            }
            (USERNAME_PASSWORD, Some(request)) => {
                self.expect = Expect::AuthStatus;
                Ok(Some(request.clone()))
            }
            (NO_ACCEPTABLE_METHOD, None) | (USERNAME_PASSWORD, None) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the proxy requires authentication: give proxyUsername and proxyPassword",
            )),
            (NO_ACCEPTABLE_METHOD, Some(_)) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the proxy accepts neither no authentication nor username/password",
            )),
            (other, _) => Err(invalid_reply(format!(
                "the proxy chose authentication method {other}, which was not offered"
            ))),
        }
    }

    /// The error for the proxy closing the connection at this point of the handshake,
    /// with the likely cause (some proxies, rather than answer a failure, just close).
    pub fn closed_early(&self) -> io::Error {
        let message = match (self.expect, &self.auth_request) {
            (Expect::MethodChoice, None) => {
                "the proxy closed the connection at the greeting (does it require proxyUsername and proxyPassword?)".to_string()
            }
            (Expect::MethodChoice, Some(_)) => {
                "the proxy closed the connection at the greeting".to_string()
            }
            (Expect::AuthStatus, _) => {
                "the proxy closed the connection at username/password authentication (wrong proxyUsername or proxyPassword?)".to_string()
            }
            _ => format!(
                "the proxy closed the connection before connecting to {}",
                self.destination
            ),
        };
        io::Error::new(io::ErrorKind::ConnectionAborted, message)
    }
}

fn check_version(version: u8) -> io::Result<()> {
    match version {
        VERSION => Ok(()),
        other => Err(invalid_reply(format!(
            "the proxy answered with protocol version {other}, not 5 (not a SOCKS5 proxy?)"
        ))),
    }
}

/// The error for reply code `code` (RFC 1928 §6) to the CONNECT request.
fn refusal(code: u8, destination: &str) -> io::Error {
    let (kind, reason) = match code {
        1 => (io::ErrorKind::Other, "general SOCKS server failure"),
        2 => (
            io::ErrorKind::PermissionDenied,
            "connection not allowed by ruleset",
        ),
        3 => (io::ErrorKind::Other, "network unreachable"),
        4 => (io::ErrorKind::Other, "host unreachable"),
        5 => (io::ErrorKind::ConnectionRefused, "connection refused"),
        6 => (io::ErrorKind::TimedOut, "TTL expired"),
        7 => (io::ErrorKind::Unsupported, "command not supported"),
        8 => (io::ErrorKind::Unsupported, "address type not supported"),
        _ => (io::ErrorKind::Other, "unknown failure"),
    };
    io::Error::new(
        kind,
        format!("the proxy could not connect to {destination}: {reason} (reply code {code})"),
    )
}

/// Runs the SOCKS5 handshake of `proxy` over `stream` (open to the proxy) so that it
/// becomes a tunnel to `host:port`. Errors name the proxy.
pub async fn tunnel(
    stream: &mut dyn Stream,
    proxy: &Socks5Proxy,
    host: &str,
    port: u16,
) -> io::Result<()> {
    let name_proxy = |error: io::Error| {
        let port = proxy.port_or_default();
        let proxy = match proxy.host.contains(':') {
            true => format!("[{}]:{port}", proxy.host),
            false => format!("{}:{port}", proxy.host),
        };
        io::Error::new(error.kind(), format!("SOCKS5 proxy {proxy}: {error}"))
    };
    // The spec ignores empty credentials, and the URI layer has paired them.
    let credentials = match &proxy.authentication {
        Some((username, password)) if !username.is_empty() && !password.is_empty() => {
            Some((username.as_str(), password.as_str()))
        }
        _ => None,
    };
    let (mut handshake, greeting) = Handshake::new(host, port, credentials).map_err(name_proxy)?;
    stream.write_all(&greeting).await.map_err(name_proxy)?;
    let mut reply = [0u8; 255 + 2];
    while !handshake.is_done() {
        let wanted = &mut reply[..handshake.wants()];
        let mut filled = 0;
        while filled < wanted.len() {
            match stream
                .read(&mut wanted[filled..])
                .await
                .map_err(name_proxy)?
            {
                0 => return Err(name_proxy(handshake.closed_early())),
                n => filled += n,
            }
        }
        if let Some(request) = handshake.receive(wanted).map_err(name_proxy)? {
            stream.write_all(&request).await.map_err(name_proxy)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{boxed, BoxFuture};

    fn start(host: &str, credentials: Option<(&str, &str)>) -> (Handshake, Vec<u8>) {
        Handshake::new(host, 27017, credentials).unwrap()
    }

    #[test]
    fn without_credentials_only_no_authentication_is_offered() {
        let (mut handshake, greeting) = start("db.example.com", None);
        assert_eq!(greeting, [5, 1, 0]);
        let request = handshake.receive(&[5, 0]).unwrap().unwrap();
        let mut expected = vec![5, 1, 0, 3, 14];
        expected.extend(b"db.example.com");
        expected.extend([0x69, 0x89]);
        assert_eq!(request, expected);
    }

    #[test]
    fn with_credentials_both_methods_are_offered_and_username_password_is_sent() {
        let (mut handshake, greeting) = start("db", Some(("user", "p4ss")));
        assert_eq!(greeting, [5, 2, 0, 2]);
        let auth = handshake.receive(&[5, 2]).unwrap().unwrap();
        assert_eq!(auth, b"\x01\x04user\x04p4ss");
        assert_eq!(handshake.wants(), 2);
        let request = handshake.receive(&[1, 0]).unwrap().unwrap();
        assert_eq!(request[..5], [5, 1, 0, 3, 2]);
        // A proxy may also accept the credentials' holder without authentication.
        let (mut handshake, _) = start("db", Some(("user", "p4ss")));
        let request = handshake.receive(&[5, 0]).unwrap().unwrap();
        assert_eq!(request[..4], [5, 1, 0, 3]);
    }

    #[test]
    fn ip_literals_are_sent_as_addresses_and_names_are_never_resolved() {
        let (mut handshake, _) = start("127.0.0.1", None);
        let request = handshake.receive(&[5, 0]).unwrap().unwrap();
        assert_eq!(request, [5, 1, 0, 1, 127, 0, 0, 1, 0x69, 0x89]);
        let (mut handshake, _) = start("::1", None);
        let request = handshake.receive(&[5, 0]).unwrap().unwrap();
        assert_eq!(request[..4], [5, 1, 0, 4]);
        assert_eq!(request[4..20], core::net::Ipv6Addr::LOCALHOST.octets());
        let (mut handshake, _) = start("localhost", None);
        let request = handshake.receive(&[5, 0]).unwrap().unwrap();
        assert_eq!(request[3..5], [3, 9]);
    }

    #[test]
    fn every_bound_address_type_is_read_to_its_end() {
        for (head, rest) in [
            (vec![5, 0, 0, 1], vec![1, 2, 3, 4, 0, 80]),
            (vec![5, 0, 0, 4], vec![0; 18]),
        ] {
            let (mut handshake, _) = start("db", None);
            handshake.receive(&[5, 0]).unwrap();
            assert_eq!(handshake.receive(&head).unwrap(), None);
            assert_eq!(handshake.wants(), rest.len());
            assert_eq!(handshake.receive(&rest).unwrap(), None);
            assert!(handshake.is_done());
            assert_eq!(handshake.wants(), 0);
        }
        let (mut handshake, _) = start("db", None);
        handshake.receive(&[5, 0]).unwrap();
        handshake.receive(&[5, 0, 0, 3]).unwrap();
        assert_eq!(handshake.wants(), 1);
        handshake.receive(&[5]).unwrap();
        assert_eq!(handshake.wants(), 7);
        handshake.receive(b"proxy\x04\x38").unwrap();
        assert!(handshake.is_done());
    }

    #[test]
    fn refusals_and_protocol_violations_are_clear_errors() {
        let (mut handshake, _) = start("db", Some(("user", "wrong")));
        handshake.receive(&[5, 2]).unwrap();
        let error = handshake.receive(&[1, 1]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(
            error.to_string().contains("rejected proxyUsername"),
            "{error}"
        );

        let (mut handshake, _) = start("db", None);
        let error = handshake.receive(&[5, 0xFF]).unwrap_err();
        assert!(
            error.to_string().contains("requires authentication"),
            "{error}"
        );

        let (mut handshake, _) = start("db", None);
        let error = handshake.receive(&[5, 2]).unwrap_err();
        assert!(
            error.to_string().contains("requires authentication"),
            "{error}"
        );

        let (mut handshake, _) = start("db", None);
        handshake.receive(&[5, 0]).unwrap();
        let error = handshake.receive(&[5, 5, 0, 1]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
        assert!(error.to_string().contains("db:27017"), "{error}");

        let (mut handshake, _) = start("db", None);
        let error = handshake.receive(&[4, 0]).unwrap_err();
        assert!(error.to_string().contains("not a SOCKS5 proxy"), "{error}");

        let (mut handshake, _) = start("db", None);
        handshake.receive(&[5, 0]).unwrap();
        let error = handshake.receive(&[5, 0, 0, 9]).unwrap_err();
        assert!(error.to_string().contains("address type 9"), "{error}");

        let (mut handshake, _) = start("db", None);
        assert!(handshake.receive(&[5]).is_err());
    }

    #[test]
    fn what_does_not_fit_the_protocol_is_refused_before_sending() {
        let long = "h".repeat(256);
        assert!(Handshake::new(&long, 1, None).is_err());
        assert!(Handshake::new("db", 1, Some(("", "p"))).is_err());
        assert!(Handshake::new("db", 1, Some(("u", &long))).is_err());
        assert!(Handshake::new(&"h".repeat(255), 1, None).is_ok());
    }

    #[test]
    fn closing_early_says_what_was_likely_wrong() {
        let (handshake, _) = start("db", None);
        assert!(handshake
            .closed_early()
            .to_string()
            .contains("require proxyUsername"));
        let (mut handshake, _) = start("db", Some(("u", "p")));
        handshake.receive(&[5, 2]).unwrap();
        assert!(handshake
            .closed_early()
            .to_string()
            .contains("wrong proxyUsername"));
    }

    /// A proxy scripted as the bytes it answers, recording what it was sent; it
    /// hands out at most three bytes per read to exercise partial reads.
    struct Scripted {
        answers: Vec<u8>,
        sent: Vec<u8>,
    }

    impl Stream for Scripted {
        fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
            let n = buf.len().min(self.answers.len()).min(3);
            buf[..n].copy_from_slice(&self.answers[..n]);
            self.answers.drain(..n);
            boxed(async move { Ok(n) })
        }

        fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
            self.sent.extend(buf);
            boxed(async { Ok(()) })
        }
    }

    #[test]
    fn tunnel_reads_exactly_the_proxy_replies_and_names_the_proxy_in_errors() {
        let proxy = Socks5Proxy::builder()
            .host("proxy.test")
            .authentication(("user".to_string(), "s3cr3t".to_string()))
            .build();
        let mut stream = Scripted {
            // Method choice, auth status, reply; then the server's first bytes.
            answers: [&[5, 2, 1, 0, 5, 0, 0, 1, 10, 0, 0, 1, 0, 1][..], b"server"].concat(),
            sent: Vec::new(),
        };
        futures::executor::block_on(tunnel(&mut stream, &proxy, "db", 27017)).unwrap();
        assert_eq!(stream.answers, b"server", "no server byte consumed");
        assert!(stream.sent.starts_with(&[5, 2, 0, 2, 1, 4]));

        let mut stream = Scripted {
            answers: vec![5, 2],
            sent: Vec::new(),
        };
        let error = futures::executor::block_on(tunnel(&mut stream, &proxy, "db", 1)).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("SOCKS5 proxy proxy.test:1080:"),
            "{message}"
        );
        assert!(message.contains("wrong proxyUsername"), "{message}");
        assert!(!message.contains("s3cr3t"), "{message}");
    }
}
