//! The Server Discovery and Monitoring spec's tests (see the spec's `tests/README.md`):
//! `discovery_and_monitoring/` (single, rs, sharded, errors, load-balanced; the
//! `unified/` folder is a suite of its own) and `sdam_monitoring/`.
//!
//! Each file is one test: a topology is opened with [`TopologyState::open`] from the
//! file's `uri`, then each phase
//!
//! - feeds its `responses` to [`TopologyState::apply`], through
//!   [`ServerDescription::from_hello`], or [`ServerDescription::from_error`] for the
//!   empty response `{}` (a network error of a check);
//! - feeds its `applicationErrors` to [`TopologyState::handle_application_error`];
//! - compares the outcome: in `discovery_and_monitoring`, the topology description
//!   (`topologyType`, `setName`, `logicalSessionTimeoutMinutes`, `maxSetVersion`,
//!   `maxElectionId`, `compatible`, and each server's `type`, `error` (a substring),
//!   `setName`, `setVersion`, `electionId`, `logicalSessionTimeoutMinutes`,
//!   `minWireVersion`, `maxWireVersion`, `topologyVersion` and pool `generation`); in
//!   `sdam_monitoring`, the events published since the previous phase (those of
//!   opening count in the first).
//!
//! A field the outcome leaves out is not checked; `null` means "not set".
//!
//! Pools are simulated by a generation number per server, which grows whenever the
//! pool would be cleared: when [`anymongo::sdam::ErrorResponse::clear_pool`] says so, and when a
//! check fails with a network error (Server Monitoring spec). Application network
//! errors and timeouts "beforeHandshakeCompletes" carry the `SystemOverloadedError`
//! label, as the connection pool adds it to errors of connection establishment (CMAP
//! "backpressure-enabled").

use anymongo::event::sdam::{ServerClosedEvent, ServerOpeningEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anymongo::bson::oid::ObjectId;
use anymongo::bson::{Bson, Document};
use anymongo::error::ErrorKind;
use anymongo::event::sdam::SdamEvent;
use anymongo::sdam::{
    ApplicationError, ApplicationErrorKind, ErrorPhase, ServerDescription, TopologyDescription,
    TopologyState, TopologyVersion,
};
use anymongo::{ClientOptions, ServerAddress};
use serde_json::{Map, Value};

use super::{run_json_files, SuiteOutcome};

/// Runs the suite in `dir` (the corpus's `discovery_and_monitoring` folder), all but
/// its `unified/` folder.
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_files(
        dir,
        |file| !file.starts_with("unified/"),
        |_| None,
        |_, test| run_test(test, Expect::Description),
    )
}

/// Runs the suite in `dir` (the corpus's `sdam_monitoring` folder).
pub fn run_monitoring(dir: &Path) -> SuiteOutcome {
    run_json_files(
        dir,
        |_| true,
        |_| None,
        |_, test| run_test(test, Expect::Events),
    )
}

/// What a phase's outcome describes.
#[derive(Clone, Copy)]
enum Expect {
    /// The topology description.
    Description,
    /// The events published during the phase.
    Events,
}

/// The client under test: the state machine, the simulated pools, the events so far.
struct Client {
    topology: TopologyState,
    generations: BTreeMap<ServerAddress, u32>,
    events: Vec<SdamEvent>,
}

fn run_test(test: &Map<String, Value>, expect: Expect) -> Result<(), String> {
    let uri = test
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the test has no 'uri'")?;
    let options = ClientOptions::parse_uri(uri).map_err(|e| format!("{uri}: {e}"))?;
    let (topology, events) = TopologyState::open(&options, ObjectId::new());
    let mut client = Client {
        topology,
        generations: BTreeMap::new(),
        events,
    };
    let phases = test
        .get("phases")
        .and_then(Value::as_array)
        .ok_or("the test has no 'phases'")?;
    for (i, phase) in phases.iter().enumerate() {
        let name = phase
            .get("description")
            .and_then(Value::as_str)
            .map_or_else(|| format!("phase {}", i + 1), |d| format!("phase {:?}", d));
        run_phase(&mut client, phase, expect).map_err(|why| format!("{name}: {why}"))?;
    }
    Ok(())
}

