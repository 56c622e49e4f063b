//! The Connection Monitoring and Pooling spec's tests (`connection_monitoring/`, see
//! the spec's `tests/cmap-format/README.md`).
//!
//! Each JSON file is one test, run against an [`anymongo::cmap::ConnectionPool`] on
//! the native runtime's clock and spawner. One runner serves both styles of file; only
//! the [`Establish`] seam differs:
//!
//! - the unit-style files get fake connections (`FakeEstablish` hands one out at
//!   once);
//! - the integration-style files (`style: "integration"`, with a `failPoint` that
//!   blocks or fails the handshake of connections with the test's `appName`) get real
//!   ones to a SecantusDB server (`ServerEstablish`: the driver's
//!   [`Connector`], plus what SDAM does when establishing a connection fails — it
//!   clears the pool). The server is started, with test commands enabled, for the first
//!   such file and stopped at the end of the suite; its `buildInfo` version is held
//!   against each file's `runOn`. The `failPoint` is set through an
//!   [`anymongo::Client`] before the test and turned off after it, however it ended.
//!
//! How the operations run:
//!
//! - the test's "threads" are tokio tasks fed their operations through a channel, the
//!   main thread runs the rest itself and stops at its first error;
//! - `waitForThread` propagates the thread's first error to the main thread;
//!   `waitForEvent` counts every event (the `ignore` list does not apply), waiting at
//!   most its `timeout` (10 s when it has none);
//! - every wait is bounded: a thread is waited for 10 s at most, and a test's
//!   operations get a minute in all;
//! - the expected `error` is matched by its type (PoolClosedError,
//!   PoolClearedError, WaitQueueTimeoutError); the message is not compared, the spec
//!   leaving errors' wording to each driver;
//! - the `events` (all but the `ignore`d types) are matched one by one with the spec's
//!   MATCH rule: expected fields must be present and equal, `42` and `"42"` meaning
//!   "any value", and durations count in milliseconds;
//! - `backgroundThreadIntervalMS` sets the pool's maintenance interval (a negative
//!   value, "never", becomes an hour); `appName` goes to the connections' handshake.

use anymongo::event::cmap::{
    ConnectionCheckedOutEvent, ConnectionCheckoutFailedEvent, ConnectionClosedEvent,
    ConnectionReadyEvent, PoolClearedEvent, PoolCreatedEvent,
};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use anymongo::bson::{doc, Document};
use anymongo::cmap::{
    CheckedOut, Connection as ServerConnection, ConnectionPool, Connector, Establish, PoolOptions,
};
use anymongo::event::cmap::CmapEvent;
use anymongo::event::EventHandler;
use anymongo::rt::BoxFuture;
use anymongo::{Client, ClientOptions, Error, ErrorKind, ServerAddress};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::fake::FakeEstablish;

use super::{run_json_files, JsonTest, SuiteOutcome};
use crate::server::{ServerOptions, TestServer};

/// Why an integration-style file whose `runOn` the server does not meet is skipped.
const NOT_ON_THIS_SERVER: &str = "runOn: the test server's version meets none of the requirements";

/// Why a file that expects a connection whose establishment failed to be closed before
/// the pool is cleared is skipped as outdated: the current spec tests clear the pool
/// first, then close the connection, then fail the check-out (DRIVERS-1785), as the
/// driver does.
const OUTDATED_ORDER: &str = "outdated test: expects ConnectionClosed before PoolCleared when \
    establishing a connection fails; the current spec tests (DRIVERS-1785) clear the pool \
    first, as the driver does";

