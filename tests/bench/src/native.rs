//! The native program: runs every section, prints the tables, writes the JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anymongo_tests::canned::CannedServer;
use anymongo_tests::server::{ServerOptions, TestServer, TestUser};

use crate::awake::Awake;
use crate::data::DataSets;
use crate::driver::{Anymongo, Driver, Official};
use crate::report::{ColdStart, Section};
use crate::stats::Policy;
use crate::tasks::{run_task, Bench, Task};
use crate::{cold, counts, data, memory, node_column, parallel, report, wasi_column};

const USAGE: &str = "usage: anymongo-bench [--quick] [--server canned,secantus,uri] [--uri URI] \
[--parallel-seconds S] [--cold-runs N] [--wasi] [--node] [--awake] [--counts] [--only TEXT] \
[--data DIR] [--json PATH]";

/// The rows of the parallel table.
const PARALLEL_TASKS: [usize; 3] = [1, 8, 64];

/// The command line.
struct Settings {
    quick: bool,
    servers: Vec<String>,
    uri: Option<String>,
    parallel: Duration,
    cold_runs: usize,
    wasi: bool,
    node: bool,
    awake: bool,
    counts: bool,
    only: Option<String>,
    data: Option<PathBuf>,
    json: Option<PathBuf>,
}

impl Settings {
    /// Whether `--only` (a piece of the name, any case) selects what is named `name`.
    fn selects(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| name.to_lowercase().contains(only))
    }

    /// The tasks of `tasks` that `--only` selects, in their order.
    fn selected(&self, tasks: impl IntoIterator<Item = Task>) -> Vec<Task> {
        (tasks.into_iter())
            .filter(|task| self.selects(task.name()))
            .collect()
    }

    fn from_args(mut args: impl Iterator<Item = String>) -> Result<Option<Settings>, String> {
        let mut settings = Settings {
            quick: false,
            servers: vec!["canned".into(), "secantus".into()],
            uri: None,
            parallel: Duration::ZERO,
            cold_runs: 0,
            wasi: false,
            node: false,
            awake: false,
            counts: false,
            only: None,
            data: None,
            json: None,
        };
        let (mut parallel, mut cold_runs) = (None, None);
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "-h" | "--help" => return Ok(None),
                "--quick" => settings.quick = true,
                "--wasi" => settings.wasi = true,
                "--node" => settings.node = true,
                "--awake" => settings.awake = true,
                "--counts" => settings.counts = true,
                "--only" => settings.only = Some(value()?.to_lowercase()),
                "--server" => {
                    settings.servers = value()?.split(',').map(str::to_owned).collect();
                }
                "--uri" => settings.uri = Some(value()?),
                "--parallel-seconds" => {
                    let seconds: f64 = value()?.parse().map_err(|e| format!("{arg}: {e}"))?;
                    parallel = Some(
                        Duration::try_from_secs_f64(seconds).map_err(|e| format!("{arg}: {e}"))?,
                    );
                }
                "--cold-runs" => {
                    cold_runs = Some(value()?.parse().map_err(|e| format!("{arg}: {e}"))?);
                }
                "--data" => settings.data = Some(value()?.into()),
                "--json" => settings.json = Some(value()?.into()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        for server in &settings.servers {
            match server.as_str() {
                "canned" | "secantus" => {}
                "uri" if settings.uri.is_some() => {}
                "uri" => return Err("--server uri needs --uri URI".into()),
                other => return Err(format!("unknown server {other}")),
            }
        }
        if settings.uri.is_some() && !settings.servers.iter().any(|s| s == "uri") {
            settings.servers.push("uri".into());
        }
        settings.parallel = parallel.unwrap_or(Duration::from_secs(match settings.quick {
            true => 1,
            false => 5,
        }));
        settings.cold_runs = cold_runs.unwrap_or(match settings.quick {
            true => 3,
            false => 11,
        });
        Ok(Some(settings))
    }
}

