//! The Server Selection spec's tests (`server_selection/`, see the spec's
//! `tests/README.md`). Each JSON file is one test, run against [`anymongo::selection`]:
//!
//! - `server_selection/<TopologyType>/{read,write}/*.json`: a topology description, an
//!   operation, a read preference and `deprioritized_servers`; the servers of
//!   [`suitable_servers`] must be the test's `suitable_servers`, and those of
//!   [`candidates`] (localThresholdMS 15) its `in_latency_window`, both as sets.
//!   `error: true` means selection must fail. The Max Staleness tests share this
//!   format, with `heartbeatFrequencyMS` (see [`super::max_staleness`]).
//! - `rtt/*.json`: [`RoundTripTime`] resumed from `avg_rtt_ms` (`"NULL"`: no samples)
//!   must average to `new_avg_rtt` after the sample `new_rtt_ms`.
//! - `in_window/*.json`: `iterations` selections with mode nearest, each by
//!   [`candidates`] and [`choose`] with the operation counts of
//!   `mocked_topology_state`; each server's share of the selections must be within
//!   `outcome.tolerance` of its expected frequency (exactly, for 0 and 1). The random
//!   draws come from a seeded generator, so the outcome is the same on every run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anymongo::options::{ReadPreference, ReadPreferenceMode, ReadPreferenceOptions, TagSet};
use anymongo::rt::Instant;
use anymongo::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
use anymongo::selection::{candidates, choose, suitable_servers, Criteria, RoundTripTime};
use anymongo::ServerAddress;
use serde_json::Value;

use super::{run_json_files, JsonTest, SuiteOutcome};

/// localThresholdMS's default, which the tests assume.
const LOCAL_THRESHOLD: Duration = Duration::from_millis(15);

/// heartbeatFrequencyMS's default with background monitoring, for tests that do not
/// give one.
const DEFAULT_HEARTBEAT_FREQUENCY: Duration = Duration::from_secs(10);

/// Every topology type, to read the tests' names.
const TOPOLOGY_TYPES: [TopologyType; 6] = [
    TopologyType::Unknown,
    TopologyType::Single,
    TopologyType::ReplicaSetNoPrimary,
    TopologyType::ReplicaSetWithPrimary,
    TopologyType::Sharded,
    TopologyType::LoadBalanced,
];

/// Every server type, to read the tests' names.
const SERVER_TYPES: [ServerType; 10] = [
    ServerType::Unknown,
    ServerType::Standalone,
    ServerType::Mongos,
    ServerType::PossiblePrimary,
    ServerType::RsPrimary,
    ServerType::RsSecondary,
    ServerType::RsArbiter,
    ServerType::RsOther,
    ServerType::RsGhost,
    ServerType::LoadBalancer,
];

/// Runs the suite in `dir` (the corpus's `server_selection` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_files(
        dir,
        |_| true,
        |_| None,
        |file, test| {
            if file.starts_with("rtt/") {
                run_rtt_test(test)
            } else if file.starts_with("in_window/") {
                run_in_window_test(test)
            } else {
                run_selection_test(test)
            }
        },
    )
}

/// Runs one selection test (Server Selection or Max Staleness format).
pub(super) fn run_selection_test(test: &JsonTest) -> Result<(), String> {
    let heartbeat_frequency = match test.get("heartbeatFrequencyMS") {
        None => DEFAULT_HEARTBEAT_FREQUENCY,
        Some(value) => Duration::from_millis(
            value
                .as_u64()
                .ok_or_else(|| format!("bad heartbeatFrequencyMS {value}"))?,
        ),
    };
    let topology = topology(entry(test, "topology_description")?, heartbeat_frequency)?;
    let read_preference = match test.get("read_preference") {
        Some(value) => read_preference(value)?,
        None => Ok(ReadPreference::Primary),
    };
    let read_preference = match read_preference {
        Ok(read_preference) => read_preference,
        // Mode primary with tag sets or maxStalenessSeconds cannot be made: the
        // selection fails before it starts.
        Err(_) if test.get("error").and_then(Value::as_bool) == Some(true) => return Ok(()),
        Err(error) => return Err(format!("bad read preference: {error}")),
    };
    let criteria = match test.get("operation").and_then(Value::as_str) {
        None | Some("read") => Criteria::Read(&read_preference),
        Some("write") => Criteria::Write,
        Some(other) => return Err(format!("unknown operation {other:?}")),
    };
    let deprioritized = match test.get("deprioritized_servers") {
        None => Vec::new(),
        Some(servers) => array(servers, "deprioritized_servers")?
            .iter()
            .map(|server| address(field(server, "address")?))
            .collect::<Result<_, _>>()?,
    };
    let suitable = suitable_servers(&topology, &criteria, &deprioritized);
    let in_window = candidates(&topology, &criteria, LOCAL_THRESHOLD, &deprioritized);
    if test.get("error").and_then(Value::as_bool) == Some(true) {
        return match (suitable, in_window) {
            (Err(_), Err(_)) => Ok(()),
            (suitable, in_window) => Err(format!(
                "expected an error, got suitable {:?} and in window {:?}",
                suitable.map(|s| names(&s)),
                in_window.map(|s| names(&s))
            )),
        };
    }
    let suitable = suitable.map_err(|e| format!("suitable_servers failed: {e}"))?;
    let in_window = in_window.map_err(|e| format!("candidates failed: {e}"))?;
    check_set("suitable_servers", test, &suitable)?;
    check_set("in_latency_window", test, &in_window)
}

