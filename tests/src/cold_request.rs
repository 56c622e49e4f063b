//! The child's side of the `cold_request` measurement (a cold and a warm request
//! behind the latency proxy, see `anymongo_tests::latency`), shared by its native and
//! wasip2 builds and by the benchmark binary's child of the official Rust driver.
//!
//! A child creates a client and finds `{_id: 1}` in [`DATABASE`].[`COLLECTION`], and
//! prints `cold MS` (from before the client exists to the result); then, after a line
//! on stdin (the parent marks where the warm request's flights begin before it sends
//! the line), finds it again on the same client and prints `warm MS`.

use std::future::Future;
use std::time::Instant;

/// The database of the document found (the benchmark's, whose driver code looks there).
pub const DATABASE: &str = "perftest";
/// The collection of the document found.
pub const COLLECTION: &str = "corpus";

/// Runs `cold` (creating a client and finding the document), prints `cold MS`, waits
/// for a line on stdin, runs `warm` on the client and prints `warm MS`.
pub async fn cold_then_warm<C, Warm>(
    cold: impl Future<Output = Result<C, String>>,
    warm: impl FnOnce(C) -> Warm,
) -> Result<(), String>
where
    Warm: Future<Output = Result<(), String>>,
{
    let ms = |start: Instant| start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let client = cold.await?;
    println!("cold {:.1}", ms(start));
    next_line().await?;
    let start = Instant::now();
    warm(client).await?;
    println!("warm {:.1}", ms(start));
    Ok(())
}

/// Waits for a line on stdin, on a blocking thread: the client's background tasks go
/// on meanwhile.
#[cfg(not(target_os = "wasi"))]
async fn next_line() -> Result<(), String> {
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
        .await
        .map_err(|e| e.to_string())?
        .map(drop)
        .map_err(|e| format!("cannot read stdin: {e}"))
}

/// Waits for a line on stdin. A WASI client has no background tasks, so blocking the
/// one thread stops nothing.
#[cfg(target_os = "wasi")]
async fn next_line() -> Result<(), String> {
    std::io::stdin()
        .read_line(&mut String::new())
        .map(drop)
        .map_err(|e| format!("cannot read stdin: {e}"))
}

/// The client's find of the document: `Ok` when it is found.
pub async fn find(client: &anymongo::Client) -> Result<(), String> {
    let corpus = client
        .database(DATABASE)
        .collection::<anymongo::bson::Document>(COLLECTION);
    match corpus.find_one(anymongo::bson::doc! { "_id": 1 }).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err("no document with _id 1".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}
