//! The structure of a unified test file, checked before anything runs (spec "Schema
//! Version": a runner MUST refuse a file that does not validate against the schema of
//! its version). A hand-written equivalent of the spec's JSON schema, rule for rule:
//! each structure of the spec's "Test Format" and "Entity Map" sections is a function
//! that checks the types of its fields, the required ones, that no other is present,
//! and the constraints the schema adds (non-empty arrays, enums, version patterns,
//! one key per entity or event, fields that exclude each other).
//!
//! It accepts what the runner's schema versions up to [`super::SCHEMA_VERSION`]
//! accept, and the fields of later versions that the corpus's files use
//! (`awaitMinPoolSizeMS`...), so that a valid file is never refused.

use serde_json::{Map, Value};

/// Why a file is refused: the path to the offending value, and what is wrong.
pub type Invalid = String;

type Checked = Result<(), Invalid>;
/// A check of one value at a path.
type Check<'a> = &'a dyn Fn(&Value, &str) -> Checked;

/// Checks a whole test file.
pub fn validate(file: &Value) -> Checked {
    fields(
        file,
        "",
        &[
            ("description", &string),
            ("schemaVersion", &version),
            ("runOnRequirements", &|v, p| {
                array(v, p, 1, &run_on_requirement)
            }),
            ("createEntities", &|v, p| array(v, p, 1, &entity)),
            ("initialData", &|v, p| array(v, p, 1, &collection_data)),
            ("tests", &|v, p| array(v, p, 1, &test)),
            ("_yamlAnchors", &object),
        ],
        &["description", "schemaVersion", "tests"],
    )
}

/// `value` is an object whose fields are among `known` (each checked) and include
/// every one of `required`.
fn fields(value: &Value, path: &str, known: &[(&str, Check)], required: &[&str]) -> Checked {
    let map = as_object(value, path)?;
    if let Some(missing) = required.iter().find(|name| !map.contains_key(**name)) {
        return Err(format!("{path}: '{missing}' is required"));
    }
    for (name, value) in map {
        let at = format!("{path}.{name}");
        match known.iter().find(|(known, _)| known == name) {
            Some((_, check)) => check(value, &at)?,
            None => return Err(format!("{at}: unknown field")),
        }
    }
    Ok(())
}

fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Invalid> {
    value
        .as_object()
        .ok_or_else(|| format!("{path}: {value} is not an object"))
}

fn object(value: &Value, path: &str) -> Checked {
    as_object(value, path).map(drop)
}

fn any(_: &Value, _: &str) -> Checked {
    Ok(())
}

fn string(value: &Value, path: &str) -> Checked {
    match value.is_string() {
        true => Ok(()),
        false => Err(format!("{path}: {value} is not a string")),
    }
}

fn boolean(value: &Value, path: &str) -> Checked {
    match value.is_boolean() {
        true => Ok(()),
        false => Err(format!("{path}: {value} is not a boolean")),
    }
}

fn integer(value: &Value, path: &str) -> Checked {
    match value.is_i64() || value.is_u64() {
        true => Ok(()),
        false => Err(format!("{path}: {value} is not an integer")),
    }
}

/// An array of at least `min` items, each checked by `item`.
fn array(value: &Value, path: &str, min: usize, item: Check) -> Checked {
    let items = value
        .as_array()
        .ok_or_else(|| format!("{path}: {value} is not an array"))?;
    if items.len() < min {
        return Err(format!("{path}: needs at least {min} item(s)"));
    }
    for (i, value) in items.iter().enumerate() {
        item(value, &format!("{path}[{i}]"))?;
    }
    Ok(())
}

/// A string among `allowed`.
fn one_of(value: &Value, path: &str, allowed: &[&str]) -> Checked {
    match value.as_str() {
        Some(text) if allowed.contains(&text) => Ok(()),
        _ => Err(format!("{path}: {value} is not one of {allowed:?}")),
    }
}

