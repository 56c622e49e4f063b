//! The table of URI options (URI Options spec, "List of specified options"): for each
//! option, how a connection string value is parsed into [`ClientOptions`] and how the
//! value is read back ([`ClientOptions::uri_option`], `Display`).
//!
//! Values follow the Connection String spec's data types ("Values"): integers and
//! booleans (`true` / `false` only; the legacy alternatives are not accepted) ignore an
//! empty value with a warning, and an invalid value is ignored with a warning
//! ([`Problem::Invalid`]). A value that must stop parsing (an unknown
//! `authMechanism`, a negative `w`) is a [`Problem::Fatal`] error.

use std::ops::RangeInclusive;
use std::time::Duration;

use bson::{Bson, Document};

use super::types::{ServerMonitoringMode, Socks5Proxy};
use super::ClientOptions;
use crate::auth::{AuthMechanism, Credential};
use crate::concern::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
use crate::error::Error;
use crate::rt::TlsOptions;
use crate::selection::{
    ReadPreference, ReadPreferenceMode, ReadPreferenceOptions, SelectionCriteria, TagSet,
};
use crate::wire::compression::Compressor;

/// What the options of one connection string are parsed into: the options, plus what
/// is only settled once every option has been read (whether TLS is on, whether there
/// is a credential).
pub(super) struct Staging {
    /// The options.
    pub options: ClientOptions,
    /// The `tls`-prefixed options, whether or not TLS ends up enabled.
    pub tls: TlsOptions,
    /// The value of `tls` / `ssl`, if given.
    pub tls_enabled: Option<bool>,
    /// `authMechanism`, `authSource` and `authMechanismProperties`.
    pub auth: Credential,
    /// `readPreference`, `readPreferenceTags` and `maxStalenessSeconds`, which make
    /// one read preference once all are read (the tags may come before the mode).
    pub read_preference: ReadPreferenceParts,
    /// `proxyHost`, `proxyPort`, `proxyUsername` and `proxyPassword`, which make one
    /// [`Socks5Proxy`] once all are read.
    pub proxy: ProxyParts,
}

/// The SOCKS5 options of a connection string, as given.
#[derive(Default)]
pub(super) struct ProxyParts {
    /// `proxyHost`.
    pub host: Option<String>,
    /// `proxyPort`.
    pub port: Option<u16>,
    /// `proxyUsername`.
    pub username: Option<String>,
    /// `proxyPassword`.
    pub password: Option<String>,
}

impl ProxyParts {
    /// The proxy, if any option names one. Fails for a port or credentials without a
    /// host, and for a username without a password or the reverse (SOCKS5 Support spec,
    /// "Connection String Options").
    pub(super) fn build(self) -> Result<Option<Socks5Proxy>, Error> {
        let ProxyParts {
            host,
            port,
            username,
            password,
        } = self;
        let fail = |message: &str| Err(Error::invalid_argument(message.to_string()));
        let Some(host) = host else {
            if port.is_some() || username.is_some() || password.is_some() {
                return fail("proxyPort, proxyUsername and proxyPassword need proxyHost");
            }
            return Ok(None);
        };
        let authentication = match (username, password) {
            (Some(username), Some(password)) => Some((username, password)),
            (None, None) => None,
            _ => return fail("proxyUsername and proxyPassword must be given together"),
        };
        Ok(Some(Socks5Proxy {
            host,
            port,
            authentication,
        }))
    }
}

/// The read preference options of a connection string, as given.
#[derive(Default)]
pub(super) struct ReadPreferenceParts {
    /// `readPreference`.
    pub mode: Option<ReadPreferenceMode>,
    /// `readPreferenceTags`, one tag set per occurrence.
    pub tag_sets: Option<Vec<TagSet>>,
    /// `maxStalenessSeconds`; `Some(None)` for -1 (no maximum).
    pub max_staleness: Option<Option<Duration>>,
}

