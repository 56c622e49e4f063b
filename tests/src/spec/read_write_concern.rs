//! The Read and Write Concern spec's tests (`read_write_concern/`, see its
//! `tests/README.md`), in two kinds:
//!
//! - `connection-string/` and `document/` are pure: a connection string is parsed with
//!   [`ClientOptions::parse`] and its `readConcernLevel`, `w`, `journal` and
//!   `wtimeoutMS` compared with the test's `readConcern` or `writeConcern` (an invalid
//!   one must fail to parse, or parse with a warning: the Connection String spec
//!   ignores an invalid value with a warning, where these tests expect an error); a concern
//!   given as a document is read with [`WriteConcern::from_document`] and
//!   [`ReadConcernLevel::from_name`], checked with [`WriteConcern::validate`], and its
//!   command form ([`WriteConcern::to_document`], [`ReadConcern::to_document`]),
//!   `isServerDefault` ([`WriteConcern::is_empty`]) and `isAcknowledged`
//!   ([`WriteConcern::is_acknowledged`]) compared with the test's;
//! - `operation/` and `write-concern-errors/` are unified-format files, run by
//!   [`crate::unified`] against the test server.
//!
//! One suite line counts them all, each file under its path in the suite folder.

use std::path::Path;

use anymongo::bson::{Bson, Document};
use anymongo::concern::{ReadConcern, ReadConcernLevel, WriteConcern};
use anymongo::ClientOptions;
use serde_json::{Map, Value};

use super::connection_string::same;
use super::{run_json_tests, Suite, SuiteOutcome};

/// Runs the suite in `dir` (the corpus's `read_write_concern` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    let mut outcome = SuiteOutcome::default();
    // Each kind as a suite of its own, named after its folder.
    let kinds = [
        Suite {
            name: "connection-string",
            run: |dir| run_json_tests(dir, |_| None, |_| None, connection_string_test),
        },
        Suite {
            name: "document",
            run: |dir| run_json_tests(dir, |_| None, |_| None, document_test),
        },
        Suite {
            name: "operation",
            run: crate::unified::run,
        },
        Suite {
            name: "write-concern-errors",
            run: crate::unified::run,
        },
    ];
    for Suite { name: folder, run } in kinds {
        let mut part = run(&dir.join(folder));
        let prefixed = |results: &mut Vec<(String, String)>| {
            results
                .drain(..)
                .map(|(file, why)| (format!("{folder}/{file}"), why))
                .collect::<Vec<_>>()
        };
        outcome.passed += part.passed;
        outcome.failed.extend(prefixed(&mut part.failed));
        outcome.skipped.extend(prefixed(&mut part.skipped));
    }
    outcome
}

/// A connection-string test: `uri` parses (or not, as `valid` says) to the expected
/// concerns.
fn connection_string_test(test: &Map<String, Value>) -> Result<(), String> {
    let uri = test
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the test has no 'uri'")?;
    let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(true);
    let options = match (ClientOptions::parse_uri(uri), valid) {
        (Err(_), false) => return Ok(()),
        // The Connection String spec: "Any invalid Values for a given key MUST be
        // ignored and MUST log a WARN level message" (`wtimeoutMS=-500`).
        (Ok(options), false) if !options.warnings.is_empty() => return Ok(()),
        (Ok(_), false) => return Err(format!("{uri} parsed without a warning, but is invalid")),
        (Err(error), true) => return Err(format!("{uri} did not parse: {error}")),
        (Ok(options), true) => options,
    };
    if test.get("warning").and_then(Value::as_bool) == Some(false) && !options.warnings.is_empty() {
        return Err(format!("{uri}: unexpected warnings {:?}", options.warnings));
    }
    if let Some(expected) = test.get("writeConcern") {
        let expected = write_concern(expected)?;
        // An empty write concern is the same as none given.
        let actual = options.write_concern.clone().unwrap_or_default();
        if actual != expected {
            return Err(format!("{uri}: expected {expected:?}, got {actual:?}"));
        }
    }
    if let Some(expected) = test.get("readConcern") {
        let expected = read_concern(expected)?;
        if options.read_concern != expected {
            return Err(format!(
                "{uri}: expected {expected:?}, got {:?}",
                options.read_concern
            ));
        }
    }
    Ok(())
}

