//! The operations on session entities (spec "Session Operations") and the special
//! operations that assert on sessions (spec "Special Test Operations").

use anymongo::command_monitoring::CommandEvent;
use bson::Document;

use super::arguments::{known_arguments, Arguments};
use super::events::Event;
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// Spec `endSession`: ends the session (aborting a transaction in progress), keeping
/// its lsid for `$$sessionLsid`.
pub async fn end_session(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    known_arguments(operation, &[])?;
    let entity = context.entities.session_mut(&operation.object)?;
    if entity.ended_lsid.is_none() {
        entity.ended_lsid = entity.session.id();
    }
    // Waits for the abort of a transaction in progress, which the test may expect.
    let session = entity.session.clone();
    session.close().await;
    Ok(Ok(None))
}

/// Spec "assertSameLsidOnLastTwoCommands" (`same`) and
/// "assertDifferentLsidOnLastTwoCommands": compares the `lsid` of the last two
/// `commandStartedEvent`s the client observed.
pub async fn assert_lsids_on_last_two_commands(
    operation: &Operation,
    context: &mut Context,
    same: bool,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let client = arguments.string("client")?;
    arguments.done()?;
    let client = context.entities.client(&client)?;
    let lsids: Vec<Option<Document>> = client
        .events
        .observed("command", &client.observe)
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Started(started)) => {
                Some(started.command.get_document("lsid").ok().cloned())
            }
            _ => None,
        })
        .collect();
    let [.., Some(before), Some(last)] = lsids.as_slice() else {
        return Err(Abort::Failed(format!(
            "the last two commands do not both have an lsid: {lsids:?}"
        )));
    };
    match (before == last, same) {
        (true, true) | (false, false) => Ok(Ok(None)),
        (true, false) => Err(Abort::Failed(format!(
            "the last two commands have the same lsid {last}"
        ))),
        (false, true) => Err(Abort::Failed(format!(
            "the last two commands have different lsids: {before}, then {last}"
        ))),
    }
}

/// Spec "assertSessionDirty" (`dirty`) and "assertSessionNotDirty": whether the
/// session's server session was marked dirty by a network error.
pub async fn assert_session_dirty(
    operation: &Operation,
    context: &mut Context,
    dirty: bool,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let session = arguments.string("session")?;
    arguments.done()?;
    let session = &context.entities.session_mut(&session)?.session;
    match session.is_dirty() == dirty {
        true => Ok(Ok(None)),
        false => Err(Abort::Failed(format!(
            "the session is {}dirty, expected {}dirty",
            if dirty { "not " } else { "" },
            if dirty { "" } else { "not " },
        ))),
    }
}
