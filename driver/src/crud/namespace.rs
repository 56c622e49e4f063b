//! [`Namespace`]: where a collection lives.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A collection's full name: its database and its own name, `db.coll` as text.
///
/// ```
/// use anymongo::Namespace;
/// let namespace: Namespace = "shop.orders".parse()?;
/// assert_eq!(namespace, Namespace::new("shop", "orders"));
/// assert_eq!(namespace.to_string(), "shop.orders");
/// # Ok::<(), anymongo::error::Error>(())
/// ```
///
/// The default, with both names empty, names no collection: a bulk write model's
/// namespace left unset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Namespace {
    /// The database's name.
    pub db: String,
    /// The collection's name.
    pub coll: String,
}

impl Namespace {
    /// The namespace of collection `coll` in database `db`.
    pub fn new(db: impl Into<String>, coll: impl Into<String>) -> Namespace {
        Namespace {
            db: db.into(),
            coll: coll.into(),
        }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.db, self.coll)
    }
}

impl FromStr for Namespace {
    type Err = Error;

    /// Splits `db.coll` at its first dot (a database name has none; a collection
    /// name may).
    fn from_str(text: &str) -> Result<Namespace, Error> {
        match text.split_once('.') {
            Some((db, coll)) if !db.is_empty() && !coll.is_empty() => Ok(Namespace::new(db, coll)),
            _ => Err(Error::invalid_argument(format!(
                "{text:?} is not a namespace: expected \"database.collection\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_at_the_first_dot_and_refuses_what_is_not_one() {
        let namespace: Namespace = "db.system.views".parse().unwrap();
        assert_eq!(namespace, Namespace::new("db", "system.views"));
        for text in ["db", ".coll", "db.", ""] {
            assert!(text.parse::<Namespace>().is_err(), "{text:?}");
        }
    }
}
