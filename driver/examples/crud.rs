//! CRUD with serde types: insert many, find with a filter, sort and projection into a
//! second type, update, count, aggregate and delete.
//!
//! `cargo run --example crud` against `MONGODB_URI` (default `mongodb://localhost:27017`).
use anymongo::bson::{doc, Document};
use anymongo::Client;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

/// A stored book.
#[derive(Debug, Serialize, Deserialize)]
struct Book {
    title: String,
    author: String,
    year: i32,
}

/// What a projected query returns: the title alone.
#[derive(Debug, Deserialize)]
struct Title {
    title: String,
}

#[tokio::main]
async fn main() -> anymongo::Result<()> {
    let uri = std::env::var("MONGODB_URI").unwrap_or("mongodb://localhost:27017".into());
    let client = Client::with_uri_str(&uri).await?;
    let books = client.database("examples").collection::<Book>("books");
    books.drop().await?;

    let book = |title: &str, author: &str, year| Book {
        title: title.into(),
        author: author.into(),
        year,
    };
    let inserted = books
        .insert_many([
            book("Dune", "Frank Herbert", 1965),
            book("Neuromancer", "William Gibson", 1984),
            book("Count Zero", "William Gibson", 1986),
        ])
        .await?;
    println!("inserted {} books", inserted.inserted_ids.len());

    // The same collection seen through another type: a projection of the title.
    let titles: Vec<Title> = books
        .clone_with_type::<Title>()
        .find(doc! { "author": "William Gibson" })
        .sort(doc! { "year": 1 })
        .projection(doc! { "_id": 0, "title": 1 })
        .await?
        .try_collect()
        .await?;
    println!(
        "by Gibson: {:?}",
        titles.iter().map(|t| &t.title).collect::<Vec<_>>()
    );

    let updated = books
        .update_many(
            doc! { "year": { "$lt": 1980 } },
            doc! { "$set": { "classic": true } },
        )
        .await?;
    println!("marked {} classic", updated.modified_count);

    let per_author: Vec<Document> = books
        .aggregate([
            doc! { "$group": { "_id": "$author", "books": { "$sum": 1 } } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await?
        .try_collect()
        .await?;
    for row in &per_author {
        println!("{row}");
    }

    let deleted = books.delete_one(doc! { "title": "Dune" }).await?;
    let left = books.count_documents(doc! {}).await?;
    println!("deleted {}, {left} left", deleted.deleted_count);
    Ok(())
}
