//! Transactions (Transactions spec) and the convenient transactions API (Convenient API
//! for Transactions spec).
//!
//! A transaction lives in a [`ClientSession`]: [`ClientSession::start_transaction`],
//! then operations with the session, then [`ClientSession::commit_transaction`] or
//! [`ClientSession::abort_transaction`];
//! [`StartTransaction::and_run2`](crate::action::StartTransaction::and_run2) does all
//! of it and retries as the spec says. The session keeps the transaction's state (spec,
//! "ClientSession changes") and its options; the executor (`operation`) asks it, once
//! per command, what the command must carry (spec, "Constructing commands within a
//! transaction") and labels errors.
//!
//! Command errors inside a transaction may abort it on the server: committing it then
//! fails with `NoSuchTransaction` (spec, "Handling command errors").

use std::time::Duration;

use bson::{doc, Document, RawDocument, RawDocumentBuf};

use crate::concern::{Acknowledgment, ReadConcern, WriteConcern};
use crate::crud::write::WriteReply;
use crate::error::{Error, ErrorKind, Result};
use crate::handshake::HelloReply;
use crate::open_telemetry::Traced;
use crate::operation::{Command, Operation, OperationContext, ReplyContext, Target};
use crate::retry::{jitter, Retryability, RETRYABLE_WRITE_ERROR};
use crate::rt::{Clock, Instant};
use crate::selection::SelectionCriteria;
use crate::session::ClientSession;
use std::sync::Arc;

pub use crate::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use state::{CommandFields, Transaction};
pub use state::{TransactionOptions, TransactionState};

pub(crate) mod state;

/// What a convenient transaction runs in each attempt: the callback of
/// [`StartTransaction::and_run2`](crate::action::StartTransaction::and_run2) or
/// [`and_run`](crate::action::StartTransaction::and_run).
pub(crate) trait TransactionBody<R> {
    /// Runs the callback once, in `session`'s transaction.
    fn run<'b>(
        &'b mut self,
        session: &'b mut ClientSession,
    ) -> impl std::future::Future<Output = Result<R>>;
}

/// MaxTimeMSExpired: a commit that ran out of `maxTimeMS` is not retried by
/// convenient transactions.
const MAX_TIME_MS_EXPIRED: i32 = 50;

/// Write concern errors that say the write concern itself is invalid, so that a
/// retry would fail the same way: CannotSatisfyWriteConcern (UnsatisfiableWriteConcern)
/// and UnknownReplWriteConcern (spec, "UnknownTransactionCommitResult").
const INVALID_WRITE_CONCERN: [i32; 2] = [100, 79];

/// The `wtimeout` a retried commit gets when its write concern has none (spec,
/// "writeConcern for commitTransaction attempts").
const RETRIED_COMMIT_WTIMEOUT: Duration = Duration::from_secs(10);

/// How long convenient transactions keeps retrying (Convenient API spec,
/// "ClientSession.withTransaction": 120 seconds without CSOT).
pub const WITH_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The backoff between attempts of convenient transactions: `jitter *
/// min(5 ms * 1.5^attempt, 500 ms)` (Convenient API spec, "Sequence of Actions").
const BACKOFF_INITIAL_MS: f64 = 5.0;
const BACKOFF_MAX_MS: f64 = 500.0;

/// What committing or aborting does from a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// No command ran in the transaction: none is sent.
    Nothing,
    /// The command is sent; `again` when commitTransaction already ran (spec:
    /// "re-run the previous commitTransaction", with `w: majority`).
    Run { again: bool },
}

/// Refuses to start a transaction inside another (spec, "startTransaction").
fn check_start(state: TransactionState) -> Result<()> {
    match state.is_active() {
        true => Err(Error::transaction("Transaction already in progress")),
        false => Ok(()),
    }
}

