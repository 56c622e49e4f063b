//! The Server Discovery and Monitoring state machine (server-discovery-and-monitoring.md,
//! "Updating the TopologyDescription" and "Error handling"), free of I/O.
//!
//! [`TopologyState`] owns the client's [`TopologyDescription`] and updates it from
//! what the monitors and the application's operations learn:
//!
//! - [`TopologyState::open`] builds the initial description from the options;
//! - [`TopologyState::apply`] takes a new [`ServerDescription`] (from a hello reply or
//!   a failed check) and runs the spec's TopologyType table;
//! - [`TopologyState::handle_application_error`] runs the spec's error handling for
//!   errors of operations and of connection handshakes;
//! - [`TopologyState::apply_srv_rescan`] takes the hosts of an SRV rescan (Polling SRV
//!   Records for mongos Discovery);
//! - [`TopologyState::close`] empties the topology.
//!
//! Each returns the SDAM events to publish, in order, and which servers to start or
//! stop monitoring. The caller does the I/O: monitors, pools, event delivery.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};

use super::description::DEFAULT_HEARTBEAT_FREQUENCY;
use super::{ServerDescription, ServerType, TopologyDescription, TopologyType, TopologyVersion};
use crate::bson_util::as_i64;
use crate::error::{Error, ErrorKind, WriteFailure, SYSTEM_OVERLOADED_ERROR};
use crate::event::sdam::{
    SdamEvent, ServerClosedEvent, ServerDescriptionChangedEvent, ServerOpeningEvent,
    TopologyClosedEvent, TopologyDescriptionChangedEvent, TopologyOpeningEvent,
};
use crate::selection::ServerInfo;
use crate::srv;
use crate::uri::{ClientOptions, ServerAddress};

/// The first wire version of MongoDB 6.0, from which a primary's `electionId` takes
/// precedence over its `setVersion` (spec "updateRSFromPrimary").
const WIRE_VERSION_6_0: i32 = 17;
/// The first wire version of MongoDB 4.2; older servers close their connections on a
/// state change, so their pools are cleared on any state-change error.
const WIRE_VERSION_4_2: i32 = 8;

/// "node is recovering" error codes (spec "not writable primary" and "node is recovering").
const RECOVERING_CODES: [i32; 5] = [11600, 11602, 13436, 189, 91];
/// "not writable primary" error codes.
const NOT_WRITABLE_PRIMARY_CODES: [i32; 3] = [10107, 13435, 10058];
/// "node is shutting down" error codes: the subset of the recovering codes for which
/// the pool is cleared.
const SHUTDOWN_CODES: [i32; 2] = [11600, 91];

/// One client's SDAM state: its [`TopologyDescription`] and what the spec's rules need
/// besides (the topology id its events carry, whether it started from one seed,
/// whether it is closed).
#[derive(Debug, Clone)]
pub struct TopologyState {
    id: ObjectId,
    description: TopologyDescription,
    single_seed: bool,
    closed: bool,
    /// Whether updates build their TopologyDescriptionChanged event.
    describe: bool,
}

/// What an update changed: the events to publish and the servers to start or stop
/// monitoring.
#[derive(Debug, Clone, Default)]
pub struct TopologyUpdate {
    /// The events to publish, in order: ServerDescriptionChanged events (the updated
    /// server first), ServerOpening for added servers, ServerClosed for removed ones,
    /// then TopologyDescriptionChanged. A description equal to the previous one (spec
    /// "Server Description Equality") produces no event; nor does marking a server
    /// PossiblePrimary, a scanning hint rather than a check result.
    pub events: Vec<SdamEvent>,
    /// Servers added to the topology: start monitoring them.
    pub added: Vec<ServerAddress>,
    /// Servers removed from the topology: stop monitoring them and close their pools.
    pub removed: Vec<ServerAddress>,
    /// Servers to check as soon as possible: a primary just replaced by a newer one
    /// (spec "updateRSFromPrimary"; its pool must not be cleared).
    pub check_immediately: Vec<ServerAddress>,
    /// Whether the topology description changed: true exactly when `events` ends with
    /// a TopologyDescriptionChanged, or would if the topology
    /// [described](TopologyState::set_describing) its changes.
    pub changed: bool,
}

impl TopologyUpdate {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        !self.changed
            && self.events.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.check_immediately.is_empty()
    }
}

/// When an application error happened, relative to the connection's handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorPhase {
    /// While establishing the connection: connecting, the hello, authentication.
    BeforeHandshakeCompletes,
    /// On an established connection, running an operation.
    AfterHandshakeCompletes,
}

/// What kind of application error it is, as far as SDAM cares.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplicationErrorKind {
    /// A network error other than a timeout (the connection is gone).
    Network {
        /// What happened, kept as the Unknown description's error.
        message: String,
    },
    /// A network timeout.
    Timeout {
        /// What happened, kept as the Unknown description's error.
        message: String,
    },
    /// An error the server returned: a command error (`ok: 0`) or a write concern
    /// error.
    Command {
        /// The error code, if the server sent one.
        code: Option<i32>,
        /// The server's message (`errmsg`).
        message: String,
        /// The reply's `topologyVersion`, if any.
        topology_version: Option<TopologyVersion>,
    },
}

/// An error of an application operation or of an application connection's handshake,
/// as the spec's error handling needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplicationError {
    /// The server the connection was to.
    pub address: ServerAddress,
    /// The generation of the connection's pool when the connection was made; `None`
    /// for the pool's current generation.
    pub generation: Option<u32>,
    /// The connection's `maxWireVersion` (from its handshake; 0 if it did not complete).
    pub max_wire_version: i32,
    /// When the error happened.
    pub phase: ErrorPhase,
    /// What the error is.
    pub kind: ApplicationErrorKind,
    /// Whether the error carries the `SystemOverloadedError` label. The connection pool
    /// adds it to network errors and timeouts of connection establishment and of the
    /// handshake's hello (CMAP "backpressure-enabled"); such errors leave the topology
    /// and the pool alone.
    pub system_overloaded: bool,
}

impl ApplicationError {
    /// The error the server's Unknown description keeps: the network error, timeout or
    /// server error this one stands for, with what the state machine was told of it.
    fn to_error(&self) -> Error {
        match &self.kind {
            ApplicationErrorKind::Network { message } => {
                Error::network(&self.address, std::io::ErrorKind::Other, message.clone())
            }
            ApplicationErrorKind::Timeout { message } => {
                Error::network(&self.address, std::io::ErrorKind::TimedOut, message.clone())
            }
            ApplicationErrorKind::Command {
                code,
                message,
                topology_version,
            } => Error::new(ErrorKind::Command(crate::error::CommandError {
                code: code.unwrap_or(0),
                code_name: String::new(),
                message: message.clone(),
                error_labels: Vec::new(),
                topology_version: *topology_version,
            })),
        }
    }

    /// The SDAM view of a driver error, or `None` when the error says nothing about
    /// the server (an invalid argument, an incompatible server, a server selection
    /// timeout, …).
    ///
    /// Network, TLS and malformed-reply errors count as network errors, timeouts as
    /// timeouts, and command and authentication errors as command errors (whose code 0
    /// means "no code"). [`Error`] does not keep a reply's `topologyVersion`; use
    /// [`from_reply`](Self::from_reply) when the reply is at hand.
    pub fn from_error(
        error: &Error,
        address: ServerAddress,
        generation: Option<u32>,
        max_wire_version: i32,
        phase: ErrorPhase,
    ) -> Option<ApplicationError> {
        let kind = match &*error.kind {
            // A network timeout is an `Io` error of kind `TimedOut`, as in the official
            // crate; TLS failures are `Io` errors too.
            ErrorKind::Io(_) if error.is_network_timeout() => ApplicationErrorKind::Timeout {
                message: error.to_string(),
            },
            ErrorKind::Io(_) | ErrorKind::InvalidResponse { .. } => ApplicationErrorKind::Network {
                message: error.to_string(),
            },
            ErrorKind::Command(command) => ApplicationErrorKind::Command {
                code: Some(command.code).filter(|code| *code != 0),
                message: command.message.clone(),
                topology_version: command.topology_version,
            },
            // SDAM spec, "Application errors": a writeConcernError with a state change
            // code is handled like a command error of that code.
            ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => {
                ApplicationErrorKind::Command {
                    code: Some(concern.code).filter(|code| *code != 0),
                    message: concern.message.clone(),
                    topology_version: None,
                }
            }
            ErrorKind::Authentication { code, message, .. } => ApplicationErrorKind::Command {
                code: *code,
                message: message.clone(),
                topology_version: None,
            },
            _ => return None,
        };
        Some(ApplicationError {
            address,
            generation,
            max_wire_version,
            phase,
            kind,
            system_overloaded: error.contains_label(SYSTEM_OVERLOADED_ERROR),
        })
    }

