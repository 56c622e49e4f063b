//! Thread entities (spec "entity", `thread`; "runOnThread", "waitForThread"): each a
//! tokio task that runs the operations scheduled on it, in order, concurrently with
//! the test's own operations.
//!
//! An operation scheduled on a thread runs on what the entity map holds when it is
//! scheduled ([`EntityMap::shared`](super::entities::EntityMap::shared)): clients, databases, collections, buckets and
//! values, which the driver's handles let several tasks use at once. Sessions and
//! cursors are not shared: the spec says they "SHOULD NOT be used in operations on
//! multiple different threads entities". The first failure of an operation on a
//! thread ends the thread and is reported by `waitForThread`, which fails the test.

use std::time::Duration;

use anymongo::rt::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::arguments::{known_arguments, required_str};
use super::model::Operation;
use super::operations::{Context, Returned};
use super::{run_operation, Abort};

/// How long `waitForThread` waits for the thread's last operation (spec
/// "waitForThread": "not satisfied after 10 seconds").
const WAIT_FOR_THREAD_TIMEOUT: Duration = Duration::from_secs(10);

/// An operation scheduled on a thread, and the context it runs in.
type Job = (Operation, Context);

/// A thread entity: the task and the way to give it operations.
pub struct ThreadEntity {
    /// Where `runOnThread` sends operations; `None` once `waitForThread` said no more
    /// are coming.
    jobs: Option<mpsc::UnboundedSender<Job>>,
    /// The task, which ends with the first failure of its operations.
    task: JoinHandle<Result<(), Abort>>,
}

impl ThreadEntity {
    /// Starts an idle thread (spec "entity", `thread`: "Once the thread has been
    /// created, it should be idle and waiting for operations").
    pub fn start(id: &str) -> ThreadEntity {
        let (jobs, mut scheduled) = mpsc::unbounded_channel::<Job>();
        let id = id.to_owned();
        let task = tokio::spawn(async move {
            while let Some((operation, mut context)) = scheduled.recv().await {
                run_operation(&operation, &mut context)
                    .await
                    .map_err(|abort| {
                        abort.within(&format!("on thread {id}, operation {}", operation.name))
                    })?;
            }
            Ok(())
        });
        ThreadEntity {
            jobs: Some(jobs),
            task,
        }
    }
}

impl Drop for ThreadEntity {
    /// A thread the test did not wait for stops with the test.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Spec "runOnThread": schedules the operation on the thread and returns at once.
pub fn run_on_thread<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["thread", "operation"])?;
        let id = required_str(operation, "thread")?;
        let scheduled = operation
            .arguments
            .get_document("operation")
            .map_err(|_| "runOnThread needs an operation".to_owned())?;
        let scheduled: Operation = bson::deserialize_from_document(scheduled.clone())
            .map_err(|e| format!("not an operation: {scheduled}: {e}"))?;
        if let Some(why) = super::operations::unsupported(&scheduled) {
            return Err(Abort::Unsupported(why));
        }
        let mut on_thread = Context::new(context.deployment.clone(), context.client_uri.clone());
        on_thread.multi_mongos_uri = context.multi_mongos_uri.clone();
        on_thread.entities = context.entities.shared();
        let jobs = context.entities.thread(id)?.jobs.as_ref();
        let jobs = jobs.ok_or_else(|| format!("the thread {id} was waited for already"))?;
        // A thread that ended early has failed: waitForThread reports why.
        let _ended = jobs.send((scheduled, on_thread));
        Ok(Ok(None))
    })
}

/// Spec "waitForThread": no more operations come; waits (at most
/// `WAIT_FOR_THREAD_TIMEOUT`) for the thread's last one, and fails the test if one of
/// them failed.
pub fn wait_for_thread<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["thread"])?;
        let id = required_str(operation, "thread")?;
        let thread = context.entities.thread_mut(id)?;
        thread.jobs = None;
        let ended = tokio::time::timeout(WAIT_FOR_THREAD_TIMEOUT, &mut thread.task).await;
        match ended {
            Err(_) => Err(Abort::Failed(format!(
                "the thread {id} is still running after {WAIT_FOR_THREAD_TIMEOUT:?}"
            ))),
            Ok(Err(error)) => Err(Abort::Failed(format!("the thread {id} panicked: {error}"))),
            Ok(Ok(ran)) => ran.map(|()| Ok(None)),
        }
    })
}
