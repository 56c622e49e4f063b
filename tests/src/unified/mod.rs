//! The Unified Test Format runner (`unified-test-format.md`), against the shared
//! SecantusDB server ([`crate::server::shared`]).
//!
//! - [`model`]: the files as Rust values, read from Extended JSON;
//! - [`requirements`]: what the server is, and `runOnRequirements`;
//! - [`entities`]: the entity map and the creation of clients (recording their events),
//!   databases and collections;
//! - [`operations`]: the one seam where operations are bound to code
//!   ([`operations::handler`]): [`crud`], [`bulk_write`], [`client_bulk_write`],
//!   [`commands`], [`cursors`], [`change_streams`], [`gridfs`], [`search_indexes`], [`sessions`],
//!   [`transactions`], the special operations of thread entities ([`threads`]) and
//!   topology descriptions ([`sdam`]), their arguments read by [`arguments`];
//! - [`matching`]: "Evaluating Matches" and its special operators;
//! - [`events`]: `expectEvents`; [`errors`]: `expectError`;
//! - [`collections`]: `initialData` and `outcome`, through an internal client.
//!
//! Each test counts once: passed, failed, or skipped with a reason that starts with
//! one of [`UNMET`], [`UNSUPPORTED`], [`SKIP_REASON`], [`SCHEMA`],
//! [`known_gaps::DRIVER_GAP`] or [`known_gaps::SERVER_GAP`], so that tests the server
//! cannot run stay apart from tests the driver or runner cannot run yet, and from tests
//! that fail for a documented gap ([`known_gaps`]). A file whose corpus copy is older
//! than the spec is read in its current version ([`crate::spec::current_version`]).
//! A test whose operation
//! [`operations::unsupported`] names is skipped before any setup.
//!
//! Nothing hangs: each operation gets [`OPERATION_TIMEOUT`], each file
//! [`FILE_TIMEOUT`] in all; fail points are turned off after each test however it
//! ended.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anymongo::Client;
use bson::doc;
use tokio::time::{timeout, timeout_at, Instant};

use crate::lb_proxy::LoadBalancerProxy;
use crate::mongos_proxy::ShardedCluster;
use crate::replica_set::MockReplicaSet;
use crate::spec::{json_files, SuiteOutcome};

pub mod arguments;
pub mod bulk_write;
pub mod change_streams;
pub mod client_bulk_write;
pub mod collections;
pub mod commands;
pub mod crud;
pub mod cursors;
pub mod entities;
pub mod errors;
pub mod events;
pub mod gridfs;
pub mod known_gaps;
pub mod logs;
pub mod matching;
pub mod model;
pub mod operations;
pub mod requirements;
pub mod schema;
pub mod sdam;
pub mod search_indexes;
pub mod sessions;
pub mod spans;
pub mod threads;
pub mod transactions;

use matching::Matcher;
use model::{Operation, Test, TestFile};
use operations::{Context, Returned};
use requirements::{parse_version, ServerInfo};

/// The newest schema version the runner reads (spec "Test Runner Support": files of
/// major version 1 up to this minor are compatible).
pub const SCHEMA_VERSION: [u64; 2] = [1, 27];

/// How long one operation may take.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the tests of one file may take in all.
pub const FILE_TIMEOUT: Duration = Duration::from_secs(60);

/// The reason of a test skipped because the server does not meet its
/// `runOnRequirements` (or the file's) starts with this.
pub const UNMET: &str = "runOnRequirements not met: ";
/// The reason of a test skipped because it needs something the driver or the runner
/// does not have yet starts with this.
pub const UNSUPPORTED: &str = "not supported yet: ";
/// The reason of a test skipped by its own `skipReason` starts with this.
pub const SKIP_REASON: &str = "skipReason: ";
/// The reason of a test of a file with a newer schema version starts with this.
pub const SCHEMA: &str = "schemaVersion: ";

/// Why a test stopped early.
#[derive(Debug)]
pub enum Abort {
    /// It needs what the driver or the runner does not have yet: the test is skipped.
    Unsupported(String),
    /// An assertion failed or the test could not be carried out: the test fails.
    Failed(String),
}

impl Abort {
    /// The same abort, a failure's reason prefixed with `place`, where it happened.
    pub fn within(self, place: &str) -> Abort {
        match self {
            Abort::Failed(why) => Abort::Failed(format!("{place}: {why}")),
            unsupported => unsupported,
        }
    }
}

impl From<String> for Abort {
    fn from(why: String) -> Self {
        Abort::Failed(why)
    }
}

/// The test server as the runner sees it.
pub struct Deployment {
    /// Its connection string, which client entities extend.
    pub uri: String,
    /// Behind a load balancer: the connection string of the balancer in front of
    /// several mongos, for clients with `useMultipleMongoses` (the load balancer
    /// tests README's `MULTI_MONGOS_LB_URI`; `uri` is `SINGLE_MONGOS_LB_URI`). A
    /// sharded cluster: the one listing every mongos (`uri` lists one).
    pub multi_mongos_uri: Option<String>,
    /// The internal client: initial data, outcomes, turning fail points off.
    pub internal: Client,
    /// What `runOnRequirements` are held against.
    pub info: ServerInfo,
    /// Whether it is the three-member replica set in front of the shared server,
    /// against which the tests of [`THREE_MEMBER_SET_TESTS`] run, and only they.
    pub three_members: bool,
}

