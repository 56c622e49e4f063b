//! Checking an operation's error against `expectError` (spec "expectedError").

use anymongo::error::WriteFailure;
use anymongo::{Error, ErrorKind};

use super::matching::Matcher;
use super::model::ExpectedError;
use super::Abort;

/// Checks `error` against `expected`, but for what the caller matches with the
/// test's entities: `errorResponse` ([`check_response`]), a client bulk write's
/// `writeErrors` and `writeConcernErrors`, and `expectResult`.
pub fn check(expected: &ExpectedError, error: &Error) -> Result<(), Abort> {
    let fail = |why: String| Err(Abort::Failed(format!("{why}; the error: {error}")));
    if let Some(timeout) = expected.is_timeout_error {
        if timeout != error.is_operation_timeout() {
            return fail(format!("expected a timeout error: {timeout}"));
        }
    }
    if let Some(client_error) = expected.is_client_error {
        if client_error != is_client_error(error) {
            return fail(format!("expected a client error: {client_error}"));
        }
    }
    if let Some(text) = &expected.error_contains {
        if !error
            .to_string()
            .to_lowercase()
            .contains(&text.to_lowercase())
        {
            return fail(format!("the message does not contain {text:?}"));
        }
    }
    if let Some(code) = expected.error_code {
        if error.code() != Some(code) {
            return fail(format!("expected the code {code}"));
        }
    }
    if let Some(name) = &expected.error_code_name {
        if !code_name(error).eq_ignore_ascii_case(name) {
            return fail(format!("expected the code name {name}"));
        }
    }
    if let Some(label) = expected
        .error_labels_contain
        .iter()
        .find(|label| !error.contains_label(label))
    {
        return fail(format!("the label {label} is missing"));
    }
    if let Some(label) = expected
        .error_labels_omit
        .iter()
        .find(|label| error.contains_label(label))
    {
        return fail(format!("the label {label} should be absent"));
    }
    Ok(())
}

/// Checks `expectError.errorResponse` against the server's reply the error carries,
/// as a root-level document (a client bulk write's: its top-level error's). An
/// error that carries none (a write error, read from an `ok: 1` reply) makes the
/// test unsupported.
pub fn check_response(
    expected: &ExpectedError,
    error: &Error,
    matcher: &Matcher<'_>,
) -> Result<(), Abort> {
    let Some(response) = &expected.error_response else {
        return Ok(());
    };
    let reply = match &*error.kind {
        ErrorKind::BulkWrite(failure) => failure.error.as_deref().and_then(Error::server_reply),
        _ => error.server_reply(),
    };
    let Some(reply) = reply else {
        return Err(Abort::Unsupported(format!(
            "expectError.errorResponse: the error carries no server reply: {error}"
        )));
    };
    matcher
        .root(
            &bson::Bson::Document(response.clone()),
            &reply.clone().into(),
        )
        .map_err(|why| Abort::Failed(format!("errorResponse: {why}")))
}

