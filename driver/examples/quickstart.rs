//! The README's first program: typed documents in, an update, a sorted query out.
use anymongo::{bson::doc, Client};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Order {
    item: String,
    qty: i32,
}

#[tokio::main]
async fn main() -> anymongo::Result<()> {
    let uri = std::env::var("MONGODB_URI").unwrap_or("mongodb://localhost:27017".into());
    let client = Client::with_uri_str(&uri).await?;
    let orders = client.database("quickstart").collection::<Order>("orders");
    orders.drop().await?;
    orders
        .insert_one(Order {
            item: "tea".into(),
            qty: 2,
        })
        .await?;
    orders
        .update_one(doc! { "item": "tea" }, doc! { "$inc": { "qty": 1 } })
        .await?;
    let mut cursor = orders
        .find(doc! { "qty": { "$gt": 1 } })
        .sort(doc! { "qty": -1 })
        .await?;
    while let Some(order) = cursor.try_next().await? {
        println!("{order:?}");
    }
    Ok(())
}
