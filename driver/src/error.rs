//! The driver's error type.
//!
//! Every failure a user can see is an [`Error`] whose [`ErrorKind`] says what went
//! wrong in terms they can act on: a bad argument, a network failure (with the
//! address), a TLS failure, a malformed reply, or an error the server returned
//! (with its `code`, `codeName`, `errmsg` and `errorLabels`).

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

pub use crate::crud::bulk_write::PartialBulkWriteResult;
mod gridfs;
use crate::wire::WireError;
use bson::oid::ObjectId;
use bson::Bson;
pub use gridfs::{GridFsErrorKind, GridFsFileIdentifier};

/// The result type of the driver.
pub type Result<T> = std::result::Result<T, Error>;

/// The label the pool puts on network errors while a connection is established: the
/// server may be overloaded, so SDAM leaves it alone (CMAP spec,
/// "Backpressure-enabled").
pub const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";

/// The label of errors after which the operation may be retried (with
/// [`SYSTEM_OVERLOADED_ERROR`], CMAP spec, "Backpressure-enabled").
pub const RETRYABLE_ERROR: &str = "RetryableError";

/// The label of an error after which the whole transaction may be retried
/// (Transactions spec, "Transient Transaction Error").
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";

/// The label of a commit error after which committing again may succeed
/// (Transactions spec, "UnknownTransactionCommitResult").
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";

/// The label of a write error after which the write may be retried (Retryable Writes
/// spec, "RetryableWriteError").
pub const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";

/// An error of the driver: what went wrong is its [`kind`](Error::kind), as in the
/// official `mongodb` crate (`match *error.kind { ... }`).
///
/// ```
/// # fn handle(error: anymongo::error::Error) {
/// use anymongo::error::{ErrorKind, WriteError, WriteFailure, TRANSIENT_TRANSACTION_ERROR};
/// match *error.kind {
///     ErrorKind::Write(WriteFailure::WriteError(WriteError { code: 11000, .. })) => {
///         eprintln!("duplicate key");
///     }
///     ErrorKind::Command(ref command) => eprintln!("{} ({})", command.message, command.code),
///     _ => {}
/// }
/// if error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
///     eprintln!("the transaction may be retried");
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong.
    pub kind: Box<ErrorKind>,
    /// The rest, boxed apart so that an `Error` stays two pointers wide.
    inner: Box<Inner>,
}

// Every fallible call returns an `Error`: it stays two pointers wide.
const _: () = assert!(std::mem::size_of::<Error>() == 2 * std::mem::size_of::<usize>());

#[derive(Debug, Clone)]
struct Inner {
    /// The server's `errorLabels` for a command error, and those the driver added.
    labels: HashSet<String>,
    /// Load-balanced mode: the service behind the load balancer that the failing
    /// connection reached, when the error came after its hello.
    service_id: Option<ObjectId>,
    /// The server's whole `ok: 0` reply, for an error the server returned.
    server_reply: Option<bson::Document>,
    /// The same as raw BSON, made when first asked for ([`Error::server_response`]).
    server_response: std::sync::OnceLock<bson::RawDocumentBuf>,
    /// `host:port` of the server the error happened with, for the kinds whose
    /// official shape has no field for it ([`ErrorKind::Io`],
    /// [`ErrorKind::ConnectionPoolCleared`], [`ErrorKind::InvalidResponse`]).
    address: Option<String>,
    /// Feature `error-backtrace`: where the error was made.
    #[cfg(feature = "error-backtrace")]
    backtrace: Arc<std::backtrace::Backtrace>,
}

