//! The specification-test registry and runner.
//!
//! The JSON tests of the MongoDB specifications are read from a corpus folder laid out
//! like pymongo's `test/` folder (one sub-folder per suite): `$ANYMONGO_SPEC_DIR`, else
//! the copy that `tests/setup.sh corpus` caches (see [`corpus_dir`]). [`SUITES`] lists
//! the suites anymongo runs, each with its runner.

use std::path::{Path, PathBuf};

use crate::setup;

pub mod auth;
pub mod bson_binary_vector;
pub mod bson_corpus;
pub mod cmap;
pub mod connection_string;
pub mod max_staleness;
pub mod read_write_concern;
pub mod sdam;
pub mod server_selection;
pub mod srv_seedlist;
pub mod uri_options;

/// The pymongo release whose source distribution provides the default corpus.
pub const PYMONGO_VERSION: &str = "4.20.0";

/// A suite of specification tests.
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    /// The suite's folder in the corpus (pymongo's `test/` folder), followed by
    /// ` (variant)` for another run of the same folder, e.g. `transactions (sharded)`.
    pub name: &'static str,
    /// Runs the suite whose folder is given.
    pub run: fn(&Path) -> SuiteOutcome,
}

/// The result of running one suite.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuiteOutcome {
    /// How many tests passed.
    pub passed: usize,
    /// The tests that failed: (file relative to the suite folder, why).
    pub failed: Vec<(String, String)>,
    /// The tests that were not run: (file relative to the suite folder, why).
    pub skipped: Vec<(String, String)>,
}

/// Every suite anymongo runs, in the order they are reported.
pub static SUITES: &[Suite] = &[
    Suite {
        name: "discovery_and_monitoring",
        run: sdam::run,
    },
    Suite {
        name: "discovery_and_monitoring/unified",
        run: crate::unified::run_on_every_topology,
    },
    Suite {
        name: "sdam_monitoring",
        run: sdam::run_monitoring,
    },
    Suite {
        name: "server_selection",
        run: server_selection::run,
    },
    Suite {
        name: "max_staleness",
        run: max_staleness::run,
    },
    Suite {
        name: "connection_monitoring",
        run: cmap::run,
    },
    Suite {
        name: "load_balancer",
        run: crate::unified::run_load_balanced,
    },
    Suite {
        name: "uri_options",
        run: uri_options::run,
    },
    Suite {
        name: "uri_options (anymongo's tests)",
        run: |_| uri_options::run(&own_tests("uri_options")),
    },
    Suite {
        name: "connection_string",
        run: connection_string::run,
    },
    Suite {
        name: "auth",
        run: auth::run,
    },
    Suite {
        name: "srv_seedlist",
        run: srv_seedlist::run,
    },
    unified("crud"),
    Suite {
        name: "crud (anymongo's tests)",
        run: |_| crate::unified::run(&own_tests("crud")),
    },
    unified("retryable_reads"),
    unified("change_streams"),
    unified("retryable_writes"),
    unified("sessions"),
    Suite {
        name: "sessions (anymongo's tests)",
        run: |_| crate::unified::run(&own_tests("sessions")),
    },
    unified("transactions"),
    Suite {
        name: "transactions (sharded)",
        run: crate::unified::run_sharded,
    },
    unified("transactions-convenient-api"),
    Suite {
        name: "transactions-convenient-api (sharded)",
        run: crate::unified::run_sharded,
    },
    unified("command_monitoring"),
    Suite {
        name: "command_logging",
        run: crate::unified::run_on_every_topology,
    },
    Suite {
        name: "connection_logging",
        run: crate::unified::run_on_every_topology,
    },
    Suite {
        name: "server_selection_logging",
        run: crate::unified::run_on_every_topology,
    },
    unified("run_command"),
    unified("versioned-api"),
    unified("gridfs"),
    unified("csot"),
    unified("client-backpressure"),
    unified("unified-test-format/valid-pass"),
    Suite {
        name: "bson_corpus",
        run: bson_corpus::run,
    },
    Suite {
        name: "bson_binary_vector",
        run: bson_binary_vector::run,
    },
    Suite {
        name: "read_write_concern",
        run: read_write_concern::run,
    },
    unified("collection_management"),
    unified("index_management"),
    unified("causal_consistency"),
    unified("handshake/unified"),
    unified("open_telemetry"),
    Suite {
        name: "unified-test-format/valid-fail",
        run: crate::unified::run_expecting_failure,
    },
    Suite {
        name: "unified-test-format/invalid",
        run: crate::unified::run_invalid,
    },
];

