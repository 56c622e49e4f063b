//! The connection handshake (the MongoDB Handshake spec): the `client` metadata
//! document, the initial hello command, and the typed reply.
//!
//! Everything here is pure: the connection module sends what [`hello_command`] builds
//! and feeds the answer to [`HelloReply::parse`].

use bson::{doc, oid::ObjectId, Bson, Document};

use crate::error::{Error, ErrorKind, Result};
use crate::rt::HostInfo;
use crate::versioned_api::{declare, ServerApi};
use crate::wire::compression::Compressor;
use crate::wire::{MAX_MESSAGE_SIZE, MAX_WRITE_BATCH_SIZE};

/// The driver's name in the handshake.
pub const DRIVER_NAME: &str = "anymongo";

/// The oldest wire version the driver speaks (MongoDB 4.2), per the Server Discovery
/// and Monitoring spec's compatibility rules.
pub const MIN_WIRE_VERSION: i32 = 8;
/// The newest wire version the driver knows (MongoDB 8.2).
pub const MAX_WIRE_VERSION: i32 = 27;

/// The first wire version of MongoDB 8.2, the first server that knows `rawData`.
const RAW_DATA_WIRE_VERSION: i32 = 27;

/// The handshake's limit on the whole `client` document, BSON overhead included
/// (Handshake spec, "Limitations").
pub const MAX_METADATA_SIZE: usize = 512;

/// `maxBsonObjectSize` when a hello does not say: 16 MiB, the size every MongoDB
/// server has.
const DEFAULT_MAX_BSON_OBJECT_SIZE: usize = 16 * 1024 * 1024;

/// Builds the `client` metadata document for a host and an optional `appName`,
/// trimmed to [`MAX_METADATA_SIZE`] in the spec's order.
///
/// ```
/// use anymongo::handshake::client_metadata;
/// # let host = anymongo::rt::HostInfo { runtime: "native", platform: "tokio".into(),
/// #     os_type: "linux".into(), architecture: None, docker: false, env: |_| None,
/// #     read_file: anymongo::rt::no_file_access };
/// let metadata = client_metadata(&host, Some("inventory"));
/// assert_eq!(metadata.get_document("driver").unwrap().get_str("name").unwrap(), "anymongo");
/// assert_eq!(metadata.get_document("application").unwrap().get_str("name").unwrap(), "inventory");
/// ```
pub fn client_metadata(host: &HostInfo, app_name: Option<&str>) -> Document {
    let mut metadata = Document::new();
    if let Some(name) = app_name {
        metadata.insert("application", doc! { "name": name });
    }
    metadata.insert(
        "driver",
        doc! { "name": DRIVER_NAME, "version": env!("CARGO_PKG_VERSION") },
    );
    let mut os = doc! { "type": host.os_type.as_str() };
    if let Some(architecture) = &host.architecture {
        os.insert("architecture", architecture.as_str());
    }
    metadata.insert("os", os);
    metadata.insert(
        "platform",
        format!("anymongo {} runtime, {}", host.runtime, host.platform),
    );
    if let Some(env) = environment(host) {
        metadata.insert("env", env);
    }
    truncate_metadata(&mut metadata);
    metadata
}

/// What a library that wraps the driver adds to the `client` metadata (Handshake spec,
/// "Supporting Wrapping Libraries": `DriverInfoOptions`): each field is appended to
/// the driver's own after a `|`. An empty field counts as unset.
///
/// ```
/// use anymongo::handshake::DriverInfo;
/// let info = DriverInfo { name: "my-odm".into(), version: Some("2.0".into()), platform: None };
/// assert!(info.validate().is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
pub struct DriverInfo {
    /// The wrapping library's name, appended to `client.driver.name`.
    #[builder(!default)]
    pub name: String,
    /// Its version, appended to `client.driver.version`.
    pub version: Option<String>,
    /// Its platform, appended to `client.platform`.
    pub platform: Option<String>,
}

/// The separator of appended metadata (Handshake spec, "Appending metadata").
const SEPARATOR: char = '|';

impl DriverInfo {
    /// Refuses a field that contains the separator `|` (spec: "Drivers MUST throw an
    /// error if any of these strings contains that character").
    pub fn validate(&self) -> Result<()> {
        let fields = [
            Some(&self.name),
            self.version.as_ref(),
            self.platform.as_ref(),
        ];
        match fields
            .into_iter()
            .flatten()
            .find(|field| field.contains(SEPARATOR))
        {
            Some(field) => Err(Error::invalid_argument(format!(
                "driver info {field:?} contains the separator {SEPARATOR:?}"
            ))),
            None => Ok(()),
        }
    }

