//! A client's connection pool events (CMAP spec, "Events"), recorded in the order the
//! pools deliver them, and the questions tests ask of them.
//!
//! ```
//! use anymongo::event::cmap::CmapEvent;
//! use anymongo_tests::pool_events::{closed_connections, PoolEvents};
//!
//! let events = PoolEvents::default();
//! // Options of a client whose pools record here.
//! let options = events.record(anymongo::ClientOptions::default());
//! assert!(options.cmap_event_handler.is_some());
//! assert!(closed_connections(&events.lock()).is_empty());
//! ```

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anymongo::event::cmap::ConnectionClosedEvent;
use anymongo::event::cmap::{CmapEvent, ConnectionClosedReason};
use anymongo::event::EventHandler;
use anymongo::ClientOptions;

/// The pool events of a client, in order. Clones share one record.
#[derive(Clone, Default)]
pub struct PoolEvents(Arc<Mutex<Vec<CmapEvent>>>);

impl PoolEvents {
    /// `options`, with [`PoolEvents::handler`] for the pools' events.
    pub fn record(&self, mut options: ClientOptions) -> ClientOptions {
        options.cmap_event_handler = Some(self.handler());
        options
    }

    /// A handler that records each event here.
    pub fn handler(&self) -> EventHandler<CmapEvent> {
        let events = self.clone();
        EventHandler::callback(move |event: CmapEvent| events.lock().push(event))
    }

    /// The events so far. A test that panicked while holding the lock does not hide
    /// them from the next reader.
    pub fn lock(&self) -> MutexGuard<'_, Vec<CmapEvent>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `(connection id, reason)` of every ConnectionClosed in `events`, in order.
pub fn closed_connections(events: &[CmapEvent]) -> Vec<(u32, ConnectionClosedReason)> {
    events
        .iter()
        .filter_map(|event| match event {
            CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                connection_id,
                reason,
                ..
            }) => Some((*connection_id, *reason)),
            _ => None,
        })
        .collect()
}

/// How many ConnectionCreated events `events` holds.
pub fn created_connections(events: &[CmapEvent]) -> usize {
    (events.iter())
        .filter(|event| matches!(event, CmapEvent::ConnectionCreated(_)))
        .count()
}
