//! Server discovery and monitoring against a real SecantusDB server: discovery with
//! and without directConnection, the streaming protocol seen in heartbeat events, and
//! a server killed mid-run — in background and single-threaded monitoring.

use std::time::Duration;

use anymongo::bson::doc;
use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::sdam::SdamEvent;
use anymongo::event::sdam::{
    ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent, ServerHeartbeatSucceededEvent,
};
use anymongo::event::EventHandler;
use anymongo::sdam::{ServerType, TopologyType};
use anymongo::{Client, ClientOptions, ErrorKind};
use anymongo_tests::counting::counting;
use anymongo_tests::harness::within;
use anymongo_tests::server::{self, ServerOptions, TestServer};
use tokio::sync::mpsc;

/// Every wait of these tests ends after this long at most.
const WAIT: Duration = Duration::from_secs(20);

/// A client whose SDAM events arrive on the returned channel.
fn client_with_events(
    uri: &str,
    monitoring: MonitoringThreads,
) -> (Client, mpsc::UnboundedReceiver<SdamEvent>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let config = ClientConfig {
        monitoring,
        ..ClientConfig::default()
    };
    let mut options = ClientOptions::parse_uri(uri).expect("valid URI");
    options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
        let _ = sender.send(event);
    }));
    let client = Client::with_config(options, config).expect("valid options");
    (client, receiver)
}

/// Waits (at most [`WAIT`]) for an event matching `wanted`; returns it.
async fn wait_for(
    events: &mut mpsc::UnboundedReceiver<SdamEvent>,
    what: &str,
    wanted: impl Fn(&SdamEvent) -> bool,
) -> SdamEvent {
    let found = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.recv().await {
            if wanted(&event) {
                return Some(event);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(event)) => event,
        Ok(None) => panic!("the event stream ended before {what}"),
        Err(_) => panic!("no {what} within {WAIT:?}"),
    }
}

async fn ping(client: &Client) -> anymongo::Result<()> {
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .map(drop)
}

#[tokio::test]
async fn direct_connection_makes_a_single_topology() {
    let uri = format!("{}?directConnection=true", server::shared().uri());
    let client = anymongo::Client::with_uri_str(&uri).await.unwrap();
    ping(&client).await.unwrap();
    let topology = client.topology_description();
    assert_eq!(topology.topology_type, TopologyType::Single);
    let servers: Vec<_> = topology.servers.values().collect();
    assert_eq!(servers.len(), 1);
    // SecantusDB presents itself as the primary of a one-member replica set.
    assert_eq!(servers[0].server_type, ServerType::RsPrimary);
}

#[tokio::test]
async fn discovery_finds_the_replica_set_from_its_seed() {
    for monitoring in [
        MonitoringThreads::Background,
        MonitoringThreads::SingleThreaded,
    ] {
        let (client, _events) = client_with_events(&server::shared().uri(), monitoring);
        ping(&client).await.unwrap();
        let topology = client.topology_description();
        assert_eq!(
            topology.topology_type,
            TopologyType::ReplicaSetWithPrimary,
            "{monitoring:?}: {topology}"
        );
        assert_eq!(topology.set_name.as_deref(), Some("secantus"));
        assert_eq!(topology.logical_session_timeout_minutes, Some(30));
    }
}

#[tokio::test]
async fn the_streaming_protocol_is_used_and_polling_can_be_forced() {
    let uri = format!("{}?heartbeatFrequencyMS=500", server::shared().uri());
    let (client, mut events) = client_with_events(&uri, MonitoringThreads::Background);
    ping(&client).await.unwrap();
    wait_for(&mut events, "awaited heartbeat", |event| {
        matches!(
            event,
            SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                awaited: true,
                ..
            })
        )
    })
    .await;

    let uri = format!(
        "{}?heartbeatFrequencyMS=500&serverMonitoringMode=poll",
        server::shared().uri()
    );
    let (client, mut events) = client_with_events(&uri, MonitoringThreads::Background);
    ping(&client).await.unwrap();
    // Three polled heartbeats, none awaited.
    for _ in 0..3 {
        let event = wait_for(&mut events, "heartbeat", |event| {
            matches!(event, SdamEvent::ServerHeartbeatSucceeded(_))
        })
        .await;
        assert!(
            matches!(
                event,
                SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                    awaited: false,
                    ..
                })
            ),
            "{event:?}"
        );
    }
}

