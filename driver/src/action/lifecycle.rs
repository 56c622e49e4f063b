//! A client's lifecycle: `warm_connection_pool` and `shutdown`.

use std::future::IntoFuture;

use crate::rt::{boxed, BoxFuture};
use crate::Client;

impl Client {
    /// Opens connections until the pool of each server found so far holds
    /// minPoolSize, and returns when they are established: the first operations then
    /// find connections ready instead of opening them. Pools fill themselves in the
    /// background anyway (where the host can spawn tasks); this is for paying that cost
    /// up front. It waits for a server to be found first (within
    /// serverSelectionTimeoutMS, and the client's timeoutMS); does nothing when
    /// minPoolSize is unset or 0, and reports no error: a connection that fails to open
    /// is the next operation's concern.
    ///
    /// ```no_run
    /// # async fn example() -> anymongo::Result<()> {
    /// use anymongo::Client;
    /// let client = Client::with_uri_str("mongodb://localhost/?minPoolSize=4").await?;
    /// client.warm_connection_pool().await;
    /// # Ok(()) }
    /// ```
    pub fn warm_connection_pool(&self) -> WarmConnectionPool<'_> {
        WarmConnectionPool { client: self }
    }

    /// Shuts the client down (the official drivers' `close()`): the server sessions it
    /// pooled are ended with `endSessions` (Driver Sessions spec, "EndSessions": at
    /// most 10,000 ids per command, sent to a server selected with read preference
    /// primaryPreferred, errors ignored since the server expires sessions anyway),
    /// then the topology closes: monitors stop, connection pools close with their
    /// events, and every later operation of any handle of this client fails. It
    /// returns once the monitors have ended and closed their connections.
    /// Dropping the last handle closes the topology too, without `endSessions`.
    ///
    /// First, as the official crate's, it waits until the application's handles to
    /// server-side state are dropped: its explicit sessions ([`ClientSession`]
    /// clones), its open cursors ([`Cursor`], [`SessionCursor`], change streams; a
    /// cursor dropped unexhausted counts until its killCursors is done) and GridFS
    /// upload streams. A handle that is never dropped makes it wait for ever:
    /// [`immediate(true)`](Shutdown::immediate) shuts down without waiting.
    ///
    /// [`ClientSession`]: crate::ClientSession
    /// [`Cursor`]: crate::Cursor
    /// [`SessionCursor`]: crate::SessionCursor
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) {
    /// client.shutdown().await;
    /// # }
    /// ```
    pub fn shutdown(self) -> Shutdown {
        Shutdown {
            client: self,
            immediate: false,
        }
    }
}

/// The filling of a client's pools: what [`Client::warm_connection_pool`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct WarmConnectionPool<'a> {
    client: &'a Client,
}

impl<'a> IntoFuture for WarmConnectionPool<'a> {
    type Output = ();
    type IntoFuture = BoxFuture<'a, ()>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move { self.client.executor().warm_pools().await })
    }
}

/// The shutdown of a client: what [`Client::shutdown`] returns.
#[must_use = "an action does nothing until it is awaited"]
pub struct Shutdown {
    client: Client,
    immediate: bool,
}

impl Shutdown {
    /// Whether to shut down at once, without waiting for the application's sessions,
    /// cursors and upload streams to be dropped (default `false`), as in the official
    /// crate; operations of those handles then fail.
    ///
    pub fn immediate(mut self, immediate: bool) -> Self {
        self.immediate = immediate;
        self
    }
}

impl IntoFuture for Shutdown {
    type Output = ();
    type IntoFuture = BoxFuture<'static, ()>;

    fn into_future(self) -> Self::IntoFuture {
        boxed(async move {
            let executor = self.client.executor();
            if !self.immediate {
                executor.live_handles_dropped().await;
            }
            // Errors ignored: the server expires the sessions anyway.
            let _ignored = executor.end_sessions().await;
            let topology = executor.topology();
            topology.close();
            topology.monitors_ended().await;
        })
    }
}

crate::default_runtime::with_sync_api! {
    impl WarmConnectionPool<'_> {
        /// Fills the pools, blocking the calling thread until it is done: the `.await`
        /// of the blocking API ([`crate::sync`]).
        pub fn run(self) {
            // Without a runtime there is nothing to fill: the client was built on one.
            let _ = crate::sync::block_on(self.into_future());
        }
    }

    impl Shutdown {
        /// Shuts the client down, blocking the calling thread until it is done: the
        /// `.await` of the blocking API ([`crate::sync`]).
        pub fn run(self) {
            // Without a runtime there is nothing to shut down: the client was built on one.
            let _ = crate::sync::block_on(self.into_future());
        }
    }
}
