//! The blocking API (`anymongo::sync`, feature `sync`) against a real SecantusDB
//! server, written as the official driver's sync documentation writes it: plain
//! `#[test]`s, no async runtime of the test's own, every action run with `.run()`.

use std::time::{Duration, Instant};

use anymongo::bson::{doc, Document};
use anymongo::change_stream::OperationType;
use anymongo::options::ClientOptions;
use anymongo::sync::Client;
use anymongo_tests::server;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Book {
    title: String,
    author: String,
    year: i32,
}

fn book(title: &str, author: &str, year: i32) -> Book {
    Book {
        title: title.into(),
        author: author.into(),
        year,
    }
}

/// How long a change stream test waits for its change.
const CHANGE_BOUND: Duration = Duration::from_secs(30);

#[test]
fn the_blocking_api_reads_and_writes_as_the_official_sync_driver() -> anymongo::Result<()> {
    let client = Client::with_uri_str(server::shared().uri())?;
    let database = client.database("sync_api_tests");
    let books = database.collection::<Book>("books");
    books.drop().run()?;

    let inserted = books
        .insert_many([
            book("Nineteen Eighty-Four", "George Orwell", 1949),
            book("Animal Farm", "George Orwell", 1945),
            book("Brave New World", "Aldous Huxley", 1932),
        ])
        .run()?;
    assert_eq!(inserted.inserted_ids.len(), 3);

    // find with a filter and a sort, the cursor iterated with `for`.
    let cursor = books
        .find(doc! { "author": "George Orwell" })
        .sort(doc! { "year": 1 })
        .run()?;
    let mut titles = Vec::new();
    for result in cursor {
        titles.push(result?.title);
    }
    assert_eq!(titles, ["Animal Farm", "Nineteen Eighty-Four"]);

    // The official driver's other way: advance and deserialize_current.
    let mut cursor = books
        .find(doc! {})
        .sort(doc! { "year": -1 })
        .batch_size(1)
        .run()?;
    let mut years = Vec::new();
    while cursor.advance()? {
        assert!(cursor.current().get("title").unwrap().is_some());
        years.push(cursor.deserialize_current()?.year);
    }
    assert_eq!(years, [1949, 1945, 1932]);

    let upserted = books
        .update_one(
            doc! { "title": "We" },
            doc! { "$set": { "author": "Yevgeny Zamyatin", "year": 1924 } },
        )
        .upsert(true)
        .run()?;
    assert_eq!(upserted.matched_count, 0);
    assert!(upserted.upserted_id.is_some());
    let we = books.find_one(doc! { "title": "We" }).run()?;
    assert_eq!(we, Some(book("We", "Yevgeny Zamyatin", 1924)));

    assert_eq!(books.count_documents(doc! {}).run()?, 4);
    assert_eq!(
        books
            .count_documents(doc! { "year": { "$lt": 1940 } })
            .run()?,
        2
    );

    let per_author: Vec<Document> = books
        .aggregate([
            doc! { "$group": { "_id": "$author", "books": { "$sum": 1 } } },
            doc! { "$sort": { "books": -1, "_id": 1 } },
        ])
        .run()?
        .collect::<anymongo::Result<_>>()?;
    assert_eq!(
        per_author.first(),
        Some(&doc! { "_id": "George Orwell", "books": 2 })
    );
    assert_eq!(per_author.len(), 3);

    let names = database.list_collection_names().run()?;
    assert!(names.contains(&"books".to_string()), "{names:?}");
    database.run_command(doc! { "ping": 1 }).run()?;

    books.drop().run()?;
    assert_eq!(books.count_documents(doc! {}).run()?, 0);
    client.shutdown().run();
    Ok(())
}

