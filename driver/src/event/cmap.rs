//! The events of Connection Monitoring and Pooling
//! (connection-monitoring-and-pooling.md, "Connection Pool Monitoring").
//!
//! A [`ConnectionPool`](crate::cmap::ConnectionPool) queues its events while it changes its
//! state, so that they come out in the order the changes happened, and delivers them
//! to its [`crate::event::EventHandler`] once the state lock is released.

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;

use crate::cmap::PoolOptions;
use crate::event::EventHandler;
use crate::rt::{MaybeSend, MaybeSync};
use crate::uri::ServerAddress;
use crate::Error;

/// A connection pool was created (it starts paused).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolCreatedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The pool's options (always present: the options the pool runs with).
    pub options: Option<ConnectionPoolOptions>,
}

/// The options a pool runs with, as its [`PoolCreatedEvent`] reports them.
///
/// Every field is `Some`: a pool reports the values it applies, defaults included.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionPoolOptions {
    /// `maxIdleTimeMS`: an available connection unused for longer is closed; `None`
    /// means no limit.
    pub max_idle_time: Option<Duration>,
    /// `maxPoolSize`: connections (pending, available and in use) at most; 0 means
    /// no limit.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`: connections the pool keeps open while it is ready.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`: connections being established at once (anymongo reports it;
    /// the official crate does not).
    pub max_connecting: Option<u32>,
    /// `waitQueueTimeoutMS`: how long a check-out waits when its caller gives no
    /// timeout; `None` means no limit (anymongo reports it; the official crate does
    /// not).
    pub wait_queue_timeout: Option<Duration>,
}

impl From<&PoolOptions> for ConnectionPoolOptions {
    fn from(options: &PoolOptions) -> Self {
        ConnectionPoolOptions {
            max_idle_time: options.max_idle_time,
            max_pool_size: Some(options.max_pool_size),
            min_pool_size: Some(options.min_pool_size),
            max_connecting: Some(options.max_connecting),
            wait_queue_timeout: options.wait_queue_timeout,
        }
    }
}

/// A paused pool was marked ready: connections may be checked out and created.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolReadyEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
}

/// A pool was cleared: its connections became stale and, outside load-balanced mode,
/// the pool was paused and its wait queue emptied.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolClearedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The service cleared (load-balanced mode only).
    pub service_id: Option<ObjectId>,
    /// Whether connections in use were interrupted too.
    pub interrupt_in_use_connections: bool,
}

/// A pool was closed: always its last pool event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolClosedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
}

/// A connection was created; it is not established yet.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCreatedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The connection's id in its pool (1, 2, 3 … in order of creation).
    pub connection_id: u32,
}

/// A connection finished its handshake and authentication.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionReadyEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// Time since its [`ConnectionCreatedEvent`].
    pub duration: Duration,
}

/// A connection was closed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionClosedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// Why.
    pub reason: ConnectionClosedReason,
}

/// A check-out began.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheckoutStartedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
}

/// A check-out failed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheckoutFailedEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// Why.
    pub reason: ConnectionCheckoutFailedReason,
    /// The error, when the reason is
    /// [`ConnectionError`](ConnectionCheckoutFailedReason::ConnectionError)
    /// (anymongo reports it; the official crate does not).
    #[serde(skip)]
    pub error: Option<Error>,
    /// Time since its [`ConnectionCheckoutStartedEvent`].
    pub duration: Duration,
}

/// A check-out succeeded.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheckedOutEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// Time since its [`ConnectionCheckoutStartedEvent`].
    pub duration: Duration,
}

/// A connection came back to its pool (checked in, or dropped by its user; a dropped
/// one is closed right after).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheckedInEvent {
    /// The server the pool connects to.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
}

/// A connection pool event: one variant per payload type, each convertible into the
/// enum with `From`.
///
/// ```
/// use anymongo::event::cmap::CmapEvent;
///
/// fn describe(event: &CmapEvent) -> String {
///     match event {
///         CmapEvent::ConnectionCheckedOut(ev) => {
///             format!("connection {} out after {:?}", ev.connection_id, ev.duration)
///         }
///         other => other.name().to_string(),
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CmapEvent {
    /// A pool was created.
    PoolCreated(PoolCreatedEvent),
    /// A pool was marked ready.
    PoolReady(PoolReadyEvent),
    /// A pool was cleared.
    PoolCleared(PoolClearedEvent),
    /// A pool was closed.
    PoolClosed(PoolClosedEvent),
    /// A connection was created.
    ConnectionCreated(ConnectionCreatedEvent),
    /// A connection became ready.
    ConnectionReady(ConnectionReadyEvent),
    /// A connection was closed.
    ConnectionClosed(ConnectionClosedEvent),
    /// A check-out began.
    ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent),
    /// A check-out failed.
    ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent),
    /// A check-out succeeded.
    ConnectionCheckedOut(ConnectionCheckedOutEvent),
    /// A connection came back to its pool.
    ConnectionCheckedIn(ConnectionCheckedInEvent),
}