impl ReadPreferenceParts {
    /// The read preference, if its options say anything but `primary` (the mode when
    /// not given). Fails for mode `primary` with tags or a maximum staleness.
    pub(super) fn build(self) -> Result<Option<ReadPreference>, Error> {
        let ReadPreferenceParts {
            mode,
            tag_sets,
            max_staleness,
        } = self;
        let max_staleness = max_staleness.flatten();
        let options = (tag_sets.is_some() || max_staleness.is_some()).then(|| {
            ReadPreferenceOptions::builder()
                .tag_sets(tag_sets)
                .max_staleness(max_staleness)
                .build()
        });
        // Plain `primary` is what no read preference means: `None`, as an unset one
        // (and as the connection string printed back, which leaves defaults out).
        let read_preference = ReadPreference::new(mode.unwrap_or_default(), options)?;
        Ok((read_preference != ReadPreference::Primary).then_some(read_preference))
    }
}

/// The read preference of `options`' selection criteria, if they are one.
fn read_preference(options: &ClientOptions) -> Option<&ReadPreference> {
    options
        .selection_criteria
        .as_ref()
        .and_then(SelectionCriteria::as_read_pref)
}

/// Why a value was not applied.
#[derive(Debug)]
pub(super) enum Problem {
    /// The value is ignored and a warning says why ("Any invalid Values for a given key
    /// MUST be ignored and MUST log a WARN level message").
    Invalid(String),
    /// The connection string is rejected.
    Fatal(Error),
}

/// What happens when an option appears more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeat {
    /// The last occurrence is used, with a warning (Connection String spec, "Repeated
    /// Keys": "a warning SHOULD be raised").
    LastWins,
    /// Every occurrence is used, in order (a list such as `readPreferenceTags`).
    Accumulate,
    /// All occurrences must have the same value, else the connection string is
    /// rejected (URI Options spec, "Conflicting TLS options", rule 8 for `tls`/`ssl`).
    MustAgree,
    /// A repeat is an error: a proxy is security-relevant and must not be guessed.
    Never,
}

/// One URI option.
pub(super) struct UriOption {
    /// The name as the URI Options spec spells it; keys match it case-insensitively.
    pub name: &'static str,
    /// What a repeat means.
    pub repeat: Repeat,
    /// Whether the value is a secret: never shown in warnings or `Display`.
    pub secret: bool,
    /// Whether the value is, or may contain, a secret (a password, a session token):
    /// an unescaped `&` in it cuts it, and its rest reads as the next piece of the
    /// query, which is therefore never quoted (see `parser::read_pairs`).
    pub may_hold_secret: bool,
    /// Whether the option only sets other options (`tlsInsecure`): `Display` writes
    /// those instead.
    pub shorthand: bool,
    /// Parses a (percent-decoded) value into the staging options.
    pub set: fn(&mut Staging, &str) -> Result<(), Problem>,
    /// Reads the value back: `None` when the option is unset (or, for the `tls`
    /// options, TLS is off).
    pub get: fn(&ClientOptions) -> Option<Bson>,
}

/// Another key for an option.
pub(super) struct Alias {
    /// The alias, lower-case.
    pub key: &'static str,
    /// The option's name.
    pub target: &'static str,
    /// A deprecated key warns when used and gives way to its replacement (Connection
    /// String spec, "Deprecated Key Value Pairs"); `ssl` is a plain alias of `tls`.
    pub deprecated: bool,
}

/// Looks up `key` case-insensitively among the options and their aliases.
pub(super) fn find(key: &str) -> Option<(&'static UriOption, Option<&'static Alias>)> {
    let by_name = |name: &str| {
        OPTIONS
            .iter()
            .find(|option| option.name.eq_ignore_ascii_case(name))
    };
    match ALIASES
        .iter()
        .find(|alias| alias.key.eq_ignore_ascii_case(key))
    {
        Some(alias) => by_name(alias.target).map(|option| (option, Some(alias))),
        None => by_name(key).map(|option| (option, None)),
    }
}

