//! One connection to one server: open it through the [`Transport`], run the
//! handshake, then exchange commands as OP_MSG frames.
//!
//! A connection that hits any I/O, framing or timeout error is closed for good
//! ([`Connection::is_broken`]): after a failure mid-message the byte stream can no
//! longer be trusted to sit on a frame boundary.

use std::time::Duration;

use bson::raw::RawBsonRef;
use bson::{Bson, Document, RawDocument, RawDocumentBuf};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::address_book::AddressBook;
use crate::auth::cloud::{AwsCredentialCache, CloudAccess};
use crate::auth::oidc::{self, OidcAuthenticator, OidcConnectionCache, OidcContext, SaslSender};
use crate::auth::{self, AuthContext, AuthMechanism, ConnectionAuth, Credential, ScramCache};
use crate::error::{
    CommandError, Error, ErrorKind, Result, RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR,
};
use crate::handshake::{client_metadata, hello_command, ClientMetadata, HelloReply};
use crate::rt::{
    self, boxed, BoxFuture, Clock, ConnectTarget, Instant, IpAddr, Runtime, Stream, Transport,
};
use crate::socks5;
use crate::uri::{ClientOptions, ServerAddress, Socks5Proxy};
use crate::versioned_api::{declare, ServerApi};
use crate::wire::compression::Compressor;
use crate::wire::{
    self, check_response_to,
    compression::{self, Compression},
    encode_op_query, next_request_id, op_code, Message, MessageHeader, MsgFlags, OpMsg, HEADER_LEN,
};

/// The error of a handshake in load-balanced mode whose reply has no `serviceId`
/// (Load Balancer spec, "Connection Establishment": the exact message).
pub(crate) const LOAD_BALANCER_UNSUPPORTED: &str =
    "Driver attempted to initialize in load balancing mode, but the server does not support this mode.";

/// Set once a handshake's hello reply is in, with the `serviceId` it names (in
/// load-balanced mode): what the error of a connection that failed to establish
/// needs to know of it.
type HelloSeen = OnceLock<Option<bson::oid::ObjectId>>;

/// Told of a handshake's hello reply as soon as it is in, before authentication: a
/// cold client's first connection updates the topology from it (server-monitoring.md,
/// "Clients update the topology from each handshake"), so that selection is done by
/// the time the connection has authenticated.
pub(crate) trait HelloObserver: rt::MaybeSend + rt::MaybeSync {
    /// The hello reply.
    fn hello_received(&self, hello: &HelloReply);
}

/// How a connection is opened and bounded.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSettings {
    /// Where to, and with which TLS settings.
    pub target: ConnectTarget,
    /// Bound on TCP connect, TLS and the handshake together; `None`: no bound.
    pub connect_timeout: Option<Duration>,
    /// Bound on each read of a reply, if any.
    pub socket_timeout: Option<Duration>,
    /// The `client` metadata document for the handshake, shared with the client,
    /// which may append to it.
    pub metadata: Arc<ClientMetadata>,
    /// Who to authenticate as, if anyone.
    pub auth: Option<AuthSettings>,
    /// `loadBalanced=true`: the handshake says so, and the server must answer with a
    /// `serviceId` (Load Balancer spec, "Connection Establishment").
    pub load_balanced: bool,
    /// The Stable API the client declares: sent with the handshake and authentication
    /// commands, and it makes the handshake use `hello`.
    pub server_api: Option<ServerApi>,
    /// `compressors`, offered in the handshake in this order (OP_COMPRESSED spec).
    pub compressors: Vec<Compressor>,
    /// `zlibCompressionLevel`, for when zlib is the one negotiated.
    pub zlib_compression_level: Option<i32>,
    /// The SOCKS5 proxy every TCP connection goes through, monitoring included (SOCKS5
    /// Support spec, "Connection Establishment").
    pub proxy: Option<Socks5Proxy>,
    /// The client's known addresses of its servers' names, shared by all its
    /// connections (see [`AddressBook`]); `None`: the transport resolves every name.
    pub addresses: Option<Arc<AddressBook>>,
    /// A monitoring connection: it only runs `hello`, and its handshake's reply is the
    /// server's description. An incompatible wire version range does not fail its
    /// handshake, so that SDAM records it and server selection reports the
    /// incompatibility at once (server-selection.md, "Checking wire protocol
    /// compatibility"); application connections refuse such a server.
    pub monitoring: bool,
}

impl ConnectionSettings {
    /// How a client with `options` opens its application connections; the target is
    /// set per server with [`for_address`](Self::for_address).
    pub fn new(
        options: &ClientOptions,
        runtime: &Runtime,
        oidc: Option<Arc<OidcAuthenticator>>,
    ) -> ConnectionSettings {
        ConnectionSettings {
            target: ConnectTarget {
                host: String::new(),
                port: 0,
                tls: options.tls_options().cloned(),
                addresses: Vec::new(),
                time_left: None,
            },
            // connectTimeoutMS=0 means no limit (URI Options spec).
            connect_timeout: Some(options.connect_timeout_or_default())
                .filter(|limit| !limit.is_zero()),
            socket_timeout: options.socket_timeout,
            metadata: Arc::new(ClientMetadata::with_driver_info(
                client_metadata(&runtime.host, options.app_name.as_deref()),
                options.driver_info.as_ref(),
            )),
            auth: options.credential.clone().map(|credential| AuthSettings {
                context: AuthContext {
                    // SCRAM keys derived for this client's credential, shared by its
                    // connections.
                    scram_cache: ScramCache::default(),
                    key_derivation: runtime.key_derivation.clone(),
                    env: runtime.host.env,
                    // Read again for each connection (see `handshake`).
                    unix_time: runtime.clock.unix_time(),
                    // MONGODB-AWS credentials of AWS endpoints, cached for the client.
                    cloud: (credential.mechanism == Some(AuthMechanism::MongoDbAws))
                        .then(|| CloudAccess::new(runtime, &credential)),
                    aws_cache: AwsCredentialCache::default(),
                },
                credential,
                oidc,
            }),
            load_balanced: options.load_balanced == Some(true),
            server_api: options.server_api.clone(),
            compressors: options.compressors_or_default().to_vec(),
            zlib_compression_level: options.zlib_compression_level,
            proxy: options.socks5_proxy.clone(),
            addresses: Some(Arc::new(AddressBook::new(
                runtime.resolver.clone(),
                runtime.clock.clone(),
            ))),
            monitoring: false,
        }
    }

    /// These settings aimed at `address`.
    pub fn for_address(&self, address: &ServerAddress) -> ConnectionSettings {
        let mut settings = self.clone();
        settings.target.host = address.host().to_owned();
        // A unix domain socket is a target whose host is the socket's path.
        settings.target.port = address.tcp_port().unwrap_or_default();
        settings
    }
}

/// What a connection needs to authenticate: the credential, and what the mechanisms
/// need from the client and the host.
#[derive(Debug, Clone)]
pub(crate) struct AuthSettings {
    pub credential: Credential,
    pub context: AuthContext,
    /// The client's MONGODB-OIDC authenticator (token cache and callback), when the
    /// credential uses that mechanism: it drives its own exchange, as its callback
    /// is asynchronous.
    pub oidc: Option<Arc<OidcAuthenticator>>,
}

/// A connection to one server that completed its handshake (and authentication),
/// as the driver's pools hold them.
///
/// Obtained from a [`ConnectionPool`](crate::cmap::ConnectionPool) over a
/// [`Connector`](crate::cmap::Connector); it is closed when dropped.
pub struct Connection {
    stream: Box<dyn Stream>,
    address: String,
    /// The host name or IP the connection was opened to (no port).
    server_host: String,
    max_message_size: usize,
    socket_timeout: Option<Duration>,
    hello: HelloReply,
    broken: bool,
    /// The request id of the last reply, when it said `moreToCome`.
    more_to_come: Option<i32>,
    /// The request id of the streamed command whose replies are being read, while
    /// the server streams them (see [`Connection::read_message`]).
    streaming_request: Option<i32>,
    /// MONGODB-OIDC: the authenticator and this connection's token, kept for
    /// reauthentication (error 391).
    oidc: Option<(Arc<OidcAuthenticator>, OidcConnectionCache)>,
    /// The Stable API the client declares, which every command it sends carries.
    server_api: Option<ServerApi>,
    /// The compressor negotiated in the handshake, if any: every message but those of
    /// the never-compress list goes out compressed with it.
    compression: Option<Compression>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("address", &self.address)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Opens a connection and runs the handshake, all within `connect_timeout`.
    ///
    /// Network errors and timeouts before the hello reply is in are labelled
    /// [`SYSTEM_OVERLOADED_ERROR`] and [`RETRYABLE_ERROR`] (CMAP spec,
    /// "Backpressure-enabled"); TLS failures and errors while authenticating are not.
    pub(crate) async fn establish(
        transport: &dyn Transport,
        clock: &dyn Clock,
        settings: &ConnectionSettings,
    ) -> Result<Connection> {
        Self::establish_observed(transport, clock, settings, None).await
    }