fn is_heartbeat(event: &SdamEvent) -> bool {
    matches!(
        event,
        SdamEvent::ServerHeartbeatStarted(_)
            | SdamEvent::ServerHeartbeatSucceeded(_)
            | SdamEvent::ServerHeartbeatFailed(_)
    )
}

/// Heartbeats name their monitoring connection (SDAM logging, "driverConnectionId",
/// "serverConnectionId"): the monitor numbers its connections from 1; the server's id
/// is known once a connection's handshake is done, and a failed connection's
/// successor takes the next number.
#[tokio::test]
async fn heartbeats_carry_the_ids_of_their_monitoring_connection() {
    let mut server = TestServer::start(&ServerOptions::default()).unwrap();
    let uri = format!("{}?heartbeatFrequencyMS=500", server.uri());
    let (_client, mut events) = client_with_events(&uri, MonitoringThreads::Background);

    let started = wait_for(&mut events, "the first heartbeat", is_heartbeat).await;
    assert!(
        matches!(
            started,
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                driver_connection_id: 1,
                server_connection_id: None,
                ..
            })
        ),
        "{started:?}"
    );
    let succeeded = wait_for(&mut events, "its outcome", is_heartbeat).await;
    let SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
        driver_connection_id: 1,
        server_connection_id: Some(server_id),
        ..
    }) = succeeded
    else {
        panic!("{succeeded:?}");
    };
    // The streaming check that follows runs on the same connection.
    let started = wait_for(&mut events, "the awaited heartbeat", is_heartbeat).await;
    assert!(
        matches!(
            started,
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                driver_connection_id: 1,
                server_connection_id: Some(id),
                awaited: true,
                ..
            }) if id == server_id
        ),
        "{started:?}"
    );

    server.kill();
    // Awaited checks may still succeed before the kill; the first failure is
    // connection 1's.
    let failed = wait_for(&mut events, "the failed heartbeat", |event| {
        matches!(event, SdamEvent::ServerHeartbeatFailed(_))
    })
    .await;
    assert!(
        matches!(
            failed,
            SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                driver_connection_id: 1,
                server_connection_id: Some(id),
                ..
            }) if id == server_id
        ),
        "{failed:?}"
    );
    // The server was known: it is checked again at once, on a new connection.
    let retried = wait_for(&mut events, "the retry", is_heartbeat).await;
    assert!(
        matches!(
            retried,
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                driver_connection_id: 2,
                server_connection_id: None,
                ..
            })
        ),
        "{retried:?}"
    );
}

/// An operation's network error cancels the monitor's streaming check (SDAM,
/// "Drivers cancel in-progress monitor checks"); the cancelled heartbeat still ends with
/// a failed event (SDAM monitoring: every started heartbeat is followed by a succeeded or
/// a failed one), and the next check comes on a new monitoring connection.
#[tokio::test]
async fn a_check_cancelled_by_an_operations_network_error_ends_with_a_failed_heartbeat() {
    let server = TestServer::start(&ServerOptions::default()).unwrap();
    let uri = format!(
        "{}?heartbeatFrequencyMS=5000&appName=cancelled_check&retryReads=false",
        server.uri()
    );
    let (client, mut events) = client_with_events(&uri, MonitoringThreads::Background);
    wait_for(&mut events, "a streaming heartbeat", |event| {
        matches!(
            event,
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent { awaited: true, .. })
        )
    })
    .await;
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": 1 },
        "data": { "failCommands": ["ping"], "closeConnection": true, "appName": "cancelled_check" },
    };
    client
        .database("admin")
        .run_command(fail_point)
        .await
        .unwrap();
    let error = ping(&client).await.unwrap_err();
    assert!(error.is_network_error(), "{error}");

    // From the streaming heartbeat in flight to the next check: the cancelled one ends.
    let ended = wait_for(
        &mut events,
        "the end of the cancelled heartbeat",
        is_heartbeat,
    )
    .await;
    assert!(
        matches!(
            &ended,
            SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent { driver_connection_id: 1, failure, awaited: true, .. })
                if failure.to_string().contains("cancelled")
        ),
        "{ended:?}"
    );
    // The streaming check would wait heartbeatFrequencyMS; the cancelled one ended at
    // once, and the operation's server selection asks for the next check.
    ping(&client).await.unwrap();
    let next = wait_for(&mut events, "the next check", is_heartbeat).await;
    assert!(
        matches!(
            next,
            SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                driver_connection_id: 2,
                awaited: false,
                ..
            })
        ),
        "{next:?}"
    );
}

