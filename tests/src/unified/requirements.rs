//! What the test server is, and whether it meets `runOnRequirements` (spec
//! "runOnRequirement").

use std::cmp::Ordering;

use anymongo::Client;
use bson::{doc, Bson, Document};

use super::matching::exactly_equal;
use super::model::RunOnRequirement;

/// The deployment's topology, as `runOnRequirement.topologies` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A standalone server.
    Single,
    /// A replica set.
    ReplicaSet,
    /// A sharded cluster (its shards are replica sets, as all must be today).
    Sharded,
    /// Behind a load balancer.
    LoadBalanced,
}

impl Topology {
    /// The name `topologies` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::ReplicaSet => "replicaset",
            Topology::Sharded => "sharded",
            Topology::LoadBalanced => "load-balanced",
        }
    }

    /// Whether the `topologies` entry `name` admits this topology ("sharded" admits
    /// "sharded-replicaset" and the reverse holds since every shard is a replica set).
    fn is(self, name: &str) -> bool {
        matches!(
            (self, name),
            (Topology::Single, "single")
                | (Topology::ReplicaSet, "replicaset")
                | (Topology::Sharded, "sharded" | "sharded-replicaset")
                | (Topology::LoadBalanced, "load-balanced")
        )
    }
}

/// What the requirements are held against.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// `buildInfo.versionArray`'s first three elements.
    pub version: Vec<u64>,
    /// From the `hello` reply.
    pub topology: Topology,
    /// `getParameter: "*"`; empty if the server refused it.
    pub parameters: Document,
    /// Whether the runner's connection string carries credentials.
    pub auth: bool,
}

