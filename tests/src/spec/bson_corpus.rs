//! The BSON Corpus tests (`bson_corpus/`, spec `bson-corpus/bson-corpus.md`).
//!
//! Every case of every file's `valid`, `decodeErrors` and `parseErrors` arrays counts as
//! one test. A case runs through two codecs:
//!
//! - the driver's own path, for BSON: bytes as a server sends them are framed as an
//!   OP_MSG reply and decoded by [`Message::decode`] (which validates every document,
//!   with its depth limit), then turned into a [`Document`] the ways a cursor hands
//!   documents to users (`anymongo::bson_deserializer`: `document_from_slice` for a
//!   `Document`, which must be the document as stored, `Document::try_from(&RawDocument)`;
//!   `deserialize_from_slice` for any other type, whose `Document` must be the same or,
//!   where the bson crate's `Document` visitor would read a key as extended JSON, an
//!   error saying so; each must refuse the bytes of every `decodeErrors` case by itself
//!   too); a document goes back to bytes
//!   the two ways the driver sends documents, `RawDocumentBuf::try_from(&Document)`
//!   (commands) and `anymongo::bson_serializer` (a user's documents), and through
//!   [`OpMsg::encode`];
//! - the `bson` crate's Extended JSON (`Document::try_from(serde_json::Map)`,
//!   `Bson::into_canonical_extjson`, `Bson::into_relaxed_extjson`), the native
//!   representation being [`Document`].
//!
//! A `valid` case checks the assertions of "Testing validity" for a codec with a native
//! representation (cB, dB, cEJ, dEJ and rEJ), and that its canonical and relaxed Extended
//! JSON, taken as plain JSON (`$` keys as field names) and stored as BSON, read back as
//! stored; `converted_bson` and `converted_extjson`
//! ("MAY be ignored", "Deprecated types") are not checked. A `decodeErrors` case passes
//! when the driver refuses the bytes. A `parseErrors` case of a document or binary
//! (`0x00`, `0x05`) must be valid JSON that the Extended JSON parser (or the encoding of
//! what it returns) refuses; of a Decimal128 (`0x13`), a string `Decimal128` does not
//! parse. Extended JSON is compared as parsed JSON (unordered objects, escapes
//! resolved), with `$numberDouble` strings compared by value, as "Extended JSON
//! encoding, escaping and ordering" and "Notes for certain types: Double" allow.
//!
//! The cases the `bson` crate gets wrong are skipped, each with its exact behaviour, in
//! [`BSON_CRATE_GAPS`].

use std::path::Path;
use std::str::FromStr;

use anymongo::bson::{self, Bson, Decimal128, Document, RawDocumentBuf};
use anymongo::bson_deserializer;
use anymongo::wire::{op_code, Message, MessageHeader, OpMsg, HEADER_LEN};
use serde_json::Value;

use super::{run_json_cases, JsonTest, SuiteOutcome};
use crate::fuzz::unhex;

/// The reason of a case skipped for a gap of the `bson` crate starts with this.
pub const BSON_CRATE_GAP: &str = "bson crate gap: ";

/// One case the `bson` crate gets wrong.
#[derive(Debug)]
pub struct CrateGap {
    /// The file, relative to the suite folder.
    pub file: &'static str,
    /// The case's `description`.
    pub case: &'static str,
    /// A parse error's input (its `string`): descriptions repeat among them
    /// (`decimal128-6.json` has two "2 signs").
    pub input: Option<&'static str>,
    /// What the crate does wrong.
    pub gap: &'static str,
}

/// `Decimal128::from_str` takes strings that the Decimal128 spec's grammar refuses
/// ("Decimal128 (type 0x13)": they "cannot be successfully converted").
const DECIMAL_NO_DIGITS: &str =
    "Decimal128::from_str accepts a number without digits (empty, a lone '.', or an \
     exponent with no coefficient) as zero";
const DECIMAL_TWO_SIGNS: &str =
    "Decimal128::from_str accepts two leading signs ('++1', '-+1') and keeps the first";