/// What commitTransaction does from `state`, or the spec's error (spec,
/// "commitTransaction").
fn check_commit(state: TransactionState) -> Result<Ending> {
    match state {
        TransactionState::None => Err(Error::transaction("No transaction started")),
        TransactionState::Aborted => Err(Error::transaction(
            "Cannot call commitTransaction after calling abortTransaction",
        )),
        TransactionState::Starting | TransactionState::CommittedEmpty => Ok(Ending::Nothing),
        TransactionState::InProgress => Ok(Ending::Run { again: false }),
        TransactionState::Committed => Ok(Ending::Run { again: true }),
    }
}

/// What abortTransaction does from `state`, or the spec's error (spec,
/// "abortTransaction").
fn check_abort(state: TransactionState) -> Result<Ending> {
    match state {
        TransactionState::None => Err(Error::transaction("No transaction started")),
        TransactionState::Committed | TransactionState::CommittedEmpty => Err(Error::transaction(
            "Cannot call abortTransaction after calling commitTransaction",
        )),
        TransactionState::Aborted => Err(Error::transaction("Cannot call abortTransaction twice")),
        TransactionState::Starting => Ok(Ending::Nothing),
        TransactionState::InProgress => Ok(Ending::Run { again: false }),
    }
}

/// `error`, of commitTransaction, with the UnknownTransactionCommitResult label when
/// the outcome is unknown (spec, "UnknownTransactionCommitResult"): a network or
/// server selection error, a retryable error, MaxTimeMSExpired, or a write concern
/// error but those saying the write concern is invalid.
fn label_commit_error(error: Error) -> Error {
    // A commit that timeoutMS cut is judged by what the deadline cut; one cut in
    // flight, with no error of its own, has an unknown outcome like a network error.
    let judged = match &*error.kind {
        ErrorKind::OperationTimeout { cause: None, .. } => {
            return error.with_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
        }
        ErrorKind::OperationTimeout {
            cause: Some(cause), ..
        } => cause.as_ref(),
        _ => &error,
    };
    let unknown = match &*judged.kind {
        ErrorKind::Io(_) => judged.is_network_error(),
        ErrorKind::ServerSelection { .. } | ErrorKind::ConnectionPoolCleared { .. } => true,
        ErrorKind::Write(crate::error::WriteFailure::WriteConcernError(concern)) => {
            !INVALID_WRITE_CONCERN.contains(&concern.code)
        }
        // WriteConcernFailed as a top-level error.
        _ => matches!(judged.code(), Some(MAX_TIME_MS_EXPIRED | 64)),
    };
    match unknown || error.contains_label(RETRYABLE_WRITE_ERROR) {
        true => error.with_label(UNKNOWN_TRANSACTION_COMMIT_RESULT),
        false => error,
    }
}

/// The write concern of a commitTransaction: the transaction's; when the commit is
/// run again (a retry, or the application committing again), with `w: majority` and,
/// unless it has one, `wtimeout: 10000` (spec, "writeConcern for commitTransaction
/// attempts"). `None` for the server's default.
fn commit_write_concern(given: Option<&WriteConcern>, again: bool) -> Option<Document> {
    let mut concern = given.cloned().unwrap_or_default();
    if again {
        concern.w = Some(Acknowledgment::Majority);
        concern.w_timeout.get_or_insert(RETRIED_COMMIT_WTIMEOUT);
    }
    Some(concern.to_document()).filter(|document| !document.is_empty())
}

/// The backoff before the attempt after `attempt` of with_transaction, for a `jitter`
/// in [0, 1].
fn backoff(attempt: u32, jitter: f64) -> Duration {
    let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
    let ceiling = (BACKOFF_INITIAL_MS * 1.5_f64.powi(exponent)).min(BACKOFF_MAX_MS);
    Duration::from_secs_f64(jitter.clamp(0.0, 1.0) * ceiling / 1000.0)
}

