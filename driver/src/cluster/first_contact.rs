//! The cold client's first connections (issue 24: a cold request in the fewest round
//! trips; issue 44: with every seed at once).
//!
//! Left to itself, a client reaches a server it does not know yet in two steps: a
//! check opens a monitoring connection (TCP, TLS, hello: three round trips) and makes
//! the server known; only then does selection pick it and the operation open the
//! connection it runs on (TCP, TLS, hello with speculative authentication, the rest of
//! the conversation: four more) — eight round trips with the command itself. With
//! several seeds, a single-threaded client checks them one after the other before
//! that.
//!
//! So the first selection of a client whose seeds are all unknown opens an
//! operation's connection to every seed at once, outside the pools (whose servers are
//! not known yet): alongside the monitors' first checks in background mode, instead of
//! the first scan in single-threaded mode (the connections are futures driven
//! together by the selecting task, no spawner needed). The hello of each handshake
//! updates the topology (server-monitoring.md, "Clients update the topology from each
//! handshake") while the connection authenticates; SDAM decides what the reply means
//! (a secondary, an arbiter, a member of another set, hosts to add or remove) as it
//! would for a check. As the connections finish, selection looks at the description
//! their hellos made, among the servers whose connection is in hand:
//!
//! - a suitable server whose connection is established is picked, and the operation's
//!   check-out hands that connection to its pool, which takes it in with the events of
//!   a check-out that established it
//!   ([`ConnectionPool::check_out_established`](crate::cmap::ConnectionPool::check_out_established)):
//!   five round trips in all;
//! - while a suitable server's connection is still on its way, selection waits for it
//!   rather than fail on the error of another's (one seed's failure does not fail the
//!   operation when another suits it);
//! - a suitable server whose connection failed after its hello (authentication) is
//!   picked with that error, which reaches the pool as the check-out's establishment
//!   error, as it would have from a check-out of its own;
//! - if none suits once every connection has finished, selection goes on as usual
//!   (waits for the monitors, or scans).
//!
//! The connections to the seeds not picked go to their servers' pools as they finish,
//! as connections the pools opened for themselves
//! ([`ConnectionPool::take_in`](crate::cmap::ConnectionPool::take_in)), or are closed
//! if their server is not known (or no longer in the topology) by then, or the client
//! closed. An error after the hello goes through SDAM error handling as a failed
//! establishment would; one before it is left to the monitor's check in background
//! mode, and in single-threaded mode marks the server Unknown as the scan's failed
//! check would have. In background mode the selection returns as soon as it picked a
//! server, and the unfinished connections carry on in tasks of their own; in
//! single-threaded mode nothing runs between operations, so the selection drives them
//! all to their end (they run concurrently: this costs the slowest seed's handshake
//! over the picked one's, not a scan) and, when every server of the topology answered
//! or failed, that stands for the first scan.

use std::collections::BTreeSet;
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::future::{select, Either};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{SelectedServer, Server, Shared};
use crate::connection::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::handshake::HelloReply;
use crate::rt::{self, BoxFuture, Instant};
use crate::sdam::ServerType;
use crate::selection::{self, Criteria};
use crate::signal::lock;
use crate::uri::ServerAddress;

/// One seed's first connection, finished.
struct Contact {
    server: Arc<Server>,
    /// The pool's generation when the connection started: a clear since then makes
    /// it stale.
    generation: u32,
    /// The connection, or the error that ended it.
    outcome: Result<Connection>,
    /// Whether the server answered the handshake's hello (which updated the
    /// topology) before the outcome: an error after it is not the network's.
    answered: bool,
}

/// Files a finished `contact` among the `finished`, its server no longer `waiting`.
fn finish(contact: Contact, finished: &mut Vec<Contact>, waiting: &mut BTreeSet<ServerAddress>) {
    waiting.remove(&contact.server.address);
    finished.push(contact);
}

/// Opens the first connection to `server`.
async fn contact(server: Arc<Server>) -> Contact {
    let generation = server.pool.generation();
    let connector = server.pool.establisher();
    let outcome = connector.connect_first().await;
    let answered = connector.hello_reported();
    Contact {
        server,
        generation,
        outcome,
        answered,
    }
}

