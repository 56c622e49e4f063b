//! A gateway that answers the MongoDB Atlas Data API v1 (retired by Atlas in
//! September 2025) over anymongo, so that an application written for the Data API
//! changes only its base URL and its key (issue 48).
//!
//! This library is the core every runtime shares: a [`Request`] (method, path,
//! headers, body bytes) in, a [`Response`] out, through [`Gateway::handle`]. The
//! runtime reads the request (at most [`Gateway::max_body_bytes`] of body), gives the
//! core a way to get a [`Client`], and writes the response. The wasi:http component
//! is this crate's binary (`src/main.rs`); the Cloudflare Worker is the crate in
//! `worker/` (this core compiled with wasm-bindgen, sockets from `cloudflare:sockets`).
//!
//! # The protocol
//!
//! `POST <base URL>/action/<action>` (any path ending so: the Data API's was
//! `…/app/<app id>/endpoint/data/v1/action/findOne`), header `apiKey` (or `api-key`, the
//! spelling of the Data API's own curl examples), a JSON body with
//! `dataSource` (any name: the gateway has one deployment), `database`, `collection` and
//! the action's fields — see [`Action`]. `Content-Type: application/json` takes relaxed
//! Extended JSON, `application/ejson` canonical (both read type wrappers such as
//! `{"$oid": …}`). The response is in the format `Accept` asks for
//! (`application/json`: relaxed; `application/ejson`: canonical), else in the request's.
//!
//! Failures are `{"error": "<what>", "error_code": "<code>"}` (always JSON):
//!
//! | status | `error_code` | when |
//! | --- | --- | --- |
//! | 400 | `InvalidParameter` | a body that is not a JSON object, a missing or mistyped field, an unknown content type, input the driver refuses before sending it (an update without operators…); a query the server refuses (`MongoDBError`) |
//! | 401 | `InvalidSession` | no `apiKey` (or `api-key`) header, or a key the configuration does not accept |
//! | 403 | `NoMatchingRuleFound` | the key's allow-list does not grant the action on the namespace (or one an aggregation reaches) |
//! | 403 | `ServerJavaScriptRefused` | `$where`, `$function` or `$accumulator` when refused |
//! | 404 | `ActionNotFound` | a path that is not `…/action/<one of the ten>` |
//! | 405 | `MethodNotAllowed` | a method other than POST |
//! | 409 | `DuplicateKey` | an insert of an `_id` that exists |
//! | 413 | `PayloadTooLarge` | a body over `maxBodyBytes` |
//! | 500 | `InternalServerError` | the gateway's configuration, or its database credentials, are wrong |
//! | 503 | `ServiceUnavailable` | no database server answered within `timeoutMS` |
//! | 504 | `GatewayTimeout` | the operation did not finish within `timeoutMS` |
//!
//! No failure carries the driver's text about connections or authentication (which
//! names hosts and users); a server's refusal of a query or write carries the server's
//! message.

mod action;
mod config;

use std::future::Future;
use std::time::Duration;

use anymongo::bson::{Bson, Document};
use anymongo::error::WriteFailure;
use anymongo::options::ClientOptions;
use anymongo::rt::Runtime;
use anymongo::{srv, Client, ErrorKind};
use serde_json::json;

pub use action::Action;
pub use config::{ApiKey, Config, Rule};

use action::Call;

/// An HTTP request, as the runtime read it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `POST`, …
    pub method: String,
    /// The URL's path, without its query.
    pub path: String,
    /// The headers (names in any case); a runtime may drop those that are not UTF-8.
    pub headers: Vec<(String, String)>,
    /// The body, at most [`Gateway::max_body_bytes`] of it.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The HTTP response to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// `application/json` or `application/ejson`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Response {
    /// The body as JSON (for tests and logs).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Relaxed Extended JSON.
const JSON: &str = "application/json";
/// Canonical Extended JSON.
const EJSON: &str = "application/ejson";

/// A request that fails: its status, `error_code` and message.
#[derive(Debug)]
pub(crate) struct Failure {
    status: u16,
    code: &'static str,
    message: String,
}

impl Failure {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            status,
            code,
            message: message.into(),
        }
    }

    /// A 400 for a request that does not say what it means.
    fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(400, "InvalidParameter", message)
    }

    /// How a failure to make the client answers: an invalid argument there is the
    /// gateway's connection string (a 500 that does not quote it: it may hold a
    /// password), not the caller's input.
    fn connecting(error: anymongo::Error) -> Failure {
        match &*error.kind {
            ErrorKind::InvalidArgument { .. } => Failure::new(
                500,
                "InternalServerError",
                "the gateway's connection string is not valid",
            ),
            _ => Failure::from(error),
        }
    }

    fn into_response(self) -> Response {
        Response {
            status: self.status,
            content_type: JSON,
            body: json!({ "error": self.message, "error_code": self.code }).to_string(),
        }
    }
}