/// A document test: the concern is valid or not as `valid` says, and a valid one has
/// the expected command form, `isServerDefault` and `isAcknowledged`.
fn document_test(test: &Map<String, Value>) -> Result<(), String> {
    let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(true);
    let expect_bool = |name: &str| test.get(name).and_then(Value::as_bool);
    if let Some(given) = test.get("writeConcern") {
        let concern = write_concern(given).and_then(|concern| {
            concern
                .validate()
                .map_err(|e| e.to_string())
                .map(|_| concern)
        });
        let concern = match (concern, valid) {
            (Err(_), false) => return Ok(()),
            (Ok(concern), false) => return Err(format!("{concern:?} is accepted, but invalid")),
            (Err(why), true) => return Err(format!("{given} is refused: {why}")),
            (Ok(concern), true) => concern,
        };
        check_document(test.get("writeConcernDocument"), &concern.to_document())?;
        check_flag(
            "isServerDefault",
            expect_bool("isServerDefault"),
            concern.is_empty(),
        )?;
        check_flag(
            "isAcknowledged",
            expect_bool("isAcknowledged"),
            concern.is_acknowledged(),
        )?;
    }
    if let Some(given) = test.get("readConcern") {
        // Every level is valid: an unknown one is sent as is (spec, "Read Concern").
        let concern = read_concern(given)?;
        let document = concern
            .as_ref()
            .map(ReadConcern::to_document)
            .unwrap_or_default();
        check_document(test.get("readConcernDocument"), &document)?;
        check_flag(
            "isServerDefault",
            expect_bool("isServerDefault"),
            concern.is_none(),
        )?;
    }
    Ok(())
}

/// A write concern as the tests spell it (`w`, `journal`, `wtimeoutMS`).
fn write_concern(json: &Value) -> Result<WriteConcern, String> {
    match Bson::try_from(json.clone()) {
        Ok(Bson::Document(document)) => WriteConcern::from_document(&document),
        _ => Err(format!("the write concern {json} is not a document")),
    }
}

/// A read concern as the tests spell it (`level`); `None` for the server's default.
fn read_concern(json: &Value) -> Result<Option<ReadConcern>, String> {
    let level = match json.get("level") {
        None => return Ok(None),
        Some(Value::String(level)) => level,
        Some(other) => return Err(format!("the level {other} is not a string")),
    };
    Ok(Some(ReadConcern::new(ReadConcernLevel::from_name(level))))
}

/// `actual` is the expected command form, unless none is expected (`null`).
fn check_document(expected: Option<&Value>, actual: &Document) -> Result<(), String> {
    match expected {
        None | Some(Value::Null) => Ok(()),
        Some(expected) if same(expected, &Bson::Document(actual.clone())) => Ok(()),
        Some(expected) => Err(format!("expected the document {expected}, got {actual}")),
    }
}

/// `actual` is the expected flag, unless none is expected (`null`).
fn check_flag(name: &str, expected: Option<bool>, actual: bool) -> Result<(), String> {
    match expected {
        Some(expected) if expected != actual => {
            Err(format!("{name}: expected {expected}, got {actual}"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_wrong_expectation_fails() {
        let wrong = object(json!({
            "uri": "mongodb://localhost/?w=1", "valid": true, "writeConcern": { "w": 2 },
        }));
        assert!(connection_string_test(&wrong).is_err());
        let accepted = object(json!({ "valid": false, "writeConcern": { "w": 1 } }));
        assert!(document_test(&accepted).is_err());
        let flag = object(json!({
            "valid": true, "writeConcern": { "w": 0 }, "isAcknowledged": true,
        }));
        assert!(document_test(&flag).is_err());
    }

    #[test]
    fn the_command_form_is_compared() {
        let right = object(json!({
            "valid": true,
            "writeConcern": { "wtimeoutMS": 1000, "journal": true },
            "writeConcernDocument": { "wtimeout": 1000, "j": true },
            "isServerDefault": false,
        }));
        document_test(&right).unwrap();
        let wrong = object(json!({
            "valid": true, "readConcern": { "level": "local" },
            "readConcernDocument": { "level": "majority" },
        }));
        assert!(document_test(&wrong).is_err());
    }
}