/// A parse error case of a Decimal128 file that `Decimal128::from_str` accepts.
const fn decimal(file: &'static str, case: &'static str, input: &'static str) -> CrateGap {
    let gap = match input.as_bytes() {
        [b'+' | b'-', b'+' | b'-', ..] => DECIMAL_TWO_SIGNS,
        _ => DECIMAL_NO_DIGITS,
    };
    CrateGap {
        file,
        case,
        input: Some(input),
        gap,
    }
}

/// The cases the `bson` crate (3.1) gets wrong; each is skipped with its gap.
pub static BSON_CRATE_GAPS: &[CrateGap] = &[
    // Extended JSON spec, "Conversion table": a relaxed `$date` is an ISO-8601 string
    // only for years 1970 to 9999, else `{"$numberLong": ...}`.
    CrateGap {
        file: "datetime.json",
        case: "Y10K",
        input: None,
        gap: "relaxed Extended JSON of a date after 9999 (10000-01-01) is the ISO-8601 string \
              \"9999-12-31T23:59:59.999999999Z\" (clamped, another instant) instead of \
              {\"$date\": {\"$numberLong\": \"253402300800000\"}}",
    },
    // Extended JSON spec, "Parsers": `$date` holds a string or `{"$numberLong": ...}`.
    CrateGap {
        file: "top.json",
        case: "Bad $date (number, not string or hash)",
        input: Some("{\"a\" : {\"$date\" : 42}}"),
        gap: "the Extended JSON parser accepts {\"$date\": 42} (a bare JSON number) as a date",
    },
    decimal("decimal128-6.json", "Exponent at the beginning", "E01"),
    decimal("decimal128-6.json", "Just a decimal place", "."),
    decimal("decimal128-6.json", "2 signs", "-+32.4"),
    decimal("decimal128-6.json", "Empty string", ""),
    decimal(
        "decimal128-7.json",
        "[basx503] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        "++1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx505] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        "-+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx501] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        ".",
    ),
    decimal(
        "decimal128-7.json",
        "[basx519] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        "",
    ),
    decimal(
        "decimal128-7.json",
        "[basx525] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        "e100",
    ),
    decimal(
        "decimal128-7.json",
        "[basx549] The 'baddies' tests from DiagBigDecimal, plus some new ones (Conversion_syntax)",
        "e+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx577] some baddies with dots and Es and dots and specials (Conversion_syntax)",
        ".e+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx578] some baddies with dots and Es and dots and specials (Conversion_syntax)",
        "+.e+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx581] some baddies with dots and Es and dots and specials (Conversion_syntax)",
        "E+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx582] some baddies with dots and Es and dots and specials (Conversion_syntax)",
        ".E+1",
    ),
    decimal(
        "decimal128-7.json",
        "[basx583] some baddies with dots and Es and dots and specials (Conversion_syntax)",
        "+.E+1",
    ),
];

/// Runs the suite in `dir` (the corpus's `bson_corpus` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_cases(
        dir,
        &["valid", "decodeErrors", "parseErrors"],
        |file, case| {
            let description = case.get("description").and_then(Value::as_str)?;
            let input = case.get("string").and_then(Value::as_str);
            crate_gap(file, description, input).map(|gap| format!("{BSON_CRATE_GAP}{gap}"))
        },
        |file, kind, case| match kind {
            "valid" => valid(case),
            "decodeErrors" => decode_error(case),
            _ => parse_error(file, case),
        },
    )
}

/// The gap that makes the case `description` (with the parse error input `input`) of
/// `file` fail, if any.
fn crate_gap(file: &str, description: &str, input: Option<&str>) -> Option<&'static str> {
    BSON_CRATE_GAPS
        .iter()
        .find(|gap| gap.file == file && gap.case == description && gap.input == input)
        .map(|gap| gap.gap)
}

