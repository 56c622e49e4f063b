//! The blocking API (feature `sync`, native targets), as the official driver's `sync`
//! module: the same handles and actions, each action run with `.run()` where the async
//! API has `.await`, cursors and change streams as [`Iterator`]s.
//!
//! ```no_run
//! # fn example() -> anymongo::Result<()> {
//! use anymongo::{bson::doc, sync::Client};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! struct Book {
//!     title: String,
//!     author: String,
//! }
//!
//! let client = Client::with_uri_str("mongodb://localhost:27017")?;
//! let database = client.database("mydb");
//! let books = database.collection::<Book>("books");
//! books
//!     .insert_many([
//!         Book { title: "1984".into(), author: "George Orwell".into() },
//!         Book { title: "Animal Farm".into(), author: "George Orwell".into() },
//!     ])
//!     .run()?;
//! let cursor = books.find(doc! { "author": "George Orwell" }).sort(doc! { "title": 1 }).run()?;
//! for book in cursor {
//!     println!("title: {}", book?.title);
//! }
//! database.run_command(doc! { "ping": 1 }).run()?;
//! # Ok(()) }
//! ```
//!
//! Each call blocks the calling thread while a process-wide multi-thread tokio runtime,
//! started at the first call, drives the sockets and timers; the client's monitors run
//! on it between calls. The handles dereference to the async ones: an operation
//! method returns the async API's action (the same setters, `.session(…)` too), and
//! the handles' accessors are theirs. Do not call the blocking API from inside an
//! async task: it would block that task's thread.

mod cursor;
pub mod gridfs;
mod handles;
mod run;

pub use crate::session::ClientSession;
pub use cursor::{
    ChangeStream, Cursor, SessionChangeStream, SessionCursor, SessionCursorIter,
};
pub use handles::{Client, Collection, Database};
pub(crate) use run::block_on;