/// How long a convenient transaction may keep retrying. A struct rather than closures
/// so that no borrow lives across its awaits (a closure's borrow there made the
/// future of `and_run2` fail to prove itself `Send` for every lifetime).
struct Budget {
    clock: Arc<dyn Clock>,
    /// Until when attempts may start: timeoutMS's deadline (none with 0), else
    /// [`WITH_TRANSACTION_TIMEOUT`] from the start.
    limit: Option<Instant>,
    context: Option<OperationContext>,
}

impl Budget {
    fn new(clock: Arc<dyn Clock>, context: Option<OperationContext>) -> Budget {
        let limit = match context {
            Some(context) => context.deadline,
            None => Some(clock.now() + WITH_TRANSACTION_TIMEOUT),
        };
        Budget {
            clock,
            limit,
            context,
        }
    }

    /// Whether an attempt may start after waiting `after`.
    fn has_time(&self, after: Duration) -> bool {
        self.limit
            .is_none_or(|limit| self.clock.now() + after < limit)
    }

    /// The error out of time: timeoutMS's, `error` its cause (without timeoutMS,
    /// `error`).
    fn out_of_time(&self, error: Error) -> Error {
        match self.context {
            Some(context) => context.timeout_error("withTransaction", Some(error)),
            None => error,
        }
    }
}

/// Clears the session's with_transaction context when the call ends, returned or
/// dropped.
struct ClearTransactionContext<'a>(&'a ClientSession);

impl Drop for ClearTransactionContext<'_> {
    fn drop(&mut self) {
        self.0.set_transaction_context(None);
    }
}

/// commitTransaction or abortTransaction (spec, "Server Commands"): to `admin`, with
/// the transaction's write concern; retried once like a retryable write.
struct EndTransaction {
    /// `commitTransaction` or `abortTransaction`.
    command: &'static str,
    write_concern: Option<WriteConcern>,
    /// commitTransaction's `maxTimeMS`.
    max_time: Option<Duration>,
    /// commitTransaction already ran once: the next is sent with `w: majority`.
    again: bool,
}

impl EndTransaction {
    fn commit(options: &TransactionOptions, again: bool) -> EndTransaction {
        EndTransaction {
            command: "commitTransaction",
            write_concern: options.write_concern.clone(),
            max_time: options.max_commit_time,
            again,
        }
    }

    fn abort(options: &TransactionOptions) -> EndTransaction {
        EndTransaction {
            command: "abortTransaction",
            write_concern: options.write_concern.clone(),
            max_time: None,
            again: false,
        }
    }
}

impl Operation for EndTransaction {
    type Output = ();

    fn name(&self) -> &str {
        self.command
    }

    fn traced(&self) -> Traced<'_> {
        Traced {
            name: self.command,
            database: "admin",
            collection: None,
        }
    }

    fn target(&self) -> Target<'_> {
        Target::Write
    }

    fn build(&mut self, _hello: &HelloReply) -> Result<Command> {
        let mut body = doc! { self.command: 1 };
        let write_concern = match self.command {
            "commitTransaction" => commit_write_concern(self.write_concern.as_ref(), self.again),
            _ => self
                .write_concern
                .as_ref()
                .filter(|concern| !concern.is_empty())
                .map(WriteConcern::to_document),
        };
        if let Some(concern) = write_concern {
            body.insert("writeConcern", concern);
        }
        if let Some(max_time) = self.max_time {
            body.insert("maxTimeMS", crate::bson_util::millis(max_time));
        }
        Ok(Command::new("admin", body))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, _context: ReplyContext<'_>) -> Result<()> {
        let reply = crate::connection::reply_document(&reply)?;
        // A write concern error in an `ok: 1` reply fails the commit (spec,
        // "commitTransaction").
        WriteReply::check_write_concern(&reply)
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    fn ends_transaction(&self) -> bool {
        true
    }

    /// A retry of a commit is a commit run again, with `w: majority` — but after an
    /// overload error, which says the server did not run it, the retry keeps the
    /// write concern of the attempt before (spec, "Interaction with Client
    /// Backpressure").
    fn attempt_failed(&mut self, error: &Error) {
        if self.command == "commitTransaction" && !crate::retry::is_overload_retryable(error) {
            self.again = true;
        }
    }
}

