//! Load-balanced mode (Load Balancer spec, load-balancers.md) against a scripted mock
//! load balancer ([`anymongo_tests::load_balancer`]) with two backends of distinct
//! `serviceId`s, in both monitoring modes where the mode matters.
//!
//! Each test names the spec section and the spec test file (and test) it stands for.
//! The behaviours of the unified-format files in `load_balancer/` are replayed here
//! against the mock: its scripted replies and closed connections play the
//! `failCommand` fail points. The unified files themselves run against SecantusDB behind a proxy that plays the
//! load balancer (`spec --suite load_balancer`, [`anymongo_tests::lb_proxy`]); the
//! mock adds what one server cannot show: two services that really differ, scripted
//! failures of one of them, and both monitoring modes. Pinning (`cursors.json`,
//! `transactions.json`, the statistics of `wait-queue-timeouts.json`) is proven by the
//! unified files alone; `lb-connection-establishment.json` is skipped by the spec
//! itself (servers do not refuse a handshake without `loadBalanced`).
//!
//! Connections are mapped to backends through the mock's records: a pool numbers its
//! connections 1, 2, 3 … in order of creation and the mock numbers them in order of
//! acceptance, so tests that open connections one at a time ([`hold_connections`]) know
//! that pool connection `i` is the mock's connection `i`, on backend `(i - 1) % 2`.

use anymongo::event::cmap::{
    ConnectionCheckedInEvent, ConnectionCheckedOutEvent, ConnectionCheckoutFailedEvent,
    ConnectionClosedEvent, ConnectionCreatedEvent, ConnectionReadyEvent, PoolClearedEvent,
};
use anymongo::event::sdam::{ServerOpeningEvent, TopologyOpeningEvent};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{doc, Document};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::cmap::{CmapEvent, ConnectionClosedReason};
use anymongo::event::command::CommandEvent;
use anymongo::event::sdam::SdamEvent;
use anymongo::event::EventHandler;
use anymongo::rt::Runtime;
use anymongo::sdam::{ServerType, TopologyDescription, TopologyType};
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::lb_proxy::LoadBalancerProxy;
use anymongo_tests::load_balancer::{MockLoadBalancer, BACKENDS};
use anymongo_tests::pool_events::closed_connections;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The bound of every wait that is expected to end.
const WAIT: Duration = Duration::from_secs(10);

/// The Load Balancer spec's error for a handshake reply without `serviceId`.
const UNSUPPORTED: &str =
    "Driver attempted to initialize in load balancing mode, but the server does not support this mode.";

/// Both monitoring modes; load-balanced mode must behave the same in each.
const MODES: [MonitoringThreads; 2] = [
    MonitoringThreads::Background,
    MonitoringThreads::SingleThreaded,
];

/// Records the events of one kind a client publishes, and lets a test wait for them.
struct Recorder<E> {
    inner: Arc<RecorderInner<E>>,
}

struct RecorderInner<E> {
    events: Mutex<Vec<E>>,
    changed: watch::Sender<u64>,
}

impl<E: Clone + Send + Sync + std::fmt::Debug + 'static> Recorder<E> {
    fn new() -> Self {
        Recorder {
            inner: Arc::new(RecorderInner {
                events: Mutex::new(Vec::new()),
                changed: watch::channel(0).0,
            }),
        }
    }

    fn handler(&self) -> EventHandler<E> {
        let inner = self.inner.clone();
        EventHandler::callback(move |event: E| {
            inner
                .events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event);
            inner.changed.send_modify(|generation| *generation += 1);
        })
    }

    fn all(&self) -> Vec<E> {
        self.inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn len(&self) -> usize {
        self.inner
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The events from index `mark` on.
    fn since(&self, mark: usize) -> Vec<E> {
        self.all().split_off(mark)
    }

    /// Waits (at most [`WAIT`]) until `condition` holds for the events so far.
    async fn wait_for(&self, what: &str, condition: impl Fn(&[E]) -> bool) {
        let mut changes = self.inner.changed.subscribe();
        let waited = tokio::time::timeout(WAIT, async {
            loop {
                if condition(&self.all()) {
                    return;
                }
                let _ = changes.changed().await;
            }
        })
        .await;
        if waited.is_err() {
            panic!("no {what} within {WAIT:?}; events: {:#?}", self.all());
        }
    }
}

/// A client and the events it published.
struct TestClient {
    client: Client,
    sdam: Recorder<SdamEvent>,
    cmap: Recorder<CmapEvent>,
    commands: Recorder<CommandEvent>,
}

impl TestClient {
    fn new(uri: &str, monitoring: MonitoringThreads) -> TestClient {
        TestClient::with_runtime(uri, monitoring, anymongo_native::runtime())
    }

    /// A client on `runtime` (one without a spawner plays a host that runs nothing
    /// in the background).
    fn with_runtime(uri: &str, monitoring: MonitoringThreads, runtime: Runtime) -> TestClient {
        let sdam = Recorder::new();
        let cmap = Recorder::new();
        let commands = Recorder::new();
        let config = ClientConfig {
            monitoring,
            runtime: Some(runtime),
            ..ClientConfig::default()
        };
        let mut options = ClientOptions::parse_uri(uri).expect("valid URI");
        options.sdam_event_handler = Some(sdam.handler());
        options.cmap_event_handler = Some(cmap.handler());
        options.command_event_handler = Some(commands.handler());
        let client = Client::with_config(options, config).expect("valid options");
        TestClient {
            client,
            sdam,
            cmap,
            commands,
        }
    }

    /// Runs `command` on database `db`, within [`WAIT`].
    async fn run(&self, command: Document) -> anymongo::Result<Document> {
        let db = self.client.database("db");
        tokio::time::timeout(WAIT, db.run_command(command))
            .await
            .expect("the command ends within the wait")
    }

    /// Runs `command` on a task of its own (it may be held by the mock).
    fn spawn(&self, command: Document) -> JoinHandle<anymongo::Result<Document>> {
        let db = self.client.database("db");
        tokio::spawn(async move { db.run_command(command).await })
    }

    /// The CMAP events from index `mark` on, in short form, without the
    /// ConnectionCheckOutStarted events (which the spec tests do not observe).
    fn cmap_since(&self, mark: usize) -> Vec<String> {
        self.cmap
            .since(mark)
            .iter()
            .filter(|event| !matches!(event, CmapEvent::ConnectionCheckoutStarted(_)))
            .map(short)
            .collect()
    }
}

/// A CMAP event in short form: `CheckedOut(1)`, `Closed(3, stale)`, `PoolCleared(<id>)`.
fn short(event: &CmapEvent) -> String {
    match event {
        CmapEvent::PoolCreated(_) => "PoolCreated".into(),
        CmapEvent::PoolReady(_) => "PoolReady".into(),
        CmapEvent::PoolCleared(PoolClearedEvent {
            service_id,
            interrupt_in_use_connections,
            ..
        }) => {
            let service = service_id.map_or("none".to_owned(), |id| id.to_hex());
            match interrupt_in_use_connections {
                true => format!("PoolCleared({service}, interrupting)"),
                false => format!("PoolCleared({service})"),
            }
        }
        CmapEvent::PoolClosed(_) => "PoolClosed".into(),
        CmapEvent::ConnectionCreated(ConnectionCreatedEvent { connection_id, .. }) => {
            format!("Created({connection_id})")
        }
        CmapEvent::ConnectionReady(ConnectionReadyEvent { connection_id, .. }) => {
            format!("Ready({connection_id})")
        }
        CmapEvent::ConnectionClosed(ConnectionClosedEvent {
            connection_id,
            reason,
            ..
        }) => format!("Closed({connection_id}, {})", reason.as_str()),
        CmapEvent::ConnectionCheckoutStarted(_) => "CheckOutStarted".into(),
        CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent { reason, .. }) => {
            format!("CheckOutFailed({})", reason.as_str())
        }
        CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent { connection_id, .. }) => {
            format!("CheckedOut({connection_id})")
        }
        CmapEvent::ConnectionCheckedIn(ConnectionCheckedInEvent { connection_id, .. }) => {
            format!("CheckedIn({connection_id})")
        }
        other => other.name().into(),
    }
}