/// Options drivers have had that anymongo leaves out on purpose, each with why; like
/// any unknown option they are ignored with a warning, which says why. The wait queue
/// bounds `waitQueueSize` and `waitQueueMultiple`: the Connection Monitoring and
/// Pooling spec ("Deprecated Options") says they "MUST NOT be implemented if they do
/// not already exist in a driver"; a checkout waits as long as `waitQueueTimeoutMS` or
/// `timeoutMS` allows instead.
pub(super) const LEFT_OUT: &[(&str, &str)] = &[
    (
        "waitQueueSize",
        "a deprecated pool option (Connection Monitoring and Pooling spec) that \
         anymongo does not implement; bound checkouts with waitQueueTimeoutMS or timeoutMS",
    ),
    (
        "waitQueueMultiple",
        "a deprecated pool option (Connection Monitoring and Pooling spec) that \
         anymongo does not implement; bound checkouts with waitQueueTimeoutMS or timeoutMS",
    ),
];

/// Every option, in the order `Display` lists them.
pub(super) fn all() -> &'static [UriOption] {
    OPTIONS
}

static ALIASES: &[Alias] = &[
    Alias {
        key: "ssl",
        target: "tls",
        deprecated: false,
    },
    Alias {
        key: "wtimeout",
        target: "wTimeoutMS",
        deprecated: true,
    },
];

const fn option(
    name: &'static str,
    set: fn(&mut Staging, &str) -> Result<(), Problem>,
    get: fn(&ClientOptions) -> Option<Bson>,
) -> UriOption {
    UriOption {
        name,
        repeat: Repeat::LastWins,
        secret: false,
        may_hold_secret: false,
        shorthand: false,
        set,
        get,
    }
}

impl UriOption {
    const fn repeat(self, repeat: Repeat) -> Self {
        UriOption { repeat, ..self }
    }

    const fn secret(self) -> Self {
        UriOption {
            secret: true,
            may_hold_secret: true,
            ..self
        }
    }

    const fn may_hold_secret(self) -> Self {
        UriOption {
            may_hold_secret: true,
            ..self
        }
    }

    const fn shorthand(self) -> Self {
        UriOption {
            shorthand: true,
            ..self
        }
    }
}