/// How long `waitForEvent` waits when the test gives no `timeout`, and how long
/// `waitForThread` waits for a thread.
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// How long a test's operations may take in all (what bounds a main-thread check-out
/// that has no waitQueueTimeoutMS).
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the suite in `dir` (the corpus's `connection_monitoring` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let mut outcome = SuiteOutcome::default();
            outcome
                .failed
                .push((String::new(), format!("cannot start tokio: {error}")));
            return outcome;
        }
    };
    // Started for the first integration-style file; declared after the runtime so that
    // it is dropped (the server killed) while the runtime is still up.
    let server: OnceCell<Result<LiveServer, String>> = OnceCell::new();
    let live = || server.get_or_init(|| LiveServer::start(&runtime));
    run_json_files(
        dir,
        |_| true,
        |test| {
            if expects_closed_before_cleared(test) {
                return Some(OUTDATED_ORDER);
            }
            if !is_integration(test) {
                return None;
            }
            // A server that cannot start, or a `runOn` that cannot be read, fails the
            // file when it runs.
            let version = &live().as_ref().ok()?.version;
            (runs_on(test, version) == Ok(false)).then_some(NOT_ON_THIS_SERVER)
        },
        |_, test| {
            if !is_integration(test) {
                return runtime.block_on(run_fake(test));
            }
            let server = live()
                .as_ref()
                .map_err(|why| format!("cannot start the test server: {why}"))?;
            // Met, or the file would have been skipped; this reports an unreadable one.
            runs_on(test, &server.version)?;
            runtime.block_on(run_on_server(server, test))
        },
    )
}

/// Whether the file's `events` have a ConnectionClosed for an error before a
/// ConnectionPoolCleared: the order of the spec's tests before DRIVERS-1785, which now
/// clear the pool first (a newer corpus runs the file).
fn expects_closed_before_cleared(test: &JsonTest) -> bool {
    let events = test.get("events").and_then(Value::as_array);
    let position =
        |wanted: &dyn Fn(&Value) -> bool| events.and_then(|events| events.iter().position(wanted));
    let closed =
        position(&|event| event["type"] == "ConnectionClosed" && event["reason"] == "error");
    let cleared = position(&|event| event["type"] == "ConnectionPoolCleared");
    matches!((closed, cleared), (Some(closed), Some(cleared)) if closed < cleared)
}

/// Whether a file needs a server (the spec's integration style).
fn is_integration(test: &JsonTest) -> bool {
    test.get("style").and_then(Value::as_str) == Some("integration")
        || test.contains_key("failPoint")
        || test.contains_key("runOn")
}

/// Whether a server of `version` meets one of the test's `runOn` requirements (each a
/// `minServerVersion` and/or `maxServerVersion`, both inclusive); no `runOn` means it
/// does.
fn runs_on(test: &JsonTest, version: &[u64]) -> Result<bool, String> {
    let Some(requirements) = test.get("runOn") else {
        return Ok(true);
    };
    let requirements = requirements.as_array().ok_or("runOn is not an array")?;
    let mut met = false;
    for requirement in requirements {
        let requirement = requirement
            .as_object()
            .ok_or_else(|| format!("a runOn requirement is not an object: {requirement}"))?;
        let mut this_one = true;
        for (key, bound) in requirement {
            let bound = bound
                .as_str()
                .and_then(parse_version)
                .ok_or_else(|| format!("runOn.{key} is not a version: {bound}"))?;
            // Compared on the bound's components: maxServerVersion "4.4" admits 4.4.x.
            let version = &version[..bound.len().min(version.len())];
            this_one &= match key.as_str() {
                "minServerVersion" => version >= bound.as_slice(),
                "maxServerVersion" => version <= bound.as_slice(),
                other => return Err(format!("unsupported runOn requirement {other:?}")),
            };
        }
        met |= this_one;
    }
    Ok(met)
}

/// `"8.2.11"` as `[8, 2, 11]` (a suffix such as `-rc0` is dropped).
fn parse_version(text: &str) -> Option<Vec<u64>> {
    text.split('-')
        .next()?
        .split('.')
        .map(|part| part.parse().ok())
        .collect()
}

/// The SecantusDB server of the integration-style files.
struct LiveServer {
    /// Sets and unsets the fail points. Its connections have no appName, so the files'
    /// fail points, which name one, leave them alone.
    client: Client,
    /// The server's connection string.
    uri: String,
    /// What `buildInfo` says.
    version: Vec<u64>,
    /// Killed when dropped, after the client (fields drop in order).
    _server: TestServer,
}