/// A command event in short form: `Started(insert, <serviceId or none>)`, `Succeeded(…)`,
/// `Failed(…)`.
fn short_command(event: &CommandEvent) -> String {
    let kind = match event {
        CommandEvent::Started(_) => "Started",
        CommandEvent::Succeeded(_) => "Succeeded",
        CommandEvent::Failed(_) => "Failed",
        _ => "Unknown",
    };
    let service = event
        .service_id()
        .map_or("none".to_owned(), |id| id.to_hex());
    format!("{kind}({}, {service})", event.command_name())
}

fn cleared(service_id: ObjectId) -> String {
    format!("PoolCleared({})", service_id.to_hex())
}

fn pool_cleared_events(events: &[CmapEvent]) -> Vec<Option<ObjectId>> {
    events
        .iter()
        .filter_map(|event| match event {
            CmapEvent::PoolCleared(PoolClearedEvent { service_id, .. }) => Some(*service_id),
            _ => None,
        })
        .collect()
}

/// Opens `count` connections one at a time, each kept in use by a `ping` its backend
/// holds: pool connection `i` (from 1) is the mock's connection `i`, on backend
/// `(i - 1) % 2`. Returns the held pings, by backend.
async fn hold_connections(
    client: &TestClient,
    lb: &MockLoadBalancer,
    count: usize,
) -> [Vec<JoinHandle<anymongo::Result<Document>>>; BACKENDS] {
    let mut held: [Vec<_>; BACKENDS] = Default::default();
    for i in 0..count {
        let backend = i % BACKENDS;
        let before = lb.held(backend);
        lb.hold_next(backend, 1);
        held[backend].push(client.spawn(doc! { "ping": 1 }));
        assert!(
            lb.wait_for(WAIT, |lb| lb.held(backend) == before + 1).await,
            "ping {i} was not held by backend {backend}; received: {:#?}",
            lb.received()
        );
    }
    let connections = lb.connections();
    assert_eq!(connections.len(), count, "{connections:#?}");
    for (i, connection) in connections.iter().enumerate() {
        assert_eq!(connection.connection, i + 1);
        assert_eq!(connection.backend, i % BACKENDS);
    }
    held
}

/// Releases backend `backend`'s held pings and waits for them to succeed.
async fn release(
    lb: &MockLoadBalancer,
    backend: usize,
    pings: Vec<JoinHandle<anymongo::Result<Document>>>,
) {
    lb.release(backend);
    for ping in pings {
        let reply = tokio::time::timeout(WAIT, ping)
            .await
            .expect("a released ping ends")
            .expect("the ping's task ran");
        reply.expect("a released ping succeeds");
    }
}

/// The description every load-balanced topology has, whatever happens: LoadBalanced,
/// one LoadBalancer at the balancer's address with nothing else set
/// (`discover_load_balancer.json`).
fn assert_load_balanced(description: &TopologyDescription, address: &str) {
    assert_eq!(description.topology_type, TopologyType::LoadBalanced);
    assert_eq!(description.set_name, None);
    assert_eq!(description.max_set_version, None);
    assert_eq!(description.max_election_id, None);
    assert_eq!(description.logical_session_timeout_minutes, None);
    assert_eq!(description.compatibility_error, None, "compatible");
    let servers: Vec<_> = description.servers.values().collect();
    assert_eq!(servers.len(), 1, "{description:?}");
    let server = servers[0];
    assert_eq!(server.address.to_string(), address);
    assert_eq!(server.server_type, ServerType::LoadBalancer);
    assert_eq!(server.set_name, None);
    assert_eq!(server.set_version, None);
    assert_eq!(server.election_id, None);
    assert_eq!(server.logical_session_timeout_minutes, None);
    assert_eq!(server.min_wire_version, 0, "minWireVersion unset");
    assert_eq!(server.max_wire_version, 0, "maxWireVersion unset");
    assert_eq!(server.topology_version, None);
    assert_eq!(server.service_id, None);
    assert_eq!(server.error, None);
}