/// `From` each payload into its [`CmapEvent`] variant, as the official crate has.
macro_rules! cmap_event_from {
    ($($variant:ident($payload:ty)),* $(,)?) => {
        $(impl From<$payload> for CmapEvent {
            fn from(event: $payload) -> Self {
                CmapEvent::$variant(event)
            }
        })*
    };
}

cmap_event_from!(
    PoolCreated(PoolCreatedEvent),
    PoolReady(PoolReadyEvent),
    PoolCleared(PoolClearedEvent),
    PoolClosed(PoolClosedEvent),
    ConnectionCreated(ConnectionCreatedEvent),
    ConnectionReady(ConnectionReadyEvent),
    ConnectionClosed(ConnectionClosedEvent),
    ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent),
    ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent),
    ConnectionCheckedOut(ConnectionCheckedOutEvent),
    ConnectionCheckedIn(ConnectionCheckedInEvent),
);

impl CmapEvent {
    /// The spec's name of the event's type, e.g. `"ConnectionCheckedOutEvent"`
    /// (the pool events are `"PoolCreatedEvent"` and so on).
    pub fn name(&self) -> &'static str {
        match self {
            CmapEvent::PoolCreated(_) => "PoolCreatedEvent",
            CmapEvent::PoolReady(_) => "PoolReadyEvent",
            CmapEvent::PoolCleared(_) => "PoolClearedEvent",
            CmapEvent::PoolClosed(_) => "PoolClosedEvent",
            CmapEvent::ConnectionCreated(_) => "ConnectionCreatedEvent",
            CmapEvent::ConnectionReady(_) => "ConnectionReadyEvent",
            CmapEvent::ConnectionClosed(_) => "ConnectionClosedEvent",
            CmapEvent::ConnectionCheckoutStarted(_) => "ConnectionCheckOutStartedEvent",
            CmapEvent::ConnectionCheckoutFailed(_) => "ConnectionCheckOutFailedEvent",
            CmapEvent::ConnectionCheckedOut(_) => "ConnectionCheckedOutEvent",
            CmapEvent::ConnectionCheckedIn(_) => "ConnectionCheckedInEvent",
        }
    }

    /// The address of the pool's server.
    pub fn address(&self) -> &ServerAddress {
        match self {
            CmapEvent::PoolCreated(ev) => &ev.address,
            CmapEvent::PoolReady(ev) => &ev.address,
            CmapEvent::PoolCleared(ev) => &ev.address,
            CmapEvent::PoolClosed(ev) => &ev.address,
            CmapEvent::ConnectionCreated(ev) => &ev.address,
            CmapEvent::ConnectionReady(ev) => &ev.address,
            CmapEvent::ConnectionClosed(ev) => &ev.address,
            CmapEvent::ConnectionCheckoutStarted(ev) => &ev.address,
            CmapEvent::ConnectionCheckoutFailed(ev) => &ev.address,
            CmapEvent::ConnectionCheckedOut(ev) => &ev.address,
            CmapEvent::ConnectionCheckedIn(ev) => &ev.address,
        }
    }

    /// The id of the connection the event is about, if it is about one.
    pub fn connection_id(&self) -> Option<u32> {
        match self {
            CmapEvent::ConnectionCreated(ev) => Some(ev.connection_id),
            CmapEvent::ConnectionReady(ev) => Some(ev.connection_id),
            CmapEvent::ConnectionClosed(ev) => Some(ev.connection_id),
            CmapEvent::ConnectionCheckedOut(ev) => Some(ev.connection_id),
            CmapEvent::ConnectionCheckedIn(ev) => Some(ev.connection_id),
            _ => None,
        }
    }
}

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionClosedReason {
    /// The pool was cleared since the connection was created (`"stale"`).
    Stale,
    /// The connection stayed available longer than maxIdleTimeMS (`"idle"`).
    Idle,
    /// The connection failed, or its user dropped it without checking it in (`"error"`).
    Error,
    /// The official crate's reason for a connection dropped during a read or write.
    /// anymongo never reports it: such a connection failed, and the spec's reason
    /// for that is [`Error`](Self::Error). Spelled `"error"` too.
    Dropped,
    /// The pool was closed (`"poolClosed"`).
    PoolClosed,
}

