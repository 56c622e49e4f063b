//! The BSON Binary Vector tests (`bson_binary_vector/`, spec
//! `bson-binary-vector/bson-binary-vector.md` and its `tests/README.md`), through the
//! `bson` crate's vector API (`bson::binary::Vector`).
//!
//! Each case of a file's `tests` array counts as one test. A valid case encodes
//! `{test_key: vector}` from the numbers, dtype and padding and expects
//! `canonical_bson`, then decodes `canonical_bson` and expects the same numbers, dtype and
//! padding (float32 values compared as `f32`, which the crate supports natively). An
//! invalid case expects the vector (when given) to be refused when encoding, and
//! `canonical_bson` (when given) to be refused when read as a vector. Documents go to
//! and come from bytes the driver's way, as in [`super::bson_corpus`].
//!
//! The crate's types carry the spec's rules: `Vector::Int8` holds `i8`, so 128 or 7.77
//! cannot become one; only `PackedBitVector` has a padding, so an int8 or float32
//! vector with one cannot be built; `PackedBitVector::new` refuses a padding above 7,
//! a padding without data and non-zero ignored bits.
//!
//! Not run: the README's prose tests (ignored bits, comparison).

use std::path::Path;

use anymongo::bson::binary::{PackedBitVector, Vector};
use anymongo::bson::{Binary, Bson, Document};
use serde_json::Value;

use super::bson_corpus::{bson_of, driver_decode};
use super::{run_json_cases, JsonTest, SuiteOutcome};
use crate::fuzz::unhex;

/// Runs the suite in `dir` (the corpus's `bson_binary_vector` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_cases(
        dir,
        &["tests"],
        |_, _| None,
        |file, _, case| run_case(file, case),
    )
}

/// Runs one case of a file whose content is `file`.
fn run_case(file: &JsonTest, case: &JsonTest) -> Result<(), String> {
    let key = file
        .get("test_key")
        .and_then(Value::as_str)
        .ok_or("the file has no 'test_key'")?;
    let valid = case
        .get("valid")
        .and_then(Value::as_bool)
        .ok_or("the case has no 'valid'")?;
    let canonical_bson = match case.get("canonical_bson") {
        None => None,
        Some(hex) => Some(
            hex.as_str()
                .and_then(unhex)
                .ok_or("'canonical_bson' is not hexadecimal")?,
        ),
    };
    let built = case.get("vector").map(|_| vector_of(case));
    if valid {
        let expected = built.ok_or("a valid case has no 'vector'")??;
        let canonical_bson = canonical_bson.ok_or("a valid case has no 'canonical_bson'")?;
        let mut document = Document::new();
        document.insert(key, Binary::from(&expected));
        let encoded = bson_of(&document)?;
        if encoded != canonical_bson {
            return Err(format!(
                "encoded {}, expected {}",
                crate::fuzz::hex(&encoded),
                crate::fuzz::hex(&canonical_bson)
            ));
        }
        let decoded = decode(&canonical_bson, key)?;
        if decoded != expected {
            return Err(format!("decoded {decoded:?}, expected {expected:?}"));
        }
        return Ok(());
    }
    if let Some(Ok(vector)) = built {
        return Err(format!("an invalid vector was built: {vector:?}"));
    }
    if let Some(bytes) = canonical_bson {
        if let Ok(vector) = decode(&bytes, key) {
            return Err(format!("invalid bytes were read as the vector {vector:?}"));
        }
    }
    Ok(())
}