    /// The SDAM view of a command reply: an `ok: 0` reply, or a `writeConcernError`
    /// of an `ok: 1` reply (with their `code`, `errmsg`, `topologyVersion` and
    /// `errorLabels`). `None` for a successful reply; `writeErrors` are not looked at
    /// (spec "not writable primary" and "node is recovering").
    pub fn from_reply(
        reply: &Document,
        address: ServerAddress,
        generation: Option<u32>,
        max_wire_version: i32,
        phase: ErrorPhase,
    ) -> Option<ApplicationError> {
        let ok = match reply.get("ok") {
            Some(Bson::Boolean(ok)) => *ok,
            Some(Bson::Double(ok)) => *ok == 1.0,
            Some(other) => as_i64(other) == Some(1),
            None => false,
        };
        let error = if ok {
            reply.get_document("writeConcernError").ok()?
        } else {
            reply
        };
        let topology_version =
            TopologyVersion::from_reply(error).or_else(|| TopologyVersion::from_reply(reply));
        let contains_label = |document: &Document| {
            document.get_array("errorLabels").is_ok_and(|labels| {
                labels
                    .iter()
                    .any(|label| label.as_str() == Some(SYSTEM_OVERLOADED_ERROR))
            })
        };
        Some(ApplicationError {
            address,
            generation,
            max_wire_version,
            phase,
            kind: ApplicationErrorKind::Command {
                code: error
                    .get("code")
                    .and_then(as_i64)
                    .and_then(|code| i32::try_from(code).ok()),
                message: error.get_str("errmsg").unwrap_or_default().to_owned(),
                topology_version,
            },
            system_overloaded: contains_label(error) || contains_label(reply),
        })
    }
}

/// What to do about an application error, besides publishing the update's events.
#[derive(Debug, Clone, Default)]
pub struct ErrorResponse {
    /// Clear the server's connection pool (in load-balanced mode: only the
    /// connections to the failed connection's `serviceId`). Clear it before
    /// publishing the events, under the same lock as the update (spec "Why synchronize
    /// clearing a server's pool with updating the topology?").
    pub clear_pool: bool,
    /// Request an immediate check of the server (a state-change error: the server is
    /// up but not what the client thought). A single-threaded client instead marks the
    /// topology stale for "not writable primary" and "node is shutting down" errors.
    pub request_check: bool,
    /// The topology change (the server marked Unknown), if any.
    pub update: TopologyUpdate,
}

impl TopologyState {
    /// Opens a topology from the options (spec "Initial TopologyDescription"):
    ///
    /// - TopologyType: `loadBalanced=true` → LoadBalanced; `directConnection=true` →
    ///   Single; `replicaSet` → ReplicaSetNoPrimary; otherwise Unknown, whatever the
    ///   number of seeds;
    /// - setName: `replicaSet` (checked against the server's in Single too);
    /// - servers: the seeds (`options.hosts`, after any SRV resolution), all Unknown;
    /// - heartbeat frequency: `heartbeatFrequencyMS`, by default 10 seconds.
    ///
    /// Returns the events to publish: TopologyOpening, a TopologyDescriptionChanged
    /// from an empty Unknown description, ServerOpening for each seed. In
    /// load-balanced mode, then, the server becomes a LoadBalancer at once (a
    /// ServerDescriptionChanged and a second TopologyDescriptionChanged; spec
    /// load-balancers.md "Monitoring"): no monitor is started in that mode.
    pub fn open(options: &ClientOptions, topology_id: ObjectId) -> (TopologyState, Vec<SdamEvent>) {
        let description = TopologyDescription::initial(options);
        let mut state = TopologyState {
            id: topology_id,
            description: TopologyDescription {
                heartbeat_frequency: description.heartbeat_frequency,
                ..TopologyDescription::default()
            },
            single_seed: options.hosts.len() == 1,
            closed: false,
            describe: true,
        };
        let mut events = vec![SdamEvent::TopologyOpening(TopologyOpeningEvent {
            topology_id,
        })];
        events.extend(state.replace(description).events);
        // The TopologyDescriptionChanged of opening comes before the ServerOpening events.
        let changed = events
            .iter()
            .position(|event| matches!(event, SdamEvent::TopologyDescriptionChanged(_)));
        if let Some(changed) = changed {
            let event = events.remove(changed);
            events.insert(1, event);
        }
        if state.description.topology_type == TopologyType::LoadBalanced {
            let mut description = state.description.clone();
            for server in description.servers.values_mut() {
                server.server_type = ServerType::LoadBalancer;
            }
            events.extend(state.replace(description).events);
        }
        (state, events)
    }

    /// The topology's id, carried by its events.
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// The current description.
    pub fn description(&self) -> &TopologyDescription {
        &self.description
    }

    /// Sets the heartbeat frequency the description reports (by default the
    /// options' heartbeatFrequencyMS, or 10 seconds), e.g. to the 60-second default of
    /// single-threaded monitoring.
    pub fn set_heartbeat_frequency(&mut self, heartbeat_frequency: Duration) {
        self.description.heartbeat_frequency = heartbeat_frequency;
    }

