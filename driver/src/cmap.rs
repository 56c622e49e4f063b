//! Connection Monitoring and Pooling, as far as Server Discovery and Monitoring needs
//! it today: one pool per server with idle connections and a generation that a clear
//! bumps, so that connections opened before an error are never reused after it
//! (CMAP spec, "Clearing a Connection Pool"). Limits, the wait queue, minPoolSize
//! and pool events come with the full CMAP implementation.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::connection::Connection;

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
    state: Mutex<PoolState>,
}

#[derive(Debug, Default)]
struct PoolState {
    idle: Vec<PooledConnection>,
    generation: u32,
    closed: bool,
}

impl Pool {
    fn state(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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
