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
mod list;
mod run_command;
mod update;
mod watch;

pub use bulk_write::{BulkWrite, ClientBulkWrite};
pub use collection_admin::{
    CreateCollection, DropCollection, DropDatabase, ModifyCollection, RenameCollection,
};
pub use count::{Count, CountDocuments, Distinct, EstimatedDocumentCount};
pub use delete::Delete;
pub use find::{Aggregate, Find, FindOne};
pub use find_and_modify::{FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate};
pub use indexes::{
    CreateIndex, CreateSearchIndex, DropIndex, DropSearchIndex, ListIndexNames, ListIndexes,
    ListSearchIndexes, UpdateSearchIndex,
};
pub use insert::{InsertMany, InsertOne};
pub use list::{ListCollectionNames, ListCollections, ListDatabases};
pub use run_command::{RunCommand, RunCursorCommand};
pub use update::{ReplaceOne, Update};
pub use watch::Watch;

pub use crate::cursor::SessionCursor;

/// The session type of an action run without `.session(…)`: the driver starts an
/// implicit session for it (Driver Sessions spec, "Implicit sessions").
#[derive(Debug, Clone, Copy, Default)]
pub struct ImplicitSession;

/// The session type of an action given a session with `.session(…)`: its cursor is a
/// [`SessionCursor`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplicitSession;

/// Writes an action's option setters, each setting one field of its options struct
/// (held as `Option<Options>` in the field named first), and `with_options`, which
/// sets them all.
macro_rules! option_setters {
    ($field:ident: $Options:ty; $($(#[$doc:meta])* $name:ident: $type:ty,)*) => {
        /// Sets all the options at once, replacing those set before.
        pub fn with_options(mut self, options: impl Into<Option<$Options>>) -> Self {
            self.$field = options.into();
            self
        }

        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $type) -> Self {
                self.$field.get_or_insert_with(Default::default).$name = Some(value.into());
                self
            }
        )*
    };
}
pub(crate) use option_setters;

/// Writes an action's `timeout` setter: the operation's own timeoutMS (Client Side
/// Operations Timeout spec, "Operation-level timeoutMS"), held in a field `timeout`.
macro_rules! timeout_setter {
    () => {
        /// This operation's timeoutMS: it may take `timeout` in all, retries included,
        /// and fails with [`ErrorKind::OperationTimeout`](crate::ErrorKind::OperationTimeout)
        /// after; `Duration::ZERO` means no limit. Overrides the timeoutMS of the
        /// client, database or collection.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.timeout = Some(timeout);
            self
        }
    };
}
pub(crate) use timeout_setter;

/// Gives an action of the async API its blocking `.run()` (the `sync` API), which
/// returns what `.await` does, its cursors and change streams as the `sync` ones:
/// `run_blocking!(impl['a, T] InsertOne<'a, T> => InsertOneResult)`, the generics in
/// brackets as those of the action's `IntoFuture` impl.
macro_rules! run_blocking {
    (impl[$($generics:tt)*] $Action:ty => $Output:ty) => {
        $crate::default_runtime::with_sync_api! {
            impl<$($generics)*> $Action {
                /// Runs the action, blocking the calling thread until it is done: the
                /// `.await` of the blocking API ([`crate::sync`]).
                #[allow(clippy::useless_conversion)] // most outputs are the async ones
                pub fn run(self) -> $crate::Result<$Output> {
                    $crate::sync::block_on(::std::future::IntoFuture::into_future(self))?
                        .map(::std::convert::Into::into)
                }
            }
        }
    };
}
pub(crate) use run_blocking;

// Parsing a connection string is an action too (`ClientOptions::parse(uri).run()`).
run_blocking!(impl[] crate::srv::ParseConnectionString => crate::options::ClientOptions);
