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

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;

use crate::event::EventHandler;
use crate::rt::{MaybeSend, MaybeSync};
pub use crate::sdam::{TopologyDescription, TopologyType};
use crate::selection::{suitable_servers, Criteria, SelectionCriteria, ServerInfo};
use crate::uri::ServerAddress;
use crate::Error;

/// What the client knew of a server at an event, owned: the accessors of
/// [`ServerInfo`] (`server_type()`, `address()`, `replica_set_name()` …), and
/// [`ServerInfo::description`] for the whole description.
pub type ServerDescription = ServerInfo<'static>;

/// A server's description changed (spec "Server Description Equality": round-trip
/// times and update times do not count).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDescriptionChangedEvent {
    /// The server's address.
    pub address: ServerAddress,
    /// The topology's unique id.
    pub topology_id: ObjectId,
    /// The description before the change.
    pub previous_description: ServerDescription,
    /// The description after the change.
    pub new_description: ServerDescription,
}

/// A server was added to the topology (published before its monitor starts).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerOpeningEvent {
    /// The server's address.
    pub address: ServerAddress,
    /// The topology's unique id.
    pub topology_id: ObjectId,
}

/// A server was removed from the topology (its monitor stops).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerClosedEvent {
    /// The server's address.
    pub address: ServerAddress,
    /// The topology's unique id.
    pub topology_id: ObjectId,
}

/// The topology's description changed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDescriptionChangedEvent {
    /// The topology's unique id.
    pub topology_id: ObjectId,
    /// The description before the change.
    pub previous_description: TopologyDescription,
    /// The description after the change.
    pub new_description: TopologyDescription,
}

/// A topology was opened: always the first event of a topology.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyOpeningEvent {
    /// The topology's unique id.
    pub topology_id: ObjectId,
}

/// A topology was closed: always the last event of a topology.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyClosedEvent {
    /// The topology's unique id.
    pub topology_id: ObjectId,
}

/// A monitor sends its hello, or, when it must connect first, is about to open the
/// connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatStartedEvent {
    /// The server's address.
    pub server_address: ServerAddress,
    /// Whether this is an awaitable (streaming) hello.
    pub awaited: bool,
    /// The monitoring connection's driver-generated id; when the monitor is about to
    /// open a connection, the id that connection takes.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection (`connectionId` of its hello
    /// reply); `None` before the connection's handshake.
    pub server_connection_id: Option<i64>,
}

/// A monitor's hello succeeded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatSucceededEvent {
    /// How long the hello took; for an awaited hello it includes the server's wait
    /// and is not a round-trip time.
    pub duration: Duration,
    /// The hello reply.
    pub reply: Document,
    /// The server's address.
    pub server_address: ServerAddress,
    /// Whether this was an awaitable (streaming) hello.
    pub awaited: bool,
    /// The monitoring connection's driver-generated id.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection (`connectionId` of its hello
    /// reply), if known: `None` when the server does not report it.
    pub server_connection_id: Option<i64>,
}

/// A monitor's hello failed, with an error reply or a network error, or the check was
/// cancelled.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatFailedEvent {
    /// How long the attempt took.
    pub duration: Duration,
    /// What went wrong.
    #[serde(serialize_with = "super::error_as_message")]
    pub failure: Error,
    /// The server's address.
    pub server_address: ServerAddress,
    /// Whether this was an awaitable (streaming) hello.
    pub awaited: bool,
    /// The monitoring connection's driver-generated id.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection (`connectionId` of its hello
    /// reply), if known: `None` when the connection failed before its handshake was
    /// done, or the server does not report it.
    pub server_connection_id: Option<i64>,
}

/// An SDAM event. The description-changed events are boxed, so that every event
/// stays small.
///
/// ```
/// use anymongo::event::sdam::SdamEvent;
///
/// fn describe(event: &SdamEvent) -> String {
///     match event {
///         SdamEvent::ServerDescriptionChanged(ev) => format!(
///             "{}: {:?} -> {:?}",
///             ev.address,
///             ev.previous_description.server_type(),
///             ev.new_description.server_type()
///         ),
///         other => other.name().to_string(),
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SdamEvent {
    /// A server's description changed.
    ServerDescriptionChanged(Box<ServerDescriptionChangedEvent>),
    /// A server was added to the topology.
    ServerOpening(ServerOpeningEvent),
    /// A server was removed from the topology.
    ServerClosed(ServerClosedEvent),
    /// The topology's description changed.
    TopologyDescriptionChanged(Box<TopologyDescriptionChangedEvent>),
    /// A topology was opened.
    TopologyOpening(TopologyOpeningEvent),
    /// A topology was closed.
    TopologyClosed(TopologyClosedEvent),
    /// A monitor's check started.
    ServerHeartbeatStarted(ServerHeartbeatStartedEvent),
    /// A monitor's check succeeded.
    ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent),
    /// A monitor's check failed.
    ServerHeartbeatFailed(ServerHeartbeatFailedEvent),
}

