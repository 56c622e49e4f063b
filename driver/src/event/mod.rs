//! The monitoring events (the payloads in [`cmap`] and [`sdam`]) and delivering them
//! to the application.
//!
//! Delivering monitoring events (SDAM, CMAP) to the application's listener: in the
//! order they happened, and never while the state that produced them is locked, so a
//! listener cannot stall the driver's bookkeeping.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

pub mod cmap;
pub mod sdam;

use crate::rt::{MaybeSend, MaybeSync};
use crate::signal::lock;

/// Receives events of type `E`, synchronously and in the order they happened; it must
/// not block. Any `Fn(&E)` closure is one.
///
/// ```
/// use std::sync::Arc;
/// use anymongo::event::EventHandler;
/// use anymongo::event::sdam::SdamEvent;
///
/// let handler: EventHandler<SdamEvent> = Arc::new(|event: &SdamEvent| println!("{}", event.name()));
/// ```
pub trait EventListener<E>: MaybeSend + MaybeSync {
    /// Called for each event.
    fn handle(&self, event: &E);

    /// Whether events should be built for this listener at all: a listener that
    /// wants none now (a log whose level is off) saves their cost.
    fn is_listening(&self) -> bool {
        true
    }
}

impl<E, F: Fn(&E) + MaybeSend + MaybeSync> EventListener<E> for F {
    fn handle(&self, event: &E) {
        self(event)
    }
}

/// A shared [`EventListener`], as the client's configuration takes it.
pub type EventHandler<E> = Arc<dyn EventListener<E>>;

/// Queues events under the producer's lock and delivers them after it is released:
/// whoever flushes delivers everything queued so far, one deliverer at a time.
pub(crate) struct EventSink<E> {
    handler: Option<EventHandler<E>>,
    queue: Mutex<VecDeque<E>>,
    delivering: Mutex<()>,
}

impl<E> EventSink<E> {
    pub fn new(handler: Option<EventHandler<E>>) -> EventSink<E> {
        EventSink {
            handler,
            queue: Mutex::new(VecDeque::new()),
            delivering: Mutex::new(()),
        }
    }

    /// Whether anyone listens (events built for nobody can be skipped).
    pub fn is_listened(&self) -> bool {
        self.handler
            .as_ref()
            .is_some_and(|handler| handler.is_listening())
    }

    /// Queues `events` (dropped at once when nobody listens).
    pub fn queue(&self, events: impl IntoIterator<Item = E>) {
        if self.is_listened() {
            lock(&self.queue).extend(events);
        }
    }

    /// Queues an event that is only built when someone listens.
    pub fn queue_with(&self, event: impl FnOnce() -> E) {
        if self.is_listened() {
            lock(&self.queue).push_back(event());
        }
    }

    /// Queues `events` and delivers everything queued.
    pub fn publish(&self, events: impl IntoIterator<Item = E>) {
        self.queue(events);
        self.flush();
    }

    /// Delivers every queued event, in order.
    pub fn flush(&self) {
        let Some(handler) = &self.handler else {
            return;
        };
        let _delivering = lock(&self.delivering);
        loop {
            let Some(event) = lock(&self.queue).pop_front() else {
                return;
            };
            handler.handle(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_arrive_in_order_and_only_when_flushed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorder = seen.clone();
        let sink =
            EventSink::new(Some(
                Arc::new(move |event: &u32| recorder.lock().unwrap().push(*event))
                    as EventHandler<u32>,
            ));
        sink.queue([1, 2]);
        sink.queue_with(|| 3);
        assert!(seen.lock().unwrap().is_empty());
        sink.publish([4]);
        assert_eq!(*seen.lock().unwrap(), [1, 2, 3, 4]);
    }

    #[test]
    fn without_a_listener_nothing_is_built() {
        let sink = EventSink::<u32>::new(None);
        sink.queue_with(|| unreachable!("no listener, no event"));
        sink.publish([1]);
    }
}
