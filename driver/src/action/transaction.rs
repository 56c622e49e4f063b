//! `start_transaction` (with `and_run` and `and_run2`, the convenient transactions),
//! `commit_transaction` and `abort_transaction`: a session's transactions.

use std::future::IntoFuture;
use std::time::Duration;

use super::{option_setters, run_blocking, timeout_setter};
use crate::concern::{ReadConcern, WriteConcern};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture, MaybeSend};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;
use crate::transactions::{TransactionBody, TransactionOptions};

impl ClientSession {
    /// Starts a transaction (Transactions spec, "startTransaction"): the operations
    /// given this session run in it until
    /// [`commit_transaction`](Self::commit_transaction) or
    /// [`abort_transaction`](Self::abort_transaction). Options left unset come from the
    /// session's `default_transaction_options`, then from the client. No I/O happens:
    /// the transaction starts on the server with its first command.
    /// [`and_run2`](StartTransaction::and_run2) runs a whole transaction instead, with
    /// the retries of the Convenient API for Transactions spec.
    ///
    /// Errors, when awaited: a transaction is already in progress ("Transaction already
    /// in progress"), the session has ended or is a snapshot session, or the write
    /// concern is unacknowledged.
    ///
    /// Reads in a transaction must use a primary read preference; commands in it carry
    /// no read or write concern of their own (those of the collection are ignored), and
    /// are not retried. A command error may abort the transaction on the server, and
    /// committing it then fails with `NoSuchTransaction`; an error labelled
    /// [`TRANSIENT_TRANSACTION_ERROR`](crate::error::TRANSIENT_TRANSACTION_ERROR) says
    /// the whole transaction may be run again:
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// use anymongo::error::TRANSIENT_TRANSACTION_ERROR;
    /// use anymongo::{ClientSession, Collection};
    ///
    /// async fn transfer(accounts: &Collection<Document>, session: &mut ClientSession) -> anymongo::Result<()> {
    ///     session.start_transaction().await?;
    ///     accounts.update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } }).session(&mut *session).await?;
    ///     accounts.update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } }).session(&mut *session).await?;
    ///     session.commit_transaction().await
    /// }
    ///
    /// let accounts = client.database("bank").collection::<Document>("accounts");
    /// let mut session = client.start_session().await?;
    /// while let Err(error) = transfer(&accounts, &mut session).await {
    ///     if !error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
    ///         return Err(error);
    ///     }
    ///     // The failed attempt's transaction is still open on this side.
    ///     if session.in_transaction() {
    ///         session.abort_transaction().await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn start_transaction(&mut self) -> StartTransaction<&mut Self> {
        StartTransaction {
            session: self,
            options: None,
            timeout: None,
        }
    }

    /// Commits the transaction (Transactions spec, "commitTransaction"). Nothing is
    /// sent when no operation ran in it. Committing again after a commit (that failed,
    /// say) runs commitTransaction again, with `w: majority`. The commit is retried
    /// once after a retryable error, whatever `retryWrites` says.
    ///
    /// Errors: "No transaction started"; a transaction that was aborted; the server's
    /// error, with the label
    /// [`UNKNOWN_TRANSACTION_COMMIT_RESULT`](crate::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
    /// when the outcome is unknown and committing again may succeed, or
    /// [`TRANSIENT_TRANSACTION_ERROR`](crate::error::TRANSIENT_TRANSACTION_ERROR) when
    /// the whole transaction may be run again.
    ///
    /// ```no_run
    /// # async fn example(session: anymongo::ClientSession) -> anymongo::Result<()> {
    /// use std::time::Duration;
    /// session.commit_transaction().timeout(Duration::from_secs(2)).await?;
    /// # Ok(()) }
    /// ```
    pub fn commit_transaction(&self) -> CommitTransaction<'_> {
        CommitTransaction {
            session: self,
            timeout: None,
        }
    }

    /// Aborts the transaction (Transactions spec, "abortTransaction"). Nothing is sent
    /// when no operation ran in it; the abortTransaction command is retried once after
    /// a retryable error, and its errors are ignored: the server aborts the
    /// transaction anyway in time.
    ///
    /// Errors: "No transaction started", or a transaction already committed or
    /// aborted.
    ///
    /// ```no_run
    /// # async fn example(session: anymongo::ClientSession) -> anymongo::Result<()> {
    /// session.abort_transaction().await?;
    /// # Ok(()) }
    /// ```
    pub fn abort_transaction(&self) -> AbortTransaction<'_> {
        AbortTransaction {
            session: self,
            timeout: None,
        }
    }
}