    /// Its fields with an empty one read as unset.
    fn normalized(&self) -> DriverInfo {
        let set = |field: &Option<String>| field.clone().filter(|field| !field.is_empty());
        DriverInfo {
            name: self.name.clone(),
            version: set(&self.version),
            platform: set(&self.platform),
        }
    }
}

/// The `client` metadata of a client's new connections: the driver's, with the
/// [`DriverInfo`] appended since (Handshake spec, "Metadata updates after MongoClient
/// initialization"). Connections already open keep what they sent.
#[derive(Debug)]
pub(crate) struct ClientMetadata {
    state: std::sync::Mutex<(Document, Vec<DriverInfo>)>,
}

impl ClientMetadata {
    /// The driver's own metadata, nothing appended yet.
    pub fn new(metadata: Document) -> ClientMetadata {
        ClientMetadata {
            state: std::sync::Mutex::new((metadata, Vec::new())),
        }
    }

    /// The driver's own metadata with the [`DriverInfo`] of the client's options
    /// appended (an invalid one is refused earlier, by `ClientOptions::validate`).
    pub fn with_driver_info(metadata: Document, info: Option<&DriverInfo>) -> ClientMetadata {
        let metadata = ClientMetadata::new(metadata);
        if let Some(info) = info {
            // `ClientOptions::validate`, which every client runs, already refused an
            // invalid one: there is no error left to report.
            let _ = metadata.append(info);
        }
        metadata
    }

    /// What a new connection sends.
    pub fn document(&self) -> Document {
        crate::signal::lock(&self.state).0.clone()
    }

    /// Appends `info`, unless the same was appended before (spec: duplicates "MUST
    /// not result in additional metadata being appended"); the result is trimmed to
    /// [`MAX_METADATA_SIZE`] again.
    pub fn append(&self, info: &DriverInfo) -> Result<()> {
        info.validate()?;
        let info = info.normalized();
        let mut state = crate::signal::lock(&self.state);
        let (metadata, appended) = &mut *state;
        if appended.contains(&info) {
            return Ok(());
        }
        let append = |document: &mut Document, key: &str, value: &Option<String>| {
            if let (Some(value), Ok(current)) = (value, document.get_str(key)) {
                let joined = format!("{current}{SEPARATOR}{value}");
                document.insert(key, joined);
            }
        };
        if let Ok(driver) = metadata.get_document_mut("driver") {
            append(
                driver,
                "name",
                &Some(info.name.clone()).filter(|name| !name.is_empty()),
            );
            append(driver, "version", &info.version);
        }
        append(metadata, "platform", &info.platform);
        truncate_metadata(metadata);
        appended.push(info);
        Ok(())
    }
}

/// The environment variables the handshake reads for `client.env` (Handshake spec,
/// "client.env"): a host that must not expose its whole environment (the npm
/// package) answers [`HostInfo::env`] for these names only.
pub const ENVIRONMENT_VARIABLES: &[&str] = &[
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_REGION",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "FUNCTIONS_WORKER_RUNTIME",
    "K_SERVICE",
    "FUNCTION_NAME",
    "FUNCTION_MEMORY_MB",
    "FUNCTION_TIMEOUT_SEC",
    "FUNCTION_REGION",
    "VERCEL",
    "VERCEL_REGION",
    "KUBERNETES_SERVICE_HOST",
];

