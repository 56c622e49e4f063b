//! The spec's micro-benchmarks (BSON, single-document and multi-document tasks), run
//! with both drivers alternately: each round runs one iteration of each driver, the
//! first of the pair alternating between rounds, until the iteration policy is met for
//! both.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::data::DataSets;
use crate::driver::Driver;
use crate::stats::{percentile, Policy, Timings};

/// The most one iteration may take before the benchmark gives up on it.
#[cfg(not(target_os = "wasi"))]
const ITERATION_TIMEOUT: Duration = Duration::from_secs(300);
/// Operations of the tasks whose scale is 10,000.
const SCALE: usize = 10_000;
/// Operations of the large-document tasks.
const LARGE_SCALE: usize = 10;

/// A micro-benchmark of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Flat BSON Encoding.
    FlatEncode,
    /// Flat BSON Decoding.
    FlatDecode,
    /// Deep BSON Encoding.
    DeepEncode,
    /// Deep BSON Decoding.
    DeepDecode,
    /// Full BSON Encoding.
    FullEncode,
    /// Full BSON Decoding.
    FullDecode,
    /// Run command (`{hello: true}`).
    RunCommand,
    /// Find one by ID.
    FindOne,
    /// Small doc insertOne.
    SmallInsertOne,
    /// Large doc insertOne.
    LargeInsertOne,
    /// Find many and empty the cursor.
    FindMany,
    /// Small doc bulk insert (`insertMany`).
    SmallInsertMany,
    /// Large doc bulk insert (`insertMany`).
    LargeInsertMany,
}

impl Task {
    /// The BSON tasks (client side only).
    pub const BSON: [Task; 6] = [
        Task::FlatEncode,
        Task::FlatDecode,
        Task::DeepEncode,
        Task::DeepDecode,
        Task::FullEncode,
        Task::FullDecode,
    ];

    /// The tasks that talk to a server.
    pub const SERVER: [Task; 7] = [
        Task::RunCommand,
        Task::FindOne,
        Task::SmallInsertOne,
        Task::LargeInsertOne,
        Task::FindMany,
        Task::SmallInsertMany,
        Task::LargeInsertMany,
    ];

    /// The spec's name.
    pub fn name(self) -> &'static str {
        match self {
            Task::FlatEncode => "Flat BSON Encoding",
            Task::FlatDecode => "Flat BSON Decoding",
            Task::DeepEncode => "Deep BSON Encoding",
            Task::DeepDecode => "Deep BSON Decoding",
            Task::FullEncode => "Full BSON Encoding",
            Task::FullDecode => "Full BSON Decoding",
            Task::RunCommand => "Run command",
            Task::FindOne => "Find one by ID",
            Task::SmallInsertOne => "Small doc insertOne",
            Task::LargeInsertOne => "Large doc insertOne",
            Task::FindMany => "Find many and empty the cursor",
            Task::SmallInsertMany => "Small doc bulk insert",
            Task::LargeInsertMany => "Large doc bulk insert",
        }
    }

    /// The spec's group.
    pub fn group(self) -> &'static str {
        match self {
            Task::RunCommand | Task::FindOne | Task::SmallInsertOne | Task::LargeInsertOne => {
                "SingleBench"
            }
            Task::FindMany | Task::SmallInsertMany | Task::LargeInsertMany => "MultiBench",
            _ => "BSONBench",
        }
    }

    /// The task's size for the score, in MB, as the spec defines it (the size of the
    /// data set's source file, times the operations).
    pub fn megabytes(self) -> f64 {
        let bytes = match self {
            Task::FlatEncode | Task::FlatDecode => 7_531.0 * SCALE as f64,
            Task::DeepEncode | Task::DeepDecode => 2_284.0 * SCALE as f64,
            Task::FullEncode | Task::FullDecode => 5_734.0 * SCALE as f64,
            Task::RunCommand => 13.0 * SCALE as f64,
            Task::FindOne | Task::FindMany => 1_622.0 * SCALE as f64,
            Task::SmallInsertOne | Task::SmallInsertMany => 275.0 * SCALE as f64,
            Task::LargeInsertOne | Task::LargeInsertMany => 2_731_089.0 * LARGE_SCALE as f64,
        };
        bytes / 1e6
    }
}

