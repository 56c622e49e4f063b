//! Server Selection (server-selection.md) and Max Staleness (max-staleness.md):
//! which server of a [`crate::sdam::TopologyDescription`] an operation goes to.
