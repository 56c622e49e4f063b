//! A session's transaction as data, and the rules every command in it follows (spec,
//! "ClientSession changes", "Constructing commands within a transaction",
//! "readPreference", "Transient Transaction Error"): what the session keeps and the
//! executor applies, below the commit and abort operations of [`super`].

use std::time::Duration;

use bson::{Bson, Document, Timestamp};
use serde::Deserialize;

use crate::concern::{ReadConcern, WriteConcern};
use crate::error::{Error, ErrorKind, Result, TRANSIENT_TRANSACTION_ERROR};
use crate::sdam::TopologyType;
use crate::selection::{ReadPreference, SelectionCriteria};
use crate::uri::ClientOptions;

/// Options of a transaction (spec, "TransactionOptions"). What is unset is taken from
/// the session's [`default_transaction_options`](crate::session::SessionOptions::default_transaction_options),
/// then from the client.
///
/// ```
/// use anymongo::concern::{ReadConcern, ReadConcernLevel, WriteConcern};
/// use anymongo::transactions::TransactionOptions;
/// let options = TransactionOptions {
///     read_concern: Some(ReadConcern::new(ReadConcernLevel::Snapshot)),
///     write_concern: Some(WriteConcern::majority()),
///     ..TransactionOptions::default()
/// };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize, typed_builder::TypedBuilder)]
#[serde(rename_all = "camelCase", default)]
#[builder(field_defaults(default, setter(into)))]
pub struct TransactionOptions {
    /// The read concern of the transaction, sent with its first command only.
    #[serde(deserialize_with = "crate::concern::deserialize_read_concern")]
    pub read_concern: Option<ReadConcern>,
    /// The write concern of `commitTransaction` and `abortTransaction`; the commands
    /// inside the transaction carry none. Must be acknowledged.
    #[serde(deserialize_with = "crate::concern::deserialize_write_concern")]
    pub write_concern: Option<WriteConcern>,
    /// The read preference of the reads in the transaction: it must be primary when
    /// a read runs (spec, "readPreference").
    #[serde(rename = "readPreference")]
    pub selection_criteria: Option<SelectionCriteria>,
    /// The `maxTimeMS` of `commitTransaction` (spec, "maxCommitTimeMS").
    #[serde(
        rename = "maxCommitTimeMS",
        deserialize_with = "crate::bson_util::deserialize_millis"
    )]
    pub max_commit_time: Option<Duration>,
}

impl TransactionOptions {
    /// These options, with what they leave unset taken from `defaults`.
    pub(super) fn or(self, defaults: Option<&TransactionOptions>) -> TransactionOptions {
        let Some(defaults) = defaults else {
            return self;
        };
        TransactionOptions {
            read_concern: self.read_concern.or_else(|| defaults.read_concern.clone()),
            write_concern: self
                .write_concern
                .or_else(|| defaults.write_concern.clone()),
            selection_criteria: self
                .selection_criteria
                .or_else(|| defaults.selection_criteria.clone()),
            max_commit_time: self.max_commit_time.or(defaults.max_commit_time),
        }
    }

    /// These options, with what they leave unset taken from the client's.
    pub(super) fn or_client(self, client: &ClientOptions) -> TransactionOptions {
        TransactionOptions {
            read_concern: self.read_concern.or_else(|| client.read_concern.clone()),
            write_concern: self
                .write_concern
                .or_else(|| client.write_concern.clone().filter(|wc| !wc.is_empty())),
            selection_criteria: self
                .selection_criteria
                .or_else(|| client.selection_criteria.clone()),
            max_commit_time: self.max_commit_time,
        }
    }
}

/// Where a session is with transactions (spec, "ClientSession changes").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TransactionState {
    /// No transaction, or the last one ended and another operation ran since.
    #[default]
    None,
    /// Started; no command has run in it yet.
    Starting,
    /// Its first command ran.
    InProgress,
    /// Committed (or the commit failed: it may be run again).
    Committed,
    /// Committed before any command ran in it: nothing was sent.
    CommittedEmpty,
    /// Aborted.
    Aborted,
}

impl TransactionState {
    /// Whether a transaction is open: starting or in progress.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            TransactionState::Starting | TransactionState::InProgress
        )
    }
}