static OPTIONS: &[UriOption] = &[
    // Handshake spec, "client.application.name".
    option(
        "appName",
        |s, v| put(&mut s.options.app_name, Some(text(v)?)),
        |o| o.app_name.as_deref().map(Bson::from),
    ),
    // Authentication spec, "Connection String Options": an unknown mechanism is an
    // error rather than a warning, so that authentication is never silently changed.
    option(
        "authMechanism",
        |s, v| {
            let mechanism = AuthMechanism::from_name(v).map_err(Problem::Fatal)?;
            put(&mut s.auth.mechanism, Some(mechanism))
        },
        |o| credential(o, |c| c.mechanism.map(|m| m.name().into())),
    ),
    option(
        "authMechanismProperties",
        |s, v| {
            let (pairs, bad) = key_value_pairs(v);
            for part in bad {
                // The part is not echoed: it may hold a fragment of a secret.
                s.options.warnings.push(format!(
                    "authMechanismProperties: part {part} is not a KEY:value pair and was ignored (a value cannot contain ',')"
                ));
            }
            let properties = pairs
                .into_iter()
                .map(|(k, v)| (k, Bson::String(v)))
                .collect();
            put(&mut s.auth.mechanism_properties, Some(properties))
        },
        |o| credential(o, |c| c.mechanism_properties.clone().map(Bson::Document)),
    )
    // AWS_SESSION_TOKEN; the other properties are shown.
    .may_hold_secret(),
    option(
        "authSource",
        |s, v| match v {
            "" => Err(Problem::Fatal(Error::invalid_argument(
                "authSource must not be empty",
            ))),
            _ => put(&mut s.auth.source, Some(v.to_owned())),
        },
        |o| credential(o, |c| c.source.as_deref().map(Bson::from)),
    ),
    // OP_COMPRESSED spec, "Compressors": unknown names are left out with a warning.
    option(
        "compressors",
        |s, v| {
            let mut compressors = Vec::new();
            for name in v.split(',') {
                match Compressor::from_name(&name.to_ascii_lowercase()) {
                    Some(compressor) if !compressors.contains(&compressor) => {
                        compressors.push(compressor)
                    }
                    Some(_) => {}
                    None => s
                        .options
                        .warnings
                        .push(format!("unsupported compressor '{name}' was ignored")),
                }
            }
            // None left is the same as none given.
            put(
                &mut s.options.compressors,
                Some(compressors).filter(|c| !c.is_empty()),
            )
        },
        |o| {
            Some(Bson::Array(
                o.compressors_or_default()
                    .iter()
                    .map(|c| c.name().into())
                    .collect(),
            ))
        },
    ),
    // "0 means no timeout".
    option(
        "connectTimeoutMS",
        |s, v| put(&mut s.options.connect_timeout, Some(millis(v, 0)?)),
        |o| Some(ms(o.connect_timeout_or_default())),
    ),
    option(
        "directConnection",
        |s, v| put(&mut s.options.direct_connection, Some(flag(v)?)),
        |o| o.direct_connection.map(Bson::Boolean),
    ),
    // Client Backpressure spec, "Overload retry policy".
    option(
        "enableOverloadRetargeting",
        |s, v| put(&mut s.options.enable_overload_retargeting, Some(flag(v)?)),
        |o| Some(Bson::Boolean(o.enable_overload_retargeting_or_default())),
    ),
    option(
        "heartbeatFrequencyMS",
        |s, v| put(&mut s.options.heartbeat_freq, Some(millis(v, 500)?)),
        |o| o.heartbeat_freq.map(ms),
    ),
    option(
        "journal",
        |s, v| put(&mut write_concern(s).journal, Some(flag(v)?)),
        |o| o.write_concern.as_ref()?.journal.map(Bson::Boolean),
    ),
    option(
        "loadBalanced",
        |s, v| put(&mut s.options.load_balanced, Some(flag(v)?)),
        |o| o.load_balanced.map(Bson::Boolean),
    ),
    option(
        "localThresholdMS",
        |s, v| put(&mut s.options.local_threshold, Some(millis(v, 0)?)),
        |o| Some(ms(o.local_threshold_or_default())),
    ),
    option(
        "maxAdaptiveRetries",
        |s, v| put(&mut s.options.max_adaptive_retries, Some(count(v, 0)?)),
        |o| Some(Bson::from(o.max_adaptive_retries_or_default())),
    ),
    option(
        "maxConnecting",
        |s, v| put(&mut s.options.max_connecting, Some(count(v, 1)?)),
        |o| Some(Bson::from(o.max_connecting_or_default())),
    ),
    // "0 means no minimum".
    option(
        "maxIdleTimeMS",
        |s, v| put(&mut s.options.max_idle_time, nonzero(millis(v, 0)?)),
        |o| Some(ms(o.max_idle_time.unwrap_or_default())),
    ),
    // "0 means no maximum".
    option(
        "maxPoolSize",
        |s, v| put(&mut s.options.max_pool_size, Some(count(v, 0)?)),
        |o| Some(Bson::from(o.max_pool_size_or_default())),
    ),
    // Max Staleness spec, "API": -1 means no maximum; the lower bound of 90 seconds is
    // checked by server selection, which knows heartbeatFrequencyMS.
    option(
        "maxStalenessSeconds",
        |s, v| {
            let seconds = integer(v, -1..=i64::from(i32::MAX))?;
            let staleness = u64::try_from(seconds).ok().map(Duration::from_secs);
            put(&mut s.read_preference.max_staleness, Some(staleness))
        },
        |o| {
            let staleness = read_preference(o).and_then(ReadPreference::max_staleness);
            Some(Bson::Int64(
                staleness.map_or(-1, |d| saturating_i64(d.as_secs().into())),
            ))
        },
    ),
    option(
        "minPoolSize",
        |s, v| put(&mut s.options.min_pool_size, Some(count(v, 0)?)),
        |o| Some(Bson::from(o.min_pool_size_or_default())),
    ),
    // SOCKS5 Support spec, "MongoClient Configuration"; the checks that need several
    // options are in `ClientOptions::validate`.
    option(
        "proxyHost",
        |s, v| put(&mut s.proxy.host, Some(text(v)?)),
        |o| o.socks5_proxy.as_ref().map(|p| p.host.as_str().into()),
    )
    .repeat(Repeat::Never),
    // "Drivers MUST ignore this option if it specifies a zero-length string."
    option(
        "proxyPassword",
        |s, v| put(&mut s.proxy.password, Some(text(v)?)),
        |o| proxy_credential(o, |(_, password)| password),
    )
    .repeat(Repeat::Never)
    .secret(),
    option(
        "proxyPort",
        |s, v| {
            let port = integer(v, 1..=i64::from(u16::MAX))?;
            put(
                &mut s.proxy.port,
                Some(u16::try_from(port).map_err(out_of_range)?),
            )
        },
        |o| o.socks5_proxy.as_ref()?.port.map(|p| Bson::from(i32::from(p))),
    )
    .repeat(Repeat::Never),
    option(
        "proxyUsername",
        |s, v| put(&mut s.proxy.username, Some(text(v)?)),
        |o| proxy_credential(o, |(username, _)| username),
    )
    .repeat(Repeat::Never),
    option(
        "readConcernLevel",
        |s, v| {
            let level = ReadConcernLevel::from_name(&text(v)?);
            put(&mut s.options.read_concern, Some(ReadConcern::new(level)))
        },
        |o| o.read_concern.as_ref().map(|c| c.level.as_str().into()),
    ),
    option(
        "readPreference",
        |s, v| {
            let mode = named(v, ReadPreferenceMode::ALL, ReadPreferenceMode::name)?;
            put(&mut s.read_preference.mode, Some(mode))
        },
        |o| match &o.selection_criteria {
            Some(SelectionCriteria::Predicate(_)) => None,
            _ => Some(read_preference(o).map_or(ReadPreferenceMode::Primary, ReadPreference::mode).name().into()),
        },
    ),
    // Each occurrence is one tag set; an empty value is the empty tag set.
    option(
        "readPreferenceTags",
        |s, v| {
            let (pairs, bad) = key_value_pairs(v);
            if !bad.is_empty() {
                return Err(Problem::Invalid(
                    "expected comma-separated tag:value pairs".into(),
                ));
            }
            let tags: TagSet = pairs.into_iter().collect();
            s.read_preference.tag_sets.get_or_insert_default().push(tags);
            Ok(())
        },
        |o| {
            let sets = read_preference(o).map(ReadPreference::tag_sets);
            let sets = sets.unwrap_or_default().iter().map(|tags| {
                let mut tags: Vec<_> = tags.iter().collect();
                tags.sort();
                let document: Document = tags
                    .into_iter()
                    .map(|(k, v)| (k.clone(), Bson::from(v.as_str())))
                    .collect();
                Bson::Document(document)
            });
            Some(Bson::Array(sets.collect()))
        },
    )
    .repeat(Repeat::Accumulate),
    option(
        "replicaSet",
        |s, v| put(&mut s.options.repl_set_name, Some(text(v)?)),
        |o| o.repl_set_name.as_deref().map(Bson::from),
    ),
    option(
        "retryReads",
        |s, v| put(&mut s.options.retry_reads, Some(flag(v)?)),
        |o| Some(Bson::Boolean(o.retry_reads_or_default())),
    ),
    option(
        "retryWrites",
        |s, v| put(&mut s.options.retry_writes, Some(flag(v)?)),
        |o| Some(Bson::Boolean(o.retry_writes_or_default())),
    ),
    option(
        "serverMonitoringMode",
        |s, v| {
            let mode = named(v, ServerMonitoringMode::ALL, ServerMonitoringMode::name)?;
            put(&mut s.options.server_monitoring_mode, Some(mode))
        },
        |o| Some(o.server_monitoring_mode_or_default().name().into()),
    ),
    // "positive integer": this driver gives 0 no special meaning.
    option(
        "serverSelectionTimeoutMS",
        |s, v| put(&mut s.options.server_selection_timeout, Some(millis(v, 1)?)),
        |o| Some(ms(o.server_selection_timeout_or_default())),
    ),
    option(
        "serverSelectionTryOnce",
        |s, v| put(&mut s.options.server_selection_try_once, Some(flag(v)?)),
        |o| Some(Bson::Boolean(o.server_selection_try_once_or_default())),
    ),
    // "0 means no timeout".
    option(
        "socketTimeoutMS",
        |s, v| put(&mut s.options.socket_timeout, nonzero(millis(v, 0)?)),
        |o| Some(ms(o.socket_timeout.unwrap_or_default())),
    ),
    // Initial DNS Seedlist Discovery spec: the `srv`-prefixed options are only valid
    // with `mongodb+srv` (checked by the parser); SRV resolution applies them.
    option(
        "srvAllowedHostsSuffix",
        |s, v| put(&mut s.options.srv_allowed_hosts_suffix, Some(text(v)?)),
        |o| o.srv_allowed_hosts_suffix.as_deref().map(Bson::from),
    ),
    option(
        "srvMaxHosts",
        |s, v| put(&mut s.options.srv_max_hosts, Some(count(v, 0)?)),
        |o| Some(Bson::from(o.srv_max_hosts_or_default())),
    ),
    option(
        "srvServiceName",
        |s, v| put(&mut s.options.srv_service_name, Some(service_name(v)?)),
        |o| o.srv_service_name.as_deref().map(Bson::from),
    ),
    // Client Side Operations Timeout spec, "timeoutMS": a non-negative 64-bit integer;
    // 0 means no limit (but still the spec's behaviour, unlike leaving it unset).
    option(
        "timeoutMS",
        |s, v| {
            let millis = integer(v, 0..=i64::MAX)?;
            put(&mut s.options.timeout, Some(Duration::from_millis(millis.unsigned_abs())))
        },
        |o| o.timeout.map(ms),
    ),
    option(
        "tls",
        |s, v| put(&mut s.tls_enabled, Some(flag(v)?)),
        |o| Some(Bson::Boolean(o.tls_options().is_some())),
    )
    .repeat(Repeat::MustAgree),
    option(
        "tlsAllowInvalidCertificates",
        |s, v| put(&mut s.tls.allow_invalid_certificates, Some(flag(v)?)),
        |o| tls(o, |t| Some(t.allows_invalid_certificates().into())),
    ),
    option(
        "tlsAllowInvalidHostnames",
        |s, v| put(&mut s.tls.allow_invalid_hostnames, Some(flag(v)?)),
        |o| tls(o, |t| Some(t.allows_invalid_hostnames().into())),
    ),
    option(
        "tlsCAFile",
        |s, v| put(&mut s.tls.ca_file_path, Some(text(v)?.into())),
        |o| tls(o, |t| path(t.ca_file_path.as_deref())),
    ),
    option(
        "tlsCertificateKeyFile",
        |s, v| put(&mut s.tls.cert_key_file_path, Some(text(v)?.into())),
        |o| tls(o, |t| path(t.cert_key_file_path.as_deref())),
    ),
    option(
        "tlsCertificateKeyFilePassword",
        |s, v| {
            let password = text(v)?.into_bytes();
            put(&mut s.tls.tls_certificate_key_file_password, Some(password))
        },
        |o| {
            tls(o, |t| {
                let password = t.tls_certificate_key_file_password.as_deref()?;
                Some(String::from_utf8_lossy(password).as_ref().into())
            })
        },
    )
    .secret(),
    // pymongo's option (not in the URI Options spec): certificate revocation lists.
    option(
        "tlsCRLFile",
        |s, v| put(&mut s.tls.crl_file_path, Some(text(v)?.into())),
        |o| tls(o, |t| path(t.crl_file_path.as_deref())),
    ),
    option(
        "tlsDisableCertificateRevocationCheck",
        |s, v| put(&mut s.tls.disable_certificate_revocation_check, Some(flag(v)?)),
        |o| tls(o, |t| Some(t.disable_certificate_revocation_check.unwrap_or(false).into())),
    ),
    option(
        "tlsDisableOCSPEndpointCheck",
        |s, v| put(&mut s.tls.disable_ocsp_endpoint_check, Some(flag(v)?)),
        |o| tls(o, |t| Some(t.disable_ocsp_endpoint_check.unwrap_or(false).into())),
    ),
    // URI Options spec: tlsInsecure "relax[es] TLS constraints as much as possible";
    // here it means tlsAllowInvalidCertificates and tlsAllowInvalidHostnames.
    option(
        "tlsInsecure",
        |s, v| {
            let insecure = flag(v)?;
            s.tls.allow_invalid_certificates = Some(insecure);
            s.tls.allow_invalid_hostnames = Some(insecure);
            Ok(())
        },
        |o| {
            tls(o, |t| {
                Some((t.allows_invalid_certificates() && t.allows_invalid_hostnames()).into())
            })
        },
    )
    .shorthand(),
    // Read and Write Concern spec: "non-negative integer or string"; a negative number
    // is an error (its connection-string tests reject `w=-2`).
    option(
        "w",
        |s, v| {
            let w = match parse_integer(v) {
                Some(n) if n < 0 => {
                    return Err(Problem::Fatal(Error::invalid_argument(format!(
                        "w={n}: w must be a non-negative integer or a string"
                    ))))
                }
                Some(n) => Acknowledgment::Nodes(u32::try_from(n).map_err(out_of_range)?),
                None if v == "majority" => Acknowledgment::Majority,
                None => Acknowledgment::Custom(text(v)?),
            };
            put(&mut write_concern(s).w, Some(w))
        },
        |o| {
            o.write_concern.as_ref()?.w.as_ref().map(|w| match w {
                Acknowledgment::Nodes(n) => Bson::from(*n),
                Acknowledgment::Majority => "majority".into(),
                Acknowledgment::Custom(name) => name.as_str().into(),
            })
        },
    ),
    // Connection Monitoring and Pooling spec: "positive number".
    option(
        "waitQueueTimeoutMS",
        |s, v| put(&mut s.options.wait_queue_timeout, Some(millis(v, 1)?)),
        |o| o.wait_queue_timeout.map(ms),
    ),
    // "non-negative 64-bit integer; 0 means no timeout".
    option(
        "wTimeoutMS",
        |s, v| {
            let millis = integer(v, 0..=i64::MAX)?;
            let timeout = Duration::from_millis(millis.unsigned_abs());
            put(&mut write_concern(s).w_timeout, Some(timeout))
        },
        |o| o.write_concern.as_ref()?.w_timeout.map(ms),
    ),
    option(
        "zlibCompressionLevel",
        |s, v| {
            let level = integer(v, -1..=9)?;
            put(
                &mut s.options.zlib_compression_level,
                Some(i32::try_from(level).map_err(out_of_range)?),
            )
        },
        |o| o.zlib_compression_level.map(Bson::from),
    ),
];

