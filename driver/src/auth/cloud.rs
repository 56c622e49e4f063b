//! Credentials from cloud metadata services, over the runtime's HTTP client
//! ([`crate::http`], over the Transport seam, so this runs wherever the driver does):
//!
//! - MONGODB-AWS's chain after the environment (Authentication spec, "Obtaining
//!   Credentials"): `AssumeRoleWithWebIdentity` at STS, the ECS container endpoint,
//!   EC2 instance metadata with IMDSv2; and the cache of what they give ("Caching
//!   Credentials");
//! - MONGODB-OIDC's built-in `azure` and `gcp` environments ("Built-in OIDC Environment
//!   Integrations"): machine callbacks that ask the Azure Instance Metadata Service and
//!   the Google Cloud metadata server for a token.
//!
//! The endpoints are the specs' fixed addresses. Each can be replaced by the variable
//! of the environment that the cloud's own SDKs read for the same purpose (and the
//! spec's tests do to reach their mock servers), which is no wider door than the
//! environment already is: `AWS_ENDPOINT_URL_STS` (or `AWS_ENDPOINT_URL`),
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`, `AWS_CONTAINER_CREDENTIALS_FULL_URI` (when
//! `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is unset; only `https`, or `http` to a
//! loopback address, as the AWS SDKs allow), `AZURE_POD_IDENTITY_AUTHORITY_HOST` and
//! `GCE_METADATA_HOST`.
//!
//! The response parsing is I/O-free and unit-tested here; the requests are tested
//! against mock endpoints in `tests/tests/cloud_auth.rs`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::aws::{self, AwsCredentials};
use super::oidc_callback::{
    token_file_error, CallbackContext, IdpServerResponse, OidcHost, RuntimeHost, TokenSource,
};
use super::{AuthMechanism, Credential};
use crate::error::{Error, Result};
use crate::http::{percent_encode, HttpClient, Response};
use crate::rt::{self, BoxFuture, Runtime};

/// The environment variables authentication reads: MONGODB-AWS's credentials and
/// chain, MONGODB-OIDC's token files (the `test` and `k8s` environments), and the
/// endpoints' replacements (above). A host that must not expose its
/// whole environment (the npm package) answers [`rt::HostInfo::env`] for these names
/// (and the handshake's) only.
pub const ENVIRONMENT_VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
    "GCE_METADATA_HOST",
    "OIDC_TOKEN_FILE",
    "AZURE_FEDERATED_TOKEN_FILE",
];

/// "Drivers SHOULD enforce a 10 second read timeout while waiting for incoming content
/// from both the ECS and EC2 endpoints"; the same bound serves STS.
pub const AWS_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// "Credentials are considered valid if they are more than five minutes away from
/// expiring" ("Caching Credentials").
pub const AWS_REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// How much of an endpoint's error body goes into an error message.
const ERROR_BODY_CHARS: usize = 500;

const STS_ENDPOINT: &str = "https://sts.amazonaws.com";
const ECS_ENDPOINT: &str = "http://169.254.170.2";
const EC2_ENDPOINT: &str = "http://169.254.169.254";
/// The lifetime asked of an IMDSv2 session token: the credentials are fetched at once.
const EC2_TOKEN_TTL_SECS: &str = "30";
const AZURE_ENDPOINT: &str = "http://169.254.169.254";
const GCP_HOST: &str = "metadata";

/// What fetching credentials from cloud endpoints needs of the host: HTTP (the
/// runtime's transport and clock), its environment, and for a token file (the web
/// identity token of `AssumeRoleWithWebIdentity`) its file access.
#[derive(Clone)]
pub struct CloudAccess {
    /// Requests, over the runtime's transport, with deadlines on its clock.
    pub http: HttpClient,
    /// The host's environment variables (see [`rt::HostInfo::env`]).
    pub env: fn(&str) -> Option<String>,
    /// Where token files are read: the credential's
    /// [`oidc_host`](Credential::oidc_host) if it has one, else the runtime's own
    /// environment and files ([`rt::HostInfo::read_file`]).
    pub files: Arc<dyn OidcHost>,
}

