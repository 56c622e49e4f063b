//! The operations on session entities (spec "Session Operations") and the special
//! operations that assert on sessions (spec "Special Test Operations").

use anymongo::event::command::CommandEvent;
use bson::{Bson, Document};

use super::arguments::{known_arguments, Arguments};
use super::events::Event;
use super::model::Operation;
use super::operations::{configure_fail_point, Context, Returned};
use super::Abort;

/// Spec `endSession`: ends the session (aborting a transaction in progress); its lsid
/// stays for `$$sessionLsid` (`ClientSession::id`).
pub async fn end_session(operation: &Operation, context: &mut Context) -> Result<Returned, Abort> {
    known_arguments(operation, &[])?;
    // Waits for the abort of a transaction in progress, which the test may expect.
    let session = context.entities.session(&operation.object)?.session.clone();
    session.close().await;
    Ok(Ok(None))
}

/// `getSnapshotTime` (Sessions spec tests, "Specific operations and behaviour for
/// unified tests"): the session's `snapshotTime`, with the driver's
/// `ClientSession::snapshot_time`, as a timestamp, or null when it has none (not a
/// snapshot session, or no snapshot read yet: Snapshot Reads spec, "ClientSession
/// changes", lets the driver return an unset value).
pub async fn get_snapshot_time(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    known_arguments(operation, &[])?;
    let session = &context.entities.session_mut(&operation.object)?.session;
    let time = session.snapshot_time().map_or(Bson::Null, Bson::Timestamp);
    Ok(Ok(Some(time)))
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

/// Spec "targetedFailPoint": sets the fail point on the mongos the session is pinned
/// to, through a client connected directly to it (the driver has no API to send a
/// command to a server of its choosing), and records it to turn it off after the
/// test. The test sharded cluster's mongoses ([`crate::mongos_proxy`]) all forward to
/// one server, so "targeted" means here: sent through the pinned mongos, and firing
/// for the commands that reach the server through any mongos; turning it off through
/// the runner's internal client reaches the same server.
pub async fn targeted_fail_point(
    operation: &Operation,
    context: &mut Context,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let session = arguments.string("session")?;
    let command = arguments.document("failPoint")?;
    arguments.done()?;
    let session = &context.entities.session_mut(&session)?.session;
    let mongos = session
        .pinned_server()
        .ok_or_else(|| "targetedFailPoint: the session is not pinned to a mongos".to_owned())?;
    let uri = format!("mongodb://{mongos}/?directConnection=true");
    let direct = anymongo::Client::with_uri_str(&uri)
        .await
        .map_err(|e| format!("cannot create a client for {uri}: {e}"))?;
    let admin = direct.database("admin");
    configure_fail_point(&admin, &command, context).await?;
    Ok(Ok(None))
}

/// Spec "assertSessionPinned" (`pinned`) and "assertSessionUnpinned": whether the
/// session's transaction is pinned to a mongos (or, behind a load balancer, to a
/// connection).
pub async fn assert_session_pinned(
    operation: &Operation,
    context: &mut Context,
    pinned: bool,
) -> Result<Returned, Abort> {
    let mut arguments = Arguments::of(operation);
    let session = arguments.string("session")?;
    arguments.done()?;
    let session = &context.entities.session_mut(&session)?.session;
    match (session.pinned_server(), pinned) {
        (Some(_), true) | (None, false) => Ok(Ok(None)),
        (None, true) => Err(Abort::Failed("the session is not pinned".to_owned())),
        (Some(server), false) => Err(Abort::Failed(format!("the session is pinned to {server}"))),
    }
}