    /// Whether updates build their TopologyDescriptionChanged event (by default they
    /// do). The event carries the previous and the new description of the whole
    /// topology: building it costs a copy of every server, which a client nobody listens
    /// to skips. The other events are built either way, and
    /// [`TopologyUpdate::changed`] still says whether the description changed.
    pub fn set_describing(&mut self, describe: bool) {
        self.describe = describe;
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Applies a new description of one server: the outcome of a monitor's check
    /// ([`ServerDescription::from_hello`], or [`ServerDescription::from_error`] for a
    /// failed check), or a server marked Unknown after an error.
    ///
    /// Ignored (an empty update) when the server is no longer in the topology, when
    /// the description is older than the current one by `topologyVersion`, when the
    /// topology is LoadBalanced (its one server is always a LoadBalancer) and when it
    /// is closed. Otherwise the description replaces the server's, even if equal, and
    /// the spec's TopologyType table runs: updateUnknownWithStandalone,
    /// updateRSWithoutPrimary, updateRSWithPrimaryFromMember, updateRSFromPrimary (with
    /// the electionId/setVersion rules of MongoDB 6.0+ and the older ones),
    /// checkIfHasPrimary, removal of servers of the wrong type or set, or whose `me`
    /// differs from their address; then `compatibility_error` and
    /// `logical_session_timeout_minutes` are recomputed.
    ///
    /// A monitor whose check failed with a network or command error also clears the
    /// server's pool (Server Monitoring spec); that is the monitor's business.
    pub fn apply(&mut self, server: ServerDescription) -> TopologyUpdate {
        if self.closed || self.description.topology_type == TopologyType::LoadBalanced {
            return TopologyUpdate::default();
        }
        let Some(current) = self.description.servers.get(&server.address) else {
            return TopologyUpdate::default();
        };
        if is_stale(current.topology_version, server.topology_version) {
            return TopologyUpdate::default();
        }
        // In place: the cost of a check must not grow with the number of servers.
        let mut edit = Edit::new(&mut self.description, Some(server.address.clone()));
        let stale_primaries = edit.update(server, self.single_seed);
        let mut update = edit.finish(self.id, self.describe);
        update.check_immediately = stale_primaries;
        update
    }

    /// The spec's error handling for an error of an application operation or of a
    /// connection handshake; `pool_generation` is the server's pool's current
    /// generation.
    ///
    /// - Ignored: a server not in the topology; an error from a connection of an older
    ///   generation; a state-change error whose `topologyVersion` is not newer than the
    ///   server's; an error with the `SystemOverloadedError` label (other than a
    ///   state-change error); a timeout after the handshake; any other command error
    ///   after the handshake.
    /// - A state-change error ("not writable primary" or "node is recovering", by code,
    ///   or by message when there is no code) marks the server Unknown, keeping the
    ///   error's `topologyVersion`, and requests an immediate check; the pool is cleared
    ///   only for "node is shutting down" errors, or when the server is older than 4.2.
    /// - A network error, or any error before the handshake completes (a timeout,
    ///   an authentication error), marks the server Unknown and clears the pool.
    ///
    /// In load-balanced mode the server is never marked Unknown; the pool (of the
    /// connection's service) is cleared in the same cases. Errors that happen before a
    /// load-balanced connection's hello completes must not be reported at all
    /// (load-balancers.md "Initial Handshake Errors").
    pub fn handle_application_error(
        &mut self,
        error: &ApplicationError,
        pool_generation: u32,
    ) -> ErrorResponse {
        if self.closed {
            return ErrorResponse::default();
        }
        let Some(current) = self.description.servers.get(&error.address) else {
            return ErrorResponse::default();
        };
        if error
            .generation
            .is_some_and(|generation| generation < pool_generation)
        {
            return ErrorResponse::default();
        }
        let load_balanced = self.description.topology_type == TopologyType::LoadBalanced;
        let mark_unknown = |state: &mut TopologyState, version| {
            if load_balanced {
                TopologyUpdate::default()
            } else {
                state.apply(ServerDescription::from_error(
                    error.address.clone(),
                    error.to_error(),
                    version,
                    None,
                ))
            }
        };
        match &error.kind {
            ApplicationErrorKind::Command {
                code,
                message,
                topology_version,
            } if is_state_change_error(*code, message) => {
                // Stale unless the error's topologyVersion is newer (another process, or
                // a higher counter); "any state change results in a new topologyVersion".
                if let (Some(current), Some(version)) = (current.topology_version, topology_version)
                {
                    if current.process_id == version.process_id
                        && current.counter >= version.counter
                    {
                        return ErrorResponse::default();
                    }
                }
                let update = mark_unknown(self, *topology_version);
                ErrorResponse {
                    clear_pool: is_shutdown(*code) || error.max_wire_version < WIRE_VERSION_4_2,
                    request_check: !load_balanced,
                    update,
                }
            }
            _ if error.system_overloaded => ErrorResponse::default(),
            ApplicationErrorKind::Timeout { .. } | ApplicationErrorKind::Command { .. }
                if error.phase == ErrorPhase::AfterHandshakeCompletes =>
            {
                ErrorResponse::default()
            }
            ApplicationErrorKind::Network { .. }
            | ApplicationErrorKind::Timeout { .. }
            | ApplicationErrorKind::Command { .. } => ErrorResponse {
                clear_pool: true,
                request_check: false,
                update: mark_unknown(self, None),
            },
        }
    }

    /// Whether SRV records may be rescanned (Polling SRV Records for mongos Discovery
    /// spec, "Implementation"): only while the TopologyType is Sharded or Unknown — not
    /// Single, a replica set type or LoadBalanced — and the topology is open. No
    /// TopologyType leads back to those two, so a topology that fails this never
    /// passes it again.
    pub fn polls_srv(&self) -> bool {
        !self.closed
            && matches!(
                self.description.topology_type,
                TopologyType::Sharded | TopologyType::Unknown
            )
    }

    /// Applies the hosts of an SRV rescan (Polling SRV Records for mongos Discovery
    /// spec): `found` are the verified hosts of the records, and the new server list is
    /// [`srv::rescanned_hosts`] of the current one — servers no longer found are
    /// removed, servers still found are left alone (their descriptions unchanged), new
    /// ones are added as Unknown (only as many as `srvMaxHosts` leaves room for, picked
    /// with `random`). An empty `found` changes nothing ("MUST NOT change the
    /// topology"), nor does a topology that [does not poll](Self::polls_srv).
    ///
    /// The update reports ServerOpening for added servers, ServerClosed for removed ones
    /// and a TopologyDescriptionChanged, like servers discovered from a hello reply.
    pub fn apply_srv_rescan(
        &mut self,
        found: &[ServerAddress],
        srv_max_hosts: u32,
        random: impl FnMut(usize) -> usize,
    ) -> TopologyUpdate {
        if !self.polls_srv() {
            return TopologyUpdate::default();
        }
        let current: Vec<ServerAddress> = self.description.servers.keys().cloned().collect();
        let hosts = srv::rescanned_hosts(&current, found, srv_max_hosts, random);
        let mut edit = Edit::new(&mut self.description, None);
        edit.retain(|address| hosts.contains(address));
        for host in hosts {
            edit.add_unknown(host);
        }
        edit.update_derived_fields();
        edit.finish(self.id, self.describe)
    }

    /// Closes the topology (spec "Client closing"): every server is removed and the
    /// type becomes Unknown. Returns ServerClosed for each server, the
    /// TopologyDescriptionChanged to the empty Unknown description, then
    /// TopologyClosed. Later calls return nothing, and the other methods ignore their
    /// input from then on.
    pub fn close(&mut self) -> Vec<SdamEvent> {
        if self.closed {
            return Vec::new();
        }
        let empty = TopologyDescription {
            heartbeat_frequency: self.description.heartbeat_frequency,
            ..TopologyDescription::default()
        };
        let mut events = self.replace(empty).events;
        events.push(SdamEvent::TopologyClosed(TopologyClosedEvent {
            topology_id: self.id,
        }));
        self.closed = true;
        events
    }

    /// Replaces the whole description (opening, closing), reporting the differences.
    fn replace(&mut self, description: TopologyDescription) -> TopologyUpdate {
        let mut edit = Edit::new(&mut self.description, None);
        edit.replace(description);
        edit.finish(self.id, self.describe)
    }
}

/// Reads of the current description: `state.servers`, `state.topology_type`, ….
impl Deref for TopologyState {
    type Target = TopologyDescription;

    fn deref(&self) -> &TopologyDescription {
        &self.description
    }
}

/// Whether a description with `new` as its `topologyVersion` is older than the current
/// one's: only when both are known, from the same process, and `new`'s counter is
/// lower (spec "topologyVersion Comparison").
fn is_stale(current: Option<TopologyVersion>, new: Option<TopologyVersion>) -> bool {
    match (current, new) {
        (Some(current), Some(new)) => new.is_stale_compared_to(current),
        _ => false,
    }
}

/// Whether two descriptions are equal once PossiblePrimary is read as Unknown: marking
/// a server PossiblePrimary is not a new check result and publishes no event.
fn same_ignoring_possible_primary(a: &ServerDescription, b: &ServerDescription) -> bool {
    let unmarked = |server: &ServerDescription| match server.server_type {
        ServerType::PossiblePrimary => ServerType::Unknown,
        other => other,
    };
    if unmarked(a) == unmarked(b) && a.server_type != b.server_type {
        let mut b = b.clone();
        b.server_type = a.server_type;
        return *a == b;
    }
    a == b
}

/// "node is recovering" (spec pseudocode `isRecovering`).
fn is_recovering(code: Option<i32>, message: &str) -> bool {
    match code {
        Some(code) => RECOVERING_CODES.contains(&code),
        None => {
            message.contains("not master or secondary") || message.contains("node is recovering")
        }
    }
}

/// "not writable primary" (spec pseudocode `isNotWritablePrimary`).
fn is_not_writable_primary(code: Option<i32>, message: &str) -> bool {
    match code {
        Some(code) => NOT_WRITABLE_PRIMARY_CODES.contains(&code),
        None => !is_recovering(None, message) && message.contains("not master"),
    }
}

/// A state-change error: "not writable primary" or "node is recovering".
fn is_state_change_error(code: Option<i32>, message: &str) -> bool {
    is_recovering(code, message) || is_not_writable_primary(code, message)
}

/// "node is shutting down" (by code only).
fn is_shutdown(code: Option<i32>) -> bool {
    code.is_some_and(|code| SHUTDOWN_CODES.contains(&code))
}

/// Parses a host as a hello reply spells it (`hosts`, `me`, `primary`); `None` if it
/// is not a valid address.
fn parse_host(host: &str) -> Option<ServerAddress> {
    ServerAddress::parse(host).ok()
}

/// Renders an (electionId, setVersion) tuple for the stale-primary error message.
fn tuple(election_id: Option<ObjectId>, set_version: Option<i32>) -> String {
    let election_id = election_id.map_or("null".to_owned(), |id| id.to_hex());
    let set_version = set_version.map_or("null".to_owned(), |v| v.to_string());
    format!("{{electionId: {election_id}, setVersion: {set_version}}}")
}

impl TopologyDescription {
    /// The initial description from the options, without events (see
    /// [`TopologyState::open`], which publishes it): the TopologyType, setName and
    /// seeds the spec's "Initial TopologyDescription" prescribes.
    pub fn initial(options: &ClientOptions) -> TopologyDescription {
        let load_balanced = options.load_balanced == Some(true);
        let topology_type = if load_balanced {
            TopologyType::LoadBalanced
        } else if options.direct_connection == Some(true) {
            TopologyType::Single
        } else if options.repl_set_name.is_some() {
            TopologyType::ReplicaSetNoPrimary
        } else {
            TopologyType::Unknown
        };
        TopologyDescription {
            topology_type,
            set_name: options.repl_set_name.clone().filter(|_| !load_balanced),
            servers: options
                .hosts
                .iter()
                .map(|address| (address.clone(), ServerDescription::unknown(address.clone())))
                .collect(),
            heartbeat_frequency: options
                .heartbeat_freq
                .unwrap_or(DEFAULT_HEARTBEAT_FREQUENCY),
            ..TopologyDescription::default()
        }
    }

    /// The description's own fields, without its servers.
    fn without_servers(&self) -> TopologyDescription {
        TopologyDescription {
            topology_type: self.topology_type,
            set_name: self.set_name.clone(),
            max_set_version: self.max_set_version,
            max_election_id: self.max_election_id,
            servers: BTreeMap::new(),
            compatibility_error: self.compatibility_error.clone(),
            logical_session_timeout_minutes: self.logical_session_timeout_minutes,
            heartbeat_frequency: self.heartbeat_frequency,
        }
    }

