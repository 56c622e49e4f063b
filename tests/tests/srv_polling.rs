//! SRV polling (Polling SRV Records for mongos Discovery spec), live: the prose tests of
//! the spec's `tests/README.md` against the test DNS server on loopback, whose records
//! change during each test, and mock mongos servers on free ports of 127.0.0.1 that
//! the SRV records name as `localhost.test.build.10gen.cc` (an A record of the same
//! DNS server, which the test runtime also connects through: [`DnsServer::runtime`]).
//!
//! The rescan interval's 60-second floor is lowered to [`INTERVAL`] with the test hook
//! [`SeedList::with_min_rescan_interval`], and the records' TTL is 0, so a rescan is due
//! every [`INTERVAL`] (every `heartbeatFrequencyMS` = 500 ms after a failed one). Every
//! wait is bounded by [`BOUND`]; waits for a change wait on SDAM events or on the DNS
//! server's query counter. Only the tests that prove that nothing happens (no polling)
//! let a fixed multiple of the interval pass.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::sdam::SdamEvent;
use anymongo::event::sdam::{ServerClosedEvent, ServerOpeningEvent};
use anymongo::event::EventHandler;
use anymongo::sdam::TopologyType;
use anymongo::srv::{self, SeedList};
use anymongo::{Client, ClientOptions};
use anymongo_tests::dns::{DnsServer, Entry};
use anymongo_tests::harness;
use anymongo_tests::load_balancer::MockLoadBalancer;
use anymongo_tests::mock::{mongos_hello, wait_for_activity, MockServer};
use tokio::sync::watch;

/// The SRV target of every record, as in the spec's README.
const LOCAL: &str = "localhost.test.build.10gen.cc";
/// The SRV name of `mongodb+srv://test1.test.build.10gen.cc`.
const TEST1: &str = "_mongodb._tcp.test1.test.build.10gen.cc";
/// The SRV name of `mongodb+srv://test3.test.build.10gen.cc`.
const TEST3: &str = "_mongodb._tcp.test3.test.build.10gen.cc";
/// The options every test's connection string has: plain TCP to the mocks, the
/// shortest heartbeat, a short DNS look-up bound (connectTimeoutMS).
const OPTIONS: &str = "tls=false&heartbeatFrequencyMS=500&connectTimeoutMS=300";
/// The lowered floor of the rescan interval.
const INTERVAL: Duration = Duration::from_millis(100);
/// The bound of every wait for something that must happen.
const BOUND: Duration = Duration::from_secs(10);

/// The test DNS server and mock servers answering `hello` with `hello` (a mongos, or a
/// replica set member).
struct Deployment {
    dns: DnsServer,
    servers: Vec<MockServer>,
}

impl Deployment {
    /// `count` mock mongos servers.
    async fn mongos(count: usize) -> Deployment {
        Deployment::start(count, |_| mongos_hello()).await
    }

    /// `count` mock servers whose hello (given the server's port) is `hello`.
    async fn start(count: usize, hello: impl Fn(u16) -> Document) -> Deployment {
        let dns = DnsServer::start().unwrap();
        dns.add(Entry::address(LOCAL, [127, 0, 0, 1].into()));
        let mut servers = Vec::new();
        for _ in 0..count {
            // The reply names the port, known once bound: the script reads it from a
            // cell filled in then.
            let reply = Arc::new(Mutex::new(Document::new()));
            let script_reply = reply.clone();
            let server = MockServer::start(move |command| {
                let name = command.keys().next().map(String::as_str).unwrap_or("");
                match name {
                    "hello" | "isMaster" | "ismaster" => lock(&script_reply).clone(),
                    _ => doc! { "ok": 1.0 },
                }
            })
            .await;
            *lock(&reply) = hello(port_of(server.address()));
            servers.push(server);
        }
        Deployment { dns, servers }
    }

    fn port(&self, i: usize) -> u16 {
        port_of(self.servers[i].address())
    }

    /// `localhost.test.build.10gen.cc:<port of server i>`.
    fn host(&self, i: usize) -> String {
        format!("{LOCAL}:{}", self.port(i))
    }