/// `client.env`: FaaS and container detection (Handshake spec, "client.env").
fn environment(host: &HostInfo) -> Option<Document> {
    let var = |name: &str| (host.env)(name).filter(|value| !value.is_empty());
    let int = |name: &str| var(name).and_then(|value| value.parse::<i32>().ok());
    let mut env = Document::new();
    if let Some(name) = faas_name(host) {
        env.insert("name", name);
        let fields: &[(&str, &str, bool)] = match name {
            "aws.lambda" => &[
                ("region", "AWS_REGION", false),
                ("memory_mb", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", true),
            ],
            "gcp.func" => &[
                ("memory_mb", "FUNCTION_MEMORY_MB", true),
                ("timeout_sec", "FUNCTION_TIMEOUT_SEC", true),
                ("region", "FUNCTION_REGION", false),
            ],
            "vercel" => &[("region", "VERCEL_REGION", false)],
            _ => &[],
        };
        for &(field, variable, is_int) in fields {
            match is_int {
                true => int(variable).map(|value| env.insert(field, value)),
                false => var(variable).map(|value| env.insert(field, value)),
            };
        }
    }
    let mut container = Document::new();
    if host.docker {
        container.insert("runtime", "docker");
    }
    if var("KUBERNETES_SERVICE_HOST").is_some() {
        container.insert("orchestrator", "kubernetes");
    }
    if !container.is_empty() {
        env.insert("container", container);
    }
    (!env.is_empty()).then_some(env)
}

/// The FaaS platform the host runs on ("aws.lambda", "azure.func", "gcp.func",
/// "vercel"), if exactly one is detected (Handshake spec, "client.env"). Server
/// monitoring polls instead of streaming there (Server Monitoring spec).
pub(crate) fn faas_name(host: &HostInfo) -> Option<&'static str> {
    let var = |name: &str| (host.env)(name).filter(|value| !value.is_empty());
    let aws = var("AWS_EXECUTION_ENV").is_some_and(|v| v.starts_with("AWS_Lambda_"))
        || var("AWS_LAMBDA_RUNTIME_API").is_some();
    let azure = var("FUNCTIONS_WORKER_RUNTIME").is_some();
    let gcp = var("K_SERVICE").is_some() || var("FUNCTION_NAME").is_some();
    let vercel = var("VERCEL").is_some();
    // Vercel wins over AWS Lambda; any other combination is ambiguous and omitted.
    match (aws, azure, gcp, vercel) {
        (_, false, false, true) => Some("vercel"),
        (true, false, false, false) => Some("aws.lambda"),
        (false, true, false, false) => Some("azure.func"),
        (false, false, true, false) => Some("gcp.func"),
        _ => None,
    }
}

fn encoded_len(document: &Document) -> usize {
    document.to_vec().map_or(usize::MAX, |bytes| bytes.len())
}

/// Shrinks `metadata` below [`MAX_METADATA_SIZE`] in the order of the Handshake spec's
/// "Limitations": env fields but `name`, os fields but `type`, the whole env, then
/// the platform string.
fn truncate_metadata(metadata: &mut Document) {
    let steps: [fn(&mut Document); 3] = [
        |m| retain_only(m, "env", "name"),
        |m| retain_only(m, "os", "type"),
        |m| {
            m.remove("env");
        },
    ];
    for step in steps {
        if encoded_len(metadata) <= MAX_METADATA_SIZE {
            return;
        }
        step(metadata);
    }
    let excess = encoded_len(metadata).saturating_sub(MAX_METADATA_SIZE);
    if excess > 0 {
        if let Some(Bson::String(platform)) = metadata.get_mut("platform") {
            let mut keep = platform.len().saturating_sub(excess);
            while !platform.is_char_boundary(keep) {
                keep -= 1;
            }
            platform.truncate(keep);
        }
    }
}

fn retain_only(metadata: &mut Document, section: &str, keep: &str) {
    if let Ok(document) = metadata.get_document_mut(section) {
        let kept = document.remove(keep);
        document.clear();
        if let Some(value) = kept {
            document.insert(keep, value);
        }
    }
}

/// The first command sent on a new connection, and whether it is the legacy hello
/// (which goes out as OP_QUERY on `admin.$cmd`).
///
/// Seed 002's Handshake rules: with a server API version or `loadBalanced`, send
/// `hello` over OP_MSG; otherwise send legacy hello (`isMaster`) with `helloOk: true`
/// over OP_QUERY, so that servers that predate OP_MSG can still answer. The
/// `compressors` the client is willing to use go in `compression`, in the client's
/// order of preference (OP_COMPRESSED spec, "MongoDB Handshake Amendment"); with none
/// configured the field is left out, as servers that see no list compress nothing.
/// Every hello says `backpressure: true`: the driver retries overload errors as the
/// Client Backpressure spec says ("Handshake changes").
pub fn hello_command(
    metadata: &Document,
    load_balanced: bool,
    server_api: Option<&ServerApi>,
    compressors: &[Compressor],
) -> (Document, bool) {
    // A declared API version rules the legacy hello out (Stable API spec, "Handshake
    // behavior").
    let legacy = !load_balanced && server_api.is_none();
    let mut command = match legacy {
        true => doc! { "isMaster": 1, "helloOk": true },
        false => doc! { "hello": 1 },
    };
    command.insert("client", metadata.clone());
    command.insert("backpressure", true);
    if load_balanced {
        command.insert("loadBalanced", true);
    }
    if !compressors.is_empty() {
        let names = compressors.iter().map(|c| Bson::from(c.name()));
        command.insert("compression", names.collect::<Vec<_>>());
    }
    declare(server_api, &mut command);
    (command, legacy)
}