/// "Testing validity": the assertions for a codec with a native representation.
fn valid(case: &JsonTest) -> Result<(), String> {
    let canonical_bson =
        hex_field(case, "canonical_bson")?.ok_or("the case has no 'canonical_bson'")?;
    let canonical_extjson =
        json_field(case, "canonical_extjson")?.ok_or("the case has no 'canonical_extjson'")?;
    let relaxed_extjson = json_field(case, "relaxed_extjson")?;
    let lossy = case.get("lossy").and_then(Value::as_bool).unwrap_or(false);

    // cB: native_to_bson(bson_to_native(cB)) = cB, and to cEJ and rEJ.
    let native = driver_decode(&canonical_bson).map_err(|why| format!("cB: {why}"))?;
    expect_bson("cB → native → BSON", &native, &canonical_bson)?;
    expect_extjson("cB → native → cEJ", canonical(&native), &canonical_extjson)?;
    if let Some(relaxed_extjson) = &relaxed_extjson {
        expect_extjson("cB → native → rEJ", relaxed(&native), relaxed_extjson)?;
    }

    // dB: native_to_bson(bson_to_native(dB)) = cB.
    if let Some(degenerate_bson) = hex_field(case, "degenerate_bson")? {
        let native = driver_decode(&degenerate_bson).map_err(|why| format!("dB: {why}"))?;
        expect_bson("dB → native → BSON", &native, &canonical_bson)?;
    }

    // cEJ and dEJ: to cEJ, and to cB unless lossy.
    let mut extjson = vec![("cEJ", canonical_extjson.clone())];
    if let Some(degenerate_extjson) = json_field(case, "degenerate_extjson")? {
        extjson.push(("dEJ", degenerate_extjson));
    }
    for (name, input) in extjson {
        let native = parse_extjson(input).map_err(|why| format!("{name}: {why}"))?;
        expect_extjson(
            &format!("{name} → native → cEJ"),
            canonical(&native),
            &canonical_extjson,
        )?;
        if !lossy {
            expect_bson(&format!("{name} → native → BSON"), &native, &canonical_bson)?;
        }
    }

    // rEJ: native_to_relaxed_extended_json(json_to_native(rEJ)) = rEJ.
    if let Some(relaxed_extjson) = &relaxed_extjson {
        let native = parse_extjson(relaxed_extjson.clone()).map_err(|why| format!("rEJ: {why}"))?;
        expect_extjson("rEJ → native → rEJ", relaxed(&native), relaxed_extjson)?;
    }

    // Not the spec's: the Extended JSON taken as plain JSON (its `$` keys field names,
    // as a document stored from `JSON.parse` or `json.loads` has them) is a BSON
    // document like any other, which must read back as stored (`driver_decode`).
    for (name, json) in [("cEJ", Some(canonical_extjson)), ("rEJ", relaxed_extjson)] {
        let Some(plain) = json.and_then(|json| plain_document(&json)) else {
            continue;
        };
        // A key with a NUL cannot be BSON: nothing to store.
        let Ok(stored) = bson::serialize_to_vec(&plain) else {
            continue;
        };
        let read = driver_decode(&stored).map_err(|why| format!("{name} as plain JSON: {why}"))?;
        expect_bson(
            &format!("{name} as plain JSON → native → BSON"),
            &read,
            &stored,
        )?;
    }
    Ok(())
}