    /// [`establish`](Self::establish), telling `observer` of the hello reply.
    pub(crate) async fn establish_observed(
        transport: &dyn Transport,
        clock: &dyn Clock,
        settings: &ConnectionSettings,
        observer: Option<&dyn HelloObserver>,
    ) -> Result<Connection> {
        let address = settings.target.to_string();
        let hello_seen = HelloSeen::new();
        // Set once a proxy, if any, has opened the tunnel: errors before that are the
        // proxy's, never a sign of server overload (CMAP spec, "Backpressure-enabled").
        let tunnel_open = AtomicBool::new(false);
        let started = clock.now();
        let establish = async {
            let stream = open_stream(transport, clock, started, settings, &tunnel_open)
                .await
                .map_err(|error| Error::from_io(&address, error))?;
            let mut connection = Connection {
                stream,
                address: address.clone(),
                server_host: settings.target.host.clone(),
                max_message_size: wire::MAX_MESSAGE_SIZE,
                socket_timeout: None,
                hello: HelloReply::default(),
                broken: false,
                more_to_come: None,
                streaming_request: None,
                oidc: None,
                server_api: settings.server_api.clone(),
                compression: None,
            };
            connection
                .handshake(settings, clock, &hello_seen, observer)
                .await?;
            Ok::<_, Error>(connection)
        };
        let mut connection = within(
            clock,
            settings.connect_timeout,
            &address,
            "connect",
            establish,
        )
        .await
        .map_err(|error| match hello_seen.get() {
            // Load-balanced mode: SDAM clears this service's connections only.
            Some(Some(service_id)) => error.with_service_id(*service_id),
            Some(None) => error,
            None if settings.proxy.is_some() && !tunnel_open.load(Ordering::Relaxed) => error,
            None => match &*error.kind {
                // Not a certificate or hostname refused by TLS (CMAP spec,
                // "Backpressure-enabled": "non-I/O TLS errors").
                ErrorKind::Io(_) if error.is_network_error() => error
                    .with_label(SYSTEM_OVERLOADED_ERROR)
                    .with_label(RETRYABLE_ERROR),
                _ => error,
            },
        })?;
        connection.socket_timeout = settings.socket_timeout;
        Ok(connection)
    }

    /// The handshake (MongoDB Handshake spec) and, with a credential, authentication
    /// (Authentication spec), speculatively inside the hello when the mechanism can.
    /// `hello_seen` is set once the hello reply is parsed, and `observer` told of it.
    async fn handshake(
        &mut self,
        settings: &ConnectionSettings,
        clock: &dyn Clock,
        hello_seen: &HelloSeen,
        observer: Option<&dyn HelloObserver>,
    ) -> Result<()> {
        // MONGODB-AWS (never speculative, never negotiated) gets its credentials after
        // the hello, possibly from AWS endpoints: a failure there is no sign of an
        // overloaded server.
        let aws = settings
            .auth
            .as_ref()
            .filter(|auth| auth.credential.mechanism == Some(AuthMechanism::MongoDbAws));
        let mut auth = settings
            .auth
            .as_ref()
            .filter(|auth| auth.oidc.is_none() && aws.is_none())
            .map(|auth| ConnectionAuth::new(&auth.credential, &auth.context))
            .transpose()?;
        let mut oidc = settings
            .auth
            .as_ref()
            .and_then(|auth| auth.oidc.clone())
            .map(|oidc| (oidc, OidcConnectionCache::default()));
        let (mut command, legacy) = hello_command(
            &settings.metadata.document(),
            settings.load_balanced,
            settings.server_api.as_ref(),
            &settings.compressors,
        );
        if let Some(auth) = &mut auth {
            auth.prepare_hello(&mut command);
        }
        if let Some((oidc, cache)) = &mut oidc {
            if let Some(speculative) = oidc.speculative(cache, &settings.target.host) {
                command.insert("speculativeAuthenticate", speculative);
            }
        }
        let request_id = next_request_id();
        let frame = if legacy {
            encode_op_query(request_id, "admin.$cmd", &to_raw(&command)?)
        } else {
            command.insert("$db", "admin");
            OpMsg::new(to_raw(&command)?).encode(request_id, 0)
        };
        let reply = self
            .round_trip(&frame, request_id, clock, self.socket_timeout)
            .await?;
        let mut reply = command_reply(reply)?;
        // The speculative reply (for SCRAM the server-first message: nonce, salt,
        // iteration count) is for the authentication conversation only, never kept in
        // the hello that the connection, the topology, its events and its Debug output
        // keep: the Command Logging and Monitoring spec treats it as sensitive
        // ("Security").
        let speculative = reply.remove("speculativeAuthenticate");
        let speculative = speculative.as_ref().and_then(Bson::as_document);
        let hello = HelloReply::parse(reply)?;
        // Set once, here: the handshake runs once per connection.
        let _ = hello_seen.set(hello.service_id);
        if let Some(observer) = observer {
            observer.hello_received(&hello);
        }
        if !settings.monitoring {
            hello.check_compatible(&self.address)?;
        }
        if settings.load_balanced && hello.service_id.is_none() {
            return Err(Error::new(ErrorKind::IncompatibleServer {
                message: LOAD_BALANCER_UNSUPPORTED.to_owned(),
            }));
        }
        // Capped at the protocol's limit whatever the server advertised (HelloReply).
        self.max_message_size = hello.message_size_limit().max(HEADER_LEN);
        // No compressor in common is no error (OP_COMPRESSED spec, "MongoDB Handshake
        // Amendment"): messages then go uncompressed.
        self.compression =
            compression::negotiate(&settings.compressors, &hello.compression).map(|compressor| {
                Compression {
                    compressor,
                    zlib_level: settings.zlib_compression_level,
                }
            });
        if let Some(aws) = aws {
            // It signs with the time of this authentication, and checks its cached
            // credentials against it.
            let context = AuthContext {
                unix_time: clock.unix_time(),
                ..aws.context.clone()
            };
            auth = Some(
                ConnectionAuth::establish(&aws.credential, &context)
                    .await
                    .inspect_err(|_| aws.context.aws_cache.clear())?,
            );
        }
        if let (Some(auth), Some(auth_settings)) = (auth, &settings.auth) {
            self.authenticate(auth, &hello.raw, speculative, auth_settings, clock)
                .await
                // MONGODB-AWS: "If AWS authentication fails for any reason, the cache
                // MUST be cleared" (a no-op for the other mechanisms).
                .inspect_err(|_| auth_settings.context.aws_cache.clear())?;
        }
        if let Some((oidc, mut cache)) = oidc {
            if !oidc.speculative_done(&mut cache, speculative) {
                let context = self.oidc_context(&settings.target.host, clock);
                let mut sender = SaslCommands {
                    connection: self,
                    clock,
                };
                oidc.authenticate(&mut cache, &context, &mut sender).await?;
            }
            self.oidc = Some((oidc, cache));
        }
        self.hello = hello;
        Ok(())
    }

    fn oidc_context<'a>(&self, server_host: &'a str, clock: &'a dyn Clock) -> OidcContext<'a> {
        OidcContext {
            server_host,
            timeout: oidc::DEFAULT_CALLBACK_TIMEOUT,
            clock,
        }
    }

    /// Whether `error`, from a command on this connection, asks for a new
    /// MONGODB-OIDC authentication (code 391) that this connection can perform.
    pub(crate) fn needs_reauthentication(&self, error: &Error) -> bool {
        self.oidc.is_some() && oidc::should_reauthenticate(Some(AuthMechanism::MongoDbOidc), error)
    }

