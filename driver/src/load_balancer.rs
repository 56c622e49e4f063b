//! Connection pinning of the Load Balancer spec ("Connection Pinning", "Behaviour With
//! Cursors", "Behaviour With Transactions").
//!
//! Behind a load balancer every new connection may reach another service (mongos), so
//! a cursor whose first batch did not exhaust it, and a transaction, keep the
//! connection their first command ran on: the cursor's getMores and killCursors, and
//! the transaction's later commands up to its commit or abort, run on it, and it goes
//! back to the pool only when the last of them lets go — one ConnectionCheckedOut and
//! one ConnectionCheckedIn event for the cursor's or the transaction's whole life. A
//! cursor opened in a pinned transaction shares the transaction's connection.
//!
//! [`PinnedConnection`] is the one place that holds such a connection. Letting go
//! never does I/O, so a cursor or session dropped without a runtime checks the
//! connection in all the same. It only needs the server's pool ([`PoolHolder`]): the
//! cluster's servers are what it pins to (`crate::cluster::PinnedConnection`).

use std::sync::{Arc, Mutex};

use crate::cmap::{CheckedOut, ConnectionPool, Establish, PinnedTo, Poolable};
use crate::error::{Error, Result, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use crate::signal::lock;

/// A server a connection is pinned from: what holds its pool.
pub(crate) trait PoolHolder {
    /// What the pool opens its connections with.
    type Establish: Establish;

    /// The server's pool.
    fn pool(&self) -> &ConnectionPool<Self::Establish>;
}

/// A connection of the pool of `S`, pinned to a cursor, a transaction, or both.
/// Clones share the connection, which goes back to its server's pool when the last
/// clone is dropped.
pub(crate) struct PinnedConnection<S: PoolHolder> {
    inner: Arc<Pinned<S>>,
}

impl<S: PoolHolder> Clone for PinnedConnection<S> {
    fn clone(&self) -> Self {
        PinnedConnection {
            inner: self.inner.clone(),
        }
    }
}

struct Pinned<S: PoolHolder> {
    server: Arc<S>,
    to: PinnedTo,
    slot: Mutex<Slot<CheckedOut<S::Establish>>>,
}

/// Where the pinned connection `C` is.
enum Slot<C> {
    /// Before the first command's connection is placed here.
    Empty,
    /// Here, between commands (boxed: a connection is large, the other states small).
    Here(Box<C>),
    /// Taken by a command (the connection's id): back when it ends, unless the
    /// command was abandoned mid-flight, which closed the connection.
    Taken(u32),
}

impl<S: PoolHolder> PinnedConnection<S> {
    /// A pin to a connection of `server`, for a cursor or a transaction: the
    /// executor [`place`](Self::place)s the connection once the first command ran.
    pub fn new(server: Arc<S>, to: PinnedTo) -> PinnedConnection<S> {
        PinnedConnection {
            inner: Arc::new(Pinned {
                server,
                to,
                slot: Mutex::new(Slot::Empty),
            }),
        }
    }

    /// The server (the load balancer) whose pool the connection comes from.
    pub fn server(&self) -> &Arc<S> {
        &self.inner.server
    }

    /// Whether anything but the caller's own handle holds the pin (a cursor took it).
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }

    /// Keeps `connection` here, recording in its pool what it is pinned to (for the
    /// wait-queue timeout message, "Connection Tracking"); also gives a connection
    /// back after a command ([`take`](Self::take)).
    pub fn place(&self, connection: CheckedOut<S::Establish>) {
        connection.mark_pinned(self.inner.to);
        *lock(&self.inner.slot) = Slot::Here(Box::new(connection));
    }

    /// The connection, for one command; [`place`](Self::place) it back afterwards.
    ///
    /// Errors: another command has it (a cursor or a transaction serves one operation
    /// at a time; the spec lets drivers refuse concurrent use); or the connection is
    /// gone, closed when a command on it was abandoned mid-flight (a dropped future) —
    /// a network error, which in a transaction is transient (the server aborts a
    /// transaction whose connection closed: spec, "Downstream Visible Behavioral
    /// Changes").
    pub fn take(&self) -> Result<CheckedOut<S::Establish>> {
        let mut slot = lock(&self.inner.slot);
        match std::mem::replace(&mut *slot, Slot::Empty) {
            Slot::Here(connection) => {
                *slot = Slot::Taken(connection.id());
                Ok(*connection)
            }
            Slot::Taken(id) if self.inner.server.pool().is_in_use(id) => {
                *slot = Slot::Taken(id);
                Err(Error::invalid_argument(
                    "the connection pinned to this cursor or transaction is in use by \
                     another operation: run one operation at a time",
                ))
            }
            Slot::Taken(id) => {
                *slot = Slot::Taken(id);
                Err(Error::network(
                    self.inner.server.pool().address().to_string(),
                    std::io::ErrorKind::ConnectionAborted,
                    "the connection pinned to this cursor or transaction was closed \
                              when an operation on it was abandoned",
                ))
            }
            Slot::Empty => Err(Error::invalid_argument(
                "no connection was pinned to this cursor or transaction",
            )),
        }
    }

    /// Whether the connection can no longer be used (a network error, or a command
    /// has it): a cursor then sends no killCursors (spec, "Behaviour With Cursors").
    pub fn is_broken(&self) -> bool {
        match &*lock(&self.inner.slot) {
            Slot::Here(connection) => connection.is_broken(),
            Slot::Empty | Slot::Taken(_) => true,
        }
    }
}

impl<S: PoolHolder> std::fmt::Debug for PinnedConnection<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedConnection")
            .field("server", self.inner.server.pool().address())
            .field("to", &self.inner.to)
            .finish_non_exhaustive()
    }
}

impl<S: PoolHolder> Drop for Pinned<S> {
    fn drop(&mut self) {
        let slot = self
            .slot
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Slot::Here(connection) = std::mem::replace(slot, Slot::Empty) {
            // A broken connection is closed by the pool; it cannot refuse one of its
            // own.
            let _ = self.server.pool().check_in(*connection);
        }
    }
}

/// Whether an error of a command in a transaction (commitTransaction included)
/// releases the transaction's connection (Transactions spec, "When to unpin", 2 and
/// 3): a TransientTransactionError (the transaction is gone, or the service
/// unreachable: a network error on the connection carries this label too), or an
/// UnknownTransactionCommitResult (the commit is run again, maybe elsewhere).
pub(crate) fn error_unpins(error: &Error) -> bool {
    error.contains_label(TRANSIENT_TRANSACTION_ERROR)
        || error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{CommandError, ErrorKind};

    fn command_error(labels: &[&str]) -> Error {
        Error::new(ErrorKind::Command(CommandError {
            code: 112,
            code_name: "WriteConflict".into(),
            message: "conflict".into(),
            error_labels: labels.iter().map(|label| label.to_string()).collect(),
            topology_version: None,
        }))
    }

    #[test]
    fn transient_and_unknown_commit_errors_unpin_and_others_do_not() {
        assert!(error_unpins(&command_error(&[TRANSIENT_TRANSACTION_ERROR])));
        assert!(error_unpins(&command_error(&[
            UNKNOWN_TRANSACTION_COMMIT_RESULT
        ])));
        assert!(!error_unpins(&command_error(&[])));
        assert!(!error_unpins(&command_error(&["RetryableWriteError"])));
        // Network errors in a transaction, labelled transient by the executor, unpin
        // too (tested with the labelling, in `crate::transactions`).
    }
}
