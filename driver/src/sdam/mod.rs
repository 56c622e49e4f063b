//! Server Discovery and Monitoring (server-discovery-and-monitoring.md,
//! server-monitoring.md): what the client knows about the deployment and how it
//! learns it.
//!
//! [`description`] holds the plain data (server and topology descriptions).

pub mod description;

pub use description::{
    ServerDescription, ServerType, TopologyDescription, TopologyType, TopologyVersion,
};
