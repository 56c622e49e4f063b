//! What every action is made of: the [`Action`] trait, the session type-states of the
//! actions that return a cursor, and the macros that write the setters.
//!
//! A leaf of its own, so that the action files, which use these, and `mod.rs`, which
//! re-exports them, form no cycle.

/// The session type of an action run without `.session(…)`: the driver starts an
/// implicit session for it (Driver Sessions spec, "Implicit sessions").
#[derive(Debug, Clone, Copy, Default)]
pub struct ImplicitSession;

/// The session type of an action given a session with `.session(…)`, for as long as
/// `'a`, the session's borrow (`Find<'a, T, ExplicitSession<'a>>`, as in the official
/// driver): its cursor is a [`SessionCursor`](crate::cursor::SessionCursor).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplicitSession<'a>(std::marker::PhantomData<&'a crate::session::ClientSession>);

/// The mode of a listing action that yields specifications
/// (`ListCollections<'a, ListSpecifications>`, what `list_collections()` returns).
#[derive(Debug, Clone, Copy, Default)]
pub struct ListSpecifications;

/// The mode of a listing action that yields names
/// (`ListCollections<'a, ListNames>`, what `list_collection_names()` returns).
#[derive(Debug, Clone, Copy, Default)]
pub struct ListNames;

/// The mode of an index action on one index (`CreateIndex<'a, Single>`, what
/// `create_index` returns).
#[derive(Debug, Clone, Copy, Default)]
pub struct Single;

/// The mode of an index action on several indexes (`CreateIndex<'a, Multiple>`, what
/// `create_indexes` returns).
#[derive(Debug, Clone, Copy, Default)]
pub struct Multiple;

/// What every action is: an operation about to run, configured by its setters and run
/// by `.await` (or `.run()` in the blocking API). Only this crate's actions are
/// actions.
pub trait Action: private::Sealed + std::future::IntoFuture {
    /// Calls `f` with the action and `value` when `value` is `Some`: a setter applied
    /// only when there is something to set, without breaking the chain.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client, filter: Option<anymongo::bson::Document>)
    /// # -> anymongo::Result<()> {
    /// use anymongo::action::Action;
    /// let names = client
    ///     .database("shop")
    ///     .list_collection_names()
    ///     .optional(filter, |action, filter| action.filter(filter))
    ///     .await?;
    /// # let _ = names; Ok(()) }
    /// ```
    fn optional<Value>(self, value: Option<Value>, f: impl FnOnce(Self, Value) -> Self) -> Self
    where
        Self: Sized,
    {
        match value {
            Some(value) => f(self, value),
            None => self,
        }
    }
}

/// Keeps [`Action`] to this crate's actions.
pub(crate) mod private {
    /// Implemented by the actions only.
    pub trait Sealed {}
}

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

/// The `session` setter of an action with a `session` field.
macro_rules! session_setter {
    () => {
        /// Runs the operation in `session`.
        pub fn session(mut self, session: impl Into<&'a ClientSession>) -> Self {
            self.session = Some(session.into());
            self
        }
    };
}
pub(crate) use session_setter;

/// Makes a type an [`Action`](crate::action::Action) and gives it its blocking
/// `.run()` (the `sync` API), which
/// returns what `.await` does, its cursors and change streams as the `sync` ones:
/// `run_blocking!(impl['a, T] InsertOne<'a, T> => InsertOneResult)`, the generics in
/// brackets as those of the action's `IntoFuture` impl.
macro_rules! run_blocking {
    (impl[$($generics:tt)*] $Action:ty => $Output:ty) => {
        impl<$($generics)*> $crate::action::setters::private::Sealed for $Action {}
        impl<$($generics)*> $crate::action::setters::Action for $Action {}

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

/// Writes `batch()` on an action that opens a cursor, in both its session types:
/// run, it returns the cursor's batches whole, a
/// [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor) (a
/// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor) in a
/// session), from the action's `execute`.
macro_rules! raw_batches {
    (impl[$($generics:tt)*] $Implicit:ty, $Explicit:ty) => {
        impl<$($generics)*> $Implicit {
            /// Runs the action and returns its cursor's batches as the server sent
            /// them, each read in place
            /// ([`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor)).
            pub async fn batch(self) -> $crate::Result<$crate::raw_batch_cursor::RawBatchCursor> {
                self.execute()
                    .await
                    .map($crate::raw_batch_cursor::RawBatchCursor::new)
            }
        }

        impl<$($generics)*> $Explicit {
            /// Runs the action in its session and returns its cursor's batches as the
            /// server sent them
            /// ([`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor)).
            pub async fn batch(
                self,
            ) -> $crate::Result<$crate::raw_batch_cursor::SessionRawBatchCursor> {
                self.execute()
                    .await
                    .map($crate::raw_batch_cursor::SessionRawBatchCursor::new)
            }
        }
    };
}
pub(crate) use raw_batches;