    /// Authenticates again (Authentication spec, MONGODB-OIDC "Reauthentication"),
    /// after a command failed with [`needs_reauthentication`](Self::needs_reauthentication).
    pub(crate) async fn reauthenticate(
        &mut self,
        server_host: &str,
        clock: &dyn Clock,
    ) -> Result<()> {
        let Some((oidc, mut cache)) = self.oidc.take() else {
            return Ok(());
        };
        let context = self.oidc_context(server_host, clock);
        let mut sender = SaslCommands {
            connection: self,
            clock,
        };
        let result = oidc.reauthenticate(&mut cache, &context, &mut sender).await;
        self.oidc = Some((oidc, cache));
        result
    }

    /// Runs the authentication conversation to its end. A refusal from the server
    /// becomes one [`ErrorKind::Authentication`] error naming the mechanism and source.
    async fn authenticate(
        &mut self,
        auth: ConnectionAuth,
        hello_reply: &Document,
        speculative: Option<&Document>,
        settings: &AuthSettings,
        clock: &dyn Clock,
    ) -> Result<()> {
        let source = settings.credential.effective_source();
        let key_derivation = settings.context.key_derivation.as_deref();
        let (mechanism, mut conversation, mut step) = auth.after_hello(hello_reply, speculative)?;
        while let Some(mut command) =
            auth::next_command(conversation.as_mut(), step, clock, key_derivation).await?
        {
            declare(self.server_api.as_ref(), &mut command);
            command.insert("$db", source);
            let reply =
                self.command(to_raw(&command)?, clock)
                    .await
                    .map_err(|error| match &*error.kind {
                        ErrorKind::Command(refusal) => Error::new(ErrorKind::Authentication {
                            mechanism: mechanism.name(),
                            source: source.to_string(),
                            message: refusal.message.clone(),
                            code: Some(refusal.code),
                        }),
                        _ => error,
                    })?;
            step = conversation.reply(&reply)?;
        }
        Ok(())
    }

    /// The server's handshake reply.
    pub fn hello(&self) -> &HelloReply {
        &self.hello
    }

    /// The compressor negotiated in the handshake, if any.
    pub fn compressor(&self) -> Option<Compressor> {
        self.compression.map(|compression| compression.compressor)
    }

    /// `message` as it goes on the wire: an OP_MSG, wrapped in an OP_COMPRESSED when a
    /// compressor was negotiated and its command may be compressed (OP_COMPRESSED spec,
    /// "Messages not allowed to be compressed").
    fn frame(&self, message: &OpMsg, request_id: i32) -> Result<Vec<u8>> {
        // The server refuses a message over its maxMessageSizeBytes itself; only a
        // frame that cannot be written at all is refused here.
        let frame = message
            .try_encode(request_id, 0, i32::MAX as usize)
            .map_err(|error| {
                Error::invalid_argument(format!("the command cannot be sent: {error}"))
            })?;
        let command_name = message.body.iter().next().and_then(|element| element.ok());
        match self.compression {
            Some(compression)
                if command_name
                    .is_some_and(|(name, _)| compression::may_compress(name.as_str())) =>
            {
                compression
                    .compress_frame(&frame)
                    .map_err(|error| self.protocol_error(error))
            }
            _ => Ok(frame),
        }
    }

    /// The host name or IP address the connection was opened to, without the port.
    pub fn server_host(&self) -> &str {
        &self.server_host
    }

    /// Whether the connection failed and must be discarded.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Whether the connection, idle between commands, is still open as far as its
    /// stream can tell at once ([`Stream::is_open_and_idle`]).
    pub fn is_open_and_idle(&self) -> bool {
        self.stream.is_open_and_idle()
    }

    /// Runs one command (its body must already carry `$db`) and returns the reply
    /// body; an `ok: 0` reply is a [`CommandError`].
    pub(crate) async fn command(
        &mut self,
        body: RawDocumentBuf,
        clock: &dyn Clock,
    ) -> Result<Document> {
        self.command_with_id(next_request_id(), body, clock).await
    }

    /// [`command`](Self::command) sent with the given request id (which command
    /// monitoring has already announced).
    pub(crate) async fn command_with_id(
        &mut self,
        request_id: i32,
        body: RawDocumentBuf,
        clock: &dyn Clock,
    ) -> Result<Document> {
        let limit = self.socket_timeout;
        let reply = self
            .send_message(request_id, &OpMsg::new(body), clock, limit)
            .await?;
        reply_document(&check_reply(reply)?)
    }

    /// The connection's socketTimeoutMS: the bound of each reply to its own commands
    /// (handshake, authentication), and what an operation's round trip starts from
    /// (`operation::OperationContext::read_limit`).
    pub(crate) fn socket_timeout(&self) -> Option<Duration> {
        self.socket_timeout
    }

