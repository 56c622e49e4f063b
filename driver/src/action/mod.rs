//! The operations as actions: one builder per operation, the shape of the official
//! Rust driver's 3.x API.
//!
//! A method of [`Client`](crate::Client), [`Database`](crate::Database),
//! [`Collection`](crate::Collection), [`ClientSession`](crate::session::ClientSession) or
//! [`GridFsBucket`](crate::gridfs::GridFsBucket) takes the operation's required
//! arguments and returns its action. The action's setters add options one at a time
//! (`.sort(…)`, `.limit(…)`), or all at once (`.with_options(…)`), run it in a session
//! (`.session(&mut session)`) or bound it by a timeoutMS of its own (`.timeout(…)`,
//! which the official Rust driver does not have), and `.await` runs it: an action is
//! an [`IntoFuture`](std::future::IntoFuture).
//!
//! ```no_run
//! # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
//! use anymongo::bson::{doc, Document};
//! use futures::TryStreamExt;
//! let orders = client.database("shop").collection::<Document>("orders");
//! let mut session = client.start_session().await?;
//! let mut cursor = orders
//!     .find(doc! { "qty": { "$gt": 1 } })
//!     .sort(doc! { "qty": -1 })
//!     .limit(5)
//!     .session(&mut session)
//!     .await?;
//! while let Some(order) = cursor.next(&mut session).await.transpose()? {
//!     println!("{order}");
//! }
//! let first = orders.find_one(doc! {}).await?;
//! # let _ = first; Ok(()) }
//! ```
//!
//! An action whose result is a cursor has the session in its type: run in a session,
//! it returns a [`SessionCursor`] (iterated with the session, as the official driver
//! does); otherwise a [`Cursor`](crate::Cursor).
//!
//! A session is given as `&mut ClientSession`, as to the official driver; a
//! `&ClientSession` is taken as well, since anymongo's sessions are handles that
//! synchronize their own state.

mod bulk_write;
mod collection_admin;
mod count;
mod delete;
mod find;
mod find_and_modify;
pub mod gridfs;
mod indexes;
mod insert;
mod lifecycle;
mod list;
mod run_command;
mod session;
mod setters;
mod transaction;
mod update;
mod watch;

pub use bulk_write::{BulkWrite, CollectionBulkWrite};
pub use collection_admin::{
    CreateCollection, DropCollection, DropDatabase, ModifyCollection, RenameCollection,
};
pub use count::{Count, CountDocuments, Distinct, EstimatedDocumentCount};
pub use delete::Delete;
pub use find::{Aggregate, Find, FindOne};
pub use find_and_modify::{FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate};
pub use indexes::{
    CreateIndex, CreateSearchIndex, DropIndex, DropSearchIndex, ListIndexes, ListSearchIndexes,
    UpdateSearchIndex,
};
pub use insert::{InsertMany, InsertOne};
pub use lifecycle::{Shutdown, WarmConnectionPool};
pub use list::{ListCollections, ListDatabases};
pub use run_command::{RunCommand, RunCursorCommand};
pub use session::StartSession;
pub use transaction::{AbortTransaction, CommitTransaction, StartTransaction};
pub use update::{ReplaceOne, Update};
pub use watch::Watch;

pub use crate::cursor::SessionCursor;

pub(crate) use setters::{
    option_setters, raw_batches, run_blocking, session_setter, timeout_setter,
};
pub use setters::{
    Action, ExplicitSession, ImplicitSession, ListNames, ListSpecifications, Multiple, Single,
};

// Parsing a connection string is an action too (`ClientOptions::parse(uri).run()`).
run_blocking!(impl[] crate::srv::ParseConnectionString => crate::options::ClientOptions);
