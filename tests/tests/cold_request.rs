//! A cold request in the fewest round trips (issue 24): SecantusDB with TLS and a
//! SCRAM-SHA-256 user behind the latency proxy, and a fresh native client finding one
//! document. Its first operation opens its connection at once — alongside the first
//! check in background mode, instead of the first scan in single-threaded mode — and
//! the hello of that connection's handshake makes the server known: TCP, TLS 1.3,
//! hello with speculative SCRAM, saslContinue, find — 5 round trips, where a client
//! that waits for a check before it opens the operation's connection takes 8. The
//! second request takes 1.
//!
//! Round trips are counted from the proxy's flight log (the depth of the chain of
//! waits that ends in the result, `anymongo_tests::latency`), not from times: the
//! count does not depend on how fast the machine is.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::event::command::CommandEvent;
use anymongo::{Client, ClientOptions};
use anymongo_tests::certs;
use anymongo_tests::harness::within;
use anymongo_tests::latency::{round_trips, FlightLog, LatencyProxy};
use anymongo_tests::server::TestServer;
use futures::TryStreamExt;

const BOUND: Duration = Duration::from_secs(90);
/// Each way. The count reads a client's flight sent after a reply arrived as waiting
/// for it, so the delay must stay well above what the client itself takes between two
/// flights on a busy machine (CI runs other tests alongside): a wasm client once took
/// 22 ms between TLS's Finished and the hello under 10 ms each way.
const ONE_WAY: Duration = Duration::from_millis(25);
const USER: &str = "cold";
const PASSWORD: &str = "cold-pw";

#[tokio::test]
async fn a_cold_request_takes_five_round_trips_and_a_warm_one_one() {
    within(BOUND, async {
        let dir = tempfile::tempdir().unwrap();
        let certs = certs::generate(dir.path()).unwrap();
        let server = TestServer::start(&certs.scram_server_options(USER, PASSWORD)).unwrap();
        let seed_uri =
            server
                .uri()
                .replacen("mongodb://", &format!("mongodb://{USER}:{PASSWORD}@"), 1);
        let seeded = anymongo::Client::with_uri_str(&seed_uri).await.unwrap();
        let items = seeded.database("cold").collection::<Document>("items");
        items
            .insert_one(doc! { "_id": 1, "text": "cold" })
            .await
            .unwrap();
        drop(seeded);

        let server_address = format!("{}:{}", server.host, server.port);
        for single_threaded in [false, true] {
            let mode = match single_threaded {
                true => "single-threaded",
                false => "background",
            };
            let proxy = LatencyProxy::start(&server_address, ONE_WAY).await.unwrap();
            // Polling: no round-trip-time connection runs alongside (it would not be
            // on the result's path, but it is traffic the count need not sort out).
            let uri = format!(
                "mongodb://{USER}:{PASSWORD}@{}/?tls=true&tlsCAFile={}&serverMonitoringMode=poll",
                proxy.address(),
                certs.ca_pem.display()
            );
            let mut runtime = anymongo_native::runtime();
            if single_threaded {
                runtime.spawner = None;
            }
            let from = proxy.elapsed();
            let client =
                Client::with_runtime(ClientOptions::parse_uri(&uri).unwrap(), runtime).unwrap();
            let items = client.database("cold").collection::<Document>("items");
            let found = items.find_one(doc! { "_id": 1 }).await.unwrap();
            assert!(found.is_some(), "{mode}: the document is found");
            let cold_to = proxy.elapsed();
            let found = items.find_one(doc! { "_id": 1 }).await.unwrap();
            assert!(found.is_some(), "{mode}: the document is found again");
            let warm_to = proxy.elapsed();

            let connections = proxy.connections();
            let log = FlightLog {
                connections: &connections,
                from,
                to: cold_to,
            };
            assert_eq!(
                round_trips(&connections, from, cold_to),
                5,
                "{mode}: the cold request's round trips; flights:\n{log}"
            );
            assert_eq!(
                round_trips(&connections, cold_to, warm_to),
                1,
                "{mode}: the warm request's round trips; flights:\n{log}"
            );
            // The operation's connection is the only one opened for it: in background
            // mode the monitor's opens too, in single-threaded mode nothing else.
            let expected = if single_threaded { 1 } else { 2 };
            assert_eq!(
                connections.len(),
                expected,
                "{mode}: connections opened; flights:\n{log}"
            );
            drop(client);
        }
    })
    .await;
}

