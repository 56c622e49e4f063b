//! The driver's error type.
//!
//! Every failure a user can see is an [`Error`] whose [`ErrorKind`] says what went
//! wrong in terms they can act on: a bad argument, a network failure (with the
//! address), a TLS failure, a malformed reply, or an error the server returned
//! (with its `code`, `codeName`, `errmsg` and `errorLabels`).

use std::fmt;
use std::io;
use std::time::Duration;

use crate::wire::WireError;
use bson::oid::ObjectId;

/// The result type of the driver.
pub type Result<T> = std::result::Result<T, Error>;

/// The label the pool puts on network errors while a connection is established: the
/// server may be overloaded, so SDAM leaves it alone (CMAP spec,
/// "Backpressure-enabled").
pub const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";

/// The label of errors after which the operation may be retried (with
/// [`SYSTEM_OVERLOADED_ERROR`], CMAP spec, "Backpressure-enabled").
pub const RETRYABLE_ERROR: &str = "RetryableError";

/// An error of the driver.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Debug, Clone, PartialEq)]
struct Inner {
    kind: ErrorKind,
    /// The server's `errorLabels` for a command error, and those the driver added.
    labels: Vec<String>,
    /// Load-balanced mode: the service behind the load balancer that the failing
    /// connection reached, when the error came after its hello.
    service_id: Option<ObjectId>,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument or option given to the driver is invalid (a malformed URI, say).
    InvalidArgument {
        /// What is wrong with it.
        message: String,
    },
    /// Opening, reading or writing a connection failed.
    Network {
        /// `host:port` of the server.
        address: String,
        /// The I/O error kind reported by the transport.
        io_kind: io::ErrorKind,
        /// What the transport said.
        message: String,
    },
    /// A connection or an operation on it did not finish in time.
    Timeout {
        /// `host:port` of the server.
        address: String,
        /// What was being waited for, e.g. `"connect"`.
        during: &'static str,
        /// The limit that passed.
        after: Duration,
    },
    /// The TLS handshake failed, for example because the server's certificate is not trusted.
    Tls {
        /// `host:port` of the server.
        address: String,
        /// What the TLS layer said.
        message: String,
    },
    /// The server sent bytes that are not a valid reply; the connection was closed.
    Protocol {
        /// `host:port` of the server.
        address: String,
        /// What is wrong with the reply.
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
    PoolCleared {
        /// `host:port` of the server.
        address: String,
        /// Why the pool is unusable for now.
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
            ErrorKind::Command(error) => error.error_labels.clone(),
            _ => Vec::new(),
        };
        Error {
            inner: Box::new(Inner {
                kind,
                labels,
                service_id: None,
            }),
        }
    }

    /// The error with `label` added (once).
    pub fn with_label(mut self, label: &str) -> Self {
        if !self.has_label(label) {
            self.inner.labels.push(label.to_owned());
        }
        self
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

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// The server's error code, for [`ErrorKind::Command`] errors and authentication
    /// failures the server reported.
    pub fn code(&self) -> Option<i32> {
        match &self.inner.kind {
            ErrorKind::Command(error) => Some(error.code),
            ErrorKind::Authentication { code, .. } => *code,
            _ => None,
        }
    }

    /// The error's labels: those the server attached to a command error, and those
    /// the driver added (e.g. [`SYSTEM_OVERLOADED_ERROR`]).
    pub fn labels(&self) -> &[String] {
        &self.inner.labels
    }

    /// Whether the error carries `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels().iter().any(|l| l == label)
    }

    /// Converts a transport's I/O error into a network or TLS error for `address`.
    ///
    /// A transport marks TLS failures by wrapping a [`crate::rt::TlsError`] in the
    /// `io::Error` (see that type); everything else is a network error.
    pub(crate) fn from_io(address: &str, error: io::Error) -> Self {
        if let Some(tls) = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<crate::rt::TlsError>())
        {
            return Error::new(ErrorKind::Tls {
                address: address.to_string(),
                message: tls.0.clone(),
            });
        }
        Error::new(ErrorKind::Network {
            address: address.to_string(),
            io_kind: error.kind(),
            message: error.to_string(),
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.kind {
            ErrorKind::InvalidArgument { message } => write!(f, "invalid argument: {message}"),
            ErrorKind::Network {
                address, message, ..
            } => write!(f, "network error with {address}: {message}"),
            ErrorKind::Timeout {
                address,
                during,
                after,
            } => write!(f, "{during} to {address} timed out after {after:?}"),
            ErrorKind::Tls { address, message } => {
                write!(f, "TLS handshake with {address} failed: {message}")
            }
            ErrorKind::Protocol { address, error } => {
                write!(
                    f,
                    "invalid reply from {address} (connection closed): {error}"
                )
            }
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
            ErrorKind::PoolCleared { address, message } => {
                write!(
                    f,
                    "the connection pool for {address} was cleared: {message}"
                )
            }
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
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command failed: {}", self.message)?;
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

impl std::error::Error for Error {}

impl From<CommandError> for Error {
    fn from(error: CommandError) -> Self {
        Error::new(ErrorKind::Command(error))
    }
}