/// One driver's data and (for the server tasks) client.
pub struct Bench<D: Driver> {
    driver: Option<Arc<D>>,
    flat: D::Doc,
    deep: D::Doc,
    full: D::Doc,
    flat_bytes: Vec<u8>,
    deep_bytes: Vec<u8>,
    full_bytes: Vec<u8>,
    tweet: D::Doc,
    small: D::Doc,
    large: D::Doc,
    smalls: Vec<D::Doc>,
    larges: Vec<D::Doc>,
}

impl<D: Driver> Bench<D> {
    /// Parses the data sets; connects to `uri` when given.
    pub async fn new(data: &DataSets, uri: Option<&str>) -> Result<Bench<D>, String> {
        let flat = D::parse(&data.flat)?;
        let deep = D::parse(&data.deep)?;
        let full = D::parse(&data.full)?;
        let small = D::parse(&data.small)?;
        let large = D::parse(&data.large)?;
        let driver = match uri {
            Some(uri) => Some(Arc::new(D::connect(uri).await?)),
            None => None,
        };
        Ok(Bench {
            driver,
            flat_bytes: D::encode(&flat)?,
            deep_bytes: D::encode(&deep)?,
            full_bytes: D::encode(&full)?,
            flat,
            deep,
            full,
            tweet: D::parse(&data.tweet)?,
            smalls: vec![small.clone(); SCALE],
            larges: vec![large.clone(); LARGE_SCALE],
            small,
            large,
        })
    }

    /// The client, for the tasks that need a server.
    pub fn driver(&self) -> Result<&Arc<D>, String> {
        self.driver
            .as_ref()
            .ok_or_else(|| "no server for this task".to_string())
    }

    /// Closes the client.
    pub async fn close(self) {
        if let Some(driver) = self.driver.and_then(Arc::into_inner) {
            driver.close().await;
        }
    }

    /// The spec's "setup" of a read task: the data the reads find, written once (by
    /// one driver, read by both). Write tasks start from an empty database.
    pub async fn setup(&self, task: Task) -> Result<(), String> {
        if !Task::SERVER.contains(&task) {
            return Ok(());
        }
        let driver = self.driver()?;
        driver.drop_database().await?;
        match task {
            Task::FindOne => self.insert_tweets_with_ids().await,
            Task::FindMany => {
                driver.reset_collection().await?;
                driver.insert_many(&vec![self.tweet.clone(); SCALE]).await
            }
            _ => Ok(()),
        }
    }

    /// The find-one data: the TWEET document with `_id`s 1 to 10,000.
    pub async fn insert_tweets_with_ids(&self) -> Result<(), String> {
        let driver = self.driver()?;
        driver.reset_collection().await?;
        let tweets: Vec<D::Doc> = (1..=SCALE as i32)
            .map(|id| D::with_id(&self.tweet, id))
            .collect();
        driver.insert_many(&tweets).await
    }

    /// The spec's "before task": the write tasks start from an empty collection.
    async fn before(&self, task: Task) -> Result<(), String> {
        match task {
            Task::SmallInsertOne
            | Task::LargeInsertOne
            | Task::SmallInsertMany
            | Task::LargeInsertMany => self.driver()?.reset_collection().await,
            _ => Ok(()),
        }
    }

    /// The spec's "do task", once.
    async fn run(&self, task: Task) -> Result<(), String> {
        let encode = |doc: &D::Doc| -> Result<(), String> {
            for _ in 0..SCALE {
                black_box(D::encode(black_box(doc))?);
            }
            Ok(())
        };
        let decode = |bytes: &[u8]| -> Result<(), String> {
            for _ in 0..SCALE {
                black_box(D::decode(black_box(bytes))?);
            }
            Ok(())
        };
        match task {
            Task::FlatEncode => encode(&self.flat),
            Task::DeepEncode => encode(&self.deep),
            Task::FullEncode => encode(&self.full),
            Task::FlatDecode => decode(&self.flat_bytes),
            Task::DeepDecode => decode(&self.deep_bytes),
            Task::FullDecode => decode(&self.full_bytes),
            Task::RunCommand => {
                let driver = self.driver()?;
                for _ in 0..SCALE {
                    driver.hello().await?;
                }
                Ok(())
            }
            Task::FindOne => {
                let driver = self.driver()?;
                for id in 1..=SCALE as i32 {
                    driver.find_one_by_id(id).await?;
                }
                Ok(())
            }
            Task::SmallInsertOne => {
                let driver = self.driver()?;
                for _ in 0..SCALE {
                    driver.insert_one(&self.small).await?;
                }
                Ok(())
            }
            Task::LargeInsertOne => {
                let driver = self.driver()?;
                for _ in 0..LARGE_SCALE {
                    driver.insert_one(&self.large).await?;
                }
                Ok(())
            }
            Task::FindMany => {
                let found = self.driver()?.find_all().await?;
                match found == SCALE {
                    true => Ok(()),
                    false => Err(format!("find many read {found} documents, not {SCALE}")),
                }
            }
            Task::SmallInsertMany => self.driver()?.insert_many(&self.smalls).await,
            Task::LargeInsertMany => self.driver()?.insert_many(&self.larges).await,
        }
    }

