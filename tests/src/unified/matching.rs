//! Matching expected values against actual ones (spec "Evaluating Matches"), and the
//! exact comparison of collection contents (spec "Executing a Test", `outcome`).

use bson::{Bson, Document};

use super::entities::EntityMap;
use super::model::parse_extended_json;

/// Matches actual values against expected ones, resolving `$$matchesEntity` and
/// `$$sessionLsid` in an entity map.
pub struct Matcher<'a> {
    entities: &'a EntityMap,
}

impl<'a> Matcher<'a> {
    /// A matcher that looks entities up in `entities`.
    pub fn new(entities: &'a EntityMap) -> Self {
        Matcher { entities }
    }

    /// Matches `actual` against `expected` as a root-level value: a document may have
    /// fields the expected one does not name (spec "Allowing Extra Fields in Root-level
    /// Documents"), documents nested in it may not.
    pub fn root(&self, expected: &Bson, actual: &Bson) -> Result<(), String> {
        self.value(expected, Some(actual), true, "")
    }

    /// [`root`](Self::root) for a value that may be absent (`None`), as an error's
    /// optional result: only `$$unsetOrMatches` accepts its absence.
    pub fn root_or_absent(&self, expected: &Bson, actual: Option<&Bson>) -> Result<(), String> {
        self.value(expected, actual, true, "")
    }

    /// Matches the documents an iterable result gave (`find`, `aggregate`...) against
    /// the expected array: as many, each matched as a root-level document (spec
    /// "Allowing Extra Fields in Root-level Documents": runners "MUST differentiate
    /// between an array of values ... and an array of root-level documents derived from
    /// an iterable result").
    pub fn iterated(&self, expected: &Bson, actual: &Bson) -> Result<(), String> {
        match (expected, actual) {
            (Bson::Array(expected), Bson::Array(actual)) if expected.len() == actual.len() => {
                expected
                    .iter()
                    .zip(actual)
                    .enumerate()
                    .try_for_each(|(i, (expected, actual))| {
                        self.value(expected, Some(actual), true, &i.to_string())
                    })
            }
            // Not two arrays of one length: the ordinary rules say how they differ.
            _ => self.root(expected, actual),
        }
    }

    /// Matches `actual` (`None`: the field is absent) against `expected`; `root` says
    /// whether a document at this place may have extra fields; `path` names the place
    /// in messages.
    fn value(
        &self,
        expected: &Bson,
        actual: Option<&Bson>,
        root: bool,
        path: &str,
    ) -> Result<(), String> {
        if let Some((operator, argument)) = special_operator(expected) {
            return self.operator(operator, argument, actual, root, path);
        }
        let actual = actual.ok_or_else(|| format!("{}: missing, expected {expected}", at(path)))?;
        match expected {
            Bson::Document(expected) => {
                let Bson::Document(actual) = actual else {
                    return Err(format!("{}: expected a document, got {actual}", at(path)));
                };
                self.document(expected, actual, root, path)
            }
            Bson::Array(expected) => {
                let Bson::Array(actual) = actual else {
                    return Err(format!("{}: expected an array, got {actual}", at(path)));
                };
                // Spec "Arrays Must Contain the Same Number of Elements".
                if expected.len() != actual.len() {
                    return Err(format!(
                        "{}: expected {} elements, got {}: {actual:?}",
                        at(path),
                        expected.len(),
                        actual.len()
                    ));
                }
                expected
                    .iter()
                    .zip(actual)
                    .enumerate()
                    .try_for_each(|(i, (expected, actual))| {
                        self.value(expected, Some(actual), false, &child(path, &i.to_string()))
                    })
            }
            _ if scalars_equal(expected, actual) => Ok(()),
            _ => Err(format!("{}: expected {expected}, got {actual}", at(path))),
        }
    }

    fn document(
        &self,
        expected: &Document,
        actual: &Document,
        root: bool,
        path: &str,
    ) -> Result<(), String> {
        for (key, expected) in expected {
            // Key-based operators ($$exists, $$unsetOrMatches) see the field's absence.
            self.value(expected, actual.get(key), false, &child(path, key))?;
        }
        if !root {
            if let Some(extra) = actual.keys().find(|key| !expected.contains_key(key)) {
                return Err(format!(
                    "{}: unexpected field {extra:?} in {actual}",
                    at(path)
                ));
            }
        }
        Ok(())
    }