    /// Recomputes `compatibility_error` (spec "Checking wire protocol compatibility")
    /// and `logical_session_timeout_minutes` (spec "Logical Session Timeout": the
    /// smallest of the data-bearing servers', `None` if one of them has none, or if
    /// there are none) from every server. Load balancers: always compatible, no
    /// timeout (sessions are always supported there).
    fn update_derived_fields(&mut self) {
        if self.topology_type == TopologyType::LoadBalanced {
            self.compatibility_error = None;
            self.logical_session_timeout_minutes = None;
            return;
        }
        self.compatibility_error = self
            .servers
            .values()
            .find_map(ServerDescription::compatibility_error);
        let mut data_bearing = self
            .servers
            .values()
            .filter(|server| server.server_type.is_data_bearing())
            .map(|server| server.logical_session_timeout_minutes)
            .peekable();
        self.logical_session_timeout_minutes = if data_bearing.peek().is_none() {
            None
        } else {
            data_bearing.try_fold(i64::MAX, |min, timeout| timeout.map(|t| min.min(t)))
        };
    }
}

/// What a server contributes to the description's derived fields: its session timeout
/// if it is data-bearing, and its compatibility error. An absent server contributes
/// what an Unknown one does: nothing.
fn derived_inputs(server: Option<&ServerDescription>) -> (Option<Option<i64>>, Option<String>) {
    match server {
        Some(server) => (
            server
                .server_type
                .is_data_bearing()
                .then_some(server.logical_session_timeout_minutes),
            server.compatibility_error(),
        ),
        None => (None, None),
    }
}

/// An update of a [`TopologyDescription`] in place that remembers the servers it
/// touches and their descriptions before, so that an update, its comparison with the
/// previous description and its events cost what changed, not the size of the
/// topology: a deployment of 10,000 members gets a check result every millisecond,
/// and copying, comparing or scanning all of them for each made discovery quadratic.
/// Servers are only changed through its methods, which keep that record.
struct Edit<'a> {
    description: &'a mut TopologyDescription,
    /// The description's own fields before the update.
    before_fields: TopologyDescription,
    /// Each server touched, with its description before (`None`: it was not there).
    before: BTreeMap<ServerAddress, Option<ServerDescription>>,
    /// The server whose new description is applied, if any: its event comes first.
    applied: Option<ServerAddress>,
    /// The applied description, if the update removed its server (its event still
    /// reports it).
    removed_applied: Option<ServerDescription>,
}

/// Reads of the description being updated.
impl Deref for Edit<'_> {
    type Target = TopologyDescription;

    fn deref(&self) -> &TopologyDescription {
        self.description
    }
}