impl LiveServer {
    /// Starts a server (its test commands, `configureFailPoint` among them, are
    /// enabled: [`TestServer`] always asks for them) and reads its version.
    fn start(runtime: &tokio::runtime::Runtime) -> Result<LiveServer, String> {
        let server = TestServer::start(&ServerOptions::default())?;
        let uri = server.uri();
        let separator = if uri.contains('?') { '&' } else { '?' };
        let client_uri = format!("{uri}{separator}directConnection=true");
        runtime.block_on(async {
            // Called in the runtime, so that the client monitors in the background.
            let client = Client::with_uri_str(&client_uri)
                .await
                .map_err(|e| format!("cannot create a client for {client_uri}: {e}"))?;
            let build_info = client
                .database("admin")
                .run_command(doc! { "buildInfo": 1 })
                .await
                .map_err(|e| format!("buildInfo failed: {e}"))?;
            let version = build_info
                .get_str("version")
                .ok()
                .and_then(parse_version)
                .ok_or_else(|| format!("buildInfo gives no readable version: {build_info}"))?;
            Ok(LiveServer {
                client,
                uri,
                version,
                _server: server,
            })
        })
    }

    /// Runs a `configureFailPoint` command on the admin database.
    async fn configure_fail_point(&self, command: Document) -> Result<(), String> {
        self.client
            .database("admin")
            .run_command(command.clone())
            .await
            .map(drop)
            .map_err(|e| format!("{command} failed: {e}"))
    }
}

/// Runs an integration-style file: its fail point set for the test's duration, a pool
/// of real connections with the test's appName.
async fn run_on_server(server: &LiveServer, test: &JsonTest) -> Result<(), String> {
    let options = pool_options(test.get("poolOptions"))?;
    let mut client_options = ClientOptions::parse_uri(&server.uri)
        .map_err(|e| format!("cannot parse {}: {e}", server.uri))?;
    client_options.app_name = options.app_name;
    let address = client_options
        .hosts
        .first()
        .cloned()
        .ok_or_else(|| format!("{} names no host", server.uri))?;
    let owner = Arc::new(OnceLock::new());
    let establisher = ServerEstablish {
        connector: Connector::new(&client_options, &address, anymongo_native::runtime()),
        owner: owner.clone(),
    };

    let fail_point = match test.get("failPoint") {
        None => None,
        Some(json) => {
            let command = anymongo::bson::serialize_to_document(json)
                .map_err(|e| format!("the failPoint {json} is no document: {e}"))?;
            let name = command
                .get_str("configureFailPoint")
                .map_err(|_| format!("the failPoint {json} names no fail point"))?
                .to_owned();
            server.configure_fail_point(command).await?;
            Some(name)
        }
    };
    let outcome = run_test(test, address, options.pool, establisher, |context| {
        let _ = owner.set(Arc::downgrade(context));
    })
    .await;
    match fail_point {
        Some(name) => {
            let off = doc! { "configureFailPoint": name, "mode": "off" };
            let turned_off = server.configure_fail_point(off).await;
            outcome.and(turned_off)
        }
        None => outcome,
    }
}

/// Runs a unit-style file, with fake connections.
async fn run_fake(test: &JsonTest) -> Result<(), String> {
    let options = pool_options(test.get("poolOptions"))?;
    let address = ServerAddress::tcp("localhost", 27017);
    run_test(test, address, options.pool, FakeEstablish, |_| ()).await
}

/// Real connections to the test server, through the driver's [`Connector`]; a
/// connection that fails to be established clears the pool, as the driver's SDAM does
/// with such errors ("application errors before the handshake completes"), unless a
/// clear since made its generation stale.
struct ServerEstablish {
    connector: Connector,
    /// The test whose pool this establishes for, set once the pool exists.
    owner: Arc<OnceLock<Weak<Context<ServerEstablish>>>>,
}

impl Establish for ServerEstablish {
    type Connection = ServerConnection;

    fn establish(&self, connection_id: u32) -> BoxFuture<'_, anymongo::Result<ServerConnection>> {
        self.connector.establish(connection_id)
    }

    fn establish_failed(&self, error: &Error, generation: u32) {
        self.connector.establish_failed(error, generation);
        if let Some(context) = self.owner.get().and_then(Weak::upgrade) {
            if context.pool.generation() == generation {
                context.pool.clear(None, false);
            }
        }
    }
}

