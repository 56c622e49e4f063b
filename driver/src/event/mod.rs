//! The monitoring events (the payloads in [`cmap`], [`command`] and [`sdam`]) and
//! delivering them to the application's [`EventHandler`]s.
//!
//! Delivering monitoring events (SDAM, CMAP, commands) to the application: in the
//! order they happened, and never while the state that produced them is locked, so a
//! handler cannot stall the driver's bookkeeping.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

pub mod cmap;
pub mod command;
pub mod sdam;

use futures::FutureExt;

use crate::rt::{BoxFuture, MaybeSend, MaybeSync, Spawner};
use crate::Error;

/// The events serialize an error as its message (an [`Error`] is not serializable: it
/// may hold an I/O error).
fn error_as_message<S: serde::Serializer>(error: &Error, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}
use crate::signal::lock;

/// Where a client's events of type `T` go, set on
/// [`ClientOptions`](crate::options::ClientOptions) (`sdam_event_handler`,
/// `cmap_event_handler`, `command_event_handler`), as in the official crate.
///
/// Events are delivered in the order they happened. A [`callback`](Self::callback)
/// runs on the driver's task and must not block; an
/// [`async_callback`](Self::async_callback)'s future is spawned on the runtime's
/// [`Spawner`] (a client whose runtime has none, such as a WASI request handler's,
/// refuses it when made). A tokio channel's sender ([`TokioMpsc`](Self::TokioMpsc)), as in
/// the official crate, natively with the built-in transport; elsewhere a callback that
/// sends to a channel does the same.
///
/// ```
/// use anymongo::event::{command::CommandEvent, EventHandler};
/// use anymongo::options::ClientOptions;
///
/// let options = ClientOptions::builder()
///     .command_event_handler(EventHandler::callback(|event: CommandEvent| {
///         if let CommandEvent::Started(started) = event {
///             println!("{} on {}", started.command_name, started.db);
///         }
///     }))
///     .build();
/// assert!(options.command_event_handler.is_some());
///
/// // The event's type may be left to inference, as in the official crate's docs.
/// let options = ClientOptions::builder()
///     .command_event_handler(EventHandler::callback(|ev| println!("{:?}", ev)))
///     .build();
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum EventHandler<T> {
    /// A function called with each event.
    Callback(Arc<dyn EventCallback<T>>),
    /// A function whose future, made for each event, is spawned.
    AsyncCallback(Arc<dyn AsyncEventCallback<T>>),
    /// anymongo addition: an [`EventListener`], which also says whether it wants
    /// events now, so that events nobody wants are not built.
    Listener(Arc<dyn EventListener<T>>),
    /// A `tokio` channel, as in the official crate (natively, with the built-in
    /// transport, feature `default-transport`): each event is sent on it at once while
    /// it has room, and otherwise from a task that waits for room (on the runtime's
    /// spawner); events stop being built once its receiver is dropped.
    ///
    /// ```
    /// use anymongo::event::{command::CommandEvent, EventHandler};
    /// let (sender, _receiver) = tokio::sync::mpsc::channel::<CommandEvent>(100);
    /// let handler = EventHandler::TokioMpsc(sender.clone());
    /// let same: EventHandler<CommandEvent> = sender.into();
    /// # let _ = (handler, same);
    /// ```
    #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
    TokioMpsc(anymongo_native::mpsc::Sender<T>),
}

#[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
impl<T> From<anymongo_native::mpsc::Sender<T>> for EventHandler<T> {
    fn from(sender: anymongo_native::mpsc::Sender<T>) -> Self {
        EventHandler::TokioMpsc(sender)
    }
}

/// The function of an [`EventHandler::Callback`]: any `Fn(T)` (`Send + Sync`
/// natively).
pub trait EventCallback<T>: Fn(T) + MaybeSend + MaybeSync {}

impl<T, F: Fn(T) + MaybeSend + MaybeSync + ?Sized> EventCallback<T> for F {}

/// The function of an [`EventHandler::AsyncCallback`]: any
/// `Fn(T) -> BoxFuture<'static, ()>` (`Send + Sync` natively).
pub trait AsyncEventCallback<T>: Fn(T) -> BoxFuture<'static, ()> + MaybeSend + MaybeSync {}

impl<T, F: Fn(T) -> BoxFuture<'static, ()> + MaybeSend + MaybeSync + ?Sized> AsyncEventCallback<T>
    for F
{
}

/// anymongo addition: receives events of type `T`, synchronously and in the order
/// they happened, and says whether it wants them at all (a listener that wants none
/// now saves their cost). Wrapped by [`EventHandler::Listener`]; the npm package's
/// listeners, which ask JavaScript whether anyone listens, are ones.
pub trait EventListener<T>: MaybeSend + MaybeSync {
    /// Called for each event; must not block.
    fn handle(&self, event: T);

    /// Whether events should be built for this listener now.
    fn is_listening(&self) -> bool {
        true
    }
}

