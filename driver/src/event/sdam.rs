//! The events of Server Discovery and Monitoring
//! (server-discovery-and-monitoring-logging-and-monitoring.md, "Events API").
//!
//! The state machine ([`TopologyState`](crate::sdam::TopologyState)) returns the topology and
//! server events in the order they must be published; the server monitors publish
//! the heartbeat events themselves.
//!
//! The heartbeat events name the monitoring connection by its ids (the spec's
//! `connectionId`; its log messages' `driverConnectionId` and `serverConnectionId`).
//! Monitoring connections belong to no pool: each server's monitor numbers the
//! connections it opens itself, in order of creation from 1, as a pool does (CMAP,
//! "Monotonically Increasing ID"), so a pool connection to the same server may have
//! the same driver id.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;

use crate::sdam::{ServerDescription, TopologyDescription};
use crate::uri::ServerAddress;

/// An SDAM event. The descriptions some events carry are boxed, so that every event
/// stays small.
#[derive(Debug, Clone, PartialEq)]
pub enum SdamEvent {
    /// A topology was opened: always the first event of a topology.
    TopologyOpening {
        /// The topology's unique id.
        topology_id: ObjectId,
    },
    /// A topology was closed: always the last event of a topology.
    TopologyClosed {
        /// The topology's unique id.
        topology_id: ObjectId,
    },
    /// The topology's description changed.
    TopologyDescriptionChanged {
        /// The topology's unique id.
        topology_id: ObjectId,
        /// The description before the change.
        previous: Box<TopologyDescription>,
        /// The description after the change.
        new: Box<TopologyDescription>,
    },
    /// A server was added to the topology (published before its monitor starts).
    ServerOpening {
        /// The topology's unique id.
        topology_id: ObjectId,
        /// The server's address.
        address: ServerAddress,
    },
    /// A server was removed from the topology (its monitor stops).
    ServerClosed {
        /// The topology's unique id.
        topology_id: ObjectId,
        /// The server's address.
        address: ServerAddress,
    },
    /// A server's description changed (spec "Server Description Equality": round-trip
    /// times and update times do not count).
    ServerDescriptionChanged {
        /// The topology's unique id.
        topology_id: ObjectId,
        /// The server's address.
        address: ServerAddress,
        /// The description before the change.
        previous: Box<ServerDescription>,
        /// The description after the change.
        new: Box<ServerDescription>,
    },
    /// A monitor sends its hello, or, when it must connect first, is about to open the
    /// connection.
    ServerHeartbeatStarted {
        /// The server's address.
        address: ServerAddress,
        /// The monitoring connection's driver-generated id; when the monitor is about
        /// to open a connection, the id that connection takes.
        driver_connection_id: u32,
        /// The server's id of the monitoring connection (`connectionId` of its hello
        /// reply); `None` before the connection's handshake.
        server_connection_id: Option<i64>,
        /// Whether this is an awaitable (streaming) hello.
        awaited: bool,
    },
    /// A monitor's hello succeeded.
    ServerHeartbeatSucceeded {
        /// The server's address.
        address: ServerAddress,
        /// The monitoring connection's driver-generated id.
        driver_connection_id: u32,
        /// The server's id of the monitoring connection (`connectionId` of its hello
        /// reply), if known: `None` when the connection failed before its handshake
        /// was done, or the server does not report it.
        server_connection_id: Option<i64>,
        /// How long the hello took; for an awaited hello it includes the server's wait
        /// and is not a round-trip time.
        duration: Duration,
        /// The hello reply.
        reply: Document,
        /// Whether this was an awaitable (streaming) hello.
        awaited: bool,
    },
    /// A monitor's hello failed, with an error reply or a network error.
    ServerHeartbeatFailed {
        /// The server's address.
        address: ServerAddress,
        /// The monitoring connection's driver-generated id.
        driver_connection_id: u32,
        /// The server's id of the monitoring connection (`connectionId` of its hello
        /// reply), if known: `None` when the connection failed before its handshake
        /// was done, or the server does not report it.
        server_connection_id: Option<i64>,
        /// How long the attempt took.
        duration: Duration,
        /// What went wrong.
        failure: String,
        /// Whether this was an awaitable (streaming) hello.
        awaited: bool,
    },
}

impl SdamEvent {
    /// The spec's name of the event's type, e.g. `"ServerDescriptionChangedEvent"`.
    pub fn name(&self) -> &'static str {
        match self {
            SdamEvent::TopologyOpening { .. } => "TopologyOpeningEvent",
            SdamEvent::TopologyClosed { .. } => "TopologyClosedEvent",
            SdamEvent::TopologyDescriptionChanged { .. } => "TopologyDescriptionChangedEvent",
            SdamEvent::ServerOpening { .. } => "ServerOpeningEvent",
            SdamEvent::ServerClosed { .. } => "ServerClosedEvent",
            SdamEvent::ServerDescriptionChanged { .. } => "ServerDescriptionChangedEvent",
            SdamEvent::ServerHeartbeatStarted { .. } => "ServerHeartbeatStartedEvent",
            SdamEvent::ServerHeartbeatSucceeded { .. } => "ServerHeartbeatSucceededEvent",
            SdamEvent::ServerHeartbeatFailed { .. } => "ServerHeartbeatFailedEvent",
        }
    }
}