/// What the threads of one test share.
struct Context<E: Establish> {
    pool: ConnectionPool<E>,
    /// Every event of the pool so far, in order; `waitForEvent` watches it grow.
    events: Arc<watch::Sender<Vec<CmapEvent>>>,
    /// Checked-out connections by label.
    labelled: Mutex<HashMap<String, CheckedOut<E>>>,
    /// Checked-out connections without a label: kept until the test ends, since
    /// dropping one would close it.
    unlabelled: Mutex<Vec<CheckedOut<E>>>,
}

/// How an operation failed.
#[derive(Debug)]
enum Failure {
    /// The pool returned an error (what `error` describes).
    Pool(Error),
    /// The test could not go on (a wait timed out, an unknown operation…).
    Runner(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Pool(error) => write!(f, "{} ({error})", error_type(error)),
            Failure::Runner(why) => f.write_str(why),
        }
    }
}

struct Thread {
    operations: mpsc::UnboundedSender<Value>,
    handle: JoinHandle<Result<(), Failure>>,
}

/// Runs one test against a pool of `establisher`'s connections to `address`; `bind`
/// sees the test's context once the pool exists.
async fn run_test<E: Establish>(
    test: &JsonTest,
    address: ServerAddress,
    options: PoolOptions,
    establisher: E,
    bind: impl FnOnce(&Arc<Context<E>>),
) -> Result<(), String> {
    let events = Arc::new(watch::Sender::new(Vec::new()));
    let sink = events.clone();
    let runtime = anymongo_native::runtime();
    let pool = ConnectionPool::new(
        address,
        options,
        establisher,
        runtime.clock,
        runtime.spawner,
        Some(EventHandler::callback(move |event: CmapEvent| {
            sink.send_modify(|events| events.push(event));
        })),
    )
    .map_err(|e| format!("cannot create the pool: {e}"))?;
    let context = Arc::new(Context {
        pool,
        events,
        labelled: Mutex::new(HashMap::new()),
        unlabelled: Mutex::new(Vec::new()),
    });
    bind(&context);

    let operations = test
        .get("operations")
        .and_then(Value::as_array)
        .ok_or("the test has no 'operations'")?;
    let mut threads = HashMap::new();
    let main_error = tokio::time::timeout(TEST_TIMEOUT, async {
        for operation in operations {
            run_main_operation(&context, &mut threads, operation).await?;
        }
        Ok(())
    })
    .await
    .unwrap_or_else(|_| {
        Err(Failure::Runner(format!(
            "the operations did not finish within {TEST_TIMEOUT:?}"
        )))
    })
    .err();
    let actual_events = context.events.borrow().clone();

    // Tear down: threads still blocked fail once the pool closes.
    context.pool.close();
    for (_, thread) in threads.drain() {
        thread.handle.abort();
    }
    lock(&context.labelled).clear();
    lock(&context.unlabelled).clear();

    check_error(test.get("error"), main_error)?;
    check_events(test, &actual_events)
}

