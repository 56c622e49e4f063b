//! A server's `topologyVersion` (SDAM spec, "topologyVersion"): in hello replies and
//! in state-change errors alike, so the error payloads (`crate::error`) carry it too.
//! Plain data that depends on BSON only, so that both can.

use bson::oid::ObjectId;
use bson::Document;

use crate::bson_util::as_i64;

/// A server's `topologyVersion`: which process answered, and how many state changes
/// it has been through (spec "topologyVersion").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyVersion {
    /// `processId`: changes when the server restarts.
    pub process_id: ObjectId,
    /// `counter`: grows with every state change of that process.
    pub counter: i64,
}

impl TopologyVersion {
    /// Reads `{processId: ObjectId, counter: int}`; `None` if either is missing.
    pub fn from_document(document: &Document) -> Option<TopologyVersion> {
        Some(TopologyVersion {
            process_id: document.get_object_id("processId").ok()?,
            counter: document.get("counter").and_then(as_i64)?,
        })
    }

    /// The `topologyVersion` field of a reply (a hello reply or an error), if any.
    pub fn from_reply(reply: &Document) -> Option<TopologyVersion> {
        reply
            .get_document("topologyVersion")
            .ok()
            .and_then(TopologyVersion::from_document)
    }

    /// The document form, as sent back to the server in a streaming hello.
    pub fn to_document(self) -> Document {
        bson::doc! { "processId": self.process_id, "counter": self.counter }
    }

    /// Whether `self` is older than `other` (spec "topologyVersion comparison"):
    /// only when both come from the same process and `self`'s counter is lower.
    /// Versions from different processes, or a missing version, are never stale.
    pub fn is_stale_compared_to(self, other: TopologyVersion) -> bool {
        self.process_id == other.process_id && self.counter < other.counter
    }
}