    /// Spec "Special Operators for Matching Assertions".
    fn operator(
        &self,
        operator: &str,
        argument: &Bson,
        actual: Option<&Bson>,
        root: bool,
        path: &str,
    ) -> Result<(), String> {
        let here = at(path);
        match operator {
            "$$exists" => {
                let Bson::Boolean(expected) = argument else {
                    return Err(format!("{here}: $$exists takes a boolean, not {argument}"));
                };
                match (actual.is_some(), *expected) {
                    (true, true) | (false, false) => Ok(()),
                    (false, true) => Err(format!("{here}: missing, expected to exist")),
                    (true, false) => Err(format!(
                        "{here}: expected to be absent, got {}",
                        actual.unwrap_or(&Bson::Null)
                    )),
                }
            }
            "$$type" => {
                let actual = actual.ok_or_else(|| {
                    format!("{here}: missing, expected a value of type {argument}")
                })?;
                let aliases: Vec<&Bson> = match argument {
                    Bson::Array(aliases) => aliases.iter().collect(),
                    alias => vec![alias],
                };
                for alias in &aliases {
                    let Bson::String(alias) = alias else {
                        return Err(format!("{here}: $$type takes strings, not {alias}"));
                    };
                    if has_type(actual, alias)? {
                        return Ok(());
                    }
                }
                Err(format!(
                    "{here}: expected a value of type {argument}, got {actual}"
                ))
            }
            "$$matchesEntity" => {
                let Bson::String(name) = argument else {
                    return Err(format!(
                        "{here}: $$matchesEntity takes a name, not {argument}"
                    ));
                };
                let entity = self.entities.value(name)?;
                self.value(entity, actual, root, path)
            }
            "$$matchesHexBytes" => {
                let Bson::String(hex) = argument else {
                    return Err(format!(
                        "{here}: $$matchesHexBytes takes a string, not {argument}"
                    ));
                };
                let expected = decode_hex(hex).ok_or_else(|| {
                    format!("{here}: $$matchesHexBytes: {hex:?} is not hexadecimal bytes")
                })?;
                match actual {
                    Some(Bson::Binary(binary)) if binary.bytes == expected => Ok(()),
                    Some(Bson::String(text)) if decode_hex(text).as_ref() == Some(&expected) => {
                        Ok(())
                    }
                    other => Err(format!(
                        "{here}: expected the bytes {hex}, got {}",
                        other.unwrap_or(&Bson::Null)
                    )),
                }
            }
            "$$unsetOrMatches" => match actual {
                None => Ok(()),
                Some(actual) => self.value(argument, Some(actual), root, path),
            },
            "$$sessionLsid" => {
                let Bson::String(name) = argument else {
                    return Err(format!(
                        "{here}: $$sessionLsid takes a name, not {argument}"
                    ));
                };
                let lsid = Bson::Document(self.entities.session_lsid(name)?);
                match actual {
                    Some(actual) if exactly_equal(&lsid, actual) => Ok(()),
                    other => Err(format!(
                        "{here}: expected the lsid of {name} ({lsid}), got {}",
                        other.unwrap_or(&Bson::Null)
                    )),
                }
            }
            "$$lte" => {
                let (Some(limit), Some(value)) = (as_f64(argument), actual.and_then(as_f64)) else {
                    return Err(format!(
                        "{here}: $$lte compares numbers: {argument} and {}",
                        actual.unwrap_or(&Bson::Null)
                    ));
                };
                if value <= limit {
                    Ok(())
                } else {
                    Err(format!("{here}: expected at most {argument}, got {value}"))
                }
            }
            "$$matchAsDocument" => {
                let Some(Bson::String(text)) = actual else {
                    return Err(format!(
                        "{here}: $$matchAsDocument needs an Extended JSON string, got {}",
                        actual.unwrap_or(&Bson::Null)
                    ));
                };
                let document = match parse_extended_json(text)? {
                    document @ Bson::Document(_) => document,
                    other => return Err(format!("{here}: {other} is not a document")),
                };
                // Spec: "The actual value MUST NOT be considered a root-level document".
                self.value(argument, Some(&document), false, path)
            }
            "$$matchAsRoot" => self.value(argument, actual, true, path),
            other => Err(format!("{here}: unknown special operator {other}")),
        }
    }
}

