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
//! operation's connection at once, outside the pool (whose server is not known yet):
//! alongside the monitor's first check in background mode, instead of the first scan
//! in single-threaded mode. The hello of its handshake updates the topology
//! (server-monitoring.md, "Clients update the topology from each handshake"), which
//! makes the server known — and its pool ready — while the connection authenticates;
//! selection then picks the server as usual, and the operation's check-out hands the
//! connection to the pool, which takes it in with the events of a check-out that
//! established it
//! ([`ConnectionPool::check_out_established`](crate::cmap::ConnectionPool::check_out_established)):
//! five round trips in all. A failure after the hello (authentication) reaches the
//! pool the same way, as the check-out's establishment error; one before it leaves the
//! client where it would be without the shortcut: selection waits for the monitor, or
//! scans.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};

use super::{SelectedServer, Server, Shared};
use crate::error::Result;
use crate::handshake::HelloReply;
use crate::rt::{self, Instant};
use crate::sdam::ServerType;
use crate::selection::Criteria;
use crate::signal::lock;
use crate::uri::ServerAddress;

impl Shared {
    /// The server the first selection connects to itself, if this is the client's
    /// first selection and its topology is one server, not known yet, with an empty
    /// pool. A topology of several servers leaves them to the checks: which one the
    /// operation wants is not known before they answer.
    pub(super) fn first_contact(&self) -> Option<Arc<Server>> {
        if !self.first_contact.swap(false, Ordering::SeqCst) {
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
    /// hello made: `Some` selected server (holding the connection, or its error after
    /// the hello), or `None` when the connection failed before its hello, the client
    /// closed meanwhile, or the server does not suit `criteria` — selection goes on as
    /// usual.
    pub(super) async fn connect_first(
        self: &Arc<Self>,
        server: &Arc<Server>,
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
    ) -> Result<Option<SelectedServer>> {
        let connector = server.pool.establisher();
        let remaining = deadline.saturating_duration_since(self.runtime.clock.now());
        let connect = pin!(connector.connect_first());
        let closed = pin!(self.closed());
        let connected =
            match rt::timeout(&*self.runtime.clock, remaining, select(connect, closed)).await {
                Ok(Either::Left((connected, _))) => connected,
                // The client closed, or selection's time ran out: nothing to hand over.
                Ok(Either::Right(_)) | Err(rt::Elapsed) => return Ok(None),
            };
        let established = match connected {
            Ok(connection) => Ok(connection),
            Err(error) if connector.hello_reported() => Err(error),
            Err(_) => return Ok(None),
        };
        let selected = match &established {
            Ok(_) => self.try_select(criteria, deprioritized, deadline)?,
            // The server answered, and the error is the operation's, as it would have
            // been from its check-out: the pool reports it to SDAM.
            Err(_) => Some(self.selected_without_selection(server, deadline)),
        };
        match selected {
            Some(selected) if Arc::ptr_eq(&selected.server, server) => {
                *lock(&selected.established) = Some(established);
                Ok(Some(selected))
            }
            // Another server (the hello named the members of a replica set): the
            // connection, never the pool's, closes.
            other => Ok(other),
        }
    }

    /// `server`, as selection would give it, without asking whether it suits.
    fn selected_without_selection(
        &self,
        server: &Arc<Server>,
        deadline: Instant,
    ) -> SelectedServer {
        let state = self.state();
        let server_type = state
            .description
            .servers
            .get(&server.address)
            .map_or(ServerType::Unknown, |description| description.server_type);
        SelectedServer::new(
            server.clone(),
            server_type,
            state.description.topology_type,
            deadline,
            Duration::ZERO,
        )
    }

    /// Resolves once the topology is closed.
    async fn closed(&self) {
        loop {
            let changed = self.changed.listen();
            if self.state().closed {
                return;
            }
            changed.await;
        }
    }

    /// The handshake of the first connection to `address` got `hello`: the server's
    /// description is updated from it as from a check (without heartbeat events: it is
    /// no check; without a round-trip-time sample: the server did more than answer a
    /// hello, the first step of authentication — the monitor's checks measure it). In
    /// single-threaded mode it stands for the first scan when the server is the only
    /// one.
    pub(super) fn handshake_hello(self: &Arc<Self>, address: &ServerAddress, hello: &HelloReply) {
        let Some(server) = self.state().servers.get(address).cloned() else {
            return;
        };
        self.described(&server, hello.raw.clone());
        if self.scans {
            let mut state = self.state();
            // Unless the hello changed the servers (a replica set member naming the
            // others, or itself by another address): they are for a scan to check.
            if state.description.servers.len() == 1
                && state.description.servers.contains_key(address)
            {
                state.last_scan = Some(self.runtime.clock.now());
                state.stale = false;
            }
        }
    }
}