async fn run_main_operation<E: Establish>(
    context: &Arc<Context<E>>,
    threads: &mut HashMap<String, Thread>,
    operation: &Value,
) -> Result<(), Failure> {
    let name = operation.get("name").and_then(Value::as_str).unwrap_or("");
    if let Some(thread) = operation.get("thread").and_then(Value::as_str) {
        let thread = threads
            .get(thread)
            .ok_or_else(|| Failure::Runner(format!("no thread {thread:?} was started")))?;
        // A thread that stopped at an error takes no more operations.
        let _ = thread.operations.send(operation.clone());
        return Ok(());
    }
    match name {
        "start" => {
            let target = string_field(operation, "target")?;
            let (operations, mut receiver) = mpsc::unbounded_channel::<Value>();
            let context = context.clone();
            let handle = tokio::spawn(async move {
                while let Some(operation) = receiver.recv().await {
                    run_operation(&context, &operation).await?;
                }
                Ok(())
            });
            threads.insert(target.to_owned(), Thread { operations, handle });
            Ok(())
        }
        "waitForThread" => {
            let target = string_field(operation, "target")?;
            let Thread { operations, handle } = threads
                .remove(target)
                .ok_or_else(|| Failure::Runner(format!("no thread {target:?} was started")))?;
            drop(operations);
            match tokio::time::timeout(DEFAULT_WAIT, handle).await {
                Ok(Ok(result)) => result,
                Ok(Err(join_error)) => Err(Failure::Runner(format!(
                    "thread {target:?} panicked: {join_error}"
                ))),
                Err(_) => Err(Failure::Runner(format!(
                    "thread {target:?} did not finish within {DEFAULT_WAIT:?}"
                ))),
            }
        }
        _ => run_operation(context, operation).await,
    }
}

/// Runs an operation of the pool itself, or a wait, on the calling thread.
async fn run_operation<E: Establish>(
    context: &Context<E>,
    operation: &Value,
) -> Result<(), Failure> {
    let name = operation.get("name").and_then(Value::as_str).unwrap_or("");
    match name {
        "wait" => {
            let ms = operation.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        "waitForEvent" => {
            let event = string_field(operation, "event")?;
            let count = operation.get("count").and_then(Value::as_u64).unwrap_or(1) as usize;
            let timeout = operation
                .get("timeout")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_WAIT, Duration::from_millis);
            let seen =
                |events: &Vec<CmapEvent>| events.iter().filter(|e| event_type(e) == event).count();
            let mut events = context.events.subscribe();
            let waited = tokio::time::timeout(timeout, events.wait_for(|e| seen(e) >= count));
            if !matches!(waited.await, Ok(Ok(_))) {
                return Err(Failure::Runner(format!(
                    "waited {timeout:?} for {count} {event} events, saw {}",
                    seen(&context.events.borrow())
                )));
            }
        }
        "checkOut" => {
            let connection = context.pool.check_out(None).await.map_err(Failure::Pool)?;
            match operation.get("label").and_then(Value::as_str) {
                Some(label) => {
                    lock(&context.labelled).insert(label.to_owned(), connection);
                }
                None => lock(&context.unlabelled).push(connection),
            }
        }
        "checkIn" => {
            let label = string_field(operation, "connection")?;
            let connection = lock(&context.labelled)
                .remove(label)
                .ok_or_else(|| Failure::Runner(format!("no connection labelled {label:?}")))?;
            context.pool.check_in(connection).map_err(Failure::Pool)?;
        }
        "clear" => {
            let interrupt = operation
                .get("interruptInUseConnections")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            context.pool.clear(None, interrupt);
        }
        "close" => context.pool.close(),
        "ready" => context.pool.ready(),
        "start" | "waitForThread" => {
            return Err(Failure::Runner(format!(
                "{name} must run on the main thread"
            )))
        }
        other => return Err(Failure::Runner(format!("unknown operation {other:?}"))),
    }
    Ok(())
}

fn string_field<'a>(operation: &'a Value, field: &str) -> Result<&'a str, Failure> {
    operation
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::Runner(format!("operation {operation} has no {field:?}")))
}

/// What a test's `poolOptions` ask for.
struct TestPoolOptions {
    pool: PoolOptions,
    /// The appName of the connections' handshake (which the fail point looks for).
    app_name: Option<String>,
}