impl<T: 'static> EventHandler<T> {
    /// A handler that calls `f` with each event. It runs on the driver's task: it must
    /// not block.
    ///
    /// ```
    /// use anymongo::event::{sdam::SdamEvent, EventHandler};
    /// let handler = EventHandler::callback(|event: SdamEvent| println!("{event:?}"));
    /// ```
    pub fn callback(f: impl Fn(T) + MaybeSend + MaybeSync + 'static) -> Self {
        EventHandler::Callback(Arc::new(f))
    }

    /// A handler that spawns the future `f` makes of each event on the runtime's
    /// [`Spawner`]; the futures of several events may run at once. A client whose
    /// runtime has no spawner refuses it when made.
    ///
    /// ```
    /// use anymongo::event::{cmap::CmapEvent, EventHandler};
    /// let handler = EventHandler::async_callback(|event: CmapEvent| {
    ///     Box::pin(async move { println!("{event:?}") })
    /// });
    /// ```
    pub fn async_callback(
        f: impl Fn(T) -> BoxFuture<'static, ()> + MaybeSend + MaybeSync + 'static,
    ) -> Self {
        EventHandler::AsyncCallback(Arc::new(f))
    }
}

impl<T> EventHandler<T> {
    /// Whether events should be built for this handler now.
    pub(crate) fn is_listening(&self) -> bool {
        match self {
            EventHandler::Callback(_) | EventHandler::AsyncCallback(_) => true,
            EventHandler::Listener(listener) => listener.is_listening(),
            #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
            EventHandler::TokioMpsc(sender) => !sender.is_closed(),
        }
    }

    /// Whether the handler needs a [`Spawner`] (a client checks it when made).
    pub(crate) fn needs_spawner(&self) -> bool {
        match self {
            EventHandler::AsyncCallback(_) => true,
            #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
            EventHandler::TokioMpsc(_) => true,
            _ => false,
        }
    }
}

impl<T: MaybeSend + 'static> EventHandler<T> {
    /// Hands `event` over; an async callback's future goes to `spawner`.
    pub(crate) fn handle(&self, event: T, spawner: Option<&Arc<dyn Spawner>>) {
        match self {
            #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
            EventHandler::TokioMpsc(sender) => {
                use anymongo_native::mpsc::TrySendError;
                // In order while the channel has room; a full one is waited on
                // elsewhere, as the official crate does for every event.
                if let Err(TrySendError::Full(event)) = sender.try_send(event) {
                    let sender = sender.clone();
                    let send = async move {
                        let _ = sender.send(event).await;
                    };
                    match spawner {
                        Some(spawner) => spawner.spawn(Box::pin(send)),
                        None => drop(send.now_or_never()),
                    }
                }
            }
            EventHandler::Callback(callback) => callback(event),
            EventHandler::Listener(listener) => listener.handle(event),
            EventHandler::AsyncCallback(callback) => {
                let future = callback(event);
                match spawner {
                    Some(spawner) => spawner.spawn(future),
                    // A client refuses an async callback without a spawner; only a
                    // pool made directly gets here: its future runs until it first
                    // waits, as nothing could poll it later.
                    None => drop(future.now_or_never()),
                }
            }
        }
    }
}

impl<T> std::fmt::Debug for EventHandler<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EventHandler::Callback(_) => "EventHandler::Callback",
            EventHandler::AsyncCallback(_) => "EventHandler::AsyncCallback",
            EventHandler::Listener(_) => "EventHandler::Listener",
            #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
            EventHandler::TokioMpsc(_) => "EventHandler::TokioMpsc",
        })
    }
}

/// The same handler: clones of one another (so that options compare equal to their
/// clones).
impl<T> PartialEq for EventHandler<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (EventHandler::Callback(a), EventHandler::Callback(b)) => Arc::ptr_eq(a, b),
            (EventHandler::AsyncCallback(a), EventHandler::AsyncCallback(b)) => Arc::ptr_eq(a, b),
            (EventHandler::Listener(a), EventHandler::Listener(b)) => Arc::ptr_eq(a, b),
            #[cfg(all(feature = "default-transport", not(target_family = "wasm")))]
            (EventHandler::TokioMpsc(a), EventHandler::TokioMpsc(b)) => a.same_channel(b),
            _ => false,
        }
    }
}

/// Queues events under the producer's lock and delivers them after it is released:
/// whoever flushes delivers everything queued so far, one deliverer at a time.
pub(crate) struct EventSink<E> {
    handler: Option<EventHandler<E>>,
    queue: Mutex<VecDeque<E>>,
    delivering: Mutex<()>,
}

impl<E: MaybeSend + 'static> EventSink<E> {
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
            .is_some_and(EventHandler::is_listening)
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
            handler.handle(event, None);
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
        let sink = EventSink::new(Some(EventHandler::callback(move |event: u32| {
            recorder.lock().unwrap().push(event)
        })));
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