/// The SDAM events of opening a load-balanced topology (load-balancers.md,
/// "Monitoring"), exactly.
fn assert_opening_events(events: &[SdamEvent], address: &str) {
    let names: Vec<_> = events.iter().map(SdamEvent::name).collect();
    assert_eq!(
        names,
        [
            "TopologyOpeningEvent",
            "TopologyDescriptionChangedEvent",
            "ServerOpeningEvent",
            "ServerDescriptionChangedEvent",
            "TopologyDescriptionChangedEvent",
        ],
        "{events:#?}"
    );
    let SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id }) = &events[0] else {
        unreachable!()
    };
    let SdamEvent::TopologyDescriptionChanged(changed) = &events[1] else {
        unreachable!()
    };
    let (previous, new) = (&changed.previous_description, &changed.new_description);
    assert_eq!(&changed.topology_id, topology_id);
    assert_eq!(previous.topology_type, TopologyType::Unknown);
    assert!(previous.servers.is_empty(), "{previous:?}");
    assert_eq!(new.topology_type, TopologyType::LoadBalanced);
    let servers: Vec<_> = new.servers.values().collect();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].address.to_string(), address);
    assert_eq!(servers[0].server_type, ServerType::Unknown);
    let SdamEvent::ServerOpening(ServerOpeningEvent {
        topology_id: id,
        address: opened,
    }) = &events[2]
    else {
        unreachable!()
    };
    assert_eq!(id, topology_id);
    assert_eq!(opened.to_string(), address);
    let SdamEvent::ServerDescriptionChanged(changed) = &events[3] else {
        unreachable!()
    };
    assert_eq!(&changed.topology_id, topology_id);
    assert_eq!(changed.address.to_string(), address);
    assert_eq!(
        changed.previous_description.server_type(),
        ServerType::Unknown
    );
    assert_eq!(
        changed.new_description.server_type(),
        ServerType::LoadBalancer
    );
    let SdamEvent::TopologyDescriptionChanged(changed) = &events[4] else {
        unreachable!()
    };
    assert_eq!(&changed.topology_id, topology_id);
    assert_load_balanced(&changed.new_description, address);
}

/// Every hello the balancer received is a load-balanced OP_MSG handshake (load-balancers.md,
/// "Connection Establishment"): `hello: 1` with `loadBalanced: true`, never a legacy
/// `isMaster` over OP_QUERY.
fn assert_load_balanced_hellos(lb: &MockLoadBalancer) {
    let hellos = lb.hellos();
    assert!(!hellos.is_empty());
    for hello in &hellos {
        assert!(hello.op_msg, "a hello over OP_QUERY: {hello:?}");
        assert_eq!(hello.name(), "hello", "{hello:?}");
        assert_eq!(
            hello.command.get_bool("loadBalanced").ok(),
            Some(true),
            "{hello:?}"
        );
        assert_eq!(
            hello.command.get_str("$db").ok(),
            Some("admin"),
            "{hello:?}"
        );
    }
}

/// `discover_load_balancer.json` (discovery_and_monitoring/load-balanced) run live, and
/// load-balancers.md "Monitoring": with `loadBalanced=true` the topology opens as
/// LoadBalanced with exactly the five events of the spec, the server is a LoadBalancer
/// with only its address set, and it stays so. No monitor runs: no heartbeat event, no
/// connection but the pool's, each starting with a load-balanced hello and then carrying
/// the application's commands. Closing publishes ServerClosed, a
/// TopologyDescriptionChanged to Unknown and TopologyClosed, and nothing else.
#[tokio::test]
async fn load_balancer_is_discovered_without_monitoring() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        // A monitor, if there were one, would check every 500 ms.
        let client = TestClient::new(&lb.uri("heartbeatFrequencyMS=500"), mode);
        // The opening events are published when the client is created.
        assert_opening_events(&client.sdam.all(), lb.address());
        let opened = client.client.topology_description();
        assert_load_balanced(&opened, lb.address());

        client.run(doc! { "ping": 1 }).await.unwrap();
        let reply = client
            .run(doc! { "insert": "c", "documents": [{ "x": 1 }, { "x": 2 }] })
            .await
            .unwrap();
        assert_eq!(reply.get_i64("n").ok(), Some(2), "{reply}");
        client.run(doc! { "ping": 1 }).await.unwrap();

        // No monitoring connection shows up within a few heartbeats.
        let more = lb
            .wait_for(Duration::from_millis(1200), |lb| lb.connections().len() > 1)
            .await;
        assert!(!more, "{mode:?}: {:#?}", lb.connections());
        let received: Vec<_> = lb
            .received()
            .iter()
            .map(|r| (r.connection, r.backend, r.name().to_owned()))
            .collect();
        assert_eq!(
            received,
            [
                (1, 0, "hello".to_owned()),
                (1, 0, "ping".to_owned()),
                (1, 0, "insert".to_owned()),
                (1, 0, "ping".to_owned()),
            ],
            "{mode:?}"
        );
        assert_load_balanced_hellos(&lb);
        // A primary read is sent to a load balancer as to a mongos: without
        // `$readPreference` (server-selection.md, "Passing read preference to mongos and
        // load balancers").
        for command in lb.commands(0) {
            assert_eq!(
                command.command.get_str("$db").ok(),
                Some("db"),
                "{command:?}"
            );
            assert!(
                !command.command.contains_key("$readPreference"),
                "{command:?}"
            );
        }

        // Nothing but the opening events, and the description never changed.
        assert_eq!(client.sdam.len(), 5, "{mode:?}: {:#?}", client.sdam.all());
        assert_eq!(client.client.topology_description(), opened);

        let TestClient { client, sdam, .. } = client;
        drop(client);
        sdam.wait_for("TopologyClosedEvent", |events| {
            events
                .last()
                .is_some_and(|event| matches!(event, SdamEvent::TopologyClosed(_)))
        })
        .await;
        let events = sdam.all();
        let names: Vec<_> = events[5..].iter().map(SdamEvent::name).collect();
        assert_eq!(
            names,
            [
                "ServerClosedEvent",
                "TopologyDescriptionChangedEvent",
                "TopologyClosedEvent"
            ],
            "{mode:?}"
        );
        let SdamEvent::TopologyDescriptionChanged(changed) = &events[6] else {
            unreachable!()
        };
        let (previous, new) = (&changed.previous_description, &changed.new_description);
        assert_load_balanced(previous, lb.address());
        assert_eq!(new.topology_type, TopologyType::Unknown);
        assert!(new.servers.is_empty());
        // The pool's connection is closed with the client.
        assert!(
            lb.wait_for(WAIT, |lb| lb.open_connections(0) == 0).await,
            "{mode:?}: the connection stays open after the client is dropped"
        );
    }
}

/// load-balancers.md "Connection Establishment": every pooled connection's handshake is
/// `{hello: 1, loadBalanced: true}` over OP_MSG, and the connection takes the backend's
/// serviceId from the reply (what [`Client::hello`] reports).
#[tokio::test]
async fn handshake_is_load_balanced_hello_over_op_msg() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let client = TestClient::new(&lb.uri(""), mode);
        let hello = tokio::time::timeout(WAIT, client.client.hello())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hello.service_id, Some(lb.service_id(0)), "{mode:?}");
        assert_eq!(hello.connection_id, Some(1));
        assert!(hello.is_mongos);
        let hellos = lb.hellos();
        assert_eq!(hellos.len(), 1, "{mode:?}: {hellos:#?}");
        assert_load_balanced_hellos(&lb);
        assert_eq!(hellos[0].command.get_i32("hello").ok(), Some(1));
    }
}

