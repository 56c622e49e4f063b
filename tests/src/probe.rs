//! A scripted series of operations that reports the topology after each one, so that
//! the same SDAM scenario can be checked natively and from the wasip2 build (the
//! `topology` binary runs it on either).
//!
//! Steps: `ping`; `insert:ID` (one document `{_id: ID}` into `app.items`; a
//! NotWritablePrimary refusal is reported and the insert tried once more, as the
//! error sends the client to rediscover the primary); `stepdown` (`replSetStepDown`
//! on the primary).

use anymongo::bson::{doc, Document};
use anymongo::Client;

/// Runs `steps` in order; returns one line per step (`step STEP: ok` or
/// `step STEP: error: …`) each followed by `topology: …` (the description then).
pub async fn run(client: &Client, steps: &[String]) -> Vec<String> {
    let mut report = Vec::new();
    for step in steps {
        let outcome = match step.split_once(':') {
            None if step == "ping" => command(client, "admin", doc! { "ping": 1 }).await,
            None if step == "stepdown" => {
                command(client, "admin", doc! { "replSetStepDown": 60 }).await
            }
            Some(("insert", id)) => match id.parse::<i32>() {
                Ok(id) => insert(client, id, &mut report).await,
                Err(_) => Err(format!("not a number: {id}")),
            },
            _ => Err("unknown step (ping, stepdown, insert:ID)".to_owned()),
        };
        report.push(match outcome {
            Ok(()) => format!("step {step}: ok"),
            Err(error) => format!("step {step}: error: {error}"),
        });
        report.push(format!("topology: {}", client.topology_description()));
    }
    report
}

async fn command(client: &Client, database: &str, command: Document) -> Result<(), String> {
    client
        .database(database)
        .run_command(command)
        .await
        .map(drop)
        .map_err(|error| error.to_string())
}

async fn insert(client: &Client, id: i32, report: &mut Vec<String>) -> Result<(), String> {
    let document = doc! { "insert": "items", "documents": [{ "_id": id }] };
    match client.database("app").run_command(document.clone()).await {
        Ok(_) => Ok(()),
        Err(error) if error.code() == Some(10107) => {
            report.push(format!("insert:{id} refused, trying again: {error}"));
            command(client, "app", document).await
        }
        Err(error) => Err(error.to_string()),
    }
}