    /// Sends `message` (a command body and its document sequences) with the given
    /// request id and returns the reply body as it came, `ok: 0` or not (see
    /// [`check_reply`]): sessions read its `$clusterTime` and `operationTime` either way.
    /// The reply must come within `read_limit` (`None`: no bound).
    pub(crate) async fn send_message(
        &mut self,
        request_id: i32,
        message: &OpMsg,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<RawDocumentBuf> {
        let frame = self.frame(message, request_id)?;
        self.round_trip(&frame, request_id, clock, read_limit).await
    }

    /// Sends the `preceding` messages (with their request ids) and `message` back to
    /// back, in one write, then reads their replies in the order sent: a server reads
    /// a connection's next request only after it answered the previous one, so the
    /// replies come in request order. One round trip for all of them, where sending
    /// each after the reply of the one before takes one each. Returns the replies of
    /// `preceding` as they came (`ok: 0` or not, see [`check_reply`]) and then the
    /// reply to `message`; `read_limit` bounds all the reads together. A reply that
    /// cannot be read fails the whole and closes the connection, as for
    /// [`send_message`](Self::send_message).
    pub(crate) async fn send_pipelined(
        &mut self,
        preceding: &[(i32, OpMsg)],
        request_id: i32,
        message: &OpMsg,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<(Vec<RawDocumentBuf>, RawDocumentBuf)> {
        let mut frames = Vec::new();
        for (id, preceding) in preceding {
            frames.extend(self.frame(preceding, *id)?);
        }
        frames.extend(self.frame(message, request_id)?);
        if self.more_to_come.is_some() {
            // The server is still streaming replies to an earlier request.
            self.broken = true;
        }
        let started = clock.now();
        // What is left of the limit for the next reply.
        let rest =
            |clock: &dyn Clock| read_limit.map(|limit| limit.saturating_sub(clock.now() - started));
        let mut frame = Some(frames.as_slice());
        let mut replies = Vec::with_capacity(preceding.len());
        for (id, _) in preceding {
            let reply = self.exchange(frame.take(), *id, clock, rest(clock)).await?;
            replies.push(reply);
        }
        let reply = self
            .exchange(frame.take(), request_id, clock, rest(clock))
            .await?;
        Ok((replies, reply))
    }

    /// Sends `message` flagged `moreToCome`, an unacknowledged write (OP_MSG spec,
    /// "moreToCome On Requests"): the server sends no reply, so none is read.
    pub(crate) async fn send_without_reply(
        &mut self,
        request_id: i32,
        message: &OpMsg,
    ) -> Result<()> {
        if self.broken {
            return Err(self.closed_error());
        }
        let frame = self.frame(message, request_id)?;
        let written = self.stream.write_all(&frame).await;
        written.map_err(|error| {
            self.broken = true;
            Error::from_io(&self.address, error)
        })
    }

    /// Sends a command flagged `exhaustAllowed` (the streaming hello of the Server
    /// Monitoring spec) and returns its first reply. When that reply says
    /// `moreToCome`, the server keeps sending replies unasked: read them with
    /// [`Connection::next_streamed_reply`]; the connection serves nothing else after.
    pub(crate) async fn stream_command(
        &mut self,
        body: RawDocumentBuf,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<Document> {
        let request_id = next_request_id();
        let mut message = OpMsg::new(body);
        message.flags = MsgFlags::EXHAUST_ALLOWED;
        let frame = self.frame(&message, request_id)?;
        self.streaming_request = Some(request_id);
        let reply = self
            .exchange(Some(&frame), request_id, clock, read_limit)
            .await?;
        command_reply(reply)
    }

    /// Whether the server announced another reply (`moreToCome`) that has not been
    /// read yet.
    pub(crate) fn has_more_to_come(&self) -> bool {
        self.more_to_come.is_some()
    }

    /// Reads the next reply the server streams after a `moreToCome` reply.
    pub(crate) async fn next_streamed_reply(
        &mut self,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<Document> {
        let Some(previous) = self.more_to_come else {
            return Err(Error::invalid_argument(
                "no streamed reply is expected on this connection",
            ));
        };
        let reply = self.exchange(None, previous, clock, read_limit).await?;
        command_reply(reply)
    }

    /// Sends `frame` and reads the reply to `request_id` within `read_limit`.
    async fn round_trip(
        &mut self,
        frame: &[u8],
        request_id: i32,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<RawDocumentBuf> {
        if self.more_to_come.is_some() {
            // The server is still streaming replies to an earlier request.
            self.broken = true;
        }
        self.exchange(Some(frame), request_id, clock, read_limit)
            .await
    }

    /// Writes `frame` (if any) and reads the message that answers `response_to`,
    /// within `read_limit`; any failure closes the connection for good.
    async fn exchange(
        &mut self,
        frame: Option<&[u8]>,
        response_to: i32,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<RawDocumentBuf> {
        if self.broken {
            return Err(self.closed_error());
        }
        let result = self
            .write_and_read(frame, response_to, clock, read_limit)
            .await;
        if result.is_err() {
            self.broken = true;
        }
        result
    }

    /// The error of a connection closed for good after an earlier failure.
    fn closed_error(&self) -> Error {
        Error::network(
            self.address.clone(),
            std::io::ErrorKind::NotConnected,
            "connection was closed after an earlier error",
        )
    }

    async fn write_and_read(
        &mut self,
        frame: Option<&[u8]>,
        response_to: i32,
        clock: &dyn Clock,
        read_limit: Option<Duration>,
    ) -> Result<RawDocumentBuf> {
        // The read's time runs from before the write: a task that ran late after its
        // write (a busy machine) would otherwise start the clock late, and take a
        // reply that the server sent after the limit.
        let started = clock.now();
        if let Some(frame) = frame {
            self.stream
                .write_all(frame)
                .await
                .map_err(|error| Error::from_io(&self.address, error))?;
        }
        let address = self.address.clone();
        let reply = self.read_message(response_to);
        let spent = clock.now() - started;
        let (request_id, message) =
            within_rest(clock, read_limit, spent, &address, "reading a reply", reply).await?;
        // A reply found ready only after the limit passed (this task, polled late on a
        // busy machine, saw the reply and the timer at once) is a read that timed out:
        // once the timeout expires the driver MUST return an error, and the connection
        // MUST be closed (CSOT spec, "Errors" and "Command Execution"), which the
        // error does (`exchange`). Taken, it would make an operation that outlived its
        // timeoutMS or socketTimeoutMS succeed, depending on when it was polled.
        if let Some(limit) = read_limit.filter(|&limit| clock.now() - started > limit) {
            return Err(Error::timed_out(&address, "reading a reply", limit));
        }
        let more_to_come =
            matches!(&message, Message::Msg(msg) if msg.flags.contains(MsgFlags::MORE_TO_COME));
        if more_to_come && self.streaming_request.is_none() {
            // Only a request flagged exhaustAllowed may be answered by a stream (OP_MSG
            // spec, "exhaustAllowed"). Accepted, the connection would go back to its pool
            // with a reply still coming, and fail the next, unrelated command; the error
            // closes it instead ("moreToCome On Responses": consume every reply or close
            // the connection).
            return Err(self.protocol_error(wire::WireError::UnexpectedMoreToCome));
        }
        // A streamed reply answers the previous reply of the stream (OP_MSG spec,
        // "moreToCome").
        self.more_to_come = more_to_come.then_some(request_id);
        if !more_to_come {
            self.streaming_request = None;
        }
        message
            .into_reply_document()
            .map_err(|error| self.protocol_error(error))
    }

    /// Reads one message, which must answer `response_to`; returns its request id too.
    async fn read_message(&mut self, response_to: i32) -> Result<(i32, Message)> {
        let mut header_bytes = [0u8; HEADER_LEN];
        self.read_exact(&mut header_bytes).await?;
        let header = MessageHeader::parse(&header_bytes);
        // The length is checked against maxMessageSizeBytes before anything is allocated.
        let body_len = header
            .body_len(self.max_message_size)
            .map_err(|error| self.protocol_error(error))?;
        // A streamed reply answers the previous reply (OP_MSG spec, "moreToCome On
        // Responses"), but SecantusDB has every streamed reply answer the streamed
        // command itself. Taken as the same stream, like pymongo, which does not check
        // streamed replies' `responseTo`; refused, the monitor would lose its
        // connection and mark the server Unknown at every second heartbeat.
        let expected = match self.streaming_request {
            Some(streamed) if self.more_to_come.is_some() && header.response_to == streamed => {
                streamed
            }
            _ => response_to,
        };
        check_response_to(&header, expected).map_err(|error| self.protocol_error(error))?;
        let message = match header.op_code {
            // A large reply (a find's batch): its document is read into a vector of its
            // own, which becomes the reply without a copy (`OpMsg::decode_parts`). Small
            // ones are read whole, in one read fewer.
            op_code::MSG if body_len > wire::GROWTH_STEP => {
                let mut head = [0; OpMsg::HEAD_LEN];
                self.read_exact(&mut head).await?;
                let rest = self.read_body(body_len - head.len()).await?;
                OpMsg::decode_parts(&header, head, rest).map(Message::Msg)
            }
            // Whatever was negotiated, a reply may come compressed with any compressor
            // (OP_COMPRESSED spec, "MongoDB Handshake Amendment").
            op_code::COMPRESSED => {
                let body = self.read_body(body_len).await?;
                compression::decompress_frame(&header, &body, self.max_message_size)
                    .and_then(|(original, body)| Message::decode(&original, &body))
            }
            _ => Message::decode(&header, &self.read_body(body_len).await?),
        };
        let message = message.map_err(|error| self.protocol_error(error))?;
        Ok((header.request_id, message))
    }

    /// Reads a body of `len` bytes into a buffer that grows as the bytes arrive
    /// ([`wire::grown_len`]): a frame announced huge and never sent costs one step, not
    /// its announced length (issue 21: 531 MB per connection for a frame announced at
    /// 2 GB).
    async fn read_body(&mut self, len: usize) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        while body.len() < len {
            let start = body.len();
            let end = wire::grown_len(start, len);
            // Exact: the last step must not round a genuine reply up to twice its size.
            body.reserve_exact(end - start);
            body.resize(end, 0);
            self.read_exact(&mut body[start..]).await?;
        }
        Ok(body)
    }

    async fn read_exact(&mut self, mut buf: &mut [u8]) -> Result<()> {
        while !buf.is_empty() {
            match self.stream.read(buf).await {
                Ok(0) => {
                    return Err(Error::network(
                        self.address.clone(),
                        std::io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ))
                }
                Ok(n) => buf = &mut buf[n..],
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(Error::from_io(&self.address, error)),
            }
        }
        Ok(())
    }

    fn protocol_error(&self, error: wire::WireError) -> Error {
        Error::invalid_response(self.address.clone(), error)
    }
}

/// Sends SASL commands to `$external` on a connection, for a mechanism that drives
/// its own exchange (MONGODB-OIDC).
struct SaslCommands<'c> {
    connection: &'c mut Connection,
    clock: &'c dyn Clock,
}

impl SaslSender for SaslCommands<'_> {
    fn send<'a>(&'a mut self, mut command: Document) -> BoxFuture<'a, Result<Document>> {
        boxed(async move {
            declare(self.connection.server_api.as_ref(), &mut command);
            command.insert("$db", "$external");
            let command = to_raw(&command)?;
            self.connection.command(command, self.clock).await
        })
    }
}

/// Opens the byte stream to `settings.target`: directly, or (for TCP, with a proxy)
/// through the SOCKS5 proxy, then TLS over the tunnel (SOCKS5 Support spec, "Connection
/// Establishment": connect to the proxy, the SOCKS5 handshake, then "continue with
/// connection establishment as if the connection was one to the destination host").
/// `tunnel_open` is set once the proxy is through.
async fn open_stream(
    transport: &dyn Transport,
    clock: &dyn Clock,
    started: Instant,
    settings: &ConnectionSettings,
    tunnel_open: &AtomicBool,
) -> std::io::Result<Box<dyn Stream>> {
    // What is left of connectTimeoutMS, for the host to give up on OCSP responders in
    // time (the Client Side Operations Timeout spec, "Server Selection": network
    // requests while connecting use the remaining time).
    let time_left = || {
        let spent = clock.now().saturating_duration_since(started);
        settings
            .connect_timeout
            .map(|limit| limit.saturating_sub(spent))
    };
    let mut target = settings.target.clone();
    target.time_left = time_left();
    let proxy = match &settings.proxy {
        Some(proxy) if !target.is_unix_socket() => proxy,
        _ => return connect_known(transport, &mut target, settings, time_left).await,
    };
    let to_proxy = ConnectTarget {
        host: proxy.host.clone(),
        port: proxy.port_or_default(),
        tls: None,
        addresses: Vec::new(),
        time_left: target.time_left,
    };
    let mut stream = transport.connect(&to_proxy).await.map_err(|error| {
        std::io::Error::new(
            error.kind(),
            format!("cannot connect to the SOCKS5 proxy {to_proxy}: {error}"),
        )
    })?;
    socks5::tunnel(&mut *stream, proxy, &target.host, target.port).await?;
    tunnel_open.store(true, Ordering::Relaxed);
    target.time_left = time_left();
    match target.tls {
        Some(_) => transport.secure(stream, &target).await,
        None => Ok(stream),
    }
}

/// Opens `target` directly, to the addresses the client's book gives for a host name
/// (its glue or an earlier look-up within their TTL, else a look-up now), so that a
/// name is asked once per TTL, not once per connection; a failed connection makes the
/// book forget them.
async fn connect_known(
    transport: &dyn Transport,
    target: &mut ConnectTarget,
    settings: &ConnectionSettings,
    time_left: impl Fn() -> Option<Duration>,
) -> std::io::Result<Box<dyn Stream>> {
    let book = match &settings.addresses {
        Some(book) if !target.is_unix_socket() && target.host.parse::<IpAddr>().is_err() => book,
        _ => return transport.connect(target).await,
    };
    target.addresses = book.addresses_of(&target.host).await;
    target.time_left = time_left();
    let connected = transport.connect(target).await;
    if connected.is_err() && !target.addresses.is_empty() {
        book.forget(&target.host);
    }
    connected
}

/// Runs `future` within `limit` (unbounded when `None`); running out is a timeout error
/// naming the address and what was being waited for.
async fn within<T>(
    clock: &dyn Clock,
    limit: Option<Duration>,
    address: &str,
    during: &'static str,
    future: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    within_rest(clock, limit, Duration::ZERO, address, during, future).await
}

/// [`within`] for a limit of which `spent` has already passed.
async fn within_rest<T>(
    clock: &dyn Clock,
    limit: Option<Duration>,
    spent: Duration,
    address: &str,
    during: &'static str,
    future: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let Some(limit) = limit else {
        return future.await;
    };
    rt::timeout(clock, limit.saturating_sub(spent), future)
        .await
        .map_err(|rt::Elapsed| Error::timed_out(address, during, limit))?
}

fn to_raw(document: &Document) -> Result<RawDocumentBuf> {
    RawDocumentBuf::try_from(document)
        .map_err(|error| Error::invalid_argument(format!("command cannot be encoded: {error}")))
}

/// Turns a reply into a document, or into a [`CommandError`] when it says `ok: 0`.
fn command_reply(reply: RawDocumentBuf) -> Result<Document> {
    reply_document(&check_reply(reply)?)
}

/// A reply body (validated when its message was decoded) as a [`Document`]: for the
/// replies read field by field; documents handed to users are deserialized from the
/// raw bytes instead.
pub(crate) fn reply_document(reply: &RawDocument) -> Result<Document> {
    Document::try_from(reply)
        .map_err(|error| Error::deserialization(format!("the reply cannot be read: {error}")))
}

/// The reply of a command if it says `ok: 1`; otherwise the [`CommandError`] it
/// describes. Only a failed reply is turned into a [`Document`].
pub(crate) fn check_reply(reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
    let ok = match reply.get("ok") {
        Ok(Some(RawBsonRef::Boolean(ok))) => ok,
        Ok(Some(value)) => {
            Bson::try_from(value)
                .ok()
                .as_ref()
                .and_then(crate::bson_util::as_i64)
                == Some(1)
        }
        _ => false,
    };
    if ok {
        return Ok(reply);
    }
    let reply = reply_document(&reply)?;
    let error = CommandError {
        code: reply
            .get("code")
            .and_then(crate::bson_util::as_i64)
            .and_then(|code| i32::try_from(code).ok())
            .unwrap_or(0),
        code_name: reply.get_str("codeName").unwrap_or_default().to_string(),
        message: reply.get_str("errmsg").unwrap_or_default().to_string(),
        error_labels: reply
            .get_array("errorLabels")
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|label| label.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        topology_version: crate::sdam::TopologyVersion::from_reply(&reply),
    };
    Err(Error::from(error).with_server_reply(reply))
}

#[cfg(test)]
mod tests {
    //! The connection against a scripted in-memory server: every byte it sends is
    //! recorded, every byte it reads comes from the script.