impl fmt::Debug for CloudAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudAccess")
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl CloudAccess {
    /// The access of a client with `runtime` and `credential`.
    pub fn new(runtime: &Runtime, credential: &Credential) -> Self {
        CloudAccess {
            http: HttpClient::new(runtime.transport.clone(), runtime.clock.clone()),
            env: runtime.host.env,
            files: credential
                .oidc_host
                .clone()
                .unwrap_or_else(|| Arc::new(RuntimeHost::of(&runtime.host))),
        }
    }

    /// Environment variable `name`, empty counting as unset.
    fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|value| !value.is_empty())
    }

    /// `call`, bounded by `timeout` on the client's clock; a transport failure or
    /// timeout is an authentication error of `mechanism` naming `what`.
    async fn request(
        &self,
        mechanism: AuthMechanism,
        what: &str,
        call: Call<'_>,
        timeout: Duration,
    ) -> Result<Response> {
        let deadline = self.http.clock().now() + timeout;
        self.http
            .request(call.method, call.url, call.headers, call.body, deadline)
            .await
            .map_err(|error| failure(mechanism, format!("{what}: {error}")))
    }
}

/// One request: method, URL, headers and body.
struct Call<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(&'a str, &'a str)],
    body: &'a [u8],
}

impl<'a> Call<'a> {
    fn get(url: &'a str, headers: &'a [(&'a str, &'a str)]) -> Self {
        Call {
            method: "GET",
            url,
            headers,
            body: &[],
        }
    }
}

fn failure(mechanism: AuthMechanism, message: impl fmt::Display) -> Error {
    super::auth_error(mechanism, "$external", message)
}

fn aws_failure(message: impl fmt::Display) -> Error {
    failure(AuthMechanism::MongoDbAws, message)
}

/// An error for a response whose status is not 200, with (the start of) its body, as
/// the spec asks of the OIDC environments.
fn status_error(mechanism: AuthMechanism, what: &str, response: &Response) -> Error {
    let body: String = response.text().chars().take(ERROR_BODY_CHARS).collect();
    failure(
        mechanism,
        format!("{what} answered HTTP {}: {body}", response.status),
    )
}

/// Temporary AWS credentials and when they expire, as seconds since the Unix epoch.
#[derive(Clone, PartialEq, Eq)]
struct Cached {
    credentials: AwsCredentials,
    expires_unix_secs: u64,
}

/// The client's cache of the AWS credentials fetched from endpoints ("Caching
/// Credentials"): shared by its connections, written atomically, never locked across
/// a request ("the driver MUST not place a lock on making a request"). Credentials
/// from the environment are never cached.
#[derive(Clone, Default)]
pub struct AwsCredentialCache(Arc<Mutex<Option<Cached>>>);

impl fmt::Debug for AwsCredentialCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expires = self.lock().as_ref().map(|cached| cached.expires_unix_secs);
        f.debug_struct("AwsCredentialCache")
            .field("expires_unix_secs", &expires)
            .finish()
    }
}

impl AwsCredentialCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Cached>> {
        // A plain value, replaced whole: a panic elsewhere cannot leave it half written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached credentials if they are more than [`AWS_REFRESH_MARGIN`] away from
    /// expiring at `now` (the wall clock); otherwise the cache is cleared.
    pub fn valid_at(&self, now: Duration) -> Option<AwsCredentials> {
        let mut cached = self.lock();
        match &*cached {
            Some(entry)
                if Duration::from_secs(entry.expires_unix_secs)
                    > now.saturating_add(AWS_REFRESH_MARGIN) =>
            {
                Some(entry.credentials.clone())
            }
            _ => {
                *cached = None;
                None
            }
        }
    }

    /// Forgets the credentials: "If AWS authentication fails for any reason, the
    /// cache MUST be cleared."
    pub fn clear(&self) {
        *self.lock() = None;
    }

    fn store(&self, credentials: AwsCredentials, expires_unix_secs: u64) {
        *self.lock() = Some(Cached {
            credentials,
            expires_unix_secs,
        });
    }
}