/// The server's error code for a duplicate key.
const DUPLICATE_KEY: i32 = 11000;

/// How the driver's errors answer. The text of those about reaching or
/// authenticating to the deployment stays out of the response: it names hosts, users
/// and mechanisms, of interest to the gateway's operator (who has the logs of its
/// runtime), not to its callers.
impl From<anymongo::Error> for Failure {
    fn from(error: anymongo::Error) -> Failure {
        let unreachable = || {
            Failure::new(
                503,
                "ServiceUnavailable",
                "the database could not be reached within the gateway's timeoutMS",
            )
        };
        match &*error.kind {
            ErrorKind::Command(command) => Failure::new(
                400,
                "MongoDBError",
                format!(
                    "{} ({}): {}",
                    command.code_name, command.code, command.message
                ),
            ),
            ErrorKind::Write(WriteFailure::WriteError(write)) => {
                if write.code == DUPLICATE_KEY {
                    Failure::new(409, "DuplicateKey", write.message.clone())
                } else {
                    Failure::new(400, "MongoDBError", write.message.clone())
                }
            }
            ErrorKind::InsertMany(failure) => {
                let first = failure.write_errors.as_deref().and_then(<[_]>::first);
                match first {
                    Some(write) if write.code == DUPLICATE_KEY => Failure::new(
                        409,
                        "DuplicateKey",
                        format!("document {}: {}", write.index, write.message),
                    ),
                    Some(write) => Failure::new(
                        400,
                        "MongoDBError",
                        format!("document {}: {}", write.index, write.message),
                    ),
                    None => Failure::new(500, "InternalServerError", "the write concern failed"),
                }
            }
            ErrorKind::OperationTimeout { during, cause, .. } => {
                let reached = *during != "server selection"
                    && cause
                        .as_ref()
                        .is_none_or(|cause| !is_unreachable(&cause.kind));
                if reached {
                    Failure::new(
                        504,
                        "GatewayTimeout",
                        "the operation did not finish within the gateway's timeoutMS",
                    )
                } else {
                    unreachable()
                }
            }
            // The driver refusing the request's input before sending it (an update
            // without operators, a replacement with them, an empty insertMany…): the
            // caller's mistake, as the server's refusals are.
            ErrorKind::InvalidArgument { message } => Failure::invalid(message.clone()),
            kind if is_unreachable(kind) => unreachable(),
            ErrorKind::Authentication { .. } => Failure::new(
                500,
                "InternalServerError",
                "the gateway could not authenticate to the database",
            ),
            _ => Failure::new(500, "InternalServerError", "the operation failed"),
        }
    }
}

/// Whether `kind` says no server could be reached (or kept).
fn is_unreachable(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ServerSelection { .. }
            | ErrorKind::Io(_)
            | ErrorKind::DnsResolve { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::WaitQueueTimeout { .. }
            | ErrorKind::PoolClosed { .. }
    )
}

/// The gateway: its configuration, and the request handling of every runtime.
#[derive(Debug, Clone)]
pub struct Gateway {
    config: Config,
}

impl Gateway {
    /// A gateway with `config`.
    pub fn new(config: Config) -> Gateway {
        Gateway { config }
    }

    /// The largest body [`Gateway::handle`] accepts: a runtime reads no more than one
    /// byte beyond it, and answers [`Gateway::body_too_large`] beyond it.
    pub fn max_body_bytes(&self) -> usize {
        self.config.max_body_bytes
    }

    /// The 413 of a body over [`Gateway::max_body_bytes`].
    pub fn body_too_large(&self) -> Response {
        Failure::new(
            413,
            "PayloadTooLarge",
            format!(
                "the body is larger than the gateway's limit of {} bytes",
                self.config.max_body_bytes
            ),
        )
        .into_response()
    }

    /// Applies the gateway's bounds to a client's options: the configuration's
    /// `timeoutMS` on every operation, whatever the connection string says.
    pub fn configure(&self, options: &mut ClientOptions) {
        options.timeout = Some(Duration::from_millis(self.config.timeout_ms));
    }