    use std::collections::VecDeque;
    use std::io;
    use std::sync::{Arc, Mutex};

    use bson::{doc, RawDocument};
    use futures::executor::block_on;

    use super::*;
    use crate::rt::{boxed, BoxFuture, Instant};
    use crate::wire::op_code;

    /// Given the request frame, the bytes the server answers with (`None`: it goes silent).
    type Responder = Box<dyn FnMut(&[u8]) -> Option<Vec<u8>> + Send>;

    #[derive(Clone, Default)]
    struct Script {
        responders: Arc<Mutex<VecDeque<Responder>>>,
        sent: Arc<Mutex<Vec<Vec<u8>>>>,
        /// The most bytes one read hands over (`None`: all there are), to play a server
        /// whose reply arrives in pieces.
        piece: Option<usize>,
        /// The largest buffer the connection offered to one read: how much memory it
        /// set aside ahead of the bytes that arrived.
        largest_read: Arc<Mutex<usize>>,
    }

    impl Script {
        fn then(self, responder: impl FnMut(&[u8]) -> Option<Vec<u8>> + Send + 'static) -> Self {
            self.responders
                .lock()
                .unwrap()
                .push_back(Box::new(responder));
            self
        }
        fn in_pieces_of(mut self, piece: usize) -> Self {
            self.piece = Some(piece);
            self
        }
        fn sent(&self) -> Vec<Vec<u8>> {
            self.sent.lock().unwrap().clone()
        }
        fn largest_read(&self) -> usize {
            *self.largest_read.lock().unwrap()
        }
    }

    struct ScriptedStream {
        script: Script,
        pending: Vec<u8>,
        silent: bool,
    }

    impl Stream for ScriptedStream {
        fn read<'a>(&'a mut self, buf: &'a mut [u8]) -> BoxFuture<'a, io::Result<usize>> {
            {
                let mut largest = self.script.largest_read.lock().unwrap();
                *largest = (*largest).max(buf.len());
            }
            if self.silent {
                return boxed(futures::future::pending());
            }
            let piece = self.script.piece.unwrap_or(usize::MAX);
            let n = buf.len().min(self.pending.len()).min(piece);
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            boxed(async move { Ok(n) })
        }

        fn write_all<'a>(&'a mut self, buf: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
            self.script.sent.lock().unwrap().push(buf.to_vec());
            let responder = self.script.responders.lock().unwrap().pop_front();
            match responder.and_then(|mut respond| respond(buf)) {
                Some(reply) => self.pending.extend(reply),
                None => self.silent = true,
            }
            boxed(async { Ok(()) })
        }
    }

