//! The Connection Monitoring and Pooling spec's tests (`connection_monitoring/`, see
//! the spec's `tests/cmap-format/README.md`).
//!
//! Each JSON file is one test. The unit-style ones run against an
//! [`anymongo::cmap::ConnectionPool`] whose connections are fakes (the [`Establish`]
//! seam hands out a connection at once), on the native runtime's clock and spawner:
//!
//! - the test's "threads" are tokio tasks fed their operations through a channel, the
//!   main thread runs the rest itself and stops at its first error;
//! - `waitForThread` propagates the thread's first error to the main thread;
//!   `waitForEvent` counts every event (the `ignore` list does not apply), waiting at
//!   most its `timeout` (10 s when it has none);
//! - the expected `error` is matched by its type (PoolClosedError,
//!   PoolClearedError, WaitQueueTimeoutError); the message is not compared, the spec
//!   leaving errors' wording to each driver;
//! - the `events` (all but the `ignore`d types) are matched one by one with the spec's
//!   MATCH rule: expected fields must be present and equal, `42` and `"42"` meaning
//!   "any value", and durations count in milliseconds;
//! - `backgroundThreadIntervalMS` sets the pool's maintenance interval (a negative
//!   value, "never", becomes an hour).
//!
//! The integration-style files (`style: "integration"`, with a `failPoint` that blocks
//! or fails the handshake of a real server) are skipped here; they run once the pool
//! is wired into the driver.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anymongo::cmap::{CheckedOut, CmapEvent, ConnectionPool, Establish, PoolOptions, Poolable};
use anymongo::rt::{boxed, BoxFuture};
use anymongo::{Error, ErrorKind, ServerAddress};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{run_json_files, SuiteOutcome};

/// Why the integration-style files are skipped.
const NEEDS_SERVER: &str =
    "needs configureFailPoint against a live server: integrated in the pool-wiring step";

/// How long `waitForEvent` waits when the test gives no `timeout`, and how long
/// `waitForThread` waits for a thread.
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

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
    run_json_files(
        dir,
        |_| true,
        skip_reason,
        |_, test| runtime.block_on(run_test(test)),
    )
}

/// Why a file is not run here, if it is not.
fn skip_reason(test: &Map<String, Value>) -> Option<&'static str> {
    let integration = test.get("style").and_then(Value::as_str) == Some("integration")
        || test.contains_key("failPoint")
        || test.contains_key("runOn");
    integration.then_some(NEEDS_SERVER)
}

/// Connections that exist only in the pool's books.
struct FakeEstablish;

struct FakeConnection;

impl Poolable for FakeConnection {
    fn is_broken(&self) -> bool {
        false
    }
}

impl Establish for FakeEstablish {
    type Connection = FakeConnection;

    fn establish(&self, _connection_id: u32) -> BoxFuture<'_, anymongo::Result<FakeConnection>> {
        boxed(async {
            // Establishing takes a turn of the scheduler, as real I/O would.
            tokio::task::yield_now().await;
            Ok(FakeConnection)
        })
    }
}

type Connection = CheckedOut<FakeEstablish>;