/// `non-lb-connection-establishment.json`, "operations against non-load balanced
/// clusters fail if URI contains loadBalanced=true", and load-balancers.md "Connection
/// Establishment": a hello reply without `serviceId` fails the operation with exactly the
/// spec's message. The failure is a handshake error, so SDAM ignores it ("Initial
/// Handshake Errors"): no PoolCleared, the topology stays as it was, and the next
/// connection, to a backend that reports its serviceId, works.
#[tokio::test]
async fn hello_without_service_id_is_refused() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        lb.set_service_id_reported(false);
        let client = TestClient::new(&lb.uri(""), mode);
        let error = client.run(doc! { "ping": 1 }).await.unwrap_err();
        assert_eq!(error.to_string(), UNSUPPORTED, "{mode:?}: {error:?}");
        assert!(
            matches!(&*error.kind, ErrorKind::IncompatibleServer { .. }),
            "{error:?}"
        );
        assert_eq!(
            client.cmap_since(0),
            [
                "PoolCreated",
                "PoolReady",
                "Created(1)",
                "Closed(1, error)",
                "CheckOutFailed(connectionError)"
            ],
            "{mode:?}"
        );
        assert!(
            lb.wait_for(WAIT, |lb| lb.open_connections(0) == 0).await,
            "the refused connection is closed"
        );
        assert_eq!(lb.commands(0), []);
        assert_load_balanced_hellos(&lb);

        lb.set_service_id_reported(true);
        client.run(doc! { "ping": 1 }).await.unwrap();
        assert_eq!(
            lb.commands(1).len(),
            1,
            "the second connection goes to backend 1"
        );
        assert!(pool_cleared_events(&client.cmap.all()).is_empty());
        assert_eq!(client.sdam.len(), 5, "{:#?}", client.sdam.all());
        assert_load_balanced(&client.client.topology_description(), lb.address());
    }
}

/// `non-lb-connection-establishment.json`, "operations against non-load balanced
/// clusters succeed if URI contains loadBalanced=false", and load-balancers.md
/// "Connection Establishment" (`{hello: 1}` without `loadBalanced`): without
/// `loadBalanced=true` no handshake says `loadBalanced`, whatever the server replies, and
/// the balancer is discovered as an ordinary mongos.
#[tokio::test]
async fn without_load_balanced_the_handshake_does_not_say_so() {
    for options in ["", "?loadBalanced=false"] {
        for mode in MODES {
            let lb = MockLoadBalancer::start().await;
            let uri = format!("mongodb://{}/{options}", lb.address());
            let client = TestClient::new(&uri, mode);
            client.run(doc! { "ping": 1 }).await.unwrap();
            let hellos = lb.hellos();
            assert!(!hellos.is_empty());
            for hello in &hellos {
                assert!(
                    !hello.command.contains_key("loadBalanced"),
                    "{options} {mode:?}: {hello:?}"
                );
            }
            // The first handshake of a connection is the legacy hello over OP_QUERY.
            assert!(hellos
                .iter()
                .any(|hello| !hello.op_msg && hello.name() == "isMaster"));
            let description = client.client.topology_description();
            assert_eq!(description.topology_type, TopologyType::Sharded);
            let server = description.servers.values().next().unwrap();
            assert_eq!(server.server_type, ServerType::Mongos);
            // The serviceId is only reported in load-balanced mode (load-balancers.md,
            // "Events"), even though this server sends one.
            let events: Vec<_> = client.commands.all().iter().map(short_command).collect();
            assert_eq!(events, ["Started(ping, none)", "Succeeded(ping, none)"]);
        }
    }
}

/// `event-monitoring.json` (all three tests) and load-balancers.md "Events": the
/// command started, succeeded and failed events carry the serviceId of the backend the
/// command went to — for a server error (the spec's `find` with `$or: true`) and a
/// network error (a `closeConnection` fail point) alike — and so does the PoolCleared
/// event that network error causes.
#[tokio::test]
async fn command_and_pool_cleared_events_carry_the_service_id() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let client = TestClient::new(&lb.uri("retryReads=false&retryWrites=false"), mode);
        let service_0 = lb.service_id(0).to_hex();

        // "command started and succeeded events include serviceId"
        client
            .run(doc! { "insert": "coll0", "documents": [{ "x": 1 }] })
            .await
            .unwrap();
        // "command failed events include serviceId"
        lb.fail_next(
            0,
            1,
            doc! {
                "ok": 0.0, "errmsg": "$or must be an array", "code": 2, "codeName": "BadValue",
            },
        );
        let error = client
            .run(doc! { "find": "coll0", "filter": { "$or": true } })
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(2), "{error:?}");
        // "poolClearedEvent events include serviceId"
        let mark = client.cmap.len();
        lb.close_next(0, 1);
        let error = client
            .run(doc! { "find": "coll0", "filter": {} })
            .await
            .unwrap_err();
        assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error:?}");

        let events: Vec<_> = client.commands.all().iter().map(short_command).collect();
        assert_eq!(
            events,
            [
                format!("Started(insert, {service_0})"),
                format!("Succeeded(insert, {service_0})"),
                format!("Started(find, {service_0})"),
                format!("Failed(find, {service_0})"),
                format!("Started(find, {service_0})"),
                format!("Failed(find, {service_0})"),
            ],
            "{mode:?}"
        );
        for event in client.commands.all() {
            let connection = event.connection();
            assert_eq!((connection.id, connection.server_id), (1, Some(1)));
        }
        let cleared_events: Vec<_> = client
            .cmap_since(mark)
            .into_iter()
            .filter(|event| event.starts_with("PoolCleared"))
            .collect();
        assert_eq!(cleared_events, [cleared(lb.service_id(0))], "{mode:?}");
    }
}