fn put<T>(slot: &mut T, value: T) -> Result<(), Problem> {
    *slot = value;
    Ok(())
}

/// The proxy's username or password, for the connection string.
fn proxy_credential(
    options: &ClientOptions,
    get: impl Fn(&(String, String)) -> &String,
) -> Option<Bson> {
    let authentication = options.socks5_proxy.as_ref()?.authentication.as_ref()?;
    Some(get(authentication).as_str().into())
}

fn write_concern(staging: &mut Staging) -> &mut WriteConcern {
    staging
        .options
        .write_concern
        .get_or_insert_with(WriteConcern::default)
}

fn credential(options: &ClientOptions, get: impl Fn(&Credential) -> Option<Bson>) -> Option<Bson> {
    options.credential.as_ref().and_then(get)
}

fn tls(options: &ClientOptions, get: impl Fn(&TlsOptions) -> Option<Bson>) -> Option<Bson> {
    options.tls_options().and_then(get)
}

/// A file path as a connection string names it (in-memory PEM has no URI form).
fn path(path: Option<&std::path::Path>) -> Option<Bson> {
    Some(path?.to_string_lossy().as_ref().into())
}

fn invalid(why: impl Into<String>) -> Problem {
    Problem::Invalid(why.into())
}

fn empty() -> Problem {
    invalid("the value is empty")
}