/// A server's answer to hello, typed (the fields SDAM and the connection use).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HelloReply {
    /// `isWritablePrimary` (or legacy `ismaster`).
    pub is_writable_primary: bool,
    /// Whether the server accepts `hello` from now on (`helloOk`).
    pub hello_ok: bool,
    /// `minWireVersion`.
    pub min_wire_version: i32,
    /// `maxWireVersion`.
    pub max_wire_version: i32,
    /// `maxBsonObjectSize` (default 16 MiB).
    pub max_bson_object_size: i32,
    /// `maxMessageSizeBytes`: 48 MB when absent or not positive, and never more
    /// ([`MAX_MESSAGE_SIZE`]).
    pub max_message_size_bytes: i32,
    /// `maxWriteBatchSize`: 100 000 when absent or not positive, and never more
    /// ([`MAX_WRITE_BATCH_SIZE`]).
    pub max_write_batch_size: i32,
    /// `setName`, for replica set members.
    pub set_name: Option<String>,
    /// `hosts` of a replica set.
    pub hosts: Vec<String>,
    /// `msg: "isdbgrid"` marks a mongos.
    pub is_mongos: bool,
    /// `secondary`.
    pub secondary: bool,
    /// `arbiterOnly`.
    pub arbiter_only: bool,
    /// `me`.
    pub me: Option<String>,
    /// `setVersion`.
    pub set_version: Option<i32>,
    /// `electionId`.
    pub election_id: Option<ObjectId>,
    /// `topologyVersion`, for streaming monitoring.
    pub topology_version: Option<Document>,
    /// `logicalSessionTimeoutMinutes`; `None` when sessions are not supported.
    pub logical_session_timeout_minutes: Option<i64>,
    /// `connectionId`: the server's id of this connection.
    pub connection_id: Option<i64>,
    /// `serviceId`, behind a load balancer.
    pub service_id: Option<ObjectId>,
    /// `saslSupportedMechs`, when asked for.
    pub sasl_supported_mechs: Option<Vec<String>>,
    /// `compression`: the compressors of the client's list the server supports
    /// (OP_COMPRESSED spec); empty when there are none in common.
    pub compression: Vec<String>,
    /// The whole reply.
    pub raw: Document,
}

impl HelloReply {
    /// The `rawData` field of a command to this server, for an operation given
    /// `raw_data`: sent only when set, and never to a server before MongoDB 8.2 (CRUD
    /// and Index Management specs, `rawData`: "This option MUST NOT be sent when
    /// connected to pre-8.2 servers"), where it is left out rather than refused.
    pub(crate) fn raw_data_field(&self, raw_data: Option<bool>) -> (&'static str, Option<Bson>) {
        let sent = raw_data.filter(|_| self.max_wire_version >= RAW_DATA_WIRE_VERSION);
        ("rawData", sent.map(Bson::Boolean))
    }

