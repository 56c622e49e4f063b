//! Runtime-free synchronisation: [`lock`], and [`Notify`], a "something changed"
//! signal that tasks wait on and one call wakes all. The topology uses it to wake
//! server selection when a description changes and to wake monitors when a check is
//! requested or the client closes. [`TaskTracker`] tells when background tasks have
//! ended: a closing client waits for its monitors, and so for their sockets.
//!
//! No executor is assumed (the core runs under tokio, wstd and JavaScript promises):
//! every waiter holds the receiving end of a oneshot channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::channel::oneshot;

/// Shared with the hosts' TLS, which lives in `anymongo-rt` with it.
pub(crate) use anymongo_rt::sync::lock;

/// Wakes every current waiter at once.
#[derive(Debug, Default)]
pub(crate) struct Notify {
    waiters: Mutex<Vec<oneshot::Sender<()>>>,
}

/// Resolves when the [`Notify`] it came from is notified, or dropped.
#[derive(Debug)]
pub(crate) struct Notified(oneshot::Receiver<()>);

impl Notify {
    /// Registers a waiter. Register *before* checking the condition you wait for, so
    /// that a notification between the check and the wait is not lost.
    pub fn listen(&self) -> Notified {
        let (sender, receiver) = oneshot::channel();
        let mut waiters = lock(&self.waiters);
        // Waiters that gave up (dropped their receiver) are pruned as new ones come.
        waiters.retain(|waiter| !waiter.is_canceled());
        waiters.push(sender);
        Notified(receiver)
    }

    /// Wakes every registered waiter.
    pub fn notify_all(&self) {
        let waiters = std::mem::take(&mut *lock(&self.waiters));
        for waiter in waiters {
            // A waiter that already gave up is not an error.
            let _ = waiter.send(());
        }
    }
}

impl Future for Notified {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Cancelled (the Notify was dropped) also ends the wait: the owner is gone.
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// Counts the tasks that hold one of its [`TaskGuard`]s, so that one can wait until
/// they have all ended.
#[derive(Debug, Default)]
pub(crate) struct TaskTracker {
    running: Mutex<usize>,
    ended: Notify,
}

/// Held by a tracked task for as long as it runs: dropped with the task's future.
#[derive(Debug)]
pub(crate) struct TaskGuard(Arc<TaskTracker>);

impl TaskTracker {
    /// A guard for a task about to be spawned: the task counts from now on.
    pub fn track(self: &Arc<Self>) -> TaskGuard {
        *lock(&self.running) += 1;
        TaskGuard(self.clone())
    }

    /// Resolves once no tracked task is running.
    pub async fn all_ended(&self) {
        loop {
            let woken = self.ended.listen();
            if *lock(&self.running) == 0 {
                return;
            }
            woken.await;
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        let mut running = lock(&self.0.running);
        *running -= 1;
        if *running == 0 {
            drop(running);
            self.0.ended.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn every_waiter_registered_before_the_notification_wakes() {
        let notify = Notify::default();
        let first = notify.listen();
        let second = notify.listen();
        notify.notify_all();
        assert_eq!(first.now_or_never(), Some(()));
        assert_eq!(second.now_or_never(), Some(()));
    }

    #[test]
    fn a_waiter_registered_after_the_notification_waits_for_the_next() {
        let notify = Notify::default();
        notify.notify_all();
        let mut late = notify.listen();
        assert_eq!((&mut late).now_or_never(), None);
        notify.notify_all();
        assert_eq!(late.now_or_never(), Some(()));
    }

    #[test]
    fn dropping_the_notify_releases_waiters() {
        let notify = Notify::default();
        let waiter = notify.listen();
        drop(notify);
        assert_eq!(waiter.now_or_never(), Some(()));
    }

    #[test]
    fn all_ended_waits_for_every_guard() {
        let tracker = Arc::new(TaskTracker::default());
        assert_eq!(tracker.all_ended().now_or_never(), Some(()));
        let first = tracker.track();
        let second = tracker.track();
        let mut ended = Box::pin(tracker.all_ended());
        assert_eq!(ended.as_mut().now_or_never(), None);
        drop(first);
        assert_eq!(ended.as_mut().now_or_never(), None);
        drop(second);
        assert_eq!(ended.now_or_never(), Some(()));
    }

    #[test]
    fn abandoned_waiters_are_pruned() {
        let notify = Notify::default();
        for _ in 0..100 {
            drop(notify.listen());
        }
        let _kept = notify.listen();
        assert_eq!(notify.waiters.lock().unwrap().len(), 1);
    }
}