    /// Replaces the SRV records of `name` with records for the servers `indices`, TTL 0.
    fn set_srv(&self, name: &str, indices: &[usize]) {
        let targets: Vec<(&str, u16)> = indices.iter().map(|&i| (LOCAL, self.port(i))).collect();
        self.dns.set_srv(name, &targets, 0);
    }

    /// A client of `mongodb+srv://{host}/?{OPTIONS}&{extra}` whose seed list this DNS
    /// server resolved, polling every [`INTERVAL`].
    async fn client(&self, host: &str, extra: &str, monitoring: MonitoringThreads) -> Watched {
        let uri = format!("mongodb+srv://{host}/?{OPTIONS}&{extra}");
        let options = ClientOptions::parse_uri(&uri).unwrap();
        let runtime = self.dns.runtime();
        let seeds: SeedList = bounded(srv::resolve_seed_list(
            &options,
            runtime.resolver.as_ref(),
            runtime.clock.as_ref(),
            srv::lookup_timeout(&options),
        ))
        .await
        .unwrap();
        let seeds = seeds.with_min_rescan_interval(INTERVAL);
        let (activity, _) = watch::channel(0u64);
        let activity = Arc::new(activity);
        let events = Arc::new(Mutex::new(Vec::new()));
        let (signal, log) = (activity.clone(), events.clone());
        let config = ClientConfig {
            monitoring,
            runtime: Some(runtime),
            ..ClientConfig::default()
        };
        let mut options = seeds.into_options();
        options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
            lock(&log).push(event);
            signal.send_modify(|count| *count += 1);
        }));
        let client = Client::with_config(options, config).unwrap();
        Watched {
            client,
            activity,
            events,
        }
    }
}

/// A client and the SDAM events it published.
struct Watched {
    client: Client,
    activity: Arc<watch::Sender<u64>>,
    events: Arc<Mutex<Vec<SdamEvent>>>,
}

impl Watched {
    /// The servers of the topology, as sorted strings.
    fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self
            .client
            .topology_description()
            .servers
            .keys()
            .map(ToString::to_string)
            .collect();
        hosts.sort();
        hosts
    }

    fn topology_type(&self) -> TopologyType {
        self.client.topology_description().topology_type
    }

    /// Waits (on SDAM events) until `condition` holds; panics after [`BOUND`].
    async fn wait_until(&self, what: &str, condition: impl Fn(&Watched) -> bool) {
        let held = wait_for_activity(&self.activity, BOUND, || condition(self)).await;
        assert!(
            held,
            "{what}: not within {BOUND:?}; the topology is {}",
            self.client.topology_description()
        );
    }

    /// Waits until the topology is Sharded with exactly `hosts` (in any order), all of
    /// them known mongos servers.
    async fn wait_for_mongos(&self, hosts: &[String]) {
        let mut expected = hosts.to_vec();
        expected.sort();
        self.wait_until(&format!("the mongos servers {expected:?}"), |watched| {
            let description = watched.client.topology_description();
            watched.hosts() == expected
                && description.topology_type == TopologyType::Sharded
                && description
                    .servers
                    .values()
                    .all(|server| server.server_type == anymongo::sdam::ServerType::Mongos)
        })
        .await;
    }

    /// The addresses of the ServerOpening and ServerClosed events published so far.
    fn opened_and_closed(&self) -> (Vec<String>, Vec<String>) {
        let events = lock(&self.events);
        let mut opened = Vec::new();
        let mut closed = Vec::new();
        for event in events.iter() {
            match event {
                SdamEvent::ServerOpening(ServerOpeningEvent { address, .. }) => {
                    opened.push(address.to_string())
                }
                SdamEvent::ServerClosed(ServerClosedEvent { address, .. }) => {
                    closed.push(address.to_string())
                }
                _ => {}
            }
        }
        (opened, closed)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn port_of(address: &str) -> u16 {
    address.rsplit(':').next().unwrap().parse().unwrap()
}

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    harness::within(BOUND, future).await
}