/// What went wrong.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument or option given to the driver is invalid (a malformed URI, say).
    InvalidArgument {
        /// What is wrong with it.
        message: String,
    },
    /// Opening, reading or writing a connection failed: the transport's I/O error,
    /// whose [`kind`](io::Error::kind) says how. [`Error::server_address`] is the
    /// server's `host:port`. As in the official crate, this is also how a connection
    /// that timed out (connectTimeoutMS, socketTimeoutMS) fails: kind
    /// [`io::ErrorKind::TimedOut`], with a [`NetworkTimeout`] inside saying what was
    /// waited for ([`Error::network_timeout`]); and how a TLS handshake fails: kind
    /// [`io::ErrorKind::InvalidData`], with a [`crate::rt::TlsError`] inside. An
    /// operation's own `timeoutMS` passing is [`ErrorKind::OperationTimeout`] instead.
    ///
    /// ```
    /// # fn handle(error: anymongo::error::Error) {
    /// use anymongo::error::ErrorKind;
    /// if let ErrorKind::Io(io) = &*error.kind {
    ///     if io.kind() == std::io::ErrorKind::TimedOut {
    ///         eprintln!("timed out with {:?}: {io}", error.server_address());
    ///     }
    /// }
    /// # }
    /// ```
    Io(Arc<io::Error>),
    /// A DNS lookup failed: the SRV or TXT records of a `mongodb+srv` URI could not be
    /// found or are not valid (Initial DNS Seedlist Discovery spec).
    DnsResolve {
        /// What failed.
        message: String,
    },
    /// The server sent bytes that are not a valid reply; the connection was closed.
    /// [`Error::server_address`] is the server's `host:port`.
    InvalidResponse {
        /// What is wrong with the reply, and the server's address.
        message: String,
        /// The same, structured (an addition to the official shape).
        error: WireError,
    },
    /// The server's wire version range does not overlap the driver's.
    IncompatibleServer {
        /// The spec's compatibility message.
        message: String,
    },
    /// No server suitable for the operation was found within serverSelectionTimeoutMS.
    ServerSelection {
        /// What was looked for, how long, and the state of the topology and of each
        /// server (with the last error seen from it).
        message: String,
    },
    /// No connection came out of a server's pool within the check-out timeout
    /// (serverSelectionTimeoutMS, or waitQueueTimeoutMS when that is shorter): the
    /// CMAP spec's WaitQueueTimeoutError.
    WaitQueueTimeout {
        /// `host:port` of the server.
        address: String,
        /// How long the check-out waited.
        after: Duration,
        /// How the pool's connections were in use (in load-balanced mode, by cursors,
        /// transactions and other operations); may be empty.
        detail: String,
    },
    /// The server's pool was cleared (after an error that made its connections
    /// suspect) while the operation waited for a connection, or before it asked: the
    /// CMAP spec's PoolClearedError. Retrying the operation is safe.
    /// [`Error::server_address`] is the server's `host:port`.
    ConnectionPoolCleared {
        /// Which pool, and why it is unusable for now.
        message: String,
    },
    /// The server's pool is closed: the server left the topology or the client was
    /// closed (the CMAP spec's PoolClosedError).
    PoolClosed {
        /// `host:port` of the server.
        address: String,
    },
    /// The server answered a command with `ok: 0`.
    Command(CommandError),
    /// Authenticating a new connection failed.
    Authentication {
        /// The mechanism used, e.g. `"SCRAM-SHA-256"`.
        mechanism: &'static str,
        /// The database the credential was checked against (`authSource`).
        source: String,
        /// Why: the server's message, or what the driver found wrong in its replies.
        message: String,
        /// The server's error code, when the server refused (e.g. 18, AuthenticationFailed).
        code: Option<i32>,
    },
    /// A single write failed (a `writeErrors` entry), or its write concern could not be
    /// satisfied (`writeConcernError`), though the command itself succeeded.
    Write(WriteFailure),
    /// Some writes of an `insert_many` failed: every failure with the index of its
    /// document, and the `_id`s of those inserted (CRUD spec, "BulkWriteException").
    InsertMany(InsertManyError),
    /// Some writes of a [`Collection::bulk_write`](crate::Collection::bulk_write)
    /// failed: every failure with the index of its write, and what succeeded before
    /// (CRUD spec, "BulkWriteException"). An addition: the official crate has no
    /// collection-level bulk write.
    CollectionBulkWrite(BulkWriteFailure),
    /// A GridFS operation failed: a file is missing or corrupt, an upload stream is
    /// closed.
    GridFs(GridFsErrorKind),
    /// A [`crate::Client::bulk_write`] failed: writes that failed, or write concerns
    /// that were not satisfied, with what succeeded (Bulk Write spec,
    /// "BulkWriteException"); the error that stopped it, if any, is
    /// [`BulkWriteError::error`] and the whole error's
    /// [`source`](std::error::Error::source).
    BulkWrite(BulkWriteError),
    /// A document from the server could not be turned into the application's type.
    BsonDeserialization(bson::error::Error),
    /// An application value could not be turned into BSON.
    BsonSerialization(bson::error::Error),
    /// Something the driver relies on did not hold: a bug in the driver.
    Internal {
        /// What did not hold.
        message: String,
    },
    /// A session was asked of a deployment that does not support sessions.
    SessionsNotSupported,
    /// The TLS options given to the client are not valid (a certificate or key file
    /// that cannot be read, say).
    InvalidTlsConfig {
        /// What is wrong with them.
        message: String,
    },
    /// A transaction was used out of order: committed or aborted when none was
    /// started, started twice, and the like.
    Transaction {
        /// What was done out of order.
        message: String,
    },
    /// A change stream event came without its `_id` (the resume token, removed by a
    /// `$project` say): the stream could not resume after it.
    MissingResumeToken,
    /// A value of the application's, made into an error with [`Error::custom`] (to
    /// abort a transaction's callback, say); [`Error::get_custom`] gives it back.
    Custom(Arc<dyn Any + Send + Sync>),
    /// The client was shut down before the operation.
    Shutdown,
    /// The operation's `timeoutMS` passed (Client Side Operations Timeout spec,
    /// "Errors"): the driver stopped all its work and returned. Whatever the deadline
    /// cut (a server selection, a check-out, a socket read) or the server reported for
    /// it (`MaxTimeMSExpired`, code 50) is the `cause`; its labels are the error's.
    ///
    /// ```
    /// # fn handle(error: anymongo::Error) {
    /// use anymongo::ErrorKind;
    /// if let ErrorKind::OperationTimeout { timeout, cause, .. } = &*error.kind {
    ///     eprintln!("gave up after {timeout:?}; the last error: {cause:?}");
    /// }
    /// # }
    /// ```
    OperationTimeout {
        /// The `timeoutMS` the operation ran with.
        timeout: Duration,
        /// Where the deadline was noticed, e.g. `"server selection"`.
        during: &'static str,
        /// The error the deadline turned into this one, if any.
        cause: Option<Box<Error>>,
    },
    /// The server's replies are each valid but together make no sense (a cursor that
    /// is not tailable answering empty batches without end, say): the driver stopped
    /// rather than go on asking.
    MisbehavingServer {
        /// `host:port` of the server.
        address: String,
        /// What the server did.
        message: String,
    },
    /// The host could not run the operation: the blocking API's tokio runtime could
    /// not start (feature `sync`).
    Runtime {
        /// What the host said.
        message: String,
    },
}