/// The AWS credentials of one authentication, in the spec's order ("Credential
/// Fetching Order"): valid cached ones ("Even if the environment variables are
/// present in subsequent authorization attempts, the driver MUST use the cached
/// credentials"); the environment ([`aws::credentials_from`], never cached); then,
/// when `cloud` is given, `AssumeRoleWithWebIdentity` if `AWS_WEB_IDENTITY_TOKEN_FILE`
/// and `AWS_ROLE_ARN` are set, else the ECS endpoint if
/// `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is set, else EC2 instance metadata; what
/// those give is cached until [`AWS_REFRESH_MARGIN`] before it expires.
pub async fn aws_credentials(
    credential: &Credential,
    env: fn(&str) -> Option<String>,
    cloud: Option<&CloudAccess>,
    cache: &AwsCredentialCache,
    now: Duration,
) -> Result<AwsCredentials> {
    if let Some(from_env) = aws::credentials_from(credential, &env)? {
        // The URI carries no credentials (checked above), so the cache is consulted
        // only after that check; a cached set still comes before the environment.
        return Ok(cache.valid_at(now).unwrap_or(from_env));
    }
    if let Some(cached) = cache.valid_at(now) {
        return Ok(cached);
    }
    let Some(cloud) = cloud else {
        return Err(Error::invalid_argument(
            "MONGODB-AWS found no credentials in the environment (AWS_ACCESS_KEY_ID, \
             AWS_SECRET_ACCESS_KEY), and this client cannot reach the AWS endpoints",
        ));
    };
    let fetched = if let (Some(token_file), Some(role_arn)) = (
        cloud.var("AWS_WEB_IDENTITY_TOKEN_FILE"),
        cloud.var("AWS_ROLE_ARN"),
    ) {
        web_identity(cloud, &token_file, &role_arn).await?
    } else if let Some(url) = ecs_url(&|name| cloud.var(name))? {
        ecs(cloud, &url).await?
    } else {
        ec2(cloud).await?
    };
    cache.store(fetched.credentials.clone(), fetched.expires_unix_secs);
    Ok(fetched.credentials)
}