    /// Parses a successful (`ok: 1`) hello reply.
    pub fn parse(raw: Document) -> Result<HelloReply> {
        let int = |key: &str| raw.get(key).and_then(crate::bson_util::as_i64);
        let int32_or = |key: &str, default: i32| {
            int(key)
                .and_then(|value| i32::try_from(value).ok())
                .unwrap_or(default)
        };
        let flag = |key: &str| raw.get_bool(key).unwrap_or(false);
        let string = |key: &str| raw.get_str(key).ok().map(str::to_string);
        let strings = |key: &str| {
            raw.get_array(key).ok().map(|values| {
                values
                    .iter()
                    .filter_map(|value| value.as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
        };
        let reply = HelloReply {
            is_writable_primary: flag("isWritablePrimary") || flag("ismaster"),
            hello_ok: flag("helloOk"),
            min_wire_version: int32_or("minWireVersion", 0),
            max_wire_version: int32_or("maxWireVersion", 0),
            max_bson_object_size: int32_or(
                "maxBsonObjectSize",
                DEFAULT_MAX_BSON_OBJECT_SIZE as i32,
            ),
            max_message_size_bytes: protocol_limit(int("maxMessageSizeBytes"), MAX_MESSAGE_SIZE),
            max_write_batch_size: protocol_limit(int("maxWriteBatchSize"), MAX_WRITE_BATCH_SIZE),
            set_name: string("setName"),
            hosts: strings("hosts").unwrap_or_default(),
            is_mongos: raw.get_str("msg").ok() == Some("isdbgrid"),
            secondary: flag("secondary"),
            arbiter_only: flag("arbiterOnly"),
            me: string("me"),
            set_version: int("setVersion").and_then(|v| i32::try_from(v).ok()),
            election_id: raw.get_object_id("electionId").ok(),
            topology_version: raw.get_document("topologyVersion").ok().cloned(),
            logical_session_timeout_minutes: int("logicalSessionTimeoutMinutes"),
            connection_id: int("connectionId"),
            service_id: raw.get_object_id("serviceId").ok(),
            sasl_supported_mechs: strings("saslSupportedMechs"),
            compression: strings("compression").unwrap_or_default(),
            raw,
        };
        Ok(reply)
    }

    /// The size a message may have, to and from this server: `maxMessageSizeBytes`
    /// within the protocol's limit (also for a reply not made by [`parse`](Self::parse)).
    pub fn message_size_limit(&self) -> usize {
        protocol_limit(Some(self.max_message_size_bytes.into()), MAX_MESSAGE_SIZE) as usize
    }

    /// The largest document a write may give this server (a document to insert, a
    /// filter, an update or replacement): `maxBsonObjectSize`, 16 MiB when absent or
    /// not positive (Server Write Commands spec, "Request Size Limits"), and never more
    /// than one message may hold ([`message_size_limit`](Self::message_size_limit)):
    /// like the other limits, the server's word is trusted downwards only.
    pub fn document_size_limit(&self) -> usize {
        usize::try_from(self.max_bson_object_size)
            .ok()
            .filter(|&limit| limit > 0)
            .unwrap_or(DEFAULT_MAX_BSON_OBJECT_SIZE)
            .min(self.message_size_limit())
    }

    /// The most writes one command to this server may carry: `maxWriteBatchSize`
    /// within the protocol's limit (also for a reply not made by [`parse`](Self::parse)).
    pub fn write_batch_limit(&self) -> usize {
        protocol_limit(Some(self.max_write_batch_size.into()), MAX_WRITE_BATCH_SIZE) as usize
    }

    /// Checks that the server's wire versions overlap the driver's, with the message
    /// the Server Discovery and Monitoring spec prescribes.
    pub fn check_compatible(&self, address: &str) -> Result<()> {
        let message = if self.min_wire_version > MAX_WIRE_VERSION {
            format!(
                "Server at {address} requires wire version {}, but this version of anymongo only supports up to {MAX_WIRE_VERSION}.",
                self.min_wire_version
            )
        } else if self.max_wire_version < MIN_WIRE_VERSION {
            format!(
                "Server at {address} reports wire version {}, but this version of anymongo requires at least {MIN_WIRE_VERSION} (MongoDB 4.2).",
                self.max_wire_version
            )
        } else {
            return Ok(());
        };
        Err(Error::new(ErrorKind::IncompatibleServer { message }))
    }
}

/// Reads a BSON number as an integer (servers send int32, int64 or double).
/// A limit a server advertises, as the driver works with it: `max` (also the default)
/// when absent or not positive, and never above `max`. The server's word is trusted
/// downwards only: a hostile or broken hello must not make the driver accept frames, or
/// build batches, larger than the protocol's own limits (issue 21: a 2 GB frame was
/// buffered because a server advertised `maxMessageSizeBytes: 2147483647`).
fn protocol_limit(advertised: Option<i64>, max: usize) -> i32 {
    let max = i64::try_from(max).unwrap_or(i64::MAX);
    let limit = advertised
        .filter(|&value| value > 0)
        .map_or(max, |value| value.min(max));
    // Both limits are far below i32::MAX.
    i32::try_from(limit).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_data_is_sent_when_set_and_only_to_mongodb_8_2_and_later() {
        let hello = |max_wire_version| HelloReply {
            max_wire_version,
            ..HelloReply::default()
        };
        let v8_2 = hello(27);
        assert_eq!(
            v8_2.raw_data_field(Some(true)),
            ("rawData", Some(Bson::Boolean(true)))
        );
        assert_eq!(
            v8_2.raw_data_field(Some(false)),
            ("rawData", Some(Bson::Boolean(false)))
        );
        assert_eq!(v8_2.raw_data_field(None), ("rawData", None));
        // MongoDB 8.0 (wire version 25) never sees it.
        assert_eq!(hello(25).raw_data_field(Some(true)), ("rawData", None));
    }

    fn host(env: fn(&str) -> Option<String>) -> HostInfo {
        HostInfo {
            runtime: "native",
            platform: "tokio".into(),
            os_type: "linux".into(),
            architecture: Some("x86_64".into()),
            docker: false,
            env,
            read_file: crate::rt::no_file_access,
        }
    }

    #[test]
    fn metadata_has_driver_os_platform_and_runtime() {
        let metadata = client_metadata(&host(|_| None), None);
        assert_eq!(
            metadata
                .get_document("driver")
                .unwrap()
                .get_str("name")
                .ok(),
            Some("anymongo")
        );
        let os = metadata.get_document("os").unwrap();
        assert_eq!(
            (os.get_str("type").ok(), os.get_str("architecture").ok()),
            (Some("linux"), Some("x86_64"))
        );
        assert!(metadata
            .get_str("platform")
            .unwrap()
            .contains("native runtime"));
        assert!(!metadata.contains_key("env"));
        assert!(!metadata.contains_key("application"));
    }

    #[test]
    fn faas_detection_follows_the_table() {
        let metadata = client_metadata(
            &host(|name| match name {
                "AWS_EXECUTION_ENV" => Some("AWS_Lambda_java8".into()),
                "AWS_REGION" => Some("us-east-2".into()),
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" => Some("1024".into()),
                _ => None,
            }),
            None,
        );
        assert_eq!(
            metadata.get_document("env").unwrap(),
            &doc! { "name": "aws.lambda", "region": "us-east-2", "memory_mb": 1024 }
        );

        // Vercel wins over AWS; a non-integer memory size is omitted without error.
        let metadata = client_metadata(
            &host(|name| match name {
                "AWS_LAMBDA_RUNTIME_API" | "VERCEL" => Some("1".into()),
                "VERCEL_REGION" => Some("cdg1".into()),
                _ => None,
            }),
            None,
        );
        assert_eq!(
            metadata.get_document("env").unwrap(),
            &doc! { "name": "vercel", "region": "cdg1" }
        );

        let metadata = client_metadata(
            &host(|name| match name {
                "FUNCTIONS_WORKER_RUNTIME" | "K_SERVICE" => Some("x".into()),
                _ => None,
            }),
            None,
        );
        assert!(!metadata.contains_key("env"), "ambiguous FaaS is omitted");

        let metadata = client_metadata(
            &host(|name| match name {
                "FUNCTION_NAME" => Some("f".into()),
                "FUNCTION_MEMORY_MB" => Some("big".into()),
                "KUBERNETES_SERVICE_HOST" => Some("10.0.0.1".into()),
                _ => None,
            }),
            None,
        );
        assert_eq!(
            metadata.get_document("env").unwrap(),
            &doc! { "name": "gcp.func", "container": { "orchestrator": "kubernetes" } }
        );
    }

    #[test]
    fn oversized_metadata_is_trimmed_in_the_spec_order() {
        let mut long_host = host(|name| match name {
            "AWS_EXECUTION_ENV" => Some("AWS_Lambda_java8".into()),
            "AWS_REGION" => Some("r".repeat(400)),
            _ => None,
        });
        // Step 1 alone is enough: env keeps only its name, os is untouched.
        let metadata = client_metadata(&long_host, None);
        assert_eq!(
            metadata.get_document("env").unwrap(),
            &doc! { "name": "aws.lambda" }
        );
        assert!(metadata
            .get_document("os")
            .unwrap()
            .contains_key("architecture"));

        // A huge platform string forces every step, and then truncation.
        long_host.platform = "p".repeat(1000);
        let metadata = client_metadata(&long_host, Some("app"));
        assert!(!metadata.contains_key("env"));
        assert_eq!(
            metadata.get_document("os").unwrap(),
            &doc! { "type": "linux" }
        );
        assert_eq!(encoded_len(&metadata), MAX_METADATA_SIZE);
        assert!(metadata
            .get_str("platform")
            .unwrap()
            .starts_with("anymongo native runtime, ppp"));
    }

    /// The Handshake spec's test table ("Test 1: Test that environment metadata is
    /// properly captured"): each set of variables and the `env` it gives, reading
    /// only the [`ENVIRONMENT_VARIABLES`].
    #[test]
    fn the_spec_s_environment_table() {
        // (case, its variables, the env expected).
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<Document>);
        let cases: [Case; 9] = [
            (
                "valid AWS",
                &[
                    ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                    ("AWS_REGION", "us-east-2"),
                    ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024"),
                ],
                Some(doc! { "name": "aws.lambda", "region": "us-east-2", "memory_mb": 1024 }),
            ),
            (
                "valid Azure",
                &[("FUNCTIONS_WORKER_RUNTIME", "node")],
                Some(doc! { "name": "azure.func" }),
            ),
            (
                "valid GCP",
                &[
                    ("K_SERVICE", "servicename"),
                    ("FUNCTION_MEMORY_MB", "1024"),
                    ("FUNCTION_TIMEOUT_SEC", "60"),
                    ("FUNCTION_REGION", "us-central1"),
                ],
                Some(doc! {
                    "name": "gcp.func", "memory_mb": 1024, "timeout_sec": 60,
                    "region": "us-central1",
                }),
            ),
            (
                "valid Vercel",
                &[("VERCEL", "1"), ("VERCEL_REGION", "cdg1")],
                Some(doc! { "name": "vercel", "region": "cdg1" }),
            ),
            (
                "invalid: multiple providers",
                &[
                    ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                    ("FUNCTIONS_WORKER_RUNTIME", "node"),
                ],
                None,
            ),
            (
                // The first step of "Limitations": env keeps only its name.
                "invalid: long string",
                &[
                    ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                    ("AWS_REGION", &"a".repeat(512)),
                ],
                Some(doc! { "name": "aws.lambda" }),
            ),
            (
                "invalid: wrong types",
                &[
                    ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                    ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "big"),
                ],
                Some(doc! { "name": "aws.lambda" }),
            ),
            (
                "invalid: AWS_EXECUTION_ENV does not start with AWS_Lambda_",
                &[("AWS_EXECUTION_ENV", "EC2")],
                None,
            ),
            (
                "valid container and FaaS provider",
                &[
                    ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
                    ("AWS_REGION", "us-east-2"),
                    ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024"),
                    ("KUBERNETES_SERVICE_HOST", "1"),
                ],
                Some(doc! {
                    "name": "aws.lambda", "region": "us-east-2", "memory_mb": 1024,
                    "container": { "orchestrator": "kubernetes" },
                }),
            ),
        ];
        for (case, variables, expected) in cases {
            // A HostInfo's env is a plain fn: the case's variables go through a
            // thread-local, which each case sets before building its metadata.
            thread_local! {
                static VARIABLES: std::cell::RefCell<Vec<(String, String)>> =
                    const { std::cell::RefCell::new(Vec::new()) };
            }
            VARIABLES.with(|vars| {
                *vars.borrow_mut() = variables
                    .iter()
                    .map(|(name, value)| (name.to_string(), value.to_string()))
                    .collect();
            });
            let metadata = client_metadata(
                &host(|name| {
                    // Every name read is one a host restricted to the list answers.
                    assert!(
                        ENVIRONMENT_VARIABLES.contains(&name),
                        "{name} is not listed"
                    );
                    VARIABLES.with(|vars| {
                        let vars = vars.borrow();
                        vars.iter()
                            .find(|(var, _)| var == name)
                            .map(|(_, value)| value.clone())
                    })
                }),
                None,
            );
            assert!(encoded_len(&metadata) <= MAX_METADATA_SIZE, "{case}");
            assert_eq!(
                metadata.get_document("env").ok(),
                expected.as_ref(),
                "{case}"
            );
        }
    }

    #[test]
    fn driver_info_is_appended_once_with_a_separator() {
        let metadata = ClientMetadata::new(client_metadata(&host(|_| None), None));
        let platform = metadata.document().get_str("platform").unwrap().to_owned();
        let library = DriverInfo {
            name: "library".into(),
            version: Some("1.2".into()),
            platform: Some("Library Platform".into()),
        };
        metadata.append(&library).unwrap();
        metadata.append(&library).unwrap();
        let framework = DriverInfo {
            name: "framework".into(),
            version: None,
            platform: Some(String::new()),
        };
        metadata.append(&framework).unwrap();
        let document = metadata.document();
        let driver = document.get_document("driver").unwrap();
        assert_eq!(
            driver.get_str("name").unwrap(),
            "anymongo|library|framework"
        );
        let version = format!("{}|1.2", env!("CARGO_PKG_VERSION"));
        assert_eq!(driver.get_str("version").unwrap(), version);
        assert_eq!(
            document.get_str("platform").unwrap(),
            format!("{platform}|Library Platform")
        );
        let piped = DriverInfo {
            name: "a|b".into(),
            ..DriverInfo::default()
        };
        assert!(metadata.append(&piped).is_err());
        assert_eq!(metadata.document(), document);
    }

    #[test]
    fn legacy_hello_unless_load_balanced() {
        let metadata = doc! { "driver": { "name": "x" } };
        let (command, legacy) = hello_command(&metadata, false, None, &[]);
        assert!(legacy);
        assert_eq!(command.keys().next().map(String::as_str), Some("isMaster"));
        assert_eq!(command.get_bool("helloOk").ok(), Some(true));
        assert_eq!(command.get_bool("backpressure").ok(), Some(true));
        let (command, legacy) = hello_command(&metadata, true, None, &[]);
        assert!(!legacy);
        assert_eq!(command.keys().next().map(String::as_str), Some("hello"));
        assert_eq!(command.get_bool("loadBalanced").ok(), Some(true));
    }

    #[test]
    fn the_compressors_go_in_the_hello_in_the_clients_order_and_come_back_parsed() {
        let metadata = doc! { "driver": { "name": "x" } };
        let (command, _) = hello_command(&metadata, false, None, &[]);
        assert!(!command.contains_key("compression"));
        let (command, _) = hello_command(
            &metadata,
            false,
            None,
            &[Compressor::Zstd, Compressor::Snappy],
        );
        assert_eq!(
            command.get_array("compression").unwrap(),
            &vec![Bson::from("zstd"), Bson::from("snappy")]
        );
        let reply = HelloReply::parse(doc! { "compression": ["snappy", 7], "ok": 1 }).unwrap();
        assert_eq!(reply.compression, ["snappy"]);
        assert!(HelloReply::parse(doc! { "ok": 1 })
            .unwrap()
            .compression
            .is_empty());
    }

    #[test]
    fn a_declared_api_version_makes_the_handshake_hello_over_op_msg() {
        use crate::versioned_api::{ServerApi, ServerApiVersion};
        let metadata = doc! { "driver": { "name": "x" } };
        let api = ServerApi::builder()
            .version(ServerApiVersion::V1)
            .strict(true)
            .build();
        let (command, legacy) = hello_command(&metadata, false, Some(&api), &[]);
        assert!(!legacy);
        assert_eq!(command.keys().next().map(String::as_str), Some("hello"));
        assert_eq!(command.get_str("apiVersion").ok(), Some("1"));
        assert_eq!(command.get_bool("apiStrict").ok(), Some(true));
        assert!(!command.contains_key("helloOk"));
    }

    #[test]
    fn hello_reply_is_typed_and_checked_for_compatibility() {
        let reply = HelloReply::parse(doc! {
            "ismaster": true, "helloOk": true, "maxWireVersion": 21, "minWireVersion": 0,
            "setName": "rs", "hosts": ["a:1", "b:2"], "maxMessageSizeBytes": 1000,
            "logicalSessionTimeoutMinutes": 30.0, "ok": 1.0,
        })
        .unwrap();
        assert!(reply.is_writable_primary && reply.hello_ok);
        assert_eq!(reply.set_name.as_deref(), Some("rs"));
        assert_eq!(reply.hosts, ["a:1", "b:2"]);
        assert_eq!(reply.max_message_size_bytes, 1000);
        assert_eq!(reply.logical_session_timeout_minutes, Some(30));
        assert!(reply.check_compatible("a:1").is_ok());

        let old = HelloReply::parse(doc! { "maxWireVersion": 6 }).unwrap();
        let error = old.check_compatible("a:1").unwrap_err();
        assert!(
            error.to_string().contains("reports wire version 6"),
            "{error}"
        );
        let new = HelloReply::parse(doc! { "minWireVersion": 99, "maxWireVersion": 99 }).unwrap();
        assert!(new.check_compatible("a:1").is_err());
    }

    #[test]
    fn advertised_limits_are_capped_at_the_protocols_and_default_when_not_positive() {
        let hostile = HelloReply::parse(doc! {
            "maxMessageSizeBytes": i32::MAX, "maxWriteBatchSize": 1_i64 << 40,
        })
        .unwrap();
        assert_eq!(hostile.max_message_size_bytes, 48_000_000);
        assert_eq!(hostile.max_write_batch_size, 100_000);
        assert_eq!(hostile.message_size_limit(), MAX_MESSAGE_SIZE);
        assert_eq!(hostile.write_batch_limit(), MAX_WRITE_BATCH_SIZE);

        let broken =
            HelloReply::parse(doc! { "maxMessageSizeBytes": -1, "maxWriteBatchSize": 0 }).unwrap();
        assert_eq!(broken.max_message_size_bytes, 48_000_000);
        assert_eq!(broken.max_write_batch_size, 100_000);
        let absent = HelloReply::parse(doc! {}).unwrap();
        assert_eq!(absent.message_size_limit(), MAX_MESSAGE_SIZE);

        let small = HelloReply::parse(doc! { "maxMessageSizeBytes": 1000, "maxWriteBatchSize": 3 })
            .unwrap();
        assert_eq!(
            (small.message_size_limit(), small.write_batch_limit()),
            (1000, 3)
        );
        // A reply built by hand (tests, defaults) gets the same treatment.
        let by_hand = HelloReply {
            max_message_size_bytes: i32::MAX,
            ..HelloReply::default()
        };
        assert_eq!(by_hand.message_size_limit(), MAX_MESSAGE_SIZE);
        assert_eq!(by_hand.write_batch_limit(), MAX_WRITE_BATCH_SIZE);
    }
}
