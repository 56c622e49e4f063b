//! A transfer between two accounts in a transaction, retried as a whole on a transient
//! error (`StartTransaction::and_run2`, the Convenient Transactions API). Needs a
//! replica set or a sharded cluster.
//!
//! `cargo run --example transaction` against `MONGODB_URI` (default
//! `mongodb://localhost:27017`).
use anymongo::bson::{doc, Document};
use anymongo::Client;

#[tokio::main]
async fn main() -> anymongo::Result<()> {
    let uri = std::env::var("MONGODB_URI").unwrap_or("mongodb://localhost:27017".into());
    let client = Client::with_uri_str(&uri).await?;
    let accounts = client
        .database("examples")
        .collection::<Document>("accounts");
    accounts.drop().await?;
    // Created outside the transaction.
    accounts
        .insert_many([
            doc! { "_id": "alice", "balance": 100 },
            doc! { "_id": "bob", "balance": 0 },
        ])
        .await?;

    let mut session = client.start_session().await?;
    session
        .start_transaction()
        .and_run2(async |session| {
            accounts
                .update_one(doc! { "_id": "alice" }, doc! { "$inc": { "balance": -30 } })
                .session(&mut *session)
                .await?;
            accounts
                .update_one(doc! { "_id": "bob" }, doc! { "$inc": { "balance": 30 } })
                .session(&mut *session)
                .await?;
            Ok(())
        })
        .await?;

    for name in ["alice", "bob"] {
        let account = accounts.find_one(doc! { "_id": name }).await?;
        println!(
            "{name}: {}",
            account.map_or(0, |a| a.get_i32("balance").unwrap_or(0))
        );
    }
    Ok(())
}