impl Shared {
    /// The servers the first selection connects to itself: every server, if this is
    /// the client's first selection and its servers (the seeds) are all unknown, with
    /// no error yet and empty pools; none otherwise.
    pub(super) fn first_contact(&self) -> Vec<Arc<Server>> {
        if !self.first_contact.swap(false, Ordering::SeqCst) {
            return Vec::new();
        }
        let state = self.state();
        let unknown = state
            .description
            .servers
            .values()
            .all(|server| server.server_type == ServerType::Unknown && server.error.is_none());
        let idle = state
            .servers
            .values()
            .all(|server| server.pool.total_connection_count() == 0);
        match unknown && idle {
            true => state.servers.values().cloned().collect(),
            false => Vec::new(),
        }
    }

    /// Opens the first connection to each of `servers` at once and selects as they
    /// finish (see the module's documentation): `Some` selected server, holding its
    /// connection (or the error that ended it after its hello) when it is one of
    /// them; `None` when none suited `criteria` once all finished, the client closed
    /// or the selection's time ran out — selection goes on as usual.
    pub(super) async fn connect_first(
        self: &Arc<Self>,
        servers: Vec<Arc<Server>>,
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
    ) -> Result<Option<SelectedServer>> {
        let seeds: BTreeSet<ServerAddress> = servers
            .iter()
            .map(|server| server.address.clone())
            .collect();
        let mut waiting = seeds.clone();
        let mut contacts: FuturesUnordered<BoxFuture<'static, Contact>> = servers
            .into_iter()
            .map(|server| rt::boxed(contact(server)))
            .collect();
        let mut finished = Vec::new();
        let mut closed = pin!(self.closed());
        let mut selected = Ok(None);
        // Until a server is picked, every connection has finished, the client closed
        // or time ran out.
        let mut interrupted = false;
        while !waiting.is_empty() {
            let next = self.next_contact(&mut contacts, closed.as_mut(), deadline);
            let Some(contact) = next.await else {
                interrupted = true;
                break;
            };
            finish(contact, &mut finished, &mut waiting);
            selected = self.pick(criteria, deprioritized, deadline, &mut finished, &waiting);
            if !matches!(selected, Ok(None)) {
                break;
            }
        }
        if !interrupted && !waiting.is_empty() {
            self.finish_contacts(contacts, &mut finished, &mut waiting, closed, deadline)
                .await;
        }
        if waiting.is_empty() {
            self.first_scan_done(&seeds);
        }
        for contact in finished {
            self.settle(contact);
        }
        selected
    }

    /// The server to select among the suitable ones, given the connections in hand
    /// (`finished`, from which the picked one's is taken) and those still on their
    /// way (to `waiting`): `None` to wait for more.
    fn pick(
        &self,
        criteria: &Criteria<'_>,
        deprioritized: &[ServerAddress],
        deadline: Instant,
        finished: &mut Vec<Contact>,
        waiting: &BTreeSet<ServerAddress>,
    ) -> Result<Option<SelectedServer>> {
        let state = self.state();
        if state.closed {
            return Err(Error::new(ErrorKind::Shutdown));
        }
        let candidates = selection::candidates(
            &state.description,
            criteria,
            self.options.local_threshold_or_default(),
            deprioritized,
        )?;
        // The first connection in hand to a suitable server (the first to finish: the
        // nearest, as far as this cold client knows), established or else failed.
        let in_hand = |established: bool| {
            finished.iter().enumerate().find_map(|(index, contact)| {
                let mine = state
                    .servers
                    .get(&contact.server.address)
                    .is_some_and(|server| Arc::ptr_eq(server, &contact.server));
                let description = candidates
                    .iter()
                    .find(|candidate| candidate.address == contact.server.address)?;
                (mine && contact.outcome.is_ok() == established).then_some((index, *description))
            })
        };
        let on_its_way = candidates
            .iter()
            .any(|candidate| waiting.contains(&candidate.address));
        let (index, description) = match (in_hand(true), on_its_way) {
            (Some(chosen), _) => chosen,
            (None, true) => return Ok(None),
            (None, false) => match in_hand(false) {
                Some(chosen) => chosen,
                // Suitable servers a monitor found, with no first connection of
                // their own (hosts a seed named): their pools serve.
                None => {
                    drop(state);
                    return self.try_select(criteria, deprioritized, deadline);
                }
            },
        };
        let selected = SelectedServer::new(
            finished[index].server.clone(),
            description.server_type,
            state.description.topology_type,
            deadline,
            description.min_round_trip_time.unwrap_or_default(),
        );
        drop(state);
        *lock(&selected.established) = Some(finished.swap_remove(index).outcome);
        Ok(Some(selected))
    }

