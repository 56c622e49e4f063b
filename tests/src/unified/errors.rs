//! Checking an operation's error against `expectError` (spec "expectedError").

use anymongo::error::WriteFailure;
use anymongo::{Error, ErrorKind};

use super::model::ExpectedError;
use super::Abort;

/// Checks `error` against `expected`, but for `expectResult` (a partial result, which
/// the caller matches). What the driver's errors cannot show yet (a client bulk
/// write's write errors, the server's whole reply, timeoutMS) makes the test
/// unsupported rather than failed.
pub fn check(expected: &ExpectedError, error: &Error) -> Result<(), Abort> {
    let unsupported = [
        ("writeErrors", expected.write_errors.is_some()),
        (
            "writeConcernErrors",
            expected.write_concern_errors.is_some(),
        ),
        ("errorResponse", expected.error_response.is_some()),
        (
            "isTimeoutError: true",
            expected.is_timeout_error == Some(true),
        ),
    ];
    if let Some((what, _)) = unsupported.iter().find(|(_, used)| *used) {
        return Err(Abort::Unsupported(format!(
            "expectError.{what}: anymongo::Error does not carry it yet (issue #6)"
        )));
    }
    let fail = |why: String| Err(Abort::Failed(format!("{why}; the error: {error}")));
    // `isTimeoutError: false` holds: the driver has no timeoutMS, so no error is one.
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
        .find(|label| !error.has_label(label))
    {
        return fail(format!("the label {label} is missing"));
    }
    if let Some(label) = expected
        .error_labels_omit
        .iter()
        .find(|label| error.has_label(label))
    {
        return fail(format!("the label {label} should be absent"));
    }
    Ok(())
}

/// The server's code name of the error, as [`Error::code`] picks its code: the
/// command's, a single write's, or a bulk write's first write error or write concern
/// error; empty when the server sent none.
fn code_name(error: &Error) -> &str {
    let name = match error.kind() {
        ErrorKind::Command(command) => Some(command.code_name.as_str()),
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code_name.as_deref(),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => concern.code_name.as_deref(),
        ErrorKind::BulkWrite(failure) => match failure.write_errors.first() {
            Some(write) => write.code_name.as_deref(),
            None => failure
                .write_concern_error
                .as_ref()
                .and_then(|concern| concern.code_name.as_deref()),
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
    match error.kind() {
        ErrorKind::Command(_) | ErrorKind::Write(_) | ErrorKind::BulkWrite(_) => false,
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
    fn what_errors_cannot_show_is_unsupported() {
        for expectation in [
            doc! { "writeErrors": { "0": { "code": 1 } } },
            doc! { "writeConcernErrors": [{ "code": 1 }] },
            doc! { "errorResponse": { "code": 1 } },
            doc! { "isTimeoutError": true },
        ] {
            assert!(
                matches!(
                    check(&expected(expectation.clone()), &server_error()),
                    Err(Abort::Unsupported(_))
                ),
                "{expectation}"
            );
        }
    }
}