/// The corpus folders with tests that anymongo does not run, each with its reason;
/// every other test file of the corpus is in a suite of [`SUITES`] (checked by a test
/// of this module).
pub static NOT_RUN: &[(&str, &str)] = &[
    (
        "client-side-encryption",
        "the driver has no client-side field level or queryable encryption (it needs \
         libmongocrypt and mongocryptd or crypt_shared, native libraries no wasm target has)",
    ),
    (
        "data_lake",
        "written for Atlas Data Federation (a `mongohoused` deployment), which no test \
         server here plays",
    ),
    (
        "lambda",
        "not a test suite: the sample event of the AWS Lambda function the spec deploys \
         to measure a driver inside Lambda",
    ),
];

/// A suite of unified-format files, run by [`crate::unified`] against the shared
/// test server; each test counts once.
const fn unified(name: &'static str) -> Suite {
    Suite {
        name,
        run: crate::unified::run,
    }
}

/// The folder `folder` of anymongo's own unified tests (`tests/data/test/`, laid out
/// like the corpus), for APIs whose upstream tests the corpus lacks (`rawData`,
/// `getSnapshotTime`, the `waitQueueSize` and `waitQueueMultiple` URI options, schema
/// 1.27's invalid tracing shapes): run beside the corpus folder of the same name, and
/// skipped by the same known gaps.
pub fn own_tests(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/test")
        .join(folder)
}

/// The spec tests the repository carries (`tests/data/specs`), copied unchanged from
/// the specifications repository where pymongo's corpus lacks them (each folder's
/// README names its source).
pub fn vendored_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/specs"))
}

/// The corpus folder: `$ANYMONGO_SPEC_DIR` if set, else the cached copy of pymongo's
/// `test/` folder, downloaded first (`tests/setup.sh corpus`) if missing.
pub fn corpus_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("ANYMONGO_SPEC_DIR").filter(|dir| !dir.is_empty()) {
        return Ok(dir.into());
    }
    let dir = setup::cache_dir()
        .join("spec")
        .join(format!("pymongo-{PYMONGO_VERSION}"))
        .join("test");
    if !dir.is_dir() {
        setup::run("corpus")?;
    }
    Ok(dir)
}

/// The folder of the current versions of spec test files that the runners read in
/// place of pymongo's copies, where those are patched or older than the spec text the
/// driver follows (`tests/data/specs/current`, whose README says more).
pub fn current_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/specs/current"))
}

/// The corpus paths (`suite folder/file`) of the files [`current_dir`] has a current
/// version of: its table `files.json`, which the npm package's runner reads too.
fn current_files() -> &'static [String] {
    static FILES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let path = current_dir().join("files.json");
        let read = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                serde_json::from_str::<Vec<serde_json::Value>>(&text).map_err(|e| e.to_string())
            });
        let entries = read.unwrap_or_else(|why| panic!("cannot read {}: {why}", path.display()));
        entries
            .iter()
            .map(
                |entry| match entry.get("corpus").and_then(serde_json::Value::as_str) {
                    Some(corpus) => corpus.to_owned(),
                    None => panic!("an entry of {} has no corpus path", path.display()),
                },
            )
            .collect()
    })
}

/// The file to read for the corpus file `path`: the current version in
/// [`current_dir`] when the table lists a corpus path `path` ends with, else `path`.
pub fn current_version(path: &Path) -> PathBuf {
    match current_files().iter().find(|corpus| path.ends_with(corpus)) {
        Some(corpus) => current_dir().join(corpus),
        None => path.to_owned(),
    }
}

impl Suite {
    /// The suite's folder in the corpus: its name without a ` (variant)`.
    pub fn folder(&self) -> &'static str {
        self.name.split(" (").next().unwrap_or(self.name)
    }

    /// The suite's folder: under `corpus`, or, for a suite the corpus lacks, under
    /// the repository's copy of newer spec tests ([`vendored_dir`]).
    pub fn dir(&self, corpus: &Path) -> PathBuf {
        let dir = corpus.join(self.folder());
        let vendored = vendored_dir().join(self.folder());
        match !dir.is_dir() && vendored.is_dir() {
            true => vendored,
            false => dir,
        }
    }

    /// Runs the suite from its folder ([`Suite::dir`]).
    pub fn run(&self, corpus: &Path) -> Result<SuiteOutcome, String> {
        let dir = self.dir(corpus);
        if !dir.is_dir() {
            return Err(format!("suite folder {} does not exist", dir.display()));
        }
        Ok((self.run)(&dir))
    }
}

/// The JSON files under `dir` (recursively), relative to it with `/` separators, sorted.
pub fn json_files(dir: &Path) -> Result<Vec<String>, String> {
    fn walk(dir: &Path, prefix: &str, files: &mut Vec<String>) -> Result<(), String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &format!("{name}/"), files)?;
            } else if name.ends_with(".json") {
                files.push(name);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    files.sort();
    Ok(files)
}

/// One test of a JSON spec file: an object of the file's `tests` array.
pub type JsonTest = serde_json::Map<String, serde_json::Value>;