/// A version: digits, and one or two more parts after dots (`^[0-9]+(\.[0-9]+){1,2}$`).
fn version(value: &Value, path: &str) -> Checked {
    let text = value
        .as_str()
        .ok_or_else(|| format!("{path}: {value} is not a string"))?;
    let parts: Vec<&str> = text.split('.').collect();
    let digits = |part: &&str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    match (2..=3).contains(&parts.len()) && parts.iter().all(digits) {
        true => Ok(()),
        false => Err(format!("{path}: {text:?} is not a version")),
    }
}

/// An object of exactly one field, among `kinds`, checked by its kind's check.
fn single(value: &Value, path: &str, kinds: &[(&str, Check)]) -> Checked {
    let map = as_object(value, path)?;
    if map.len() != 1 {
        return Err(format!(
            "{path}: needs exactly one field, has {}",
            map.len()
        ));
    }
    fields(value, path, kinds, &[])
}

fn run_on_requirement(value: &Value, path: &str) -> Checked {
    if as_object(value, path)?.is_empty() {
        return Err(format!("{path}: needs at least one requirement"));
    }
    let topologies = |v: &Value, p: &str| {
        let kinds = [
            "single",
            "replicaset",
            "sharded",
            "sharded-replicaset",
            "load-balanced",
        ];
        array(v, p, 1, &|v, p| one_of(v, p, &kinds))
    };
    let csfle = |v: &Value, p: &str| match v {
        Value::Bool(_) => Ok(()),
        _ => fields(v, p, &[("minLibmongocryptVersion", &version)], &[]),
    };
    let server_parameters = |v: &Value, p: &str| match as_object(v, p)?.is_empty() {
        true => Err(format!("{p}: needs at least one parameter")),
        false => Ok(()),
    };
    fields(
        value,
        path,
        &[
            ("maxServerVersion", &version),
            ("minServerVersion", &version),
            ("minLibmongocryptVersion", &version),
            ("topologies", &topologies),
            ("serverless", &|v, p| {
                one_of(v, p, &["require", "forbid", "allow"])
            }),
            ("serverParameters", &server_parameters),
            ("auth", &boolean),
            ("authMechanism", &string),
            ("csfle", &csfle),
        ],
        &[],
    )
}

/// The events a client may observe (spec "entity": `observeEvents`).
const OBSERVABLE_EVENTS: &[&str] = &[
    "commandStartedEvent",
    "commandSucceededEvent",
    "commandFailedEvent",
    "poolCreatedEvent",
    "poolReadyEvent",
    "poolClearedEvent",
    "poolClosedEvent",
    "connectionCreatedEvent",
    "connectionReadyEvent",
    "connectionClosedEvent",
    "connectionCheckOutStartedEvent",
    "connectionCheckOutFailedEvent",
    "connectionCheckedOutEvent",
    "connectionCheckedInEvent",
    "serverDescriptionChangedEvent",
    "topologyDescriptionChangedEvent",
    "topologyOpeningEvent",
    "topologyClosedEvent",
    "serverHeartbeatStartedEvent",
    "serverHeartbeatSucceededEvent",
    "serverHeartbeatFailedEvent",
    "poolBackoffEvent",
];

const LOG_LEVELS: &[&str] = &[
    "emergency",
    "alert",
    "critical",
    "error",
    "warning",
    "notice",
    "info",
    "debug",
    "trace",
];

const LOG_COMPONENTS: &[&str] = &["command", "topology", "serverSelection", "connection"];

fn log_level(value: &Value, path: &str) -> Checked {
    one_of(value, path, LOG_LEVELS)
}