fn run_phase(client: &mut Client, phase: &Value, expect: Expect) -> Result<(), String> {
    for response in array(phase, "responses") {
        let (host, reply) = match response.as_array().map(Vec::as_slice) {
            Some([Value::String(host), reply]) => (host, reply),
            _ => return Err(format!("malformed response {response}")),
        };
        let address = parse_address(host)?;
        let reply = to_document(reply)?;
        let network_error = reply.is_empty();
        let description = if network_error {
            let error = std::io::Error::other("network error during check");
            let error = anymongo::error::Error::new(ErrorKind::Io(std::sync::Arc::new(error)));
            ServerDescription::from_error(address.clone(), error, None, None)
        } else {
            ServerDescription::from_hello(address.clone(), reply, None, None)
        };
        let update = client.topology.apply(description);
        client.events.extend(update.events);
        if network_error && client.topology.description().server(&address).is_some() {
            *client.generations.entry(address).or_default() += 1;
        }
    }
    for error in array(phase, "applicationErrors") {
        application_error(client, error)?;
    }
    let outcome = phase.get("outcome").ok_or("the phase has no 'outcome'")?;
    match expect {
        Expect::Description => check_description(client, outcome),
        Expect::Events => {
            let events = std::mem::take(&mut client.events);
            check_events(outcome, &events)
        }
    }
}

/// Simulates an application error as the README describes it.
fn application_error(client: &mut Client, error: &Value) -> Result<(), String> {
    let field = |name: &str| error.get(name).ok_or(format!("{name} missing in {error}"));
    let address = parse_address(field("address")?.as_str().ok_or("bad address")?)?;
    let current = client.generations.get(&address).copied().unwrap_or(0);
    let generation = match error.get("generation") {
        Some(generation) => Some(
            generation
                .as_u64()
                .and_then(|g| u32::try_from(g).ok())
                .ok_or("bad generation")?,
        ),
        None => None,
    };
    let max_wire_version = field("maxWireVersion")?
        .as_i64()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or("bad maxWireVersion")?;
    let phase = match field("when")?.as_str() {
        Some("beforeHandshakeCompletes") => ErrorPhase::BeforeHandshakeCompletes,
        Some("afterHandshakeCompletes") => ErrorPhase::AfterHandshakeCompletes,
        other => return Err(format!("unknown 'when' {other:?}")),
    };
    let before_handshake = phase == ErrorPhase::BeforeHandshakeCompletes;
    let error = match field("type")?.as_str() {
        Some("command") => {
            let reply = to_document(field("response")?)?;
            match ApplicationError::from_reply(&reply, address, generation, max_wire_version, phase)
            {
                Some(error) => error,
                // A successful reply (its writeErrors are not looked at).
                None => return Ok(()),
            }
        }
        Some(kind @ ("network" | "timeout")) => ApplicationError {
            address,
            generation,
            max_wire_version,
            phase,
            kind: if kind == "network" {
                ApplicationErrorKind::Network {
                    message: "mock network error".to_owned(),
                }
            } else {
                ApplicationErrorKind::Timeout {
                    message: "mock network timeout".to_owned(),
                }
            },
            system_overloaded: before_handshake,
        },
        other => return Err(format!("unknown error type {other:?}")),
    };
    let response = client.topology.handle_application_error(&error, current);
    if response.clear_pool {
        *client.generations.entry(error.address.clone()).or_default() += 1;
    }
    client.events.extend(response.update.events);
    Ok(())
}