/// The server's code name of the error, as [`Error::code`] picks its code: the
/// command's, a single write's, or a bulk write's first write error or write concern
/// error; empty when the server sent none.
fn code_name(error: &Error) -> &str {
    let name = match &*error.kind {
        ErrorKind::Command(command) => Some(command.code_name.as_str()),
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code_name.as_deref(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => {
            Some(concern.code_name.as_str())
        }
        ErrorKind::BulkWrite(failure) => {
            return failure.error.as_deref().map_or("", code_name);
        }
        ErrorKind::InsertMany(failure) => {
            match failure.write_errors.as_ref().and_then(|e| e.first()) {
                Some(write) => write.code_name.as_deref(),
                None => failure
                    .write_concern_error
                    .as_ref()
                    .map(|concern| concern.code_name.as_str()),
            }
        }
        ErrorKind::CollectionBulkWrite(failure) => match failure.write_errors.first() {
            Some(write) => write.code_name.as_deref(),
            None => failure
                .write_concern_error
                .as_ref()
                .map(|concern| concern.code_name.as_str()),
        },
        _ => None,
    };
    name.unwrap_or_default()
}

/// Whether the error originates in the client: anything but an error the server
/// returned (spec "expectedError", `isClientError`: "Client errors include, but are
/// not limited to: parameter validation errors before a command is sent to the
/// server; network errors").
fn is_client_error(error: &Error) -> bool {
    match &*error.kind {
        ErrorKind::Command(_)
        | ErrorKind::Write(_)
        | ErrorKind::InsertMany(_)
        | ErrorKind::CollectionBulkWrite(_) => false,
        // Unified test format, "clientBulkWrite": its top-level error says.
        ErrorKind::BulkWrite(failure) => failure.error.as_deref().is_some_and(is_client_error),
        ErrorKind::Authentication { code, .. } => code.is_none(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anymongo::CommandError;
    use bson::doc;

    fn server_error() -> Error {
        Error::from(CommandError {
            code: 11000,
            code_name: "DuplicateKey".to_owned(),
            message: "E11000 duplicate key error".to_owned(),
            error_labels: vec!["RetryableWriteError".to_owned()],
            topology_version: None,
        })
    }

    fn expected(document: bson::Document) -> ExpectedError {
        bson::deserialize_from_document(document).unwrap()
    }

    fn failed(expectation: bson::Document, error: &Error, because: &str) {
        match check(&expected(expectation), error) {
            Err(Abort::Failed(why)) => assert!(why.contains(because), "{why}"),
            other => panic!("expected a failure saying {because:?}, got {other:?}"),
        }
    }

    #[test]
    fn server_errors_match_code_name_message_and_labels() {
        let error = server_error();
        check(
            &expected(doc! {
                "isError": true, "isClientError": false, "isTimeoutError": false,
                "errorContains": "DUPLICATE KEY", "errorCode": 11000, "errorCodeName": "duplicatekey",
                "errorLabelsContain": ["RetryableWriteError"],
                "errorLabelsOmit": ["TransientTransactionError"],
            }),
            &error,
        )
        .unwrap();
        failed(
            doc! { "isClientError": true },
            &error,
            "expected a client error: true",
        );
        failed(doc! { "errorContains": "nope" }, &error, "does not contain");
        failed(doc! { "errorCode": 2 }, &error, "expected the code 2");
        failed(
            doc! { "errorCodeName": "BadValue" },
            &error,
            "code name BadValue",
        );
        failed(
            doc! { "errorLabelsContain": ["X"] },
            &error,
            "label X is missing",
        );
        failed(
            doc! { "errorLabelsOmit": ["RetryableWriteError"] },
            &error,
            "should be absent",
        );
    }

    #[test]
    fn client_errors_have_no_code() {
        let error = Error::invalid_argument("bad");
        check(&expected(doc! { "isClientError": true }), &error).unwrap();
        failed(doc! { "errorCode": 2 }, &error, "expected the code 2");
        failed(doc! { "errorCodeName": "BadValue" }, &error, "code name");
    }

    #[test]
    fn an_error_without_a_server_reply_cannot_show_an_error_response() {
        let entities = super::super::entities::EntityMap::default();
        let matcher = Matcher::new(&entities);
        let response = expected(doc! { "errorResponse": { "code": 8 } });
        assert!(matches!(
            check_response(&response, &server_error(), &matcher),
            Err(Abort::Unsupported(_))
        ));
        check_response(&expected(doc! {}), &server_error(), &matcher).unwrap();
    }

    #[test]
    fn is_timeout_error_tells_the_timeout_error_from_the_others() {
        let timeout = expected(doc! { "isTimeoutError": true });
        let not_timeout = expected(doc! { "isTimeoutError": false });
        assert!(matches!(
            check(&timeout, &server_error()),
            Err(Abort::Failed(_))
        ));
        check(&not_timeout, &server_error()).unwrap();
        let timed_out = Error::new(ErrorKind::OperationTimeout {
            timeout: std::time::Duration::from_millis(5),
            during: "server selection",
            cause: None,
        });
        check(&timeout, &timed_out).unwrap();
        assert!(matches!(
            check(&not_timeout, &timed_out),
            Err(Abort::Failed(_))
        ));
    }
}