/// load-balancers.md "Connection Pooling" and the `multiClient` of
/// `sdam-error-handling.json`: a pool behind a balancer holds connections to several
/// services. Two commands at once open two connections, which the balancer sends to its
/// two backends: two handshakes with the same `loadBalanced: true`, two serviceIds; later
/// commands reuse both connections and open none.
#[tokio::test]
async fn connections_reach_both_backends() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let client = TestClient::new(&lb.uri("maxPoolSize=10"), mode);
        // Both commands are held until both have arrived: two connections in use at once.
        lb.hold_next(0, 1);
        lb.hold_next(1, 1);
        let first = client.spawn(doc! { "ping": 1 });
        let second = client.spawn(doc! { "ping": 1 });
        assert!(
            lb.wait_for(WAIT, |lb| lb.held(0) == 1 && lb.held(1) == 1)
                .await,
            "{mode:?}: {:#?}",
            lb.received()
        );
        release(&lb, 0, vec![first]).await;
        release(&lb, 1, vec![second]).await;

        let hellos = lb.hellos();
        assert_eq!(hellos.len(), 2, "{hellos:#?}");
        let backends: Vec<_> = hellos.iter().map(|hello| hello.backend).collect();
        assert!(
            backends.contains(&0) && backends.contains(&1),
            "{hellos:#?}"
        );
        assert_ne!(lb.service_id(0), lb.service_id(1));
        assert_load_balanced_hellos(&lb);
        let events = client.cmap.all();
        let ready = events
            .iter()
            .filter(|event| matches!(event, CmapEvent::ConnectionReady(_)))
            .count();
        assert_eq!(ready, 2, "{mode:?}: {events:#?}");

        // Both connections serve on; no third is opened.
        for _ in 0..6 {
            client.run(doc! { "ping": 1 }).await.unwrap();
        }
        let mut both = Vec::new();
        for _ in 0..2 {
            both.push(client.spawn(doc! { "ping": 1 }));
        }
        for ping in both {
            tokio::time::timeout(WAIT, ping)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
        }
        assert_eq!(lb.connections().len(), 2, "{mode:?}");
        assert_eq!(lb.commands(0).len() + lb.commands(1).len(), 10);
        // Every command event names the service and the server-side connection the
        // command went to, as the balancer recorded them.
        let connections = lb.connections();
        let mut services = Vec::new();
        for event in client.commands.all() {
            let service_id = event
                .service_id()
                .expect("a serviceId in load-balanced mode");
            let backend = lb.backend_of(service_id).expect("a backend's serviceId");
            let server_id = event.connection().server_id;
            assert!(
                connections
                    .iter()
                    .any(|c| c.backend == backend && Some(c.connection_id) == server_id),
                "{event:?} on no connection of backend {backend}: {connections:#?}"
            );
            services.push(service_id);
        }
        assert_eq!(
            services.len(),
            20,
            "a started and a succeeded event per command"
        );
        assert!(services.contains(&lb.service_id(0)) && services.contains(&lb.service_id(1)));
        assert_eq!(client.sdam.len(), 5, "{:#?}", client.sdam.all());
    }
}

/// What goes wrong on backend 0 in [`error_on_one_service`].
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// A command error reply with this code (a state-change error).
    StateChange(i32, &'static str),
    /// The backend closes the connection instead of answering.
    Network,
}

/// Four connections (pool ids 1 and 3 to backend 0, 2 and 4 to backend 1), then an
/// `insert` on a backend-0 connection fails with `failure`.
///
/// load-balancers.md "Post-Handshake Errors": the topology is never touched (no SDAM
/// event after the opening ones; the server stays a LoadBalancer). When the error
/// requires clearing the pool (a network error; a state-change error only if it is a
/// shutdown error, as the server is 4.2+: SDAM "Error Handling"), only backend 0's
/// service is cleared: PoolCleared carries its serviceId, the failed connection is
/// closed when checked in, as stale after a state-change error (the
/// `sdam-error-handling.json` sequence: CheckedOut, PoolCleared, CheckedIn,
/// Closed(stale), then CheckedOut, CheckedIn) and for its error after a network error
/// (as in `cursors.json` and `transactions.json`: Closed(error)), the
/// other backend-0 connection is closed as stale when the pool sees it, and the
/// backend-1 connections are never closed and keep serving.
async fn error_on_one_service(failure: Failure, mode: MonitoringThreads) {
    let lb = MockLoadBalancer::start().await;
    let client = TestClient::new(&lb.uri("maxPoolSize=10&retryWrites=false"), mode);
    let [held_0, held_1] = hold_connections(&client, &lb, 4).await;
    // Backend 1's connections come back first: a backend-0 connection is the most
    // recently used, and the next operation takes it.
    release(&lb, 1, held_1).await;
    release(&lb, 0, held_0).await;
    let service_0 = lb.service_id(0);

    let mark = client.cmap.len();
    match failure {
        Failure::StateChange(code, name) => lb.fail_next(
            0,
            1,
            doc! { "ok": 0.0, "errmsg": "scripted failure", "code": code, "codeName": name },
        ),
        Failure::Network => lb.close_next(0, 1),
    }
    let error = client
        .run(doc! { "insert": "c", "documents": [{ "x": 1 }] })
        .await
        .unwrap_err();
    match failure {
        Failure::StateChange(code, _) => assert_eq!(error.code(), Some(code), "{error:?}"),
        Failure::Network => assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error:?}"),
    }
    let failed = lb.commands(0).last().cloned().unwrap();
    assert_eq!(failed.name(), "insert");
    let failed_id = u32::try_from(failed.connection).unwrap();
    let other_0 = if failed_id == 1 { 3 } else { 1 };
    let clears = !matches!(failure, Failure::StateChange(10107, _));
    // A connection that failed is closed for its error; one that did not, as stale.
    let failed_reason = match failure {
        Failure::Network => ConnectionClosedReason::Error,
        Failure::StateChange(..) => ConnectionClosedReason::Stale,
    };
    let expected: Vec<String> = match clears {
        true => vec![
            format!("CheckedOut({failed_id})"),
            cleared(service_0),
            format!("CheckedIn({failed_id})"),
            format!("Closed({failed_id}, {})", failed_reason.as_str()),
        ],
        false => vec![
            format!("CheckedOut({failed_id})"),
            format!("CheckedIn({failed_id})"),
        ],
    };
    // Background maintenance may close the other stale connection meanwhile.
    let after_failure: Vec<String> = client
        .cmap_since(mark)
        .into_iter()
        .filter(|event| *event != format!("Closed({other_0}, stale)"))
        .collect();
    assert_eq!(after_failure, expected, "{failure:?} {mode:?}");

    // The next operations succeed; in a cleared service they run on backend 1.
    let mark = client.cmap.len();
    for _ in 0..3 {
        client
            .run(doc! { "insert": "c", "documents": [{ "x": 2 }] })
            .await
            .unwrap();
    }
    let last = lb.received().last().cloned().unwrap();
    if clears {
        assert_eq!(last.backend, 1, "{failure:?} {mode:?}");
        client
            .cmap
            .wait_for("the other backend-0 connection closed as stale", |events| {
                closed_connections(events).contains(&(other_0, ConnectionClosedReason::Stale))
            })
            .await;
        assert!(
            lb.wait_for(WAIT, |lb| lb.open_connections(0) == 0).await,
            "{failure:?} {mode:?}: backend 0's connections stay open"
        );
        let closed = closed_connections(&client.cmap.all());
        let mut closed_ids: Vec<u32> = closed.iter().map(|(id, _)| *id).collect();
        closed_ids.sort();
        assert_eq!(closed_ids, [1, 3], "{failure:?} {mode:?}: {closed:?}");
        assert!(closed.iter().all(|(id, reason)| match *id == failed_id {
            true => *reason == failed_reason,
            false => *reason == ConnectionClosedReason::Stale,
        }));
        assert_eq!(
            pool_cleared_events(&client.cmap.all()),
            [Some(service_0)],
            "{failure:?} {mode:?}"
        );
    } else {
        assert_eq!(
            last.connection, failed.connection,
            "the connection serves on"
        );
        assert!(closed_connections(&client.cmap.all()).is_empty());
        assert!(pool_cleared_events(&client.cmap.all()).is_empty());
    }
    // No new connection was needed, and backend 1's two are open.
    assert!(!client
        .cmap_since(mark)
        .iter()
        .any(|event| event.starts_with("Created")));
    assert_eq!(lb.connections().len(), 4);
    assert_eq!(lb.open_connections(1), 2, "{failure:?} {mode:?}");
    // The topology never changed.
    assert_eq!(
        client.sdam.len(),
        5,
        "{failure:?} {mode:?}: {:#?}",
        client.sdam.all()
    );
    assert_load_balanced(&client.client.topology_description(), lb.address());
}