/// The options of `poolOptions`.
fn pool_options(json: Option<&Value>) -> Result<TestPoolOptions, String> {
    let mut options = TestPoolOptions {
        pool: PoolOptions::default(),
        app_name: None,
    };
    let Some(json) = json else {
        return Ok(options);
    };
    let json = json.as_object().ok_or("poolOptions is not an object")?;
    for (name, value) in json {
        if name == "appName" {
            let app_name = value
                .as_str()
                .ok_or_else(|| format!("poolOptions.appName is not a string: {value}"))?;
            options.app_name = Some(app_name.to_owned());
            continue;
        }
        let number = value
            .as_i64()
            .ok_or_else(|| format!("poolOptions.{name} is not an integer: {value}"))?;
        let count = || u32::try_from(number).map_err(|_| format!("bad {name}: {number}"));
        let millis = || -> Result<Option<Duration>, String> {
            let ms = u64::try_from(number).map_err(|_| format!("bad {name}: {number}"))?;
            Ok((ms > 0).then(|| Duration::from_millis(ms)))
        };
        let pool = &mut options.pool;
        match name.as_str() {
            "maxPoolSize" => pool.max_pool_size = count()?,
            "minPoolSize" => pool.min_pool_size = count()?,
            "maxConnecting" => pool.max_connecting = count()?,
            "maxIdleTimeMS" => pool.max_idle_time = millis()?,
            "waitQueueTimeoutMS" => pool.wait_queue_timeout = millis()?,
            "backgroundThreadIntervalMS" => {
                pool.maintenance_interval = match number {
                    // "Never begin a Run": none within a test, then.
                    ..0 => Duration::from_secs(3600),
                    0 => return Err("backgroundThreadIntervalMS cannot be 0".into()),
                    ms => Duration::from_millis(ms as u64),
                }
            }
            other => return Err(format!("unsupported pool option {other:?}")),
        }
    }
    Ok(options)
}

/// The spec's name of the type of an error of the pool.
fn error_type(error: &Error) -> &'static str {
    match &*error.kind {
        ErrorKind::WaitQueueTimeout { .. } => "WaitQueueTimeoutError",
        ErrorKind::PoolClosed { .. } => "PoolClosedError",
        ErrorKind::ConnectionPoolCleared { .. } => "PoolClearedError",
        _ => "an error outside the pool's",
    }
}

fn check_error(expected: Option<&Value>, actual: Option<Failure>) -> Result<(), String> {
    match (expected, actual) {
        (None, None) => Ok(()),
        (None, Some(failure)) => Err(format!("unexpected error: {failure}")),
        (Some(expected), None) => Err(format!("expected the error {expected}, got none")),
        (Some(expected), Some(Failure::Runner(why))) => {
            Err(format!("expected the error {expected}, but {why}"))
        }
        (Some(expected), Some(Failure::Pool(error))) => {
            let wanted = expected.get("type").and_then(Value::as_str);
            match wanted {
                Some(wanted) if wanted != error_type(&error) => Err(format!(
                    "expected a {wanted}, got {}: {error}",
                    error_type(&error)
                )),
                _ => Ok(()),
            }
        }
    }
}

fn check_events(test: &Map<String, Value>, actual: &[CmapEvent]) -> Result<(), String> {
    let ignored: Vec<&str> = test
        .get("ignore")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let actual: Vec<Value> = actual
        .iter()
        .filter(|event| !ignored.contains(&event_type(event)))
        .map(event_json)
        .collect();
    let expected = test
        .get("events")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, expected) in expected.iter().enumerate() {
        let Some(event) = actual.get(index) else {
            return Err(format!(
                "event {index}: expected {expected}, but only {} events came: {}",
                actual.len(),
                Value::from(actual.clone())
            ));
        };
        if let Err(why) = matches(expected, Some(event), "") {
            return Err(format!(
                "event {index}: expected {expected}, got {event} ({why}); all events: {}",
                Value::from(actual.clone())
            ));
        }
    }
    Ok(())
}