/// Runs each JSON file under `dir` that `include` accepts as one test (the formats
/// whose file is the test), read in its [`current_version`]: a file for which `skip`
/// gives a reason (it sees the file's content) is set aside, every other one goes to
/// `run_file`.
pub fn run_json_files(
    dir: &Path,
    include: impl Fn(&str) -> bool,
    skip: impl Fn(&JsonTest) -> Option<&'static str>,
    mut run_file: impl FnMut(&str, &JsonTest) -> Result<(), String>,
) -> SuiteOutcome {
    let mut outcome = SuiteOutcome::default();
    let files = match json_files(dir) {
        Ok(files) => files,
        Err(why) => {
            outcome.failed.push((String::new(), why));
            return outcome;
        }
    };
    for file in files.into_iter().filter(|file| include(file)) {
        let test = match read_json_object(&current_version(&dir.join(&file))) {
            Ok(test) => test,
            Err(why) => {
                outcome.failed.push((file, why));
                continue;
            }
        };
        if let Some(reason) = skip(&test) {
            outcome.skipped.push((file, reason.to_owned()));
            continue;
        }
        match run_file(&file, &test) {
            Ok(()) => outcome.passed += 1,
            Err(why) => outcome.failed.push((file, why)),
        }
    }
    outcome
}

/// A JSON file whose top level is an object.
pub fn read_json_object(path: &Path) -> Result<JsonTest, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(serde_json::Value::Object(test)) => Ok(test),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!("{} is not JSON: {e}", path.display())),
    }
}

/// Runs `run_test` on each test of each JSON file under `dir` (the files' `tests`
/// arrays, which each file must have), counting a test per outcome; a file for which
/// `skip` gives a reason is skipped whole, a test for which `skip_test` gives one is
/// skipped alone. A test is reported by its description.
pub fn run_json_tests(
    dir: &Path,
    skip: impl Fn(&str) -> Option<&'static str>,
    skip_test: impl Fn(&JsonTest) -> Option<&'static str>,
    run_test: impl Fn(&JsonTest) -> Result<(), String>,
) -> SuiteOutcome {
    run_cases(
        dir,
        skip,
        Arrays::Tests,
        |_, test| skip_test(test).map(str::to_owned),
        |_, _, test| run_test(test),
    )
}

/// Runs `run_case` on each case of the arrays named in `arrays` of each JSON file under
/// `dir` (the formats whose cases sit in several arrays, as the BSON corpus's `valid`,
/// `decodeErrors` and `parseErrors`; an array a file lacks has no cases), counting a
/// test per case. `run_case` sees the file's content, the array's name and the case; a
/// case for which `skip_case` (given the file's name and the case) has a reason is set
/// aside. A case is reported as `array: description`.
pub fn run_json_cases(
    dir: &Path,
    arrays: &[&str],
    skip_case: impl Fn(&str, &JsonTest) -> Option<String>,
    run_case: impl Fn(&JsonTest, &str, &JsonTest) -> Result<(), String>,
) -> SuiteOutcome {
    run_cases(dir, |_| None, Arrays::Named(arrays), skip_case, run_case)
}

/// Where the cases of a file are, for [`run_cases`].
enum Arrays<'a> {
    /// In its `tests` array, which it must have; a case is labelled by its description.
    Tests,
    /// In those of these arrays it has; a case is labelled `array: description`.
    Named(&'a [&'a str]),
}