/// `sdam-error-handling.json`, "only connections for a specific serviceId are closed
/// when pools are cleared" (a `failCommand` with errorCode 11600 on `insert`), and
/// load-balancers.md "Post-Handshake Errors": see [`error_on_one_service`].
#[tokio::test]
async fn shutdown_error_clears_only_its_service() {
    for mode in MODES {
        error_on_one_service(Failure::StateChange(11600, "InterruptedAtShutdown"), mode).await;
    }
}

/// load-balancers.md "Post-Handshake Errors" with a state-change error that is not a
/// shutdown error (10107, NotWritablePrimary, from a 4.2+ server): the topology is left
/// alone and, as SDAM "Error Handling" clears the pool for such errors only on servers
/// older than 4.2, nothing is cleared: the connection goes back to the pool and serves on.
#[tokio::test]
async fn not_writable_primary_error_changes_nothing() {
    for mode in MODES {
        error_on_one_service(Failure::StateChange(10107, "NotWritablePrimary"), mode).await;
    }
}

/// `event-monitoring.json`, "poolClearedEvent events include serviceId" (a
/// `closeConnection` fail point), and load-balancers.md "Post-Handshake Errors" and
/// "Events": a network error clears the failed connection's service only, and the
/// PoolCleared event carries its serviceId. See [`error_on_one_service`].
#[tokio::test]
async fn network_error_clears_only_its_service() {
    for mode in MODES {
        error_on_one_service(Failure::Network, mode).await;
    }
}

/// `sdam-error-handling.json`, "stale errors are ignored" (there with two cursors whose
/// `getMore`s fail; here two commands in use at once): two connections to backend 0 fail
/// with network errors; the first clears backend 0's service, the second comes from a
/// connection of the older generation and is ignored, so there is exactly one
/// PoolCleared. Both connections are closed for their errors; backend 1's serves on.
#[tokio::test]
async fn stale_errors_are_ignored() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let client = TestClient::new(&lb.uri("maxPoolSize=10&retryWrites=false"), mode);
        let [held_0, held_1] = hold_connections(&client, &lb, 3).await;
        let mark = client.cmap.len();
        lb.close_held(0);
        for ping in held_0 {
            let result = tokio::time::timeout(WAIT, ping).await.unwrap().unwrap();
            let error = result.unwrap_err();
            assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error:?}");
        }
        release(&lb, 1, held_1).await;
        let service_0 = lb.service_id(0);
        let events = client.cmap.since(mark);
        assert_eq!(
            pool_cleared_events(&events),
            [Some(service_0)],
            "{mode:?}: {events:#?}"
        );
        let mut closed = closed_connections(&events);
        closed.sort_by_key(|(id, _)| *id);
        assert_eq!(
            closed,
            [
                (1, ConnectionClosedReason::Error),
                (3, ConnectionClosedReason::Error)
            ],
            "{mode:?}"
        );
        let reply = client.run(doc! { "ping": 1 }).await;
        reply.unwrap();
        let last = lb.received().last().cloned().unwrap();
        assert_eq!((last.connection, last.backend), (2, 1));
        assert_eq!(client.sdam.len(), 5);
        assert_load_balanced(&client.client.topology_description(), lb.address());
    }
}

/// How the handshake of a new connection fails in [`handshake_error_is_ignored`].
#[derive(Debug, Clone, Copy)]
enum HelloFailure {
    /// The hello is answered with a shutdown error (11600).
    ShutdownError,
    /// The connection is closed instead of answering the hello.
    Closed,
}

/// `sdam-error-handling.json`, "errors during the initial connection hello are ignored",
/// and load-balancers.md "Initial Handshake Errors": with connection 1 (backend 0) in
/// use, a second connection (backend 1) fails its hello — with an error reply or a
/// closed connection. The operation fails with exactly ConnectionCreated,
/// ConnectionClosed(error) and ConnectionCheckOutFailed(connectionError); SDAM error
/// handling does not run: no PoolCleared, connection 1 is not closed and serves on, and
/// the topology is unchanged.
async fn handshake_error_is_ignored(failure: HelloFailure, mode: MonitoringThreads) {
    let lb = MockLoadBalancer::start().await;
    let client = TestClient::new(&lb.uri("retryWrites=false"), mode);
    let [held_0, _] = hold_connections(&client, &lb, 1).await;
    let mark = client.cmap.len();
    match failure {
        HelloFailure::ShutdownError => lb.fail_next_hello(
            1,
            1,
            doc! {
                "ok": 0.0, "errmsg": "scripted failure", "code": 11600,
                "codeName": "InterruptedAtShutdown",
            },
        ),
        HelloFailure::Closed => lb.close_next_hello(1, 1),
    }
    let error = client
        .run(doc! { "insert": "c", "documents": [{ "x": 1 }] })
        .await
        .unwrap_err();
    match failure {
        HelloFailure::ShutdownError => assert_eq!(error.code(), Some(11600), "{error:?}"),
        HelloFailure::Closed => assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error:?}"),
    }
    let hellos = lb.hellos();
    assert_eq!(hellos.len(), 2);
    assert_eq!((hellos[1].connection, hellos[1].backend), (2, 1));
    assert_eq!(
        client.cmap_since(mark),
        [
            "Created(2)",
            "Closed(2, error)",
            "CheckOutFailed(connectionError)"
        ],
        "{failure:?} {mode:?}"
    );
    release(&lb, 0, held_0).await;
    // Connection 1 serves on.
    let mark = client.cmap.len();
    client
        .run(doc! { "insert": "c", "documents": [{ "x": 2 }] })
        .await
        .unwrap();
    assert_eq!(client.cmap_since(mark), ["CheckedOut(1)", "CheckedIn(1)"]);
    assert!(pool_cleared_events(&client.cmap.all()).is_empty());
    assert_eq!(lb.open_connections(0), 1);
    assert_eq!(client.sdam.len(), 5, "{:#?}", client.sdam.all());
    assert_load_balanced(&client.client.topology_description(), lb.address());
}