/// STS `AssumeRoleWithWebIdentity` ("AssumeRoleWithWebIdentity"): a form POST, not
/// signed, with the token file's contents.
async fn web_identity(cloud: &CloudAccess, token_file: &str, role_arn: &str) -> Result<Cached> {
    let token = cloud
        .files
        .read_file(token_file)
        .map_err(|error| token_file_error("MONGODB-AWS", token_file, &error))?;
    let session_name = match cloud.var("AWS_ROLE_SESSION_NAME") {
        Some(name) => name,
        None => random_session_name()?,
    };
    let body = format!(
        "Action=AssumeRoleWithWebIdentity&RoleSessionName={}&RoleArn={}&WebIdentityToken={}&Version=2011-06-15",
        percent_encode(&session_name),
        percent_encode(role_arn),
        percent_encode(token.trim()),
    );
    let endpoint = cloud
        .var("AWS_ENDPOINT_URL_STS")
        .or_else(|| cloud.var("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|| STS_ENDPOINT.to_owned());
    let url = format!("{}/", endpoint.trim_end_matches('/'));
    let what = "STS AssumeRoleWithWebIdentity";
    let response = cloud
        .request(
            AuthMechanism::MongoDbAws,
            what,
            Call {
                method: "POST",
                url: &url,
                headers: &[
                    ("Accept", "application/json"),
                    ("Content-Type", "application/x-www-form-urlencoded"),
                ],
                body: body.as_bytes(),
            },
            AWS_ENDPOINT_TIMEOUT,
        )
        .await?;
    if response.status != 200 {
        return Err(status_error(AuthMechanism::MongoDbAws, what, &response));
    }
    parse_sts_response(&response.body)
}

/// A `RoleSessionName` when `AWS_ROLE_SESSION_NAME` is unset ("a suitable random
/// name can be chosen").
fn random_session_name() -> Result<String> {
    let mut bytes = [0; 8];
    getrandom::fill(&mut bytes).map_err(|error| {
        Error::invalid_argument(format!(
            "MONGODB-AWS could not draw a random session name: {error}"
        ))
    })?;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(format!("anymongo-{hex}"))
}

/// The ECS endpoint's URL: `http://169.254.170.2` + `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
/// ("ECS endpoint"), or, when that is unset, `AWS_CONTAINER_CREDENTIALS_FULL_URI` as
/// the AWS SDKs take it (`https`, or `http` to a loopback address); `None`: neither
/// is set, EC2 is next.
fn ecs_url(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>> {
    if let Some(relative) = var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        let separator = if relative.starts_with('/') { "" } else { "/" };
        return Ok(Some(format!("{ECS_ENDPOINT}{separator}{relative}")));
    }
    let Some(full) = var("AWS_CONTAINER_CREDENTIALS_FULL_URI") else {
        return Ok(None);
    };
    let url = crate::http::Url::parse(&full).map_err(|error| {
        Error::invalid_argument(format!(
            "MONGODB-AWS: AWS_CONTAINER_CREDENTIALS_FULL_URI: {error}"
        ))
    })?;
    let loopback = url.host == "localhost"
        || url
            .host
            .parse::<rt::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !url.https && !loopback {
        return Err(Error::invalid_argument(format!(
            "MONGODB-AWS: AWS_CONTAINER_CREDENTIALS_FULL_URI '{full}' must be https, or http \
             to a loopback address"
        )));
    }
    Ok(Some(full))
}

async fn ecs(cloud: &CloudAccess, url: &str) -> Result<Cached> {
    let what = "the ECS credentials endpoint";
    let response = cloud
        .request(
            AuthMechanism::MongoDbAws,
            what,
            Call::get(url, &[("Accept", "application/json")]),
            AWS_ENDPOINT_TIMEOUT,
        )
        .await?;
    if response.status != 200 {
        return Err(status_error(AuthMechanism::MongoDbAws, what, &response));
    }
    parse_credentials(&response.body, "Token")
}

/// EC2 instance metadata with IMDSv2 ("EC2 endpoint"): a session token by `PUT`, then
/// the role name, then its credentials, each with the token.
async fn ec2(cloud: &CloudAccess) -> Result<Cached> {
    let base = cloud
        .var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or_else(|| EC2_ENDPOINT.to_owned());
    let base = base.trim_end_matches('/');
    let what = "the EC2 instance metadata service";
    let response = cloud
        .request(
            AuthMechanism::MongoDbAws,
            what,
            Call {
                method: "PUT",
                url: &format!("{base}/latest/api/token"),
                headers: &[("X-aws-ec2-metadata-token-ttl-seconds", EC2_TOKEN_TTL_SECS)],
                body: &[],
            },
            AWS_ENDPOINT_TIMEOUT,
        )
        .await?;
    if response.status != 200 {
        return Err(status_error(AuthMechanism::MongoDbAws, what, &response));
    }
    let token = response.text().trim().to_owned();
    let roles = format!("{base}/latest/meta-data/iam/security-credentials/");
    let headers = [("X-aws-ec2-metadata-token", token.as_str())];
    let response = cloud
        .request(
            AuthMechanism::MongoDbAws,
            what,
            Call::get(&roles, &headers),
            AWS_ENDPOINT_TIMEOUT,
        )
        .await?;
    if response.status != 200 {
        return Err(status_error(AuthMechanism::MongoDbAws, what, &response));
    }
    let role = response.text();
    let role = role.lines().next().unwrap_or_default().trim();
    if role.is_empty() || role.contains(['/', '?', '#']) {
        return Err(aws_failure(format!("{what} named no valid IAM role")));
    }
    let response = cloud
        .request(
            AuthMechanism::MongoDbAws,
            what,
            Call::get(&format!("{roles}{}", percent_encode(role)), &headers),
            AWS_ENDPOINT_TIMEOUT,
        )
        .await?;
    if response.status != 200 {
        return Err(status_error(AuthMechanism::MongoDbAws, what, &response));
    }
    parse_credentials(&response.body, "Token")
}

/// The credentials of an ECS or EC2 response: `AccessKeyId`, `SecretAccessKey`, the
/// session token under `token_field`, and `Expiration`.
fn parse_credentials(body: &[u8], token_field: &str) -> Result<Cached> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|error| aws_failure(format!("the credentials are not JSON: {error}")))?;
    credentials_of(&json, token_field)
}

fn credentials_of(json: &Value, token_field: &str) -> Result<Cached> {
    let field = |name: &str| {
        json.get(name)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| aws_failure(format!("the credentials have no {name}")))
    };
    let expires_unix_secs = match json.get("Expiration") {
        Some(Value::String(date)) => parse_iso8601(date),
        // STS's JSON gives seconds since the epoch.
        Some(Value::Number(secs)) => secs.as_f64().filter(|secs| *secs >= 0.0).map(|s| s as u64),
        _ => None,
    }
    .ok_or_else(|| aws_failure("the credentials have no valid Expiration"))?;
    Ok(Cached {
        credentials: AwsCredentials {
            access_key_id: field("AccessKeyId")?,
            secret_access_key: field("SecretAccessKey")?,
            session_token: Some(field(token_field)?),
        },
        expires_unix_secs,
    })
}

