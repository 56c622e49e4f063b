//! Which operations are retried, after which errors (Retryable Reads and Retryable
//! Writes specs). Pure rules; the executor (`operation`) applies them.
//!
//! An operation is retried at most once, on a freshly selected server, and only
//! when it is eligible: a read with `retryReads=true`; a write with
//! `retryWrites=true` that touches at most one document per statement, is
//! acknowledged, and goes to a server that supports retryable writes (it reports
//! `logicalSessionTimeoutMinutes` and is not a standalone).

use std::time::Duration;

use crate::error::{Error, ErrorKind, RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR};

pub(crate) use crate::error::RETRYABLE_WRITE_ERROR;

/// The label of a write error that says the server did nothing.
pub const NO_WRITES_PERFORMED: &str = "NoWritesPerformed";

/// How an operation may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retryability {
    /// Never (run_command, writes that touch many documents per statement, ...).
    None,
    /// As a retryable read.
    Read,
    /// As a retryable write: with a transaction number.
    Write,
}

/// Server error codes after which an operation may be retried (Retryable Writes spec,
/// "RetryableWriteError Labels", the list for servers before 4.4; Retryable Reads spec,
/// "Retryable Error", which adds ReadConcernMajorityNotAvailableYet).
const RETRYABLE_CODES: [i32; 12] = [
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    10107, // NotWritablePrimary
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
    189,   // PrimarySteppedDown
    91,    // ShutdownInProgress
    7,     // HostNotFound
    6,     // HostUnreachable
    89,    // NetworkTimeout
    9001,  // SocketException
    262,   // ExceededTimeLimit
];

/// ReadConcernMajorityNotAvailableYet: retryable for reads only.
const READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET: i32 = 134;

/// The first wire version of MongoDB 4.4, from which the server labels retryable
/// write errors itself.
const SERVER_LABELS_WRITES: i32 = 9;

/// Whether an error makes a read worth retrying (Retryable Reads spec, "Retryable
/// Error"): a network error or timeout, a cleared pool, or a retryable server code.
pub(crate) fn is_retryable_read_error(error: &Error) -> bool {
    match &*error.kind {
        ErrorKind::Io(_) => error.is_network_error(),
        ErrorKind::ConnectionPoolCleared { .. } => true,
        ErrorKind::Command(command) => {
            RETRYABLE_CODES.contains(&command.code)
                || command.code == READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET
        }
        _ => false,
    }
}

/// `error` of a retryable write with the RetryableWriteError label added where the
/// driver must add it (Retryable Writes spec, "RetryableWriteError Labels"): network
/// errors and cleared pools always; server errors with a retryable code only from
/// servers older than 4.4 (newer ones label errors themselves), and for a write
/// concern error only from a mongod.
pub(crate) fn label_write_error(
    error: Error,
    max_wire_version: Option<i32>,
    mongos: bool,
) -> Error {
    let retryable = match &*error.kind {
        ErrorKind::Io(_) => error.is_network_error(),
        ErrorKind::ConnectionPoolCleared { .. } => true,
        ErrorKind::Command(command) => {
            max_wire_version.is_some_and(|wire| wire < SERVER_LABELS_WRITES)
                && RETRYABLE_CODES.contains(&command.code)
        }
        ErrorKind::Write(crate::error::WriteFailure::WriteConcernError(concern)) => {
            !mongos
                && max_wire_version.is_some_and(|wire| wire < SERVER_LABELS_WRITES)
                && RETRYABLE_CODES.contains(&concern.code)
        }
        _ => false,
    };
    match retryable {
        true => error.with_label(RETRYABLE_WRITE_ERROR),
        false => error,
    }
}

/// The IllegalOperation error a server that cannot do retryable writes (e.g. a
/// standalone behind a misreported topology) answers a transaction number with,
/// replaced by the spec's actionable message (Retryable Writes spec, "Executing
/// Retryable Write Commands").
pub(crate) fn explain_unsupported_retryable_writes(error: Error) -> Error {
    match &*error.kind {
        ErrorKind::Command(command)
            if command.code == 20 && command.message.starts_with("Transaction numbers") =>
        {
            let mut command = command.clone();
            command.message = "This MongoDB deployment does not support retryable writes. \
                Please add retryWrites=false to your connection string."
                .into();
            Error::new(ErrorKind::Command(command))
        }
        _ => error,
    }
}

/// Whether the driver failed before the server could act (server selection, a pool
/// check-out): such an error says nothing about the write.
pub(crate) fn is_before_send(error: &Error) -> bool {
    matches!(
        &*error.kind,
        ErrorKind::ServerSelection { .. }
            | ErrorKind::WaitQueueTimeout { .. }
            | ErrorKind::PoolClosed { .. }
            | ErrorKind::InvalidArgument { .. }
    )
}

/// Which error a retried operation reports (Retryable Writes spec, "Executing Retryable
/// Write Commands"; Retryable Reads spec, "If a retry attempt fails"): the retry's, unless it says no write happened (the
/// NoWritesPerformed label, or a failure before sending), in which case the first.
pub(crate) fn reported_error(first: Error, retry: Error) -> Error {
    if retry.contains_label(NO_WRITES_PERFORMED) || is_before_send(&retry) {
        first
    } else {
        retry
    }
}

/// Whether `error` is a retryable overload error (Client Backpressure spec,
/// "Retryable Overload Error"): labelled both SystemOverloadedError and
/// RetryableError.
pub(crate) fn is_overload_retryable(error: &Error) -> bool {
    error.contains_label(SYSTEM_OVERLOADED_ERROR) && error.contains_label(RETRYABLE_ERROR)
}

/// The base of the overload backoff (Client Backpressure spec, "Overload retry
/// policy", 3): 100 ms.
const BASE_BACKOFF: Duration = Duration::from_millis(100);