/// The tests (suite folder, file, description; an empty description for every test of
/// the file) that run against a [`MockReplicaSet::in_front_of`] the shared server, whose
/// members answer hellos and elections themselves and forward the rest:
///
/// - those written for the three-member replica set of the spec's test deployments:
///   the logging ones wait for the topology changes and heartbeats of three members,
///   `rediscover-quickly-after-step-down` for another member to become primary
///   (logging-replicaset.json's "Failing heartbeat" sets a fail point on hello, which
///   only the server itself honours, and runs against it);
/// - server_selection_logging's replica-set.json, which waits for the four topology
///   changes of discovering three members;
/// - hello-timeout.json's "Driver extends timeout while streaming", which needs a
///   server that streams hellos as OP_MSG.md says: SecantusDB's streamed replies answer
///   the first request, not the previous reply (docs/UNIFIED_GAPS.md), where the set's
///   members stream them right.
pub const THREE_MEMBER_SET_TESTS: &[(&str, &str, &str)] = &[
    (
        "discovery_and_monitoring",
        "logging-replicaset.json",
        "Topology lifecycle",
    ),
    (
        "discovery_and_monitoring",
        "logging-replicaset.json",
        "Successful heartbeat",
    ),
    (
        "discovery_and_monitoring",
        "replicaset-emit-topology-changed-before-close.json",
        "",
    ),
    (
        "discovery_and_monitoring",
        "rediscover-quickly-after-step-down.json",
        "",
    ),
    (
        "discovery_and_monitoring",
        "hello-timeout.json",
        "Driver extends timeout while streaming",
    ),
    ("server_selection_logging", "replica-set.json", ""),
];

/// Whether the test `description` of `file` in `suite` is one of
/// [`THREE_MEMBER_SET_TESTS`].
fn expects_three_members(suite: &str, file: &str, description: &str) -> bool {
    THREE_MEMBER_SET_TESTS
        .iter()
        .any(|(s, f, test)| *s == suite && *f == file && (test.is_empty() || *test == description))
}

impl Deployment {
    /// Connects the internal client and asks the server what it is.
    async fn connect(uri: &str) -> Result<Deployment, String> {
        let internal = Client::with_uri_str(uri)
            .await
            .map_err(|e| format!("cannot create a client for {uri}: {e}"))?;
        let info = timeout(OPERATION_TIMEOUT, ServerInfo::discover(&internal))
            .await
            .map_err(|_| format!("{uri} did not answer within {OPERATION_TIMEOUT:?}"))??;
        Ok(Deployment {
            uri: uri.to_owned(),
            multi_mongos_uri: None,
            internal,
            info,
            three_members: false,
        })
    }
}

/// How the shared server is presented to a suite's tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    /// As it is: a single-node replica set.
    AsIs,
    /// Behind load balancers ([`crate::lb_proxy`]).
    LoadBalanced,
    /// Behind the mongoses of a test sharded cluster ([`crate::mongos_proxy`]).
    Sharded,
}

/// Runs every unified test file under `dir` (one of the corpus's suite folders)
/// against the shared test server (behind load balancers with [`LOAD_BALANCED_VAR`]
/// set, else behind mongoses with [`SHARDED_VAR`] set).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_against(dir, false, Front::AsIs, Expect::Pass)
}

/// Runs the `valid-fail` files of the unified test format (spec "Test Runner
/// Support": a runner MUST fail each of their tests): a test passes when the runner
/// fails it, or refuses it for its schema version or for what the runner does not
/// implement (the refusals the spec asks for, which [`run`] reports as skips); it
/// fails when the runner passes it. Tests whose requirements the server does not meet
/// stay skipped.
pub fn run_expecting_failure(dir: &Path) -> SuiteOutcome {
    run_against(dir, false, Front::AsIs, Expect::Failure)
}

/// Checks each file of the unified test format's `invalid` folder against the schema
/// ([`schema::validate`]), as the runner does before running a file: a file passes
/// when it is refused (spec "Test Runner Support": the runner MUST raise an error for
/// each), fails when it is accepted. Nothing is run.
pub fn run_invalid(dir: &Path) -> SuiteOutcome {
    let refuse = |dir: &Path| {
        crate::spec::run_json_files(
            dir,
            |_| true,
            |_| None,
            |_, json| match schema::validate(&serde_json::Value::Object(json.clone())) {
                Err(_) => Ok(()),
                Ok(()) => Err("the runner accepted an invalid file".to_owned()),
            },
        )
    };
    let mut outcome = refuse(dir);
    // The invalid shapes of newer schema versions that the corpus lacks, written from
    // the spec's text (the folder's README), run after the corpus's.
    let own = crate::spec::own_tests("unified-test-format/invalid");
    if own.is_dir() && own != dir {
        let more = refuse(&own);
        let named = |(file, why): (String, String)| (format!("anymongo/{file}"), why);
        outcome.passed += more.passed;
        outcome.failed.extend(more.failed.into_iter().map(named));
        outcome.skipped.extend(more.skipped.into_iter().map(named));
    }
    outcome
}

/// What the tests of a suite are written to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Pass (or be skipped for a reason).
    Pass,
    /// Make the runner fail or refuse them (`valid-fail`).
    Failure,
}

/// How one test ended, before [`Expect`] says what that counts as.
enum Verdict {
    Passed,
    /// Refused before running: the reason starts with [`SCHEMA`] or [`UNSUPPORTED`].
    Refused(String),
    /// Not run for another reason (requirements, skipReason, a known gap).
    Skipped(String),
    Failed(String),
}

