//! A cold request against an Atlas-shaped deployment (issue 44), natively:
//! `anymongo_tests::atlas_fixture`'s `mongodb+srv://` name, three TLS members fronting
//! SecantusDB with a SCRAM-SHA-256 user, 100 ms each way on the members' links and on
//! DNS's. The fixture is first shown to be what it claims (the SRV name resolves to
//! three hosts and the TXT options, the members form a replica set with a primary, TLS
//! is required, a wrong password is refused); then a fresh client per request counts
//! the round trips, DNS included, from parsing the connection string to the first
//! result of a primary read, a write and a `nearest` read, in background and in
//! single-threaded mode.
//!
//! The counts asserted are today's, so that the work that brings them down (to 1 DNS
//! round trip and 5 more, the goal) lowers them here and proves it.

use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::options::{ReadPreference, SelectionCriteria, Tls};
use anymongo::{Client, ClientOptions, TopologyType};
use anymongo_tests::atlas_fixture::{
    member_name, AtlasFixture, PASSWORD, SET_NAME, SRV_NAME, USER,
};
use anymongo_tests::harness::within;
use anymongo_tests::latency::{round_trips, FlightLog};

/// The whole test's bound: the fixture's start, and every request.
const BOUND: Duration = Duration::from_secs(50);
/// Each way on every link (see tests/cold_request.rs on why not less). Not 25 ms as
/// there: the monitors' second check (asked for by the operation's server selection
/// while their first was under way, so due minHeartbeatFrequencyMS, 500 ms, after it
/// started) must end well before a background request does, whatever the load, or its
/// reply, delivered last, would be counted as the result. With 25 ms and 9 round trips
/// the two end within milliseconds of each other; with 100 ms the check ends about
/// 900 ms before.
const ONE_WAY: Duration = Duration::from_millis(100);

/// The options of `uri` resolved through the fixture's DNS, and a client of them
/// (single-threaded or not).
async fn client(fixture: &AtlasFixture, uri: &str, single_threaded: bool) -> Client {
    let mut runtime = fixture.runtime();
    if single_threaded {
        runtime.spawner = None;
    }
    let options = ClientOptions::parse(uri)
        .runtime(runtime.clone())
        .await
        .unwrap();
    Client::with_runtime(options, runtime).unwrap()
}

#[tokio::test]
async fn the_fixture_is_atlas_shaped() {
    within(BOUND, async {
        let fixture = AtlasFixture::start(ONE_WAY, ONE_WAY).await.unwrap();
        let options = ClientOptions::parse(fixture.uri())
            .runtime(fixture.runtime())
            .await
            .unwrap();
        let hosts: Vec<String> = options.hosts.iter().map(|host| host.to_string()).collect();
        let expected: Vec<String> = fixture
            .member_addresses()
            .iter()
            .enumerate()
            .map(|(i, address)| {
                format!("{}:{}", member_name(i), address.rsplit(':').next().unwrap())
            })
            .collect();
        let mut sorted = hosts.clone();
        sorted.sort();
        assert_eq!(sorted, expected, "the SRV records' three hosts");
        assert!(
            fixture.dns_queries() >= 2,
            "SRV and TXT were asked of the fixture's DNS relay"
        );
        assert_eq!(options.repl_set_name.as_deref(), Some(SET_NAME));
        let credential = options.credential.clone().unwrap();
        assert_eq!(
            credential.source.as_deref(),
            Some("admin"),
            "TXT's authSource"
        );
        assert!(
            matches!(options.tls, Some(Tls::Enabled(_))),
            "TLS is on by default for mongodb+srv"
        );

        // The members form the set, the data behind them is real.
        let client = Client::with_runtime(options, fixture.runtime()).unwrap();
        let items = client.database("atlas").collection::<Document>("items");
        items.insert_one(doc! { "_id": "shape" }).await.unwrap();
        let nearest = SelectionCriteria::ReadPreference(ReadPreference::Nearest { options: None });
        let found = items
            .find_one(doc! { "_id": "shape" })
            .selection_criteria(nearest)
            .await
            .unwrap();
        assert!(found.is_some());
        let topology = client.topology_description();
        assert_eq!(
            topology.topology_type,
            TopologyType::ReplicaSetWithPrimary,
            "{topology:?}"
        );
        assert_eq!(topology.servers.len(), 3, "{topology:?}");
        drop(client);

        // Plain TCP is refused: the members speak TLS only.
        let plain = format!(
            "mongodb+srv://{USER}:{PASSWORD}@{SRV_NAME}/?tls=false&serverSelectionTimeoutMS=1500"
        );
        let plain = client_of(&fixture, &plain).await;
        let error = plain
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap_err();
        assert!(error.to_string().contains("erver selection"), "{error}");

        // A wrong password is refused.
        let wrong = fixture
            .uri()
            .replacen(&format!(":{PASSWORD}@"), ":wrong-pw@", 1);
        let wrong = client_of(&fixture, &format!("{wrong}&serverSelectionTimeoutMS=5000")).await;
        let error = wrong
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .unwrap_err();
        assert!(
            matches!(&*error.kind, anymongo::ErrorKind::Authentication { .. }),
            "{error}"
        );
    })
    .await;
}

