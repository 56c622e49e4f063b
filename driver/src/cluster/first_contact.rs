//! The cold client's first connection (issue 24: a cold request in the fewest round
//! trips).
//!
//! Left to itself, a client reaches a server it does not know yet in two steps: a
//! check opens a monitoring connection (TCP, TLS, hello: three round trips) and makes
//! the server known; only then does selection pick it and the operation open the
//! connection it runs on (TCP, TLS, hello with speculative authentication, the rest of
//! the conversation: four more) — eight round trips with the command itself.
//!
//! So the first selection of a client whose one server is not known yet opens the
//! operation's connection at once, out of the server's pool before it is ready
//! ([`ConnectionPool::check_out_before_ready`](crate::cmap::ConnectionPool::check_out_before_ready)):
//! alongside the monitor's first check in background mode, instead of the first scan
//! in single-threaded mode. The hello of its handshake updates the topology
//! (server-monitoring.md, "Clients update the topology from each handshake"), which
//! makes the server known — and its pool ready — while the connection authenticates;
//! selection then picks the server as usual and the operation gets this connection:
//! five round trips in all. A failure after the hello (authentication) is the
//! check-out's, as it would have been; one before it leaves the client where it was
//! without the shortcut: selection waits for the monitor, or scans.

use std::sync::Arc;

use super::{SelectedServer, Server, Shared};
use crate::error::Result;
use crate::handshake::HelloReply;
use crate::rt::Instant;
use crate::sdam::ServerType;
use crate::selection::SelectionCriteria;
use crate::sync::lock;
use crate::uri::ServerAddress;

impl Shared {
    /// The server the first selection connects to itself, if this is the client's
    /// first selection and its topology is one server, not known yet, with an empty
    /// pool. A topology of several servers leaves them to the checks: which one the
    /// operation wants is not known before they answer.
    pub(super) fn first_contact(&self) -> Option<Arc<Server>> {
        if !self
            .first_contact
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return None;
        }
        let state = self.state();
        let mut servers = state.description.servers.values();
        let (Some(only), None) = (servers.next(), servers.next()) else {
            return None;
        };
        if only.server_type != ServerType::Unknown || only.error.is_some() {
            return None;
        }
        state
            .servers
            .get(&only.address)
            .filter(|server| server.pool.total_connection_count() == 0)
            .cloned()
    }

    /// Opens the first connection to `server` and selects with the description its
    /// hello made: `Some` selected server (holding the connection, or the check-out's
    /// error after the hello), or `None` when the connection failed before its hello
    /// or the server does not suit `criteria` — selection goes on as usual.
    pub(super) async fn connect_first(
        self: &Arc<Self>,
        server: &Arc<Server>,
        criteria: &SelectionCriteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
    ) -> Result<Option<SelectedServer>> {
        let connector = server.pool.establisher();
        connector.report_next_hello();
        let remaining = deadline.saturating_duration_since(self.runtime.clock.now());
        match server.pool.check_out_before_ready(Some(remaining)).await {
            Ok(connection) => {
                let selected = self.try_select(criteria, deprioritized, deadline);
                match selected {
                    Ok(Some(selected)) if Arc::ptr_eq(&selected.server, server) => {
                        *lock(&selected.checked_out) = Some(Ok(connection));
                        Ok(Some(selected))
                    }
                    other => {
                        server.check_in(connection);
                        other
                    }
                }
            }
            Err(error) if connector.hello_reported() => {
                let (server_type, topology_type) = {
                    let state = self.state();
                    let server_type = state
                        .description
                        .servers
                        .get(&server.address)
                        .map_or(ServerType::Unknown, |description| description.server_type);
                    (server_type, state.description.topology_type)
                };
                let selected = SelectedServer::new(
                    server.clone(),
                    server_type,
                    topology_type,
                    deadline,
                    Default::default(),
                );
                *lock(&selected.checked_out) = Some(Err(error));
                Ok(Some(selected))
            }
            Err(_) => Ok(None),
        }
    }

    /// The handshake of the first connection to `address` got `hello`, after a round
    /// trip of `round_trip`: the server's description is updated from it as from a
    /// check (without heartbeat events: it is no check). In single-threaded mode it
    /// stands for the first scan when the server is the only one.
    pub(super) fn handshake_hello(
        self: &Arc<Self>,
        address: &ServerAddress,
        hello: &HelloReply,
        round_trip: std::time::Duration,
    ) {
        let Some(server) = self.state().servers.get(address).cloned() else {
            return;
        };
        server.add_rtt_sample(round_trip);
        self.described(&server, hello.raw.clone());
        if self.scans {
            let mut state = self.state();
            if state.description.servers.len() == 1 {
                state.last_scan = Some(self.runtime.clock.now());
                state.stale = false;
            }
        }
    }
}
