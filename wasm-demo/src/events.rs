//! The core's monitoring events as the documents the JavaScript glue turns into the
//! Node.js driver's event objects: `name` is the event's name on the `MongoClient`
//! (`commandStarted`, `connectionCheckedOut`, `serverHeartbeatSucceeded`…), the other
//! fields are those of the Node driver's event class (`address` as `host:port`,
//! `connectionId`, `serverConnectionId`, `duration` in milliseconds…).
//!
//! Free of wasm-bindgen, like [`crate::ops`], so that it is tested natively.

use std::time::Duration;

use anymongo::bson::{doc, Bson, Document};
use anymongo::event::cmap::CmapEvent;
use anymongo::event::cmap::{
    ConnectionCheckedOutEvent, ConnectionCheckoutFailedEvent, ConnectionClosedEvent,
    ConnectionReadyEvent, PoolClearedEvent, PoolCreatedEvent,
};
use anymongo::event::command::CommandEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::sdam::{
    ServerClosedEvent, ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent, ServerOpeningEvent, TopologyClosedEvent, TopologyOpeningEvent,
};
use anymongo::sdam::description::{ServerDescription, TopologyDescription};

use crate::ops::error_document;

/// Which family of events a listener asked for: each is built only when the
/// application listens to one event of its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `commandStarted`, `commandSucceeded`, `commandFailed` (with `monitorCommands`).
    Command,
    /// The connection pool's events (CMAP).
    Pool,
    /// Server discovery and monitoring.
    Topology,
}

impl Family {
    /// The family's name, as the glue's `listening(family)` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Command => "command",
            Family::Pool => "pool",
            Family::Topology => "topology",
        }
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn command_fields(name: &str, event: &CommandEvent) -> Document {
    let connection = event.connection();
    let mut fields = doc! {
        "name": name,
        "commandName": event.command_name(),
        "databaseName": event.db(),
        "requestId": event.request_id(),
        "operationId": event.operation_id(),
        "address": connection.address.to_string(),
        "connectionId": i64::from(connection.id),
        "serverConnectionId": connection.server_id.map_or(Bson::Null, Bson::Int64),
    };
    if let Some(service_id) = event.service_id() {
        fields.insert("serviceId", service_id);
    }
    fields
}

/// A command event.
pub fn command_event(event: &CommandEvent) -> Document {
    let (name, own) = match event {
        CommandEvent::Started(started) => (
            "commandStarted",
            doc! { "command": started.command.clone() },
        ),
        CommandEvent::Succeeded(succeeded) => (
            "commandSucceeded",
            doc! { "duration": millis(succeeded.duration), "reply": succeeded.reply.clone() },
        ),
        CommandEvent::Failed(failed) => (
            "commandFailed",
            doc! {
                "duration": millis(failed.duration),
                "failure": error_document(&failed.failure),
            },
        ),
        // The enum is open to new kinds of event: one the glue does not know yet goes
        // out with the shared fields only.
        _ => ("commandEvent", Document::new()),
    };
    let mut out = command_fields(name, event);
    out.extend(own);
    out
}