fn entity(value: &Value, path: &str) -> Checked {
    let id_only = |v: &Value, p: &str| fields(v, p, &[("id", &string)], &["id"]);
    single(
        value,
        path,
        &[
            ("client", &client),
            ("clientEncryption", &|v, p| {
                fields(
                    v,
                    p,
                    &[
                        ("id", &string),
                        ("clientEncryptionOpts", &client_encryption_options),
                    ],
                    &["id", "clientEncryptionOpts"],
                )
            }),
            ("database", &|v, p| {
                fields(
                    v,
                    p,
                    &[
                        ("id", &string),
                        ("client", &string),
                        ("databaseName", &string),
                        ("databaseOptions", &collection_or_database_options),
                    ],
                    &["id", "client", "databaseName"],
                )
            }),
            ("collection", &|v, p| {
                fields(
                    v,
                    p,
                    &[
                        ("id", &string),
                        ("database", &string),
                        ("collectionName", &string),
                        ("collectionOptions", &collection_or_database_options),
                    ],
                    &["id", "database", "collectionName"],
                )
            }),
            ("session", &|v, p| {
                fields(
                    v,
                    p,
                    &[
                        ("id", &string),
                        ("client", &string),
                        ("sessionOptions", &object),
                    ],
                    &["id", "client"],
                )
            }),
            ("bucket", &|v, p| {
                fields(
                    v,
                    p,
                    &[
                        ("id", &string),
                        ("database", &string),
                        ("bucketOptions", &object),
                    ],
                    &["id", "database"],
                )
            }),
            ("stream", &|v, p| {
                fields(
                    v,
                    p,
                    &[("id", &string), ("hexBytes", &hex_bytes)],
                    &["id", "hexBytes"],
                )
            }),
            ("thread", &id_only),
        ],
    )
}

/// Pairs of hexadecimal digits (`^([0-9A-Fa-f]{2})*$`).
fn hex_bytes(value: &Value, path: &str) -> Checked {
    let text = value
        .as_str()
        .ok_or_else(|| format!("{path}: {value} is not a string"))?;
    match text.len() % 2 == 0 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        true => Ok(()),
        false => Err(format!("{path}: {text:?} is not pairs of hex digits")),
    }
}

fn client(value: &Value, path: &str) -> Checked {
    let observe_log_messages = |v: &Value, p: &str| {
        if as_object(v, p)?.is_empty() {
            return Err(format!("{p}: needs at least one component"));
        }
        let levels: Vec<(&str, Check)> = LOG_COMPONENTS
            .iter()
            .map(|component| (*component, &log_level as Check))
            .collect();
        fields(v, p, &levels, &[])
    };
    let server_api = |v: &Value, p: &str| {
        fields(
            v,
            p,
            &[
                ("version", &string),
                ("strict", &boolean),
                ("deprecationErrors", &boolean),
            ],
            &["version"],
        )
    };
    let store_events = |v: &Value, p: &str| {
        array(v, p, 1, &|v, p| {
            fields(
                v,
                p,
                &[("id", &string), ("events", &|v, p| array(v, p, 1, &string))],
                &["id", "events"],
            )
        })
    };
    fields(
        value,
        path,
        &[
            ("id", &string),
            ("uriOptions", &object),
            ("useMultipleMongoses", &boolean),
            ("observeEvents", &|v, p| {
                array(v, p, 1, &|v, p| one_of(v, p, OBSERVABLE_EVENTS))
            }),
            ("ignoreCommandMonitoringEvents", &|v, p| {
                array(v, p, 1, &string)
            }),
            ("storeEventsAsEntities", &store_events),
            ("observeLogMessages", &observe_log_messages),
            ("observeTracingMessages", &|v, p| {
                fields(v, p, &[("enableCommandPayload", &boolean)], &[])
            }),
            ("serverApi", &server_api),
            ("observeSensitiveCommands", &boolean),
            ("autoEncryptOpts", &object),
            ("awaitMinPoolSizeMS", &integer),
        ],
        &["id"],
    )
}

fn client_encryption_options(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("keyVaultClient", &string),
            ("keyVaultNamespace", &string),
            ("kmsProviders", &kms_providers),
            ("keyExpirationMS", &integer),
        ],
        &["keyVaultClient", "keyVaultNamespace", "kmsProviders"],
    )
}