/// The native program's entry point.
pub fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("--counts-child") {
        let args: Vec<String> = std::env::args().skip(2).collect();
        return match counts::child(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("counts: {message}");
                ExitCode::FAILURE
            }
        };
    }
    // The children this program runs of itself: each takes a driver's name and a URI.
    type Child = fn(&str, &str) -> Result<(), String>;
    let child: Option<(&str, Child)> = match args.next().as_deref() {
        Some("--cold-start-child") => Some(("cold start", cold::child)),
        Some("--cold-request-child") => Some(("cold request", cold::request_child)),
        Some("--memory-child") => Some(("memory", memory::child)),
        _ => None,
    };
    if let Some((what, run_child)) = child {
        let (driver, uri) = (
            args.next().unwrap_or_default(),
            args.next().unwrap_or_default(),
        );
        return match run_child(&driver, &uri) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("{what}: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let settings = match Settings::from_args(std::env::args().skip(1)) {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("anymongo-bench: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("anymongo-bench: cannot start tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    let awake = match settings.awake {
        true => match Awake::start() {
            Ok(awake) => Some(awake),
            Err(message) => {
                eprintln!("anymongo-bench: --awake: {message}");
                return ExitCode::FAILURE;
            }
        },
        false => None,
    };
    // The tasks run on a runtime worker, as a server's request handlers do, not on the
    // thread that blocks on the runtime (every wake-up of which crosses threads).
    let settings = std::sync::Arc::new(settings);
    let on_worker = runtime.spawn(async move { run(&settings).await });
    let outcome = runtime
        .block_on(on_worker)
        .unwrap_or_else(|e| Err(e.to_string()));
    drop(awake);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("anymongo-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(settings: &Settings) -> Result<(), String> {
    if settings.counts {
        return run_counts(settings).await;
    }
    let policy = match settings.quick {
        true => Policy::QUICK,
        false => Policy::SPEC,
    };
    let rules = match settings.quick {
        true => {
            "--quick: at most 10 iterations or 5 s per task and driver, NOT the spec's \
                 iteration rules (1 to 5 minutes, 100 iterations)"
        }
        false => {
            "the spec's iteration rules: at least 1 minute, at most 100 iterations or 5 minutes"
        }
    };
    println!("anymongo-bench: {rules}");
    if settings.awake {
        println!(
            "anymongo-bench: --awake: idle-class spinners keep the CPUs out of idle, so CPU \
             wake-up latency is not in the results"
        );
    }
    let data = DataSets::load(&data::tarball_dir(settings.data.as_deref())?)?;
    let mut sections = Vec::new();

    let a = Bench::<Anymongo>::new(&data, None).await?;
    let o = Bench::<Official>::new(&data, None).await?;
    let mut bson = Vec::new();
    for task in settings.selected(Task::BSON) {
        eprintln!("running {} ...", task.name());
        bson.push(run_task(task, &a, &o, policy).await?);
    }
    sections.push(Section {
        title: "BSONBench (client side, no server)".into(),
        tasks: bson,
        parallel: Vec::new(),
        wasi: Vec::new(),
        node: Vec::new(),
    });
    println!("\n{}", report::markdown(&sections[0]));

    for server in &settings.servers {
        let section = match server.as_str() {
            "canned" => {
                let tweet = Anymongo::parse(&data.tweet)?;
                let canned = CannedServer::start(&tweet)?;
                let title = "canned-reply server (in-process: the drivers' own cost)";
                run_server(title, &canned.uri(), &data, policy, settings).await?
            }
            "secantus" => {
                // Under the spec's rules the insert tasks write for up to 5 minutes per
                // driver (about 27 MB per large-document iteration); with SecantusDB's
                // default 1 GB cache they failed with WT_CACHE_FULL (2026-11-27).
                let server = TestServer::start(&ServerOptions {
                    cache_size: Some("8G".into()),
                    ..ServerOptions::default()
                })?;
                let uri = format!("{}?directConnection=true", server.uri());
                let title = "SecantusDB (secantusd-py, in memory, loopback)";
                run_server(title, &uri, &data, policy, settings).await?
            }
            _ => {
                let uri = settings.uri.clone().unwrap_or_default();
                run_server(&format!("server at {uri}"), &uri, &data, policy, settings).await?
            }
        };
        println!("{}", report::markdown(&section));
        sections.push(section);
    }

    let canned = settings.servers.iter().any(|s| s == "canned");
    if canned && settings.selects("memory") {
        eprintln!("running the memory children ...");
        let canned = CannedServer::start(&Anymongo::parse(&data.tweet)?)?;
        let uri = canned.uri();
        let (anymongo, official) = tokio::task::spawn_blocking(move || memory::measure_both(&uri))
            .await
            .map_err(|e| e.to_string())??;
        println!("{}", memory::markdown(&anymongo, &official));
    }

    let mut cold = Vec::new();
    let secantus = settings.servers.iter().any(|s| s == "secantus");
    if secantus && settings.cold_runs > 0 && settings.selects("cold start") {
        eprintln!("running cold starts ...");
        cold.push(cold_start(&data, settings.cold_runs).await?);
        println!("{}", report::cold_markdown(&cold));
    }

    if let Some(path) = &settings.json {
        let json = report::json(settings.quick, settings.awake, &sections, &cold);
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("JSON: {}", path.display());
    }
    if settings.quick {
        println!("(--quick: fewer iterations than the spec asks; the ratios are indicative)");
    }
    Ok(())
}

/// `--counts`: the counts per operation of the server tasks, both drivers, against
/// each server (counts.rs), instead of the timed tasks.
async fn run_counts(settings: &Settings) -> Result<(), String> {
    let data_dir = data::tarball_dir(settings.data.as_deref())?;
    let data = DataSets::load(&data_dir)?;
    let tasks = settings.selected(Task::SERVER);
    let mut json = Vec::new();
    for server in &settings.servers {
        // Kept alive while its rows are counted.
        let (title, uri, _canned, _secantus) = match server.as_str() {
            "canned" => {
                let canned = CannedServer::start(&Anymongo::parse(&data.tweet)?)?;
                ("canned-reply server", canned.uri(), Some(canned), None)
            }
            "secantus" => {
                // As for the timed rows: the bulk inserts outgrow the default 1 GB cache
                // (the official driver's large bulk insert failed with an internal error).
                let server = TestServer::start(&ServerOptions {
                    cache_size: Some("8G".into()),
                    ..ServerOptions::default()
                })?;
                let uri = format!("{}?directConnection=true", server.uri());
                ("SecantusDB", uri, None, Some(server))
            }
            _ => {
                let uri = settings.uri.clone().unwrap_or_default();
                ("server at the given URI", uri, None, None)
            }
        };
        let rows = counts::measure(&uri, &data, &data_dir, &tasks, settings.wasi).await?;
        println!("\n{}", counts::markdown(title, &rows));
        json.push(counts::json(title, &rows));
    }
    if let Some(path) = &settings.json {
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("JSON: {}", path.display());
    }
    Ok(())
}

/// The single- and multi-document tasks, then the parallel rows, against `uri`.
async fn run_server(
    title: &str,
    uri: &str,
    data: &DataSets,
    policy: Policy,
    settings: &Settings,
) -> Result<Section, String> {
    let a = Bench::<Anymongo>::new(data, Some(uri)).await?;
    let o = Bench::<Official>::new(data, Some(uri)).await?;
    let server_tasks = settings.selected(Task::SERVER);
    let mut tasks = Vec::new();
    for &task in &server_tasks {
        eprintln!("running {} against {title} ...", task.name());
        tasks.push(run_task(task, &a, &o, policy).await?);
    }
    let mut rows = Vec::new();
    a.insert_tweets_with_ids().await?;
    let parallel_tasks = match settings.selects("parallel") {
        true => &PARALLEL_TASKS[..],
        false => &[],
    };
    for (round, &n) in parallel_tasks.iter().enumerate() {
        eprintln!("running parallel x{n} against {title} ...");
        let (a_driver, o_driver) = (a.driver()?, o.driver()?);
        let (ra, ro) = if round % 2 == 0 {
            let ra = parallel::run(a_driver, n, settings.parallel).await?;
            (ra, parallel::run(o_driver, n, settings.parallel).await?)
        } else {
            let ro = parallel::run(o_driver, n, settings.parallel).await?;
            (parallel::run(a_driver, n, settings.parallel).await?, ro)
        };
        rows.push((n, ra, ro));
    }
    a.driver()?.drop_database().await?;
    o.close().await;
    let wasi = match settings.wasi {
        true => wasi_column::run(uri, &a, &server_tasks, policy).await?,
        false => Vec::new(),
    };
    a.close().await;
    let node = match settings.node {
        true => {
            eprintln!(
                "running the npm package and the official Node.js driver against {title} ..."
            );
            node_column::run(uri, policy, settings.only.as_deref().unwrap_or_default()).await?
        }
        false => Vec::new(),
    };
    Ok(Section {
        title: title.into(),
        tasks,
        parallel: rows,
        wasi,
        node,
    })
}

/// Cold starts against a SecantusDB that requires SCRAM-SHA-256 authentication.
async fn cold_start(data: &DataSets, runs: usize) -> Result<ColdStart, String> {
    let options = ServerOptions {
        auth: true,
        users: vec![TestUser::scram("bench", "bench", &["SCRAM-SHA-256"])],
        ..Default::default()
    };
    let server = TestServer::start(&options)?;
    let uri = format!(
        "mongodb://bench:bench@{}:{}/?directConnection=true",
        server.host, server.port
    );
    let writer = Arc::new(Anymongo::connect(&uri).await?);
    let tweet = Anymongo::with_id(&Anymongo::parse(&data.tweet)?, 1);
    writer.reset_collection().await?;
    writer.insert_one(&tweet).await?;
    let (anymongo_ms, official_ms) = tokio::task::spawn_blocking(move || cold::measure(&uri, runs))
        .await
        .map_err(|e| e.to_string())??;
    writer.drop_database().await?;
    if let Some(writer) = Arc::into_inner(writer) {
        writer.close().await;
    }
    Ok(ColdStart {
        title: "SecantusDB with --auth (SCRAM-SHA-256)".into(),
        anymongo_ms,
        official_ms,
        runs,
    })
}