    /// The first connections still on their way once a server was picked: in
    /// background mode each finishes in a task of its own and is settled then; in
    /// single-threaded mode (nothing runs between operations) they are driven to
    /// their end here, within the selection's time, into `finished`.
    async fn finish_contacts(
        self: &Arc<Self>,
        mut contacts: FuturesUnordered<BoxFuture<'static, Contact>>,
        finished: &mut Vec<Contact>,
        waiting: &mut BTreeSet<ServerAddress>,
        mut closed: Pin<&mut impl std::future::Future<Output = ()>>,
        deadline: Instant,
    ) {
        if let (false, Some(spawner)) = (self.single_threaded, &self.runtime.spawner) {
            for contact in contacts {
                let shared = self.clone();
                spawner.spawn(rt::boxed(async move {
                    let closed = pin!(shared.closed());
                    if let Either::Left((contact, _)) = select(contact, closed).await {
                        shared.settle(contact);
                    }
                }));
            }
            return;
        }
        while let Some(contact) = self
            .next_contact(&mut contacts, closed.as_mut(), deadline)
            .await
        {
            finish(contact, finished, waiting);
        }
    }

    /// The next of `contacts` to finish: `None` when none is left, the client closed
    /// or `deadline` passed.
    async fn next_contact(
        &self,
        contacts: &mut FuturesUnordered<BoxFuture<'static, Contact>>,
        closed: Pin<&mut impl std::future::Future<Output = ()>>,
        deadline: Instant,
    ) -> Option<Contact> {
        let clock = &*self.runtime.clock;
        let remaining = deadline.saturating_duration_since(clock.now());
        match rt::timeout(clock, remaining, select(contacts.next(), closed)).await {
            Ok(Either::Left((contact, _))) => contact,
            Ok(Either::Right(_)) | Err(rt::Elapsed) => None,
        }
    }

    /// Single-threaded mode: every first connection, to the servers `contacted`,
    /// finished. When those are all the servers of the topology, the first
    /// connections stand for the first scan (server-monitoring.md, "Single-threaded
    /// monitoring"); not when the hellos named other servers: they are for a scan to
    /// check.
    fn first_scan_done(&self, contacted: &BTreeSet<ServerAddress>) {
        if !self.scans {
            return;
        }
        let mut state = self.state();
        if state
            .description
            .servers
            .keys()
            .all(|address| contacted.contains(address))
        {
            state.last_scan = Some(self.runtime.clock.now());
            state.stale = false;
        }
    }

    /// A first connection the selection did not pick: to its server's pool, or
    /// through SDAM error handling.
    fn settle(self: &Arc<Self>, contact: Contact) {
        match contact.outcome {
            Ok(connection) => contact.server.pool.take_in(connection, contact.generation),
            // The server answered: a failed establishment (CMAP spec, "Establishing a
            // Connection": an application error before the handshake completes).
            Err(error) if contact.answered => {
                self.establishment_failed(&contact.server.address, &error, contact.generation)
            }
            // What the first scan's check would have found.
            Err(error) if self.scans => {
                contact
                    .server
                    .check_failed_at(self.runtime.clock.now(), &error);
                self.unreachable(&contact.server, &error);
            }
            // The monitor's check finds it too.
            Err(_) => {}
        }
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

    /// The handshake of a first connection to `address` got `hello`: the server's
    /// description is updated from it as from a check (without heartbeat events: it is
    /// no check; without a round-trip-time sample: the server did more than answer a
    /// hello, the first step of authentication — the monitor's checks measure it).
    pub(super) fn handshake_hello(self: &Arc<Self>, address: &ServerAddress, hello: &HelloReply) {
        let Some(server) = self.state().servers.get(address).cloned() else {
            return;
        };
        self.described(&server, hello.raw.clone());
    }
}
