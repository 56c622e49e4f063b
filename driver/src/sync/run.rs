//! How the blocking API runs the async one.

use std::future::Future;

use crate::error::{Error, ErrorKind, Result};

/// Runs `future` to completion on the calling thread, in the context of the
/// process-wide tokio runtime of `anymongo-native` (whose workers drive the sockets and
/// timers, and run the client's monitors between calls). Fails with
/// [`ErrorKind::Runtime`] if that runtime cannot start.
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output> {
    crate::default_runtime::block_on(future).map_err(|error| {
        Error::new(ErrorKind::Runtime {
            message: format!("the blocking API cannot run: {error}"),
        })
    })
}