#[test]
fn a_change_stream_is_read_with_next_if_any() -> anymongo::Result<()> {
    // Options parsed with `.run()`, then the client built from them.
    let options = ClientOptions::parse(server::shared().uri()).run()?;
    let client = Client::with_options(options)?;
    let books = client
        .database("sync_api_tests")
        .collection::<Book>("watched");
    books.drop().run()?;
    client
        .database("sync_api_tests")
        .create_collection("watched")
        .run()?;

    let mut changes = books
        .watch()
        .max_await_time(Duration::from_millis(100))
        .run()?;
    books
        .insert_one(book("The Dispossessed", "Ursula K. Le Guin", 1974))
        .run()?;

    let started = Instant::now();
    let change = loop {
        if let Some(change) = changes.next_if_any()? {
            break change;
        }
        assert!(changes.is_alive());
        assert!(
            started.elapsed() < CHANGE_BOUND,
            "no change in {CHANGE_BOUND:?}"
        );
    };
    assert_eq!(change.operation_type, OperationType::Insert);
    assert_eq!(
        change.full_document.map(|book| book.title).as_deref(),
        Some("The Dispossessed")
    );
    assert!(changes.resume_token().is_some());
    changes.close()?;
    books.drop().run()?;
    Ok(())
}

#[test]
fn a_session_cursor_is_iterated_with_its_session() -> anymongo::Result<()> {
    let client = Client::with_uri_str(server::shared().uri())?;
    let numbers = client
        .database("sync_api_tests")
        .collection::<Document>("numbers");
    numbers.drop().run()?;
    numbers.insert_many((0..5).map(|n| doc! { "n": n })).run()?;

    let mut session = client.start_session().causal_consistency(true).run()?;
    let mut cursor = numbers
        .find(doc! {})
        .sort(doc! { "n": 1 })
        .batch_size(2)
        .session(&mut session)
        .run()?;
    let first = cursor.next(&mut session).transpose()?;
    assert_eq!(first.map(|d| d.get_i32("n").ok()), Some(Some(0)));
    let rest = cursor
        .iter(&mut session)
        .map(|document| document.map(|d| d.get_i32("n").unwrap_or(-1)))
        .collect::<anymongo::Result<Vec<_>>>()?;
    assert_eq!(rest, [1, 2, 3, 4]);

    // A transaction, as the official sync documentation writes one.
    session.start_transaction().run()?;
    numbers
        .insert_one(doc! { "n": 5 })
        .session(&mut session)
        .run()?;
    session.commit_transaction().run()?;
    assert_eq!(numbers.count_documents(doc! {}).run()?, 6);
    numbers.drop().run()?;
    Ok(())
}

/// GridFS as the official sync documentation writes it: an upload written with
/// `std::io::Write` (more than a chunk, so that chunks are inserted while writing), a
/// download read with `std::io::Read`, an aborted upload that leaves no file, and
/// the bucket's files iterated.
#[test]
fn gridfs_streams_are_std_io_writers_and_readers() -> anymongo::Result<()> {
    use std::io::{Read, Write};

    let client = Client::with_uri_str(server::shared().uri())?;
    let database = client.database("sync_api_gridfs");
    database.drop().run()?;
    let bucket = database.gridfs_bucket(None);

    let bytes: Vec<u8> = (0..300 * 1024).map(|i| (i % 251) as u8).collect();
    let mut upload_stream = bucket.open_upload_stream("data.bin").run()?;
    upload_stream.write_all(&bytes).expect("the upload");
    upload_stream.close().expect("the upload's end");
    let id = upload_stream.id().clone();

    let mut downloaded = Vec::new();
    let mut download_stream = bucket.open_download_stream(id).run()?;
    download_stream
        .read_to_end(&mut downloaded)
        .expect("the download");
    assert!(downloaded == bytes, "the download differs from the upload");

    let mut aborted = bucket.open_upload_stream("aborted.bin").run()?;
    aborted.write_all(&bytes).expect("the aborted upload");
    aborted.abort()?;
    assert!(aborted.write_all(b"more").is_err(), "writes after abort");

    let names: Vec<String> = bucket
        .find(doc! {})
        .run()?
        .map(|file| file.map(|file| file.filename.unwrap_or_default()))
        .collect::<anymongo::Result<_>>()?;
    assert_eq!(names, ["data.bin"]);
    Ok(())
}