/// STS's answer: `Credentials`, at the top as the spec shows it or inside
/// `AssumeRoleWithWebIdentityResponse.AssumeRoleWithWebIdentityResult` as STS sends it;
/// the session token is `SessionToken` there.
fn parse_sts_response(body: &[u8]) -> Result<Cached> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|error| aws_failure(format!("the STS response is not JSON: {error}")))?;
    let credentials = json
        .get("Credentials")
        .or_else(|| {
            json.get("AssumeRoleWithWebIdentityResponse")?
                .get("AssumeRoleWithWebIdentityResult")?
                .get("Credentials")
        })
        .ok_or_else(|| aws_failure("the STS response has no Credentials"))?;
    credentials_of(credentials, "SessionToken")
}

/// Seconds since the Unix epoch of an ISO 8601 UTC date-time as AWS writes them
/// (`2024-01-02T03:04:05Z`, fractions of a second and a `+00:00` offset allowed).
fn parse_iso8601(text: &str) -> Option<u64> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date = date.splitn(3, '-').map(str::parse::<u64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (time, offset_secs): (&str, i64) = if let Some(time) = time.strip_suffix(['Z', 'z']) {
        (time, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (time, offset) = time.split_at(at);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (hours, minutes) = offset[1..].split_once(':')?;
        let offset = hours.parse::<i64>().ok()? * 3600 + minutes.parse::<i64>().ok()? * 60;
        (time, sign * offset)
    };
    let time = time.split('.').next()?;
    let mut time = time.splitn(3, ':').map(str::parse::<u64>);
    let (hour, minute, second) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days from 1970-01-01 of the proleptic Gregorian date, counting years from March
    // so that the leap day ends each year (the inverse of `aws::civil_from_days`).
    let year = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = year / 400;
    let year_of_era = year % 400;
    let march_month = (month + 9) % 12;
    let day_of_year = (153 * march_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = (era * 146_097 + day_of_era).checked_sub(719_468)?;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    u64::try_from(secs as i64 - offset_secs).ok()
}

/// Which cloud's metadata service a built-in OIDC environment asks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Provider {
    /// `azure`: the managed identity of an Azure VM, with an optional client id (the
    /// credential's user name).
    Azure { client_id: Option<String> },
    /// `gcp`: the identity token of a Google Cloud VM's default service account.
    Gcp,
}

/// The machine callback of the `azure` and `gcp` environments: one request to the
/// metadata service per call, bounded by the callback's timeout; it caches nothing
/// ("The callback itself MUST not perform any caching").
pub(super) struct MetadataTokenSource {
    provider: Provider,
    resource: String,
    cloud: CloudAccess,
}

impl MetadataTokenSource {
    /// The callback of environment `azure` or `gcp` (`None` for any other), asking
    /// for a token for `resource` (`TOKEN_RESOURCE`).
    pub(super) fn new(
        environment: &str,
        resource: &str,
        username: Option<&str>,
        cloud: CloudAccess,
    ) -> Option<Self> {
        let provider = match environment {
            "azure" => Provider::Azure {
                client_id: username.map(str::to_owned),
            },
            "gcp" => Provider::Gcp,
            _ => return None,
        };
        Some(MetadataTokenSource {
            provider,
            resource: resource.to_owned(),
            cloud,
        })
    }

    /// The request's URL and headers ("Azure", "GCP").
    fn request(&self) -> (String, Vec<(&'static str, &'static str)>) {
        let resource = percent_encode(&self.resource);
        match &self.provider {
            Provider::Azure { client_id } => {
                let base = self
                    .cloud
                    .var("AZURE_POD_IDENTITY_AUTHORITY_HOST")
                    .unwrap_or_else(|| AZURE_ENDPOINT.to_owned());
                let mut url = format!(
                    "{}/metadata/identity/oauth2/token?api-version=2018-02-01&resource={resource}",
                    base.trim_end_matches('/')
                );
                if let Some(client_id) = client_id {
                    url.push_str(&format!("&client_id={}", percent_encode(client_id)));
                }
                (
                    url,
                    vec![("Accept", "application/json"), ("Metadata", "true")],
                )
            }
            Provider::Gcp => {
                let host = self
                    .cloud
                    .var("GCE_METADATA_HOST")
                    .unwrap_or_else(|| GCP_HOST.to_owned());
                (
                    format!(
                        "http://{host}/computeMetadata/v1/instance/service-accounts/default/identity?audience={resource}"
                    ),
                    vec![("Metadata-Flavor", "Google")],
                )
            }
        }
    }

    async fn fetch(&self, timeout: Duration) -> Result<IdpServerResponse> {
        let what = match self.provider {
            Provider::Azure { .. } => "the Azure Instance Metadata Service",
            Provider::Gcp => "the Google Cloud metadata server",
        };
        let (url, headers) = self.request();
        let response = self
            .cloud
            .request(
                AuthMechanism::MongoDbOidc,
                what,
                Call::get(&url, &headers),
                timeout,
            )
            .await?;
        if response.status != 200 {
            return Err(status_error(AuthMechanism::MongoDbOidc, what, &response));
        }
        match self.provider {
            Provider::Azure { .. } => parse_azure_token(&response.body),
            Provider::Gcp => {
                let token = response.text().trim().to_owned();
                if token.is_empty() {
                    return Err(failure(
                        AuthMechanism::MongoDbOidc,
                        format!("{what} gave an empty token"),
                    ));
                }
                Ok(IdpServerResponse::builder().access_token(token).build())
            }
        }
    }
}

/// The Azure response's `access_token`, and its `expires_in` (seconds, a string).
fn parse_azure_token(body: &[u8]) -> Result<IdpServerResponse> {
    let json: Value = serde_json::from_slice(body).map_err(|error| {
        failure(
            AuthMechanism::MongoDbOidc,
            format!("the Azure token response is not JSON: {error}"),
        )
    })?;
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            failure(
                AuthMechanism::MongoDbOidc,
                "the Azure token response has no access_token",
            )
        })?;
    let expires = match json.get("expires_in") {
        Some(Value::String(secs)) => secs.parse().ok(),
        Some(Value::Number(secs)) => secs.as_u64(),
        _ => None,
    }
    .map(Duration::from_secs);
    Ok(IdpServerResponse::builder()
        .access_token(token.to_owned())
        .expires(expires)
        .build())
}

