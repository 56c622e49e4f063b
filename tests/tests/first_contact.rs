//! A cold client's first selection with several seeds (issue 44,
//! `driver/src/cluster/first_contact.rs`), against the scripted replica set
//! ([`anymongo_tests::replica_set`]), seeded with its three members, in background and
//! in single-threaded mode:
//!
//! - the secondaries answer first (the connection to the primary is held back until
//!   the client knows both secondaries) and the operation wants the primary: it runs
//!   on the primary's first connection, with no check of any member on its way, and
//!   the secondaries' first connections go to their pools, which serve a later
//!   secondary read without a new connection;
//! - one seed is down: the operation runs on the primary all the same, and in
//!   single-threaded mode the dead member is marked Unknown with its error, as the
//!   first scan would have, so that the next operation scans nothing.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::event::cmap::CmapEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::options::{ReadPreference, SelectionCriteria};
use anymongo::rt::{boxed, BoxFuture, ConnectTarget, Runtime, Stream, Transport};
use anymongo::sdam::ServerType;
use anymongo::{Client, ClientOptions};
use anymongo_tests::harness::within;
use anymongo_tests::replica_set::MockReplicaSet;
use tokio::sync::watch;

/// The bound of every test, and of the wait of the held-back connections.
const BOUND: Duration = Duration::from_secs(20);

/// A transport whose connections to `held` wait until `release` holds on the number
/// of secondaries the client knows (given by its SDAM events).
struct HoldBack {
    inner: Arc<dyn Transport>,
    held: String,
    secondaries: watch::Receiver<usize>,
    release: usize,
}

impl Transport for HoldBack {
    fn connect<'a>(
        &'a self,
        target: &'a ConnectTarget,
    ) -> BoxFuture<'a, io::Result<Box<dyn Stream>>> {
        boxed(async move {
            if target.host == self.held {
                let mut secondaries = self.secondaries.clone();
                let released = secondaries.wait_for(|known| *known >= self.release);
                let released = matches!(tokio::time::timeout(BOUND, released).await, Ok(Ok(_)));
                if !released {
                    return Err(io::Error::other("the secondaries never became known"));
                }
            }
            self.inner.connect(target).await
        })
    }
}

/// What a client of the set publishes.
#[derive(Default)]
struct Recorded {
    cmap: Mutex<Vec<CmapEvent>>,
}

impl Recorded {
    /// How many events of the pool of `address` `matches` accepts.
    fn count(&self, address: &str, matches: impl Fn(&CmapEvent) -> bool) -> usize {
        let events = self.cmap.lock().unwrap_or_else(PoisonError::into_inner);
        events
            .iter()
            .filter(|event| pool_address(event).is_some_and(|a| a == address) && matches(event))
            .count()
    }
}

/// The address of the pool a connection event is about.
fn pool_address(event: &CmapEvent) -> Option<String> {
    match event {
        CmapEvent::ConnectionCreated(event) => Some(event.address.to_string()),
        CmapEvent::ConnectionReady(event) => Some(event.address.to_string()),
        CmapEvent::ConnectionClosed(event) => Some(event.address.to_string()),
        _ => None,
    }
}

/// A client of `set` seeded with every member, whose connections to member 0 (the
/// primary) wait until it knows `release` secondaries; its recorded events.
fn client(set: &MockReplicaSet, single_threaded: bool, release: usize) -> (Client, Arc<Recorded>) {
    let uri = set.uri_all("serverSelectionTimeoutMS=10000");
    let mut options = ClientOptions::parse_uri(&uri).unwrap();
    let recorded = Arc::new(Recorded::default());
    let cmap = recorded.clone();
    options.cmap_event_handler = Some(EventHandler::callback(move |event: CmapEvent| {
        cmap.cmap
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }));
    let (known, secondaries) = watch::channel(0);
    options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
        if let SdamEvent::TopologyDescriptionChanged(event) = event {
            let count = event
                .new_description
                .servers
                .values()
                .filter(|server| server.server_type == ServerType::RsSecondary)
                .count();
            known.send_replace(count);
        }
    }));
    let mut runtime: Runtime = anymongo_native::runtime();
    if single_threaded {
        runtime.spawner = None;
    }
    let held = set.address(0).rsplit_once(':').unwrap().0.to_owned();
    runtime.transport = Arc::new(HoldBack {
        inner: runtime.transport.clone(),
        held,
        secondaries,
        release,
    });
    (Client::with_runtime(options, runtime).unwrap(), recorded)
}