impl<'a> Edit<'a> {
    fn new(description: &'a mut TopologyDescription, applied: Option<ServerAddress>) -> Edit<'a> {
        Edit {
            before_fields: description.without_servers(),
            description,
            before: BTreeMap::new(),
            applied,
            removed_applied: None,
        }
    }

    /// Remembers `previous` as the description of `address` before the update, unless
    /// the update touched it already.
    fn record(&mut self, address: &ServerAddress, previous: Option<ServerDescription>) {
        if !self.before.contains_key(address) {
            self.before.insert(address.clone(), previous);
        }
    }

    /// Sets a server's description (adding the server if it is not there).
    fn insert(&mut self, server: ServerDescription) {
        let address = server.address.clone();
        let previous = self.description.servers.insert(address.clone(), server);
        self.record(&address, previous);
    }

    /// Removes a server.
    fn remove(&mut self, address: &ServerAddress) {
        if let Some(removed) = self.description.servers.remove(address) {
            if self.applied.as_ref() == Some(address) {
                self.removed_applied = Some(removed.clone());
            }
            self.record(address, Some(removed));
        }
    }

    /// Keeps only the servers for which `keep` holds.
    fn retain(&mut self, keep: impl Fn(&ServerAddress) -> bool) {
        let removed: Vec<ServerAddress> = self
            .servers
            .keys()
            .filter(|address| !keep(address))
            .cloned()
            .collect();
        for address in &removed {
            self.remove(address);
        }
    }

    /// Adds a server, Unknown, unless it is there already.
    fn add_unknown(&mut self, address: ServerAddress) {
        if !self.servers.contains_key(&address) {
            self.insert(ServerDescription::unknown(address));
        }
    }

    /// Replaces the whole description (every server counts as touched).
    fn replace(&mut self, new: TopologyDescription) {
        let previous = std::mem::replace(self.description, new);
        for (address, server) in previous.servers {
            self.record(&address, Some(server));
        }
        let added: Vec<ServerAddress> = self
            .servers
            .keys()
            .filter(|address| !self.before.contains_key(*address))
            .cloned()
            .collect();
        for address in &added {
            self.record(address, None);
        }
    }

    /// Replaces a server's description and runs the TopologyType table; returns the
    /// primaries replaced by a newer one. The server must be in the topology.
    fn update(&mut self, server: ServerDescription, single_seed: bool) -> Vec<ServerAddress> {
        let address = server.address.clone();
        let server_type = server.server_type;
        self.insert(server);
        let mut stale_primaries = Vec::new();
        use ServerType as S;
        use TopologyType as T;
        match (self.topology_type, server_type) {
            (T::LoadBalanced, _) => {}
            (T::Single, _) => self.verify_set_name_single(&address),
            (T::Unknown, S::Standalone) => {
                if single_seed {
                    self.description.topology_type = T::Single;
                } else {
                    self.remove(&address);
                }
            }
            (T::Unknown, S::Mongos) => self.description.topology_type = T::Sharded,
            (T::Unknown | T::ReplicaSetNoPrimary | T::ReplicaSetWithPrimary, S::RsPrimary) => {
                self.description.topology_type = T::ReplicaSetWithPrimary;
                self.update_rs_from_primary(&address, &mut stale_primaries);
            }
            (T::Unknown | T::ReplicaSetNoPrimary, S::RsSecondary | S::RsArbiter | S::RsOther) => {
                self.description.topology_type = T::ReplicaSetNoPrimary;
                self.update_rs_without_primary(&address);
            }
            (T::ReplicaSetWithPrimary, S::RsSecondary | S::RsArbiter | S::RsOther) => {
                self.update_rs_with_primary_from_member(&address);
            }
            (T::Unknown, S::Unknown | S::PossiblePrimary | S::RsGhost | S::LoadBalancer) => {}
            (T::Sharded, S::Unknown | S::PossiblePrimary | S::Mongos) => {}
            (T::Sharded, _) => self.remove(&address),
            (T::ReplicaSetNoPrimary, S::Unknown | S::PossiblePrimary | S::RsGhost) => {}
            (T::ReplicaSetNoPrimary, S::Standalone | S::Mongos | S::LoadBalancer) => {
                self.remove(&address);
            }
            (T::ReplicaSetWithPrimary, S::Unknown | S::PossiblePrimary | S::RsGhost) => {
                self.check_if_has_primary();
            }
            (T::ReplicaSetWithPrimary, S::Standalone | S::Mongos | S::LoadBalancer) => {
                self.remove(&address);
                self.check_if_has_primary();
            }
        }
        self.update_derived_fields();
        stale_primaries
    }

    /// "Verifying setName with TopologyType Single": with a replicaSet option, a server
    /// reporting no or another setName is replaced by an Unknown description.
    fn verify_set_name_single(&mut self, address: &ServerAddress) {
        let Some(expected) = &self.set_name else {
            return;
        };
        let server = &self.servers[address];
        if server.server_type == ServerType::Unknown || server.set_name.as_ref() == Some(expected) {
            return;
        }
        let message = match &server.set_name {
            Some(actual) => {
                format!("replica set name {actual:?} does not match replicaSet {expected:?}")
            }
            None => {
                format!("server is not a member of a replica set, but replicaSet is {expected:?}")
            }
        };
        let unknown = ServerDescription::from_error(
            address.clone(),
            Error::misbehaving(address, message),
            None,
            server.stamp(),
        );
        self.insert(unknown);
    }

    /// Whether the server's `me` is not the address the client knows it by.
    fn me_mismatch(&self, address: &ServerAddress) -> bool {
        let server = &self.servers[address];
        server
            .me
            .as_deref()
            .is_some_and(|me| parse_host(me).as_ref() != Some(address))
    }

    /// Adds every member the server reports that is not in the topology yet.
    fn add_members(&mut self, address: &ServerAddress) {
        let members: Vec<ServerAddress> = self.servers[address]
            .members()
            .filter_map(parse_host)
            .collect();
        for member in members {
            self.add_unknown(member);
        }
    }

    /// Marks the server's `primary` PossiblePrimary, if it is Unknown.
    fn mark_possible_primary(&mut self, address: &ServerAddress) {
        let Some(primary) = self.servers[address]
            .primary
            .as_deref()
            .and_then(parse_host)
        else {
            return;
        };
        let Some(server) = self.servers.get(&primary) else {
            return;
        };
        if server.server_type == ServerType::Unknown {
            let marked = ServerDescription {
                server_type: ServerType::PossiblePrimary,
                ..server.clone()
            };
            self.insert(marked);
        }
    }

    /// Spec "updateRSWithoutPrimary".
    fn update_rs_without_primary(&mut self, address: &ServerAddress) {
        let set_name = self.servers[address].set_name.clone();
        if self.set_name.is_none() {
            self.description.set_name = set_name;
        } else if self.set_name != set_name {
            self.remove(address);
            return;
        }
        self.add_members(address);
        self.mark_possible_primary(address);
        if self.me_mismatch(address) {
            self.remove(address);
        }
    }

    /// Spec "updateRSWithPrimaryFromMember".
    fn update_rs_with_primary_from_member(&mut self, address: &ServerAddress) {
        if self.set_name != self.servers[address].set_name || self.me_mismatch(address) {
            self.remove(address);
            self.check_if_has_primary();
            return;
        }
        if !self.has_primary() {
            self.description.topology_type = TopologyType::ReplicaSetNoPrimary;
            self.mark_possible_primary(address);
        }
    }

    /// Spec "updateRSFromPrimary"; adds to `stale_primaries` the previous primary it
    /// replaces.
    fn update_rs_from_primary(
        &mut self,
        address: &ServerAddress,
        stale_primaries: &mut Vec<ServerAddress>,
    ) {
        let server = &self.servers[address];
        let (election_id, set_version) = (server.election_id, server.set_version);
        let (set_name, max_wire_version) = (server.set_name.clone(), server.max_wire_version);
        if self.set_name.is_none() {
            self.description.set_name = set_name;
        } else if self.set_name != set_name {
            self.remove(address);
            self.check_if_has_primary();
            return;
        }
        let description = &mut *self.description;
        let stale = if max_wire_version >= WIRE_VERSION_6_0 {
            // electionId first, then setVersion; null is less than any value.
            let newer = election_id > description.max_election_id
                || (election_id == description.max_election_id
                    && set_version >= description.max_set_version);
            if newer {
                description.max_election_id = election_id;
                description.max_set_version = set_version;
            }
            !newer
        } else {
            let mut stale = false;
            if let (Some(version), Some(id)) = (set_version, election_id) {
                if let (Some(max_version), Some(max_id)) =
                    (description.max_set_version, description.max_election_id)
                {
                    stale = max_version > version || (max_version == version && max_id > id);
                }
                if !stale {
                    description.max_election_id = Some(id);
                }
            }
            if !stale {
                if let Some(version) = set_version {
                    if description.max_set_version.is_none_or(|max| version > max) {
                        description.max_set_version = Some(version);
                    }
                }
            }
            stale
        };
        if stale {
            let message = format!(
                "primary marked stale due to electionId/setVersion mismatch, {} is stale compared to {}",
                tuple(election_id, set_version),
                tuple(self.max_election_id, self.max_set_version),
            );
            let unknown = ServerDescription::from_error(
                address.clone(),
                Error::misbehaving(address, message),
                None,
                self.servers[address].stamp(),
            );
            self.insert(unknown);
            self.check_if_has_primary();
            return;
        }
        let other_primaries: Vec<ServerAddress> = self
            .servers
            .values()
            .filter(|other| &other.address != address && other.server_type == ServerType::RsPrimary)
            .map(|other| other.address.clone())
            .collect();
        for other in other_primaries {
            self.insert(ServerDescription::from_error(
                other.clone(),
                Error::misbehaving(
                    &other,
                    "primary marked stale due to discovery of newer primary",
                ),
                None,
                None,
            ));
            stale_primaries.push(other);
        }
        self.add_members(address);
        let members: BTreeSet<ServerAddress> = self.servers[address]
            .members()
            .filter_map(parse_host)
            .collect();
        self.retain(|server| members.contains(server));
        stale_primaries.retain(|server| members.contains(server));
        self.check_if_has_primary();
    }

    /// Whether a server is the primary (spec `checkIfHasPrimary`'s test). A topology
    /// that had a primary still has it when the update did not touch it: that is known
    /// without looking at the other members.
    fn has_primary(&self) -> bool {
        let kept = self.before_fields.topology_type == TopologyType::ReplicaSetWithPrimary
            && self
                .before
                .values()
                .flatten()
                .all(|server| server.server_type != ServerType::RsPrimary);
        kept || self.primary().is_some()
    }

    /// Spec "checkIfHasPrimary".
    fn check_if_has_primary(&mut self) {
        self.description.topology_type = if self.has_primary() {
            TopologyType::ReplicaSetWithPrimary
        } else {
            TopologyType::ReplicaSetNoPrimary
        };
    }

    /// Recomputes the derived fields, when a server the update touched contributes
    /// differently to them: the failed check of an Unknown member leaves them alone
    /// without a look at the others.
    fn update_derived_fields(&mut self) {
        let touched = self.before.iter().any(|(address, before)| {
            derived_inputs(before.as_ref()) != derived_inputs(self.servers.get(address))
        });
        if touched {
            self.description.update_derived_fields();
        }
    }

    /// Ends the update: the events reporting it (see [`TopologyUpdate::events`]) and
    /// the servers added and removed. The TopologyDescriptionChanged event, which
    /// carries two copies of the whole description, is only built when `describe`.
    fn finish(self, topology_id: ObjectId, describe: bool) -> TopologyUpdate {
        let Edit {
            description,
            before_fields,
            before,
            applied,
            removed_applied,
        } = self;
        let mut update = TopologyUpdate::default();
        let server_changed =
            |address: &ServerAddress, previous: &ServerDescription, new: &ServerDescription| {
                SdamEvent::ServerDescriptionChanged(Box::new(ServerDescriptionChangedEvent {
                    address: address.clone(),
                    topology_id,
                    previous_description: ServerInfo::owned(previous.clone()),
                    new_description: ServerInfo::owned(new.clone()),
                }))
            };
        // Each touched server is compared once (a primary's lists may be long).
        let mut servers_changed = false;
        if let Some(address) = &applied {
            let new = description
                .servers
                .get(address)
                .or(removed_applied.as_ref());
            if let (Some(Some(previous)), Some(new)) = (before.get(address), new) {
                if previous != new {
                    servers_changed = true;
                    update.events.push(server_changed(address, previous, new));
                }
            }
        }
        for (address, previous) in &before {
            if applied.as_ref() == Some(address) {
                continue;
            }
            if let (Some(previous), Some(new)) = (previous, description.servers.get(address)) {
                if previous != new {
                    servers_changed = true;
                    if !same_ignoring_possible_primary(previous, new) {
                        update.events.push(server_changed(address, previous, new));
                    }
                }
            }
        }
        for (address, previous) in &before {
            if previous.is_none() && description.servers.contains_key(address) {
                update.added.push(address.clone());
                update
                    .events
                    .push(SdamEvent::ServerOpening(ServerOpeningEvent {
                        topology_id,
                        address: address.clone(),
                    }));
            }
        }
        for (address, previous) in &before {
            if previous.is_some() && !description.servers.contains_key(address) {
                update.removed.push(address.clone());
                update
                    .events
                    .push(SdamEvent::ServerClosed(ServerClosedEvent {
                        topology_id,
                        address: address.clone(),
                    }));
            }
        }
        update.changed = servers_changed
            || !update.added.is_empty()
            || !update.removed.is_empty()
            || before_fields != description.without_servers();
        if update.changed && describe {
            // The previous description: the current one with the touched servers as
            // they were.
            let mut previous = before_fields;
            previous.servers = description.servers.clone();
            for (address, server) in before {
                match server {
                    Some(server) => previous.servers.insert(address, server),
                    None => previous.servers.remove(&address),
                };
            }
            update
                .events
                .push(SdamEvent::TopologyDescriptionChanged(Box::new(
                    TopologyDescriptionChangedEvent {
                        topology_id,
                        previous_description: previous,
                        new_description: description.clone(),
                    },
                )));
        }
        update
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn address(host: &str) -> ServerAddress {
        ServerAddress::parse(host).unwrap()
    }

    fn open(uri: &str) -> (TopologyState, Vec<SdamEvent>) {
        let options = ClientOptions::parse_uri(uri).unwrap();
        TopologyState::open(&options, ObjectId::new())
    }

    fn hello(host: &str, reply: Document) -> ServerDescription {
        ServerDescription::from_hello(address(host), reply, None, None)
    }

    fn primary(
        host: &str,
        hosts: &[&str],
        election: u8,
        set_version: i32,
        wire: i32,
    ) -> ServerDescription {
        let mut id = [0u8; 12];
        id[11] = election;
        hello(
            host,
            doc! {
                "ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": hosts,
                "electionId": ObjectId::from_bytes(id), "setVersion": set_version,
                "minWireVersion": 0, "maxWireVersion": wire,
            },
        )
    }

    fn secondary(host: &str, hosts: &[&str], extra: Document) -> ServerDescription {
        let mut reply = doc! {
            "ok": 1, "isWritablePrimary": false, "secondary": true, "setName": "rs",
            "hosts": hosts, "minWireVersion": 0, "maxWireVersion": 21,
        };
        reply.extend(extra);
        hello(host, reply)
    }

    fn server_type(state: &TopologyState, host: &str) -> Option<ServerType> {
        state
            .description()
            .server(&address(host))
            .map(|s| s.server_type)
    }

    fn names(events: &[SdamEvent]) -> Vec<&'static str> {
        events.iter().map(SdamEvent::name).collect()
    }

    #[test]
    fn initial_topology_type_follows_the_options() {
        for (uri, expected) in [
            ("mongodb://a", TopologyType::Unknown),
            ("mongodb://a,b", TopologyType::Unknown),
            ("mongodb://a/?directConnection=true", TopologyType::Single),
            (
                "mongodb://a/?directConnection=true&replicaSet=rs",
                TopologyType::Single,
            ),
            (
                "mongodb://a/?replicaSet=rs",
                TopologyType::ReplicaSetNoPrimary,
            ),
            ("mongodb://a/?loadBalanced=true", TopologyType::LoadBalanced),
        ] {
            let (state, _) = open(uri);
            assert_eq!(state.description().topology_type, expected, "{uri}");
        }
    }

    #[test]
    fn opening_events_come_in_the_spec_order() {
        let (_, events) = open("mongodb://a,b");
        assert_eq!(
            names(&events),
            [
                "TopologyOpeningEvent",
                "TopologyDescriptionChangedEvent",
                "ServerOpeningEvent",
                "ServerOpeningEvent"
            ]
        );
        let (state, events) = open("mongodb://a/?loadBalanced=true");
        assert_eq!(
            names(&events),
            [
                "TopologyOpeningEvent",
                "TopologyDescriptionChangedEvent",
                "ServerOpeningEvent",
                "ServerDescriptionChangedEvent",
                "TopologyDescriptionChangedEvent"
            ]
        );
        assert_eq!(server_type(&state, "a"), Some(ServerType::LoadBalancer));
        assert!(state.description().compatible());
    }

    #[test]
    fn a_single_seed_standalone_becomes_single_and_several_seeds_remove_it() {
        let standalone = doc! { "ok": 1, "isWritablePrimary": true, "maxWireVersion": 21 };
        let (mut one, _) = open("mongodb://a");
        one.apply(hello("a", standalone.clone()));
        assert_eq!(one.description().topology_type, TopologyType::Single);

        let (mut two, _) = open("mongodb://a,b");
        let update = two.apply(hello("a", standalone.clone()));
        assert_eq!(two.description().topology_type, TopologyType::Unknown);
        assert_eq!(update.removed, [address("a")]);
        // The seed count, not the servers left, decides.
        two.apply(hello("b", standalone));
        assert!(two.description().servers.is_empty());
    }

    #[test]
    fn a_new_primary_demotes_the_old_one_and_asks_for_a_check() {
        let (mut state, _) = open("mongodb://a,b/?replicaSet=rs");
        state.apply(primary("a", &["a:27017", "b:27017"], 1, 1, 21));
        let update = state.apply(primary("b", &["a:27017", "b:27017"], 2, 1, 21));
        assert_eq!(server_type(&state, "a"), Some(ServerType::Unknown));
        assert_eq!(server_type(&state, "b"), Some(ServerType::RsPrimary));
        assert_eq!(update.check_immediately, [address("a")]);
        let a = state.description().server(&address("a")).unwrap();
        assert!(a
            .error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("discovery of newer primary"));
        // Both servers changed: b first (the one applied), then a.
        assert_eq!(
            names(&update.events),
            [
                "ServerDescriptionChangedEvent",
                "ServerDescriptionChangedEvent",
                "TopologyDescriptionChangedEvent"
            ]
        );
    }

    #[test]
    fn election_id_takes_precedence_from_6_0_and_set_version_before() {
        // 6.0+: a higher electionId wins even with a lower setVersion.
        let (mut state, _) = open("mongodb://a,b/?replicaSet=rs");
        state.apply(primary("a", &["a:27017", "b:27017"], 1, 2, 21));
        state.apply(primary("b", &["a:27017", "b:27017"], 2, 1, 21));
        assert_eq!(server_type(&state, "b"), Some(ServerType::RsPrimary));
        assert_eq!(state.description().max_set_version, Some(1));
        // An older electionId is stale.
        state.apply(primary("a", &["a:27017", "b:27017"], 1, 2, 21));
        let a = state.description().server(&address("a")).unwrap();
        assert_eq!(a.server_type, ServerType::Unknown);
        assert!(a
            .error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("electionId/setVersion mismatch"));

        // Before 6.0: a higher setVersion wins even with a lower electionId.
        let (mut state, _) = open("mongodb://a,b/?replicaSet=rs");
        state.apply(primary("a", &["a:27017", "b:27017"], 2, 1, 16));
        state.apply(primary("b", &["a:27017", "b:27017"], 1, 2, 16));
        assert_eq!(server_type(&state, "b"), Some(ServerType::RsPrimary));
        assert_eq!(server_type(&state, "a"), Some(ServerType::Unknown));
        state.apply(primary("a", &["a:27017", "b:27017"], 2, 1, 16));
        assert_eq!(server_type(&state, "a"), Some(ServerType::Unknown));
        assert_eq!(state.description().max_set_version, Some(2));
    }

    #[test]
    fn a_member_whose_me_differs_is_removed_and_its_primary_hint_kept() {
        let (mut state, _) = open("mongodb://a/?replicaSet=rs");
        let update = state.apply(secondary(
            "a",
            &["b:27017", "c:27017"],
            doc! { "me": "c:27017", "primary": "b:27017" },
        ));
        assert_eq!(server_type(&state, "a"), None);
        assert_eq!(server_type(&state, "b"), Some(ServerType::PossiblePrimary));
        assert_eq!(update.removed, [address("a")]);
        assert_eq!(update.added, [address("b"), address("c")]);
    }

    #[test]
    fn hosts_are_lower_cased() {
        let (mut state, _) = open("mongodb://A/?replicaSet=rs");
        state.apply(hello(
            "a",
            doc! { "ok": 1, "isWritablePrimary": true, "setName": "rs",
            "hosts": ["A:27017", "B:27017"], "me": "A:27017", "maxWireVersion": 21 },
        ));
        let servers: Vec<String> = state
            .description()
            .servers
            .keys()
            .map(ToString::to_string)
            .collect();
        assert_eq!(servers, ["a:27017", "b:27017"]);
        assert_eq!(
            state.description().topology_type,
            TopologyType::ReplicaSetWithPrimary
        );
    }

    #[test]
    fn logical_session_timeout_is_the_minimum_of_data_bearing_servers() {
        let (mut state, _) = open("mongodb://a,b/?replicaSet=rs");
        let hosts = ["a:27017", "b:27017", "c:27017"];
        state.apply(hello(
            "a",
            doc! { "ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": hosts.as_slice(),
            "logicalSessionTimeoutMinutes": 30, "maxWireVersion": 21 },
        ));
        assert_eq!(
            state.description().logical_session_timeout_minutes,
            Some(30)
        );
        state.apply(secondary(
            "b",
            &hosts,
            doc! { "logicalSessionTimeoutMinutes": 10 },
        ));
        assert_eq!(
            state.description().logical_session_timeout_minutes,
            Some(10)
        );
        // An arbiter does not count.
        state.apply(hello(
            "c",
            doc! { "ok": 1, "arbiterOnly": true, "setName": "rs", "hosts": hosts.as_slice(),
            "maxWireVersion": 21 },
        ));
        assert_eq!(
            state.description().logical_session_timeout_minutes,
            Some(10)
        );
        // A data-bearing server without sessions disables them.
        state.apply(secondary("b", &hosts, doc! {}));
        assert_eq!(state.description().logical_session_timeout_minutes, None);
    }

    #[test]
    fn incompatible_servers_are_reported_and_unknown_ones_ignored() {
        let (mut state, _) = open("mongodb://a,b");
        assert!(state.description().compatible());
        state.apply(hello(
            "a",
            doc! { "ok": 1, "msg": "isdbgrid", "minWireVersion": 0, "maxWireVersion": 6 },
        ));
        let error = state.description().compatibility_error.clone().unwrap();
        assert!(error.contains("a:27017 reports wire version 6"), "{error}");
        assert!(state
            .description()
            .to_string()
            .contains("reports wire version 6"));
        state.apply(hello(
            "a",
            doc! { "ok": 1, "msg": "isdbgrid", "minWireVersion": 0, "maxWireVersion": 21 },
        ));
        assert!(state.description().compatible());
    }

    #[test]
    fn stale_topology_versions_are_ignored() {
        let (mut state, _) = open("mongodb://a/?directConnection=true");
        let process = ObjectId::new();
        let reply = |counter: i64| {
            doc! { "ok": 1, "isWritablePrimary": true, "maxWireVersion": 21,
            "topologyVersion": { "processId": process, "counter": counter } }
        };
        state.apply(hello("a", reply(2)));
        let update = state.apply(ServerDescription::from_error(
            address("a"),
            Error::internal("old"),
            Some(TopologyVersion {
                process_id: process,
                counter: 1,
            }),
            None,
        ));
        assert!(update.is_empty());
        assert_eq!(server_type(&state, "a"), Some(ServerType::Standalone));
        // Equal descriptions are stored but publish nothing.
        assert!(state.apply(hello("a", reply(2))).events.is_empty());
    }

    fn command_error(
        code: Option<i32>,
        message: &str,
        counter: Option<i64>,
        process: ObjectId,
    ) -> ApplicationError {
        ApplicationError {
            address: address("a"),
            generation: None,
            max_wire_version: 9,
            phase: ErrorPhase::AfterHandshakeCompletes,
            kind: ApplicationErrorKind::Command {
                code,
                message: message.to_owned(),
                topology_version: counter.map(|counter| TopologyVersion {
                    process_id: process,
                    counter,
                }),
            },
            system_overloaded: false,
        }
    }

    fn rs_primary_with_version(process: ObjectId) -> TopologyState {
        let (mut state, _) = open("mongodb://a/?replicaSet=rs");
        state.apply(hello(
            "a",
            doc! { "ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": ["a:27017"],
            "maxWireVersion": 9,
            "topologyVersion": { "processId": process, "counter": 1_i64 } },
        ));
        state
    }

    #[test]
    fn state_change_errors_mark_unknown_and_clear_only_on_shutdown() {
        let process = ObjectId::new();
        // Stale or equal topologyVersion: ignored.
        let mut state = rs_primary_with_version(process);
        for counter in [0, 1] {
            let response = state.handle_application_error(
                &command_error(Some(10107), "not primary", Some(counter), process),
                0,
            );
            assert!(!response.clear_pool && !response.request_check && response.update.is_empty());
        }
        // Newer: Unknown, keeping the error's topologyVersion, check requested.
        let response =
            state.handle_application_error(&command_error(Some(10107), "x", Some(2), process), 0);
        assert!(!response.clear_pool && response.request_check);
        let a = state.description().server(&address("a")).unwrap();
        assert_eq!(a.server_type, ServerType::Unknown);
        assert_eq!(a.topology_version.map(|v| v.counter), Some(2));
        assert_eq!(
            state.description().topology_type,
            TopologyType::ReplicaSetNoPrimary
        );

        // Shutdown: the pool is cleared.
        let mut state = rs_primary_with_version(process);
        let response =
            state.handle_application_error(&command_error(Some(91), "x", Some(2), process), 0);
        assert!(response.clear_pool && response.request_check);

        // By message, when there is no code; a code wins over the message.
        let mut state = rs_primary_with_version(process);
        let response =
            state.handle_application_error(&command_error(Some(1), "not master", None, process), 0);
        assert!(response.update.is_empty());
        let response = state.handle_application_error(
            &command_error(None, "not master or secondary", None, process),
            0,
        );
        assert!(response.request_check && !response.clear_pool);
        assert_eq!(server_type(&state, "a"), Some(ServerType::Unknown));

        // A pre-4.2 server's pool is cleared on any state-change error.
        let mut state = rs_primary_with_version(process);
        let mut old = command_error(Some(10107), "x", None, process);
        old.max_wire_version = 7;
        assert!(state.handle_application_error(&old, 0).clear_pool);
    }

    #[test]
    fn network_errors_and_timeouts_depend_on_the_phase_and_generation() {
        let process = ObjectId::new();
        let network = |phase, generation, overloaded, timeout: bool| ApplicationError {
            address: address("a"),
            generation,
            max_wire_version: 9,
            phase,
            kind: if timeout {
                ApplicationErrorKind::Timeout {
                    message: "timed out".into(),
                }
            } else {
                ApplicationErrorKind::Network {
                    message: "reset".into(),
                }
            },
            system_overloaded: overloaded,
        };
        use ErrorPhase::*;
        // A timeout after the handshake: nothing.
        let mut state = rs_primary_with_version(process);
        let response =
            state.handle_application_error(&network(AfterHandshakeCompletes, None, false, true), 0);
        assert!(!response.clear_pool && response.update.is_empty());
        // Errors labelled SystemOverloadedError by the pool: nothing.
        let response = state
            .handle_application_error(&network(BeforeHandshakeCompletes, None, true, false), 0);
        assert!(!response.clear_pool && response.update.is_empty());
        // A stale generation: nothing.
        let response = state
            .handle_application_error(&network(AfterHandshakeCompletes, Some(0), false, false), 1);
        assert!(!response.clear_pool && response.update.is_empty());
        // A timeout before the handshake completes (authentication): Unknown and clear.
        let response = state
            .handle_application_error(&network(BeforeHandshakeCompletes, Some(1), false, true), 1);
        assert!(response.clear_pool && !response.request_check);
        assert_eq!(server_type(&state, "a"), Some(ServerType::Unknown));
        // A network error after the handshake: Unknown and clear, topologyVersion dropped.
        let mut state = rs_primary_with_version(process);
        let response = state
            .handle_application_error(&network(AfterHandshakeCompletes, None, false, false), 0);
        assert!(response.clear_pool);
        let a = state.description().server(&address("a")).unwrap();
        assert_eq!(
            (a.server_type, a.topology_version),
            (ServerType::Unknown, None)
        );
        assert!(a.error.as_ref().unwrap().to_string().contains("reset"));
    }

    #[test]
    fn load_balanced_errors_clear_the_pool_but_keep_the_server() {
        let (mut state, _) = open("mongodb://a/?loadBalanced=true");
        let error = ApplicationError {
            address: address("a"),
            generation: None,
            max_wire_version: 17,
            phase: ErrorPhase::AfterHandshakeCompletes,
            kind: ApplicationErrorKind::Network {
                message: "reset".into(),
            },
            system_overloaded: false,
        };
        let response = state.handle_application_error(&error, 0);
        assert!(response.clear_pool && response.update.is_empty());
        assert_eq!(server_type(&state, "a"), Some(ServerType::LoadBalancer));
        assert!(state
            .apply(ServerDescription::unknown(address("a")))
            .is_empty());
    }

    #[test]
    fn application_errors_from_driver_errors_and_replies() {
        let error = Error::from(crate::error::CommandError {
            code: 91,
            code_name: "ShutdownInProgress".into(),
            message: "shutting down".into(),
            error_labels: vec![SYSTEM_OVERLOADED_ERROR.into()],
            topology_version: Some(TopologyVersion {
                process_id: ObjectId::from_bytes([7; 12]),
                counter: 4,
            }),
        });
        let converted = ApplicationError::from_error(
            &error,
            address("a"),
            None,
            21,
            ErrorPhase::AfterHandshakeCompletes,
        )
        .unwrap();
        assert!(converted.system_overloaded);
        assert!(matches!(
            converted.kind,
            ApplicationErrorKind::Command { code: Some(91), topology_version: Some(version), .. }
                if version.counter == 4
        ));
        assert!(ApplicationError::from_error(
            &Error::invalid_argument("x"),
            address("a"),
            None,
            21,
            ErrorPhase::AfterHandshakeCompletes
        )
        .is_none());

        let phase = ErrorPhase::AfterHandshakeCompletes;
        let process = ObjectId::new();
        let reply = doc! { "ok": 1, "writeConcernError": { "code": 91, "errmsg": "x" },
        "topologyVersion": { "processId": process, "counter": 3_i64 } };
        let wce = ApplicationError::from_reply(&reply, address("a"), None, 21, phase).unwrap();
        assert_eq!(
            wce.kind,
            ApplicationErrorKind::Command {
                code: Some(91),
                message: "x".into(),
                topology_version: Some(TopologyVersion {
                    process_id: process,
                    counter: 3
                }),
            }
        );
        let write_errors = doc! { "ok": 1, "writeErrors": [{ "code": 10107, "errmsg": "x" }] };
        assert!(
            ApplicationError::from_reply(&write_errors, address("a"), None, 21, phase).is_none()
        );
    }

    #[test]
    fn closing_reports_every_server_then_the_empty_topology() {
        let (mut state, _) = open("mongodb://a,b");
        let events = state.close();
        assert_eq!(
            names(&events),
            [
                "ServerClosedEvent",
                "ServerClosedEvent",
                "TopologyDescriptionChangedEvent",
                "TopologyClosedEvent"
            ]
        );
        let SdamEvent::TopologyDescriptionChanged(changed) = &events[2] else {
            panic!("{events:?}");
        };
        let new = &changed.new_description;
        assert_eq!(new.topology_type, TopologyType::Unknown);
        assert!(new.servers.is_empty());
        assert!(state.close().is_empty());
        assert!(state
            .apply(ServerDescription::unknown(address("a")))
            .is_empty());
    }

    #[test]
    fn display_summarizes_the_topology() {
        let (mut state, _) = open("mongodb://a,b/?replicaSet=rs");
        state.apply(ServerDescription::from_error(
            address("a"),
            Error::internal("connection refused"),
            None,
            None,
        ));
        state.apply(secondary("b", &["a:27017", "b:27017"], doc! {}));
        assert_eq!(
            state.description().to_string(),
            "ReplicaSetNoPrimary (setName \"rs\"): a:27017 (Unknown: internal error: connection refused), b:27017 (RSSecondary)"
        );
    }

    fn mongos(host: &str) -> ServerDescription {
        hello(
            host,
            doc! { "ok": 1, "isWritablePrimary": true, "msg": "isdbgrid", "maxWireVersion": 21 },
        )
    }

    fn hosts(state: &TopologyState) -> Vec<String> {
        state.servers.keys().map(ToString::to_string).collect()
    }

    #[test]
    fn an_srv_rescan_adds_and_removes_servers_and_leaves_the_others_alone() {
        let (mut state, _) = open("mongodb://a,b");
        state.apply(mongos("a"));
        assert_eq!(state.topology_type, TopologyType::Sharded);
        let known = state.server(&address("a")).cloned();
        let update = state.apply_srv_rescan(&[address("a"), address("c")], 0, |_| 0);
        assert_eq!(update.added, [address("c")]);
        assert_eq!(update.removed, [address("b")]);
        assert_eq!(
            names(&update.events),
            [
                "ServerOpeningEvent",
                "ServerClosedEvent",
                "TopologyDescriptionChangedEvent"
            ]
        );
        assert_eq!(hosts(&state), ["a:27017", "c:27017"]);
        // The server still listed keeps its description; the new one is Unknown.
        assert_eq!(state.server(&address("a")).cloned(), known);
        assert_eq!(server_type(&state, "c"), Some(ServerType::Unknown));
        assert_eq!(state.topology_type, TopologyType::Sharded);
        // The same hosts again: nothing happens.
        assert!(state
            .apply_srv_rescan(&[address("c"), address("a")], 0, |_| 0)
            .is_empty());
    }

    #[test]
    fn an_srv_rescan_without_verified_hosts_changes_nothing() {
        let (mut state, _) = open("mongodb://a,b");
        assert!(state.apply_srv_rescan(&[], 0, |_| 0).is_empty());
        assert_eq!(hosts(&state), ["a:27017", "b:27017"]);
    }

    #[test]
    fn an_srv_rescan_adds_new_hosts_only_up_to_srv_max_hosts() {
        let (mut state, _) = open("mongodb://a,b");
        let found = [address("a"), address("c"), address("d")];
        // a stays, b goes, and one of c and d (by `random`) fills the second place.
        state.apply_srv_rescan(&found, 2, |_| 0);
        assert_eq!(hosts(&state), ["a:27017", "c:27017"]);
        let (mut state, _) = open("mongodb://a,b");
        state.apply_srv_rescan(&found, 2, |n| n - 1);
        assert_eq!(hosts(&state), ["a:27017", "d:27017"]);
        // srvMaxHosts at least the number found: all of them.
        let (mut state, _) = open("mongodb://a,b");
        state.apply_srv_rescan(&found, 3, |_| 0);
        assert_eq!(hosts(&state), ["a:27017", "c:27017", "d:27017"]);
    }

    #[test]
    fn srv_rescans_are_for_sharded_and_unknown_topologies_only() {
        let found = [address("z")];
        let (mut unknown, _) = open("mongodb://a");
        assert!(unknown.polls_srv());
        for uri in [
            "mongodb://a/?replicaSet=rs",
            "mongodb://a/?loadBalanced=true",
            "mongodb://a/?directConnection=true",
        ] {
            let (mut state, _) = open(uri);
            assert!(!state.polls_srv(), "{uri}");
            assert!(state.apply_srv_rescan(&found, 0, |_| 0).is_empty(), "{uri}");
        }
        // Unknown until a replica set member answers, then never again.
        unknown.apply(secondary("a", &["a:27017"], doc! {}));
        assert_eq!(unknown.topology_type, TopologyType::ReplicaSetNoPrimary);
        assert!(!unknown.polls_srv());
        let (mut closed, _) = open("mongodb://a");
        closed.close();
        assert!(!closed.polls_srv());
        assert!(closed.apply_srv_rescan(&found, 0, |_| 0).is_empty());
    }

    #[test]
    fn a_write_concern_error_with_a_state_change_code_is_a_command_error() {
        use crate::error::WriteConcernError;
        let concern = |code| {
            Error::new(ErrorKind::Write(WriteFailure::WriteConcernError(
                WriteConcernError {
                    code,
                    code_name: String::new(),
                    message: "shutting down".into(),
                    details: None,
                },
            )))
        };
        let from = |error: &Error| {
            ApplicationError::from_error(
                error,
                address("a"),
                None,
                17,
                ErrorPhase::AfterHandshakeCompletes,
            )
            .map(|error| error.kind)
        };
        assert!(matches!(
            from(&concern(91)),
            Some(ApplicationErrorKind::Command { code: Some(91), .. })
        ));
        let write_error = Error::new(ErrorKind::Write(WriteFailure::WriteError(
            crate::error::WriteError {
                code: 11000,
                code_name: None,
                message: "duplicate".into(),
                details: None,
            },
        )));
        assert_eq!(from(&write_error), None);
    }

    /// A replica set of `members` servers `m0:27017`, `m1:27017`, …, as its primary
    /// `m0` reports it: the others are Unknown, not checked yet.
    fn large_replica_set(members: usize) -> (TopologyState, Vec<ServerAddress>) {
        let hosts: Vec<String> = (0..members).map(|i| format!("m{i}:27017")).collect();
        let host_names: Vec<&str> = hosts.iter().map(String::as_str).collect();
        let (mut state, _) = open("mongodb://m0:27017/?replicaSet=rs");
        state.apply(primary("m0:27017", &host_names, 1, 1, 21));
        assert_eq!(state.servers.len(), members);
        (state, host_names.into_iter().map(address).collect())
    }

    /// A failed check of `address`: what the monitor of an unreachable member reports.
    fn refused(address: &ServerAddress) -> ServerDescription {
        ServerDescription::from_error(
            address.clone(),
            Error::internal("connection refused"),
            None,
            None,
        )
    }

    #[test]
    fn a_check_updates_its_server_in_place_and_leaves_the_others_where_they_are() {
        let (mut state, members) = large_replica_set(10_000);
        let locations = |state: &TopologyState| -> Vec<*const ServerDescription> {
            state.servers.values().map(std::ptr::from_ref).collect()
        };
        let before = locations(&state);
        let update = state.apply(refused(&members[5_000]));
        assert_eq!(
            names(&update.events),
            [
                "ServerDescriptionChangedEvent",
                "TopologyDescriptionChangedEvent"
            ]
        );
        // A copy of the topology would have moved every description.
        let moved = before
            .iter()
            .zip(locations(&state))
            .filter(|(before, after)| **before != *after)
            .count();
        assert_eq!(moved, 0, "the check copied the topology");
        assert_eq!(state.topology_type, TopologyType::ReplicaSetWithPrimary);
        // The same failure again changes nothing.
        assert!(state.apply(refused(&members[5_000])).is_empty());
        // Without a listener, a change is reported without the topology event.
        state.set_describing(false);
        let update = state.apply(refused(&members[6_000]));
        assert_eq!(names(&update.events), ["ServerDescriptionChangedEvent"]);
        assert!(update.changed);
    }

    /// The time of one check that changes nothing (a failure repeated) in a replica set
    /// of `members` servers: the best of several batches, against the noise of a busy
    /// machine.
    fn check_time(members: usize) -> Duration {
        const BATCHES: usize = 5;
        const CHECKS: usize = 200;
        let (mut state, addresses) = large_replica_set(members);
        // Every member fails once (a change each), as a client nobody listens to.
        state.set_describing(false);
        for address in &addresses[1..] {
            assert!(state.apply(refused(address)).changed);
        }
        state.set_describing(true);
        // The wall clock (the monotonic one is the runtime's, `crate::rt`): a batch is
        // far longer than any adjustment of the clock could distort.
        (0..BATCHES)
            .map(|batch| {
                let started = std::time::SystemTime::now();
                for i in 0..CHECKS {
                    let address = &addresses[1 + (batch * CHECKS + i) % (members - 1)];
                    assert!(state.apply(refused(address)).is_empty());
                }
                started.elapsed().unwrap_or_default() / CHECKS as u32
            })
            .min()
            .unwrap_or_default()
    }

    #[test]
    fn the_cost_of_a_check_does_not_grow_with_the_number_of_members() {
        let small = check_time(1_000);
        let large = check_time(10_000);
        // Ten times the members: a cost proportional to them is ten times as high, a
        // cost independent of them (but for a map look-up) about the same.
        assert!(
            large < small * 4,
            "one check: {small:?} with 1,000 members, {large:?} with 10,000"
        );
    }
}
