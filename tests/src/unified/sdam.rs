//! The special operations on topology descriptions (spec "recordTopologyDescription",
//! "assertTopologyType", "waitForPrimaryChange"), read through
//! [`anymongo::Client::topology_description`].

use std::time::Duration;

use anymongo::rt::BoxFuture;
use anymongo::ServerAddress;

use super::arguments::{known_arguments, required_str};
use super::entities::{self, Entity};
use super::model::Operation;
use super::operations::{Context, Returned};
use super::Abort;

/// How long `waitForPrimaryChange` waits without a `timeoutMS` (spec
/// "waitForPrimaryChange": "a default timeout of 10 seconds MUST be used").
const WAIT_FOR_PRIMARY_CHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Spec "recordTopologyDescription": saves the client's current topology description
/// as an entity.
pub fn record_topology_description<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["client", "id"])?;
        let client = required_str(operation, "client")?;
        let id = required_str(operation, "id")?;
        let description = context
            .entities
            .client(client)?
            .client
            .topology_description();
        let entity = Entity::TopologyDescription(Box::new(description));
        context.entities.insert(id, entity)?;
        Ok(Ok(None))
    })
}

/// Spec "assertTopologyType": the saved topology description is of the given type.
pub fn assert_topology_type<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(operation, &["topologyDescription", "topologyType"])?;
        let id = required_str(operation, "topologyDescription")?;
        let expected = required_str(operation, "topologyType")?;
        let actual = context.entities.topology_description(id)?.topology_type;
        match actual.name() == expected {
            true => Ok(Ok(None)),
            false => Err(Abort::Failed(format!(
                "the topology description {id} is {actual}, not {expected}"
            ))),
        }
    })
}

/// Spec "waitForPrimaryChange": waits until the client knows a primary other than the
/// prior description's (any primary if it had none), polling its description within
/// the operation's `timeoutMS` (10 s by default).
pub fn wait_for_primary_change<'a>(
    operation: &'a Operation,
    context: &'a mut Context,
) -> BoxFuture<'a, Result<Returned, Abort>> {
    Box::pin(async move {
        known_arguments(
            operation,
            &["client", "priorTopologyDescription", "timeoutMS"],
        )?;
        let client = required_str(operation, "client")?;
        let prior = required_str(operation, "priorTopologyDescription")?;
        let within = match operation.arguments.get("timeoutMS") {
            Some(millis) => entities::timeout_ms(millis, "waitForPrimaryChange")?,
            None => WAIT_FOR_PRIMARY_CHANGE_TIMEOUT,
        };
        let prior_primary: Option<ServerAddress> = context
            .entities
            .topology_description(prior)?
            .primary()
            .map(|primary| primary.address.clone());
        let client = &context.entities.client(client)?.client;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let description = client.topology_description();
            let primary = description.primary().map(|primary| &primary.address);
            if primary.is_some() && primary != prior_primary.as_ref() {
                return Ok(Ok(None));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Abort::Failed(format!(
                    "no primary other than {prior_primary:?} within {within:?}: {description}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
}
