//! Polling SRV Records for mongos Discovery (polling-srv-records-for-mongos-discovery
//! spec): a client made from a `mongodb+srv` seed list looks the records up again
//! while the topology is Sharded or Unknown — a background task in background mode
//! ([`run_srv_poller`]); in single-threaded mode, a rescan before server selection once
//! the interval has passed ([`Shared::rescan_srv_if_due`]). Either way a rescan's hosts
//! go through [`TopologyState::apply_srv_rescan`](crate::sdam::TopologyState::apply_srv_rescan)
//! and the same [`Shared::act_on`] as servers discovered from a hello reply.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::{Cluster, Shared};
use crate::rt::{self, Instant, Runtime};
use crate::selection;
use crate::signal::lock;
use crate::srv::{self, SeedList, SrvHosts};

/// SRV polling of one topology (Polling SRV Records for mongos Discovery spec).
pub(super) struct SrvPolling {
    /// The SRV name, `srvServiceName`, `srvMaxHosts` and the interval's floor.
    seeds: SeedList,
    /// The bound of each look-up, as for the initial one ([`srv::lookup_timeout`]).
    lookup_timeout: Duration,
    schedule: Mutex<SrvSchedule>,
}

struct SrvSchedule {
    /// When the next rescan is due: rescanSRVIntervalMS after the end of the last one
    /// (or of the initial seedlist discovery), as the spec recommends.
    due: Instant,
    /// A rescan is under way (single-threaded mode: concurrent selections run one).
    running: bool,
}

/// What SRV polling does next.
enum SrvNext {
    /// Nothing, ever again: the topology is no longer Sharded or Unknown, or closed.
    Stop,
    /// Wait this long.
    Wait(Duration),
    /// Rescan now (the schedule marks it as running).
    Rescan,
}

impl SrvPolling {
    /// Looks up the SRV records. `None` when the look-up failed or found no verified
    /// host: the spec's "MUST NOT change the topology, MUST NOT raise an error".
    async fn lookup(&self, runtime: &Runtime) -> Option<SrvHosts> {
        srv::lookup_hosts(
            self.seeds.srv_options(),
            &*runtime.resolver,
            &*runtime.clock,
            self.lookup_timeout,
        )
        .await
        .ok()
        .filter(|found| !found.hosts.is_empty())
    }
}

impl Cluster {
    /// Starts polling the SRV records of `seeds`, the seed list this topology was
    /// opened with (Polling SRV Records for mongos Discovery spec, "Implementation"):
    /// unless the topology is already neither Sharded nor Unknown (`loadBalanced=true`,
    /// a `replicaSet`), which it then stays. The first rescan is due the records'
    /// interval after now, the end of the initial discovery. In background mode a
    /// task polls ([`run_srv_poller`]); in single-threaded mode selection rescans.
    pub fn poll_srv(&self, seeds: SeedList) {
        let shared = &self.shared;
        if !shared.state().description.polls_srv() {
            return;
        }
        let polling = Arc::new(SrvPolling {
            lookup_timeout: srv::lookup_timeout(seeds.srv_options()),
            schedule: Mutex::new(SrvSchedule {
                due: shared.runtime.clock.now() + seeds.rescan_interval(seeds.min_ttl()),
                running: false,
            }),
            seeds,
        });
        if shared.srv.set(polling.clone()).is_err() || shared.single_threaded {
            return;
        }
        if let Some(spawner) = &shared.runtime.spawner {
            spawner.spawn(rt::boxed(run_srv_poller(
                Arc::downgrade(shared),
                polling,
                shared.runtime.clone(),
            )));
        }
    }
}

/// The SRV poller of background mode ("Multi-Threaded Drivers": a separate task, so
/// that look-ups never hold up operations). Holds the topology weakly, like the
/// monitors: it ends when the topology closes or is dropped (which wakes its waits),
/// or when the topology is no longer Sharded or Unknown.
async fn run_srv_poller(topology: Weak<Shared>, polling: Arc<SrvPolling>, runtime: Runtime) {
    loop {
        let next = Shared::upgrade(&topology, |shared| {
            // Listen first: a change between the decision and the wait is not lost.
            let changed = shared.changed.listen();
            (shared.srv_next(&polling), changed)
        });
        match next {
            None | Some((SrvNext::Stop, _)) => return,
            // Woken early by any change of the description, to stop at once when the
            // topology type rules polling out.
            Some((SrvNext::Wait(wait), changed)) => {
                let _ = rt::timeout(&*runtime.clock, wait, changed).await;
            }
            Some((SrvNext::Rescan, _)) => {
                let found = polling.lookup(&runtime).await;
                if Shared::upgrade(&topology, |shared| shared.srv_rescanned(&polling, found))
                    .is_none()
                {
                    return;
                }
            }
        }
    }
}

impl Shared {
    /// What SRV polling does next; claims the rescan when one is due.
    fn srv_next(&self, polling: &SrvPolling) -> SrvNext {
        if !self.state().description.polls_srv() {
            return SrvNext::Stop;
        }
        let mut schedule = lock(&polling.schedule);
        let wait = schedule
            .due
            .saturating_duration_since(self.runtime.clock.now());
        match wait.is_zero() && !schedule.running {
            true => {
                schedule.running = true;
                SrvNext::Rescan
            }
            // A rescan under way ends by its look-up's bound; check again then.
            false if schedule.running => SrvNext::Wait(polling.lookup_timeout),
            false => SrvNext::Wait(wait),
        }
    }

    /// Applies a rescan's outcome (`None`: nothing verified found) and schedules the
    /// next one: after the records' interval, or heartbeatFrequencyMS while no
    /// verified record was obtained (spec: "MUST temporarily set rescanSRVIntervalMS to
    /// heartbeatFrequencyMS"). Returns whether the servers changed.
    fn srv_rescanned(self: &Arc<Self>, polling: &SrvPolling, found: Option<SrvHosts>) -> bool {
        let interval = match &found {
            Some(found) => polling.seeds.rescan_interval(found.min_ttl),
            None => self.heartbeat_frequency,
        };
        {
            let mut schedule = lock(&polling.schedule);
            schedule.due = self.runtime.clock.now() + interval;
            schedule.running = false;
        }
        let Some(found) = found else {
            return false;
        };
        if let Some(book) = &self.connection_settings.addresses {
            for (host, addresses) in &found.glue {
                book.learn(host, addresses);
            }
        }
        let mut state = self.state_for_update();
        let update = state.description.apply_srv_rescan(
            &found.hosts,
            polling.seeds.srv_options().srv_max_hosts_or_default(),
            selection::random_index,
        );
        if update.is_empty() {
            return false;
        }
        self.act_on(state, update);
        true
    }

    /// Single-threaded mode: the SRV rescan before selection, if one is due ("The
    /// rescan MUST happen before scanning all servers ... but only if
    /// rescanSRVIntervalMS has passed"). New servers make a scan due.
    pub(super) async fn rescan_srv_if_due(self: &Arc<Self>) {
        let Some(polling) = self.srv.get() else {
            return;
        };
        if !matches!(self.srv_next(polling), SrvNext::Rescan) {
            return;
        }
        let found = polling.lookup(&self.runtime).await;
        if self.srv_rescanned(polling, found) {
            self.state().stale = true;
        }
    }
}
