//! The credential rules of the Authentication spec for credentials read from a
//! connection string: each mechanism's "MongoCredential Properties" section (which
//! fields are required or forbidden, the default `source`) and "Connection String
//! Options".

use std::sync::Arc;

use bson::{Bson, Document};

use super::oidc_callback as oidc;

use crate::error::{Error, Result};

/// An authentication mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthMechanism {
    /// `SCRAM-SHA-1`.
    ScramSha1,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `MONGODB-X509`: the TLS client certificate is the identity.
    MongoDbX509,
    /// `PLAIN` (LDAP proxy authentication).
    Plain,
    /// `MONGODB-AWS`: AWS IAM credentials, SigV4-signed.
    MongoDbAws,
    /// `MONGODB-OIDC`: OpenID Connect access tokens from a callback.
    MongoDbOidc,
    /// `GSSAPI` (Kerberos).
    Gssapi,
}

impl AuthMechanism {
    /// The mechanism's name as the server and the connection string spell it.
    pub fn name(self) -> &'static str {
        match self {
            AuthMechanism::ScramSha1 => "SCRAM-SHA-1",
            AuthMechanism::ScramSha256 => "SCRAM-SHA-256",
            AuthMechanism::MongoDbX509 => "MONGODB-X509",
            AuthMechanism::Plain => "PLAIN",
            AuthMechanism::MongoDbAws => "MONGODB-AWS",
            AuthMechanism::MongoDbOidc => "MONGODB-OIDC",
            AuthMechanism::Gssapi => "GSSAPI",
        }
    }

    /// Parses a mechanism name (exact spelling, as the spec requires).
    pub fn from_name(name: &str) -> Result<AuthMechanism> {
        ALL_MECHANISMS
            .iter()
            .copied()
            .find(|mechanism| mechanism.name() == name)
            .ok_or_else(|| Error::invalid_argument(format!("unknown authMechanism '{name}'")))
    }
}

const ALL_MECHANISMS: [AuthMechanism; 7] = [
    AuthMechanism::ScramSha1,
    AuthMechanism::ScramSha256,
    AuthMechanism::MongoDbX509,
    AuthMechanism::Plain,
    AuthMechanism::MongoDbAws,
    AuthMechanism::MongoDbOidc,
    AuthMechanism::Gssapi,
];