/// Checks that `actual` holds exactly the servers of the test's `key` list.
fn check_set(key: &str, test: &JsonTest, actual: &[&ServerDescription]) -> Result<(), String> {
    let mut expected = array(entry(test, key)?, key)?
        .iter()
        .map(|server| Ok(address(field(server, "address")?)?.to_string()))
        .collect::<Result<Vec<_>, String>>()?;
    expected.sort();
    let actual = names(actual);
    if actual == expected {
        Ok(())
    } else {
        Err(format!("{key}: expected {expected:?}, got {actual:?}"))
    }
}

/// The servers' addresses, sorted.
fn names(servers: &[&ServerDescription]) -> Vec<String> {
    let mut names: Vec<String> = servers.iter().map(|s| s.address.to_string()).collect();
    names.sort();
    names
}

/// Runs one `rtt/` test.
fn run_rtt_test(test: &JsonTest) -> Result<(), String> {
    let mut rtt = match entry(test, "avg_rtt_ms")? {
        Value::String(text) if text == "NULL" => RoundTripTime::new(),
        value => RoundTripTime::with_average(millis(value)?),
    };
    rtt.add_sample(millis(entry(test, "new_rtt_ms")?)?);
    let expected = entry(test, "new_avg_rtt")?
        .as_f64()
        .ok_or("new_avg_rtt is not a number")?;
    let average = rtt.average().ok_or("no average after a sample")?;
    let actual = average.as_secs_f64() * 1000.0;
    if (actual - expected).abs() < 1e-6 {
        Ok(())
    } else {
        Err(format!(
            "expected an average of {expected} ms, got {actual} ms"
        ))
    }
}

/// Runs one `in_window/` test.
fn run_in_window_test(test: &JsonTest) -> Result<(), String> {
    let topology = topology(
        entry(test, "topology_description")?,
        DEFAULT_HEARTBEAT_FREQUENCY,
    )?;
    let mut operation_counts = BTreeMap::new();
    for state in array(
        entry(test, "mocked_topology_state")?,
        "mocked_topology_state",
    )? {
        let address = address(field(state, "address")?)?.to_string();
        let count = field(state, "operation_count")?
            .as_u64()
            .and_then(|count| u32::try_from(count).ok())
            .ok_or("bad operation_count")?;
        operation_counts.insert(address, count);
    }
    let iterations = entry(test, "iterations")?
        .as_u64()
        .ok_or("bad iterations")?;
    let outcome = entry(test, "outcome")?;
    let tolerance = field(outcome, "tolerance")?
        .as_f64()
        .ok_or("bad tolerance")?;
    let expected = field(outcome, "expected_frequencies")?
        .as_object()
        .ok_or("expected_frequencies is not an object")?;

    let nearest = ReadPreference::Nearest { options: None };
    let criteria = Criteria::Read(&nearest);
    let window = candidates(&topology, &criteria, LOCAL_THRESHOLD, &[])
        .map_err(|e| format!("candidates failed: {e}"))?;
    let count = |address: &ServerAddress| {
        operation_counts
            .get(&address.to_string())
            .copied()
            .unwrap_or(0)
    };
    let mut random = SplitMix64(0x5EED_0FA1_15E1_EC70);
    let mut selected: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..iterations {
        let server =
            choose(&window, count, |len| random.below(len)).ok_or("no server was selected")?;
        *selected.entry(server.address.to_string()).or_default() += 1;
    }
    for (address, frequency) in expected {
        let frequency = frequency
            .as_f64()
            .ok_or_else(|| format!("bad expected frequency for {address}"))?;
        let observed = selected.get(address).copied().unwrap_or(0) as f64 / iterations as f64;
        let exact = frequency == 0.0 || frequency == 1.0;
        let close = if exact {
            observed == frequency
        } else {
            (observed - frequency).abs() <= tolerance
        };
        if !close {
            return Err(format!(
                "{address} was selected at a frequency of {observed}, expected {frequency} \
                 (tolerance {tolerance}); selections: {selected:?}"
            ));
        }
    }
    Ok(())
}

/// A seeded SplitMix64 generator: the in_window tests draw the same numbers on every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `len` (which is positive).
    fn below(&mut self, len: usize) -> usize {
        ((u128::from(self.next()) * len as u128) >> 64) as usize
    }
}

