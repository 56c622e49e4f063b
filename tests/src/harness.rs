//! What the integration tests against the shared SecantusDB server share: a bound on
//! every test, and a client that records its command events.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anymongo::client::{ClientConfig, MonitoringThreads};
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::{Client, ClientOptions};

use crate::server;

/// The command events a [`recording_client`] published, in order.
pub type CommandLog = Arc<Mutex<Vec<CommandEvent>>>;

/// Runs `future` (or an action) to its end, or fails the test once `bound` has passed:
/// no test can hang.
pub async fn within<F: IntoFuture>(bound: Duration, future: F) -> F::Output {
    tokio::time::timeout(bound, future.into_future())
        .await
        .expect("the test did not finish within its bound")
}

/// A client of the shared server whose command events are recorded; `query` is the
/// connection string's options (its `appName` at least, which fail points can
/// target).
pub fn recording_client(query: &str) -> (Client, CommandLog) {
    recording_client_of(&format!("{}?{query}", server::shared().uri()))
}

/// A client of the deployment at `uri` whose command events are recorded.
pub fn recording_client_of(uri: &str) -> (Client, CommandLog) {
    let events = CommandLog::default();
    let sink = events.clone();
    let mut options = ClientOptions::parse_uri(uri).unwrap();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        sink.lock().unwrap().push(event);
    }));
    let client = Client::with_options(options).unwrap();
    (client, events)
}

/// A client of the (mock, silent...) server at `address` (`host:port`), with the
/// connection string's `options` and the monitoring mode `monitoring`.
pub fn client_at(address: &str, options: &str, monitoring: MonitoringThreads) -> Client {
    let uri = format!("mongodb://{address}/?{options}");
    let config = ClientConfig {
        monitoring,
        ..ClientConfig::default()
    };
    let options = ClientOptions::parse_uri(&uri).unwrap();
    Client::with_config(options, config).unwrap()
}