/// What an [`ErrorKind::Io`] error of kind [`io::ErrorKind::TimedOut`] that the
/// driver's own bound ended holds ([`Error::network_timeout`]): which wait, and the
/// limit (connectTimeoutMS, socketTimeoutMS) that passed. An addition: the official
/// crate's timed-out `io::Error` says it in its message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkTimeout {
    /// What was being waited for, e.g. `"connect"` or `"reading a reply"`.
    pub during: &'static str,
    /// The limit that passed.
    pub after: Duration,
}

impl fmt::Display for NetworkTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} timed out after {:?}", self.during, self.after)
    }
}

impl std::error::Error for NetworkTimeout {}

/// A failed single write: [`ErrorKind::Write`].
#[derive(Debug, Clone, PartialEq)]
pub enum WriteFailure {
    /// The server refused the write (`writeErrors`).
    WriteError(WriteError),
    /// The write was done but its write concern was not satisfied (`writeConcernError`).
    WriteConcernError(WriteConcernError),
}

/// The server's refusal of a single write: [`WriteFailure::WriteError`].
#[derive(Debug, Clone, PartialEq)]
pub struct WriteError {
    /// The server's error code, e.g. 11000 (duplicate key).
    pub code: i32,
    /// The code's name, when the server sent one.
    pub code_name: Option<String>,
    /// The server's message.
    pub message: String,
    /// `errInfo`: more about the failure (e.g. a failed schema validation).
    pub details: Option<bson::Document>,
}

/// One entry of a write command's `writeErrors`: the failure of one of the writes
/// of an `insert_many` or a collection's `bulk_write`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedWriteError {
    /// The index of the failed write among those the operation was given.
    pub index: usize,
    /// The server's error code, e.g. 11000 (duplicate key).
    pub code: i32,
    /// The code's name, when the server sent one.
    pub code_name: Option<String>,
    /// The server's message.
    pub message: String,
    /// `errInfo`: more about the failure (e.g. a failed schema validation).
    pub details: Option<bson::Document>,
}

/// A write command's `writeConcernError`.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteConcernError {
    /// The server's error code, e.g. 64 (WriteConcernFailed).
    pub code: i32,
    /// The code's name, e.g. `"WriteConcernFailed"`; empty when the server sent none
    /// (a `String`, as the official crate has it).
    pub code_name: String,
    /// The server's message.
    pub message: String,
    /// `errInfo`.
    pub details: Option<bson::Document>,
}

impl From<IndexedWriteError> for WriteError {
    fn from(error: IndexedWriteError) -> Self {
        WriteError {
            code: error.code,
            code_name: error.code_name,
            message: error.message,
            details: error.details,
        }
    }
}

/// The failure of an `insert_many`: [`ErrorKind::InsertMany`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InsertManyError {
    /// Every document whose insert failed, by index (an ordered `insert_many` stops at
    /// the first); `None` when none did (only the write concern failed).
    pub write_errors: Option<Vec<IndexedWriteError>>,
    /// The last write concern error, if any.
    pub write_concern_error: Option<WriteConcernError>,
    /// The `_id` of every document inserted, by its index in the input.
    pub inserted_ids: HashMap<usize, Bson>,
}

impl From<BulkWriteFailure> for InsertManyError {
    fn from(failure: BulkWriteFailure) -> Self {
        InsertManyError {
            write_errors: Some(failure.write_errors).filter(|errors| !errors.is_empty()),
            write_concern_error: failure.write_concern_error,
            inserted_ids: failure.write_result.inserted_ids.into_iter().collect(),
        }
    }
}

