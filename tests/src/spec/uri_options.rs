//! The URI Options spec's tests (`uri_options/`). They use the Connection String
//! tests' format (the spec's `tests/README.md`), so they run through the same runner:
//! see [`super::connection_string`]. Every option they exercise, including the optional
//! ones, is implemented, `timeoutMS` included.

use std::path::Path;

use super::{connection_string, SuiteOutcome};

/// Runs the suite in `dir` (the corpus's `uri_options` folder).
pub fn run(dir: &Path) -> SuiteOutcome {
    connection_string::run_uri_tests(dir)
}