#[tokio::test]
async fn a_killed_server_turns_unknown_and_the_driver_recovers_when_it_is_back() {
    let mut server = TestServer::start(&ServerOptions::default()).unwrap();
    let uri = format!(
        "{}?heartbeatFrequencyMS=500&serverSelectionTimeoutMS=15000",
        server.uri()
    );
    let (client, mut events) = client_with_events(&uri, MonitoringThreads::Background);
    ping(&client).await.unwrap();
    server.kill();
    wait_for(&mut events, "the server turning Unknown", |event| {
        matches!(event, SdamEvent::ServerDescriptionChanged(changed)
            if changed.new_description.server_type() == ServerType::Unknown)
    })
    .await;
    server.restart().unwrap();
    // The operation waits in server selection until the monitor sees the server again.
    ping(&client).await.unwrap();
    let topology = client.topology_description();
    assert_eq!(topology.topology_type, TopologyType::ReplicaSetWithPrimary);
}

#[tokio::test]
async fn single_threaded_monitoring_recovers_after_a_restart_too() {
    let mut server = TestServer::start(&ServerOptions::default()).unwrap();
    // serverSelectionTryOnce=false: selection scans again every
    // minHeartbeatFrequencyMS until the timeout instead of failing after one scan.
    let uri = format!(
        "{}?serverSelectionTimeoutMS=15000&serverSelectionTryOnce=false",
        server.uri()
    );
    let (client, mut events) = client_with_events(&uri, MonitoringThreads::SingleThreaded);
    ping(&client).await.unwrap();
    server.kill();
    // The pooled connection fails: the error marks the server Unknown.
    let error = ping(&client).await.unwrap_err();
    assert!(matches!(&*error.kind, ErrorKind::Io(_)), "{error}");
    wait_for(&mut events, "the server turning Unknown", |event| {
        matches!(event, SdamEvent::ServerDescriptionChanged(changed)
            if changed.new_description.server_type() == ServerType::Unknown)
    })
    .await;
    server.restart().unwrap();
    // The next selection rescans (the topology is stale) until it finds the server.
    ping(&client).await.unwrap();
}

/// `close()` ends every monitor — streaming (with its RTT monitor), polling, and the
/// single-threaded scans' connection — and returns once their sockets are closed,
/// as the official drivers' `close()` does: a polling monitor between two checks
/// does not hold its socket until its next heartbeat (30 s here).
#[tokio::test]
async fn close_returns_with_every_monitoring_socket_closed() {
    let server = server::shared();
    for (mode, monitoring) in [
        ("stream", MonitoringThreads::Background),
        ("poll", MonitoringThreads::Background),
        ("auto", MonitoringThreads::SingleThreaded),
    ] {
        let uri = format!(
            "{}?serverMonitoringMode={mode}&heartbeatFrequencyMS=30000",
            server.uri()
        );
        let (runtime, connections) = counting(anymongo_native::runtime());
        let config = ClientConfig {
            monitoring,
            runtime: Some(runtime),
            ..ClientConfig::default()
        };
        let client = Client::with_config(ClientOptions::parse_uri(&uri).unwrap(), config).unwrap();
        within(WAIT, ping(&client)).await.unwrap();
        // In background mode, wait for the monitor's own connection (the ping's may
        // have been the first contact's), and in streaming mode for the RTT monitor's.
        let monitors = match (monitoring, mode) {
            (MonitoringThreads::SingleThreaded, _) => 0,
            (_, "stream") => 2,
            _ => 1,
        };
        within(WAIT, async {
            while connections.opened() < 1 + monitors {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        within(WAIT, client.shutdown()).await;
        assert_eq!(
            connections.open(),
            0,
            "{mode}, {monitoring:?}: sockets still open after close() of {} opened",
            connections.opened()
        );
    }
}