impl ClientSession {
    /// Starts a transaction with `options` (spec, "startTransaction"): what
    /// [`ClientSession::start_transaction`] does when awaited.
    pub(crate) fn start_transaction_in(&self, options: TransactionOptions) -> Result<()> {
        if self.has_ended() {
            return Err(Error::invalid_argument(
                "the session has ended: start a new one",
            ));
        }
        if self.is_snapshot() {
            return Err(Error::transaction(
                "Transactions are not supported in snapshot sessions",
            ));
        }
        let options = options
            .or(self.options().default_transaction_options.as_ref())
            .or_client(self.executor().options());
        if options
            .write_concern
            .as_ref()
            .is_some_and(|concern| !concern.is_acknowledged())
        {
            return Err(Error::transaction(
                "transactions do not support unacknowledged write concerns",
            ));
        }
        self.update_transaction(|transaction| check_start(transaction.state))?;
        // A connection pinned to the previous transaction is released (spec, "When to
        // unpin", 4).
        self.unpin();
        // The transaction's number, which all its commands carry (spec,
        // "startTransaction": "Drivers MUST increment the txnNumber").
        self.use_server_session(true)?;
        self.update_transaction(|transaction| {
            // A new transaction has no recoveryToken yet (spec, "recoveryToken field").
            *transaction = Transaction {
                state: TransactionState::Starting,
                options,
                recovery_token: None,
            };
            Ok(())
        })?;
        // The operations up to the commit or abort nest in it (OpenTelemetry spec,
        // "Transactions").
        let tracer = self.executor().tracer();
        self.set_transaction_span(tracer.is_enabled().then(|| tracer.transaction()));
        Ok(())
    }

    /// Commits the transaction (spec, "commitTransaction"), within
    /// [`default_timeout`](Self::default_timeout): [`ClientSession::commit_transaction`].
    pub(crate) async fn commit_transaction_in(&self) -> Result<()> {
        let (ending, options) = self.update_transaction(|transaction| {
            Ok((
                check_commit(transaction.state)?,
                transaction.options.clone(),
            ))
        })?;
        let Ending::Run { again } = ending else {
            self.set_transaction_state(TransactionState::CommittedEmpty);
            self.set_transaction_span(None);
            return Ok(());
        };
        let result = self
            .executor()
            .execute(
                EndTransaction::commit(&options, again),
                Some(self),
                self.default_timeout(),
            )
            .await;
        // Committed, even on error (spec, "commitTransaction"); its span ends
        // (OpenTelemetry spec, "Transactions").
        self.set_transaction_state(TransactionState::Committed);
        self.set_transaction_span(None);
        let result = result.map_err(label_commit_error);
        // A commit stays pinned, for it may be committed again (spec, "When to unpin").
        if result
            .as_ref()
            .is_err_and(crate::load_balancer::error_unpins)
        {
            self.unpin();
        }
        result
    }

    /// Aborts the transaction (spec, "abortTransaction"), within
    /// [`default_timeout`](Self::default_timeout): [`ClientSession::abort_transaction`].
    pub(crate) async fn abort_transaction_in(&self) -> Result<()> {
        let (ending, options) = self.update_transaction(|transaction| {
            Ok((check_abort(transaction.state)?, transaction.options.clone()))
        })?;
        if ending != Ending::Nothing {
            // Drivers ignore all abortTransaction errors (spec, "Design Rationale").
            let _ = self
                .executor()
                .execute(
                    EndTransaction::abort(&options),
                    Some(self),
                    self.default_timeout(),
                )
                .await;
        }
        self.set_transaction_state(TransactionState::Aborted);
        self.set_transaction_span(None);
        // Whatever the abort did (spec, "When to unpin", 1).
        self.unpin();
        Ok(())
    }

    /// Whether a transaction is open (starting or in progress).
    pub fn in_transaction(&self) -> bool {
        self.transaction_state().is_active()
    }

