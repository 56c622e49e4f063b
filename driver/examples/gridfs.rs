//! GridFS: a file uploaded through a stream in pieces, listed, and downloaded back.
//!
//! `cargo run --example gridfs` against `MONGODB_URI` (default `mongodb://localhost:27017`).
use anymongo::bson::doc;
use anymongo::Client;
use futures::{AsyncReadExt, AsyncWriteExt, TryStreamExt};

#[tokio::main]
async fn main() -> anymongo::Result<()> {
    let uri = std::env::var("MONGODB_URI").unwrap_or("mongodb://localhost:27017".into());
    let client = Client::with_uri_str(&uri).await?;
    let bucket = client.database("examples").gridfs_bucket(None);
    bucket.drop().await?;

    let mut upload = bucket
        .open_upload_stream("notes.txt")
        .metadata(doc! { "kind": "notes" })
        .await?;
    for line in ["first line\n", "second line\n"] {
        upload.write_all(line.as_bytes()).await?;
    }
    upload.close().await?;
    let id = upload.id().clone();

    let mut files = bucket.find(doc! { "metadata.kind": "notes" }).await?;
    while let Some(file) = files.try_next().await? {
        println!("{:?}: {} bytes", file.filename, file.length);
    }

    let mut content = String::new();
    bucket
        .open_download_stream(id)
        .await?
        .read_to_string(&mut content)
        .await?;
    print!("{content}");
    Ok(())
}
