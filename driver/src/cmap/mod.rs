//! Connection Monitoring and Pooling (connection-monitoring-and-pooling.md).
//!
//! - [`ConnectionPool`]: the spec's pool, generic over the [`Establish`] seam that
//!   opens connections (the driver's real connections, or fake ones in the spec
//!   tests): paused / ready / closed states, generations (per `serviceId` in
//!   load-balanced mode), maxPoolSize, minPoolSize, maxIdleTimeMS, maxConnecting, a
//!   first-in first-out wait queue with a check-out timeout, clearing with or without
//!   interrupting connections in use, and every CMAP event ([`CmapEvent`]). It waits
//!   on nothing but the runtime seams: the [`Clock`](crate::rt::Clock) for time, the
//!   optional [`Spawner`](crate::rt::Spawner) for background work (without one, the
//!   owner calls [`ConnectionPool::populate`]).
//! - A minimal pool, crate-internal, that the live topology still uses today: one per
//!   server with idle connections and a generation that a clear bumps, so that
//!   connections opened before an error are never reused after it (CMAP spec,
//!   "Clearing a Connection Pool").

use std::sync::{Mutex, MutexGuard};

use bson::oid::ObjectId;

use crate::connection::Connection;

mod events;
mod pool;
#[cfg(test)]
mod tests;

pub use events::{CheckOutFailedReason, CmapEvent, CmapEventHandler, ConnectionClosedReason};
pub use pool::{
    CheckedOut, ConnectionPool, Establish, PoolOptions, PoolState, Poolable,
    DEFAULT_MAINTENANCE_INTERVAL, WAIT_QUEUE_TIMEOUT,
};

/// The driver's connections, as a [`ConnectionPool`] sees them.
impl Poolable for Connection {
    fn is_broken(&self) -> bool {
        Connection::is_broken(self)
    }

    fn service_id(&self) -> Option<ObjectId> {
        self.hello().service_id
    }
}

/// A connection of a pool, stamped with the pool generation it was opened in.
#[derive(Debug)]
pub(crate) struct PooledConnection {
    /// The connection itself.
    pub connection: Connection,
    /// The pool's generation when the connection was opened.
    pub generation: u32,
}

/// The idle connections to one server.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    state: Mutex<IdleState>,
}

#[derive(Debug, Default)]
struct IdleState {
    idle: Vec<PooledConnection>,
    generation: u32,
    closed: bool,
}

impl Pool {
    fn state(&self) -> MutexGuard<'_, IdleState> {
        crate::sync::lock(&self.state)
    }

    /// The current generation: a connection opened now is stamped with it.
    pub fn generation(&self) -> u32 {
        self.state().generation
    }

    /// The most recently used idle connection of the current generation, if any.
    pub fn take_idle(&self) -> Option<PooledConnection> {
        let mut state = self.state();
        let generation = state.generation;
        // Stale connections are dropped (closed) as they are found.
        while let Some(connection) = state.idle.pop() {
            if connection.generation == generation && !connection.connection.is_broken() {
                return Some(connection);
            }
        }
        None
    }

    /// Returns a connection after use; a broken or stale one, or any after the pool
    /// closed, is dropped instead.
    pub fn check_in(&self, connection: PooledConnection) {
        let mut state = self.state();
        if !state.closed
            && connection.generation == state.generation
            && !connection.connection.is_broken()
        {
            state.idle.push(connection);
        }
    }

    /// Clears the pool: a new generation, and every idle connection closed.
    /// Connections in use are closed when they come back.
    pub fn clear(&self) {
        let mut state = self.state();
        state.generation += 1;
        state.idle.clear();
    }

    /// Closes the pool for good: its server left the topology or the client closed.
    pub fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        state.idle.clear();
    }
}
