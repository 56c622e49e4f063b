//! The transaction operations on session entities (spec "Session Operations":
//! `startTransaction`, `commitTransaction`, `abortTransaction`, `withTransaction`) and
//! the special operation `assertSessionTransactionState`.

use anymongo::transactions::{TransactionOptions, TransactionState};
use bson::Bson;

use super::arguments::{known_arguments, Arguments};
use super::model::Operation;
use super::operations::{self, Context, Returned};
use super::Abort;

/// The options `startTransaction` and `withTransaction` take (`TransactionOptions`).
const OPTIONS: &[&str] = &[
    "readConcern",
    "writeConcern",
    "readPreference",
    "maxCommitTimeMS",
];

/// Spec `startTransaction`.
pub async fn start_transaction(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let options: TransactionOptions = Arguments::of(operation).options(OPTIONS)?;
    // A handle of the entity's session: starting a transaction takes it mutably.
    let mut session = context.entities.session(&operation.object)?.session.clone();
    Ok(session
        .start_transaction()
        .with_options(options)
        .await
        .map(|()| None))
}

/// Spec `commitTransaction`.
pub async fn commit_transaction(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    known_arguments(operation, &[])?;
    let session = context.entities.session(&operation.object)?.session.clone();
    Ok(session.commit_transaction().await.map(|()| None))
}

/// Spec `abortTransaction`.
pub async fn abort_transaction(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    known_arguments(operation, &[])?;
    let session = context.entities.session(&operation.object)?.session.clone();
    Ok(session.abort_transaction().await.map(|()| None))
}

/// The operations of a `withTransaction`'s `callback` (none for other operations),
/// so that a test using one the runner lacks is skipped before it starts.
pub fn callback_operations(operation: &Operation) -> Vec<Operation> {
    if operation.name != "withTransaction" {
        return Vec::new();
    }
    operation
        .arguments
        .get_array("callback")
        .map(|callback| {
            callback
                .iter()
                .filter_map(|operation| bson::deserialize_from_bson(operation.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Spec `withTransaction`: the callback runs the operations of `callback` in turn,
/// checking each one's `expectError` or `expectResult`; a driver error of one of
/// them ends the callback with that error, whatever was expected of it, so that
/// `withTransaction` sees it (spec "withTransaction").
pub async fn with_transaction(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let callback = arguments.required("callback")?;
    let Bson::Array(callback) = callback else {
        return Err(Abort::Failed(format!(
            "withTransaction: the callback must be an array of operations, not {callback}"
        )));
    };
    let callback = callback
        .into_iter()
        .map(|operation| {
            bson::deserialize_from_bson::<Operation>(operation.clone())
                .map_err(|e| Abort::Failed(format!("not an operation: {operation}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options: TransactionOptions = arguments.options(OPTIONS)?;
    let mut session = context.entities.session(&operation.object)?.session.clone();
    // The callback borrows the context for each of its runs; a failed assertion
    // inside it stops the test once withTransaction returns. `and_run` rather than
    // `and_run2`: an async closure here meets rustc's "implementation of `Send` is not
    // general enough" inside the runner's boxed futures (as in the official driver's
    // own test runner).
    let mut failed = None::<Abort>;
    let result = session
        .start_transaction()
        .with_options(options)
        .and_run(
            (&mut *context, &mut failed, &callback),
            |_session, (context, failed, callback)| {
                Box::pin(async move {
                    for operation in callback.iter() {
                        let returned = match operations::execute(operation, context).await {
                            Ok(returned) => returned,
                            Err(abort) => return Err(stop(failed, abort)),
                        };
                        if let Err(abort) =
                            super::check_returned(operation, returned.clone(), context)
                        {
                            return Err(stop(failed, abort));
                        }
                        returned?;
                    }
                    Ok(())
                })
            },
        )
        .await;
    match failed {
        Some(abort) => Err(abort),
        None => Ok(result.map(|()| None)),
    }
}

/// Keeps the reason the callback stopped for the test, and gives withTransaction an
/// error without labels, which it does not retry.
fn stop(failed: &mut Option<Abort>, abort: Abort) -> anymongo::Error {
    let error = anymongo::Error::invalid_argument(match &abort {
        Abort::Failed(why) | Abort::Unsupported(why) => why.clone(),
    });
    *failed = Some(abort);
    error
}

/// Spec "assertSessionTransactionState".
pub async fn assert_session_transaction_state(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let session = arguments.string("session")?;
    let expected = arguments.string("state")?;
    arguments.done()?;
    let state = context
        .entities
        .session(&session)?
        .session
        .transaction_state();
    let actual = match state {
        TransactionState::None => "none",
        TransactionState::Starting => "starting",
        TransactionState::InProgress => "in_progress",
        TransactionState::Committed | TransactionState::CommittedEmpty => "committed",
        TransactionState::Aborted => "aborted",
    };
    match actual == expected {
        true => Ok(Ok(None)),
        false => Err(Abort::Failed(format!(
            "the session's transaction state is {actual}, expected {expected}"
        ))),
    }
}

/// Whether `test` starts transactions (with `startTransaction` or `withTransaction`).
pub fn starts_transactions(test: &super::model::Test) -> bool {
    test.operations.iter().any(|operation| {
        matches!(
            operation.name.as_str(),
            "startTransaction" | "withTransaction"
        )
    })
}

/// Spec "Terminating Open Transactions": kills every session on the server through
/// the internal client, so that a transaction a test left open (an abort the fail
/// point made fail, say) cannot block the next tests' writes until it times out.
pub async fn terminate_open_transactions(deployment: &super::Deployment) -> Result<(), String> {
    /// Interrupted: the spec lets runners ignore it (SERVER-38335).
    const INTERRUPTED: i32 = 11601;
    let admin = deployment.internal.database("admin");
    let kill = admin.run_command(bson::doc! { "killAllSessions": [] });
    match tokio::time::timeout(super::OPERATION_TIMEOUT, kill).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) if error.code() == Some(INTERRUPTED) => Ok(()),
        Ok(Err(error)) => Err(format!("killAllSessions failed: {error}")),
        Err(_) => Err("killAllSessions timed out".to_owned()),
    }
}
