//! The gateway's configuration: the accepted API keys and what each may reach, and the
//! bounds every request runs within.

use serde::Deserialize;

use crate::action::Action;

/// The configuration, as JSON (the wasi:http runtime reads it from the environment
/// variable `DATA_API_CONFIG`):
///
/// ```json
/// {
///   "apiKeys": [
///     { "key": "a long random secret" },
///     { "key": "another", "allow": [
///         { "database": "shop", "collection": "orders", "actions": ["find", "findOne"] },
///         { "database": "shop", "collection": "*" }
///     ] }
///   ],
///   "maxBodyBytes": 1048576, "maxLimit": 1000, "timeoutMS": 10000,
///   "allowServerJavaScript": false
/// }
/// ```
///
/// A key without `allow` may use every database, collection and action; a key with
/// one may use what one of its rules names (`"*"` for any database or collection, no
/// `actions` for all). No key, no access: a gateway with no keys refuses everything.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The keys a request's `apiKey` header may carry.
    pub api_keys: Vec<ApiKey>,
    /// The largest request body accepted, in bytes (413 above it); 1 MiB by default.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The most documents a `find` or an `aggregate` returns: a request's `limit`
    /// above it (or none) is lowered to it; 1000 by default.
    #[serde(default = "default_max_limit")]
    pub max_limit: u32,
    /// The `timeoutMS` of every operation (Client Side Operations Timeout spec): the
    /// whole of it, server selection included, so a database that cannot be reached
    /// is a 503 after at most this long; 10 s by default.
    #[serde(default = "default_timeout_ms", rename = "timeoutMS")]
    pub timeout_ms: u64,
    /// Whether `$where`, `$function` and `$accumulator` (JavaScript run by the server)
    /// may appear in filters, updates, projections, sorts and pipelines; refused (403)
    /// by default.
    #[serde(default)]
    pub allow_server_java_script: bool,
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}

fn default_max_limit() -> u32 {
    1000
}

fn default_timeout_ms() -> u64 {
    10_000
}

/// One accepted key, and what it may reach.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The secret, as the `apiKey` header carries it.
    pub key: String,
    /// The allow-list; none: everything.
    pub allow: Option<Vec<Rule>>,
}

/// One entry of an allow-list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The database's name, or `"*"` for any.
    pub database: String,
    /// The collection's name, or `"*"` for any.
    pub collection: String,
    /// The actions allowed there; none: all.
    pub actions: Option<Vec<Action>>,
}

impl Config {
    /// Parses the JSON configuration. The error says where the text is wrong and
    /// what kind of wrong, never the text itself (which holds the keys).
    pub fn from_json(text: &str) -> Result<Config, String> {
        serde_json::from_str(text).map_err(|error| {
            format!(
                "the configuration is not valid ({:?} error at line {}, column {})",
                error.classify(),
                error.line(),
                error.column()
            )
        })
    }

    /// The key among [`Config::api_keys`] equal to `given`. Every key is compared,
    /// each in time that depends only on the lengths, so the time taken tells nothing
    /// of how much of a key an attacker guessed.
    pub fn key(&self, given: &str) -> Option<&ApiKey> {
        let mut found = None;
        for key in &self.api_keys {
            if constant_time_eq(key.key.as_bytes(), given.as_bytes()) && found.is_none() {
                found = Some(key);
            }
        }
        found
    }
}

impl ApiKey {
    /// Whether this key may run `action` on `database.collection`.
    pub fn allows(&self, database: &str, collection: &str, action: Action) -> bool {
        let Some(rules) = &self.allow else {
            return true;
        };
        rules.iter().any(|rule| {
            (rule.database == "*" || rule.database == database)
                && (rule.collection == "*" || rule.collection == collection)
                && rule
                    .actions
                    .as_ref()
                    .is_none_or(|actions| actions.contains(&action))
        })
    }
}

/// Equality of `a` and `b` that looks at every byte of the longer one whatever they
/// hold: the differences are OR-ed together instead of returning at the first.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let length = a.len().max(b.len());
    let mut difference = u8::from(a.len() != b.len());
    for index in 0..length {
        let x = a.get(index).copied().unwrap_or(0);
        let y = b.get(index).copied().unwrap_or(0);
        difference |= x ^ y;
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret\0"));
        assert!(!constant_time_eq(b"", b"s"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn a_bad_configuration_does_not_echo_its_keys() {
        let error =
            Config::from_json(r#"{"apiKeys": [{"key": 5, "secret": "hush"}]}"#).unwrap_err();
        assert!(!error.contains("hush"), "{error}");
        assert!(error.contains("line 1"), "{error}");
        let config = Config::from_json(r#"{"apiKeys": []}"#).unwrap();
        assert_eq!(
            (config.max_body_bytes, config.max_limit, config.timeout_ms),
            (1024 * 1024, 1000, 10_000)
        );
        assert!(!config.allow_server_java_script);
    }
}
