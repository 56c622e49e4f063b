//! A pool's options (the CMAP spec's ConnectionPoolOptions): plain data, shared by the
//! pool and the events that report them.

use std::time::Duration;

use crate::error::{Error, Result};

/// How often the background task looks at a pool when nothing wakes it earlier.
pub const DEFAULT_MAINTENANCE_INTERVAL: Duration = Duration::from_secs(1);

/// The options of a pool (the spec's ConnectionPoolOptions, plus the load-balanced
/// flag and the background task's interval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// `maxPoolSize`: connections (pending, available and in use) at most; 0 means no
    /// limit. Default 100.
    pub max_pool_size: u32,
    /// `minPoolSize`: connections the pool keeps open while it is ready. Default 0.
    pub min_pool_size: u32,
    /// `maxIdleTimeMS`: an available connection unused for longer is closed; `None`
    /// means no limit.
    pub max_idle_time: Option<Duration>,
    /// `maxConnecting`: connections being established at once (at least 1). Default 2.
    pub max_connecting: u32,
    /// `waitQueueTimeoutMS`: how long a check-out waits when its caller gives no
    /// timeout; `None` means no limit.
    pub wait_queue_timeout: Option<Duration>,
    /// Load-balanced mode: generations are kept per `serviceId`, and clearing a
    /// service neither pauses the pool nor empties its wait queue.
    pub load_balanced: bool,
    /// Time between two runs of the background task (closing perished available
    /// connections, opening connections up to `min_pool_size`); a clear, a `ready`
    /// and each connection it opens start the next run at once.
    pub maintenance_interval: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_pool_size: 100,
            min_pool_size: 0,
            max_idle_time: None,
            max_connecting: 2,
            wait_queue_timeout: None,
            load_balanced: false,
            maintenance_interval: DEFAULT_MAINTENANCE_INTERVAL,
        }
    }
}

// `PoolOptions::from_client_options` is in `uri`, next to the options it reads: the
// pool's options are named by the CMAP events, which the client options' handlers
// receive, so this module cannot import `uri`.
impl PoolOptions {
    pub(super) fn validate(&self) -> Result<()> {
        if self.max_connecting == 0 {
            return Err(Error::invalid_argument("maxConnecting must be at least 1"));
        }
        if self.max_pool_size > 0 && self.min_pool_size > self.max_pool_size {
            return Err(Error::invalid_argument(format!(
                "minPoolSize ({}) cannot exceed maxPoolSize ({})",
                self.min_pool_size, self.max_pool_size
            )));
        }
        if self.maintenance_interval.is_zero() {
            return Err(Error::invalid_argument(
                "the pool's maintenance interval must not be zero",
            ));
        }
        Ok(())
    }
}