async fn client_of(fixture: &AtlasFixture, uri: &str) -> Client {
    client(fixture, uri, false).await
}

/// What a cold request does: a primary read, a write, or a `nearest` read.
#[derive(Debug, Clone, Copy)]
enum Operation {
    PrimaryRead,
    Write,
    NearestRead,
}

#[tokio::test]
async fn todays_cold_requests_on_the_atlas_shaped_fixture() {
    within(BOUND, async {
        let fixture = AtlasFixture::start(ONE_WAY, ONE_WAY).await.unwrap();
        let seeded = client(&fixture, &fixture.uri(), false).await;
        seeded
            .database("cold")
            .collection::<Document>("items")
            .insert_one(doc! { "_id": 1, "text": "cold" })
            .await
            .unwrap();
        drop(seeded);

        // Today's counts, DNS included, per operation: (background, single-threaded).
        // Both 6: SRV and TXT at once (1), whose SRV answer carries the members'
        // addresses as glue, so that no member's name is asked (the client's address
        // book keeps them; without glue, see `without_glue_…` below); then, the first
        // selection connecting to every seed at once (cluster::first_contact), TCP,
        // TLS, hello with speculative SCRAM, saslContinue, the command on the member
        // whose hello made it suit the operation (5). Before issue 44, 13 and 23: each
        // seed's name asked (A then AAAA) and asked again by the operation's
        // connection, and the operation waited for the monitors' checks (background) or
        // a scan of the seeds one after the other (single-threaded).
        let expected = [
            (Operation::PrimaryRead, (6, 6)),
            (Operation::Write, (6, 6)),
            (Operation::NearestRead, (6, 6)),
        ];
        for (operation, (background, single)) in expected {
            for (single_threaded, expected) in [(false, background), (true, single)] {
                let mode = match single_threaded {
                    true => "single-threaded",
                    false => "background",
                };
                let from = fixture.elapsed();
                let client = client(&fixture, &fixture.uri(), single_threaded).await;
                let items = client.database("cold").collection::<Document>("items");
                match operation {
                    Operation::PrimaryRead => {
                        let found = items.find_one(doc! { "_id": 1 }).await.unwrap();
                        assert!(found.is_some(), "{operation:?}, {mode}");
                    }
                    Operation::Write => {
                        items.insert_one(doc! { "text": "written" }).await.unwrap();
                    }
                    Operation::NearestRead => {
                        let nearest = SelectionCriteria::ReadPreference(ReadPreference::Nearest {
                            options: None,
                        });
                        let found = items
                            .find_one(doc! { "_id": 1 })
                            .selection_criteria(nearest)
                            .await
                            .unwrap();
                        assert!(found.is_some(), "{operation:?}, {mode}");
                    }
                }
                let to = fixture.elapsed();
                drop(client);
                let connections = fixture.connections();
                let counted = round_trips(&connections, from, to);
                let log = FlightLog {
                    connections: &connections,
                    from,
                    to,
                };
                assert_eq!(
                    counted, expected,
                    "{operation:?}, {mode}: the cold request's round trips; flights (DNS \
                     queries are the connections of one answer):\n{log}"
                );
            }
        }
    })
    .await;
}

/// Without glue in the SRV answer the members' names are asked, A and AAAA at once,
/// once each: exactly one round trip more than with glue, and no name asked twice
/// (the operation's connection reuses the address its server's monitor looked up).
#[tokio::test]
async fn without_glue_the_members_names_cost_one_round_trip() {
    within(BOUND, async {
        let fixture = AtlasFixture::start(ONE_WAY, ONE_WAY).await.unwrap();
        let mut counts = Vec::new();
        for glue in [true, false] {
            fixture.set_glue(glue);
            let queries = fixture.dns_queries();
            let from = fixture.elapsed();
            let client = client(&fixture, &fixture.uri(), false).await;
            client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .await
                .unwrap();
            let to = fixture.elapsed();
            drop(client);
            let connections = fixture.connections();
            let log = FlightLog {
                connections: &connections,
                from,
                to,
            };
            let log = log.to_string();
            counts.push((round_trips(&connections, from, to), log.clone()));
            // SRV and TXT; without glue A and AAAA of each of the three members too.
            let asked = fixture.dns_queries() - queries;
            assert_eq!(asked, if glue { 2 } else { 8 }, "glue: {glue}\n{log}");
        }
        let (with_glue, log) = &counts[0];
        let (without_glue, log_without) = &counts[1];
        assert_eq!(
            *without_glue,
            with_glue + 1,
            "with glue:\n{log}\nwithout:\n{log_without}"
        );
    })
    .await;
}
