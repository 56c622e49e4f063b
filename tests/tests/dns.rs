//! DNS seedlist discovery through the real native resolver (hickory) against the test
//! DNS server on loopback: a server that never answers fails `mongodb+srv` with a
//! timeout error within the bound; answers too long for UDP come over TCP; records
//! changed while the server runs are seen at once (no caching). And `Client::connect`:
//! a `mongodb+srv` string whose SRV record names the SecantusDB test server runs a
//! ping, a silent DNS server fails it with a timeout within connectTimeoutMS, the SRV
//! and TXT look-ups are in flight together, and the synchronous constructors refuse
//! `mongodb+srv` with a message naming the way out.

use std::future::IntoFuture;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use anymongo::bson::doc;
use anymongo::client::ClientConfig;
use anymongo::options::ResolverConfig;
use anymongo::rt::Resolver;
use anymongo::{srv, Client, ClientOptions, ErrorKind};
use anymongo_native::TokioResolver;
use anymongo_tests::dns::{spec_records, DnsServer, Entry};
use anymongo_tests::{harness, server};

/// Every test here finishes well within this, or fails.
const TEST_BOUND: Duration = Duration::from_secs(10);

fn localhost() -> IpAddr {
    IpAddr::from([127, 0, 0, 1])
}

async fn bounded<F: std::future::IntoFuture>(future: F) -> F::Output {
    harness::within(TEST_BOUND, future).await
}

#[tokio::test]
async fn a_silent_dns_server_makes_resolution_fail_with_a_timeout_within_the_bound() {
    let server = DnsServer::start().unwrap();
    server.load(spec_records(localhost()));
    server.set_silent(true);
    let resolver = TokioResolver::with_nameserver(server.address());
    let runtime = anymongo_native::runtime();
    let bound = Duration::from_secs(1);
    let started = Instant::now();
    let error = bounded(srv::resolve_uri(
        "mongodb+srv://test1.test.build.10gen.cc/",
        &resolver,
        runtime.clock.as_ref(),
        bound,
    ))
    .await
    .unwrap_err();
    let elapsed = started.elapsed();
    match &*error.kind {
        ErrorKind::DnsResolve { message } => {
            assert!(
                message.contains(&format!("timed out after {bound:?}")),
                "{message}"
            );
            assert!(message.contains("test1.test.build.10gen.cc"), "{message}");
        }
        other => panic!("expected a DNS timeout, got {other:?}: {error}"),
    }
    assert!(elapsed >= bound, "gave up early: {elapsed:?}");
    assert!(elapsed < bound + Duration::from_secs(2), "took {elapsed:?}");
    assert!(server.queries() > 0, "the server was never asked");
    assert!(error.to_string().contains("timed out"), "{error}");
}