/// Who to authenticate as, and how. Built from the connection string or in code, with
/// its builder (`Credential::builder().username("user".to_string()).build()`).
///
/// `Debug` never shows the password; `PartialEq` compares everything but the OIDC
/// callback and host.
#[derive(typed_builder::TypedBuilder, Clone, Default)]
#[builder(field_defaults(default, setter(into)))]
pub struct Credential {
    /// The user name.
    pub username: Option<String>,
    /// The database the user is defined in (`authSource`).
    pub source: Option<String>,
    /// The password.
    pub password: Option<String>,
    /// The mechanism; `None` negotiates SCRAM-SHA-256 or SCRAM-SHA-1 with the server.
    pub mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`, typed as the spec's tests expect them. In code,
    /// MONGODB-OIDC's `ALLOWED_HOSTS` is an array of strings here.
    pub mechanism_properties: Option<Document>,
    /// MONGODB-OIDC: the application's token callback (a connection string cannot
    /// name one); see [`oidc::Callback`].
    pub oidc_callback: oidc::Callback,
    /// MONGODB-OIDC's built-in `test` and `k8s` environments, and MONGODB-AWS's
    /// `AWS_WEB_IDENTITY_TOKEN_FILE`: where token files are read (and, for OIDC,
    /// environment variables; the core reads neither itself). An addition to the
    /// official crate.
    pub oidc_host: Option<Arc<dyn oidc::OidcHost>>,
}

impl PartialEq for Credential {
    fn eq(&self, other: &Self) -> bool {
        self.username == other.username
            && self.source == other.source
            && self.password == other.password
            && self.mechanism == other.mechanism
            && self.mechanism_properties == other.mechanism_properties
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .field(
                "mechanism_properties",
                &self.mechanism_properties.as_ref().map(redact_properties),
            )
            .field("oidc_callback", &self.oidc_callback)
            .field("oidc_host", &self.oidc_host.as_ref().map(|_| "<host>"))
            .finish()
    }
}

/// Mechanism properties whose values are secrets, shown as `<redacted>` by `Debug`.
const SECRET_PROPERTIES: [&str; 1] = ["AWS_SESSION_TOKEN"];

fn redact_properties(properties: &Document) -> Document {
    properties
        .iter()
        .map(|(key, value)| {
            let value = if SECRET_PROPERTIES
                .iter()
                .any(|secret| secret.eq_ignore_ascii_case(key))
            {
                Bson::String("<redacted>".into())
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect()
}

impl Credential {
    /// The database the authentication commands go to: `source` if set, else the
    /// mechanism's default (Authentication spec, "MongoCredential Properties" of each
    /// mechanism): `admin` for SCRAM and the default mechanism, `$external` for the
    /// others. A credential read from a connection string always has `source` set by
    /// [`resolve_from_uri`](Credential::resolve_from_uri), which also honours the
    /// URI's database.
    pub fn effective_source(&self) -> &str {
        match (&self.source, self.mechanism) {
            (Some(source), _) => source,
            (None, None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256)) => "admin",
            (None, Some(_)) => "$external",
        }
    }
}

/// The error for a credential that lacks `what` for `mechanism`.
pub(crate) fn missing(mechanism: AuthMechanism, what: &str) -> Error {
    Error::invalid_argument(format!(
        "{} authentication requires {what}",
        mechanism.name()
    ))
}

impl Credential {
    /// Applies the Authentication spec's rules to a credential read from a connection
    /// string: fills the default `source` (and mechanism properties) for the
    /// mechanism, and rejects invalid combinations with a clear error.
    /// `default_database` is the database in the connection string's path.
    ///
    /// - The user name, when present, must not be empty, nor may `authSource` be.
    /// - SCRAM-SHA-1, SCRAM-SHA-256, PLAIN and the default mechanism need a user name
    ///   and take no mechanism properties; `source` defaults to `default_database`,
    ///   else `admin` (`$external` for PLAIN).
    /// - MONGODB-X509, GSSAPI, MONGODB-AWS and MONGODB-OIDC authenticate against
    ///   `$external` only. X509 takes no password; GSSAPI needs a user name and its
    ///   `SERVICE_NAME` defaults to `mongodb`; AWS takes no user name, password nor
    ///   property (its credentials come from the environment); OIDC takes no password,
    ///   and `TOKEN_RESOURCE` exactly with `ENVIRONMENT` `azure` and `gcp` (without an
    ///   `ENVIRONMENT`, the client needs an [`oidc_callback`](Credential::oidc_callback)).
    ///
    /// Property names are matched case-insensitively and stored upper-case; a property
    /// the mechanism does not know is an error. `CANONICALIZE_HOST_NAME` keeps the
    /// spec's strings (`none`, `forward`, `forwardAndReverse`) and turns the legacy
    /// `true`/`false` into booleans. A password is not required here for SCRAM and
    /// PLAIN (`mongodb://user@host` is a valid connection string); authenticating
    /// without one fails when the connection is made.
    pub fn resolve_from_uri(mut self, default_database: Option<&str>) -> Result<Credential> {
        if self.username.as_deref() == Some("") {
            return Err(Error::invalid_argument(
                "the user name in the connection string is empty",
            ));
        }
        if self.source.as_deref() == Some("") {
            return Err(Error::invalid_argument("authSource must not be empty"));
        }
        let mut properties = Properties::new(self.mechanism, self.mechanism_properties.take());
        let default_source = match self.mechanism {
            // SCRAM-SHA-1, SCRAM-SHA-256 and the default mechanism: "MUST be specified.
            // Defaults to the database name if supplied on the connection string or admin."
            None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256) => {
                properties.allow(&[])?;
                self.require_username()?;
                default_database.unwrap_or("admin")
            }
            // PLAIN: "Defaults to the database name if supplied on the connection string
            // or $external."
            Some(AuthMechanism::Plain) => {
                properties.allow(&[])?;
                self.require_username()?;
                default_database.unwrap_or("$external")
            }
            Some(AuthMechanism::MongoDbX509) => {
                properties.allow(&[])?;
                self.forbid_password()?;
                self.external_source()?
            }
            Some(AuthMechanism::Gssapi) => {
                properties.allow(&[
                    "SERVICE_NAME",
                    "CANONICALIZE_HOST_NAME",
                    "SERVICE_REALM",
                    "SERVICE_HOST",
                ])?;
                self.require_username()?;
                properties.gssapi()?;
                self.external_source()?
            }
            Some(AuthMechanism::MongoDbAws) => {
                self.forbid_aws_credentials(properties.get("AWS_SESSION_TOKEN").is_some())?;
                properties.allow(&[])?;
                self.external_source()?
            }
            Some(AuthMechanism::MongoDbOidc) => {
                self.forbid_password()?;
                self.oidc(&properties)?;
                self.external_source()?
            }
        };
        self.source.get_or_insert_with(|| default_source.to_owned());
        self.mechanism_properties = properties.into_document();
        Ok(self)
    }

    fn mechanism_name(&self) -> &'static str {
        self.mechanism.map_or("default", AuthMechanism::name)
    }

    /// X509, GSSAPI, AWS and OIDC: source "MUST be $external".
    fn external_source(&self) -> Result<&'static str> {
        match self.source.as_deref() {
            None | Some("$external") => Ok("$external"),
            Some(_) => Err(Error::invalid_argument(format!(
                "the {} authentication mechanism requires authSource '$external'",
                self.mechanism_name()
            ))),
        }
    }

    fn require_username(&self) -> Result<()> {
        match self.username {
            Some(_) => Ok(()),
            None => Err(Error::invalid_argument(format!(
                "the {} authentication mechanism requires a user name",
                self.mechanism_name()
            ))),
        }
    }

    fn forbid_password(&self) -> Result<()> {
        match self.password {
            Some(_) => Err(Error::invalid_argument(format!(
                "the {} authentication mechanism does not take a password",
                self.mechanism_name()
            ))),
            None => Ok(()),
        }
    }

    /// MONGODB-AWS, "Obtaining Credentials" (since 2025-09-30): the credentials "MUST be
    /// present in the environment or be retrieved via the optional AWS SDK. If
    /// credentials are provided in the URI or client options, the driver MUST raise an
    /// error." A user name (the access key ID), a password (the secret access key) and
    /// an `AWS_SESSION_TOKEN` property (`session_token`) are such credentials.
    pub(crate) fn forbid_aws_credentials(&self, session_token: bool) -> Result<()> {
        if self.username.is_some() || self.password.is_some() || session_token {
            return Err(Error::invalid_argument(
                "MONGODB-AWS takes no credentials from the connection string or the client \
                 options (user name, password, AWS_SESSION_TOKEN): set AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY and, for temporary credentials, AWS_SESSION_TOKEN in \
                 the environment",
            ));
        }
        Ok(())
    }

    /// MONGODB-OIDC "MongoCredential Properties": a valid `ENVIRONMENT` when given (else
    /// a callback must be set in code before the client is made); the user name is the
    /// client ID of the `azure` integration and means nothing to the other environments.
    fn oidc(&self, properties: &Properties) -> Result<()> {
        if properties.get("ALLOWED_HOSTS").is_some() {
            return Err(Error::invalid_argument(
                "the MONGODB-OIDC ALLOWED_HOSTS property cannot be set in the connection string",
            ));
        }
        properties.allow(&["ENVIRONMENT", "TOKEN_RESOURCE"])?;
        // Without ENVIRONMENT, the callback is set in code after parsing
        // (`Credential::oidc_callback`); the client checks that one of the two is there.
        let Some(environment) = properties.string("ENVIRONMENT")? else {
            return match properties.string("TOKEN_RESOURCE")? {
                Some(_) => Err(Error::invalid_argument(
                    "the MONGODB-OIDC TOKEN_RESOURCE property needs ENVIRONMENT azure or gcp",
                )),
                None => Ok(()),
            };
        };
        let needs_resource = match environment {
            "azure" | "gcp" => true,
            "test" | "k8s" => false,
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown MONGODB-OIDC ENVIRONMENT '{other}' (expected test, azure, gcp or k8s)"
                )))
            }
        };
        match (needs_resource, properties.string("TOKEN_RESOURCE")?) {
            (true, None) => Err(Error::invalid_argument(format!(
                "the MONGODB-OIDC '{environment}' environment needs the TOKEN_RESOURCE property"
            ))),
            (false, Some(_)) => Err(Error::invalid_argument(format!(
                "the MONGODB-OIDC TOKEN_RESOURCE property does not apply to the '{environment}' environment"
            ))),
            _ if self.username.is_some() && environment != "azure" => {
                Err(Error::invalid_argument(format!(
                    "the MONGODB-OIDC '{environment}' environment does not take a user name"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Mechanism properties with upper-cased names ("Naming of mechanism properties MUST
/// be case-insensitive").
struct Properties {
    mechanism: Option<AuthMechanism>,
    document: Document,
}

impl Properties {
    fn new(mechanism: Option<AuthMechanism>, document: Option<Document>) -> Self {
        let document = document
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key.to_ascii_uppercase(), value))
            .collect();
        Properties {
            mechanism,
            document,
        }
    }

    /// Fails on the first property not in `allowed` ("if a mechanism_property is
    /// specified for a mechanism that does not support it, the driver should raise an
    /// error").
    fn allow(&self, allowed: &[&str]) -> Result<()> {
        match self.document.keys().find(|key| !allowed.contains(&key.as_str())) {
            Some(key) => Err(Error::invalid_argument(format!(
                "the authMechanismProperties property '{key}' does not apply to the {} authentication mechanism",
                self.mechanism.map_or("default", AuthMechanism::name)
            ))),
            None => Ok(()),
        }
    }

    fn get(&self, name: &str) -> Option<&Bson> {
        self.document.get(name)
    }

    /// The string value of property `name`, if set; another type is an error.
    fn string(&self, name: &str) -> Result<Option<&str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Bson::String(value)) => Ok(Some(value)),
            Some(other) => Err(Error::invalid_argument(format!(
                "the authMechanismProperties property '{name}' must be a string, not {:?}",
                other.element_type()
            ))),
        }
    }

    /// GSSAPI: `SERVICE_NAME` defaults to `mongodb`; `CANONICALIZE_HOST_NAME` is one of
    /// `none`, `forward`, `forwardAndReverse` or the legacy booleans (spec, "Hostname
    /// Canonicalization": any other value "MUST raise an error").
    fn gssapi(&mut self) -> Result<()> {
        for name in ["SERVICE_NAME", "SERVICE_REALM", "SERVICE_HOST"] {
            self.string(name)?;
        }
        if self.get("SERVICE_NAME").is_none() {
            self.document.insert("SERVICE_NAME", "mongodb");
        }
        let canonicalize = match self.get("CANONICALIZE_HOST_NAME") {
            None => return Ok(()),
            Some(Bson::Boolean(value)) => Bson::Boolean(*value),
            Some(Bson::String(value)) => match value.as_str() {
                "none" | "forward" | "forwardAndReverse" => Bson::String(value.clone()),
                "true" => Bson::Boolean(true),
                "false" => Bson::Boolean(false),
                other => {
                    return Err(Error::invalid_argument(format!(
                        "invalid GSSAPI CANONICALIZE_HOST_NAME '{other}' (expected none, forward, forwardAndReverse, true or false)"
                    )))
                }
            },
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "invalid GSSAPI CANONICALIZE_HOST_NAME of type {:?}",
                    other.element_type()
                )))
            }
        };
        self.document.insert("CANONICALIZE_HOST_NAME", canonicalize);
        Ok(())
    }

    /// `None` when no property is set (the spec tests' `mechanism_properties: null`).
    fn into_document(self) -> Option<Document> {
        Some(self.document).filter(|document| !document.is_empty())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_never_shows_secrets() {
        let credential = Credential {
            username: Some("user".into()),
            password: Some("hunter2-secret".into()),
            mechanism: Some(AuthMechanism::MongoDbAws),
            mechanism_properties: Some(doc! { "AWS_SESSION_TOKEN": "token-secret" }),
            ..Credential::default()
        };
        let shown = format!("{credential:?}");
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(!shown.contains("token-secret"), "{shown}");
        assert!(
            shown.contains("user") && shown.contains("<redacted>"),
            "{shown}"
        );
        let pretty = format!("{credential:#?}");
        assert!(!pretty.contains("secret"), "{pretty}");
    }

    #[test]
    fn mechanism_names_round_trip() {
        for mechanism in ALL_MECHANISMS {
            assert_eq!(AuthMechanism::from_name(mechanism.name()), Ok(mechanism));
        }
        assert!(AuthMechanism::from_name("scram-sha-1").is_err());
    }

    #[test]
    fn effective_source_defaults_per_mechanism() {
        let mut credential = Credential::default();
        assert_eq!(credential.effective_source(), "admin");
        credential.mechanism = Some(AuthMechanism::MongoDbX509);
        assert_eq!(credential.effective_source(), "$external");
        credential.source = Some("db".into());
        assert_eq!(credential.effective_source(), "db");
    }

    use super::*;
    use bson::doc;

    fn credential(
        username: Option<&str>,
        password: Option<&str>,
        mechanism: Option<AuthMechanism>,
        properties: Option<Document>,
    ) -> Credential {
        Credential {
            username: username.map(Into::into),
            password: password.map(Into::into),
            mechanism,
            mechanism_properties: properties,
            ..Credential::default()
        }
    }

    #[test]
    fn scram_sources_default_to_the_database_then_admin() {
        for mechanism in [
            None,
            Some(AuthMechanism::ScramSha1),
            Some(AuthMechanism::ScramSha256),
        ] {
            let resolved = credential(Some("u"), Some("p"), mechanism, None)
                .resolve_from_uri(None)
                .unwrap();
            assert_eq!(resolved.source.as_deref(), Some("admin"));
            let resolved = credential(Some("u"), Some("p"), mechanism, None)
                .resolve_from_uri(Some("foo"))
                .unwrap();
            assert_eq!(resolved.source.as_deref(), Some("foo"));
            assert!(credential(None, None, mechanism, None)
                .resolve_from_uri(None)
                .is_err());
        }
    }

    #[test]
    fn plain_defaults_to_the_database_then_external() {
        let plain = Some(AuthMechanism::Plain);
        let resolved = credential(Some("u"), Some("p"), plain, None)
            .resolve_from_uri(None)
            .unwrap();
        assert_eq!(resolved.source.as_deref(), Some("$external"));
        let resolved = credential(Some("u"), Some("p"), plain, None)
            .resolve_from_uri(Some("foo"))
            .unwrap();
        assert_eq!(resolved.source.as_deref(), Some("foo"));
    }

    #[test]
    fn empty_user_names_and_sources_are_invalid() {
        assert!(credential(Some(""), Some(""), None, None)
            .resolve_from_uri(None)
            .is_err());
        let mut empty_source = credential(Some("u"), Some("p"), None, None);
        empty_source.source = Some(String::new());
        assert!(empty_source.resolve_from_uri(None).is_err());
    }

    #[test]
    fn x509_takes_no_password_and_only_external() {
        let x509 = Some(AuthMechanism::MongoDbX509);
        let resolved = credential(None, None, x509, None)
            .resolve_from_uri(Some("foo"))
            .unwrap();
        assert_eq!(resolved.source.as_deref(), Some("$external"));
        assert!(credential(Some("u"), Some("p"), x509, None)
            .resolve_from_uri(None)
            .is_err());
        let mut other_source = credential(None, None, x509, None);
        other_source.source = Some("bar".into());
        assert!(other_source.resolve_from_uri(None).is_err());
    }

    #[test]
    fn scram_takes_no_mechanism_properties() {
        let err = credential(
            Some("u"),
            Some("p"),
            None,
            Some(doc! { "SERVICE_NAME": "x" }),
        )
        .resolve_from_uri(None)
        .unwrap_err();
        assert!(err.to_string().contains("SERVICE_NAME"), "{err}");
    }

    #[test]
    fn gssapi_properties_are_case_insensitive_defaulted_and_checked() {
        let gssapi = Some(AuthMechanism::Gssapi);
        let resolved = credential(Some("u@REALM"), None, gssapi, None)
            .resolve_from_uri(None)
            .unwrap();
        assert_eq!(
            resolved.mechanism_properties,
            Some(doc! { "SERVICE_NAME": "mongodb" })
        );
        let resolved = credential(
            Some("u@REALM"),
            None,
            gssapi,
            Some(doc! { "service_name": "other", "Canonicalize_Host_Name": "true" }),
        )
        .resolve_from_uri(None)
        .unwrap();
        assert_eq!(
            resolved.mechanism_properties,
            Some(doc! { "SERVICE_NAME": "other", "CANONICALIZE_HOST_NAME": true })
        );
        for bad in [
            doc! { "CANONICALIZE_HOST_NAME": "sometimes" },
            doc! { "UNKNOWN": "x" },
        ] {
            assert!(credential(Some("u"), None, gssapi, Some(bad))
                .resolve_from_uri(None)
                .is_err());
        }
    }

    #[test]
    fn aws_takes_no_credentials_from_the_uri() {
        let aws = Some(AuthMechanism::MongoDbAws);
        assert!(credential(None, None, aws, None)
            .resolve_from_uri(None)
            .is_ok());
        for (username, password) in [
            (Some("id"), Some("hunter2")),
            (Some("id"), None),
            (None, Some("hunter2")),
        ] {
            let error = credential(username, password, aws, None)
                .resolve_from_uri(None)
                .unwrap_err();
            assert!(error.to_string().contains("no credentials"), "{error}");
            assert!(!error.to_string().contains("hunter2"), "{error}");
        }
        for properties in [
            doc! { "AWS_SESSION_TOKEN": "t" },
            doc! { "aws_session_token": "t" },
            doc! { "UNKNOWN": "x" },
        ] {
            assert!(credential(None, None, aws, Some(properties))
                .resolve_from_uri(None)
                .is_err());
        }
    }

    #[test]
    fn oidc_environment_rules() {
        let oidc = Some(AuthMechanism::MongoDbOidc);
        let resolve = |username: Option<&str>, properties: Document| {
            credential(username, None, oidc, Some(properties)).resolve_from_uri(None)
        };
        assert!(resolve(None, doc! { "ENVIRONMENT": "test" }).is_ok());
        assert!(resolve(None, doc! { "ENVIRONMENT": "k8s" }).is_ok());
        assert!(resolve(
            Some("id"),
            doc! { "ENVIRONMENT": "azure", "TOKEN_RESOURCE": "r" }
        )
        .is_ok());
        assert!(resolve(Some("u"), doc! { "ENVIRONMENT": "test" }).is_err());
        assert!(resolve(None, doc! { "ENVIRONMENT": "gcp" }).is_err());
        assert!(resolve(None, doc! { "ENVIRONMENT": "test", "TOKEN_RESOURCE": "r" }).is_err());
        assert!(resolve(None, doc! { "ENVIRONMENT": "elsewhere" }).is_err());
        // No ENVIRONMENT: a callback comes in code; TOKEN_RESOURCE needs one.
        assert!(resolve(None, doc! {}).is_ok());
        assert!(resolve(None, doc! { "TOKEN_RESOURCE": "r" }).is_err());
        let err = resolve(None, doc! { "ENVIRONMENT": "test", "ALLOWED_HOSTS": "x" }).unwrap_err();
        assert!(err.to_string().contains("ALLOWED_HOSTS"), "{err}");
    }
}