    /// One iteration: "before task" (untimed), then "do task", timed.
    async fn iteration(&self, task: Task) -> Result<Duration, String> {
        self.before(task).await?;
        let start = Instant::now();
        #[cfg(not(target_os = "wasi"))]
        tokio::time::timeout(ITERATION_TIMEOUT, self.run(task))
            .await
            .map_err(|_| format!("{} took over {ITERATION_TIMEOUT:?}", task.name()))??;
        // Under WASI the parent bounds the whole wasmtime process instead.
        #[cfg(target_os = "wasi")]
        self.run(task).await?;
        Ok(start.elapsed())
    }
}

/// One driver's result on one task.
#[derive(Clone, Debug)]
pub struct Score {
    /// Iterations run.
    pub iterations: usize,
    /// MB/s: the task's size over the median time.
    pub mb_per_s: f64,
    /// The spec's recorded percentiles of the iteration times (10, 25, 50, 75, 90, 95,
    /// 98, 99), in seconds.
    pub percentiles: Vec<(u32, f64)>,
}

impl Score {
    /// The score of `timings` for `task`.
    pub fn of(timings: &Timings, megabytes: f64) -> Score {
        let sorted = timings.sorted();
        Score {
            iterations: timings.len(),
            mb_per_s: timings.score(megabytes).unwrap_or(0.0),
            percentiles: [10, 25, 50, 75, 90, 95, 98, 99]
                .iter()
                .filter_map(|&p| percentile(&sorted, p).map(|t| (p, t.as_secs_f64())))
                .collect(),
        }
    }
}

/// Runs `task` with one driver under `policy` (setup and teardown are the caller's).
pub async fn run_alone<D: Driver>(
    task: Task,
    bench: &Bench<D>,
    policy: Policy,
) -> Result<Score, String> {
    let mut timings = Timings::default();
    while policy.wants_more(timings.len(), timings.spent()) {
        timings.push(bench.iteration(task).await?);
    }
    Ok(Score::of(&timings, task.megabytes()))
}

/// Both drivers' results on one task.
#[derive(Clone, Debug)]
pub struct TaskResult {
    /// The task.
    pub task: Task,
    /// anymongo's score.
    pub anymongo: Score,
    /// The official driver's score.
    pub official: Score,
}

/// The task named `name` (as [`Task::name`]): how the native program names a task to
/// the wasip2 build and to its counts children.
pub fn by_name(name: &str) -> Option<Task> {
    Task::BSON
        .into_iter()
        .chain(Task::SERVER)
        .find(|task| task.name() == name)
}

/// Runs `task` with both drivers, alternately, under `policy`; the data of a read task
/// is written once, by anymongo, and read by both; the database is dropped at the end.
pub async fn run_task<A: Driver, O: Driver>(
    task: Task,
    a: &Bench<A>,
    o: &Bench<O>,
    policy: Policy,
) -> Result<TaskResult, String> {
    a.setup(task).await?;
    let (mut ta, mut to) = (Timings::default(), Timings::default());
    let mut round = 0usize;
    while policy.wants_more(ta.len(), ta.spent()) || policy.wants_more(to.len(), to.spent()) {
        for which in [round % 2, (round + 1) % 2] {
            if which == 0 && policy.wants_more(ta.len(), ta.spent()) {
                ta.push(a.iteration(task).await?);
            } else if which == 1 && policy.wants_more(to.len(), to.spent()) {
                to.push(o.iteration(task).await?);
            }
        }
        round += 1;
    }
    if Task::SERVER.contains(&task) {
        a.driver()?.drop_database().await?;
    }
    Ok(TaskResult {
        task,
        anymongo: Score::of(&ta, task.megabytes()),
        official: Score::of(&to, task.megabytes()),
    })
}