/// Compares the topology description with a non-monitoring outcome.
fn check_description(client: &Client, outcome: &Value) -> Result<(), String> {
    let description = client.topology.description();
    let topology_type = outcome.get("topologyType").and_then(Value::as_str);
    if topology_type != Some(description.topology_type.name()) {
        return Err(format!(
            "topologyType: expected {topology_type:?}, got {description}"
        ));
    }
    check_field(
        outcome,
        "setName",
        &description.set_name.clone().map(Bson::String),
    )?;
    check_field(
        outcome,
        "logicalSessionTimeoutMinutes",
        &description.logical_session_timeout_minutes.map(Bson::Int64),
    )?;
    check_field(
        outcome,
        "maxSetVersion",
        &description.max_set_version.map(Bson::Int32),
    )?;
    check_field(
        outcome,
        "maxElectionId",
        &description.max_election_id.map(Bson::ObjectId),
    )?;
    check_field(
        outcome,
        "compatible",
        &Some(Bson::Boolean(description.compatible())),
    )?;

    let expected = outcome
        .get("servers")
        .and_then(Value::as_object)
        .ok_or("the outcome has no 'servers'")?;
    let expected_addresses = expected
        .keys()
        .map(|host| parse_address(host))
        .collect::<Result<BTreeSet<_>, _>>()?;
    let actual_addresses: BTreeSet<_> = description.servers.keys().cloned().collect();
    if expected_addresses != actual_addresses {
        return Err(format!(
            "servers: expected {}, got {description}",
            expected.keys().cloned().collect::<Vec<_>>().join(", "),
        ));
    }
    for (host, expected) in expected {
        let address = parse_address(host)?;
        let server = &description.servers[&address];
        check_server(client, server, expected).map_err(|why| format!("server {host}: {why}"))?;
    }
    Ok(())
}

fn check_server(
    client: &Client,
    server: &ServerDescription,
    expected: &Value,
) -> Result<(), String> {
    let server_type = expected.get("type").and_then(Value::as_str);
    if server_type != Some(server.server_type.name()) {
        return Err(format!(
            "type: expected {server_type:?}, got {} ({:?})",
            server.server_type, server.error
        ));
    }
    if let Some(error) = expected.get("error").and_then(Value::as_str) {
        if !server
            .error
            .as_ref()
            .is_some_and(|actual| actual.to_string().contains(error))
        {
            return Err(format!("error: expected {error:?}, got {:?}", server.error));
        }
    }
    check_field(
        expected,
        "setName",
        &server.set_name.clone().map(Bson::String),
    )?;
    check_field(expected, "setVersion", &server.set_version.map(Bson::Int32))?;
    check_field(
        expected,
        "electionId",
        &server.election_id.map(Bson::ObjectId),
    )?;
    check_field(
        expected,
        "logicalSessionTimeoutMinutes",
        &server.logical_session_timeout_minutes.map(Bson::Int64),
    )?;
    check_field(
        expected,
        "minWireVersion",
        &Some(Bson::Int32(server.min_wire_version)),
    )
    .or_else(|why| null_wire_version(expected, "minWireVersion", server.min_wire_version, why))?;
    check_field(
        expected,
        "maxWireVersion",
        &Some(Bson::Int32(server.max_wire_version)),
    )
    .or_else(|why| null_wire_version(expected, "maxWireVersion", server.max_wire_version, why))?;
    if let Some(version) = expected.get("topologyVersion") {
        let expected_version = match version {
            Value::Null => None,
            version => Some(
                TopologyVersion::from_document(&to_document(version)?)
                    .ok_or(format!("bad topologyVersion {version}"))?,
            ),
        };
        if expected_version != server.topology_version {
            return Err(format!(
                "topologyVersion: expected {expected_version:?}, got {:?}",
                server.topology_version
            ));
        }
    }
    if let Some(pool) = expected.get("pool") {
        let expected = pool.get("generation").and_then(Value::as_u64);
        let actual = client
            .generations
            .get(&server.address)
            .copied()
            .unwrap_or(0);
        if expected != Some(u64::from(actual)) {
            return Err(format!(
                "pool generation: expected {expected:?}, got {actual}"
            ));
        }
    }
    Ok(())
}