/// The ceiling of the overload backoff: 10 s.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The wait before the `retry`th retry (1, 2, ...) after an overload error:
/// `jitter * min(MAX_BACKOFF, base * 2^retry)`, `base` being the server's
/// `baseBackoffMS` or [`BASE_BACKOFF`], and `jitter` in [0, 1].
pub(crate) fn overload_backoff(retry: u32, base: Option<Duration>, jitter: f64) -> Duration {
    let base = base.unwrap_or(BASE_BACKOFF);
    let ceiling = base
        .checked_mul(2u32.saturating_pow(retry.min(31)))
        .map_or(MAX_BACKOFF, |backoff| backoff.min(MAX_BACKOFF));
    ceiling.mul_f64(jitter.clamp(0.0, 1.0))
}

/// A random jitter in [0, 1] for a backoff (a fixed 0.5 when there is no source of
/// randomness).
pub(crate) fn jitter() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CommandError;

    fn command(code: i32, message: &str) -> Error {
        Error::new(ErrorKind::Command(CommandError {
            code,
            code_name: String::new(),
            message: message.into(),
            error_labels: Vec::new(),
            topology_version: None,
        }))
    }

    fn network() -> Error {
        Error::network("a:1", std::io::ErrorKind::ConnectionReset, "reset")
    }

    #[test]
    fn reads_retry_after_network_errors_and_retryable_codes_only() {
        assert!(is_retryable_read_error(&network()));
        assert!(is_retryable_read_error(&command(91, "shutdown")));
        assert!(is_retryable_read_error(&command(134, "not yet")));
        assert!(!is_retryable_read_error(&command(2, "bad value")));
        assert!(!is_retryable_read_error(&Error::invalid_argument("x")));
    }

    #[test]
    fn write_labels_follow_the_server_version() {
        let labelled = label_write_error(network(), Some(17), false);
        assert!(labelled.contains_label(RETRYABLE_WRITE_ERROR));
        // 4.4+: the server decides for its own errors.
        assert!(!label_write_error(command(91, "x"), Some(9), false)
            .contains_label(RETRYABLE_WRITE_ERROR));
        assert!(label_write_error(command(91, "x"), Some(8), false)
            .contains_label(RETRYABLE_WRITE_ERROR));
        assert!(!label_write_error(command(2, "x"), Some(8), false)
            .contains_label(RETRYABLE_WRITE_ERROR));
    }

    #[test]
    fn transaction_number_errors_get_the_actionable_message() {
        let error = explain_unsupported_retryable_writes(command(
            20,
            "Transaction numbers are only allowed on a replica set member or mongos",
        ));
        assert!(error.to_string().contains("retryWrites=false"), "{error}");
        let other = explain_unsupported_retryable_writes(command(20, "something else"));
        assert!(!other.to_string().contains("retryWrites=false"));
    }

    #[test]
    fn the_first_error_is_kept_when_the_retry_did_nothing() {
        let first = command(91, "first");
        let no_op = command(10107, "second").with_label(NO_WRITES_PERFORMED);
        assert_eq!(reported_error(first.clone(), no_op), first);
        let selection = Error::new(ErrorKind::ServerSelection {
            message: "none".into(),
        });
        assert_eq!(reported_error(first.clone(), selection), first);
        let later = command(11600, "later");
        assert_eq!(reported_error(first, later.clone()), later);
    }

    #[test]
    fn overload_errors_need_both_labels_and_back_off_exponentially_within_ten_seconds() {
        let overloaded = command(462, "rate exceeded")
            .with_label(SYSTEM_OVERLOADED_ERROR)
            .with_label(RETRYABLE_ERROR);
        assert!(is_overload_retryable(&overloaded));
        let labelled_once = command(462, "x").with_label(SYSTEM_OVERLOADED_ERROR);
        assert!(!is_overload_retryable(&labelled_once));
        assert!(!is_overload_retryable(
            &command(462, "x").with_label(RETRYABLE_ERROR)
        ));
        // jitter * min(10 s, base * 2^retry): 200 ms, then 400 ms at full jitter.
        let ms = Duration::from_millis;
        assert_eq!(overload_backoff(1, None, 1.0), ms(200));
        assert_eq!(overload_backoff(2, None, 1.0), ms(400));
        assert_eq!(overload_backoff(2, None, 0.5), ms(200));
        assert_eq!(overload_backoff(2, None, 0.0), Duration::ZERO);
        assert_eq!(overload_backoff(2, Some(ms(50)), 1.0), ms(200));
        assert_eq!(overload_backoff(20, None, 1.0), Duration::from_secs(10));
        assert_eq!(
            overload_backoff(u32::MAX, None, 1.0),
            Duration::from_secs(10)
        );
        // Out-of-range jitter is clamped.
        assert_eq!(overload_backoff(1, None, 7.0), ms(200));
        let jittered = jitter();
        assert!((0.0..=1.0).contains(&jittered), "{jittered}");
    }

    #[test]
    fn the_server_base_backoff_is_read_from_the_reply_when_positive() {
        let with = |reply: bson::Document| command(462, "x").with_server_reply(reply);
        let ms = Duration::from_millis;
        assert_eq!(
            with(bson::doc! { "baseBackoffMS": 50 }).base_backoff(),
            Some(ms(50))
        );
        assert_eq!(with(bson::doc! { "baseBackoffMS": 0 }).base_backoff(), None);
        assert_eq!(
            with(bson::doc! { "baseBackoffMS": -5 }).base_backoff(),
            None
        );
        assert_eq!(with(bson::doc! { "ok": 0 }).base_backoff(), None);
        assert_eq!(command(462, "x").base_backoff(), None);
    }
}