/// A connection pool event.
pub fn pool_event(event: &CmapEvent) -> Document {
    let name = match event {
        CmapEvent::PoolCreated(_) => "connectionPoolCreated",
        CmapEvent::PoolReady(_) => "connectionPoolReady",
        CmapEvent::PoolCleared(_) => "connectionPoolCleared",
        CmapEvent::PoolClosed(_) => "connectionPoolClosed",
        CmapEvent::ConnectionCreated(_) => "connectionCreated",
        CmapEvent::ConnectionReady(_) => "connectionReady",
        CmapEvent::ConnectionClosed(_) => "connectionClosed",
        CmapEvent::ConnectionCheckoutStarted(_) => "connectionCheckOutStarted",
        CmapEvent::ConnectionCheckoutFailed(_) => "connectionCheckOutFailed",
        CmapEvent::ConnectionCheckedOut(_) => "connectionCheckedOut",
        CmapEvent::ConnectionCheckedIn(_) => "connectionCheckedIn",
        // Every event above has its Node name; one added later keeps the spec's.
        other => other.name(),
    };
    let mut out = doc! { "name": name, "address": event.address().to_string() };
    if let Some(id) = event.connection_id() {
        out.insert("connectionId", i64::from(id));
    }
    match event {
        CmapEvent::PoolCreated(PoolCreatedEvent {
            options: Some(options),
            ..
        }) => {
            // A pool reports every option it runs with; the missing ones stay out.
            let mut fields = Document::new();
            let sizes = [
                ("maxPoolSize", options.max_pool_size),
                ("minPoolSize", options.min_pool_size),
                ("maxConnecting", options.max_connecting),
            ];
            for (name, size) in sizes {
                if let Some(size) = size {
                    fields.insert(name, i64::from(size));
                }
            }
            if let Some(idle) = options.max_idle_time {
                fields.insert("maxIdleTimeMS", millis(idle));
            }
            out.insert("options", fields);
        }
        CmapEvent::PoolCleared(PoolClearedEvent {
            service_id,
            interrupt_in_use_connections,
            ..
        }) => {
            if let Some(service_id) = service_id {
                out.insert("serviceId", *service_id);
            }
            out.insert("interruptInUseConnections", *interrupt_in_use_connections);
        }
        CmapEvent::ConnectionReady(ConnectionReadyEvent { duration, .. })
        | CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent { duration, .. }) => {
            out.insert("durationMS", millis(*duration));
        }
        CmapEvent::ConnectionClosed(ConnectionClosedEvent { reason, .. }) => {
            out.insert("reason", reason.as_str());
        }
        CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
            reason,
            error,
            duration,
            ..
        }) => {
            out.insert("reason", reason.as_str());
            out.insert("durationMS", millis(*duration));
            if let Some(error) = error {
                out.insert("error", error_document(error));
            }
        }
        _ => {}
    }
    out
}

fn server_description(server: &ServerDescription) -> Document {
    let mut out = doc! {
        "address": server.address.to_string(),
        "type": server.server_type.name(),
        "hosts": server.hosts.clone(),
        "passives": server.passives.clone(),
        "arbiters": server.arbiters.clone(),
        "minWireVersion": server.min_wire_version,
        "maxWireVersion": server.max_wire_version,
        "error": server.error.as_ref().map_or(Bson::Null, |error| Bson::String(error.to_string())),
        "roundTripTime": server.round_trip_time.map_or(Bson::Int32(-1), |rtt| Bson::Double(millis(rtt))),
        "setName": server.set_name.clone().map_or(Bson::Null, Bson::String),
        "primary": server.primary.clone().map_or(Bson::Null, Bson::String),
        "me": server.me.clone().map_or(Bson::Null, Bson::String),
    };
    if let Some(version) = server.set_version {
        out.insert("setVersion", version);
    }
    if let Some(election_id) = server.election_id {
        out.insert("electionId", election_id);
    }
    if let Some(minutes) = server.logical_session_timeout_minutes {
        out.insert("logicalSessionTimeoutMinutes", minutes);
    }
    let tags: Document = server
        .tags
        .iter()
        .map(|(key, value)| (key.clone(), Bson::String(value.clone())))
        .collect();
    out.insert("tags", tags);
    out
}

fn topology_description(topology: &TopologyDescription) -> Document {
    let servers: Document = topology
        .servers
        .iter()
        .map(|(address, server)| {
            (
                address.to_string(),
                Bson::Document(server_description(server)),
            )
        })
        .collect();
    doc! {
        "type": topology.topology_type.name(),
        "setName": topology.set_name.clone().map_or(Bson::Null, Bson::String),
        "servers": servers,
        "compatibilityError": topology.compatibility_error.clone().map_or(Bson::Null, Bson::String),
        "logicalSessionTimeoutMinutes": topology.logical_session_timeout_minutes.map_or(Bson::Null, Bson::Int64),
        "heartbeatFrequencyMS": millis(topology.heartbeat_frequency),
    }
}

