//! Small BSON conversions used across the layers: numbers as servers send them, and
//! the fields a command is built from. Nothing here knows about commands or errors, so
//! every module may use it, from the protocol layer up.

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer};

/// An integer as a server may send it: int32, int64, or a double without a fraction
/// (servers and the shell are loose about numeric types; the specs say "a number").
pub(crate) fn as_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 && v.is_finite() => Some(*v as i64),
        _ => None,
    }
}

/// A duration as a command's milliseconds field (`maxTimeMS`, `maxAwaitTimeMS`...),
/// saturating at `i64::MAX`.
pub(crate) fn millis(duration: Duration) -> Bson {
    Bson::Int64(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
}

/// Inserts each present value under its key (an option left unset is not sent).
pub(crate) fn insert_present(
    body: &mut Document,
    fields: impl IntoIterator<Item = (&'static str, Option<Bson>)>,
) {
    for (key, value) in fields {
        if let Some(value) = value {
            body.insert(key, value);
        }
    }
}

/// Reads a duration given in milliseconds (`maxTimeMS`, `maxAwaitTimeMS`).
pub(crate) fn deserialize_millis<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    let value = Option::<i64>::deserialize(deserializer)?;
    Ok(value.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_whatever_their_bson_type() {
        assert_eq!(as_i64(&Bson::Int32(-7)), Some(-7));
        assert_eq!(as_i64(&Bson::Int64(1 << 40)), Some(1 << 40));
        assert_eq!(as_i64(&Bson::Double(f64::NAN)), None);
        assert_eq!(millis(Duration::from_millis(1500)), Bson::Int64(1500));
        assert_eq!(millis(Duration::MAX), Bson::Int64(i64::MAX));
    }

    #[test]
    fn only_present_fields_are_inserted() {
        let mut body = bson::doc! { "find": "c" };
        insert_present(&mut body, [("limit", Some(Bson::Int32(1))), ("skip", None)]);
        assert_eq!(body, bson::doc! { "find": "c", "limit": 1 });
    }
}