/// A request that opens a cursor and drops it unfinished (its batch smaller than the
/// result) leaves its killCursors to the next request, on a host that cannot spawn
/// (single-threaded mode): the kill goes ahead of that request's command, in the same
/// write, and both replies come back in one flight — the next request still takes 1
/// round trip (it took 2 when the kill was sent and answered first). The kill is
/// monitored and really kills the server cursor (its reply lists it in
/// `cursorsKilled`). SecantusDB answers the pipelined pair in order.
#[tokio::test]
async fn an_abandoned_cursor_costs_the_next_request_no_round_trip() {
    within(BOUND, async {
        let server = anymongo_tests::server::shared();
        let collection = "abandoned_cursor";
        let (seeded, _) = anymongo_tests::harness::recording_client("appName=abandoned_seed");
        let items = seeded.database("cold").collection::<Document>(collection);
        items.drop().await.unwrap();
        let documents: Vec<Document> = (0..5).map(|n| doc! { "_id": n }).collect();
        items.insert_many(documents).await.unwrap();

        let proxy = LatencyProxy::start(&format!("{}:{}", server.host, server.port), ONE_WAY)
            .await
            .unwrap();
        let events = anymongo_tests::harness::CommandLog::default();
        let sink = events.clone();
        let uri = format!(
            "mongodb://{}/?directConnection=true&serverMonitoringMode=poll",
            proxy.address()
        );
        let mut options = ClientOptions::parse_uri(&uri).unwrap();
        options.command_event_handler = Some(anymongo::event::EventHandler::callback(
            move |event: CommandEvent| sink.lock().unwrap().push(event),
        ));
        let mut runtime = anymongo_native::runtime();
        runtime.spawner = None;
        let client = Client::with_runtime(options, runtime).unwrap();
        let items = client.database("cold").collection::<Document>(collection);
        items.find_one(doc! { "_id": 0 }).await.unwrap().unwrap();

        let warm_from = proxy.elapsed();
        items.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
        let abandon_from = proxy.elapsed();
        let mut cursor = items.find(doc! {}).batch_size(2).await.unwrap();
        assert!(cursor.try_next().await.unwrap().is_some());
        let id = cursor.id();
        assert_ne!(id, 0, "the cursor outlives its first batch");
        drop(cursor);
        let next_from = proxy.elapsed();
        items.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
        let next_to = proxy.elapsed();

        let connections = proxy.connections();
        let log = FlightLog {
            connections: &connections,
            from: warm_from,
            to: next_to,
        };
        assert_eq!(
            round_trips(&connections, warm_from, abandon_from),
            1,
            "the warm request's round trips; flights:\n{log}"
        );
        assert_eq!(
            round_trips(&connections, abandon_from, next_from),
            1,
            "the request that abandons its cursor; flights:\n{log}"
        );
        assert_eq!(
            round_trips(&connections, next_from, next_to),
            1,
            "the request after the abandoned cursor; flights:\n{log}"
        );
        let events = events.lock().unwrap();
        let kills: Vec<&CommandEvent> = events
            .iter()
            .filter(|event| event.command_name() == "killCursors")
            .collect();
        assert_eq!(
            kills.len(),
            2,
            "killCursors started and succeeded: {kills:?}"
        );
        let CommandEvent::Started(started) = kills[0] else {
            panic!("the kill starts first: {kills:?}");
        };
        assert_eq!(
            started.command.get_array("cursors").unwrap(),
            &vec![id.into()]
        );
        assert!(!started.command.contains_key("lsid"), "no session id");
        let CommandEvent::Succeeded(succeeded) = kills[1] else {
            panic!("the kill succeeds: {kills:?}");
        };
        assert_eq!(
            succeeded.reply.get_array("cursorsKilled").unwrap(),
            &vec![id.into()],
            "the server killed the cursor"
        );
        drop(events);
        drop(client);
    })
    .await;
}