    /// Where the session is with transactions.
    pub fn transaction_state(&self) -> TransactionState {
        self.update_transaction(|transaction| Ok(transaction.state))
            .unwrap_or_default()
    }

    /// Runs `body` in a transaction and commits it, retrying as the Convenient API
    /// for Transactions spec says: [`StartTransaction::and_run2`](crate::action::StartTransaction::and_run2)
    /// and [`and_run`](crate::action::StartTransaction::and_run).
    pub(crate) async fn run_transaction<R>(
        &self,
        body: &mut impl TransactionBody<R>,
        options: TransactionOptions,
    ) -> Result<R> {
        // With timeoutMS, one deadline bounds the whole call, the operations of the
        // callback in the session included (Client Side Operations Timeout spec,
        // "Convenient Transactions API").
        let timeout = self.default_timeout();
        let context =
            timeout.map(|_| OperationContext::with_timeout(timeout, self.executor().now()));
        self.set_transaction_context(context);
        let _cleared = ClearTransactionContext(self);
        self.run_transaction_in(body, options, context).await
    }

    async fn run_transaction_in<R>(
        &self,
        body: &mut impl TransactionBody<R>,
        options: TransactionOptions,
        context: Option<OperationContext>,
    ) -> Result<R> {
        let clock = self.executor().runtime().clock.clone();
        let budget = Budget::new(clock.clone(), context);
        // The session the body gets: the same session, a handle of its own.
        let mut handle = self.clone();
        let mut attempt: u32 = 0;
        let mut last_error: Option<Error> = None;
        'transaction: loop {
            if let Some(error) = last_error.take() {
                let backoff = backoff(attempt, jitter());
                if !budget.has_time(backoff) {
                    return Err(budget.out_of_time(error));
                }
                clock.sleep(backoff).await;
            }
            self.start_transaction_in(options.clone())?;
            attempt += 1;
            let value = match body.run(&mut handle).await {
                Ok(value) => value,
                Err(error) => {
                    if self.in_transaction() {
                        // The abort gets a timeoutMS of its own (spec, "Convenient
                        // Transactions API").
                        self.set_transaction_context(None);
                        let aborted = self.abort_transaction_in().await;
                        self.set_transaction_context(context);
                        aborted?;
                    }
                    if error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
                        if budget.has_time(Duration::ZERO) {
                            last_error = Some(error);
                            continue 'transaction;
                        }
                        // Out of time with retries left: timeoutMS's error, the
                        // transient one as its cause (without timeoutMS, the error).
                        return Err(budget.out_of_time(error));
                    }
                    return Err(error);
                }
            };
            // The callback committed or aborted the transaction itself.
            if !self.in_transaction() {
                return Ok(value);
            }
            loop {
                let error = match self.commit_transaction_in().await {
                    Ok(()) => return Ok(value),
                    Err(error) => error,
                };
                if error.code() != Some(MAX_TIME_MS_EXPIRED)
                    && !error.is_operation_timeout()
                    && error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                {
                    if !budget.has_time(Duration::ZERO) {
                        return Err(budget.out_of_time(error));
                    }
                    continue;
                }
                if error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
                    last_error = Some(error);
                    continue 'transaction;
                }
                return Err(error);
            }
        }
    }

    /// Before an operation other than commitTransaction and abortTransaction (spec,
    /// "ClientSession changes"): a transaction that ended is forgotten (the session
    /// goes back to "no transaction"); for an open one, the read preference its reads
    /// must use.
    pub(crate) fn enter_operation(&self) -> Option<SelectionCriteria> {
        self.update_transaction(|transaction| {
            Ok(match transaction.state {
                TransactionState::Starting | TransactionState::InProgress => Some(
                    transaction
                        .options
                        .selection_criteria
                        .clone()
                        .unwrap_or_default(),
                ),
                TransactionState::None => None,
                _ => {
                    *transaction = Transaction::default();
                    None
                }
            })
        })
        .unwrap_or_default()
    }

    /// What the transaction adds to the next command (none outside a transaction);
    /// `ends` for commitTransaction and abortTransaction.
    pub(crate) fn transaction_fields(&self, ends: bool) -> Option<CommandFields> {
        self.update_transaction(|transaction| {
            Ok(match (ends, transaction.state) {
                (true, _) => Some(CommandFields {
                    starting: false,
                    read_concern: None,
                    ends: true,
                    recovery_token: transaction.recovery_token.clone(),
                }),
                (false, TransactionState::Starting) => Some(CommandFields {
                    starting: true,
                    read_concern: transaction
                        .options
                        .read_concern
                        .as_ref()
                        .map(ReadConcern::to_document),
                    ends: false,
                    recovery_token: None,
                }),
                (false, TransactionState::InProgress) => Some(CommandFields {
                    starting: false,
                    read_concern: None,
                    ends: false,
                    recovery_token: None,
                }),
                (false, _) => None,
            })
        })
        .unwrap_or_default()
    }

    /// Keeps the `recoveryToken` of a successful reply in the transaction (spec,
    /// "recoveryToken field": "the most recently received").
    pub(crate) fn record_recovery_token(&self, reply: &RawDocument) {
        let token = reply.get_document("recoveryToken").ok();
        if let Some(token) = token.and_then(|token| Document::try_from(token).ok()) {
            let _ = self.update_transaction(|transaction| {
                transaction.recovery_token = Some(token);
                Ok(())
            });
        }
    }

    /// The first command of the transaction was sent: in progress from now on, even
    /// if it failed (spec, "Constructing the first command within a transaction").
    pub(crate) fn transaction_started(&self) {
        let _ = self.update_transaction(|transaction| {
            if transaction.state == TransactionState::Starting {
                transaction.state = TransactionState::InProgress;
            }
            Ok(())
        });
    }

    fn set_transaction_state(&self, state: TransactionState) {
        let _ = self.update_transaction(|transaction| {
            transaction.state = state;
            Ok(())
        });
    }
}