/// The failure of a collection's bulk write: [`ErrorKind::CollectionBulkWrite`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BulkWriteFailure {
    /// Every write that failed, by index (an ordered operation stops at the first).
    pub write_errors: Vec<IndexedWriteError>,
    /// The last write concern error, if any.
    pub write_concern_error: Option<WriteConcernError>,
    /// What the writes that succeeded did, with the `_id` of every document inserted,
    /// by index (CRUD spec, "BulkWriteException", `writeResult`).
    pub write_result: crate::crud::bulk_write::BulkWriteResult,
}

/// The failure of a [`crate::Client::bulk_write`]: [`ErrorKind::BulkWrite`]
/// (Bulk Write spec, "BulkWriteException").
///
/// A top-level error seen before any write was known to succeed or fail is returned
/// as it is, not wrapped in this.
#[derive(Debug, Clone, Default)]
pub struct BulkWriteError {
    /// The error that stopped the bulk write (a network error, a command error, a
    /// failed `getMore`...), if one did; [`Error::code`] and [`Error::labels`] of the
    /// whole error are its own.
    pub error: Option<Box<Error>>,
    /// Every write concern error, one per command at most, in order.
    pub write_concern_errors: Vec<WriteConcernError>,
    /// The writes that failed, by index among the models given (at most one when
    /// ordered).
    pub write_errors: HashMap<usize, WriteError>,
    /// What the writes that succeeded did, verbose when the bulk write asked for
    /// `.verbose_results()`; `None` unless at least one is known to have succeeded.
    pub partial_result: Option<PartialBulkWriteResult>,
}

/// An error reply from the server (`ok: 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// The server's error code, e.g. `2`.
    pub code: i32,
    /// The code's name, e.g. `"BadValue"`; empty when the server sent none.
    pub code_name: String,
    /// The server's message (`errmsg`).
    pub message: String,
    /// The reply's `errorLabels`, e.g. `"TransientTransactionError"`.
    pub error_labels: Vec<String>,
    /// The reply's `topologyVersion`: SDAM ignores a state-change error older than
    /// what it already knows of the server (SDAM spec, "topologyVersion").
    pub topology_version: Option<crate::sdam::TopologyVersion>,
}

impl Error {
    /// An error of the given kind.
    pub fn new(kind: ErrorKind) -> Self {
        let labels = match &kind {
            ErrorKind::Command(error) => error.error_labels.iter().cloned().collect(),
            _ => HashSet::new(),
        };
        Error {
            kind: Box::new(kind),
            inner: Box::new(Inner {
                labels,
                service_id: None,
                server_reply: None,
                server_response: std::sync::OnceLock::new(),
                address: None,
                #[cfg(feature = "error-backtrace")]
                backtrace: Arc::new(std::backtrace::Backtrace::capture()),
            }),
        }
    }

    /// An error wrapping any value of the application's ([`ErrorKind::Custom`]): return
    /// it from a transaction's callback to abort the transaction, and get the value
    /// back with [`Error::get_custom`].
    ///
    /// ```
    /// use anymongo::error::Error;
    /// let error = Error::custom(String::from("out of stock"));
    /// assert_eq!(error.get_custom::<String>().map(String::as_str), Some("out of stock"));
    /// assert!(error.get_custom::<i32>().is_none());
    /// ```
    pub fn custom(value: impl Any + Send + Sync) -> Self {
        Error::new(ErrorKind::Custom(Arc::new(value)))
    }

    /// The value given to [`Error::custom`], if this is a custom error holding an `E`.
    pub fn get_custom<E: Any>(&self) -> Option<&E> {
        match &*self.kind {
            ErrorKind::Custom(value) => value.downcast_ref(),
            _ => None,
        }
    }

    /// `host:port` of the server the error happened with, when the error's kind has
    /// no field for it: an [`ErrorKind::Io`], [`ErrorKind::ConnectionPoolCleared`] or
    /// [`ErrorKind::InvalidResponse`] error. An addition to the official API.
    pub fn server_address(&self) -> Option<&str> {
        self.inner.address.as_deref()
    }

    /// The error with the address of the server it happened with.
    fn at(mut self, address: impl fmt::Display) -> Self {
        self.inner.address = Some(address.to_string());
        self
    }

    /// An [`ErrorKind::Io`] error of `kind` with the server at `address`, for failures
    /// the driver notices itself (the server closed the connection, say).
    pub(crate) fn network(
        address: impl fmt::Display,
        kind: io::ErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Error::new(ErrorKind::Io(Arc::new(io::Error::new(
            kind,
            message.into(),
        ))))
        .at(address)
    }