/// `kmsProviders`: each provider (`aws`, `azure`, `gcp`, `kmip`, `local`, optionally
/// named `provider:name`) with its own fields, each a string or a `$$placeholder`.
fn kms_providers(value: &Value, path: &str) -> Checked {
    let secret = |v: &Value, p: &str| match v {
        Value::String(_) => Ok(()),
        _ => fields(v, p, &[("$$placeholder", &any)], &["$$placeholder"]),
    };
    let secret: Check = &secret;
    for (name, provider) in as_object(value, path)? {
        let at = format!("{path}.{name}");
        let (kind, label) = name.split_once(':').unwrap_or((name, "x"));
        let label_ok = !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let known: &[&str] = match kind {
            "aws" => &["accessKeyId", "secretAccessKey", "sessionToken"],
            "azure" => &[
                "tenantId",
                "clientId",
                "clientSecret",
                "identityPlatformEndpoint",
            ],
            "gcp" => &["email", "privateKey", "endpoint"],
            "kmip" => &["endpoint"],
            "local" => &["key"],
            _ => return Err(format!("{at}: unknown KMS provider")),
        };
        if !label_ok {
            return Err(format!("{at}: unknown KMS provider"));
        }
        let checks: Vec<(&str, Check)> = known.iter().map(|field| (*field, secret)).collect();
        fields(provider, &at, &checks, &[])?;
    }
    Ok(())
}

fn collection_or_database_options(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("readConcern", &object),
            ("readPreference", &object),
            ("writeConcern", &object),
            ("timeoutMS", &integer),
        ],
        &[],
    )
}

fn collection_data(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("collectionName", &string),
            ("databaseName", &string),
            ("createOptions", &|v, p| {
                // "writeConcern": false in the schema: it may not be given.
                match as_object(v, p)?.contains_key("writeConcern") {
                    true => Err(format!("{p}.writeConcern: not allowed")),
                    false => Ok(()),
                }
            }),
            ("documents", &|v, p| array(v, p, 0, &object)),
        ],
        &["collectionName", "databaseName", "documents"],
    )
}

fn test(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("description", &string),
            ("runOnRequirements", &|v, p| {
                array(v, p, 1, &run_on_requirement)
            }),
            ("skipReason", &string),
            ("operations", &|v, p| array(v, p, 0, &operation)),
            ("expectEvents", &|v, p| {
                array(v, p, 1, &expected_events_for_client)
            }),
            ("expectLogMessages", &|v, p| {
                array(v, p, 1, &expected_log_messages_for_client)
            }),
            ("expectTracingMessages", &expect_tracing_messages),
            ("outcome", &|v, p| array(v, p, 1, &collection_data)),
        ],
        &["description", "operations"],
    )
}

/// `expectTracingMessages` (schema 1.27): one client's spans, as the spec's text
/// describes it, or an array of them, as the OpenTelemetry tests give it.
fn expect_tracing_messages(value: &Value, path: &str) -> Checked {
    match value {
        Value::Array(_) => array(value, path, 1, &expected_tracing_messages_for_client),
        _ => expected_tracing_messages_for_client(value, path),
    }
}

fn expected_tracing_messages_for_client(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("client", &string),
            ("ignoreExtraSpans", &boolean),
            ("spans", &|v, p| array(v, p, 0, &tracing_span)),
        ],
        &["client", "spans"],
    )
}

/// An expected span: its name, its attributes, the spans nested in it.
fn tracing_span(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("name", &string),
            ("attributes", &object),
            ("nested", &|v, p| array(v, p, 0, &tracing_span)),
        ],
        &["name", "attributes"],
    )
}

fn operation(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("name", &string),
            ("object", &string),
            ("arguments", &object),
            ("ignoreResultAndError", &boolean),
            ("expectError", &expected_error),
            ("expectResult", &any),
            ("saveResultAsEntity", &string),
        ],
        &["name", "object"],
    )?;
    let map = as_object(value, path)?;
    let exclusive = [
        ("expectError", "expectResult"),
        ("expectError", "saveResultAsEntity"),
        ("ignoreResultAndError", "expectResult"),
        ("ignoreResultAndError", "expectError"),
        ("ignoreResultAndError", "saveResultAsEntity"),
    ];
    match exclusive
        .iter()
        .find(|(a, b)| map.contains_key(*a) && map.contains_key(*b))
    {
        Some((a, b)) => Err(format!("{path}: {a} and {b} exclude each other")),
        None => Ok(()),
    }
}