/// A server discovery and monitoring event.
pub fn topology_event(event: &SdamEvent) -> Document {
    match event {
        SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id }) => {
            doc! { "name": "topologyOpening", "topologyId": topology_id }
        }
        SdamEvent::TopologyClosed(TopologyClosedEvent { topology_id }) => {
            doc! { "name": "topologyClosed", "topologyId": topology_id }
        }
        SdamEvent::TopologyDescriptionChanged(changed) => doc! {
            "name": "topologyDescriptionChanged",
            "topologyId": changed.topology_id,
            "previousDescription": topology_description(&changed.previous_description),
            "newDescription": topology_description(&changed.new_description),
        },
        SdamEvent::ServerOpening(ServerOpeningEvent {
            topology_id,
            address,
        }) => doc! {
            "name": "serverOpening", "topologyId": topology_id, "address": address.to_string(),
        },
        SdamEvent::ServerClosed(ServerClosedEvent {
            topology_id,
            address,
        }) => doc! {
            "name": "serverClosed", "topologyId": topology_id, "address": address.to_string(),
        },
        SdamEvent::ServerDescriptionChanged(changed) => doc! {
            "name": "serverDescriptionChanged",
            "topologyId": changed.topology_id,
            "address": changed.address.to_string(),
            "previousDescription": server_description(changed.previous_description.description()),
            "newDescription": server_description(changed.new_description.description()),
        },
        // The Node driver's heartbeat events name the server in `connectionId`.
        SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
            server_address: address,
            awaited,
            ..
        }) => doc! {
            "name": "serverHeartbeatStarted", "connectionId": address.to_string(), "awaited": awaited,
        },
        SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
            server_address: address,
            duration,
            reply,
            awaited,
            ..
        }) => doc! {
            "name": "serverHeartbeatSucceeded",
            "connectionId": address.to_string(),
            "duration": millis(*duration),
            "reply": reply.clone(),
            "awaited": awaited,
        },
        SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
            server_address: address,
            duration,
            failure,
            awaited,
            ..
        }) => doc! {
            "name": "serverHeartbeatFailed",
            "connectionId": address.to_string(),
            "duration": millis(*duration),
            "failure": { "name": "MongoNetworkError", "message": failure.to_string() },
            "awaited": awaited,
        },
        // Every event above has its shape; one added later is named only.
        other => doc! { "name": other.name() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::event::cmap::ConnectionClosedReason;
    use anymongo::{CommandError, ServerAddress};

    #[test]
    fn pool_events_carry_the_node_driver_names_and_fields() {
        let address = ServerAddress::parse("db.example.com:27017").unwrap();
        let event = pool_event(&CmapEvent::ConnectionClosed(ConnectionClosedEvent {
            address: address.clone(),
            connection_id: 3,
            reason: ConnectionClosedReason::Stale,
        }));
        assert_eq!(
            event,
            doc! {
                "name": "connectionClosed",
                "address": "db.example.com:27017",
                "connectionId": 3_i64,
                "reason": "stale",
            }
        );
        let checked_out = pool_event(&CmapEvent::ConnectionCheckedOut(
            ConnectionCheckedOutEvent {
                address,
                connection_id: 1,
                duration: Duration::from_micros(1500),
            },
        ));
        assert_eq!(checked_out.get_str("name").unwrap(), "connectionCheckedOut");
        assert_eq!(checked_out.get_f64("durationMS").unwrap(), 1.5);
    }

    #[test]
    fn heartbeats_name_the_server_in_connection_id() {
        let event = topology_event(&SdamEvent::ServerHeartbeatFailed(
            ServerHeartbeatFailedEvent {
                server_address: ServerAddress::parse("db.example.com").unwrap(),
                driver_connection_id: 7,
                server_connection_id: None,
                duration: Duration::from_millis(2),
                failure: anymongo::Error::from(CommandError {
                    code: 6,
                    code_name: "HostUnreachable".into(),
                    message: "connection refused".into(),
                    error_labels: Vec::new(),
                    topology_version: None,
                }),
                awaited: false,
            },
        ));
        assert_eq!(event.get_str("name").unwrap(), "serverHeartbeatFailed");
        assert_eq!(
            event.get_str("connectionId").unwrap(),
            "db.example.com:27017"
        );
        let failure = event.get_document("failure").unwrap();
        let message = failure.get_str("message").unwrap();
        assert!(message.contains("connection refused"), "{message}");
    }

    #[test]
    fn each_family_has_its_name_for_the_glue() {
        let names = [Family::Command, Family::Pool, Family::Topology].map(Family::name);
        assert_eq!(names, ["command", "pool", "topology"]);
    }
}
