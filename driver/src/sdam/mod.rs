//! Server Discovery and Monitoring (server-discovery-and-monitoring.md,
//! server-monitoring.md): what the client knows about the deployment and how it
//! learns it.
//!
//! - [`description`] holds the plain data (server and topology descriptions);
//! - [`topology`] is the state machine that updates them from hello replies and
//!   application errors ([`TopologyState`]);
//! - its monitoring events are [`crate::event::sdam`];
//! - `monitor` checks servers (Server Monitoring spec).
//!
//! Running it all against real servers (monitors, pools, event delivery, waiting
//! selection) is the cluster's part, a layer above (`crate::cluster`).

pub mod description;
pub(crate) mod monitor;
pub mod topology;
mod topology_version;

pub use description::{
    ServerDescription, ServerType, Stamp, TopologyDescription, TopologyType,
    DEFAULT_HEARTBEAT_FREQUENCY,
};
pub use topology::{
    ApplicationError, ApplicationErrorKind, ErrorPhase, ErrorResponse, TopologyState,
    TopologyUpdate,
};
pub use topology_version::TopologyVersion;
