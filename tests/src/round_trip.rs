//! A typed document through `insert_one` and `find_one`, shared by the native test and
//! the wasip2 `round_trip` binary so that the two cannot drift: a struct with a nested
//! struct, arrays of structs and of scalars, dates, an `ObjectId`, a `Decimal128`, a
//! UUID (binary subtype 4) and `Option` fields both `Some` and `None` must come back
//! unchanged.

use anymongo::bson::oid::ObjectId;
use anymongo::bson::spec::BinarySubtype;
use anymongo::bson::{doc, Bson, DateTime, Decimal128, Document, Uuid};
use anymongo::{Client, Result};
use serde::{Deserialize, Serialize};

/// The database the round trip writes to.
pub const DATABASE: &str = "anymongo_round_trip";

/// The document sent and read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Given, so that the document is found again by it.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// A string.
    pub name: String,
    /// A 32-bit integer.
    pub age: i32,
    /// A 64-bit integer beyond 32 bits.
    pub visits: i64,
    /// A double.
    pub score: f64,
    /// A boolean.
    pub active: bool,
    /// A decimal that a double cannot hold exactly.
    pub balance: Decimal128,
    /// A UUID, binary subtype 4 on the wire.
    pub token: Uuid,
    /// A date.
    pub created: DateTime,
    /// A nested document.
    pub address: Address,
    /// An array of documents.
    pub orders: Vec<Order>,
    /// An array of scalars.
    pub tags: Vec<String>,
    /// An array of numbers.
    pub lucky: Vec<i32>,
    /// `Some`.
    pub nickname: Option<String>,
    /// `None`, sent as `null`.
    pub referrer: Option<ObjectId>,
    /// `None`, left out of the document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed: Option<DateTime>,
}

/// A nested document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Address {
    /// A string.
    pub city: String,
    /// `Some`, nested.
    pub zip: Option<String>,
    /// A date, nested.
    pub since: DateTime,
}

/// An element of an array of documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// A string.
    pub item: String,
    /// A decimal, in an array element.
    pub price: Decimal128,
    /// A date, in an array element.
    pub placed: DateTime,
    /// `None`, in an array element (sent as `null`).
    pub note: Option<String>,
}

/// The account every run sends. Fixed values only: what is sent and what is expected
/// back are the same on every run and every target.
///
/// # Panics
/// Never: its literals are valid.
pub fn sample() -> Account {
    let decimal = |text: &str| text.parse::<Decimal128>().expect("a valid decimal");
    Account {
        id: ObjectId::parse_str("65f0a1b2c3d4e5f601234567").expect("a valid ObjectId"),
        name: "Ada".into(),
        age: 36,
        visits: 5_000_000_000,
        score: 0.1 + 0.2,
        active: true,
        balance: decimal("1234567.8901"),
        token: Uuid::parse_str("6f1a7c2e-8d3b-4e5f-9a0b-1c2d3e4f5a6b").expect("a valid UUID"),
        created: DateTime::from_millis(1_700_000_000_123),
        address: Address {
            city: "London".into(),
            zip: Some("NW1".into()),
            since: DateTime::from_millis(-86_400_000),
        },
        orders: vec![
            Order {
                item: "tea".into(),
                price: decimal("3.10"),
                placed: DateTime::from_millis(1_600_000_000_000),
                note: Some("green".into()),
            },
            Order {
                item: "cake".into(),
                price: decimal("-0.00"),
                placed: DateTime::from_millis(1_600_000_000_001),
                note: None,
            },
        ],
        tags: vec!["a".into(), "é".into(), String::new()],
        lucky: vec![7, -1, i32::MAX],
        nickname: Some("Countess".into()),
        referrer: None,
        closed: None,
    }
}

/// What one round trip found.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The account sent.
    pub sent: Account,
    /// The account `find_one` gave back, typed.
    pub found: Option<Account>,
    /// The same document read untyped: what the server stored.
    pub stored: Option<Document>,
}

impl Outcome {
    /// What is wrong with the round trip, if anything: the typed document not back
    /// unchanged, or the server not storing the types the fields map to (a UUID as
    /// binary subtype 4, a `None` as `null` or not at all, as the struct says).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.found.as_ref() != Some(&self.sent) {
            problems.push(format!("sent {:?}, found {:?}", self.sent, self.found));
        }
        let Some(stored) = &self.stored else {
            problems.push("the document is not on the server".into());
            return problems;
        };
        let expect = |problems: &mut Vec<String>, field: &str, ok: bool| {
            if !ok {
                problems.push(format!("{field} is stored as {:?}", stored.get(field)));
            }
        };
        expect(
            &mut problems,
            "token",
            matches!(stored.get("token"), Some(Bson::Binary(binary)) if binary.subtype == BinarySubtype::Uuid),
        );
        expect(
            &mut problems,
            "balance",
            matches!(stored.get("balance"), Some(Bson::Decimal128(_))),
        );
        expect(
            &mut problems,
            "created",
            matches!(stored.get("created"), Some(Bson::DateTime(_))),
        );
        expect(
            &mut problems,
            "referrer",
            matches!(stored.get("referrer"), Some(Bson::Null)),
        );
        expect(&mut problems, "closed", !stored.contains_key("closed"));
        problems
    }
}

/// Drops `collection` of [`DATABASE`], inserts [`sample`] with `insert_one` and reads
/// it back with `find_one`, typed and untyped.
pub async fn run(client: &Client, collection: &str) -> Result<Outcome> {
    let accounts = client.database(DATABASE).collection::<Account>(collection);
    accounts.drop().await?;
    let sent = sample();
    accounts.insert_one(&sent).await?;
    let filter = doc! { "_id": sent.id };
    let found = accounts.find_one(filter.clone()).await?;
    let stored = accounts
        .clone_with_type::<Document>()
        .find_one(filter)
        .await?;
    Ok(Outcome {
        sent,
        found,
        stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_survives_bson_without_a_server() {
        let sent = sample();
        let bytes = anymongo::bson::serialize_to_vec(&sent).unwrap();
        let back: Account = anymongo::bson::deserialize_from_slice(&bytes).unwrap();
        assert_eq!(back, sent);
        let stored = anymongo::bson::serialize_to_document(&sent).unwrap();
        let outcome = Outcome {
            sent: sent.clone(),
            found: Some(back),
            stored: Some(stored),
        };
        assert_eq!(outcome.problems(), Vec::<String>::new());
        let wrong = Outcome {
            found: Some(Account {
                visits: 1,
                ..sent.clone()
            }),
            stored: Some(doc! { "token": "not binary", "closed": Bson::Null }),
            sent,
        };
        assert_eq!(wrong.problems().len(), 6, "{:?}", wrong.problems());
    }
}