fn out_of_range<E>(_: E) -> Problem {
    invalid("the value is out of range")
}

/// A boolean: `true` or `false`.
fn flag(value: &str) -> Result<bool, Problem> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        "" => Err(empty()),
        _ => Err(invalid("expected true or false")),
    }
}

/// An optional `-` and decimal digits, within `i64`.
pub(super) fn parse_integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

fn integer(value: &str, range: RangeInclusive<i64>) -> Result<i64, Problem> {
    if value.is_empty() {
        return Err(empty());
    }
    match parse_integer(value) {
        Some(n) if range.contains(&n) => Ok(n),
        _ => Err(invalid(format!(
            "expected an integer from {} to {}",
            range.start(),
            range.end()
        ))),
    }
}

/// A 32-bit count, at least `min`.
fn count(value: &str, min: u32) -> Result<u32, Problem> {
    let n = integer(value, i64::from(min)..=i64::from(i32::MAX))?;
    u32::try_from(n).map_err(out_of_range)
}

/// A 32-bit number of milliseconds, at least `min`.
fn millis(value: &str, min: u32) -> Result<Duration, Problem> {
    count(value, min).map(|n| Duration::from_millis(n.into()))
}

fn nonzero(duration: Duration) -> Option<Duration> {
    Some(duration).filter(|d| !d.is_zero())
}