    impl Transport for Script {
        fn connect<'a>(
            &'a self,
            _: &'a ConnectTarget,
        ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
            let stream = ScriptedStream {
                script: self.clone(),
                pending: Vec::new(),
                silent: false,
            };
            boxed(async move { Ok(Box::new(stream) as Box<dyn Stream>) })
        }
    }

    /// A test clock: with `sleeps_end`, every sleep ends at once, so any wait on a
    /// silent server times out; without, no sleep ever ends.
    struct TestClock {
        sleeps_end: bool,
    }

    const INSTANT_TIMEOUTS: TestClock = TestClock { sleeps_end: true };
    const NO_TIMEOUTS: TestClock = TestClock { sleeps_end: false };

    impl Clock for TestClock {
        fn now(&self) -> Instant {
            Instant::from_origin(Duration::ZERO)
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
            match self.sleeps_end {
                true => boxed(async {}),
                false => boxed(futures::future::pending()),
            }
        }
    }

    fn settings() -> ConnectionSettings {
        ConnectionSettings {
            target: ConnectTarget {
                host: "db.test".into(),
                port: 27017,
                tls: None,
                addresses: Vec::new(),
                time_left: None,
            },
            connect_timeout: Some(Duration::from_secs(10)),
            socket_timeout: None,
            metadata: Arc::new(ClientMetadata::new(
                doc! { "driver": { "name": "anymongo", "version": "test" } },
            )),
            auth: None,
            load_balanced: false,
            server_api: None,
            compressors: Vec::new(),
            zlib_compression_level: None,
            proxy: None,
            addresses: None,
            monitoring: false,
        }
    }

    fn request_id(frame: &[u8]) -> i32 {
        MessageHeader::parse(frame[..HEADER_LEN].try_into().unwrap()).request_id
    }

    fn op_reply(response_to: i32, document: Document) -> Vec<u8> {
        let document = RawDocumentBuf::try_from(&document).unwrap();
        wire::OpReply::command_reply(document).encode(1, response_to)
    }

    fn op_msg(response_to: i32, document: Document) -> Vec<u8> {
        OpMsg::new(RawDocumentBuf::try_from(&document).unwrap()).encode(2, response_to)
    }

    fn hello(fields: Document) -> impl FnMut(&[u8]) -> Option<Vec<u8>> + Send {
        move |frame| {
            let mut reply =
                doc! { "ismaster": true, "helloOk": true, "maxWireVersion": 21, "ok": 1 };
            reply.extend(fields.clone());
            Some(op_reply(request_id(frame), reply))
        }
    }

    fn connect(script: &Script) -> Result<Connection> {
        block_on(Connection::establish(script, &NO_TIMEOUTS, &settings()))
    }

    fn ping(connection: &mut Connection) -> Result<Document> {
        let body = RawDocumentBuf::try_from(&doc! { "ping": 1, "$db": "admin" }).unwrap();
        block_on(connection.command(body, &NO_TIMEOUTS))
    }

    #[test]
    fn handshake_is_legacy_hello_over_op_query_then_commands_use_op_msg() {
        let script = Script::default()
            .then(hello(doc! {}))
            .then(|frame| Some(op_msg(request_id(frame), doc! { "ok": 1.0 })));
        let mut connection = connect(&script).unwrap();
        assert!(connection.hello().hello_ok);
        assert_eq!(ping(&mut connection).unwrap().get_f64("ok").unwrap(), 1.0);

        let sent = script.sent();
        let hello = MessageHeader::parse(sent[0][..HEADER_LEN].try_into().unwrap());
        assert_eq!(hello.op_code, op_code::QUERY);
        assert_eq!(hello.length as usize, sent[0].len());
        // flags, then the cstring "admin.$cmd", numberToSkip 0, numberToReturn -1, query.
        let body = &sent[0][HEADER_LEN..];
        assert_eq!(&body[4..15], b"admin.$cmd\0");
        assert_eq!(&body[15..23], [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let query = Document::try_from(RawDocument::from_bytes(&body[23..]).unwrap()).unwrap();
        assert_eq!(query.keys().next().unwrap(), "isMaster");
        assert!(query.get_bool("helloOk").unwrap());
        assert_eq!(
            query
                .get_document("client")
                .unwrap()
                .get_document("driver")
                .unwrap()
                .get_str("name")
                .unwrap(),
            "anymongo"
        );

        let command = MessageHeader::parse(sent[1][..HEADER_LEN].try_into().unwrap());
        assert_eq!(command.op_code, op_code::MSG);
        let Message::Msg(message) = Message::decode(&command, &sent[1][HEADER_LEN..]).unwrap()
        else {
            panic!("not OP_MSG");
        };
        let body = Document::try_from(message.body.as_ref()).unwrap();
        assert_eq!(body, doc! { "ping": 1, "$db": "admin" });
    }

    #[test]
    fn a_reply_to_another_request_is_a_protocol_error_and_closes_the_connection() {
        let script = Script::default()
            .then(hello(doc! {}))
            .then(|frame| Some(op_msg(request_id(frame) + 1, doc! { "ok": 1 })));
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::InvalidResponse {
                    error: wire::WireError::ResponseToMismatch { .. },
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_broken());
        let again = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*again.kind,
                ErrorKind::Io(error) if error.kind() == io::ErrorKind::NotConnected
            ),
            "{again}"
        );
        assert_eq!(
            script.sent().len(),
            2,
            "a broken connection sends nothing more"
        );
    }

    #[test]
    fn a_more_to_come_reply_to_an_ordinary_command_is_a_protocol_error_and_closes_it() {
        // OP_MSG spec, "exhaustAllowed": a ping did not allow a stream of replies.
        let script = Script::default().then(hello(doc! {})).then(|frame| {
            let mut reply = OpMsg::new(RawDocumentBuf::try_from(&doc! { "ok": 1 }).unwrap());
            reply.flags = MsgFlags::MORE_TO_COME;
            Some(reply.encode(100, request_id(frame)))
        });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::InvalidResponse {
                    error: wire::WireError::UnexpectedMoreToCome,
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_broken());
    }

    /// Three replies streamed to one command, each with the given `responseTo`
    /// (`None`: the command's request id), as one server write.
    fn streamed_replies(response_to: [Option<i32>; 3]) -> impl FnMut(&[u8]) -> Option<Vec<u8>> {
        move |frame| {
            let mut bytes = Vec::new();
            for (i, answers) in response_to.into_iter().enumerate() {
                let mut reply = OpMsg::new(RawDocumentBuf::try_from(&doc! { "ok": 1 }).unwrap());
                if i < 2 {
                    reply.flags = MsgFlags::MORE_TO_COME;
                }
                let id = 100 + i as i32;
                bytes.extend(reply.encode(id, answers.unwrap_or(request_id(frame))));
            }
            Some(bytes)
        }
    }

    fn read_stream(script: &Script) -> Result<()> {
        let mut connection = connect(script)?;
        let body = RawDocumentBuf::try_from(&doc! { "hello": 1, "$db": "admin" }).unwrap();
        block_on(connection.stream_command(body, &NO_TIMEOUTS, None))?;
        while connection.has_more_to_come() {
            block_on(connection.next_streamed_reply(&NO_TIMEOUTS, None))?;
        }
        Ok(())
    }

    #[test]
    fn streamed_replies_answer_the_previous_reply_or_the_streamed_command() {
        // As OP_MSG.md says: each answers the reply before it.
        let script = Script::default()
            .then(hello(doc! {}))
            .then(streamed_replies([None, Some(100), Some(101)]));
        read_stream(&script).unwrap();
        // As SecantusDB does: each answers the command.
        let script = Script::default()
            .then(hello(doc! {}))
            .then(streamed_replies([None, None, None]));
        read_stream(&script).unwrap();
        // Anything else is another conversation's reply.
        let script = Script::default()
            .then(hello(doc! {}))
            .then(streamed_replies([None, Some(100), Some(7)]));
        let error = read_stream(&script).unwrap_err();
        assert!(error.to_string().contains("7"), "{error}");
    }

    #[test]
    fn a_reply_longer_than_max_message_size_is_refused_before_reading_it() {
        let script = Script::default()
            .then(hello(doc! { "maxMessageSizeBytes": 1000 }))
            .then(|frame| {
                let mut reply =
                    op_msg(request_id(frame), doc! { "ok": 1, "pad": "x".repeat(2000) });
                reply.truncate(HEADER_LEN); // the header alone: the body must never be awaited
                Some(reply)
            });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::InvalidResponse {
                    error: wire::WireError::FrameTooLarge { max: 1000, .. },
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_broken());
    }

    /// The header of an OP_MSG reply to `frame` announcing `length` bytes.
    fn announced(frame: &[u8], length: i32) -> Vec<u8> {
        MessageHeader {
            length,
            request_id: 2,
            response_to: request_id(frame),
            op_code: op_code::MSG,
        }
        .to_bytes()
        .to_vec()
    }

    #[test]
    fn a_hostile_max_message_size_is_capped_and_a_2_gb_frame_refused_unread() {
        let script = Script::default()
            .then(hello(doc! { "maxMessageSizeBytes": i32::MAX }))
            .then(|frame| {
                let mut reply = announced(frame, i32::MAX);
                reply.extend_from_slice(b"a few bytes");
                Some(reply)
            });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::InvalidResponse {
                    error: wire::WireError::FrameTooLarge {
                        length: i32::MAX,
                        max: wire::MAX_MESSAGE_SIZE
                    },
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("48000000"), "{error}");
        // Nothing past the header was read: the largest read is the hello's.
        assert!(script.largest_read() < 1024, "{}", script.largest_read());
        assert!(connection.is_broken());
    }

    #[test]
    fn a_frame_takes_memory_as_its_bytes_arrive_not_as_its_header_announces() {
        // 40 MB announced (within the limit), 100 bytes sent, then the connection closes.
        let script = Script::default().then(hello(doc! {})).then(|frame| {
            let mut reply = announced(frame, 40_000_000);
            reply.extend_from_slice(&[0; 100]);
            Some(reply)
        });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::Io(error) if error.kind() == io::ErrorKind::UnexpectedEof
            ),
            "{error}"
        );
        assert!(
            script.largest_read() <= wire::GROWTH_STEP,
            "a buffer of {} bytes was set aside for 100 that came",
            script.largest_read()
        );
    }

    #[test]
    fn a_large_reply_arriving_in_small_pieces_is_read_whole() {
        let pad = "x".repeat(3 * wire::GROWTH_STEP + 7);
        let expected = pad.clone();
        let script = Script::default()
            .in_pieces_of(1000)
            .then(hello(doc! {}))
            .then(move |frame| Some(op_msg(request_id(frame), doc! { "ok": 1, "pad": &pad })));
        let mut connection = connect(&script).unwrap();
        let reply = ping(&mut connection).unwrap();
        assert_eq!(reply.get_str("pad").unwrap(), expected);
        assert!(script.largest_read() <= 2 * wire::GROWTH_STEP);
    }

    #[test]
    fn a_connection_closed_mid_reply_is_a_network_error() {
        let script = Script::default().then(hello(doc! {})).then(|frame| {
            let mut reply = op_msg(request_id(frame), doc! { "ok": 1 });
            reply.truncate(reply.len() - 3);
            Some(reply)
        });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::Io(error) if error.kind() == io::ErrorKind::UnexpectedEof
            ),
            "{error}"
        );
        assert!(connection.is_broken());
    }

    /// The request ids of the frames one write carried, in order.
    fn request_ids(mut bytes: &[u8]) -> Vec<i32> {
        let mut ids = Vec::new();
        while bytes.len() >= HEADER_LEN {
            let length = i32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
            ids.push(request_id(bytes));
            bytes = &bytes[length..];
        }
        ids
    }

    fn pipelined(connection: &mut Connection) -> Result<(Vec<RawDocumentBuf>, RawDocumentBuf)> {
        let message = |body: Document| OpMsg::new(RawDocumentBuf::try_from(&body).unwrap());
        let kill = message(doc! { "killCursors": "items", "cursors": [7_i64], "$db": "db" });
        let find = message(doc! { "find": "items", "$db": "db" });
        block_on(connection.send_pipelined(&[(41, kill)], 42, &find, &NO_TIMEOUTS, None))
    }

    #[test]
    fn pipelined_messages_go_in_one_write_and_their_replies_come_in_order() {
        let script = Script::default()
            .then(hello(doc! {}))
            .then(|frames| {
                // Both frames in the one write; a kill's ok: 0 is its reply, not an error.
                assert_eq!(request_ids(frames), [41, 42]);
                let mut replies = op_msg(41, doc! { "ok": 0.0, "code": 43, "errmsg": "gone" });
                replies.extend(op_msg(42, doc! { "cursor": { "id": 0_i64 }, "ok": 1 }));
                Some(replies)
            })
            .then(|frame| Some(op_msg(request_id(frame), doc! { "ok": 1 })));
        let mut connection = connect(&script).unwrap();
        let (preceding, reply) = pipelined(&mut connection).unwrap();
        assert_eq!(preceding.len(), 1);
        assert_eq!(preceding[0].get_i32("code").unwrap(), 43);
        assert!(reply.get_document("cursor").is_ok(), "{reply:?}");
        assert_eq!(
            script.sent().len(),
            2,
            "the handshake's write and the pipeline's"
        );
        assert!(!connection.is_broken());
        ping(&mut connection).unwrap();
    }

    #[test]
    fn a_pipeline_whose_replies_do_not_all_come_fails_whole_and_closes_the_connection() {
        let script = Script::default()
            .then(hello(doc! {}))
            .then(|_| Some(op_msg(41, doc! { "ok": 1 })));
        let mut connection = connect(&script).unwrap();
        let error = pipelined(&mut connection).unwrap_err();
        assert!(error.is_network_error(), "{error}");
        assert!(connection.is_broken());
    }

    #[test]
    fn a_command_error_keeps_the_connection() {
        let script = Script::default().then(hello(doc! {})).then(|frame| {
            Some(op_msg(
                request_id(frame),
                doc! { "ok": 0.0, "code": 11600, "codeName": "InterruptedAtShutdown", "errmsg": "bye",
                       "errorLabels": ["RetryableWriteError"] },
            ))
        });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert_eq!(error.code(), Some(11600));
        assert_eq!(
            error.labels(),
            &std::collections::HashSet::from(["RetryableWriteError".to_owned()])
        );
        assert!(
            error.to_string().contains("InterruptedAtShutdown"),
            "{error}"
        );
        assert!(!connection.is_broken());
    }

    #[test]
    fn an_incompatible_server_fails_the_handshake() {
        let script = Script::default().then(hello(doc! { "maxWireVersion": 5 }));
        let error = connect(&script).unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::IncompatibleServer { .. }),
            "{error}"
        );
    }

    /// A monitor's handshake keeps the connection, so that SDAM records the server's
    /// wire versions and selection reports the incompatibility at once.
    #[test]
    fn a_monitoring_handshake_accepts_an_incompatible_server() {
        let script = Script::default().then(hello(doc! { "maxWireVersion": 5 }));
        let settings = ConnectionSettings {
            monitoring: true,
            ..settings()
        };
        let connection = block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap();
        assert_eq!(connection.hello().max_wire_version, 5);
    }

    #[test]
    fn a_failed_hello_fails_the_handshake() {
        let script = Script::default().then(|frame| {
            Some(op_reply(
                request_id(frame),
                doc! { "ok": 0, "code": 18, "errmsg": "no" },
            ))
        });
        assert_eq!(connect(&script).unwrap_err().code(), Some(18));
    }

    #[test]
    fn a_silent_server_times_out_the_connect() {
        let script = Script::default().then(|_| None);
        let error = block_on(Connection::establish(
            &script,
            &INSTANT_TIMEOUTS,
            &settings(),
        ))
        .unwrap_err();
        assert!(
            error
                .network_timeout()
                .is_some_and(|timeout| timeout.during == "connect")
                && error.server_address() == Some("db.test:27017"),
            "{error}"
        );
        // Before the hello reply: the server may be overloaded (CMAP backpressure).
        assert_eq!(
            error.labels(),
            &std::collections::HashSet::from([
                SYSTEM_OVERLOADED_ERROR.to_owned(),
                RETRYABLE_ERROR.to_owned()
            ])
        );
    }

    #[test]
    fn through_a_proxy_the_tunnel_comes_first_and_its_failures_carry_no_backpressure_labels() {
        let mut settings = settings();
        settings.proxy = Some(Socks5Proxy::builder().host("proxy.test").build());
        // The proxy accepts, connects, then the server answers the hello.
        let through = Script::default()
            .then(|_| Some(vec![5, 0]))
            .then(|_| Some(vec![5, 0, 0, 1, 10, 0, 0, 1, 0x69, 0x89]))
            .then(|frame| {
                Some(op_reply(
                    request_id(frame),
                    doc! { "ismaster": true, "maxWireVersion": 21, "ok": 1 },
                ))
            });
        block_on(Connection::establish(&through, &NO_TIMEOUTS, &settings)).unwrap();
        let sent = through.sent.lock().unwrap();
        assert_eq!(sent[0], [5, 1, 0]);
        assert_eq!(sent[1][..5], [5, 1, 0, 3, 7], "CONNECT to the name db.test");

        // A proxy that wants credentials: a network error naming the proxy, which
        // says nothing of the server's load (CMAP spec, "Backpressure-enabled").
        let refused = Script::default().then(|_| Some(vec![5, 0xFF]));
        let error = block_on(Connection::establish(&refused, &NO_TIMEOUTS, &settings)).unwrap_err();
        assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error}");
        assert!(
            error.to_string().contains("SOCKS5 proxy proxy.test:1080"),
            "{error}"
        );
        assert!(error.labels().is_empty(), "{error:?}");
    }

    #[test]
    fn only_network_errors_before_the_hello_reply_carry_backpressure_labels() {
        let cut_hello = Script::default().then(|frame| {
            let mut reply = op_reply(request_id(frame), doc! { "ismaster": true, "ok": 1 });
            reply.truncate(reply.len() - 3);
            Some(reply)
        });
        let error = connect(&cut_hello).unwrap_err();
        assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error}");
        assert!(error.contains_label(SYSTEM_OVERLOADED_ERROR), "{error:?}");
        let refused = Script::default().then(|frame| {
            Some(op_reply(
                request_id(frame),
                doc! { "ok": 0, "code": 18, "errmsg": "no" },
            ))
        });
        assert!(connect(&refused).unwrap_err().labels().is_empty());
    }

    #[test]
    fn load_balanced_handshake_is_hello_over_op_msg_and_requires_a_service_id() {
        let mut settings = settings();
        settings.load_balanced = true;
        let service_id = bson::oid::ObjectId::new();
        let answer = move |with_service_id: bool| {
            move |frame: &[u8]| {
                let mut reply = doc! { "isWritablePrimary": true, "msg": "isdbgrid", "maxWireVersion": 21, "ok": 1 };
                if with_service_id {
                    reply.insert("serviceId", service_id);
                }
                Some(op_msg(request_id(frame), reply))
            }
        };
        let script = Script::default().then(answer(true));
        let connection = block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap();
        assert_eq!(connection.hello().service_id, Some(service_id));
        let sent = &script.sent()[0];
        let header = MessageHeader::parse(sent[..HEADER_LEN].try_into().unwrap());
        assert_eq!(
            header.op_code,
            op_code::MSG,
            "the load-balanced hello is an OP_MSG"
        );
        let hello = OpMsg::decode(&header, &sent[HEADER_LEN..]).unwrap();
        let hello = Document::try_from(hello.body.as_ref()).unwrap();
        assert_eq!(hello.get_i32("hello").ok(), Some(1));
        assert_eq!(hello.get_bool("loadBalanced").ok(), Some(true));

        let script = Script::default().then(answer(false));
        let error = block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap_err();
        assert_eq!(error.to_string(), LOAD_BALANCER_UNSUPPORTED);
    }

    #[test]
    fn a_negotiated_compressor_wraps_commands_but_never_the_handshake_or_authentication() {
        let mut settings = settings();
        settings.compressors = vec![Compressor::Zlib, Compressor::Snappy];
        settings.zlib_compression_level = Some(9);
        // The server compresses its replies with a compressor of its choosing.
        let zstd = Compression {
            compressor: Compressor::Zstd,
            zlib_level: None,
        };
        let script = Script::default()
            .then(hello(doc! { "compression": ["snappy", "zlib"] }))
            .then(move |frame| {
                zstd.compress_frame(&op_msg(request_id(frame), doc! { "ok": 1 }))
                    .ok()
            })
            .then(|frame| Some(op_msg(request_id(frame), doc! { "ok": 1, "done": true })));
        let mut connection =
            block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap();
        assert_eq!(connection.compressor(), Some(Compressor::Zlib));
        assert_eq!(ping(&mut connection).unwrap().get_i32("ok").ok(), Some(1));
        let sasl = RawDocumentBuf::try_from(&doc! { "saslStart": 1, "$db": "admin" }).unwrap();
        let reply = block_on(connection.command(sasl, &NO_TIMEOUTS)).unwrap();
        assert_eq!(reply.get_bool("done").ok(), Some(true));

        let sent = script.sent();
        let op = |frame: &[u8]| MessageHeader::parse(frame[..HEADER_LEN].try_into().unwrap());
        let hello = op(&sent[0]);
        assert_eq!(hello.op_code, op_code::QUERY);
        let query = Document::from_reader(&sent[0][HEADER_LEN + 23..]).unwrap();
        assert_eq!(
            query.get_array("compression").unwrap(),
            &vec![bson::Bson::from("zlib"), bson::Bson::from("snappy")]
        );
        let ping = op(&sent[1]);
        assert_eq!(ping.op_code, op_code::COMPRESSED);
        assert_eq!(sent[1][HEADER_LEN + 8], Compressor::Zlib.id());
        let (original, body) =
            compression::decompress_frame(&ping, &sent[1][HEADER_LEN..], 1 << 20).unwrap();
        let Message::Msg(message) = Message::decode(&original, &body).unwrap() else {
            panic!("not OP_MSG");
        };
        assert_eq!(message.body.get_i32("ping").ok(), Some(1));
        assert_eq!(
            op(&sent[2]).op_code,
            op_code::MSG,
            "saslStart goes uncompressed"
        );
    }

    #[test]
    fn without_a_compressor_in_common_nothing_is_compressed() {
        let mut settings = settings();
        settings.compressors = vec![Compressor::Snappy];
        let script = Script::default()
            .then(hello(doc! {}))
            .then(|frame| Some(op_msg(request_id(frame), doc! { "ok": 1 })));
        let mut connection =
            block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap();
        assert_eq!(connection.compressor(), None);
        ping(&mut connection).unwrap();
        let ping = MessageHeader::parse(script.sent()[1][..HEADER_LEN].try_into().unwrap());
        assert_eq!(ping.op_code, op_code::MSG);
    }

    #[test]
    fn a_compressed_reply_declaring_a_huge_size_is_a_protocol_error() {
        let script = Script::default()
            .then(hello(doc! { "maxMessageSizeBytes": 1000 }))
            .then(|frame| {
                let reply = op_msg(request_id(frame), doc! { "ok": 1 });
                let mut compressed = Compression {
                    compressor: Compressor::Snappy,
                    zlib_level: None,
                }
                .compress_frame(&reply)
                .unwrap();
                compressed[HEADER_LEN + 4..HEADER_LEN + 8].copy_from_slice(&i32::MAX.to_le_bytes());
                Some(compressed)
            });
        let mut connection = connect(&script).unwrap();
        let error = ping(&mut connection).unwrap_err();
        assert!(
            matches!(
                &*error.kind,
                ErrorKind::InvalidResponse {
                    error: wire::WireError::UncompressedSizeOutOfBounds { max: 984, .. },
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_broken());
    }

    #[test]
    fn socket_timeout_bounds_each_reply() {
        let script = Script::default().then(hello(doc! {})).then(|_| None);
        let mut settings = settings();
        settings.socket_timeout = Some(Duration::from_millis(5));
        // The handshake runs under a clock that never fires; the command under one that does.
        let mut connection =
            block_on(Connection::establish(&script, &NO_TIMEOUTS, &settings)).unwrap();
        let body = RawDocumentBuf::try_from(&doc! { "ping": 1, "$db": "admin" }).unwrap();
        let error = block_on(connection.command(body, &INSTANT_TIMEOUTS)).unwrap_err();
        assert!(
            error
                .network_timeout()
                .is_some_and(|timeout| timeout.during == "reading a reply"),
            "{error}"
        );
        assert!(connection.is_broken());
    }
}
