//! Discovery and monitoring of a scripted three-member replica set on 127.0.0.1,
//! 127.0.0.2 and 127.0.0.3 (`anymongo_tests::replica_set`), in both monitoring modes:
//! discovery from one seed, an election, hidden, arbiter and removed members, and
//! every member down.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::sdam::SdamEvent;
use anymongo::event::sdam::ServerClosedEvent;
use anymongo::event::EventHandler;
use anymongo::sdam::{ServerType, TopologyDescription, TopologyType};
use anymongo::{Client, ClientOptions, ErrorKind, ServerAddress};
use anymongo_tests::replica_set::{MemberRole, MockReplicaSet};
use tokio::sync::mpsc;

/// Every wait of these tests ends after this long at most.
const WAIT: Duration = Duration::from_secs(10);

/// heartbeatFrequencyMS of the background-mode clients. Streaming monitors see a
/// change as soon as the member announces it, so the waits below (at most 5 s) end
/// well within one heartbeat.
const BACKGROUND_HEARTBEAT_MS: u64 = 10_000;

/// heartbeatFrequencyMS of the single-threaded clients: they rescan before an
/// operation once the description is this old (the smallest value allowed).
const SINGLE_THREADED_HEARTBEAT: Duration = Duration::from_millis(500);

struct Observed {
    client: Client,
    events: mpsc::UnboundedReceiver<SdamEvent>,
    /// The events received so far.
    seen: Vec<SdamEvent>,
    monitoring: MonitoringThreads,
}

impl Observed {
    fn new(set: &MockReplicaSet, monitoring: MonitoringThreads, extra: &str) -> Observed {
        let heartbeat = match monitoring {
            MonitoringThreads::SingleThreaded => SINGLE_THREADED_HEARTBEAT.as_millis() as u64,
            _ => BACKGROUND_HEARTBEAT_MS,
        };
        let uri = set.uri(&format!("heartbeatFrequencyMS={heartbeat}{extra}"));
        let (sender, events) = mpsc::unbounded_channel();
        let config = ClientConfig {
            monitoring,
            ..ClientConfig::default()
        };
        let mut options = ClientOptions::parse_uri(&uri).unwrap();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            let _ = sender.send(event);
        }));
        let client = Client::with_config(options, config).unwrap();
        Observed {
            client,
            events,
            seen: Vec::new(),
            monitoring,
        }
    }

    /// Waits until the topology satisfies `wanted`. Background monitors change it on
    /// their own (the wait follows the events); a single-threaded client changes it
    /// only in operations, so there it must already hold after one operation that
    /// follows a heartbeat interval.
    async fn topology_becomes(
        &mut self,
        what: &str,
        wanted: impl Fn(&TopologyDescription) -> bool,
    ) {
        if self.monitoring == MonitoringThreads::SingleThreaded {
            // Single-threaded mode rescans once the description is a heartbeat old.
            tokio::time::sleep(SINGLE_THREADED_HEARTBEAT).await;
            let _ = ping(&self.client).await;
            let topology = self.client.topology_description();
            assert!(wanted(&topology), "{what}: {topology}");
            return;
        }
        let client = &self.client;
        let (events, seen) = (&mut self.events, &mut self.seen);
        let reached = tokio::time::timeout(WAIT, async {
            while !wanted(&client.topology_description()) {
                match events.recv().await {
                    Some(event) => seen.push(event),
                    None => return,
                }
            }
        })
        .await;
        let topology = client.topology_description();
        assert!(
            reached.is_ok() && wanted(&topology),
            "{what} within {WAIT:?}: {topology}"
        );
    }
}

async fn ping(client: &Client) -> anymongo::Result<Document> {
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
}

async fn insert(client: &Client, id: i32) -> anymongo::Result<Document> {
    client
        .database("app")
        .run_command(doc! { "insert": "items", "documents": [{ "_id": id }] })
        .await
}

fn member(set: &MockReplicaSet, index: usize) -> ServerAddress {
    ServerAddress::parse(set.address(index)).unwrap()
}

fn server_type(topology: &TopologyDescription, address: &ServerAddress) -> Option<ServerType> {
    topology
        .servers
        .get(address)
        .map(|server| server.server_type)
}

/// The member that accepted the insert of `id`.
fn accepted_by(set: &MockReplicaSet, id: i32) -> Option<usize> {
    set.inserts()
        .into_iter()
        .find(|insert| {
            insert.accepted
                && insert
                    .documents
                    .iter()
                    .any(|d| d.get_i32("_id").ok() == Some(id))
        })
        .map(|insert| insert.member)
}

/// Inserts `id`. A client that has not seen the election yet sends it to the old
/// primary, which refuses it (NotWritablePrimary); that error marks the old primary
/// Unknown, and the second attempt must reach the new primary.
async fn insert_reaching_the_primary(client: &Client, id: i32) {
    if let Err(error) = insert(client, id).await {
        assert_eq!(error.code(), Some(10107), "{error}");
        insert(client, id).await.unwrap();
    }
}