/// The start of a transaction: what [`ClientSession::start_transaction`] returns.
/// Awaited, it starts the transaction; [`and_run2`](Self::and_run2) and
/// [`and_run`](Self::and_run) run a whole one. `S` is the session it borrows,
/// `&mut ClientSession` (as in the official crate, whose annotations name it).
#[must_use = "an action does nothing until it is awaited"]
pub struct StartTransaction<S> {
    session: S,
    options: Option<TransactionOptions>,
    timeout: Option<Duration>,
}

impl<S> StartTransaction<S> {
    option_setters!(options: TransactionOptions;
        /// The read concern of the transaction, sent with its first command.
        read_concern: ReadConcern,
        /// The write concern of the commit and abort; it must be acknowledged.
        write_concern: WriteConcern,
        /// The read preference of the reads in the transaction: primary when a read
        /// runs (Transactions spec, "readPreference").
        selection_criteria: SelectionCriteria,
        /// The `maxTimeMS` of each commitTransaction (spec, "maxCommitTimeMS").
        max_commit_time: Duration,
    );

    /// The timeoutMS of the whole transaction of [`and_run2`](Self::and_run2) or
    /// [`and_run`](Self::and_run), its operations, retries and commit included (Client
    /// Side Operations Timeout spec, "Convenient Transactions API"): overrides the
    /// session's `default_timeout`. A transaction started by awaiting this action
    /// does no I/O to bound: its operations and commit take their own `.timeout(…)`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<'a> StartTransaction<&'a mut ClientSession> {
    /// Starts a transaction, runs `callback` in it and commits it, retrying as the
    /// Convenient API for Transactions spec says: the whole transaction (callback
    /// included) after an error labelled
    /// [`TRANSIENT_TRANSACTION_ERROR`](crate::error::TRANSIENT_TRANSACTION_ERROR), the
    /// commit alone after one labelled
    /// [`UNKNOWN_TRANSACTION_COMMIT_RESULT`](crate::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
    /// (but MaxTimeMSExpired), with a short random backoff between attempts, for up to
    /// [`WITH_TRANSACTION_TIMEOUT`](crate::transactions::WITH_TRANSACTION_TIMEOUT) in
    /// all (or the timeoutMS of [`timeout`](Self::timeout) or the session); then the
    /// last error is returned as it is. What the callback returns is returned.
    ///
    /// The callback gets the session to give to its operations (the same session as
    /// this one). **It may run several times**: keep its side effects (other than the
    /// operations in the session) idempotent. It must return the errors of the
    /// operations it runs rather than handle them silently: a command error may abort
    /// the transaction on the server, and committing it would then fail. When the
    /// callback fails, the transaction is aborted and its error returned. If the
    /// callback commits or aborts the transaction itself, its result is returned as is.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// let accounts = client.database("bank").collection::<Document>("accounts");
    /// let mut session = client.start_session().await?;
    /// let moved = session
    ///     .start_transaction()
    ///     .and_run2(async |session| {
    ///         accounts.update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } }).session(&mut *session).await?;
    ///         accounts.update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } }).session(&mut *session).await?;
    ///         Ok(10)
    ///     })
    ///     .await?;
    /// assert_eq!(moved, 10);
    /// # Ok(()) }
    /// ```
    pub async fn and_run2<R, F>(self, callback: F) -> Result<R>
    where
        F: for<'b> AsyncFnMut(&'b mut ClientSession) -> Result<R>,
    {
        self.execute(&mut Run2(callback)).await
    }

    /// [`and_run2`](Self::and_run2) with a callback that returns a boxed future and
    /// gets, besides the session, `context` (mutably): the form of callback Rust
    /// versions without async closures can write.
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// use futures::FutureExt;
    /// let accounts = client.database("bank").collection::<Document>("accounts");
    /// let mut session = client.start_session().await?;
    /// session
    ///     .start_transaction()
    ///     .and_run(accounts, |session, accounts| {
    ///         async move {
    ///             accounts.insert_one(doc! { "_id": 3, "balance": 0 }).session(session).await?;
    ///             Ok(())
    ///         }
    ///         .boxed()
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Its future is boxed, so that it is `Send` (on native targets) whatever
    /// lifetimes the context borrows: rustc cannot always prove that of an `async fn`
    /// whose callback is bound for every lifetime ("implementation of `Send` is not
    /// general enough"), which [`and_run2`](Self::and_run2) may meet inside other boxed
    /// futures.
    pub fn and_run<R, C, F>(self, context: C, callback: F) -> BoxFuture<'a, Result<R>>
    where
        R: MaybeSend + 'a,
        C: MaybeSend + 'a,
        F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>
            + MaybeSend
            + 'a,
    {
        boxed(async move { self.execute(&mut Run { context, callback }).await })
    }

    async fn execute<R>(self, body: &mut impl TransactionBody<R>) -> Result<R> {
        let session = self.session.with_operation_timeout(self.timeout);
        session
            .run_transaction(body, self.options.unwrap_or_default())
            .await
    }
}