impl Expect {
    /// Adds `verdict` of the test labelled `label` (file, description) to `outcome`.
    fn record(self, outcome: &mut SuiteOutcome, (file, test): (&str, &str), verdict: Verdict) {
        let labelled = |why: String| (file.to_owned(), format!("{test}: {why}"));
        match (self, verdict) {
            (Expect::Pass, Verdict::Passed) | (Expect::Failure, Verdict::Failed(_)) => {
                outcome.passed += 1
            }
            (Expect::Failure, Verdict::Refused(_)) => outcome.passed += 1,
            (Expect::Pass, Verdict::Refused(why)) | (_, Verdict::Skipped(why)) => {
                outcome.skipped.push(labelled(why))
            }
            (Expect::Pass, Verdict::Failed(why)) => outcome.failed.push(labelled(why)),
            (Expect::Failure, Verdict::Passed) => outcome.failed.push(labelled(
                "the runner passed a test written to fail".to_owned(),
            )),
        }
    }
}

/// Like [`run`], with a standalone server, the shared server behind a load balancer
/// ([`crate::lb_proxy`]) and behind the mongoses of a sharded cluster
/// ([`crate::mongos_proxy`]), and a server that requires authentication, besides the
/// shared single-node replica set: each test runs against the first of them that
/// meets its `runOnRequirements` (the logging and SDAM suites' files are written for
/// any topology, some for one only; `discovery_and_monitoring`'s auth tests need
/// `auth`). The files
/// of [`THREE_MEMBER_SET_TESTS`] run against a three-member replica set in front of the
/// shared server instead.
pub fn run_on_every_topology(dir: &Path) -> SuiteOutcome {
    run_against(dir, true, Front::AsIs, Expect::Pass)
}

/// Like [`run_on_every_topology`], with the shared server behind a load balancer
/// ([`crate::lb_proxy`]) instead of as it is: the `load_balancer` files are written
/// for a load-balanced deployment, but for non-lb-connection-establishment's (for a
/// single server, where the standalone serves); last comes a server that requires
/// authentication, behind balancers of its own, for the test that needs `auth`.
pub fn run_load_balanced(dir: &Path) -> SuiteOutcome {
    run_against(dir, true, Front::LoadBalanced, Expect::Pass)
}

/// Like [`run`], with the shared server behind the two mongoses of a test sharded
/// cluster ([`crate::mongos_proxy`]) instead of as it is, so that the tests written
/// for sharded clusters run (the runner's topology is then "sharded").
pub fn run_sharded(dir: &Path) -> SuiteOutcome {
    run_against(dir, false, Front::Sharded, Expect::Pass)
}

/// Set (to anything), every unified suite runs with the shared server behind load
/// balancers, as [`run_load_balanced`] runs the `load_balancer` suite.
pub const LOAD_BALANCED_VAR: &str = "ANYMONGO_LOAD_BALANCED";

/// Set (to anything, and [`LOAD_BALANCED_VAR`] unset), every unified suite runs with
/// the shared server behind the mongoses of a test sharded cluster, as
/// [`run_sharded`] runs it.
pub const SHARDED_VAR: &str = "ANYMONGO_SHARDED";

/// How many mongoses the test sharded cluster has: the clients of tests with
/// `useMultipleMongoses: true` get them all.
const MONGOSES: usize = 2;

/// Load balancers in front of the shared server at `address`: one with one service
/// (`SINGLE_MONGOS_LB_URI`) and one with two (`MULTI_MONGOS_LB_URI`).
fn load_balancers(
    runtime: &tokio::runtime::Runtime,
    address: &str,
) -> Result<[LoadBalancerProxy; 2], String> {
    let start = |services| {
        runtime
            .block_on(LoadBalancerProxy::start(address, services))
            .map_err(|e| format!("cannot start a load balancer: {e}"))
    };
    Ok([start(1)?, start(2)?])
}

/// A user's name and password.
type User = (&'static str, &'static str);

/// A server that requires authentication, a standalone one if `standalone`, and its
/// root user.
fn authenticating_server(standalone: bool) -> Result<(crate::server::TestServer, User), String> {
    let user = ("runner", "runner-password");
    let options = crate::server::ServerOptions {
        auth: true,
        standalone,
        users: vec![crate::server::TestUser::scram(
            user.0,
            user.1,
            &["SCRAM-SHA-256"],
        )],
        ..Default::default()
    };
    Ok((crate::server::TestServer::start(&options)?, user))
}

/// A server that requires authentication, its load balancers when it is behind some
/// ([`run_load_balanced`]), and its user.
type Authenticating = (
    crate::server::TestServer,
    Option<[LoadBalancerProxy; 2]>,
    User,
);

/// Starts an authenticating server with a root user, behind load balancers of its own
/// if `load_balanced`.
fn start_authenticating(
    runtime: &tokio::runtime::Runtime,
    load_balanced: bool,
) -> Result<Authenticating, String> {
    // Not behind balancers, it is the one standalone that authenticates, for the tests
    // that need both (connection_logging's); discovery_and_monitoring's auth tests
    // accept any topology.
    let (server, user) = authenticating_server(!load_balanced)?;
    let balancers = match load_balanced {
        true => Some(load_balancers(
            runtime,
            &format!("{}:{}", server.host, server.port),
        )?),
        false => None,
    };
    Ok((server, balancers, user))
}