/// A session's transaction: its state and its options (resolved when it started).
#[derive(Debug, Clone, Default)]
pub(crate) struct Transaction {
    pub state: TransactionState,
    pub options: TransactionOptions,
    /// The `recoveryToken` of the last reply in the transaction, from a mongos (spec,
    /// "recoveryToken field"); cleared with the transaction.
    pub recovery_token: Option<Document>,
}

/// What a transaction adds to one command (spec, "Constructing commands within a
/// transaction").
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandFields {
    /// The first command: `startTransaction: true` and the transaction's read concern.
    pub starting: bool,
    /// The transaction's read concern, for the first command.
    pub read_concern: Option<Document>,
    /// commitTransaction or abortTransaction: they keep their write concern.
    pub ends: bool,
    /// For commitTransaction and abortTransaction: the last `recoveryToken` a mongos
    /// gave, sent back as it came.
    pub recovery_token: Option<Document>,
}

/// Adds the transaction's fields to a command `body`: `txnNumber` and `autocommit:
/// false` always; `startTransaction: true` and the transaction's `readConcern` (with
/// `afterClusterTime` in a causally consistent session) on the first command only,
/// whatever read concern the operation inherited removed otherwise; no
/// `writeConcern` but on commitTransaction and abortTransaction, which carry the
/// `recoveryToken` if a mongos gave one.
pub(crate) fn add_fields(
    body: &mut Document,
    txn_number: i64,
    fields: &CommandFields,
    after_cluster_time: Option<Timestamp>,
) {
    body.insert("txnNumber", Bson::Int64(txn_number));
    body.remove("readConcern");
    if fields.starting {
        body.insert("startTransaction", true);
        let mut read_concern = fields.read_concern.clone().unwrap_or_default();
        if let Some(time) = after_cluster_time {
            read_concern.insert("afterClusterTime", time);
        }
        if !read_concern.is_empty() {
            body.insert("readConcern", read_concern);
        }
    }
    body.insert("autocommit", false);
    if !fields.ends {
        body.remove("writeConcern");
    }
    if let Some(token) = &fields.recovery_token {
        body.insert("recoveryToken", token.clone());
    }
}

/// `error`, of a command in a transaction other than commitTransaction, with the
/// TransientTransactionError label when the driver must add it: network errors,
/// server selection errors and cleared pools (spec, "Transient Transaction Error").
pub(crate) fn label_transient(error: Error) -> Error {
    match &*error.kind {
        ErrorKind::Io(_) if !error.is_network_error() => error,
        ErrorKind::Io(_)
        | ErrorKind::ServerSelection { .. }
        | ErrorKind::ConnectionPoolCleared { .. } => error.with_label(TRANSIENT_TRANSACTION_ERROR),
        _ => error,
    }
}

/// Whether the server just selected for a command pins the session to it: the first
/// command of a transaction (`first_in_transaction`: in a transaction, the session
/// pinned to nothing yet) on a sharded cluster pins it to its mongos, which every
/// later command of the transaction goes to, but retries of commitTransaction and
/// abortTransaction (spec, "Mongos Pinning"). Behind a load balancer the connection is
/// pinned instead; elsewhere nothing is.
pub(crate) fn pins_mongos(first_in_transaction: bool, topology: TopologyType) -> bool {
    first_in_transaction && topology == TopologyType::Sharded
}

/// Whether a read in a transaction may run with `criteria` (spec, "readPreference"):
/// read preference `primary` only (a predicate cannot promise the primary).
pub(crate) fn check_read_preference(criteria: &SelectionCriteria) -> Result<()> {
    match criteria {
        SelectionCriteria::ReadPreference(ReadPreference::Primary) => Ok(()),
        _ => Err(Error::transaction(
            "read preference in a transaction must be primary",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_transaction_s_first_command_on_a_sharded_cluster_pins_its_mongos() {
        assert!(pins_mongos(true, TopologyType::Sharded));
        assert!(!pins_mongos(false, TopologyType::Sharded));
        for other in [
            TopologyType::ReplicaSetWithPrimary,
            TopologyType::Single,
            TopologyType::LoadBalanced,
            TopologyType::Unknown,
        ] {
            assert!(!pins_mongos(true, other));
        }
    }
}
