//! The Max Staleness spec's tests (`max_staleness/`, see the spec's
//! `tests/README.md`). Each JSON file is one selection test in the Server Selection
//! tests' format, run by [`super::server_selection`]: the topology is checked every
//! `heartbeatFrequencyMS` (10 s when the file has none), the `suitable_servers` and
//! `in_latency_window` sets are both checked, and `error: true` means selection must
//! fail because of an invalid `maxStalenessSeconds`.

use std::path::Path;

use super::server_selection::run_selection_test;
use super::{run_json_files, SuiteOutcome};

/// Runs the suite in `dir` (the corpus's `max_staleness` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    run_json_files(dir, |_| true, |_| None, |_, test| run_selection_test(test))
}