/// `uri` (`mongodb://host:port/...`) with `user`'s credentials.
fn with_user(uri: &str, (name, password): &(&str, &str)) -> String {
    uri.replacen("mongodb://", &format!("mongodb://{name}:{password}@"), 1)
}

fn run_against(dir: &Path, with_standalone: bool, front: Front, expect: Expect) -> SuiteOutcome {
    let mut outcome = SuiteOutcome::default();
    let files = match json_files(dir) {
        Ok(files) => files,
        Err(why) => {
            outcome.failed.push((String::new(), why));
            return outcome;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            outcome
                .failed
                .push((String::new(), format!("cannot start tokio: {error}")));
            return outcome;
        }
    };
    // A server that cannot start fails the suite, not the process.
    let uri = match std::panic::catch_unwind(|| crate::server::shared().uri()) {
        Ok(uri) => uri,
        Err(_) => {
            let why = "the test server did not start".to_owned();
            outcome.failed.push((String::new(), why));
            return outcome;
        }
    };
    // Killed when the suite ends.
    let standalone = match with_standalone {
        false => None,
        true => {
            let options = crate::server::ServerOptions {
                standalone: true,
                ..Default::default()
            };
            match crate::server::TestServer::start(&options) {
                Ok(server) => Some(server),
                Err(why) => {
                    outcome.failed.push((String::new(), why));
                    return outcome;
                }
            }
        }
    };
    // Every unified suite may run behind the load balancers too, as the load
    // balancer tests README asks ("Drivers MUST run ... All test suites written in the
    // Unified Test Format" against a load balanced cluster).
    let front = match front {
        Front::AsIs if std::env::var_os(LOAD_BALANCED_VAR).is_some() => Front::LoadBalanced,
        Front::AsIs if std::env::var_os(SHARDED_VAR).is_some() => Front::Sharded,
        front => front,
    };
    let load_balanced = front == Front::LoadBalanced;
    let balancers = match load_balanced || with_standalone {
        false => None,
        true => {
            let address = crate::server::shared();
            match load_balancers(&runtime, &format!("{}:{}", address.host, address.port)) {
                Ok(balancers) => Some(balancers),
                Err(why) => {
                    outcome.failed.push((String::new(), why));
                    return outcome;
                }
            }
        }
    };
    let balanced = |[single, multi]: &[LoadBalancerProxy; 2]| (single.uri(), Some(multi.uri()));
    // Tests that need authentication (the load_balancer suite's behind a balancer,
    // discovery_and_monitoring's auth tests) run against a server that requires it,
    // behind balancers of its own in a load-balanced run (spec "runOnRequirement",
    // `auth`: "the tests MUST only run if authentication is enabled"). The user's
    // credentials are in the deployment's connection string, which every client entity
    // extends, as a test cluster's connection string carries them.
    let authenticating = match load_balanced || with_standalone {
        false => None,
        true => match start_authenticating(&runtime, load_balanced) {
            Ok(authenticating) => Some(authenticating),
            Err(why) => {
                outcome.failed.push((String::new(), why));
                return outcome;
            }
        },
    };
    let authenticating_uri = |(server, balancers, user): &Authenticating| match balancers {
        Some(balancers) => {
            let (single, multi) = balanced(balancers);
            (
                with_user(&single, user),
                multi.map(|multi| with_user(&multi, user)),
            )
        }
        None => (with_user(&server.uri(), user), None),
    };
    // The tests written for sharded clusters (all of them with SHARDED_VAR) run
    // against mongoses in front of the shared server.
    let cluster = match front == Front::Sharded || with_standalone {
        false => None,
        true => {
            let address = crate::server::shared();
            let address = format!("{}:{}", address.host, address.port);
            match runtime.block_on(ShardedCluster::start(&address, MONGOSES)) {
                Ok(cluster) => Some(cluster),
                Err(error) => {
                    let why = format!("cannot start the test sharded cluster: {error}");
                    outcome.failed.push((String::new(), why));
                    return outcome;
                }
            }
        }
    };
    let sharded = cluster
        .as_ref()
        .map(|cluster| (cluster.uri(1), Some(cluster.uri(MONGOSES))));
    // (connection string, MULTI_MONGOS_LB_URI or every mongos) of each deployment,
    // in order of preference.
    let standalone_uri = standalone.as_ref().map(|server| (server.uri(), None));
    let authenticating_uri = authenticating.as_ref().map(authenticating_uri);
    let uris: Vec<(String, Option<String>)> = match (front, &balancers) {
        (Front::Sharded, _) => sharded.into_iter().chain(standalone_uri).collect(),
        (Front::LoadBalanced, Some(balancers)) => std::iter::once(balanced(balancers))
            .chain(standalone_uri)
            .chain(authenticating_uri)
            .collect(),
        (_, balancers) => std::iter::once((uri, None))
            .chain(standalone_uri)
            .chain(balancers.as_ref().map(balanced))
            .chain(sharded)
            .chain(authenticating_uri)
            .collect(),
    };
    // The three-member set, for a suite with tests that run against it.
    let wants_three_members = with_standalone
        && THREE_MEMBER_SET_TESTS.iter().any(|(suite, file, _)| {
            suite_name(&dir.join(file)) == *suite && dir.join(file).is_file()
        });
    let three_members = match wants_three_members {
        false => None,
        true => {
            let address = crate::server::shared();
            let address = format!("{}:{}", address.host, address.port);
            Some(runtime.block_on(MockReplicaSet::in_front_of(&address)))
        }
    };
    let three_members_uri = three_members.as_ref().map(|set| set.uri_all(""));
    let mut deployments = Vec::new();
    for (uri, multi_mongos_uri) in uris {
        match runtime.block_on(Deployment::connect(&uri)) {
            Ok(mut deployment) => {
                deployment.multi_mongos_uri = multi_mongos_uri;
                deployments.push(Arc::new(deployment))
            }
            Err(why) => {
                outcome.failed.push((String::new(), why));
                return outcome;
            }
        }
    }
    if let Some(uri) = three_members_uri {
        match runtime.block_on(Deployment::connect(&uri)) {
            Ok(mut deployment) => {
                deployment.three_members = true;
                deployments.push(Arc::new(deployment))
            }
            Err(why) => {
                outcome.failed.push((String::new(), why));
                return outcome;
            }
        }
    }
    for file in files {
        run_file(
            &runtime,
            &deployments,
            &dir.join(&file),
            &file,
            expect,
            &mut outcome,
        );
    }
    // The clients' background tasks end while the runtime still runs.
    runtime.block_on(async move {
        drop((
            deployments,
            balancers,
            authenticating,
            three_members,
            cluster,
        ))
    });
    drop(standalone);
    outcome
}