impl<'a> IntoFuture for StartTransaction<&'a mut ClientSession> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            self.session
                .start_transaction_in(self.options.unwrap_or_default())
        })
    }
}

/// The callback of [`StartTransaction::and_run2`].
struct Run2<F>(F);

impl<R, F> TransactionBody<R> for Run2<F>
where
    F: for<'b> AsyncFnMut(&'b mut ClientSession) -> Result<R>,
{
    fn run<'b>(
        &'b mut self,
        session: &'b mut ClientSession,
    ) -> impl std::future::Future<Output = Result<R>> {
        (self.0)(session)
    }
}

/// The callback of [`StartTransaction::and_run`], with its context.
struct Run<C, F> {
    context: C,
    callback: F,
}

impl<R, C, F> TransactionBody<R> for Run<C, F>
where
    F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>,
{
    // The boxed future itself, not an `impl Future` around it: a future that names
    // no opaque type, for rustc to prove `Send` (an opaque one here made the futures of
    // `and_run` that borrow their context fail that proof).
    #[allow(refining_impl_trait)]
    fn run<'b>(&'b mut self, session: &'b mut ClientSession) -> BoxFuture<'b, Result<R>> {
        (self.callback)(session, &mut self.context)
    }
}

/// The commit of a transaction: what [`ClientSession::commit_transaction`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct CommitTransaction<'a> {
    session: &'a ClientSession,
    timeout: Option<Duration>,
}

impl CommitTransaction<'_> {
    timeout_setter!();
}

impl<'a> IntoFuture for CommitTransaction<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let session = self.session.with_operation_timeout(self.timeout);
            session.commit_transaction_in().await
        })
    }
}

/// The abort of a transaction: what [`ClientSession::abort_transaction`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct AbortTransaction<'a> {
    session: &'a ClientSession,
    timeout: Option<Duration>,
}

impl AbortTransaction<'_> {
    timeout_setter!();
}

impl<'a> IntoFuture for AbortTransaction<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let session = self.session.with_operation_timeout(self.timeout);
            session.abort_transaction_in().await
        })
    }
}

run_blocking!(impl['a] StartTransaction<&'a mut ClientSession> => ());
run_blocking!(impl['a] CommitTransaction<'a> => ());
run_blocking!(impl['a] AbortTransaction<'a> => ());
