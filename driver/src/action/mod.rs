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

// The modules come after the macros: their files use the macros by textual scope,
// without an import of this module (which would knot them into one cycle of files,
// which the layers test refuses).
mod find;
mod session;
mod transaction;

pub use find::{Aggregate, Find, FindOne};
pub use session::StartSession;
pub use transaction::{AbortTransaction, CommitTransaction, StartTransaction};

pub use crate::cursor::SessionCursor;

/// The session type of an action run without `.session(…)`: the driver starts an
/// implicit session for it (Driver Sessions spec, "Implicit sessions").
#[derive(Debug, Clone, Copy, Default)]
pub struct ImplicitSession;

/// The session type of an action given a session with `.session(…)`: its cursor is a
/// [`SessionCursor`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplicitSession;
