//! `start_session`: an explicit session of a client.

use std::future::IntoFuture;
use std::time::Duration;

use bson::Timestamp;

use super::{option_setters, run_blocking};
use crate::error::Result;
use crate::rt::{boxed, BoxFuture};
use crate::session::{ClientSession, SessionOptions};
use crate::transactions::TransactionOptions;
use crate::Client;

impl Client {
    /// Starts an explicit session (Driver Sessions spec), to give to operations with
    /// `.session(&mut session)`. No I/O happens until it is used.
    ///
    /// Errors, when awaited: options that exclude each other (`snapshot` with
    /// `causal_consistency`, `snapshot_time` without `snapshot`).
    ///
    /// ```no_run
    /// # async fn example(client: anymongo::Client) -> anymongo::Result<()> {
    /// use anymongo::bson::{doc, Document};
    /// let mut session = client.start_session().causal_consistency(true).await?;
    /// let orders = client.database("shop").collection::<Document>("orders");
    /// let tea = orders.find_one(doc! { "item": "tea" }).session(&mut session).await?;
    /// # let _ = tea; Ok(()) }
    /// ```
    pub fn start_session(&self) -> StartSession<'_> {
        StartSession {
            client: self,
            options: None,
        }
    }
}

/// The start of a session: what [`Client::start_session`] returns. Awaited, it returns
/// the [`ClientSession`].
#[must_use = "an action does nothing until it is awaited"]
pub struct StartSession<'a> {
    client: &'a Client,
    options: Option<SessionOptions>,
}

impl StartSession<'_> {
    option_setters!(options: SessionOptions;
        /// Reads see the session's earlier writes and reads (Causal Consistency spec);
        /// `true` by default, unless `snapshot` is set.
        causal_consistency: bool,
        /// Every read of the session sees the same snapshot of the data (Snapshot
        /// Reads spec; MongoDB 5.0+).
        snapshot: bool,
        /// The time of the snapshot of a snapshot session; by default, the time the
        /// session's first read ran at.
        snapshot_time: Timestamp,
        /// The options of the session's transactions where
        /// [`ClientSession::start_transaction`] leaves them unset.
        default_transaction_options: TransactionOptions,
        /// The timeoutMS of the session's own operations (commit, abort, the
        /// convenient transactions of `and_run`, its end): `defaultTimeoutMS` (Client
        /// Side Operations Timeout spec, "Sessions"); the client's timeoutMS when
        /// unset.
        default_timeout: Duration,
    );
}

impl<'a> IntoFuture for StartSession<'a> {
    type Output = Result<ClientSession>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        let options = self.options.unwrap_or_default();
        boxed(async move { ClientSession::explicit(self.client.executor().clone(), options) })
    }
}

run_blocking!(impl['a] StartSession<'a> => ClientSession);