impl TokenSource for MetadataTokenSource {
    fn call(&self, context: CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> {
        let source = MetadataTokenSource {
            provider: self.provider.clone(),
            resource: self.resource.clone(),
            cloud: self.cloud.clone(),
        };
        // "The timeout should equal the callbackTimeoutMS parameter given to the
        // callback."
        let timeout = context
            .timeout
            .unwrap_or(super::oidc::DEFAULT_CALLBACK_TIMEOUT);
        rt::boxed(async move { source.fetch(timeout).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_dates() {
        for (text, secs) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2019-11-12T21:01:22Z", Some(1_573_592_482)),
            ("2024-02-29T01:01:01Z", Some(1_709_168_461)),
            ("2024-02-29T01:01:01.123Z", Some(1_709_168_461)),
            ("2024-02-29T03:01:01+02:00", Some(1_709_168_461)),
            ("2024-02-28T23:01:01-02:00", Some(1_709_168_461)),
            ("2099-12-31T23:59:59Z", Some(4_102_444_799)),
            ("2024-13-01T00:00:00Z", None),
            ("2024-01-01", None),
            ("yesterday", None),
            ("", None),
        ] {
            assert_eq!(parse_iso8601(text), secs, "{text}");
        }
        // The inverse of the signing date's formatting.
        for secs in [0, 951_782_400, 1_709_168_461, 4_102_444_799] {
            let amz = aws::amz_date(secs);
            let iso = format!(
                "{}-{}-{}T{}:{}:{}Z",
                &amz[..4],
                &amz[4..6],
                &amz[6..8],
                &amz[9..11],
                &amz[11..13],
                &amz[13..15]
            );
            assert_eq!(parse_iso8601(&iso), Some(secs), "{iso}");
        }
    }

    #[test]
    fn endpoint_responses() {
        let ec2 = br#"{"Code":"Success","LastUpdated":"2024-01-01T00:00:00Z","Type":"AWS-HMAC",
            "AccessKeyId":"AKID","SecretAccessKey":"SECRET","Token":"TOKEN",
            "Expiration":"2024-01-01T06:00:00Z"}"#;
        let cached = parse_credentials(ec2, "Token").unwrap();
        assert_eq!(cached.credentials.access_key_id, "AKID");
        assert_eq!(cached.credentials.session_token.as_deref(), Some("TOKEN"));
        assert_eq!(cached.expires_unix_secs, 1_704_088_800);
        for bad in [
            &br#"{"AccessKeyId":"AKID","SecretAccessKey":"SECRET","Token":"TOKEN"}"#[..],
            br#"{"AccessKeyId":"AKID","Token":"TOKEN","Expiration":"2024-01-01T06:00:00Z"}"#,
            br#"{"AccessKeyId":"","SecretAccessKey":"S","Token":"T","Expiration":"2024-01-01T06:00:00Z"}"#,
            b"<html>",
        ] {
            assert!(parse_credentials(bad, "Token").is_err());
        }
        let spec = br#"{"Credentials":{"AccessKeyId":"A","Expiration":"2024-01-01T06:00:00Z",
            "RoleArn":"arn","SecretAccessKey":"S","SessionToken":"T"}}"#;
        let cached = parse_sts_response(spec).unwrap();
        assert_eq!(cached.credentials.session_token.as_deref(), Some("T"));
        let sts = br#"{"AssumeRoleWithWebIdentityResponse":{"AssumeRoleWithWebIdentityResult":
            {"Credentials":{"AccessKeyId":"A","Expiration":1.7040888E9,"SecretAccessKey":"S",
            "SessionToken":"T"}}}}"#;
        assert_eq!(
            parse_sts_response(sts).unwrap().expires_unix_secs,
            1_704_088_800
        );
        assert!(parse_sts_response(br#"{"Error":{}}"#).is_err());

        let azure = br#"{"access_token":"eyJ0eXAi","refresh_token":"","expires_in":"3599",
            "expires_on":"1506484173","resource":"https://management.azure.com/","token_type":"Bearer"}"#;
        let token = parse_azure_token(azure).unwrap();
        assert_eq!(token.access_token, "eyJ0eXAi");
        assert_eq!(token.expires, Some(Duration::from_secs(3599)));
        assert!(parse_azure_token(br#"{"error":"invalid_request"}"#).is_err());
    }

    /// The ECS endpoint: the spec's link-local address and the relative URI; else a
    /// full URI as the AWS SDKs allow it (https, or http to loopback); else none.
    #[test]
    fn ecs_endpoint_urls() {
        let url = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect();
            ecs_url(&|name| {
                vars.iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.clone())
            })
        };
        let relative = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
        let full = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
        assert_eq!(
            url(&[(relative, "/v2/credentials/abc")])
                .unwrap()
                .as_deref(),
            Some("http://169.254.170.2/v2/credentials/abc")
        );
        assert_eq!(
            url(&[(relative, "v2/x"), (full, "http://127.0.0.1:9/y")])
                .unwrap()
                .as_deref(),
            Some("http://169.254.170.2/v2/x")
        );
        for allowed in [
            "http://127.0.0.1:9/creds",
            "http://localhost/creds",
            "http://[::1]:80/creds",
            "https://creds.example/",
        ] {
            assert_eq!(url(&[(full, allowed)]).unwrap().as_deref(), Some(allowed));
        }
        for refused in [
            "http://169.254.169.254/creds",
            "http://example.com/",
            "ftp://x/",
        ] {
            assert!(url(&[(full, refused)]).is_err(), "{refused}");
        }
        assert_eq!(url(&[]).unwrap(), None);
    }

    #[test]
    fn the_cache_refreshes_five_minutes_before_expiry() {
        let cache = AwsCredentialCache::default();
        let credentials = AwsCredentials {
            access_key_id: "A".into(),
            secret_access_key: "S".into(),
            session_token: Some("T".into()),
        };
        cache.store(credentials.clone(), 1_000);
        let at = Duration::from_secs;
        assert_eq!(cache.valid_at(at(699)), Some(credentials.clone()));
        assert_eq!(cache.valid_at(at(700)), None);
        // Cleared, not merely stale.
        assert_eq!(cache.valid_at(at(0)), None);
        cache.store(credentials, 1_000);
        cache.clear();
        assert_eq!(cache.valid_at(at(0)), None);
    }
}
