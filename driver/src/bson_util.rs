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

/// A duration as a command's whole-seconds field (`expireAfterSeconds`,
/// `bucketMaxSpanSeconds`...), for `#[serde(with)]` on an `Option<Duration>`: sent as
/// an int64, read from any number a server may send; a negative or non-finite one is
/// an error.
pub(crate) mod seconds {
    use std::time::Duration;

    use bson::Bson;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        duration: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => {
                serializer.serialize_i64(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX))
            }
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let seconds = match Option::<Bson>::deserialize(deserializer)? {
            None | Some(Bson::Null) => return Ok(None),
            Some(Bson::Double(seconds)) if seconds.is_finite() && seconds >= 0.0 => {
                return Ok(Some(
                    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX),
                ))
            }
            Some(value) => super::as_i64(&value)
                .and_then(|seconds| u64::try_from(seconds).ok())
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "a number of seconds must be a non-negative number, not {value}"
                    ))
                })?,
        };
        Ok(Some(Duration::from_secs(seconds)))
    }
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
    fn seconds_are_read_from_any_number_and_never_negative() {
        #[derive(serde::Deserialize, serde::Serialize)]
        struct Ttl {
            #[serde(default, with = "seconds")]
            s: Option<Duration>,
        }
        let read = |value: Bson| bson::deserialize_from_document::<Ttl>(bson::doc! { "s": value });
        assert_eq!(
            read(Bson::Int32(60)).unwrap().s,
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            read(Bson::Int64(60)).unwrap().s,
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            read(Bson::Double(1.5)).unwrap().s,
            Some(Duration::from_millis(1500))
        );
        assert!(read(Bson::Int32(-1)).is_err());
        assert!(read(Bson::Double(f64::NAN)).is_err());
        assert!(read(Bson::String("1".into())).is_err());
        let sent = bson::serialize_to_document(&Ttl {
            s: Some(Duration::from_secs(9)),
        })
        .unwrap();
        assert_eq!(sent, bson::doc! { "s": 9_i64 });
    }

    #[test]
    fn only_present_fields_are_inserted() {
        let mut body = bson::doc! { "find": "c" };
        insert_present(&mut body, [("limit", Some(Bson::Int32(1))), ("skip", None)]);
        assert_eq!(body, bson::doc! { "find": "c", "limit": 1 });
    }
}