/// Refuses a read concern or a write concern given to one operation (`read_concern`,
/// `write_concern`: whether each was) that runs in a transaction of `session` (spec,
/// "Users cannot pass readConcern or writeConcern to operations in transactions").
pub(crate) fn check_operation_concerns(
    session: Option<&ClientSession>,
    read_concern: bool,
    write_concern: bool,
) -> Result<()> {
    if !session.is_some_and(ClientSession::in_transaction) {
        return Ok(());
    }
    if read_concern {
        return Err(Error::invalid_argument(
            "Cannot set read concern after starting a transaction",
        ));
    }
    if write_concern {
        return Err(Error::invalid_argument(
            "Cannot set write concern after starting a transaction",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::state::*;
    use super::*;
    use crate::error::{CommandError, WriteConcernError, WriteFailure};
    use crate::uri::ClientOptions;
    use bson::Timestamp;
    use TransactionState::{Aborted, Committed, CommittedEmpty, InProgress, Starting};

    #[test]
    fn invalid_transitions_are_refused_with_the_spec_messages() {
        let message = |result: Result<Ending>| result.unwrap_err().to_string();
        assert!(check_start(Starting).is_err());
        assert!(check_start(InProgress)
            .unwrap_err()
            .to_string()
            .contains("Transaction already in progress"));
        for state in [TransactionState::None, Committed, CommittedEmpty, Aborted] {
            assert!(check_start(state).is_ok());
        }
        assert!(message(check_commit(TransactionState::None)).contains("No transaction started"));
        assert!(message(check_commit(Aborted))
            .contains("Cannot call commitTransaction after calling abortTransaction"));
        assert_eq!(check_commit(Starting).unwrap(), Ending::Nothing);
        assert_eq!(check_commit(CommittedEmpty).unwrap(), Ending::Nothing);
        assert_eq!(
            check_commit(InProgress).unwrap(),
            Ending::Run { again: false }
        );
        assert_eq!(
            check_commit(Committed).unwrap(),
            Ending::Run { again: true }
        );
        assert!(message(check_abort(TransactionState::None)).contains("No transaction started"));
        assert!(message(check_abort(Committed))
            .contains("Cannot call abortTransaction after calling commitTransaction"));
        assert!(message(check_abort(CommittedEmpty)).contains("after calling commitTransaction"));
        assert!(message(check_abort(Aborted)).contains("Cannot call abortTransaction twice"));
        assert_eq!(check_abort(Starting).unwrap(), Ending::Nothing);
        assert_eq!(
            check_abort(InProgress).unwrap(),
            Ending::Run { again: false }
        );
    }

    #[test]
    fn the_first_command_starts_the_transaction_and_later_ones_do_not() {
        let first = CommandFields {
            starting: true,
            read_concern: Some(doc! { "level": "snapshot" }),
            ends: false,
            recovery_token: None,
        };
        let mut body = doc! {
            "insert": "c", "readConcern": { "level": "local" }, "writeConcern": { "w": 1 },
        };
        let time = Timestamp {
            time: 3,
            increment: 1,
        };
        add_fields(&mut body, 7, &first, Some(time));
        assert_eq!(
            body,
            doc! {
                "insert": "c", "txnNumber": 7_i64, "startTransaction": true,
                "readConcern": { "level": "snapshot", "afterClusterTime": time },
                "autocommit": false,
            }
        );
        let later = CommandFields {
            starting: false,
            read_concern: None,
            ends: false,
            recovery_token: None,
        };
        let mut body = doc! { "find": "c", "readConcern": { "level": "local" } };
        add_fields(&mut body, 7, &later, Some(time));
        assert_eq!(
            body,
            doc! { "find": "c", "txnNumber": 7_i64, "autocommit": false }
        );
        let commit = CommandFields {
            starting: false,
            read_concern: None,
            ends: true,
            recovery_token: None,
        };
        let mut body = doc! { "commitTransaction": 1, "writeConcern": { "w": "majority" } };
        add_fields(&mut body, 7, &commit, None);
        assert_eq!(
            body,
            doc! {
                "commitTransaction": 1, "writeConcern": { "w": "majority" },
                "txnNumber": 7_i64, "autocommit": false,
            }
        );
        // A mongos's recoveryToken goes back with commit and abort, as it came.
        let token = doc! { "recoveryShardId": "shard0", "extra": [1, 2] };
        let recovering = CommandFields {
            recovery_token: Some(token.clone()),
            ..commit
        };
        let mut body = doc! { "abortTransaction": 1 };
        add_fields(&mut body, 7, &recovering, None);
        assert_eq!(body.get_document("recoveryToken").unwrap(), &token);
        // Without a read concern or a causal time, the first command sends none.
        let mut body = doc! { "insert": "c" };
        let bare = CommandFields {
            read_concern: None,
            ..first
        };
        add_fields(&mut body, 1, &bare, None);
        assert!(!body.contains_key("readConcern"));
    }

    #[test]
    fn a_commit_run_again_uses_majority_and_a_wtimeout() {
        assert_eq!(commit_write_concern(None, false), None);
        assert_eq!(
            commit_write_concern(None, true),
            Some(doc! { "w": "majority", "wtimeout": 10_000_i64 })
        );
        let mut given = WriteConcern::nodes(1);
        given.w_timeout = Some(Duration::from_millis(50));
        assert_eq!(
            commit_write_concern(Some(&given), true),
            Some(doc! { "w": "majority", "wtimeout": 50_i64 })
        );
        assert_eq!(
            commit_write_concern(Some(&given), false),
            Some(doc! { "w": 1, "wtimeout": 50_i64 })
        );
    }

    fn command(code: i32) -> Error {
        Error::new(ErrorKind::Command(CommandError {
            code,
            code_name: String::new(),
            message: "x".into(),
            error_labels: Vec::new(),
            topology_version: None,
        }))
    }

    fn write_concern_error(code: i32) -> Error {
        Error::new(ErrorKind::Write(WriteFailure::WriteConcernError(
            WriteConcernError {
                code,
                code_name: String::new(),
                message: "x".into(),
                details: None,
            },
        )))
    }

    #[test]
    fn commit_errors_of_unknown_outcome_are_labelled() {
        let unknown = |error: Error| {
            label_commit_error(error).contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
        };
        let network = Error::network("a:1", std::io::ErrorKind::ConnectionReset, "reset");
        assert!(unknown(network.clone()));
        assert!(unknown(command(50)));
        assert!(unknown(command(91).with_label(RETRYABLE_WRITE_ERROR)));
        assert!(unknown(write_concern_error(64)));
        assert!(unknown(write_concern_error(91)));
        assert!(!unknown(write_concern_error(100)));
        assert!(!unknown(write_concern_error(79)));
        assert!(!unknown(command(251)));
        assert!(!unknown(Error::invalid_argument("x")));
        // With timeoutMS: judged by what the deadline cut, unknown when it cut a
        // round trip in flight.
        let timed_out = |cause| Error::operation_timeout(Duration::from_millis(5), "x", cause);
        assert!(unknown(timed_out(None)));
        assert!(unknown(timed_out(Some(command(50)))));
        assert!(unknown(timed_out(Some(network.clone()))));
        assert!(!unknown(timed_out(Some(command(251)))));
        // Network errors in a transaction are transient, except commit's, and so
        // release a load balancer's pinned connection (spec, "When to unpin").
        let transient = label_transient(network);
        assert!(transient.contains_label(TRANSIENT_TRANSACTION_ERROR));
        assert!(crate::load_balancer::error_unpins(&transient));
        assert!(!label_transient(command(11000)).contains_label(TRANSIENT_TRANSACTION_ERROR));
    }

    #[test]
    fn options_are_inherited_from_the_session_then_the_client() {
        let client = ClientOptions::parse_uri("mongodb://h/?w=2&readConcernLevel=local").unwrap();
        let session_defaults = TransactionOptions {
            write_concern: Some(WriteConcern::majority()),
            max_commit_time: Some(Duration::from_millis(5)),
            ..TransactionOptions::default()
        };
        let given = TransactionOptions {
            max_commit_time: Some(Duration::from_millis(9)),
            ..TransactionOptions::default()
        };
        let resolved = given.or(Some(&session_defaults)).or_client(&client);
        assert_eq!(resolved.write_concern, Some(WriteConcern::majority()));
        assert_eq!(resolved.max_commit_time, Some(Duration::from_millis(9)));
        assert_eq!(
            resolved.read_concern,
            Some(ReadConcern::new(crate::concern::ReadConcernLevel::Local))
        );
        assert_eq!(resolved.selection_criteria, None);
        let parsed: TransactionOptions = bson::deserialize_from_document(doc! {
            "readConcern": { "level": "snapshot" }, "writeConcern": { "w": 1 },
            "readPreference": { "mode": "secondary" }, "maxCommitTimeMS": 60,
        })
        .unwrap();
        assert_eq!(parsed.max_commit_time, Some(Duration::from_millis(60)));
        assert!(check_read_preference(parsed.selection_criteria.as_ref().unwrap()).is_err());
        assert!(check_read_preference(&SelectionCriteria::default()).is_ok());
    }

    #[test]
    fn backoff_grows_to_its_ceiling_and_scales_with_jitter() {
        assert_eq!(backoff(1, 0.0), Duration::ZERO);
        assert_eq!(backoff(1, 1.0), Duration::from_secs_f64(0.0075));
        assert_eq!(backoff(30, 1.0), Duration::from_millis(500));
        assert!(backoff(3, 0.5) < backoff(3, 1.0));
        let j = jitter();
        assert!((0.0..=1.0).contains(&j));
    }
}