/// The TopologyDescription of a test's `topology_description`.
fn topology(value: &Value, heartbeat_frequency: Duration) -> Result<TopologyDescription, String> {
    let name = string(field(value, "type")?, "type")?;
    let topology_type = TOPOLOGY_TYPES
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| format!("unknown topology type {name:?}"))?;
    let servers = array(field(value, "servers")?, "servers")?
        .iter()
        .map(|server| {
            let server = server_description(server)?;
            Ok((server.address.clone(), server))
        })
        .collect::<Result<_, String>>()?;
    Ok(TopologyDescription {
        topology_type,
        servers,
        heartbeat_frequency,
        ..TopologyDescription::default()
    })
}

/// The ServerDescription of one server of a test: `address`, `type`, `avg_rtt_ms`,
/// `tags`, `lastUpdateTime`, `lastWrite.lastWriteDate` and `maxWireVersion`.
fn server_description(value: &Value) -> Result<ServerDescription, String> {
    let mut server = ServerDescription::unknown(address(field(value, "address")?)?);
    let name = string(field(value, "type")?, "type")?;
    server.server_type = SERVER_TYPES
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| format!("unknown server type {name:?}"))?;
    if let Some(rtt) = value.get("avg_rtt_ms") {
        server.round_trip_time = Some(millis(rtt)?);
    }
    if let Some(tags) = value.get("tags") {
        server.tags = tag_set(tags)?;
    }
    if let Some(updated) = value.get("lastUpdateTime") {
        let updated = integer(updated).ok_or("bad lastUpdateTime")?;
        let updated = u64::try_from(updated).map_err(|_| "negative lastUpdateTime")?;
        server.last_update_time = Some(Instant::from_origin(Duration::from_millis(updated)));
    }
    if let Some(last_write) = value.get("lastWrite") {
        let date = field(last_write, "lastWriteDate")?;
        server.last_write_date = Some(integer(date).ok_or("bad lastWriteDate")?);
    }
    if let Some(version) = value.get("maxWireVersion") {
        server.max_wire_version = integer(version)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or("bad maxWireVersion")?;
    }
    Ok(server)
}

/// A test's `read_preference`: `mode` (capitalized, default primary), `tag_sets` and
/// `maxStalenessSeconds` (-1: none). The outer error is a malformed test, the inner
/// one a read preference the driver refuses to make.
fn read_preference(value: &Value) -> Result<anymongo::Result<ReadPreference>, String> {
    let mut mode = ReadPreferenceMode::Primary;
    let mut options = ReadPreferenceOptions::default();
    if let Some(given) = value.get("mode") {
        let given = string(given, "mode")?;
        let mut chars = given.chars();
        let spelled: String = chars
            .next()
            .map(|first| first.to_ascii_lowercase())
            .into_iter()
            .chain(chars)
            .collect();
        mode = ReadPreferenceMode::from_name(&spelled)
            .ok_or_else(|| format!("unknown read preference mode {given:?}"))?;
    }
    if let Some(tag_sets) = value.get("tag_sets") {
        options.tag_sets = Some(
            array(tag_sets, "tag_sets")?
                .iter()
                .map(tag_set)
                .collect::<Result<_, _>>()?,
        );
    }
    if let Some(seconds) = value.get("maxStalenessSeconds") {
        let seconds = integer(seconds).ok_or("bad maxStalenessSeconds")?;
        options.max_staleness = u64::try_from(seconds).ok().map(Duration::from_secs);
    }
    Ok(ReadPreference::new(mode, Some(options)))
}

fn tag_set(value: &Value) -> Result<TagSet, String> {
    value
        .as_object()
        .ok_or_else(|| format!("a tag set is not an object: {value}"))?
        .iter()
        .map(|(key, value)| Ok((key.clone(), string(value, key)?.to_owned())))
        .collect()
}

fn address(value: &Value) -> Result<ServerAddress, String> {
    let text = string(value, "address")?;
    ServerAddress::parse(text).map_err(|e| format!("bad address {text:?}: {e}"))
}

/// A duration in milliseconds, possibly fractional.
fn millis(value: &Value) -> Result<Duration, String> {
    value
        .as_f64()
        .filter(|ms| *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .ok_or_else(|| format!("not a duration in milliseconds: {value}"))
}

/// An integer, plain or as extended JSON `{"$numberLong": "…"}`.
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::Object(object) => object.get("$numberLong")?.as_str()?.parse().ok(),
        _ => None,
    }
}

/// The test's `key`.
fn entry<'a>(test: &'a JsonTest, key: &str) -> Result<&'a Value, String> {
    test.get(key).ok_or_else(|| format!("no '{key}'"))
}

fn field<'a>(value: &'a Value, key: &str) -> Result<&'a Value, String> {
    value.get(key).ok_or_else(|| format!("no '{key}'"))
}

fn array<'a>(value: &'a Value, what: &str) -> Result<&'a Vec<Value>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("'{what}' is not an array"))
}

fn string<'a>(value: &'a Value, what: &str) -> Result<&'a str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("'{what}' is not a string"))
}
