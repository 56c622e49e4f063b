//! Command monitoring events and timeouts: a client-wide `timeoutMS` from the
//! connection string, one operation's own `.timeout()`, and what a server error and a
//! timeout look like.
//!
//! `cargo run --example events_and_timeouts` against `MONGODB_URI` (default
//! `mongodb://localhost:27017`).
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::event::command::CommandEvent;
use anymongo::event::EventHandler;
use anymongo::options::ClientOptions;
use anymongo::{Client, ErrorKind};

#[tokio::main]
async fn main() -> anymongo::Result<()> {
    let uri = std::env::var("MONGODB_URI").unwrap_or("mongodb://localhost:27017".into());
    let mut options = ClientOptions::parse(&uri).await?;
    // Every operation of this client gets 5 s in all (CSOT), unless it says otherwise.
    options.timeout = Some(Duration::from_secs(5));
    options.command_event_handler =
        Some(EventHandler::callback(|event: CommandEvent| match event {
            CommandEvent::Started(started) => {
                println!(
                    "-> {} to {}",
                    started.command_name, started.connection.address
                )
            }
            CommandEvent::Succeeded(done) => {
                println!("<- {} in {:?}", done.command_name, done.duration)
            }
            CommandEvent::Failed(failed) => {
                println!("<- {} failed: {}", failed.command_name, failed.failure)
            }
            _ => {}
        }));
    let client = Client::with_options(options)?;
    let db = client.database("examples");

    db.run_command(doc! { "ping": 1 }).await?;
    // This operation's own timeout, over the client's.
    let events = db.collection::<Document>("events");
    events
        .insert_one(doc! { "at": "start" })
        .timeout(Duration::from_millis(2000))
        .await?;

    // A server error: the server's code and name, as the official driver gives them.
    match db.run_command(doc! { "noSuchCommand": 1 }).await {
        Err(error) => match *error.kind {
            ErrorKind::Command(ref command) => {
                println!("server error {} ({})", command.code, command.code_name)
            }
            _ => println!("other error: {error}"),
        },
        Ok(reply) => println!("unexpected reply: {reply}"),
    }
    Ok(())
}
