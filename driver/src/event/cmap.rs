//! The events of Connection Monitoring and Pooling
//! (connection-monitoring-and-pooling.md, "Connection Pool Monitoring").
//!
//! A [`ConnectionPool`](crate::cmap::ConnectionPool) queues its events while it changes its
//! state, so that they come out in the order the changes happened, and delivers them
//! to its [`crate::event::EventHandler`] once the state lock is released.

use std::time::Duration;

use bson::oid::ObjectId;

use crate::cmap::PoolOptions;
use crate::uri::ServerAddress;
use crate::Error;

/// A connection pool event.
#[derive(Debug, Clone, PartialEq)]
pub enum CmapEvent {
    /// A pool was created (it starts paused).
    PoolCreated {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The pool's options.
        options: PoolOptions,
    },
    /// A paused pool was marked ready: connections may be checked out and created.
    PoolReady {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// A pool was cleared: its connections became stale and, outside load-balanced
    /// mode, the pool was paused and its wait queue emptied.
    PoolCleared {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The service cleared (load-balanced mode only).
        service_id: Option<ObjectId>,
        /// Whether connections in use were interrupted too.
        interrupt_in_use_connections: bool,
    },
    /// A pool was closed: always its last pool event.
    PoolClosed {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// A connection was created; it is not established yet.
    ConnectionCreated {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id in its pool (1, 2, 3 … in order of creation).
        connection_id: u32,
    },
    /// A connection finished its handshake and authentication.
    ConnectionReady {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id in its pool.
        connection_id: u32,
        /// Time since its [`CmapEvent::ConnectionCreated`].
        duration: Duration,
    },
    /// A connection was closed.
    ConnectionClosed {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id in its pool.
        connection_id: u32,
        /// Why.
        reason: ConnectionClosedReason,
    },
    /// A check-out began.
    ConnectionCheckOutStarted {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// A check-out failed.
    ConnectionCheckOutFailed {
        /// The server the pool connects to.
        address: ServerAddress,
        /// Why.
        reason: CheckOutFailedReason,
        /// The error, when the reason is
        /// [`ConnectionError`](CheckOutFailedReason::ConnectionError).
        error: Option<Error>,
        /// Time since its [`CmapEvent::ConnectionCheckOutStarted`].
        duration: Duration,
    },
    /// A check-out succeeded.
    ConnectionCheckedOut {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id in its pool.
        connection_id: u32,
        /// Time since its [`CmapEvent::ConnectionCheckOutStarted`].
        duration: Duration,
    },
    /// A connection came back to its pool (checked in, or dropped by its user; a
    /// dropped one is closed right after).
    ConnectionCheckedIn {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id in its pool.
        connection_id: u32,
    },
}

impl CmapEvent {
    /// The spec's name of the event's type, e.g. `"ConnectionCheckedOutEvent"`
    /// (the pool events are `"PoolCreatedEvent"` and so on).
    pub fn name(&self) -> &'static str {
        match self {
            CmapEvent::PoolCreated { .. } => "PoolCreatedEvent",
            CmapEvent::PoolReady { .. } => "PoolReadyEvent",
            CmapEvent::PoolCleared { .. } => "PoolClearedEvent",
            CmapEvent::PoolClosed { .. } => "PoolClosedEvent",
            CmapEvent::ConnectionCreated { .. } => "ConnectionCreatedEvent",
            CmapEvent::ConnectionReady { .. } => "ConnectionReadyEvent",
            CmapEvent::ConnectionClosed { .. } => "ConnectionClosedEvent",
            CmapEvent::ConnectionCheckOutStarted { .. } => "ConnectionCheckOutStartedEvent",
            CmapEvent::ConnectionCheckOutFailed { .. } => "ConnectionCheckOutFailedEvent",
            CmapEvent::ConnectionCheckedOut { .. } => "ConnectionCheckedOutEvent",
            CmapEvent::ConnectionCheckedIn { .. } => "ConnectionCheckedInEvent",
        }
    }

    /// The address of the pool's server.
    pub fn address(&self) -> &ServerAddress {
        match self {
            CmapEvent::PoolCreated { address, .. }
            | CmapEvent::PoolReady { address }
            | CmapEvent::PoolCleared { address, .. }
            | CmapEvent::PoolClosed { address }
            | CmapEvent::ConnectionCreated { address, .. }
            | CmapEvent::ConnectionReady { address, .. }
            | CmapEvent::ConnectionClosed { address, .. }
            | CmapEvent::ConnectionCheckOutStarted { address }
            | CmapEvent::ConnectionCheckOutFailed { address, .. }
            | CmapEvent::ConnectionCheckedOut { address, .. }
            | CmapEvent::ConnectionCheckedIn { address, .. } => address,
        }
    }

    /// The id of the connection the event is about, if it is about one.
    pub fn connection_id(&self) -> Option<u32> {
        match self {
            CmapEvent::ConnectionCreated { connection_id, .. }
            | CmapEvent::ConnectionReady { connection_id, .. }
            | CmapEvent::ConnectionClosed { connection_id, .. }
            | CmapEvent::ConnectionCheckedOut { connection_id, .. }
            | CmapEvent::ConnectionCheckedIn { connection_id, .. } => Some(*connection_id),
            _ => None,
        }
    }
}

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionClosedReason {
    /// The pool was cleared since the connection was created (`"stale"`).
    Stale,
    /// The connection stayed available longer than maxIdleTimeMS (`"idle"`).
    Idle,
    /// The connection failed, or its user dropped it without checking it in (`"error"`).
    Error,
    /// The pool was closed (`"poolClosed"`).
    PoolClosed,
}

impl ConnectionClosedReason {
    /// The spec's spelling: `"stale"`, `"idle"`, `"error"` or `"poolClosed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionClosedReason::Stale => "stale",
            ConnectionClosedReason::Idle => "idle",
            ConnectionClosedReason::Error => "error",
            ConnectionClosedReason::PoolClosed => "poolClosed",
        }
    }
}

/// Why a check-out failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckOutFailedReason {
    /// The pool is closed (`"poolClosed"`).
    PoolClosed,
    /// No connection came within the check-out timeout (`"timeout"`).
    Timeout,
    /// Establishing a connection failed, or the pool was paused or cleared
    /// (`"connectionError"`).
    ConnectionError,
}

impl CheckOutFailedReason {
    /// The spec's spelling: `"poolClosed"`, `"timeout"` or `"connectionError"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutFailedReason::PoolClosed => "poolClosed",
            CheckOutFailedReason::Timeout => "timeout",
            CheckOutFailedReason::ConnectionError => "connectionError",
        }
    }
}
