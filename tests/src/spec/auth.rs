//! The Authentication spec's tests (`auth/`, see the spec's `tests/README.md`).
//!
//! `legacy/*.json` are connection-string tests: each URI is parsed with
//! [`ClientOptions::parse`]; a test with `valid: false` passes when parsing fails (or
//! the checks of client creation do, `client_checks`), the others when the parsed
//! credential matches the test's `credential` (`null` meaning "no credential"; inside
//! it, a `null` field meaning "not set", a missing field meaning "not checked", and
//! `mechanism_properties` checked as a subset).
//!
//! `unified/*.json` need a live deployment and the unified test runner and are skipped.
//! So are the corpus's tests that the current text of the spec contradicts
//! (`SUPERSEDED`).

use std::path::Path;

use anymongo::auth::cloud::CloudAccess;
use anymongo::auth::oidc::OidcAuthenticator;
use anymongo::auth::{AuthMechanism, Credential};
use anymongo::bson::{Bson, Document};
use anymongo::ClientOptions;
use serde_json::{Map, Value};

use super::{run_json_tests, SuiteOutcome};

/// Why the unified-format files are skipped.
const UNIFIED: &str = "needs an OIDC-enabled deployment and the unified test runner";

/// Why the tests of MONGODB-AWS credentials in the connection string are skipped.
const AWS_CREDENTIALS_IN_URI: &str =
    "superseded by the spec: MONGODB-AWS, \"Obtaining Credentials\" (2025-09-30): \
     \"If credentials are provided in the URI or client options, the driver MUST raise an \
     error\"; the corpus still expects them to be used";

/// The tests of pymongo 4.20's copy that the current spec text contradicts, by
/// description, with why.
const SUPERSEDED: [(&str, &str); 2] = [
    (
        "should use username and password if specified (MONGODB-AWS)",
        AWS_CREDENTIALS_IN_URI,
    ),
    (
        "should use username, password and session token if specified (MONGODB-AWS)",
        AWS_CREDENTIALS_IN_URI,
    ),
];

/// Runs the suite in `dir` (the corpus's `auth` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_tests(
        dir,
        |file| file.starts_with("unified/").then_some(UNIFIED),
        |test| {
            let description = test.get("description").and_then(Value::as_str)?;
            SUPERSEDED
                .iter()
                .find(|(superseded, _)| *superseded == description)
                .map(|(_, why)| *why)
        },
        run_test,
    )
}

/// Runs one connection-string test.
fn run_test(test: &Map<String, Value>) -> Result<(), String> {
    let uri = test
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the test has no 'uri'")?;
    let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(true);
    // Client creation's checks only for invalid URIs: a valid one may still need what
    // only an application gives (the token file reader of the test and k8s
    // environments, `Credential::oidc_host`).
    let parsed = match valid {
        true => ClientOptions::parse_uri(uri),
        false => ClientOptions::parse_uri(uri).and_then(client_checks),
    };
    let options = match (valid, parsed) {
        (false, Err(_)) => return Ok(()),
        (false, Ok(options)) => {
            return Err(format!(
                "parsed, but the URI is invalid (credential: {:?})",
                options.credential
            ))
        }
        (true, Err(error)) => return Err(format!("failed to parse: {error}")),
        (true, Ok(options)) => options,
    };
    match (test.get("credential"), &options.credential) {
        (None, _) | (Some(Value::Null), None) => Ok(()),
        (Some(Value::Null), Some(credential)) => {
            Err(format!("expected no credential, got {credential:?}"))
        }
        (Some(_), None) => Err("expected a credential, got none".to_owned()),
        (Some(Value::Object(expected)), Some(credential)) => check_credential(expected, credential),
        (Some(other), _) => Err(format!("the test's credential is not an object: {other}")),
    }
}

/// The checks a client makes when it is created (the README: "whether URI parsing (or
/// MongoClient construction) raises an error"): a MONGODB-OIDC credential needs a
/// callback, which a connection string cannot give, or the `ENVIRONMENT` property
/// (with `TOKEN_RESOURCE` for `azure` and `gcp`, whose metadata services the client
/// reaches over HTTP).
fn client_checks(options: ClientOptions) -> anymongo::Result<ClientOptions> {
    if let Some(credential) = &options.credential {
        if credential.mechanism == Some(AuthMechanism::MongoDbOidc) {
            let cloud = CloudAccess::new(&anymongo_native::runtime(), credential);
            OidcAuthenticator::with_cloud(credential, cloud)?;
        }
    }
    Ok(options)
}

fn check_credential(expected: &Map<String, Value>, credential: &Credential) -> Result<(), String> {
    let mechanism = credential.mechanism.map(|mechanism| mechanism.name());
    let strings = [
        ("username", credential.username.as_deref()),
        ("password", credential.password.as_deref()),
        ("source", credential.source.as_deref()),
        ("mechanism", mechanism),
    ];
    for (field, actual) in strings {
        match expected.get(field) {
            None => {}
            Some(Value::Null) if actual.is_none() => {}
            Some(Value::String(want)) if actual == Some(want.as_str()) => {}
            Some(want) => {
                // Passwords are test data here, so showing them is harmless.
                return Err(format!("{field}: expected {want}, got {actual:?}"));
            }
        }
    }
    match (
        expected.get("mechanism_properties"),
        &credential.mechanism_properties,
    ) {
        (None, _) | (Some(Value::Null), None) => Ok(()),
        (Some(Value::Object(want)), Some(actual)) => check_properties(want, actual),
        (want, actual) => Err(format!(
            "mechanism_properties: expected {}, got {actual:?}",
            want.unwrap_or(&Value::Null)
        )),
    }
}

/// Every property the test names must be present with the same value; others may exist.
fn check_properties(expected: &Map<String, Value>, actual: &Document) -> Result<(), String> {
    for (name, want) in expected {
        let got = actual.get(name);
        let same = match (want, got) {
            (Value::String(want), Some(Bson::String(got))) => want == got,
            (Value::Bool(want), Some(Bson::Boolean(got))) => want == got,
            _ => false,
        };
        if !same {
            return Err(format!(
                "mechanism_properties.{name}: expected {want}, got {got:?}"
            ));
        }
    }
    Ok(())
}