/// The JSON object `json` as a document of plain JSON values, no key interpreted
/// (integers as Int32 or Int64, other numbers as doubles).
fn plain_document(json: &Value) -> Option<Document> {
    fn plain(json: &Value) -> Bson {
        match json {
            Value::Null => Bson::Null,
            Value::Bool(value) => Bson::Boolean(*value),
            Value::Number(number) => match number.as_i64() {
                Some(value) => i32::try_from(value).map_or(Bson::Int64(value), Bson::Int32),
                None => Bson::Double(number.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => Bson::String(text.clone()),
            Value::Array(values) => Bson::Array(values.iter().map(plain).collect()),
            Value::Object(map) => Bson::Document(
                map.iter()
                    .map(|(key, value)| (key.clone(), plain(value)))
                    .collect(),
            ),
        }
    }
    match plain(json) {
        Bson::Document(document) => Some(document),
        _ => None,
    }
}

/// "Testing decode errors": the driver refuses the bytes when a server sends them.
fn decode_error(case: &JsonTest) -> Result<(), String> {
    let bytes = hex_field(case, "bson")?.ok_or("the case has no 'bson'")?;
    if let Ok(document) = bson_deserializer::deserialize_from_slice::<Document>(&bytes) {
        return Err(format!(
            "the deserializer takes the invalid bytes by itself: {document:?}"
        ));
    }
    if let Ok(document) = bson_deserializer::document_from_slice(&bytes) {
        return Err(format!(
            "document_from_slice takes the invalid bytes by itself: {document:?}"
        ));
    }
    match driver_decode(&bytes) {
        Err(_) => Ok(()),
        Ok(document) => Err(format!("decoded, but the bytes are invalid: {document:?}")),
    }
}

/// "Testing parsing errors", by the file's `bson_type`.
fn parse_error(file: &JsonTest, case: &JsonTest) -> Result<(), String> {
    let input = case
        .get("string")
        .and_then(Value::as_str)
        .ok_or("the case has no 'string'")?;
    match file.get("bson_type").and_then(Value::as_str) {
        // "Top-level Document (type 0x00)", and "Binary (type 0x05)" by the same rules:
        // valid JSON that the Extended JSON parser refuses.
        Some("0x00" | "0x05") => {
            let json: Value = serde_json::from_str(input)
                .map_err(|e| format!("the input is not even JSON ({e}): {input}"))?;
            match parse_extjson(json) {
                Err(_) => Ok(()),
                Ok(native) => match bson_of(&native) {
                    Err(_) => Ok(()),
                    Ok(_) => Err(format!("parsed and encoded, but is invalid: {native:?}")),
                },
            }
        }
        // "Decimal128 (type 0x13)": the string cannot become a Decimal128.
        Some("0x13") => match Decimal128::from_str(input) {
            Err(_) => Ok(()),
            Ok(value) => Err(format!("parsed {input:?} as the Decimal128 {value}")),
        },
        other => Err(format!("no parse error rule for bson_type {other:?}")),
    }
}

/// The driver's path from bytes a server sent to what a user gets: `bytes` as the body
/// of an OP_MSG reply, decoded and validated by [`Message::decode`]; the body keeps
/// the bytes as sent, and becomes a [`Document`] the way a cursor deserializes one.
pub(super) fn driver_decode(bytes: &[u8]) -> Result<Document, String> {
    let body_len = 4 + 1 + bytes.len();
    let header = MessageHeader {
        length: i32::try_from(HEADER_LEN + body_len).map_err(|e| e.to_string())?,
        request_id: 2,
        response_to: 1,
        op_code: op_code::MSG,
    };
    // flagBits 0, then a kind-0 section holding the document.
    let mut body = Vec::with_capacity(body_len);
    body.extend_from_slice(&0u32.to_le_bytes());
    body.push(0);
    body.extend_from_slice(bytes);
    let reply = Message::decode(&header, &body)
        .and_then(Message::into_reply_document)
        .map_err(|e| format!("the driver refuses the reply: {e}"))?;
    if reply.as_bytes() != bytes {
        return Err(format!(
            "the reply's body changed in decoding: {}",
            hex(reply.as_bytes())
        ));
    }
    // The document as stored: the bson crate's raw conversion, which interprets no key.
    let raw = bson::RawDocument::from_bytes(reply.as_bytes()).map_err(|e| e.to_string())?;
    let as_stored = Document::try_from(raw)
        .map_err(|e| format!("the bson crate cannot convert the raw document: {e}"))?;
    // Compared as bytes: a NaN is not equal to itself.
    let bytes_of =
        |document: &Document| bson::serialize_to_vec(document).map_err(|e| e.to_string());
    let expected = bytes_of(&as_stored)?;
    // What a cursor of `Document`s yields.
    let document = bson_deserializer::document_from_slice(reply.as_bytes())
        .map_err(|e| format!("document_from_slice cannot read the document: {e}"))?;
    if bytes_of(&document)? != expected {
        return Err(format!(
            "document_from_slice's document is not as stored: {document:?} against {as_stored:?}"
        ));
    }
    // Through serde (a bson `Document` inside a user's type): as stored, or refused
    // where the bson crate's `Document` would read a key as extended JSON.
    match bson_deserializer::deserialize_from_slice::<Document>(reply.as_bytes()) {
        Ok(through_serde) if bytes_of(&through_serde)? == expected => {}
        Err(e) if e.to_string().contains("as extended JSON") => {}
        other => {
            return Err(format!(
            "deserialize_from_slice's document is not as stored: {other:?} against {as_stored:?}"
        ))
        }
    }
    Ok(document)
}

/// The bytes the driver sends for `document`: the command path
/// (`RawDocumentBuf::try_from`) through an encoded OP_MSG, which must agree with the
/// path of a user's documents (`anymongo::bson_serializer`, which writes most types
/// itself and leaves the rest to `bson::serialize_to_buffer`).
pub(super) fn bson_of(document: &Document) -> Result<Vec<u8>, String> {
    let raw = RawDocumentBuf::try_from(document)
        .map_err(|e| format!("the document cannot be encoded: {e}"))?;
    let frame = OpMsg::new(raw).encode(1, 0);
    let header = MessageHeader::parse(
        frame[..HEADER_LEN]
            .try_into()
            .map_err(|_| "the frame has no header")?,
    );
    let sent = Message::decode(&header, &frame[HEADER_LEN..])
        .and_then(Message::into_reply_document)
        .map_err(|e| format!("the encoded message does not decode: {e}"))?
        .into_bytes();
    let serialized = anymongo::bson_serializer::serialize_to_vec(document)
        .map_err(|e| format!("the document cannot be serialized: {e}"))?;
    if serialized != sent {
        return Err(format!(
            "bson_serializer gives {}, RawDocumentBuf::try_from {}",
            hex(&serialized),
            hex(&sent)
        ));
    }
    Ok(sent)
}

/// Checks that `native` encodes to `expected`.
fn expect_bson(what: &str, native: &Document, expected: &[u8]) -> Result<(), String> {
    let actual = bson_of(native).map_err(|why| format!("{what}: {why}"))?;
    if actual != expected {
        return Err(format!(
            "{what}: expected {}, got {}",
            hex(expected),
            hex(&actual)
        ));
    }
    Ok(())
}

/// Checks that `actual` is the Extended JSON `expected`, as normalized JSON.
fn expect_extjson(what: &str, actual: Value, expected: &Value) -> Result<(), String> {
    if normalized(actual.clone()) != normalized(expected.clone()) {
        return Err(format!("{what}: expected {expected}, got {actual}"));
    }
    Ok(())
}

/// `value` with every `$numberDouble` string replaced by its value's shortest form, so
/// that `1.0E+1` and `10.0` compare equal ("String representation of doubles is fairly
/// unportable").
fn normalized(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            if let (1, Some(Value::String(text))) = (map.len(), map.get("$numberDouble")) {
                if let Ok(number) = text.parse::<f64>() {
                    if !number.is_nan() {
                        return serde_json::json!({ "$numberDouble": format!("{number:e}") });
                    }
                }
            }
            Value::Object(
                map.into_iter()
                    .map(|(key, value)| (key, normalized(value)))
                    .collect(),
            )
        }
        Value::Array(values) => Value::Array(values.into_iter().map(normalized).collect()),
        other => other,
    }
}

