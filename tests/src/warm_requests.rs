//! Warm requests at a distance (issue 44): one client, kept between requests as an
//! edge host keeps it (a reused wasm instance, a Worker's Durable Object), behind the
//! latency proxy (`crate::latency`), whose flight log says how many round trips each
//! request took. A warm request takes 1; so does the request after one that dropped a
//! cursor before its end, in single-threaded mode too (its killCursors rides on that
//! request's round trip).
//!
//! A child follows the protocol: it reads steps on stdin, one a line, runs each on its
//! one client and answers `done STEP` once it ended (`failed STEP: WHY` if it
//! failed). The steps ([`STEPS`]): `find` finds `{_id: 1}` in
//! [`DATABASE`].[`COLLECTION`]; `abandon` finds the whole collection in batches of 2
//! (it holds [`DOCUMENTS`]), reads the first document and drops the cursor. The Rust
//! child is the `warm_requests` binary (`--child URI`, native single-threaded or
//! wasip2 under wasmtime); the npm package's, under Node.js and workerd, is
//! `tests/cold_request/steps.mjs`.

use anymongo::bson::{doc, Document};
use anymongo::Client;
use futures::TryStreamExt;

/// The database of the documents.
pub const DATABASE: &str = "warm_requests";
/// The collection of the documents.
pub const COLLECTION: &str = "items";
/// How many documents the collection holds (`_id`s 0 to 4): more than a batch.
pub const DOCUMENTS: i32 = 5;
/// What the parent asks, in order: the cold request, a warm one, one that abandons
/// its cursor, the one after it.
pub const STEPS: [&str; 4] = ["find", "find", "abandon", "find"];

/// Runs `step` on `client` (see the module documentation).
pub async fn step(client: &Client, step: &str) -> Result<(), String> {
    let items = client.database(DATABASE).collection::<Document>(COLLECTION);
    match step {
        "find" => match items.find_one(doc! { "_id": 1 }).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("no document with _id 1".to_owned()),
            Err(error) => Err(error.to_string()),
        },
        "abandon" => {
            let mut cursor = items
                .find(doc! {})
                .batch_size(2)
                .await
                .map_err(|error| error.to_string())?;
            cursor.try_next().await.map_err(|error| error.to_string())?;
            if cursor.id() == 0 {
                return Err("the cursor ended with its first batch".to_owned());
            }
            drop(cursor);
            Ok(())
        }
        _ => Err(format!("no step {step}")),
    }
}

/// The parent's side: needs the test machine.
#[cfg(not(target_os = "wasi"))]
mod parent {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    use anymongo::bson::{doc, Document};

    use super::{COLLECTION, DATABASE, DOCUMENTS, STEPS};
    use crate::latency::{round_trips, FlightLog, LatencyProxy};

    /// Each way: well above what a client takes between two flights on a busy machine
    /// (see `tests/tests/cold_request.rs`).
    pub const ONE_WAY: Duration = Duration::from_millis(25);
    /// The bound on each step, a cold one under workerd included (it compiles the
    /// Worker and its wasm first).
    const STEP_BOUND: Duration = Duration::from_secs(60);

    /// A child process, killed (and reaped) when dropped: on every way out.
    struct Killed(Child);

    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// What [`measure`] found: each step's round trips, and the flights for a report.
    pub struct Measured {
        /// The round trips of each of [`STEPS`], in order.
        pub round_trips: Vec<usize>,
        /// The flights of every step but the cold one.
        pub log: String,
    }

    /// Seeds the collection on the server at `server` (`host:port`, a standalone or
    /// one whose `directConnection` keeps the client on the proxy), starts the latency
    /// proxy in front of it, and runs the child `child` makes for the proxy's
    /// connection string through [`STEPS`], counting each step's round trips.
    pub async fn measure(
        server: &str,
        child: impl FnOnce(&str) -> Command,
    ) -> Result<Measured, String> {
        let seeding =
            anymongo::Client::with_uri_str(format!("mongodb://{server}/?directConnection=true"))
                .await
                .map_err(|error| error.to_string())?;
        let items = seeding
            .database(DATABASE)
            .collection::<Document>(COLLECTION);
        let documents: Vec<Document> = (0..DOCUMENTS).map(|n| doc! { "_id": n }).collect();
        let seeded = async {
            items.drop().await?;
            items.insert_many(documents).await
        };
        seeded.await.map_err(|error| error.to_string())?;
        drop(seeding);

        let proxy = LatencyProxy::start(server, ONE_WAY)
            .await
            .map_err(|error| error.to_string())?;
        let uri = format!(
            "mongodb://{}/?directConnection=true&serverMonitoringMode=poll",
            proxy.address()
        );
        let mut command = child(&uri);
        let child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start the child: {error}"))?;
        let mut child = Killed(child);
        let mut stdin = child.0.stdin.take().ok_or("no stdin")?;
        let stdout = child.0.stdout.take().ok_or("no stdout")?;
        // The child's lines, read on a thread of their own so that each wait is bounded.
        let (sender, mut lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut marks = Vec::new();
        for step in STEPS {
            let from = proxy.elapsed();
            writeln!(stdin, "{step}")
                .and_then(|()| stdin.flush())
                .map_err(|error| format!("cannot write to the child: {error}"))?;
            let line = tokio::time::timeout(STEP_BOUND, lines.recv())
                .await
                .map_err(|_| format!("the step {step} did not end within {STEP_BOUND:?}"))?
                .ok_or_else(|| format!("the child exited during the step {step}"))?
                .map_err(|error| error.to_string())?;
            if line != format!("done {step}") {
                return Err(format!("the step {step}: {line}"));
            }
            marks.push((from, proxy.elapsed()));
        }
        drop(stdin);
        drop(child);
        let connections = proxy.connections();
        let log = FlightLog {
            connections: &connections,
            from: marks[1].0,
            to: marks[marks.len() - 1].1,
        };
        Ok(Measured {
            round_trips: marks
                .iter()
                .map(|&(from, to)| round_trips(&connections, from, to))
                .collect(),
            log: log.to_string(),
        })
    }
}

#[cfg(not(target_os = "wasi"))]
pub use parent::{measure, Measured, ONE_WAY};