/// The spec's MATCH: `actual` has everything `expected` has, `42` and `"42"` standing
/// for any value.
fn matches(expected: &Value, actual: Option<&Value>, path: &str) -> Result<(), String> {
    let actual = actual.filter(|actual| !actual.is_null());
    if expected == &json!(42) || expected == &json!("42") {
        return actual.map(drop).ok_or_else(|| format!("{path} is missing"));
    }
    let Some(actual) = actual else {
        return if expected.is_null() {
            Ok(())
        } else {
            Err(format!("{path} is missing"))
        };
    };
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            for (key, value) in expected {
                matches(value, actual.get(key), &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(expected), Value::Array(actual)) => {
            for (index, value) in expected.iter().enumerate() {
                matches(value, actual.get(index), &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        (Value::Number(expected), Value::Number(actual))
            if expected.as_f64() == actual.as_f64() =>
        {
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path} is {actual}, not {expected}")),
    }
}

/// The test format's name of an event's type.
fn event_type(event: &CmapEvent) -> &'static str {
    match event {
        CmapEvent::PoolCreated(_) => "ConnectionPoolCreated",
        CmapEvent::PoolReady(_) => "ConnectionPoolReady",
        CmapEvent::PoolCleared(_) => "ConnectionPoolCleared",
        CmapEvent::PoolClosed(_) => "ConnectionPoolClosed",
        CmapEvent::ConnectionCreated(_) => "ConnectionCreated",
        CmapEvent::ConnectionReady(_) => "ConnectionReady",
        CmapEvent::ConnectionClosed(_) => "ConnectionClosed",
        CmapEvent::ConnectionCheckoutStarted(_) => "ConnectionCheckOutStarted",
        CmapEvent::ConnectionCheckoutFailed(_) => "ConnectionCheckOutFailed",
        CmapEvent::ConnectionCheckedOut(_) => "ConnectionCheckedOut",
        CmapEvent::ConnectionCheckedIn(_) => "ConnectionCheckedIn",
        // The enum is non-exhaustive: an event the runner does not know matches none.
        _ => "Unknown",
    }
}

/// An event as the test format spells it.
fn event_json(event: &CmapEvent) -> Value {
    let millis = |duration: &Duration| json!(duration.as_secs_f64() * 1000.0);
    let mut fields = match event {
        CmapEvent::PoolCreated(PoolCreatedEvent {
            options: Some(options),
            ..
        }) => json!({
            "options": {
                "maxPoolSize": options.max_pool_size,
                "minPoolSize": options.min_pool_size,
                "maxConnecting": options.max_connecting,
                "maxIdleTimeMS": options.max_idle_time.map_or(0, |d| d.as_millis() as u64),
                "waitQueueTimeoutMS":
                    options.wait_queue_timeout.map_or(0, |d| d.as_millis() as u64),
            }
        }),
        CmapEvent::PoolCleared(PoolClearedEvent {
            service_id,
            interrupt_in_use_connections,
            ..
        }) => json!({
            "serviceId": service_id.map(|id| id.to_hex()),
            "interruptInUseConnections": interrupt_in_use_connections,
        }),
        CmapEvent::ConnectionReady(ConnectionReadyEvent { duration, .. })
        | CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent { duration, .. }) => {
            json!({ "duration": millis(duration) })
        }
        CmapEvent::ConnectionClosed(ConnectionClosedEvent { reason, .. }) => {
            json!({ "reason": reason.as_str() })
        }
        CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
            reason,
            duration,
            ..
        }) => json!({ "reason": reason.as_str(), "duration": millis(duration) }),
        _ => json!({}),
    };
    let object = fields.as_object_mut().expect("built as an object");
    object.insert("type".into(), event_type(event).into());
    object.insert("address".into(), event.address().to_string().into());
    if let Some(id) = event.connection_id() {
        object.insert("connectionId".into(), id.into());
    }
    fields
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(events: Value) -> JsonTest {
        match json!({ "version": 1, "events": events }) {
            Value::Object(test) => test,
            _ => unreachable!(),
        }
    }

    #[test]
    fn files_closing_before_clearing_are_outdated() {
        let closed = json!({ "type": "ConnectionClosed", "reason": "error" });
        let cleared = json!({ "type": "ConnectionPoolCleared" });
        let created = json!({ "type": "ConnectionCreated" });
        let old = file(json!([created, closed, cleared]));
        assert!(expects_closed_before_cleared(&old));
        let current = file(json!([created, cleared, closed]));
        assert!(!expects_closed_before_cleared(&current));
        let stale = json!({ "type": "ConnectionClosed", "reason": "stale" });
        assert!(!expects_closed_before_cleared(&file(json!([
            stale, cleared
        ]))));
        assert!(!expects_closed_before_cleared(&file(json!([closed]))));
    }
}