/// What the threads of one test share.
struct Context {
    pool: ConnectionPool<FakeEstablish>,
    events: Arc<Mutex<Vec<CmapEvent>>>,
    /// Checked-out connections by label.
    labelled: Mutex<HashMap<String, Connection>>,
    /// Checked-out connections without a label: kept until the test ends, since
    /// dropping one would close it.
    unlabelled: Mutex<Vec<Connection>>,
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

async fn run_test(test: &Map<String, Value>) -> Result<(), String> {
    let options = pool_options(test.get("poolOptions"))?;
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let runtime = anymongo_native::runtime();
    let pool = ConnectionPool::new(
        ServerAddress::tcp("localhost", 27017),
        options,
        FakeEstablish,
        runtime.clock,
        runtime.spawner,
        Some(Arc::new(move |event: &CmapEvent| {
            lock(&sink).push(event.clone());
        })),
    )
    .map_err(|e| format!("cannot create the pool: {e}"))?;
    let context = Arc::new(Context {
        pool,
        events,
        labelled: Mutex::new(HashMap::new()),
        unlabelled: Mutex::new(Vec::new()),
    });

    let operations = test
        .get("operations")
        .and_then(Value::as_array)
        .ok_or("the test has no 'operations'")?;
    let mut threads = HashMap::new();
    let mut main_error = None;
    for operation in operations {
        if let Err(failure) = run_main_operation(&context, &mut threads, operation).await {
            main_error = Some(failure);
            break;
        }
    }
    let actual_events = lock(&context.events).clone();

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

async fn run_main_operation(
    context: &Arc<Context>,
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
async fn run_operation(context: &Context, operation: &Value) -> Result<(), Failure> {
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
            let seen = || {
                lock(&context.events)
                    .iter()
                    .filter(|e| event_type(e) == event)
                    .count()
            };
            let waited = tokio::time::timeout(timeout, async {
                while seen() < count {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
            .await;
            if waited.is_err() {
                return Err(Failure::Runner(format!(
                    "waited {timeout:?} for {count} {event} events, saw {}",
                    seen()
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

/// The pool options of `poolOptions`.
fn pool_options(json: Option<&Value>) -> Result<PoolOptions, String> {
    let mut options = PoolOptions::default();
    let Some(json) = json else {
        return Ok(options);
    };
    let json = json.as_object().ok_or("poolOptions is not an object")?;
    for (name, value) in json {
        let number = value
            .as_i64()
            .ok_or_else(|| format!("poolOptions.{name} is not an integer: {value}"))?;
        let count = || u32::try_from(number).map_err(|_| format!("bad {name}: {number}"));
        let millis = || -> Result<Option<Duration>, String> {
            let ms = u64::try_from(number).map_err(|_| format!("bad {name}: {number}"))?;
            Ok((ms > 0).then(|| Duration::from_millis(ms)))
        };
        match name.as_str() {
            "maxPoolSize" => options.max_pool_size = count()?,
            "minPoolSize" => options.min_pool_size = count()?,
            "maxConnecting" => options.max_connecting = count()?,
            "maxIdleTimeMS" => options.max_idle_time = millis()?,
            "waitQueueTimeoutMS" => options.wait_queue_timeout = millis()?,
            "backgroundThreadIntervalMS" => {
                options.maintenance_interval = match number {
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
    match error.kind() {
        ErrorKind::WaitQueueTimeout { .. } => "WaitQueueTimeoutError",
        ErrorKind::PoolClosed { .. } => "PoolClosedError",
        ErrorKind::PoolCleared { .. } => "PoolClearedError",
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
        CmapEvent::PoolCreated { .. } => "ConnectionPoolCreated",
        CmapEvent::PoolReady { .. } => "ConnectionPoolReady",
        CmapEvent::PoolCleared { .. } => "ConnectionPoolCleared",
        CmapEvent::PoolClosed { .. } => "ConnectionPoolClosed",
        CmapEvent::ConnectionCreated { .. } => "ConnectionCreated",
        CmapEvent::ConnectionReady { .. } => "ConnectionReady",
        CmapEvent::ConnectionClosed { .. } => "ConnectionClosed",
        CmapEvent::ConnectionCheckOutStarted { .. } => "ConnectionCheckOutStarted",
        CmapEvent::ConnectionCheckOutFailed { .. } => "ConnectionCheckOutFailed",
        CmapEvent::ConnectionCheckedOut { .. } => "ConnectionCheckedOut",
        CmapEvent::ConnectionCheckedIn { .. } => "ConnectionCheckedIn",
    }
}

/// An event as the test format spells it.
fn event_json(event: &CmapEvent) -> Value {
    let millis = |duration: &Duration| json!(duration.as_secs_f64() * 1000.0);
    let mut fields = match event {
        CmapEvent::PoolCreated { options, .. } => json!({
            "options": {
                "maxPoolSize": options.max_pool_size,
                "minPoolSize": options.min_pool_size,
                "maxConnecting": options.max_connecting,
                "maxIdleTimeMS": options.max_idle_time.map_or(0, |d| d.as_millis() as u64),
                "waitQueueTimeoutMS":
                    options.wait_queue_timeout.map_or(0, |d| d.as_millis() as u64),
            }
        }),
        CmapEvent::PoolCleared {
            service_id,
            interrupt_in_use_connections,
            ..
        } => json!({
            "serviceId": service_id.map(|id| id.to_hex()),
            "interruptInUseConnections": interrupt_in_use_connections,
        }),
        CmapEvent::ConnectionReady { duration, .. }
        | CmapEvent::ConnectionCheckedOut { duration, .. } => {
            json!({ "duration": millis(duration) })
        }
        CmapEvent::ConnectionClosed { reason, .. } => json!({ "reason": reason.as_str() }),
        CmapEvent::ConnectionCheckOutFailed {
            reason, duration, ..
        } => json!({ "reason": reason.as_str(), "duration": millis(duration) }),
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