impl ServerInfo {
    /// Asks the server through `client` (the runner's internal client).
    pub async fn discover(client: &Client) -> Result<ServerInfo, String> {
        let admin = client.database("admin");
        let build_info = admin
            .run_command(doc! { "buildInfo": 1 })
            .await
            .map_err(|e| format!("buildInfo failed: {e}"))?;
        // Spec "Version String": the three elements of versionArray are used.
        let version = match build_info.get_array("versionArray") {
            Ok(parts) => parts
                .iter()
                .take(3)
                .map(|part| match part {
                    Bson::Int32(n) => u64::try_from(*n).ok(),
                    Bson::Int64(n) => u64::try_from(*n).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>(),
            Err(_) => build_info.get_str("version").ok().and_then(parse_version),
        }
        .ok_or_else(|| format!("buildInfo gives no readable version: {build_info}"))?;
        let hello = admin
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(|e| format!("hello failed: {e}"))?;
        let topology = if hello.contains_key("serviceId") {
            Topology::LoadBalanced
        } else if hello.get_str("msg").ok() == Some("isdbgrid") {
            Topology::Sharded
        } else if hello.contains_key("setName") {
            Topology::ReplicaSet
        } else {
            Topology::Single
        };
        // Spec "serverParameters": runners MAY fetch every parameter at once; a server
        // that refuses leaves every parameter unknown, hence unmet.
        let parameters = admin
            .run_command(doc! { "getParameter": "*" })
            .await
            .unwrap_or_default();
        Ok(ServerInfo {
            version,
            topology,
            parameters,
            auth: client.options().credential.is_some(),
        })
    }

    /// Why none of `requirements` is met, or `None` if one is (or there are none).
    pub fn unmet(&self, requirements: &[RunOnRequirement]) -> Option<String> {
        // A met requirement gives `None`, which ends the collection with `None`.
        let reasons: Vec<String> = requirements
            .iter()
            .map(|requirement| self.unmet_one(requirement))
            .collect::<Option<_>>()?;
        (!reasons.is_empty()).then(|| reasons.join("; or "))
    }

    fn unmet_one(&self, requirement: &RunOnRequirement) -> Option<String> {
        let version = || {
            self.version
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(".")
        };
        let bounds = [
            (
                "minServerVersion",
                &requirement.min_server_version,
                Ordering::Less,
                "<",
            ),
            (
                "maxServerVersion",
                &requirement.max_server_version,
                Ordering::Greater,
                ">",
            ),
        ];
        for (name, bound, outside, sign) in bounds {
            let Some(bound) = bound else { continue };
            match compare_versions(&self.version, bound) {
                None => return Some(format!("{name} {bound:?} is not a version")),
                Some(ordering) if ordering == outside => {
                    return Some(format!("server {} {sign} {name} {bound}", version()))
                }
                Some(_) => {}
            }
        }
        if let Some(topologies) = &requirement.topologies {
            if !topologies.iter().any(|name| self.topology.is(name)) {
                return Some(format!(
                    "the topology {} is none of {topologies:?}",
                    self.topology.name()
                ));
            }
        }
        if requirement.serverless.as_deref() == Some("require") {
            return Some("needs Atlas Serverless".to_owned());
        }
        if let Some(parameters) = &requirement.server_parameters {
            for (name, expected) in parameters {
                // Spec: flexible numeric comparison; an unknown parameter is unequal.
                let actual = self.parameters.get(name);
                if !actual.is_some_and(|actual| exactly_equal(expected, actual)) {
                    return Some(format!(
                        "server parameter {name} is {}, not {expected}",
                        actual.map_or("unknown".to_owned(), Bson::to_string)
                    ));
                }
            }
        }
        if let Some(auth) = requirement.auth {
            if auth != self.auth {
                return Some(
                    match auth {
                        true => "needs authentication, which the test server does not use",
                        false => "needs authentication to be disabled",
                    }
                    .to_owned(),
                );
            }
        }
        if let Some(mechanism) = &requirement.auth_mechanism {
            let supported = self
                .parameters
                .get_array("authenticationMechanisms")
                .is_ok_and(|mechanisms| {
                    mechanisms.iter().any(|m| {
                        m.as_str()
                            .is_some_and(|m| m.eq_ignore_ascii_case(mechanism))
                    })
                });
            if !self.auth || !supported {
                return Some(format!("needs authentication with {mechanism}"));
            }
        }
        match &requirement.csfle {
            None | Some(Bson::Boolean(false)) => None,
            Some(_) => Some("needs client-side field level encryption".to_owned()),
        }
    }
}

/// `"4.9.0-alpha4-271-g7d5cf02"` as `[4, 9, 0]` (spec "Version String": anything after
/// the numeric components is discarded).
pub fn parse_version(text: &str) -> Option<Vec<u64>> {
    let numeric = text
        .split(|c: char| c != '.' && !c.is_ascii_digit())
        .next()?;
    numeric
        .split('.')
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().ok())
        .collect::<Option<Vec<u64>>>()
        .filter(|parts| !parts.is_empty() && parts.len() <= 3)
}

/// Compares `version` with the version string `bound`, missing components counting
/// as zero (spec "Version String": "4.0" is "4.0.0"); `None` if `bound` is malformed.
fn compare_versions(version: &[u64], bound: &str) -> Option<Ordering> {
    let bound = parse_version(bound)?;
    let component = |parts: &[u64], i: usize| parts.get(i).copied().unwrap_or(0);
    Some(
        (0..3)
            .map(|i| component(version, i).cmp(&component(&bound, i)))
            .find(|ordering| ordering.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerInfo {
        ServerInfo {
            version: vec![8, 2, 11],
            topology: Topology::ReplicaSet,
            parameters: doc! {
                "enableTestCommands": true,
                "requireApiVersion": false,
                "maxBsonObjectSize": 16777216_i64,
                "authenticationMechanisms": ["SCRAM-SHA-256"],
            },
            auth: false,
        }
    }

    fn requirement(document: Document) -> RunOnRequirement {
        bson::deserialize_from_document(document).unwrap()
    }

    fn unmet(documents: Vec<Document>) -> Option<String> {
        let requirements: Vec<_> = documents.into_iter().map(requirement).collect();
        server().unmet(&requirements)
    }

    #[test]
    fn versions_follow_the_spec_s_version_strings() {
        assert_eq!(
            parse_version("4.9.0-alpha4-271-g7d5cf02"),
            Some(vec![4, 9, 0])
        );
        assert_eq!(parse_version("4.4"), Some(vec![4, 4]));
        assert_eq!(parse_version("x"), None);
        assert_eq!(parse_version("1.2.3.4"), None);
        assert!(unmet(vec![doc! { "minServerVersion": "8.2.11" }]).is_none());
        assert!(unmet(vec![doc! { "minServerVersion": "4.0.10" }]).is_none());
        assert!(unmet(vec![doc! { "maxServerVersion": "8.2" }])
            .unwrap()
            .contains("> maxServerVersion 8.2"));
        assert!(unmet(vec![doc! { "minServerVersion": "8.3" }])
            .unwrap()
            .contains("server 8.2.11 < minServerVersion 8.3"));
        assert!(unmet(vec![doc! { "maxServerVersion": "8.2.99" }]).is_none());
        assert!(unmet(vec![doc! { "minServerVersion": "new" }])
            .unwrap()
            .contains("is not a version"));
    }

    #[test]
    fn one_met_requirement_is_enough_and_none_means_no_limit() {
        assert!(unmet(vec![]).is_none());
        assert!(unmet(vec![doc! {}]).is_none());
        let why = unmet(vec![
            doc! { "topologies": ["single"] },
            doc! { "topologies": ["sharded"] },
        ])
        .unwrap();
        assert!(why.contains("[\"single\"]; or"), "{why}");
        assert!(unmet(vec![
            doc! { "topologies": ["single"] },
            doc! { "topologies": ["replicaset"], "minServerVersion": "4.0" },
        ])
        .is_none());
    }

    #[test]
    fn topologies() {
        assert!(Topology::Sharded.is("sharded-replicaset"));
        assert!(Topology::Sharded.is("sharded"));
        assert!(!Topology::ReplicaSet.is("sharded-replicaset"));
        assert!(Topology::LoadBalanced.is("load-balanced"));
        assert!(Topology::Single.is("single"));
        for topology in [
            Topology::Single,
            Topology::ReplicaSet,
            Topology::Sharded,
            Topology::LoadBalanced,
        ] {
            assert!(topology.is(topology.name()));
        }
    }

    #[test]
    fn server_parameters_compare_numerically_and_unknown_ones_are_unmet() {
        assert!(unmet(vec![doc! { "serverParameters": {
        "enableTestCommands": true, "maxBsonObjectSize": 16777216 } }])
        .is_none());
        assert!(unmet(vec![
            doc! { "serverParameters": { "requireApiVersion": true } }
        ])
        .unwrap()
        .contains("requireApiVersion is false"));
        assert!(unmet(vec![
            doc! { "serverParameters": { "acceptApiVersion2": true } }
        ])
        .unwrap()
        .contains("unknown"));
    }

    #[test]
    fn auth_serverless_and_csfle() {
        assert!(unmet(vec![doc! { "auth": false }]).is_none());
        assert!(unmet(vec![doc! { "auth": true }])
            .unwrap()
            .contains("needs authentication"));
        assert!(unmet(vec![doc! { "authMechanism": "scram-sha-256" }]).is_some());
        let mut with_auth = server();
        with_auth.auth = true;
        let mechanism = [requirement(doc! { "authMechanism": "scram-sha-256" })];
        assert!(with_auth.unmet(&mechanism).is_none());
        let other = [requirement(doc! { "authMechanism": "MONGODB-X509" })];
        assert!(with_auth.unmet(&other).is_some());
        assert!(unmet(vec![doc! { "serverless": "forbid" }]).is_none());
        assert!(unmet(vec![doc! { "serverless": "require" }]).is_some());
        assert!(unmet(vec![doc! { "csfle": false }]).is_none());
        assert!(unmet(vec![doc! { "csfle": true }]).is_some());
        assert!(unmet(vec![doc! { "csfle": { "minLibmongocryptVersion": "1.0" } }]).is_some());
    }
}