async fn replica_set_scenario(monitoring: MonitoringThreads) {
    let set = MockReplicaSet::start().await;
    let mut observed = Observed::new(&set, monitoring, "");
    let [first, second, third] = [0, 1, 2].map(|index| member(&set, index));

    // Discovery of all members from one seed.
    insert(&observed.client, 1).await.unwrap();
    assert_eq!(accepted_by(&set, 1), Some(0));
    observed
        .topology_becomes("all three members known", |topology| {
            topology.topology_type == TopologyType::ReplicaSetWithPrimary
                && server_type(topology, &first) == Some(ServerType::RsPrimary)
                && server_type(topology, &second) == Some(ServerType::RsSecondary)
                && server_type(topology, &third) == Some(ServerType::RsSecondary)
        })
        .await;

    if monitoring == MonitoringThreads::Background {
        // The members support the streaming protocol, so the monitors stream.
        let streaming = set
            .wait_for(WAIT, |set| {
                (0..3).all(|index| set.hello_counts(index).awaited > 0)
            })
            .await;
        assert!(streaming, "every member gets awaitable hellos");
    }

    // An election: member 1 becomes primary, and writes follow it.
    set.set_primary(Some(1));
    observed
        .topology_becomes("member 1 primary", |topology| {
            server_type(topology, &second) == Some(ServerType::RsPrimary)
                && server_type(topology, &first) != Some(ServerType::RsPrimary)
        })
        .await;
    insert_reaching_the_primary(&observed.client, 2).await;
    assert_eq!(accepted_by(&set, 2), Some(1));

    // An arbiter is monitored but never selected.
    set.set_role(2, MemberRole::Arbiter);
    observed
        .topology_becomes("member 2 an arbiter", |topology| {
            server_type(topology, &third) == Some(ServerType::RsArbiter)
        })
        .await;

    // A hidden member is not in the primary's hosts: the client stops monitoring it.
    set.set_role(0, MemberRole::Hidden);
    observed
        .topology_becomes("hidden member 0 gone", |topology| {
            !topology.servers.contains_key(&first) && topology.servers.len() == 2
        })
        .await;

    // A member removed from the configuration disappears too.
    set.set_role(2, MemberRole::Removed);
    observed
        .topology_becomes("removed member 2 gone", |topology| {
            topology.servers.keys().eq([&second])
        })
        .await;
    insert_reaching_the_primary(&observed.client, 3).await;
    assert_eq!(accepted_by(&set, 3), Some(1));
    if monitoring != MonitoringThreads::SingleThreaded {
        while let Ok(event) = observed.events.try_recv() {
            observed.seen.push(event);
        }
        let closed: Vec<&ServerAddress> = observed
            .seen
            .iter()
            .filter_map(|event| match event {
                SdamEvent::ServerClosed(ServerClosedEvent { address, .. }) => Some(address),
                _ => None,
            })
            .collect();
        assert_eq!(closed, [&first, &third], "ServerClosed events");
    }
}

async fn all_members_down_scenario(monitoring: MonitoringThreads) {
    let set = MockReplicaSet::start().await;
    let extra = "&serverSelectionTimeoutMS=1500&connectTimeoutMS=1000";
    let mut observed = Observed::new(&set, monitoring, extra);
    insert(&observed.client, 1).await.unwrap();
    observed
        .topology_becomes("all three members known", |topology| {
            topology.servers.len() == 3
                && topology
                    .servers
                    .values()
                    .all(|server| server.server_type != ServerType::Unknown)
        })
        .await;
    for index in 0..3 {
        set.down(index).await;
    }
    // The first attempt may fail on a pooled connection to the primary (a network
    // error marks it Unknown); selection must then time out, naming every member.
    let client = &observed.client;
    let mut error = insert(client, 2).await.unwrap_err();
    if matches!(&*error.kind, ErrorKind::Io(_)) {
        error = insert(client, 2).await.unwrap_err();
    }
    assert!(
        matches!(&*error.kind, ErrorKind::ServerSelection { .. }),
        "{error}"
    );
    let message = error.to_string();
    for index in 0..3 {
        assert!(message.contains(set.address(index)), "{message}");
    }
}

#[tokio::test]
async fn background_monitoring_follows_the_replica_set() {
    replica_set_scenario(MonitoringThreads::Background).await;
}

#[tokio::test]
async fn single_threaded_monitoring_follows_the_replica_set() {
    replica_set_scenario(MonitoringThreads::SingleThreaded).await;
}

#[tokio::test]
async fn background_selection_times_out_naming_every_member_when_all_are_down() {
    all_members_down_scenario(MonitoringThreads::Background).await;
}

#[tokio::test]
async fn single_threaded_selection_times_out_naming_every_member_when_all_are_down() {
    all_members_down_scenario(MonitoringThreads::SingleThreaded).await;
}

#[tokio::test]
async fn dropping_the_client_stops_its_monitors_and_closes_its_pools() {
    let set = MockReplicaSet::start().await;
    let client = anymongo::Client::with_uri_str(&set.uri("minPoolSize=3"))
        .await
        .unwrap();
    ping(&client).await.unwrap();
    // Per member: the streaming monitor's connection and its RTT monitor's, and
    // minPoolSize pooled ones once the member is known (its pool is ready).
    let all_populated = set
        .wait_for(WAIT, |set| {
            (0..3).all(|index| set.open_connections(index) == 5)
        })
        .await;
    assert!(
        all_populated,
        "every member gets two monitoring connections and 3 pooled ones: {:?}",
        (0..3)
            .map(|index| set.open_connections(index))
            .collect::<Vec<_>>()
    );
    drop(client);
    // No runtime is needed in Drop: the monitors and the pools' background tasks
    // notice the close at their next await; the pools close their connections.
    let all_closed = set
        .wait_for(WAIT, |set| {
            (0..3).all(|index| set.open_connections(index) == 0)
        })
        .await;
    assert!(
        all_closed,
        "connections left open: {:?}",
        (0..3)
            .map(|index| set.open_connections(index))
            .collect::<Vec<_>>()
    );
}