/// The wire versions default to 0: an outcome's `null` means that default.
fn null_wire_version(expected: &Value, name: &str, actual: i32, why: String) -> Result<(), String> {
    match expected.get(name) {
        Some(Value::Null) if actual == 0 => Ok(()),
        _ => Err(why),
    }
}

/// Compares `object[name]`, if present, with `actual` (`null` expects `None`).
fn check_field(object: &Value, name: &str, actual: &Option<Bson>) -> Result<(), String> {
    let Some(expected) = object.get(name) else {
        return Ok(());
    };
    let expected_bson = match expected {
        Value::Null => None,
        value => Some(to_bson(value)?),
    };
    let same = match (&expected_bson, actual) {
        (None, None) => true,
        (Some(expected), Some(actual)) => same_bson(expected, actual),
        _ => false,
    };
    if same {
        Ok(())
    } else {
        Err(format!("{name}: expected {expected}, got {actual:?}"))
    }
}

/// Equality with numbers compared by value, whatever their BSON type.
fn same_bson(a: &Bson, b: &Bson) -> bool {
    let number = |value: &Bson| match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        _ => None,
    };
    match (number(a), number(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// Compares the events published during a phase with a monitoring outcome.
fn check_events(outcome: &Value, actual: &[SdamEvent]) -> Result<(), String> {
    let expected = outcome
        .get("events")
        .and_then(Value::as_array)
        .ok_or("the outcome has no 'events'")?;
    let names = || {
        actual
            .iter()
            .map(SdamEvent::name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if expected.len() != actual.len() {
        return Err(format!(
            "expected {} events, got {}: {}",
            expected.len(),
            actual.len(),
            names()
        ));
    }
    for (i, (expected, actual)) in expected.iter().zip(actual).enumerate() {
        check_event(expected, actual)
            .map_err(|why| format!("event {}: {why} (events: {})", i + 1, names()))?;
    }
    Ok(())
}

fn check_event(expected: &Value, actual: &SdamEvent) -> Result<(), String> {
    let (kind, fields) = match expected.as_object().map(|o| o.iter().next()) {
        Some(Some((kind, fields))) => (kind.as_str(), fields),
        _ => return Err(format!("malformed event {expected}")),
    };
    let address = |actual: &ServerAddress| -> Result<(), String> {
        let expected = fields
            .get("address")
            .and_then(Value::as_str)
            .map(parse_address);
        match expected {
            Some(Ok(expected)) if &expected == actual => Ok(()),
            _ => Err(format!(
                "address: expected {}, got {actual}",
                fields["address"]
            )),
        }
    };
    match (kind, actual) {
        ("topology_opening_event", SdamEvent::TopologyOpening(_))
        | ("topology_closed_event", SdamEvent::TopologyClosed(_)) => Ok(()),
        (
            "server_opening_event",
            SdamEvent::ServerOpening(ServerOpeningEvent {
                address: actual, ..
            }),
        )
        | (
            "server_closed_event",
            SdamEvent::ServerClosed(ServerClosedEvent {
                address: actual, ..
            }),
        ) => address(actual),
        ("server_description_changed_event", SdamEvent::ServerDescriptionChanged(changed)) => {
            address(&changed.address)?;
            check_event_server(
                &fields["previousDescription"],
                changed.previous_description.description(),
            )
            .map_err(|why| format!("previousDescription: {why}"))?;
            check_event_server(
                &fields["newDescription"],
                changed.new_description.description(),
            )
            .map_err(|why| format!("newDescription: {why}"))
        }
        ("topology_description_changed_event", SdamEvent::TopologyDescriptionChanged(changed)) => {
            check_event_topology(
                &fields["previousDescription"],
                &changed.previous_description,
            )
            .map_err(|why| format!("previousDescription: {why}"))?;
            check_event_topology(&fields["newDescription"], &changed.new_description)
                .map_err(|why| format!("newDescription: {why}"))
        }
        _ => Err(format!("expected {kind}, got {}", actual.name())),
    }
}

/// Compares a topology description of an event: its type and its servers.
fn check_event_topology(expected: &Value, actual: &TopologyDescription) -> Result<(), String> {
    let topology_type = expected.get("topologyType").and_then(Value::as_str);
    if topology_type != Some(actual.topology_type.name()) {
        return Err(format!(
            "topologyType: expected {topology_type:?}, got {actual}"
        ));
    }
    let servers = expected
        .get("servers")
        .and_then(Value::as_array)
        .ok_or("no 'servers'")?;
    if servers.len() != actual.servers.len() {
        return Err(format!("servers: expected {expected}, got {actual}"));
    }
    for server in servers {
        let address = parse_address(server.get("address").and_then(Value::as_str).unwrap_or(""))?;
        let actual = actual
            .servers
            .get(&address)
            .ok_or(format!("servers: expected {expected}, got {actual}"))?;
        check_event_server(server, actual)?;
    }
    Ok(())
}

/// Compares a server description of an event: address, type, hosts, passives and
/// arbiters.
fn check_event_server(expected: &Value, actual: &ServerDescription) -> Result<(), String> {
    let address = parse_address(
        expected
            .get("address")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )?;
    let server_type = expected.get("type").and_then(Value::as_str);
    if address != actual.address || server_type != Some(actual.server_type.name()) {
        return Err(format!(
            "expected {expected}, got {} ({})",
            actual.address, actual.server_type
        ));
    }
    for (name, hosts) in [
        ("hosts", &actual.hosts),
        ("passives", &actual.passives),
        ("arbiters", &actual.arbiters),
    ] {
        let expected: BTreeSet<&str> = array(expected, name)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let actual: BTreeSet<&str> = hosts.iter().map(String::as_str).collect();
        if expected != actual {
            return Err(format!("{name}: expected {expected:?}, got {actual:?}"));
        }
    }
    Ok(())
}

/// `value[name]` as an array; empty if missing.
fn array<'a>(value: &'a Value, name: &str) -> &'a [Value] {
    value
        .get(name)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn parse_address(host: &str) -> Result<ServerAddress, String> {
    ServerAddress::parse(host).map_err(|e| format!("bad address {host:?}: {e}"))
}

fn to_document(value: &Value) -> Result<Document, String> {
    match to_bson(value)? {
        Bson::Document(document) => Ok(document),
        other => Err(format!("expected a document, got {other}")),
    }
}

/// Converts the tests' JSON to BSON: the extended JSON of `{"$oid": …}` and
/// `{"$numberLong": …}`, integers as int32 when they fit.
fn to_bson(value: &Value) -> Result<Bson, String> {
    Ok(match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i32::try_from(i).map_or(Bson::Int64(i), Bson::Int32),
            None => Bson::Double(n.as_f64().ok_or(format!("bad number {n}"))?),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(to_bson).collect::<Result<_, _>>()?),
        Value::Object(object) => match object.iter().next() {
            Some((key, Value::String(hex))) if key == "$oid" && object.len() == 1 => {
                Bson::ObjectId(
                    ObjectId::parse_str(hex).map_err(|e| format!("bad $oid {hex}: {e}"))?,
                )
            }
            Some((key, Value::String(number))) if key == "$numberLong" && object.len() == 1 => {
                Bson::Int64(
                    number
                        .parse()
                        .map_err(|e| format!("bad $numberLong {number}: {e}"))?,
                )
            }
            _ => Bson::Document(
                object
                    .iter()
                    .map(|(key, value)| Ok((key.clone(), to_bson(value)?)))
                    .collect::<Result<Document, String>>()?,
            ),
        },
    })
}