fn mode(single_threaded: bool) -> &'static str {
    match single_threaded {
        true => "single-threaded",
        false => "background",
    }
}

#[tokio::test]
async fn the_primary_carries_the_operation_when_the_secondaries_answer_first() {
    within(BOUND, async {
        for single_threaded in [true, false] {
            let mode = mode(single_threaded);
            let set = MockReplicaSet::start().await;
            let (client, recorded) = client(&set, single_threaded, 2);
            let items = client.database("first").collection::<Document>("items");
            items.insert_one(doc! { "_id": 1 }).await.unwrap();
            assert_eq!(
                set.insert_count(0),
                1,
                "{mode}: the insert went to the primary"
            );

            let primary = set.address(0);
            let created = |address: &str| {
                recorded.count(address, |event| {
                    matches!(event, CmapEvent::ConnectionCreated(_))
                })
            };
            assert_eq!(
                created(primary),
                1,
                "{mode}: the primary's pool took in the first connection, and opened none"
            );
            if !single_threaded {
                // The monitors run alongside: only what the pools did is asserted.
                continue;
            }
            for i in 0..3 {
                assert_eq!(
                    set.hello_counts(i).requests(),
                    1,
                    "{mode}: member {i} got its first connection's hello only (no scan)"
                );
                assert_eq!(
                    set.open_connections(i),
                    1,
                    "{mode}: member {i}'s first connection is open"
                );
            }
            for i in 1..3 {
                let address = set.address(i);
                assert_eq!(created(address), 1, "{mode}: member {i}'s pool took it in");
                let ready = recorded.count(address, |event| {
                    matches!(event, CmapEvent::ConnectionReady(_))
                });
                assert_eq!(ready, 1, "{mode}: member {i}'s connection is ready");
            }
            // A secondary read is served by a connection a pool took in.
            let secondary =
                SelectionCriteria::ReadPreference(ReadPreference::Secondary { options: None });
            items
                .find_one(doc! { "_id": 1 })
                .selection_criteria(secondary)
                .await
                .unwrap();
            let hellos: Vec<usize> = (0..3).map(|i| set.hello_counts(i).requests()).collect();
            assert_eq!(hellos, [1, 1, 1], "{mode}: no new connection, no scan");
            assert_eq!(created(set.address(1)) + created(set.address(2)), 2);
            drop(client);
        }
    })
    .await;
}

#[tokio::test]
async fn a_dead_seed_does_not_fail_the_first_operation() {
    within(BOUND, async {
        for single_threaded in [true, false] {
            let mode = mode(single_threaded);
            let set = MockReplicaSet::start().await;
            set.down(2).await;
            // The primary is not held back: one secondary only will be known.
            let (client, _recorded) = client(&set, single_threaded, 0);
            let items = client.database("first").collection::<Document>("items");
            items.insert_one(doc! { "_id": 1 }).await.unwrap();
            assert_eq!(
                set.insert_count(0),
                1,
                "{mode}: the insert went to the primary"
            );
            if !single_threaded {
                continue;
            }
            let dead = client
                .topology_description()
                .servers
                .into_iter()
                .find(|(address, _)| address.to_string() == set.address(2))
                .map(|(_, server)| server)
                .unwrap();
            assert_eq!(dead.server_type, ServerType::Unknown, "{mode}");
            assert!(
                dead.error.is_some(),
                "{mode}: the dead seed's failure is in the description, as a scan's"
            );
            // The first connections stood for the first scan: the next operation
            // checks nobody.
            items.insert_one(doc! { "_id": 2 }).await.unwrap();
            let hellos: Vec<usize> = (0..2).map(|i| set.hello_counts(i).requests()).collect();
            assert_eq!(hellos, [1, 1], "{mode}: no scan after the first operation");
            drop(client);
        }
    })
    .await;
}
