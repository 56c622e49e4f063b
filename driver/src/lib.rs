//! anymongo: a MongoDB driver whose whole logic lives in one runtime-agnostic core.
//!
//! ```no_run
//! # async fn example() -> anymongo::Result<()> {
//! use anymongo::{bson::doc, options::ClientOptions, Client};
//! let client = Client::with_uri_str("mongodb://localhost:27017").await?;
//! client.database("admin").run_command(doc! { "ping": 1 }).await?;
//!
//! // Or with options set in code (`parse` resolves a mongodb+srv connection string):
//! let mut options = ClientOptions::parse("mongodb://localhost:27017").await?;
//! options.app_name = Some("app".into());
//! let client = Client::with_options(options)?;
//! # Ok(()) }
//! ```
//!
//! The core reaches the network, the clock and the task scheduler only through the
//! small traits of [`rt`] (from the crate `anymongo-rt`); host crates implement them:
//!
//! - `anymongo-native`: tokio TCP, rustls TLS — for ordinary Rust services;
//! - `anymongo-wasi`: wasi:sockets under WASI 0.2 — for wasmtime, Spin, wasmCloud;
//! - the `anymongo` npm package: sockets supplied by JavaScript hosts.
//!
//! The first two are built in (the default feature `default-transport`), each on its
//! target, so that [`Client::with_uri_str`] and [`Client::with_options`] need no other
//! crate. wasm32-unknown-unknown has no built-in transport, and those two constructors
//! do not exist there: its host gives a [`rt::Runtime`] to [`Client::with_runtime`]
//! (and to [`ClientOptions::parse`] for `mongodb+srv`), which every target accepts.
//!
//! Modules are named after the MongoDB specification they implement, so a reader who
//! knows the specs finds the code by its name: [`wire`] (OP_MSG), [`handshake`],
//! [`uri`] (Connection String), and so on.
//!
//! # Layers
//!
//! The modules form layers, and **imports go down**: a module uses modules of its own
//! layer or of the layers below, never above. Top to bottom:
//!
//! | layer | modules | what it does |
//! | --- | --- | --- |
//! | API | `action`, `atlas_search`, `bson`, `options`, `results`, `client`, `database`, `collection`, `collection_management`, `change_stream`, `gridfs`, `enumerate`, `index_management`, `sync` | what applications call: handles, options, results, and the blocking API over them |
//! | operations | `operation`, `retry`, `session`, `transactions`, `crud`, `cursor` | each operation's commands, run by one executor with one context per operation: sessions, transactions, retries, cursors |
//! | cluster | `cluster` | the deployment at run time: servers with their pools and monitors, waiting server selection, single-threaded scans, SRV polling |
//! | cluster parts | `cmap`, `sdam::monitor`, `load_balancer`, `logging` | a server's pool, its monitor, connections pinned behind a load balancer, log messages |
//! | connection | `connection`, `address_book`, `command_monitoring`, `socks5` | one connection: establishing it (TLS, proxy, handshake, authentication) and its round trips |
//! | protocol | `crud::bulk_write::result`, `cmap::options`, `error`, `open_telemetry`, `wire`, `uri`, `concern`, `versioned_api`, `handshake`, `auth`, `sdam`, `selection`, `srv`, `event` | the specifications' pure logic, without I/O: codecs, parsers, state machines, conversations, the failure payloads |
//! | seams | `default_runtime`, `signal`, `bson_util`, `bson_serializer`, `bson_deserializer`, `named_enum` | the traits hosts implement (`rt`, and TLS over them, `tls`: the crate `anymongo-rt`, re-exported), the built-in runtime of each target, and building blocks every layer uses (among them the serializer of the documents the driver sends and the deserializer of those it receives) |
//!
//! A row names modules and, where a module's files sit in different layers, files
//! (`sdam::monitor` runs checks over connections, while the rest of [`sdam`] is the pure
//! state machine). The failure payloads that [`error::ErrorKind`] carries for high-level
//! operations are plain data in files of their own next to those operations
//! (`gridfs::error`, `crud::bulk_write::result`), so that `error` can name them
//! without importing the operations. Inside the operations layer, the executor
//! (`operation`) is below what it runs: a session's transaction state and the rules of
//! commands in a transaction (`transactions::state`) are below it, the commit and abort
//! operations (`transactions`) above it. Two cycles are allowed, each of handles that
//! refer to one another: [`Client`], [`Database`] and [`Collection`]; and the executor
//! with the session (a session gives its server session back to the executor that runs
//! its commands). `tests/tests/layers.rs` reads this table and every module's imports,
//! and fails on an import that goes up, another cycle, or a module the table does not
//! place.
//!
//! ```no_run
//! # async fn example(runtime: anymongo::rt::Runtime) -> anymongo::Result<()> {
//! use anymongo::{bson::doc, options::ClientOptions, Client};
//! let options = ClientOptions::parse_uri("mongodb://localhost:27017/?appName=example")?;
//! let client = Client::with_runtime(options, runtime)?;
//! let db = client.database("shop");
//! db.run_command(doc! { "insert": "orders", "documents": [{ "item": "tea", "qty": 2 }] }).await?;
//! let found = db.run_command(doc! { "find": "orders", "filter": { "item": "tea" } }).await?;
//! println!("{found}");
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
// Natively the seams are `Send + Sync` and so is everything shared through an `Arc`;
// on wasm32 nothing is (JavaScript handles), and an `Arc` is merely shared ownership.
#![cfg_attr(target_family = "wasm", allow(clippy::arc_with_non_send_sync))]