impl SdamEvent {
    /// The spec's name of the event's type, e.g. `"ServerDescriptionChangedEvent"`.
    pub fn name(&self) -> &'static str {
        match self {
            SdamEvent::TopologyOpening(_) => "TopologyOpeningEvent",
            SdamEvent::TopologyClosed(_) => "TopologyClosedEvent",
            SdamEvent::TopologyDescriptionChanged(_) => "TopologyDescriptionChangedEvent",
            SdamEvent::ServerOpening(_) => "ServerOpeningEvent",
            SdamEvent::ServerClosed(_) => "ServerClosedEvent",
            SdamEvent::ServerDescriptionChanged(_) => "ServerDescriptionChangedEvent",
            SdamEvent::ServerHeartbeatStarted(_) => "ServerHeartbeatStartedEvent",
            SdamEvent::ServerHeartbeatSucceeded(_) => "ServerHeartbeatSucceededEvent",
            SdamEvent::ServerHeartbeatFailed(_) => "ServerHeartbeatFailedEvent",
        }
    }
}

/// The official crate's accessors of a topology description (the fields are public
/// too).
impl TopologyDescription {
    /// The kind of deployment.
    pub fn topology_type(&self) -> TopologyType {
        self.topology_type
    }

    /// The replica set's name, if known.
    pub fn set_name(&self) -> Option<&String> {
        self.set_name.as_ref()
    }

    /// The greatest `setVersion` seen from a primary.
    pub fn max_set_version(&self) -> Option<i32> {
        self.max_set_version
    }

    /// The greatest `electionId` seen from a primary.
    pub fn max_election_id(&self) -> Option<ObjectId> {
        self.max_election_id
    }

    /// Why the client cannot talk to this deployment, if it cannot.
    pub fn compatibility_error(&self) -> Option<&String> {
        self.compatibility_error.as_ref()
    }

    /// Every server of the topology, by address.
    pub fn servers(&self) -> HashMap<&ServerAddress, ServerInfo<'_>> {
        self.servers
            .iter()
            .map(|(address, server)| (address, ServerInfo::new(server)))
            .collect()
    }

    /// Whether a read with `selection_criteria` (the primary when `None`) could be
    /// sent now.
    pub fn has_readable_server(&self, selection_criteria: Option<SelectionCriteria>) -> bool {
        let criteria = selection_criteria.unwrap_or_default();
        self.has_suitable_server(&criteria.for_read())
    }

    /// Whether a write could be sent now.
    pub fn has_writable_server(&self) -> bool {
        self.has_suitable_server(&Criteria::Write)
    }

    fn has_suitable_server(&self, criteria: &Criteria<'_>) -> bool {
        suitable_servers(self, criteria, &[]).is_ok_and(|servers| !servers.is_empty())
    }
}

/// The official crate's older way to receive SDAM events, deprecated there too: a
/// type with one method per event, passed as an `Arc` where an [`EventHandler`] is
/// expected. Use [`EventHandler::callback`].
#[deprecated = "use the EventHandler API"]
pub trait SdamEventHandler: MaybeSend + MaybeSync {
    /// Called when a server's description changes.
    fn handle_server_description_changed_event(&self, _event: ServerDescriptionChangedEvent) {}

    /// Called when a server is added to the topology.
    fn handle_server_opening_event(&self, _event: ServerOpeningEvent) {}

    /// Called when a server is removed from the topology.
    fn handle_server_closed_event(&self, _event: ServerClosedEvent) {}

    /// Called when the topology's description changes.
    fn handle_topology_description_changed_event(&self, _event: TopologyDescriptionChangedEvent) {}

    /// Called when the topology is opened.
    fn handle_topology_opening_event(&self, _event: TopologyOpeningEvent) {}

    /// Called when the topology is closed.
    fn handle_topology_closed_event(&self, _event: TopologyClosedEvent) {}

    /// Called when a heartbeat starts.
    fn handle_server_heartbeat_started_event(&self, _event: ServerHeartbeatStartedEvent) {}

    /// Called when a heartbeat succeeds.
    fn handle_server_heartbeat_succeeded_event(&self, _event: ServerHeartbeatSucceededEvent) {}

    /// Called when a heartbeat fails.
    fn handle_server_heartbeat_failed_event(&self, _event: ServerHeartbeatFailedEvent) {}
}

#[allow(deprecated)]
impl<T: SdamEventHandler + 'static> From<Arc<T>> for EventHandler<SdamEvent> {
    fn from(handler: Arc<T>) -> Self {
        EventHandler::callback(move |event| match event {
            SdamEvent::ServerDescriptionChanged(event) => {
                handler.handle_server_description_changed_event(*event)
            }
            SdamEvent::ServerOpening(event) => handler.handle_server_opening_event(event),
            SdamEvent::ServerClosed(event) => handler.handle_server_closed_event(event),
            SdamEvent::TopologyDescriptionChanged(event) => {
                handler.handle_topology_description_changed_event(*event)
            }
            SdamEvent::TopologyOpening(event) => handler.handle_topology_opening_event(event),
            SdamEvent::TopologyClosed(event) => handler.handle_topology_closed_event(event),
            SdamEvent::ServerHeartbeatStarted(event) => {
                handler.handle_server_heartbeat_started_event(event)
            }
            SdamEvent::ServerHeartbeatSucceeded(event) => {
                handler.handle_server_heartbeat_succeeded_event(event)
            }
            SdamEvent::ServerHeartbeatFailed(event) => {
                handler.handle_server_heartbeat_failed_event(event)
            }
        })
    }
}
