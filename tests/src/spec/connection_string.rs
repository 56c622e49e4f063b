//! The Connection String spec's tests (`connection_string/`), whose format the URI
//! Options spec's tests share (see both specs' `tests/README.md`): each test parses a
//! `uri` with [`ClientOptions::parse`] and checks
//!
//! - `valid`: `false` means parsing must fail;
//! - `warning`: `true` means at least one warning, `false` none;
//! - `hosts`: each host's `host`, and its `port` and `type` unless `null`;
//! - `auth`: `username`, `password` (of the credential) and `db` (the default
//!   database), each unless `null`;
//! - `options`: each key, case-insensitively, against [`ClientOptions::uri_option`].
//!
//! A `null` `hosts`, `auth` or `options` is not checked. Every test is counted on its
//! own. A test whose URI gives `timeoutMS` is skipped: the driver refuses the option
//! until it implements it (issue 22).

use std::net::Ipv4Addr;
use std::path::Path;

use anymongo::bson::Bson;
use anymongo::{ClientOptions, ServerAddress};
use serde_json::{Map, Value};

use super::{run_json_tests, SuiteOutcome};

/// Runs the suite in `dir` (the corpus's `connection_string` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_uri_tests(dir)
}

/// Runs every test of every JSON file under `dir`, in the Connection String tests'
/// format.
pub(super) fn run_uri_tests(dir: &Path) -> SuiteOutcome {
    run_json_tests(dir, |_| None, |_| None, run_test)
}

/// Runs one test.
fn run_test(test: &Map<String, Value>) -> Result<(), String> {
    let uri = test
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the test has no 'uri'")?;
    let valid = test
        .get("valid")
        .and_then(Value::as_bool)
        .ok_or("the test has no 'valid'")?;
    let options = match (ClientOptions::parse_uri(uri), valid) {
        (Err(_), false) => return Ok(()),
        (Ok(options), false) => return Err(format!("{uri} parsed, but is invalid: {options}")),
        (Err(error), true) => return Err(format!("{uri} did not parse: {error}")),
        (Ok(options), true) => options,
    };
    match test.get("warning").and_then(Value::as_bool) {
        Some(true) if options.warnings.is_empty() => {
            return Err(format!("{uri} parsed without the expected warning"))
        }
        Some(false) if !options.warnings.is_empty() => {
            return Err(format!("{uri}: unexpected warnings {:?}", options.warnings))
        }
        _ => {}
    }
    if let Some(hosts) = test.get("hosts").and_then(Value::as_array) {
        check_hosts(hosts, &options.hosts).map_err(|why| format!("{uri}: hosts: {why}"))?;
    }
    if let Some(auth) = test.get("auth").and_then(Value::as_object) {
        check_auth(auth, &options).map_err(|why| format!("{uri}: auth: {why}"))?;
    }
    if let Some(expected) = test.get("options").and_then(Value::as_object) {
        for (key, value) in expected {
            match options.uri_option(key) {
                Some(actual) if same(value, &actual) => {}
                actual => {
                    return Err(format!(
                        "{uri}: option {key}: expected {value}, got {actual:?}"
                    ))
                }
            }
        }
    }
    Ok(())
}

fn check_hosts(expected: &[Value], actual: &[ServerAddress]) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!("expected {expected:?}, got {actual:?}"));
    }
    for (expected, address) in expected.iter().zip(actual) {
        let field = |name: &str| expected.get(name).filter(|value| !value.is_null());
        let kind = match address {
            ServerAddress::Unix { .. } => "unix",
            _ if address.host().parse::<Ipv4Addr>().is_ok() => "ipv4",
            _ if address.is_ip_literal() => "ip_literal",
            _ => "hostname",
        };
        let matches = field("host").is_none_or(|host| host.as_str() == Some(address.host()))
            && field("port").is_none_or(|port| port.as_u64() == address.port().map(u64::from))
            && field("type").is_none_or(|t| t.as_str() == Some(kind));
        if !matches {
            return Err(format!("expected {expected}, got {address:?} ({kind})"));
        }
    }
    Ok(())
}

fn check_auth(expected: &Map<String, Value>, options: &ClientOptions) -> Result<(), String> {
    let credential = options.credential.as_ref();
    for (field, actual) in [
        ("username", credential.and_then(|c| c.username.as_deref())),
        ("password", credential.and_then(|c| c.password.as_deref())),
        ("db", options.default_database.as_deref()),
    ] {
        match expected.get(field) {
            Some(Value::String(value)) if Some(value.as_str()) != actual => {
                return Err(format!("{field}: expected {value:?}, got {actual:?}"))
            }
            Some(Value::String(_) | Value::Null) | None => {}
            Some(other) => return Err(format!("{field}: unexpected expectation {other}")),
        }
    }
    Ok(())
}

/// Whether a parsed option equals the test's JSON value: numbers by value, documents
/// regardless of key order.
pub(super) fn same(expected: &Value, actual: &Bson) -> bool {
    match (expected, actual) {
        (Value::Bool(a), Bson::Boolean(b)) => a == b,
        (Value::String(a), Bson::String(b)) => a == b,
        (Value::Number(a), Bson::Int32(b)) => a.as_i64() == Some(i64::from(*b)),
        (Value::Number(a), Bson::Int64(b)) => a.as_i64() == Some(*b),
        (Value::Array(a), Bson::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Bson::Document(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same(a, b)))
        }
        _ => false,
    }
}