/// A string option's value, which must not be empty.
fn text(value: &str) -> Result<String, Problem> {
    match value {
        "" => Err(empty()),
        _ => Ok(value.to_owned()),
    }
}

/// One of a closed set of names (exact spelling).
fn named<T: Copy>(value: &str, all: &[T], name: fn(T) -> &'static str) -> Result<T, Problem> {
    all.iter()
        .copied()
        .find(|item| name(*item) == value)
        .ok_or_else(|| {
            let names: Vec<_> = all.iter().map(|item| name(*item)).collect();
            invalid(format!("expected one of {}", names.join(", ")))
        })
}

/// An SRV service name (RFC 6335 section 5.1: letters, digits and inner hyphens,
/// with at least one letter), at most 62 characters as the Initial DNS Seedlist
/// Discovery spec allows.
fn service_name(value: &str) -> Result<String, Problem> {
    let valid = !value.is_empty()
        && value.len() <= 62
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && !value.starts_with('-')
        && !value.ends_with('-')
        && !value.contains("--");
    match valid {
        true => Ok(value.to_owned()),
        false => Err(invalid("not a valid SRV service name (RFC 6335)")),
    }
}

/// `KEY:value,KEY:value` (Connection String spec, "Key value pairs": the key is
/// everything up to the first `:`). Returns the pairs and the 1-based positions of the
/// parts that are not pairs. An empty value has no pairs.
fn key_value_pairs(value: &str) -> (Vec<(String, String)>, Vec<usize>) {
    let mut pairs = Vec::new();
    let mut bad = Vec::new();
    if value.is_empty() {
        return (pairs, bad);
    }
    for (index, part) in value.split(',').enumerate() {
        match part.split_once(':') {
            Some((key, value)) if !key.is_empty() => pairs.push((key.to_owned(), value.to_owned())),
            _ => bad.push(index + 1),
        }
    }
    (pairs, bad)
}

fn saturating_i64(n: u128) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn ms(duration: Duration) -> Bson {
    Bson::Int64(saturating_i64(duration.as_millis()))
}