/// The `bson` crate's Extended JSON parser, to the native representation.
fn parse_extjson(json: Value) -> Result<Document, String> {
    match json {
        Value::Object(map) => Document::try_from(map).map_err(|e| e.to_string()),
        other => Err(format!("not a JSON object: {other}")),
    }
}

/// `document` as canonical Extended JSON.
fn canonical(document: &Document) -> Value {
    Bson::Document(document.clone()).into_canonical_extjson()
}

/// `document` as relaxed Extended JSON.
fn relaxed(document: &Document) -> Value {
    Bson::Document(document.clone()).into_relaxed_extjson()
}

/// The optional field `name` of `case`: a string of hexadecimal digits, as bytes.
fn hex_field(case: &JsonTest, name: &str) -> Result<Option<Vec<u8>>, String> {
    match case.get(name) {
        None => Ok(None),
        Some(Value::String(text)) => unhex(text)
            .map(Some)
            .ok_or_else(|| format!("'{name}' is not hexadecimal")),
        Some(_) => Err(format!("'{name}' is not a string")),
    }
}

/// The optional field `name` of `case`: a string holding JSON, parsed.
fn json_field(case: &JsonTest, name: &str) -> Result<Option<Value>, String> {
    match case.get(name) {
        None => Ok(None),
        Some(Value::String(text)) => serde_json::from_str(text)
            .map(Some)
            .map_err(|e| format!("'{name}' is not JSON: {e}")),
        Some(_) => Err(format!("'{name}' is not a string")),
    }
}