/// See [`handshake_error_is_ignored`]: the hello answered with error 11600, as the spec
/// test's fail point does.
#[tokio::test]
async fn hello_error_reply_is_ignored() {
    for mode in MODES {
        handshake_error_is_ignored(HelloFailure::ShutdownError, mode).await;
    }
}

/// See [`handshake_error_is_ignored`]: the connection closed during the hello.
#[tokio::test]
async fn hello_network_error_is_ignored() {
    for mode in MODES {
        handshake_error_is_ignored(HelloFailure::Closed, mode).await;
    }
}

/// `sdam-error-handling.json`, "errors during authentication are processed", and
/// load-balancers.md "Initial Handshake Errors": an error after the hello completed —
/// here the connection closed on `saslStart` — goes through SDAM error handling, without
/// touching the topology, and clears the pool for the serviceId the hello reported,
/// before the failed connection is closed (the current spec tests' order):
/// ConnectionCreated, PoolCleared(serviceId of backend 0), ConnectionClosed(error),
/// ConnectionCheckOutFailed(connectionError).
#[tokio::test]
async fn authentication_error_clears_the_service() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let uri = format!(
            "mongodb://user:pencil@{}/?loadBalanced=true&authMechanism=SCRAM-SHA-256&retryWrites=false",
            lb.address()
        );
        let client = TestClient::new(&uri, mode);
        lb.close_next(0, 1);
        let error = client
            .run(doc! { "insert": "c", "documents": [{ "x": 1 }] })
            .await
            .unwrap_err();
        let commands = lb.commands(0);
        assert_eq!(commands.len(), 1, "{commands:#?}");
        assert_eq!(commands[0].name(), "saslStart", "{error:?}");
        client
            .cmap
            .wait_for("a PoolCleared event", |events| {
                !pool_cleared_events(events).is_empty()
            })
            .await;
        assert_eq!(
            client.cmap_since(2),
            [
                "Created(1)".to_owned(),
                cleared(lb.service_id(0)),
                "Closed(1, error)".to_owned(),
                "CheckOutFailed(connectionError)".to_owned(),
            ],
            "{mode:?}"
        );
        assert_eq!(client.sdam.len(), 5, "{:#?}", client.sdam.all());
        assert_load_balanced(&client.client.topology_description(), lb.address());
    }
}

/// `wait-queue-timeouts.json` and load-balancers.md "Connection Tracking": with
/// `maxPoolSize=1` and the one connection in use by an operation, another operation times
/// out waiting for a connection with a WaitQueueTimeout error whose message gives the
/// spec's details; the events are ConnectionCheckedOut then
/// ConnectionCheckOutFailed(timeout). (The spec's tests hold the connection with a
/// cursor or a transaction, and run in the unified suite: here a command in progress
/// holds it, counted as "other operations".)
#[tokio::test]
async fn wait_queue_timeout_gives_the_connections_in_use() {
    for mode in MODES {
        let lb = MockLoadBalancer::start().await;
        let client = TestClient::new(&lb.uri("maxPoolSize=1&waitQueueTimeoutMS=100"), mode);
        let [held_0, _] = hold_connections(&client, &lb, 1).await;
        let error = client.run(doc! { "ping": 1 }).await.unwrap_err();
        assert!(
            matches!(&*error.kind, ErrorKind::WaitQueueTimeout { .. }),
            "{mode:?}: {error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains(
                "Timeout waiting for connection from the connection pool. maxPoolSize: 1, \
                 connections in use by cursors: 0, connections in use by transactions: 0, \
                 connections in use by other operations: 1"
            ),
            "{message}"
        );
        let observed: Vec<String> = client
            .cmap
            .all()
            .iter()
            .filter(|event| {
                matches!(
                    event,
                    CmapEvent::ConnectionCheckedOut(_) | CmapEvent::ConnectionCheckoutFailed(_)
                )
            })
            .map(short)
            .collect();
        assert_eq!(observed, ["CheckedOut(1)", "CheckOutFailed(timeout)"]);
        release(&lb, 0, held_0).await;
        client.run(doc! { "ping": 1 }).await.unwrap();
        assert_eq!(lb.connections().len(), 1);
    }
}

/// Asserts that connection 1, pinned by something dropped on a host that cannot spawn,
/// is still checked out, and goes back to the pool when the client's next operation
/// (a ping) cleans up on it: one check-out and one check-in for the pin's whole life.
async fn released_by_the_next_operation(client: &TestClient, cmap_mark: usize) {
    assert_eq!(
        client.cmap_since(cmap_mark),
        ["CheckedOut(1)"],
        "still pinned"
    );
    client.run(doc! { "ping": 1 }).await.unwrap();
    assert_eq!(
        client.cmap_since(cmap_mark),
        [
            "CheckedOut(1)",
            "CheckedIn(1)",
            "CheckedOut(1)",
            "CheckedIn(1)"
        ]
    );
}