    /// An [`ErrorKind::ConnectionPoolCleared`] error of the pool for `address`.
    pub(crate) fn pool_cleared(address: impl fmt::Display, why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::ConnectionPoolCleared {
            message: format!("the connection pool for {address} was cleared: {why}"),
        })
        .at(address)
    }

    /// An [`ErrorKind::InvalidResponse`] error: the server at `address` sent `error`.
    pub(crate) fn invalid_response(address: impl fmt::Display, error: WireError) -> Self {
        Error::new(ErrorKind::InvalidResponse {
            message: format!("invalid reply from {address} (connection closed): {error}"),
            error,
        })
        .at(address)
    }

    /// An [`ErrorKind::Transaction`] error.
    pub(crate) fn transaction(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transaction {
            message: message.into(),
        })
    }

    /// An [`ErrorKind::DnsResolve`] error.
    pub(crate) fn dns_resolve(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::DnsResolve {
            message: message.into(),
        })
    }

    /// An [`ErrorKind::Internal`] error.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal {
            message: message.into(),
        })
    }

    /// An [`ErrorKind::MisbehavingServer`] error of the server at `address`.
    pub(crate) fn misbehaving(address: impl fmt::Display, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::MisbehavingServer {
            address: address.to_string(),
            message: message.into(),
        })
    }

    /// The error with `label` added (once).
    pub fn with_label(mut self, label: &str) -> Self {
        if !self.contains_label(label) {
            self.inner.labels.insert(label.to_owned());
        }
        self
    }

    /// An [`ErrorKind::BsonDeserialization`] error: a document or reply could not be
    /// read as the type asked for.
    pub(crate) fn deserialization(error: impl Into<BsonCause>) -> Self {
        Error::new(ErrorKind::BsonDeserialization(
            error.into().into_bson(serde::de::Error::custom),
        ))
    }

    /// An [`ErrorKind::BsonSerialization`] error: a value could not be turned into
    /// BSON.
    pub(crate) fn serialization(error: impl Into<BsonCause>) -> Self {
        Error::new(ErrorKind::BsonSerialization(
            error.into().into_bson(serde::ser::Error::custom),
        ))
    }

    /// The error with `labels` added (each once).
    pub(crate) fn with_labels<'a>(self, labels: impl IntoIterator<Item = &'a str>) -> Self {
        labels
            .into_iter()
            .fold(self, |error, label| error.with_label(label))
    }

    /// Whether the error is a network error ([`ErrorKind::Io`]), a timeout talking to
    /// a server included, but not a failed TLS handshake ([`Error::is_tls_error`]):
    /// the errors after which nothing is known of the command's fate, which the
    /// specs retry and label.
    pub fn is_network_error(&self) -> bool {
        matches!(&*self.kind, ErrorKind::Io(_)) && !self.is_tls_error()
    }

    /// Whether the error is a network timeout: an [`ErrorKind::Io`] error of kind
    /// [`io::ErrorKind::TimedOut`] (the SDAM spec's "network timeout", which leaves
    /// the server's other connections alone), as the official crate tells them apart.
    pub fn is_network_timeout(&self) -> bool {
        matches!(&*self.kind, ErrorKind::Io(io) if io.kind() == io::ErrorKind::TimedOut)
    }

    /// What a network timeout the driver's own bound ended was waiting for, and the
    /// bound: the [`NetworkTimeout`] inside an [`ErrorKind::Io`] error. `None` for
    /// other errors, and for a timeout the transport itself reported (the system's).
    pub fn network_timeout(&self) -> Option<&NetworkTimeout> {
        match &*self.kind {
            ErrorKind::Io(io) => io.get_ref()?.downcast_ref(),
            _ => None,
        }
    }

    /// Whether the error is a failed TLS handshake: an [`ErrorKind::Io`] error with
    /// a [`crate::rt::TlsError`] inside.
    pub fn is_tls_error(&self) -> bool {
        match &*self.kind {
            ErrorKind::Io(io) => io
                .get_ref()
                .is_some_and(|inner| inner.is::<crate::rt::TlsError>()),
            _ => false,
        }
    }

    /// An [`ErrorKind::Io`] error of kind [`io::ErrorKind::TimedOut`]: the wait for
    /// `during` on `address` ran out of its limit `after`.
    pub(crate) fn timed_out(
        address: impl fmt::Display,
        during: &'static str,
        after: Duration,
    ) -> Self {
        Error::new(ErrorKind::Io(Arc::new(io::Error::new(
            io::ErrorKind::TimedOut,
            NetworkTimeout { during, after },
        ))))
        .at(address)
    }

    /// Whether the operation's `timeoutMS` passed ([`ErrorKind::OperationTimeout`]).
    pub fn is_operation_timeout(&self) -> bool {
        matches!(&*self.kind, ErrorKind::OperationTimeout { .. })
    }

    /// The [`ErrorKind::OperationTimeout`] of an operation that ran with `timeout` and
    /// whose deadline passed `during` a step, that step's error (`cause`), if any,
    /// inside; the cause's labels and server reply stay visible on the new error.
    pub(crate) fn operation_timeout(
        timeout: Duration,
        during: &'static str,
        cause: Option<Error>,
    ) -> Error {
        if let Some(cause) = &cause {
            if cause.is_operation_timeout() {
                return cause.clone();
            }
        }
        let labels = cause.as_ref().map(|cause| cause.labels().clone());
        let service_id = cause.as_ref().and_then(Error::service_id);
        let server_reply = cause
            .as_ref()
            .and_then(|cause| cause.server_reply().cloned());
        let mut error = Error::new(ErrorKind::OperationTimeout {
            timeout,
            during,
            cause: cause.map(Box::new),
        });
        error.inner.labels = labels.unwrap_or_default();
        error.inner.service_id = service_id;
        error.inner.server_reply = server_reply;
        error.inner.server_response = std::sync::OnceLock::new();
        error
    }

    /// An [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument {
            message: message.into(),
        })
    }

    /// The error of a connection to `service_id` (load-balanced mode).
    pub(crate) fn with_service_id(mut self, service_id: ObjectId) -> Self {
        self.inner.service_id = Some(service_id);
        self
    }

    /// Load-balanced mode: the service behind the load balancer that the failing
    /// connection had reached, when that is known (the error came after its hello).
    pub fn service_id(&self) -> Option<ObjectId> {
        self.inner.service_id
    }

    /// The error with the server's reply: an `ok: 0` reply, or a write error's entry.
    pub(crate) fn with_server_reply(mut self, reply: bson::Document) -> Self {
        self.inner.server_reply = Some(reply);
        self.inner.server_response = std::sync::OnceLock::new();
        self
    }

    /// The server's whole `ok: 0` reply, for an error the server returned (for the
    /// write error of a single write, its entry of the reply's `writeErrors`, as the
    /// Node.js driver's `errorResponse`): fields the driver does not read (a duplicate
    /// key's `keyValue`) stay available (Bulk Write spec, "Top-Level Errors").
    pub fn server_reply(&self) -> Option<&bson::Document> {
        self.inner.server_reply.as_ref()
    }

    /// The server's whole error reply as raw BSON, as the official crate gives it: the
    /// same reply as [`server_reply`](Self::server_reply).
    pub fn server_response(&self) -> Option<&bson::RawDocumentBuf> {
        let reply = self.inner.server_reply.as_ref()?;
        let raw = self
            .inner
            .server_response
            .get_or_init(|| bson::RawDocumentBuf::try_from(reply).unwrap_or_default());
        Some(raw)
    }

    /// The base backoff the server asked for in its error reply (`baseBackoffMS`, when
    /// positive): how long to wait before retrying after an overload error, doubled
    /// at each retry (Client Backpressure spec); `None` when it did not ask.
    pub fn base_backoff(&self) -> Option<Duration> {
        let millis = self
            .server_reply()
            .and_then(|reply| reply.get("baseBackoffMS"))
            .and_then(crate::bson_util::as_i64)?;
        u64::try_from(millis)
            .ok()
            .filter(|millis| *millis > 0)
            .map(Duration::from_millis)
    }

    /// The server's error code, for [`ErrorKind::Command`] errors and authentication
    /// failures the server reported, a single write's, a bulk write's first; for a
    /// [`ErrorKind::BulkWrite`] (a client bulk write), its top-level error's (its
    /// write errors are in [`BulkWriteError::write_errors`]).
    pub fn code(&self) -> Option<i32> {
        match &*self.kind {
            ErrorKind::Command(error) => Some(error.code),
            ErrorKind::Authentication { code, .. } => *code,
            ErrorKind::Write(WriteFailure::WriteError(error)) => Some(error.code),
            ErrorKind::Write(WriteFailure::WriteConcernError(error)) => Some(error.code),
            ErrorKind::InsertMany(failure) => failure
                .write_errors
                .as_ref()
                .and_then(|errors| errors.first())
                .map(|error| error.code)
                .or(failure.write_concern_error.as_ref().map(|error| error.code)),
            ErrorKind::CollectionBulkWrite(failure) => failure
                .write_errors
                .first()
                .map(|error| error.code)
                .or(failure.write_concern_error.as_ref().map(|error| error.code)),
            // Unified test format, "clientBulkWrite": the top-level error's code only.
            ErrorKind::BulkWrite(failure) => failure.error.as_ref().and_then(|e| e.code()),
            _ => None,
        }
    }

    /// The error's labels: those the server attached to a command error, and those
    /// the driver added (e.g. [`SYSTEM_OVERLOADED_ERROR`]).
    pub fn labels(&self) -> &HashSet<String> {
        &self.inner.labels
    }

    /// Whether the error carries `label`, e.g. [`TRANSIENT_TRANSACTION_ERROR`].
    pub fn contains_label(&self, label: impl AsRef<str>) -> bool {
        self.inner.labels.contains(label.as_ref())
    }

    /// Converts a transport's I/O error into a network error for `address`. A
    /// transport marks TLS failures by wrapping a [`crate::rt::TlsError`] in the
    /// `io::Error` (see that type), which stays there: [`Error::is_tls_error`].
    pub(crate) fn from_io(address: &str, error: io::Error) -> Self {
        Error::new(ErrorKind::Io(Arc::new(error))).at(address)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_message(f)?;
        // Feature `error-backtrace`, as in the official crate: where the error was made.
        #[cfg(feature = "error-backtrace")]
        if self.inner.backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            write!(f, ", backtrace: {}", self.inner.backtrace)?;
        }
        Ok(())
    }
}