fn expected_error(value: &Value, path: &str) -> Checked {
    if as_object(value, path)?.is_empty() {
        return Err(format!("{path}: needs at least one assertion"));
    }
    let labels = |v: &Value, p: &str| array(v, p, 1, &string);
    fields(
        value,
        path,
        &[
            ("isError", &|v, p| match v {
                Value::Bool(true) => Ok(()),
                _ => Err(format!("{p}: must be true")),
            }),
            ("isClientError", &boolean),
            ("isTimeoutError", &boolean),
            ("errorContains", &string),
            ("errorCode", &integer),
            ("errorCodeName", &string),
            ("errorLabelsContain", &labels),
            ("errorLabelsOmit", &labels),
            ("writeErrors", &object),
            ("writeConcernErrors", &|v, p| array(v, p, 0, &object)),
            ("errorResponse", &object),
            ("expectResult", &any),
        ],
        &[],
    )
}

fn expected_events_for_client(value: &Value, path: &str) -> Checked {
    let map = as_object(value, path)?;
    // The kind of the events follows eventType, command events when it is absent.
    let event: Check = match map.get("eventType").and_then(Value::as_str) {
        Some("cmap") => &expected_cmap_event,
        Some("sdam") => &expected_sdam_event,
        _ => &expected_command_event,
    };
    fields(
        value,
        path,
        &[
            ("client", &string),
            ("eventType", &|v, p| {
                one_of(v, p, &["command", "cmap", "sdam"])
            }),
            ("events", &|v, p| array(v, p, 0, event)),
            ("ignoreExtraEvents", &boolean),
        ],
        &["client", "events"],
    )
}

/// The fields every expected command event may have.
fn command_event(value: &Value, path: &str, extra: &[(&str, Check)]) -> Checked {
    let mut known: Vec<(&str, Check)> = vec![
        ("commandName", &string),
        ("databaseName", &string),
        ("hasServiceId", &boolean),
        ("hasServerConnectionId", &boolean),
    ];
    known.extend_from_slice(extra);
    fields(value, path, &known, &[])
}

fn expected_command_event(value: &Value, path: &str) -> Checked {
    single(
        value,
        path,
        &[
            ("commandStartedEvent", &|v, p| {
                command_event(v, p, &[("command", &object)])
            }),
            ("commandSucceededEvent", &|v, p| {
                command_event(v, p, &[("reply", &object)])
            }),
            ("commandFailedEvent", &|v, p| command_event(v, p, &[])),
        ],
    )
}

/// An event without fields.
fn no_fields(value: &Value, path: &str) -> Checked {
    fields(value, path, &[], &[])
}

fn expected_cmap_event(value: &Value, path: &str) -> Checked {
    let reason = |v: &Value, p: &str| fields(v, p, &[("reason", &string)], &[]);
    let cleared = |v: &Value, p: &str| {
        let known: [(&str, Check); 2] = [
            ("hasServiceId", &boolean),
            ("interruptInUseConnections", &boolean),
        ];
        fields(v, p, &known, &[])
    };
    let backoff = |v: &Value, p: &str| fields(v, p, &[("attempt", &integer)], &[]);
    single(
        value,
        path,
        &[
            ("poolCreatedEvent", &no_fields),
            ("poolReadyEvent", &no_fields),
            ("poolClearedEvent", &cleared),
            ("poolClosedEvent", &no_fields),
            ("poolBackoffEvent", &backoff),
            ("connectionCreatedEvent", &no_fields),
            ("connectionReadyEvent", &no_fields),
            ("connectionClosedEvent", &reason),
            ("connectionCheckOutStartedEvent", &no_fields),
            ("connectionCheckOutFailedEvent", &reason),
            ("connectionCheckedOutEvent", &no_fields),
            ("connectionCheckedInEvent", &no_fields),
        ],
    )
}