/// Waits (checking every 10 ms) until the DNS server has received at least `count`
/// queries for `name`; panics after [`BOUND`].
async fn wait_for_queries(dns: &DnsServer, name: &str, count: usize) {
    let reached = tokio::time::timeout(BOUND, async {
        while dns.queries_for(name) < count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "{name}: {} queries, expected at least {count} within {BOUND:?}",
        dns.queries_for(name)
    );
}

/// Runs a "Changing DNS records with test1" prose test: records for the servers
/// `initial`, then `changed`; the topology must end with exactly `expected`, and the
/// servers in both lists must be left alone (neither closed nor opened again).
async fn rescan_changes(initial: &[usize], changed: &[usize], extra: &str, expected: &[usize]) {
    let deployment = Deployment::mongos(4).await;
    deployment.set_srv(TEST1, initial);
    let watched = deployment
        .client(
            "test1.test.build.10gen.cc",
            extra,
            MonitoringThreads::Background,
        )
        .await;
    let hosts = |indices: &[usize]| -> Vec<String> {
        indices.iter().map(|&i| deployment.host(i)).collect()
    };
    watched.wait_for_mongos(&hosts(initial)).await;
    deployment.set_srv(TEST1, changed);
    watched.wait_for_mongos(&hosts(expected)).await;
    let (opened, closed) = watched.opened_and_closed();
    for kept in initial.iter().filter(|i| expected.contains(i)) {
        let host = deployment.host(*kept);
        assert_eq!(opened.iter().filter(|h| **h == host).count(), 1, "{host}");
        assert!(!closed.contains(&host), "{host} was closed");
    }
}

#[tokio::test]
async fn prose_1_a_new_record_adds_a_server() {
    rescan_changes(&[0, 1], &[0, 1, 2], "", &[0, 1, 2]).await;
}

#[tokio::test]
async fn prose_2_a_removed_record_removes_its_server() {
    rescan_changes(&[0, 1], &[0], "", &[0]).await;
}

#[tokio::test]
async fn prose_3_a_replaced_record_replaces_its_server() {
    rescan_changes(&[0, 1], &[0, 2], "", &[0, 2]).await;
}

#[tokio::test]
async fn prose_4_both_records_replaced_by_one() {
    rescan_changes(&[0, 1], &[2], "", &[2]).await;
}

#[tokio::test]
async fn prose_5_both_records_replaced_by_two() {
    rescan_changes(&[0, 1], &[2, 3], "", &[2, 3]).await;
}

#[tokio::test]
async fn prose_10_srv_max_hosts_zero_takes_every_record() {
    rescan_changes(&[0, 1], &[0, 2, 3], "srvMaxHosts=0", &[0, 2, 3]).await;
}

#[tokio::test]
async fn prose_11_srv_max_hosts_at_least_the_records_takes_every_record() {
    rescan_changes(&[0, 1], &[2, 3], "srvMaxHosts=2", &[2, 3]).await;
}

#[tokio::test]
async fn prose_12_srv_max_hosts_below_the_records_keeps_old_hosts_and_picks_new_ones() {
    let deployment = Deployment::mongos(4).await;
    deployment.set_srv(TEST1, &[0, 1]);
    let watched = deployment
        .client(
            "test1.test.build.10gen.cc",
            "srvMaxHosts=2",
            MonitoringThreads::Background,
        )
        .await;
    watched
        .wait_for_mongos(&[deployment.host(0), deployment.host(1)])
        .await;
    deployment.set_srv(TEST1, &[0, 2, 3]);
    let old = deployment.host(0);
    let new = [deployment.host(2), deployment.host(3)];
    watched
        .wait_until("host 1 replaced by 2 or 3", |watched| {
            let hosts = watched.hosts();
            hosts.len() == 2 && hosts.contains(&old) && new.iter().any(|h| hosts.contains(h))
        })
        .await;
    // The next rescans find the same records and change nothing.
    let queries = deployment.dns.queries_for(TEST1);
    let before = watched.hosts();
    wait_for_queries(&deployment.dns, TEST1, queries + 2).await;
    assert_eq!(watched.hosts(), before);
}

#[tokio::test]
async fn prose_13_a_custom_service_name_is_polled() {
    let deployment = Deployment::mongos(4).await;
    let name = "_customname._tcp.test22.test.build.10gen.cc";
    deployment.set_srv(name, &[0, 1]);
    let watched = deployment
        .client(
            "test22.test.build.10gen.cc",
            "srvServiceName=customname",
            MonitoringThreads::Background,
        )
        .await;
    watched
        .wait_for_mongos(&[deployment.host(0), deployment.host(1)])
        .await;
    deployment.set_srv(name, &[2, 3]);
    watched
        .wait_for_mongos(&[deployment.host(2), deployment.host(3)])
        .await;
}

/// Runs an "Error scenarios with test1" prose test: after `fail` changes the DNS
/// server, two rescans pass and the servers stay as they were; once `recover` fixes it
/// with a record for server 2 instead of 1, polling goes on and finds it.
async fn rescan_errors(fail: impl Fn(&DnsServer), recover: impl Fn(&Deployment)) {
    let deployment = Deployment::mongos(3).await;
    deployment.set_srv(TEST1, &[0, 1]);
    let watched = deployment
        .client(
            "test1.test.build.10gen.cc",
            "",
            MonitoringThreads::Background,
        )
        .await;
    let initial = [deployment.host(0), deployment.host(1)];
    watched.wait_for_mongos(&initial).await;
    let queries = deployment.dns.queries_for(TEST1);
    fail(&deployment.dns);
    // One query per rescan (the look-up's 300 ms bound is shorter than the resolver's
    // own retry timeout): the second rescan's query means the first one's outcome
    // was applied.
    wait_for_queries(&deployment.dns, TEST1, queries + 2).await;
    let mut expected = initial.to_vec();
    expected.sort();
    assert_eq!(watched.hosts(), expected);
    assert_eq!(watched.topology_type(), TopologyType::Sharded);
    recover(&deployment);
    watched
        .wait_for_mongos(&[deployment.host(0), deployment.host(2)])
        .await;
}

#[tokio::test]
async fn prose_6_a_lookup_timeout_keeps_the_servers() {
    rescan_errors(
        |dns| dns.set_silent(true),
        |deployment| {
            deployment.set_srv(TEST1, &[0, 2]);
            deployment.dns.set_silent(false);
        },
    )
    .await;
}

#[tokio::test]
async fn prose_7_a_lookup_failure_keeps_the_servers() {
    // The domain no longer exists: NXDOMAIN.
    rescan_errors(
        |dns| dns.remove(TEST1, None),
        |deployment| deployment.set_srv(TEST1, &[0, 2]),
    )
    .await;
}

#[tokio::test]
async fn prose_8_no_srv_records_keeps_the_servers() {
    // The name still exists (a TXT record), with no SRV records.
    rescan_errors(
        |dns| {
            dns.remove(TEST1, Some("SRV"));
            dns.add(Entry::txt(TEST1, &["not an SRV record"]));
        },
        |deployment| deployment.set_srv(TEST1, &[0, 2]),
    )
    .await;
}

#[tokio::test]
async fn prose_9_no_polling_for_a_load_balanced_cluster() {
    let balancer = MockLoadBalancer::start().await;
    let deployment = Deployment::mongos(0).await;
    let dns = &deployment.dns;
    dns.set_srv(TEST3, &[(LOCAL, port_of(balancer.address()))], 0);
    let watched = deployment
        .client(
            "test3.test.build.10gen.cc",
            "loadBalanced=true",
            MonitoringThreads::Background,
        )
        .await;
    bounded(
        watched
            .client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .into_future(),
    )
    .await
    .unwrap();
    let queries = dns.queries_for(TEST3);
    dns.add(Entry::srv(TEST3, LOCAL, 27018).with_ttl(0));
    // Nothing to wait for: let several intervals pass.
    tokio::time::sleep(INTERVAL * 5).await;
    assert_eq!(
        dns.queries_for(TEST3),
        queries,
        "the SRV records were polled"
    );
    assert_eq!(
        watched.hosts(),
        [format!("{LOCAL}:{}", port_of(balancer.address()))]
    );
    assert_eq!(watched.topology_type(), TopologyType::LoadBalanced);
}

/// The hello of the primary of the one-member replica set "rs" at `port`.
fn primary_hello(port: u16) -> Document {
    let mut reply = mongos_hello();
    reply.remove("msg");
    reply.insert("setName", "rs");
    reply.insert("hosts", vec![format!("{LOCAL}:{port}")]);
    reply
}

#[tokio::test]
async fn no_polling_for_a_replica_set() {
    let deployment = Deployment::start(1, primary_hello).await;
    deployment.set_srv(TEST1, &[0]);
    let dns = &deployment.dns;

    // replicaSet given: ReplicaSetNoPrimary from the start, never polled.
    let named = deployment
        .client(
            "test1.test.build.10gen.cc",
            "replicaSet=rs",
            MonitoringThreads::Background,
        )
        .await;
    named
        .wait_until("a primary", |watched| {
            watched.topology_type() == TopologyType::ReplicaSetWithPrimary
        })
        .await;
    let queries = dns.queries_for(TEST1);
    dns.add(Entry::srv(TEST1, LOCAL, 27019).with_ttl(0));
    tokio::time::sleep(INTERVAL * 5).await;
    assert_eq!(
        dns.queries_for(TEST1),
        queries,
        "the SRV records were polled"
    );
    assert_eq!(named.hosts(), [deployment.host(0)]);
    drop(named);

    // Unknown at first, a replica set once the member answers: polling stops then. A
    // rescan that started just before may still send its query.
    deployment.set_srv(TEST1, &[0]);
    let discovered = deployment
        .client(
            "test1.test.build.10gen.cc",
            "",
            MonitoringThreads::Background,
        )
        .await;
    discovered
        .wait_until("a primary", |watched| {
            watched.topology_type() == TopologyType::ReplicaSetWithPrimary
        })
        .await;
    let queries = dns.queries_for(TEST1);
    dns.add(Entry::srv(TEST1, LOCAL, 27019).with_ttl(0));
    tokio::time::sleep(INTERVAL * 5).await;
    assert!(
        dns.queries_for(TEST1) <= queries + 1,
        "the SRV records were polled: {} queries after {queries}",
        dns.queries_for(TEST1)
    );
    assert_eq!(discovered.hosts(), [deployment.host(0)]);
}

#[tokio::test]
async fn a_dropped_client_stops_polling() {
    let deployment = Deployment::mongos(1).await;
    deployment.set_srv(TEST1, &[0]);
    let watched = deployment
        .client(
            "test1.test.build.10gen.cc",
            "",
            MonitoringThreads::Background,
        )
        .await;
    let dns = &deployment.dns;
    wait_for_queries(dns, TEST1, dns.queries_for(TEST1) + 2).await;
    drop(watched);
    // A rescan under way when the client was dropped may still send its query.
    let queries = dns.queries_for(TEST1);
    tokio::time::sleep(INTERVAL * 5).await;
    assert!(
        dns.queries_for(TEST1) <= queries + 1,
        "still polling: {} queries after {queries}",
        dns.queries_for(TEST1)
    );
}

#[tokio::test]
async fn single_threaded_mode_rescans_before_selection_once_the_interval_passed() {
    let deployment = Deployment::mongos(3).await;
    deployment.set_srv(TEST1, &[0, 1]);
    let watched = deployment
        .client(
            "test1.test.build.10gen.cc",
            "",
            MonitoringThreads::SingleThreaded,
        )
        .await;
    let ping = || async {
        bounded(
            watched
                .client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .into_future(),
        )
        .await
        .unwrap();
    };
    ping().await;
    assert_eq!(watched.topology_type(), TopologyType::Sharded);
    let dns = &deployment.dns;
    let queries = dns.queries_for(TEST1);
    deployment.set_srv(TEST1, &[0, 2]);
    // No background work: the records are not looked up between operations.
    tokio::time::sleep(INTERVAL * 5).await;
    assert_eq!(dns.queries_for(TEST1), queries, "polled in the background");
    let mut expected = vec![deployment.host(0), deployment.host(1)];
    expected.sort();
    assert_eq!(watched.hosts(), expected);
    // The interval has passed: the next selection rescans first, and its scan checks
    // the new server.
    ping().await;
    assert_eq!(dns.queries_for(TEST1), queries + 1);
    let mut expected = vec![deployment.host(0), deployment.host(2)];
    expected.sort();
    assert_eq!(watched.hosts(), expected);
    let description = watched.client.topology_description();
    assert!(
        description
            .servers
            .values()
            .all(|server| server.server_type == anymongo::sdam::ServerType::Mongos),
        "{description}"
    );
}