impl ConnectionClosedReason {
    /// The spec's spelling: `"stale"`, `"idle"`, `"error"` or `"poolClosed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionClosedReason::Stale => "stale",
            ConnectionClosedReason::Idle => "idle",
            ConnectionClosedReason::Error | ConnectionClosedReason::Dropped => "error",
            ConnectionClosedReason::PoolClosed => "poolClosed",
        }
    }
}

/// Why a check-out failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionCheckoutFailedReason {
    /// No connection came within the check-out timeout (`"timeout"`).
    Timeout,
    /// Establishing a connection failed, or the pool was paused or cleared
    /// (`"connectionError"`).
    ConnectionError,
    /// The pool is closed (`"poolClosed"`; the official crate reports no such reason).
    PoolClosed,
}

impl ConnectionCheckoutFailedReason {
    /// The spec's spelling: `"poolClosed"`, `"timeout"` or `"connectionError"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionCheckoutFailedReason::PoolClosed => "poolClosed",
            ConnectionCheckoutFailedReason::Timeout => "timeout",
            ConnectionCheckoutFailedReason::ConnectionError => "connectionError",
        }
    }
}

/// The official crate's older way to receive connection pool events, deprecated there too: a
/// type with one method per event, passed as an `Arc` where an [`EventHandler`] is
/// expected. Use [`EventHandler::callback`].
#[deprecated = "use the EventHandler API"]
pub trait CmapEventHandler: MaybeSend + MaybeSync {
    /// Called when a pool is created.
    fn handle_pool_created_event(&self, _event: PoolCreatedEvent) {}

    /// Called when a pool is marked ready.
    fn handle_pool_ready_event(&self, _event: PoolReadyEvent) {}

    /// Called when a pool is cleared.
    fn handle_pool_cleared_event(&self, _event: PoolClearedEvent) {}

    /// Called when a pool is closed.
    fn handle_pool_closed_event(&self, _event: PoolClosedEvent) {}

    /// Called when a connection is created.
    fn handle_connection_created_event(&self, _event: ConnectionCreatedEvent) {}

    /// Called when a connection is ready for use.
    fn handle_connection_ready_event(&self, _event: ConnectionReadyEvent) {}

    /// Called when a connection is closed.
    fn handle_connection_closed_event(&self, _event: ConnectionClosedEvent) {}

    /// Called when a checkout starts.
    fn handle_connection_checkout_started_event(&self, _event: ConnectionCheckoutStartedEvent) {}

    /// Called when a checkout fails.
    fn handle_connection_checkout_failed_event(&self, _event: ConnectionCheckoutFailedEvent) {}

    /// Called when a connection is checked out.
    fn handle_connection_checked_out_event(&self, _event: ConnectionCheckedOutEvent) {}

    /// Called when a connection is checked back in.
    fn handle_connection_checked_in_event(&self, _event: ConnectionCheckedInEvent) {}
}

#[allow(deprecated)]
impl<T: CmapEventHandler + 'static> From<Arc<T>> for EventHandler<CmapEvent> {
    fn from(handler: Arc<T>) -> Self {
        EventHandler::callback(move |event| match event {
            CmapEvent::PoolCreated(event) => handler.handle_pool_created_event(event),
            CmapEvent::PoolReady(event) => handler.handle_pool_ready_event(event),
            CmapEvent::PoolCleared(event) => handler.handle_pool_cleared_event(event),
            CmapEvent::PoolClosed(event) => handler.handle_pool_closed_event(event),
            CmapEvent::ConnectionCreated(event) => handler.handle_connection_created_event(event),
            CmapEvent::ConnectionReady(event) => handler.handle_connection_ready_event(event),
            CmapEvent::ConnectionClosed(event) => handler.handle_connection_closed_event(event),
            CmapEvent::ConnectionCheckoutStarted(event) => {
                handler.handle_connection_checkout_started_event(event)
            }
            CmapEvent::ConnectionCheckoutFailed(event) => {
                handler.handle_connection_checkout_failed_event(event)
            }
            CmapEvent::ConnectionCheckedOut(event) => {
                handler.handle_connection_checked_out_event(event)
            }
            CmapEvent::ConnectionCheckedIn(event) => {
                handler.handle_connection_checked_in_event(event)
            }
        })
    }
}