/// The operator of a document whose first and only key starts with `$$`.
fn special_operator(expected: &Bson) -> Option<(&str, &Bson)> {
    let Bson::Document(document) = expected else {
        return None;
    };
    let mut entries = document.iter();
    match (entries.next(), entries.next()) {
        (Some((key, argument)), None) if key.starts_with("$$") => Some((key, argument)),
        _ => None,
    }
}

/// Whether `value` has the `$type` alias `alias`, e.g. `"int"` or `"number"`.
fn has_type(value: &Bson, alias: &str) -> Result<bool, String> {
    Ok(match alias {
        "double" => matches!(value, Bson::Double(_)),
        "string" => matches!(value, Bson::String(_)),
        "object" => matches!(value, Bson::Document(_)),
        "array" => matches!(value, Bson::Array(_)),
        "binData" => matches!(value, Bson::Binary(_)),
        "undefined" => matches!(value, Bson::Undefined),
        "objectId" => matches!(value, Bson::ObjectId(_)),
        "bool" => matches!(value, Bson::Boolean(_)),
        "date" => matches!(value, Bson::DateTime(_)),
        "null" => matches!(value, Bson::Null),
        "regex" => matches!(value, Bson::RegularExpression(_)),
        "dbPointer" => matches!(value, Bson::DbPointer(_)),
        "javascript" => matches!(value, Bson::JavaScriptCode(_)),
        "symbol" => matches!(value, Bson::Symbol(_)),
        "javascriptWithScope" => matches!(value, Bson::JavaScriptCodeWithScope(_)),
        "int" => matches!(value, Bson::Int32(_)),
        "timestamp" => matches!(value, Bson::Timestamp(_)),
        "long" => matches!(value, Bson::Int64(_)),
        "decimal" => matches!(value, Bson::Decimal128(_)),
        "minKey" => matches!(value, Bson::MinKey),
        "maxKey" => matches!(value, Bson::MaxKey),
        "number" => matches!(
            value,
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
        ),
        other => return Err(format!("unknown $$type alias {other:?}")),
    })
}

/// An int32, int64 or double as a float (spec "Flexible Numeric Comparisons": Decimal128
/// is left out).
fn as_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(n) => Some(f64::from(*n)),
        // Exact for the integers tests use; only magnitudes above 2^53 round.
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    }
}

/// Two values that are neither documents nor arrays are equal: numerically for
/// int32/int64/double, by type and value otherwise.
fn scalars_equal(expected: &Bson, actual: &Bson) -> bool {
    match (expected, actual) {
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            as_i64(expected) == as_i64(actual)
        }
        _ => match (as_f64(expected), as_f64(actual)) {
            (Some(expected), Some(actual)) => expected == actual,
            _ => expected == actual,
        },
    }
}

fn as_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    }
}

/// Whether two values are the same: documents with the same fields in any order,
/// arrays element by element, numbers numerically, anything else by type and value.
/// What `outcome` requires of a collection's documents (spec "Executing a Test": "the
/// rules in Evaluating Matches do not apply and the documents MUST match exactly;
/// however, test runners MUST permit variations in document key order").
pub fn exactly_equal(expected: &Bson, actual: &Bson) -> bool {
    match (expected, actual) {
        (Bson::Document(expected), Bson::Document(actual)) => {
            expected.len() == actual.len()
                && expected.iter().all(|(key, expected)| {
                    actual
                        .get(key)
                        .is_some_and(|actual| exactly_equal(expected, actual))
                })
        }
        (Bson::Array(expected), Bson::Array(actual)) => {
            expected.len() == actual.len()
                && expected
                    .iter()
                    .zip(actual)
                    .all(|(expected, actual)| exactly_equal(expected, actual))
        }
        _ => scalars_equal(expected, actual),
    }
}