/// A client through a [`LoadBalancerProxy`] in front of the shared SecantusDB, with
/// `maxPoolSize=1`, on a runtime that cannot spawn: what it drops is cleaned up by its
/// next operation; its appName is `lb_<collection>`, and `lb_pinning.<collection>`
/// holds `_id`s 0 to 4.
async fn unspawning_client(proxy: &LoadBalancerProxy, collection: &str) -> TestClient {
    let mut runtime = anymongo_native::runtime();
    runtime.spawner = None;
    let uri = format!("{}&maxPoolSize=1&appName=lb_{collection}", proxy.uri());
    let client = TestClient::with_runtime(&uri, MonitoringThreads::SingleThreaded, runtime);
    let numbers = client
        .client
        .database("lb_pinning")
        .collection::<Document>(collection);
    numbers.drop().await.unwrap();
    let documents: Vec<Document> = (0..5).map(|n| doc! { "_id": n }).collect();
    numbers.insert_many(documents).await.unwrap();
    client
}

async fn shared_server_proxy() -> LoadBalancerProxy {
    let server = anymongo_tests::server::shared();
    LoadBalancerProxy::start(&format!("{}:{}", server.host, server.port), 1)
        .await
        .unwrap()
}

/// The commands started from index `mark` on: (name, connection id).
fn commands_since(client: &TestClient, mark: usize) -> Vec<(String, u32)> {
    client
        .commands
        .since(mark)
        .iter()
        .filter(|event| matches!(event, CommandEvent::Started(_)))
        .map(|event| (event.command_name().to_owned(), event.connection().id))
        .collect()
}

/// load-balancers.md "Behaviour With Cursors" (`cursors.json`, "pinned connections are
/// returned to the pool when the cursor is closed", with the "implicit resource cleanup
/// mechanism" of a drop): a cursor dropped on a host that cannot spawn does nothing
/// then and keeps its connection; the client's next operation sends killCursors on
/// that connection, checks it in, and only then checks a connection out for itself
/// (the same one: maxPoolSize=1). One check-out and one check-in for the cursor.
#[tokio::test]
async fn a_dropped_pinned_cursor_is_killed_on_its_connection_without_a_runtime() {
    let proxy = shared_server_proxy().await;
    let client = unspawning_client(&proxy, "cursor").await;
    let numbers = client
        .client
        .database("lb_pinning")
        .collection::<Document>("cursor");
    let (cmap_mark, command_mark) = (client.cmap.len(), client.commands.len());
    let options = anymongo::crud::FindOptions {
        batch_size: Some(2),
        ..Default::default()
    };
    let mut cursor = numbers.find(doc! {}).with_options(options).await.unwrap();
    assert!(futures::TryStreamExt::try_next(&mut cursor)
        .await
        .unwrap()
        .is_some());
    assert_ne!(cursor.id(), 0);
    drop(cursor);
    released_by_the_next_operation(&client, cmap_mark).await;
    let commands = commands_since(&client, command_mark);
    let names: Vec<(&str, u32)> = commands.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(names, [("find", 1), ("killCursors", 1), ("ping", 1)]);
}

/// load-balancers.md "Behaviour With Transactions" and transactions.md "When to
/// unpin" (6: the session ends, here by being dropped mid-transaction, on a host that
/// cannot spawn): the transaction's connection stays pinned until the client's next
/// operation aborts the transaction on it, then goes back to the pool — one check-out
/// and one check-in for the whole transaction.
#[tokio::test]
async fn a_dropped_session_aborts_its_transaction_on_the_pinned_connection_without_a_runtime() {
    let proxy = shared_server_proxy().await;
    let client = unspawning_client(&proxy, "transaction").await;
    let numbers = client
        .client
        .database("lb_pinning")
        .collection::<Document>("transaction");
    let (cmap_mark, command_mark) = (client.cmap.len(), client.commands.len());
    let mut session = client.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    for n in 10..12 {
        numbers
            .insert_one(doc! { "_id": n })
            .session(&session)
            .await
            .unwrap();
    }
    drop(session);
    released_by_the_next_operation(&client, cmap_mark).await;
    let commands = commands_since(&client, command_mark);
    let names: Vec<(&str, u32)> = commands.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(
        names,
        [
            ("insert", 1),
            ("insert", 1),
            ("abortTransaction", 1),
            ("ping", 1)
        ]
    );
    // Aborted: nothing of the transaction was written.
    assert_eq!(numbers.count_documents(doc! {}).await.unwrap(), 5);
}

/// load-balancers.md "Behaviour With Transactions" with an operation abandoned
/// mid-flight (its future dropped, here by a timeout, while the server holds its
/// reply with a `blockConnection` fail point): the pinned connection is closed with
/// it, and the transaction's next operation fails with a network error labelled
/// TransientTransactionError (the server aborts a transaction whose connection
/// closed) that releases the pin, so that the transaction can be aborted and a new
/// one run on a fresh connection.
#[tokio::test]
async fn an_abandoned_operation_in_a_pinned_transaction_gives_a_transient_error() {
    let proxy = shared_server_proxy().await;
    let client = unspawning_client(&proxy, "abandoned").await;
    let numbers = client
        .client
        .database("lb_pinning")
        .collection::<Document>("abandoned");
    let mut session = client.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    numbers
        .insert_one(doc! { "_id": 10 })
        .session(&session)
        .await
        .unwrap();
    let direct = Client::with_uri_str(&anymongo_tests::server::shared().uri())
        .await
        .unwrap();
    let admin = direct.database("admin");
    admin
        .run_command(doc! {
            "configureFailPoint": "failCommand", "mode": { "times": 1 },
            "data": { "failCommands": ["insert"], "blockConnection": true,
                      "blockTimeMS": 2000, "appName": "lb_abandoned" },
        })
        .await
        .unwrap();
    let mark = client.cmap.len();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        numbers.insert_one(doc! { "_id": 11 }).session(&session),
    )
    .await;
    assert!(abandoned.is_err(), "the insert was held: {abandoned:?}");
    assert_eq!(
        client.cmap_since(mark),
        ["CheckedIn(1)", "Closed(1, error)"],
        "the abandoned connection is closed"
    );
    let error = numbers
        .insert_one(doc! { "_id": 12 })
        .session(&session)
        .await
        .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::Io(_))
            && error.contains_label(anymongo::transactions::TRANSIENT_TRANSACTION_ERROR),
        "{error:?}"
    );
    session.abort_transaction().await.unwrap();
    session.start_transaction().await.unwrap();
    numbers
        .insert_one(doc! { "_id": 13 })
        .session(&session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    // A committed transaction keeps its connection (it may be committed again) until
    // the session ends; the pool has no other.
    session.end_session();
    let ids: Vec<Document> = futures::TryStreamExt::try_collect(
        numbers.find(doc! { "_id": { "$gte": 10 } }).await.unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(ids, [doc! { "_id": 13 }]);
    let _ = admin
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await;
}