impl Error {
    /// The message of [`Display`](fmt::Display), without the backtrace.
    fn fmt_message(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.kind {
            ErrorKind::InvalidArgument { message } => write!(f, "invalid argument: {message}"),
            ErrorKind::Io(error) => {
                let Some(address) = &self.inner.address else {
                    return write!(f, "I/O error: {error}");
                };
                let inner = error.get_ref();
                if let Some(timeout) =
                    inner.and_then(|inner| inner.downcast_ref::<NetworkTimeout>())
                {
                    let NetworkTimeout { during, after } = timeout;
                    write!(f, "{during} to {address} timed out after {after:?}")
                } else if inner.is_some_and(|inner| inner.is::<crate::rt::TlsError>()) {
                    write!(f, "TLS handshake with {address} failed: {error}")
                } else {
                    write!(f, "network error with {address}: {error}")
                }
            }
            ErrorKind::DnsResolve { message } => write!(f, "DNS resolution failed: {message}"),
            ErrorKind::InvalidResponse { message, .. } => f.write_str(message),
            ErrorKind::IncompatibleServer { message } => f.write_str(message),
            ErrorKind::ServerSelection { message } => f.write_str(message),
            ErrorKind::WaitQueueTimeout {
                address,
                after,
                detail,
            } => {
                write!(
                    f,
                    "timed out after {after:?} waiting to check out a connection from the \
                     pool for {address}"
                )?;
                match detail.as_str() {
                    "" => Ok(()),
                    detail => write!(f, " ({detail})"),
                }
            }
            ErrorKind::ConnectionPoolCleared { message } => f.write_str(message),
            ErrorKind::PoolClosed { address } => {
                write!(f, "the connection pool for {address} is closed")
            }
            ErrorKind::Command(error) => fmt::Display::fmt(error, f),
            ErrorKind::Authentication {
                mechanism,
                source,
                message,
                ..
            } => write!(
                f,
                "authentication with {mechanism} against database '{source}' failed: {message}"
            ),
            ErrorKind::Write(WriteFailure::WriteError(error)) => {
                write!(f, "write failed: {} (code {})", error.message, error.code)
            }
            ErrorKind::Write(WriteFailure::WriteConcernError(error)) => write!(
                f,
                "write concern not satisfied: {} (code {})",
                error.message, error.code
            ),
            ErrorKind::InsertMany(failure) => write_failures(
                f,
                failure.write_errors.as_deref().unwrap_or_default(),
                failure.write_concern_error.as_ref(),
            ),
            ErrorKind::CollectionBulkWrite(failure) => write_failures(
                f,
                &failure.write_errors,
                failure.write_concern_error.as_ref(),
            ),
            ErrorKind::BulkWrite(failure) => {
                write!(f, "client bulk write failed")?;
                if let Some(error) = &failure.error {
                    write!(f, ": {error}")?;
                }
                // The lowest index: the map keeps no order.
                let first = failure.write_errors.iter().min_by_key(|(index, _)| **index);
                if let Some((index, first)) = first {
                    write!(
                        f,
                        "; {} write(s) failed, the first at index {index}: {} (code {})",
                        failure.write_errors.len(),
                        first.message,
                        first.code
                    )?;
                }
                if let Some(concern) = failure.write_concern_errors.first() {
                    write!(
                        f,
                        "; {} write concern error(s), the first: {} (code {})",
                        failure.write_concern_errors.len(),
                        concern.message,
                        concern.code
                    )?;
                }
                Ok(())
            }
            ErrorKind::BsonDeserialization(error) => {
                write!(f, "BSON deserialization failed: {error}")
            }
            ErrorKind::BsonSerialization(error) => write!(f, "BSON serialization failed: {error}"),
            ErrorKind::Internal { message } => write!(f, "internal error: {message}"),
            ErrorKind::SessionsNotSupported => f.write_str(
                "the deployment does not support sessions (no logicalSessionTimeoutMinutes)",
            ),
            ErrorKind::InvalidTlsConfig { message } => {
                write!(f, "invalid TLS configuration: {message}")
            }
            ErrorKind::Transaction { message } => write!(f, "transaction error: {message}"),
            ErrorKind::MissingResumeToken => f.write_str(
                "cannot provide resume functionality when the resume token is missing: a \
                 change event has no _id (a pipeline stage of the change stream removed or \
                 changed it)",
            ),
            ErrorKind::Shutdown => f.write_str("the client was closed (shut down)"),
            ErrorKind::Custom(value) => match value.downcast_ref::<String>() {
                Some(message) => write!(f, "custom error: {message}"),
                None => f.write_str("custom error"),
            },
            ErrorKind::MisbehavingServer { address, message } => {
                write!(f, "server {address} misbehaves: {message}")
            }
            ErrorKind::GridFs(error) => write!(f, "{error}"),
            ErrorKind::Runtime { message } => write!(f, "{message}"),
            ErrorKind::OperationTimeout {
                timeout,
                during,
                cause,
            } => {
                write!(
                    f,
                    "operation timed out (timeoutMS {} ms) during {during}",
                    timeout.as_millis()
                )?;
                match cause {
                    Some(cause) => write!(f, ": {cause}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// How many of the writes of an `insert_many` or a bulk write failed, the first, and
/// the write concern error.
fn write_failures(
    f: &mut fmt::Formatter<'_>,
    errors: &[IndexedWriteError],
    concern: Option<&WriteConcernError>,
) -> fmt::Result {
    write!(f, "{} write(s) failed", errors.len())?;
    if let Some(first) = errors.first() {
        write!(
            f,
            ", the first at index {}: {} (code {})",
            first.index, first.message, first.code
        )?;
    }
    if let Some(concern) = concern {
        write!(f, "; write concern not satisfied: {}", concern.message)?;
    }
    Ok(())
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A redacted error (Command Logging and Monitoring, "Security") has no message.
        match self.message.as_str() {
            "" => write!(f, "command failed")?,
            message => write!(f, "command failed: {message}")?,
        }
        match self.code_name.as_str() {
            "" => write!(f, " (code {})", self.code)?,
            name => write!(f, " ({name}, code {})", self.code)?,
        }
        if !self.error_labels.is_empty() {
            write!(f, " [labels: {}]", self.error_labels.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            ErrorKind::OperationTimeout {
                cause: Some(cause), ..
            } => Some(&**cause),
            ErrorKind::BulkWrite(BulkWriteError {
                error: Some(error), ..
            }) => Some(&**error),
            ErrorKind::Io(error) => Some(&**error),
            ErrorKind::BsonDeserialization(error) | ErrorKind::BsonSerialization(error) => {
                Some(error)
            }
            _ => None,
        }
    }
}

/// Two errors are equal when they say the same thing (their messages) and carry the
/// same labels: an [`ErrorKind::Io`] or [`ErrorKind::Custom`] payload has no equality
/// of its own, and events that carry errors are compared whole in tests.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string() && self.labels() == other.labels()
    }
}

/// What a BSON conversion failed with: the `bson` crate's error, kept whole, or a
/// message of the driver's own.
pub(crate) enum BsonCause {
    /// The `bson` crate's error.
    Bson(bson::error::Error),
    /// What the driver found wrong.
    Message(String),
}

impl BsonCause {
    /// The cause as a `bson` error, a message made into one by `custom` (serde's
    /// constructor for the direction of the conversion).
    fn into_bson(self, custom: fn(String) -> bson::error::Error) -> bson::error::Error {
        match self {
            BsonCause::Bson(error) => error,
            BsonCause::Message(message) => custom(message),
        }
    }
}

impl From<bson::error::Error> for BsonCause {
    fn from(error: bson::error::Error) -> Self {
        BsonCause::Bson(error)
    }
}

impl From<String> for BsonCause {
    fn from(message: String) -> Self {
        BsonCause::Message(message)
    }
}

impl From<&str> for BsonCause {
    fn from(message: &str) -> Self {
        BsonCause::Message(message.to_owned())
    }
}

/// A `bson` error met on the way (`?` on `bson::deserialize_from_document`, say):
/// [`ErrorKind::BsonSerialization`] when serde's serializer raised it, else
/// [`ErrorKind::BsonDeserialization`].
impl From<bson::error::Error> for Error {
    fn from(error: bson::error::Error) -> Self {
        match error.kind {
            bson::error::ErrorKind::Serialization { .. } => Error::serialization(error),
            _ => Error::deserialization(error),
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

/// For `ClientOptions::parse(conn_str)` with a [`ConnectionString`](crate::options::ConnectionString),
/// whose conversion into itself cannot fail.
impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<io::ErrorKind> for Error {
    fn from(kind: io::ErrorKind) -> Self {
        Error::new(ErrorKind::Io(Arc::new(kind.into())))
    }
}

impl From<CommandError> for Error {
    fn from(error: CommandError) -> Self {
        Error::new(ErrorKind::Command(error))
    }
}