const SERVER_TYPES: &[&str] = &[
    "Standalone",
    "Mongos",
    "PossiblePrimary",
    "RSPrimary",
    "RSSecondary",
    "RSOther",
    "RSArbiter",
    "RSGhost",
    "LoadBalancer",
    "Unknown",
];

const TOPOLOGY_TYPES: &[&str] = &[
    "Single",
    "Unknown",
    "ReplicaSetNoPrimary",
    "ReplicaSetWithPrimary",
    "Sharded",
    "LoadBalanced",
];

/// A server or topology description (`{ type }`) whose type is among `types`.
fn description(value: &Value, path: &str, types: &[&str]) -> Checked {
    fields(value, path, &[("type", &|v, p| one_of(v, p, types))], &[])
}

fn expected_sdam_event(value: &Value, path: &str) -> Checked {
    let changed = |types: &'static [&'static str]| {
        move |v: &Value, p: &str| {
            let check = |v: &Value, p: &str| description(v, p, types);
            fields(
                v,
                p,
                &[("previousDescription", &check), ("newDescription", &check)],
                &[],
            )
        }
    };
    let awaited = |v: &Value, p: &str| fields(v, p, &[("awaited", &boolean)], &[]);
    single(
        value,
        path,
        &[
            ("serverDescriptionChangedEvent", &changed(SERVER_TYPES)),
            ("topologyDescriptionChangedEvent", &changed(TOPOLOGY_TYPES)),
            ("serverHeartbeatStartedEvent", &awaited),
            ("serverHeartbeatSucceededEvent", &awaited),
            ("serverHeartbeatFailedEvent", &awaited),
            ("topologyOpeningEvent", &no_fields),
            ("topologyClosedEvent", &no_fields),
        ],
    )
}

fn expected_log_messages_for_client(value: &Value, path: &str) -> Checked {
    let messages = |v: &Value, p: &str| array(v, p, 0, &expected_log_message);
    fields(
        value,
        path,
        &[
            ("client", &string),
            ("messages", &messages),
            ("ignoreExtraMessages", &boolean),
            ("ignoreMessages", &messages),
        ],
        &["client", "messages"],
    )
}

fn expected_log_message(value: &Value, path: &str) -> Checked {
    fields(
        value,
        path,
        &[
            ("level", &log_level),
            ("component", &|v, p| one_of(v, p, LOG_COMPONENTS)),
            ("data", &object),
            ("failureIsRedacted", &boolean),
        ],
        &["level", "component", "data"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(test: Value) -> Value {
        json!({ "description": "d", "schemaVersion": "1.0", "tests": [test] })
    }

    #[test]
    fn a_minimal_file_is_valid() {
        validate(&file(json!({ "description": "t", "operations": [] }))).unwrap();
    }

    #[test]
    fn each_kind_of_rule_refuses() {
        let refused = [
            json!({ "description": "d", "tests": [] }),
            json!({ "description": "d", "schemaVersion": "1", "tests": [{ "description": "t", "operations": [] }] }),
            file(json!({ "description": "t", "operations": [], "extra": 1 })),
            file(
                json!({ "description": "t", "operations": [{ "name": "x", "object": "y", "expectError": { "isError": true }, "expectResult": 1 }] }),
            ),
            file(
                json!({ "description": "t", "operations": [], "expectEvents": [{ "client": "c", "events": [{ "poolCreatedEvent": {} }] }] }),
            ),
            file(
                json!({ "description": "t", "operations": [], "expectEvents": [{ "client": "c", "eventType": "cmap", "events": [{ "poolCreatedEvent": {}, "poolReadyEvent": {} }] }] }),
            ),
        ];
        for file in refused {
            assert!(validate(&file).is_err(), "{file}");
        }
    }
}