/// What [`run_json_tests`] and [`run_json_cases`] share: files skipped whole by
/// `skip_file`, cases by `skip_case`, the rest run by `run_case` (given the file's
/// content, the array's name and the case), a test per case; a file that cannot be
/// read, or whose arrays are not arrays of objects, fails.
fn run_cases(
    dir: &Path,
    skip_file: impl Fn(&str) -> Option<&'static str>,
    arrays: Arrays,
    skip_case: impl Fn(&str, &JsonTest) -> Option<String>,
    run_case: impl Fn(&JsonTest, &str, &JsonTest) -> Result<(), String>,
) -> SuiteOutcome {
    let mut outcome = SuiteOutcome::default();
    let (names, labelled): (&[&str], bool) = match arrays {
        Arrays::Tests => (&["tests"], false),
        Arrays::Named(names) => (names, true),
    };
    let mut per_file = run_json_files(
        dir,
        |_| true,
        |_| None,
        |file, json| {
            if let Some(reason) = skip_file(file) {
                outcome.skipped.push((file.to_owned(), reason.to_owned()));
                return Ok(());
            }
            for &array in names {
                let cases = match json.get(array) {
                    None if labelled => continue,
                    None => return Err(format!("the file has no '{array}' array")),
                    Some(serde_json::Value::Array(cases)) => cases,
                    Some(_) => return Err(format!("'{array}' is not an array")),
                };
                for case in cases {
                    let case = case
                        .as_object()
                        .ok_or_else(|| format!("a case of '{array}' is not an object"))?;
                    let description = case
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("(no description)");
                    let label = match labelled {
                        true => format!("{array}: {description}"),
                        false => description.to_owned(),
                    };
                    if let Some(reason) = skip_case(file, case) {
                        outcome
                            .skipped
                            .push((file.to_owned(), format!("{label}: {reason}")));
                        continue;
                    }
                    match run_case(json, array, case) {
                        Ok(()) => outcome.passed += 1,
                        Err(why) => outcome
                            .failed
                            .push((file.to_owned(), format!("{label}: {why}"))),
                    }
                }
            }
            Ok(())
        },
    );
    // Files count through their cases; what remains are files that could not be read.
    per_file.passed = 0;
    outcome.failed.append(&mut per_file.failed);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn corpus() -> tempfile::TempDir {
        let corpus = tempfile::tempdir().unwrap();
        let suite = corpus.path().join("crud");
        fs::create_dir_all(suite.join("unified/deeper")).unwrap();
        for file in [
            "b.json",
            "a.json",
            "README.md",
            "unified/c.json",
            "unified/deeper/d.json",
        ] {
            fs::write(suite.join(file), "{}").unwrap();
        }
        corpus
    }

    /// Every JSON file of the corpus is in a suite's folder or in a folder named in
    /// [`NOT_RUN`], so no suite of the corpus goes unrun without a reason.
    #[test]
    fn every_test_file_of_the_corpus_is_run_or_named_with_its_reason() {
        let corpus = corpus_dir().unwrap();
        let folders: Vec<&str> = SUITES
            .iter()
            .map(Suite::folder)
            .chain(NOT_RUN.iter().map(|(folder, _)| *folder))
            .collect();
        let unclaimed: Vec<String> = json_files(&corpus)
            .unwrap()
            .into_iter()
            .filter(|file| {
                !folders
                    .iter()
                    .any(|folder| file.starts_with(&format!("{folder}/")))
            })
            .collect();
        assert!(unclaimed.is_empty(), "{unclaimed:#?}");
        for (folder, _) in NOT_RUN {
            assert!(
                corpus.join(folder).is_dir(),
                "{folder} is not in the corpus"
            );
        }
    }

    #[test]
    fn json_files_are_found_recursively_and_sorted() {
        let corpus = corpus();
        let files = json_files(&corpus.path().join("crud")).unwrap();
        assert_eq!(
            files,
            [
                "a.json",
                "b.json",
                "unified/c.json",
                "unified/deeper/d.json"
            ]
        );
    }

    #[test]
    fn a_runner_gets_the_suite_folder() {
        fn count(dir: &Path) -> SuiteOutcome {
            let files = json_files(dir).unwrap();
            SuiteOutcome {
                passed: files.len() - 1,
                failed: vec![(files[0].clone(), "wrong".to_owned())],
                skipped: Vec::new(),
            }
        }
        let corpus = corpus();
        let suite = Suite {
            name: "crud",
            run: count,
        };
        let outcome = suite.run(corpus.path()).unwrap();
        assert_eq!(outcome.passed, 3);
        assert_eq!(outcome.failed, [("a.json".to_owned(), "wrong".to_owned())]);
    }

    #[test]
    fn a_missing_suite_folder_is_an_error() {
        let corpus = corpus();
        let err = unified("sessions").run(corpus.path()).unwrap_err();
        assert!(err.contains("sessions"), "{err}");
    }

    #[test]
    fn a_variant_runs_the_folder_of_its_suite() {
        let corpus = corpus();
        let suite = Suite {
            name: "crud (elsewhere)",
            run: |dir| SuiteOutcome {
                passed: json_files(dir).unwrap().len(),
                ..SuiteOutcome::default()
            },
        };
        assert_eq!(suite.folder(), "crud");
        assert_eq!(suite.run(corpus.path()).unwrap().passed, 4);
        assert_eq!(unified("crud").folder(), "crud");
    }

    /// Each file of the table is kept, and read in place of the corpus's copy; other
    /// files are read from the corpus.
    #[test]
    fn the_current_versions_replace_the_corpus_copies() {
        let corpus = Path::new("/somewhere/test");
        assert!(!current_files().is_empty());
        for file in current_files() {
            let current = current_dir().join(file);
            assert!(current.is_file(), "{} is missing", current.display());
            assert_eq!(current_version(&corpus.join(file)), current);
        }
        let other = corpus.join("load_balancer/transactions.json");
        assert_eq!(current_version(&other), other);
    }

    #[test]
    fn suite_names_are_unique() {
        let mut names: Vec<_> = SUITES.iter().map(|suite| suite.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SUITES.len());
    }
}
