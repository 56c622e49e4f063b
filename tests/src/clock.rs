//! A clock the test puts ahead, for rules that need time to pass (a connection idle for
//! a second is checked before use) without the test waiting that long.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::rt::{BoxFuture, Clock, Instant};

/// A host's clock, put ahead by [`AheadClock::put_ahead`]: the monotonic and the
/// wall-clock readings both (credentials that expire at a date). Its sleeps are the
/// host clock's: only the readings move.
pub struct AheadClock {
    host: Arc<dyn Clock>,
    ahead: Mutex<Duration>,
}

impl AheadClock {
    /// `host`'s clock, not ahead yet.
    pub fn new(host: Arc<dyn Clock>) -> Self {
        AheadClock {
            host,
            ahead: Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the readings `by` further ahead.
    pub fn put_ahead(&self, by: Duration) {
        *self.ahead.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

impl Clock for AheadClock {
    fn now(&self) -> Instant {
        self.host.now() + *self.ahead.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn unix_time(&self) -> Duration {
        self.host.unix_time() + *self.ahead.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.host.sleep(duration)
    }
}