/// Runs the tests of one file, adding each one's result to `outcome` under `name`.
fn run_file(
    runtime: &tokio::runtime::Runtime,
    deployments: &[Arc<Deployment>],
    path: &Path,
    name: &str,
    expect: Expect,
    outcome: &mut SuiteOutcome,
) {
    // The current version of the file where pymongo's copy is patched or outdated.
    let source = crate::spec::current_version(path);
    // Spec "Schema Version": a file that does not validate is refused before anything
    // runs.
    let valid = crate::spec::read_json_object(&source)
        .and_then(|json| schema::validate(&serde_json::Value::Object(json)));
    let file = match (valid.and_then(|()| model::read_file(&source)), expect) {
        (Ok(file), _) => file,
        // A file the runner cannot read or refuses is refused whole.
        (Err(_), Expect::Failure) => {
            outcome.passed += 1;
            return;
        }
        (Err(why), Expect::Pass) => {
            outcome.failed.push((name.to_owned(), why));
            return;
        }
    };
    let mut record =
        |test: &Test, verdict| expect.record(outcome, (name, &test.description), verdict);
    // Spec "Executing a Test File": an incompatible file is not processed.
    if !schema_supported(&file.schema_version) {
        let why = format!(
            "{SCHEMA}{} is not compatible with the runner's {}.{}",
            file.schema_version, SCHEMA_VERSION[0], SCHEMA_VERSION[1]
        );
        for test in &file.tests {
            record(test, Verdict::Refused(why.clone()));
        }
        return;
    }
    // Why a test cannot run on a deployment: the file's or its own requirements
    // unmet, its skipReason, or what the runner lacks.
    let skip_on = |deployment: &Deployment, test: &Test| {
        file.run_on_requirements
            .as_deref()
            .and_then(|requirements| deployment.info.unmet(requirements))
            .map(|why| format!("{UNMET}{why}"))
            .or_else(|| skipped(test, &deployment.info))
    };
    let suite = suite_name(path);
    let deadline = Instant::now() + FILE_TIMEOUT;
    for test in &file.tests {
        // The first deployment whose topology and version the test accepts, among the
        // three-member set or the others.
        let three_members = expects_three_members(&suite, name, &test.description);
        let verdicts: Vec<_> = deployments
            .iter()
            .filter(|deployment| deployment.three_members == three_members)
            .map(|deployment| (deployment, skip_on(deployment, test)))
            .collect();
        if verdicts.is_empty() {
            let why =
                format!("{UNMET}the test expects a three-member replica set, not started here");
            record(test, Verdict::Skipped(why));
            continue;
        }
        let chosen = verdicts
            .iter()
            .find(|(_, why)| !why.as_deref().is_some_and(|why| why.starts_with(UNMET)))
            .or(verdicts.first());
        let Some((deployment, why)) = chosen else {
            continue;
        };
        let known_gap = || known_gaps::reason(&suite, name, &test.description);
        if let Some(why) = why.clone().or_else(known_gap) {
            let verdict = match why.starts_with(UNSUPPORTED) {
                true => Verdict::Refused(why),
                false => Verdict::Skipped(why),
            };
            record(test, verdict);
            continue;
        }
        let deployment = Arc::clone(deployment);
        let result = runtime.block_on(run_test(deployment, &file, test, deadline));
        let verdict = match result {
            Ok(()) => Verdict::Passed,
            Err(Abort::Unsupported(why)) => Verdict::Refused(format!("{UNSUPPORTED}{why}")),
            Err(Abort::Failed(why)) => Verdict::Failed(why),
        };
        record(test, verdict);
    }
}