/// Hexadecimal text (either case, possibly empty) as bytes.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

fn at(path: &str) -> String {
    match path {
        "" => "at the root".to_owned(),
        path => format!("at {path}"),
    }
}

fn child(path: &str, key: &str) -> String {
    match path {
        "" => key.to_owned(),
        path => format!("{path}.{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::spec::BinarySubtype;
    use bson::{doc, Binary};

    use super::super::entities::Entity;

    fn json(text: &str) -> Bson {
        parse_extended_json(text).unwrap()
    }

    /// Matches `actual` against `expected` (both Extended JSON) as root-level values.
    fn check(expected: &str, actual: &str) -> Result<(), String> {
        let mut entities = EntityMap::default();
        entities
            .insert("saved", Entity::Value(Bson::Int32(42)))
            .unwrap();
        Matcher::new(&entities).root(&json(expected), &json(actual))
    }

    fn passes(expected: &str, actual: &str) {
        if let Err(why) = check(expected, actual) {
            panic!("{actual} should match {expected}: {why}");
        }
    }

    fn fails(expected: &str, actual: &str, because: &str) {
        match check(expected, actual) {
            Ok(()) => panic!("{actual} should not match {expected}"),
            Err(why) => assert!(why.contains(because), "{why:?} should say {because:?}"),
        }
    }

    #[test]
    fn root_documents_allow_extra_fields_nested_ones_do_not() {
        passes(r#"{"x": 1}"#, r#"{"x": 1, "y": 1}"#);
        fails(r#"{"x": 1, "y": 1}"#, r#"{"x": 1}"#, "at y: missing");
        fails(
            r#"{"x": {"y": 1}}"#,
            r#"{"x": {"y": 1, "z": 1}}"#,
            "unexpected field \"z\"",
        );
        passes(r#"{"x": {"y": 1}}"#, r#"{"x": {"y": 1}}"#);
        // Documents inside arrays are nested documents too.
        fails(
            r#"{"a": [{"y": 1}]}"#,
            r#"{"a": [{"y": 1, "z": 1}]}"#,
            "unexpected",
        );
    }

    #[test]
    fn key_order_does_not_matter() {
        passes(
            r#"{"x": 1, "y": {"a": 1, "b": 2}}"#,
            r#"{"y": {"b": 2, "a": 1}, "x": 1}"#,
        );
    }

    #[test]
    fn arrays_must_have_the_same_length_and_matching_elements() {
        passes("[1, 2, 3]", "[1, 2, 3]");
        fails("[1, 2, 3]", "[1, 2, 3, 4]", "expected 3 elements, got 4");
        fails("[1, 2]", "[1, 3]", "at 1: expected 2, got 3");
        fails("[1]", r#"{"0": 1}"#, "expected an array");
    }

    #[test]
    fn numbers_compare_numerically_across_int32_int64_and_double() {
        passes("1", "1.0");
        passes("1", r#"{"$numberLong": "1"}"#);
        passes(r#"{"$numberLong": "1"}"#, "1.0");
        fails("1", "1.5", "expected 1, got 1.5");
        // Decimal128 is not a flexible numeric type.
        fails("1", r#"{"$numberDecimal": "1"}"#, "expected 1");
        fails(r#""1""#, "1", "expected \"1\"");
        passes(
            r#"{"$oid": "000000000000000000000001"}"#,
            r#"{"$oid": "000000000000000000000001"}"#,
        );
        fails("true", "1", "expected true");
        fails("null", "0", "expected null");
    }

    #[test]
    fn exists() {
        passes(r#"{"a": {"$$exists": true}}"#, r#"{"a": null}"#);
        fails(
            r#"{"a": {"$$exists": true}}"#,
            r#"{"b": 1}"#,
            "missing, expected to exist",
        );
        passes(r#"{"a": {"$$exists": false}}"#, r#"{"b": 1}"#);
        fails(
            r#"{"a": {"$$exists": false}}"#,
            r#"{"a": 1}"#,
            "expected to be absent",
        );
        // Nested: an absent field does not count as an extra one.
        passes(
            r#"{"n": {"a": 1, "b": {"$$exists": false}}}"#,
            r#"{"n": {"a": 1}}"#,
        );
        fails(
            r#"{"a": {"$$exists": 1}}"#,
            r#"{"a": 1}"#,
            "takes a boolean",
        );
    }

    #[test]
    fn type_takes_one_alias_or_several() {
        passes(r#"{"a": {"$$type": "string"}}"#, r#"{"a": "x"}"#);
        fails(
            r#"{"a": {"$$type": "string"}}"#,
            r#"{"a": 1}"#,
            "expected a value of type",
        );
        passes(
            r#"{"a": {"$$type": ["int", "long"]}}"#,
            r#"{"a": {"$numberLong": "1"}}"#,
        );
        fails(
            r#"{"a": {"$$type": ["int", "long"]}}"#,
            r#"{"a": 1.5}"#,
            "of type",
        );
        passes(r#"{"a": {"$$type": "number"}}"#, r#"{"a": 1.5}"#);
        passes(r#"{"a": {"$$type": "array"}}"#, r#"{"a": ["x"]}"#);
        passes(
            r#"{"a": {"$$type": "objectId"}}"#,
            r#"{"a": {"$oid": "000000000000000000000001"}}"#,
        );
        passes(
            r#"{"a": {"$$type": "date"}}"#,
            r#"{"a": {"$date": {"$numberLong": "0"}}}"#,
        );
        fails(r#"{"a": {"$$type": "int"}}"#, r#"{"b": 1}"#, "missing");
        fails(
            r#"{"a": {"$$type": "integer"}}"#,
            r#"{"a": 1}"#,
            "unknown $$type alias",
        );
        // At the root of a value, not only as a field.
        passes(r#"{"$$type": "object"}"#, r#"{"x": 1}"#);
    }

    #[test]
    fn matches_entity_compares_with_a_saved_value() {
        passes(r#"{"a": {"$$matchesEntity": "saved"}}"#, r#"{"a": 42}"#);
        fails(
            r#"{"a": {"$$matchesEntity": "saved"}}"#,
            r#"{"a": 43}"#,
            "expected 42",
        );
        fails(
            r#"{"a": {"$$matchesEntity": "nobody"}}"#,
            r#"{"a": 42}"#,
            "nobody",
        );
    }

    #[test]
    fn matches_hex_bytes() {
        let entities = EntityMap::default();
        let matcher = Matcher::new(&entities);
        let bytes = Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0x12, 0xab],
        });
        let expected = |hex: &str| Bson::Document(doc! { "$$matchesHexBytes": hex });
        matcher.root(&expected("12AB"), &bytes).unwrap();
        matcher
            .root(&expected("12ab"), &Bson::String("12AB".into()))
            .unwrap();
        let wrong = matcher.root(&expected("12AC"), &bytes).unwrap_err();
        assert!(wrong.contains("expected the bytes 12AC"), "{wrong}");
        let malformed = matcher.root(&expected("123"), &bytes).unwrap_err();
        assert!(malformed.contains("not hexadecimal"), "{malformed}");
        matcher
            .root(
                &expected(""),
                &Bson::Binary(Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: vec![],
                }),
            )
            .unwrap();
    }

    #[test]
    fn unset_or_matches() {
        passes(r#"{"a": {"$$unsetOrMatches": 1}}"#, r#"{}"#);
        passes(r#"{"a": {"$$unsetOrMatches": 1}}"#, r#"{"a": 1.0}"#);
        fails(
            r#"{"a": {"$$unsetOrMatches": 1}}"#,
            r#"{"a": 2}"#,
            "expected 1, got 2",
        );
        // It does not make the value root-level: a nested document allows no extras...
        fails(
            r#"{"a": {"$$unsetOrMatches": {"x": 1}}}"#,
            r#"{"a": {"x": 1, "y": 2}}"#,
            "unexpected field",
        );
        // ...but a root-level one still does.
        passes(r#"{"$$unsetOrMatches": {"x": 1}}"#, r#"{"x": 1, "y": 2}"#);
        // Its argument may use operators.
        passes(
            r#"{"a": {"$$unsetOrMatches": {"$$type": "int"}}}"#,
            r#"{"a": 3}"#,
        );
    }

    #[test]
    fn session_lsid_needs_a_session_entity() {
        fails(
            r#"{"lsid": {"$$sessionLsid": "saved"}}"#,
            r#"{"lsid": {"id": 1}}"#,
            "not a session",
        );
        fails(
            r#"{"lsid": {"$$sessionLsid": "session0"}}"#,
            r#"{"lsid": {"id": 1}}"#,
            "session0",
        );
    }

    #[test]
    fn lte_compares_numerically() {
        passes(r#"{"a": {"$$lte": 1}}"#, r#"{"a": 1.0}"#);
        passes(r#"{"a": {"$$lte": 1}}"#, r#"{"a": 0.0}"#);
        passes(r#"{"a": {"$$lte": {"$numberLong": "5"}}}"#, r#"{"a": 5}"#);
        fails(
            r#"{"a": {"$$lte": 1}}"#,
            r#"{"a": 1.1}"#,
            "expected at most 1",
        );
        fails(
            r#"{"a": {"$$lte": 1}}"#,
            r#"{"a": "0"}"#,
            "compares numbers",
        );
        fails(r#"{"a": {"$$lte": 1}}"#, r#"{}"#, "compares numbers");
    }

    #[test]
    fn match_as_document_parses_extended_json_strings_without_extras() {
        passes(
            r#"{"a": {"$$matchAsDocument": {"x": {"$numberLong": "1"}}}}"#,
            r#"{"a": "{\"x\": {\"$numberLong\": \"1\"}}"}"#,
        );
        fails(
            r#"{"a": {"$$matchAsDocument": {"x": 1}}}"#,
            r#"{"a": "{\"x\": 1, \"y\": 2}"}"#,
            "unexpected field",
        );
        fails(
            r#"{"a": {"$$matchAsDocument": {"x": 1}}}"#,
            r#"{"a": {"x": 1}}"#,
            "needs an Extended JSON string",
        );
        fails(
            r#"{"a": {"$$matchAsDocument": {"x": 1}}}"#,
            r#"{"a": "[1]"}"#,
            "is not a document",
        );
    }

    #[test]
    fn match_as_root_allows_extra_fields_in_a_nested_document() {
        passes(
            r#"{"a": {"$$matchAsRoot": {"x": 1}}}"#,
            r#"{"a": {"x": 1, "y": 2}}"#,
        );
        fails(
            r#"{"a": {"$$matchAsRoot": {"x": 1}}}"#,
            r#"{"a": {"x": 2, "y": 2}}"#,
            "expected 1",
        );
        passes(
            r#"{"a": {"$$matchAsDocument": {"$$matchAsRoot": {"x": 1}}}}"#,
            r#"{"a": "{\"x\": 1, \"y\": 2}"}"#,
        );
    }

    #[test]
    fn unknown_operators_fail() {
        fails(
            r#"{"a": {"$$nope": 1}}"#,
            r#"{"a": 1}"#,
            "unknown special operator $$nope",
        );
        // Two keys: an ordinary document, not an operator.
        fails(
            r#"{"a": {"$$exists": true, "b": 1}}"#,
            r#"{"a": 1}"#,
            "expected a document",
        );
    }

    #[test]
    fn exact_equality_ignores_key_order_and_numeric_types_only() {
        let equal = |a: &str, b: &str| exactly_equal(&json(a), &json(b));
        assert!(equal(
            r#"{"_id": 1, "x": {"a": 1, "b": 2}}"#,
            r#"{"x": {"b": 2, "a": 1}, "_id": 1.0}"#
        ));
        assert!(!equal(r#"{"_id": 1}"#, r#"{"_id": 1, "x": 1}"#));
        assert!(!equal(r#"{"_id": 1, "x": 1}"#, r#"{"_id": 1}"#));
        assert!(!equal(r#"{"x": {"$$exists": true}}"#, r#"{"x": 1}"#));
        assert!(!equal("[1, 2]", "[2, 1]"));
        assert!(!equal(r#""1""#, "1"));
    }
}