/// The vector a case describes (`vector`, `dtype_hex`, `padding`), through the crate's
/// constructors; an error when the spec says it is invalid.
fn vector_of(case: &JsonTest) -> Result<Vector, String> {
    let numbers = case
        .get("vector")
        .and_then(Value::as_array)
        .ok_or("'vector' is not an array")?;
    let padding = case.get("padding").map_or(Some(0), Value::as_i64);
    let padding = padding.ok_or("'padding' is not an integer")?;
    let dtype = case
        .get("dtype_hex")
        .and_then(Value::as_str)
        .ok_or("the case has no 'dtype_hex'")?;
    match dtype {
        // Only a packed bit vector has a padding ("Padding": "MUST be 0" otherwise).
        "0x03" | "0x27" if padding != 0 => Err(format!("padding {padding} for dtype {dtype}")),
        "0x03" => numbers
            .iter()
            .map(integer)
            .collect::<Result<_, _>>()
            .map(Vector::Int8),
        "0x27" => numbers
            .iter()
            .map(|number| float(number).map(|value| value as f32))
            .collect::<Result<_, _>>()
            .map(Vector::Float32),
        "0x10" => {
            let bytes = numbers.iter().map(integer).collect::<Result<_, _>>()?;
            let padding = u8::try_from(padding).map_err(|e| format!("padding {padding}: {e}"))?;
            PackedBitVector::new(bytes, padding)
                .map(Vector::PackedBit)
                .map_err(|e| e.to_string())
        }
        other => Err(format!("unknown dtype {other}")),
    }
}

/// A number of a `vector` as the integer type `T`; an error for a fraction or a value
/// out of `T`'s range.
fn integer<T: TryFrom<i64>>(number: &Value) -> Result<T, String> {
    let value = number
        .as_i64()
        .ok_or_else(|| format!("{number} is not an integer"))?;
    T::try_from(value).map_err(|_| format!("{value} is out of range"))
}

/// A number of a `vector`: a JSON number or an Extended JSON `$numberDouble`
/// (`Infinity`, `-Infinity`).
fn float(number: &Value) -> Result<f64, String> {
    match Bson::try_from(number.clone()) {
        Ok(Bson::Double(value)) => Ok(value),
        Ok(Bson::Int32(value)) => Ok(f64::from(value)),
        Ok(Bson::Int64(value)) => Ok(value as f64),
        _ => Err(format!("{number} is not a number")),
    }
}

/// The vector under `key` of the document `bytes`, read by the driver.
fn decode(bytes: &[u8], key: &str) -> Result<Vector, String> {
    let document = driver_decode(bytes)?;
    match document.get(key) {
        Some(Bson::Binary(binary)) => Vector::try_from(binary).map_err(|e| e.to_string()),
        other => Err(format!("'{key}' is not a binary: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> JsonTest {
        serde_json::json!({ "test_key": "vector" })
            .as_object()
            .unwrap()
            .clone()
    }

    fn case(json: Value) -> JsonTest {
        json.as_object().unwrap().clone()
    }

    #[test]
    fn a_valid_case_must_encode_and_decode_exactly() {
        let good = serde_json::json!({
            "valid": true,
            "vector": [127, 7],
            "dtype_hex": "0x03",
            "canonical_bson": "1600000005766563746F7200040000000903007F0700",
        });
        assert_eq!(run_case(&file(), &case(good.clone())), Ok(()));
        let mut other_values = good.clone();
        other_values["vector"] = serde_json::json!([127, 8]);
        assert!(run_case(&file(), &case(other_values)).is_err());
        let mut other_dtype = good;
        other_dtype["dtype_hex"] = "0x10".into();
        assert!(run_case(&file(), &case(other_dtype)).is_err());
    }

    #[test]
    fn an_invalid_case_must_be_refused_both_ways() {
        let padded = serde_json::json!({
            "valid": false,
            "vector": [127, 7],
            "dtype_hex": "0x03",
            "padding": 3,
            "canonical_bson": "1600000005766563746F7200040000000903037F0700",
        });
        assert_eq!(run_case(&file(), &case(padded)), Ok(()));
        let fine = serde_json::json!({
            "valid": false,
            "vector": [127, 7],
            "dtype_hex": "0x03",
        });
        assert!(run_case(&file(), &case(fine)).is_err());
        let fine_bytes = serde_json::json!({
            "valid": false,
            "dtype_hex": "0x03",
            "canonical_bson": "1600000005766563746F7200040000000903007F0700",
        });
        assert!(run_case(&file(), &case(fine_bytes)).is_err());
    }
}
