//! The Stable API spec (`versioned-api`): a client that declares an API version sends
//! it with every command, so that a server that would behave differently under a
//! later version keeps the declared behaviour, or refuses.
//!
//! The version is declared once, on [`ClientOptions::server_api`](crate::ClientOptions),
//! and cannot be changed per database, collection or operation (spec "Declared API
//! version"). A declared version also makes the handshake use `hello` over `OP_MSG`,
//! never the legacy `isMaster` (spec "Handshake behavior").

use std::fmt;
use std::str::FromStr;

use bson::Document;

use crate::error::{Error, Result};

/// A version of the Stable API. Only version 1 exists; an enum so that an unknown
/// version cannot be declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerApiVersion {
    /// Version `"1"`.
    V1,
}

impl ServerApiVersion {
    /// The version as sent in `apiVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerApiVersion::V1 => "1",
        }
    }
}

impl fmt::Display for ServerApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ServerApiVersion {
    type Err = Error;

    /// Reads a version as the spec's tests and other drivers spell it (`"1"`).
    fn from_str(version: &str) -> Result<ServerApiVersion> {
        match version {
            "1" => Ok(ServerApiVersion::V1),
            other => Err(Error::invalid_argument(format!(
                "unknown Stable API version {other:?}: the known version is \"1\""
            ))),
        }
    }
}

/// The Stable API a client declares (spec "ServerApi").
///
/// ```
/// use anymongo::versioned_api::{ServerApi, ServerApiVersion};
/// let mut options = anymongo::ClientOptions::parse_uri("mongodb://localhost").unwrap();
/// options.server_api = Some(ServerApi::builder().version(ServerApiVersion::V1).strict(true).build());
/// ```
#[derive(typed_builder::TypedBuilder, Debug, Clone, PartialEq, Eq)]
#[builder(field_defaults(default, setter(into)))]
pub struct ServerApi {
    /// The version (`apiVersion`).
    #[builder(!default)]
    pub version: ServerApiVersion,
    /// `apiStrict`: the server refuses commands and options outside the version.
    /// Sent when set, even to its default (spec "Sending Declared API Version to the
    /// Server").
    pub strict: Option<bool>,
    /// `apiDeprecationErrors`: the server refuses what the version deprecates.
    pub deprecation_errors: Option<bool>,
}

impl ServerApi {
    /// Adds `apiVersion`, and `apiStrict` and `apiDeprecationErrors` when set, to a
    /// command body. Every command carries them, `getMore` included (spec "Cursors").
    pub(crate) fn add_to(&self, command: &mut Document) {
        command.insert("apiVersion", self.version.as_str());
        if let Some(strict) = self.strict {
            command.insert("apiStrict", strict);
        }
        if let Some(errors) = self.deprecation_errors {
            command.insert("apiDeprecationErrors", errors);
        }
    }
}

/// Adds the declared API, if any, to a command body.
pub(crate) fn declare(server_api: Option<&ServerApi>, command: &mut Document) {
    if let Some(api) = server_api {
        api.add_to(command);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn only_the_options_set_are_sent() {
        let mut command = doc! { "ping": 1 };
        declare(
            Some(&ServerApi::builder().version(ServerApiVersion::V1).build()),
            &mut command,
        );
        assert_eq!(command, doc! { "ping": 1, "apiVersion": "1" });

        let mut command = doc! { "ping": 1 };
        let api = ServerApi::builder()
            .version(ServerApiVersion::V1)
            .strict(false)
            .deprecation_errors(true)
            .build();
        declare(Some(&api), &mut command);
        assert_eq!(
            command,
            doc! { "ping": 1, "apiVersion": "1", "apiStrict": false, "apiDeprecationErrors": true }
        );

        let mut command = doc! { "ping": 1 };
        declare(None, &mut command);
        assert_eq!(command, doc! { "ping": 1 });
    }

    #[test]
    fn unknown_versions_are_refused() {
        assert_eq!(
            "1".parse::<ServerApiVersion>().unwrap(),
            ServerApiVersion::V1
        );
        let error = "2".parse::<ServerApiVersion>().unwrap_err();
        assert!(error
            .to_string()
            .contains("unknown Stable API version \"2\""));
    }
}