/// Bytes as the corpus writes them: uppercase hexadecimal.
fn hex(bytes: &[u8]) -> String {
    crate::fuzz::hex(bytes).to_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(json: Value) -> JsonTest {
        json.as_object().unwrap().clone()
    }

    #[test]
    fn a_valid_case_checks_every_representation() {
        let good = case(serde_json::json!({
            "description": "Normal CODE",
            "canonical_bson": "0C0000001069000100000000",
            "canonical_extjson": "{\"i\" : {\"$numberInt\": \"1\"}}",
            "relaxed_extjson": "{\"i\" : 1}",
        }));
        assert_eq!(valid(&good), Ok(()));
        // The same case with a canonical Extended JSON of another value must fail.
        let mut wrong = good.clone();
        wrong.insert(
            "canonical_extjson".into(),
            "{\"i\" : {\"$numberInt\": \"2\"}}".into(),
        );
        assert!(valid(&wrong).is_err());
        let mut wrong = good;
        wrong.insert("canonical_bson".into(), "0C0000001069000200000000".into());
        assert!(valid(&wrong).is_err());
    }

    #[test]
    fn a_decode_error_must_be_refused_by_the_driver() {
        let truncated = case(serde_json::json!({ "bson": "05000000" }));
        assert_eq!(decode_error(&truncated), Ok(()));
        let fine = case(serde_json::json!({ "bson": "0500000000" }));
        assert!(decode_error(&fine).is_err());
    }

    #[test]
    fn a_parse_error_must_be_refused_by_the_parser() {
        let top = case(serde_json::json!({ "bson_type": "0x00" }));
        let bad = case(serde_json::json!({ "string": "{\"a\": {\"$numberInt\": \"x\"}}" }));
        assert_eq!(parse_error(&top, &bad), Ok(()));
        let fine = case(serde_json::json!({ "string": "{\"a\": {\"$numberInt\": \"1\"}}" }));
        assert!(parse_error(&top, &fine).is_err());
        let decimal = case(serde_json::json!({ "bson_type": "0x13" }));
        assert!(parse_error(&decimal, &fine).is_ok());
        let number = case(serde_json::json!({ "string": "1.5" }));
        assert!(parse_error(&decimal, &number).is_err());
    }

    #[test]
    fn doubles_compare_by_value() {
        let a = serde_json::json!({ "d": { "$numberDouble": "1.0E+1" } });
        let b = serde_json::json!({ "d": { "$numberDouble": "10.0" } });
        let c = serde_json::json!({ "d": { "$numberDouble": "10.5" } });
        assert_eq!(normalized(a.clone()), normalized(b));
        assert_ne!(normalized(a), normalized(c));
    }

    #[test]
    fn every_gap_is_unique() {
        for (at, gap) in BSON_CRATE_GAPS.iter().enumerate() {
            assert!(
                !BSON_CRATE_GAPS[..at]
                    .iter()
                    .any(|other| other.file == gap.file
                        && other.case == gap.case
                        && other.input == gap.input),
                "{gap:?} is listed twice"
            );
        }
    }
}