    /// A client for `uri` on the target's built-in runtime, with
    /// [`Gateway::configure`]'s bounds.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub async fn connect(&self, uri: &str) -> anymongo::Result<Client> {
        let mut options = ClientOptions::parse(uri).await?;
        self.configure(&mut options);
        Client::with_options(options)
    }

    /// A client for `uri` on `runtime` (a `mongodb+srv://` name looked up through its
    /// resolver, within the configuration's `timeoutMS`), with [`Gateway::configure`]'s
    /// bounds: for runtimes whose seams the caller supplies, such as the Worker
    /// (`worker/`), whose sockets come from JavaScript.
    pub async fn connect_with(&self, uri: &str, runtime: Runtime) -> anymongo::Result<Client> {
        let mut options = srv::resolve_uri(
            uri,
            runtime.resolver.as_ref(),
            runtime.clock.as_ref(),
            Duration::from_millis(self.config.timeout_ms),
        )
        .await?;
        self.configure(&mut options);
        Client::with_runtime(options, runtime)
    }

    /// The 500 of a runtime whose own configuration (connection string, JSON) is
    /// missing or wrong: `what` must not quote secrets.
    pub fn misconfigured(what: impl Into<String>) -> Response {
        Failure::new(500, "InternalServerError", what).into_response()
    }

    /// Answers `request`. `client` is called only for a request that passed every
    /// check (key, action, body, allow-list), so that the rest never reach the
    /// database; its error answers as the operation's would.
    pub async fn handle<F, C>(&self, request: &Request, client: F) -> Response
    where
        F: FnOnce() -> C,
        C: Future<Output = anymongo::Result<Client>>,
    {
        match self.answer(request, client).await {
            Ok(response) => response,
            Err(failure) => failure.into_response(),
        }
    }

    async fn answer<F, C>(&self, request: &Request, client: F) -> Result<Response, Failure>
    where
        F: FnOnce() -> C,
        C: Future<Output = anymongo::Result<Client>>,
    {
        if request.body.len() > self.config.max_body_bytes {
            return Ok(self.body_too_large());
        }
        let key = request
            .header("apiKey")
            .or_else(|| request.header("api-key"))
            .and_then(|given| self.config.key(given))
            .ok_or_else(|| {
                Failure::new(
                    401,
                    "InvalidSession",
                    "invalid session: send an API key the gateway accepts in the apiKey header",
                )
            })?;
        let path = request.path.trim_end_matches('/');
        let action = path
            .rsplit_once("/action/")
            .and_then(|(_, name)| Action::from_name(name))
            .ok_or_else(|| {
                Failure::new(
                    404,
                    "ActionNotFound",
                    format!(
                        "no action at {path}: POST to <base URL>/action/<action>, one of {}",
                        Action::ALL.map(Action::name).join(", ")
                    ),
                )
            })?;
        if request.method != "POST" {
            return Err(Failure::new(
                405,
                "MethodNotAllowed",
                format!("{} takes POST", action.name()),
            ));
        }
        let output = response_format(request)?;
        let call = Call::parse(action, &request.body)?;
        let mut namespaces = vec![(call.database.clone(), call.collection.clone())];
        namespaces.extend(call.other_namespaces());
        if let Some((database, collection)) = namespaces
            .iter()
            .find(|(database, collection)| !key.allows(database, collection, action))
        {
            return Err(Failure::new(
                403,
                "NoMatchingRuleFound",
                format!(
                    "this API key may not run {} on {database}.{collection}",
                    action.name()
                ),
            ));
        }
        if !self.config.allow_server_java_script {
            call.refuse_server_java_script()?;
        }
        let client = client().await.map_err(Failure::connecting)?;
        let (status, body) = call.run(&client, &self.config).await?;
        Ok(render(status, body, output))
    }
}

/// The response's format: `Accept`'s, else the body's `Content-Type`
/// (`application/json` when none). Both body formats are read alike, as Extended JSON:
/// canonical Extended JSON is a subset of what a relaxed reader accepts.
fn response_format(request: &Request) -> Result<&'static str, Failure> {
    let media = |value: &str| -> Option<&'static str> {
        let essence = value.split(';').next().unwrap_or("").trim();
        [JSON, EJSON]
            .into_iter()
            .find(|known| essence.eq_ignore_ascii_case(known))
    };
    let input = match request.header("content-type") {
        None => JSON,
        Some(value) => media(value).ok_or_else(|| {
            Failure::invalid(format!(
                "Content-Type {value:?} is neither {JSON} nor {EJSON}"
            ))
        })?,
    };
    let output = request
        .header("accept")
        .and_then(|accept| accept.split(',').find_map(media))
        .unwrap_or(input);
    Ok(output)
}

/// A response body in `format`.
fn render(status: u16, body: Document, format: &'static str) -> Response {
    let body = if format == EJSON {
        Bson::Document(body).into_canonical_extjson()
    } else {
        Bson::Document(body).into_relaxed_extjson()
    };
    Response {
        status,
        content_type: format,
        body: body.to_string(),
    }
}

#[cfg(test)]
mod tests;
