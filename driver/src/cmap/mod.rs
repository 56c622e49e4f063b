//! Connection Monitoring and Pooling (connection-monitoring-and-pooling.md).
//!
//! - [`ConnectionPool`]: the spec's pool, generic over the [`Establish`] seam that
//!   opens connections (the driver's real connections, or fake ones in the spec
//!   tests): paused / ready / closed states, generations (per `serviceId` in
//!   load-balanced mode), maxPoolSize, minPoolSize, maxIdleTimeMS, maxConnecting, a
//!   first-in first-out wait queue with a check-out timeout, clearing with or without
//!   interrupting connections in use, and every CMAP event ([`CmapEvent`](crate::event::cmap::CmapEvent)). It waits
//!   on nothing but the runtime seams: the [`Clock`](crate::rt::Clock) for time, the
//!   optional [`Spawner`](crate::rt::Spawner) for background work (without one, the
//!   owner calls [`ConnectionPool::populate`]).
//! - [`Connector`]: the driver's [`Establish`], opening real [`Connection`]s. A client
//!   keeps one pool of them per server, which its topology marks ready, clears and
//!   closes as SDAM learns about the server.

mod connector;
pub(crate) mod options;
mod pool;
#[cfg(test)]
mod tests;

pub use crate::connection::Connection;
pub use connector::Connector;
pub use options::{PoolOptions, DEFAULT_MAINTENANCE_INTERVAL};
pub use pool::{
    CheckedOut, ConnectionPool, Establish, PinnedTo, PoolState, Poolable, IDLE_CHECK_AFTER,
};