// The official crate's features that anymongo cannot give: a build that asks for one
// stops here, saying why, rather than running without what it asked for.
#[cfg(any(
    feature = "in-use-encryption",
    feature = "azure-kms",
    feature = "gcp-kms"
))]
compile_error!(
    "anymongo has no client-side encryption (features `in-use-encryption`, `azure-kms`, \
     `gcp-kms`): it needs libmongocrypt, a C library that does not build for WebAssembly"
);
#[cfg(feature = "gssapi-auth")]
compile_error!(
    "anymongo has no GSSAPI (Kerberos) authentication (feature `gssapi-auth`): it needs a \
     system Kerberos library, which does not exist in WebAssembly"
);
#[cfg(feature = "redact-errors")]
compile_error!(
    "anymongo does not redact server addresses from its errors (feature `redact-errors`); \
     its errors name the server they happened with"
);

pub mod action;
mod address_book;
pub mod atlas_search;
pub mod auth;
pub mod bson;
pub mod bson_deserializer;
pub mod bson_serializer;
mod bson_util;
pub mod change_stream;
pub mod client;
mod cluster;
pub mod cmap;
pub mod collection;
pub mod collection_management;
pub mod command_monitoring;
pub mod concern;
mod connection;
pub mod crud;
pub mod cursor;
pub mod database;
mod default_runtime;
pub mod enumerate;
pub mod error;
pub mod event;
pub mod gridfs;
pub mod handshake;
pub mod index_management;
pub use anymongo_rt::http;
mod load_balancer;
pub mod logging;
mod named_enum;
pub mod open_telemetry;
mod operation;
pub mod options;
pub mod results;
mod retry;
pub use anymongo_rt::rt;
pub mod sdam;
pub mod selection;
pub mod session;
mod signal;
pub mod socks5;
pub mod srv;
default_runtime::with_sync_api! {
    pub mod sync;
}
#[cfg(feature = "rustls")]
pub use anymongo_rt::tls;
pub mod transactions;
pub mod uri;
pub mod versioned_api;
pub mod wire;

pub use change_stream::{
    ChangeStream, ChangeStreamEvent, ChangeStreamOptions, SessionChangeStream,
};
pub use client::Client;
pub use collection::Collection;
pub use crud::Namespace;
pub use cursor::raw_batch as raw_batch_cursor;
pub use cursor::{Cursor, SessionCursor, SessionCursorStream};
pub use database::Database;
pub use error::{CommandError, Error, ErrorKind, Result};
pub use index_management::{IndexModel, SearchIndexModel, SearchIndexType};
/// The boxed future of the official crate's root (`mongodb::BoxFuture`), which
/// [`and_run`](action::StartTransaction::and_run) callbacks return: `Send` natively,
/// not on wasm32, whose futures need not be.
pub use rt::BoxFuture;
pub use sdam::{ServerType, TopologyType};
pub use selection::ServerInfo;
pub use session::{ClientSession, ClusterTime};
pub use uri::{ClientOptions, ServerAddress};
