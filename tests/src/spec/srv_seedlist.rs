//! The Initial DNS Seedlist Discovery spec's tests (`srv_seedlist/`): one test per JSON
//! file (format in the spec's `tests/README.md`).
//!
//! The runner starts the test DNS server ([`crate::dns`]) with the records of the
//! spec's README and resolves each file's `uri` with [`srv::resolve_uri`] through the
//! real native resolver (`anymongo_native::TokioResolver`, hickory) pointed at it. It
//! checks
//!
//! - `error`: `true` means resolution (parsing, DNS or the records' contents) fails;
//! - `seeds` (as a set of `host:port`) and `numSeeds`: the resolved seed list;
//! - `options`: each key, case-insensitively, against [`ClientOptions::uri_option`].
//!   `authSource` only lives in a credential (the Authentication spec: an
//!   `authSource` without a user name makes no credential), so when the connection
//!   string has no user information the same string is resolved again with a dummy
//!   `user:password@` and the credential's `source` is checked;
//! - `parsed_options`: `user` and `password` (the credential's), `db`,
//!   `auth_database` and `defaultDatabase` (the database in the connection string's
//!   path).
//!
//! Not checked — they need a deployment behind the records (a three-node replica set
//! on ports 27017–27019, a sharded cluster, a load balancer on port 8000, all with
//! TLS): `hosts` and `numHosts` (the topology after SDAM's first scan) and `ping`.
//! Every file has at least one other check, so each is counted as passed or failed;
//! a file with nothing else to check would be skipped with that reason.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anymongo::bson::Bson;
use anymongo::{srv, ClientOptions};
use anymongo_native::TokioResolver;
use serde_json::Value;

use super::{run_json_files, JsonTest, SuiteOutcome};
use crate::dns::{spec_records, DnsServer};

/// The bound on each look-up; the test DNS server answers at once.
const LOOKUP_BOUND: Duration = Duration::from_secs(5);

/// Why `hosts`, `numHosts` and `ping` are not checked.
const NEEDS_DEPLOYMENT: &str = "hosts, numHosts and ping need the spec's deployments (a \
     three-node replica set on 27017-27019, a sharded cluster, a load balancer), with TLS";

/// The keys this runner checks.
const CHECKED: [&str; 5] = ["error", "seeds", "numSeeds", "options", "parsed_options"];

/// Runs the suite in `dir` (the corpus's `srv_seedlist` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    let failed = |why: String| SuiteOutcome {
        failed: vec![(String::new(), why)],
        ..SuiteOutcome::default()
    };
    let server = match DnsServer::start() {
        Ok(server) => server,
        Err(error) => return failed(format!("cannot start the test DNS server: {error}")),
    };
    server.load(spec_records(IpAddr::from([127, 0, 0, 1])));
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return failed(format!("cannot start a tokio runtime: {error}")),
    };
    let resolver = TokioResolver::with_nameserver(server.address());
    let clock = runtime.block_on(async { anymongo_native::runtime().clock });
    let resolve = |uri: &str| {
        runtime.block_on(srv::resolve_uri(
            uri,
            &resolver,
            clock.as_ref(),
            LOOKUP_BOUND,
        ))
    };
    run_json_files(
        dir,
        |_| true,
        |test| {
            let checks = CHECKED.iter().any(|key| test.contains_key(*key));
            (!checks).then_some(NEEDS_DEPLOYMENT)
        },
        |_, test| run_file(test, &resolve),
    )
}

/// Runs one file's test.
fn run_file(
    test: &JsonTest,
    resolve: &dyn Fn(&str) -> anymongo::Result<ClientOptions>,
) -> Result<(), String> {
    let uri = test
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the test has no 'uri'")?;
    let expect_error = test.get("error").and_then(Value::as_bool) == Some(true);
    let options = match (resolve(uri), expect_error) {
        (Err(_), true) => return Ok(()),
        (Ok(options), true) => {
            return Err(format!(
                "{uri} resolved to {:?}, but must fail",
                host_strings(&options)
            ))
        }
        (Err(error), false) => return Err(format!("{uri} failed: {error}")),
        (Ok(options), false) => options,
    };
    let seeds = host_strings(&options);
    if let Some(expected) = test.get("seeds").and_then(Value::as_array) {
        let expected: BTreeSet<String> = expected
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_ascii_lowercase)
            .collect();
        let actual: BTreeSet<String> = seeds.iter().cloned().collect();
        if expected != actual || seeds.len() != actual.len() {
            return Err(format!(
                "{uri}: seeds: expected {expected:?}, got {seeds:?}"
            ));
        }
    }
    if let Some(expected) = test.get("numSeeds").and_then(Value::as_u64) {
        if seeds.len() as u64 != expected {
            return Err(format!(
                "{uri}: numSeeds: expected {expected}, got {seeds:?}"
            ));
        }
    }
    if let Some(expected) = test.get("options").and_then(Value::as_object) {
        for (key, value) in expected {
            let actual =
                match key.eq_ignore_ascii_case("authSource") && options.credential.is_none() {
                    true => auth_source_with_user(uri, resolve)?,
                    false => options.uri_option(key),
                };
            match actual {
                Some(actual) if same(value, &actual) => {}
                actual => {
                    return Err(format!(
                        "{uri}: option {key}: expected {value}, got {actual:?}"
                    ))
                }
            }
        }
    }
    if let Some(expected) = test.get("parsed_options").and_then(Value::as_object) {
        let credential = options.credential.as_ref();
        for (key, value) in expected {
            let actual = match key.as_str() {
                "user" => credential.and_then(|c| c.username.clone()),
                "password" => credential.and_then(|c| c.password.clone()),
                "db" | "auth_database" | "defaultDatabase" => options.default_database.clone(),
                other => return Err(format!("{uri}: unknown parsed_options key {other:?}")),
            };
            if value.as_str() != actual.as_deref() {
                return Err(format!(
                    "{uri}: parsed_options {key}: expected {value}, got {actual:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The `authSource` a credential gets when the connection string `uri` (which has no
/// user information) is given a user: the credential is where the option lives.
fn auth_source_with_user(
    uri: &str,
    resolve: &dyn Fn(&str) -> anymongo::Result<ClientOptions>,
) -> Result<Option<Bson>, String> {
    let with_user = uri.replacen("mongodb+srv://", "mongodb+srv://user:password@", 1);
    let options = resolve(&with_user).map_err(|e| format!("{with_user} failed: {e}"))?;
    Ok(options.uri_option("authSource"))
}

fn host_strings(options: &ClientOptions) -> Vec<String> {
    options.hosts.iter().map(ToString::to_string).collect()
}

/// Whether a resolved option equals the test's JSON value.
fn same(expected: &Value, actual: &Bson) -> bool {
    match (expected, actual) {
        (Value::Bool(a), Bson::Boolean(b)) => a == b,
        (Value::String(a), Bson::String(b)) => a == b,
        (Value::Number(a), Bson::Int32(b)) => a.as_i64() == Some(i64::from(*b)),
        (Value::Number(a), Bson::Int64(b)) => a.as_i64() == Some(*b),
        _ => false,
    }
}