/// The suite folder `path` (a test file) is in: the corpus folder under which
/// [`run`] found it, e.g. `crud` for `crud/unified/find.json`.
fn suite_name(path: &Path) -> String {
    path.ancestors()
        .find(|dir| dir.parent().is_some_and(|parent| parent.ends_with("test")))
        .and_then(|dir| dir.file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the runner reads files of `version` (spec "Test Runner Support").
fn schema_supported(version: &str) -> bool {
    parse_version(version).is_some_and(|parts| {
        let part = |i: usize| parts.get(i).copied().unwrap_or(0);
        part(0) == SCHEMA_VERSION[0] && part(1) <= SCHEMA_VERSION[1]
    })
}

/// Why `test` is skipped without touching the server: its `skipReason`, its
/// `runOnRequirements`, or what it needs that the runner lacks.
fn skipped(test: &Test, server: &ServerInfo) -> Option<String> {
    if let Some(reason) = &test.skip_reason {
        return Some(format!("{SKIP_REASON}{reason}"));
    }
    if let Some(why) = test
        .run_on_requirements
        .as_deref()
        .and_then(|requirements| server.unmet(requirements))
    {
        return Some(format!("{UNMET}{why}"));
    }
    test.operations
        .iter()
        .find_map(operations::unsupported)
        .map(|why| format!("{UNSUPPORTED}{why}"))
}

/// Runs one test (spec "Executing a Test"), all of it before `deadline`.
async fn run_test(
    deployment: Arc<Deployment>,
    file: &TestFile,
    test: &Test,
    deadline: Instant,
) -> Result<(), Abort> {
    let mut context = Context::new(deployment.clone(), client_uri(&deployment.uri, test)?);
    context.multi_mongos_uri = match &deployment.multi_mongos_uri {
        Some(uri) => Some(client_uri(uri, test)?),
        None => None,
    };
    // Spans are collected while a client entity traces: the test's operations run in
    // a span of the runner's, the driver's spans are filed under it.
    let traces = file.create_entities.iter().any(|entity| {
        matches!(entity, model::EntityDescription::Client(client) if client.observe_tracing_messages.is_some())
    });
    context.spans = traces.then(spans::SpanRecorder::start);
    let test_span = context
        .spans
        .as_ref()
        .map_or_else(tracing::Span::none, |recorder| recorder.span().clone());
    let ran = timeout_at(
        deadline,
        tracing::Instrument::instrument(run_operations(&mut context, file, test), test_span),
    )
    .await
    .unwrap_or_else(|_| Err(out_of_time()));
    // Turned off before outcomes are read, which a fail point could break; through the
    // internal client, so that no client entity records the command or its connection.
    let turned_off = turn_off_fail_points(&deployment, &context.fail_points).await;
    // A command the server held (blockConnection) goes on after the driver gave up on
    // it at its timeoutMS, and its writes would land after the next test's initial
    // data: its block is waited out, a bound the server sets, at most a second.
    tokio::time::sleep(context.longest_block.min(Duration::from_secs(1))).await;
    let turned_off = match turned_off.is_ok() && transactions::starts_transactions(test) {
        true => transactions::terminate_open_transactions(&deployment).await,
        false => turned_off,
    };
    let checked = match (ran, turned_off) {
        (Err(abort), _) => Err(abort),
        (Ok(()), Err(why)) => Err(Abort::Failed(why)),
        (Ok(()), Ok(())) => timeout_at(deadline, check_expectations(&context, test))
            .await
            .unwrap_or_else(|_| Err(out_of_time())),
    };
    // Clients close here, in the runtime their monitors run in.
    drop(context);
    checked
}

/// The connection string of the test's client entities. A test that sets fail
/// points gets the shortest heartbeatFrequencyMS (500 ms) unless a client names its
/// own, as the spec allows ("Executing a Test": runners "MAY specify a reduced value
/// for heartbeatFrequencyMS" to speed up recovery after a failure): a streaming
/// monitor ignores requests for an immediate check while its awaited hello is
/// pending, which would otherwise keep a server marked Unknown by a state-change error
/// unselectable for up to the default 10 s.
fn client_uri(uri: &str, test: &Test) -> Result<String, String> {
    let sets_fail_points = test
        .operations
        .iter()
        .any(|operation| matches!(operation.name.as_str(), "failPoint" | "targetedFailPoint"));
    match sets_fail_points {
        true => entities::with_uri_options(uri, Some(&doc! { "heartbeatFrequencyMS": 500 })),
        false => Ok(uri.to_owned()),
    }
}

fn out_of_time() -> Abort {
    Abort::Failed(format!(
        "the file's tests took longer than {FILE_TIMEOUT:?}"
    ))
}

/// Sets up the collections and entities, then runs the operations.
async fn run_operations(context: &mut Context, file: &TestFile, test: &Test) -> Result<(), Abort> {
    let internal = &context.deployment.internal;
    timeout(
        OPERATION_TIMEOUT,
        collections::set_up(internal, &file.initial_data),
    )
    .await
    .map_err(|_| format!("initialData took longer than {OPERATION_TIMEOUT:?}"))??;
    for description in &file.create_entities {
        let uri = context.client_uri_for(description);
        entities::create(description, &mut context.entities, &uri).await?;
        entities::await_min_pool_size(description, &context.entities)?.await?;
    }
    for (i, operation) in test.operations.iter().enumerate() {
        run_operation(operation, context)
            .await
            .map_err(|abort| abort.within(&format!("operation {i} ({})", operation.name)))?;
    }
    Ok(())
}

/// Runs one operation, within its time ([`operations::time_allowed`]), and checks what
/// it returned (spec "Executing an Operation"): on the test's own thread, or on a
/// thread entity ([`threads`]).
pub async fn run_operation(operation: &Operation, context: &mut Context) -> Result<(), Abort> {
    let allowed = operations::time_allowed(operation);
    let returned = timeout(allowed, operations::execute(operation, context))
        .await
        .map_err(|_| format!("did not finish within {allowed:?}"))??;
    check_returned(operation, returned, context)
}

/// Checks what an operation returned against `expectError` or `expectResult`, and
/// saves it as an entity if asked (spec "Executing an Operation").
fn check_returned(
    operation: &Operation,
    returned: Returned,
    context: &mut Context,
) -> Result<(), Abort> {
    // A cursor or collection the operation made is saved rather than returned.
    let result_entity = context.result_entity.take();
    if operation.ignore_result_and_error {
        return Ok(());
    }
    let result = match (returned, &operation.expect_error) {
        (Err(error), Some(expected)) => {
            errors::check(expected, &error)?;
            let matcher = Matcher::new(&context.entities);
            errors::check_response(expected, &error, &matcher)?;
            client_bulk_write::check_errors(expected, &error, &matcher)?;
            // Spec "expectedError", `expectResult`: the result the error includes
            // ($$unsetOrMatches when it may have none): a bulk write's or a client bulk
            // write's.
            if let Some(expected) = &expected.expect_result {
                let partial = match bulk_write::partial_result(&error) {
                    Some(partial) => Some(partial),
                    None => client_bulk_write::partial_result(&error)?,
                };
                matcher.root_or_absent(expected, partial.as_ref())?;
            }
            return Ok(());
        }
        (Err(error), None) => return Err(Abort::Failed(format!("unexpected error: {error}"))),
        (Ok(result), Some(_)) => {
            let shown = result.map_or("nothing".to_owned(), |result| result.to_string());
            return Err(Abort::Failed(format!("expected an error, got {shown}")));
        }
        (Ok(result), None) => result,
    };
    if let Some(expected) = &operation.expect_result {
        let actual = result
            .as_ref()
            .ok_or_else(|| format!("expected the result {expected}, got none"))?;
        let matcher = Matcher::new(&context.entities);
        match operations::returns_documents(operation) {
            true => matcher.iterated(expected, actual)?,
            false => matcher.root(expected, actual)?,
        }
    }
    if let Some(name) = &operation.save_result_as_entity {
        let entity = match (result_entity, result) {
            (Some(entity), _) => entity,
            (None, Some(result)) => entities::Entity::Value(result),
            (None, None) => return Err(Abort::Failed(format!("no result to save as {name}"))),
        };
        context.entities.insert(name, entity)?;
    }
    Ok(())
}

/// Checks `expectEvents` and `outcome`.
async fn check_expectations(context: &Context, test: &Test) -> Result<(), Abort> {
    let matcher = Matcher::new(&context.entities);
    for expected in test.expect_events.iter().flatten() {
        let client = context.entities.client(&expected.client)?;
        events::check(expected, &client.events, &client.observe, &matcher)?;
    }
    for expected in test.expect_log_messages.iter().flatten() {
        let client = context.entities.client(&expected.client)?;
        let observer = client
            .logs
            .as_ref()
            .ok_or_else(|| format!("client {} has no observeLogMessages", expected.client))?;
        logs::check(expected, observer, &matcher)?;
    }
    for expected in test
        .expect_tracing_messages
        .iter()
        .flat_map(|e| e.entries())
    {
        let client = context.entities.client(&expected.client)?;
        if !client.traces {
            return Err(Abort::Failed(format!(
                "client {} has no observeTracingMessages",
                expected.client
            )));
        }
        let recorder = context
            .spans
            .as_ref()
            .ok_or_else(|| "no client entity observes tracing".to_owned())?;
        spans::check(expected, &recorder.spans(), &matcher)?;
    }
    if let Some(outcome) = &test.outcome {
        collections::check(&context.deployment.internal, outcome).await?;
    }
    Ok(())
}

/// Turns off the fail points a test set (spec "Disabling Fail Points"), each within
/// [`OPERATION_TIMEOUT`].
async fn turn_off_fail_points(deployment: &Deployment, names: &[String]) -> Result<(), String> {
    let admin = deployment.internal.database("admin");
    for name in names {
        let off = doc! { "configureFailPoint": name, "mode": "off" };
        match timeout(OPERATION_TIMEOUT, admin.run_command(off)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(format!("turning the fail point {name} off: {error}")),
            Err(_) => return Err(format!("turning the fail point {name} off timed out")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that exercises the runner against the test server: what passes must
    /// pass, what is written to fail must fail, and skips keep their kinds apart.
    #[test]
    fn the_runner_passes_fails_and_skips_against_the_test_server() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("self-test.json"),
            include_str!("self-test.json"),
        )
        .unwrap();
        let outcome = run(dir.path());
        let descriptions = |results: &[(String, String)]| -> Vec<String> {
            results
                .iter()
                .map(|(file, why)| {
                    assert_eq!(file, "self-test.json");
                    why.split(": ").next().unwrap().to_owned()
                })
                .collect()
        };
        assert_eq!(outcome.passed, 4, "{outcome:#?}");
        assert_eq!(
            descriptions(&outcome.failed),
            [
                "fails on the outcome",
                "fails on an unexpected error",
                "fails on an extra event",
                "fails on an operation on a thread",
                "fails on an event count"
            ],
            "{outcome:#?}"
        );
        let on_thread = &outcome.failed[3].1;
        assert!(
            on_thread.contains("waitForThread") && on_thread.contains("noSuchCommand"),
            "{on_thread}"
        );
        assert_eq!(
            descriptions(&outcome.skipped),
            ["skipped for its requirements", "skipped for its operation"]
        );
        assert!(outcome.skipped[0].1.contains(UNMET));
        assert!(outcome.skipped[1].1.contains(UNSUPPORTED));
    }

    #[test]
    fn a_test_written_to_fail_passes_when_the_runner_fails_or_refuses_it() {
        let verdicts = || {
            [
                Verdict::Passed,
                Verdict::Refused(format!("{UNSUPPORTED}op")),
                Verdict::Skipped(format!("{UNMET}sharded")),
                Verdict::Failed("wrong".to_owned()),
            ]
        };
        let counts = |expect: Expect| {
            let mut outcome = SuiteOutcome::default();
            for verdict in verdicts() {
                expect.record(&mut outcome, ("f.json", "t"), verdict);
            }
            (outcome.passed, outcome.failed.len(), outcome.skipped.len())
        };
        assert_eq!(counts(Expect::Pass), (1, 1, 2));
        assert_eq!(counts(Expect::Failure), (2, 1, 1));
        let mut outcome = SuiteOutcome::default();
        Expect::Failure.record(&mut outcome, ("f.json", "t"), Verdict::Passed);
        assert_eq!(
            outcome.failed,
            [(
                "f.json".to_owned(),
                "t: the runner passed a test written to fail".to_owned()
            )]
        );
    }

    /// No file of a suite the runner runs is refused by its schema check.
    #[test]
    fn every_file_the_runner_runs_is_valid() {
        let corpus = crate::spec::corpus_dir().unwrap();
        let suites = crate::spec::SUITES
            .iter()
            .map(|suite| (suite.folder(), suite.dir(&corpus)))
            .chain(
                [
                    "read_write_concern/operation",
                    "read_write_concern/write-concern-errors",
                ]
                .map(|name| (name, corpus.join(name))),
            )
            .filter(|(name, _)| !name.contains("invalid") && !name.contains("valid-fail"));
        let (mut refused, mut validated) = (Vec::new(), 0);
        for (suite, dir) in suites {
            for file in crate::spec::json_files(&dir).unwrap() {
                let json = crate::spec::read_json_object(&dir.join(&file)).unwrap();
                // Only unified-format files: those with a schemaVersion.
                if json.contains_key("schemaVersion") {
                    validated += 1;
                    if let Err(why) = schema::validate(&serde_json::Value::Object(json)) {
                        refused.push(format!("{suite}/{file}: {why}"));
                    }
                }
            }
        }
        assert!(refused.is_empty(), "{refused:#?}");
        assert!(validated > 500, "only {validated} files validated");
    }

    #[test]
    fn three_member_tests_are_named_by_file_and_description() {
        let sdam = "discovery_and_monitoring";
        assert!(expects_three_members(
            sdam,
            "logging-replicaset.json",
            "Topology lifecycle"
        ));
        assert!(!expects_three_members(
            sdam,
            "logging-replicaset.json",
            "Failing heartbeat"
        ));
        let step_down = "rediscover-quickly-after-step-down.json";
        assert!(expects_three_members(sdam, step_down, "any test"));
        assert!(!expects_three_members("sessions", step_down, "any test"));
        let streaming = "Driver extends timeout while streaming";
        assert!(expects_three_members(sdam, "hello-timeout.json", streaming));
    }

    #[test]
    fn schema_versions_up_to_the_runner_s_are_read() {
        assert!(schema_supported("1.0"));
        assert!(schema_supported("1.21"));
        assert!(schema_supported("1.26"));
        assert!(schema_supported("1.26.3"));
        assert!(schema_supported("1"));
        assert!(schema_supported("1.27"));
        assert!(!schema_supported("1.28"));
        assert!(!schema_supported("2.0"));
        assert!(!schema_supported("one"));
    }

    #[test]
    fn tests_are_skipped_for_their_reason_before_running() {
        let server = ServerInfo {
            version: vec![8, 2, 11],
            topology: requirements::Topology::ReplicaSet,
            parameters: bson::Document::new(),
            auth: false,
        };
        let test = |document: bson::Document| -> Test {
            bson::deserialize_from_document(document).unwrap()
        };
        let run_command = doc! { "name": "runCommand", "object": "database0" };
        let runnable = test(doc! { "description": "t", "operations": [run_command.clone()] });
        assert_eq!(skipped(&runnable, &server), None);
        let own = test(doc! { "description": "t", "skipReason": "flaky", "operations": [] });
        assert_eq!(skipped(&own, &server).unwrap(), "skipReason: flaky");
        let unmet = test(doc! {
            "description": "t", "runOnRequirements": [{ "topologies": ["sharded"] }], "operations": [],
        });
        assert!(skipped(&unmet, &server).unwrap().starts_with(UNMET));
        let crud = test(doc! {
            "description": "t",
            "operations": [run_command, { "name": "mapReduce", "object": "collection0" }],
        });
        let why = skipped(&crud, &server).unwrap();
        assert!(
            why.starts_with(UNSUPPORTED) && why.contains("map_reduce"),
            "{why}"
        );
        let logs = test(doc! { "description": "t", "operations": [], "expectLogMessages": [] });
        assert_eq!(skipped(&logs, &server), None);
    }
}
