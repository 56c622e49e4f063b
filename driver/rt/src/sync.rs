//! Locking without poisoning, for the driver and the hosts.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, also after a thread panicked holding it: the data the driver keeps
/// under its locks stays consistent at every await point, so a poisoned lock carries
/// no half-made change.
///
/// ```
/// let counter = std::sync::Mutex::new(0);
/// *anymongo_rt::sync::lock(&counter) += 1;
/// assert_eq!(*anymongo_rt::sync::lock(&counter), 1);
/// ```
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