#[tokio::test]
async fn the_bound_comes_from_connect_timeout_ms() {
    let server = DnsServer::start().unwrap();
    server.set_silent(true);
    let resolver = TokioResolver::with_nameserver(server.address());
    let options = anymongo::ClientOptions::parse_uri(
        "mongodb+srv://test1.test.build.10gen.cc/?connectTimeoutMS=300",
    )
    .unwrap();
    let clock = anymongo_native::runtime().clock;
    let bound = srv::lookup_timeout(&options);
    assert_eq!(bound, Duration::from_millis(300));
    let started = Instant::now();
    let error = bounded(srv::resolve(&options, &resolver, clock.as_ref(), bound))
        .await
        .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::DnsResolve { message } if message.contains("timed out")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn srv_and_txt_records_resolve_through_hickory() {
    let server = DnsServer::start().unwrap();
    server.load(spec_records(localhost()));
    let resolver = TokioResolver::with_nameserver(server.address());
    let clock = anymongo_native::runtime().clock;
    let options = bounded(srv::resolve_uri(
        "mongodb+srv://test5.test.build.10gen.cc/",
        &resolver,
        clock.as_ref(),
        Duration::from_secs(5),
    ))
    .await
    .unwrap();
    let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, ["localhost.test.build.10gen.cc:27017"]);
    assert_eq!(options.repl_set_name.as_deref(), Some("repl0"));
    // One TXT record of several strings is joined.
    let txt = bounded(resolver.txt("test11.test.build.10gen.cc"))
        .await
        .unwrap();
    assert_eq!(txt, ["replicaSet=repl0"]);
    // Addresses come from the named server too.
    let ips = bounded(resolver.ip("localhost.test.build.10gen.cc"))
        .await
        .unwrap();
    assert_eq!(ips, [localhost()]);
    // No records, and no such name: empty answers, not errors.
    assert!(
        bounded(resolver.srv("_mongodb._tcp.test4.test.build.10gen.cc"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(bounded(resolver.txt("test1.test.build.10gen.cc"))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn answers_too_long_for_udp_come_over_tcp() {
    let server = DnsServer::start().unwrap();
    let name = "_mongodb._tcp.big.example.com";
    for i in 0..40 {
        server.add(Entry::srv(
            name,
            &format!("a-rather-long-host-name-number-{i:02}.shards.example.com"),
            27017,
        ));
    }
    let resolver = TokioResolver::with_nameserver(server.address());
    let records = bounded(resolver.srv(name)).await.unwrap();
    assert_eq!(records.len(), 40);
    assert!(server.tcp_queries() > 0, "no query came over TCP");
}

#[tokio::test]
async fn changed_records_are_seen_at_once() {
    let server = DnsServer::start().unwrap();
    let name = "_mongodb._tcp.poll.example.com";
    server.set_srv(name, &[("a.example.com", 27017)], 1);
    let resolver = TokioResolver::with_nameserver(server.address());
    let first = bounded(resolver.srv(name)).await.unwrap();
    assert_eq!(first[0].target, "a.example.com");
    assert_eq!(first[0].ttl_secs, 1);
    server.set_srv(
        name,
        &[("b.example.com", 27018), ("c.example.com", 27019)],
        1,
    );
    let second = bounded(resolver.srv(name)).await.unwrap();
    let targets: Vec<_> = second.iter().map(|r| (r.target.as_str(), r.port)).collect();
    assert_eq!(
        targets,
        [("b.example.com", 27018), ("c.example.com", 27019)]
    );
}

/// The SRV target of the connect tests: an A record of the test DNS server.
const LOCAL: &str = "localhost.test.build.10gen.cc";

/// A DNS server whose `test1.test.build.10gen.cc` SRV record names the shared
/// SecantusDB server, with a TXT record giving its replica set name.
fn dns_for_the_test_server() -> DnsServer {
    let port: u16 = server::shared()
        .uri()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("the test server's URI names a port");
    let dns = DnsServer::start().unwrap();
    dns.add(Entry::address(LOCAL, localhost()));
    dns.add(Entry::srv(
        "_mongodb._tcp.test1.test.build.10gen.cc",
        LOCAL,
        port,
    ));
    dns.add(Entry::txt(
        "test1.test.build.10gen.cc",
        &["replicaSet=secantus"],
    ));
    dns
}

/// The official crate's way to name the DNS servers: `ClientOptions::parse(uri)
/// .resolver_config(config)`; the built-in runtime's resolver asks them (the SRV
/// target is the test DNS server's, which the system's resolver does not know, so the
/// client is not asked to connect). Beside a runtime, refused.
#[tokio::test]
async fn resolver_config_names_the_name_servers_of_the_built_in_resolver() {
    let dns = dns_for_the_test_server();
    let uri = "mongodb+srv://test1.test.build.10gen.cc/?tls=false";
    let config = ResolverConfig::with_name_servers([dns.address()]);
    let options = bounded(
        ClientOptions::parse(uri)
            .resolver_config(config.clone())
            .into_future(),
    )
    .await
    .unwrap();
    assert_eq!(options.repl_set_name.as_deref(), Some("secantus"));
    let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
    assert_eq!(hosts, [format!("{LOCAL}:{}", server::shared().port)]);
    assert!(dns.queries() > 0, "the name server was never asked");

    let error = bounded(
        ClientOptions::parse(uri)
            .runtime(dns.runtime())
            .resolver_config(config)
            .into_future(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
}

/// `ClientOptions::parse(..).await` resolves a `mongodb+srv` string through the resolver
/// of the runtime it is given (the test's DNS server), and the client built with the
/// options, changed in code after parsing, reaches the server.
#[tokio::test]
async fn parse_resolves_a_mongodb_srv_string_through_the_given_resolver() {
    let dns = dns_for_the_test_server();
    // SRV turns TLS on by default; the test server speaks plain TCP.
    let uri = "mongodb+srv://test1.test.build.10gen.cc/?tls=false&appName=srv-connect";
    let mut options = bounded(
        ClientOptions::parse(uri)
            .runtime(dns.runtime())
            .into_future(),
    )
    .await
    .unwrap();
    // The TXT record's option applied; the options are the equivalent mongodb:// ones.
    assert_eq!(options.repl_set_name.as_deref(), Some("secantus"));
    assert!(!options.srv);
    assert_eq!(options.hosts.len(), 1, "{:?}", options.hosts);
    options.app_name = Some("srv-parsed".into());
    let client = Client::with_runtime(options, dns.runtime()).unwrap();
    assert_eq!(client.options().app_name.as_deref(), Some("srv-parsed"));
    let reply = bounded(client.database("admin").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");

    // The same with options built in code: resolved, then given to the client.
    let options = ClientOptions::parse_uri(uri).unwrap();
    let runtime = dns.runtime();
    let seeds = bounded(srv::resolve_seed_list(
        &options,
        runtime.resolver.as_ref(),
        runtime.clock.as_ref(),
        srv::lookup_timeout(&options),
    ))
    .await
    .unwrap();
    let config = ClientConfig {
        runtime: Some(runtime),
        ..ClientConfig::default()
    };
    let client = Client::with_config(seeds.into_options(), config).unwrap();
    bounded(client.database("admin").run_command(doc! { "ping": 1 }))
        .await
        .unwrap();
}

#[tokio::test]
async fn connect_with_a_silent_dns_server_fails_with_a_timeout_within_connect_timeout() {
    let dns = dns_for_the_test_server();
    dns.set_silent(true);
    let uri = "mongodb+srv://test1.test.build.10gen.cc/?tls=false&connectTimeoutMS=400";
    let started = Instant::now();
    let error = bounded(
        ClientOptions::parse(uri)
            .runtime(dns.runtime())
            .into_future(),
    )
    .await
    .unwrap_err();
    let elapsed = started.elapsed();
    match &*error.kind {
        ErrorKind::DnsResolve { message } => {
            assert!(message.contains("timed out after 400ms"), "{message}")
        }
        other => panic!("expected a DNS timeout, got {other:?}: {error}"),
    }
    assert!(
        elapsed >= Duration::from_millis(400),
        "gave up early: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
}

#[tokio::test]
async fn constructors_refuse_unresolved_mongodb_srv_and_name_parse() {
    let uri = "mongodb+srv://test1.test.build.10gen.cc/";
    let runtime = anymongo_native::runtime();
    let error = Client::with_options(ClientOptions::parse_uri(uri).unwrap()).unwrap_err();
    assert!(
        matches!(&*error.kind, ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("ClientOptions::parse(uri).await"),
        "{error}"
    );
    // Resolved options too: the SRV name that polling needs is gone from them.
    let dns = DnsServer::start().unwrap();
    dns.load(spec_records(localhost()));
    let resolver = TokioResolver::with_nameserver(dns.address());
    let resolved = bounded(srv::resolve_uri(
        uri,
        &resolver,
        runtime.clock.as_ref(),
        Duration::from_secs(5),
    ))
    .await
    .unwrap();
    let error = Client::with_runtime(resolved, runtime).unwrap_err();
    assert!(
        error.to_string().contains("SeedList::into_options"),
        "{error}"
    );
}

#[tokio::test]
async fn with_uri_str_of_a_mongodb_string_needs_no_dns() {
    let client = bounded(Client::with_uri_str(server::shared().uri()))
        .await
        .unwrap();
    bounded(
        client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .into_future(),
    )
    .await
    .unwrap();
}

#[test]
fn with_uri_str_and_parse_are_send() {
    fn send<T: Send>(_: T) {}
    send(Client::with_uri_str("mongodb://localhost"));
    send(ClientOptions::parse("mongodb://localhost").into_future());
}

/// `ClientOptions::parse` asks for the SRV and the TXT records at once (issue 24: one DNS
/// round trip, not two, before the first connection): against a server that reads
/// queries and answers none, both questions arrive while neither has an answer. Looked
/// up one after the other, the TXT question would wait for the SRV answer, and the
/// look-up would fail with its timeout first.
#[tokio::test]
async fn the_srv_and_txt_look_ups_are_in_flight_together() {
    let server = DnsServer::start().unwrap();
    server.load(spec_records(localhost()));
    server.set_silent(true);
    let connecting =
        ClientOptions::parse("mongodb+srv://test5.test.build.10gen.cc/?connectTimeoutMS=3000")
            .runtime(server.runtime())
            .into_future();
    let both_asked = server.asked_all(&[
        "_mongodb._tcp.test5.test.build.10gen.cc",
        "test5.test.build.10gen.cc",
    ]);
    bounded(async {
        tokio::select! {
            () = both_asked => {}
            connected = connecting => panic!(
                "the look-ups ended (SRV asked {} times, TXT {} times) before both were asked: {:?}",
                server.queries_for("_mongodb._tcp.test5.test.build.10gen.cc"),
                server.queries_for("test5.test.build.10gen.cc"),
                connected.map(|_| ()),
            ),
        }
    })
    .await;
}
